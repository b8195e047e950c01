"""Imports follow an explicit graph (docs/architecture.md draws it): each folder names the folders it may import.

Every ``import`` and ``from ... import`` in ``models/`` and ``solver/`` is resolved (relative ones too) to an
installed name (``solver/rules/x.py`` is ``gpu_preempt.rules.x``, ``models/job.py`` ``gpu_preempt.models.job``) and
checked against :data:`MAY_IMPORT`. The graph in docs/architecture.md must be the same graph, edge for edge, and
tests and benchmarks import the installed names only, and no private ``_name`` of another module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest
from conftest import ROOT

MAY_IMPORT: dict[str, set[str]] = {
    "models": set(),
    "state": {"models"},
    "rules": {"models", "state"},
    "problem": {"models"},
    "formulate": {"models", "state", "rules", "problem"},
    "reduce": {"models", "state", "rules", "problem", "formulate.rooms"},
    "cpsat": {"models", "problem"},
    "explain": {"models", "state", "rules", "problem", "cpsat"},
    "actions": {"models", "state", "rules", "problem", "formulate", "reduce", "cpsat", "explain"},
    "check": {"models", "state", "rules"},
    "inventory": {"models"},
    "kube": {"models"},
    "planning": {"models", "state", "actions", "check"},
    "questions": {"models", "state", "rules", "actions", "check", "planning"},
    "cli": {"models", "state", "actions", "check", "explain", "inventory", "kube", "planning", "questions"},
    "api": {"models", "state", "actions", "check", "planning", "questions"},
}
"""Folder (``api``: the package's ``__init__.py`` and ``api.py``) -> what it may import besides itself. An entry
with a dot would allow one module of a folder only."""


def layer_of(module: str) -> str:
    """The folder of an installed name: ``gpu_preempt.rules.x`` -> ``rules``; ``gpu_preempt`` -> ``api``."""
    parts = module.split(".")
    assert parts[0] == "gpu_preempt", module
    if len(parts) == 1 or parts[1] == "api":
        return "api"
    assert parts[1] in MAY_IMPORT, f"{module}: a folder with no entry in the graph"
    return parts[1]


def allowed(source: str, target: str) -> bool:
    """Whether module ``source`` may import module ``target``."""
    own, there = layer_of(source), layer_of(target)
    if own == there:
        return True
    rules = MAY_IMPORT[own]
    return there in rules or any(target == f"gpu_preempt.{r}" or target.startswith(f"gpu_preempt.{r}.") for r in rules)


def module_name(path: Path) -> str:
    """``solver/rules/x.py`` -> ``gpu_preempt.rules.x``; ``models/job.py`` -> ``gpu_preempt.models.job``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["gpu_preempt", *(parts[1:] if parts[0] == "solver" else parts)])


def source_of(dotted: str) -> Path:
    """Where ``gpu_preempt.a.b`` lives in the checkout (without a suffix)."""
    parts = dotted.split(".")[1:]
    return ROOT.joinpath(*parts) if parts[:1] == ["models"] else ROOT.joinpath("solver", *parts)


def is_module(dotted: str) -> bool:
    where = source_of(dotted)
    return where.with_suffix(".py").exists() or (where / "__init__.py").exists()


def imports(path: Path) -> list[tuple[int, str]]:
    """``(line, installed module)`` for every import of the package's own modules in ``path``.

    ``from gpu_preempt import cpsat`` imports the module ``gpu_preempt.cpsat``: that is what is judged.
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


SOURCES = sorted([*(ROOT / "models").rglob("*.py"), *(ROOT / "solver").rglob("*.py")])


def test_every_folder_has_an_entry_in_the_graph() -> None:
    folders = {p.name for p in (ROOT / "solver").iterdir() if (p / "__init__.py").exists()}
    assert folders | {"models", "api"} == set(MAY_IMPORT), sorted(folders ^ (set(MAY_IMPORT) - {"models", "api"}))


def test_the_graph_has_no_cycle() -> None:
    graph = nx.DiGraph((a, b.split(".")[0]) for a, targets in MAY_IMPORT.items() for b in targets)
    assert nx.is_directed_acyclic_graph(graph), nx.find_cycle(graph)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_graph(path: Path) -> None:
    own = module_name(path)
    wrong = []
    for line, target in imports(path):
        if not target.startswith("gpu_preempt"):
            wrong.append(f"line {line}: {target} (use gpu_preempt.{target})")
        elif not allowed(own, target):
            wrong.append(f"line {line}: {layer_of(own)} imports {target}, not in its entry of the graph")
    assert not wrong, wrong


def test_the_check_refuses_what_the_graph_leaves_out() -> None:
    assert allowed("gpu_preempt.rules.protection", "gpu_preempt.state.cluster")
    assert not allowed("gpu_preempt.rules.protection", "gpu_preempt.actions.job_solver")
    assert allowed("gpu_preempt.cpsat.search", "gpu_preempt.problem.data")
    assert not allowed("gpu_preempt.cpsat.search", "gpu_preempt.formulate.builder")
    assert not allowed("gpu_preempt.cpsat.search", "gpu_preempt.reduce.units")
    assert allowed("gpu_preempt.reduce.hosts", "gpu_preempt.formulate.rooms")
    assert not allowed("gpu_preempt.reduce.pipeline", "gpu_preempt.formulate.builder")  # reductions never build
    assert not allowed("gpu_preempt.check.verifier", "gpu_preempt.cpsat")
    assert layer_of("gpu_preempt.models.decision") == "models" and layer_of("gpu_preempt") == "api"


CLOSED = {"problem": {"models", "problem"}, "cpsat": {"models", "problem", "cpsat"}}
"""What each closed folder pulls in when imported, through every import of every module it loads: the problem and
its solver see nothing of the state, the rules, the formulation or the actions."""


@pytest.mark.parametrize("folder", sorted(CLOSED))
def test_the_problem_and_its_solver_are_closed_under_their_imports(folder: str) -> None:
    import subprocess
    import sys

    modules = sorted(
        module_name(path)
        for path in SOURCES
        if module_name(path).startswith(f"gpu_preempt.{folder}.") or module_name(path) == f"gpu_preempt.{folder}"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys; import {', '.join(modules)}; print(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    reached = {layer_of(m) for m in loaded if m.startswith("gpu_preempt.")}  # the package itself loads nothing
    assert reached <= CLOSED[folder], sorted(reached - CLOSED[folder])


def drawn_graph() -> dict[str, set[str]]:
    """The edges of the mermaid graph in docs/architecture.md: ``a --> b`` (``a`` may import ``b``), ``a -->|m| b``
    (``a`` may import module ``m`` of ``b`` only), and a folder alone on its line (it imports nothing of ours)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```mermaid\n(.*?)```", text, flags=re.DOTALL)
    drawn: dict[str, set[str]] = {}
    for line in block.splitlines()[1:]:  # after "flowchart ..."
        edge = re.fullmatch(r"\s*(\w+)\s*-->\s*(?:\|(\w+)\|)?\s*(\w+)\s*", line)
        if edge:
            drawn.setdefault(edge[1], set()).add(f"{edge[3]}.{edge[2]}" if edge[2] else edge[3])
        elif line.strip():
            drawn.setdefault(line.strip(), set())
    return drawn


def test_docs_draw_the_graph_the_test_enforces() -> None:
    assert drawn_graph() == MAY_IMPORT


OUTSIDE = sorted(
    [*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "docs").rglob("*.py")]
)


@pytest.mark.parametrize("path", OUTSIDE, ids=lambda p: str(p.relative_to(ROOT)))
def test_tests_and_benchmarks_use_the_installed_name_and_no_private_helpers(path: Path) -> None:
    wrong = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in ("models", "solver"):
                wrong.append(f"line {node.lineno}: from {node.module} (use the installed name gpu_preempt)")
            if node.module.startswith("gpu_preempt"):
                wrong += [f"line {node.lineno}: private {a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Import):
            wrong += [
                f"line {node.lineno}: import {a.name}"
                for a in node.names
                if a.name.split(".")[0] in ("models", "solver")
            ]
    assert not wrong, wrong


def public_names(tree: ast.Module) -> set[str]:
    """The names a module defines at its top level without a leading underscore (classes, functions, constants)."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(name, ast.Name):
                        found.add(name.id)
    return {name for name in found if not name.startswith("_") and len(name) > 1}


def declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_declares_what_it_offers_in_all(path: Path) -> None:
    """``__all__`` lists every public name the module defines (a module's own, not what it imports), in the order
    ruff's RUF022 keeps, and every name it lists exists."""
    import importlib

    tree = ast.parse(path.read_text(encoding="utf-8"))
    declared = declared_all(tree)
    assert declared is not None, "no __all__"
    module = importlib.import_module(module_name(path))
    assert [name for name in declared if not hasattr(module, name)] == []
    if path.name != "__init__.py":
        assert public_names(tree) - set(declared) == set()


def test_the_package_shows_its_api_and_nothing_imported_for_it() -> None:
    import subprocess
    import sys

    shown = subprocess.run(
        [sys.executable, "-c", "import gpu_preempt; print(' '.join(dir(gpu_preempt)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    import gpu_preempt

    assert shown == sorted([*gpu_preempt.__all__, "__version__"])
    assert "GpuPreemptError" in shown and gpu_preempt.__version__ == metadata_version()


def metadata_version() -> str:
    import tomllib

    return str(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


ROOM = 600
"""The most lines a module of ``solver/`` or ``models/`` holds: past it, a module holds more than one concern."""


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_is_a_short_room(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= ROOM, f"{lines} lines"
