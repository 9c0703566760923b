"""HTML tables for notebooks and reports: cell text escaped, a sentence instead of an empty table."""

from __future__ import annotations

import html

import pandas as pd

__all__ = ["table_html"]


def table_html(frame: pd.DataFrame, *, empty: str = "Nothing to show.", limit: int | None = 50) -> str:
    """Render a small frame as an HTML table (escaped), or ``empty`` as a paragraph.

    Parameters
    ----------
    frame : pandas.DataFrame
        Already aggregated rows (cell values may come from logs: they are escaped).
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
    body = shown.to_html(index=False, escape=True, na_rep="")
    if len(frame) > len(shown):
        body += f"<p>First {len(shown)} of {len(frame)} rows.</p>"
    return body
