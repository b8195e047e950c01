"""``report.html`` (docs/scenario-format.md, "What comes out"): one self-contained page per output folder, with the
scenario, the summary, every plot and the per-queue tables, that opens offline; rendered in a real headless browser
where one is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import contended_workload, write_scenario

from gpu_preempt.planning.run import simulate
from gpu_preempt.planning.run_sweep import sweep

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("replay")
    simulate(write_scenario(folder, workload=contended_workload(40)), folder / "out")
    return folder / "out"


def test_a_replay_folder_holds_a_page_with_every_plot_inline_and_nothing_from_outside(replayed: Path):
    page = (replayed / "report.html").read_text(encoding="utf-8")
    sources = re.findall(r'src="([^"]*)"', page)
    assert len(sources) == len(list(replayed.glob("*.png"))) == 4
    assert all(s.startswith("data:image/png;base64,") for s in sources)
    assert not re.search(r"https?://|<script|<link|@import|url\(", page)
    assert "<h2>Summary</h2>" in page and "<h2>Queues</h2>" in page and "<h2>Scenario</h2>" in page
    assert "<td>a</td>" in page and "<td>b</td>" in page  # a row per queue
    assert "offered load over the arrival window" in page


def test_a_sweep_folder_holds_a_page_with_its_results_target_and_plots(tmp_path: Path):
    write_scenario(tmp_path, workload=contended_workload(40))
    document = {
        "scenario": str(tmp_path / "scenario.yaml"),
        "grid": {"cluster.nodes.0.count": [1, 3]},
        "size": "cluster.nodes.0.count",
        "solvers": ["cpsat"],
    }
    sweep(document, tmp_path / "out", use_cache=False, target="wait.p95 <= 30m")
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<h2>Results</h2>" in page and "<h2>Target</h2>" in page and "listed, not run" in page
    assert len(re.findall(r'src="data:image/png;base64,', page)) == len(list((tmp_path / "out").glob("*.png"))) == 1


@pytest.mark.skipif(BROWSER is None, reason="no headless browser: install Debian's chromium to render report.html")
def test_the_page_renders_offline_in_a_real_browser_without_console_errors(replayed: Path, tmp_path: Path):
    from PIL import Image

    assert BROWSER is not None
    shot = tmp_path / "shot.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
             "--window-size=1200,2000", f"--screenshot={shot}"]  # fmt: skip
    done = subprocess.run(
        [BROWSER, *flags, (replayed / "report.html").as_uri()], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert not [line for line in done.stderr.splitlines() if ":CONSOLE" in line], done.stderr
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, tables and plots, not a blank page
