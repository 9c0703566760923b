"""A report cell that raises after the investigation is open leaves every other part of the report.

Issue 43: a failing area is left out and named, but a view that raised after the findings were
computed still failed the whole report (exit 2, no HTML). In report mode every cell after the setup
is guarded (:func:`workbench.investigation.guard_report_cells`): the failure is shown in its place,
named at the top of the report and kept in the summary (``failed_views``), and the report goes on.
Real reports in one kept kernel: the guard must not outlive its report.
"""

from __future__ import annotations

import json

import pytest

from workbench.report import ReportError, ReportKernel

pytestmark = pytest.mark.kernel

HEADING = "A view & its <figure>"


def _notebook(path):
    """Parameters, a setup cell opening the investigation (or failing before it), the summary, a
    part drawn, a view that may raise, and a part drawn after it."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# A report"),
        nbformat.v4.new_code_cell('bundle: str = ""\nreport: bool = False\nsummary_path: str = ""\nbreak_at: str = ""',
                                  metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "if break_at == 'setup':\n    raise ValueError('the setup failed')\n"
            "from workbench.investigation import open_investigation\n"
            "inv = open_investigation(bundle, params=globals())\n"
            "if summary_path:\n    inv.write_summary(summary_path)"),
        nbformat.v4.new_markdown_cell("## The part before"),
        nbformat.v4.new_code_cell("print('drawn before')"),
        nbformat.v4.new_markdown_cell(f"## {HEADING}"),
        nbformat.v4.new_code_cell("if break_at == 'view':\n    raise ValueError('a <b>value</b> it cannot draw')\n"
                                  "print('the view')"),
        nbformat.v4.new_markdown_cell("## The part after"),
        nbformat.v4.new_code_cell("'drawn ' + 'after'"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return str(path)


def test_a_view_that_raises_is_named_and_the_rest_of_the_report_stays(tmp_path):
    notebook = _notebook(tmp_path / "report.ipynb")
    (tmp_path / "bundle").mkdir()
    runs = {}
    with ReportKernel() as kernel:
        for name in ("view", "", "setup"):
            out, summary = tmp_path / f"{name or 'clean'}.html", tmp_path / f"{name or 'clean'}.json"
            try:
                result = kernel.run(tmp_path / "bundle", out, notebook=notebook, summary=summary,
                                    parameters={"break_at": name})
                runs.setdefault(name, []).append((result.exit_code, out.read_text(encoding="utf-8"),
                                                  json.loads(summary.read_text(encoding="utf-8"))))
            except ReportError as exc:
                runs.setdefault(name, []).append(str(exc))
    (clean_exit, clean_html, clean_summary), = runs[""]
    assert clean_summary["failed_views"] == [] and "could not be drawn" not in clean_html
    assert "the view" in clean_html and "drawn after" in clean_html
    # in the kernel the guarded reports ran in, a cell before the investigation opens is not guarded
    (setup_error,) = runs["setup"]
    assert "ValueError: the setup failed" in setup_error
    for exit_code, html, summary in runs["view"]:
        assert exit_code == clean_exit
        why = "ValueError: a <b>value</b> it cannot draw"
        assert [v["error"] for v in summary["failed_views"]] == [why]
        differ = ("failed_views", "generated", "parameters")
        assert {k: v for k, v in summary.items() if k not in differ} == \
            {k: v for k, v in clean_summary.items() if k not in differ}
        assert "drawn before" in html and "drawn after" in html and "the view" not in html
        assert "<b>value</b>" not in html and "a &lt;b&gt;value&lt;/b&gt; it cannot draw" in html
        banner = html.index("1 part of this report could not be drawn (A view &amp; its &lt;figure&gt;)")
        assert banner < html.index("drawn before") < html.index("This part of the report could not be drawn")
