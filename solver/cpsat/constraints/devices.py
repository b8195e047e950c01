"""Shares of a GPU device by device: each device holds at most one GPU, as a flow of the tasks arriving on and
leaving each node (docs/snapshot-format.md, "GPU sharing")."""

from __future__ import annotations

from collections.abc import Collection

from ortools.sat.python import cp_model

from gpu_preempt.models import MILLI

from ..variables import LinearExpr, Variables

__all__ = ["Flow", "devices"]


Flow = tuple[int | None, LinearExpr, int, int]
"""Tasks arriving on or leaving a node: the device (``None``: whole GPUs, on any empty device), how many (an
expression), milli-GPUs per device of each (GPUs per task when whole), and the most there may be."""


def devices(variables: Variables) -> None:
    """docs/snapshot-format.md, "GPU sharing": on a node with devices where tasks may arrive (placed or moved), every
    share that arrives goes to as many distinct devices as it is spread over (``sum_d dev[t, n, d] = spread *
    place[t, n]``, each ``dev[t, n, d] <= place[t, n]``: :func:`~gpu_preempt.problem.devices.task_devices` deals
    them to distinct tasks; a moved share goes to one device, likewise); on every
    device, the shares left after the evictions and moves plus those arriving are at most one GPU, and only on a
    device that carries shares (``used``); the devices that carry shares and the whole GPUs left and arriving are
    at most the node's devices. A share leaves its own device; a whole GPU leaves any.
    """
    model = variables.model
    for (t, n), var in variables.place.items():
        spec = variables.problem.nodes[n].devices
        if spec is not None and (t, n, 0) in variables.dev:
            spread = variables.problem.chunk[t].spread  # each task on that many distinct devices (task_devices)
            model.add(cp_model.LinearExpr.sum([variables.dev[t, n, d] for d in range(spec.count)]) == spread * var)
            if spread > 1:
                for d in range(spec.count):
                    model.add(variables.dev[t, n, d] <= var)
    moved_to: dict[tuple[int, int, int], list[cp_model.IntVar]] = {}
    for (v, s, n, _), var in variables.move_dev.items():
        moved_to.setdefault((v, s, n), []).append(var)
    for key, found in moved_to.items():
        model.add(cp_model.LinearExpr.sum(found) == variables.move[key])
    arriving = _arrivals(variables)
    leaving = _departures(variables, arriving.keys())
    _moves_on_free_devices(variables)
    for n, coming in sorted(arriving.items(), key=lambda item: item[0]):
        _node_devices(variables, n, coming, leaving.get(n, []))


def _arrivals(variables: Variables) -> dict[int, list[Flow]]:
    """Per node with devices, the tasks that may arrive: shares placed or moved per device, whole GPUs."""
    problem = variables.problem
    arriving: dict[int, list[Flow]] = {}
    for (t, n), var in variables.place.items():
        spec = problem.nodes[n].devices
        if spec is None:
            continue
        share, gpus = problem.chunk[t].share, problem.chunk[t].gpus
        if share:
            most = min(variables.place_bound[t, n], MILLI // share)
            arriving.setdefault(n, []).extend((d, variables.dev[t, n, d], share, most) for d in range(spec.count))
        elif gpus:
            arriving.setdefault(n, []).append((None, var, gpus, variables.place_bound[t, n]))
    for (v, s, n), var in variables.move.items():
        slot = problem.victims[v].slots[s]
        if problem.nodes[n].devices is not None and slot.gpus:
            arriving.setdefault(n, []).append((None, var, slot.gpus, slot.count))
    for (v, s, n, d), var in variables.move_dev.items():
        slot = problem.victims[v].slots[s]
        arriving.setdefault(n, []).append((d, var, slot.share, slot.count))
    return arriving


def _departures(variables: Variables, nodes: Collection[int]) -> dict[int, list[Flow]]:
    """Per node of ``nodes``, the victims' tasks that may leave it (evicted or moved): shares from their device,
    whole GPUs."""
    leaving: dict[int, list[Flow]] = {}
    for v, victim in enumerate(variables.problem.victims):
        for s, slot in enumerate(victim.slots):
            if slot.node not in nodes:
                continue
            gone = variables.evicted(v, s) + variables.moved_out(v, s)
            for device in slot.devices:
                leaving.setdefault(slot.node, []).append((device, gone, slot.share, slot.count))
            if slot.gpus:
                leaving.setdefault(slot.node, []).append((None, gone, slot.gpus, slot.count))
    return leaving


def _node_devices(variables: Variables, n: int, coming: list[Flow], going: list[Flow]) -> None:
    """The rows of node ``n``'s devices (see :func:`devices`)."""
    model, spec = variables.model, variables.problem.nodes[n].devices
    assert spec is not None
    if all(d is None for d, _, _, _ in coming) and all(d is None for d, _, _, _ in going) and not any(spec.shares):
        return  # whole GPUs only: the node's GPU room counts its devices
    carrying: list[LinearExpr] = []
    fixed = 0  # devices that carry shares whatever is decided
    for d in range(spec.count):
        held = spec.shares[d]
        terms = [expr for e, expr, _, _ in coming if e == d]
        weights = [weight for e, _, weight, _ in coming if e == d]
        most = held + sum(weight * bound for e, _, weight, bound in coming if e == d)
        freeable = 0
        for e, expr, amount, count in going:
            if e == d:
                terms.append(expr)
                weights.append(-amount)
                freeable += amount * count
        if held > freeable:  # a share nothing moves or evicts stays on it
            fixed += 1
            if most > MILLI:
                model.add(cp_model.LinearExpr.weighted_sum(terms, weights) <= MILLI - held)
            continue
        if not terms:
            continue  # nothing on it, nothing may come: an empty device
        used = variables.used[n, d] = model.new_bool_var(f"used_{n}_{d}")
        model.add(cp_model.LinearExpr.weighted_sum([*terms, used], [*weights, -MILLI]) <= -held)
        carrying.append(used)
    whole = [(expr, weight) for e, expr, weight, _ in coming if e is None]
    whole += [(expr, -weight) for e, expr, weight, _ in going if e is None]
    model.add(
        cp_model.LinearExpr.weighted_sum(
            [*carrying, *(expr for expr, _ in whole)], [1] * len(carrying) + [weight for _, weight in whole]
        )
        <= spec.count - fixed - spec.whole
    )


def _moves_on_free_devices(variables: Variables) -> None:
    """docs/snapshot-format.md, "Moves", device by device: a moved task uses only free room, so the shares moved to a
    device fit beside what it holds before the decision, and the devices they open and the whole GPUs moved to a node
    are at most its devices free before the decision."""
    model, problem = variables.model, variables.problem
    shares: dict[int, dict[int, list[tuple[cp_model.IntVar, int]]]] = {}
    whole: dict[int, list[tuple[cp_model.IntVar, int]]] = {}
    for (v, s, n, d), var in variables.move_dev.items():
        shares.setdefault(n, {}).setdefault(d, []).append((var, problem.victims[v].slots[s].share))
    for (v, s, n), var in variables.move.items():
        slot = problem.victims[v].slots[s]
        if problem.nodes[n].devices is not None and slot.gpus:
            whole.setdefault(n, []).append((var, slot.gpus))
    for n in sorted(shares.keys() | whole.keys()):
        spec = problem.nodes[n].devices
        assert spec is not None
        opened: list[cp_model.IntVar] = []
        for d, found in sorted(shares.get(n, {}).items()):
            terms, weights = [var for var, _ in found], [w for _, w in found]
            if spec.shares[d]:
                model.add(cp_model.LinearExpr.weighted_sum(terms, weights) <= MILLI - spec.shares[d])
                continue
            opens = model.new_bool_var(f"opens_{n}_{d}")
            model.add(cp_model.LinearExpr.weighted_sum([*terms, opens], [*weights, -MILLI]) <= 0)
            opened.append(opens)
        arriving = whole.get(n, [])
        model.add(
            cp_model.LinearExpr.weighted_sum(
                [*opened, *(var for var, _ in arriving)], [1] * len(opened) + [w for _, w in arriving]
            )
            <= spec.free()
        )
