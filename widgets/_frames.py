"""Checks and conversions for the small pandas frames that views receive.

Views get aggregated frames (collected from Spark with ``toPandas``). Spark sessions of the
workbench run in UTC, so timestamps arrive as naive ``datetime64`` values meaning UTC; frames
built by hand may carry a time zone instead. Everything here normalises to naive UTC so that
plotly draws the same axis whatever the input.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Iterable
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from workbench.errors import ConfigError

TimeLike: TypeAlias = str | dt.datetime | pd.Timestamp | np.datetime64 | None


def require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Raise :class:`~workbench.errors.ConfigError` naming the columns ``frame`` lacks.

    Examples
    --------
    >>> require_columns(pd.DataFrame({"a": [1]}), ["a"], "demo frame")
    """
    if not isinstance(frame, pd.DataFrame):
        raise ConfigError(f"{what}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ConfigError(f"{what}: missing column(s) {', '.join(missing)}; found {', '.join(map(str, frame.columns))}")


def utc_naive(values: pd.Series) -> pd.Series:
    """Return ``values`` as naive ``datetime64`` in UTC, rounded to milliseconds.

    Kafka times are milliseconds; rounding keeps labels and bar ends stable.

    Examples
    --------
    >>> utc_naive(pd.Series(["2026-01-01T03:00:00+01:00"])).iloc[0]
    Timestamp('2026-01-01 02:00:00')
    """
    converted = pd.to_datetime(values, utc=True)
    return converted.dt.tz_localize(None).dt.round("ms")


def parse_time(value: TimeLike, name: str = "time") -> pd.Timestamp | None:
    """Convert a user-given time (string, datetime, Timestamp) to a naive UTC Timestamp.

    Empty strings and ``None`` mean "not given". Naive inputs are taken as UTC.

    Examples
    --------
    >>> parse_time("2026-01-01 03:12:05")
    Timestamp('2026-01-01 03:12:05')
    >>> parse_time("") is None
    True
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{name}: expected a date/time such as 2026-01-01T03:12:05, got {value!r}") from exc
    if stamp is pd.NaT:
        return None
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC").tz_localize(None)
    return stamp.round("ms")


def format_time(stamp: pd.Timestamp) -> str:
    """Format a naive UTC Timestamp the way plotly date axes read it (millisecond precision).

    Examples
    --------
    >>> format_time(pd.Timestamp("2026-01-01 03:12:05.25"))
    '2026-01-01 03:12:05.250'
    """
    return stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{stamp.microsecond // 1000:03d}"


def short_time(stamp: pd.Timestamp) -> str:
    """Human label of a time: seconds, plus milliseconds only when they are not zero.

    Examples
    --------
    >>> short_time(pd.Timestamp("2026-01-01 03:12:05"))
    '2026-01-01 03:12:05'
    """
    text = stamp.strftime("%Y-%m-%d %H:%M:%S")
    millis = stamp.microsecond // 1000
    return f"{text}.{millis:03d}" if millis else text


def int_list(value: Any) -> str:
    """Render an array cell (list, numpy array or missing) of broker ids as ``[1, 2, 3]``.

    Examples
    --------
    >>> int_list([3, 1])
    '[3, 1]'
    >>> int_list(None)
    'n/a'
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "n/a"
    return "[" + ", ".join(str(int(v)) for v in value) + "]"


def plotly_text(text: str) -> str:
    """Escape ``text`` for plotly's label markup (``<``, ``>``, ``&``), so it shows literally.

    Plotly renders a few tags (``<b>``, ``<br>``, ``<a href>``...) in titles, ticks and hover
    text and decodes ``&lt;``, ``&gt;`` and ``&amp;``, but not ``&quot;``: quotes stay as they
    are (they cannot open a tag).

    Examples
    --------
    >>> plotly_text('<a href="x">')
    '&lt;a href="x"&gt;'
    """
    return html.escape(text, quote=False)
