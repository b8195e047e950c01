"""KAI-Scheduler's configuration as the snapshot's ``config``: what of the scheduler's actions and plugin arguments
decides, read from a KAI snapshot's ``config`` or from a ``SchedulingShard``.

* the actions (``actions: "allocate, consolidation, reclaim, preempt, stalegangeviction"``) -> ``config.actions``,
  and ``consolidation`` -> ``config.moves`` (moves are how gpu-preempt consolidates);
* ``nodeplacement``'s ``gpu`` and ``cpu`` (``binpack`` or ``spread``) -> ``config.placement_strategy``;
* ``proportion``'s ``relcaimerSaturationMultiplier`` (KAI's spelling) -> ``config.reclaimer_saturation_multiplier``;
* ``proportion``'s ``kValue`` with the ``usageDBConfig`` (``windowSize``, ``windowType``, ``halfLifePeriod``) ->
  ``config.fair_share_usage`` (KAI's time-based fair share; the queues' usage is in KAI's usage database);
* ``minruntime``'s ``defaultPreemptMinRuntime``, ``defaultReclaimMinRuntime`` and ``reclaimResolveMethod`` ->
  ``config.preempt_min_runtime``, ``reclaim_min_runtime`` and ``min_runtime_resolve``.

A setting equal to the snapshot's default is not written. A value KAI would not parse is one KAI replaces with its
default, with a log line: here too, as a reported guess.
What the snapshot does not model is said in a note. Sources: KAI's ``pkg/scheduler/conf/scheduler_conf.go``,
``pkg/apis/kai/v1/schedulingshard_types.go`` (the shard's defaults: spread turns ``gpupack``, ``gpusharingorder``
and ``consolidation`` off) and each plugin's ``New``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpu_preempt.models.duration import parse_duration
from gpu_preempt.models.errors import shown

__all__ = ["JOB_ACTIONS", "MODELLED", "KaiSettings", "from_scheduler_config", "from_shard"]

JOB_ACTIONS = ("allocate", "reclaim", "preempt")
MODELLED = {"nodeplacement", "proportion", "minruntime"}
"""Plugins whose arguments become the snapshot's config."""


@dataclass
class KaiSettings:
    """The snapshot config a KAI configuration gives, with its notes and guesses (``where``, ``what``)."""

    config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    guesses: list[tuple[str, str]] = field(default_factory=list)
    k_value: float | None = None
    """The proportion plugin's ``kValue``, when given: read with the usage database settings."""


def from_scheduler_config(config: Any, at: str) -> KaiSettings:
    """A KAI snapshot's ``config`` (``SchedulerConfiguration``: ``actions``, ``tiers[].plugins[]``,
    ``queueDepthPerAction``, ``usageDBConfig``)."""
    out = KaiSettings()
    if not isinstance(config, dict):
        return out
    actions = config.get("actions")
    if isinstance(actions, str) and actions.strip():
        _actions(out, [a.strip() for a in actions.split(",") if a.strip()], f"{at}.actions")
    plugins: dict[str, dict[str, Any]] = {}
    for t, tier in enumerate(config.get("tiers") or []):
        for p, plugin in enumerate((tier or {}).get("plugins") or [] if isinstance(tier, dict) else []):
            if isinstance(plugin, dict) and isinstance(plugin.get("name"), str):
                plugins[plugin["name"]] = {
                    "arguments": plugin.get("arguments") or {},
                    "at": f"{at}.tiers[{t}].plugins[{p}].arguments",
                }
    _plugins(out, plugins)
    _unmodelled(out, config, at)
    return out


def from_shard(spec: Any, at: str) -> KaiSettings:
    """A ``SchedulingShard``'s ``spec``, with KAI's defaults where it says nothing (``placementStrategy``,
    ``minRuntime``, ``kValue``, ``actions`` and ``plugins`` overrides)."""
    out = KaiSettings()
    if not isinstance(spec, dict):
        return out
    strategy = spec.get("placementStrategy") or {}
    gpu = strategy.get("gpu") or "binpack" if isinstance(strategy, dict) else "binpack"
    cpu = strategy.get("cpu") or "binpack" if isinstance(strategy, dict) else "binpack"
    arguments: dict[str, dict[str, Any]] = {
        "nodeplacement": {"arguments": {"gpu": gpu, "cpu": cpu}, "at": f"{at}.placementStrategy"}
    }
    runtime = spec.get("minRuntime")
    if isinstance(runtime, dict):
        given = {
            "defaultPreemptMinRuntime": runtime.get("preemptMinRuntime"),
            "defaultReclaimMinRuntime": runtime.get("reclaimMinRuntime"),
        }
        arguments["minruntime"] = {
            "arguments": {k: v for k, v in given.items() if v is not None},
            "at": f"{at}.minRuntime",
        }
    if spec.get("kValue") is not None:
        arguments["proportion"] = {"arguments": {"kValue": spec["kValue"]}, "at": f"{at}.kValue"}
    for name, override in (spec.get("plugins") or {}).items():
        if isinstance(override, dict) and isinstance(override.get("arguments"), dict):
            arguments[name] = {"arguments": override["arguments"], "at": f"{at}.plugins.{name}.arguments"}
    _plugins(out, arguments)
    consolidation = gpu != "spread" and cpu != "spread"
    enabled = {"allocate": True, "consolidation": consolidation, "reclaim": True, "preempt": True}
    for name, override in (spec.get("actions") or {}).items():
        if isinstance(override, dict) and isinstance(override.get("enabled"), bool):
            enabled[name] = override["enabled"]
    _actions(out, [a for a in ("allocate", "consolidation", "reclaim", "preempt") if enabled.get(a)], f"{at}.actions")
    _unmodelled(out, spec, at)
    return out


def _actions(out: KaiSettings, actions: list[str], at: str) -> None:
    kept = [a for a in actions if a in JOB_ACTIONS]
    if not kept:
        out.guesses.append((at, f"none of {', '.join(JOB_ACTIONS)}: every job action kept"))
    elif kept != list(JOB_ACTIONS):
        out.config["actions"] = kept
    if "consolidation" not in actions:
        out.config["moves"] = False
    others = [a for a in actions if a not in (*JOB_ACTIONS, "consolidation")]
    moves = "on" if "consolidation" in actions else "off"
    left = f"; not modelled: {', '.join(others)}" if others else ""
    out.notes.append(
        f"KAI: actions {', '.join(actions)}: config.actions {', '.join(kept) or '(all)'}, moves {moves} "
        f"(consolidation){left}"
    )


def _plugins(out: KaiSettings, plugins: dict[str, dict[str, Any]]) -> None:
    placement = plugins.get("nodeplacement")
    if placement is not None:
        chosen = {}
        for kind in ("gpu", "cpu"):
            value = placement["arguments"].get(kind, "binpack")
            if value not in ("binpack", "spread"):
                out.guesses.append(
                    (
                        f"{placement['at']}.{kind}",
                        f"nodeplacement {kind}: {shown(value)} is not binpack or spread: binpack",
                    )
                )
                value = "binpack"
            chosen[kind] = value
        if chosen != {"gpu": "binpack", "cpu": "binpack"}:
            out.config["placement_strategy"] = chosen
    proportion = plugins.get("proportion")
    if proportion is not None:
        arguments, at = proportion["arguments"], proportion["at"]
        if "relcaimerSaturationMultiplier" in arguments:
            value = _number(arguments["relcaimerSaturationMultiplier"])
            if value is None or value < 1:
                where = f"{at}.relcaimerSaturationMultiplier"
                out.guesses.append(
                    (where, f"{shown(arguments['relcaimerSaturationMultiplier'])}: 1.0, as KAI takes it")
                )
            elif value != 1:
                out.config["reclaimer_saturation_multiplier"] = value
        if "kValue" in arguments:
            value = _number(arguments["kValue"])
            if value is None:
                out.guesses.append((f"{at}.kValue", f"{shown(arguments['kValue'])}: 1.0, as KAI takes it"))
            else:
                out.k_value = max(0.0, value)  # KAI takes a negative kValue as 0
    runtime = plugins.get("minruntime")
    if runtime is not None:
        arguments, at = runtime["arguments"], runtime["at"]
        for key, target in (
            ("defaultPreemptMinRuntime", "preempt_min_runtime"),
            ("defaultReclaimMinRuntime", "reclaim_min_runtime"),
        ):
            if key in arguments:
                try:
                    seconds = parse_duration(arguments[key])
                except ValueError as error:
                    out.guesses.append((f"{at}.{key}", f"{error}: 0s, as KAI takes it"))
                    continue
                if seconds > 0:
                    out.config[target] = arguments[key]
        method = arguments.get("reclaimResolveMethod")
        if method == "queue":
            out.config["min_runtime_resolve"] = method
        elif method not in (None, "", "lca"):
            out.guesses.append((f"{at}.reclaimResolveMethod", f"{shown(method)} is not lca or queue: lca"))
    for name, plugin in sorted(plugins.items()):
        if name not in MODELLED and plugin["arguments"]:
            shown_args = ", ".join(f"{k}={v}" for k, v in sorted(plugin["arguments"].items()))
            out.notes.append(f"KAI: plugin {name} arguments {shown_args} (not modelled)")


def _unmodelled(out: KaiSettings, config: dict[str, Any], at: str) -> None:
    if config.get("queueDepthPerAction"):
        out.notes.append(f"KAI: {at}.queueDepthPerAction {config['queueDepthPerAction']}: every job is tried here")
    usage_db = config.get("usageDBConfig")
    if isinstance(usage_db, dict):
        _usage(out, usage_db, f"{at}.usageDBConfig")
    elif out.k_value is not None:
        out.notes.append(f"KAI: proportion kValue {out.k_value:g} without a usage database: no usage moves the split")


def _usage(out: KaiSettings, usage_db: dict[str, Any], at: str) -> None:
    """KAI's usage database settings as ``config.fair_share_usage`` (the usage itself is not in the snapshot)."""
    params = usage_db.get("usageParams") or {}
    found: dict[str, Any] = {"k_value": 1.0 if out.k_value is None else out.k_value}
    for key, target in (("windowSize", "window"), ("halfLifePeriod", "half_life")):
        value = params.get(key) if isinstance(params, dict) else None
        if value is None:
            continue
        try:
            parse_duration(value)
        except ValueError as error:
            out.guesses.append((f"{at}.usageParams.{key}", f"{error}: KAI's default"))
            continue
        found[target] = value
    kind = params.get("windowType") if isinstance(params, dict) else None
    if kind in ("sliding", "tumbling"):
        found["window_type"] = kind
    elif kind is not None:
        out.guesses.append((f"{at}.usageParams.windowType", f"{shown(kind)} is not modelled: sliding"))
    out.config["fair_share_usage"] = found
    out.notes.append(
        "KAI: time-based fair share on; each queue's usage is in KAI's usage database, not in the snapshot: give it "
        "as the queue's usage"
    )


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
