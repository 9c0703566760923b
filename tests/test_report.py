"""HTML incident reports: notebook resolution, parameters, failure handling and the real report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import nbformat
import pytest

from workbench.errors import BundleError, ConfigError, WorkbenchError
from workbench.report import (
    ReportError,
    _check_offline,
    build_report,
    notebook_path,
    notebooks_dir,
    write_summary,
)

REPO = Path(__file__).resolve().parent.parent
INCIDENT = REPO / "notebooks" / "incident_report.ipynb"

# --------------------------------------------------------------------------------------------
# a tiny ISR incident written with the project's own encoders (no Kafka needed)

T0_MS = 1_795_000_000_000  # 2026-11-18 11:06:40 UTC
ORDERS, PAYMENTS = "T3JkZXJzT3JkZXJzT3JkZQ", "UGF5bWVudHNQYXltZW50cw"


def _partition(topic_id: str, p: int, replicas: list[int], leader: int) -> tuple[str, dict]:
    return "PartitionRecord", {
        "partitionId": p,
        "topicId": topic_id,
        "replicas": replicas,
        "isr": replicas,
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": leader,
        "leaderEpoch": 0,
        "partitionEpoch": 0,
    }


def _change(topic_id: str, p: int, isr: list[int], leader: int = -2) -> tuple[str, dict]:
    return "PartitionChangeRecord", {"partitionId": p, "topicId": topic_id, "isr": isr, "leader": leader}


#: (seconds after T0, record): cluster min ISR 2; brokers 2 and 3 drop out of the ISR of every
#: partition at +10 s and +20 s, and come back at +62..64 s. orders-1 goes offline for 5 s.
INCIDENT_EVENTS: list[tuple[float, tuple[str, dict]]] = [
    (0, ("ConfigRecord", {"resourceType": 4, "resourceName": "", "name": "min.insync.replicas", "value": "2"})),
    (1, ("TopicRecord", {"name": "orders", "topicId": ORDERS})),
    (1, _partition(ORDERS, 0, [1, 2, 3], 1)),
    (1, _partition(ORDERS, 1, [2, 3, 1], 2)),
    (2, ("TopicRecord", {"name": "payments", "topicId": PAYMENTS})),
    (2, _partition(PAYMENTS, 0, [3, 1, 2], 3)),
    (10, _change(ORDERS, 0, [1, 3])),
    (10, _change(ORDERS, 1, [3, 1], leader=3)),
    (10, _change(PAYMENTS, 0, [3, 1])),
    (20, _change(ORDERS, 0, [1])),
    (20, _change(ORDERS, 1, [1], leader=1)),
    (20, _change(PAYMENTS, 0, [1], leader=1)),
    (30, _change(ORDERS, 1, [1], leader=-1)),
    (35, _change(ORDERS, 1, [1], leader=1)),
    (62, _change(ORDERS, 0, [1, 2, 3])),
    (63, _change(ORDERS, 1, [1, 2, 3])),
    (64, _change(PAYMENTS, 0, [1, 3, 2])),
    (90, ("NoOpRecord", {})),
]


def write_incident_bundle(root: Path, events: list[tuple[float, tuple[str, dict]]] = INCIDENT_EVENTS) -> Path:
    """Write one broker's ``__cluster_metadata-0`` log holding ``events`` (:data:`INCIDENT_EVENTS`)."""
    from workbench.formats.batch import encode_batch
    from workbench.formats.metadata import encode_metadata_record

    node = root / "nodes" / "1"
    log_dir = node / "__cluster_metadata-0"
    log_dir.mkdir(parents=True)
    (node / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=c2VjcmV0LWNsdXN0ZXI\n")
    segment = b""
    for offset, (seconds, (name, fields)) in enumerate(events):
        value = encode_metadata_record(name, 0, fields)
        segment += encode_batch(
            [(offset, T0_MS + int(seconds * 1000), None, value)], base_offset=offset, partition_leader_epoch=1
        )
    (log_dir / "00000000000000000000.log").write_bytes(segment)
    return root


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


def test_incident_notebook_is_committed_clean_and_paired() -> None:
    nb = nbformat.read(str(INCIDENT), as_version=4)

    assert nb.metadata.kernelspec.name == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert code[0].metadata.tags == ["parameters"]
    namespace: dict = {}
    exec(code[0].source, namespace)  # noqa: S102 - the committed defaults
    defaults = {k: v for k, v in namespace.items() if not k.startswith("__")}
    assert defaults == {
        "bundle": "",
        "start": "",
        "end": "",
        "topics": "",
        "report": True,
        "show_payloads": False,
        "summary_path": "",
    }
    paired = jupytext.read(INCIDENT.with_suffix(".py"))
    assert [(c.cell_type, c.source) for c in paired.cells] == [(c.cell_type, c.source) for c in nb.cells]


# --------------------------------------------------------------------------------------------
# arguments


def test_notebook_names_resolve_in_the_repository() -> None:
    assert notebooks_dir() == REPO / "notebooks"
    assert notebook_path("incident_report") == INCIDENT
    assert notebook_path("incident_report.ipynb") == INCIDENT
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
    with pytest.raises(ConfigError, match="incident_report has no parameter.*topcs.*it takes .*topics"):
        build_report(bundle, out, parameters={"topcs": "orders"})
    with pytest.raises(ConfigError, match="bundle are set by build_report itself"):
        build_report(bundle, out, parameters={"bundle": "/elsewhere"})
    with pytest.raises(ConfigError, match="timeout"):
        build_report(bundle, out, timeout=0)
    assert not out.exists()


def test_offline_check_names_the_remote_script() -> None:
    _check_offline('<script type="text/javascript">var x = "https://cdn.plot.ly/un/";</script>', None)
    for bad in (
        '<script src="https://cdn.plot.ly/plotly-3.0.1.min.js"></script>',
        "<SCRIPT type='text/javascript' src='//unpkg.com/x.js'></SCRIPT>",
        '<link rel="stylesheet" href="https://fonts.example/x.css">',
    ):
        with pytest.raises(ReportError, match="load scripts from the network"):
            _check_offline(bad, None)


def test_write_summary_is_plain_json(tmp_path: Path) -> None:
    import pandas as pd

    partitions = pd.DataFrame(
        {
            "topic": ["orders"],
            "partition": [0],
            "first_under_min_isr": pd.to_datetime(["2026-11-18 11:07:00"]),
            "offline_seconds": [float("nan")],
        }
    )
    path = write_summary(
        tmp_path / "deep" / "summary.json", bundle="/b", findings=["f1"], partitions=partitions, parameters={"t": ""}
    )
    document = json.loads(path.read_text())
    assert document.pop("generated").endswith("+00:00")
    assert document == {
        "bundle": "/b",
        "parameters": {"t": ""},
        "findings": ["f1"],
        "partitions": [
            {
                "topic": "orders",
                "partition": 0,
                "first_under_min_isr": "2026-11-18T11:07:00+00:00",
                "offline_seconds": None,
            }
        ],
    }


# --------------------------------------------------------------------------------------------
# running notebooks (a kernel; the small ones start no Spark)


def test_failed_notebook_raises_and_keeps_the_executed_notebook(tmp_path: Path) -> None:
    nb = small_notebook(tmp_path / "broken.ipynb", "x = 1", "raise RuntimeError('the bundle was empty')")
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


def test_small_report_hides_code_and_parameters_and_embeds_plotly(tmp_path: Path) -> None:
    nb = small_notebook(
        tmp_path / "fig.ipynb",
        "import plotly.io as pio, plotly.graph_objects as go\n"
        'pio.renderers.default = "plotly_mimetype+notebook"\n'
        "import sys\n"
        "print('noise on stderr', file=sys.stderr)\n"
        "go.Figure(go.Bar(x=['a'], y=[1]), layout={'title': {'text': 'SECRET_FIGURE ' + topics}}).show()",
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
def test_incident_report_on_a_small_isr_incident(tmp_path: Path) -> None:
    bundle = write_incident_bundle(tmp_path / "incident")
    summary = tmp_path / "summary.json"

    out = build_report(bundle, tmp_path / "report.html", parameters={"summary_path": str(summary)})

    text = out.read_text(encoding="utf-8")
    # no code cells: every code cell is rendered without its input
    assert re.findall(r'<div class="jp-Cell jp-CodeCell[^"]*"', text)
    assert all("jp-mod-noInput" in c for c in re.findall(r'<div class="jp-Cell jp-CodeCell[^"]*"', text))
    assert "workbench.session()" not in text and 'jp-InputArea-editor"' not in text
    assert not re.search(r"<script[^>]*\ssrc=[\"']?https?:", text)
    titles = sorted(layout["title"]["text"] for layout in plotly_divs(text).values())
    assert titles == ["Partition ISR state over time", "UnderMinIsrPartitionCount per leader broker"]
    assert "<title>Kafka incident report: incident</title>" in text
    assert "<li>topic orders partition 1 was offline for 5.0 s</li>" in text

    document = json.loads(summary.read_text())
    assert document["bundle"] == str(bundle.resolve())
    assert document["findings"] == [
        "topic orders partition 1 was offline for 5.0 s",
        "topic payments partition 0 was under min ISR (2) for 44.0 s starting 2026-11-18 11:07:00 UTC",
        # 20 s to 63 s: the 5 s offline (ISR [1], no leader) are below min ISR too
        "topic orders partition 1 was under min ISR (2) for 43.0 s starting 2026-11-18 11:07:00 UTC",
        "topic orders partition 0 was under min ISR (2) for 42.0 s starting 2026-11-18 11:07:00 UTC",
    ]
    assert [(p["topic"], p["partition"], p["offline_seconds"]) for p in document["partitions"]] == [
        ("orders", 1, 5.0),
        ("payments", 0, 0.0),
        ("orders", 0, 0.0),
    ]


@pytest.mark.spark
def test_incident_report_on_the_demo_bundle(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    try:
        demo = request.getfixturevalue("demo_bundle")
    except pytest.FixtureLookupError:
        pytest.skip("tests/conftest.py provides no demo_bundle fixture yet")

    out = build_report(demo, tmp_path / "demo.html")

    text = out.read_text(encoding="utf-8")
    titles = sorted(layout["title"]["text"] for layout in plotly_divs(text).values())
    assert titles == ["Partition ISR state over time", "UnderMinIsrPartitionCount per leader broker"]
    assert not re.search(r"<script[^>]*\ssrc=[\"']?https?:", text)
    assert "under min ISR" in text
