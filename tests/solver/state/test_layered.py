"""A derived state's maps share their parent's entries: every layer reads as a plain copy with its changes would."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_preempt.state.layered import Layered

KEYS = [f"k{i}" for i in range(12)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.lists(st.tuples(st.sampled_from(KEYS), st.integers(0, 9))))))
def test_a_tree_of_layers_reads_as_copies(steps: list[tuple[int, list[tuple[str, int]]]]) -> None:
    """Each step derives a map from an earlier one (any: states branch) and changes some values; every map, read
    every way, equals the plain dict built the same way, and no step changes an earlier map."""
    root = {key: i for i, key in enumerate(KEYS)}
    layers: list[object] = [root]
    plain: list[dict[str, int]] = [dict(root)]
    for parent, changes in steps:
        at = parent % len(layers)
        layer, copy = Layered(layers[at]), dict(plain[at])  # type: ignore[arg-type]
        for key, value in changes:
            layer[key] = copy[key] = value
        layers.append(layer)
        plain.append(copy)
        for made, expected in zip(layers, plain, strict=True):
            assert dict(made.items()) == expected  # type: ignore[attr-defined]
            assert list(made) == list(expected)  # type: ignore[call-overload]
            assert [made[k] for k in KEYS] == [expected[k] for k in KEYS]  # type: ignore[index]
            assert [made.get(k) for k in [*KEYS, "other"]] == [expected.get(k) for k in [*KEYS, "other"]]  # type: ignore[attr-defined]
            assert len(made) == len(expected) and ("k3" in made) and ("other" not in made)  # type: ignore[arg-type,operator]


def test_a_layer_over_layers_reads_at_most_two_dicts_and_flattens_when_it_has_changed_much():
    base = {key: 0 for key in KEYS}
    layer = Layered(base)
    layer["k0"] = 1
    deeper = Layered(Layered(layer))
    assert deeper.base_and_changes() == (base, {"k0": 1})
    assert deeper.base_and_changes()[0] is base
    for key in KEYS[:6]:
        deeper[key] = 2
    flat = Layered(deeper)  # 6 of 12 changed: over a quarter, a plain copy becomes the base
    assert flat.base_and_changes() == ({**base, **dict.fromkeys(KEYS[:6], 2)}, {})
    assert base == {key: 0 for key in KEYS}


def test_a_layer_refuses_new_keys_and_deletions():
    layer = Layered({"a": 1})
    with pytest.raises(KeyError, match="no new keys"):
        layer["b"] = 2
    with pytest.raises(TypeError):
        del layer["a"]
    assert dict(layer) == {"a": 1}
