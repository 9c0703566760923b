"""Tier figures and the interactive tier view, driven headlessly on small inline frames."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from widgets.linking import TimeWindow, view_factories
from widgets.tier import TierBacklog, figure_tier_backlog, figure_tier_brokers, figure_tier_ranges
from workbench.errors import ConfigError

DAY = "2026-11-21 "

# topic, partition, time, broker, upload seg/rec/bytes, delete seg/rec/bytes, log_start, log_end, local_start,
# remote_start, remote_end
ROWS = [
    ("tiered", 0, "03:12:00", 2, 0, 0, 0, 0, 0, 0, 0, 1000, 0, None, None),
    ("tiered", 0, "03:12:05", 2, 6, 6000, 6291456, 0, 0, 0, 0, 7000, 0, None, None),
    ("tiered", 0, "03:12:19", 2, 0, 0, 0, 0, 0, 0, 0, 7000, 5000, 0, 6000),
    ("tiered", 0, "03:13:00", 2, 0, 0, 0, 2, 2000, 2097152, 2000, 7000, 5000, 0, 6000),
    ("tiered", 0, "03:13:04", 2, 0, 0, 0, 0, 0, 0, 2000, 7000, 5000, 2000, 6000),
    ("<b>x</b>", 1, "03:12:00", 3, 1, 10, 100, 0, 0, 0, 0, 10, 0, None, None),
]


def series_frame(rows=ROWS) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=[
        "topic", "partition", "time", "broker", "upload_segments", "upload_records", "upload_bytes",
        "delete_segments", "delete_records", "delete_bytes", "log_start", "log_end", "local_start",
        "remote_start", "remote_end"])
    frame["time"] = pd.to_datetime(DAY + frame["time"])
    return frame


def reported_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "metric": ["RemoteCopyLagSegments", "RemoteCopyLagSegments", "RemoteDeleteLagSegments"],
        "broker": [2, 2, 2], "topic": ["tiered", "tiered", "tiered"],
        "time": pd.to_datetime([DAY + "03:12:10", DAY + "03:12:30", DAY + "03:13:01"]),
        "value": [6.0, 0.0, 2.0], "format": ["jmxtool"] * 3})


def t(clock: str) -> str:
    return f"{DAY}{clock}.000"


def test_backlog_lines_per_partition_and_lag_with_kafka_samples():
    fig = figure_tier_backlog(series_frame(), topics="tiered", reported=reported_frame())
    got = {tr.name: (list(tr.x), list(tr.y)) for tr in fig.data}
    end = t("03:13:04")
    assert got == {
        "upload tiered-0": ([t("03:12:00"), t("03:12:05"), t("03:12:19"), t("03:13:00"), end], [0, 6, 0, 0, 0]),
        "delete tiered-0": ([t("03:12:00"), t("03:12:05"), t("03:12:19"), t("03:13:00"), end], [0, 0, 0, 2, 0]),
        "RemoteCopyLagSegments tiered (Kafka)": ([t("03:12:10"), t("03:12:30")], [6.0, 0.0]),
        "RemoteDeleteLagSegments tiered (Kafka)": ([t("03:13:01")], [2.0]),
    }


def test_backlog_window_broker_filter_measure_and_escaping():
    fig = figure_tier_backlog(series_frame(), measure="bytes", lags="upload", brokers="3")
    assert [tr.name for tr in fig.data] == ["upload &lt;b&gt;x&lt;/b&gt;-1"]
    fig = figure_tier_backlog(series_frame(), measure="bytes", lags=["upload"], topics=["tiered"],
                              start=DAY + "03:12:10", end=DAY + "03:12:30")
    assert (list(fig.data[0].x), list(fig.data[0].y)) == ([t("03:12:10"), t("03:12:19"), t("03:12:30")],
                                                          [6291456.0, 0.0, 0.0])
    with pytest.raises(ConfigError, match="measure"):
        figure_tier_backlog(series_frame(), measure="pages")
    with pytest.raises(ConfigError, match="lags"):
        figure_tier_backlog(series_frame(), lags="copy")
    with pytest.raises(ConfigError, match="after end"):
        figure_tier_backlog(series_frame(), start=DAY + "03:13:00", end=DAY + "03:12:00")


def test_empty_selection_says_so():
    fig = figure_tier_backlog(series_frame(), topics="nope")
    assert fig.data == () and "No tiered partition" in fig.layout.annotations[0].text


def test_ranges_bands_and_log_bounds():
    fig = figure_tier_ranges(series_frame(), topic="tiered", partition=0)
    traces = {tr.name: list(tr.y) for tr in fig.data}
    assert traces["remote lower"] == [None, None, 0.0, 0.0, 2000.0]
    assert traces["remote"] == [None, None, 6000.0, 6000.0, 6000.0]
    assert traces["local lower"] == [0.0, 0.0, 5000.0, 5000.0, 5000.0]
    assert traces["local"] == [1000.0, 7000.0, 7000.0, 7000.0, 7000.0]
    assert traces["log start"] == [0.0, 0.0, 0.0, 2000.0, 2000.0]
    assert traces["log end"] == [1000.0, 7000.0, 7000.0, 7000.0, 7000.0]
    assert [tr.fill for tr in fig.data if tr.name in ("remote", "local")] == ["tonexty", "tonexty"]


def test_view_follows_the_window_and_filters():
    window = TimeWindow()
    view = TierBacklog(series_frame(), reported_frame(), window=window)
    assert "4 backlog line(s)" in view.status.value
    view.topic_filter.value = ("tiered",)
    assert [tr.name for tr in view.backlog_figure.data][:2] == ["upload tiered-0", "delete tiered-0"]
    window.set(DAY + "03:12:10", DAY + "03:12:30")
    assert tuple(view.backlog_figure.layout.xaxis.range) == (t("03:12:10"), t("03:12:30"))
    assert tuple(view.ranges_figure.layout.xaxis.range) == (t("03:12:10"), t("03:12:30"))
    view.measure.value = "records"
    assert [tr.name for tr in view.backlog_figure.data] == ["upload tiered-0", "delete tiered-0"]
    assert list(view.backlog_figure.data[0].y) == [6000.0, 0.0, 0.0]


def test_a_view_opened_on_a_moved_window_starts_there():
    window = TimeWindow()
    window.set(DAY + "03:12:10", DAY + "03:12:30")
    view = TierBacklog(series_frame(), reported_frame(), window=window)
    assert tuple(view.backlog_figure.layout.xaxis.range) == (t("03:12:10"), t("03:12:30"))
    assert tuple(view.ranges_figure.layout.xaxis.range) == (t("03:12:10"), t("03:12:30"))


def test_registered_as_the_tier_view():
    factory = view_factories()["tier"]
    view = factory({"series": series_frame(), "reported": reported_frame()}, None)
    assert isinstance(view, TierBacklog)


def test_the_report_figures_are_the_backlog_in_segments_and_bytes_then_the_ranges():
    """What the notebook's report drew before ``show``: every partition's backlog in segments, then in
    bytes, with Kafka's gauges, then the first partition's ranges, over the notebook's window."""
    start, end = DAY + "03:12:03", DAY + "03:13:02"
    window = TimeWindow()
    window.set(start, end)
    view = TierBacklog(series_frame(), reported_frame(), start=start, end=end, window=window)
    view.topic_filter.value, view.measure.value = ("tiered",), "records"
    drawn = [figure_tier_backlog(series_frame(), measure="segments", start=start, end=end, reported=reported_frame()),
             figure_tier_backlog(series_frame(), measure="bytes", start=start, end=end, reported=reported_frame()),
             figure_tier_ranges(series_frame(), start=start, end=end)]
    assert [json.loads(f.to_json()) for f in view.report_figures()] == [json.loads(f.to_json()) for f in drawn]
    assert drawn[2].layout.title.text == "Local and remote offset ranges of tiered-0"


def test_a_partition_a_reader_refused_leaves_the_view_and_its_report_figures_drawn():
    """A null partition (a bad value in the bundle) is listed as ``?``: a report, which builds the view
    too, still draws what the figures draw."""
    series = series_frame([*ROWS, ("tiered", None, "03:12:30", 2, 1, 10, 100, 0, 0, 0, 0, 10, 0, None, None)])
    view = TierBacklog(series, reported_frame())
    assert [label for label, _ in view.partition_choice.options] == ["tiered-0", "<b>x</b>-1", "tiered-?"]
    drawn = [figure_tier_backlog(series, measure="segments", reported=reported_frame()),
             figure_tier_backlog(series, measure="bytes", reported=reported_frame()), figure_tier_ranges(series)]
    assert [json.loads(f.to_json()) for f in view.report_figures()] == [json.loads(f.to_json()) for f in drawn]


def brokers_frame() -> pd.DataFrame:
    """The roll-up by broker of :data:`ROWS` (each partition counted for its leader)."""
    frame = pd.DataFrame([
        (2, "03:12:00", 0, 0, 0, 0, 0, 0), (3, "03:12:00", 1, 10, 100, 0, 0, 0),
        (2, "03:12:05", 6, 6000, 6291456, 0, 0, 0), (2, "03:12:19", 0, 0, 0, 0, 0, 0),
        (2, "03:13:00", 0, 0, 0, 2, 2000, 2097152), (2, "03:13:04", 0, 0, 0, 0, 0, 0),
    ], columns=["broker", "time", "upload_segments", "upload_records", "upload_bytes", "delete_segments",
                "delete_records", "delete_bytes"])
    frame["time"] = pd.to_datetime(DAY + frame["time"])
    return frame


def test_each_brokers_backlog_beside_its_broker_wide_gauges():
    """One line per broker and lag, held to the window; the samples without a topic (the broker-wide
    gauges) as markers, the topic's samples left to the per-partition figure."""
    broker_wide = pd.concat([reported_frame(), pd.DataFrame({
        "metric": ["RemoteCopyLagSegments"], "broker": [2], "topic": [None],
        "time": pd.to_datetime([DAY + "03:12:10"]), "value": [6.0], "format": ["jmxtool"]})], ignore_index=True)
    fig = figure_tier_brokers(brokers_frame(), reported=broker_wide, start=DAY + "03:12:03", end=DAY + "03:13:02")
    got = {tr.name: (list(tr.x), list(tr.y)) for tr in fig.data}
    assert got == {
        "upload broker 2": ([t("03:12:03"), t("03:12:05"), t("03:12:19"), t("03:13:00"), t("03:13:02")],
                            [0, 6, 0, 0, 0]),
        "delete broker 2": ([t("03:12:03"), t("03:12:05"), t("03:12:19"), t("03:13:00"), t("03:13:02")],
                            [0, 0, 0, 2, 2]),
        "upload broker 3": ([t("03:12:03"), t("03:13:02")], [1, 1]),
        "delete broker 3": ([t("03:12:03"), t("03:13:02")], [0, 0]),
        "RemoteCopyLagSegments broker 2 (Kafka)": ([t("03:12:10")], [6.0]),
    }
    assert fig.layout.title.text == "Tiered-storage backlog per broker (segments)"
    view = TierBacklog(series_frame(), broker_wide, brokers=brokers_frame())
    assert any(c is view.brokers_figure for c in view.children) and len(view.report_figures()) == 4
    view.measure.value = "bytes"
    assert view.brokers_figure.layout.title.text == "Tiered-storage backlog per broker (bytes)"
    plain = TierBacklog(series_frame())   # no roll-up given: no per-broker figure
    assert all(c is not plain.brokers_figure for c in plain.children) and len(plain.report_figures()) == 3
