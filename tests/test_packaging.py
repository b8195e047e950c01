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

LEFT_OUT = shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__", "fixtures", "notebooks")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel .`` on a copy of the checkout (an in-tree build would reuse a stale ``build/`` folder)."""
    source = tmp_path_factory.mktemp("source") / "gpu-preempt"
    shutil.copytree(ROOT, source, ignore=LEFT_OUT)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("gpu_preempt-*.whl")
    return built


def test_the_wheel_holds_every_package_under_gpu_preempt(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"gpu_preempt"}
    packed = {str(Path(name).parent) for name in names if name.endswith("/__init__.py")}
    folders = {
        "gpu_preempt/" + str(init.parent.relative_to(ROOT))
        for top in ("models", "solver")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert folders <= packed, sorted(folders - packed)
    assert "gpu_preempt/__init__.py" in names
    assert not any(name.startswith("gpu_preempt/tests/") or name.endswith("setup.py") for name in names)


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
    cycle = subprocess.run(
        [str(env / "bin" / "gpu-preempt"), "cycle", str(FIXTURES / "example-cluster.yaml"), "--verify"],
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert cycle.returncode == 0, cycle.stderr
    assert "serving-new: reclaim -> pipelined" in cycle.stdout
    assert "all sound" in cycle.stderr
