"""Pausing Python's cyclic garbage collector while large, acyclic structures are built.

Loading a 100,000-node snapshot creates millions of objects; the cyclic
collector then runs again and again over an ever larger heap, for nothing: the
snapshot's objects form no reference cycles and are freed by reference counting.
Pausing it while they are built roughly halves loading time on large snapshots.
The previous state is restored on exit, and nothing else changes.

Once built, such a snapshot lives on in a long-running process (a library user,
the simulator), and every full collection walks its millions of objects again:
at 100,000 nodes, a further decision after a small change took 1.1 s with the
collector on, against 0.34 s with it off. :func:`loading_large` therefore moves a
large document's objects to the permanent generation (``gc.freeze``) once they
are built; they are still freed by reference counting when dropped. It collects
first, while the heap is still small, so that no garbage cycle of the caller's
is frozen with them.
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


LARGE_DOCUMENT = 10_000_000
"""Documents of this many bytes or more (about 10,000 nodes) are loaded with :func:`loading_large`."""


@contextmanager
def loading_large(size: int) -> Iterator[None]:
    """Pause the collector while a document of ``size`` bytes is loaded; if it is large and the collector is on,
    collect before and freeze what exists after (see the module docstring). Nothing is frozen if loading fails."""
    large = size >= LARGE_DOCUMENT and gc.isenabled()
    if large:
        gc.collect()
    with paused_collection():
        yield
    if large:
        gc.freeze()
