"""The planning answers docs/planning.md states, computed by the tool: check that the page still says what the
tool answers, or write the answers in.

    python docs/planning_answers.py            # exit 1 and a diff if an answer on the page is out of date
    python docs/planning_answers.py --write    # compute every answer and put it on the page

An answer sits on the page between ``<!-- answer: NAME -->`` and ``<!-- /answer -->`` (on lines of their own
around a table, or inline in a sentence); :data:`ANSWERS` computes
each from the bundled scenarios (a replay of a few seconds, a sweep of a few runs). ``tests/test_docs_answers.py``
checks every one, so that a change of the engine that changes an answer fails until the page says the new one.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "planning.md"
SCENARIOS = ROOT / "fixtures" / "scenarios"
_ANSWER = re.compile(r"(<!-- answer: (?P<name>[\w-]+) -->\n?)(?P<body>.*?)(\n?<!-- /answer -->)", re.DOTALL)


def _replay(name: str, solver: str | None = None, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary of the bundled scenario ``name`` (with ``solver`` instead of its own, ``config`` added to its
    own)."""
    from gpu_preempt.planning.run import simulate

    path = SCENARIOS / f"{name}.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    if solver is not None:
        document.setdefault("simulation", {})["solver"] = solver
    if config is not None:
        document.setdefault("config", {}).update(config)
    trace = document["workload"]["trace"]
    trace["path"] = str((path.parent / trace["path"]).resolve())
    return simulate(document).summary


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _fewer(ours: float, theirs: float) -> str:
    """How much smaller ``ours`` is than ``theirs``, in words."""
    if theirs <= 0 or ours >= theirs:
        return "no fewer"
    return f"{(1 - ours / theirs):.0%} fewer"


def solvers_on_cluster10() -> str:
    """CP-SAT against greedy (KAI's search) on the bundled scenario: a table and what it says."""
    rows, found = [], {}
    for solver, label in (("cpsat", "CP-SAT"), ("greedy", "greedy (KAI's search)")):
        s = found[solver] = _replay("itp-cluster10", solver)
        wait = s["overall"]["wait"]
        rows.append(
            f"| {label} | {s['preemptions']['total']} | {s['preemptions']['moves']} | "
            f"{s['gpu_hours']['lost']:.1f} | {_minutes(wait['p95'])} | {_minutes(wait['p99'])} |"
        )
    ours, theirs = found["cpsat"], found["greedy"]
    jobs = _fewer(ours["preemptions"]["total"], theirs["preemptions"]["total"])
    lost = _fewer(ours["gpu_hours"]["lost"], theirs["gpu_hours"]["lost"])
    return "\n".join(
        [
            "| solver | preemptions | moves | lost GPU-h | wait p95 | wait p99 |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            f"On the bundled scenario CP-SAT preempts {jobs} jobs than KAI's search and loses {lost} GPU-hours.",
        ]
    )


def kai_against_kueue() -> str:
    """The bundled workload under KAI's rules and under Kueue's, each with CP-SAT and with the scheduler's search."""
    rows, kueue = [], {}
    for scenario, rules in (("itp-cluster10", "KAI"), ("itp-cluster10-kueue", "Kueue")):
        for solver, label in (("cpsat", "CP-SAT"), ("greedy", f"{rules}'s search")):
            s = _replay(scenario, solver)
            if rules == "Kueue":
                kueue[solver] = s
            queues = s["queues"]
            rows.append(
                f"| {rules if solver == 'cpsat' else ''} | {label} | {s['preemptions']['total']} | "
                f"{s['gpu_hours']['lost']:.2f} | {_minutes(queues['research']['wait']['p95'])} | "
                f"{_minutes(queues['product']['wait']['p95'])} |"
            )
    ours, theirs = kueue["cpsat"], kueue["greedy"]
    jobs = theirs["preemptions"]["total"] / max(1, ours["preemptions"]["total"])
    waits = theirs["queues"]["research"]["wait"]["p95"] / max(1.0, ours["queues"]["research"]["wait"]["p95"])
    return "\n".join(
        [
            "| rules | solver | preemptions | lost GPU-h | wait p95, research | wait p95, product |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            f"Kueue's search preempts {jobs:.1f} times as many jobs as the least disruptive sets its rules allow, and "
            f"research's p95 wait is {waits:.1f} times as long.",
        ]
    )


def size_target() -> str:
    """The smallest cluster the bundled size sweep finds for a p95 wait of 30 minutes, with CP-SAT."""
    from gpu_preempt.planning.run_sweep import sweep

    path = SCENARIOS / "sweep-cluster10-size.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document.update(scenario=str(path.parent / document["scenario"]), solvers=["cpsat"])
    result = sweep(document, None, use_cache=False, target="wait.p95 <= 30m")
    assert result.searches is not None
    (search,) = result.searches
    listed = document["grid"]["cluster.nodes.0.count"]
    probes = ", ".join(map(str, search.probes[:-1])) + f" and {search.probes[-1]}"
    assert search.smallest is not None
    return (
        f"On the bundled scenario, between {min(listed)} and {max(listed)} nodes, the smallest cluster with a p95 "
        f"wait of 30 minutes or less is {search.smallest} nodes ({search.smallest * 8} GPUs), probed at {probes} "
        "nodes."
    )


def shared_fragmentation() -> str:
    """The devices the shared-inference scenario leaves partly used, with KAI's GPU placement binpack and spread."""
    s = _replay("itp-cluster10-shared-inference")
    spread = _replay("itp-cluster10-shared-inference", config={"placement_strategy": {"gpu": "spread"}})
    partly, apart = s["fragmentation"], spread["fragmentation"]
    return (
        f"(that example: {partly['mean_gpus']:.1f} on average, {partly['max_gpus']} at most, of {s['gpus']}; "
        f"with `config.placement_strategy.gpu: spread`, {apart['mean_gpus']:.1f} on average and "
        f"{apart['max_gpus']} at most)"
    )


ANSWERS: dict[str, Callable[[], str]] = {
    "cluster10-solvers": solvers_on_cluster10,
    "kai-kueue": kai_against_kueue,
    "size-target": size_target,
    "shared-fragmentation": shared_fragmentation,
}
"""Each answer of the page, by the name its markers give."""


def stated(text: str) -> dict[str, str]:
    """The answers ``text`` states, by name."""
    return {m["name"]: m["body"] for m in _ANSWER.finditer(text)}


def with_answers(text: str, answers: dict[str, str]) -> str:
    """``text`` with each marked answer replaced by ``answers``' (the others as they are)."""
    return _ANSWER.sub(lambda m: m[1] + answers.get(m["name"], m["body"]) + m[4], text)


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    names = set(stated(text))
    if names != set(ANSWERS):
        print(f"the page marks {sorted(names)}, the script computes {sorted(ANSWERS)}", file=sys.stderr)
        return 1
    answers = {name: compute() for name, compute in ANSWERS.items()}
    if "--write" in argv:
        PAGE.write_text(with_answers(text, answers), encoding="utf-8")
        return 0
    wrong = [name for name, body in stated(text).items() if body != answers[name]]
    for name in wrong:
        print(f"{name}: the page says\n{stated(text)[name]}\nthe tool answers\n{answers[name]}\n", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
