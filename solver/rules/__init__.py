"""The rules, one module a rule, each citing the design it comes from.

Who may be a victim and why not (:mod:`.candidates`, combining
:mod:`.protection`, :mod:`.min_runtime` and :mod:`.toleration`), the reclaim
gate and the reclaim line (:mod:`.reclaim_gate`, :mod:`.reclaim_guarantee`),
nominations (:mod:`.nominations`), requeue with backoff (:mod:`.requeue`) and the
quota-enforcement timer (:mod:`.quota_timer`). Rules read the state; they import
``models`` and ``solver.state`` only.
"""

__all__ = []
