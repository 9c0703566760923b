"""Tiered-storage backlog view (KIP-405, KIP-963): upload and delete backlogs, local versus remote ranges.

Inputs are the small pandas frames of :mod:`workbench.analysis.tier` (collected with ``toPandas``):

* ``series`` — :func:`workbench.analysis.tier.backlog_series`: one row per partition and change
  (``topic, partition, time, broker, upload_segments/_records/_bytes, delete_segments/_records/_bytes,
  log_start, log_end, local_start, remote_start, remote_end, gap_offsets`` ...);
* ``reported`` — :func:`workbench.analysis.tier.reported`: Kafka's own gauge samples
  (``metric, broker, topic, time, value``), drawn as markers beside the computed lines;
* ``brokers`` (optional) — :func:`workbench.analysis.tier.rollup` by broker: each broker's backlog,
  its partitions added up while it led them, beside the broker-wide gauges.

The pure ``figure_*`` functions serve the static report and the interactive :class:`TierBacklog`.
Topic names come from logs and are untrusted: every string taken from the data is escaped with
:func:`~widgets._frames.plotly_text` before it reaches a figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as ipw
import pandas as pd
import plotly.colors
import plotly.graph_objects as go

from widgets._figure import FigureWidget, empty_figure, redraw
from widgets._frames import (
    LABEL_WORD,
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
    visible_text,
)
from widgets.linking import TimeWindow, register_view, report_window
from workbench.errors import ConfigError

__all__ = ["MEASURES", "TierBacklog", "figure_tier_backlog", "figure_tier_brokers", "figure_tier_ranges"]

#: Units a backlog can be drawn in: measure -> (column suffix, axis title).
MEASURES: dict[str, tuple[str, str]] = {
    "segments": ("segments", "segments"),
    "bytes": ("bytes", "bytes"),
    "records": ("records", "records (offsets)"),
}
#: Kafka's gauge drawn beside each computed backlog (records have none).
GAUGES: dict[tuple[str, str], str] = {
    ("upload", "segments"): "RemoteCopyLagSegments", ("upload", "bytes"): "RemoteCopyLagBytes",
    ("delete", "segments"): "RemoteDeleteLagSegments", ("delete", "bytes"): "RemoteDeleteLagBytes",
}
SERIES_COLUMNS: tuple[str, ...] = (
    "topic", "partition", "time", "broker", "upload_segments", "upload_records", "upload_bytes",
    "delete_segments", "delete_records", "delete_bytes",
)
RANGE_COLUMNS: tuple[str, ...] = ("topic", "partition", "time", "log_start", "log_end", "local_start",
                                  "remote_start", "remote_end")
REPORTED_COLUMNS: tuple[str, ...] = ("metric", "broker", "topic", "time", "value")
BROKER_COLUMNS: tuple[str, ...] = ("broker", "time", "upload_segments", "upload_records", "upload_bytes",
                                   "delete_segments", "delete_records", "delete_bytes")


def _filtered(series: pd.DataFrame, topics: Any, brokers: Any) -> pd.DataFrame:
    frame = series.copy()
    frame["time"] = utc_naive(frame["time"])
    topic_sel, broker_sel = selection(topics), selection(brokers)
    if topic_sel is not None:
        frame = frame[frame["topic"].astype(str).isin(topic_sel)]
    if broker_sel is not None:
        frame = frame[frame["broker"].astype("Int64").astype(str).isin(broker_sel)]
    return frame.sort_values(["topic", "partition", "time"], kind="stable")


def _clip(times: list[pd.Timestamp], values: list[float], lo: pd.Timestamp | None,
          hi: pd.Timestamp | None) -> tuple[list[pd.Timestamp], list[float]]:
    """A step series cut to [lo, hi]: the value in force at ``lo`` opens it."""
    if lo is not None:
        before = [i for i, t in enumerate(times) if t <= lo]
        if before:
            times, values = [lo] + times[before[-1] + 1:], values[before[-1]:]
    if hi is not None:
        keep = [i for i, t in enumerate(times) if t <= hi]
        times, values = [times[i] for i in keep], [values[i] for i in keep]
    return times, values


def _add_step(fig: go.Figure, rows: pd.DataFrame, column: str, bounds: tuple[Any, Any, Any], *, name: str,
              colour: str, dash: bool, hover: str) -> None:
    """One step line of ``rows[column]`` over ``rows["time"]``, clipped to ``bounds`` (``lo, hi`` and the
    right edge it is carried to); nothing when no point falls in the window."""
    lo, hi, right = bounds
    times, values = _clip(list(rows["time"]), [float(v) if pd.notna(v) else 0.0 for v in rows[column]], lo, hi)
    if not times:
        return
    if times[-1] < right:
        times, values = [*times, right], [*values, values[-1]]
    fig.add_trace(go.Scatter(name=name, x=[format_time(t) for t in times], y=values, mode="lines",
                             line={"shape": "hv", "width": 2, "color": colour, "dash": "dot" if dash else "solid"},
                             hovertemplate=hover))


def _finish(fig: go.Figure, title: str, height: int, y_title: str, lo: Any, hi: Any, first: Any,
            right: Any) -> go.Figure:
    """The tier figures' common layout; a time window set (``lo``/``hi``) fixes the x range from
    ``lo`` (or the data's ``first`` time) to ``right``."""
    fig.update_layout(title=title, height=height, margin={"l": 10, "r": 10, "t": 60, "b": 40},
                      xaxis={"type": "date", "title": {"text": "time (UTC)"}},
                      yaxis={"title": {"text": y_title}, "rangemode": "tozero"})
    if lo is not None or hi is not None:
        fig.update_xaxes(range=[format_time(lo if lo is not None else first), format_time(right)], autorange=False)
    return fig


def figure_tier_backlog(series: pd.DataFrame, *, measure: str = "segments",
                        lags: Iterable[str] | str = ("upload", "delete"),
                        topics: Iterable[str] | str | None = None, brokers: Iterable[int] | str | None = None,
                        start: TimeLike = None, end: TimeLike = None,
                        reported: pd.DataFrame | None = None) -> go.Figure:
    """Step lines of each partition's upload and delete backlog over time, Kafka's gauges as markers.

    Parameters
    ----------
    series : pandas.DataFrame
        ``workbench.analysis.tier.backlog_series(...).toPandas()`` (:data:`SERIES_COLUMNS`).
    measure : str
        ``segments``, ``bytes`` or ``records``.
    lags : iterable of str or str
        ``upload`` and/or ``delete``.
    topics, brokers : optional
        Only these topics / leader brokers (a string is a comma-separated list); None: all.
    start, end : optional
        Time window (UTC when naive).
    reported : pandas.DataFrame, optional
        ``workbench.analysis.tier.reported(...).toPandas()``: the topic's ``RemoteCopyLag*`` /
        ``RemoteDeleteLag*`` samples, drawn as open circles (per topic; not for ``records``).

    Returns
    -------
    plotly.graph_objects.Figure
        One ``Scatter`` (``line_shape="hv"``) per partition and lag, named ``<lag> <topic>-<partition>``,
        then one marker trace per topic and gauge with samples, named ``<gauge> <topic> (Kafka)``.

    Examples
    --------
    >>> s = pd.DataFrame({"topic": ["t", "t"], "partition": [0, 0], "broker": [2, 2],
    ...     "time": pd.to_datetime(["2026-01-01 03:00:00", "2026-01-01 03:00:30"]),
    ...     "upload_segments": [3, 0], "upload_records": [3000, 0], "upload_bytes": [3e6, 0],
    ...     "delete_segments": [0, 0], "delete_records": [0, 0], "delete_bytes": [0, 0]})
    >>> fig = figure_tier_backlog(s, lags="upload")
    >>> fig.data[0].name, list(fig.data[0].y)
    ('upload t-0', [3.0, 0.0])
    """
    require_columns(series, SERIES_COLUMNS, "tier backlog series")
    if measure not in MEASURES:
        raise ConfigError(f"measure: expected one of {list(MEASURES)}, got {measure!r}")
    lag_sel = selection(lags) or ["upload", "delete"]
    unknown = sorted(set(lag_sel) - {"upload", "delete"})
    if unknown:
        raise ConfigError(f"lags: unknown {unknown}; expected upload and/or delete")
    lo, hi = time_window(start, end)
    frame = _filtered(series, topics, brokers)
    suffix, axis = MEASURES[measure]
    title = f"Tiered-storage backlog per partition ({axis})"
    if frame.empty:
        return empty_figure(title, "No tiered partition matches the filters.")
    right = hi if hi is not None else frame["time"].max()
    palette = plotly.colors.qualitative.Plotly
    fig = go.Figure()
    keys = list(dict.fromkeys(zip(frame["topic"], frame["partition"], strict=True)))
    for k, (topic, partition) in enumerate(keys):
        part = frame[(frame["topic"] == topic) & (frame["partition"] == partition)]
        label = plotly_text(f"{topic}-{id_text(partition)}", LABEL_WORD)
        for lag in lag_sel:
            _add_step(fig, part, f"{lag}_{suffix}", (lo, hi, right), name=f"{lag} {label}",
                      colour=palette[k % len(palette)], dash=lag == "delete",
                      hover=f"{lag} backlog {label}<br>%{{x}}<br>%{{y}} {axis}<extra></extra>")
    if reported is not None and not reported.empty:
        require_columns(reported, REPORTED_COLUMNS, "reported tier gauges")
        samples = reported[reported["topic"].notna()].copy()
        samples["time"] = utc_naive(samples["time"])
        shown_topics = {str(t) for t, _p in keys}
        samples = samples[samples["topic"].astype(str).isin(shown_topics)]
        if lo is not None:
            samples = samples[samples["time"] >= lo]
        if hi is not None:
            samples = samples[samples["time"] <= hi]
        for lag in lag_sel:
            gauge = GAUGES.get((lag, measure))
            if gauge is None:
                continue
            for topic, sub in samples[samples["metric"] == gauge].groupby("topic", sort=True):
                sub = sub.sort_values("time", kind="stable")
                fig.add_trace(go.Scatter(
                    name=f"{gauge} {plotly_text(str(topic))} (Kafka)", x=[format_time(t) for t in sub["time"]],
                    y=[float(v) for v in sub["value"]], mode="markers",
                    marker={"symbol": "circle-open" if lag == "upload" else "square-open", "size": 6},
                    hovertemplate=f"Kafka {gauge} {plotly_text(str(topic))}<br>%{{x}}<br>%{{y}}<extra></extra>"))
    return _finish(fig, title, 360, f"backlog ({axis})", lo, hi, frame["time"].min(), right)


def figure_tier_brokers(brokers: pd.DataFrame, *, measure: str = "segments", start: TimeLike = None,
                        end: TimeLike = None, reported: pd.DataFrame | None = None) -> go.Figure:
    """Each broker's upload and delete backlog (its partitions added up while it led them) as step lines,
    Kafka's broker-wide gauges (the samples without a topic) as markers in the same colour.

    Parameters
    ----------
    brokers : pandas.DataFrame
        ``workbench.analysis.tier.rollup(series, by=["broker"]).toPandas()`` (:data:`BROKER_COLUMNS`).
    measure : str
        ``segments``, ``bytes`` or ``records`` (Kafka has no gauge in records).
    start, end : optional
        Time window (UTC when naive).
    reported : pandas.DataFrame, optional
        ``workbench.analysis.tier.reported(...).toPandas()``.
    """
    require_columns(brokers, BROKER_COLUMNS, "tier broker roll-up")
    if measure not in MEASURES:
        raise ConfigError(f"measure: expected one of {list(MEASURES)}, got {measure!r}")
    suffix, axis = MEASURES[measure]
    title = f"Tiered-storage backlog per broker ({axis})"
    lo, hi = time_window(start, end)
    frame = brokers[brokers["broker"].notna()].copy()
    if frame.empty:
        return empty_figure(title, "No broker led a tiered partition.")
    frame["time"] = utc_naive(frame["time"])
    right = hi if hi is not None else frame["time"].max()
    palette = plotly.colors.qualitative.Plotly
    fig = go.Figure()
    ids = sorted({int(b) for b in frame["broker"]})
    for k, broker in enumerate(ids):
        rows = frame[frame["broker"] == broker].sort_values("time", kind="stable")
        for lag in ("upload", "delete"):
            _add_step(fig, rows, f"{lag}_{suffix}", (lo, hi, right), name=f"{lag} broker {broker}",
                      colour=palette[k % len(palette)], dash=lag == "delete",
                      hover=f"{lag} backlog of broker {broker}<br>%{{x}}<br>%{{y}} {axis}<extra></extra>")
    if reported is not None and not reported.empty:
        require_columns(reported, REPORTED_COLUMNS, "reported tier gauges")
        samples = reported[reported["topic"].isna() & reported["broker"].notna()].copy()
        samples["time"] = utc_naive(samples["time"])
        if lo is not None:
            samples = samples[samples["time"] >= lo]
        if hi is not None:
            samples = samples[samples["time"] <= hi]
        for lag in ("upload", "delete"):
            gauge = GAUGES.get((lag, measure))
            if gauge is None:
                continue
            for broker, sub in samples[samples["metric"] == gauge].groupby("broker", sort=True):
                k = ids.index(int(broker)) if int(broker) in ids else len(ids)
                sub = sub.sort_values("time", kind="stable")
                fig.add_trace(go.Scatter(
                    name=f"{gauge} broker {int(broker)} (Kafka)", x=[format_time(t) for t in sub["time"]],
                    y=[float(v) for v in sub["value"]], mode="markers",
                    marker={"symbol": "circle-open" if lag == "upload" else "square-open", "size": 6,
                            "color": palette[k % len(palette)]},
                    hovertemplate=f"Kafka {gauge} broker {int(broker)}<br>%{{x}}<br>%{{y}}<extra></extra>"))
    return _finish(fig, title, 320, f"backlog ({axis})", lo, hi, frame["time"].min(), right)


def figure_tier_ranges(series: pd.DataFrame, *, topic: str | None = None, partition: int | None = None,
                       start: TimeLike = None, end: TimeLike = None) -> go.Figure:
    """Where one partition's offsets lived over time: remote and local ranges as stacked bands.

    The remote band spans ``[remote_start, remote_end)``, the local band ``[local_start, log_end)``;
    where they overlap the data is in both places. The log start and log end are drawn as lines; an
    offset between them in neither band existed nowhere (a gap).

    Parameters
    ----------
    series : pandas.DataFrame
        ``backlog_series(...).toPandas()`` (:data:`RANGE_COLUMNS`).
    topic, partition : optional
        The partition (default: the first one in the frame).
    start, end : optional
        Time window (UTC when naive).

    Returns
    -------
    plotly.graph_objects.Figure
        Traces ``remote`` and ``local`` (filled bands: a lower edge trace, then the upper edge
        filled ``tonexty``), then ``log start`` and ``log end`` lines.

    Examples
    --------
    >>> s = pd.DataFrame({"topic": ["t", "t"], "partition": [0, 0],
    ...     "time": pd.to_datetime(["2026-01-01 03:00:00", "2026-01-01 03:00:30"]),
    ...     "log_start": [0, 0], "log_end": [100, 200], "local_start": [0, 100],
    ...     "remote_start": [None, 0], "remote_end": [None, 100]})
    >>> [t.name for t in figure_tier_ranges(s).data if t.showlegend is not False]
    ['remote', 'local', 'log start', 'log end']
    """
    require_columns(series, RANGE_COLUMNS, "tier range series")
    lo, hi = time_window(start, end)
    frame = series.copy()
    frame["time"] = utc_naive(frame["time"])
    if frame.empty:
        return empty_figure("Local and remote offset ranges", "No tiered partition in this bundle.")
    if topic is None:
        topic, partition = str(frame["topic"].iloc[0]), int(frame["partition"].iloc[0])
    part = frame[(frame["topic"].astype(str) == str(topic)) & (frame["partition"] == int(partition or 0))]
    label = plotly_text(f"{topic}-{int(partition or 0)}", LABEL_WORD)
    title = f"Local and remote offset ranges of {label}"
    if part.empty:
        return empty_figure(title, "No such tiered partition.")
    part = part.sort_values("time", kind="stable")
    times = list(part["time"])
    fig = go.Figure()

    def band(name: str, lower: list[float], upper: list[float], color: str) -> None:
        t, low = _clip(times, lower, lo, hi)
        _t, up = _clip(times, upper, lo, hi)
        x = [format_time(v) for v in t]
        fig.add_trace(go.Scatter(x=x, y=low, mode="lines", line={"shape": "hv", "width": 0, "color": color},
                                 showlegend=False, hoverinfo="skip", name=f"{name} lower"))
        fig.add_trace(go.Scatter(x=x, y=up, mode="lines", fill="tonexty", name=name,
                                 line={"shape": "hv", "width": 1, "color": color},
                                 hovertemplate=f"{name} {label}<br>%{{x}}<br>up to offset %{{y}}<extra></extra>"))

    def col(name: str) -> list[float | None]:
        return [None if pd.isna(v) else float(v) for v in part[name]]

    band("remote", col("remote_start"), col("remote_end"), "rgba(31,119,180,0.8)")
    band("local", col("local_start"), [None if pd.isna(a) else b for a, b in zip(part["local_start"], col("log_end"),
                                                                                 strict=True)],
         "rgba(44,160,44,0.6)")
    for name, column, dash in (("log start", "log_start", "dash"), ("log end", "log_end", "dot")):
        t, v = _clip(times, col(column), lo, hi)
        fig.add_trace(go.Scatter(name=name, x=[format_time(x) for x in t], y=v, mode="lines",
                                 line={"shape": "hv", "width": 2, "color": "#222222", "dash": dash}))
    return _finish(fig, title, 360, "offset", lo, hi, part["time"].min(), hi if hi is not None else part["time"].max())


class TierBacklog(ipw.VBox):
    """Interactive tier view: topic, broker, measure and time filters over the backlog and range figures.

    Parameters
    ----------
    series : pandas.DataFrame
        ``backlog_series(...).toPandas()``.
    reported : pandas.DataFrame, optional
        ``reported(...).toPandas()`` (Kafka's gauges).
    brokers : pandas.DataFrame, optional
        ``rollup(series, by=["broker"]).toPandas()``: drawn per broker beside the broker-wide gauges.
    start, end : str, datetime or Timestamp, optional
        The time window shown at first, and the report's (when neither is given: the shared
        window's range).
    window : widgets.linking.TimeWindow, optional
        A window shared with other views: when it moves, both figures' x axes follow.

    Attributes
    ----------
    topic_filter, broker_filter : ipywidgets.SelectMultiple
        Nothing selected: all.
    measure : ipywidgets.ToggleButtons
        ``segments``, ``bytes`` or ``records``.
    partition_choice : ipywidgets.Dropdown
        The partition whose ranges are drawn.
    backlog_figure, brokers_figure, ranges_figure : plotly.graph_objects.FigureWidget

    Examples
    --------
    >>> view = TierBacklog(series_pdf, reported_pdf, window=inv.window)   # doctest: +SKIP
    """

    def __init__(self, series: pd.DataFrame, reported: pd.DataFrame | None = None, *,
                 brokers: pd.DataFrame | None = None, start: TimeLike = None, end: TimeLike = None,
                 window: TimeWindow | None = None) -> None:
        require_columns(series, SERIES_COLUMNS + RANGE_COLUMNS[3:], "tier backlog series")
        self._given_series, self._start, self._end, self._shared = series, start, end, window  # for the report
        self._series = series.copy()
        self._series["time"] = utc_naive(self._series["time"])
        self._reported = reported
        self._brokers = brokers
        self._lo, self._hi = time_window(start, end)
        topics = sorted({str(t) for t in self._series["topic"]})
        brokers = sorted({int(b) for b in self._series["broker"].dropna()})
        self.topic_filter = ipw.SelectMultiple(options=labelled(topics), value=(), rows=min(6, max(3, len(topics))),
                                               description="Topics")
        self.broker_filter = ipw.SelectMultiple(options=[str(b) for b in brokers], value=(),
                                                rows=min(6, max(3, len(brokers))), description="Brokers")
        self.measure = ipw.ToggleButtons(options=list(MEASURES), value="segments", description="Measure")
        # a partition a reader refused is null: listed as "?" (a report builds this view too)
        parts = list(dict.fromkeys(zip(self._series["topic"].astype(str),
                                       [None if pd.isna(p) else int(p) for p in self._series["partition"]],
                                       strict=True)))
        self.partition_choice = ipw.Dropdown(options=[(visible_text(f"{t}-{id_text(p)}", 80), (t, p))
                                                      for t, p in parts],
                                             value=parts[0] if parts else None, description="Ranges of")
        self.status = ipw.HTML()
        self.backlog_figure = FigureWidget()
        self.brokers_figure = FigureWidget()
        self.ranges_figure = FigureWidget()
        if window is not None and window.range != (None, None):
            self._lo, self._hi = window.range  # opened on a moved window (a finding clicked): start there
        self._refresh()
        for control in (self.topic_filter, self.broker_filter, self.measure, self.partition_choice):
            control.observe(lambda _c: self._refresh(), names="value")
        if window is not None:
            window.observe(self._follow, names="range")
        boxes = [ipw.HBox([self.topic_filter, self.broker_filter]), self.measure, self.status, self.backlog_figure]
        if self._brokers is not None:
            boxes.append(self.brokers_figure)
        super().__init__(children=[*boxes, self.partition_choice, self.ranges_figure])

    def figures(self) -> tuple[go.Figure, ...]:
        """Plain (static) figures for the current control values: the partitions' backlog, their
        ranges and, given the roll-up, each broker's backlog."""
        topic, partition = self.partition_choice.value or (None, None)
        out = (figure_tier_backlog(self._series, measure=self.measure.value, topics=self.topic_filter.value or None,
                                   brokers=self.broker_filter.value or None, start=self._lo, end=self._hi,
                                   reported=self._reported),
               figure_tier_ranges(self._series, topic=topic, partition=partition, start=self._lo, end=self._hi))
        if self._brokers is None:
            return out
        return (*out, figure_tier_brokers(self._brokers, measure=self.measure.value, start=self._lo, end=self._hi,
                                          reported=self._reported))

    def report_figures(self) -> list[go.Figure]:
        """The static report's figures over the report's window: every partition's backlog in
        segments, then in bytes, beside Kafka's gauges; each broker's in bytes beside its broker-wide
        gauges (given the roll-up); then the first partition's offset ranges."""
        lo, hi = report_window(self._start, self._end, self._shared)
        brokers = [] if self._brokers is None else [
            figure_tier_brokers(self._brokers, measure="bytes", start=lo, end=hi, reported=self._reported)]
        return [*(figure_tier_backlog(self._given_series, measure=measure, start=lo, end=hi, reported=self._reported)
                  for measure in ("segments", "bytes")), *brokers,
                figure_tier_ranges(self._given_series, start=lo, end=hi)]

    def _follow(self, change: dict) -> None:
        self._lo, self._hi = change["new"]
        self._refresh()

    def _refresh(self) -> None:
        backlog, ranges, *brokers = self.figures()
        for widget, figure in ((self.backlog_figure, backlog), (self.ranges_figure, ranges),
                               *((self.brokers_figure, b) for b in brokers)):
            redraw(widget, figure)
        window = "whole bundle" if self._lo is None and self._hi is None else (
            f"{short_time(self._lo) if self._lo is not None else '…'} → "
            f"{short_time(self._hi) if self._hi is not None else '…'}")
        lines = sum(1 for t in backlog.data if t.mode == "lines")
        self.status.value = f"{lines} backlog line(s) shown ({plotly_text(window)})"


def _area_view(frames: Any, window: TimeWindow | None) -> TierBacklog:
    return TierBacklog(frames["series"], frames.get("reported"), brokers=frames.get("brokers"), window=window)


register_view("tier", _area_view)
