"""ISR health (KIP-164): partition state intervals, UnderMinIsr and per-broker counts.

Replays ``TopicRecord``, ``PartitionRecord``, ``PartitionChangeRecord``, ``RemoveTopicRecord``
and ``min.insync.replicas`` ``ConfigRecord``\\ s of the KRaft metadata log into intervals of
constant visible state per partition, and flags each interval as Kafka's metrics would:

* ``under_replicated`` — ISR smaller than the assigned replicas (adding replicas excluded);
* ``under_min_isr`` — ISR smaller than the effective ``min.insync.replicas`` (KIP-164);
* ``at_min_isr`` — ISR size equal to it;
* ``offline`` — no leader (``-1``).

The effective ``min.insync.replicas`` is resolved as Kafka resolves a topic's config: the topic
config, else the leader broker's dynamic broker config, else the cluster-wide dynamic default,
else the static default (``server.properties``, which the metadata log does not hold; 1 unless
given), and it is re-evaluated at every config change, so a change mid-stream opens a new interval.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.analysis._checks import require_columns
from workbench.analysis.metadata_log import ordered_records

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

MIN_ISR_CONFIG = "min.insync.replicas"
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

STATES_SCHEMA = (
    "topic string, topic_id string, partition int, start timestamp, end timestamp, start_offset long, "
    "leader int, isr array<int>, replicas array<int>, elr array<int>, min_isr int, under_replicated boolean, "
    "under_min_isr boolean, at_min_isr boolean, offline boolean, state string, end_reason string"
)
_UDF_SCHEMA = STATES_SCHEMA.replace("start timestamp, end timestamp", "start long, end long")

_PARTITION_FIELDS = (
    "struct<partitionId:int, topicId:string, replicas:array<int>, isr:array<int>, "
    "removingReplicas:array<int>, addingReplicas:array<int>, leader:int, "
    "eligibleLeaderReplicas:array<int>>"
)
_TOPIC_FIELDS = "struct<name:string, topicId:string>"
_CONFIG_FIELDS = "struct<resourceType:int, resourceName:string, name:string, value:string>"


def partition_states(metadata: DataFrame, *, static_min_isr: int = 1) -> DataFrame:
    """Intervals of constant state per partition, with the KIP-164 flags.

    Parameters
    ----------
    metadata : DataFrame
        The ``metadata`` table of one cluster (any number of node replicas).
    static_min_isr : int
        ``min.insync.replicas`` of the brokers' ``server.properties`` (not in the metadata log).

    Returns
    -------
    DataFrame
        Columns ``STATES_SCHEMA``: ``topic, topic_id, partition, start, end, start_offset,
        leader, isr, replicas, elr, min_isr, under_replicated, under_min_isr, at_min_isr,
        offline, state, end_reason``. ``state`` is the most severe of ``offline``,
        ``under_min_isr``, ``at_min_isr``, ``under_replicated``, ``healthy``. ``end`` is the
        time of the next change, of the topic's deletion (``end_reason = "topic_deleted"``) or
        of the last record of the log (``"log_end"``).

    Examples
    --------
    >>> states = partition_states(tables.metadata)                          # doctest: +SKIP
    >>> states.where("under_min_isr").select("topic", "partition", "start", "end").show()  # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    if static_min_isr < 1:
        raise ValueError(f"static_min_isr must be >= 1, got {static_min_isr}")
    records = ordered_records(metadata).where(~F.col("is_control"))
    records = records.withColumn("t_us", F.unix_micros("timestamp"))
    end = records.agg(F.max("t_us").alias("t")).collect()[0]["t"]
    spark = metadata.sparkSession
    if end is None:
        return spark.createDataFrame([], STATES_SCHEMA)

    topics = (records.where(F.col("record_type") == "TopicRecord")
              .select(F.from_json("fields", _TOPIC_FIELDS).alias("f"))
              .select(F.col("f.topicId").alias("topic_id"), F.col("f.name").alias("topic")))
    removed = (records.where(F.col("record_type") == "RemoveTopicRecord")
               .select(F.get_json_object("fields", "$.topicId").alias("topic_id"),
                       F.col("t_us").alias("deleted_us"), F.col("offset").alias("deleted_offset")))
    configs = (records.where(F.col("record_type") == "ConfigRecord")
               .select("offset", "seq", "t_us", F.from_json("fields", _CONFIG_FIELDS).alias("f"))
               .where(F.col("f.name") == MIN_ISR_CONFIG)
               .where(F.col("f.resourceType").isin(TOPIC_RESOURCE, BROKER_RESOURCE))
               .select("offset", "seq", "t_us", F.col("f.resourceType").alias("rtype"),
                       F.col("f.resourceName").alias("rname"), F.col("f.value").alias("value")))
    # min.insync.replicas changes are few (one per topic or broker at most per change): small enough
    # to ship to every task with the function below.
    config_events = [tuple(r) for r in configs.orderBy("offset", "seq").collect()]

    parts = (records.where(F.col("record_type").isin("PartitionRecord", "PartitionChangeRecord"))
             .select("offset", "seq", "t_us", "record_type", F.from_json("fields", _PARTITION_FIELDS).alias("f"))
             .select("offset", "seq", "t_us", "record_type",
                     F.col("f.topicId").alias("topic_id"), F.col("f.partitionId").alias("partition"),
                     F.col("f.leader").alias("leader"), F.col("f.isr").alias("isr"),
                     F.col("f.replicas").alias("replicas"), F.col("f.addingReplicas").alias("adding"),
                     F.col("f.eligibleLeaderReplicas").alias("elr"))
             .join(topics, "topic_id", "left")
             .join(removed, "topic_id", "left"))

    def replay(pdf: pd.DataFrame) -> pd.DataFrame:
        return _replay_partition(pdf, config_events, end, static_min_isr)

    out = parts.groupBy("topic_id", "partition").applyInPandas(replay, _UDF_SCHEMA)
    return (out.withColumn("start", F.timestamp_micros("start"))
            .withColumn("end", F.timestamp_micros("end"))
            .select(*[c.split()[0] for c in STATES_SCHEMA.split(", ")]))


def _effective_min_isr(topic_cfg: int | None, broker_cfg: dict[str, int], cluster_cfg: int | None,
                       leader: int, static_min_isr: int) -> int:
    if topic_cfg is not None:
        return topic_cfg
    if leader >= 0 and str(leader) in broker_cfg:
        return broker_cfg[str(leader)]
    if cluster_cfg is not None:
        return cluster_cfg
    return static_min_isr


def _state_label(offline: bool, under_min: bool, at_min: bool, under_rep: bool) -> str:
    if offline:
        return "offline"
    if under_min:
        return "under_min_isr"
    if at_min:
        return "at_min_isr"
    if under_rep:
        return "under_replicated"
    return "healthy"


def _as_list(value: object) -> list[int] | None:
    if value is None:
        return None
    return [int(v) for v in value]  # type: ignore[union-attr]


def _config_int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None  # an unparsable value is rejected by Kafka; it never takes effect


def _replay_partition(pdf: pd.DataFrame, config_events: list[tuple], log_end_us: int,
                      static_min_isr: int) -> pd.DataFrame:
    """Walk one partition's records and the min ISR config changes in log order."""
    import pandas as pd

    pdf = pdf.sort_values(["offset", "seq"], kind="stable")
    first = pdf.iloc[0]
    topic = first["topic"] if isinstance(first["topic"], str) else None
    topic_id, partition = first["topic_id"], int(first["partition"])
    deleted_us = None if pd.isna(first["deleted_us"]) else int(first["deleted_us"])
    deleted_offset = None if pd.isna(first["deleted_offset"]) else int(first["deleted_offset"])

    # one merged event stream: ("p", row) for partition records, ("c", event) for config changes
    events: list[tuple[int, int, str, object]] = [
        (int(r.offset), int(r.seq), "p", r) for r in pdf.itertuples(index=False)
    ]
    for ev in config_events:
        offset, seq, _t, rtype, rname, _v = ev
        if rtype == TOPIC_RESOURCE and rname != topic:
            continue
        events.append((int(offset), int(seq), "c", ev))
    events.sort(key=lambda e: (e[0], e[1], 0 if e[2] == "c" else 1))

    topic_cfg: int | None = None
    broker_cfg: dict[str, int] = {}
    cluster_cfg: int | None = None
    leader, isr, replicas, adding, elr = -1, None, None, [], None
    exists = False
    rows: list[dict] = []
    current: dict | None = None

    def close(at_us: int, reason: str) -> None:
        if current is not None:
            current["end"] = at_us
            current["end_reason"] = reason
            rows.append(current)

    for offset, _seq, kind, payload in events:
        if deleted_offset is not None and offset >= deleted_offset:
            break
        if kind == "c":
            _o, _s, t_us, rtype, rname, value = payload  # type: ignore[misc]
            parsed = _config_int(value)
            if rtype == TOPIC_RESOURCE:
                topic_cfg = parsed
            elif rname == "":
                cluster_cfg = parsed
            elif parsed is None:
                broker_cfg.pop(rname, None)
            else:
                broker_cfg[rname] = parsed
            if not exists:
                continue
        else:
            r = payload
            t_us = int(r.t_us)  # type: ignore[attr-defined]
            full = r.record_type == "PartitionRecord"  # type: ignore[attr-defined]
            new_leader = r.leader  # type: ignore[attr-defined]
            if full:
                leader = -1 if pd.isna(new_leader) else int(new_leader)
                isr = _as_list(r.isr) or []  # type: ignore[attr-defined]
                replicas = _as_list(r.replicas) or []  # type: ignore[attr-defined]
                adding = _as_list(r.adding) or []  # type: ignore[attr-defined]
                elr = _as_list(r.elr)  # type: ignore[attr-defined]
                exists = True
            else:
                if not exists:
                    continue  # a change for a partition whose creation is not in this log
                if not pd.isna(new_leader) and int(new_leader) != -2:
                    leader = int(new_leader)
                for name in ("isr", "replicas", "adding", "elr"):
                    value = _as_list(getattr(r, name))
                    if value is not None:
                        if name == "isr":
                            isr = value
                        elif name == "replicas":
                            replicas = value
                        elif name == "adding":
                            adding = value
                        else:
                            elr = value
        min_isr = _effective_min_isr(topic_cfg, broker_cfg, cluster_cfg, leader, static_min_isr)
        isr_list = isr or []
        rf = len([b for b in (replicas or []) if b not in adding])
        offline = leader < 0
        under_min = len(isr_list) < min_isr
        at_min = len(isr_list) == min_isr
        under_rep = len(isr_list) < rf
        state = (leader, tuple(isr_list), tuple(replicas or []), None if elr is None else tuple(elr), min_isr)
        if current is not None and current["_key"] == state:
            continue
        close(t_us, "next_change")
        current = {
            "_key": state, "topic": topic, "topic_id": topic_id, "partition": partition,
            "start": t_us, "start_offset": offset, "leader": leader, "isr": list(isr_list),
            "replicas": list(replicas or []), "elr": None if elr is None else list(elr), "min_isr": min_isr,
            "under_replicated": under_rep, "under_min_isr": under_min, "at_min_isr": at_min,
            "offline": offline, "state": _state_label(offline, under_min, at_min, under_rep),
        }
    if deleted_us is not None:
        close(deleted_us, "topic_deleted")
    else:
        close(log_end_us, "log_end")
    columns = [c.split()[0] for c in _UDF_SCHEMA.split(", ")]
    return pd.DataFrame([{k: row[k] for k in columns} for row in rows], columns=columns)


def under_min_isr_counts(states: DataFrame) -> DataFrame:
    """KIP-164 ``UnderMinIsrPartitionCount`` per leader broker, as a step series.

    The count of partitions a broker leads whose ISR is smaller than their effective
    ``min.insync.replicas``. One row per broker at its first appearance as a leader, at every
    change of its count, and at the end of the log.

    Parameters
    ----------
    states : DataFrame
        From :func:`partition_states`.

    Returns
    -------
    DataFrame
        Columns ``broker int, time timestamp, count int``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(states, ("leader", "start", "end", "under_min_isr", "end_reason"), "under_min_isr_counts")
    led = states.where(F.col("leader") >= 0)
    flag = F.col("under_min_isr").cast("int")
    opens = led.select(F.col("leader").alias("broker"), F.col("start").alias("time"), flag.alias("delta"))
    closes = (led.where(F.col("end_reason") != "log_end")
              .select(F.col("leader").alias("broker"), F.col("end").alias("time"), (-flag).alias("delta")))
    steps = opens.unionByName(closes).groupBy("broker", "time").agg(F.sum("delta").alias("delta"))
    by_time = Window.partitionBy("broker").orderBy("time")
    running = steps.withColumn("count", F.sum("delta").over(by_time.rowsBetween(Window.unboundedPreceding, 0)))
    changed = (running.withColumn("_prev", F.lag("count").over(by_time))
               .where(F.col("_prev").isNull() | (F.col("_prev") != F.col("count"))))
    log_end = states.agg(F.max("end").alias("time"))
    last = (running.withColumn("_rank", F.row_number().over(Window.partitionBy("broker").orderBy(F.col("time").desc())))
            .where(F.col("_rank") == 1).select("broker", "count").crossJoin(log_end))
    return (changed.select("broker", "time", "count").unionByName(last.select("broker", "time", "count"))
            .dropDuplicates(["broker", "time"])
            .select(F.col("broker").cast("int"), "time", F.col("count").cast("int")))


def partition_summary(states: DataFrame) -> DataFrame:
    """Per partition: time spent in each bad state, first UnderMinIsr, ISR shrinks and expands.

    Returns
    -------
    DataFrame
        Columns ``topic, partition, min_isr, under_min_isr_seconds, under_replicated_seconds,
        offline_seconds, first_under_min_isr, isr_shrinks, isr_expands``; ``min_isr`` is the
        value in force at the end.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(states, ("topic", "topic_id", "partition", "start", "end", "isr", "min_isr"), "partition_summary")
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


def reported_under_min_isr(metrics: DataFrame) -> DataFrame:
    """Kafka's own ``UnderMinIsrPartitionCount`` samples from a bundle's metric exports.

    Shown beside :func:`under_min_isr_counts`, it lets a reader check the computed series
    against what each broker reported (when its JMX or Prometheus export was collected).

    Returns
    -------
    DataFrame
        Columns ``broker int, time timestamp, count int``, one row per sample.
    """
    from pyspark.sql import functions as F

    require_columns(metrics, ("node_id", "metric", "attribute", "timestamp", "value"), "reported_under_min_isr")
    return (metrics.where((F.col("metric") == "UnderMinIsrPartitionCount") & (F.col("attribute") == "Value"))
            .select(F.col("node_id").cast("int").alias("broker"), F.col("timestamp").alias("time"),
                    F.col("value").cast("int").alias("count")))
