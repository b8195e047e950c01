"""The vocabulary of gpu-preempt: pydantic models of snapshot format v1.

No solving happens here. A snapshot is read with :func:`load_snapshot` (or
:func:`parse_snapshot`, :func:`snapshot_from_data`); every user error becomes a
:class:`SnapshotError` whose ``errors`` name the offending field paths.
"""

from .config import DEFAULT_OBJECTIVE as DEFAULT_OBJECTIVE
from .config import Config as Config
from .config import Criterion as Criterion
from .config import SolverConfig as SolverConfig
from .config import SolverName as SolverName
from .duration import FOREVER as FOREVER
from .duration import format_duration as format_duration
from .duration import format_time as format_time
from .duration import parse_duration as parse_duration
from .duration import parse_time as parse_time
from .errors import FieldError as FieldError
from .errors import GpuPreemptError as GpuPreemptError
from .errors import SnapshotError as SnapshotError
from .errors import UnknownJobError as UnknownJobError
from .job import Job as Job
from .job import Task as Task
from .job import TaskStatus as TaskStatus
from .load.loader import load_snapshot as load_snapshot
from .load.loader import parse_snapshot as parse_snapshot
from .load.loader import read_document as read_document
from .load.loader import snapshot_from_data as snapshot_from_data
from .node import Node as Node
from .priority_class import PreemptionToleration as PreemptionToleration
from .priority_class import PriorityClass as PriorityClass
from .priority_class import Toleration as Toleration
from .quantity import MILLI as MILLI
from .quantity import UNLIMITED as UNLIMITED
from .quantity import Resources as Resources
from .quantity import format_quantity as format_quantity
from .quantity import format_resources as format_resources
from .quantity import is_gpu_resource as is_gpu_resource
from .quantity import parse_quantity as parse_quantity
from .queue import Queue as Queue
from .requeue import RequeueConfig as RequeueConfig
from .requeue import RequeueState as RequeueState
from .snapshot import Snapshot as Snapshot

__all__ = [
    "DEFAULT_OBJECTIVE",
    "FOREVER",
    "MILLI",
    "UNLIMITED",
    "Config",
    "Criterion",
    "FieldError",
    "GpuPreemptError",
    "Job",
    "Node",
    "PreemptionToleration",
    "PriorityClass",
    "Queue",
    "RequeueConfig",
    "RequeueState",
    "Resources",
    "Snapshot",
    "SnapshotError",
    "SolverConfig",
    "Task",
    "TaskStatus",
    "Toleration",
    "UnknownJobError",
    "format_duration",
    "format_quantity",
    "format_resources",
    "format_time",
    "is_gpu_resource",
    "load_snapshot",
    "parse_duration",
    "parse_quantity",
    "parse_snapshot",
    "parse_time",
    "read_document",
    "snapshot_from_data",
]
