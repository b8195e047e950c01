"""Kubernetes quantities and durations as the snapshot format writes them."""

import pytest

from gpu_preempt.models import (
    FOREVER,
    format_duration,
    format_quantity,
    format_time,
    parse_duration,
    parse_quantity,
    parse_time,
)
from gpu_preempt.models.quantity import UNLIMITED


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("500m", 500),
        ("2", 2000),
        (2, 2000),
        (1.5, 1500),
        ("1.5", 1500),
        ("64Gi", 64 * 2**30 * 1000),
        ("1Ti", 2**40 * 1000),
        ("1k", 1_000_000),
        ("1e3", 1_000_000),
        ("0", 0),
        ("100Mi", 100 * 2**20 * 1000),
    ],
)
def test_quantities_parse_to_exact_milli_units(text, milli):
    assert parse_quantity(text) == milli


@pytest.mark.parametrize("text", ["-1", -1, "unlimited", "Unlimited"])
def test_unlimited_only_where_allowed(text):
    assert parse_quantity(text, allow_unlimited=True) == UNLIMITED
    with pytest.raises(ValueError, match="not allowed here"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-2", "negative"),
        (-0.5, "negative"),
        ("1x", "not a quantity"),
        ("", "not a quantity"),
        (True, "expected a number"),
        (None, "expected a number"),
        ("1u", "more precise than 1m"),
        (float("nan"), "not a finite number"),
    ],
)
def test_bad_quantities_are_rejected_with_a_reason(text, message):
    with pytest.raises(ValueError, match=message):
        parse_quantity(text)


def test_quantities_format_back_as_people_write_them():
    assert format_quantity("memory", parse_quantity("1Ti")) == "1Ti"
    assert format_quantity("memory", parse_quantity("1536Mi")) == "1536Mi"
    assert format_quantity("cpu", 500) == "500m"
    assert format_quantity("gpu", 8000) == "8"
    assert format_quantity("gpu", UNLIMITED) == "unlimited"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("10m", 600),
        ("1h30m", 5400),
        ("0", 0),
        (0, 0),
        (90, 90),
        ("1.5h", 5400),
        ("300ms", 0.3),
        ("45", 45),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


def test_forever_only_where_allowed():
    assert parse_duration(-1, allow_forever=True) == FOREVER
    assert parse_duration("-1", allow_forever=True) == FOREVER
    with pytest.raises(ValueError, match="forever"):
        parse_duration(-1)
    with pytest.raises(ValueError, match="use -1 for forever"):
        parse_duration(-5, allow_forever=True)


@pytest.mark.parametrize("text", ["10 minutes", "1d", "h", True, "-10m"])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_format_duration():
    assert format_duration(5400) == "1h30m"
    assert format_duration(0) == "0s"
    assert format_duration(FOREVER) == "forever"


def test_times_accept_rfc3339_and_epoch_seconds():
    assert parse_time("2026-01-01T12:00:00Z") == 1767268800.0
    assert parse_time("2026-01-01T13:00:00+01:00") == 1767268800.0
    assert parse_time(1767268800) == 1767268800.0
    assert format_time(1767268800.0) == "2026-01-01T12:00:00Z"


@pytest.mark.parametrize(("text", "message"), [("2026-01-01T12:00:00", "no time zone"), ("noon", "RFC 3339")])
def test_bad_times(text, message):
    with pytest.raises(ValueError, match=message):
        parse_time(text)


# The cases of the Kubernetes client's parse_quantity (kubernetes-client/python, kubernetes/utils/quantity.py and
# its tests): the same answers here, in milli-units; where it returns fractions finer than 1m, we refuse instead
# (the snapshot keeps exact milli-units, never a rounded amount).
KUBERNETES_CASES = [
    ("0", 0),
    ("0.5", 500),
    ("1", 1000),
    ("1m", 1),
    ("1k", 10**6),
    ("1M", 10**9),
    ("1G", 10**12),
    ("1T", 10**15),
    ("1P", 10**18),
    ("1Ki", 1024 * 1000),
    ("1Mi", 2**20 * 1000),
    ("1Gi", 2**30 * 1000),
    ("1Ti", 2**40 * 1000),
    ("1Pi", 2**50 * 1000),
    ("12Mi", 12582912 * 1000),
    ("0.1Mi", 104857600),
    ("1e3", 10**6),
    ("1E3", 10**6),
    ("1e-3", 1),
    ("95500m", 95500),
]


@pytest.mark.parametrize(("text", "milli"), KUBERNETES_CASES)
def test_the_kubernetes_clients_quantities_parse_the_same(text, milli):
    assert parse_quantity(text) == milli


@pytest.mark.parametrize("text", ["1E", "1Ei", "1025Pi", "1e999", "1e99999999999", 2**70, 1e300, "9" * 60])
def test_amounts_beyond_2_to_the_60_milli_units_are_refused(text):
    """The Kubernetes client parses 1E and 1Ei too, but their milli-values do not fit in 64 bits, the solver's
    integers; the largest amount is 2^60 milli-units (1 Pi of memory is 2^50 * 1000 and is accepted)."""
    with pytest.raises(ValueError, match="more than the largest amount supported"):
        parse_quantity(text)
    assert parse_quantity("1Pi") == 2**50 * 1000


@pytest.mark.parametrize("text", ["9" * 65, "9" * 50_000_000, "1Gi ", " 1", "\t8", "unlimited "])
def test_a_quantity_too_long_or_with_spaces_is_refused_before_any_arithmetic(text):
    """The longest quantity text read is MAX_QUANTITY_TEXT characters (the largest amount takes 19 digits); the API
    server refuses spaces around a quantity, and so does the snapshot."""
    with pytest.raises(ValueError, match=r"longer than a quantity may be|spaces around it"):
        parse_quantity(text, allow_unlimited=True)


@pytest.mark.parametrize("text", ["1ki", "1mi", "1 Mi", "Mi", "", "1.1.1", "1Ki1", "NaN", "Infinity", "1i"])
def test_what_the_kubernetes_client_rejects_is_rejected(text):
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(text)


def test_an_upper_case_k_is_refused_as_the_api_server_refuses_it():
    """The Python client reads ``1K`` as 1000; Kubernetes itself (Go's resource.Quantity) does not, so no object
    the API server prints holds it."""
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity("1K")


@pytest.mark.parametrize("text", ["1u", "2n", "0.5m"])
def test_finer_than_a_milli_unit_is_refused_not_rounded(text):
    with pytest.raises(ValueError, match="more precise than 1m"):
        parse_quantity(text)
