"""Cluster state: the queue tree, usage per queue, fair share, and the session's task states.

:class:`.cluster.ClusterState` is the state every rule and action reads: the
snapshot's queue tree (:mod:`.queue_tree`), what each queue holds and asks for
(:mod:`.queue_usage`), fair shares (:mod:`.fair_share`), and where every task is
and in which status. Imports ``gpu_preempt.models`` only.
"""

__all__ = []
