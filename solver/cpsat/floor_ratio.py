"""``floor((x * m + a) / d)`` in CP-SAT, exactly, for any size of ``x``'s range and of the constants: every product
the model holds stays within CP-SAT's 64-bit integers.

Where ``most * m`` fits, it is one division equality. Otherwise the fraction is taken apart as Euclid's algorithm
does (the rule of ``floor_sum`` in competitive programming libraries, e.g. AtCoder Library's ``math.hpp``):

- ``m >= d``: ``floor((x m + a)/d) = x (m // d) + floor((x (m % d) + a)/d)``;
- ``most >= d``: ``x = q d + r`` with ``0 <= r < d``, and ``floor((x m + a)/d) = q m + floor((r m + a)/d)``;
- else the result ``j`` is small (at most ``m``), and ``j`` is the value whose thresholds bracket ``x``:
  ``ceil((j d - a)/m) <= x <= floor(((j + 1) d - a - 1)/m)``, two floors of the same form in ``j``, with the roles
  of ``m`` and ``d`` swapped.

The swap needs ``m`` below 2**31 (then ``j``'s range times the next remainder fits, and the recursion ends after
one swap, with four divisions at most); Kueue's shares meet it, 1000 times a weight's denominator of at most a
million.

>>> model = cp_model.CpModel()
>>> x = model.new_int_var(0, 10**18, "x")
>>> q = floor_ratio(model, x, 10**18, 10**6 + 3, 10**17 - 1, 10**17 + 7, "q")
>>> model.add(x == 987_654_321_987_654_321)
<...>
>>> solver = cp_model.CpSolver()
>>> solver.solve(model) == cp_model.OPTIMAL
True
>>> solver.value(q) == (987_654_321_987_654_321 * (10**6 + 3) + 10**17 - 1) // (10**17 + 7)
True
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from .variables import LinearExpr

__all__ = ["PRODUCT_LIMIT", "SMALL_MULTIPLIER", "floor_ratio"]

PRODUCT_LIMIT = 2**62
"""Products kept below this, a margin under CP-SAT's 2**63."""
SMALL_MULTIPLIER = 2**31
"""The bound on ``m`` where the swap is needed: ``j < m`` and the next ``m`` below it make a product that fits."""


def floor_ratio(model: cp_model.CpModel, x: LinearExpr, most: int, m: int, a: int, d: int, name: str) -> LinearExpr:
    """``floor((x * m + a) / d)`` for ``0 <= x <= most``, ``m >= 0`` and ``d > 0``, as an expression of new
    variables of ``model`` named after ``name``."""
    base, a = divmod(a, d)  # 0 <= a < d from here: every partial result is non-negative
    if most == 0 or m == 0:
        return base
    if most * m + a < PRODUCT_LIMIT:
        ratio = model.new_int_var(0, (most * m + a) // d, name)
        model.add_division_equality(ratio, x * m + a, d)
        return base + ratio
    if m >= d:
        return base + x * (m // d) + floor_ratio(model, x, most, m % d, a, d, f"{name}_m")
    if most >= d:
        whole = model.new_int_var(0, most // d, f"{name}_q")
        rest = model.new_int_var(0, d - 1, f"{name}_r")
        model.add(x == whole * d + rest)
        return base + whole * m + floor_ratio(model, rest, d - 1, m, a, d, f"{name}_r")
    if m >= SMALL_MULTIPLIER:
        raise ValueError(f"floor_ratio: a multiplier of {m} needs more than one swap")
    top = (most * m + a) // d  # below m + 1: most < d and a < d
    ratio = model.new_int_var(0, top, name)
    model.add(x >= floor_ratio(model, ratio, top, d, m - 1 - a, m, f"{name}_lo"))
    model.add(x <= floor_ratio(model, ratio, top, d, d - a - 1, m, f"{name}_hi"))
    return base + ratio
