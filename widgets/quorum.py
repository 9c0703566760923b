"""Quorum views (KIP-835): per-node offset and time lag, stalls, epochs, fencing; raft latencies, batch sizes.

Inputs are the small pandas frames of :mod:`workbench.analysis.quorum` (``toPandas`` of its
outputs), never raw records:

* ``offsets`` — :func:`workbench.analysis.quorum.node_offsets`: one row per observation of a
  node's position (``node_id, role, time, source, kind, offset, leader_offset, offset_lag,
  time_lag_ms`` ...);
* ``stalls`` — :func:`workbench.analysis.quorum.stalls`: one row per commit stall;
* ``timeline`` — :func:`workbench.analysis.quorum.leader_timeline`: one row per leader epoch;
* ``fences`` — :func:`workbench.analysis.quorum.fence_events`: one row per fence/unfence event;
* ``latencies`` — :func:`workbench.analysis.quorum.raft_latencies`: one row per node, export file
  and sample of Kafka's ``raft-metrics`` (:func:`figure_raft_latencies`);
* ``batch_sizes`` — :func:`workbench.analysis.quorum.batch_sizes`: one row per window and source
  of records per metadata batch (:func:`figure_batch_sizes`).

The pure :func:`figure_quorum_divergence` serves the static report and the interactive
:class:`QuorumDivergence`; the latency and batch-size figures are static in both. Strings from the
data go through :func:`plotly_text`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as ipw
import pandas as pd
import plotly.colors
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from widgets._figure import FigureWidget, empty_figure, redraw
from widgets._frames import (
    TimeLike,
    format_time,
    id_text,
    labelled,
    plotly_text,
    require_columns,
    selection,
    short_time,
    time_window,
    utc_naive,
)
from widgets.linking import FollowsWindow, TimeWindow, register_view, report_window, slider_options, window_text

__all__ = ["QuorumDivergence", "figure_batch_sizes", "figure_quorum_divergence", "figure_raft_latencies"]

OFFSET_COLUMNS: tuple[str, ...] = ("node_id", "time", "source", "kind", "offset", "leader_offset", "offset_lag",
                                   "time_lag_ms")
#: Kinds of position drawn (the commit point and snapshots are in the table, not the lines).
LINE_KINDS: tuple[str, ...] = ("applied", "fetched", "log_end")
_EPOCH_SHADES = ("rgba(31,119,180,0.06)", "rgba(44,160,44,0.06)")
_HOVER = ("<b>node %{customdata[0]}</b> (%{customdata[1]}, %{customdata[2]})<br>%{customdata[3]}<br>"
          "offset %{customdata[4]} · leader at %{customdata[5]}<br>"
          "offset lag %{customdata[6]} · time lag %{customdata[7]} ms<extra></extra>")


def _prepare(offsets: pd.DataFrame) -> pd.DataFrame:
    require_columns(offsets, OFFSET_COLUMNS, "quorum offsets frame")
    frame = offsets.copy()
    frame["time"] = utc_naive(frame["time"])
    if "note" in frame.columns:
        frame = frame[frame["note"].isna()]
    frame = frame[frame["kind"].isin(LINE_KINDS) & frame["offset_lag"].notna() & frame["node_id"].notna()]
    return frame.sort_values(["node_id", "source", "time"], kind="stable")


def _around(frame: pd.DataFrame, lo: pd.Timestamp | None, hi: pd.Timestamp | None) -> pd.DataFrame:
    """The rows inside ``[lo, hi]`` and, per node and source, the last at or before ``lo`` and the
    first at or after ``hi``: a step line then crosses the whole window with the value in force (a
    window between two observations still shows each node's position)."""
    if lo is None and hi is None:
        return frame
    time = frame["time"]
    keep = pd.Series(True, index=frame.index)
    if lo is not None:
        keep &= time >= lo
    if hi is not None:
        keep &= time <= hi
    ordered = frame.sort_values("time")
    if lo is not None:
        keep[ordered[ordered["time"] <= lo].groupby(["node_id", "source"], sort=False).tail(1).index] = True
    if hi is not None:
        keep[ordered[ordered["time"] >= hi].groupby(["node_id", "source"], sort=False).head(1).index] = True
    return frame[keep]


def figure_quorum_divergence(
    offsets: pd.DataFrame,
    stalls: pd.DataFrame | None = None,
    timeline: pd.DataFrame | None = None,
    fences: pd.DataFrame | None = None,
    *,
    nodes: Iterable[Any] | str | None = None,
    sources: Iterable[str] | str | None = None,
    start: TimeLike = None,
    end: TimeLike = None,
) -> go.Figure:
    """Per-node offset lag (top) and time lag (bottom) on a shared time axis.

    Parameters
    ----------
    offsets : pandas.DataFrame
        ``node_offsets(...).toPandas()``; rows with a ``note`` (samples ahead of the log, fetched
        snapshot copies) and kinds other than :data:`LINE_KINDS` are not drawn.
    stalls, timeline, fences : pandas.DataFrame, optional
        Commit stalls (red bands), leader epochs (alternating shading, labelled with the
        leader), fence/unfence events (marks on the lag axis, ``broker_id, time, event``).
    nodes, sources : iterable or str, optional
        Only these node ids / sources (a string is a comma-separated list). ``None``: all.
    start, end : str, datetime or Timestamp, optional
        Time window (UTC when naive): sets the x range and drops the rows outside it but the one
        before and the one after it of each node and source (their step lines cross the window).

    Returns
    -------
    plotly.graph_objects.Figure
        One line trace per (node, source) in each panel, named ``node <id> · <source>``; the
        offset-lag traces come first, then the time-lag traces, then one marker trace per fence
        event kind. Stalls and epochs are layout shapes.

    Examples
    --------
    >>> offs = pd.DataFrame({"node_id": [1, 1], "role": "controller", "source": "jmxtool", "kind": "applied",
    ...     "time": pd.to_datetime(["2026-01-01 03:00:00", "2026-01-01 03:00:01"]), "offset": [10, 10],
    ...     "leader_offset": [10, 12], "offset_lag": [0, 2], "time_lag_ms": [0, 1000]})
    >>> fig = figure_quorum_divergence(offs)
    >>> fig.data[0].name, list(fig.data[0].y), list(fig.data[1].y)
    ('node 1 · jmxtool', [0, 2], [0.0, 1000.0])
    """
    frame = _prepare(offsets)
    lo, hi = time_window(start, end)
    node_sel, source_sel = selection(nodes), selection(sources)
    if node_sel is not None:
        frame = frame[frame["node_id"].astype(str).isin(node_sel)]
    if source_sel is not None:
        frame = frame[frame["source"].astype(str).isin(source_sel)]
    frame = _around(frame, lo, hi)
    title = "Quorum offset divergence: each node's lag behind the leader's log"
    if frame.empty:
        return empty_figure(title, "No node position matches the filters.")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("offset lag (records)", "time lag (ms)"))
    palette = plotly.colors.qualitative.Plotly
    node_ids = sorted({int(n) for n in frame["node_id"]})
    color = {n: palette[i % len(palette)] for i, n in enumerate(node_ids)}
    dashes = {"jmxtool": "solid", "prometheus_text": "dot", "prometheus_json": "dot",
              "describe_replication": "dash", "replica_log": "longdash"}
    groups = list(frame.groupby(["node_id", "source"], sort=True))
    for row, column in ((1, "offset_lag"), (2, "time_lag_ms")):
        for (node, source), part in groups:
            role = part["role"].iloc[0] if "role" in part.columns and pd.notna(part["role"].iloc[0]) else "node"
            custom = [[int(node), plotly_text(str(role)), plotly_text(str(source)), short_time(r.time),
                       "n/a" if pd.isna(r.offset) else int(r.offset),
                       "n/a" if pd.isna(r.leader_offset) else int(r.leader_offset),
                       int(r.offset_lag), "n/a" if pd.isna(r.time_lag_ms) else int(r.time_lag_ms)]
                      for r in part.itertuples(index=False)]
            fig.add_trace(go.Scatter(
                name=f"node {int(node)} · {plotly_text(str(source))}", x=[format_time(t) for t in part["time"]],
                y=[None if pd.isna(v) else float(v) if column == "time_lag_ms" else int(v) for v in part[column]],
                mode="lines+markers", line={"color": color[int(node)], "dash": dashes.get(str(source), "solid"),
                                            "shape": "hv"},
                marker={"size": 4}, customdata=custom, hovertemplate=_HOVER,
                legendgroup=f"{node}-{source}", showlegend=row == 1), row=row, col=1)
    if fences is not None and not fences.empty:
        marks = fences.copy()
        marks["time"] = utc_naive(marks["time"])
        if node_sel is not None:
            marks = marks[marks["broker_id"].astype(str).isin(node_sel)]
        if lo is not None:
            marks = marks[marks["time"] >= lo]
        if hi is not None:
            marks = marks[marks["time"] <= hi]
        for event, symbol in (("fenced", "x"), ("unfenced", "circle-open")):
            part = marks[marks["event"] == event]
            if part.empty:
                continue
            fig.add_trace(go.Scatter(
                name=event, x=[format_time(t) for t in part["time"]], y=[0] * len(part), mode="markers",
                marker={"symbol": symbol, "size": 11, "color": "#444"},
                text=[f"broker {id_text(b)} {event}" for b in part["broker_id"]],
                hovertemplate="%{text}<br>%{x}<extra></extra>"), row=1, col=1)
    left = lo if lo is not None else frame["time"].min()
    right = hi if hi is not None else frame["time"].max()
    if timeline is not None and not timeline.empty:
        epochs = timeline.dropna(subset=["start"]).sort_values("epoch")
        for i, r in enumerate(epochs.itertuples(index=False)):
            s = pd.Timestamp(utc_naive(pd.Series([r.start])).iloc[0])
            e = right if pd.isna(r.end) else pd.Timestamp(utc_naive(pd.Series([r.end])).iloc[0])
            if e < left or s > right:
                continue
            fig.add_vrect(x0=format_time(max(s, left)), x1=format_time(min(e, right)), line_width=0,
                          fillcolor=_EPOCH_SHADES[i % 2], layer="below",
                          annotation_text=f"epoch {id_text(r.epoch)}: leader {id_text(r.leader)}",
                          annotation_position="top left", annotation_font_size=10)
    if stalls is not None and not stalls.empty:
        for r in stalls.itertuples(index=False):
            s = pd.Timestamp(utc_naive(pd.Series([r.start])).iloc[0])
            e = pd.Timestamp(utc_naive(pd.Series([r.end])).iloc[0])
            if e < left or s > right:
                continue
            fig.add_vrect(x0=format_time(s), x1=format_time(e), line_width=0, fillcolor="rgba(214,39,40,0.25)",
                          layer="below", annotation_text=f"stall {float(r.seconds):.1f} s",
                          annotation_position="bottom left", annotation_font_size=10)
    fig.update_layout(title=title, height=560, margin={"l": 10, "r": 10, "t": 70, "b": 40},
                      legend={"title": {"text": "node · source"}}, hovermode="closest")
    fig.update_xaxes(type="date")
    fig.update_xaxes(title_text="time (UTC)", row=2, col=1)
    fig.update_yaxes(rangemode="tozero")
    if lo is not None or hi is not None:
        fig.update_xaxes(range=[format_time(left), format_time(right)], autorange=False)
    return fig


#: Columns :func:`figure_raft_latencies` reads (``raft_latencies(...).toPandas()``).
LATENCY_COLUMNS: tuple[str, ...] = ("node_id", "source", "time", "commit_latency_avg_ms", "commit_latency_max_ms",
                                    "election_latency_avg_ms", "election_latency_max_ms")
#: Panels of :func:`figure_raft_latencies`: title and the (column, label) pairs drawn in it.
LATENCY_PANELS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("commit latency (ms)", (("commit_latency_max_ms", "commit max"), ("commit_latency_avg_ms", "commit avg"))),
    ("election latency (ms)", (("election_latency_max_ms", "election max"),
                               ("election_latency_avg_ms", "election avg"))),
)
#: Columns :func:`figure_batch_sizes` reads (``batch_sizes(...).toPandas()``).
BATCH_COLUMNS: tuple[str, ...] = ("window_start", "window_end", "source", "node_id", "batches", "records_avg",
                                  "records_max")
_SOURCE_SYMBOLS = {"jmxtool": "circle", "prometheus_text": "diamond", "prometheus_json": "square"}
_LATENCY_HOVER = ("<b>node %{customdata[0]}</b> (%{customdata[1]})<br>%{customdata[2]}<br>"
                  "%{customdata[3]} %{y:.1f} ms<extra></extra>")
_BATCH_HOVER = ("<b>%{customdata[0]}</b><br>%{customdata[1]} to %{customdata[2]}<br>%{customdata[3]} batches<br>"
                "records per batch: avg %{customdata[4]} · max %{customdata[5]}<extra></extra>")


def _number(value: Any, digits: int = 2) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{float(value):.{digits}f}".rstrip("0").rstrip(".")


def _y(values: pd.Series) -> list[float | None]:
    """Plotted values: a NaN (Kafka's own, e.g. a follower's commit latency) is a gap, never a zero."""
    return [None if pd.isna(v) else float(v) for v in values]


def _per_node_samples(samples: pd.DataFrame, start: TimeLike, end: TimeLike) -> tuple[
        pd.DataFrame, pd.Timestamp | None, pd.Timestamp | None, dict[int, str]]:
    """A node's samples in time order, cut to the window (with the sample before and after it),
    the window, and a colour per node."""
    frame = samples[samples["node_id"].notna()].copy()
    frame["time"] = utc_naive(frame["time"])
    frame = frame.sort_values(["node_id", "source", "time"], kind="stable")
    lo, hi = time_window(start, end)
    frame = _around(frame, lo, hi)
    palette = plotly.colors.qualitative.Plotly
    color = {n: palette[i % len(palette)] for i, n in enumerate(sorted({int(n) for n in frame["node_id"]}))}
    return frame, lo, hi, color


def figure_raft_latencies(latencies: pd.DataFrame, *, timeline: pd.DataFrame | None = None, start: TimeLike = None,
                          end: TimeLike = None) -> go.Figure:
    """Kafka's own commit latency (top) and election latency (bottom) per node, as scraped, and the
    log's leaderless time at each new epoch beside the election latency.

    The metadata log holds no latencies: the lines are the ``raft-metrics`` gauges the nodes
    exported. A NaN is drawn as a gap (Kafka reports NaN, e.g. a follower's commit latency); a
    series without any value is left out. With ``timeline``, each epoch's ``leaderless_ms`` (from
    the previous epoch's last append to its start: detection and election, so at least Kafka's
    election latency) is a marker at the epoch's start, named ``log · leaderless time``.

    Parameters
    ----------
    latencies : pandas.DataFrame
        ``raft_latencies(...).toPandas()`` (:data:`LATENCY_COLUMNS`).
    timeline : pandas.DataFrame, optional
        ``leader_timeline(...).toPandas()`` (``epoch, leader, start, leaderless_ms``).
    start, end : str, datetime or Timestamp, optional
        Time window (UTC when naive): sets the x range and keeps, per node and source, the rows
        inside it plus the one before and the one after it.

    Returns
    -------
    plotly.graph_objects.Figure
        Per panel, one line per (node, source) and statistic (max solid, avg dotted; colour per
        node, marker per source), named ``node <id> · <source> · <statistic>``.

    Examples
    --------
    >>> lat = pd.DataFrame({"node_id": [1, 1], "source": "jmxtool",
    ...     "time": pd.to_datetime(["2026-01-01 03:00:00", "2026-01-01 03:00:01"]),
    ...     "commit_latency_avg_ms": [4.0, 5.0], "commit_latency_max_ms": [9.0, float("nan")],
    ...     "election_latency_avg_ms": float("nan"), "election_latency_max_ms": float("nan")})
    >>> fig = figure_raft_latencies(lat)
    >>> [t.name for t in fig.data], list(fig.data[0].y)
    (['node 1 · jmxtool · commit max', 'node 1 · jmxtool · commit avg'], [9.0, None])
    """
    require_columns(latencies, LATENCY_COLUMNS, "raft latencies frame")
    title = "Commit and election latency per node (Kafka's raft-metrics)"
    frame, lo, hi, color = _per_node_samples(latencies, start, end)
    gaps = _leaderless(timeline, lo, hi)
    if frame.empty and gaps.empty:
        return empty_figure(title, "The bundle exported no raft-metrics for this window (commit and election "
                                   "latency are Kafka's own gauges; the metadata log holds none).")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[panel for panel, _ in LATENCY_PANELS])
    groups = list(frame.groupby(["node_id", "source"], sort=True))
    for row, (_, columns) in enumerate(LATENCY_PANELS, start=1):
        for column, label in columns:
            for (node, source), part in groups:
                if part[column].isna().all():
                    continue
                times = [format_time(t) for t in part["time"]]
                custom = [[int(node), plotly_text(str(source)), short_time(t), label] for t in part["time"]]
                fig.add_trace(go.Scatter(
                    name=f"node {int(node)} · {plotly_text(str(source))} · {label}", x=times, y=_y(part[column]),
                    mode="lines+markers", customdata=custom, hovertemplate=_LATENCY_HOVER,
                    line={"color": color[int(node)], "dash": "solid" if label.endswith("max") else "dot"},
                    marker={"size": 5, "symbol": _SOURCE_SYMBOLS.get(str(source), "circle")}), row=row, col=1)
    if not gaps.empty:
        fig.add_trace(go.Scatter(
            name="log · leaderless time", x=[format_time(t) for t in gaps["start"]], y=_y(gaps["leaderless_ms"]),
            mode="markers", marker={"size": 10, "symbol": "x", "color": "#222"},
            customdata=[[int(e), int(ld)] for e, ld in zip(gaps["epoch"], gaps["leader"], strict=True)],
            hovertemplate="<b>epoch %{customdata[0]}</b> (leader %{customdata[1]})<br>%{x}<br>"
                          "no writing leader for %{y:.0f} ms<extra></extra>"), row=2, col=1)
    if not fig.data:
        return empty_figure(title, "Kafka reported no commit or election latency (NaN or absent on every node "
                                   "and sample of the window).")
    fig.update_layout(title=title, height=560, margin={"l": 10, "r": 10, "t": 70, "b": 40},
                      legend={"title": {"text": "node · source · statistic"}}, hovermode="closest")
    fig.update_xaxes(type="date")
    fig.update_xaxes(title_text="time (UTC)", row=2, col=1)
    fig.update_yaxes(rangemode="tozero")
    times = pd.concat([frame["time"], gaps["start"]])
    return _framed(fig, lo, hi, times.min(), times.max())


def _leaderless(timeline: pd.DataFrame | None, lo: pd.Timestamp | None, hi: pd.Timestamp | None) -> pd.DataFrame:
    """The timeline's epochs with a leaderless time whose start is in the window, in epoch order."""
    if timeline is None or timeline.empty:
        return pd.DataFrame({"epoch": [], "leader": [], "start": pd.Series(dtype="datetime64[ns]"),
                             "leaderless_ms": []})
    require_columns(timeline, ("epoch", "leader", "start", "leaderless_ms"), "leader timeline frame")
    gaps = timeline[timeline["leaderless_ms"].notna() & timeline["start"].notna()].copy()
    gaps["start"] = utc_naive(gaps["start"])
    if lo is not None:
        gaps = gaps[gaps["start"] >= lo]
    if hi is not None:
        gaps = gaps[gaps["start"] <= hi]
    return gaps.sort_values("epoch")[["epoch", "leader", "start", "leaderless_ms"]]


#: Columns :func:`figure_apply_lag` reads (``apply_lag(...).toPandas()``).
APPLY_LAG_COLUMNS: tuple[str, ...] = ("node_id", "source", "time", "offset", "lag_ms", "reported_lag_ms",
                                      "difference_ms")
_APPLY_HOVER = ("<b>node %{customdata[0]}</b> · %{customdata[1]}<br>%{customdata[2]}<br>applied offset "
                "%{customdata[3]}<br>from the log %{customdata[4]} ms · Kafka's %{customdata[5]} ms<extra></extra>")


def _ms_text(value: Any) -> str:
    return "n/a" if value is None or pd.isna(value) else str(int(value))


def figure_apply_lag(lag: pd.DataFrame, *, start: TimeLike = None, end: TimeLike = None) -> go.Figure:
    """KIP-835's applied-record lag per node: computed from the metadata log (line) beside Kafka's
    own ``LastAppliedRecordLagMs`` at the same samples (markers).

    Parameters
    ----------
    lag : pandas.DataFrame
        ``apply_lag(...).toPandas()`` (:data:`APPLY_LAG_COLUMNS`).
    start, end : str, datetime or Timestamp, optional
        Time window (UTC when naive), as in :func:`figure_raft_latencies`.

    Returns
    -------
    plotly.graph_objects.Figure
        Per (node, source), a line ``node <id> · <source> · from the log`` and a marker trace
        ``node <id> · <source> · Kafka's``.

    Examples
    --------
    >>> lag = pd.DataFrame({"node_id": [1, 1], "source": "jmxtool", "offset": [7, 8],
    ...     "time": pd.to_datetime(["2026-01-01 03:00:00", "2026-01-01 03:00:01"]),
    ...     "lag_ms": [120, 40], "reported_lag_ms": [118, 39], "difference_ms": [-2, -1]})
    >>> fig = figure_apply_lag(lag)
    >>> [t.name for t in fig.data], list(fig.data[0].y), list(fig.data[1].y)
    (['node 1 · jmxtool · from the log', "node 1 · jmxtool · Kafka's"], [120.0, 40.0], [118.0, 39.0])
    """
    require_columns(lag, APPLY_LAG_COLUMNS, "apply lag frame")
    title = "Metadata apply lag per node: from the log beside Kafka's LastAppliedRecordLagMs"
    frame, lo, hi, color = _per_node_samples(lag, start, end)
    if frame.empty:
        return empty_figure(title, "The bundle exported no LastAppliedRecordLagMs gauge for this window.")
    fig = go.Figure()
    for (node, source), part in frame.groupby(["node_id", "source"], sort=True):
        times = [format_time(t) for t in part["time"]]
        custom = [[int(node), plotly_text(str(source)), short_time(r.time), int(r.offset), _ms_text(r.lag_ms),
                   _ms_text(r.reported_lag_ms)] for r in part.itertuples(index=False)]
        name = f"node {int(node)} · {plotly_text(str(source))}"
        fig.add_trace(go.Scatter(name=f"{name} · from the log", x=times, y=_y(part["lag_ms"]), mode="lines",
                                 line={"color": color[int(node)], "shape": "linear"}, customdata=custom,
                                 hovertemplate=_APPLY_HOVER, legendgroup=name))
        fig.add_trace(go.Scatter(name=f"{name} · Kafka's", x=times, y=_y(part["reported_lag_ms"]), mode="markers",
                                 marker={"color": color[int(node)], "size": 6,
                                         "symbol": _SOURCE_SYMBOLS.get(str(source), "circle") + "-open"},
                                 customdata=custom, hovertemplate=_APPLY_HOVER, legendgroup=name))
    fig.update_layout(title=title, height=420, margin={"l": 10, "r": 10, "t": 70, "b": 40},
                      legend={"title": {"text": "node · source"}}, hovermode="closest")
    fig.update_xaxes(type="date", title_text="time (UTC)")
    fig.update_yaxes(rangemode="tozero", title_text="lag (ms)")
    return _framed(fig, lo, hi, frame["time"].min(), frame["time"].max())


def figure_batch_sizes(batch_sizes: pd.DataFrame, *, start: TimeLike = None, end: TimeLike = None) -> go.Figure:
    """Records per metadata batch per window: the log's own figure beside each broker's report.

    Both panels (average on top, maximum below) share the time axis, so a window where a
    broker's ``MetadataBatchSizes`` histogram and the log disagree stands out. A broker's maximum
    is its histogram's, kept since the broker started, not the window's.

    Parameters
    ----------
    batch_sizes : pandas.DataFrame
        ``batch_sizes(...).toPandas()`` (:data:`BATCH_COLUMNS`): source ``log`` (no node) or an
        export format with the reporting ``node_id``.
    start, end : str, datetime or Timestamp, optional
        Time window (UTC when naive): the windows overlapping it, and the x range.

    Returns
    -------
    plotly.graph_objects.Figure
        Per panel, one line per source (``log``, then ``node <id> · <format>``), a point per window
        at its start.

    Examples
    --------
    >>> sizes = pd.DataFrame({"window_start": pd.to_datetime(["2026-01-01 03:00:00", "2026-01-01 03:00:10"]),
    ...     "window_end": pd.to_datetime(["2026-01-01 03:00:10", "2026-01-01 03:00:20"]), "source": "log",
    ...     "node_id": None, "batches": [20, 3], "records_avg": [1.0, 2.5], "records_max": [1.0, 4.0]})
    >>> fig = figure_batch_sizes(sizes)
    >>> [t.name for t in fig.data], list(fig.data[0].y), list(fig.data[1].y)
    (['log', 'log'], [1.0, 2.5], [1.0, 4.0])
    """
    require_columns(batch_sizes, BATCH_COLUMNS, "batch sizes frame")
    title = "Records per metadata batch: the log's figure and the brokers' reports"
    frame = batch_sizes.copy()
    frame["window_start"] = utc_naive(frame["window_start"])
    frame["window_end"] = utc_naive(frame["window_end"])
    lo, hi = time_window(start, end)
    if lo is not None:
        frame = frame[frame["window_end"] > lo]
    if hi is not None:
        frame = frame[frame["window_start"] <= hi]
    if frame.empty:
        return empty_figure(title, "No metadata batch in the log and no broker's MetadataBatchSizes for this "
                                   "window.")
    frame["_scraped"] = frame["source"].astype(str) != "log"  # the log's line first
    frame = frame.sort_values(["_scraped", "node_id", "source", "window_start"], kind="stable", na_position="first")
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("records per batch, average", "records per batch, maximum"))
    palette = plotly.colors.qualitative.Plotly
    groups = list(frame.groupby(["_scraped", "node_id", "source"], sort=False, dropna=False))
    for row, column in ((1, "records_avg"), (2, "records_max")):
        for i, ((scraped, node, source), part) in enumerate(groups):
            name = f"node {id_text(node)} · {plotly_text(str(source))}" if scraped else "log"
            custom = [[name, short_time(r.window_start), short_time(r.window_end), id_text(r.batches, "n/a"),
                       _number(r.records_avg), _number(r.records_max)] for r in part.itertuples(index=False)]
            fig.add_trace(go.Scatter(
                name=name, x=[format_time(t) for t in part["window_start"]], y=_y(part[column]),
                mode="lines+markers", customdata=custom, hovertemplate=_BATCH_HOVER,
                line={"color": palette[i % len(palette)] if scraped else "#222", "dash": "dot" if scraped else "solid"},
                marker={"size": 6 if scraped else 5}, legendgroup=name, showlegend=row == 1), row=row, col=1)
    fig.update_layout(title=title, height=520, margin={"l": 10, "r": 10, "t": 70, "b": 40},
                      legend={"title": {"text": "source"}}, hovermode="closest")
    fig.update_xaxes(type="date")
    fig.update_xaxes(title_text="window start (UTC)", row=2, col=1)
    fig.update_yaxes(rangemode="tozero")
    return _framed(fig, lo, hi, frame["window_start"].min(), frame["window_end"].max())


def _framed(fig: go.Figure, lo: pd.Timestamp | None, hi: pd.Timestamp | None, first: pd.Timestamp,
            last: pd.Timestamp) -> go.Figure:
    """``fig`` with its time axes set to the window, its open side at the data's ``first``/``last``."""
    if lo is not None or hi is not None:
        fig.update_xaxes(range=[format_time(lo if lo is not None else first), format_time(hi if hi is not None
                                                                                             else last)],
                         autorange=False)
    return fig


class QuorumDivergence(FollowsWindow, ipw.VBox):
    """Interactive quorum offset divergence: node, source and time filters over one figure.

    Parameters
    ----------
    offsets, stalls, timeline, fences : pandas.DataFrame
        See :func:`figure_quorum_divergence` (the last three may be ``None``).
    window : widgets.linking.TimeWindow, optional
        A window shared with other views: when it moves, this view's window follows; the report
        figures cover its range (:meth:`report_figures`).

    Attributes
    ----------
    node_filter, source_filter : ipywidgets.SelectMultiple
        Nothing selected: all.
    time_range : ipywidgets.SelectionRangeSlider
        Over the observation times (naive UTC ``Timestamp``s).
    figure : plotly.graph_objects.FigureWidget

    Examples
    --------
    >>> view = QuorumDivergence(offsets_pdf, stalls_pdf, timeline_pdf, fences_pdf)  # doctest: +SKIP
    >>> view.node_filter.value = ("2",)                                             # doctest: +SKIP
    """

    def __init__(self, offsets: pd.DataFrame, stalls: pd.DataFrame | None = None,
                 timeline: pd.DataFrame | None = None, fences: pd.DataFrame | None = None, *,
                 window: TimeWindow | None = None) -> None:
        self._given = (offsets, stalls, timeline, fences)  # as given: what the report figure is drawn from
        self._shared = window
        self._offsets = _prepare(offsets)
        self._stalls, self._timeline, self._fences = stalls, timeline, fences
        nodes = [str(n) for n in sorted({int(n) for n in self._offsets["node_id"]})]
        sources = sorted({str(s) for s in self._offsets["source"]})
        self.node_filter = ipw.SelectMultiple(options=nodes, value=(), rows=min(8, max(3, len(nodes))),
                                              description="Nodes")
        self.source_filter = ipw.SelectMultiple(options=labelled(sources), value=(), rows=min(6, max(3, len(sources))),
                                                description="Sources")
        stamps = sorted(pd.Timestamp(t) for t in self._offsets["time"].dropna().unique())
        if len(stamps) > 400:
            step = len(stamps) / 400
            stamps = [stamps[int(i * step)] for i in range(400)] + [stamps[-1]]
        self._stamps = stamps
        options = slider_options(stamps) or [("(no data)", pd.Timestamp(0))]
        self.time_range = ipw.SelectionRangeSlider(options=options, index=(0, max(0, len(options) - 1)),
                                                   description="Time (UTC)", continuous_update=False,
                                                   disabled=not stamps, layout=ipw.Layout(width="98%"))
        self.status = ipw.HTML()
        self.figure = FigureWidget()
        self._start_following(window, (self.node_filter, self.source_filter, self.time_range))
        super().__init__(children=[ipw.HBox([self.node_filter, self.source_filter]),
                                   ipw.HTML("<small>Select nothing to show all nodes / sources.</small>"),
                                   self.time_range, self.status, self.figure])

    def figure_now(self) -> go.Figure:
        """A plain (static) figure for the current control values."""
        lo, hi = self.window()
        return figure_quorum_divergence(self._offsets, self._stalls, self._timeline, self._fences,
                                        nodes=self.node_filter.value or None,
                                        sources=self.source_filter.value or None, start=lo, end=hi)

    def report_figures(self) -> list[go.Figure]:
        """The static report's figure: the divergence of every node and source over the shared window."""
        lo, hi = report_window(None, None, self._shared)
        return [figure_quorum_divergence(*self._given, start=lo, end=hi)]

    def _refresh(self) -> None:
        fig = self.figure_now()
        redraw(self.figure, fig)
        lines = [t for t in fig.data if t.mode == "lines+markers"]
        self.status.value = f"{len(lines) // 2} node/source series shown, {window_text(*self.window())}"


def _area_view(frames: Any, window: TimeWindow | None) -> QuorumDivergence:
    return QuorumDivergence(frames["offsets"], frames.get("stalls"), frames.get("timeline"), frames.get("fences"),
                            window=window)


register_view("quorum", _area_view)
