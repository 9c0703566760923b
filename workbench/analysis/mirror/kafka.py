"""MirrorMaker 2's own metric samples (replication latency, record age and count, checkpoint latency)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.mirror.flows import Flow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

METRIC_COLUMNS = ("source_alias", "target_alias", "topic", "target_topic", "partition", "group", "metric", "time",
                  "value", "format", "node_id")

#: The MirrorMaker 2 metrics drawn beside the computed figures: normalised name -> short name.
MM2_METRICS: dict[str, str] = {
    "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms": "replication-latency-ms",
    "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max": "replication-latency-ms-max",
    "kafka_connect_mirror_mirrorsourceconnector_record_age_ms": "record-age-ms",
    "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_max": "record-age-ms-max",
    "kafka_connect_mirror_mirrorsourceconnector_record_count": "record-count",
    "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms": "checkpoint-latency-ms",
    "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms_max": "checkpoint-latency-ms-max",
}


def reported_metrics(metrics: DataFrame, flows: Sequence[Flow] = ()) -> DataFrame:
    """MirrorMaker 2's own samples of ``replication-latency-ms``, ``record-age-ms``, ``record-count`` and
    ``checkpoint-latency-ms`` (and their ``-max``), from JmxTool CSV or Prometheus exports.

    Returns
    -------
    DataFrame
        :data:`METRIC_COLUMNS`, one row per sample: ``source_alias, target_alias`` (the MBean's
        ``source``/``target``; Kafka 3.x's source connector MBeans lack ``source``: the flow whose
        target and replicated-topic prefix match), ``topic`` (the source topic), ``target_topic`` (the MBean's
        ``topic``: MM2 names the replicated one), ``partition``, ``group`` (checkpoint metrics),
        ``metric`` (the short name, e.g. ``replication-latency-ms``), ``time, value, format, node_id``.
        A NaN sample (the ``-max`` of a window without records, as MM2 reports it) is no value and is left
        out: Spark orders NaN above every number, so one would win every ``max``.
    """
    require_columns(metrics, ("node_id", "name", "labels", "timestamp", "value", "format"), "reported_metrics")
    names = F.create_map(*[x for k, v in MM2_METRICS.items() for x in (F.lit(k), F.lit(v))])
    label = F.col("labels")
    target_topic = label.getItem("topic")
    upstream = target_topic
    source = label.getItem("source")
    for f in flows:
        # Kafka 3.x's MirrorSourceConnector MBeans have no ``source`` key: the flow is told by its
        # target and the replicated topic's prefix
        prefix = f.source + f.separator
        ours = ((source == f.source) | (source.isNull() & (label.getItem("target") == f.target))) \
            & target_topic.startswith(prefix)
        upstream = F.when(ours, F.expr(f"substring(labels['topic'], {len(prefix) + 1})")).otherwise(upstream)
        source = F.when(source.isNull() & ours, F.lit(f.source)).otherwise(source)
    return (metrics.where(F.col("name").isin(list(MM2_METRICS)) & F.col("timestamp").isNotNull()
                          & ~F.isnan("value"))
            .select(source.alias("source_alias"), label.getItem("target").alias("target_alias"),
                    upstream.alias("topic"), target_topic.alias("target_topic"),
                    label.getItem("partition").cast("int").alias("partition"), label.getItem("group").alias("group"),
                    names[F.col("name")].alias("metric"), F.col("timestamp").alias("time"), "value", "format",
                    "node_id"))
