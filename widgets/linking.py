"""Linked views: one time window shared by every view of a notebook, and the registry of area views.

A :class:`TimeWindow` is a small traitlets object. The overview timeline sets it (a range chosen
there, or a finding clicked); every area view given the same window follows it (its x axes move
to the window). Area views register a factory with :func:`register_view`, so the overview can
open an area's view at a finding's moment without knowing the area.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import traitlets

from widgets._frames import TimeLike, short_time, time_window

__all__ = ["TimeWindow", "place_slider", "register_view", "slider_options", "view_factories", "window_text"]


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
