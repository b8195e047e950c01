"""Loading one snapshot file three ways: the struct path, the fast path and pydantic's validation, in one process.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/load_paths.py FILE        # e.g. a file written by benchmarks/generate.py

Prints the time to build the snapshot from the file's bytes on the struct path (``models/struct_path.py``: decoding
included, jobs made when read), to read and parse the document, then to build the snapshot from it on the fast path
(``models/fast_path.py``) and through ``Snapshot.model_validate``, with the garbage collector off (as the command
line runs), and checks that the three snapshots are equal (which makes every job of the struct path's).
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

from gpu_preempt.models import Snapshot
from gpu_preempt.models.fast_path import fast_snapshot
from gpu_preempt.models.loader import read_document
from gpu_preempt.models.struct_path import struct_snapshot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    args = parser.parse_args()
    gc.disable()
    raw = Path(args.file).read_bytes()
    started = time.perf_counter()
    structs = struct_snapshot(raw)
    struct_s = time.perf_counter() - started
    del raw
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
    assert fast is not None and fast == slow, "the fast path and pydantic disagree"
    assert structs is None or structs == slow, "the struct path and pydantic disagree"
    fast_s, slow_s = built - read, validated - again
    if structs is None:
        print("struct path:    not taken (fewer jobs than COLUMNS_FROM, or a document it leaves to the fast path)")
    else:
        print(f"struct path:    {struct_s:.2f} s, decoding included")
    print(f"read and parse: {read - started:.2f} s")
    print(f"fast path:      {fast_s:.2f} s")
    print(f"pydantic:       {slow_s:.2f} s ({slow_s / fast_s:.1f}x the fast path)")


if __name__ == "__main__":
    main()
