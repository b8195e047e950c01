"""``inventory``: this machine's GPUs through NVML, or a recorded device list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
import yaml

from gpu_preempt.inventory.nvml import RecordedNVML, inventory_as_node, read_inventory

from .app import JsonOpt, command
from .render import err, print_inventory

__all__ = ["inventory"]


@command(example="gpu-preempt inventory --as-node gpu-node-1")
def inventory(
    as_json: JsonOpt = False,
    as_node: Annotated[
        str | None, typer.Option("--as-node", metavar="NAME", help="print a snapshot node entry named NAME")
    ] = None,
    recording: Annotated[
        Path | None,
        typer.Option(
            "--recording", metavar="FILE", help="read a recorded device list (the --json output) instead of NVML"
        ),
    ] = None,
) -> None:
    """List this machine's GPUs (index, model, UUID, memory, MIG) through NVML."""
    nvml = None
    if recording is not None:
        try:
            nvml = RecordedNVML.from_file(recording)
        except (OSError, ValueError) as error:
            err.print(f"error: cannot read recording {recording}: {error}")
            raise typer.Exit(2) from None
    found = read_inventory(nvml)
    if as_node is not None:
        if not found.devices:
            err.print(f"error: no GPUs to describe: {found.reason}")
            raise typer.Exit(1)
        node = {"nodes": [inventory_as_node(found, as_node)]}
        print(json.dumps(node, indent=2) if as_json else yaml.safe_dump(node, sort_keys=False).rstrip())
        return
    if as_json:
        print(json.dumps(found.to_dict(), indent=2))
        return
    print_inventory(found)
