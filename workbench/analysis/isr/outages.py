"""Outage episodes: runs of a state flag per partition, and clusters stopped at the end of their log."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.metadata_log import STOP_LEAD_MS, broker_state_step, ordered_records

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def episodes(states: DataFrame, flag: str) -> DataFrame:
    """Maximal runs of consecutive state intervals of one partition during which ``flag`` held.

    Parameters
    ----------
    states : DataFrame
        From :func:`partition_states`.
    flag : str
        A boolean column of it: ``under_min_isr``, ``offline``, ``under_replicated``, ``at_min_isr``.

    Returns
    -------
    DataFrame
        One row per episode: ``topic, topic_id, partition, start, end, seconds, min_isr, smallest_isr,
        leaders`` (the distinct leaders seen, -1 for none), ``open`` (still so at the end of the log).
    """
    require_columns(states, ("topic", "topic_id", "partition", "start", "end", flag, "isr", "leader", "end_reason"),
                    "episodes")
    order = Window.partitionBy("topic_id", "partition").orderBy("start", "start_offset")
    flagged = (states.withColumn("_on", F.col(flag).cast("boolean"))
               .withColumn("_begin", F.col("_on") & ~F.coalesce(F.lag("_on").over(order), F.lit(False)))
               .withColumn("_run", F.sum(F.col("_begin").cast("int")).over(
                   order.rowsBetween(Window.unboundedPreceding, 0)))
               .where("_on"))
    return (flagged.groupBy("topic", "topic_id", "partition", "_run").agg(
        F.min("start").alias("start"), F.max("end").alias("end"),
        F.max("min_isr").alias("min_isr"), F.min(F.size("isr")).alias("smallest_isr"),
        F.array_sort(F.collect_set("leader")).alias("leaders"),
        F.max(F.col("end_reason") == "log_end").alias("open"))
        .withColumn("seconds", (F.unix_micros("end") - F.unix_micros("start")) / F.lit(1e6))
        .select("topic", "topic_id", "partition", "start", "end", "seconds", "min_isr", "smallest_isr", "leaders",
                "open"))


#: Columns of :func:`cluster_stops`.
STOP_COLUMNS = ("cluster_id", "start", "end", "brokers")


def cluster_stops(metadata: DataFrame) -> DataFrame:
    """Clusters whose log ends with their brokers shut down in order: the cluster was stopped.

    A broker is down from the first record since its last registration or unfencing that puts it
    in controlled shutdown (``inControlledShutdown``: Kafka's response to SIGTERM while it leads
    partitions) or fences it (Kafka fences a stopping broker that leads nothing at once, and a
    crashed one when its session times out). A cluster was stopped when every broker registered
    at the end of its log (not unregistered) is down there and at least one went down by a
    controlled shutdown: the stop's brokers are those that went down from :data:`STOP_LEAD_MS`
    before the first such shutdown on (the brokers stopped with it that led nothing were fenced
    just ahead of it), and it starts when the first of them went down. A cluster whose brokers were
    all fenced without any controlled shutdown (killed, cut off) is not in this table, nor is a
    broker that went down longer before (its outage stays an outage). Logs from before
    ``metadata.version`` (Kafka 3.2 and older) record no ``inControlledShutdown``: there a controlled
    shutdown is the batch of partition changes alone that moved leaders and ISRs away ahead of the
    fence (:func:`_shutdown_before_fences`); a fencing for a lost session writes them with it.

    Returns
    -------
    DataFrame
        ``cluster_id, start, end`` (the log's last record), ``brokers`` (sorted ids); one row per
        stopped cluster.

    Examples
    --------
    >>> cluster_stops(tables.metadata).show()                              # doctest: +SKIP
    """
    require_columns(metadata, ("cluster_id", "record_type", "broker_id", "fenced", "in_controlled_shutdown"),
                    "cluster_stops")
    types = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord",
             "UnregisterBrokerRecord")
    records = ordered_records(metadata).where(~F.col("is_control"))
    ends = {r["cluster_id"]: r["end"] for r in records.groupBy("cluster_id").agg(F.max("timestamp").alias("end"))
            .collect()}
    rows = (records.where(F.col("record_type").isin(*types) & F.col("broker_id").isNotNull())
            .select("cluster_id", "offset", "seq", "timestamp", "record_type", "broker_id", "fenced",
                    "in_controlled_shutdown").orderBy("cluster_id", "offset", "seq").collect())
    # per cluster and broker: [registered, down since, went down by a controlled shutdown]
    brokers: dict[Any, dict[int, list[Any]]] = {}
    for r in rows:
        broker_state_step(brokers.setdefault(r["cluster_id"], {}), r)
    out = []
    versioned: set[Any] | None = None
    for cluster, by_broker in brokers.items():
        alive = [s for s in by_broker.values() if s[0]]
        if not alive or any(s[1] is None for s in alive):
            continue
        if any(s[2] for s in alive):
            first_shutdown = min(s[1] for s in alive if s[2])
        else:
            if versioned is None:
                versioned = {r["cluster_id"] for r in records.where(
                    (F.col("record_type") == "FeatureLevelRecord") & (F.col("feature_name") == "metadata.version"))
                    .select("cluster_id").distinct().collect()}
            first_shutdown = None if cluster in versioned else _shutdown_before_fences(records, cluster, alive)
            if first_shutdown is None:
                continue
        since = first_shutdown - datetime.timedelta(milliseconds=STOP_LEAD_MS)
        stopped = {b: s[1] for b, s in by_broker.items() if s[0] and s[1] >= since}
        out.append((cluster, min([*stopped.values(), first_shutdown]), ends.get(cluster), sorted(stopped)))
    return metadata.sparkSession.createDataFrame(
        out, "cluster_id string, start timestamp, end timestamp, brokers array<int>")


def _shutdown_before_fences(records: DataFrame, cluster: Any, down: list[list[Any]]) -> Any:
    """When a controlled shutdown began in a log that cannot say so (before ``metadata.version``):
    the first batch holding only ``PartitionChangeRecord`` from :data:`STOP_LEAD_MS` before the first
    fence of ``down`` (brokers' states, see :func:`broker_state_step`) until before the last one.
    Kafka 3.0-3.2's controller moves a stopping broker's leaders and ISRs in such a batch, then fences
    it; a broker fenced for a lost session has its partitions changed in the fence's own batch."""
    first, last = min(s[1] for s in down), max(s[1] for s in down)
    lead = datetime.timedelta(milliseconds=STOP_LEAD_MS)
    batches = (records.where(F.col("cluster_id").eqNullSafe(F.lit(cluster).cast("string"))
                             & F.col("batch_base_offset").isNotNull()
                             & (F.col("timestamp") >= F.lit(first - lead)) & (F.col("timestamp") < F.lit(last)))
               .groupBy("batch_base_offset")
               .agg(F.min("timestamp").alias("time"),
                    F.sum((F.col("record_type") != "PartitionChangeRecord").cast("int")).alias("others"))
               .where(F.col("others") == 0).agg(F.min("time").alias("time")).collect())
    return batches[0]["time"] if batches else None
