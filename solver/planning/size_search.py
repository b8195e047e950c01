"""``--target``: the smallest cluster that meets a target, by bisection over the sweep's size axis.

For every setting of the other axes (seeds aside), sizes are searched between the
smallest and the largest value the size axis lists: the largest is tried first
(if it misses, the target cannot be met in the range); then the range is halved
until the smallest size that meets the target *for every seed* is known. The
search assumes that more capacity never hurts the figure; each probe is a real
run, cached like any other. All settings are searched in lockstep, so the runs
of one step are replayed in parallel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .sweep import Axes, Run, SweepPlan
from .table import Target, figure

__all__ = ["Replay", "SizeSearch", "smallest_sizes"]

Replay = Callable[[list[Run]], dict[str, dict[str, Any]]]


@dataclass
class SizeSearch:
    """The search for one setting of the other axes."""

    setting: Axes
    lo: int
    hi: int
    smallest: int | None = None
    met_at_largest: bool | None = None
    worst: Any = None
    """The figure at ``smallest``, worst over the seeds."""
    probes: list[int] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.met_at_largest is False or (self.met_at_largest is True and self.lo >= self.hi)

    def next_size(self) -> int:
        return self.hi if self.met_at_largest is None else (self.lo + self.hi) // 2

    def probes_left(self) -> int:
        """At most how many more sizes the search tries: the largest, then halving the range to one size."""
        if self.done:
            return 0
        halvings = max(0, self.hi - self.lo).bit_length()  # ceil(log2(hi - lo + 1))
        return halvings + (self.met_at_largest is None)

    def not_run(self, listed: list[int]) -> list[str]:
        """Why each size the sweep file lists was not tried (the search assumes more capacity never hurts).

        >>> search = SizeSearch((), 28, 32, smallest=30, met_at_largest=True, probes=[32, 30, 29])
        >>> search.not_run([28, 32])
        ['28: below 29, which misses the target']
        >>> SizeSearch((), 28, 32, met_at_largest=False, probes=[32]).not_run([28, 30, 32])
        ['28: below 32, which misses the target', '30: below 32, which misses the target']
        """
        out = []
        missed = [p for p in self.probes if p != self.smallest and (self.smallest is None or p < self.smallest)]
        for size in sorted(set(listed) - set(self.probes)):
            above = [p for p in missed if p > size]
            if above:
                out.append(f"{size}: below {min(above)}, which misses the target")
            elif self.smallest is not None and size > self.smallest:
                out.append(f"{size}: above {self.smallest}, which meets it")
            else:
                out.append(f"{size}: not reached by the search")
        return out


def smallest_sizes(
    plan: SweepPlan, target: Target, replay: Replay, on_estimate: Callable[[int], None] | None = None
) -> tuple[list[SizeSearch], list[Run]]:
    """The search of every setting, and every run it made (in the sweep's order); ``on_estimate`` hears, before each
    step, at most how many runs the whole search makes."""
    size = plan.sweep.size_axis()
    assert size is not None
    values = [int(v) for v in plan.sweep.grid[size]]
    searches: dict[Axes, SizeSearch] = {}
    seeds: dict[Axes, int] = {}
    for axes in plan.points(sizes=[min(values)]):
        setting = _setting(axes, size)
        searches.setdefault(setting, SizeSearch(setting, min(values), max(values)))
        seeds[setting] = seeds.get(setting, 0) + 1
    made: dict[str, Run] = {}
    while True:
        probing = {s.setting: s.next_size() for s in searches.values() if not s.done}
        if on_estimate is not None:
            on_estimate(len(made) + sum(s.probes_left() * seeds[s.setting] for s in searches.values()))
        if not probing:
            break
        runs: dict[Axes, list[Run]] = {setting: [] for setting in probing}
        for chosen in sorted(set(probing.values())):
            for axes in plan.points(sizes=[chosen]):
                setting = _setting(axes, size)
                if probing.get(setting) == chosen:
                    runs[setting].append(plan.run(axes))
        results = replay([run for group in runs.values() for run in group])
        for setting, group in runs.items():
            made.update((run.key, run) for run in group)
            _step(searches[setting], probing[setting], [results[run.key] for run in group], target)
    order = {axes: i for i, axes in enumerate(plan.points(sizes=sorted({r.value(size) for r in made.values()})))}
    return list(searches.values()), sorted(made.values(), key=lambda run: order[run.axes])


def _setting(axes: Axes, size: str) -> Axes:
    return tuple((p, v) for p, v in axes if p not in (size, "simulation.seed"))


def _step(search: SizeSearch, size: int, summaries: list[dict[str, Any]], target: Target) -> None:
    met = all(target.met(s) for s in summaries)
    search.probes.append(size)
    if met:
        found = [figure(s, target.figure) for s in summaries]
        search.smallest = size
        search.worst = max(found) if target.op in ("<=", "<") else min(found)
    if search.met_at_largest is None:
        search.met_at_largest = met
        if not met:
            search.worst = None
        return
    if met:
        search.hi = size
    else:
        search.lo = size + 1
