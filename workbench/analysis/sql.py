"""Spark SQL text built from names and values: one way to quote them in every area.

Areas write repeated expressions as SQL text (``selectExpr``, ``F.expr``) to save a py4j round
trip per column; every name and value put into that text goes through these.
"""

from __future__ import annotations

__all__ = ["sql_literal", "sql_name"]


def sql_name(name: str) -> str:
    """A column name as a Spark SQL identifier.

    >>> sql_name("log`end")
    '`log``end`'
    """
    return "`" + name.replace("`", "``") + "`"


def sql_literal(text: str) -> str:
    r"""Text as a Spark SQL string literal.

    >>> print(sql_literal("it's C:\\"))
    'it\'s C:\\'
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
