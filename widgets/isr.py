"""ISR health view (KIP-164): partition state timeline and UnderMinIsrPartitionCount per broker.

Inputs are the small, aggregated pandas frames produced by :mod:`workbench.analysis.isr`
(collected with ``toPandas``), never raw metadata records:

* ``states`` — :func:`workbench.analysis.isr.partition_states`: one row per state interval of a
  partition (``topic, partition, start, end, leader, isr, replicas, elr, min_isr, state`` ...);
* ``counts`` — :func:`workbench.analysis.isr.under_min_isr_counts`: ``broker, time, count``, one
  row at each change of a leader broker's UnderMinIsrPartitionCount;
* ``summary`` — :func:`workbench.analysis.isr.partition_summary`: one row per partition.

The pure ``figure_*`` functions serve both the static report and the interactive
:class:`IsrTimeline`. Topic names come from logs and are untrusted: plotly interprets a subset
of HTML in labels and hover text, so every string taken from the data is escaped with
:func:`plotly_text` before it reaches a figure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import ipywidgets as ipw
import numpy as np
import pandas as pd
import plotly.colors
import plotly.graph_objects as go

from widgets._figure import FigureWidget, empty_figure, redraw
from widgets._frames import (
    LABEL_WORD,
    TimeLike,
    format_time,
    id_text,
    int_list,
    labelled,
    parse_time,
    plotly_text,
    require_columns,
    selection,
    short_time,
    time_window,
    utc_naive,
)
from widgets.linking import FollowsWindow, TimeWindow, register_view, report_window, slider_options, window_text
from workbench.analysis.isr import STATES
from workbench.errors import ConfigError

__all__ = [
    "STATES",
    "STATE_COLORS",
    "IsrTimeline",
    "figure_isr_timeline",
    "figure_under_min_isr",
    "partition_label",
    "plotly_text",
]

#: Bar colour per state.
STATE_COLORS: dict[str, str] = {
    "offline": "#222222",
    "under_min_isr": "#d62728",
    "at_min_isr": "#ff7f0e",
    "under_replicated": "#e3c000",
    "healthy": "#8fd18f",
}

STATE_LABELS: dict[str, str] = {
    "offline": "offline",
    "under_min_isr": "under min ISR",
    "at_min_isr": "at min ISR",
    "under_replicated": "under-replicated",
    "healthy": "healthy",
}

STATE_COLUMNS: tuple[str, ...] = (
    "topic",
    "partition",
    "start",
    "end",
    "leader",
    "isr",
    "replicas",
    "min_isr",
    "state",
)
COUNT_COLUMNS: tuple[str, ...] = ("broker", "time", "count")

_HOVER = (
    "<b>%{customdata[0]}</b> partition %{customdata[1]}<br>"
    "state: %{customdata[2]}<br>"
    "%{customdata[3]} → %{customdata[4]} (%{customdata[5]:.3f} s)<br>"
    "leader: %{customdata[6]}<br>"
    "ISR: %{customdata[7]}<br>"
    "replicas: %{customdata[8]}<br>"
    "ELR: %{customdata[9]}<br>"
    "min ISR: %{customdata[10]}"
    "<extra></extra>"
)

_MAX_SLIDER_STEPS = 400

#: An interval shorter than this share of the shown time span would draw as a bar narrower than
#: a pixel or two (a state that held for milliseconds, or a final state beginning at the log's
#: last record): it is also drawn as a marker at its start so that no state is invisible.
BRIEF_SHARE = 1 / 300


def partition_label(topic: str, partition: int) -> str:
    """Row label of a topic-partition, HTML-escaped for plotly (``topic-partition``).

    Examples
    --------
    >>> partition_label("payments", 3)
    'payments-3'
    >>> partition_label("<b>x</b>", 0)
    '&lt;b&gt;x&lt;/b&gt;-0'
    """
    return plotly_text(f"{topic}-{id_text(partition)}", LABEL_WORD)


def _prepare_states(states: pd.DataFrame) -> pd.DataFrame:
    require_columns(states, STATE_COLUMNS, "ISR states frame")
    frame = states.copy()
    frame["start"] = utc_naive(frame["start"])
    frame["end"] = utc_naive(frame["end"])
    if frame["end"].isna().any():
        last = pd.concat([frame["start"], frame["end"]]).max()
        frame["end"] = frame["end"].fillna(last)
    unknown = sorted(set(frame["state"].dropna()) - set(STATES))
    if unknown:
        raise ConfigError(f"ISR states frame: unknown state(s) {unknown}; expected one of {list(STATES)}")
    return frame


def _leader_text(leader: Any) -> str:
    if leader is None or pd.isna(leader) or int(leader) < 0:
        return "none"
    return str(int(leader))


def _min_isr_text(value: Any) -> str:
    if value is None or pd.isna(value):
        return "n/a"
    return str(int(value))


def _worst_partitions(
    frame: pd.DataFrame, limit: int, lo: pd.Timestamp | None, hi: pd.Timestamp | None
) -> tuple[pd.DataFrame, int]:
    """Keep the intervals of the ``limit`` least healthy partitions; also return how many there were."""
    keys = ["topic", "partition"]
    total = int(frame[keys].drop_duplicates().shape[0])
    if total <= limit:
        return frame, total
    begin = frame["start"] if lo is None else frame["start"].clip(lower=lo)
    finish = frame["end"] if hi is None else frame["end"].clip(upper=hi)
    # whole nanoseconds, summed exactly: partitions that tie, tie whatever the order of the sum
    span = (finish - begin).clip(lower=pd.Timedelta(0)).to_numpy().astype("int64")
    scores = pd.DataFrame(
        {
            "topic": frame["topic"],
            "partition": frame["partition"],
            "offline": np.where(frame["state"] == "offline", span, 0),
            "under_min": np.where(frame["state"] == "under_min_isr", span, 0),
            "unhealthy": np.where(frame["state"] != "healthy", span, 0),
        }
    )
    ranked = (
        scores.groupby(keys, sort=False, as_index=False)
        .sum()
        .sort_values(
            ["offline", "under_min", "unhealthy", "topic", "partition"],
            ascending=[False, False, False, True, True],
            kind="stable",
        )
        .head(limit)
    )
    kept = frame.merge(ranked[keys], on=keys, how="inner")
    return kept, total


def figure_isr_timeline(
    intervals: pd.DataFrame,
    *,
    topics: Iterable[str] | str | None = None,
    states: Iterable[str] | str | None = None,
    start: TimeLike = None,
    end: TimeLike = None,
    max_rows: int | None = 200,
    partitions_total: int | None = None,
) -> go.Figure:
    """Gantt-like timeline of partition states: one row per topic-partition, one bar per interval.

    Parameters
    ----------
    intervals : pandas.DataFrame
        State intervals as returned by ``workbench.analysis.isr.partition_states(...).toPandas()``;
        needs ``topic, partition, start, end, leader, isr, replicas, min_isr, state`` (``elr`` is
        shown when present).
    topics : iterable of str or str, optional
        Topics to show (a string is read as a comma-separated list). ``None``/empty: all.
    states : iterable of str or str, optional
        States to show, from :data:`STATES`. ``None``/empty: all.
    start, end : str, datetime or Timestamp, optional
        Time window (UTC when naive). Intervals that do not overlap it are left out, and the
        x axis is set to it.
    max_rows : int or None
        At most this many partitions (rows): the least healthy ones are kept (most offline time,
        then under min ISR, then otherwise unhealthy time, within the window) and the title says
        so. ``None``: all.
    partitions_total : int, optional
        How many partitions there are in all when ``intervals`` holds only the least healthy of
        them (:func:`workbench.analysis.isr.view_frames`): the title names both numbers.

    Returns
    -------
    plotly.graph_objects.Figure
        One horizontal ``Bar`` trace per state present (in :data:`STATES` order): ``base`` is the
        interval start, ``x`` its duration in milliseconds, ``y`` the partition label; hover shows
        leader, ISR, replicas, ELR and min ISR. Intervals too brief to see as a bar
        (:data:`BRIEF_SHARE`) are also drawn by a ``Scatter`` trace of markers at their start,
        named ``"<state> (brief)"``, right after their state's bars.

    Examples
    --------
    >>> frame = pd.DataFrame({
    ...     "topic": ["t"], "partition": [0], "leader": [1], "isr": [[1]], "replicas": [[1, 2]],
    ...     "min_isr": [2], "state": ["under_min_isr"],
    ...     "start": pd.to_datetime(["2026-01-01 03:00:00"]), "end": pd.to_datetime(["2026-01-01 03:00:42"])})
    >>> fig = figure_isr_timeline(frame)
    >>> fig.data[0].name, list(fig.data[0].x)
    ('under min ISR', [42000.0])
    """
    frame = _prepare_states(intervals)
    topic_sel = selection(topics)
    state_sel = selection(states)
    if state_sel is not None:
        unknown = sorted(set(state_sel) - set(STATES))
        if unknown:
            raise ConfigError(f"states: unknown state(s) {unknown}; expected some of {list(STATES)}")
    lo, hi = time_window(start, end)

    if topic_sel is not None:
        frame = frame[frame["topic"].astype(str).isin(topic_sel)]
    if state_sel is not None:
        frame = frame[frame["state"].isin(state_sel)]
    if lo is not None:
        frame = frame[frame["end"] > lo]
    if hi is not None:
        frame = frame[frame["start"] < hi]

    title = "Partition ISR state over time"
    if frame.empty:
        return empty_figure(title, "No partition state interval matches the filters.")
    total = int(frame[["topic", "partition"]].drop_duplicates().shape[0])
    shown = total
    if max_rows is not None:
        if max_rows < 1:
            raise ConfigError(f"max_rows: expected a positive number of partitions or None, got {max_rows}")
        frame, total = _worst_partitions(frame, max_rows, lo, hi)
        shown = min(total, max_rows)
    total = max(total, partitions_total or 0)
    if total > shown:
        title += f" (the {shown:,} least healthy of {total:,} partitions)"

    frame = frame.sort_values(["topic", "partition", "start"], kind="stable")
    rows = list(dict.fromkeys(partition_label(t, p) for t, p in zip(frame["topic"], frame["partition"], strict=True)))
    has_elr = "elr" in frame.columns
    left = lo if lo is not None else frame["start"].min()
    right = hi if hi is not None else frame["end"].max()
    brief_ms = max((right - left).total_seconds() * 1000.0 * BRIEF_SHARE, 0.0)

    fig = go.Figure()
    for state in STATES:
        part = frame[frame["state"] == state]
        if part.empty:
            continue
        duration_ms = (part["end"] - part["start"]).dt.total_seconds().to_numpy() * 1000.0
        customdata = [
            [
                plotly_text(str(row.topic)),
                "?" if pd.isna(row.partition) else int(row.partition),
                STATE_LABELS[state],
                short_time(row.start),
                short_time(row.end),
                dur / 1000.0,
                _leader_text(row.leader),
                int_list(row.isr),
                int_list(row.replicas),
                int_list(row.elr) if has_elr else "n/a",
                _min_isr_text(row.min_isr),
            ]
            for row, dur in zip(part.itertuples(index=False), duration_ms, strict=True)
        ]
        labels = [partition_label(t, p) for t, p in zip(part["topic"], part["partition"], strict=True)]
        fig.add_trace(
            go.Bar(
                name=STATE_LABELS[state],
                orientation="h",
                y=labels,
                base=[format_time(s) for s in part["start"]],
                x=[float(d) for d in duration_ms],
                customdata=customdata,
                hovertemplate=_HOVER,
                marker={"color": STATE_COLORS[state], "line": {"width": 0}},
                legendgroup=state,
            )
        )
        brief = np.flatnonzero(duration_ms < brief_ms)
        if brief.size:
            fig.add_trace(
                go.Scatter(
                    name=f"{STATE_LABELS[state]} (brief)",
                    mode="markers",
                    y=[labels[i] for i in brief],
                    x=[format_time(part["start"].iloc[i]) for i in brief],
                    customdata=[customdata[i] for i in brief],
                    hovertemplate=_HOVER,
                    marker={"color": STATE_COLORS[state], "symbol": "diamond", "size": 9,
                            "line": {"width": 1, "color": "#555555"}},
                    legendgroup=state,
                    showlegend=False,
                )
            )

    fig.update_layout(
        title=title,
        barmode="overlay",
        bargap=0.25,
        height=min(max(320, 160 + 26 * len(rows)), 4000),  # room for the legend
        showlegend=True,
        legend={"title": {"text": "state"}, "traceorder": "normal"},
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
        xaxis={"type": "date", "title": {"text": "time (UTC)"}},
        yaxis={
            "type": "category",
            "categoryorder": "array",
            "categoryarray": rows,
            "autorange": "reversed",
            "automargin": True,
            "title": {"text": "topic-partition"},
        },
    )
    if lo is not None or hi is not None:
        fig.update_xaxes(range=[format_time(left), format_time(right)], autorange=False)
    return fig


def figure_under_min_isr(counts: pd.DataFrame, start: TimeLike = None, end: TimeLike = None, *,
                         reported: pd.DataFrame | None = None) -> go.Figure:
    """Step lines of UnderMinIsrPartitionCount per leader broker (the KIP-164 metric, computed).

    Each broker's series holds its value until the next change (``line_shape="hv"``). So that the
    last level stays visible, every series is extended to the window end (``end``, or else the
    latest change of any broker); with ``start`` the value in force at ``start`` opens the series.

    Parameters
    ----------
    counts : pandas.DataFrame
        ``broker, time, count`` as returned by
        ``workbench.analysis.isr.under_min_isr_counts(...).toPandas()``.
    start, end : str, datetime or Timestamp, optional
        Time window (UTC when naive); sets the x axis range.
    reported : pandas.DataFrame, optional
        Kafka's own samples of the metric (``broker, time, count``, from
        ``workbench.analysis.isr.reported_under_min_isr``), drawn as markers in the colour of
        the broker's computed line, so a reader sees both agree.

    Returns
    -------
    plotly.graph_objects.Figure
        One ``Scatter`` trace per broker, named ``broker <id>``, in broker id order; then one
        marker trace per broker with reported samples, named ``broker <id> (reported)``.

    Examples
    --------
    >>> counts = pd.DataFrame({"broker": [1, 1], "count": [1, 0],
    ...     "time": pd.to_datetime(["2026-01-01 03:00:00", "2026-01-01 03:00:42"])})
    >>> fig = figure_under_min_isr(counts)
    >>> fig.data[0].line.shape, list(fig.data[0].y)
    ('hv', [1, 0])
    """
    require_columns(counts, COUNT_COLUMNS, "UnderMinIsrPartitionCount frame")
    lo, hi = time_window(start, end)
    frame = counts.copy()
    frame["time"] = utc_naive(frame["time"])
    frame = frame.dropna(subset=["broker", "time", "count"]).sort_values(["broker", "time"], kind="stable")

    title = "UnderMinIsrPartitionCount per leader broker"
    if frame.empty:
        return empty_figure(title, "No UnderMinIsrPartitionCount change recorded.")

    right = hi if hi is not None else frame["time"].max()
    fig = go.Figure()
    palette = plotly.colors.qualitative.Plotly
    brokers = sorted({int(b) for b in frame["broker"]} | (
        set() if reported is None else {int(b) for b in reported["broker"].dropna()}))
    color = {b: palette[i % len(palette)] for i, b in enumerate(brokers)}
    for broker, series in frame.groupby("broker", sort=True):
        times = list(series["time"])
        values = [int(v) for v in series["count"]]
        if lo is not None:
            before = [i for i, t in enumerate(times) if t <= lo]
            if before:
                keep = before[-1]
                times = [lo] + times[keep + 1 :]
                values = values[keep:]
            # nothing known before the window: the series starts at its first change
        if hi is not None:
            inside = [i for i, t in enumerate(times) if t <= hi]
            times = [times[i] for i in inside]
            values = [values[i] for i in inside]
        if not times:
            continue
        if times[-1] < right:
            times.append(right)
            values.append(values[-1])
        fig.add_trace(
            go.Scatter(
                name=f"broker {int(broker)}",
                x=[format_time(t) for t in times],
                y=values,
                mode="lines",
                line={"shape": "hv", "width": 2, "color": color[int(broker)]},
                legendgroup=f"broker {int(broker)}",
                hovertemplate="broker " + str(int(broker)) + "<br>%{x}<br>%{y} partition(s)<extra></extra>",
            )
        )
    if reported is not None and not reported.empty:
        require_columns(reported, COUNT_COLUMNS, "reported UnderMinIsrPartitionCount frame")
        samples = reported.copy()
        samples["time"] = utc_naive(samples["time"])
        samples = samples.dropna(subset=["broker", "time", "count"]).sort_values(["broker", "time"], kind="stable")
        if lo is not None:
            samples = samples[samples["time"] >= lo]
        if hi is not None:
            samples = samples[samples["time"] <= hi]
        for broker, series in samples.groupby("broker", sort=True):
            fig.add_trace(
                go.Scatter(
                    name=f"broker {int(broker)} (reported)",
                    x=[format_time(t) for t in series["time"]],
                    y=[int(v) for v in series["count"]],
                    mode="markers",
                    marker={"symbol": "circle-open", "size": 6, "color": color[int(broker)]},
                    legendgroup=f"broker {int(broker)}",
                    hovertemplate=(
                        "broker " + str(int(broker)) + " reported<br>%{x}<br>%{y} partition(s)<extra></extra>"
                    ),
                )
            )
    fig.update_layout(
        title=title,
        height=320,
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
        legend={"title": {"text": "leader"}},
        xaxis={"type": "date", "title": {"text": "time (UTC)"}},
        yaxis={"title": {"text": "partitions under min ISR"}, "rangemode": "tozero", "tickformat": "d"},
    )
    if max((max(t.y) for t in fig.data if t.y), default=0) <= 10:
        # a whole tick per partition: on plotly's own half steps "d" labels repeat (0, 1, 1, 2, 2)
        fig.update_yaxes(tick0=0, dtick=1)
    if lo is not None or hi is not None:
        left = lo if lo is not None else frame["time"].min()
        fig.update_xaxes(range=[format_time(left), format_time(right)], autorange=False)
    return fig


def _boundaries(states: pd.DataFrame, counts: pd.DataFrame) -> list[pd.Timestamp]:
    times = pd.concat([states["start"], states["end"], counts["time"]]).dropna().unique()
    stamps = sorted(pd.Timestamp(t) for t in times)
    if len(stamps) > _MAX_SLIDER_STEPS:
        picks = np.unique(np.linspace(0, len(stamps) - 1, _MAX_SLIDER_STEPS).round().astype(int))
        stamps = [stamps[i] for i in picks]
    return stamps


def _initial_index(stamps: list[pd.Timestamp], lo: pd.Timestamp | None, hi: pd.Timestamp | None) -> tuple[int, int]:
    """Slider indices covering ``[lo, hi]``: the last boundary <= lo, the first >= hi."""
    if not stamps:
        return 0, 0
    first, last = 0, len(stamps) - 1
    if lo is not None:
        first = max([i for i, t in enumerate(stamps) if t <= lo], default=0)
    if hi is not None:
        last = min([i for i, t in enumerate(stamps) if t >= hi], default=len(stamps) - 1)
    if first > last:
        first, last = last, first
    return first, last


class IsrTimeline(FollowsWindow, ipw.VBox):
    """Interactive ISR view: topic, state and time filters over the timeline and the counts.

    Controls update the two ``FigureWidget``s in place. A static (papermill/HTML) report draws
    :meth:`report_figures` instead (:func:`widgets.linking.show`): widget state does not render
    offline.

    Parameters
    ----------
    states : pandas.DataFrame
        State intervals (see :func:`figure_isr_timeline`).
    counts : pandas.DataFrame
        UnderMinIsrPartitionCount step series (see :func:`figure_under_min_isr`).
    topics : iterable of str or str, optional
        Topics selected at first (a string is read as a comma-separated list); unknown ones
        are ignored. The report's timeline shows these topics.
    start, end : str, datetime or Timestamp, optional
        Initial time window, widened to the nearest interval boundaries; exactly the report's
        window (when neither is given: the shared window's range).
    window : widgets.linking.TimeWindow, optional
        A window shared with other views: when it moves, the time slider follows.
    partitions_total : int, optional
        How many partitions there are in all when ``states`` holds only the least healthy of them
        (:func:`workbench.analysis.isr.view_frames`); the timeline's title says so while no topic
        is selected, and the report's always does.
    reported : pandas.DataFrame, optional
        The brokers' own UnderMinIsrPartitionCount samples (``broker, time, count``), drawn as
        markers beside the computed counts (see :func:`figure_under_min_isr`).

    Attributes
    ----------
    topic_filter : ipywidgets.SelectMultiple
        Topics to show; nothing selected means all topics.
    state_filter : ipywidgets.SelectMultiple
        States to show; nothing selected means all states.
    time_range : ipywidgets.SelectionRangeSlider
        Time window over the interval boundaries (values are naive UTC ``Timestamp``s).
    timeline : plotly.graph_objects.FigureWidget
        The partition state timeline.
    counts_figure : plotly.graph_objects.FigureWidget
        UnderMinIsrPartitionCount per broker over the same window.

    Examples
    --------
    >>> view = IsrTimeline(states_pdf, counts_pdf)  # doctest: +SKIP
    >>> view.topic_filter.value = ("payments",)     # doctest: +SKIP
    >>> view                                         # doctest: +SKIP
    """

    def __init__(
        self,
        states: pd.DataFrame,
        counts: pd.DataFrame,
        *,
        topics: Iterable[str] | str | None = None,
        start: TimeLike = None,
        end: TimeLike = None,
        window: TimeWindow | None = None,
        partitions_total: int | None = None,
        reported: pd.DataFrame | None = None,
    ) -> None:
        self._given_states, self._topics, self._start, self._end = states, topics, start, end  # for the report
        self._reported = reported
        self._shared = window
        self._states = _prepare_states(states)
        self._partitions_total = partitions_total
        require_columns(counts, COUNT_COLUMNS, "UnderMinIsrPartitionCount frame")
        self._counts = counts.copy()
        self._counts["time"] = utc_naive(self._counts["time"])

        topics_present = sorted(set(self._states["topic"].astype(str)))
        present = set(self._states["state"])
        wanted = set(selection(topics) or ())
        self.topic_filter = ipw.SelectMultiple(
            options=labelled(topics_present),
            value=tuple(t for t in topics_present if t in wanted),
            rows=min(8, max(3, len(topics_present))),
            description="Topics",
            tooltip="None selected: all topics",
        )
        self.state_filter = ipw.SelectMultiple(
            options=[(STATE_LABELS[s], s) for s in STATES if s in present] or [(STATE_LABELS[s], s) for s in STATES],
            value=(),
            rows=5,
            description="States",
            tooltip="None selected: all states",
        )
        stamps = _boundaries(self._states, self._counts)
        if stamps:
            options = slider_options(stamps)
        else:
            options = [("(no data)", pd.Timestamp(0))]
        self.time_range = ipw.SelectionRangeSlider(
            options=options,
            index=_initial_index(stamps, parse_time(start, "start"), parse_time(end, "end")),
            description="Time (UTC)",
            continuous_update=False,
            disabled=not stamps,
            layout=ipw.Layout(width="98%"),
            style={"description_width": "initial"},
        )
        self.status = ipw.HTML()
        self.timeline = FigureWidget()
        self.counts_figure = FigureWidget()
        self._stamps = stamps
        self._start_following(window, (self.topic_filter, self.state_filter, self.time_range))

        help_text = ipw.HTML(
            "<small>Select nothing to show all topics / states. Ctrl/Shift-click selects several.</small>"
        )
        super().__init__(
            children=[
                ipw.HBox([self.topic_filter, self.state_filter]),
                help_text,
                self.time_range,
                self.status,
                self.timeline,
                self.counts_figure,
            ]
        )

    def figures(self) -> tuple[go.Figure, go.Figure]:
        """Plain (static) figures for the current control values, e.g. for export."""
        lo, hi = self.window()
        topics = self.topic_filter.value or None
        states = self.state_filter.value or None
        return (
            figure_isr_timeline(self._states, topics=topics, states=states, start=lo, end=hi,
                                partitions_total=None if topics or states else self._partitions_total),
            figure_under_min_isr(self._counts, start=lo, end=hi, reported=self._reported),
        )

    def report_figures(self) -> list[go.Figure]:
        """The static report's figure: the timeline of the given topics over the report's window.

        The UnderMinIsrPartitionCount figure is not among them: the report draws it in a section
        of its own (:func:`figure_under_min_isr`).
        """
        lo, hi = report_window(self._start, self._end, self._shared)
        return [figure_isr_timeline(self._given_states, topics=self._topics, start=lo, end=hi,
                                    partitions_total=self._partitions_total)]

    def _refresh(self) -> None:
        timeline, counts = self.figures()
        for widget, figure in ((self.timeline, timeline), (self.counts_figure, counts)):
            redraw(widget, figure)
        shown = sum(len(trace.x) for trace in timeline.data if trace.type == "bar")
        rows = len(timeline.layout.yaxis.categoryarray or ())
        self.status.value = f"{shown} interval(s) on {rows} partition(s) shown, {window_text(*self.window())}"


def _area_view(frames: Any, window: TimeWindow | None) -> IsrTimeline:
    sizes = frames.get("partitions")
    total = int(sizes["partitions"].iloc[0]) if sizes is not None and len(sizes) else None
    return IsrTimeline(frames["states"], frames["counts"], window=window, partitions_total=total,
                       reported=frames.get("reported"))


register_view("isr", _area_view)
