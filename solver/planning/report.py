"""``report.html``: one self-contained page a planner can send (docs/scenario-format.md, "What comes out").

The page holds the scenario, the summary, every plot of the folder (inline, as ``data:`` images) and a table per
queue for a replay; the results, the target's answer and every plot for a sweep. It loads nothing from anywhere
(no script, no style sheet, no font, no image by address), so it opens offline, from a mail or a file share.

>>> page = html_page("t", [("Summary", table(["figure", "value"], [["jobs", 3]]))])
>>> page.startswith("<!DOCTYPE html>") and "<td>3</td>" in page and "http" not in page
True
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["REPORT", "html_page", "replay_report", "scenario_text", "sweep_report", "table"]

REPORT = "report.html"

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f2f2f2; } img { max-width: 100%; display: block; margin: 1em 0; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
"""


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """An HTML table of ``rows`` under ``header`` (cells escaped; ``None`` shown as a dash)."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{'-' if c is None else html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'


def html_page(title: str, sections: list[tuple[str, str]]) -> str:
    """A whole page: ``title`` and each (heading, HTML) section, with its style inline."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        *(f"<h2>{html.escape(heading)}</h2>\n{body}" for heading, body in sections),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _duration(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def _plots(folder: Path) -> str:
    return "\n".join(_image(path) for path in sorted(folder.glob("*.png")))


def replay_report(folder: Path, name: str, scenario: str, summary: dict[str, Any]) -> None:
    """``report.html`` of a replay's output ``folder`` (its plots drawn already): the scenario ``name``, its
    description, the ``scenario`` document as text, the summary, the plots, and a table per queue."""
    window = summary["arrivals"]
    hours, pre, solver = summary["gpu_hours"], summary["preemptions"], summary["solver"]
    figures = [
        ["jobs", summary["overall"]["jobs"]],
        ["GPUs", summary["gpus"]],
        ["simulated hours", summary["span_h"]],
        ["arrival window (hours)", window["window_h"]],
        ["offered load over the arrival window", window["offered_load"]],
        ["utilisation over the arrival window", window["utilisation"]],
        ["utilisation over the whole replay", summary["utilisation"]],
        ["goodput GPU-hours", hours["goodput"]],
        ["lost GPU-hours", hours["lost"]],
        ["preemptions", pre["total"]],
        ["jobs preempted twice or more", pre["jobs_preempted_repeatedly"]],
        ["moves", pre["moves"]],
        ["Jain's index", summary["fairness"]["jain_index"]],
        ["decisions", solver["decisions"]],
        ["share proved optimal", solver["proved_optimal_share"]],
        ["unfinished jobs", len(summary["unfinished"])],
    ]
    queue_rows = []
    for name, q in [*summary["queues"].items(), ("all", summary["overall"])]:
        wait = q["wait"]
        queue_rows.append(
            [
                name,
                q["jobs"],
                q["completed"],
                *(_duration(wait[p]) for p in ("p50", "p90", "p95", "p99")),
                _duration(q["jct"]["p50"]),
                q["preempted_jobs"],
            ]
        )
    synthetic = "".join(f"<li>{html.escape(line)}</li>" for line in summary["synthetic"])
    described = f"<p>{html.escape(summary['scenario'])}</p>" if summary["scenario"] else ""
    sections = [
        ("Summary", described + table(["figure", "value"], figures)),
        (
            "Queues",
            table(
                ["queue", "jobs", "completed", "wait p50", "wait p90", "wait p95", "wait p99", "JCT p50", "preempted"],
                queue_rows,
            ),
        ),
        ("Plots", _plots(folder)),
        ("Scenario", f"<pre>{html.escape(scenario)}</pre><p>Drawn from the seed:</p><ul>{synthetic}</ul>"),
    ]
    filled = summary.get("fill_up")
    if filled is not None:
        rows = [
            ["arrivals", filled["arrivals"]],
            ["GPUs requested (share of capacity)", filled["requested_share"]],
            ["GPUs allocated (share of capacity)", filled["allocated_share"]],
            ["jobs waiting at the end", filled["waiting_jobs"]],
            *([f"GPUs unallocated: {cause}", gpus] for cause, gpus in filled["unallocated_gpus"].items()),
        ]
        sections.insert(1, ("Fill-up", table(["figure", "value"], rows)))
    (folder / REPORT).write_text(html_page(f"gpu-preempt simulate: {name}", sections), encoding="utf-8")


def sweep_report(
    folder: Path, sweep: str, rows: list[dict[str, Any]], target_rows: list[dict[str, Any]] | None, name: str
) -> None:
    """``report.html`` of a sweep's output ``folder`` (its plots drawn already): the sweep document, the results,
    the target's answer, and the plots."""
    header = list(rows[0]) if rows else []
    sections = [("Results", table(header, [[row.get(k) for k in header] for row in rows]))]
    if target_rows:
        found = list(target_rows[0])
        sections.append(("Target", table(found, [[row.get(k) for k in found] for row in target_rows])))
    sections += [("Plots", _plots(folder)), ("Sweep", f"<pre>{html.escape(sweep)}</pre>")]
    (folder / REPORT).write_text(html_page(f"gpu-preempt sweep: {name}", sections), encoding="utf-8")


def scenario_text(document: Any) -> str:
    """A scenario or sweep document as the page shows it."""
    return json.dumps(document, indent=2, default=str)
