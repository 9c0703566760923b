"""HTML incident reports: notebook resolution, parameters, failure handling and the real report."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jupytext
import nbformat
import pytest

from tests.conftest import DEMO_REPORT_TIMEOUT_S
from tests.incident import NAMED_TOPICS
from workbench.errors import BundleError, ConfigError, WorkbenchError
from workbench.params import load_parameters_file
from workbench.report import (
    ReportError,
    _check_offline,
    build_report,
    check_parameters,
    compose_report_notebook,
    exit_code_for,
    notebook_path,
    notebooks_dir,
    run_report,
    section_notebooks,
)
from workbench.summary import frame_records, write_json

REPO = Path(__file__).resolve().parent.parent

def small_notebook(path: Path, *cells: str) -> Path:
    """A notebook with the report parameters and the given code cells (no Spark)."""
    params = nbformat.v4.new_code_cell('bundle = ""\nreport = False\ntopics = ""')
    params.metadata["tags"] = ["parameters"]
    nb = nbformat.v4.new_notebook(cells=[params, *(nbformat.v4.new_code_cell(c) for c in cells)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def plotly_divs(html_text: str) -> dict[str, dict]:
    """Plotly figures in an HTML report: div id -> figure layout, parsed from ``Plotly.newPlot``."""
    divs = re.findall(r'Plotly\.newPlot\(\s*"([^"]+)"', html_text)
    for div in divs:
        assert re.search(f'<div (?=[^>]*class="plotly-graph-div")(?=[^>]*id="{re.escape(div)}")', html_text), div
    layouts = {}
    decoder = json.JSONDecoder()
    for div in divs:
        call = re.search(r'Plotly\.newPlot\(\s*"' + re.escape(div) + r'",\s*', html_text)
        assert call, f"no Plotly.newPlot call for div {div}"
        _data, end = decoder.raw_decode(html_text, call.end())
        layout, _ = decoder.raw_decode(html_text, re.compile(r",\s*").match(html_text, end).end())
        layouts[div] = layout
    return layouts


# --------------------------------------------------------------------------------------------
# the committed notebook


NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_are_committed_clean_and_paired(path: Path) -> None:
    nb = nbformat.read(str(path), as_version=4)
    assert nb.metadata.kernelspec.name == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    namespace: dict = {}
    exec(tagged[0].source, namespace)  # noqa: S102 - the committed defaults
    defaults = {k: v for k, v in namespace.items() if not k.startswith("__")}
    # safe defaults: the demo bundle, the whole bundle, interactive widgets
    assert defaults["bundle"] == "" and defaults["start"] == "" and defaults["end"] == ""
    assert defaults["report"] is False
    paired = jupytext.read(path.with_suffix(".py"))
    assert [(c.cell_type, c.source) for c in paired.cells] == [(c.cell_type, c.source) for c in nb.cells]


def test_the_incident_report_is_composed_from_the_section_notebooks(tmp_path: Path, monkeypatch) -> None:
    """The report's notebook is the composition of the section notebooks as they are: written on
    first use, the same file while they stay, a new one when a section changes; committed nowhere."""
    monkeypatch.setenv("KAFKA_WORKBENCH_CACHE", str(tmp_path / "cache"))
    path = notebook_path("incident_report")
    assert path.name == "incident_report.ipynb" and path.is_relative_to(tmp_path / "cache")
    assert not (REPO / "notebooks" / "incident_report.ipynb").exists()
    composed = compose_report_notebook()
    written = nbformat.read(str(path), as_version=4)
    assert [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in written.cells] == [
        (c.cell_type, c.source, c.metadata.get("tags", [])) for c in composed.cells]
    sections = [p.name for p in section_notebooks()]
    assert sections[0] == "00_overview.ipynb" and "02_isr.ipynb" in sections
    assert written.metadata["workbench"]["composed_from"] == sections
    # one parameters cell (the union), one setup cell, the appendix last
    tags = [c.metadata.get("tags", []) for c in written.cells]
    assert sum("parameters" in t for t in tags) == 1 and sum("setup" in t for t in tags) == 1
    assert "Appendix: parameters and versions" in [c.source for c in written.cells][-2]
    # clean, with the sections' safe defaults, like every shipped notebook
    assert all(c.outputs == [] and c.execution_count is None for c in written.cells if c.cell_type == "code")
    namespace: dict = {}
    exec(next(c.source for c in written.cells if "parameters" in c.metadata.get("tags", [])), namespace)  # noqa: S102
    assert namespace["bundle"] == "" and namespace["start"] == "" and namespace["report"] is False
    mtime = path.stat().st_mtime_ns
    assert notebook_path("incident_report.ipynb") == path and path.stat().st_mtime_ns == mtime

    # a section added (a copy of an area's, renamed): the next report's notebook holds it
    folder = tmp_path / "notebooks"
    shutil.copytree(REPO / "notebooks", folder)
    shutil.copy(folder / "02_isr.ipynb", folder / "09_extra.ipynb")
    monkeypatch.setattr("workbench.report.notebooks_dir", lambda: folder)
    grown = notebook_path("incident_report")
    assert grown != path
    composed_from = nbformat.read(str(grown), as_version=4).metadata["workbench"]["composed_from"]
    assert composed_from == [*sections, "09_extra.ipynb"]


def test_a_section_declaring_a_parameter_differently_is_refused(tmp_path: Path) -> None:
    for name, line in (("00_a.ipynb", 'start: str = ""  # a'), ("01_b.ipynb", 'start: str = "x"  # b')):
        cell = nbformat.v4.new_code_cell(line, metadata={"tags": ["parameters"]})
        nbformat.write(nbformat.v4.new_notebook(cells=[cell]), str(tmp_path / name))
    with pytest.raises(ReportError, match="parameter 'start' is declared differently in 01_b.ipynb"):
        compose_report_notebook(tmp_path)


# --------------------------------------------------------------------------------------------
# arguments


def test_notebook_names_resolve_in_the_repository() -> None:
    assert notebooks_dir() == REPO / "notebooks"
    assert notebook_path("02_isr") == REPO / "notebooks" / "02_isr.ipynb"
    assert notebook_path("02_isr.ipynb") == REPO / "notebooks" / "02_isr.ipynb"
    assert notebook_path("incident_report").stem == "incident_report"
    with pytest.raises(ConfigError, match="no notebook named 'nope'.*available: .*incident_report"):
        notebook_path("nope")
    with pytest.raises(ConfigError, match="neither an existing .ipynb file nor a notebook name"):
        notebook_path("../notebooks/incident_report")


def test_bad_arguments_fail_before_anything_runs(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    out = tmp_path / "r.html"
    with pytest.raises(BundleError, match="does not exist"):
        build_report(tmp_path / "missing", out)
    with pytest.raises(ConfigError, match=r"out: expected an \.html file name"):
        build_report(bundle, tmp_path / "r.pdf")
    (tmp_path / "dir.html").mkdir()
    with pytest.raises(ConfigError, match="is a directory"):
        build_report(bundle, tmp_path / "dir.html")
    with pytest.raises(ConfigError, match="timeout"):
        build_report(bundle, out, timeout=0)
    with pytest.raises(ConfigError, match="fail_on"):
        run_report(bundle, out, fail_on="sometimes")
    assert not out.exists()


def test_every_parameter_error_is_reported_at_once_one_line_each(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    with pytest.raises(ConfigError) as caught:
        build_report(bundle, tmp_path / "r.html", parameters={
            "topcs": "orders", "bundle": "/elsewhere", "report": "false", "start": "notadate",
            "correlation_gap_s": "soon", "min_insync_replicas": "2.5"})
    lines = str(caught.value).splitlines()
    assert len(lines) == 6, lines
    assert any(re.match(r"incident_report has no parameter 'topcs'; it takes .*topics", line) for line in lines)
    assert "parameter 'bundle' is set by the report itself (give the bundle with --bundle)" in lines
    assert "parameter 'report' is set by the report itself" in lines
    assert "start: expected a date and time such as 2026-03-01T03:12:05, got 'notadate'" in lines
    assert "parameter 'correlation_gap_s' is an float; got 'soon'" in lines
    assert "parameter 'min_insync_replicas' is an int; got '2.5'" in lines
    with pytest.raises(ConfigError, match="time window: start 2026-03-02 is after end 2026-03-01"):
        build_report(bundle, tmp_path / "r.html", parameters={"start": "2026-03-02", "end": "2026-03-01"})


def test_parameters_convert_from_text_and_typed_yaml(tmp_path: Path) -> None:
    nb = notebook_path("incident_report")
    assert check_parameters(nb, {"min_insync_replicas": "2", "topics": "42", "correlation_gap_s": "7.5"}) == {
        "min_insync_replicas": 2, "topics": "42", "correlation_gap_s": 7.5}
    yaml_file = tmp_path / "p.yaml"
    yaml_file.write_text("start: 2026-03-01T03:00:00Z\nmin_insync_replicas: 2\ntopics: orders\n")
    loaded = load_parameters_file(yaml_file)
    with pytest.raises(ConfigError, match="parameter 'start' is a string"):  # YAML read it as a datetime
        check_parameters(nb, loaded)
    yaml_file.write_text("start: '2026-03-01T03:00:00Z'\nmin_insync_replicas: 2\ntopics: orders\n")
    assert check_parameters(nb, load_parameters_file(yaml_file)) == {
        "start": "2026-03-01T03:00:00Z", "min_insync_replicas": 2, "topics": "orders"}
    yaml_file.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_parameters_file(yaml_file)
    yaml_file.write_text("a: [\n")
    with pytest.raises(ConfigError, match=r"p.yaml line \d+: not YAML"):
        load_parameters_file(yaml_file)


def test_exit_codes_follow_the_most_severe_finding() -> None:
    warning = {"findings": [{"severity": "warning"}, {"severity": "info"}]}
    assert [exit_code_for(warning, level) for level in ("critical", "warning", "info", "never")] == [0, 1, 1, 0]
    assert exit_code_for({"findings": []}, "info") == 0
    assert exit_code_for(None, "info") == 0


def test_offline_check_names_the_remote_script() -> None:
    _check_offline('<script type="text/javascript">var x = "https://cdn.plot.ly/un/";</script>', None)
    for bad in (
        '<script src="https://cdn.plot.ly/plotly-3.0.1.min.js"></script>',
        "<SCRIPT type='text/javascript' src='//unpkg.com/x.js'></SCRIPT>",
        '<link rel="stylesheet" href="https://fonts.example/x.css">',
    ):
        with pytest.raises(ReportError, match="load scripts from the network"):
            _check_offline(bad, None)


def test_summary_records_are_plain_json(tmp_path: Path) -> None:
    import pandas as pd

    partitions = pd.DataFrame(
        {
            "topic": ["orders"],
            "partition": [0],
            "first_under_min_isr": pd.to_datetime(["2026-11-18 11:07:00"]),
            "offline_seconds": [float("nan")],
            "figures": [{"seconds": 2.0}],
        }
    )
    path = write_json(tmp_path / "deep" / "summary.json", {"bundle": "/b", "partitions": frame_records(partitions)})
    document = json.loads(path.read_text())
    assert document.pop("generated").endswith("+00:00")
    assert document == {
        "bundle": "/b",
        "partitions": [
            {
                "topic": "orders",
                "partition": 0,
                "first_under_min_isr": "2026-11-18T11:07:00+00:00",
                "offline_seconds": None,
                "figures": {"seconds": 2.0},
            }
        ],
    }


# --------------------------------------------------------------------------------------------
# running notebooks (a kernel; the small ones start no Spark)


@pytest.mark.kernel
def test_failed_notebook_raises_and_keeps_the_executed_notebook(tmp_path: Path) -> None:
    # what the kernel's process writes on its stderr (a JVM it starts writes there too)
    nb = small_notebook(tmp_path / "broken.ipynb", "import os\nos.write(2, b'NOTICE OF THE KERNEL PROCESS\\n')",
                        "raise RuntimeError('the bundle was empty')")
    out = tmp_path / "r.html"

    with pytest.raises(ReportError) as caught:
        build_report(tmp_path, out, notebook=str(nb), timeout=120)

    error = caught.value
    assert isinstance(error, WorkbenchError)
    assert "RuntimeError: the bundle was empty" in str(error)
    assert error.executed_notebook is not None and str(error.executed_notebook) in str(error)
    executed = nbformat.read(str(error.executed_notebook), as_version=4)
    assert executed.metadata.papermill.parameters == {"bundle": str(tmp_path.resolve()), "report": True}
    assert not out.exists()
    log = Path(re.search(r"the kernel's messages are in (\S+?\.log)", str(error)).group(1))
    assert "NOTICE OF THE KERNEL PROCESS" in log.read_text(encoding="utf-8")


def test_a_timed_out_notebook_is_kept_with_what_its_cells_printed(tmp_path: Path) -> None:
    # the executed notebook is written once, as the run ends: a cell killed by the timeout ends it too
    nb = small_notebook(tmp_path / "slow.ipynb", "print('THE FIRST CELL RAN')", "import time\ntime.sleep(120)")
    out = tmp_path / "r.html"

    with pytest.raises(ReportError, match="could not be run") as caught:
        build_report(tmp_path, out, notebook=str(nb), timeout=5)

    executed = nbformat.read(str(caught.value.executed_notebook), as_version=4)
    printed = [o.get("text", "") for o in executed.cells[2].outputs]  # after the injected parameters cell
    assert printed == ["THE FIRST CELL RAN\n"]
    assert "Timeout" in str(caught.value) and not out.exists()


@pytest.mark.kernel
def test_small_report_hides_code_and_parameters_and_embeds_plotly(tmp_path: Path) -> None:
    nb = small_notebook(
        tmp_path / "fig.ipynb",
        "import plotly.io as pio, plotly.graph_objects as go\n"
        'pio.renderers.default = "plotly_mimetype+notebook"\n'
        "import sys\n"
        "print('noise on stderr', file=sys.stderr)\n"
        "go.Figure(go.Bar(x=['a'], y=[1]), layout={'title': {'text': 'SECRET_FIGURE ' + topics}}).show()\n"
        # a view built in report mode makes widgets it never displays (widgets.linking.show)
        "import ipywidgets\n"
        "slider = ipywidgets.IntSlider(value=3)",
    )
    kept = tmp_path / "kept" / "executed.ipynb"

    out = build_report(
        tmp_path,
        tmp_path / "out" / "r.html",
        notebook=str(nb),
        parameters={"topics": "orders"},
        keep_executed=kept,
        timeout=120,
    )

    text = out.read_text(encoding="utf-8")
    assert out == (tmp_path / "out" / "r.html").resolve()
    assert kept.is_file()
    assert "widgets" not in nbformat.read(str(kept), as_version=4).metadata  # no widget state kept
    assert [layout["title"]["text"] for layout in plotly_divs(text).values()] == ["SECRET_FIGURE orders"]
    assert "pio.renderers.default" not in text  # no code
    assert 'topics = "orders"' not in text  # no injected parameters
    assert "noise on stderr" not in text
    assert text.count("window.Plotly = Plotly") == 1  # plotly.js embedded once
    assert not re.search(r"<script[^>]*\ssrc=", text)
    assert f"<title>Kafka incident report: {tmp_path.name}</title>" in text


# --------------------------------------------------------------------------------------------
# the real incident report, end to end (Spark runs in the notebook's kernel)


@pytest.mark.spark
def test_incident_report_on_a_small_isr_incident(incident_report: dict) -> None:
    """The small incident's report (its three named topics are judged in the browser tests)."""
    bundle = incident_report["bundle"]
    text = incident_report["html"].read_text(encoding="utf-8")
    # no code cells: every code cell is rendered without its input
    assert re.findall(r'<div class="jp-Cell jp-CodeCell[^"]*"', text)
    assert all("jp-mod-noInput" in c for c in re.findall(r'<div class="jp-Cell jp-CodeCell[^"]*"', text))
    assert "workbench.session()" not in text and 'jp-InputArea-editor"' not in text
    assert not re.search(r"<script[^>]*\ssrc=[\"']?https?:", text)
    titles = sorted(layout["title"]["text"] for layout in plotly_divs(text).values())
    # the quorum section draws too: the bundle holds the controllers' metadata logs
    assert titles == ["Findings over time, by area", "Partition ISR state over time",
                      "Quorum offset divergence: each node's lag behind the leader's log",
                      "Records per metadata batch: the log's figure and the brokers' reports",
                      "UnderMinIsrPartitionCount per leader broker"]
    assert "<title>Kafka incident report: incident</title>" in text
    assert '<li class="wb-critical">topic orders partition 1 was offline for 5.0 s starting 2026-11-18 11:07:10 UTC' \
        "</li>" in text

    document = dict(incident_report["summary"])
    assert document["bundle"] == str(bundle.resolve())
    named = [f for f in document["findings"] if f["subject"] and f["subject"].rsplit("-", 1)[0] in NAMED_TOPICS]
    assert sorted((f["kind"], f["subject"]) for f in named) == sorted(
        ("under_min_isr", f"{topic}-0") for topic in NAMED_TOPICS)
    document["findings"] = [f for f in document["findings"] if f not in named]
    # most severe first, then earliest first; last, the quorum area's notes on what the bundle lacks
    # (it holds the controllers' metadata logs, but no KIP-835 gauge and no replication capture)
    notes = [(f["area"], f["kind"], f["severity"], f["summary"]) for f in document["findings"][4:]]
    assert sorted(notes) == sorted([
        ("quorum", "input_missing", "info", "no KIP-835 gauge (LastAppliedRecordOffset, last-applied-record-offset) "
         "was exported: nodes' applied offsets come only from captures, snapshots and their own logs"),
        ("quorum", "input_missing", "info", "no kafka-metadata-quorum describe --replication capture: the leader's "
         "view of each node's log end is not shown"),
    ])
    assert [(f["kind"], f["subject"], f["summary"]) for f in document["findings"][:4]] == [
        ("under_min_isr", "orders-0",
         "topic orders partition 0 was under min ISR (2) for 42.0 s starting 2026-11-18 11:07:00 UTC"),
        # 20 s to 63 s: the 5 s offline (ISR [1], no leader) are below min ISR too
        ("under_min_isr", "orders-1",
         "topic orders partition 1 was under min ISR (2) for 43.0 s starting 2026-11-18 11:07:00 UTC"),
        ("under_min_isr", "payments-0",
         "topic payments partition 0 was under min ISR (2) for 44.0 s starting 2026-11-18 11:07:00 UTC"),
        ("offline", "orders-1", "topic orders partition 1 was offline for 5.0 s starting 2026-11-18 11:07:10 UTC"),
    ]
    assert document["findings"][3]["figures"] == {"seconds": 5.0}
    assert document["findings"][3]["start"] == "2026-11-18T11:07:10+00:00"
    # one chain: everything overlaps
    assert [c["chain"] for c in document["chains"]] == [1]
    isr = document["areas"]["isr"]
    # the named topics: two under min ISR for 48 s, the HTML one for the last 50 s of the log
    assert (isr["has_data"], isr["critical_findings"], isr["partitions"], isr["partitions_under_min_isr"],
            isr["partitions_offline"]) == (True, 4 + 3, 3 + 3, 3 + 3, 1)
    assert isr["under_min_isr_partition_seconds"] == 42.0 + 43.0 + 44.0 + 48.0 + 48.0 + 50.0


def test_a_successful_report_prints_no_stack_trace_and_no_spark_log(incident_report: dict) -> None:
    """``workbench report`` on the small incident: Spark's messages went to its log file and the
    kernel's stderr (its JVM's notices among them) to the kernel's, so stderr holds only the
    command's own lines: no traceback, no Java stack frame, no Spark or kernel log line."""
    lines = incident_report["stderr"].splitlines()
    noisy = r"Traceback|^\s+at [\w.$]+\(|Exception|\b(ERROR|WARN|WARNING)\b|IPKernelApp"
    assert not [line for line in lines if re.search(noisy, line)], incident_report["stderr"][-3000:]
    # the kernel's and its JVM's own notices went to the kernel's log: only what the command says is left
    assert lines and all(line.startswith("workbench: ") for line in lines), lines


def test_a_report_says_each_step_as_it_ends(incident_report: dict) -> None:
    """``workbench report`` prints a line on stderr as each step ends: the session, the bundle, then
    each registered area in turn with as many findings as the report holds for it (or "no data"),
    and the whole run's time last."""
    from workbench.analysis.findings import areas

    said = [line.removeprefix("workbench: ") for line in incident_report["stderr"].splitlines()
            if line.startswith("workbench: ")]
    document = incident_report["summary"]
    expected = []
    for name, area in areas().items():
        found = sum(f["area"] == name for f in document["findings"])
        if not document["areas"][name]["has_data"]:
            expected.append(f"{area.title}: no data")
        else:
            expected.append(f"{area.title}: {found:,} finding{'' if found == 1 else 's'}")
    timed = r" \(\d+\.\d s\)$"
    assert re.fullmatch(r"Spark session ready" + timed, said[0]), said
    assert re.fullmatch(r"bundle opened: [\d,]+ files" + timed, said[1]), said
    assert [re.sub(timed, "", line) for line in said[2:-1]] == expected, said
    assert all(re.search(timed, line) for line in said[2:-1]), said
    assert re.fullmatch(r"report written \(\d+ s in all\)", said[-1]), said
    assert any(document["areas"][name]["has_data"] for name in areas())  # the incident has findings to count


@pytest.mark.spark
@pytest.mark.timeout(DEMO_REPORT_TIMEOUT_S)
def test_incident_report_on_the_demo_bundle(demo_bundle: Path, demo_report) -> None:
    """`make demo`'s report on the shipped demo bundle (one real-Kafka incident across all five
    areas): every area finds its part of the incident and draws it; the clean stop at the end of
    the capture is one info finding, not an outage; at most 10 MB, offline."""
    from tests.kafka_bundles import manifest

    result = demo_report
    text = result.path.read_text(encoding="utf-8")
    titles = [layout["title"]["text"] for layout in plotly_divs(text).values()]
    for title in ("Findings over time, by area", "Quorum offset divergence", "Partition ISR state over time",
                  "UnderMinIsrPartitionCount per leader broker", "Lag at each commit",
                  "Burrow's group status over time",
                  "MirrorMaker 2 replication-record-lag (KIP-971)", "Tiered-storage backlog per partition"):
        assert any(t.startswith(title) for t in titles), (title, titles)
    assert result.exit_code == 1  # a commit stall, partitions under min ISR, a mirror outage: critical
    findings = result.summary["findings"]
    # what the scenario did (its manifest), each found by its area, at warning or above
    events = {e["event"] for e in manifest(demo_bundle)["events"]}
    assert {"node_pause", "broker_hard_stop", "mm2_stop", "remote_storage_down"} <= events
    serious = {(f["area"], f["kind"]) for f in findings if f["severity"] in ("critical", "warning")}
    assert {"quorum", "isr", "consumer_lag", "mirror", "tier"} <= {area for area, _ in serious}, serious
    assert {("quorum", "commit_stall"), ("isr", "under_min_isr"), ("mirror", "mirror_outage"),
            ("tier", "upload_backlog")} <= serious
    assert {f["subject"] for f in findings if f["area"] == "consumer_lag" and f["severity"] == "warning"} >= {"billing"}
    # both clusters were stopped cleanly at the end: one info finding each, no critical finding inside it
    stops = [f for f in findings if f["kind"] == "cluster_stopped"]
    assert len(stops) == 2 and {f["severity"] for f in stops} == {"info"}
    first_stop = min(f["start"] for f in stops)
    assert not [f for f in findings if f["area"] == "isr" and f["severity"] == "critical" and f["start"] >= first_stop]
    assert result.path.stat().st_size <= 10 * 1000 * 1000  # `make demo`'s report: at most 10 MB, plotly.js inlined
    assert not re.search(r"<script[^>]*\ssrc=[\"']?https?:", text)
    assert "under min ISR" in text
