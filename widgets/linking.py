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

from widgets._frames import TimeLike, parse_time
from workbench.errors import ConfigError

__all__ = ["TimeWindow", "register_view", "view_factories"]


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
        lo, hi = parse_time(start, "start"), parse_time(end, "end")
        if lo is not None and hi is not None and lo > hi:
            raise ConfigError(f"time window: start {lo} is after end {hi}")
        self.range = (lo, hi)

    @property
    def start(self) -> pd.Timestamp | None:
        return self.range[0]

    @property
    def end(self) -> pd.Timestamp | None:
        return self.range[1]


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
