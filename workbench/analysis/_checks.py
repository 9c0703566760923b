"""Column checks shared by the analysis functions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def require_columns(df: DataFrame, needed: tuple[str, ...], what: str) -> None:
    """Raise :class:`ConfigError` naming the columns ``df`` lacks for ``what``."""
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ConfigError(f"{what} needs columns {missing}; the DataFrame has {df.columns}")
