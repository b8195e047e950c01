"""The operator's questions of a real cluster (docs/operations.md): will a job fit if I submit it, who is at risk of
preemption next, when will a pending job start, and did the scheduler evict more than it had to."""

from __future__ import annotations

from .at_risk import Probe, Risk, RiskReport, risk
from .search_audit import Audit, Finding, audit, audit_preemption, stray_victims
from .start_forecast import Forecast, PendingStart, forecast
from .what_if import Variant, WhatIf, whatif, with_job

__all__ = [
    "Audit",
    "Finding",
    "Forecast",
    "PendingStart",
    "Probe",
    "Risk",
    "RiskReport",
    "Variant",
    "WhatIf",
    "audit",
    "audit_preemption",
    "forecast",
    "risk",
    "stray_victims",
    "whatif",
    "with_job",
]
