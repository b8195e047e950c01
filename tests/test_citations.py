"""Every citation points at something in the repository: a cited section of a page of ``docs/`` exists there, and
every ``docs/``, ``fixtures/``, ``benchmarks/`` or source file named in code or docs exists.

A section is cited as ``docs/rules.md, "Nominations"``: a heading of that page, or a bold item (``**Moves**``) of
one of its lists, whose words begin with the quoted text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT

SECTION = re.compile(r'(docs/[\w-]+\.md), "([^"]+)"')
FILE = re.compile(
    r"(?<![\w/.-])((?:docs|fixtures|benchmarks|solver|models|tests|notebooks)/[\w./-]+\.(?:md|py|yaml|json|ipynb|csv))"
)
SCANNED = sorted(
    path
    for pattern in (
        "solver/**/*.py",
        "models/**/*.py",
        "tests/**/*.py",
        "benchmarks/*.py",
        "docs/*.md",
        "*.md",
        "fixtures/**/*.yaml",
        "fixtures/*.md",
        "notebooks/*.ipynb",
    )
    for path in ROOT.glob(pattern)
)
STALE = re.compile(r"reference/[\w-]+\.md|\bseed 00\d|\bspec \"|spec[ ]simulate-v1|\.\./shared/")


def titles(page: Path) -> list[str]:
    """The headings and bold list items of ``page``, as plain text."""
    text = page.read_text(encoding="utf-8")
    found = [line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")]
    found += re.findall(r"^\s*- \*\*(.+?)\*\*", text, flags=re.MULTILINE)
    return [re.sub(r"[`*]", "", title) for title in found]


def citations() -> list[tuple[Path, str, str]]:
    cited = []
    for path in SCANNED:
        text = path.read_text(encoding="utf-8").replace('\\"', '"')
        for page, section in SECTION.findall(text):
            cited.append((path, page, re.sub(r"\s*\n\s*(#\s*)?", " ", section)))  # a citation wrapped over lines
    return cited


def test_there_are_citations_to_check() -> None:
    assert len(citations()) > 100


@pytest.mark.parametrize(("path", "page", "section"), citations(), ids=lambda v: str(v).rsplit("/", 1)[-1][:40])
def test_a_cited_section_exists(path: Path, page: str, section: str) -> None:
    target = ROOT / page
    assert target.exists(), f"{path.relative_to(ROOT)} cites {page}, which does not exist"
    assert any(title.startswith(section) for title in titles(target)), (
        f'{path.relative_to(ROOT)} cites {page}, "{section}": no such heading or bold item there'
    )


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_files_named_exist_and_nothing_points_outside(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    named = [name for name in FILE.findall(text) if "*" not in name and not name.endswith("/x.py")]  # x: examples
    missing = [name for name in named if not (ROOT / name).exists()]
    assert not missing, f"{path.relative_to(ROOT)} names files that do not exist: {missing}"
    stale = STALE.findall(text)
    assert not stale, f"{path.relative_to(ROOT)} cites what is not in the repository: {stale}"


def test_the_check_finds_a_missing_section_and_a_stale_citation(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## The reclaim line\n\n- **Moves** (consolidation): ...\n", encoding="utf-8")
    assert titles(page) == ["Title", "The reclaim line", "Moves"]
    assert not any(title.startswith("The reclaim gate") for title in titles(page))
    outside = "as " + "reference/" + "kai.md says"  # spelt in parts: this file must not cite it either
    assert STALE.search(outside) and STALE.search("(seed " + "004)")
