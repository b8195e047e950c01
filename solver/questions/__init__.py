"""The operator's questions of a real cluster (docs/operations.md): will a job fit if I submit it, and did the
scheduler evict more than it had to."""

from __future__ import annotations

from .search_audit import Audit, Finding, audit, stray_victims
from .what_if import Variant, WhatIf, whatif, with_job

__all__ = ["Audit", "Finding", "Variant", "WhatIf", "audit", "stray_victims", "whatif", "with_job"]
