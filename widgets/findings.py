"""Findings as a list a person reads first: one sentence each, most severe first, escaped.

Input is a small pandas frame of :data:`workbench.analysis.findings.FINDINGS_SCHEMA` rows (from
an analysis' ``findings(...)`` or :func:`workbench.analysis.findings.all_findings`, ordered there).
Summaries come from logs (topic names, group ids): hidden characters are shown, endless names cut
(:func:`widgets._frames.visible_text`), and every one is HTML-escaped.
"""

from __future__ import annotations

import html

import pandas as pd

from widgets._frames import require_columns, visible_text

__all__ = ["SEVERITY_COLORS", "findings_html"]

#: Marker colour per severity.
SEVERITY_COLORS: dict[str, str] = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#1f77b4"}


def findings_html(findings: pd.DataFrame, *, limit: int | None = 50,
                  empty: str = "Nothing was found wrong in what the bundle holds.", total: int | None = None) -> str:
    """Render findings as an HTML bullet list, one escaped sentence each, in the frame's order.

    Parameters
    ----------
    findings : pandas.DataFrame
        Needs ``severity`` and ``summary``.
    limit : int or None
        At most this many items; a last item counts the rest.
    empty : str
        The sentence shown when there is no finding.
    total : int, optional
        How many findings there are in all, when ``findings`` holds only the first of them (a
        large table cut in Spark: ``frame.limit(50).toPandas()``); default ``len(findings)``.

    Examples
    --------
    >>> frame = pd.DataFrame({"severity": ["critical"], "summary": ["topic <x> partition 0 was offline for 1.0 s"]})
    >>> findings_html(frame)
    '<ul class="wb-findings"><li class="wb-critical">topic &lt;x&gt; partition 0 was offline for 1.0 s</li></ul>'
    """
    require_columns(findings, ("severity", "summary"), "findings frame")
    if findings.empty:
        return f'<p class="wb-findings">{html.escape(empty)}</p>'
    shown = findings if limit is None else findings.head(limit)
    items = "".join(
        f'<li class="wb-{html.escape(str(sev), quote=True)}">{html.escape(visible_text(str(text)))}</li>'
        for sev, text in zip(shown["severity"], shown["summary"], strict=True)
    )
    total = len(findings) if total is None else max(total, len(findings))
    if total > len(shown):
        items += f"<li>... and {total - len(shown)} more finding(s).</li>"
    return f'<ul class="wb-findings">{items}</ul>'
