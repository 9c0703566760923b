"""Linked views: one time window shared by every view of a notebook, the registry of area views, and
how a notebook shows a view.

A :class:`TimeWindow` is a small traitlets object. The overview timeline sets it (a range chosen
there, or a finding clicked); every area view given the same window follows it (its x axes move
to the window). Area views register a factory with :func:`register_view`, so the overview can
open an area's view at a finding's moment without knowing the area. :func:`show` draws a view
in either mode of a notebook: its report figures in an HTML report, the widget itself otherwise.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import traitlets
from IPython.display import display

from widgets._frames import TimeLike, short_time, time_window

__all__ = ["FollowsWindow", "TimeWindow", "place_slider", "register_view", "report_window", "show",
           "slider_options", "view_factories", "window_text"]


class TimeWindow(traitlets.HasTraits):
    """A time window (naive UTC timestamps, ``None`` = open) that views observe.

    Examples
    --------
    >>> w = TimeWindow()
    >>> seen = []
    >>> w.observe(lambda change: seen.append(change["new"]), names="range")
    >>> w.set("2026-03-01 03:12:00", "2026-03-01 03:13:00")
    >>> seen[-1]
    (Timestamp('2026-03-01 03:12:00'), Timestamp('2026-03-01 03:13:00'))
    """

    range = traitlets.Tuple((None, None))

    def set(self, start: TimeLike, end: TimeLike) -> None:
        """Move the window (strings are read as UTC); a start after the end is refused."""
        lo, hi = time_window(start, end)
        self.range = (lo, hi)

    @property
    def start(self) -> pd.Timestamp | None:
        return self.range[0]

    @property
    def end(self) -> pd.Timestamp | None:
        return self.range[1]


class FollowsWindow:
    """What a view with a time slider does to follow a shared :class:`TimeWindow`.

    The view sets ``time_range`` (a ``SelectionRangeSlider`` over its stops ``_stamps``), defines
    ``_refresh()`` (redraw for the current controls and :meth:`window`), and calls
    :meth:`_start_following` once its controls exist. While the shared window has moved, the view
    shows exactly its range and the slider's handles sit on it (:func:`place_slider`); moving the
    slider by hand makes the slider the window again.
    """

    time_range: Any
    _stamps: list[pd.Timestamp]

    def _start_following(self, window: TimeWindow | None, controls: Any) -> None:
        """Draw once (at the shared window's range, if it was moved) and observe ``controls`` and ``window``."""
        #: The shared window's range while the view shows it exactly (the slider snapped around it).
        self._pinned: tuple[pd.Timestamp | None, pd.Timestamp | None] | None = None
        self._following = False
        if window is not None and window.range != (None, None):
            self._follow({"new": window.range}, refresh=False)
        self._refresh()
        for control in controls:
            control.observe(self._on_change, names="value")
        if window is not None:
            window.observe(self._follow, names="range")

    def _refresh(self) -> None:
        raise NotImplementedError

    def window(self) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
        """The time window shown: the shared window's range after it moved, else the slider's; ``(None,
        None)`` when there is no data."""
        if self.time_range.disabled or len(self.time_range.value) != 2:
            return None, None
        if self._pinned is not None:
            return self._pinned
        lo, hi = self.time_range.value
        return pd.Timestamp(lo), pd.Timestamp(hi)

    def _on_change(self, change: dict) -> None:
        if change.get("owner") is self.time_range:
            if self._following:
                return  # placed on the shared window: _follow refreshes once
            self._pinned = None  # the slider moved by hand: it is the window now
        self._refresh()

    def _follow(self, change: dict, refresh: bool = True) -> None:
        """Follow a shared time window: the figures show exactly its range and the slider's handles
        sit on it (its bounds join the slider's stops)."""
        if not self._stamps:
            return
        lo, hi = change["new"]
        self._pinned = None if lo is None and hi is None else (lo, hi)
        self._following = True
        try:
            place_slider(self.time_range, self._stamps, lo, hi)
        finally:
            self._following = False
        if refresh:
            self._refresh()


def slider_options(stamps: list[pd.Timestamp]) -> list[tuple[str, pd.Timestamp]]:
    """A time slider's stops as ``(label, time)``: the time of day when all share a date (a short readout)."""
    one_day = len({t.date() for t in stamps}) == 1
    return [(short_time(t)[11:] if one_day else short_time(t)[5:], t) for t in stamps]


def place_slider(slider: Any, stamps: list[pd.Timestamp], lo: pd.Timestamp | None, hi: pd.Timestamp | None) -> None:
    """Put a time ``SelectionRangeSlider``'s handles exactly on ``[lo, hi]``.

    Its stops are ``stamps`` (the view's observation times) plus the window's bounds, so the handles
    and the readout name the window shown, even a window between two observations or before the
    first one; an open bound takes the first or last stop. ``(None, None)`` gives back the plain
    stops over everything. The slider's observers see the options reset before the handles move
    (``hold_trait_notifications`` would validate the new index against the old options), so a
    view ignores its slider's changes while it places it.
    """
    stops = sorted(set(stamps) | {t for t in (lo, hi) if t is not None})
    index = (0 if lo is None else stops.index(lo), len(stops) - 1 if hi is None else stops.index(hi))
    if [value for _, value in slider.options] != stops:
        slider.options = slider_options(stops)
    if tuple(slider.index) != index:
        slider.index = index


def window_text(lo: pd.Timestamp | None, hi: pd.Timestamp | None) -> str:
    """The window a view shows, in words (``"from ... to ... UTC"``), for its status line."""
    if lo is None and hi is None:
        return "all times"
    left = short_time(lo) if lo is not None else "the start"
    return f"{left} to {short_time(hi) if hi is not None else 'the end'} UTC"


def report_window(start: TimeLike, end: TimeLike,
                  window: TimeWindow | None) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """The window a view's report figures cover: ``start``/``end`` when either is given (the
    notebook's parameters), else the shared window's range (``(None, None)`` without one)."""
    lo, hi = time_window(start, end)
    if lo is None and hi is None and window is not None:
        return window.range
    return lo, hi


def show(view: Any, *, report: bool) -> None:
    """Show an area's view: in an HTML report each figure of ``view.report_figures()`` (widgets do
    not render offline), otherwise the interactive view itself. One call for both modes, so a
    notebook cell lists what it shows instead of branching on the mode."""
    if report:
        for figure in view.report_figures():
            figure.show()
    else:
        display(view)


ViewFactory = Callable[[Mapping[str, pd.DataFrame], TimeWindow | None], Any]
_VIEWS: dict[str, ViewFactory] = {}
_DISCOVERED = False


def register_view(area: str, factory: ViewFactory) -> ViewFactory:
    """Declare the interactive view of an analysis area (its module calls this at import).

    ``factory(frames, window)`` builds the area's widget from the area's view frames (small pandas
    frames, by name) and follows ``window``.
    """
    _VIEWS[area] = factory
    return factory


def view_factories() -> dict[str, ViewFactory]:
    """Every registered area view (importing every module of the ``widgets`` package once)."""
    global _DISCOVERED
    if not _DISCOVERED:
        here = Path(__file__).resolve().parent
        for info in pkgutil.iter_modules([str(here)]):
            if not info.name.startswith("_") and info.name != "linking":
                importlib.import_module(f"widgets.{info.name}")
        _DISCOVERED = True
    return dict(_VIEWS)
