"""Loading a bundle into Spark: the table registry and one module per table.

Every module here but :mod:`~workbench.spark.registry` and :mod:`~workbench.spark.source`
declares a table (``register_table``); :func:`load` returns the bundle's tables, built on
first use. See ``ARCHITECTURE.md`` for how to add one.
"""

from workbench.spark.records import load_records
from workbench.spark.registry import Tables, load, register_sources, table_spec, table_specs

__all__ = ["Tables", "load", "load_records", "register_sources", "table_spec", "table_specs"]
