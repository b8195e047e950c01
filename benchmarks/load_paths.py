"""Loading one snapshot file on both paths, in one process: the struct path and pydantic's validation.

Run on demand (never part of the test command):

    .venv/bin/python benchmarks/load_paths.py FILE        # e.g. a file written by benchmarks/generate.py

Prints the time to build the snapshot on the struct path (``models/load/build.py``) from the file's bytes (decoding
included, a large snapshot's jobs made when read), to read and parse the document, then to build the snapshot from
the parsed data on the struct path and through ``Snapshot.model_validate``, with the garbage collector off (as the
command line runs); and checks that the snapshots are equal (which makes every job made when read).
"""

from __future__ import annotations

import argparse
import copy
import gc
import time
from pathlib import Path

from gpu_preempt.models import Snapshot
from gpu_preempt.models.load.build import from_data, from_json
from gpu_preempt.models.load.loader import is_json, read_document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    args = parser.parse_args()
    gc.disable()
    raw = Path(args.file).read_bytes()
    started = time.perf_counter()
    from_bytes = from_json(raw) if is_json(args.file) else None
    bytes_s = time.perf_counter() - started
    del raw
    started = time.perf_counter()
    data = read_document(args.file)
    read = time.perf_counter()
    structs = from_data(data, parsed=is_json(args.file))
    built = time.perf_counter()
    again = copy.deepcopy(data)
    validating = time.perf_counter()
    slow = Snapshot.model_validate(again)
    validated = time.perf_counter()
    assert structs is not None and structs == slow, "the struct path and pydantic disagree"
    assert from_bytes is None or from_bytes == slow, "the struct path from bytes and pydantic disagree"
    data_s, slow_s = built - read, validated - validating
    if from_bytes is None:
        print("from bytes:     not taken (a YAML file, or bytes the structs do not take)")
    else:
        print(f"from bytes:     {bytes_s:.2f} s, decoding included")
    print(f"read and parse: {read - started:.2f} s")
    print(f"from data:      {data_s:.2f} s")
    print(f"pydantic:       {slow_s:.2f} s ({slow_s / data_s:.1f}x the struct path from data)")


if __name__ == "__main__":
    main()
