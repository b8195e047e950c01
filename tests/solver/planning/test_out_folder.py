"""Output folders never destroy what gpu-preempt did not write: checked before any work, replaced only when an
earlier run wrote everything in them (or with ``force``), written whole or not at all, modes from the umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpu_preempt.models import SnapshotError
from gpu_preempt.planning.out_folder import MANIFEST, OutFolder
from gpu_preempt.planning.run import simulate


def written(out: Path, *names: str) -> None:
    with OutFolder(out, "simulate") as folder:
        for name in names:
            (folder.staging / name).write_text(name)


def test_a_folder_an_earlier_run_wrote_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "run"
    written(out, "summary.json", "old.png")
    written(out, "summary.json")
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "summary.json"]


def test_a_file_the_run_did_not_write_is_never_removed_without_force(tmp_path: Path) -> None:
    out = tmp_path / "run"
    written(out, "summary.json")
    (out / "mynotes.txt").write_text("keep me")
    with pytest.raises(SnapshotError, match=r"--out: .* holds mynotes.txt, which gpu-preempt did not write"):
        OutFolder(out, "simulate")
    assert (out / "mynotes.txt").read_text() == "keep me"
    with OutFolder(out, "simulate", force=True) as folder:
        (folder.staging / "summary.json").write_text("{}")
    assert not (out / "mynotes.txt").exists()


def test_a_folder_without_a_manifest_is_someone_elses(tmp_path: Path) -> None:
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "summary.json").write_text("{}")  # looks like an output, but no run wrote it
    with pytest.raises(SnapshotError, match=r"holds summary\.json"):
        OutFolder(tmp_path / "theirs", "simulate")


def test_a_file_or_an_unwritable_place_is_refused_before_any_work(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(SnapshotError, match="is a file, not a folder"):
        simulate(tmp_path / "no-such-scenario.yaml", tmp_path / "file")  # the scenario is never read
    with pytest.raises(SnapshotError, match="--out: cannot write /proc/x"):
        simulate(tmp_path / "no-such-scenario.yaml", Path("/proc/x"))


def test_a_failed_run_leaves_nothing_not_even_the_folders_it_made(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "run"
    with pytest.raises(SnapshotError, match="no such file"):
        simulate(tmp_path / "no-such-scenario.yaml", out)
    assert list(tmp_path.iterdir()) == []


def test_the_folder_follows_the_umask(tmp_path: Path) -> None:
    before = os.umask(0o027)
    try:
        written(tmp_path / "run", "summary.json")
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "run").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "run" / "summary.json").stat().st_mode) == 0o640
