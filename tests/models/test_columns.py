"""Column helpers: grouping positions by code, as a pass over the codes one by one would."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpu_preempt.models.columns import grouped


@given(st.lists(st.integers(0, 40), max_size=60), st.sampled_from([0, 2**15 - 41, 2**40]))
def test_grouped_positions_are_those_a_pass_over_the_codes_finds(codes: list[int], shift: int) -> None:
    """Codes in order of first position, positions ascending: whether the codes fit a 16-bit sort or not."""
    expected: dict[int, list[int]] = {}
    for at, code in enumerate(codes):
        expected.setdefault(code + shift, []).append(at)
    found = grouped(np.array(codes, dtype=np.int64) + shift)
    assert [(code, at.tolist()) for code, at in found] == list(expected.items())
