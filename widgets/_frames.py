"""Checks and conversions for the small pandas frames that views receive.

Views get aggregated frames (collected from Spark with ``toPandas``). Spark sessions of the
workbench run in UTC, so timestamps arrive as naive ``datetime64`` values meaning UTC; frames
built by hand may carry a time zone instead. Everything here normalises to naive UTC so that
plotly draws the same axis whatever the input.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import re
import unicodedata
from collections.abc import Iterable
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from workbench.errors import ConfigError
from workbench.params import parse_instant, parse_window

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
    """A user-given time (:func:`workbench.params.parse_instant`) as a naive UTC Timestamp, to the ms.

    Empty strings and ``None`` mean "not given". Naive inputs are taken as UTC.

    Examples
    --------
    >>> parse_time("2026-01-01 03:12:05")
    Timestamp('2026-01-01 03:12:05')
    >>> parse_time("") is None
    True
    """
    stamp = parse_instant(value, name)
    return None if stamp is None else pd.Timestamp(stamp).tz_convert("UTC").tz_localize(None).round("ms")


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


def id_text(value: Any, unknown: str = "?") -> str:
    """An integer id, epoch or offset as text; ``unknown`` where it is missing (a value a reader
    refused becomes null, and a view still draws the row).

    Examples
    --------
    >>> id_text(3.0), id_text(None), id_text(float("nan"), "n/a")
    ('3', '?', 'n/a')
    """
    if value is None or pd.isna(value):
        return unknown
    return str(int(value))


#: Longest run of characters without a space shown whole (a topic name is at most 249; a group
#: id, a client id or a crafted name in a damaged log can be any length).
MAX_WORD = 200
#: The same for a label on an axis or in a legend, where width is scarce.
LABEL_WORD = 40
_LONG_WORD = re.compile(rf"\S{{{MAX_WORD + 1},}}")
#: Unicode categories shown as ``⟨U+XXXX⟩``: controls, format characters (bidirectional
#: embeddings, overrides, isolates and marks, zero-width characters, the byte-order mark) and the
#: line and paragraph separators. Each changes how the text around it reads, or cannot be seen.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})


def visible_text(text: str, max_word: int = MAX_WORD) -> str:
    """Text taken from logs as a person can read it: hidden characters shown, endless names cut.

    Every control, format or separator character (a right-to-left override U+202E that would
    reverse the rest of a sentence, a zero-width space that makes two names look equal) becomes
    ``⟨U+202E⟩``; a run of more than ``max_word`` characters without a space keeps its start and
    end around ``…⟨N characters #digest⟩…`` (the digest of the whole run tells two such names
    apart). Escaping for HTML or plotly comes after (:func:`plotly_text`,
    :func:`widgets.tables.text_html`). Newlines and tabs are kept.

    Examples
    --------
    >>> visible_text("topic \u202eabc partition 0")
    'topic ⟨U+202E⟩abc partition 0'
    >>> visible_text("x" * 300, max_word=20)
    'xxxxxxxxxx…⟨300 characters #c5dfe9⟩…xxxxx'
    """
    text = str(text)
    if len(text) > max_word:
        long_word = _LONG_WORD if max_word == MAX_WORD else re.compile(rf"\S{{{max_word + 1},}}")
        text = long_word.sub(lambda m: _shortened(m.group(0), max_word), text)
    if text.isprintable():  # no control, format or separator character (the common case)
        return text
    return "".join(_shown(c) for c in text)


def _shortened(word: str, max_word: int) -> str:
    digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=3).hexdigest()
    return f"{word[:max_word // 2]}…⟨{len(word):,} characters #{digest}⟩…{word[-(max_word // 4):]}"


def _shown(char: str) -> str:
    if char in "\n\t" or unicodedata.category(char) not in _HIDDEN:
        return char
    return f"⟨U+{ord(char):04X}⟩"


def labelled(values: Iterable[str], max_word: int = 80) -> list[tuple[str, str]]:
    """``(label, value)`` options for a selection widget: each value under its :func:`visible_text`
    label (names from logs, shortened for a list), the value itself kept for filtering.

    Examples
    --------
    >>> labelled(["orders", "\u202eabc"])
    [('orders', 'orders'), ('⟨U+202E⟩abc', '\u202eabc')]
    """
    return [(visible_text(v, max_word), v) for v in values]


def plotly_text(text: str, max_word: int = MAX_WORD) -> str:
    """``text`` for plotly's label markup: hidden characters shown and long names cut
    (:func:`visible_text`; ``max_word`` :data:`LABEL_WORD` for an axis or legend label), then
    ``<``, ``>`` and ``&`` escaped, so it shows literally.

    Plotly renders a few tags (``<b>``, ``<br>``, ``<a href>``...) in titles, ticks and hover
    text and decodes ``&lt;``, ``&gt;`` and ``&amp;``, but not ``&quot;``: quotes stay as they
    are (they cannot open a tag).

    Examples
    --------
    >>> plotly_text('<a href="x">')
    '&lt;a href="x"&gt;'
    """
    return html.escape(visible_text(text, max_word), quote=False)


def selection(values: Iterable[Any] | str | int | float | None) -> list[str] | None:
    """A view's filter argument as a list of strings; ``None`` (or nothing in it) means everything.

    A string is a comma-separated list (as a notebook parameter gives it); a lone number (a topic
    named ``1``, typed on a command line as a number) counts as its text.

    Examples
    --------
    >>> selection("orders, payments,"), selection([1, 2]), selection(3), selection("")
    (['orders', 'payments'], ['1', '2'], ['3'], None)
    """
    if values is None:
        return None
    if isinstance(values, int | float) and not isinstance(values, bool):
        values = str(values)
    if isinstance(values, str):
        items = [v.strip() for v in values.split(",") if v.strip()]
    else:
        items = [str(v) for v in values]
    return items or None


def time_window(start: TimeLike, end: TimeLike) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """A view's time window as naive UTC bounds (``None``: open); a start after the end is refused.

    Examples
    --------
    >>> time_window("2026-11-18T11:00:00", None)
    (Timestamp('2026-11-18 11:00:00'), None)
    """
    parse_window(start, end)
    return parse_time(start, "start"), parse_time(end, "end")
