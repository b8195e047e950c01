"""An exact floor division in CP-SAT, whatever the size of the numbers: the model is valid and the solver's value is
Python's ``//``."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from gpu_preempt.cpsat.floor_ratio import SMALL_MULTIPLIER, floor_ratio

BIG = 2**61


@st.composite
def divisions(draw: st.DrawFn) -> tuple[int, int, int, int, int]:
    """``(x, most, m, a, d)``: mostly products far past 2**62 (x's range and the denominator above 2**40, the
    multiplier below 2**31 or a multiple of 2**40), some small."""
    if draw(st.booleans()):
        most, d = draw(st.integers(2**40, BIG)), draw(st.integers(2**40, BIG))
        m = draw(st.one_of(st.integers(2**20, SMALL_MULTIPLIER - 1), st.integers(1, 1000).map(lambda k: k * 2**40)))
    else:
        most, m, d = draw(st.integers(0, 2**40)), draw(st.integers(0, 2**20)), draw(st.integers(1, 2**40))
    x = draw(st.one_of(st.integers(0, most), st.just(most)))
    a = draw(st.one_of(st.integers(-BIG, BIG), st.integers(-d, d)))
    assume((most * m + abs(a)) // d < BIG)  # the result itself fits
    assume(m % d < SMALL_MULTIPLIER)
    return x, most, m, a, d


def solved(x: int, most: int, m: int, a: int, d: int, *, fixed: bool = True) -> int:
    model = cp_model.CpModel()
    var = model.new_int_var(0, most, "x")
    ratio = floor_ratio(model, var, most, m, a, d, "ratio")
    if fixed:
        model.add(var == x)
    else:  # the division must bind x to the value it is asked for, in the other direction
        model.add(ratio == (x * m + a) // d)
        model.maximize(var)
    assert not model.validate(), model.validate()
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    return solver.value(var) if not fixed else solver.value(ratio)


@settings(max_examples=400, deadline=None)
@given(divisions())
@example((219_902_325_555_214, 659_706_976_665_642, 1_000_000, 111_380_527_893_717_915, 111_380_527_893_717_916))
def test_the_value_is_pythons_floor_division(division: tuple[int, int, int, int, int]) -> None:
    """The example is the share that was refused: a weight in thousandths over 100 TiB of memory in bytes."""
    x, most, m, a, d = division
    assert solved(x, most, m, a, d) == (x * m + a) // d


@settings(max_examples=50, deadline=None)
@given(divisions())
def test_the_largest_x_of_a_ratio_is_the_last_before_the_next_threshold(
    division: tuple[int, int, int, int, int],
) -> None:
    """The constraint holds both ways: x is free, the ratio fixed, and the largest x is the last one whose floor is
    still that ratio (or the range's end)."""
    x, most, m, a, d = division
    assume(m > 0)
    ratio = (x * m + a) // d
    last = min(most, ((ratio + 1) * d - 1 - a) // m)
    assert solved(x, most, m, a, d, fixed=False) == last


def test_a_large_multiplier_that_would_need_several_swaps_is_refused_by_name() -> None:
    """Fibonacci numbers make Euclid's longest chains: each swap would double the divisions."""
    fib = [1, 1]
    while fib[-1] < 2**61:
        fib.append(fib[-1] + fib[-2])
    model = cp_model.CpModel()
    x = model.new_int_var(0, fib[-1] - 1, "x")
    with pytest.raises(ValueError, match="more than one swap"):
        floor_ratio(model, x, fib[-1] - 1, fib[-2], 0, fib[-1], "ratio")
