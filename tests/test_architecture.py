"""Imports go one way (docs/architecture.md): a module may import its own layer and the layers below it, nothing above.

    models <- state <- rules <- problem <- reduce <- cpsat <- explain <- actions <- planning <- cli
    check (the verifiers): models, state, rules only; inventory (NVML) and kube (Kubernetes objects): models only;
    planning may use check

Every ``import`` and ``from ... import`` in ``models/`` and ``solver/`` is resolved
(relative ones too) and checked against that table; so are the names tests and
benchmarks import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT

FLOW = ("models", "state", "rules", "problem", "reduce", "cpsat", "explain", "actions", "planning", "cli")
ALLOWED: dict[str, set[str]] = {layer: set(FLOW[: i + 1]) for i, layer in enumerate(FLOW)}
ALLOWED["check"] = {"models", "state", "rules", "check"}
ALLOWED["inventory"] = {"models", "inventory"}
ALLOWED["kube"] = {"models", "kube"}
ALLOWED["planning"] |= {"check"}
ALLOWED["cli"] |= {"check", "inventory", "kube"}
ALLOWED["api"] = (ALLOWED["cli"] - {"cli"}) | {"api"}  # gpu_preempt and gpu_preempt.solver: the public API


def layer_of(module: str) -> str:
    """The layer of a dotted name inside the package: ``gpu_preempt.solver.rules.x`` -> ``rules``."""
    parts = module.split(".")
    assert parts[0] == "gpu_preempt", module
    if len(parts) == 1 or parts[1:] == ["solver"]:
        return "api"
    if parts[1] == "models":
        return "models"
    assert parts[1] == "solver" and parts[2] in ALLOWED, f"{module}: a folder of solver/ with no layer in the table"
    return parts[2]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["gpu_preempt", *parts])


def is_module(dotted: str) -> bool:
    """Whether ``gpu_preempt.a.b`` names a module or package of the checkout."""
    where = ROOT.joinpath(*dotted.split(".")[1:])
    return where.with_suffix(".py").exists() or (where / "__init__.py").exists()


def imports(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module)`` for every import of the package's own modules in ``path``.

    ``from gpu_preempt.solver import cpsat`` imports the module ``gpu_preempt.solver.cpsat``: that is what is judged.
    """
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if target.startswith("gpu_preempt") and is_module(sub) else target))
    return [(line, target) for line, target in found if target.split(".")[0] in ("gpu_preempt", "models", "solver")]


SOURCES = sorted([ROOT / "__init__.py", *(ROOT / "models").rglob("*.py"), *(ROOT / "solver").rglob("*.py")])


def test_every_folder_of_solver_has_a_layer() -> None:
    folders = {p.name for p in (ROOT / "solver").iterdir() if (p / "__init__.py").exists()}
    assert folders <= set(ALLOWED), sorted(folders - set(ALLOWED))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_flow(path: Path) -> None:
    own = layer_of(module_name(path))
    wrong = []
    for line, target in imports(path):
        if not target.startswith("gpu_preempt"):
            wrong.append(f"line {line}: {target} (use gpu_preempt.{target})")
        elif layer_of(target) not in ALLOWED[own]:
            wrong.append(f"line {line}: {own} imports {target} ({layer_of(target)}), against the flow")
    assert not wrong, wrong


def test_the_table_catches_a_backward_import(tmp_path: Path) -> None:
    """The check itself: a rule importing the job solver is refused, a rule importing the state is not."""
    assert "actions" not in ALLOWED["rules"] and "state" in ALLOWED["rules"]
    assert "cpsat" not in ALLOWED["reduce"] and "reduce" in ALLOWED["cpsat"]
    assert "cpsat" not in ALLOWED["check"] and "actions" not in ALLOWED["check"]
    assert layer_of("gpu_preempt.solver.actions.job_solver") == "actions"
    assert layer_of("gpu_preempt.models.decision") == "models"


OUTSIDE = sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")])


@pytest.mark.parametrize("path", OUTSIDE, ids=lambda p: str(p.relative_to(ROOT)))
def test_tests_and_benchmarks_use_the_installed_name_and_no_private_helpers(path: Path) -> None:
    wrong = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in ("models", "solver"):
                wrong.append(f"line {node.lineno}: from {node.module} (use gpu_preempt.{node.module})")
            if node.module.startswith("gpu_preempt"):
                wrong += [f"line {node.lineno}: private {a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            wrong += [
                f"line {node.lineno}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] in ("models", "solver")
            ]
    assert not wrong, wrong
