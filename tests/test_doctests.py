"""Every docstring example in the package runs, module by module, under the installed name ``gpu_preempt``.

(pytest's ``--doctest-modules`` would import ``models/x.py`` as ``models.x``, a second
copy beside ``gpu_preempt.models.x``; here each module is imported as users import it.)
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import gpu_preempt

MODULES = sorted(["gpu_preempt", *(m.name for m in pkgutil.walk_packages(gpu_preempt.__path__, "gpu_preempt."))])


def examples(name: str) -> list[doctest.DocTest]:
    return [test for test in doctest.DocTestFinder().find(importlib.import_module(name)) if test.examples]


def test_the_public_api_and_several_modules_have_examples() -> None:
    documented = [name for name in MODULES if examples(name)]
    assert "gpu_preempt" in documented
    assert len(documented) >= 8, documented


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in examples(name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} example(s) failed in {name} (output above)"
