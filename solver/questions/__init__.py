"""The operator's questions of a real cluster (docs/operations.md): did the scheduler evict more than it had to."""

from __future__ import annotations

from .audit import Audit, Finding, audit, stray_victims

__all__ = ["Audit", "Finding", "audit", "stray_victims"]
