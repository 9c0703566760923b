"""A ZooKeeper-era cluster's partition history from its text logs, as metadata-log rows the ISR replay reads.

A cluster that kept its state in ZooKeeper has no metadata log; its brokers and controller wrote
each change of a partition's state znode to their text logs (the ``events`` table): the
controller's elections and its removals of offline replicas (``LeaderAndIsr(…, zkVersion=7)``,
``(Leader:1,ISR:1,2,…,ZkVersion:7,…)``), and each leader's own ISR shrinks and expands (``ISR
updated to 1,2 and version updated to 7``). Every write bumps the znode's version, so the versions
order a partition's states whoever wrote them: :func:`text_log_records` keeps one state per
version (a controller's line before a broker's, then the earliest), and writes the history as rows
of the ``metadata`` table's shape — a ``PartitionRecord`` for a partition's first known state,
``PartitionChangeRecord``\\ s after it, a topic's ``min.insync.replicas`` from the properties its
logs were created with (``ConfigRecord``), each broker's life from its own lines as KRaft records
it (``starting``: ``RegisterBrokerRecord``, fenced; ``started``: unfenced; ``stopping``: in
controlled shutdown; ``stopped``: ``FenceBrokerRecord``), and a ``NoOpRecord`` at the cluster's
last logged line (the end of what the bundle knows) — so that :func:`workbench.analysis.isr.partition_states` replays
it as it replays a KRaft log, and :func:`workbench.analysis.isr.cluster_stops` tells a cluster
stopped at the end of its text logs.

What the text cannot tell is left as Kafka's logs leave it: a version no line reports is skipped
(its state is folded into the next one), a partition's replicas are the ones the controller
assigned when it created the partition (``with assigned replicas 1,2,3``), else every broker the
partition's lines name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.isr.inputs import MIN_ISR_CONFIG, TOPIC_RESOURCE
from workbench.spark.registry import derived_with

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from workbench.bundle import Bundle

#: Kinds of ``events`` row that carry a whole partition state (leader, ISR, znode version), and
#: their precedence when several report one version: the controller's, then the leader's.
STATE_KINDS = {"partition_state": 0, "replica_offline": 0, "isr_updated": 1, "leader_start": 1, "leader_kept": 1,
               "follower_kept": 2}
#: Path of the rows :func:`text_log_records` writes (the ``metadata`` table's ``path``).
TEXT_LOG_PATH = "text logs"
#: The cluster id nodes without one (no ``meta.properties``) share while the history is built.
NO_CLUSTER = ""


def text_log_clusters(bundle: Bundle) -> list[str | None]:
    """The clusters of a bundle that have text logs and no metadata log (ZooKeeper era), in id order
    (:meth:`workbench.bundle.Bundle.text_log_clusters`)."""
    return bundle.text_log_clusters()


def text_log_records(events: DataFrame, clusters: list[str | None] | None = None) -> DataFrame:
    """The partition history of ``events`` (of ``clusters``, default every one) as ``metadata`` rows.

    Returns
    -------
    DataFrame
        The ``metadata`` table's columns; those :func:`workbench.analysis.isr.partition_states`
        reads are set (the others null): ``node_id`` −1, ``cluster_id``, ``path`` :data:`TEXT_LOG_PATH`,
        ``file_kind`` ``segment``, ``offset`` (the order of the history, per cluster),
        ``timestamp`` (when a line first reported the state; never earlier than the partition's
        previous state), ``record_type``, ``topic_id`` (the topic's name: text logs of most
        releases name no topic id), ``topic, partition, leader, isr, replicas, partition_epoch``
        (the znode version) and, for ``ConfigRecord``\\ s, ``config_*``.

    Examples
    --------
    >>> rows = text_log_records(tables.events)                       # doctest: +SKIP
    >>> isr.partition_states(tables.metadata.unionByName(rows, allowMissingColumns=True))  # doctest: +SKIP
    """
    ev = events
    if clusters is not None:
        known = [c for c in clusters if c is not None]
        wanted = F.col("cluster_id").isin(known) if known else F.lit(False)
        ev = ev.where(wanted | F.col("cluster_id").isNull() if None in clusters else wanted)
    # nodes of no known cluster (no meta.properties) are one cluster: "" while joining, null again at the end
    ev = ev.withColumn("cluster_id", F.coalesce(F.col("cluster_id"), F.lit(NO_CLUSTER)))
    rank = F.lit(None).cast("int")
    for kind, order in STATE_KINDS.items():
        rank = F.when(F.col("kind") == kind, F.lit(order)).otherwise(rank)
    states = (ev.where(F.col("kind").isin(*STATE_KINDS) & F.col("topic").isNotNull() & F.col("partition").isNotNull()
                       & F.col("partition_epoch").isNotNull() & F.col("isr").isNotNull() & F.col("leader").isNotNull())
              .withColumn("_rank", rank))
    key = ["cluster_id", "topic", "partition"]
    first = Window.partitionBy(*key, "partition_epoch").orderBy("_rank", "time", "path", "line_no")
    one = (states.withColumn("_first", F.row_number().over(first))
           .withColumn("_seen", F.min("time").over(Window.partitionBy(*key, "partition_epoch")))
           .where(F.col("_first") == 1)
           .select(*key, "partition_epoch", "leader", "isr", F.col("_seen").alias("time")))
    in_order = Window.partitionBy(*key).orderBy("partition_epoch").rowsBetween(Window.unboundedPreceding, 0)
    one = one.withColumn("time", F.max("time").over(in_order))   # a later version never reads as earlier
    assigned = (ev.where(F.col("replicas").isNotNull() & F.col("topic").isNotNull())
                .withColumn("_n", F.row_number().over(Window.partitionBy(*key).orderBy(F.col("time").desc())))
                .where(F.col("_n") == 1).select(*key, F.col("replicas").alias("_assigned")))
    named = (one.select(*key, F.explode(F.array_union("isr", F.array("leader"))).alias("_b"))
             .where(F.col("_b") >= 0).groupBy(*key).agg(F.array_sort(F.collect_set("_b")).alias("_named")))
    one = (one.join(assigned, key, "left").join(named, key, "left")
           .withColumn("replicas", F.coalesce("_assigned", "_named")).drop("_assigned", "_named"))
    first_version = F.min("partition_epoch").over(Window.partitionBy(*key))
    parts = one.select(
        *key, "time", "leader", "isr", "replicas", "partition_epoch",
        F.when(F.col("partition_epoch") == first_version, F.lit("PartitionRecord"))
        .otherwise(F.lit("PartitionChangeRecord")).alias("record_type"),
        F.lit(2).alias("_order"))
    topics = one.groupBy("cluster_id", "topic").agg(F.min("time").alias("time"))
    topic_rows = topics.select("cluster_id", "topic", "time", F.lit("TopicRecord").alias("record_type"),
                               F.lit(0).alias("_order"))
    created = (ev.where((F.col("kind") == "log_created") & F.col("properties")[MIN_ISR_CONFIG].isNotNull())
               .withColumn("_n", F.row_number().over(Window.partitionBy("cluster_id", "topic")
                                                     .orderBy(F.col("time").desc())))
               .where(F.col("_n") == 1)
               .select("cluster_id", "topic", F.col("properties")[MIN_ISR_CONFIG].alias("config_value")))
    config_rows = (created.join(topics, ["cluster_id", "topic"])
                   .select("cluster_id", "topic", "time", "config_value", F.lit("ConfigRecord").alias("record_type"),
                           F.lit(1).alias("_order")))
    life = F.col("state_to")
    servers = ev.where((F.col("kind") == "server") & F.col("node_id").isNotNull()
                       & life.isin("starting", "started", "stopping", "stopped")).select(
        "cluster_id", "time", F.col("node_id").alias("broker_id"),
        F.when(life == "starting", F.lit("RegisterBrokerRecord")).when(life == "stopped", F.lit("FenceBrokerRecord"))
        .otherwise(F.lit("BrokerRegistrationChangeRecord")).alias("record_type"),
        F.when(life.isin("starting", "stopped"), F.lit(True)).when(life == "started", F.lit(False)).alias("fenced"),
        F.when(life == "stopping", F.lit(True)).alias("in_controlled_shutdown"),
        F.lit(2).alias("_order"))
    ends = ev.groupBy("cluster_id").agg(F.max("time").alias("time")).select(
        "cluster_id", "time", F.lit("NoOpRecord").alias("record_type"), F.lit(3).alias("_order"))
    rows = (parts.unionByName(topic_rows, allowMissingColumns=True)
            .unionByName(config_rows, allowMissingColumns=True)
            .unionByName(servers, allowMissingColumns=True)
            .unionByName(ends, allowMissingColumns=True))
    order = Window.partitionBy("cluster_id").orderBy("time", "_order", "topic", "partition", "partition_epoch",
                                                     "broker_id")
    rows = rows.withColumn("offset", (F.row_number().over(order) - 1).cast("long"))
    out = rows.select(
        F.lit(-1).alias("node_id"),
        F.when(F.col("cluster_id") != NO_CLUSTER, F.col("cluster_id")).alias("cluster_id"),
        F.lit(TEXT_LOG_PATH).alias("path"),
        F.lit("segment").alias("file_kind"), F.lit(0).cast("long").alias("file_offset"), "offset",
        F.col("time").alias("timestamp"), F.lit(False).alias("is_control"), "record_type",
        F.when(F.col("record_type").isin("TopicRecord", "PartitionRecord", "PartitionChangeRecord"),
               F.col("topic")).alias("topic_id"),
        F.when(F.col("record_type") != "ConfigRecord", F.col("topic")).alias("topic"),
        F.col("partition").cast("int").alias("partition"), F.col("leader").cast("int").alias("leader"),
        "isr", "replicas", F.col("partition_epoch").cast("int").alias("partition_epoch"),
        F.when(F.col("record_type") == "ConfigRecord", F.lit(TOPIC_RESOURCE)).cast("int").alias("config_resource_type"),
        F.when(F.col("record_type") == "ConfigRecord", F.col("topic")).alias("config_resource_name"),
        F.when(F.col("record_type") == "ConfigRecord", F.lit(MIN_ISR_CONFIG)).alias("config_name"),
        "config_value", F.col("broker_id").cast("int").alias("broker_id"), "fenced", "in_controlled_shutdown")
    from workbench.spark.registry import table_spec

    shape = table_spec("metadata").schema
    return events.sparkSession.createDataFrame([], shape).unionByName(out, allowMissingColumns=True)


def with_text_logs(tables: Any) -> DataFrame:
    """The ``metadata`` table, with the text logs' history of every cluster that has no metadata log."""
    metadata = tables.metadata
    bundle = getattr(tables, "bundle", None)
    clusters = text_log_clusters(bundle) if bundle is not None else []
    if not clusters:
        return metadata
    def build() -> DataFrame:
        return text_log_records(tables.events, clusters)

    # kept once per bundle: the states and the stops each read it
    rows = derived_with(tables, "isr.text_log_records", build)
    return metadata.unionByName(rows, allowMissingColumns=True)
