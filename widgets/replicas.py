"""Replica consistency view: each replica's offset range of a partition, and the batches where replicas differ.

Inputs are the small pandas frames of :mod:`workbench.analysis.replicas` (its ``view_frames``,
collected with ``toPandas``):

* ``ranges`` — one row per replica (a partition's copy on one node), the partitions with most
  differences first: ``cluster_id, topic, partition, node_id, log_start_offset, log_end_offset,
  batches, records, compared_from, shared_start, shared_end, compared_batches, divergent_batches,
  missing_batches, first_time, last_time``;
* ``differences`` — one row per batch that differs: ``cluster_id, topic, partition, node_id, kind``
  (``divergent`` or ``missing``), ``base_offset, last_offset, records, leader_epoch, time, others``;
* ``epochs`` (optional) — one row per entry of each replica's ``leader-epoch-checkpoint``:
  ``cluster_id, topic, partition, node_id, epoch, start_offset, end_offset, leader, elected, unclean``.

The pure ``figure_*`` functions serve the static report and the interactive :class:`ReplicasView`.
Topic names and cluster ids come from the files and are untrusted: each is escaped with
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
    id_text,
    labelled,
    plotly_text,
    require_columns,
    selection,
    short_time,
    time_window,
    utc_naive,
)
from widgets.linking import TimeWindow, register_view, report_window, window_text

__all__ = ["ReplicasView", "figure_batches_by_partition", "figure_replica_ranges"]

RANGE_COLUMNS = ("cluster_id", "topic", "partition", "node_id", "log_start_offset", "log_end_offset", "batches",
                 "records", "compared_from", "shared_start", "shared_end", "compared_batches", "divergent_batches",
                 "missing_batches", "first_time", "last_time")
DIFFERENCE_COLUMNS = ("cluster_id", "topic", "partition", "node_id", "kind", "base_offset", "last_offset", "records",
                      "leader_epoch", "time", "others")
EPOCH_COLUMNS = ("cluster_id", "topic", "partition", "node_id", "epoch", "start_offset", "end_offset", "leader",
                 "elected", "unclean")
#: Where each replica's epochs begin: an epoch of a clean (or unknown) election, and of an unclean one.
EPOCH_COLOURS = {"epoch starts": "#393b79", "epoch starts (unclean election)": "#8c0000"}
#: How a differing batch is drawn by its kind.
KIND_COLOURS = {"divergent": "#d62728", "missing": "#ff7f0e"}
#: The per-partition bars: batches the same on every replica, then the differing ones.
BAR_COLOURS = {"same": "#aec7e8", **KIND_COLOURS}
#: Opacity of a differing batch whose time falls outside the window.
DIMMED = 0.25

Key = tuple[Any, Any, Any]  # cluster id, topic, partition


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _same(value: Any, wanted: Any) -> bool:
    """Equality where two missing values are the same (a cluster id or partition may be null)."""
    if value is None or pd.isna(value):
        return wanted is None or bool(pd.isna(wanted))
    return wanted is not None and not pd.isna(wanted) and value == wanted


def _rows_of(frame: pd.DataFrame, key: Key) -> pd.DataFrame:
    cluster, topic, partition = key
    mask = [_same(c, cluster) and _same(t, topic) and _same(p, partition)
            for c, t, p in zip(frame["cluster_id"], frame["topic"], frame["partition"], strict=True)]
    return frame[pd.Series(mask, index=frame.index, dtype=bool)]   # a plain empty list would select no column


def _keys(ranges: pd.DataFrame) -> list[Key]:
    """The partitions of ``ranges`` in its order (most differences first)."""
    return list(dict.fromkeys(
        (None if pd.isna(c) else c, None if pd.isna(t) else t, None if pd.isna(p) else int(p))
        for c, t, p in zip(ranges["cluster_id"], ranges["topic"], ranges["partition"], strict=True)))


def _several_clusters(ranges: pd.DataFrame) -> bool:
    return ranges["cluster_id"].astype(object).where(ranges["cluster_id"].notna(), None).nunique(dropna=False) > 1


def _partition_text(key: Key, with_cluster: bool) -> str:
    """A partition as plain text (escape it for where it goes), its cluster named when the frames hold several."""
    cluster, topic, partition = key
    text = f"{topic}-{id_text(partition)}"
    return f"{text} @{'?' if cluster is None else cluster}" if with_cluster else text


def _node_label(node: Any) -> str:
    return f"node {id_text(node)}"


def figure_replica_ranges(ranges: pd.DataFrame, differences: pd.DataFrame, *, topic: str | None = None,
                          partition: int | None = None, cluster_id: str | None = None, start: TimeLike = None,
                          end: TimeLike = None, epochs: pd.DataFrame | None = None) -> go.Figure:
    """One partition's replicas as bars over offsets, the range they all hold shaded, the differing batches over them.

    Each replica's bar runs from its log start to its log end; the part below its ``compared_from``
    (rewritten by each replica's log cleaner on its own) is grey. A divergent batch (red) holds other
    contents than the other replicas at its offsets; a missing batch (orange) is one the others hold
    and this replica lacks inside its own range. A batch whose time falls outside the window
    (``start``/``end``) is dimmed; one of unknown time is drawn as inside it. With ``epochs``, a tick
    on each replica's bar marks where each of its leader epochs begins (its checkpoint), dark red
    for an epoch an unclean election began: replicas whose ticks disagree held different data.

    Without ``topic``/``partition``: the first partition of ``ranges`` (the one with most
    differences). ``cluster_id`` picks among partitions of the same name in several clusters
    (``None``: the first in ``ranges``).

    Examples
    --------
    >>> r = pd.DataFrame({"cluster_id": ["c", "c"], "topic": ["t", "t"], "partition": [0, 0], "node_id": [1, 2],
    ...     "log_start_offset": [0, 0], "log_end_offset": [10, 8], "batches": [2, 2], "records": [10, 8],
    ...     "compared_from": [None, None], "shared_start": [0, 0], "shared_end": [8, 8], "compared_batches": [2, 2],
    ...     "divergent_batches": [0, 1], "missing_batches": [0, 0], "first_time": [None, None],
    ...     "last_time": [None, None]})
    >>> d = pd.DataFrame({"cluster_id": ["c"], "topic": ["t"], "partition": [0], "node_id": [2],
    ...     "kind": ["divergent"], "base_offset": [5], "last_offset": [7], "records": [3], "leader_epoch": [1],
    ...     "time": [None], "others": ["1"]})
    >>> fig = figure_replica_ranges(r, d)
    >>> [(tr.name, list(tr.y), list(tr.base), list(tr.x)) for tr in fig.data if tr.name == "divergent"]
    [('divergent', ['node 2'], [5.0], [3.0])]
    """
    require_columns(ranges, RANGE_COLUMNS, "replica ranges")
    require_columns(differences, DIFFERENCE_COLUMNS, "replica differences")
    if ranges.empty:
        return empty_figure("Replica ranges", "No partition has copies on several nodes.")
    keys = _keys(ranges)
    if topic is None:
        key = keys[0]
    else:
        matching = [k for k in keys if _same(k[1], topic) and _same(k[2], partition)
                    and (cluster_id is None or _same(k[0], cluster_id))]
        key = matching[0] if matching else (cluster_id, topic, partition)
    label = plotly_text(_partition_text(key, _several_clusters(ranges)), LABEL_WORD)
    title = f"{label}: each replica's offsets and the batches that differ"
    replicas = _rows_of(ranges, key)
    if replicas.empty:
        return empty_figure(title, "No replica of this partition in the frames.")
    lo, hi = time_window(start, end)
    replicas = replicas.assign(_order=replicas["node_id"].isna(), first_time=utc_naive(replicas["first_time"]),
                               last_time=utc_naive(replicas["last_time"]))
    replicas = replicas.sort_values(["_order", "node_id"], kind="stable")
    nodes = list(dict.fromkeys(_node_label(n) for n in replicas["node_id"]))
    fig = go.Figure()

    logs: dict[str, list[Any]] = {"y": [], "base": [], "x": [], "text": []}
    cleaned: dict[str, list[Any]] = {"y": [], "base": [], "x": [], "text": []}
    for row in replicas.itertuples(index=False):
        first, last = _number(row.log_start_offset), _number(row.log_end_offset)
        if first is None or last is None:
            continue
        node = _node_label(row.node_id)
        compared = _number(row.compared_from)
        times = [short_time(t) if pd.notna(t) else "?" for t in (row.first_time, row.last_time)]
        text = (f"{node}: log start {id_text(row.log_start_offset)}, log end {id_text(row.log_end_offset)}<br>"
                f"{id_text(row.batches)} batches, {id_text(row.records)} records, {times[0]} to {times[1]} UTC<br>"
                f"{id_text(row.divergent_batches)} divergent, {id_text(row.missing_batches)} missing")
        if compared is not None:
            text += f"<br>compared from offset {id_text(row.compared_from)}"
        logs["y"].append(node)
        logs["base"].append(first)
        logs["x"].append(last - first)
        logs["text"].append(text)
        if compared is not None and compared > first:
            cleaned["y"].append(node)
            cleaned["base"].append(first)
            cleaned["x"].append(min(compared, last) - first)
            cleaned["text"].append(f"{node}: offsets {id_text(row.log_start_offset)} to {id_text(row.compared_from)} "
                                   "not compared (each replica's log cleaner rewrote them on its own)")
    if logs["y"]:
        fig.add_trace(go.Bar(name="replica's log", orientation="h", marker={"color": "#aec7e8"}, width=0.6,
                             textposition="none", hovertemplate="%{text}<extra></extra>", **logs))
    if cleaned["y"]:
        fig.add_trace(go.Bar(name="not compared (cleaned)", orientation="h", marker={"color": "#c7c7c7"}, width=0.6,
                             textposition="none", hovertemplate="%{text}<extra></extra>", **cleaned))

    mine = _rows_of(differences, key).copy()
    mine["time"] = utc_naive(mine["time"])
    outside = pd.Series(False, index=mine.index)
    if lo is not None:
        outside |= mine["time"] < lo
    if hi is not None:
        outside |= mine["time"] > hi
    for dimmed in (False, True):
        for kind, colour in KIND_COLOURS.items():
            batches = mine[(mine["kind"] == kind) & (outside == dimmed)]
            batches = batches[batches["base_offset"].notna() & batches["last_offset"].notna()]
            if batches.empty:
                continue
            ys, bases, widths, texts = [], [], [], []
            for b in batches.sort_values("base_offset", kind="stable").itertuples(index=False):
                node = _node_label(b.node_id)
                if node not in nodes:
                    nodes.append(node)
                when = short_time(b.time) + " UTC" if pd.notna(b.time) else "unknown time"
                others = plotly_text(str(b.others)) if pd.notna(b.others) else "?"
                held = "other version on" if kind == "divergent" else "held by"
                ys.append(node)
                bases.append(float(b.base_offset))
                widths.append(float(b.last_offset) - float(b.base_offset) + 1)
                texts.append(f"{node}: {kind} batch, offsets {id_text(b.base_offset)} to {id_text(b.last_offset)}"
                             f"<br>{id_text(b.records)} records, leader epoch {id_text(b.leader_epoch)}, {when}"
                             f"<br>{held} node(s) {others}" + ("<br>outside the window" if dimmed else ""))
            # the outline keeps a batch of a few offsets visible on an axis of millions
            fig.add_trace(go.Bar(name=f"{kind} (outside the window)" if dimmed else kind, orientation="h",
                                 y=ys, base=bases, x=widths, width=0.3, text=texts, textposition="none",
                                 opacity=DIMMED if dimmed else 1.0,
                                 marker={"color": colour, "line": {"color": colour, "width": 2}},
                                 hovertemplate="%{text}<extra></extra>"))

    if epochs is not None:
        _draw_epochs(fig, _rows_of(epochs, key), nodes)

    first_row = replicas.iloc[0]
    shared = (_number(first_row["shared_start"]), _number(first_row["shared_end"]))
    if shared[0] is not None and shared[1] is not None and shared[1] > shared[0]:
        fig.add_vrect(x0=shared[0], x1=shared[1], fillcolor="#2ca02c", opacity=0.12, line_width=0, layer="below")
        fig.add_annotation(x=(shared[0] + shared[1]) / 2, y=1.0, xref="x", yref="paper", yanchor="bottom",
                           showarrow=False,
                           text=f"held by every replica: {id_text(shared[0])} to {id_text(shared[1])}")
    if lo is not None or hi is not None:
        title += f" (batches outside {plotly_text(window_text(lo, hi))} dimmed)"
    fig.update_layout(title=title, barmode="overlay", height=160 + 45 * len(nodes),
                      margin={"l": 10, "r": 10, "t": 80, "b": 40},
                      xaxis={"title": {"text": "offset"}},
                      yaxis={"categoryorder": "array", "categoryarray": nodes, "autorange": "reversed"})
    return fig


def _draw_epochs(fig: go.Figure, epochs: pd.DataFrame, nodes: list[str]) -> None:
    """Ticks where each replica's leader epochs begin: a trace for clean (or unknown) elections, one for unclean."""
    require_columns(epochs, EPOCH_COLUMNS, "replica epochs")
    epochs = epochs[epochs["start_offset"].notna()].sort_values(["node_id", "epoch"], kind="stable")
    unclean = epochs["unclean"].astype("boolean").fillna(False).astype(bool)
    for bad, (name, colour) in zip((False, True), EPOCH_COLOURS.items(), strict=True):
        rows = epochs[unclean == bad]
        if rows.empty:
            continue
        ys, xs, labels, texts = [], [], [], []
        for e in rows.itertuples(index=False):
            node = _node_label(e.node_id)
            if node not in nodes:
                nodes.append(node)
            led = f"led by broker {id_text(e.leader)}" if pd.notna(e.leader) else "leader not in the metadata log"
            when = f", elected {short_time(e.elected)} UTC" if pd.notna(e.elected) else ""
            until = f" to {id_text(e.end_offset)}" if pd.notna(e.end_offset) else ""
            ys.append(node)
            xs.append(float(e.start_offset))
            labels.append(f"e{id_text(e.epoch)}")
            texts.append(f"{node}: epoch {id_text(e.epoch)} from offset {id_text(e.start_offset)}{until}<br>{led}{when}"
                         + ("<br>an unclean election (a leader from outside the ISR)" if bad else ""))
        fig.add_trace(go.Scatter(name=name, x=xs, y=ys, mode="markers+text", text=labels, customdata=texts,
                                 textposition="top center", textfont={"color": colour, "size": 10},
                                 marker={"symbol": "line-ns-open", "size": 22, "color": colour,
                                         "line": {"color": colour, "width": 3 if bad else 2}},
                                 hovertemplate="%{customdata}<extra></extra>"))


def figure_batches_by_partition(ranges: pd.DataFrame, *, topics: Iterable[str] | str | None = None) -> go.Figure:
    """The batches compared per partition, added up over its replicas: the same, divergent and missing ones.

    Every partition of the frames is drawn (most differences first), so a healthy bundle shows what
    was compared; the title says when no batch differs.

    Examples
    --------
    >>> r = pd.DataFrame({"cluster_id": ["c"] * 2, "topic": ["t"] * 2, "partition": [0, 0], "node_id": [1, 2],
    ...     "log_start_offset": [0, 0], "log_end_offset": [9, 9], "batches": [3, 3], "records": [9, 9],
    ...     "compared_from": [None, None], "shared_start": [0, 0], "shared_end": [9, 9], "compared_batches": [3, 2],
    ...     "divergent_batches": [1, 1], "missing_batches": [0, 1], "first_time": [None, None],
    ...     "last_time": [None, None]})
    >>> [(tr.name, list(tr.x), list(tr.y)) for tr in figure_batches_by_partition(r).data]
    [('same', ['t-0'], [3]), ('divergent', ['t-0'], [2]), ('missing', ['t-0'], [1])]
    """
    require_columns(ranges, RANGE_COLUMNS, "replica ranges")
    title = "Batches compared per partition"
    frame = ranges
    wanted = selection(topics)
    if wanted is not None:
        frame = frame[frame["topic"].astype(str).isin(wanted)]
    several = _several_clusters(ranges)
    labels: list[str] = []
    counts: dict[str, list[int]] = {kind: [] for kind in BAR_COLOURS}
    details: list[str] = []
    for key in _keys(frame):
        rows = _rows_of(frame, key)
        compared = rows["compared_batches"].fillna(0).astype(int)
        divergent = rows["divergent_batches"].fillna(0).astype(int)
        missing = rows["missing_batches"].fillna(0).astype(int)
        labels.append(plotly_text(_partition_text(key, several), LABEL_WORD))
        counts["same"].append(int((compared - divergent).sum()))
        counts["divergent"].append(int(divergent.sum()))
        counts["missing"].append(int(missing.sum()))
        details.append("<br>".join(f"{_node_label(n)}: {c} compared, {d} divergent, {m} missing"
                                   for n, c, d, m in zip(rows["node_id"], compared, divergent, missing, strict=True)))
    if not labels:
        chosen = " of these topics" if wanted is not None else ""
        return empty_figure(title, f"No partition{chosen} has copies on several nodes.")
    if not any(counts["divergent"]) and not any(counts["missing"]):
        title += ": every replica holds the same batches over the offsets it shares"
    fig = go.Figure()
    for kind, colour in BAR_COLOURS.items():
        fig.add_trace(go.Bar(name=kind, x=labels, y=counts[kind], marker={"color": colour}, text=details,
                             textposition="none",
                             hovertemplate=f"%{{x}}<br>%{{y}} {kind} batch(es)<br>%{{text}}<extra></extra>"))
    fig.update_layout(title=title, barmode="stack", height=380, margin={"l": 10, "r": 10, "t": 60, "b": 40},
                      xaxis={"type": "category", "title": {"text": "partition"}},
                      yaxis={"title": {"text": "batches (added up over the replicas)"}, "rangemode": "tozero"})
    return fig


class ReplicasView(ipw.VBox):
    """Interactive replica consistency view: the batches compared per partition, and one partition's replicas.

    Parameters
    ----------
    ranges, differences : pandas.DataFrame
        The area's ``ranges`` and ``differences`` view frames (``toPandas()``).
    epochs : pandas.DataFrame, optional
        The area's ``epochs`` view frame: where each replica's leader epochs begin, drawn on its bar.
    start, end : str, datetime or Timestamp, optional
        The window shown at first, and the report's (neither: the shared window's range).
    window : widgets.linking.TimeWindow, optional
        A window shared with other views: differing batches outside it are dimmed.

    Examples
    --------
    >>> view = ReplicasView(frames["ranges"], frames["differences"], window=inv.window)   # doctest: +SKIP
    """

    def __init__(self, ranges: pd.DataFrame, differences: pd.DataFrame, *, start: TimeLike = None,
                 end: TimeLike = None, window: TimeWindow | None = None, epochs: pd.DataFrame | None = None) -> None:
        require_columns(ranges, RANGE_COLUMNS, "replica ranges")
        require_columns(differences, DIFFERENCE_COLUMNS, "replica differences")
        if epochs is not None:
            require_columns(epochs, EPOCH_COLUMNS, "replica epochs")
        self._ranges, self._differences, self._epochs = ranges, differences, epochs
        self._start, self._end, self._shared = start, end, window
        self._lo, self._hi = time_window(start, end)
        if window is not None and window.range != (None, None):
            self._lo, self._hi = window.range
        keys = _keys(ranges)
        several = _several_clusters(ranges) if keys else False
        names = labelled([_partition_text(k, several) for k in keys])   # shown readable, the key kept as value
        options = [(shown, key) for (shown, _), key in zip(names, keys, strict=True)]
        self.partition_choice = ipw.Dropdown(options=options, value=keys[0] if keys else None, description="Partition")
        self.status = ipw.HTML()
        self.partitions_figure = FigureWidget()
        self.ranges_figure = FigureWidget()
        self._refresh()
        self.partition_choice.observe(lambda _c: self._refresh(), names="value")
        if window is not None:
            window.observe(self._follow, names="range")
        super().__init__(children=[self.status, self.partitions_figure, self.partition_choice, self.ranges_figure])

    def figures(self) -> tuple[go.Figure, go.Figure]:
        """Plain figures for the current control values: the batches compared per partition and the chosen partition."""
        cluster, topic, partition = self.partition_choice.value or (None, None, None)
        return (figure_batches_by_partition(self._ranges),
                figure_replica_ranges(self._ranges, self._differences, topic=topic, partition=partition,
                                      cluster_id=cluster, start=self._lo, end=self._hi, epochs=self._epochs))

    def report_figures(self) -> list[go.Figure]:
        """The static report's figures: the batches compared per partition, then the partition with most of them."""
        lo, hi = report_window(self._start, self._end, self._shared)
        return [figure_batches_by_partition(self._ranges),
                figure_replica_ranges(self._ranges, self._differences, start=lo, end=hi, epochs=self._epochs)]

    def _follow(self, change: dict) -> None:
        self._lo, self._hi = change["new"]
        self._refresh()

    def _refresh(self) -> None:
        partitions, detail = self.figures()
        redraw(self.partitions_figure, partitions)
        redraw(self.ranges_figure, detail)
        drawn = sum(len(tr.y) for tr in detail.data if tr.name in KIND_COLOURS)
        dimmed = sum(len(tr.y) for tr in detail.data if tr.name.endswith("(outside the window)"))
        choice = self.partition_choice.value
        name = _partition_text(choice, False) if choice else "no partition"
        self.status.value = plotly_text(f"{name}: {drawn} differing batch(es) in the window, {dimmed} outside it "
                                        f"({window_text(self._lo, self._hi)})")


def _area_view(frames: Any, window: TimeWindow | None) -> ReplicasView:
    return ReplicasView(frames["ranges"], frames["differences"], window=window,
                        epochs=frames["epochs"] if "epochs" in frames else None)


register_view("replicas", _area_view)
