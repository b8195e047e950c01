"""A broken rule, as the verifiers report it."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["Violation", "of_rule"]


class Violation(str):
    """One broken rule: its words (``str()``, what is printed), the ``rule`` it breaks and the ``job`` (or queue) it
    concerns. A string, so that a list of them reads, prints and compares as the words do.

    >>> found = Violation("capacity: node n0 holds 9 gpu of 8", "capacity", "train")
    >>> found.rule, found.job, str(found)
    ('capacity', 'train', 'capacity: node n0 holds 9 gpu of 8')
    >>> found == "capacity: node n0 holds 9 gpu of 8"
    True
    """

    rule: str
    job: str

    def __new__(cls, message: str, rule: str, job: str) -> Violation:
        found = super().__new__(cls, message)
        found.rule, found.job = rule, job
        return found

    def __getnewargs__(self) -> tuple[str, str, str]:  # type: ignore[override]
        return str(self), self.rule, self.job

    def __repr__(self) -> str:
        return f"Violation({str(self)!r}, rule={self.rule!r}, job={self.job!r})"


def of_rule(rule: str, job: str, messages: Iterable[str]) -> list[Violation]:
    """``messages`` as violations of ``rule`` by ``job``."""
    return [Violation(message, rule, job) for message in messages]
