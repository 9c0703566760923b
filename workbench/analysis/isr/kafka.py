"""Kafka's own ``ReplicaManager`` gauges (``UnderMinIsrPartitionCount`` and its siblings) from a bundle's
metric exports, and how they compare with the ones the partition states give."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


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
    return _samples(metrics, GAUGE_PREFIX, LEADER_GAUGES if gauges is None else gauges)


def _samples(metrics: DataFrame, prefix: str, gauges: Iterable[str], *extra: Column) -> DataFrame:
    """The samples of ``metrics`` named ``prefix`` + a gauge of ``gauges`` (lower case, as the names are
    normalised): ``broker int, *extra, gauge string, time timestamp, value int``."""
    names = {prefix + g.lower(): g for g in gauges}
    gauge = F.lit(None).cast("string")
    for name, label in names.items():
        gauge = F.when(F.col("name") == name, F.lit(label)).otherwise(gauge)
    return (metrics.where(F.col("name").isin(*names))
            .select(F.col("node_id").cast("int").alias("broker"), *extra, gauge.alias("gauge"),
                    F.col("timestamp").alias("time"), F.col("value").cast("int").alias("value")))


def gauges_beside_reported(computed: DataFrame, reported: DataFrame, *, settle_ms: int = SETTLE_MS,
                           keys: tuple[str, ...] = ("broker",)) -> DataFrame:
    """Each reported gauge sample beside the computed value at its time, and whether they agree.

    ``computed`` is a step series per ``keys`` and gauge (:func:`~workbench.analysis.isr.summary.
    leader_gauges` by default); before its first step a series counts 0 (a broker that led nothing
    yet). A sample within ``settle_ms`` of a computed change of its series is ``settling`` and not
    judged: brokers apply a change a little after the controller wrote it.

    Returns
    -------
    DataFrame
        ``*keys, gauge, time, reported, computed, settling, agrees`` (``agrees`` null while settling),
        then any other column of ``reported``.
    """
    require_columns(computed, (*keys, "gauge", "time", "value"), "gauges_beside_reported")
    require_columns(reported, (*keys, "gauge", "time", "value"), "gauges_beside_reported")
    carried = [c for c in reported.columns if c not in (*keys, "gauge", "time", "value")]
    samples = reported.select(*keys, "gauge", "time", *carried, F.col("value").alias("reported"),
                              F.monotonically_increasing_id().alias("_sample"))
    steps = computed.select(*[F.col(k).alias(f"_k_{k}") for k in keys], F.col("gauge").alias("_g"),
                            F.col("time").alias("_t"), F.col("value").alias("_v"))
    same = samples["gauge"] == steps["_g"]
    for k in keys:
        same = same & samples[k].eqNullSafe(steps[f"_k_{k}"])
    joined = samples.join(steps, same, "left")
    gap_ms = F.abs(F.unix_millis("time") - F.unix_millis("_t"))
    asof = F.max(F.when(F.col("_t") <= F.col("time"), F.struct("_t", "_v")))
    out = joined.groupBy("_sample", *keys, "gauge", "time", *carried, "reported").agg(
        F.coalesce(asof.getField("_v"), F.lit(0)).alias("computed"),
        F.coalesce(F.max(gap_ms <= settle_ms), F.lit(False)).alias("settling"))
    agrees = F.when(F.col("settling"), F.lit(None).cast("boolean")).otherwise(F.col("reported") == F.col("computed"))
    return (out.select(*keys, "gauge", "time", "reported", F.col("computed").cast("int"), "settling",
                       agrees.alias("agrees"), *carried)
            .orderBy(*keys, "gauge", "time"))


#: The normalised ``metrics`` name prefix of Kafka's per-partition gauges
#: (``kafka.cluster:type=Partition,name=<gauge>``, one MBean per partition a broker hosts).
PARTITION_PREFIX = "kafka_cluster_partition_"


def reported_partition_gauges(metrics: DataFrame) -> DataFrame:
    """Kafka's own per-partition gauge samples (:data:`~workbench.analysis.isr.summary.PARTITION_GAUGES`),
    JmxTool and Prometheus alike: ``broker int, topic, partition int, gauge, time timestamp, value int``."""
    from workbench.analysis.isr.summary import PARTITION_GAUGES

    require_columns(metrics, ("node_id", "name", "labels", "timestamp", "value"), "reported_partition_gauges")
    return (_samples(metrics, PARTITION_PREFIX, PARTITION_GAUGES, F.col("labels")["topic"].alias("topic"),
                     F.col("labels")["partition"].cast("int").alias("partition"))
            .where(F.col("topic").isNotNull() & F.col("partition").isNotNull()))


#: The normalised ``metrics`` name prefix of the controllers' ``kafka.controller:type=KafkaController`` gauges.
CONTROLLER_PREFIX = "kafka_controller_kafkacontroller_"


def reported_cluster_gauges(metrics: DataFrame) -> DataFrame:
    """Kafka's own samples of the controllers' partition gauges
    (:data:`~workbench.analysis.isr.summary.CLUSTER_GAUGES`): ``broker int, gauge, time, value``."""
    from workbench.analysis.isr.summary import CLUSTER_GAUGES

    require_columns(metrics, ("node_id", "name", "timestamp", "value"), "reported_cluster_gauges")
    return _samples(metrics, CONTROLLER_PREFIX, CLUSTER_GAUGES)


def kafka_gauges_beside(states: DataFrame, metrics: DataFrame, *, nodes: DataFrame | None = None,
                        zookeeper: Iterable[str | None] = (), settle_ms: int = SETTLE_MS) -> DataFrame:
    """Every sample of Kafka's own ISR gauges in ``metrics`` beside the value the partition states give.

    Three families, one frame: the brokers' ``ReplicaManager`` gauges (subject: the broker), the
    replicas' per-partition gauges (subject ``topic-partition``) and the controllers'
    ``OfflinePartitionsCount`` and ``GlobalPartitionCount`` (subject: the cluster). A KRaft controller
    computes them from its own metadata image, active or not; a ZooKeeper-era broker reports 0 unless
    it is the active controller, so in the clusters named in ``zookeeper`` only the samples of the
    active controller are judged (its ``ActiveControllerCount`` 1 in the same sample, or a value
    above 0, which no other broker reports). ``nodes`` (``node_id, cluster_id``) names each
    controller's cluster; when the states hold one cluster, every sample is of that one.

    Returns
    -------
    DataFrame
        ``broker, gauge, subject, time, reported, computed, settling, agrees`` (see
        :func:`gauges_beside_reported`).
    """
    from workbench.analysis.isr.summary import cluster_gauges, leader_gauges, partition_gauges

    cols = ["broker", "gauge", "subject", "time", "reported", "computed", "settling", "agrees"]
    leaders = (gauges_beside_reported(leader_gauges(states), reported_leader_gauges(metrics), settle_ms=settle_ms)
               .withColumn("subject", F.concat(F.lit("broker "), F.col("broker").cast("string"))).select(*cols))
    keys = ("broker", "topic", "partition")
    replicas = (gauges_beside_reported(partition_gauges(states), reported_partition_gauges(metrics),
                                       settle_ms=settle_ms, keys=keys)
                .withColumn("subject", F.concat("topic", F.lit("-"), F.col("partition").cast("string"))).select(*cols))
    reported = reported_cluster_gauges(metrics)
    clusters = states.select("cluster_id").distinct()
    if nodes is not None:
        owner = nodes.select(F.col("node_id").cast("int").alias("broker"), "cluster_id",
                             F.lit(True).alias("_owned")).distinct()
        reported = reported.join(owner, "broker", "left")
    else:
        reported = reported.withColumn("cluster_id", F.lit(None).cast("string")).withColumn("_owned", F.lit(None))
    single = clusters.agg(F.count("*").alias("_n"), F.first("cluster_id").alias("_only"))
    reported = (reported.crossJoin(single).where(F.col("_owned").isNotNull() | (F.col("_n") == 1))
                .withColumn("cluster_id", F.when(F.col("_owned").isNotNull(), F.col("cluster_id"))
                            .otherwise(F.col("_only")))
                .drop("_n", "_only", "_owned"))
    zk = list(zookeeper)
    if zk:
        named = [c for c in zk if c is not None]
        in_zk = F.col("cluster_id").isin(*named) if named else F.lit(False)
        if None in zk:
            in_zk = in_zk | F.col("cluster_id").isNull()
        active = _samples(metrics, CONTROLLER_PREFIX, ["ActiveControllerCount"]).select(
            "broker", "time", F.col("value").alias("_active"))
        reported = (reported.join(active, ["broker", "time"], "left")
                    .where(~F.coalesce(in_zk, F.lit(False)) | (F.col("value") > 0)
                           | F.coalesce(F.col("_active") == 1, F.lit(False)))
                    .drop("_active"))
    controllers = (gauges_beside_reported(cluster_gauges(states), reported, settle_ms=settle_ms, keys=("cluster_id",))
                   .withColumn("subject", F.concat(F.lit("cluster "), F.coalesce("cluster_id", F.lit(""))))
                   .select(*cols))
    return leaders.unionByName(replicas).unionByName(controllers).orderBy("gauge", "subject", "broker", "time")


def gauge_agreement(beside: DataFrame) -> DataFrame:
    """Per broker and gauge (of :func:`gauges_beside_reported`): ``samples, judged, agree, differ``."""
    return (beside.groupBy("broker", "gauge")
            .agg(F.count("*").alias("samples"), F.count("agrees").alias("judged"),
                 F.sum(F.col("agrees").cast("int")).alias("agree"),
                 F.sum((~F.col("agrees")).cast("int")).alias("differ"))
            .na.fill(0, ["agree", "differ"]).orderBy("broker", "gauge"))


def kafka_gauges_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """:func:`kafka_gauges_beside` of a bundle's partition states and metric exports, each controller's
    cluster taken from the bundle's ``meta.properties``, the clusters without a metadata log judged as
    ZooKeeper-era ones; kept once per bundle (its table and its differences read it twice)."""
    from workbench.analysis.isr.inputs import _static_key, static_min_isr
    from workbench.analysis.isr.states import states_for

    nodes = tables.bundle.node_clusters()
    owners = tables.spark.createDataFrame(sorted(nodes.items()), "node_id int, cluster_id string")
    key = _static_key(static_min_isr(tables, params))
    return tables.derive(f"isr.kafka_gauges:{key}",
                         lambda: kafka_gauges_beside(states_for(tables, params), tables.metrics, nodes=owners,
                                                     zookeeper=tables.bundle.text_log_clusters()))
