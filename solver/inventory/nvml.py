"""The local GPUs, read through NVML (``nvidia-ml-py``, module ``pynvml``).

This is the only module that imports ``pynvml``, and it does so lazily, inside
:func:`read_inventory`, so that everything else works without it. On a machine
without a driver the inventory is empty and says why (library not found, driver
not loaded, ...): it never raises.

Tests and demos replace NVML with :class:`RecordedNVML`, which serves a recorded
device list (the JSON that ``gpu-preempt inventory --json`` prints) through the
same calls and raises the real ``pynvml.NVMLError`` codes, so the adapter code
that runs is the code that runs on a GPU machine.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "DRIVER_NOT_LOADED",
    "FUNCTION_NOT_FOUND",
    "GPU_IS_LOST",
    "LIBRARY_NOT_FOUND",
    "LIB_RM_VERSION_MISMATCH",
    "NOT_FOUND",
    "NOT_SUPPORTED",
    "NO_PERMISSION",
    "GpuDevice",
    "Inventory",
    "MigDevice",
    "RecordedNVML",
    "inventory_as_node",
    "read_inventory",
]

# NVML return codes (nvml.h); the adapter compares ``NVMLError.value`` with them.
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
LIB_RM_VERSION_MISMATCH = 18

_INIT_REASONS = {
    LIBRARY_NOT_FOUND: "NVML library not found: no NVIDIA driver is installed on this machine",
    DRIVER_NOT_LOADED: "NVIDIA driver not loaded: the library is present but the kernel module is not running",
    LIB_RM_VERSION_MISMATCH: "NVIDIA driver and library versions differ (reboot after a driver upgrade?)",
    NO_PERMISSION: "no permission to query the NVIDIA driver",
}


@dataclass(frozen=True)
class MigDevice:
    """One MIG slice of a GPU."""

    slot: int
    name: str
    uuid: str
    memory_total: int


@dataclass(frozen=True)
class GpuDevice:
    """One physical GPU. ``mig_mode`` is ``enabled``, ``disabled`` or ``unsupported``."""

    index: int
    name: str
    uuid: str
    memory_total: int
    mig_mode: str = "unsupported"
    mig_devices: tuple[MigDevice, ...] = ()

    @property
    def whole(self) -> bool:
        """Whether the GPU is schedulable as one whole device (not split by MIG)."""
        return self.mig_mode != "enabled"


@dataclass(frozen=True)
class Inventory:
    """The GPUs found, or an empty list and ``reason`` saying why there are none."""

    devices: tuple[GpuDevice, ...] = ()
    driver_version: str | None = None
    reason: str | None = None
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Inventory:
        devices = tuple(
            GpuDevice(
                **{k: v for k, v in d.items() if k != "mig_devices"},
                mig_devices=tuple(MigDevice(**m) for m in d.get("mig_devices", ())),
            )
            for d in data.get("devices", ())
        )
        return cls(devices, data.get("driver_version"), data.get("reason"), tuple(data.get("notes", ())))


def read_inventory(nvml: Any | None = None) -> Inventory:
    """List the local GPUs through NVML.

    ``nvml`` is the ``pynvml`` module (imported here when not given) or a stand-in
    such as :class:`RecordedNVML`.
    """
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return Inventory(reason="nvidia-ml-py is not installed (pip install nvidia-ml-py)")
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as err:
        return Inventory(reason=_INIT_REASONS.get(err.value, f"NVML could not start: {err}"))
    try:
        return _enumerate(nvml)
    finally:
        nvml.nvmlShutdown()


def _enumerate(nvml: Any) -> Inventory:
    notes: list[str] = []
    try:
        driver: str | None = nvml.nvmlSystemGetDriverVersion()
    except nvml.NVMLError:
        driver = None
    devices = []
    for index in range(nvml.nvmlDeviceGetCount()):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
            uuid = nvml.nvmlDeviceGetUUID(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle).total
        except nvml.NVMLError as err:
            notes.append(f"GPU {index} skipped: {err}")
            continue
        mode, migs = _mig(nvml, handle, index, notes)
        devices.append(GpuDevice(index, name, uuid, int(memory), mode, migs))
    return Inventory(tuple(devices), driver, None if devices else "NVML reports no GPUs", tuple(notes))


def _mig(nvml: Any, handle: Any, index: int, notes: list[str]) -> tuple[str, tuple[MigDevice, ...]]:
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    except nvml.NVMLError as err:
        if err.value not in (NOT_SUPPORTED, FUNCTION_NOT_FOUND):
            notes.append(f"GPU {index}: MIG mode unreadable: {err}")
        return "unsupported", ()
    if current != nvml.NVML_DEVICE_MIG_ENABLE:
        return "disabled", ()
    migs = []
    for slot in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except nvml.NVMLError as err:
            if err.value != NOT_FOUND:
                notes.append(f"GPU {index}: MIG slot {slot} unreadable: {err}")
            continue
        migs.append(
            MigDevice(
                slot,
                nvml.nvmlDeviceGetName(mig),
                nvml.nvmlDeviceGetUUID(mig),
                int(nvml.nvmlDeviceGetMemoryInfo(mig).total),
            )
        )
    return "enabled", tuple(migs)


def inventory_as_node(inventory: Inventory, name: str) -> dict[str, Any]:
    """A snapshot ``nodes`` entry for this machine.

    Only whole GPUs count (v1 has no fractional or MIG scheduling); GPUs in MIG
    mode are left out and named in the node's labels. ``gpu_model`` is the most
    common model among the whole GPUs.
    """
    whole = [d for d in inventory.devices if d.whole]
    node: dict[str, Any] = {"name": name, "resources": {"gpu": len(whole)}}
    models = Counter(d.name for d in whole).most_common()
    if models:
        node["gpu_model"] = models[0][0]
    labels = {}
    if inventory.driver_version:
        labels["nvidia.com/driver-version"] = inventory.driver_version
    if len(models) > 1:
        labels["gpu-preempt/mixed-gpu-models"] = ", ".join(m for m, _ in models)
    mig = [d for d in inventory.devices if not d.whole]
    if mig:
        labels["gpu-preempt/mig-gpus-not-counted"] = ",".join(str(d.index) for d in mig)
    if labels:
        node["labels"] = labels
    return node


class RecordedNVML:
    """A stand-in for the ``pynvml`` module that serves a recorded inventory.

    ``recording`` is what :meth:`Inventory.to_dict` produces, plus optional
    failure keys: ``init_error`` (an NVML code raised by ``nvmlInit``) and, per
    device, ``lost: true`` (the handle query raises ``GPU_IS_LOST``). Errors are
    real ``pynvml.NVMLError`` instances.
    """

    NVML_DEVICE_MIG_ENABLE = 1
    NVML_DEVICE_MIG_DISABLE = 0

    def __init__(self, recording: dict[str, Any]) -> None:
        import pynvml

        self.NVMLError = pynvml.NVMLError
        self._recording = recording
        self._devices: list[dict[str, Any]] = list(recording.get("devices", ()))
        self.initialized = 0

    @classmethod
    def from_file(cls, path: str | Path) -> RecordedNVML:
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def _fail(self, code: int) -> None:
        raise self.NVMLError(code)

    def nvmlInit(self) -> None:
        if self._recording.get("init_error") is not None:
            self._fail(int(self._recording["init_error"]))
        self.initialized += 1

    def nvmlShutdown(self) -> None:
        if self.initialized == 0:
            self._fail(1)  # NVML_ERROR_UNINITIALIZED
        self.initialized -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        version = self._recording.get("driver_version")
        if version is None:
            self._fail(NOT_SUPPORTED)
        return str(version)

    def nvmlDeviceGetCount(self) -> int:
        return len(self._devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> dict[str, Any]:
        device = self._devices[index]
        if device.get("lost"):
            self._fail(GPU_IS_LOST)
        return device

    def nvmlDeviceGetName(self, handle: dict[str, Any]) -> str:
        return str(handle["name"])

    def nvmlDeviceGetUUID(self, handle: dict[str, Any]) -> str:
        return str(handle["uuid"])

    def nvmlDeviceGetMemoryInfo(self, handle: dict[str, Any]) -> Any:
        total = int(handle["memory_total"])
        return type("Memory", (), {"total": total, "free": total, "used": 0})()

    def nvmlDeviceGetMigMode(self, handle: dict[str, Any]) -> list[int]:
        mode = handle.get("mig_mode", "unsupported")
        if mode == "unsupported":
            self._fail(NOT_SUPPORTED)
        flag = int(mode == "enabled")
        return [flag, flag]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: dict[str, Any]) -> int:
        slots = [m["slot"] for m in handle.get("mig_devices", ())]
        return int(handle.get("mig_slots", max(slots, default=-1) + 1))

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: dict[str, Any], slot: int) -> dict[str, Any]:
        for mig in handle.get("mig_devices", ()):
            if mig["slot"] == slot:
                return dict(mig)
        self._fail(NOT_FOUND)
        raise AssertionError("unreachable")
