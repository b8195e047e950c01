"""Output folders that never destroy what gpu-preempt did not write (docs/scenario-format.md, "What comes out").

An output folder is checked before any work: ``--out`` must not be a file, and an existing folder is replaced only
when everything in it is listed in its manifest (:data:`MANIFEST`, written with every output folder), that is,
when an earlier run wrote all of it; ``force`` replaces any folder. The outputs are written into a staging folder
next to ``out``, made at the start (so that a folder that cannot be written is found before the work), and renamed
into place at the end; a failed or interrupted run removes it and leaves ``out`` as it was.

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> with OutFolder(root / "run", "simulate") as folder:
...     _ = (folder.staging / "summary.json").write_text("{}")
>>> sorted(p.name for p in (root / "run").iterdir())
['.gpu-preempt.json', 'summary.json']
>>> _ = (root / "run" / "notes.txt").write_text("mine")
>>> OutFolder(root / "run", "simulate")
Traceback (most recent call last):
...
gpu_preempt.models.errors.SnapshotError: --out: ... holds notes.txt, which gpu-preempt did not write: ...
>>> shutil.rmtree(root)
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

from gpu_preempt.models import SnapshotError

__all__ = ["MANIFEST", "SHOWN", "OutFolder", "check_out", "foreign_entries"]

MANIFEST = ".gpu-preempt.json"
"""The file of an output folder that lists what the run wrote there (and which command)."""
SHOWN = 3
"""Foreign entries named in the refusal."""


class OutFolder:
    """The output folder ``out`` of ``command`` (``simulate``, ``sweep``), as a context manager: write into
    :attr:`staging`; leaving the block without an error puts it in place of ``out``. ``option`` names the folder in
    errors."""

    def __init__(self, out: Path, command: str, *, force: bool = False, option: str = "--out") -> None:
        self.out, self.command, self.option = out, command, option
        check_out(out, force=force, option=option)
        self.made: Path | None = None
        """The first folder above ``out`` this run created (removed again if the run fails)."""
        missing = [p for p in [out.parent, *out.parent.parents] if not p.exists()]
        try:
            if missing:
                self.made = missing[-1]
                out.parent.mkdir(parents=True)
            self.staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        except OSError as error:
            self._remove_made()
            raise SnapshotError.single(option, f"cannot write {out} ({error.strerror or error})") from None

    def __enter__(self) -> OutFolder:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if kind is not None:
            self.discard()
            return
        try:
            self._finish()
        except OSError as failed:
            self.discard()
            raise SnapshotError.single(self.option, f"cannot write {self.out} ({failed.strerror or failed})") from None

    def discard(self) -> None:
        """Remove the staging folder (and folders this run made above ``out``)."""
        shutil.rmtree(self.staging, ignore_errors=True)
        self._remove_made()

    def _finish(self) -> None:
        written = sorted(p.name for p in self.staging.iterdir())
        manifest = {"written_by": f"gpu-preempt {self.command}", "files": written}
        (self.staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        os.chmod(self.staging, 0o777 & ~_umask())  # mkdtemp makes it private; the outputs follow the umask
        if self.out.exists():
            shutil.rmtree(self.out)
        os.replace(self.staging, self.out)

    def _remove_made(self) -> None:
        if self.made is not None:
            shutil.rmtree(self.made, ignore_errors=True)


def check_out(out: Path, *, force: bool = False, option: str = "--out") -> None:
    """Refuse an ``out`` that is a file, or a folder holding anything an earlier run did not write (unless
    ``force``); raises :class:`SnapshotError` naming ``option``."""
    if not out.exists():
        return
    if not out.is_dir():
        raise SnapshotError.single(option, f"{out} is a file, not a folder")
    if force:
        return
    foreign = foreign_entries(out)
    if foreign:
        names = ", ".join(foreign[:SHOWN]) + (f" and {len(foreign) - SHOWN} more" if len(foreign) > SHOWN else "")
        raise SnapshotError.single(
            option,
            f"{out} holds {names}, which gpu-preempt did not write: choose another folder, or pass --force "
            "to replace it",
        )


def foreign_entries(folder: Path) -> list[str]:
    """The entries of ``folder`` its manifest does not list (every one when it has none), sorted."""
    entries = sorted(p.name for p in folder.iterdir() if p.name != MANIFEST)
    try:
        listed = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return entries
    known = set(listed) if isinstance(listed, list) else set()
    return [name for name in entries if name not in known]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
