"""An area added as new files only (a table, an area, a view, a notebook section) reaches the
overview, the report and the summary: nothing else is edited.

The toy area is written into a copy of the checkout's ``workbench``, ``widgets`` and ``notebooks``
in a temporary directory, and the real ``workbench report`` runs from that copy (``PYTHONPATH``)
on a bundle of one Prometheus export: a table of the export's gauges, one finding per gauge, a
view, a section. Its bundle holds no log segment, so no compiled kernel of the copy runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.kernel]

REPO = Path(__file__).resolve().parent.parent

TOY_TABLE = '''"""Toy table: one row per gauge of the bundle's metric exports."""

from workbench.spark.registry import register_table


def build(ctx):
    from pyspark.sql import functions as F

    return ctx.tables.metrics.groupBy("name").agg(
        F.count("*").alias("samples"), F.max("value").alias("peak"),
        F.min("timestamp").alias("first"), F.max("timestamp").alias("last"))


register_table("toy_gauges", row="gauge of the metric exports", kinds=("metrics",), build=build,
               schema="name string, samples long, peak double, first timestamp, last timestamp")
'''

#: The toy area's package: ``__init__`` (what it answers), ``verdicts`` (its findings), ``area``
#: (its contract and registration), as every area of ``workbench/analysis`` is laid out.
TOY_AREA = {
    "__init__.py": '''"""Toy area: a warning for every gauge of the bundle's metric exports."""

from workbench.analysis.toy import area as _area  # noqa: F401  (registers the area)
''',
    "verdicts.py": '''"""The toy area's findings: one warning per gauge."""


def findings(gauges):
    from pyspark.sql import functions as F

    return gauges.select(
        F.lit("toy").alias("area"), F.lit("toy_gauge").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("gauge").alias("subject_type"), F.col("name").alias("subject"), F.col("first").alias("start"),
        F.col("last").alias("end"),
        F.concat(F.lit("toy gauge "), F.col("name"), F.lit(" peaked at "),
                 F.col("peak").cast("string")).alias("summary"),
        F.create_map(F.lit("peak"), F.col("peak")).alias("figures"))
''',
    "area.py": '''"""The toy area's contract."""

from workbench.analysis.findings import register_area
from workbench.analysis.toy.verdicts import findings


def _analyse(tables, params):
    return tables.toy_gauges


def _findings(gauges):
    return findings(gauges)


def _frames(gauges):
    return {"gauges": gauges}


def _key_figures(gauges):
    return {"toy_gauges": gauges.count()}


register_area("toy", title="Toy gauges", order=90, analyse=_analyse, findings=_findings, tables=("toy_gauges",),
              frames=_frames, key_figures=_key_figures)
''',
}

TOY_VIEW = '''"""Toy view: the gauges as a table."""

from widgets.linking import register_view


def _view(frames, window):
    import ipywidgets

    return ipywidgets.HTML(frames["gauges"].to_html())


register_view("toy", _view)
'''

TOY_SECTION = '''from IPython.display import HTML, display

from widgets.findings import findings_html
from workbench.analysis.findings import areas, ordered_findings

if inv.has_data("toy"):
    toy = areas()["toy"].findings_for(inv.tables, inv.params)
    display(HTML(findings_html(ordered_findings(toy).toPandas(), empty="No gauge.")))
'''

PROM = ("# TYPE kafka_toy_queue_size gauge\nkafka_toy_queue_size 7.0\n"
        "# TYPE kafka_toy_idle_ratio gauge\nkafka_toy_idle_ratio 0.25\n")


def _toy_checkout(root: Path) -> Path:
    """A copy of the checkout's packages and notebooks with the toy area's new files in it."""
    for name in ("workbench", "widgets", "notebooks"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "workbench" / "spark" / "toy_gauges.py").write_text(TOY_TABLE)
    (root / "workbench" / "analysis" / "toy").mkdir()
    for name, text in TOY_AREA.items():
        (root / "workbench" / "analysis" / "toy" / name).write_text(text)
    (root / "widgets" / "toy.py").write_text(TOY_VIEW)
    quorum = nbformat.read(str(REPO / "notebooks" / "01_quorum.ipynb"), as_version=4)
    shared = [c for c in quorum.cells if {"parameters", "setup"} & set(c.metadata.get("tags", []))]
    params = shared[0].source.splitlines()
    shared[0].source = "\n".join(line for line in params if line.split(":")[0] in ("bundle", "start", "end", "report"))
    cells = [nbformat.v4.new_markdown_cell("# Toy gauges\n\nEvery gauge the bundle's exports hold."), *shared,
             nbformat.v4.new_code_cell(TOY_SECTION)]
    nb = nbformat.v4.new_notebook(cells=cells, metadata=quorum.metadata)
    nbformat.write(nb, str(root / "notebooks" / "09_toy.ipynb"))
    return root


def _figures(html_text: str) -> list[tuple[list, dict]]:
    """(data, layout) of every plotly figure in an HTML report."""
    decoder = json.JSONDecoder()
    out = []
    for call in re.finditer(r'Plotly\.newPlot\(\s*"[^"]+",\s*', html_text):
        data, end = decoder.raw_decode(html_text, call.end())
        layout, _ = decoder.raw_decode(html_text, re.compile(r",\s*").match(html_text, end).end())
        out.append((data, layout))
    return out


@pytest.mark.timeout(900)
def test_an_area_added_as_new_files_reaches_the_overview_report_and_summary(tmp_path: Path) -> None:
    checkout = _toy_checkout(tmp_path / "checkout")
    bundle = tmp_path / "bundle"
    (bundle / "metrics").mkdir(parents=True)
    (bundle / "metrics" / "1-1795290596161.prom").write_text(PROM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")]))}

    registered = subprocess.run(
        [sys.executable, "-c", "import json, workbench.report as r; from workbench.spark.registry import table_specs; "
         "from workbench.analysis.findings import areas; from widgets.linking import view_factories; "
         "print(json.dumps([r.__file__, sorted(table_specs()), list(areas()), sorted(view_factories())]))"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True)
    where, tables, area_names, views = json.loads(registered.stdout)
    assert Path(where).is_relative_to(checkout)   # the copy is what runs
    assert "toy_gauges" in tables and area_names[-1] == "toy" and "toy" in views

    out, summary_path = tmp_path / "report.html", tmp_path / "summary.json"
    run = subprocess.run([sys.executable, "-m", "workbench", "report", "--bundle", str(bundle), "--out", str(out),
                          "--summary", str(summary_path), "--fail-on", "never"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=840)
    assert run.returncode == 0, run.stderr[-3000:]

    summary = json.loads(summary_path.read_text())
    toy = sorted((f["subject"], f["severity"], f["summary"]) for f in summary["findings"] if f["area"] == "toy")
    assert toy == [("kafka_toy_idle_ratio", "warning", "toy gauge kafka_toy_idle_ratio peaked at 0.25"),
                   ("kafka_toy_queue_size", "warning", "toy gauge kafka_toy_queue_size peaked at 7.0")]
    assert summary["areas"]["toy"] == {"title": "Toy gauges", "has_data": True, "warning_findings": 2,
                                       "toy_gauges": 2}

    text = out.read_text(encoding="utf-8")
    # the report: the toy section's title and both findings; the overview's timeline: a lane of its own
    assert re.search(r"<h2[^>]*>Toy gauges", text), "no toy section in the report"
    assert "toy gauge kafka_toy_queue_size peaked at 7.0" in text
    timeline = [data for data, layout in _figures(text)
                if str((layout.get("title") or {}).get("text", "")).startswith("Findings over time")]
    assert len(timeline) == 1
    lanes = {y for trace in timeline[0] for y in (trace.get("y") or []) if isinstance(y, str)}
    assert "Toy gauges" in lanes, lanes
