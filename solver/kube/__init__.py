"""Real clusters: Kubernetes objects in (``gpu-preempt import``), eviction plans out (``gpu-preempt plan``).

* :mod:`.read`: ``kubectl get ... -o json`` output, files or standard input, as objects;
* :mod:`.core`: nodes, pods (effective requests, task status) and priority classes;
* :mod:`.queues`: queue trees from KAI, Kueue and Volcano objects;
* :mod:`.importer`: jobs from pod groups, and the whole snapshot document with its report;
* :mod:`.plan`: a decision's victims as policy/v1 Eviction objects, a reviewable kubectl script, or a table.

Nothing here talks to a cluster: it reads dumps and writes files.
"""

__all__ = []
