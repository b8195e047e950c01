"""The README's Python examples run as written, and the console examples of the README and docs/ print what they
show."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.DOTALL)


def test_the_readme_has_python_examples() -> None:
    assert BLOCKS


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs(
    code: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out.strip()


def _readme_examples():
    import sys

    sys.path.insert(0, str(ROOT / "docs"))
    import readme_examples

    return readme_examples


def test_every_console_example_prints_what_its_page_shows() -> None:
    """The outputs in the README and in docs/ come from real runs (``python docs/readme_examples.py --write``)."""
    examples = _readme_examples()
    blocks = examples.examples((ROOT / "README.md").read_text(encoding="utf-8"))
    assert sum(len(block) for block in blocks) >= 6
    assert any(examples.examples(page.read_text(encoding="utf-8")) for page in examples.PAGES[1:])
    assert examples.check() == []


def test_an_example_whose_output_changed_is_reported() -> None:
    examples = _readme_examples()
    assert examples.matches(["a", "...", "z (optimal, 1.0 ms)"], ["a", "b", "c", "z (optimal, 7.25 ms)"])
    assert examples.matches(["a", "..."], ["a"])
    assert not examples.matches(["a", "b"], ["a", "c"])
    assert not examples.matches(["a"], ["a", "extra"])


def test_the_readme_names_every_dependency_and_extra() -> None:
    """The README's "Dependencies" paragraph lists every package pyproject.toml installs, and every extra."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = " ".join(text[text.index("Dependencies:") :].split("\n\n")[0].split())
    for requirement in [
        *project["dependencies"],
        *(r for extra in project["optional-dependencies"].values() for r in extra),
    ]:
        name = re.split(r"[<>=\[ ]", requirement)[0]
        assert name.lower() in paragraph.lower(), name
    for extra in project["optional-dependencies"]:
        assert f"`[{extra}]`" in paragraph, extra


def test_replay_outputs_are_ignored_by_git() -> None:
    assert "runs/" in (ROOT / ".gitignore").read_text(encoding="utf-8").split()
