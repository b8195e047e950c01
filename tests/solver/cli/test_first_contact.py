"""What a new user meets first: a fast start, plain help with the choices listed, a version, no internal labels."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import FIXTURES
from typer.testing import CliRunner

from gpu_preempt.cli import app

COMMANDS = ["solve", "cycle", "enforce-quota", "inventory", "import", "plan", "simulate", "validate", "schema", "sweep"]


def help_of(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_the_command_line_starts_without_the_solver():
    """``--help``, ``validate`` and ``schema`` never import OR-Tools (nor pandas through it), nor numpy until a snapshot
    is built: they start in a quarter of a second (benchmarks/startup.py) instead of about one."""
    wanted = "('ortools', 'pandas', 'numpy')"
    code = f"import sys, gpu_preempt.cli; print(sorted(m for m in {wanted} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_solving_commands_import_the_solver_without_pandas():
    """``gpu-preempt solve`` imports OR-Tools without pandas (0.4 s of a small ``solve``); pandas imported later in
    the same process is the real one."""
    solve = (
        "import sys; from gpu_preempt.cli import main; sys.argv = ['gpu-preempt', 'solve', sys.argv[1], "
        "'--job', 'serving-new', '--action', 'reclaim', '--json']; main()"
    )
    example = str(FIXTURES / "example-cluster.yaml")
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", solve, example], capture_output=True, text=True)
    assert json.loads(done.stdout)["decisions"][-1]["outcome"] == "pipelined"
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "ortools.sat.python.cp_model" in imported and "pandas" not in imported
    later = (
        "from gpu_preempt.cli.app import OwnProcess, import_cpsat_without_pandas; OwnProcess.ours = True; "
        "import_cpsat_without_pandas(); "
        "import pandas; from ortools.sat.python import cp_model; "
        "print(hasattr(pandas, 'DataFrame'), cp_model.pd is pandas)"
    )
    done = subprocess.run([sys.executable, "-c", later], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]  # the real pandas afterwards; OR-Tools kept the stand-in


def test_an_or_tools_that_reads_more_of_pandas_is_imported_the_usual_way():
    """Should importing OR-Tools fail with the stand-in, it is undone, and the solver imports with pandas."""
    code = """
import sys
from gpu_preempt.cli.app import OwnProcess, import_cpsat_without_pandas

class Refuse:  # OR-Tools' cp_model refuses the stand-in, as one reading more than Index and Series would
    def find_spec(self, name, path, target=None):
        if name == "ortools.sat.python.cp_model" and type(sys.modules.get("pandas")).__name__ == "module" \
                and not hasattr(sys.modules["pandas"], "DataFrame"):
            raise AttributeError("module 'pandas' has no attribute 'DataFrame'")

sys.meta_path.insert(0, Refuse())
OwnProcess.ours = True
import_cpsat_without_pandas()
print("pandas" in sys.modules, "ortools.sat.python.cp_model" in sys.modules)
from ortools.sat.python import cp_model
print(hasattr(cp_model.pd, "DataFrame"))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "True"]


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
    assert "<local|ray>" in help_of("sweep") and "pip install 'gpu-preempt[ray]'" in help_of("sweep")
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


@pytest.mark.parametrize("command", COMMANDS)
def test_help_ends_with_an_example_whose_files_are_bundled(command: str):
    text = help_of(command)
    last = [line.strip() for line in text.splitlines() if line.strip()][-1]
    assert last.startswith(f"Example: gpu-preempt {command} "), last
    for word in last.split():
        if word.startswith("fixtures/"):
            assert (FIXTURES.parent / word).exists(), word


def test_an_unknown_job_is_answered_with_the_names_it_may_mean(tmp_path: Path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "now: 0\nnodes: [{name: n, resources: {gpu: 8}}]\nqueues: [{name: q}]\njobs:\n"
        "- {name: vision/resnet, queue: q, task_resources: {gpu: 1}, tasks: [{node: n}]}\n"
        "- {name: vision/vit, queue: q, task_resources: {gpu: 1}, tasks: [{}]}\n"
        "- {name: nlp/bert, queue: q, task_resources: {gpu: 1}, tasks: [{}]}\n"
    )
    for command in (["solve", str(path)], ["plan", str(path)]):
        result = CliRunner().invoke(app, [*command, "--job", "resnet"])
        assert result.exit_code == 2
        assert result.stderr.strip() == "error: --job: unknown job 'resnet'; did you mean vision/resnet?"
    result = CliRunner().invoke(app, ["solve", str(path), "--job", "nlp/bret"])
    assert "did you mean nlp/bert?" in result.stderr
    result = CliRunner().invoke(app, ["solve", str(path), "--job", "vision/resnet"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: --job: 'vision/resnet' has no task waiting to be placed (its tasks: 1 running); the jobs waiting: "
        "vision/vit, nlp/bert"
    )


def test_a_file_of_another_kind_is_named_with_the_command_that_reads_it():
    scenario = FIXTURES / "scenarios" / "itp-cluster10.yaml"
    result = CliRunner().invoke(app, ["cycle", str(scenario)])
    assert result.exit_code == 2
    assert f"hint: {scenario} looks like a scenario (it has cluster: and workload:): gpu-preempt simulate reads it" in (
        result.stderr
    )
    snapshot = FIXTURES / "example-cluster.yaml"
    result = CliRunner().invoke(app, ["simulate", str(snapshot), "--out", "/tmp/never-written"])
    assert result.exit_code == 2 and "looks like a snapshot (it has nodes: and jobs:)" in result.stderr
    sweep = FIXTURES / "scenarios" / "sweep-cluster10-size.yaml"
    result = CliRunner().invoke(app, ["simulate", str(sweep), "--out", "/tmp/never-written"])
    assert "looks like a sweep file (it has scenario: and grid:): gpu-preempt sweep reads it" in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["cycle", str(FIXTURES / "example-cluster.yaml"), "--next-snapshot"],
        ["import", str(FIXTURES / "kube" / "plain-cluster.json"), "--now", "2026-11-24T00:00:00Z", "-o"],
    ],
    ids=["cycle --next-snapshot", "import -o"],
)
def test_a_file_output_never_replaces_a_file_gpu_preempt_did_not_write(tmp_path: Path, command: list[str]):
    target = tmp_path / "out.yaml"
    target.write_text("my own notes\n")
    result = CliRunner().invoke(app, [*command, str(target)])
    assert result.exit_code == 2 and target.read_text() == "my own notes\n"
    assert "exists and gpu-preempt did not write it: choose another name, or pass --force" in result.stderr
    assert CliRunner().invoke(app, [*command, str(target), "--force"]).exit_code == 0
    written = target.read_text()
    assert written.startswith("# written by gpu-preempt")
    again = CliRunner().invoke(app, [*command, str(target)])  # its own earlier output: replaced
    assert again.exit_code == 0 and target.read_text() == written
