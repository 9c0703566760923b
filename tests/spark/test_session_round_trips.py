"""Sessions the workbench makes build DataFrames without recording Python call sites in the driver JVM.

PySpark's DataFrame debugging (``spark.python.sql.dataFrameDebugging.enabled``, on by default) sets the
calling line of every column function in the JVM before the call and clears it after: several py4j
round trips per function, much of what building an analysis' plans costs (benchmarks/README.md). The
workbench's sessions turn it off, and Python data sources' filter pushdown too: no source of the
workbench takes filters, and asking one costs a Python daemon and a round trip per filtered read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import functions as F

from workbench.session import DEBUGGING_CONF, PUSHDOWN_CONF


@contextmanager
def _counted() -> Iterator[list[str]]:
    from py4j.clientserver import ClientServerConnection

    commands: list[str] = []
    send = ClientServerConnection.send_command

    def counting(self, command, *args, **kwargs):
        commands.append(command)
        return send(self, command, *args, **kwargs)

    ClientServerConnection.send_command = counting
    try:
        yield commands
    finally:
        ClientServerConnection.send_command = send


def test_building_a_column_expression_records_no_call_site(spark):
    assert spark.conf.get(DEBUGGING_CONF) == "false"
    frame = spark.range(3)
    with _counted() as commands:
        column = (F.col("id") + F.lit(1)).alias("next")
    # with call sites recorded, each function sets and clears PySparkCurrentOrigin around its call
    assert commands and not [c for c in commands if "PySparkCurrentOrigin" in c]
    assert [r["next"] for r in frame.select(column).collect()] == [1, 2, 3]


def test_no_data_source_takes_filters_so_sessions_do_not_offer_them(spark):
    """A source that overrides ``pushFilters`` needs ``PUSHDOWN_CONF`` on in ``workbench.session``."""
    from pyspark.sql.datasource import DataSourceReader

    from workbench.spark.registry import table_specs

    assert spark.conf.get(PUSHDOWN_CONF) == "false"
    table_specs()   # every table's module, so every reader class, imported

    def readers(cls: type) -> list[type]:
        return [cls, *(r for sub in cls.__subclasses__() for r in readers(sub))]

    ours = [r for r in readers(DataSourceReader) if r.__module__.startswith("workbench.")]
    assert len(ours) >= 10
    assert [r.__qualname__ for r in ours if "pushFilters" in vars(r)] == []
