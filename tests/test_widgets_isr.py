"""ISR figures and the interactive ISR view, driven headlessly on small inline frames."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from widgets._figure import FigureWidget
from widgets.findings import findings_html
from widgets.isr import (
    IsrTimeline,
    figure_isr_timeline,
    figure_under_min_isr,
)
from workbench.errors import ConfigError

DAY = "2026-11-21 "

# topic, partition, state, start, end, leader, isr, replicas, elr, min_isr
INTERVALS = [
    ("payments", 0, "healthy", "03:00:00", "03:12:05", 1, [1, 2, 3], [1, 2, 3], None, 2),
    ("payments", 0, "under_min_isr", "03:12:05", "03:12:47", 1, [1], [1, 2, 3], [2], 2),
    ("payments", 0, "healthy", "03:12:47", "03:20:00", 1, [1, 2, 3], [1, 2, 3], None, 2),
    ("payments", 1, "healthy", "03:00:00", "03:20:00", 2, [2, 3, 1], [2, 3, 1], None, 2),
    ("orders", 0, "under_replicated", "03:00:00", "03:05:00", 3, [3, 1], [3, 1, 2], None, 1),
    ("orders", 0, "offline", "03:05:00", "03:06:00", -1, [], [3, 1, 2], None, 1),
    ("orders", 0, "healthy", "03:06:00", "03:20:00", 3, [3, 1, 2], [3, 1, 2], None, 1),
]

# broker, time, count
COUNTS = [
    (1, "03:12:05", 1),
    (1, "03:12:47", 0),
    (3, "03:00:00", 0),
    (3, "03:19:00", 0),
]


def states_frame(rows=INTERVALS) -> pd.DataFrame:
    frame = pd.DataFrame(
        rows,
        columns=[
            "topic",
            "partition",
            "state",
            "start",
            "end",
            "leader",
            "isr",
            "replicas",
            "elr",
            "min_isr",
        ],
    )
    frame["start"] = pd.to_datetime(DAY + frame["start"])
    frame["end"] = pd.to_datetime(DAY + frame["end"])
    frame["topic_id"] = "id-" + frame["topic"]
    frame["start_offset"] = np.arange(len(frame), dtype="int64")
    frame["under_min_isr"] = frame["state"] == "under_min_isr"
    return frame


def counts_frame(rows=COUNTS) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["broker", "time", "count"])
    frame["time"] = pd.to_datetime(DAY + frame["time"])
    return frame


def t(clock: str) -> str:
    """The date string the figures use for a time of day on the test day."""
    return f"{DAY}{clock}.000"


def bars(fig: go.Figure) -> dict[str, list[tuple[str, str, float]]]:
    """Every bar of a timeline figure, per trace name: (row, start, duration ms)."""
    return {trace.name: list(zip(trace.y, trace.base, trace.x, strict=True)) for trace in fig.data}


def trace_data(fig: go.Figure) -> list[dict]:
    """Whole trace data of a figure, without the per-trace random uid."""
    data = json.loads(fig.to_json())["data"]
    for trace in data:
        trace.pop("uid", None)
    return data


# ----------------------------------------------------------------------------- timeline figure


def test_timeline_bars_are_exactly_the_intervals() -> None:
    fig = figure_isr_timeline(states_frame())

    assert bars(fig) == {
        "offline": [("orders-0", t("03:05:00"), 60_000.0)],
        "under min ISR": [("payments-0", t("03:12:05"), 42_000.0)],
        "under-replicated": [("orders-0", t("03:00:00"), 300_000.0)],
        "healthy": [
            ("orders-0", t("03:06:00"), 840_000.0),
            ("payments-0", t("03:00:00"), 725_000.0),
            ("payments-0", t("03:12:47"), 433_000.0),
            ("payments-1", t("03:00:00"), 1_200_000.0),
        ],
    }
    assert [trace.orientation for trace in fig.data] == ["h"] * 4
    assert [trace.marker.color for trace in fig.data] == ["#222222", "#d62728", "#e3c000", "#8fd18f"]
    assert list(fig.layout.yaxis.categoryarray) == ["orders-0", "payments-0", "payments-1"]
    assert fig.layout.xaxis.type == "date"
    assert fig.layout.xaxis.range is None


def test_a_final_state_beginning_at_the_last_record_is_drawn_as_a_marker() -> None:
    # every broker stopped within one millisecond at the log's end: the last change of each partition
    # opens a final state of zero length, which a bar cannot show
    rows = [
        ("orders", 0, "healthy", "03:00:00", "03:20:00", 3, [3, 1], [3, 1], None, 1),
        ("orders", 0, "offline", "03:20:00", "03:20:00", -1, [1], [3, 1], None, 1),
        ("orders", 1, "healthy", "03:00:00", "03:20:00", 1, [1, 3], [1, 3], None, 1),
        ("orders", 1, "under_replicated", "03:20:00", "03:20:00", 1, [1], [1, 3], None, 1),
    ]
    fig = figure_isr_timeline(states_frame(rows))

    markers = [(tr.name, list(tr.y), list(tr.x), [c[2] for c in tr.customdata]) for tr in fig.data
               if tr.type == "scatter"]
    assert markers == [
        ("offline (brief)", ["orders-0"], [t("03:20:00")], ["offline"]),
        ("under-replicated (brief)", ["orders-1"], [t("03:20:00")], ["under-replicated"]),
    ]
    by_name = {tr.name: tr for tr in fig.data}
    assert by_name["offline (brief)"].marker.color == by_name["offline"].marker.color
    assert by_name["offline (brief)"].legendgroup == "offline" and not by_name["offline (brief)"].showlegend
    # the bars stay exactly the intervals, the zero-length ones included
    assert bars(go.Figure([tr for tr in fig.data if tr.type == "bar"]))["offline"] == [
        ("orders-0", t("03:20:00"), 0.0)]


def test_a_state_too_brief_to_see_in_the_window_gets_a_marker_and_a_long_one_none() -> None:
    rows = [
        ("orders", 0, "healthy", "03:00:00", "03:10:00", 3, [3, 1], [3, 1], None, 1),
        ("orders", 0, "offline", "03:10:00", "03:10:01", -1, [], [3, 1], None, 1),
        ("orders", 0, "healthy", "03:10:01", "05:00:00", 3, [3, 1], [3, 1], None, 1),
    ]
    whole = figure_isr_timeline(states_frame(rows))  # one second of two hours: under a pixel
    assert [(tr.name, list(tr.x)) for tr in whole.data if tr.type == "scatter"] == [
        ("offline (brief)", [t("03:10:00")])]

    zoomed = figure_isr_timeline(states_frame(rows), start=DAY + "03:09:50", end=DAY + "03:10:10")
    assert [tr.name for tr in zoomed.data] == ["offline", "healthy"]


def test_timeline_hover_shows_leader_isr_replicas_elr_and_min_isr() -> None:
    fig = figure_isr_timeline(states_frame())
    by_name = {trace.name: trace for trace in fig.data}

    assert [list(row) for row in by_name["under min ISR"].customdata] == [
        [
            "payments",
            0,
            "under min ISR",
            "2026-11-21 03:12:05",
            "2026-11-21 03:12:47",
            42.0,
            "1",
            "[1]",
            "[1, 2, 3]",
            "[2]",
            "2",
        ],
    ]
    assert [list(row) for row in by_name["offline"].customdata] == [
        [
            "orders",
            0,
            "offline",
            "2026-11-21 03:05:00",
            "2026-11-21 03:06:00",
            60.0,
            "none",
            "[]",
            "[3, 1, 2]",
            "n/a",
            "1",
        ],
    ]
    template = by_name["offline"].hovertemplate
    for field in (
        "leader: %{customdata[6]}",
        "ISR: %{customdata[7]}",
        "replicas: %{customdata[8]}",
        "ELR: %{customdata[9]}",
        "min ISR: %{customdata[10]}",
    ):
        assert field in template


def test_timeline_accepts_spark_style_numpy_arrays_and_time_zones() -> None:
    naive = states_frame()
    aware = naive.copy()
    aware["start"] = aware["start"].dt.tz_localize("UTC").dt.tz_convert("Europe/Berlin")
    aware["end"] = aware["end"].dt.tz_localize("UTC").dt.tz_convert("Europe/Berlin")
    for column in ("isr", "replicas"):
        aware[column] = [np.array(v, dtype="int32") for v in aware[column]]

    assert trace_data(figure_isr_timeline(aware)) == trace_data(figure_isr_timeline(naive))


def test_timeline_topic_and_state_filters() -> None:
    frame = states_frame()

    fig = figure_isr_timeline(frame, topics=["orders"])
    assert bars(fig) == {
        "offline": [("orders-0", t("03:05:00"), 60_000.0)],
        "under-replicated": [("orders-0", t("03:00:00"), 300_000.0)],
        "healthy": [("orders-0", t("03:06:00"), 840_000.0)],
    }
    assert list(fig.layout.yaxis.categoryarray) == ["orders-0"]

    # a comma-separated string, as the notebook parameter passes it
    fig = figure_isr_timeline(frame, topics="payments, orders", states="under_min_isr,offline")
    assert bars(fig) == {
        "offline": [("orders-0", t("03:05:00"), 60_000.0)],
        "under min ISR": [("payments-0", t("03:12:05"), 42_000.0)],
    }
    assert list(fig.layout.yaxis.categoryarray) == ["orders-0", "payments-0"]

    # a topic named "7", as a command line that parses numbers passes it
    numbered = states_frame().assign(topic=lambda f: f["topic"].where(f["topic"] != "orders", "7"))
    assert list(figure_isr_timeline(numbered, topics=7).layout.yaxis.categoryarray) == ["7-0"]


def test_timeline_time_window_drops_outside_intervals_and_sets_the_axis() -> None:
    fig = figure_isr_timeline(states_frame(), start="2026-11-21T03:10:00Z", end="2026-11-21 03:13:00")

    assert bars(fig) == {
        "under min ISR": [("payments-0", t("03:12:05"), 42_000.0)],
        "healthy": [
            ("orders-0", t("03:06:00"), 840_000.0),
            ("payments-0", t("03:00:00"), 725_000.0),
            ("payments-0", t("03:12:47"), 433_000.0),
            ("payments-1", t("03:00:00"), 1_200_000.0),
        ],
    }
    assert list(fig.layout.xaxis.range) == [t("03:10:00"), t("03:13:00")]


def test_timeline_escapes_topic_names_from_logs() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    rows = [(hostile, 0, "under_min_isr", "03:00:00", "03:00:10", 1, [1], [1, 2], None, 2)]
    fig = figure_isr_timeline(states_frame(rows))

    label = "&lt;img src=x onerror=alert(1)&gt;"
    assert list(fig.data[0].y) == [f"{label}-0"]
    assert fig.data[0].customdata[0][0] == label
    assert "<img" not in fig.to_json()


def test_timeline_without_matching_intervals_says_so() -> None:
    fig = figure_isr_timeline(states_frame(), topics=["nope"])
    assert fig.data == ()
    assert [a.text for a in fig.layout.annotations] == ["No partition state interval matches the filters."]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"states": ["broken"]}, "unknown state"),
        ({"start": "2026-01-01T03:20", "end": "2026-01-01T03:10"}, "is after end"),
        ({"start": "03:20"}, "start: expected a date and time"),   # a time of day alone names no moment
        ({"start": "yesterday-ish"}, "start: expected a date and time"),
    ],
)
def test_timeline_rejects_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        figure_isr_timeline(states_frame(), **kwargs)


def test_timeline_names_missing_columns() -> None:
    with pytest.raises(ConfigError, match="missing column.*isr, replicas"):
        figure_isr_timeline(states_frame().drop(columns=["isr", "replicas"]))


# ----------------------------------------------------------------------------- counts figure


def test_counts_are_step_lines_per_broker_extended_to_the_end() -> None:
    fig = figure_under_min_isr(counts_frame())

    assert [(tr.name, tr.line.shape, list(tr.x), list(tr.y)) for tr in fig.data] == [
        ("broker 1", "hv", [t("03:12:05"), t("03:12:47"), t("03:19:00")], [1, 0, 0]),
        ("broker 3", "hv", [t("03:00:00"), t("03:19:00")], [0, 0]),
    ]
    assert fig.layout.xaxis.range is None
    # whole ticks for small counts (plotly's half steps under "d" labels read 0, 1, 1, 2, 2)
    assert (fig.layout.yaxis.tick0, fig.layout.yaxis.dtick, fig.layout.yaxis.tickformat) == (0, 1, "d")
    many = figure_under_min_isr(counts_frame([(1, "03:00:00", 0), (1, "03:01:00", 240)]))
    assert many.layout.yaxis.dtick is None  # plotly's own whole steps (0, 50, 100...)


def test_counts_window_carries_the_value_in_force_at_start() -> None:
    fig = figure_under_min_isr(counts_frame(), start="2026-11-21 03:12:30", end="2026-11-21 03:15:00")

    assert [(tr.name, list(tr.x), list(tr.y)) for tr in fig.data] == [
        ("broker 1", [t("03:12:30"), t("03:12:47"), t("03:15:00")], [1, 0, 0]),
        ("broker 3", [t("03:12:30"), t("03:15:00")], [0, 0]),
    ]
    assert list(fig.layout.xaxis.range) == [t("03:12:30"), t("03:15:00")]


def test_counts_empty_and_missing_columns() -> None:
    empty = figure_under_min_isr(counts_frame([]))
    assert empty.data == ()
    assert [a.text for a in empty.layout.annotations] == ["No UnderMinIsrPartitionCount change recorded."]
    with pytest.raises(ConfigError, match="missing column.*count"):
        figure_under_min_isr(counts_frame().drop(columns=["count"]))


# ----------------------------------------------------------------------------- interactive view


def test_view_starts_with_everything_shown() -> None:
    view = IsrTimeline(states_frame(), counts_frame())

    assert view.topic_filter.options == (("orders", "orders"), ("payments", "payments"))  # (label, topic)
    assert view.topic_filter.value == ()
    assert view.state_filter.value == ()
    assert view.time_range.value == (pd.Timestamp(DAY + "03:00:00"), pd.Timestamp(DAY + "03:20:00"))
    # every interval boundary and count change is a slider step; one day: time-of-day labels
    assert [label for label, _ in view.time_range.options] == [
        "03:00:00",
        "03:05:00",
        "03:06:00",
        "03:12:05",
        "03:12:47",
        "03:19:00",
        "03:20:00",
    ]
    # the views' figure widgets (tests/test_widgets_figure.py), opened with the view's box
    assert isinstance(view.timeline, FigureWidget) and isinstance(view.counts_figure, FigureWidget)
    assert view.timeline.comm is not None and view.timeline._widget_data == view.timeline._data
    full = figure_isr_timeline(states_frame(), start=DAY + "03:00:00", end=DAY + "03:20:00")
    assert trace_data(view.timeline) == trace_data(full)
    assert view.status.value == f"7 interval(s) on 3 partition(s) shown, {DAY}03:00:00 to {DAY}03:20:00 UTC"


def test_view_topic_filter_redraws_only_that_topic() -> None:
    view = IsrTimeline(states_frame(), counts_frame())
    timeline = view.timeline

    view.topic_filter.value = ("orders",)

    assert view.timeline is timeline  # updated in place, not replaced
    assert bars(view.timeline) == {
        "offline": [("orders-0", t("03:05:00"), 60_000.0)],
        "under-replicated": [("orders-0", t("03:00:00"), 300_000.0)],
        "healthy": [("orders-0", t("03:06:00"), 840_000.0)],
    }
    assert list(view.timeline.layout.yaxis.categoryarray) == ["orders-0"]

    view.topic_filter.value = ()
    assert set(view.timeline.layout.yaxis.categoryarray) == {"orders-0", "payments-0", "payments-1"}


def test_view_state_filter() -> None:
    view = IsrTimeline(states_frame(), counts_frame())

    view.state_filter.value = ("under_min_isr", "offline")

    assert bars(view.timeline) == {
        "offline": [("orders-0", t("03:05:00"), 60_000.0)],
        "under min ISR": [("payments-0", t("03:12:05"), 42_000.0)],
    }
    assert view.status.value == f"2 interval(s) on 2 partition(s) shown, {DAY}03:00:00 to {DAY}03:20:00 UTC"


def test_view_time_range_narrows_both_x_axes() -> None:
    view = IsrTimeline(states_frame(), counts_frame())
    lo, hi = pd.Timestamp(DAY + "03:12:05"), pd.Timestamp(DAY + "03:12:47")

    view.time_range.value = (lo, hi)

    assert list(view.timeline.layout.xaxis.range) == [t("03:12:05"), t("03:12:47")]
    assert list(view.counts_figure.layout.xaxis.range) == [t("03:12:05"), t("03:12:47")]
    assert bars(view.timeline)["under min ISR"] == [("payments-0", t("03:12:05"), 42_000.0)]
    assert "offline" not in bars(view.timeline)
    assert [(tr.name, list(tr.x), list(tr.y)) for tr in view.counts_figure.data] == [
        ("broker 1", [t("03:12:05"), t("03:12:47")], [1, 0]),
        ("broker 3", [t("03:12:05"), t("03:12:47")], [0, 0]),
    ]


def test_view_draws_the_brokers_reported_samples_beside_the_counts_and_narrows_them_with_the_window() -> None:
    reported = counts_frame([(1, "03:12:00", 0), (1, "03:12:30", 1), (1, "03:19:00", 0)])
    view = IsrTimeline(states_frame(), counts_frame(), reported=reported)
    marks = [tr for tr in view.counts_figure.data if tr.name == "broker 1 (reported)"]
    assert [(list(m.x), list(m.y), m.mode) for m in marks] == [
        ([t("03:12:00"), t("03:12:30"), t("03:19:00")], [0, 1, 0], "markers")]

    view.time_range.value = (pd.Timestamp(DAY + "03:12:05"), pd.Timestamp(DAY + "03:12:47"))
    marks = [tr for tr in view.counts_figure.data if tr.name == "broker 1 (reported)"]
    assert [(list(m.x), list(m.y)) for m in marks] == [([t("03:12:30")], [1])]


def test_view_figures_match_the_controls() -> None:
    view = IsrTimeline(states_frame(), counts_frame())
    view.topic_filter.value = ("payments",)
    view.state_filter.value = ("under_min_isr",)

    timeline, counts = view.figures()

    assert trace_data(timeline) == trace_data(view.timeline)
    assert trace_data(counts) == trace_data(view.counts_figure)
    assert not isinstance(timeline, go.FigureWidget)


def test_view_on_empty_frames_is_disabled_not_broken() -> None:
    view = IsrTimeline(states_frame([]), counts_frame([]))
    assert view.time_range.disabled
    assert view.timeline.data == ()
    assert view.status.value == "0 interval(s) on 0 partition(s) shown, all times"


# ----------------------------------------------------------------------------- findings


def test_findings_list_escapes_every_summary_and_counts_the_rest() -> None:
    frame = pd.DataFrame({
        "severity": ["critical", "warning"],
        "summary": ["topic <script>x</script> partition 0 was offline for 1.0 s", 'a "quoted" & <b>bold</b>'],
    })
    assert findings_html(frame) == (
        '<ul class="wb-findings"><li class="wb-critical">topic &lt;script&gt;x&lt;/script&gt; partition 0 '
        'was offline for 1.0 s</li><li class="wb-warning">a &quot;quoted&quot; &amp; &lt;b&gt;bold&lt;/b&gt;</li></ul>'
    )
    assert findings_html(frame, limit=1).endswith("<li>... and 1 more finding(s).</li></ul>")
    assert findings_html(frame.iloc[:0], empty="Nothing.") == '<p class="wb-findings">Nothing.</p>'
    # the first two of 181,254 findings, cut in Spark: the rest are counted from the total
    assert findings_html(frame, total=181_254).endswith("<li>... and 181252 more finding(s).</li></ul>")


def test_view_initial_topics_and_window_from_notebook_parameters() -> None:
    view = IsrTimeline(
        states_frame(), counts_frame(), topics="payments, nope", start="2026-11-21 03:12:30", end="2026-11-21 03:12:40"
    )

    assert view.topic_filter.value == ("payments",)
    # widened to the interval boundaries around the requested window
    assert view.time_range.value == (pd.Timestamp(DAY + "03:12:05"), pd.Timestamp(DAY + "03:12:47"))
    assert bars(view.timeline) == {
        "under min ISR": [("payments-0", t("03:12:05"), 42_000.0)],
        "healthy": [("payments-1", t("03:00:00"), 1_200_000.0)],
    }


def test_view_opened_on_a_moved_shared_window_shows_exactly_it_until_the_slider_moves() -> None:
    """The overview opens the view after a click moved the window: both figures show exactly that
    range, the slider's handles sit on it (its bounds join the interval boundaries) and the status
    line names it; they follow the window after, until the slider is moved by hand."""
    from widgets.linking import TimeWindow

    window = TimeWindow()
    window.set(DAY + "03:12:30", DAY + "03:12:40")
    view = IsrTimeline(states_frame(), counts_frame(), window=window)
    assert view.time_range.value == (pd.Timestamp(DAY + "03:12:30"), pd.Timestamp(DAY + "03:12:40"))
    labels = [label for label, _ in view.time_range.options]
    assert (labels[view.time_range.index[0]], labels[view.time_range.index[1]]) == ("03:12:30", "03:12:40")
    assert view.window() == (pd.Timestamp(DAY + "03:12:30"), pd.Timestamp(DAY + "03:12:40"))
    assert view.status.value.endswith(f"shown, {DAY}03:12:30 to {DAY}03:12:40 UTC")
    for fig in (view.timeline, view.counts_figure):
        assert list(fig.layout.xaxis.range) == [t("03:12:30"), t("03:12:40")]
    window.set(DAY + "03:05:10", DAY + "03:05:20")
    assert list(view.timeline.layout.xaxis.range) == [t("03:05:10"), t("03:05:20")]
    assert view.time_range.value == (pd.Timestamp(DAY + "03:05:10"), pd.Timestamp(DAY + "03:05:20"))
    view.time_range.value = (pd.Timestamp(DAY + "03:00:00"), pd.Timestamp(DAY + "03:12:05"))  # by hand
    assert view.window() == (pd.Timestamp(DAY + "03:00:00"), pd.Timestamp(DAY + "03:12:05"))


def test_timeline_keeps_the_least_healthy_partitions_when_there_are_many() -> None:
    fig = figure_isr_timeline(states_frame(), max_rows=2)

    # orders-0 was offline, payments-0 under min ISR; payments-1 stayed healthy and is left out
    assert list(fig.layout.yaxis.categoryarray) == ["orders-0", "payments-0"]
    assert fig.layout.title.text == "Partition ISR state over time (the 2 least healthy of 3 partitions)"
    assert bars(fig)["under min ISR"] == [("payments-0", t("03:12:05"), 42_000.0)]

    # within a window before the incidents only orders-0 was unhealthy; then the first by name
    early = figure_isr_timeline(states_frame(), max_rows=2, end="2026-11-21 03:04:00")
    assert list(early.layout.yaxis.categoryarray) == ["orders-0", "payments-0"]
    assert bars(early)["under-replicated"] == [("orders-0", t("03:00:00"), 300_000.0)]

    assert figure_isr_timeline(states_frame(), max_rows=3).layout.title.text == "Partition ISR state over time"
    with pytest.raises(ConfigError, match="max_rows"):
        figure_isr_timeline(states_frame(), max_rows=0)


def test_under_min_isr_figure_shows_reported_samples_in_the_broker_colour():
    computed = pd.DataFrame({"broker": [4, 4, 5], "count": [0, 2, 0],
                             "time": pd.to_datetime(["2026-01-01 03:00:00", "2026-01-01 03:00:10",
                                                     "2026-01-01 03:00:00"], utc=True)})
    reported = pd.DataFrame({"broker": [4, 4, 4], "count": [0, 0, 2],
                             "time": pd.to_datetime(["2026-01-01 02:59:59", "2026-01-01 03:00:05",
                                                     "2026-01-01 03:00:11"], utc=True)})
    fig = figure_under_min_isr(computed, reported=reported, start="2026-01-01 03:00:00")
    names = [t.name for t in fig.data]
    assert names == ["broker 4", "broker 5", "broker 4 (reported)"]
    marks = fig.data[2]
    assert list(marks.y) == [0, 2] and marks.mode == "markers"
    assert marks.marker.color == fig.data[0].line.color != fig.data[1].line.color


def test_the_report_figure_is_the_timeline_of_the_notebooks_topics_window_and_total() -> None:
    """What the notebook's report drew before ``show``: the timeline only (UnderMinIsrPartitionCount
    has its own section), with the notebook's topics, window and partition total, whatever the controls."""
    from widgets.linking import TimeWindow

    start, end = DAY + "03:04:00", DAY + "03:13:00"
    window = TimeWindow()
    window.set(start, end)
    view = IsrTimeline(states_frame(), counts_frame(), topics="payments, nope", start=start, end=end, window=window,
                       partitions_total=40)
    view.state_filter.value = ("healthy",)
    drawn = figure_isr_timeline(states_frame(), topics="payments, nope", start=start, end=end, partitions_total=40)
    assert [json.loads(f.to_json()) for f in view.report_figures()] == [json.loads(drawn.to_json())]
    assert "of 40 partitions" in drawn.layout.title.text
