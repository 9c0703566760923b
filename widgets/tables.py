"""HTML tables and sentences for notebooks and reports: text from logs made visible and escaped
(:func:`widgets._frames.visible_text`), a sentence instead of an empty table."""

from __future__ import annotations

import html

import pandas as pd

from widgets._frames import visible_text

__all__ = ["table_html", "text_html"]


def text_html(text: str) -> str:
    """``text`` (a sentence that may hold names from logs) as HTML: hidden characters shown, endless
    names cut, then escaped.

    Examples
    --------
    >>> text_html("group <b>\u202egnp partition 0 is behind")
    'group &lt;b&gt;⟨U+202E⟩gnp partition 0 is behind'
    """
    return html.escape(visible_text(text))


def table_html(frame: pd.DataFrame, *, empty: str = "Nothing to show.", limit: int | None = 50) -> str:
    """Render a small frame as an HTML table (escaped), or ``empty`` as a paragraph.

    Parameters
    ----------
    frame : pandas.DataFrame
        Already aggregated rows (cell values may come from logs: hidden characters are shown, endless
        names cut, and everything escaped).
    empty : str
        Plain text shown instead of a table without rows.
    limit : int or None
        At most this many rows; a note says how many were left out.

    Examples
    --------
    >>> table_html(pd.DataFrame({"kind": ["<crc>"], "count": [2]}))[:30]
    '<table border="1" class="dataf'
    >>> table_html(pd.DataFrame({"kind": []}), empty="No problems.")
    '<p>No problems.</p>'
    """
    if frame.empty:
        return f"<p>{html.escape(empty)}</p>"
    shown = frame if limit is None else frame.head(limit)
    texts = [c for c in shown.columns if shown[c].dtype == object]
    if texts:
        shown = shown.copy()
        for c in texts:
            shown[c] = shown[c].map(lambda v: visible_text(v) if isinstance(v, str) else v)
    body = shown.to_html(index=False, escape=True, na_rep="")
    if len(frame) > len(shown):
        body += f"<p>First {len(shown)} of {len(frame)} rows.</p>"
    return body
