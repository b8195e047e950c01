"""What a new user meets first: a fast start, plain help with the choices listed, a version, no internal labels."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from gpu_preempt.solver.cli import app

COMMANDS = ["solve", "cycle", "enforce-quota", "inventory", "import", "plan", "simulate", "validate", "schema", "sweep"]


def help_of(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_the_command_line_starts_without_the_solver():
    """``--help``, ``validate`` and ``schema`` never import OR-Tools (nor pandas through it), nor numpy until a snapshot
    is built: they start in a quarter of a second (benchmarks/startup.py) instead of about one."""
    wanted = "('ortools', 'pandas', 'numpy')"
    code = f"import sys, gpu_preempt.solver.cli; print(sorted(m for m in {wanted} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_plain_placeholders_and_no_internal_labels(command: str):
    text = help_of(command)
    assert "<bool>" not in text and "{file}" not in text.lower() and "seed 00" not in text
    usage = next(line for line in text.splitlines() if "Usage:" in line)
    assert "{" not in usage


def test_help_lists_the_choices_of_options():
    assert "<cpsat|greedy>" in help_of("cycle")
    assert "<auto|allocate|reclaim|preempt>" in help_of("solve")
    assert "<table|eviction-json|kubectl>" in help_of("plan")
    assert "<local|ray>" in help_of("sweep")
    assert "Usage: gpu-preempt cycle [OPTIONS] FILE" in help_of("cycle")
    assert "Usage: gpu-preempt import [OPTIONS] FILE..." in help_of("import")


def test_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"gpu-preempt {version('gpu-preempt')}"


def test_the_schemas_speak_of_features_not_of_design_documents():
    for args in (["schema"], ["schema", "--scenario"]):
        text = CliRunner().invoke(app, args).output
        assert "seed 00" not in text
        json.loads(text)


def test_the_schema_states_the_bounds():
    text = CliRunner().invoke(app, ["schema"]).output
    assert "at most 2^60 milli-units" in text and "in the years 1 to 9999" in text and "at most 10,000 years" in text
    schema = json.loads(text)
    priority = schema["$defs"]["Job"]["properties"]["priority"]["anyOf"][0]
    assert (priority["minimum"], priority["maximum"]) == (-(2**31), 2**31 - 1)


def test_greedy_allocate_says_it_evicts_nothing():
    result = CliRunner().invoke(app, ["cycle", "--solver", "greedy", str(FIXTURES / "example-cluster.yaml")])
    assert "ran out of victims" not in result.output
    assert "serving-new: allocate -> infeasible" in result.output
    assert "no room without evicting anything" in result.output
