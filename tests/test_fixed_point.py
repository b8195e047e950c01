"""No ping-pong (docs/snapshot-format.md, "Reclaim"): cycles fed their own next snapshot stop evicting within three
rounds.

Three ways to go from one round to the next, from the mildest:

* ``next``: the cycle's ``--next-snapshot`` (docs/rules.md, "Nominations"): victims releasing, pipelined tasks
nominated; the next
  cycle claims the nominations;
* ``gone``: the victims are gone: releasing tasks pending again, promises kept;
* ``restart``: what a scheduler's next round sees when it keeps no promises: releasing and promised tasks pending
  again.

Requeue backoff is forgotten in ``gone`` and ``restart``, so that only the job order keeps the peace: a victim
that got its room back ahead of the job it made room for would be reclaimed again, forever.

Every reclaim, cycle and move fixture, in each variant, reaches a round that evicts nothing by round three and
evicts nothing after it; so does the issue's ping-pong example (settled in round two), and generated clusters
(benchmarks/generate.py) fed their own next snapshot. In the two harsher variants, generated clusters settle too,
but a few need more rounds: under ``last_chunk`` a victim queue may be taken below its line, so its evicted job
may reclaim elsewhere in the next round (fairness converging, KAI's semantics), and without promises a
reclaimer may lose the room made for it to a job ahead of it. ``benchmarks/fixed_point.py`` measures how many.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, ROOT

from gpu_preempt.actions.cycle import CycleResult, run_cycle
from gpu_preempt.actions.next_snapshot import next_snapshot
from gpu_preempt.models import read_document, snapshot_from_data

ROUNDS = 5
SETTLED_BY = 3
HARSHER_ROUNDS = 8
MODES = ["next", "gone", "restart"]


def restart(document: dict[str, Any], statuses: tuple[str, ...] = ("releasing", "nominated")) -> dict[str, Any]:
    """``document`` as the next round sees it once victims are gone: tasks in ``statuses`` pending again (victims
    releasing, and by default promised tasks too), requeue backoff forgotten."""
    out = copy.deepcopy(document)
    for job in out.get("jobs", []):
        job.pop("requeue", None)
        for task in job["tasks"]:
            if task.get("status") in statuses:
                task["status"] = "pending"
                task.pop("node", None)
                task.pop("devices", None)
    return out


def evictions(result: CycleResult) -> int:
    return sum(len(v.tasks) for d in result.decisions if d.changes() for v in d.victims)


def rounds(document: dict[str, Any], mode: str, count: int | None = None) -> list[int]:
    """Evicted tasks per round, ``count`` rounds (default ``ROUNDS``)."""
    out = []
    for _ in range(ROUNDS if count is None else count):
        result = run_cycle(snapshot_from_data(document))
        out.append(evictions(result))
        document = next_snapshot(document, result)
        if mode == "restart":
            document = restart(document)
        elif mode == "gone":
            document = restart(document, ("releasing",))
    return out


def settled(counts: list[int]) -> int | None:
    """The first round (0-based) from which nothing more is evicted, or ``None``."""
    return next((r for r in range(len(counts)) if not any(counts[r:])), None)


def assert_settles(counts: list[int], by: int = SETTLED_BY) -> None:
    first = settled(counts)
    assert first is not None and first < by, counts


RECLAIM = sorted(p for p in FIXTURES.glob("*.yaml") if "reclaim" in p.stem or "cycle" in p.stem or "move" in p.stem)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", [*RECLAIM, FIXTURES / "example-cluster.yaml"], ids=lambda p: Path(p).stem)
def test_reclaim_fixtures_reach_a_fixed_point(path: Path, mode: str) -> None:
    document = read_document(path)
    document.pop("expect", None)
    assert_settles(rounds(document, mode))


def test_the_ping_pong_example_settles_in_the_second_round() -> None:
    """Issue 10: S's old job is reclaimed for T's; in the next round T keeps the GPU and S's job stays pending."""
    document = read_document(FIXTURES / "reclaim-no-ping-pong.yaml")
    document.pop("expect", None)
    assert rounds(document, "restart")[:3] == [1, 0, 0]


def generated(seed: int) -> dict[str, Any]:
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from generate import generate

    return generate(24, seed=200 + seed, pending=8)


@pytest.mark.parametrize("seed", range(6))
def test_generated_clusters_fed_their_next_snapshot_settle_by_round_three(seed: int) -> None:
    assert_settles(rounds(generated(seed), "next"))


@pytest.mark.parametrize("mode", ["gone", "restart"])
@pytest.mark.parametrize("seed", range(6))
def test_generated_clusters_settle_in_the_harsher_variants(seed: int, mode: str) -> None:
    """They settle, some after round three (see the module docstring and benchmarks/fixed_point.py)."""
    assert_settles(rounds(generated(seed), mode, HARSHER_ROUNDS), by=HARSHER_ROUNDS - 1)
