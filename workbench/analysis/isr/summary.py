"""What the partition states add up to: UnderMinIsr counts per broker, per-partition summaries, end states."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.isr.states import _FOLLOWED, states_for

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def under_min_isr_counts(states: DataFrame, *, compiled: bool = True) -> DataFrame:
    """KIP-164 ``UnderMinIsrPartitionCount`` per leader broker, as a step series.

    The count of partitions a broker leads whose ISR is smaller than their effective
    ``min.insync.replicas``. One row per broker at its first appearance as a leader, at every
    change of its count, and at the end of the log.

    Parameters
    ----------
    states : DataFrame
        From :func:`partition_states`.
    compiled : bool
        Count with a compiled running sum per broker (:class:`~workbench.analysis.isr.kernel.
        CountsReplay` through :func:`workbench.analysis.replay.replay_by_key`), the default; ``False``
        uses Spark window functions (the reference: same rows).

    Returns
    -------
    DataFrame
        Columns ``broker int, time timestamp, count int``.
    """
    require_columns(states, ("leader", "start", "end", "under_min_isr", "end_reason"), "under_min_isr_counts")
    if compiled:
        return _compiled_counts(states)
    counts = _led_counts(states, {"UnderMinIsrPartitionCount": F.col("under_min_isr")})
    return counts.select("broker", "time", F.col("value").alias("count"))


#: Kafka's per-broker ``ReplicaManager`` gauges that its leaders' partition states add up to: each
#: counts the partitions the broker leads whose state has the flag (``None``: every one it leads).
LEADER_GAUGES = {"LeaderCount": None, "UnderReplicatedPartitions": "under_replicated",
                 "AtMinIsrPartitionCount": "at_min_isr", "UnderMinIsrPartitionCount": "under_min_isr"}


#: What names one partition in the states (a ZooKeeper-era topic has no id).
_PARTITION = ("cluster_id", "topic", "topic_id", "partition")


def leader_gauges(states: DataFrame) -> DataFrame:
    """Kafka's per-broker ``ReplicaManager`` gauges (:data:`LEADER_GAUGES`), computed as step series.

    A broker's gauge counts the partitions it leads in a state (Kafka's ``Partition.isUnderReplicated``,
    ``isAtMinIsr``, ``isUnderMinIsr``, ``isLeader``); one row per broker and gauge at its first
    leadership, at each moment a partition enters or leaves its count (the value may stay: one
    partition in, one out) and at the end of the log. Brokers are keyed by id, as the metric exports are.

    Returns
    -------
    DataFrame
        ``broker int, gauge string, time timestamp, value int``.
    """
    require_columns(states, ("leader", "start", "end", "end_reason", *_PARTITION,
                             *filter(None, LEADER_GAUGES.values())), "leader_gauges")
    return _led_counts(states, {g: F.lit(True) if c is None else F.col(c) for g, c in LEADER_GAUGES.items()},
                       in_passing=True)


#: Kafka's per-partition gauges and what each reads on the leader; a replica that does not lead reads 0
#: (Kafka's ``Partition`` asks ``isLeader`` first). ``isr`` and ``replicas`` are counted.
PARTITION_GAUGES = {"UnderMinIsr": "under_min_isr", "AtMinIsr": "at_min_isr", "UnderReplicated": "under_replicated",
                    "InSyncReplicasCount": "isr", "ReplicasCount": "replicas"}


def partition_gauges(states: DataFrame) -> DataFrame:
    """Kafka's per-partition gauges (:data:`PARTITION_GAUGES`) of every replica, as step series from the
    partition states: ``broker, topic, partition, gauge, time, value``, a row where a value changes.

    A replica's gauge is the partition's figure while its broker leads it and 0 otherwise."""
    require_columns(states, ("topic", "partition", "start", "leader", "replicas", "isr",
                             *[c for c in PARTITION_GAUGES.values() if c not in ("isr", "replicas")]),
                    "partition_gauges")
    values = {g: F.size(c) if c in ("isr", "replicas") else F.coalesce(F.col(c), F.lit(False)).cast("int")
              for g, c in PARTITION_GAUGES.items()}
    each = (states.select("topic", "partition", "start", "leader", F.explode("replicas").alias("broker"),
                          F.array(*[F.struct(F.lit(g).alias("gauge"), v.alias("v")) for g, v in values.items()])
                          .alias("_gauges"))
            .select("topic", "partition", "start", "leader", "broker", F.explode("_gauges").alias("g")))
    steps = each.select("broker", "topic", "partition", "g.gauge", F.col("start").alias("time"),
                        F.when(F.col("leader") == F.col("broker"), F.col("g.v")).otherwise(F.lit(0)).alias("value"))
    order = Window.partitionBy("broker", "topic", "partition", "gauge").orderBy("time")
    return (steps.withColumn("_prev", F.lag("value").over(order))
            .where(F.col("_prev").isNull() | (F.col("_prev") != F.col("value"))).drop("_prev"))


def _led_counts(states: DataFrame, flags: dict[str, Column], *, in_passing: bool = False) -> DataFrame:
    """:func:`_running_counts` per leader broker: ``broker, gauge, time, value``."""
    led = states.where(F.col("leader") >= 0).withColumn("_key", F.col("leader"))
    counts = _running_counts(led, flags, log_end=states.agg(F.max("end").alias("time")), in_passing=in_passing)
    return counts.select(F.col("_key").cast("int").alias("broker"), "gauge", "time", "value")


#: The gauges of a whole cluster's partitions that Kafka's controllers report
#: (``kafka.controller:type=KafkaController,name=<gauge>``): the partitions with no leader, and all of them.
CLUSTER_GAUGES = {"OfflinePartitionsCount": "offline", "GlobalPartitionCount": None}


def cluster_gauges(states: DataFrame) -> DataFrame:
    """The controllers' partition gauges (:data:`CLUSTER_GAUGES`) of each cluster, as step series.

    ``OfflinePartitionsCount`` counts the cluster's partitions without a leader, ``GlobalPartitionCount``
    every partition of a topic that exists; one row per cluster and gauge at its first partition, each
    moment a partition enters or leaves the count, and the end of the log.

    Returns
    -------
    DataFrame
        ``cluster_id string, gauge string, time timestamp, value int``.
    """
    require_columns(states, ("start", "end", "end_reason", "offline", *_PARTITION), "cluster_gauges")
    keyed = states.withColumn("_key", F.col("cluster_id"))
    counts = _running_counts(keyed, {g: F.lit(True) if c is None else F.col(c) for g, c in CLUSTER_GAUGES.items()},
                             log_end=states.agg(F.max("end").alias("time")), in_passing=True)
    return counts.select(F.col("_key").alias("cluster_id"), "gauge", "time", "value")


def _running_counts(states: DataFrame, flags: dict[str, Column], *, log_end: DataFrame,
                    in_passing: bool = False) -> DataFrame:
    """Per ``_key`` and named flag, the running count of intervals with the flag set: ``_key, gauge, time,
    value``, a row at the key's first interval, each change of the count and ``log_end`` (one ``time``
    row). ``in_passing`` adds a row where as many partitions leave as enter: Kafka updates its
    partitions one at a time, and a gauge read between them sees another count in passing."""
    gauge = F.explode(F.array(*[F.struct(F.lit(name).alias("gauge"), F.coalesce(flag, F.lit(False)).cast("int")
                                         .alias("flag")) for name, flag in flags.items()]))
    part = _PARTITION if in_passing else ()
    each = states.select("_key", *part, "start", "end", "end_reason", gauge.alias("g")).select(
        "_key", *part, "start", "end", "end_reason", "g.gauge", "g.flag")
    opens = each.select("_key", *part, "gauge", F.col("start").alias("time"), F.col("flag").alias("delta"))
    closes = (each.where(F.col("end_reason") != "log_end")
              .select("_key", *part, "gauge", F.col("end").alias("time"), (-F.col("flag")).alias("delta")))
    steps = opens.unionByName(closes).groupBy("_key", "gauge", "time", *part).agg(F.sum("delta").alias("delta"))
    if in_passing:  # a partition whose next state keeps the flag did not move; ones entering and leaving at once did
        steps = steps.groupBy("_key", "gauge", "time").agg(F.sum("delta").alias("delta"),
                                                           F.sum(F.abs("delta")).alias("_moved"))
    by_time = Window.partitionBy("_key", "gauge").orderBy("time")
    running = steps.withColumn("value", F.sum("delta").over(by_time.rowsBetween(Window.unboundedPreceding, 0)))
    changed = (running.withColumn("_prev", F.lag("value").over(by_time))
               .where(F.col("_prev").isNull() | (F.col("_prev") != F.col("value"))
                      | ((F.col("_moved") > 0) if in_passing else F.lit(False))))
    last = (running.withColumn("_rank", F.row_number().over(Window.partitionBy("_key", "gauge")
                                                             .orderBy(F.col("time").desc())))
            .where(F.col("_rank") == 1).select("_key", "gauge", "value").crossJoin(log_end))
    return (changed.select("_key", "gauge", "time", "value")
            .unionByName(last.select("_key", "gauge", "time", "value"))
            .dropDuplicates(["_key", "gauge", "time"])
            .select("_key", "gauge", "time", F.col("value").cast("int")))


def _compiled_counts(states: DataFrame) -> DataFrame:
    """Steps of the count per broker (only the under-min-ISR intervals move it), replayed in time order."""
    from functools import partial

    from workbench.analysis.isr.kernel import COUNTS_SCHEMA, CountsReplay
    from workbench.analysis.replay import replay_by_key

    log_end = states.agg(F.max(F.unix_micros("end")).alias("t")).collect()[0]["t"]
    spark = states.sparkSession
    if log_end is None:
        return spark.createDataFrame([], "broker int, time timestamp, count int")
    followed = _FOLLOWED.get(states)
    if followed is not None:  # the steps, summed as the replay wrote the intervals
        from workbench.analysis.isr.kernel import STEPS_SCHEMA

        # each task summed its own; summed again across tasks in Spark, the replay sorts far fewer
        steps = (spark.read.schema(STEPS_SCHEMA).parquet(followed[1]).groupBy("broker", "time")
                 .agg(F.sum("delta").alias("delta")))
    else:
        led = states.where(F.col("leader") >= 0).select(F.col("leader").alias("broker"), "start", "end",
                                                        "under_min_isr", "end_reason")
        under = led.where(F.col("under_min_isr"))
        opens = under.select("broker", F.unix_micros("start").alias("time"), F.lit(1).alias("delta"))
        closes = (under.where(F.col("end_reason") != "log_end")
                  .select("broker", F.unix_micros("end").alias("time"), F.lit(-1).alias("delta")))
        # a broker's series starts where it first leads a partition, whatever that partition's state
        first = led.groupBy("broker").agg(F.min(F.unix_micros("start")).alias("time")).select(
            "broker", "time", F.lit(0).alias("delta"))
        steps = opens.unionByName(closes).unionByName(first)
    out = replay_by_key(steps, ["broker"], ["time"], COUNTS_SCHEMA, partial(CountsReplay, log_end))
    return out.select("broker", F.timestamp_micros("time").alias("time"), "count")


def partition_summary(states: DataFrame, *, compiled: bool = True) -> DataFrame:
    """Per partition: time spent in each bad state, first UnderMinIsr, ISR shrinks and expands.

    Parameters
    ----------
    states : DataFrame
        From :func:`partition_states`.
    compiled : bool
        Walk each partition's intervals in order with a compiled loop (:class:`~workbench.analysis.
        isr.kernel.SummaryReplay` through :func:`workbench.analysis.replay.replay_by_key`), the
        default; ``False`` uses Spark window functions (the reference: same rows).

    Returns
    -------
    DataFrame
        Columns ``topic, partition, min_isr, under_min_isr_seconds, under_replicated_seconds,
        offline_seconds, first_under_min_isr, isr_shrinks, isr_expands``; ``min_isr`` is the
        value in force at the end.
    """
    require_columns(states, ("topic", "topic_id", "partition", "start", "end", "isr", "min_isr"), "partition_summary")
    if compiled:
        from workbench.analysis.isr.kernel import SUMMARY_SCHEMA, SummaryReplay
        from workbench.analysis.replay import is_clustered, replay_by_key, replay_clustered

        rows = states.select("topic_id", "partition", "topic", F.unix_micros("start").alias("start"),
                             F.unix_micros("end").alias("end"), "start_offset", F.size("isr").alias("isr_size"),
                             "min_isr", "under_min_isr", "under_replicated", "offline")
        keys, order = ["topic_id", "partition"], ["start", "start_offset"]
        followed = _FOLLOWED.get(states)
        if followed is not None:  # walked as the replay wrote the intervals
            out = states.sparkSession.read.schema(SUMMARY_SCHEMA).parquet(followed[0])
        elif is_clustered(states, keys, order):  # partition_states' own output: each partition's rows together
            out = replay_clustered(rows, keys, SUMMARY_SCHEMA, SummaryReplay)
        else:
            out = replay_by_key(rows, keys, order, SUMMARY_SCHEMA, SummaryReplay)
        # one row per partition: sorted in one task (orderBy would sample its input first, a second
        # pass over every interval)
        return (out.withColumn("first_under_min_isr", F.timestamp_micros("first_under_min_isr"))
                .repartition(1).sortWithinPartitions("topic", "partition"))
    order = Window.partitionBy("topic_id", "partition").orderBy("start", "start_offset")
    seconds = F.unix_micros("end") - F.unix_micros("start")
    sized = (states.withColumn("_secs", seconds / F.lit(1e6))
             .withColumn("_prev", F.lag(F.size("isr")).over(order))
             .withColumn("_last", F.row_number().over(
                 order.orderBy(F.col("start").desc(), F.col("start_offset").desc()))))

    def secs_when(cond: str):  # noqa: ANN202
        return F.sum(F.when(F.col(cond), F.col("_secs")).otherwise(0.0))

    return (sized.groupBy("topic", "topic_id", "partition").agg(
        F.max(F.when(F.col("_last") == 1, F.col("min_isr"))).alias("min_isr"),
        secs_when("under_min_isr").alias("under_min_isr_seconds"),
        secs_when("under_replicated").alias("under_replicated_seconds"),
        secs_when("offline").alias("offline_seconds"),
        F.min(F.when(F.col("under_min_isr"), F.col("start"))).alias("first_under_min_isr"),
        F.sum(F.when(F.size("isr") < F.col("_prev"), 1).otherwise(0)).cast("int").alias("isr_shrinks"),
        F.sum(F.when(F.size("isr") > F.col("_prev"), 1).otherwise(0)).cast("int").alias("isr_expands"),
    ).drop("topic_id").orderBy("topic", "partition"))


#: Partition states, most severe first (``state`` of :func:`partition_states`).
STATES: tuple[str, ...] = ("offline", "under_min_isr", "at_min_isr", "under_replicated", "healthy")

#: The per-partition summary columns worth ordering by, worst first.
_SUMMARY_SECONDS = ("offline_seconds", "under_min_isr_seconds", "under_replicated_seconds")


def notable_partitions(summary: DataFrame) -> DataFrame:
    """The partitions of :func:`partition_summary` worth reading, worst first.

    Partitions never offline, under min ISR or under-replicated, whose ISR never shrank, are left
    out; the rest are ordered by offline, under-min-ISR and under-replicated seconds, then ISR
    shrinks, then topic and partition. Seconds are rounded to milliseconds.
    """
    require_columns(summary, ("topic", "partition", *_SUMMARY_SECONDS, "isr_shrinks"), "notable_partitions")
    rounded = summary
    for c in _SUMMARY_SECONDS:
        rounded = rounded.withColumn(c, F.round(F.coalesce(F.col(c), F.lit(0.0)), 3))
    notable = sum((F.col(c) for c in _SUMMARY_SECONDS), F.lit(0.0)) > 0
    return (rounded.where(notable | (F.coalesce(F.col("isr_shrinks"), F.lit(0)) > 0))
            .orderBy(*[F.col(c).desc() for c in _SUMMARY_SECONDS], F.col("isr_shrinks").desc(), "topic", "partition"))


def final_states(states: DataFrame) -> DataFrame:
    """Each partition's state at the end of the log: its last interval, least healthy first.

    What Kafka's metadata image holds for the partition when the log ends (a final state may begin
    at the last record and last no time, e.g. when every broker stopped at once). Partitions of
    deleted topics have none.

    Returns
    -------
    DataFrame
        ``cluster_id, topic, topic_id, partition, state, since, leader, isr, replicas, elr,
        min_isr``; ordered by :data:`STATES` severity, then topic and partition.
    """
    require_columns(states, ("cluster_id", "topic", "topic_id", "partition", "start", "start_offset", "state",
                             "leader", "isr", "replicas", "elr", "min_isr", "end_reason"), "final_states")
    last = Window.partitionBy("cluster_id", "topic_id", "partition").orderBy(F.col("start").desc(),
                                                                            F.col("start_offset").desc())
    return (states.withColumn("_n", F.row_number().over(last)).where("_n = 1")
            .where(F.coalesce(F.col("end_reason"), F.lit("")) != "topic_deleted")
            .select("cluster_id", "topic", "topic_id", "partition", "state", F.col("start").alias("since"),
                    "leader", "isr", "replicas", "elr", "min_isr")
            .orderBy(_severity(), "topic", "partition", "cluster_id"))


def _severity() -> Column:
    """The rank of ``state`` in :data:`STATES` (1: offline, the least healthy)."""
    return F.array_position(F.array(*[F.lit(s) for s in STATES]), F.col("state"))


def final_state_counts(final: DataFrame) -> DataFrame:
    """How many partitions ended in each state (of :func:`final_states`): ``state, partitions``, least healthy first."""
    return final.groupBy("state").agg(F.count("*").alias("partitions")).orderBy(_severity())


def warm_kernels(tables: Any) -> int:
    """Run every ISR kernel once on ``tables`` (the replays of partition states, per-broker counts
    and per-partition summaries), so ``workbench compile`` leaves their machine code cached; the
    rows they gave."""
    states = states_for(tables, {})
    return states.count() + under_min_isr_counts(states).count() + partition_summary(states).count()
