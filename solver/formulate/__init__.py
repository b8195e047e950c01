"""From the cluster state and the rules to a closed :class:`~gpu_preempt.problem.records.Problem`: one pending job,
one action (:mod:`.builder`), and what KAI's victim queue reads of the cluster (:mod:`.queue_facts`)."""

__all__ = []
