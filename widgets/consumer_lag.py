"""Consumer-lag view: lag histograms (bytes, time), the page-cache curve, lag over time per group and partition.

Inputs are the small frames of :mod:`workbench.analysis.consumer_lag` (its area's view frames, collected
with ``toPandas``), never commits by the million:

* ``histogram_bytes`` / ``histogram_time`` — :func:`~workbench.analysis.consumer_lag.lag_histogram` by
  ``broker, group, topic`` (and, from the area, ``slice_start, slice_end``: counted per time slice,
  :func:`~workbench.analysis.consumer_lag.with_time_slices`): one row per key and power-of-two bucket
  (``bucket, lower, upper, count``);
* ``cdf_points`` — :func:`~workbench.analysis.consumer_lag.lag_points` by broker and time slice, or
  ``cdf`` — :func:`~workbench.analysis.consumer_lag.byte_lag_cdf` by broker (``bytes, fraction, reads``);
* ``page_cache`` — :func:`~workbench.analysis.consumer_lag.page_cache` by broker (``quantile, tail_bytes,
  cache_bytes``);
* ``series`` — commits of the worst partitions (``group, topic, partition, commit_time, records_lag,
  bytes_lag, time_lag_ms``), already cut to the top N by the analysis;
* ``burrow`` (optional) — :func:`~workbench.analysis.consumer_lag.burrow_group_status`: Burrow's
  status of each group at each evaluated instant (``group, time, status, worst, stop, stall, rewind,
  warn, total_lag``);
* ``burrow_partitions`` (optional) — :func:`~workbench.analysis.consumer_lag.status_runs` of the
  partitions longest in trouble: each partition's Burrow status (OK, WARN, STOP, STALL, REWIND) as
  runs (``group, topic, partition, status, start, end, evaluations, max_lag``).

Each figure has a pure ``figure_*`` function (for the static report) beside the interactive
:class:`ConsumerLagView`. Filters, a search box and a top-N limit keep the figures readable with
10,000 partitions: the lag-over-time figure draws at most ``top`` traces. Group and topic names are
untrusted: every string from the data passes :func:`plotly_text` before it reaches a figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as ipw
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from widgets._figure import FigureWidget, empty_figure, redraw
from widgets._frames import TimeLike, labelled, parse_time, plotly_text, require_columns, selection, utc_naive
from widgets.linking import TimeWindow, register_view, report_window
from workbench.analysis.consumer_lag.distributions import cdf_of_points, in_slices
from workbench.errors import ConfigError

__all__ = [
    "ConsumerLagView",
    "empty_frames",
    "figure_burrow_partitions",
    "figure_burrow_status",
    "figure_lag_histogram",
    "figure_lag_over_time",
    "figure_page_cache",
]

HISTOGRAM_COLUMNS = ("broker", "group", "topic", "bucket", "lower", "upper", "count")
CDF_COLUMNS = ("broker", "bytes", "fraction")
CACHE_COLUMNS = ("broker", "quantile", "tail_bytes")
SERIES_COLUMNS = ("group", "topic", "partition", "commit_time", "records_lag", "bytes_lag", "time_lag_ms")
BURROW_COLUMNS = ("group", "time", "status", "worst", "stop", "stall", "rewind", "warn", "total_lag")
#: Burrow's group statuses, in the order drawn, with their colours.
_BURROW_COLOURS = {"OK": "#2ca02c", "WARN": "#ff7f0e", "ERR": "#d62728"}
RUN_COLUMNS = ("group", "topic", "partition", "status", "start", "end", "evaluations", "max_lag")
#: Burrow's partition statuses, in the order drawn, with their colours.
_PARTITION_COLOURS = {"OK": "#2ca02c", "WARN": "#ff7f0e", "STOP": "#d62728", "STALL": "#9467bd",
                      "REWIND": "#1f77b4"}
#: metric -> (series column, axis title)
_METRICS = {"records": ("records_lag", "records behind"), "bytes": ("bytes_lag", "bytes behind"),
            "time": ("time_lag_ms", "ms behind")}


def _filtered(frame: pd.DataFrame, **wanted: Iterable[Any] | str | None) -> pd.DataFrame:
    for column, values in wanted.items():
        chosen = selection(values)
        if chosen is not None and column in frame.columns:
            frame = frame[frame[column].astype(str).isin(chosen)]
    return frame


def human_bytes(value: float) -> str:
    """``512 B``, ``1 KiB``, ``1.5 MiB`` (binary units).

    Examples
    --------
    >>> human_bytes(1536), human_bytes(0), human_bytes(2 ** 30)
    ('1.5 KiB', '0 B', '1 GiB')
    """
    value = float(value)
    for power, unit in ((5, "PiB"), (4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if value >= 1024 ** power:
            return f"{value / 1024 ** power:.3g} {unit}"
    return f"{value:.0f} B"


def _bucket_label(bucket: int, upper: float, metric: str) -> str:
    if bucket < 0:
        return "0"
    return f"≤ {human_bytes(upper)}" if metric == "bytes" else f"≤ {upper:.0f} ms"


def figure_lag_histogram(hist: pd.DataFrame, *, metric: str = "bytes", brokers: Iterable[Any] | str | None = None,
                         groups: Iterable[Any] | str | None = None, topics: Iterable[Any] | str | None = None,
                         start: TimeLike = None, end: TimeLike = None) -> go.Figure:
    """``ConsumerFetchLagBytes`` or ``ConsumerFetchLagTimeInMs`` as a histogram: commits per power-of-two bucket.

    One bar trace per broker; buckets are equal steps on a log axis (0 on its own at the left). Rows
    counted per time slice keep the slices that overlap ``[start, end)``.

    Parameters
    ----------
    hist : pandas.DataFrame
        :func:`~workbench.analysis.consumer_lag.lag_histogram` rows (:data:`HISTOGRAM_COLUMNS`).
    metric : str
        ``bytes`` or ``time`` (labels only).
    brokers, groups, topics : iterable or comma-separated str, optional
        Keep only these (None: all).
    start, end : str or datetime, optional
        The time window (UTC).

    Examples
    --------
    >>> figure_lag_histogram(hist_pdf, metric="time", groups=["billing"])   # doctest: +SKIP
    """
    if metric not in ("bytes", "time"):
        raise ConfigError(f"metric: expected 'bytes' or 'time', got {metric!r}")
    require_columns(hist, HISTOGRAM_COLUMNS, "lag histogram frame")
    title = "ConsumerFetchLagBytes (commits per bucket)" if metric == "bytes" else \
        "ConsumerFetchLagTimeInMs (commits per bucket)"
    data = _filtered(in_slices(hist, parse_time(start), parse_time(end)), broker=brokers, group=groups, topic=topics)
    if data.empty:
        return empty_figure(title, "no commits for this selection")
    per = data.groupby(["broker", "bucket", "upper"], as_index=False)["count"].sum()
    buckets = sorted(per["bucket"].unique())
    uppers = dict(zip(per["bucket"], per["upper"], strict=False))
    labels = [_bucket_label(int(b), float(uppers[b]), metric) for b in buckets]
    fig = go.Figure()
    for broker, rows in per.groupby("broker"):
        counts = dict(zip(rows["bucket"], rows["count"], strict=True))
        fig.add_trace(go.Bar(x=labels, y=[int(counts.get(b, 0)) for b in buckets],
                             name=plotly_text(f"broker {broker}")))
    fig.update_layout(title=title, barmode="stack", height=340, xaxis_title=f"lag ({metric}), power-of-two buckets",
                      yaxis_title="commits", yaxis_type="log", legend_title_text="leader")
    return fig


def figure_page_cache(cdf: pd.DataFrame, cache: pd.DataFrame | None = None, *,
                      brokers: Iterable[Any] | str | None = None, start: TimeLike = None,
                      end: TimeLike = None) -> go.Figure:
    """The page-cache curve: share of consumer positions within N bytes of the tail, per broker, p-quantiles marked.

    Parameters
    ----------
    cdf : pandas.DataFrame
        :func:`~workbench.analysis.consumer_lag.byte_lag_cdf` by broker, or
        :func:`~workbench.analysis.consumer_lag.lag_points` by broker and time slice: then the curve is
        of the slices that overlap ``[start, end)``.
    cache : pandas.DataFrame, optional
        :func:`~workbench.analysis.consumer_lag.page_cache` by broker: its ``tail_bytes`` are marked
        (quantiles of the whole bundle: marked only when the window leaves no slice out).
    """
    title = "Page cache: share of reads within N bytes of the log tail"
    if "slice_start" in cdf.columns:
        lo, hi = parse_time(start), parse_time(end)
        if len(in_slices(cdf, lo, hi)) < len(cdf):
            cache = None
            title += " (in the window)"
        cdf = cdf_of_points(cdf, start=lo, end=hi)
    require_columns(cdf, CDF_COLUMNS, "byte-lag CDF frame")
    data = _filtered(cdf, broker=brokers)
    if data.empty:
        return empty_figure(title, "no commits with a known byte lag")
    fig = go.Figure()
    for broker, rows in data.sort_values("bytes").groupby("broker"):
        x = np.maximum(rows["bytes"].to_numpy(dtype=float), 1.0)   # 0 drawn at 1 B on the log axis
        fig.add_trace(go.Scatter(x=x, y=rows["fraction"], mode="lines", line_shape="hv",
                                 name=plotly_text(f"broker {broker}")))
    if cache is not None and not cache.empty:
        require_columns(cache, CACHE_COLUMNS, "page-cache frame")
        marks = _filtered(cache, broker=brokers).dropna(subset=["tail_bytes"])
        fig.add_trace(go.Scatter(
            x=np.maximum(marks["tail_bytes"].to_numpy(dtype=float), 1.0), y=marks["quantile"], mode="markers+text",
            text=[plotly_text(f"p{q * 100:g}: {human_bytes(b)}") for q, b in zip(marks["quantile"],
                                                                                 marks["tail_bytes"], strict=True)],
            textposition="middle right", marker={"size": 9, "symbol": "diamond"}, name="quantiles"))
    fig.update_layout(title=title, height=360, xaxis_type="log", xaxis_title="bytes behind the log end",
                      yaxis_title="share of commits", yaxis_range=[0, 1.02])
    return fig


def _seriesselection(series: pd.DataFrame, metric: str, groups: Iterable[Any] | str | None,
                      topics: Iterable[Any] | str | None, search: str | None, top: int) -> tuple[pd.DataFrame, list]:
    column = _METRICS[metric][0]
    data = _filtered(series, group=groups, topic=topics)
    if search:
        needle = search.lower()
        label = data["group"].astype(str) + " " + data["topic"].astype(str) + "-" + data["partition"].astype(str)
        data = data[label.str.lower().str.contains(needle, regex=False)]
    worst = (data.groupby(["group", "topic", "partition"])[column].max().fillna(-1)
             .sort_values(ascending=False, kind="stable").head(max(top, 0)))
    return data, list(worst.index)


def figure_lag_over_time(series: pd.DataFrame, *, metric: str = "records", groups: Iterable[Any] | str | None = None,
                         topics: Iterable[Any] | str | None = None, search: str | None = None, top: int = 10,
                         start: TimeLike = None, end: TimeLike = None) -> go.Figure:
    """Lag at every commit over time, one line per group-partition, the ``top`` worst only.

    Parameters
    ----------
    series : pandas.DataFrame
        Commits (:data:`SERIES_COLUMNS`).
    metric : str
        ``records``, ``bytes`` or ``time``.
    search : str, optional
        Keep group-partitions whose ``group topic-partition`` label contains this (case-insensitive).
    top : int
        Draw at most this many lines (the largest lags first).
    start, end : time, optional
        x-axis window (UTC).
    """
    if metric not in _METRICS:
        raise ConfigError(f"metric: expected one of {sorted(_METRICS)}, got {metric!r}")
    require_columns(series, SERIES_COLUMNS, "lag series frame")
    column, axis = _METRICS[metric]
    title = f"Lag at each commit ({axis})"
    data, keys = _seriesselection(series, metric, groups, topics, search, top)
    if not keys:
        return empty_figure(title, "no commits for this selection")
    fig = go.Figure()
    for group, topic, partition in keys:
        rows = data[(data["group"] == group) & (data["topic"] == topic) & (data["partition"] == partition)]
        rows = rows.sort_values("commit_time")
        fig.add_trace(go.Scatter(x=utc_naive(rows["commit_time"]), y=rows[column], mode="lines+markers",
                                 line_shape="hv", name=plotly_text(f"{group} {topic}-{partition}")))
    lo, hi = parse_time(start, "start"), parse_time(end, "end")
    layout: dict[str, Any] = {"title": title, "height": 380, "xaxis_title": "commit time (UTC)", "yaxis_title": axis}
    if lo is not None or hi is not None:
        times = utc_naive(data["commit_time"])
        layout["xaxis_range"] = [lo if lo is not None else times.min(), hi if hi is not None else times.max()]
    fig.update_layout(**layout)
    return fig


def figure_burrow_status(burrow: pd.DataFrame, *, groups: Iterable[Any] | str | None = None,
                         start: TimeLike = None, end: TimeLike = None) -> go.Figure:
    """Burrow's status of each group over time: one row per group, one mark per evaluated instant,
    coloured OK, WARN or ERR; the hover names the worst partition status and how many partitions had each.

    Parameters
    ----------
    burrow : pandas.DataFrame
        :data:`BURROW_COLUMNS` rows (the area's ``burrow`` frame).
    groups : iterable of str or str, optional
        Only these groups (``None``: all).
    start, end : time, optional
        x-axis window (UTC).
    """
    require_columns(burrow, BURROW_COLUMNS, "Burrow status frame")
    title = "Burrow's group status over time (OK, WARN, ERR)"
    data = _filtered(burrow, group=groups)
    if data.empty:
        return empty_figure(title, "no group evaluated for this selection")
    names = sorted({str(g) for g in data["group"]})
    fig = go.Figure()
    for status, colour in _BURROW_COLOURS.items():
        rows = data[data["status"] == status].sort_values(["group", "time"])
        if rows.empty:
            continue
        hover = [plotly_text(f"{g}: {status} (worst partition {w}; STOP {int(a)}, STALL {int(b)}, "
                             f"REWIND {int(c)}, WARN {int(d)}; lag {int(lag)} records)")
                 for g, w, a, b, c, d, lag in zip(rows["group"], rows["worst"].fillna("-"), rows["stop"].fillna(0),
                                                  rows["stall"].fillna(0), rows["rewind"].fillna(0),
                                                  rows["warn"].fillna(0), rows["total_lag"].fillna(0), strict=True)]
        fig.add_trace(go.Scatter(x=utc_naive(rows["time"]), y=[plotly_text(str(g)) for g in rows["group"]],
                                 mode="markers", name=status, marker={"color": colour, "symbol": "square", "size": 9},
                                 hovertext=hover, hoverinfo="x+text"))
    lo, hi = parse_time(start, "start"), parse_time(end, "end")
    layout: dict[str, Any] = {"title": title, "height": 160 + 28 * len(names), "xaxis_title": "time (UTC)",
                              "yaxis": {"categoryorder": "array",
                                        "categoryarray": [plotly_text(n) for n in reversed(names)]}}
    if lo is not None or hi is not None:
        times = utc_naive(data["time"])
        layout["xaxis_range"] = [lo if lo is not None else times.min(), hi if hi is not None else times.max()]
    fig.update_layout(**layout)
    return fig


def figure_burrow_partitions(runs: pd.DataFrame, *, groups: Iterable[Any] | str | None = None,
                             start: TimeLike = None, end: TimeLike = None) -> go.Figure:
    """Burrow's status of each partition over time: one row per group-partition, one bar per run of a
    status (OK, WARN, STOP, STALL, REWIND) from its first evaluation to the next run's; the hover
    gives the evaluations and the largest lag of the run.

    A run of one evaluation at the end (no length) is drawn a sliver wide (0.5 % of the span) so
    that it shows. ``runs`` holds :data:`RUN_COLUMNS` (the area's ``burrow_partitions`` frame).
    """
    require_columns(runs, RUN_COLUMNS, "Burrow partition runs frame")
    title = "Burrow's partition status over time (OK, WARN, STOP, STALL, REWIND)"
    data = _filtered(runs, group=groups)
    if data.empty:
        return empty_figure(title, "no partition evaluated for this selection")
    data = data.assign(_label=[f"{g} · {t}-{int(p)}" for g, t, p in
                               zip(data["group"], data["topic"], data["partition"], strict=True)])
    begin, finish = utc_naive(data["start"]), utc_naive(data["end"])
    sliver = max((finish.max() - begin.min()) * 0.005, pd.Timedelta(milliseconds=1))
    width = (finish - begin).where(finish - begin >= sliver, sliver)
    data = data.assign(_begin=begin.to_numpy(), _ms=(width.dt.total_seconds() * 1000).to_numpy())
    labels = sorted(set(data["_label"]))
    fig = go.Figure()
    for status, colour in _PARTITION_COLOURS.items():
        rows = data[data["status"] == status]
        if rows.empty:
            continue
        hover = [plotly_text(f"{label}: {status} from {b} to {e} ({int(n)} evaluation(s), lag up to "
                             f"{'-' if pd.isna(lag) else int(lag)} records)")
                 for label, b, e, n, lag in zip(rows["_label"], rows["start"], rows["end"], rows["evaluations"],
                                                 rows["max_lag"], strict=True)]
        fig.add_trace(go.Bar(base=rows["_begin"], x=rows["_ms"], y=[plotly_text(v) for v in rows["_label"]],
                             orientation="h", name=status, marker={"color": colour}, hovertext=hover,
                             hoverinfo="text"))
    lo, hi = parse_time(start, "start"), parse_time(end, "end")
    layout: dict[str, Any] = {"title": title, "height": 160 + 24 * len(labels), "barmode": "overlay",
                              "xaxis": {"type": "date", "title": "time (UTC)"},
                              "yaxis": {"categoryorder": "array",
                                        "categoryarray": [plotly_text(n) for n in reversed(labels)]}}
    if lo is not None or hi is not None:
        layout["xaxis"]["range"] = [lo if lo is not None else begin.min(), hi if hi is not None else finish.max()]
    fig.update_layout(**layout)
    return fig


def empty_frames() -> dict[str, pd.DataFrame]:
    """The view's frames without rows (a bundle with no commits: the view shows that nothing is there).

    Examples
    --------
    >>> sorted(empty_frames())
    ['burrow', 'burrow_partitions', 'cdf', 'histogram_bytes', 'histogram_time', 'page_cache', 'series']
    """
    hist = pd.DataFrame({c: pd.Series(dtype="object") for c in HISTOGRAM_COLUMNS})
    return {"histogram_bytes": hist, "histogram_time": hist.copy(),
            "cdf": pd.DataFrame({c: pd.Series(dtype="float64") for c in CDF_COLUMNS}),
            "page_cache": pd.DataFrame({c: pd.Series(dtype="float64") for c in CACHE_COLUMNS}),
            "series": pd.DataFrame({c: pd.Series(dtype="object") for c in SERIES_COLUMNS}),
            "burrow": pd.DataFrame({c: pd.Series(dtype="object") for c in BURROW_COLUMNS}),
            "burrow_partitions": pd.DataFrame({c: pd.Series(dtype="object") for c in RUN_COLUMNS})}


class ConsumerLagView(ipw.VBox):
    """Interactive consumer-lag view: histograms, the page-cache curve, lag and Burrow's status over time, with filters.

    Parameters
    ----------
    frames : mapping of str to pandas.DataFrame
        The area's view frames (``histogram_bytes``, ``histogram_time``, ``cdf_points`` or ``cdf``,
        ``page_cache``, ``series``, and ``burrow`` and ``burrow_partitions`` when the analysis gives them).
    window : widgets.linking.TimeWindow, optional
        A shared window: the over-time figures' x axes follow it, and the histograms and the curve
        count the commits of the time slices it overlaps (when their frames are counted per slice).
    top : int
        Lines drawn in the lag-over-time figure at first.
    groups : iterable of str or str, optional
        Groups selected at first (a string is read as a comma-separated list; unknown ones are
        ignored): the report's figures show only these (``None``: all).

    Attributes
    ----------
    metric : ipywidgets.ToggleButtons
        ``bytes`` or ``time`` for the histogram; ``records``, ``bytes`` or ``time`` for the series.
    group_filter, topic_filter, broker_filter : ipywidgets.SelectMultiple
        Nothing selected means all.
    search : ipywidgets.Text
        Substring of ``group topic-partition``.
    top : ipywidgets.BoundedIntText
        Lines drawn in the lag-over-time figure.

    Examples
    --------
    >>> view = ConsumerLagView({k: v.toPandas() for k, v in frames.items()})   # doctest: +SKIP
    """

    def __init__(self, frames: Any, *, window: TimeWindow | None = None, top: int = 10,
                 groups: Iterable[str] | str | None = None) -> None:
        self._frames = {k: frames[k] for k in ("histogram_bytes", "histogram_time", "cdf", "page_cache", "series",
                                               "burrow", "burrow_partitions") if k in frames}
        if "cdf_points" in frames:   # counted per time slice: the curve follows the window
            self._frames["cdf"] = frames["cdf_points"]
        missing = [k for k in ("histogram_bytes", "histogram_time", "cdf", "series") if k not in self._frames]
        if missing:
            raise ConfigError(f"consumer-lag view: frames {missing} missing")
        self._groups = groups
        hist = self._frames["histogram_bytes"]
        series = self._frames["series"]
        group_names = sorted({str(g) for g in pd.concat([hist["group"], series["group"]]).dropna()})
        topics = sorted({str(t) for t in pd.concat([hist["topic"], series["topic"]]).dropna()})
        brokers = sorted({str(b) for b in hist["broker"].dropna()})
        self.metric = ipw.ToggleButtons(options=["records", "bytes", "time"], value="bytes", description="Lag in")
        wanted = set(selection(groups) or ())
        self.group_filter = ipw.SelectMultiple(options=labelled(group_names),
                                               value=tuple(g for g in group_names if g in wanted),
                                               rows=min(6, max(3, len(group_names))), description="Groups")
        self.topic_filter = ipw.SelectMultiple(options=labelled(topics), rows=min(6, max(3, len(topics))),
                                               description="Topics")
        self.broker_filter = ipw.SelectMultiple(options=brokers, rows=min(6, max(2, len(brokers))),
                                                description="Brokers")
        self.search = ipw.Text(description="Search", placeholder="group or topic-partition", continuous_update=False)
        self.top = ipw.BoundedIntText(value=top, min=1, max=200, description="Top N")
        self.histogram = FigureWidget()
        self.cache_figure = FigureWidget()
        self.series_figure = FigureWidget()
        self.burrow_figure = FigureWidget()
        self.partition_figure = FigureWidget()
        self.status = ipw.HTML()
        self._window = window
        self._refresh()
        for control in (self.metric, self.group_filter, self.topic_filter, self.broker_filter, self.search, self.top):
            control.observe(self._on_change, names="value")
        if window is not None:
            window.observe(self._on_change, names="range")
        super().__init__(children=[
            self.metric, ipw.HBox([self.group_filter, self.topic_filter, self.broker_filter]),
            ipw.HBox([self.search, self.top]), self.status, self.histogram, self.cache_figure, self.series_figure,
            self.burrow_figure, self.partition_figure])

    def _burrow(self, name: str = "burrow") -> pd.DataFrame:
        frame = self._frames.get(name)
        return frame if frame is not None else empty_frames()[name]

    def figures(self) -> tuple[go.Figure, go.Figure, go.Figure, go.Figure, go.Figure]:
        """Plain figures for the current control values: histogram, page-cache curve, lag over time,
        Burrow's group and partition statuses over time."""
        metric = self.metric.value
        hist_metric = "time" if metric == "time" else "bytes"
        groups = self.group_filter.value or None
        topics = self.topic_filter.value or None
        brokers = self.broker_filter.value or None
        start, end = (self._window.range if self._window is not None else (None, None))
        return (
            figure_lag_histogram(self._frames[f"histogram_{hist_metric}"], metric=hist_metric, brokers=brokers,
                                 groups=groups, topics=topics, start=start, end=end),
            figure_page_cache(self._frames["cdf"], self._frames.get("page_cache"), brokers=brokers, start=start,
                              end=end),
            figure_lag_over_time(self._frames["series"], metric=metric, groups=groups, topics=topics,
                                 search=self.search.value or None, top=int(self.top.value), start=start, end=end),
            figure_burrow_status(self._burrow(), groups=groups, start=start, end=end),
            figure_burrow_partitions(self._burrow("burrow_partitions"), groups=groups, start=start, end=end),
        )

    def report_figures(self) -> list[go.Figure]:
        """The static report's figures, for the given groups, over the shared window: the histograms of
        byte and time lag, the page-cache curve, the byte lag at each commit and Burrow's group and
        partition statuses."""
        start, end = report_window(None, None, self._window)
        return [
            figure_lag_histogram(self._frames["histogram_bytes"], metric="bytes", groups=self._groups, start=start,
                                 end=end),
            figure_lag_histogram(self._frames["histogram_time"], metric="time", groups=self._groups, start=start,
                                 end=end),
            figure_page_cache(self._frames["cdf"], self._frames.get("page_cache"), start=start, end=end),
            figure_lag_over_time(self._frames["series"], metric="bytes", groups=self._groups, start=start, end=end),
            figure_burrow_status(self._burrow(), groups=self._groups, start=start, end=end),
            figure_burrow_partitions(self._burrow("burrow_partitions"), groups=self._groups, start=start, end=end),
        ]

    def _on_change(self, _change: dict) -> None:
        self._refresh()

    def _refresh(self) -> None:
        figures = self.figures()
        for widget, figure in zip((self.histogram, self.cache_figure, self.series_figure, self.burrow_figure,
                                   self.partition_figure), figures, strict=True):
            redraw(widget, figure)
        lines = len(figures[2].data)
        self.status.value = f"{lines} group-partition line(s) shown"


def _area_view(frames: Any, window: TimeWindow | None) -> ConsumerLagView:
    return ConsumerLagView(frames, window=window)


register_view("consumer_lag", _area_view)
