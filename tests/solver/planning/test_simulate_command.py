"""`gpu-preempt simulate`: the human summary and the output folder; bad scenarios and traces exit 2 naming the
field or line, and leave no output folder behind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import CLUSTER10, contended_workload, write_scenario
from typer.testing import CliRunner

from gpu_preempt.cli import app
from gpu_preempt.planning.run import simulate

RUN = CliRunner()


def small(tmp_path: Path, **changes: object) -> Path:
    workload = {"trace": {"format": "itp", "path": str(CLUSTER10)}, "time_scale": 50, "window": {"first": 40}}
    return write_scenario(tmp_path, **{"workload": workload, **changes})


def test_simulate_writes_every_output(tmp_path: Path):
    result = RUN.invoke(app, ["simulate", str(small(tmp_path)), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "40 jobs" in result.stdout and "proved optimal" in result.stdout
    assert all(f"wait {p}" in result.stdout for p in ("p50", "p90", "p95", "p99"))
    assert "utilisation 0." in result.stdout  # a share, as in summary.json and results.csv
    names = {p.name for p in (tmp_path / "out").iterdir()}
    expected = {"summary.json", "jobs.parquet", "events.jsonl", "timeseries.csv"}
    assert expected | {"wait_cdf.png", "jct_cdf.png", "allocation.png", "utilisation.png"} <= names
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["overall"]["jobs"] == 40 and summary["synthetic"]
    for figure in ("wait", "jct", "bounded_slowdown"):
        assert {"p50", "p90", "p95", "p99"} <= set(summary["overall"][figure]), figure
    assert 0 < summary["utilisation"] <= 1
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "out" / "jobs.parquet")
    assert table.num_rows == 40 and "wait_s" in table.column_names


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"simulation": {"period": -5}}, "simulation.period"),
        ({"simulation": {"periode": 5}}, "simulation.periode: unknown field"),
        ({"cluster": {"nodes": [{"count": 2, "gpu": 8, "memory": "lots"}]}}, "cluster.nodes[0].memory"),
        ({"workload": {"trace": {"format": "parquet", "path": "x"}}}, "workload.trace.format"),
        ({"workload": {"trace": {"format": "itp", "path": "missing.csv"}}}, "no such file"),
    ],
)
def test_a_bad_scenario_exits_2_naming_the_field(tmp_path: Path, change: dict[str, object], message: str):
    out = tmp_path / "out"
    result = RUN.invoke(app, ["simulate", str(small(tmp_path, **change)), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_bad_trace_line_exits_2_with_its_number(tmp_path: Path):
    lines = CLUSTER10.read_text().splitlines()
    lines[7] = lines[7].replace(lines[7].split(",")[2], "-600")
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    path = small(tmp_path, workload={"trace": {"format": "itp", "path": "bad.csv"}})
    result = RUN.invoke(app, ["simulate", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "bad.csv line 8" in result.stderr and "duration" in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_output_folder_holding_a_file_of_the_user_is_refused_in_one_line_unless_forced(tmp_path: Path):
    scenario, out = small(tmp_path), tmp_path / "out"
    assert RUN.invoke(app, ["simulate", str(scenario), "--out", str(out)]).exit_code == 0
    (out / "mynotes.txt").write_text("keep me")
    result = RUN.invoke(app, ["simulate", str(scenario), "--out", str(out)])
    assert result.exit_code == 2 and (out / "mynotes.txt").read_text() == "keep me"
    assert result.stderr.strip().splitlines() == [
        f"error: --out: {out} holds mynotes.txt, which gpu-preempt did not write: choose another folder, or pass "
        "--force to replace it"
    ]
    assert RUN.invoke(app, ["simulate", str(scenario), "--out", str(out), "--force"]).exit_code == 0
    assert not (out / "mynotes.txt").exists() and (out / "summary.json").exists()


def test_an_output_folder_that_cannot_be_written_is_refused_before_the_replay(tmp_path: Path):
    result = RUN.invoke(app, ["simulate", str(tmp_path / "missing.yaml"), "--out", "/proc/x"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == ["error: --out: cannot write /proc/x (No such file or directory)"]


def test_a_dump_asked_for_after_the_last_cycle_is_answered(tmp_path: Path):
    out = tmp_path / "out"
    result = RUN.invoke(app, ["simulate", str(small(tmp_path)), "--out", str(out), "--dump-at", "1000h"])
    assert result.exit_code == 2
    assert "error: --dump-at 1000h: no cycle ran at or after that time (the last ran at " in result.stderr
    assert (out / "summary.json").exists() and not (out / "dump.json").exists()


def test_without_a_terminal_a_heartbeat_line_tells_the_progress(tmp_path: Path, beat_at_once: None):
    result = RUN.invoke(app, ["simulate", str(small(tmp_path)), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    beats = [line for line in result.stderr.splitlines() if line.startswith("simulate: ")]
    assert beats and all(" jobs done, simulated " in line and " elapsed, about " in line for line in beats)


def test_schema_of_the_scenario_format():
    result = RUN.invoke(app, ["schema", "--scenario"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["title"] == "gpu-preempt scenario v1" and "workload" in schema["properties"]


@pytest.mark.parametrize("executable", ["/nonexistent/python", "/bin/false"])
def test_plots_are_drawn_here_when_the_plotting_child_cannot_start_or_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executable: str
):
    """The plots come from a child process that imports matplotlib while the replay runs; if it cannot be started
    (no such program) or fails (exits 1 at once), this process draws them, byte for byte the same."""
    scenario = small(tmp_path)
    simulate(scenario, tmp_path / "child")
    monkeypatch.setattr(sys, "executable", executable)
    simulate(scenario, tmp_path / "here")
    for name in ("wait_cdf.png", "jct_cdf.png", "allocation.png", "utilisation.png"):
        assert (tmp_path / "here" / name).read_bytes() == (tmp_path / "child" / name).read_bytes(), name


def test_ctrl_c_stops_cleanly_and_leaves_the_output_folder_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An interrupted replay says so and exits 130: no half-written folder, an earlier one left untouched."""
    from gpu_preempt.planning.simulator import Simulator

    scenario, out = small(tmp_path), tmp_path / "out"
    assert RUN.invoke(app, ["simulate", str(scenario), "--out", str(out)]).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    cycle = Simulator._cycle
    calls = []

    def interrupted(self: Simulator, payload: None) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        cycle(self, payload)

    monkeypatch.setattr(Simulator, "_cycle", interrupted)
    result = RUN.invoke(app, ["simulate", str(scenario), "--out", str(out)])
    assert result.exit_code == 130, result.output
    assert "interrupted: nothing was written to" in result.stderr and "Traceback" not in result.output
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []  # no staging folder left
    fresh = tmp_path / "fresh"
    calls.clear()
    assert RUN.invoke(app, ["simulate", str(scenario), "--out", str(fresh)]).exit_code == 130
    assert not fresh.exists()


def test_the_progress_callback_counts_jobs_done(tmp_path: Path):
    seen: list[tuple[float, int, int]] = []
    simulate(small(tmp_path), None, on_cycle=lambda now, done, total: seen.append((now, done, total)))
    assert seen and all(total == 40 for _, _, total in seen)
    assert [done for _, done, _ in seen] == sorted(done for _, done, _ in seen) and seen[-1][1] <= 40


@pytest.mark.parametrize(
    ("name", "said"),
    [("SIGINT", "interrupted"), ("SIGTERM", "interrupted by SIGTERM"), ("SIGHUP", "interrupted by SIGHUP")],
)
def test_a_stop_signal_to_the_process_says_what_was_kept_and_leaves_no_staging_folder(
    tmp_path: Path, name: str, said: str
):
    """SIGINT (Ctrl-C), SIGTERM (``timeout``, batch systems) or SIGHUP to a real ``gpu-preempt simulate`` mid-run:
    exit 128 + the signal's number, one line saying nothing was written, the earlier
    folder as it was, no staging folder. The trace is a named pipe: the child is interrupted while it reads the trace,
    after its staging folder is made (the test waits on the pipe's open, an event, not on a poll)."""
    import os
    import signal
    import subprocess

    trace = tmp_path / "trace.csv"
    os.mkfifo(trace)
    scenario = write_scenario(
        tmp_path, workload={**contended_workload(400), "trace": {"format": "itp", "path": str(trace)}}
    )
    out = tmp_path / "out"
    out.mkdir()  # an empty folder: refused by nobody, left as it was
    command = [str(Path(sys.executable).parent / "gpu-preempt"), "simulate", str(scenario), "--out", str(out)]

    number = getattr(signal, name)

    def as_from_a_shell() -> None:  # the test process may block or ignore the signal (a library it loaded), not a shell
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
        signal.signal(number, signal.SIG_DFL)

    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_shell
    )
    with trace.open("w") as pipe:  # returns once the child opens the trace for reading
        pipe.write(CLUSTER10.read_text().splitlines(keepends=True)[0])
        pipe.flush()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # staging: the replay has begun
        child.send_signal(number)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 128 + number, stderr
    assert f"{said}: nothing was written to {out}" in " ".join(stderr.split()) and "Traceback" not in stderr
    assert list(out.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == [
        "out",
        "scenario.yaml",
        "trace.csv",
    ]


def test_the_plots_are_titled_and_show_each_queue_s_waits(tmp_path: Path):
    from gpu_preempt.planning.output import plot_data

    result = simulate(small(tmp_path), None)
    data = plot_data(result.simulator, "small, cpsat, seed 1")
    assert data["title"] == "small, cpsat, seed 1" and set(data["queue_waits"]) == {"a", "b"}
    assert sorted(w for waits in data["queue_waits"].values() for w in waits) == sorted(data["waits"])


@pytest.mark.parametrize("window", [None, {"start": 10**9}], ids=["a header alone", "a window past every job"])
def test_a_trace_with_no_job_to_replay_is_refused_naming_it(tmp_path: Path, window: dict[str, int] | None):
    trace = tmp_path / "trace.csv"
    trace.write_text(CLUSTER10.read_text().splitlines(keepends=True)[0] if window is None else CLUSTER10.read_text())
    workload: dict[str, object] = {"trace": {"format": "itp", "path": str(trace)}}
    if window is not None:
        workload["window"] = window
    result = RUN.invoke(
        app, ["simulate", str(write_scenario(tmp_path, workload=workload)), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2, result.output
    assert "workload.trace: no job to replay: the trace has no job" in result.stderr
    assert ("within workload.window" in result.stderr) == (window is not None)
    assert not (tmp_path / "o").exists()
