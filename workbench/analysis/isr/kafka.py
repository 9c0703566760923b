"""Kafka's own ``ReplicaManager`` gauges (``UnderMinIsrPartitionCount`` and its siblings) from a bundle's
metric exports, and how they compare with the ones the partition states give."""

from __future__ import annotations

from collections.abc import Iterable
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


#: The normalised ``metrics`` name of ``kafka.server:type=ReplicaManager,name=<gauge>``.
GAUGE_PREFIX = "kafka_server_replicamanager_"
#: Brokers apply a committed metadata record a little after the controller wrote it, and a sampler
#: stamps a sample when its poll starts: samples this close to a computed change are not judged.
SETTLE_MS = 1500


def reported_leader_gauges(metrics: DataFrame, gauges: Iterable[str] | None = None) -> DataFrame:
    """Kafka's own samples of the ``ReplicaManager`` gauges named in ``gauges`` (default
    :data:`~workbench.analysis.isr.summary.LEADER_GAUGES`): ``broker int, gauge string, time
    timestamp, value int``, one row per sample."""
    from workbench.analysis.isr.summary import LEADER_GAUGES

    require_columns(metrics, ("node_id", "name", "timestamp", "value"), "reported_leader_gauges")
    names = {GAUGE_PREFIX + g.lower(): g for g in (LEADER_GAUGES if gauges is None else gauges)}
    gauge = F.lit(None).cast("string")
    for name, label in names.items():
        gauge = F.when(F.col("name") == name, F.lit(label)).otherwise(gauge)
    return (metrics.where(F.col("name").isin(*names))
            .select(F.col("node_id").cast("int").alias("broker"), gauge.alias("gauge"),
                    F.col("timestamp").alias("time"), F.col("value").cast("int").alias("value")))


def gauges_beside_reported(computed: DataFrame, reported: DataFrame, *, settle_ms: int = SETTLE_MS) -> DataFrame:
    """Each reported gauge sample beside the computed value at its time, and whether they agree.

    ``computed`` is :func:`~workbench.analysis.isr.summary.leader_gauges`; a broker that led nothing
    yet counts 0. A sample within ``settle_ms`` of a computed change of its broker's gauge is
    ``settling`` and not judged: brokers apply a change a little after the controller wrote it.

    Returns
    -------
    DataFrame
        ``broker, gauge, time, reported, computed, settling, agrees`` (``agrees`` null while settling).
    """
    require_columns(computed, ("broker", "gauge", "time", "value"), "gauges_beside_reported")
    require_columns(reported, ("broker", "gauge", "time", "value"), "gauges_beside_reported")
    samples = reported.select("broker", "gauge", "time", F.col("value").alias("reported"),
                              F.monotonically_increasing_id().alias("_sample"))
    steps = computed.select(F.col("broker").alias("_b"), F.col("gauge").alias("_g"), F.col("time").alias("_t"),
                            F.col("value").alias("_v"))
    joined = samples.join(steps, samples["broker"].eqNullSafe(steps["_b"]) & (samples["gauge"] == steps["_g"]), "left")
    gap_ms = F.abs(F.unix_millis("time") - F.unix_millis("_t"))
    asof = F.max(F.when(F.col("_t") <= F.col("time"), F.struct("_t", "_v")))
    out = joined.groupBy("_sample", "broker", "gauge", "time", "reported").agg(
        F.coalesce(asof.getField("_v"), F.lit(0)).alias("computed"),
        F.coalesce(F.max(gap_ms <= settle_ms), F.lit(False)).alias("settling"))
    agrees = F.when(F.col("settling"), F.lit(None).cast("boolean")).otherwise(F.col("reported") == F.col("computed"))
    return (out.select("broker", "gauge", "time", "reported", F.col("computed").cast("int"), "settling",
                       agrees.alias("agrees"))
            .orderBy("broker", "gauge", "time"))


def gauge_agreement(beside: DataFrame) -> DataFrame:
    """Per broker and gauge (of :func:`gauges_beside_reported`): ``samples, judged, agree, differ``."""
    return (beside.groupBy("broker", "gauge")
            .agg(F.count("*").alias("samples"), F.count("agrees").alias("judged"),
                 F.sum(F.col("agrees").cast("int")).alias("agree"),
                 F.sum((~F.col("agrees")).cast("int")).alias("differ"))
            .na.fill(0, ["agree", "differ"]).orderBy("broker", "gauge"))
