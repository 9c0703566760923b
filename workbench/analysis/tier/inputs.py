"""What the tier area reads: remote segment copy attempts, tiered topics, local segments, leaders, settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

import workbench.analysis.tier.model as model
from workbench.analysis._checks import require_columns
from workbench.formats.topics import METADATA_TOPIC, REMOTE_LOG_METADATA_TOPIC

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


#: Columns of :func:`copy_attempts`.
ATTEMPTS_SCHEMA = (
    "topic string, topic_id string, partition int, segment_id string, start_offset long, end_offset long, "
    "size_bytes long, max_timestamp timestamp, broker int, copy_started timestamp, copy_finished timestamp, "
    "delete_started timestamp, delete_finished timestamp, outcome string, ended timestamp"
)
_INTERNAL_TOPICS = (METADATA_TOPIC, REMOTE_LOG_METADATA_TOPIC, "__consumer_offsets", "__transaction_state",
                    "__share_group_state")


def _ms(column: str) -> Column:
    return (F.unix_micros(F.col(column)) / F.lit(1000.0)).cast("double")


def _ts(column: str) -> Column:
    """A float epoch-ms column as a timestamp (NaN and null stay null)."""
    c = F.col(column)
    return F.when(c.isNull() | F.isnan(c), F.lit(None)).otherwise(
        F.timestamp_micros(F.round(c * 1000.0).cast("long"))).alias(column)


def copy_attempts(remote: DataFrame) -> DataFrame:
    """One row per remote segment id (one copy attempt), with its life cycle.

    The events of every node's ``__remote_log_metadata`` replica are merged (one event per
    segment and state; the earliest ``event_timestamp`` when replicas disagree).

    Parameters
    ----------
    remote : DataFrame
        The ``remote`` table.

    Returns
    -------
    DataFrame
        :data:`ATTEMPTS_SCHEMA`: ``topic, topic_id, partition, segment_id, start_offset,
        end_offset, size_bytes, max_timestamp, broker`` (the broker that started the copy: the
        leader), ``copy_started, copy_finished, delete_started, delete_finished`` (event times,
        null when that state was never written), ``outcome`` (``uploaded``: COPY_SEGMENT_FINISHED;
        ``failed``: never finished, and cleaned up or followed by a later copy attempt of the
        partition; ``unfinished``: never finished and nothing after it — in flight when the
        bundle was taken, or failed without a trace), ``ended`` (finished, else the clean-up's
        last event, else its start).

    Examples
    --------
    >>> copy_attempts(tables.remote).where("outcome != 'uploaded'").show()   # doctest: +SKIP
    """
    require_columns(remote, ("event", "state", "topic", "topic_id", "partition", "segment_id", "start_offset",
                             "end_offset", "max_timestamp", "segment_size_bytes", "broker_id", "event_timestamp"),
                    "copy_attempts")
    seg = remote.where(F.col("segment_id").isNotNull() & F.col("event").isin("segment", "segment_update",
                                                                              "segment_snapshot"))
    meta = (seg.where(F.col("event").isin("segment", "segment_snapshot") & F.col("start_offset").isNotNull())
            .groupBy("segment_id").agg(
                F.first("topic", ignorenulls=True).alias("topic"),
                F.first("topic_id", ignorenulls=True).alias("topic_id"),
                F.first("partition", ignorenulls=True).alias("partition"),
                F.min("start_offset").alias("start_offset"), F.max("end_offset").alias("end_offset"),
                F.max("segment_size_bytes").cast("long").alias("size_bytes"),
                F.max("max_timestamp").alias("max_timestamp"),
                F.min_by("broker_id", "event_timestamp").alias("broker")))
    states = seg.groupBy("segment_id").agg(*[
        F.min(F.when(F.col("state") == state, F.col("event_timestamp"))).alias(name)
        for state, name in (("COPY_SEGMENT_STARTED", "copy_started"), ("COPY_SEGMENT_FINISHED", "copy_finished"),
                            ("DELETE_SEGMENT_STARTED", "delete_started"),
                            ("DELETE_SEGMENT_FINISHED", "delete_finished"))])
    joined = meta.join(states, "segment_id", "inner")
    part = Window.partitionBy("topic", "partition")
    later = F.col("copy_started") < F.max("copy_started").over(part)
    outcome = (F.when(F.col("copy_finished").isNotNull(), F.lit("uploaded"))
               .when(F.col("delete_started").isNotNull() | F.coalesce(later, F.lit(False)), F.lit("failed"))
               .otherwise(F.lit("unfinished")))
    ended = F.when(F.col("copy_finished").isNotNull(), F.col("copy_finished")).otherwise(
        F.greatest("delete_finished", "delete_started", "copy_started"))
    return (joined.withColumn("outcome", outcome).withColumn("ended", ended)
            .select(*[c.split()[0] for c in ATTEMPTS_SCHEMA.split(", ")]))


def tiered_topics(remote: DataFrame, configs: DataFrame) -> list[str]:
    """Topics with tiered-storage events, or with ``remote.storage.enable=true`` at some time."""
    with_events = {r["topic"] for r in remote.where(F.col("topic").isNotNull()).select("topic").distinct().collect()}
    enabled = {r["resource_name"] for r in configs.where(
        (F.col("scope") == "topic") & (F.col("name") == "remote.storage.enable")
        & (F.lower(F.trim("value")) == "true")).select("resource_name").distinct().collect()}
    return sorted((with_events | enabled) - set(_INTERNAL_TOPICS))


def _tiered_topics_of(tables: Any) -> list[str]:
    """:func:`tiered_topics` of a bundle's tables, computed once per bundle (several steps ask)."""
    import weakref

    key = id(tables)
    if key not in _TOPICS:
        _TOPICS[key] = tiered_topics(tables["remote"], tables["configs"])
        weakref.finalize(tables, _TOPICS.pop, key, None)
    return _TOPICS[key]


#: The tiered topics of the bundles in use, by ``id(tables)`` (dropped when the tables are collected).
_TOPICS: dict[int, list[str]] = {}


def local_segments(inventory: DataFrame, batches: DataFrame, topics: Sequence[str]) -> DataFrame:
    """The local segments of each partition in the bundle, from one replica.

    The replica read is the one whose log reaches furthest (highest segment base offset, then
    highest offset; ties to the lowest node id). Empty segments (no batch) count: an empty active
    segment tells that the previous one was rolled by retention, not by an append.

    Returns
    -------
    DataFrame
        One row per segment file: ``topic, partition, node_id, base_offset, last_offset`` (null when
        empty), ``bytes`` (file size), ``max_ts, first_ts`` (largest batch timestamp, and that of the
        segment's first batch, epoch ms), ``records``, ``active`` (the replica's last segment).
    """
    files = (inventory.where((F.col("kind") == "segment") & F.col("topic").isin(list(topics))
                             & F.col("dir_state").isNull() & F.col("base_offset").isNotNull())
             .select("node_id", "topic", "partition", F.col("base_offset").cast("long").alias("base_offset"),
                     F.col("bytes").cast("long").alias("bytes")))
    agg = (batches.where(F.col("topic").isin(list(topics)) & F.col("segment_base_offset").isNotNull())
           .groupBy("node_id", "topic", "partition", F.col("segment_base_offset").alias("base_offset"))
           .agg(F.max("last_offset").alias("last_offset"), F.max(_ms("max_timestamp")).alias("max_ts"),
                F.min_by(_ms("max_timestamp"), "base_offset").alias("first_ts"),
                F.sum("record_count").cast("double").alias("records")))
    segs = files.join(agg, ["node_id", "topic", "partition", "base_offset"], "left")
    reach = segs.groupBy("topic", "partition", "node_id").agg(
        F.max("base_offset").alias("_b"), F.max(F.coalesce("last_offset", F.lit(-1))).alias("_o"))
    rank = Window.partitionBy("topic", "partition").orderBy(F.col("_b").desc(), F.col("_o").desc(), "node_id")
    chosen = reach.withColumn("_r", F.row_number().over(rank)).where(F.col("_r") == 1).select(
        "topic", "partition", "node_id")
    mine = segs.join(chosen, ["topic", "partition", "node_id"])
    last = Window.partitionBy("topic", "partition")
    return (mine.withColumn("active", F.col("base_offset") == F.max("base_offset").over(last))
            .select("topic", "partition", "node_id", "base_offset", F.col("last_offset").cast("double"),
                    F.col("bytes").cast("double"), "max_ts", "first_ts", "records", "active"))


def leader_changes(tables: Any, params: Mapping[str, Any], topics: Sequence[str]) -> DataFrame | None:
    """Each partition's leader changes from the KRaft metadata log (``topic, partition, time, leader``),
    or None when the bundle has no metadata log."""
    from workbench.analysis import isr

    if tables["metadata"].limit(1).count() == 0:
        return None
    states = isr.states_for(tables, params)
    return (states.where(F.col("topic").isin(list(topics)) & (F.col("leader") >= 0))
            .select("topic", "partition", _ms("start").alias("time"), "leader"))


def settings_for(configs: DataFrame, topics: Sequence[str]) -> tuple[dict[str, model.TopicSettings], model.Env]:
    """Each topic's settings over time, and the brokers' task and retention check intervals.

    Only the few settings the model reads are collected to the driver (:data:`model.CONFIG_NAMES`).
    """
    rows = (configs.where(F.col("name").isin(list(model.CONFIG_NAMES)))
            .where((F.col("scope") == "static") | (F.col("scope") == "dynamic_cluster_default")
                   | ((F.col("scope") == "topic") & F.col("resource_name").isin(list(topics))))
            .select("scope", "resource_name", "name", "value", _ms("time").alias("t"), "offset", "node_id")
            .orderBy(F.col("offset").asc_nulls_first(), "t", "node_id").collect())
    static: dict[str, str] = {}
    for r in rows:
        if r["scope"] == "static" and r["value"] is not None:
            static.setdefault(r["name"], r["value"])
    defaults = [(float(r["t"]) if r["t"] is not None else model.NAN, r["name"], r["value"])
                for r in rows if r["scope"] == "dynamic_cluster_default"]
    per_topic: dict[str, list[tuple[float, str, str | None]]] = {t: [] for t in topics}
    for r in rows:
        if r["scope"] == "topic":
            per_topic[r["resource_name"]].append(
                (float(r["t"]) if r["t"] is not None else model.NAN, r["name"], r["value"]))
    settings = {t: model.TopicSettings(per_topic[t], defaults, static) for t in topics}

    def broker_value(name: str) -> float:
        value = model._int(static.get(name))
        return float(value if value is not None and value > 0 else int(model.BROKER_DEFAULTS[name]))

    env = model.Env(task_interval_ms=broker_value("remote.log.manager.task.interval.ms"),
                    check_interval_ms=broker_value("log.retention.check.interval.ms"))
    return settings, env


def bundle_end_ms(tables: Any, topics: Sequence[str]) -> float:
    """The last moment the bundle saw: its latest tiered-storage event, record of those topics, or metric sample."""
    candidates = [
        tables["remote"].agg(F.max(_ms("event_timestamp"))).collect()[0][0],
        tables["batches"].where(F.col("topic").isin(list(topics))).agg(F.max(_ms("max_timestamp"))).collect()[0][0],
        tables["metrics"].agg(F.max(_ms("timestamp"))).collect()[0][0],
    ]
    finite = [float(c) for c in candidates if c is not None]
    return max(finite) if finite else model.NAN
