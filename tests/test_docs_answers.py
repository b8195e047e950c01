"""The planning answers docs/planning.md states are what the tool computes (docs/planning_answers.py): a change of
the engine that changes an answer fails here until the page says the new one (``python docs/planning_answers.py
--write``)."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "docs"))
import planning_answers


def test_the_page_marks_every_answer_the_script_computes():
    assert set(planning_answers.stated(planning_answers.PAGE.read_text(encoding="utf-8"))) == set(
        planning_answers.ANSWERS
    )


SLOW = {"shared-fragmentation", "size-target"}
"""Answers of whole replays and sweeps (over a minute together): checked in CI's long run, not by the README's test
command."""


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in sorted(planning_answers.ANSWERS)]
)
def test_the_page_states_the_answer_the_tool_computes(name: str):
    stated = planning_answers.stated(planning_answers.PAGE.read_text(encoding="utf-8"))
    assert stated[name] == planning_answers.ANSWERS[name](), f"run: python docs/planning_answers.py --write ({name})"


def test_writing_an_answer_replaces_only_its_marked_text():
    text = "a <!-- answer: x -->old<!-- /answer --> b\n<!-- answer: y -->\n| t |\n<!-- /answer -->\n"
    assert planning_answers.with_answers(text, {"x": "new"}) == text.replace("old", "new")
    assert planning_answers.stated(text) == {"x": "old", "y": "| t |"}
