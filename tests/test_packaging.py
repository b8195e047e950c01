"""A regular install: the wheel carries every package under one import name, and works outside the checkout.

The README and CI install the project in editable mode, which can hide a
subpackage missing from the wheel (it did: ``solver/cpsat`` once). Here the wheel
is built as ``pip wheel .`` builds it, installed into a fresh virtual
environment, and run from a folder that has a ``models/`` of its own.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

PIP_WHEEL = (sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q")
LEFT_OUT = shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__", "fixtures", "notebooks")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel .`` on a copy of the checkout (an in-tree build would reuse a stale ``build/`` folder), built with
    this environment's setuptools (the ``dev`` extra's), so that no package index is needed."""
    source = tmp_path_factory.mktemp("source") / "gpu-preempt"
    shutil.copytree(ROOT, source, ignore=LEFT_OUT)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [*PIP_WHEEL, "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("gpu_preempt-*.whl")
    return built


def installed_name(folder: Path) -> str:
    """``solver/rules`` -> ``gpu_preempt/rules``, ``models`` -> ``gpu_preempt/models``: where a folder of the checkout
    lands in the wheel."""
    parts = folder.relative_to(ROOT).parts
    return "/".join(["gpu_preempt", *(parts[1:] if parts[0] == "solver" else parts)])


def test_the_wheel_holds_every_package_and_nothing_else(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"gpu_preempt"}
    packed = {str(Path(name).parent) for name in names if name.endswith("/__init__.py")}
    folders = {
        installed_name(init.parent) for top in ("models", "solver") for init in (ROOT / top).rglob("__init__.py")
    }
    assert folders == packed, sorted(folders ^ packed)
    assert {"gpu_preempt/__init__.py", "gpu_preempt/py.typed", "gpu_preempt/models/snapshot.py"} <= set(names)
    assert not any(name.split("/")[1] in ("tests", "benchmarks", "docs", "setup.py") for name in names if "/" in name)


@pytest.mark.parametrize("outside", ["tests", "benchmarks", "docs", "setup", "solver", "notebooks"])
def test_the_editable_install_exposes_only_the_package(outside: str) -> None:
    """The install the README gives maps ``gpu_preempt`` to ``solver/`` and ``gpu_preempt.models`` to ``models/``:
    the checkout's other folders are not part of it (run from a folder with none of its own)."""
    found = subprocess.run(
        [sys.executable, "-c", f"import gpu_preempt.{outside}"], cwd=ROOT / "fixtures", capture_output=True, text=True
    )
    assert found.returncode == 1 and "ModuleNotFoundError" in found.stderr, found.stderr
    public = subprocess.run(
        [sys.executable, "-c", "import gpu_preempt, gpu_preempt.models as m; print(gpu_preempt.__file__, m.__file__)"],
        cwd=ROOT / "fixtures",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    # resolved: a strict editable install (for mypy, docs/development.md) links each file from build/
    assert [Path(p).resolve() for p in public] == [ROOT / "solver" / "__init__.py", ROOT / "models" / "__init__.py"]


def test_the_installed_wheel_runs_from_any_folder(wheel: Path, tmp_path: Path) -> None:
    """A fresh environment with the wheel (dependencies borrowed from this one, not its editable install)."""
    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    (site,) = env.glob("lib/python*/site-packages")
    # A plain path entry: .pth files of the borrowed folder (our own editable install among them) are not run.
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    python = env / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    work = tmp_path / "project"
    (work / "models").mkdir(parents=True)
    (work / "models" / "__init__.py").write_text("raise ImportError('a user folder named models')\n")
    where = subprocess.run(
        [str(python), "-c", "import gpu_preempt, gpu_preempt.models as m; print(gpu_preempt.__file__, m.__file__)"],
        cwd=work,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert str(site) in where and str(ROOT) not in where, where
    for outside in ("tests", "setup"):
        missing = subprocess.run([str(python), "-c", f"import gpu_preempt.{outside}"], cwd=work, capture_output=True)
        assert missing.returncode == 1 and b"ModuleNotFoundError" in missing.stderr
    cycle = subprocess.run(
        [str(env / "bin" / "gpu-preempt"), "cycle", str(FIXTURES / "example-cluster.yaml"), "--verify"],
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert cycle.returncode == 0, cycle.stderr
    assert "serving-new: reclaim -> pipelined" in cycle.stdout
    assert "all sound" in cycle.stderr
