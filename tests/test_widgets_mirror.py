"""MirrorMaker 2 backlog figures and the interactive view, driven headlessly on small inline frames."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from widgets.linking import TimeWindow
from widgets.mirror import MirrorBacklog, audit_table, figure_backlog
from workbench.errors import ConfigError

DAY = "2026-11-21 "


def windows_frame() -> pd.DataFrame:
    # topic, partition, window start, lag (end), min, max, avg, bytes, bytes max, age, age max
    rows = [
        ("orders", 0, "03:00:00", 2, 0, 5, 1.5, 400, 900, 0.5, 1.0),
        ("orders", 0, "03:00:15", 150, 2, 150, 70.0, 30000, 30000, 14.0, 14.0),
        ("orders", 0, "03:00:30", 0, 0, 300, 120.0, 0, 60000, 0.0, 29.0),
        ("orders", 1, "03:00:00", 1, 0, 4, 1.0, 200, 800, 0.2, 0.9),
    ]
    frame = pd.DataFrame(rows, columns=["topic", "partition", "window_start", "lag_records", "lag_records_min",
                                        "lag_records_max", "lag_records_avg", "lag_bytes", "lag_bytes_max",
                                        "lag_age_s", "lag_age_s_max"])
    frame["window_start"] = pd.to_datetime(DAY + frame["window_start"])
    frame["window_end"] = frame["window_start"] + pd.Timedelta(seconds=15)
    frame["source_alias"], frame["target_alias"] = "source", "target"
    return frame


def episodes_frame() -> pd.DataFrame:
    return pd.DataFrame({"topic": ["orders"], "partition": [0], "scope": ["full"],
                         "start": pd.to_datetime([DAY + "03:00:14"]), "end": pd.to_datetime([DAY + "03:00:40"])})


def audit_frame() -> pd.DataFrame:
    rows = [("app", "orders", 0, "03:00:00", 10, 8, 8, 2, 0, "reread"),
            ("app", "orders", 0, "03:00:30", 300, 150, 150, 150, 0, "stale"),
            ("app", "orders", 1, "03:00:00", 7, 7, 7, 0, 0, "ok")]
    frame = pd.DataFrame(rows, columns=["group", "topic", "partition", "time", "source_committed",
                                        "checkpoint_downstream", "target_committed", "reread", "skip", "status"])
    frame["time"] = pd.to_datetime(DAY + frame["time"])
    frame["target_topic"] = "source." + frame["topic"]
    return frame


def t(clock: str) -> str:
    return f"{DAY}{clock}.000"


def test_records_figure_has_value_band_and_avg_per_partition():
    fig = figure_backlog(windows_frame(), episodes_frame())
    got = {tr.name: (list(tr.x), list(tr.y)) for tr in fig.data}
    x0 = [t("03:00:00"), t("03:00:15"), t("03:00:30")]
    assert got == {
        "orders-0 min": (x0, [0, 2, 0]), "orders-0 max": (x0, [5, 150, 300]), "orders-0": (x0, [2, 150, 0]),
        "orders-0 avg": (x0, [1.5, 70.0, 120.0]),
        "orders-1 min": ([t("03:00:00")], [0]), "orders-1 max": ([t("03:00:00")], [4]),
        "orders-1": ([t("03:00:00")], [1]), "orders-1 avg": ([t("03:00:00")], [1.0]),
    }
    assert [(s.x0, s.x1, s.fillcolor) for s in fig.layout.shapes] == [(t("03:00:14"), t("03:00:40"), "#d62728")]


def test_age_figure_draws_mirrormakers_own_metrics_in_seconds():
    metrics = pd.DataFrame({"topic": ["orders", "orders"], "partition": [0, 0],
                            "metric": ["record-age-ms", "record-count"], "value": [1500.0, 9.0],
                            "time": pd.to_datetime([DAY + "03:00:05", DAY + "03:00:05"])})
    fig = figure_backlog(windows_frame(), measure="age", partitions="orders-0", metrics=metrics)
    assert [tr.name for tr in fig.data] == ["orders-0 max", "orders-0", "orders-0 record-age-ms (reported)"]
    assert list(fig.data[2].y) == [1.5]


def test_window_and_bad_arguments():
    fig = figure_backlog(windows_frame(), start=DAY + "03:00:20", end=DAY + "03:00:50")
    assert {tr.name: list(tr.y) for tr in fig.data}["orders-0"] == [150, 0]
    assert list(fig.layout.xaxis.range) == [t("03:00:20"), t("03:00:50")]
    with pytest.raises(ConfigError):
        figure_backlog(windows_frame(), measure="latency")
    with pytest.raises(ConfigError):
        figure_backlog(windows_frame(), start=DAY + "04:00:00", end=DAY + "03:00:00")
    empty = figure_backlog(windows_frame().iloc[0:0])
    assert not empty.data and "No replication lag" in empty.layout.annotations[0].text


def test_audit_table_at_a_moment():
    got = audit_table(audit_frame(), at=DAY + "03:00:10")
    want = pd.DataFrame({"group": ["app", "app"], "source partition": ["orders-0", "orders-1"],
                         "target partition": ["source.orders-0", "source.orders-1"],
                         "source committed": [10, 7], "checkpoint": [8, 7], "target committed": [8, 7],
                         "would re-read": [2, 0], "would skip": [0, 0], "status": ["reread", "ok"],
                         "at": [t("03:00:00"), t("03:00:00")]})
    pd.testing.assert_frame_equal(got, want)
    assert audit_table(audit_frame())["status"].tolist() == ["stale", "ok"]


def test_view_follows_the_shared_window_and_its_controls():
    window = TimeWindow()
    view = MirrorBacklog(windows_frame(), episodes_frame(), audit_frame(), window=window)
    assert len(view.figure.data) == 8 and "stale" in view.audit_html.value
    window.set(DAY + "03:00:00", DAY + "03:00:10")
    assert "reread" in view.audit_html.value and "stale" not in view.audit_html.value
    assert list(view.figure.layout.xaxis.range) == [t("03:00:00"), t("03:00:10")]
    view.measure.value = "bytes"
    view.partition_filter.value = ("orders-1",)
    assert [tr.name for tr in view.figure.data] == ["orders-1 max", "orders-1"]
    assert list(view.figure.data[1].y) == [200]


def test_the_report_figures_are_the_backlog_and_its_age_over_the_shared_window():
    """What the notebook's report drew before ``show``: the backlog in records, then its age beside
    MirrorMaker 2's metrics, over the notebook's window, whatever the controls."""
    metrics = pd.DataFrame({"topic": ["orders"], "partition": [0], "metric": ["record-age-ms"], "value": [1500.0],
                            "time": pd.to_datetime([DAY + "03:00:20"])})
    start, end = DAY + "03:00:10", DAY + "03:00:50"
    window = TimeWindow()
    window.set(start, end)
    view = MirrorBacklog(windows_frame(), episodes_frame(), audit_frame(), metrics=metrics, window=window)
    view.measure.value, view.partition_filter.value = "bytes", ("orders-1",)
    drawn = [figure_backlog(windows_frame(), episodes_frame(), start=start, end=end),
             figure_backlog(windows_frame(), episodes_frame(), measure="age", start=start, end=end, metrics=metrics)]
    assert [json.loads(f.to_json()) for f in view.report_figures()] == [json.loads(f.to_json()) for f in drawn]
    assert [tr.name for tr in drawn[1].data][-1] == "orders-0 record-age-ms (reported)"


def test_the_lowest_in_memory_lag_is_drawn_where_the_bundle_bounds_it():
    w = pd.DataFrame({"source_alias": ["A"] * 2, "target_alias": ["B"] * 2, "topic": ["t"] * 2, "partition": [0] * 2,
                      "window_start": pd.to_datetime(["2026-01-01 03:00:00", "2026-01-01 03:00:15"]),
                      "window_end": pd.to_datetime(["2026-01-01 03:00:15", "2026-01-01 03:00:30"]),
                      "lag_records": [5, 0], "lag_records_min": [0, 0], "lag_records_max": [9, 5],
                      "lag_records_avg": [3.0, 1.0], "lag_records_low": [2, None]})
    fig = figure_backlog(w)
    assert [t.name for t in fig.data] == ["t-0 min", "t-0 max", "t-0", "t-0 avg", "t-0 in memory, at least"]
    assert list(fig.data[-1].y) == [2, None]
    assert [t.name for t in figure_backlog(w.assign(lag_records_low=None)).data] == [
        "t-0 min", "t-0 max", "t-0", "t-0 avg"]
