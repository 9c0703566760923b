"""The words and numbers of findings: one way to write bytes, durations and moments in every area.

Findings are rows whose ``summary`` an operator reads in the report, the overview and a ticket;
each area builds it as a Spark column, so these helpers return columns. A null value stays null
(an area's ``coalesce`` gives its own placeholder), never the text ``"null"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["bytes_text", "duration_text", "time_text"]


def _col(column: Column | str) -> Column:
    return F.col(column) if isinstance(column, str) else column


def bytes_text(column: Column | str) -> Column:
    """Bytes in binary units: ``512 B``, ``97.4 KiB``, ``2.1 GiB``.

    Examples
    --------
    >>> findings.select(bytes_text("peak_bytes"))    # doctest: +SKIP
    """
    v = _col(column).cast("double")
    out = F.concat(F.format_string("%.0f", v), F.lit(" B"))
    # the largest unit's test is the outermost: it is asked first
    for power, unit in ((1, "KiB"), (2, "MiB"), (3, "GiB"), (4, "TiB")):
        out = F.when(v >= F.lit(1024.0 ** power),
                     F.concat(F.format_string("%.1f", v / F.lit(1024.0 ** power)), F.lit(f" {unit}"))).otherwise(out)
    return F.when(v.isNotNull(), out)


def duration_text(column: Column | str) -> Column:
    """A duration given in milliseconds: ``850 ms``, ``42.1 s``, ``41 min``, ``2.5 h``."""
    v = _col(column).cast("double")
    return (F.when(v >= 3_600_000, F.concat(F.format_string("%.1f", v / 3_600_000), F.lit(" h")))
            .when(v >= 60_000, F.concat(F.format_string("%.0f", v / 60_000), F.lit(" min")))
            .when(v >= 1000, F.concat(F.format_string("%.1f", v / 1000), F.lit(" s")))
            .when(v.isNotNull(), F.concat(F.format_string("%.0f", v), F.lit(" ms"))))


def time_text(column: Column | str) -> Column:
    """A moment (a timestamp column, in the session's UTC) to the second: ``2026-03-01 03:12:05 UTC``."""
    return F.concat(F.date_format(_col(column), "yyyy-MM-dd HH:mm:ss"), F.lit(" UTC"))
