"""The independent check of KAI's task order (docs/rules.md, "Task order"): an elastic job that loses part of its
tasks loses those without an order first, then the lowest order up."""

from __future__ import annotations

from collections.abc import Iterable

from gpu_preempt.models import Task

__all__ = ["out_of_order"]


def out_of_order(job: str, running: Iterable[Task], evicted: Iterable[str]) -> str | None:
    """Why losing ``evicted`` of the ``running`` tasks of ``job`` breaks its task order, or ``None``: a task of order
    ``o`` goes only with every running task without an order and every one of a lower order.

    >>> tasks = [Task(name="a", node="n", order=1), Task(name="b", node="n", order=2), Task(name="c", node="n")]
    >>> out_of_order("j", tasks, ["c", "a"]) is None, out_of_order("j", tasks, ["a"])
    (True, 'task order: j loses a (order 1) and keeps c, which goes first')
    """
    gone = set(evicted)
    tasks = list(running)
    for task in tasks:
        if str(task.name) not in gone or task.order is None:
            continue
        for other in tasks:
            if str(other.name) in gone:
                continue
            if other.order is None or other.order < task.order:
                return (
                    f"task order: {job} loses {task.name} (order {task.order}) and keeps {other.name}, which goes first"
                )
    return None
