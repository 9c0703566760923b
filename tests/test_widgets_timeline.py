"""The overview timeline and the shared time window, driven headlessly as a user would."""

from __future__ import annotations

import pandas as pd
import pytest
from plotly.callbacks import Points

from widgets.isr import IsrTimeline
from widgets.linking import TimeWindow
from widgets.timeline import FindingsTimeline, figure_findings_timeline, merge_for_display
from workbench.errors import ConfigError

DAY = "2026-11-21 "


def findings() -> pd.DataFrame:
    return pd.DataFrame({
        "area": ["quorum", "isr", "isr", "consumer_lag"],
        "kind": ["stall", "under_min_isr", "isr_flapping", "behind"],
        "severity": ["critical", "critical", "warning", "info"],
        "subject_type": ["node", "partition", "partition", "group"],
        "subject": ["2", "<b>orders</b>-0", "orders-1", "billing"],
        "start": pd.to_datetime([DAY + "03:12:00", DAY + "03:12:05", DAY + "03:12:10", DAY + "03:13:00"]),
        "end": pd.to_datetime([DAY + "03:12:08", DAY + "03:12:45", DAY + "03:13:00", None]),
        "summary": ["quorum stalled", "topic <b>orders</b> partition 0 under min ISR", "flapping", "behind"],
    })


def test_one_lane_per_area_one_bar_per_finding_severity_colours():
    fig = figure_findings_timeline(findings(), titles={"isr": "ISR health", "quorum": "Quorum"},
                                   areas=["quorum", "isr", "consumer_lag", "tier"])
    assert [t.name for t in fig.data] == ["critical", "warning", "info"]
    critical = fig.data[0]
    assert list(critical.y) == ["Quorum", "ISR health"]
    assert list(critical.x) == [8000.0, 40000.0]
    assert list(critical.base) == [DAY + "03:12:00.000", DAY + "03:12:05.000"]
    # lanes in the given order, empty ones included; names from logs are escaped
    assert list(fig.layout.yaxis.categoryarray) == ["Quorum", "ISR health", "consumer_lag", "tier"]
    assert critical.customdata[1][0] == "&lt;b&gt;orders&lt;/b&gt;-0"
    assert "&lt;b&gt;" in critical.customdata[1][4]
    # an instant (no end) still gets a visible bar
    assert fig.data[2].x[0] > 0


def test_many_findings_merge_per_area_and_kind():
    frame = pd.DataFrame({
        "area": ["isr"] * 100, "kind": ["under_min_isr"] * 100, "severity": ["critical"] * 100,
        "subject": [f"t-{i}" for i in range(100)], "summary": ["x"] * 100,
        "start": pd.to_datetime([DAY + "03:00:00"] * 60 + [DAY + "04:00:00"] * 40),
        "end": pd.to_datetime([DAY + "03:00:30"] * 60 + [DAY + "04:00:10"] * 40)})
    merged = merge_for_display(frame, max_bars=10)
    assert list(merged["count"]) == [60, 40]
    assert list(merged["summary"])[0].startswith("60 findings: under min isr on t-0, t-1, t-10")
    assert len(merge_for_display(frame, max_bars=100)) == 100


def test_empty_findings_say_so():
    fig = figure_findings_timeline(findings().iloc[:0])
    assert not fig.data and "No finding" in fig.layout.annotations[0].text


def test_typing_a_range_moves_the_shared_window_and_the_isr_view_follows():
    window = TimeWindow()
    view = FindingsTimeline(findings(), window=window)
    states = pd.DataFrame({
        "topic": ["orders"] * 3, "partition": [0] * 3, "leader": [1, 1, 1], "isr": [[1, 2], [1], [1, 2]],
        "replicas": [[1, 2]] * 3, "min_isr": [2] * 3, "state": ["healthy", "under_min_isr", "healthy"],
        "start": pd.to_datetime([DAY + "03:11:00", DAY + "03:12:05", DAY + "03:12:45"]),
        "end": pd.to_datetime([DAY + "03:12:05", DAY + "03:12:45", DAY + "03:14:00"])})
    counts = pd.DataFrame({"broker": [1, 1], "count": [1, 0],
                           "time": pd.to_datetime([DAY + "03:12:05", DAY + "03:12:45"])})
    isr = IsrTimeline(states, counts, window=window)
    assert isr.window() == (pd.Timestamp(DAY + "03:11:00"), pd.Timestamp(DAY + "03:14:00"))

    view.start_box.value = DAY + "03:12:05"
    view.end_box.value = DAY + "03:12:45"
    assert window.range == (pd.Timestamp(DAY + "03:12:05"), pd.Timestamp(DAY + "03:12:45"))
    assert tuple(view.figure.layout.xaxis.range) == (DAY + "03:12:05.000", DAY + "03:12:45.000")
    assert view.status.value == "3 of 4 finding(s) in the window"
    # the other view moved to the window, and its figure's axis with it
    assert isr.window() == (pd.Timestamp(DAY + "03:12:05"), pd.Timestamp(DAY + "03:12:45"))
    assert tuple(isr.timeline.layout.xaxis.range) == (DAY + "03:12:05.000", DAY + "03:12:45.000")


def test_zooming_the_plot_moves_the_window_and_a_bad_range_is_shown_not_raised():
    window = TimeWindow()
    view = FindingsTimeline(findings(), window=window)
    view.figure.layout.xaxis.range = [DAY + "03:12:00", DAY + "03:12:30"]
    assert window.range == (pd.Timestamp(DAY + "03:12:00"), pd.Timestamp(DAY + "03:12:30"))
    assert view.start_box.value == DAY + "03:12:00"
    view.end_box.value = DAY + "03:00:00"
    assert "after end" in view.status.value
    assert window.range == (pd.Timestamp(DAY + "03:12:00"), pd.Timestamp(DAY + "03:12:30"))
    with pytest.raises(ConfigError):
        window.set(DAY + "03:13:00", DAY + "03:12:00")


def test_selecting_a_finding_centres_the_window_and_opens_its_area():
    window = TimeWindow()
    opened = []
    view = FindingsTimeline(findings(), window=window, on_select=opened.append)
    row = findings().iloc[1].to_dict()
    view.select(row)
    lo, hi = window.range
    assert lo < row["start"] and hi > row["end"]
    assert [f["area"] for f in opened] == ["isr"]
    assert "&lt;b&gt;orders&lt;/b&gt;" in view.details.value and "<b>orders</b>" not in view.details.value


def test_a_timeline_filled_area_by_area_keeps_its_window_links_and_clicks():
    """The live overview starts empty (saying which areas are computing) and draws each area's bars
    as they arrive; zoom, the typed range and clicks keep working on the redrawn figure."""
    window = TimeWindow()
    opened = []
    titles = {"quorum": "Quorum", "isr": "ISR health", "consumer_lag": "Consumer lag"}
    view = FindingsTimeline(findings().iloc[:0], titles=titles, areas=list(titles), window=window,
                            on_select=opened.append)
    view.update(findings().iloc[:0], pending=list(titles))
    assert not view.figure.data
    assert view.figure.layout.annotations[0].text == "Computing the findings of Quorum, ISR health, Consumer lag..."
    assert view.status.value == "0 of 0 finding(s) in the window; still computing: Quorum, ISR health, Consumer lag"

    first = findings()[findings()["area"] == "quorum"]
    sent, send = [], view.figure._send_relayout_msg
    view.figure._send_relayout_msg = lambda edits, view_id=None: (sent.append(edits), send(edits, view_id))
    view.update(first, pending=["isr", "consumer_lag"])
    assert {"annotations": []} in sent  # the page drops the "computing" sentence (a new layout would not)
    assert not view.figure.layout.annotations
    assert [list(t.y) for t in view.figure.data] == [["Quorum"]]
    assert list(view.figure.layout.yaxis.categoryarray) == ["Quorum", "ISR health", "Consumer lag"]
    assert view.status.value == "1 of 1 finding(s) in the window; still computing: ISR health, Consumer lag"

    view.update(findings())
    assert sorted(sum((list(t.y) for t in view.figure.data), [])) == sorted(
        ["Quorum", "ISR health", "ISR health", "Consumer lag"])
    assert view.status.value == "4 of 4 finding(s) in the window"
    view.figure.layout.xaxis.range = [DAY + "03:12:00", DAY + "03:12:30"]  # a zoom on the new layout
    assert window.range == (pd.Timestamp(DAY + "03:12:00"), pd.Timestamp(DAY + "03:12:30"))
    critical = view.figure.data[0]  # clicks are bound again on the new traces: a click opens the area
    critical._dispatch_on_click(Points(point_inds=[1], xs=[0], ys=[0], trace_name="critical", trace_index=0), None)
    assert [f["area"] for f in opened] == ["isr"]
