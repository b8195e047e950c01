"""Reduced problems solved under several CP-SAT settings: why small ones use level 2 and a light presolve.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/small_models.py                          # 200, 1,000 and 3,000 nodes, 4 seeds
    .venv/bin/python benchmarks/small_models.py --sizes 200 600 --seeds 12

For every generated cluster (benchmarks/generate.py, seven pending jobs) and every pending job, reclaim and
preempt, the problem the exact reductions keep (``solver/reduce``) is solved as ``solver/cpsat/search.py`` solves
it (stages, then the canonical tie-break), once per setting: linearization level 0, 1 (CP-SAT's default) and 2
with CP-SAT's default presolve, and level 2 with one presolve pass without probing or symmetry detection (what
``solver/actions/reduced_path.py`` uses for models of at most ``FOLD_VICTIMS`` victims). One process, the garbage
collector off (as decisions run; its passes would land on the same solves in every run and pass for slow ones).
Prints the total and the slowest solve per setting, and checks that the answers are the same.
"""

from __future__ import annotations

import argparse
import gc
import time

from generate import pending_decisions

from gpu_preempt.actions.reduced_path import demand_of
from gpu_preempt.cpsat import search
from gpu_preempt.cpsat.constraints import FAMILIES
from gpu_preempt.cpsat.params import SolveParams
from gpu_preempt.formulate.builder import prepare
from gpu_preempt.reduce.pipeline import restrict

SETTINGS = {
    "level 0": {"linearization_level": 0},
    "level 1 (default)": {"linearization_level": 1},
    "level 2": {"full_linearization": True},
    "level 2, light presolve (used)": {"full_linearization": True, "light_presolve": True},
}
"""Search settings (``full_linearization``, ``light_presolve`` of :class:`SolveParams`), or a linearization level set on
the solver."""


class _Solver(search.cp_model.CpSolver):
    """CP-SAT's solver, at the linearization level of :data:`_LEVEL` (none: as the problem says)."""

    def __init__(self) -> None:
        super().__init__()
        if _LEVEL[0] is not None:
            self.parameters.linearization_level = _LEVEL[0]


_LEVEL: list[int | None] = [None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[200, 1000, 3000])
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args()
    total = dict.fromkeys(SETTINGS, 0.0)
    slowest = dict.fromkeys(SETTINGS, 0.0)
    problems = largest = 0
    original = search.cp_model.CpSolver
    search.cp_model.CpSolver = _Solver  # type: ignore[misc]
    gc.disable()
    try:
        for nodes in args.sizes:
            for seed in range(args.seeds):
                for cluster, job, action in pending_decisions(nodes, seed):
                    prepared = prepare(cluster, job, action)  # type: ignore[arg-type]
                    restriction = None if prepared.skip is not None else restrict(demand_of(prepared))
                    if restriction is None or not restriction.report.kept:
                        continue
                    base = prepared.build(chosen=restriction.candidates, only_nodes=restriction.nodes)
                    answers = set()
                    for name, setting in SETTINGS.items():
                        _LEVEL[0] = setting.get("linearization_level")
                        fields = {k: v for k, v in setting.items() if k != "linearization_level"}
                        params = SolveParams(workers=1, **fields)
                        started = time.perf_counter()
                        solution = search.solve(base, params, skip=FAMILIES)
                        took = time.perf_counter() - started
                        total[name] += took
                        slowest[name] = max(slowest[name], took)
                        answers.add(
                            (solution.status, *(tuple(sorted(s.items())) for s in (solution.evicted, solution.placed)))
                        )
                    assert len(answers) == 1, f"{nodes} nodes, seed {seed}, {job.name} {action}: answers differ"
                    problems += 1
                    largest = max(largest, len(base.victims))
    finally:
        search.cp_model.CpSolver = original  # type: ignore[misc]
    print(f"{problems} reduced problems (at most {largest} victims), the same answer under every setting")
    print("| setting | total | slowest |")
    print("| --- | ---: | ---: |")
    for name in SETTINGS:
        print(f"| {name} | {total[name]:.3f} s | {slowest[name] * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
