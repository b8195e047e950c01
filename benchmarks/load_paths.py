"""Loading one snapshot file both ways: the fast path against pydantic's validation, in one process.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/load_paths.py FILE        # e.g. a file written by benchmarks/generate.py

Prints the time to read and parse the document, then to build the snapshot from it on the fast path
(``models/fast_path.py``) and through ``Snapshot.model_validate``, with the garbage collector off (as the command
line runs), and checks that both snapshots are equal.
"""

from __future__ import annotations

import argparse
import gc
import time

from gpu_preempt.models import Snapshot
from gpu_preempt.models.fast_path import fast_snapshot
from gpu_preempt.models.loader import read_document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    args = parser.parse_args()
    gc.disable()
    started = time.perf_counter()
    data = read_document(args.file)
    read = time.perf_counter()
    fast = fast_snapshot(data)
    built = time.perf_counter()
    del data
    data = read_document(args.file)  # parsed again: pydantic gets a document of its own
    again = time.perf_counter()
    slow = Snapshot.model_validate(data)
    validated = time.perf_counter()
    assert fast is not None and fast == slow, "the two paths disagree"
    fast_s, slow_s = built - read, validated - again
    print(f"read and parse: {read - started:.2f} s")
    print(f"fast path:      {fast_s:.2f} s")
    print(f"pydantic:       {slow_s:.2f} s ({slow_s / fast_s:.1f}x the fast path)")


if __name__ == "__main__":
    main()
