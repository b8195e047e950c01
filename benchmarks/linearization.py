"""Reduced problems solved at each of CP-SAT's linearization levels: why small ones use level 2.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/linearization.py                          # 200, 1,000 and 3,000 nodes, 4 seeds
    .venv/bin/python benchmarks/linearization.py --sizes 200 600 --seeds 12

For every generated cluster (benchmarks/generate.py, seven pending jobs) and every pending job, reclaim and
preempt, the problem the exact reductions keep (``solver/reduce``) is solved as ``solver/cpsat/reduced.py`` solves
it, once at each level 0, 1 (CP-SAT's default) and 2, in one process, with the garbage collector off (as decisions
run; its passes would land on the same solves in every run and pass for slow ones). Prints the total and the
slowest solve per level, and checks that the answers are the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import time

from generate import pending_decisions
from ortools.sat.python import cp_model

from gpu_preempt.solver.cpsat import search
from gpu_preempt.solver.cpsat.constraints import FAMILIES
from gpu_preempt.solver.problem.builder import plan
from gpu_preempt.solver.reduce.pipeline import reduce_plan

LEVELS = (0, 1, 2)


def at_level(level: int) -> type[cp_model.CpSolver]:
    class Solver(cp_model.CpSolver):
        def __init__(self) -> None:
            super().__init__()
            self.parameters.linearization_level = level

    return Solver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[200, 1000, 3000])
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    total = dict.fromkeys(LEVELS, 0.0)
    slowest = dict.fromkeys(LEVELS, 0.0)
    problems = largest = 0
    gc.disable()
    for nodes in args.sizes:
        for seed in range(args.seeds):
            for cluster, job, action in pending_decisions(nodes, seed):
                planned = plan(cluster, job, action)  # type: ignore[arg-type]
                reduction = None if planned.skip is not None else reduce_plan(planned)
                if reduction is None or not reduction.units:
                    continue
                problem = dataclasses.replace(reduction.problem(), workers=1)
                answers = set()
                for level in LEVELS:
                    search.cp_model.CpSolver = at_level(level)  # type: ignore[misc]
                    started = time.perf_counter()
                    solution = search.solve(problem, skip=FAMILIES)
                    took = time.perf_counter() - started
                    search.cp_model.CpSolver = cp_model.CpSolver  # type: ignore[misc]
                    total[level] += took
                    slowest[level] = max(slowest[level], took)
                    answers.add((solution.status, tuple(sorted(solution.evicted.items()))))
                assert len(answers) == 1, f"{nodes} nodes, seed {seed}, {job.name} {action}: answers differ"
                problems += 1
                largest = max(largest, len(problem.victims))
    print(f"{problems} reduced problems (at most {largest} victims), the same answer at every level")
    print("| level | total | slowest |")
    print("| ---: | ---: | ---: |")
    for level in LEVELS:
        print(f"| {level} | {total[level]:.3f} s | {slowest[level] * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
