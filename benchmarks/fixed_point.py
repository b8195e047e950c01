"""How many rounds cycles fed their own output need before they stop evicting (docs/snapshot-format.md, "Reclaim": no
ping-pong).

For generated clusters (benchmarks/generate.py), each reading of the reclaim line, and each way of going from
one round to the next (tests/test_fixed_point.py: ``next``, ``gone``, ``restart``), the round from which nothing
more is evicted. Run on demand:

    .venv/bin/python benchmarks/fixed_point.py              # 100 clusters of 24 nodes, 8 pending jobs, 10 rounds
    .venv/bin/python benchmarks/fixed_point.py --clusters 30 --nodes 48

Prints a Markdown table: per line reading and variant, how many clusters settle in round 1, 2, 3, later, or not
within the rounds run.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from generate import generate
from rich.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import test_fixed_point  # noqa: E402
from test_fixed_point import rounds, settled  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=24)
    parser.add_argument("--pending", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    test_fixed_point.ROUNDS = args.rounds
    cases = [(rule, mode) for rule in ("last_chunk", "strict") for mode in ("next", "gone", "restart")]
    found: dict[tuple[str, str], Counter[str]] = {case: Counter() for case in cases}
    slowest: dict[tuple[str, str], list[tuple[int, list[int]]]] = {case: [] for case in cases}
    with Progress(transient=True) as progress:
        task = progress.add_task("clusters", total=args.clusters * len(cases))
        for seed in range(args.clusters):
            for rule, mode in cases:
                document = generate(args.nodes, seed=seed, pending=args.pending)
                document["config"]["reclaim_guarantee"] = rule
                counts = rounds(document, mode)
                first = settled(counts)
                label = "never" if first is None else str(first + 1) if first < 3 else "later"
                found[rule, mode][label] += 1
                if first is None or first >= 3:
                    slowest[rule, mode].append((seed, counts))
                progress.advance(task)
    print(
        f"{args.clusters} generated clusters of {args.nodes} nodes, {args.pending} pending jobs, {args.rounds} rounds"
    )
    print()
    print("| line | variant | settled in round 1 | 2 | 3 | later | not within the rounds run |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for rule, mode in cases:
        c = found[rule, mode]
        print(f"| {rule} | {mode} | {c['1']} | {c['2']} | {c['3']} | {c['later']} | {c['never']} |")
    print()
    for (rule, mode), cases_found in slowest.items():
        for seed, counts in cases_found[:5]:
            print(f"slow: {rule} {mode} seed {seed}: evicted per round {counts}")


if __name__ == "__main__":
    main()
