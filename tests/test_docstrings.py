"""Every docstring example in the workbench and widgets packages runs and gives what it shows.

Examples that need a Spark session or a real bundle carry ``# doctest: +SKIP``; everything else
is executed, so the documentation cannot drift from the code.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(
    ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for package in ("workbench", "widgets")
    for p in (ROOT / package).rglob("*.py")
    if p.name != "__main__.py"
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs={**vars(module)}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (output above)"
