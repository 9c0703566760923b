"""The overview: every finding on one time axis, one lane per area, coloured by severity.

Input is the findings table as a small pandas frame (``Investigation.findings().toPandas()`` or
any rows of :data:`workbench.analysis.findings.FINDINGS_SCHEMA`). :func:`figure_findings_timeline`
draws it for reports; :class:`FindingsTimeline` adds the links of an interactive notebook: a time
range chosen here (typed, or zoomed on the plot) moves the shared :class:`~widgets.linking.TimeWindow`
every other view follows, and clicking a finding moves the window to it and opens its area's view.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as ipw
import pandas as pd
import plotly.graph_objects as go

from widgets._figure import FigureWidget, redraw
from widgets._frames import (
    TimeLike,
    format_time,
    plotly_text,
    require_columns,
    short_time,
    time_window,
    utc_naive,
)
from widgets.findings import SEVERITY_COLORS
from widgets.linking import TimeWindow
from widgets.tables import text_html
from workbench.errors import ConfigError

__all__ = ["FindingsTimeline", "figure_findings_timeline", "merge_for_display"]

FINDING_COLUMNS = ("area", "kind", "severity", "subject", "start", "end", "summary")
SEVERITIES = ("critical", "warning", "info")
#: Shortest bar drawn for a finding, as a share of the axis span (instants stay visible).
_MIN_SHARE = 0.004
_HOVER = "<b>%{customdata[0]}</b> · %{customdata[1]}<br>%{customdata[2]} → %{customdata[3]}<br>%{customdata[4]}" \
         "<extra></extra>"


def _prepare(findings: pd.DataFrame) -> pd.DataFrame:
    require_columns(findings, FINDING_COLUMNS, "findings frame")
    frame = findings.copy()
    frame["start"] = utc_naive(frame["start"])
    frame["end"] = utc_naive(frame["end"])
    frame = frame.dropna(subset=["start"])
    frame["end"] = frame["end"].fillna(frame["start"])
    frame["end"] = frame[["start", "end"]].max(axis=1)
    if "subject_type" not in frame.columns:
        frame["subject_type"] = ""
    return frame


def merge_for_display(findings: pd.DataFrame, max_bars: int = 2000) -> pd.DataFrame:
    """At most about ``max_bars`` bars: beyond it, overlapping findings of one area, kind and severity merge.

    A merged bar spans the union of its findings' intervals and its summary counts them ("12
    findings: under min isr on partition orders-0, ..."). Below ``max_bars`` the frame is returned
    as it is.

    Examples
    --------
    >>> f = pd.DataFrame({"area": ["isr"] * 3, "kind": ["under_min_isr"] * 3, "severity": ["critical"] * 3,
    ...     "subject": ["a-0", "b-0", "c-0"], "summary": ["x", "y", "z"],
    ...     "start": pd.to_datetime(["2026-03-01 03:00:00", "2026-03-01 03:00:05", "2026-03-01 04:00:00"]),
    ...     "end": pd.to_datetime(["2026-03-01 03:00:10", "2026-03-01 03:00:20", "2026-03-01 04:00:01"])})
    >>> merged = merge_for_display(f, max_bars=1)
    >>> list(merged["count"]), list(merged["subject"])
    ([2, 1], ['2 subjects', 'c-0'])
    """
    frame = _prepare(findings)
    if len(frame) <= max_bars:
        return frame.assign(count=1)
    rows = []
    for (area, kind, severity), part in frame.sort_values("start").groupby(["area", "kind", "severity"], sort=False):
        run: list[Any] = []
        reach = None
        for row in part.itertuples(index=False):
            if run and row.start > reach:
                rows.append(_merged(area, kind, severity, run))
                run = []
            reach = row.end if not run else max(reach, row.end)
            run.append(row)
        if run:
            rows.append(_merged(area, kind, severity, run))
    return pd.DataFrame(rows)


def _merged(area: str, kind: str, severity: str, run: list[Any]) -> dict[str, Any]:
    if len(run) == 1:
        r = run[0]
        return {"area": area, "kind": kind, "severity": severity, "subject": r.subject, "subject_type": r.subject_type,
                "start": r.start, "end": r.end, "summary": r.summary, "count": 1}
    subjects = sorted({str(r.subject) for r in run})
    shown = ", ".join(subjects[:5]) + (", ..." if len(subjects) > 5 else "")
    return {"area": area, "kind": kind, "severity": severity, "subject": f"{len(subjects)} subjects",
            "subject_type": run[0].subject_type, "start": min(r.start for r in run), "end": max(r.end for r in run),
            "summary": f"{len(run)} findings: {kind.replace('_', ' ')} on {shown}", "count": len(run)}


def figure_findings_timeline(
    findings: pd.DataFrame,
    *,
    titles: Mapping[str, str] | None = None,
    areas: Sequence[str] | None = None,
    start: TimeLike = None,
    end: TimeLike = None,
    max_bars: int = 2000,
    empty_text: str = "No finding: nothing the analyses look for happened in this bundle.",
) -> go.Figure:
    """All findings on one time axis: one lane per area, one bar per finding, severity colour.

    Parameters
    ----------
    findings : pandas.DataFrame
        Findings rows (needs ``area, kind, severity, subject, start, end, summary``).
    titles : mapping, optional
        Lane label per area (``{"isr": "ISR health (KIP-164)"}``); default the area name.
    areas : sequence of str, optional
        Lanes to draw, top to bottom, even when empty (default: the areas present, sorted).
    start, end : optional
        The x axis range (UTC when naive).
    max_bars : int
        Beyond this many findings, overlapping ones of an area and kind merge (:func:`merge_for_display`).
    empty_text : str
        What an empty figure says (the live overview says the findings are still being computed).

    Returns
    -------
    plotly.graph_objects.Figure
        One horizontal ``Bar`` trace per severity present (critical, warning, info); ``customdata``
        holds subject, kind, start, end and summary (escaped) for hover and clicks.

    Examples
    --------
    >>> f = pd.DataFrame({"area": ["isr"], "kind": ["offline"], "severity": ["critical"], "subject": ["t-0"],
    ...     "summary": ["topic t partition 0 was offline for 5.0 s"],
    ...     "start": pd.to_datetime(["2026-03-01 03:00:00"]), "end": pd.to_datetime(["2026-03-01 03:00:05"])})
    >>> fig = figure_findings_timeline(f, titles={"isr": "ISR"})
    >>> fig.data[0].name, list(fig.data[0].y), list(fig.data[0].x)
    ('critical', ['ISR'], [5000.0])
    """
    frame = merge_for_display(findings, max_bars)
    labels = dict(titles or {})
    lanes = list(areas) if areas is not None else sorted(set(frame["area"]))
    lo, hi = time_window(start, end)
    fig = go.Figure()
    title = "Findings over time, by area"
    if frame.empty:
        fig.update_layout(title=title, height=220, xaxis={"visible": False}, yaxis={"visible": False},
                          annotations=[{"text": plotly_text(empty_text),
                                        "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}])
        return fig
    span = (frame["end"].max() - frame["start"].min()).total_seconds() * 1000.0
    shortest = max(span * _MIN_SHARE, 1.0)
    for severity in SEVERITIES:
        part = frame[frame["severity"] == severity]
        if part.empty:
            continue
        durations = (part["end"] - part["start"]).dt.total_seconds() * 1000.0
        widths = [max(float(d), shortest) for d in durations]
        fig.add_trace(go.Bar(
            name=severity,
            orientation="h",
            y=[plotly_text(labels.get(a, a)) for a in part["area"]],
            base=[format_time(s) for s in part["start"]],
            x=widths,
            customdata=[[plotly_text(str(r.subject)), plotly_text(str(r.kind)), short_time(r.start),
                         short_time(r.end), plotly_text(str(r.summary))] for r in part.itertuples(index=False)],
            hovertemplate=_HOVER,
            marker={"color": SEVERITY_COLORS[severity], "line": {"width": 0}, "opacity": 0.75},
        ))
    lane_labels = [plotly_text(labels.get(a, a)) for a in lanes]
    fig.update_layout(
        title=title,
        barmode="group",  # one sub-row per severity within an area's lane: nothing hides anything
        bargap=0.2,
        height=max(220, 110 + 60 * len(lanes)),
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
        showlegend=True,
        legend={"title": {"text": "severity"}},
        xaxis={"type": "date", "title": {"text": "time (UTC)"}},
        yaxis={"type": "category", "categoryorder": "array", "categoryarray": lane_labels, "autorange": "reversed",
               "automargin": True},
    )
    if lo is not None or hi is not None:
        left = lo if lo is not None else frame["start"].min()
        right = hi if hi is not None else frame["end"].max()
        fig.update_xaxes(range=[format_time(left), format_time(right)], autorange=False)
    return fig


class FindingsTimeline(ipw.VBox):
    """Interactive overview: the findings timeline linked to a shared time window.

    Parameters
    ----------
    findings : pandas.DataFrame
        Findings rows (see :func:`figure_findings_timeline`).
    titles, areas : optional
        Lane labels and order.
    window : TimeWindow, optional
        The window shared with the notebook's other views (a new one by default).
    on_select : callable, optional
        Called with the clicked finding (a dict) after the window moved to it; the overview
        notebook opens the area's view there.
    pending : sequence of str, optional
        Areas whose findings are still being computed (see :meth:`update`).

    Attributes
    ----------
    start_box, end_box : ipywidgets.Text
        The window bounds, as text (UTC); editing one moves the window.
    figure : plotly.graph_objects.FigureWidget
    details : ipywidgets.HTML
        The clicked finding.
    """

    def __init__(self, findings: pd.DataFrame, *, titles: Mapping[str, str] | None = None,
                 areas: Sequence[str] | None = None, window: TimeWindow | None = None,
                 on_select: Callable[[dict[str, Any]], None] | None = None, pending: Sequence[str] = ()) -> None:
        self._frame = merge_for_display(findings)
        self._titles = dict(titles or {})
        self._areas = areas
        self.window = window or TimeWindow()
        self._on_select = on_select
        self._pending: tuple[str, ...] = tuple(pending)
        self.start_box = ipw.Text(description="From (UTC)", placeholder="2026-03-01 03:12:00",
                                  continuous_update=False)
        self.end_box = ipw.Text(description="To (UTC)", placeholder="2026-03-01 03:20:00", continuous_update=False)
        self.status = ipw.HTML()
        self.details = ipw.HTML()
        self.figure = FigureWidget(self._figure())
        self._bind_clicks()
        self._syncing = False
        self.start_box.observe(self._typed, names="value")
        self.end_box.observe(self._typed, names="value")
        self.window.observe(self._window_moved, names="range")
        self.figure.layout.on_change(self._zoomed, "xaxis.range")
        super().__init__(children=[ipw.HBox([self.start_box, self.end_box]), self.status, self.figure,
                                   self.details])
        self._window_moved({"new": self.window.range})

    def update(self, findings: pd.DataFrame, *, pending: Sequence[str] = ()) -> None:
        """Draw ``findings`` instead of the current ones, keeping the window, clicks and zoom links.

        The live overview fills the timeline area by area: ``pending`` names the areas whose
        findings are still being computed (said in the status line, and by an empty figure).
        """
        self._frame = merge_for_display(findings)
        self._pending = tuple(pending)
        redraw(self.figure, self._figure())  # the "computing" sentence leaves the page
        self.figure.layout.on_change(self._zoomed, "xaxis.range")  # a new layout object: link it again
        self._bind_clicks()
        self._window_moved({"new": self.window.range})

    def _figure(self) -> go.Figure:
        """The timeline of the current findings; while areas are pending, its empty text names them."""
        waiting = ", ".join(self._titles.get(a, a) for a in self._pending)
        empty = {"empty_text": f"Computing the findings of {waiting}..."} if waiting else {}
        return figure_findings_timeline(self._frame, titles=self._titles, areas=self._areas, **empty)

    def _bind_clicks(self) -> None:
        for trace in self.figure.data:
            trace.on_click(self._clicked)

    def _typed(self, _change: dict) -> None:
        if self._syncing:
            return
        try:
            self.window.set(self.start_box.value, self.end_box.value)
        except ConfigError as exc:
            self.status.value = f"<span style='color:#d62728'>{text_html(str(exc))}</span>"

    def _zoomed(self, _layout: Any, rng: Any) -> None:
        if self._syncing or not rng or len(rng) != 2:
            return
        self.window.set(rng[0], rng[1])

    def _window_moved(self, change: dict) -> None:
        lo, hi = change["new"]
        self._syncing = True
        try:
            self.start_box.value = "" if lo is None else short_time(lo)
            self.end_box.value = "" if hi is None else short_time(hi)
            with self.figure.batch_update():
                if lo is None and hi is None:
                    self.figure.layout.xaxis.autorange = True
                else:
                    left = lo if lo is not None else self._frame["start"].min()
                    right = hi if hi is not None else self._frame["end"].max()
                    self.figure.layout.xaxis.range = [format_time(left), format_time(right)]
            shown = self._in_window(lo, hi)
            pending = ", ".join(self._titles.get(a, a) for a in self._pending)
            self.status.value = (f"{shown} of {len(self._frame)} finding(s) in the window"
                                 + (f"; still computing: {text_html(pending)}" if pending else ""))
        finally:
            self._syncing = False

    def _in_window(self, lo: pd.Timestamp | None, hi: pd.Timestamp | None) -> int:
        frame = self._frame
        if frame.empty:
            return 0
        keep = pd.Series(True, index=frame.index)
        if lo is not None:
            keep &= frame["end"] >= lo
        if hi is not None:
            keep &= frame["start"] <= hi
        return int(keep.sum())

    def select(self, finding: Mapping[str, Any]) -> None:
        """Move the window around ``finding`` (a row) and show it; as a click on its bar does."""
        start, end = pd.Timestamp(finding["start"]), pd.Timestamp(finding["end"])
        pad = max((end - start) * 0.5, pd.Timedelta(seconds=5))
        self.window.set(start - pad, end + pad)
        self.details.value = (f"<p><b>{text_html(str(finding['severity']))}</b> · {text_html(str(finding['area']))}"
                              f" · {text_html(str(finding['subject']))}: {text_html(str(finding['summary']))}</p>")
        if self._on_select is not None:
            self._on_select(dict(finding))

    def _clicked(self, trace: Any, points: Any, _state: Any) -> None:
        if not points.point_inds:
            return
        severity = trace.name
        part = self._frame[self._frame["severity"] == severity].reset_index(drop=True)
        self.select(part.iloc[points.point_inds[0]].to_dict())
