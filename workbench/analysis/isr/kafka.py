"""Kafka's own ``UnderMinIsrPartitionCount`` samples from a bundle's metric exports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


#: The normalised ``metrics`` name of ``kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount``.
REPORTED_NAME = "kafka_server_replicamanager_underminisrpartitioncount"


def reported_under_min_isr(metrics: DataFrame) -> DataFrame:
    """Kafka's own ``UnderMinIsrPartitionCount`` samples from a bundle's metric exports.

    Selected by the normalised ``name`` (:data:`REPORTED_NAME`), so JmxTool CSV and Prometheus
    text or API exports alike.

    Shown beside :func:`under_min_isr_counts`, it lets a reader check the computed series
    against what each broker reported (when its JMX or Prometheus export was collected).

    Returns
    -------
    DataFrame
        Columns ``broker int, time timestamp, count int``, one row per sample.
    """
    require_columns(metrics, ("node_id", "name", "timestamp", "value"), "reported_under_min_isr")
    return (metrics.where(F.col("name") == REPORTED_NAME)
            .select(F.col("node_id").cast("int").alias("broker"), F.col("timestamp").alias("time"),
                    F.col("value").cast("int").alias("count")))
