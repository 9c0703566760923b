"""MirrorMaker 2 backlog view (KIP-971): replication lag per source partition, outage bands, the audit.

Inputs are the small pandas frames of :mod:`workbench.analysis.mirror` (collected with ``toPandas``):

* ``windows`` — :func:`workbench.analysis.mirror.lag_windows`: one row per source partition and
  window, the KIP's value, min, max and avg of the lag in records, and the lag in bytes and age;
* ``episodes`` — :func:`workbench.analysis.mirror.outage_episodes`: one row per outage of a partition;
* ``audit`` — :func:`workbench.analysis.mirror.audit_summary` (or the audit rows themselves);
* ``metrics`` — :func:`workbench.analysis.mirror.reported_metrics`: MirrorMaker 2's own samples.

The pure ``figure_*`` functions serve both the static report and :class:`MirrorBacklog`. Topic
names come from logs and are untrusted: every string taken from the data is escaped with
:func:`plotly_text` before it reaches a figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as ipw
import pandas as pd
import plotly.colors
import plotly.graph_objects as go

from widgets._figure import FigureWidget, redraw
from widgets._frames import (
    LABEL_WORD,
    TimeLike,
    format_time,
    id_text,
    labelled,
    parse_time,
    plotly_text,
    require_columns,
    selection,
    time_window,
    utc_naive,
)
from widgets.linking import TimeWindow, register_view
from widgets.tables import table_html
from workbench.errors import ConfigError

__all__ = ["MEASURES", "MirrorBacklog", "audit_table", "figure_backlog"]

#: measure -> (value column, max column, min column or None, axis title)
MEASURES: dict[str, tuple[str, str, str | None, str]] = {
    "records": ("lag_records", "lag_records_max", "lag_records_min", "records not yet replicated"),
    "bytes": ("lag_bytes", "lag_bytes_max", None, "bytes of source log not yet replicated"),
    "age": ("lag_age_s", "lag_age_s_max", None, "age of the oldest unreplicated record (s)"),
}
WINDOW_COLUMNS = ("source_alias", "target_alias", "topic", "partition", "window_start", "window_end")
#: MirrorMaker 2's own metrics drawn with the age measure (milliseconds, shown in seconds).
AGE_METRICS = ("replication-latency-ms", "record-age-ms")


def _label(topic: Any, partition: Any) -> str:
    return plotly_text(f"{topic}-{id_text(partition)}", LABEL_WORD)


def figure_backlog(
    windows: pd.DataFrame,
    episodes: pd.DataFrame | None = None,
    *,
    measure: str = "records",
    partitions: Iterable[str] | str | None = None,
    start: TimeLike = None,
    end: TimeLike = None,
    metrics: pd.DataFrame | None = None,
) -> go.Figure:
    """Replication backlog per source partition over time, with outage bands and the window band.

    Parameters
    ----------
    windows : pandas.DataFrame
        ``workbench.analysis.mirror.lag_windows(...).toPandas()``.
    episodes : pandas.DataFrame, optional
        ``outage_episodes(...).toPandas()``: each is a shaded band (red: ``full``, orange:
        ``partial``) over its partition's time span.
    measure : {"records", "bytes", "age"}
        Records (KIP-971's replication-record-lag: value at each window's end, a shaded band from
        min to max within the window, the time-weighted avg dotted, and triangles at the lowest the
        task's in-memory figure can have been, ``lag_records_low``, where the bundle bounds it),
        bytes or age (value and max per window).
    partitions : iterable of str or str, optional
        ``topic-partition`` labels to show (a string is a comma-separated list). ``None``: all.
    start, end : str, datetime or Timestamp, optional
        Time window (UTC when naive); sets the x axis range.
    metrics : pandas.DataFrame, optional
        ``reported_metrics(...).toPandas()``: with ``measure="age"`` MirrorMaker 2's own
        ``replication-latency-ms`` and ``record-age-ms`` are drawn as markers (in seconds).

    Returns
    -------
    plotly.graph_objects.Figure
        Per partition, in label order: a ``<p>`` line trace (value at window end, ``hv`` steps at
        the window starts), a ``<p> max`` trace (records: ``<p> min`` too, filled between), a
        ``<p> avg`` trace (records) and a ``<p> in memory, at least`` trace (records, where known);
        then one marker trace per reported metric and partition; one
        ``layout.shapes`` rectangle per episode.

    Examples
    --------
    >>> w = pd.DataFrame({"source_alias": ["A"], "target_alias": ["B"], "topic": ["t"], "partition": [0],
    ...     "window_start": pd.to_datetime(["2026-01-01 03:00:00"]),
    ...     "window_end": pd.to_datetime(["2026-01-01 03:00:15"]), "lag_records": [5], "lag_records_min": [0],
    ...     "lag_records_max": [9], "lag_records_avg": [3.0], "lag_bytes": [100], "lag_bytes_max": [200],
    ...     "lag_age_s": [1.0], "lag_age_s_max": [2.0]})
    >>> [t.name for t in figure_backlog(w).data]
    ['t-0 min', 't-0 max', 't-0', 't-0 avg']
    """
    if measure not in MEASURES:
        raise ConfigError(f"measure: expected one of {list(MEASURES)}, got {measure!r}")
    value, high, low, axis = MEASURES[measure]
    require_columns(windows, (*WINDOW_COLUMNS, value, high), "MirrorMaker 2 lag windows frame")
    lo, hi = time_window(start, end)
    frame = windows.copy()
    frame["window_start"] = utc_naive(frame["window_start"])
    frame["window_end"] = utc_naive(frame["window_end"])
    frame["_label"] = [_label(t, p) for t, p in zip(frame["topic"], frame["partition"], strict=True)]
    wanted = selection(partitions)
    if wanted is not None:
        frame = frame[frame["_label"].isin([plotly_text(w, LABEL_WORD) for w in wanted])]
    if lo is not None:
        frame = frame[frame["window_end"] > lo]
    if hi is not None:
        frame = frame[frame["window_start"] < hi]
    title = {"records": "MirrorMaker 2 replication-record-lag (KIP-971) per source partition",
             "bytes": "MirrorMaker 2 backlog in bytes per source partition",
             "age": "Age of the oldest record MirrorMaker 2 had not replicated"}[measure]
    fig = go.Figure()
    if frame.empty or frame[value].isna().all():
        fig.update_layout(title=title, height=300, xaxis={"visible": False}, yaxis={"visible": False},
                          annotations=[{"text": "No replication lag is known in this window.", "showarrow": False,
                                        "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}])
        return fig
    palette = plotly.colors.qualitative.Plotly
    labels = sorted(frame["_label"].unique())
    color = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
    for label in labels:
        part = frame[frame["_label"] == label].sort_values("window_start")
        x = [format_time(t) for t in part["window_start"]]
        if low is not None:
            fig.add_trace(go.Scatter(name=f"{label} min", x=x, y=list(part[low]), mode="lines",
                                     line={"shape": "hv", "width": 0, "color": color[label]}, showlegend=False,
                                     legendgroup=label, hoverinfo="skip"))
        fig.add_trace(go.Scatter(name=f"{label} max", x=x, y=list(part[high]), mode="lines",
                                 line={"shape": "hv", "width": 0 if low is not None else 1, "color": color[label],
                                       "dash": "dot"},
                                 fill="tonexty" if low is not None else None, opacity=0.25, showlegend=False,
                                 legendgroup=label,
                                 hovertemplate=label + "<br>%{x}<br>max %{y}<extra></extra>"))
        fig.add_trace(go.Scatter(name=label, x=x, y=list(part[value]), mode="lines+markers",
                                 line={"shape": "hv", "width": 2, "color": color[label]}, legendgroup=label,
                                 hovertemplate=label + "<br>%{x}<br>%{y} at the window's end<extra></extra>"))
        if measure == "records" and "lag_records_avg" in part.columns:
            fig.add_trace(go.Scatter(name=f"{label} avg", x=x, y=list(part["lag_records_avg"]), mode="lines",
                                     line={"shape": "hv", "width": 1, "dash": "dash", "color": color[label]},
                                     legendgroup=label, showlegend=False,
                                     hovertemplate=label + "<br>%{x}<br>avg %{y:.1f}<extra></extra>"))
        if measure == "records" and "lag_records_low" in part.columns and part["lag_records_low"].notna().any():
            fig.add_trace(go.Scatter(name=f"{label} in memory, at least", x=x,
                                     y=[None if pd.isna(v) else v for v in part["lag_records_low"]], mode="markers",
                                     marker={"symbol": "triangle-up", "size": 7, "color": color[label]},
                                     legendgroup=label, showlegend=False,
                                     hovertemplate=label + "<br>%{x}<br>KIP-971's in-memory lag at least %{y} "
                                                           "(MM2's next commit)<extra></extra>"))
    if measure == "age" and metrics is not None and not metrics.empty:
        require_columns(metrics, ("topic", "partition", "metric", "time", "value"), "MirrorMaker 2 metrics frame")
        m = metrics[metrics["metric"].isin(AGE_METRICS) & metrics["partition"].notna()].copy()
        m["time"] = utc_naive(m["time"])
        m["_label"] = [_label(t, p) for t, p in zip(m["topic"], m["partition"], strict=True)]
        m = m[m["_label"].isin(labels)]
        if lo is not None:
            m = m[m["time"] >= lo]
        if hi is not None:
            m = m[m["time"] <= hi]
        for (label, metric), s in m.sort_values("time").groupby(["_label", "metric"], sort=True):
            fig.add_trace(go.Scatter(name=f"{label} {metric} (reported)", x=[format_time(t) for t in s["time"]],
                                     y=[v / 1000.0 for v in s["value"]], mode="markers",
                                     marker={"symbol": "circle-open" if metric == "record-age-ms" else "x",
                                             "size": 5, "color": color[label]},
                                     legendgroup=label,
                                     hovertemplate=label + f" {metric}<br>%{{x}}<br>%{{y:.3f}} s<extra></extra>"))
    if episodes is not None and not episodes.empty:
        require_columns(episodes, ("topic", "partition", "start", "end", "scope"), "MirrorMaker 2 episodes frame")
        eps = episodes.copy()
        eps["start"], eps["end"] = utc_naive(eps["start"]), utc_naive(eps["end"])
        for e in eps.sort_values(["start", "topic", "partition"]).itertuples(index=False):
            if _label(e.topic, e.partition) not in labels:
                continue
            fig.add_shape(type="rect", xref="x", yref="paper", x0=format_time(e.start), x1=format_time(e.end),
                          y0=0, y1=1, fillcolor="#d62728" if e.scope == "full" else "#ff7f0e", opacity=0.12,
                          line={"width": 0}, layer="below",
                          name=f"{_label(e.topic, e.partition)} {e.scope} outage")
    fig.update_layout(title=title, height=380, margin={"l": 10, "r": 10, "t": 60, "b": 40},
                      legend={"title": {"text": "source partition"}},
                      xaxis={"type": "date", "title": {"text": "time (UTC)"}},
                      yaxis={"title": {"text": axis}, "rangemode": "tozero"})
    if lo is not None or hi is not None:
        left = lo if lo is not None else frame["window_start"].min()
        right = hi if hi is not None else frame["window_end"].max()
        fig.update_xaxes(range=[format_time(left), format_time(right)], autorange=False)
    return fig


#: Columns of :func:`audit_table`, as shown.
AUDIT_TABLE_COLUMNS = ("group", "source partition", "target partition", "source committed", "checkpoint",
                       "target committed", "would re-read", "would skip", "status", "at")


def audit_table(audit: pd.DataFrame, *, at: TimeLike = None) -> pd.DataFrame:
    """The translation audit at one moment, one row per synced group and partition (for display).

    Parameters
    ----------
    audit : pandas.DataFrame
        Rows of ``workbench.analysis.mirror.translation_audit`` (any subset, e.g. the window
        boundaries).
    at : str, datetime or Timestamp, optional
        The moment (the last row at or before it per group and partition); default the last row.

    Returns
    -------
    pandas.DataFrame
        :data:`AUDIT_TABLE_COLUMNS`.

    Examples
    --------
    >>> a = pd.DataFrame({"group": ["app"], "topic": ["t"], "target_topic": ["A.t"], "partition": [0],
    ...     "time": pd.to_datetime(["2026-01-01 03:00:00"]), "source_committed": [10],
    ...     "checkpoint_downstream": [8], "target_committed": [8], "reread": [2], "skip": [0],
    ...     "status": ["reread"]})
    >>> audit_table(a)["would re-read"].tolist()
    [2]
    """
    require_columns(audit, ("group", "topic", "target_topic", "partition", "time", "source_committed",
                            "checkpoint_downstream", "target_committed", "reread", "skip", "status"),
                    "MirrorMaker 2 audit frame")
    frame = audit.copy()
    frame["time"] = utc_naive(frame["time"])
    moment = parse_time(at, "at")
    if moment is not None:
        frame = frame[frame["time"] <= moment]
    last = (frame.sort_values("time").groupby(["group", "topic", "partition"], sort=True).tail(1)
            .sort_values(["group", "topic", "partition"]))

    def whole(v: Any) -> Any:
        return None if v is None or pd.isna(v) else int(v)

    return pd.DataFrame({
        "group": last["group"].astype(str),
        "source partition": [f"{t}-{id_text(p)}" for t, p in zip(last["topic"], last["partition"], strict=True)],
        "target partition": [f"{t}-{id_text(p)}" for t, p in zip(last["target_topic"], last["partition"], strict=True)],
        "source committed": [whole(v) for v in last["source_committed"]],
        "checkpoint": [whole(v) for v in last["checkpoint_downstream"]],
        "target committed": [whole(v) for v in last["target_committed"]],
        "would re-read": [whole(v) for v in last["reread"]],
        "would skip": [whole(v) for v in last["skip"]],
        "status": last["status"].astype(str),
        "at": [format_time(t) for t in last["time"]],
    }, columns=list(AUDIT_TABLE_COLUMNS)).reset_index(drop=True)


class MirrorBacklog(ipw.VBox):
    """Interactive MirrorMaker 2 view: measure and partition choice, a time window, the audit table.

    Parameters
    ----------
    windows, episodes, audit : pandas.DataFrame
        See :func:`figure_backlog` and :func:`audit_table`.
    metrics : pandas.DataFrame, optional
        MirrorMaker 2's own samples (drawn with the age measure).
    window : widgets.linking.TimeWindow, optional
        A window shared with other views: the figure's range and the audit's moment follow it, and
        the report's figures cover it (:meth:`report_figures`).

    Attributes
    ----------
    measure : ipywidgets.ToggleButtons
    partition_filter : ipywidgets.SelectMultiple
    figure : plotly.graph_objects.FigureWidget
    audit_html : ipywidgets.HTML
        The translation audit at the window's end.

    Examples
    --------
    >>> view = MirrorBacklog(windows_pdf, episodes_pdf, audit_pdf)   # doctest: +SKIP
    """

    def __init__(self, windows: pd.DataFrame, episodes: pd.DataFrame, audit: pd.DataFrame, *,
                 metrics: pd.DataFrame | None = None, window: TimeWindow | None = None) -> None:
        self._windows, self._episodes, self._audit, self._metrics = windows, episodes, audit, metrics
        self._range: tuple[pd.Timestamp | None, pd.Timestamp | None] = (None, None)
        labels = sorted({f"{t}-{id_text(p)}" for t, p in zip(windows["topic"], windows["partition"], strict=True)})
        self.measure = ipw.ToggleButtons(options=[("records", "records"), ("bytes", "bytes"), ("age", "age")],
                                         value="records", description="Lag in")
        self.partition_filter = ipw.SelectMultiple(options=labelled(labels), value=(), rows=min(8, max(3, len(labels))),
                                                   description="Partitions", tooltip="None selected: all")
        self.figure = FigureWidget()
        self.audit_html = ipw.HTML()
        self._refresh()
        for control in (self.measure, self.partition_filter):
            control.observe(lambda _c: self._refresh(), names="value")
        if window is not None:
            self._range = window.range
            self._refresh()
            window.observe(self._follow, names="range")
        super().__init__(children=[ipw.HBox([self.measure, self.partition_filter]), self.figure, self.audit_html])

    def figures(self) -> go.Figure:
        """The plain figure for the current control values."""
        lo, hi = self._range
        return figure_backlog(self._windows, self._episodes, measure=self.measure.value,
                              partitions=self.partition_filter.value or None, start=lo, end=hi,
                              metrics=self._metrics)

    def report_figures(self) -> list[go.Figure]:
        """The static report's figures over the shared window: the backlog in records, then its age
        beside MirrorMaker 2's own metrics."""
        lo, hi = self._range
        return [figure_backlog(self._windows, self._episodes, start=lo, end=hi),
                figure_backlog(self._windows, self._episodes, measure="age", start=lo, end=hi, metrics=self._metrics)]

    def _follow(self, change: dict) -> None:
        self._range = change["new"]
        self._refresh()

    def _refresh(self) -> None:
        fig = self.figures()
        redraw(self.figure, fig)
        table = audit_table(self._audit, at=self._range[1]) if not self._audit.empty else self._audit
        self.audit_html.value = ("<b>Offset translation audit</b>"
                                 + table_html(table, empty="No consumer group synced by MirrorMaker 2."))


def _area_view(frames: Any, window: TimeWindow | None) -> MirrorBacklog:
    return MirrorBacklog(frames["windows"], frames["episodes"], frames["audit"], metrics=frames.get("metrics"),
                         window=window)


register_view("mirror", _area_view)
