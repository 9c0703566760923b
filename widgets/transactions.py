"""Transactions view: each partition's last stable offset against its log end, and its transactions as bars.

Inputs are the small pandas frames of :mod:`workbench.analysis.transactions` (its ``view_frames``,
collected with ``toPandas``):

* ``lso`` — :func:`workbench.analysis.transactions.lso_series`, thinned: ``topic, partition, time,
  log_end_offset, lso, lag_records, lag_bytes, lag_seconds, pinned_producer_id``;
* ``spans`` — :func:`workbench.analysis.transactions.transaction_spans`: ``topic, partition,
  producer_id, transactional_id, first_offset, start, end, outcome, records``.

The pure ``figure_*`` functions serve the static report and the interactive :class:`TransactionsView`.
Topic names and transactional ids come from the files and are untrusted: each is escaped with
:func:`~widgets._frames.plotly_text` before it reaches a figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as ipw
import pandas as pd
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
    time_window,
    utc_naive,
    visible_text,
)
from widgets.linking import TimeWindow, register_view, report_window, window_text

__all__ = ["TransactionsView", "figure_lso_lag", "figure_partition_transactions"]

LSO_COLUMNS = ("topic", "partition", "time", "log_end_offset", "lso", "lag_records", "lag_bytes")
SPAN_COLUMNS = ("topic", "partition", "producer_id", "transactional_id", "first_offset", "start", "end", "outcome")
#: How a transaction's bar is drawn by its outcome.
OUTCOME_COLOURS = {"COMMIT": "#2ca02c", "ABORT": "#7f7f7f", "open": "#d62728", "unknown": "#9467bd"}
MEASURES = {"records": ("lag_records", "offsets (log end − LSO)"), "bytes": ("lag_bytes", "bytes (log end − LSO)")}


def _times(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    out = frame.copy()
    for c in columns:
        out[c] = utc_naive(out[c])
    return out


def _in_window(frame: pd.DataFrame, lo: pd.Timestamp | None, hi: pd.Timestamp | None) -> pd.DataFrame:
    """Rows in force during ``[lo, hi]``: those inside it and the last one before it."""
    if lo is not None:
        before = frame[frame["time"] <= lo].tail(1)
        frame = pd.concat([before, frame[frame["time"] > lo]])
    if hi is not None:
        frame = frame[frame["time"] <= hi]
    return frame


def _partition_label(topic: Any, partition: Any) -> str:
    return plotly_text(f"{topic}-{id_text(partition)}", LABEL_WORD)


def figure_lso_lag(lso: pd.DataFrame, *, measure: str = "records", topics: Iterable[str] | str | None = None,
                   start: TimeLike = None, end: TimeLike = None) -> go.Figure:
    """Step lines of each partition's LSO lag (log end − last stable offset) over time.

    A line that climbs and stays up is a transaction holding the LSO while the log grows: every
    read_committed consumer of that partition waits at its foot.
    """
    require_columns(lso, LSO_COLUMNS, "LSO series")
    column, y_title = MEASURES[measure]
    lo, hi = time_window(start, end)
    frame = _times(lso, "time")
    wanted = selection(topics)
    if wanted is not None:
        frame = frame[frame["topic"].astype(str).isin(wanted)]
    fig = go.Figure()
    # every line is carried to the same right edge: a lag stays what it was until the next append
    right = hi if hi is not None else (frame["time"].max() if len(frame) else None)
    for (topic, partition), rows in frame.sort_values("time", kind="stable").groupby(["topic", "partition"],
                                                                                       dropna=False, sort=True):
        rows = _in_window(rows, lo, hi)
        if rows.empty:
            continue
        label = _partition_label(topic, partition)
        times, values = list(rows["time"]), rows[column].fillna(0).astype(float).tolist()
        if right is not None and times[-1] < right:
            times, values = [*times, right], [*values, values[-1]]
        fig.add_trace(go.Scatter(
            name=label, x=[format_time(t) for t in times], y=values,
            mode="lines", line={"shape": "hv", "width": 2},
            hovertemplate=f"{label}<br>%{{x}}<br>%{{y}} {measure} behind the log end<extra></extra>"))
    if not fig.data:
        return empty_figure("LSO lag", "No transactional partition in this window.")
    fig.update_layout(title=f"LSO lag per partition ({measure})", height=380,
                      margin={"l": 10, "r": 10, "t": 60, "b": 40},
                      xaxis={"type": "date", "title": {"text": "time (UTC)"}},
                      yaxis={"title": {"text": y_title}, "rangemode": "tozero"})
    if lo is not None or hi is not None:
        fig.update_xaxes(range=[format_time(lo) if lo is not None else None,
                                format_time(hi) if hi is not None else None])
    return fig


def figure_partition_transactions(lso: pd.DataFrame, spans: pd.DataFrame, *, topic: str | None = None,
                                  partition: int | None = None, start: TimeLike = None,
                                  end: TimeLike = None) -> go.Figure:
    """One partition's log end and last stable offset over time, each transaction a bar at its first offset.

    A bar runs from the transaction's first batch to its marker (green: committed, grey: aborted,
    red: still open at the end); the LSO line lies on the bar of the transaction that holds it.
    Without ``topic``/``partition``: the partition that lagged most.
    """
    require_columns(lso, LSO_COLUMNS, "LSO series")
    require_columns(spans, SPAN_COLUMNS, "transaction spans")
    if lso.empty:
        return empty_figure("Transactions", "No transactional partition in this bundle.")
    if topic is None:
        worst = lso.sort_values("lag_records", ascending=False, kind="stable").iloc[0]
        topic, partition = worst["topic"], worst["partition"]
    lo, hi = time_window(start, end)
    rows = _times(lso[(lso["topic"] == topic) & (lso["partition"] == partition)], "time").sort_values("time")
    rows = _in_window(rows, lo, hi)
    label = _partition_label(topic, partition)
    title = f"{label}: log end, last stable offset and transactions"
    if rows.empty:
        return empty_figure(title, "Nothing was appended to this partition in this window.")
    right = hi if hi is not None else rows["time"].max()
    fig = go.Figure()
    for column, name, colour in (("log_end_offset", "log end", "#1f77b4"), ("lso", "last stable offset", "#ff7f0e")):
        xs = [*rows["time"], right]
        ys = [*rows[column].astype(float), float(rows[column].iloc[-1])]
        fig.add_trace(go.Scatter(name=name, x=[format_time(t) for t in xs], y=ys, mode="lines",
                                 line={"shape": "hv", "width": 2, "color": colour},
                                 hovertemplate=f"{name}<br>%{{x}}<br>offset %{{y}}<extra></extra>"))
    mine = _times(spans[(spans["topic"] == topic) & (spans["partition"] == partition)], "start", "end")
    for outcome, group in mine.groupby(mine["outcome"].fillna("unknown").astype(str), sort=True):
        xs: list[Any] = []
        ys: list[Any] = []
        texts: list[str] = []
        for span in group.itertuples(index=False):
            began = span.start
            ended = span.end if pd.notna(span.end) else right
            if pd.isna(began) or (hi is not None and began > hi) or (lo is not None and ended < lo):
                continue
            who = visible_text(str(span.transactional_id), LABEL_WORD) if pd.notna(span.transactional_id) else "?"
            text = plotly_text(f"{who} (producer {id_text(span.producer_id)}) {outcome}, first offset "
                               f"{id_text(span.first_offset)}")
            xs += [format_time(began), format_time(ended), None]
            ys += [float(span.first_offset), float(span.first_offset), None]
            texts += [text, text, ""]
        if xs:
            fig.add_trace(go.Scatter(name=f"transactions: {outcome}", x=xs, y=ys, mode="lines",
                                     line={"width": 8, "color": OUTCOME_COLOURS.get(outcome, "#9467bd")},
                                     opacity=0.6, text=texts, hovertemplate="%{text}<br>%{x}<extra></extra>"))
    fig.update_layout(title=title, height=420, margin={"l": 10, "r": 10, "t": 60, "b": 40},
                      xaxis={"type": "date", "title": {"text": "time (UTC)"}},
                      yaxis={"title": {"text": "offset"}, "rangemode": "tozero"})
    if lo is not None or hi is not None:
        fig.update_xaxes(range=[format_time(lo if lo is not None else rows["time"].min()), format_time(right)],
                         autorange=False)
    return fig


class TransactionsView(ipw.VBox):
    """Interactive transactions view: topic and measure over the LSO lag of every partition, and one
    partition's log end, LSO and transactions.

    Parameters
    ----------
    lso, spans : pandas.DataFrame
        The area's ``lso`` and ``spans`` view frames (``toPandas()``).
    start, end : str, datetime or Timestamp, optional
        The window shown at first, and the report's (neither: the shared window's range).
    window : widgets.linking.TimeWindow, optional
        A window shared with other views: both figures follow it.

    Examples
    --------
    >>> view = TransactionsView(frames["lso"], frames["spans"], window=inv.window)   # doctest: +SKIP
    """

    def __init__(self, lso: pd.DataFrame, spans: pd.DataFrame, *, start: TimeLike = None, end: TimeLike = None,
                 window: TimeWindow | None = None) -> None:
        require_columns(lso, LSO_COLUMNS, "LSO series")
        require_columns(spans, SPAN_COLUMNS, "transaction spans")
        self._lso, self._spans = lso, spans
        self._start, self._end, self._shared = start, end, window
        self._lo, self._hi = time_window(start, end)
        if window is not None and window.range != (None, None):
            self._lo, self._hi = window.range
        topics = sorted({str(t) for t in lso["topic"]})
        self.topic_filter = ipw.SelectMultiple(options=labelled(topics), value=(),
                                               rows=min(6, max(3, len(topics))), description="Topics")
        self.measure = ipw.ToggleButtons(options=list(MEASURES), value="records", description="Measure")
        worst = lso.sort_values("lag_records", ascending=False, kind="stable")
        parts = list(dict.fromkeys(zip(worst["topic"].astype(str),
                                       [None if pd.isna(p) else int(p) for p in worst["partition"]], strict=True)))
        self.partition_choice = ipw.Dropdown(options=[(visible_text(f"{t}-{id_text(p)}", 80), (t, p))
                                                      for t, p in parts],
                                             value=parts[0] if parts else None, description="Partition")
        self.status = ipw.HTML()
        self.lag_figure = FigureWidget()
        self.partition_figure = FigureWidget()
        self._refresh()
        for control in (self.topic_filter, self.measure, self.partition_choice):
            control.observe(lambda _c: self._refresh(), names="value")
        if window is not None:
            window.observe(self._follow, names="range")
        super().__init__(children=[ipw.HBox([self.topic_filter, self.measure]), self.status, self.lag_figure,
                                   self.partition_choice, self.partition_figure])

    def figures(self) -> tuple[go.Figure, go.Figure]:
        """Plain figures for the current control values: the LSO lag and the chosen partition."""
        topic, partition = self.partition_choice.value or (None, None)
        return (figure_lso_lag(self._lso, measure=self.measure.value, topics=self.topic_filter.value or None,
                               start=self._lo, end=self._hi),
                figure_partition_transactions(self._lso, self._spans, topic=topic, partition=partition,
                                              start=self._lo, end=self._hi))

    def report_figures(self) -> list[go.Figure]:
        """The static report's figures: every partition's LSO lag in offsets, then the partition that
        lagged most with its transactions."""
        lo, hi = report_window(self._start, self._end, self._shared)
        return [figure_lso_lag(self._lso, start=lo, end=hi),
                figure_partition_transactions(self._lso, self._spans, start=lo, end=hi)]

    def _follow(self, change: dict) -> None:
        self._lo, self._hi = change["new"]
        self._refresh()

    def _refresh(self) -> None:
        lag, detail = self.figures()
        redraw(self.lag_figure, lag)
        redraw(self.partition_figure, detail)
        self.status.value = f"{len(lag.data)} partition(s) shown ({plotly_text(window_text(self._lo, self._hi))})"


def _area_view(frames: Any, window: TimeWindow | None) -> TransactionsView:
    return TransactionsView(frames["lso"], frames["spans"], window=window)


register_view("transactions", _area_view)
