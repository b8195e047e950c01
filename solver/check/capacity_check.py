"""Capacity (docs/rules.md, "Placement"; docs/snapshot-format.md, "GPU sharing"): every node now and once releasing
tasks leave, and with shares of a GPU every device."""

from __future__ import annotations

from gpu_preempt.models import MILLI, Job, Resources, format_quantity
from gpu_preempt.models.decision import Decision
from gpu_preempt.models.quantity import add
from gpu_preempt.models.sharing import counted_share
from gpu_preempt.state.cluster import ClusterState

__all__ = ["check_capacity", "check_devices"]


def check_capacity(cluster: ClusterState, job: Job, decision: Decision, taken: dict[str, list[str]]) -> list[str]:
    snapshot = cluster.snapshot
    final: dict[str, Resources] = {n.name: dict(cluster.final_load(n.name)) for n in snapshot.nodes}
    current: dict[str, Resources] = {n.name: dict(cluster.current_load(n.name)) for n in snapshot.nodes}
    for name, tasks in taken.items():
        victim = snapshot.job(name)
        by_name = {str(t.name): t for t in victim.tasks}
        for task in tasks:
            host = str(cluster.node_of[task])
            final[host] = add(final[host], victim.requests(by_name[task]), times=-1)
    for move in decision.moves:  # a moved task leaves its node (once its old pod is gone) for its new one
        other = snapshot.job(move.job)
        spec = next((t for t in other.tasks if str(t.name) == move.task), None)
        if spec is not None and cluster.node_of.get(move.task) == move.source:
            final[move.source] = add(final[move.source], other.requests(spec), times=-1)
            final[move.node] = add(final[move.node], other.requests(spec))
    for override in decision.overrides:  # a nomination given way (checked in _overrides) no longer holds its node
        other = snapshot.job(override.job)
        spec = next((t for t in other.tasks if str(t.name) == override.task), None)
        if spec is not None and cluster.status[override.task] in ("pipelined", "nominated"):
            final[override.node] = add(final[override.node], other.requests(spec), times=-1)
    by_name = {str(t.name): t for t in job.tasks}
    for task, where in decision.placements.items():
        final[where] = add(final[where], job.requests(by_name[task]))
        current[where] = add(current[where], job.requests(by_name[task]))
    out: list[str] = []
    for node in snapshot.nodes:
        for resource, amount in final[node.name].items():
            if amount > node.resources.get(resource, 0):
                out.append(
                    f"capacity: node {node.name} would hold {format_quantity(resource, amount)} {resource} "
                    f"(has {format_quantity(resource, node.resources.get(resource, 0))})"
                )
        if decision.outcome == "allocated":
            for resource, amount in current[node.name].items():
                if amount > node.resources.get(resource, 0):
                    out.append(f"capacity: 'allocated' on {node.name} but {resource} is not free yet")
    return out


def check_devices(cluster: ClusterState, job: Job, decision: Decision, taken: dict[str, list[str]]) -> list[str]:
    """docs/snapshot-format.md, "GPU sharing": every share placed names one device of its node; on every device the
    shares that stay and those placed sum to at most one GPU, and the whole GPUs fit the devices without shares; for
    ``allocated``, likewise with what the devices hold now. Re-counted from every task's status, node and device."""
    out: list[str] = []
    gone = {task for tasks in taken.values() for task in tasks} | {o.task for o in decision.overrides}
    moved = {m.task: m.node for m in decision.moves}
    final: dict[str, dict[int, int]] = {}
    now: dict[str, dict[int, int]] = {}
    before: dict[str, dict[int, int]] = {}  # what the devices hold before the decision, every promise kept
    whole_final: dict[str, int] = {}
    whole_now: dict[str, int] = {}
    whole_before: dict[str, int] = {}

    def hold(ledger: dict[str, dict[int, int]], node: str, devices: tuple[int, ...], amount: int) -> None:
        on = ledger.setdefault(node, {})
        for device in devices:
            on[device] = on.get(device, 0) + amount

    for other in cluster.snapshot.jobs:
        for task in other.tasks:
            name = str(task.name)
            state, node = cluster.status[name], cluster.node_of[name]
            if node is None or state == "pending":
                continue
            requests = other.requests(task)
            share = counted_share(other, requests)
            in_before = state in ("running", "allocated", "pipelined", "nominated")
            in_final = in_before and name not in gone
            in_now = state in ("running", "allocated", "releasing")
            lands = moved.get(name, node)  # a moved task holds its new place once its old pod is gone
            if share is None:
                gpus = requests.get("gpu", 0) // MILLI
                if in_final:
                    whole_final[lands] = whole_final.get(lands, 0) + gpus
                if in_now:
                    whole_now[node] = whole_now.get(node, 0) + gpus
                if in_before:
                    whole_before[node] = whole_before.get(node, 0) + gpus
                continue
            devices = cluster.task_devices.get(name) or (tuple(task.devices) if task.devices else ())
            if in_before:
                hold(before, node, devices, share)
            if state == "pipelined" and task.status == "running" and task.devices:
                hold(now, str(task.node), tuple(task.devices), share)  # moved earlier: its old pod is still there
            if in_final:
                if name in moved:
                    count = cluster.snapshot.node(lands).resources.get("gpu", 0) // MILLI
                    new = decision.devices.get(name, ())
                    if len(new) != other.gpu_devices or any(d >= count for d in new):
                        out.append(f"devices: the moved share {name} names devices {list(new)} of {lands}")
                    hold(final, lands, new, share)
                else:
                    hold(final, node, devices, share)
            if in_now:
                hold(now, node, devices, share)
    by_name = {str(t.name): t for t in job.tasks}
    for placed, where in decision.placements.items():
        requests = job.requests(by_name[placed])
        share = counted_share(job, requests)
        count = cluster.snapshot.node(where).resources.get("gpu", 0) // MILLI
        devices = decision.devices.get(placed, ())
        if share is None:
            if devices:
                out.append(f"devices: {placed} takes whole GPUs yet names devices")
            whole_final[where] = whole_final.get(where, 0) + requests.get("gpu", 0) // MILLI
            whole_now[where] = whole_now.get(where, 0) + requests.get("gpu", 0) // MILLI
            continue
        if len(set(devices)) != job.gpu_devices or len(devices) != job.gpu_devices or any(d >= count for d in devices):
            out.append(
                f"devices: the share {placed} names devices {list(devices)} of {where}, which has {count}; it takes "
                f"{job.gpu_devices} distinct"
            )
            continue
        hold(final, where, devices, share)
        hold(now, where, devices, share)
    out += _moved_onto_free_devices(cluster, decision, before, whole_before)
    ledgers = [("", final, whole_final)]
    if decision.outcome == "allocated":
        ledgers.append(("'allocated' but now ", now, whole_now))
    for when, shares, whole in ledgers:
        for spec_node in cluster.snapshot.nodes:
            name = spec_node.name
            on = shares.get(name, {})
            full = sorted(d for d, a in on.items() if a > MILLI)
            if full:
                out.append(f"devices: {when}device {full[0]} of {name} would hold {on[full[0]] / MILLI:g} GPUs")
            count = spec_node.resources.get("gpu", 0) // MILLI
            used = whole.get(name, 0) + sum(1 for a in on.values() if a)
            if used > count:
                out.append(
                    f"devices: {when}{name} would hold {whole.get(name, 0)} whole GPU(s) and shares on "
                    f"{sum(1 for a in on.values() if a)} device(s), more than its {count} devices"
                )
    return out


def _moved_onto_free_devices(
    cluster: ClusterState, decision: Decision, held: dict[str, dict[int, int]], whole: dict[str, int]
) -> list[str]:
    """docs/snapshot-format.md, "Moves": a moved task uses only free room, device by device: the shares moved to a
    device fit beside what it ``held`` before the decision (every promise kept), and the devices they open and the
    whole GPUs moved to a node are at most its devices free before the decision (``whole``: the whole GPUs held)."""
    if not decision.moves:
        return []
    arriving: dict[str, dict[int, int]] = {}
    opened: dict[str, int] = {}
    out = []
    for move in decision.moves:
        other = cluster.snapshot.job(move.job)
        spec = next((t for t in other.tasks if str(t.name) == move.task), None)
        if spec is None:
            continue
        share = counted_share(other, other.requests(spec))
        if share is None:
            opened[move.node] = opened.get(move.node, 0) + other.requests(spec).get("gpu", 0) // MILLI
            continue
        for device in decision.devices.get(move.task, ()):
            on = arriving.setdefault(move.node, {})
            on[device] = on.get(device, 0) + share
    for node, on in sorted(arriving.items()):
        for device, amount in sorted(on.items()):
            before = held.get(node, {}).get(device, 0)
            if before + amount > MILLI:
                out.append(f"moves: the shares moved to device {device} of {node} need {amount / MILLI:g} GPU free")
            if not before:
                opened[node] = opened.get(node, 0) + 1
    for node, count in sorted(opened.items()):
        devices = cluster.snapshot.node(node).resources.get("gpu", 0) // MILLI
        free = devices - whole.get(node, 0) - sum(1 for a in held.get(node, {}).values() if a)
        if count > free:
            out.append(f"moves: the tasks moved to {node} need {count} free device(s); it has {free}")
    return out
