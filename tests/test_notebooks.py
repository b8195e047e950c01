"""The notebooks run from a fresh clone: each is executed (nbclient, a real kernel) on the bundled sample and must
answer its questions with plots; they are committed without outputs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_is_a_capacity_planning_notebook():
    assert ROOT / "notebooks" / "capacity-planning.ipynb" in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path: Path):
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    assert all(
        not cell.get("outputs") and cell.get("execution_count") is None
        for cell in notebook.cells
        if cell.cell_type == "code"
    )


@pytest.mark.slow
def test_capacity_planning_answers_its_questions_with_plots():
    nbclient = pytest.importorskip("nbclient")
    import nbformat

    path = ROOT / "notebooks" / "capacity-planning.ipynb"
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if o.output_type == "display_data" and "image/png" in o.data]
    assert len(images) == 4
    text = "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stdout")
    assert "min-runtime " in text and "p95 wait within 10% of the best" in text
    repeated = [int(m) for m in re.findall(r"(\d+) job\(s\) preempted twice or more, wait", text)]
    assert len(repeated) == 5 and len(set(repeated)) > 1  # the setting changes what the question asks about
    assert "smallest cluster with wait p95 <= 30m: " in text and "GPUs (probed [40," in text
    assert "CP-SAT preempted " in text and "where greedy preempted " in text
    assert "under KAI's rules, cpsat: " in text and "under Kueue's rules, greedy: " in text
    assert "whatif: two 8-GPU tasks in vision run now: False; variants that run: fewer GPUs a task: 4" in text
    assert "at risk: nlp-finetune is taken by 1 GPU(s) from serving" in text
    assert "forecast: serving-new starts in 30 s (P50)" in text
    assert "audit: gang (preempt): over-eviction, KAI's search evicts ['big', 'newest'], the minimum ['big']" in text
