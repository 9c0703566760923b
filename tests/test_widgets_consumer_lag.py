"""Consumer-lag figures and the interactive view, driven headlessly on small inline frames."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from widgets.consumer_lag import (
    ConsumerLagView,
    empty_frames,
    figure_burrow_partitions,
    figure_burrow_status,
    figure_lag_histogram,
    figure_lag_over_time,
    figure_page_cache,
    human_bytes,
)
from widgets.linking import TimeWindow, view_factories
from workbench.errors import ConfigError

DAY = "2026-11-21 "

# broker, group, topic, bucket, lower, upper, count
HIST = pd.DataFrame([
    (1, "billing", "orders", -1, 0.0, 0.0, 5),
    (1, "billing", "orders", 10, 512.0, 1024.0, 3),
    (1, "audit", "orders", 10, 512.0, 1024.0, 2),
    (2, "billing", "payments", 20, 2.0 ** 19, 2.0 ** 20, 4),
], columns=["broker", "group", "topic", "bucket", "lower", "upper", "count"])
HIST["metric"] = "bytes"

CDF = pd.DataFrame([(1, 0.0, 0.5, 10), (1, 1024.0, 1.0, 10), (2, 2.0 ** 20, 1.0, 4)],
                   columns=["broker", "bytes", "fraction", "reads"])
CACHE = pd.DataFrame([(1, 0.5, 10, 0, 0), (1, 0.99, 10, 1024, 4096)],
                     columns=["broker", "quantile", "reads", "tail_bytes", "cache_bytes"])


def series_frame() -> pd.DataFrame:
    rows = []
    for i, (group, topic, part, lags) in enumerate([
        ("billing", "orders", 0, [0, 50, 120]),
        ("billing", "payments", 3, [5, 5, 5]),
        ("audit", "orders", 0, [1, 2, 3]),
    ]):
        for j, lag in enumerate(lags):
            rows.append((group, topic, part, pd.Timestamp(DAY + f"03:1{j}:0{i}"), 100 + j, lag, lag * 100,
                         lag * 10, 1))
    return pd.DataFrame(rows, columns=["group", "topic", "partition", "commit_time", "committed_offset",
                                       "records_lag", "bytes_lag", "time_lag_ms", "broker"])


# group, time, status, worst, stop, stall, rewind, warn, total_lag
BURROW = pd.DataFrame([
    ("billing", pd.Timestamp(DAY + "03:10:00"), "OK", "OK", 0, 0, 0, 0, 0),
    ("billing", pd.Timestamp(DAY + "03:11:00"), "WARN", "WARN", 0, 0, 0, 2, 40),
    ("billing", pd.Timestamp(DAY + "03:12:00"), "ERR", "STOP", 2, 0, 0, 0, 90),
    ("audit", pd.Timestamp(DAY + "03:11:30"), "OK", "OK", 0, 0, 0, 0, 0),
], columns=["group", "time", "status", "worst", "stop", "stall", "rewind", "warn", "total_lag"])


# group, topic, partition, status, start, end, evaluations, max_lag: billing orders-0 OK then STOP
# (a run of one evaluation at the end), audit orders-0 STALL
RUNS = pd.DataFrame([
    ("billing", "orders", 0, "OK", pd.Timestamp(DAY + "03:10:00"), pd.Timestamp(DAY + "03:12:00"), 2, 0),
    ("billing", "orders", 0, "STOP", pd.Timestamp(DAY + "03:12:00"), pd.Timestamp(DAY + "03:12:00"), 1, 90),
    ("audit", "orders", 0, "STALL", pd.Timestamp(DAY + "03:10:40"), pd.Timestamp(DAY + "03:11:30"), 3, 3),
], columns=["group", "topic", "partition", "status", "start", "end", "evaluations", "max_lag"])


def frames() -> dict[str, pd.DataFrame]:
    return {"histogram_bytes": HIST, "histogram_time": HIST.assign(metric="time"), "cdf": CDF,
            "page_cache": CACHE, "series": series_frame(), "burrow": BURROW, "burrow_partitions": RUNS}


def test_histogram_stacks_brokers_over_ordered_buckets_and_filters():
    fig = figure_lag_histogram(HIST, metric="bytes")
    assert [t.name for t in fig.data] == ["broker 1", "broker 2"]
    assert list(fig.data[0].x) == ["0", "≤ 1 KiB", "≤ 1 MiB"]
    assert list(fig.data[0].y) == [5, 5, 0] and list(fig.data[1].y) == [0, 0, 4]
    only = figure_lag_histogram(HIST, metric="bytes", groups="audit")
    assert len(only.data) == 1 and list(only.data[0].y) == [2]
    empty = figure_lag_histogram(HIST, metric="bytes", topics=["nothing"])
    assert not empty.data and "no commits" in empty.layout.annotations[0].text
    with pytest.raises(ConfigError):
        figure_lag_histogram(HIST, metric="records")


def test_page_cache_curve_marks_the_quantiles():
    fig = figure_page_cache(CDF, CACHE)
    assert [t.name for t in fig.data] == ["broker 1", "broker 2", "quantiles"]
    assert list(fig.data[0].x) == [1.0, 1024.0]    # 0 bytes drawn at 1 B on the log axis
    assert list(fig.data[2].text) == ["p50: 0 B", "p99: 1 KiB"]
    assert fig.layout.xaxis.type == "log"


def test_lag_over_time_draws_the_top_n_worst_and_searches():
    series = series_frame()
    fig = figure_lag_over_time(series, metric="records", top=2)
    assert [t.name for t in fig.data] == ["billing orders-0", "billing payments-3"]
    assert list(fig.data[0].y) == [0, 50, 120]
    found = figure_lag_over_time(series, metric="time", search="AUDIT")
    assert [t.name for t in found.data] == ["audit orders-0"] and list(found.data[0].y) == [10, 20, 30]
    windowed = figure_lag_over_time(series, start=DAY + "03:10:30", end=DAY + "03:11:30")
    assert [pd.Timestamp(x) for x in windowed.layout.xaxis.range] == [pd.Timestamp(DAY + "03:10:30"),
                                                                      pd.Timestamp(DAY + "03:11:30")]


def test_names_from_the_data_are_escaped():
    series = series_frame().assign(group="<b>x</b>")
    fig = figure_lag_over_time(series)
    assert all("<b>" not in t.name for t in fig.data)
    fig = figure_burrow_status(BURROW.assign(group="<b>x</b>"))
    assert all("<b>" not in y for t in fig.data for y in t.y)
    assert all("<b>" not in h for t in fig.data for h in t.hovertext)


def test_burrow_status_draws_each_group_as_a_row_of_marks_coloured_by_status():
    fig = figure_burrow_status(BURROW)
    assert [t.name for t in fig.data] == ["OK", "WARN", "ERR"]
    assert [list(t.y) for t in fig.data] == [["audit", "billing"], ["billing"], ["billing"]]
    assert fig.data[2].hovertext[0] == ("billing: ERR (worst partition STOP; STOP 2, STALL 0, REWIND 0, WARN 0; "
                                        "lag 90 records)")
    assert list(fig.layout.yaxis.categoryarray) == ["billing", "audit"]
    only = figure_burrow_status(BURROW, groups="audit", start=DAY + "03:00:00")
    assert [list(t.y) for t in only.data] == [["audit"]]
    assert [pd.Timestamp(x) for x in only.layout.xaxis.range] == [pd.Timestamp(DAY + "03:00:00"),
                                                                  pd.Timestamp(DAY + "03:11:30")]
    assert figure_burrow_status(BURROW, groups="nope").layout.annotations[0].text == \
        "no group evaluated for this selection"


def test_burrow_partitions_draw_each_run_as_a_bar_from_its_start_to_the_next_run():
    fig = figure_burrow_partitions(RUNS)
    assert [t.name for t in fig.data] == ["OK", "STOP", "STALL"]
    got = [(list(t.y), [pd.Timestamp(b) for b in t.base], list(t.x)) for t in fig.data]
    # 03:10:00-03:12:00 is 120 s; the STOP run of one evaluation is a sliver: 0.5 % of the 120 s span
    assert got == [(["billing · orders-0"], [pd.Timestamp(DAY + "03:10:00")], [120_000.0]),
                   (["billing · orders-0"], [pd.Timestamp(DAY + "03:12:00")], [600.0]),
                   (["audit · orders-0"], [pd.Timestamp(DAY + "03:10:40")], [50_000.0])]
    assert fig.data[1].hovertext[0] == (f"billing · orders-0: STOP from {DAY}03:12:00 to {DAY}03:12:00 "
                                        "(1 evaluation(s), lag up to 90 records)")
    assert list(fig.layout.yaxis.categoryarray) == ["billing · orders-0", "audit · orders-0"]
    only = figure_burrow_partitions(RUNS, groups="audit", end=DAY + "03:11:00")
    assert [t.name for t in only.data] == ["STALL"]
    assert [pd.Timestamp(x) for x in only.layout.xaxis.range] == [pd.Timestamp(DAY + "03:10:40"),
                                                                  pd.Timestamp(DAY + "03:11:00")]
    escaped = figure_burrow_partitions(RUNS.assign(topic="<b>x</b>"))
    assert all("<b>" not in y for t in escaped.data for y in t.y)
    assert all("<b>" not in h for t in escaped.data for h in t.hovertext)
    assert figure_burrow_partitions(RUNS, groups="nope").layout.annotations[0].text == \
        "no partition evaluated for this selection"


def test_view_follows_controls_and_the_shared_window():
    window = TimeWindow()
    view = ConsumerLagView(frames(), window=window, top=5)
    assert view.status.value == "3 group-partition line(s) shown"
    view.group_filter.value = ("audit",)
    assert [t.name for t in view.series_figure.data] == ["audit orders-0"]
    assert [list(t.y) for t in view.histogram.data] == [[2]]
    assert [list(t.y) for t in view.burrow_figure.data] == [["audit"]]
    assert [list(t.y) for t in view.partition_figure.data] == [["audit · orders-0"]]
    view.metric.value = "time"
    assert view.histogram.layout.title.text.startswith("ConsumerFetchLagTimeInMs")
    window.set(DAY + "03:10:00", DAY + "03:11:00")
    assert [pd.Timestamp(x) for x in view.series_figure.layout.xaxis.range] == [pd.Timestamp(DAY + "03:10:00"),
                                                                                pd.Timestamp(DAY + "03:11:00")]
    assert "consumer_lag" in view_factories()


def sliced() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The histogram and the CDF's points as the area counts them: per time slice (03:10-03:11, 03:11-03:12)."""
    first, second = (pd.Timestamp(DAY + "03:10:00"), pd.Timestamp(DAY + "03:11:00")), \
        (pd.Timestamp(DAY + "03:11:00"), pd.Timestamp(DAY + "03:12:00"))
    hist = pd.concat([HIST.assign(slice_start=first[0], slice_end=first[1]),
                      HIST.iloc[[1]].assign(slice_start=second[0], slice_end=second[1], count=7)], ignore_index=True)
    points = pd.DataFrame([(1, 0.0, 5, *first), (1, 1024.0, 5, *first), (1, 1024.0, 10, *second)],
                          columns=["broker", "bytes", "count", "slice_start", "slice_end"])
    return hist, points


def test_histograms_and_the_page_cache_curve_follow_the_window_when_counted_per_slice():
    hist, points = sliced()
    window = TimeWindow()
    view = ConsumerLagView({**frames(), "histogram_bytes": hist, "cdf_points": points}, window=window)
    assert [list(t.y) for t in view.histogram.data] == [[5, 12, 0], [0, 0, 4]]
    assert list(view.cache_figure.data[0].y) == [0.25, 1.0] and len(view.cache_figure.data) == 2  # and the marks
    window.set(DAY + "03:11:10", DAY + "03:11:50")   # the second slice only
    assert [list(t.y) for t in view.histogram.data] == [[7]]
    assert [list(t.y) for t in view.cache_figure.data] == [[1.0]]   # no whole-bundle quantile marks
    assert view.cache_figure.layout.title.text.endswith("(in the window)")
    assert [json.loads(f.to_json()) for f in view.report_figures()[:1]] == [json.loads(
        figure_lag_histogram(hist, metric="bytes", start=DAY + "03:11:10", end=DAY + "03:11:50").to_json())]


def test_view_refuses_missing_frames():
    with pytest.raises(ConfigError, match="series"):
        ConsumerLagView({k: v for k, v in frames().items() if k != "series"})


def test_human_bytes():
    assert [human_bytes(v) for v in (0, 1023, 1024, 1536, 2 ** 30 * 2.1)] == ["0 B", "1023 B", "1 KiB", "1.5 KiB",
                                                                            "2.1 GiB"]


def test_view_of_a_bundle_without_commits_says_so():
    view = ConsumerLagView(empty_frames())
    assert view.status.value == "0 group-partition line(s) shown"
    texts = [fig.layout.annotations[0].text for fig in (view.histogram, view.cache_figure, view.series_figure,
                                                        view.burrow_figure, view.partition_figure)]
    assert texts == ["no commits for this selection", "no commits with a known byte lag",
                     "no commits for this selection", "no group evaluated for this selection",
                     "no partition evaluated for this selection"]


def test_the_report_figures_are_the_six_the_report_drew_for_its_groups_and_window():
    """What the notebook's report drew before ``show``: both histograms, the page-cache curve, the
    byte lag and Burrow's group and partition statuses over time, for ``lag_groups`` and the
    notebook's window, whatever the controls."""
    start, end = DAY + "03:10:30", DAY + "03:12:30"
    window = TimeWindow()
    window.set(start, end)
    view = ConsumerLagView(frames(), window=window, groups="billing, nope")
    assert view.group_filter.value == ("billing",)
    view.metric.value, view.top.value = "time", 1
    drawn = [figure_lag_histogram(HIST, metric="bytes", groups="billing, nope"),
             figure_lag_histogram(HIST.assign(metric="time"), metric="time", groups="billing, nope"),
             figure_page_cache(CDF, CACHE),
             figure_lag_over_time(series_frame(), metric="bytes", groups="billing, nope", start=start, end=end),
             figure_burrow_status(BURROW, groups="billing, nope", start=start, end=end),
             figure_burrow_partitions(RUNS, groups="billing, nope", start=start, end=end)]
    assert [json.loads(f.to_json()) for f in view.report_figures()] == [json.loads(f.to_json()) for f in drawn]
    every = [figure_lag_histogram(HIST, metric="bytes"), figure_lag_histogram(HIST, metric="time"),
             figure_page_cache(CDF, CACHE), figure_lag_over_time(series_frame(), metric="bytes"),
             figure_burrow_status(BURROW), figure_burrow_partitions(RUNS)]
    assert [json.loads(f.to_json()) for f in ConsumerLagView(frames()).report_figures()] == [
        json.loads(f.to_json()) for f in every]
