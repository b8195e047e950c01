"""CP-SAT against the greedy (KAI-like) baseline on every decision of every fixture.

Run on demand: ``.venv/bin/python benchmarks/fixtures_vs_greedy.py``. For each
fixture, a CP-SAT cycle is run; at the state of each of its decisions, and for
the fixture's own decision, both solvers decide for the same job and action.
Prints one row per decision where either solver placed the job, then totals:
how often CP-SAT found a strictly better victim set (by the objective), how
many victim jobs and tasks it saved, and the time ratio.
"""

from __future__ import annotations

import time
from pathlib import Path

from gpu_preempt.actions.cycle import run_cycle
from gpu_preempt.actions.job_solver import attempt
from gpu_preempt.models import load_snapshot
from gpu_preempt.state.cluster import ClusterState

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    rows, better, equal, only_exact = [], 0, 0, 0
    saved_jobs = saved_tasks = 0
    exact_ms = greedy_ms = 0.0
    for path in sorted((ROOT / "fixtures").glob("*.yaml")):
        snapshot = load_snapshot(path)
        result = run_cycle(snapshot)
        cases = [(s, d.job, d.action) for s, d in zip(result.states, result.decisions, strict=True)]
        expect = snapshot.expect or {}
        if expect.get("job") and expect.get("action", "auto") not in ("auto", "allocate"):
            cases.append((ClusterState.of(snapshot), expect["job"], expect["action"]))
        seen = set()
        for state, job, action in cases:
            fingerprint = (job, action, tuple(sorted(state.status.items())))
            if action not in ("reclaim", "preempt") or fingerprint in seen:  # greedy is for job decisions
                continue
            seen.add(fingerprint)
            t0 = time.perf_counter()
            exact = attempt(state, snapshot.job(job), action)
            t1 = time.perf_counter()
            greedy = attempt(state, snapshot.job(job), action, solver="greedy")
            t2 = time.perf_counter()
            if not (exact.placed or greedy.placed):
                continue
            exact_ms += (t1 - t0) * 1000
            greedy_ms += (t2 - t1) * 1000
            if exact.placed and not greedy.placed:
                only_exact += 1
                verdict = "greedy found nothing"
            elif exact.objective_key(snapshot.config.objective) < greedy.objective_key(snapshot.config.objective):
                better += 1
                saved_jobs += greedy.objective["jobs"] - exact.objective["jobs"]
                saved_tasks += greedy.objective["tasks"] - exact.objective["tasks"]
                verdict = "CP-SAT better"
            else:
                equal += 1
                verdict = "equal"
            rows.append(
                f"| {path.stem} | {job} | {action} | {exact.objective.get('jobs')}/{exact.objective.get('tasks')} "
                f"| {greedy.objective.get('jobs', '-')}/{greedy.objective.get('tasks', '-')} | {verdict} |"
            )
    print("| fixture | job | action | CP-SAT jobs/tasks | greedy jobs/tasks | verdict |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    total = better + equal + only_exact
    print()
    print(f"decisions compared: {total}")
    print(f"CP-SAT strictly better: {better} ({better / total:.0%})")
    print(f"greedy found nothing where CP-SAT did: {only_exact}")
    print(f"equal: {equal}; greedy better: 0 (asserted by tests/test_engine.py)")
    print(f"where better, CP-SAT saved {saved_jobs} victim job(s) and {saved_tasks} evicted task(s) in total")
    print(f"time: CP-SAT {exact_ms:.0f} ms, greedy {greedy_ms:.0f} ms (ratio {exact_ms / max(greedy_ms, 1e-9):.0f}x)")


if __name__ == "__main__":
    main()
