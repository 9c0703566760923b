"""Sessions the workbench makes build DataFrames without recording Python call sites in the driver JVM.

PySpark's DataFrame debugging (``spark.python.sql.dataFrameDebugging.enabled``, on by default) sets the
calling line of every column function in the JVM before the call and clears it after: several py4j
round trips per function, much of what building an analysis' plans costs (benchmarks/README.md). The
workbench's sessions turn it off.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import functions as F

from workbench.session import DEBUGGING_CONF


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
