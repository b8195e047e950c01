"""Preemption toleration by priority class (docs/rules.md, "Preemption toleration", scheduler-plugins
``PreemptionToleration``).

A victim whose priority class declares a toleration policy is exempt from a
preemptor whose priority is below ``minimum_preemptable_priority`` (default:
the class value + 1):

* ``toleration_seconds`` 0 (default): no toleration at all;
* ``-1``: exempt forever from such preemptors;
* positive N: exempt while ``now < started_at + N`` (strictly: at the exact
  boundary the victim is no longer exempt, as the implementation does,
  docs/rules.md, "Preemption toleration");
* a preemptor with priority ``>= minimum_preemptable_priority`` ignores the
  toleration entirely.

A victim with no start time has not begun its window and is exempt, like the
implementation's pod without a ``PodScheduled`` condition.

The toleration design's table, with ``low-non-preempted-10min`` (value 8000, minimum 10000,
600 s) started at t = 0:

>>> from gpu_preempt.models import Toleration
>>> policy = Toleration(minimum_preemptable_priority=10000, toleration_seconds=600.0)
>>> tolerated_until(policy, started_at=0, preemptor_priority=9000, now=300)   # high, in the window
600.0
>>> tolerated_until(policy, started_at=0, preemptor_priority=9000, now=600) is None  # window over
True
>>> tolerated_until(policy, started_at=0, preemptor_priority=10000, now=300) is None  # system-critical
True
"""

from __future__ import annotations

import math

from gpu_preempt.models import Toleration

__all__ = ["tolerated_until"]


def tolerated_until(
    policy: Toleration | None, *, started_at: float | None, preemptor_priority: int, now: float
) -> float | None:
    """Until when the victim tolerates (is exempt from) this preemptor; ``None`` if it does not.

    ``math.inf`` means forever.
    """
    if policy is None or preemptor_priority >= policy.minimum_preemptable_priority:
        return None
    if policy.forever:
        return math.inf
    if policy.toleration_seconds == 0:
        return None
    if started_at is None:
        return math.inf
    until = started_at + policy.toleration_seconds
    return until if until > now else None
