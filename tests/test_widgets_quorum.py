"""The quorum views: the offset divergence figure and its interactive view, driven headlessly on
inline frames; the raft-latency and batch-size figures, drawn from the real quorum scenario's analysis."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from widgets.linking import TimeWindow, view_factories
from widgets.quorum import (
    QuorumDivergence,
    figure_apply_lag,
    figure_batch_sizes,
    figure_quorum_divergence,
    figure_raft_latencies,
)
from workbench.errors import ConfigError

DAY = "2026-11-21 "

# node_id, role, time, source, kind, offset, leader_offset, offset_lag, time_lag_ms, note
OFFSETS = [
    (1, "controller", "03:12:00", "jmxtool", "applied", 100, 100, 0, 0, None),
    (1, "controller", "03:12:01", "jmxtool", "applied", 100, 102, 2, 1000, None),
    (1, "controller", "03:12:02", "jmxtool", "applied", 104, 104, 0, 0, None),
    (2, "controller", "03:12:01", "describe_replication", "fetched", 101, 102, 1, 500, None),
    (5, "broker", "03:12:00", "jmxtool", "applied", 100, 100, 0, 0, None),
    (5, "broker", "03:12:02", "jmxtool", "applied", 110, 104, -6, 0, "ahead of the log"),
    (5, "broker", "03:12:02", "snapshot", "snapshot", 90, 104, 14, 3000, None),
]


def offsets_frame(rows=OFFSETS) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["node_id", "role", "time", "source", "kind", "offset", "leader_offset",
                                        "offset_lag", "time_lag_ms", "note"])
    frame["time"] = pd.to_datetime(DAY + frame["time"])
    return frame


STALLS = pd.DataFrame({"start": pd.to_datetime([DAY + "03:12:00.5"]), "end": pd.to_datetime([DAY + "03:12:01.5"]),
                       "seconds": [1.0]})
TIMELINE = pd.DataFrame({"epoch": [4, 5], "leader": [2, 3],
                         "start": pd.to_datetime([DAY + "03:11:00.0", DAY + "03:12:01.5"]),
                         "end": pd.to_datetime([DAY + "03:12:01.5", None], format="ISO8601")})
FENCES = pd.DataFrame({"broker_id": [5, 5], "event": ["fenced", "unfenced"],
                       "time": pd.to_datetime([DAY + "03:12:00.7", DAY + "03:12:01.9"])})


def test_lines_are_the_observations_per_node_and_source_without_notes_or_snapshots() -> None:
    fig = figure_quorum_divergence(offsets_frame())
    names = [t.name for t in fig.data]
    assert names == ["node 1 · jmxtool", "node 2 · describe_replication", "node 5 · jmxtool"] * 2
    assert list(fig.data[0].y) == [0, 2, 0] and list(fig.data[3].y) == [0.0, 1000.0, 0.0]
    # broker 5's sample ahead of the log and its snapshot row are not drawn
    assert list(fig.data[2].y) == [0]
    assert fig.data[0].customdata[1][6] == 2 and fig.data[0].customdata[1][5] == 102


def test_stalls_epochs_and_fences_are_drawn() -> None:
    fig = figure_quorum_divergence(offsets_frame(), STALLS, TIMELINE, FENCES)
    texts = [a.text for a in fig.layout.annotations]
    assert "stall 1.0 s" in texts and "epoch 5: leader 3" in texts and "epoch 4: leader 2" in texts
    marks = {t.name: list(t.text) for t in fig.data if t.mode == "markers"}
    assert marks == {"fenced": ["broker 5 fenced"], "unfenced": ["broker 5 unfenced"]}


def test_ids_a_reader_refused_are_drawn_as_unknown() -> None:
    """A bad broker id, epoch, leader or offset becomes null in its table (with a problem row): the
    figure still draws, naming it ``?`` (``n/a`` for an offset); a position of no node is left out."""
    fences = FENCES.astype({"broker_id": "float"})
    fences.loc[0, "broker_id"] = float("nan")
    timeline = TIMELINE.astype({"epoch": "float", "leader": "float"})
    timeline.loc[1, ["epoch", "leader"]] = float("nan")
    rows = [*OFFSETS[:1], (1, "controller", "03:12:01", "jmxtool", "applied", None, 102, 2, 1000, None),
            *OFFSETS[2:], (None, "controller", "03:12:01", "jmxtool", "applied", 100, 100, 0, 0, None)]
    fig = figure_quorum_divergence(offsets_frame(rows), STALLS, timeline, fences)
    marks = {t.name: list(t.text) for t in fig.data if t.mode == "markers"}
    assert marks == {"fenced": ["broker ? fenced"], "unfenced": ["broker 5 unfenced"]}
    assert "epoch ?: leader ?" in [a.text for a in fig.layout.annotations]
    assert [t.name for t in fig.data if t.mode == "lines+markers"][:3] == [
        "node 1 · jmxtool", "node 2 · describe_replication", "node 5 · jmxtool"]
    assert fig.data[0].customdata[1][4] == "n/a"


def test_node_source_and_time_filters() -> None:
    fig = figure_quorum_divergence(offsets_frame(), nodes="1", start=DAY + "03:12:01", end=DAY + "03:12:02")
    assert [t.name for t in fig.data] == ["node 1 · jmxtool"] * 2
    assert list(fig.data[0].y) == [2, 0]
    assert list(fig.layout.xaxis.range) == [DAY + "03:12:01.000", DAY + "03:12:02.000"]
    # between observations: each line keeps the row before and the row after, so it crosses the window
    fig = figure_quorum_divergence(offsets_frame(), nodes="1", start=DAY + "03:12:00.5", end=DAY + "03:12:01.5")
    assert list(fig.data[0].y) == [0, 2, 0] and list(fig.layout.xaxis.range) == [DAY + "03:12:00.500",
                                                                                  DAY + "03:12:01.500"]
    fig = figure_quorum_divergence(offsets_frame(), sources=["describe_replication"])
    assert [t.name for t in fig.data] == ["node 2 · describe_replication"] * 2
    empty = figure_quorum_divergence(offsets_frame(), nodes=[9])
    assert not empty.data and "No node position" in empty.layout.annotations[0].text


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ConfigError, match="start .* is after end"):
        figure_quorum_divergence(offsets_frame(), start=DAY + "03:13:00", end=DAY + "03:12:00")
    with pytest.raises(ConfigError, match="offset_lag"):
        figure_quorum_divergence(offsets_frame().drop(columns=["offset_lag"]))


def test_the_view_filters_and_follows_a_shared_window() -> None:
    window = TimeWindow()
    view = QuorumDivergence(offsets_frame(), STALLS, TIMELINE, FENCES, window=window)
    assert view.node_filter.options == ("1", "2", "5")
    assert "3 node/source series" in view.status.value
    view.node_filter.value = ("2",)
    assert [t.name for t in view.figure.data if t.mode == "lines+markers"] == ["node 2 · describe_replication"] * 2
    window.set(DAY + "03:12:01", DAY + "03:12:01")
    lo, hi = view.window()
    assert lo == pd.Timestamp(DAY + "03:12:01") and hi == pd.Timestamp(DAY + "03:12:01")


def test_the_view_shows_exactly_a_shared_window_between_observations_and_starts_on_a_moved_one() -> None:
    """The overview opens an area's view after a click moved the window: the view starts at that
    window, and shows exactly each range the window takes even where no observation falls, until
    its own slider is moved by hand."""
    window = TimeWindow()
    window.set(DAY + "03:12:00.250", DAY + "03:12:00.750")  # between two observations
    view = QuorumDivergence(offsets_frame(), STALLS, TIMELINE, FENCES, window=window)
    wanted = [DAY + "03:12:00.250", DAY + "03:12:00.750"]
    assert view.window() == tuple(pd.Timestamp(w) for w in wanted)
    assert list(view.figure.layout.xaxis.range) == wanted
    assert view.time_range.value == view.window()  # the handles sit on the window, not around it
    assert view.status.value.endswith(f"shown, {wanted[0]} to {wanted[1]} UTC")
    window.set(DAY + "03:12:00.500", DAY + "03:12:01.500")
    assert list(view.figure.layout.xaxis.range) == [DAY + "03:12:00.500", DAY + "03:12:01.500"]
    labels = [label for label, _ in view.time_range.options]
    assert (labels[view.time_range.index[0]], labels[view.time_range.index[1]]) == ("03:12:00.500", "03:12:01.500")
    window.set(DAY + "03:00:00", DAY + "03:00:30")  # before every observation: the handles still name it
    assert view.time_range.value == (pd.Timestamp(DAY + "03:00:00"), pd.Timestamp(DAY + "03:00:30"))
    assert [pd.Timestamp(t) for t in view.figure.layout.xaxis.range] == list(view.window())
    window.set(None, None)  # an open window gives back the plain stops over everything
    assert [value for _, value in view.time_range.options] == view._stamps
    assert view.time_range.index == (0, len(view._stamps) - 1)
    view.time_range.index = (1, len(view.time_range.options) - 1)  # by hand
    lo, hi = view.time_range.value
    assert view.window() == (pd.Timestamp(lo), pd.Timestamp(hi))


def test_a_view_of_one_observation_opens_on_a_window_before_it() -> None:
    """The demo's quorum view: one ``describe --replication`` capture, after the clicked stall: the
    slider grows from one stop to three (the window's bounds first) and its handles sit on the window."""
    window = TimeWindow()
    window.set(DAY + "03:11:50", DAY + "03:11:55")
    view = QuorumDivergence(offsets_frame(OFFSETS[3:4]), STALLS, TIMELINE, FENCES, window=window)
    assert [value for _, value in view.time_range.options] == [
        pd.Timestamp(DAY + "03:11:50"), pd.Timestamp(DAY + "03:11:55"), pd.Timestamp(DAY + "03:12:01")]
    assert view.time_range.value == view.window() == (pd.Timestamp(DAY + "03:11:50"), pd.Timestamp(DAY + "03:11:55"))


def test_the_view_is_registered_for_the_quorum_area() -> None:
    factory = view_factories()["quorum"]
    view = factory({"offsets": offsets_frame(), "stalls": STALLS, "timeline": TIMELINE, "fences": FENCES}, None)
    assert isinstance(view, QuorumDivergence)


def test_bands_outside_a_new_window_leave_the_page() -> None:
    """A new layout reaches the page as a relayout of its own keys: the epoch and stall bands of the
    window before must be removed explicitly when the new window has none."""
    window = TimeWindow()
    view = QuorumDivergence(offsets_frame(), STALLS, TIMELINE, FENCES, window=window)
    assert view.figure.layout.shapes  # epoch and stall bands
    sent, send = [], view.figure._send_relayout_msg
    view.figure._send_relayout_msg = lambda edits, view_id=None: (sent.append(edits), send(edits, view_id))
    window.set(DAY + "03:00:00", DAY + "03:00:30")  # before every band
    assert not view.figure.layout.shapes and {"shapes": []} in sent


# ---------------------------------------------------------------------------------------------
# raft latencies and batch sizes, from the real quorum scenario (Kafka's own gauges and log)

#: The latency columns drawn, the panel (y axis) each is drawn in and its trace label.
LATENCY_TRACES = {"commit max": ("commit_latency_max_ms", "y"), "commit avg": ("commit_latency_avg_ms", "y"),
                  "election max": ("election_latency_max_ms", "y2"),
                  "election avg": ("election_latency_avg_ms", "y2")}
LATENCY_KEYS = ["node_id", "source", "time"]


@pytest.fixture(scope="module")
def quorum_frames(spark, kafka_bundle):
    """The latencies, batch sizes and apply lag of the real quorum scenario's analysis, as the notebook
    takes them."""
    import workbench
    from workbench.analysis import quorum

    tables = workbench.load(workbench.open_bundle(Path(kafka_bundle("quorum"))), spark)
    result = quorum.analyse(tables)
    return result.latencies.toPandas(), result.batch_sizes.toPandas(), result.apply_lag.toPandas()


def latencies_drawn(fig) -> pd.DataFrame:
    """The figure's latency traces back as a frame: one row per node, source and time, a column per
    drawn statistic (NaN where the trace has a gap or the statistic has no trace)."""
    parts = []
    for trace in fig.data:
        node, source, label = trace.name.split(" · ")
        column, axis = LATENCY_TRACES[label]
        assert trace.yaxis == axis, trace.name
        assert [c[:2] for c in trace.customdata] == [[int(node.removeprefix("node ")), source]] * len(trace.x)
        assert {c[3] for c in trace.customdata} == {label}
        parts.append(pd.DataFrame({"node_id": int(node.removeprefix("node ")), "source": source,
                                   "time": pd.to_datetime(list(trace.x)),
                                   "column": column, "value": [float("nan") if v is None else v for v in trace.y]}))
    drawn = pd.concat(parts).pivot(index=LATENCY_KEYS, columns="column", values="value").reset_index()
    drawn.columns.name = None
    return drawn


@pytest.mark.spark
def test_latency_traces_are_exactly_kafkas_gauges_per_node_and_source(quorum_frames) -> None:
    """Every sample of every node and source with a latency is drawn at its time with Kafka's value; a
    NaN Kafka reported (a follower's commit latency) is a gap in the line; a node and source that never
    reported a value of a statistic has no trace of it."""
    latencies, *_ = quorum_frames
    columns = [column for column, _ in LATENCY_TRACES.values()]
    assert not latencies.empty and latencies["commit_latency_max_ms"].isna().any()
    fig = figure_raft_latencies(latencies)
    drawn = latencies_drawn(fig)
    reported = latencies.groupby(["node_id", "source"])[columns].transform(lambda c: c.notna().any())
    expected = latencies[reported.any(axis=1)][LATENCY_KEYS + columns].copy()
    for column in columns:  # a statistic a node and source never reported is not drawn at all
        expected.loc[~reported.loc[expected.index, column], column] = float("nan")
    expected = expected[LATENCY_KEYS + sorted(drawn.columns.difference(LATENCY_KEYS))]
    assert set(drawn.columns) == set(LATENCY_KEYS + columns)
    pd.testing.assert_frame_equal(
        drawn.sort_values(LATENCY_KEYS).reset_index(drop=True),
        expected.astype({"node_id": "int64"}).sort_values(LATENCY_KEYS).reset_index(drop=True),
        check_dtype=False)
    names = [t.name for t in fig.data]
    assert len(names) == len(set(names))
    assert any(None in t.y and set(t.y) != {None} for t in fig.data)  # a series with values and Kafka's NaNs
    assert [p.text for p in fig.layout.annotations] == ["commit latency (ms)", "election latency (ms)"]


@pytest.mark.spark
def test_latency_window_keeps_the_samples_around_it(quorum_frames) -> None:
    latencies, *_ = quorum_frames
    times = latencies["time"].sort_values().reset_index(drop=True)
    lo, hi = times.iloc[len(times) // 3], times.iloc[len(times) // 2]
    fig = figure_raft_latencies(latencies, start=lo, end=hi)
    assert [pd.Timestamp(t) for t in fig.layout.xaxis.range] == [lo, hi]
    for trace in fig.data:
        node, source, _ = trace.name.split(" · ")
        series = latencies[(latencies["node_id"] == int(node.removeprefix("node "))) & (latencies["source"] == source)]
        before, after = series[series["time"] <= lo]["time"].max(), series[series["time"] >= hi]["time"].min()
        keep = pd.Series(True, index=series.index)
        if pd.notna(before):
            keep &= series["time"] >= before
        if pd.notna(after):
            keep &= series["time"] <= after
        inside = series[keep]
        assert list(pd.to_datetime(list(trace.x))) == list(inside["time"]), trace.name


def batches_drawn(fig) -> pd.DataFrame:
    """The batch-size traces back as a frame: one row per window and source, records average and maximum."""
    panels = {"y": "records_avg", "y2": "records_max"}
    parts = []
    for trace in fig.data:
        source, node = ("log", float("nan")) if trace.name == "log" else (
            trace.name.split(" · ")[1], float(trace.name.split(" · ")[0].removeprefix("node ")))
        parts.append(pd.DataFrame({"window_start": pd.to_datetime(list(trace.x)), "source": source, "node_id": node,
                                   "column": panels[trace.yaxis],
                                   "value": [float("nan") if v is None else v for v in trace.y]}))
    keys = ["window_start", "source", "node_id"]
    # the log's rows have no node: -1 while pivoting (a NaN key would make pivot_table cross every key)
    drawn = (pd.concat(parts).fillna({"node_id": -1.0}).pivot(index=keys, columns="column", values="value")
             .reset_index().replace({"node_id": {-1.0: float("nan")}}))
    drawn.columns.name = None
    return drawn


@pytest.mark.spark
def test_batch_size_traces_are_the_frames_windows_one_per_source(quorum_frames) -> None:
    _, sizes, _ = quorum_frames
    assert not sizes.empty
    fig = figure_batch_sizes(sizes)
    sources = sizes[["source", "node_id"]].drop_duplicates()
    assert [t.yaxis for t in fig.data] == ["y"] * len(sources) + ["y2"] * len(sources)
    assert [t.name for t in fig.data if t.showlegend] == [t.name for t in fig.data if t.yaxis == "y"]
    keys = ["window_start", "source", "node_id"]
    pd.testing.assert_frame_equal(
        batches_drawn(fig).sort_values(keys, na_position="first").reset_index(drop=True),
        sizes[keys + ["records_avg", "records_max"]].astype({"node_id": "float64"})
        .sort_values(keys, na_position="first").reset_index(drop=True), check_dtype=False)
    first = fig.data[0].customdata[0]   # the log's line comes first: its earliest window
    row = sizes[sizes.source == "log"].sort_values("window_start").iloc[0]
    assert first[3] == str(int(row["batches"]))


def test_the_logs_leaderless_time_is_drawn_beside_the_election_latency() -> None:
    """Each epoch's leaderless time from the timeline is a marker on the election panel at the
    epoch's start; the first epoch (no previous one) has none, and a window keeps those inside it."""
    lat = pd.DataFrame({"node_id": [1, 1], "source": "jmxtool",
                        "time": pd.to_datetime([DAY + "03:12:00", DAY + "03:12:05"]),
                        "commit_latency_avg_ms": [4.0, 5.0], "commit_latency_max_ms": [9.0, 9.0],
                        "election_latency_avg_ms": [float("nan"), 60.0],
                        "election_latency_max_ms": [float("nan"), 80.0]})
    timeline = pd.DataFrame({"epoch": [1, 2, 3], "leader": [1, 2, 1],
                             "start": pd.to_datetime([DAY + "03:10:00", DAY + "03:12:03", DAY + "03:14:00"]),
                             "leaderless_ms": [None, 2100.0, 300.0]})
    fig = figure_raft_latencies(lat, timeline=timeline)
    (log,) = [t for t in fig.data if t.name == "log · leaderless time"]
    assert (log.yaxis, list(log.x), list(log.y)) == ("y2", [DAY + "03:12:03.000", DAY + "03:14:00.000"],
                                                      [2100.0, 300.0])
    assert [list(c) for c in log.customdata] == [[2, 2], [3, 1]]
    inside = figure_raft_latencies(lat, timeline=timeline, start=DAY + "03:11:00", end=DAY + "03:13:00")
    assert [list(t.y) for t in inside.data if t.name == "log · leaderless time"] == [[2100.0]]
    # no raft-metrics at all: the log's leaderless times are still drawn
    alone = figure_raft_latencies(lat.iloc[0:0], timeline=timeline)
    assert [t.name for t in alone.data] == ["log · leaderless time"]


def test_batch_sizes_put_the_log_first_and_each_broker_beside_it() -> None:
    """A broker's report is named by node and format and drawn after the log's line; a window
    without a batch has no average (a gap)."""
    starts = pd.to_datetime([DAY + "03:12:00", DAY + "03:12:10"])
    sizes = pd.DataFrame({"window_start": list(starts) * 2, "window_end": list(starts + pd.Timedelta(seconds=10)) * 2,
                          "source": ["prometheus_text"] * 2 + ["log"] * 2, "node_id": [4, 4, None, None],
                          "batches": [5, 0, 5, 2], "records_avg": [2.0, None, 2.0, 1.5],
                          "records_max": [9.0, 9.0, 3.0, 2.0]})
    fig = figure_batch_sizes(sizes)
    assert [t.name for t in fig.data] == ["log", "node 4 · prometheus_text"] * 2
    assert [list(t.y) for t in fig.data] == [[2.0, 1.5], [2.0, None], [3.0, 2.0], [9.0, 9.0]]
    assert list(fig.data[1].customdata[1]) == ["node 4 · prometheus_text", DAY + "03:12:10", DAY + "03:12:20", "0",
                                               "n/a", "9"]
    fig = figure_batch_sizes(sizes, start=DAY + "03:12:12", end=DAY + "03:12:15")
    assert [list(t.x) for t in fig.data] == [[DAY + "03:12:10.000"]] * 4


@pytest.mark.spark
def test_empty_latencies_and_batch_sizes_say_so(quorum_frames) -> None:
    latencies, sizes, lag = quorum_frames
    fig = figure_raft_latencies(latencies.iloc[0:0])
    assert not fig.data and "exported no raft-metrics" in fig.layout.annotations[0].text
    unreported = latencies.assign(**{column: float("nan") for column, _ in LATENCY_TRACES.values()})
    fig = figure_raft_latencies(unreported)
    assert not fig.data and "reported no commit or election latency" in fig.layout.annotations[0].text
    fig = figure_batch_sizes(sizes.iloc[0:0])
    assert not fig.data and "No metadata batch" in fig.layout.annotations[0].text
    with pytest.raises(ConfigError, match="commit_latency_max_ms"):
        figure_raft_latencies(latencies.drop(columns=["commit_latency_max_ms"]))
    fig = figure_apply_lag(lag.iloc[0:0])
    assert not fig.data and "no LastAppliedRecordLagMs" in fig.layout.annotations[0].text


@pytest.mark.spark
def test_apply_lag_draws_the_computed_and_kafkas_lag_of_every_sample(quorum_frames) -> None:
    """Per node and source, a line of the lag computed from the log and markers of Kafka's gauge, at
    every sample of the frame: read back from the figure, the frame's three columns."""
    *_, lag = quorum_frames
    fig = figure_apply_lag(lag)
    parts = []
    for line, marks in zip(fig.data[::2], fig.data[1::2], strict=True):
        name = line.name.removesuffix(" · from the log")
        assert marks.name == f"{name} · Kafka's" and list(marks.x) == list(line.x)
        node, source = name.split(" · ")
        parts.append(pd.DataFrame({"node_id": int(node.removeprefix("node ")), "source": source,
                                   "time": pd.to_datetime(list(line.x)), "lag_ms": list(line.y),
                                   "reported_lag_ms": list(marks.y)}))
    drawn = pd.concat(parts, ignore_index=True)
    want = lag[["node_id", "source", "time", "lag_ms", "reported_lag_ms"]].sort_values(["node_id", "source", "time"])
    pd.testing.assert_frame_equal(drawn, want.reset_index(drop=True), check_dtype=False)
    assert len(drawn) > 100 and drawn.source.nunique() == 2
    hover = [c for line in fig.data[::2] for c in line.customdata]
    assert [(c[4], c[5]) for c in hover] == [(str(int(a)), str(int(b))) for a, b in zip(
        want.lag_ms, want.reported_lag_ms, strict=True)]
    middle = lag.time.sort_values().iloc[len(lag) // 2]
    windowed = figure_apply_lag(lag, start=str(middle), end=str(middle + pd.Timedelta(seconds=5)))
    assert sum(len(t.x) for t in windowed.data) < sum(len(t.x) for t in fig.data)


def test_the_report_figure_is_the_divergence_over_the_shared_window_whatever_the_controls() -> None:
    """What the notebook's report drew before ``show``: the divergence figure of the whole frames over
    the notebook's ``start``/``end`` (the window the investigation set from them)."""
    start, end = DAY + "03:12:00.5", DAY + "03:12:01.5"
    window = TimeWindow()
    window.set(start, end)
    view = QuorumDivergence(offsets_frame(), STALLS, TIMELINE, FENCES, window=window)
    view.node_filter.value = ("2",)
    drawn = figure_quorum_divergence(offsets_frame(), STALLS, TIMELINE, FENCES, start=start, end=end)
    assert [json.loads(f.to_json()) for f in view.report_figures()] == [json.loads(drawn.to_json())]
    whole = figure_quorum_divergence(offsets_frame(), STALLS, TIMELINE, FENCES, start="", end="")
    assert [json.loads(f.to_json()) for f in QuorumDivergence(offsets_frame(), STALLS, TIMELINE, FENCES,
                                                               window=TimeWindow()).report_figures()] == [
        json.loads(whole.to_json())]
