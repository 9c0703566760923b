"""Tiered storage backlog (the seed's UploadTierLag / DeleteTierLag, shipped as KIP-963's metrics).

How much eligible data waited to be uploaded to remote storage, and how much waited to be deleted
from it, per partition and over time, in segments, records and bytes; where a partition's data
lived (local log, remote storage, both, or nowhere); and Kafka's own ``RemoteCopyLag*``,
``RemoteDeleteLag*`` and ``RemoteLogSizeBytes`` samples beside the computed series, each
disagreement explained from the segments and events.

Inputs: the ``remote`` table (``__remote_log_metadata`` segment life-cycle events), the local
segments (``inventory`` and ``batches``), the topic and broker settings (``configs``:
``remote.storage.enable``, ``local.retention.*``, ``retention.*``,
``remote.log.manager.task.interval.ms``, ``log.retention.check.interval.ms``), leaders from the
KRaft metadata log when the bundle has it (:mod:`workbench.analysis.isr`), and ``metrics``.

Definitions (the seed's, as Kafka implements them):

* **upload lag** of a partition at time *t*: the rolled (non-active) local segments whose offsets
  no ``COPY_SEGMENT_FINISHED`` remote segment covered yet at *t*, while ``remote.storage.enable``
  was true, and that had not fallen below the log start offset; in segments, records (offsets:
  ``end - base + 1``) and bytes;
* **delete lag**: the uploaded segments whose deletion started (``DELETE_SEGMENT_STARTED``) and
  had not finished, plus those past ``retention.ms`` (largest record timestamp) or
  ``retention.bytes`` (the data after them reached it) whose deletion had not started. A failed
  copy's clean-up is not a deletion backlog;
* **local range**: the local segments present at *t*; **remote range**: the segments readable in
  remote storage at *t* (copy finished, deletion not started); the **log start** moves when the
  expiration task deletes by retention; a **gap** is an offset range above the log start that is
  neither local nor readable remotely — data that exists nowhere.

What cannot be known from a bundle (and how it is approximated):

* the local segments present are the final state: earlier ones are known from their remote
  copies (offsets, size, largest timestamp); when their local files were deleted is derived from
  Kafka's rule (the first retention check after the segment was uploaded, as far as Kafka knew,
  and past local retention, or below the log start): ``local_deleted`` is the earliest such
  moment and ``local_deleted_latest`` one ``log.retention.check.interval.ms`` later;
* when a segment rolled is pinned by the first batch of the next segment when the bundle holds it;
  otherwise it is taken as the time of the segment's last record (or, when the next segment was
  opened empty, when local retention expired it), never after its copy started;
  ``rolled_latest`` bounds it;
* offsets between known segments that no event and no file hold are one segment of unknown size
  (``source = 'unknown'``): their events were lost or never written; if the log start had not
  passed them when their local files must have gone, they are a gap;
* record counts are offset counts (transaction markers take offsets too); the active segment's
  size at a past moment is interpolated between its creation and its last record.

Outputs, each a DataFrame documented by its function: :func:`copy_attempts` (one row per remote
segment id), :func:`segment_history` (one row per segment of each partition's log),
:func:`backlog_series` (one row per partition per change), :func:`rollup` (per broker, per topic),
:func:`gaps`, :func:`episodes`, :func:`reported` (Kafka's samples), :func:`compare` (each sample
beside the computed value, with the reason for a difference), :func:`findings`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.analysis import _tier_model as model
from workbench.analysis._checks import require_columns
from workbench.analysis.text import bytes_text
from workbench.formats.topics import METADATA_TOPIC, REMOTE_LOG_METADATA_TOPIC

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import Column, DataFrame

#: Columns of :func:`copy_attempts`.
ATTEMPTS_SCHEMA = (
    "topic string, topic_id string, partition int, segment_id string, start_offset long, end_offset long, "
    "size_bytes long, max_timestamp timestamp, broker int, copy_started timestamp, copy_finished timestamp, "
    "delete_started timestamp, delete_finished timestamp, outcome string, ended timestamp"
)

_TIMES = ("max_ts", "created", "rolled", "rolled_latest", "first_copy_started", "uploaded", "remote_deleted",
          "remote_delete_finished", "covered", "log_start_passed", "retention_due", "local_due", "local_deleted",
          "local_deleted_latest", "gap_start", "gap_end")

#: Columns of :func:`segment_history`.
HISTORY_SCHEMA = (
    "topic string, partition int, base_offset long, end_offset long, records long, bytes long, "
    "max_timestamp timestamp, source string, in_bundle boolean, active boolean, created timestamp, "
    "rolled timestamp, rolled_latest timestamp, roll_evidence string, attempts int, failed_attempts int, "
    "first_copy_started timestamp, uploaded timestamp, segment_id string, uploaded_by int, "
    "remote_deleted timestamp, remote_delete_finished timestamp, covered timestamp, log_start_passed timestamp, "
    "retention_due timestamp, local_due timestamp, local_deleted timestamp, local_deleted_latest timestamp, "
    "gap_start timestamp, gap_end timestamp, broker int"
)

_SERIES_TIMES = ("time", "upload_oldest_rolled", "kafka_copy_after_copy_at", "kafka_copy_after_run_at",
                 "kafka_delete_at")
_SERIES_INTS = ("broker", "upload_segments", "uncertain_segments", "phantom_segments", "copies_in_flight",
                "copies_failed", "kafka_copy_after_copy_segments", "kafka_copy_after_run_segments",
                "delete_segments", "deleting_segments", "overdue_segments", "kafka_delete_segments",
                "local_segments", "remote_segments", "remote_metadata_count", "gap_ranges")
_SERIES_LONGS = ("upload_records", "upload_bytes", "uncertain_bytes", "phantom_bytes", "kafka_copy_after_copy_bytes",
                 "kafka_copy_after_run_bytes", "delete_records", "delete_bytes", "kafka_delete_bytes", "log_start",
                 "log_end", "local_start", "local_bytes", "remote_start", "remote_end", "remote_bytes",
                 "remote_listed_bytes", "remote_listed_v4_bytes", "overlap_offsets", "gap_offsets")


def _series_type(column: str) -> str:
    if column in _SERIES_TIMES:
        return "timestamp"
    if column in _SERIES_INTS:
        return "int"
    return "long"


#: Columns of :func:`backlog_series`.
SERIES_SCHEMA = "topic string, partition int, " + ", ".join(f"{c} {_series_type(c)}" for c in model.SERIES_COLUMNS)

#: Measures a roll-up adds over partitions (plus the partitions counted by :data:`ROLLUP_COUNTS`).
ROLLUP_SUMS = (
    "upload_segments", "upload_records", "upload_bytes", "uncertain_segments", "uncertain_bytes",
    "phantom_segments", "phantom_bytes", "copies_in_flight", "copies_failed",
    "kafka_copy_after_copy_segments", "kafka_copy_after_copy_bytes", "kafka_copy_after_run_segments",
    "kafka_copy_after_run_bytes", "delete_segments", "delete_records", "delete_bytes", "deleting_segments",
    "overdue_segments", "kafka_delete_segments", "kafka_delete_bytes", "local_segments", "local_bytes",
    "remote_segments", "remote_bytes", "remote_listed_bytes", "remote_listed_v4_bytes", "remote_metadata_count",
    "gap_offsets", "gap_ranges",
)
#: Partition counts of a roll-up: name -> the per-partition condition.
ROLLUP_COUNTS = {
    "partitions": "true",
    "partitions_uploading_behind": "upload_segments > 0",
    "partitions_deleting_behind": "delete_segments > 0",
    "partitions_with_gap": "gap_ranges > 0",
}
#: Times a roll-up keeps the latest of (a Kafka gauge's last modelled update).
ROLLUP_LATEST = ("kafka_copy_after_copy_at", "kafka_copy_after_run_at", "kafka_delete_at")

#: Kafka's gauges (normalised metric ``name``) and what they are compared with: the computed
#: column, then Kafka's own way of counting it (modelled), by the variant's name.
KAFKA_GAUGES: dict[str, tuple[str, str, dict[str, str]]] = {
    "kafka_server_brokertopicmetrics_remotecopylagsegments": (
        "RemoteCopyLagSegments", "upload_segments",
        {"after_copy": "kafka_copy_after_copy_segments", "after_run": "kafka_copy_after_run_segments"}),
    "kafka_server_brokertopicmetrics_remotecopylagbytes": (
        "RemoteCopyLagBytes", "upload_bytes",
        {"after_copy": "kafka_copy_after_copy_bytes", "after_run": "kafka_copy_after_run_bytes"}),
    "kafka_server_brokertopicmetrics_remotedeletelagsegments": (
        "RemoteDeleteLagSegments", "delete_segments", {"deletions": "kafka_delete_segments"}),
    "kafka_server_brokertopicmetrics_remotedeletelagbytes": (
        "RemoteDeleteLagBytes", "delete_bytes", {"deletions": "kafka_delete_bytes"}),
    "kafka_server_brokertopicmetrics_remotelogsizebytes": (
        "RemoteLogSizeBytes", "remote_bytes",
        {"listed": "remote_listed_bytes", "listed_v4": "remote_listed_v4_bytes"}),
    "kafka_server_brokertopicmetrics_remotelogmetadatacount": (
        "RemoteLogMetadataCount", "remote_metadata_count", {}),
}

#: Columns of :func:`reported`.
REPORTED_SCHEMA = "metric string, broker int, topic string, time timestamp, value double, format string"

#: Columns of :func:`compare`.
COMPARE_COLUMNS = (
    "metric", "broker", "topic", "time", "format", "reported", "computed", "difference", "modelled",
    "changed_before", "changes_after", "reason", "note",
)

#: Reasons of :func:`compare`, in the order they are tried.
REASONS = ("agree", "settling", "gauge_stale", "kafka_definition", "phantom_segment", "roll_time_uncertain",
           "unexplained")

_INTERNAL_TOPICS = (METADATA_TOPIC, REMOTE_LOG_METADATA_TOPIC, "__consumer_offsets", "__transaction_state",
                    "__share_group_state")


def _ms(column: str) -> Column:
    from pyspark.sql import functions as F

    return (F.unix_micros(F.col(column)) / F.lit(1000.0)).cast("double")


def _ts(column: str) -> Column:
    """A float epoch-ms column as a timestamp (NaN and null stay null)."""
    from pyspark.sql import functions as F

    c = F.col(column)
    return F.when(c.isNull() | F.isnan(c), F.lit(None)).otherwise(
        F.timestamp_micros(F.round(c * 1000.0).cast("long"))).alias(column)


# -------------------------------------------------------------------------------- copy attempts

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
    from pyspark.sql import Window
    from pyspark.sql import functions as F

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


# ---------------------------------------------------------------------------- inputs per partition

def tiered_topics(remote: DataFrame, configs: DataFrame) -> list[str]:
    """Topics with tiered-storage events, or with ``remote.storage.enable=true`` at some time."""
    from pyspark.sql import functions as F

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
    from pyspark.sql import Window
    from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

    candidates = [
        tables["remote"].agg(F.max(_ms("event_timestamp"))).collect()[0][0],
        tables["batches"].where(F.col("topic").isin(list(topics))).agg(F.max(_ms("max_timestamp"))).collect()[0][0],
        tables["metrics"].agg(F.max(_ms("timestamp"))).collect()[0][0],
    ]
    finite = [float(c) for c in candidates if c is not None]
    return max(finite) if finite else model.NAN


_KERNEL_INPUT = (
    "kind string, topic string, partition int, segment_id string, start_offset long, end_offset long, "
    "size_bytes double, max_ts double, broker int, copy_started double, copy_finished double, "
    "delete_started double, delete_finished double, node_id int, base_offset long, last_offset double, "
    "bytes double, first_ts double, records double, active boolean, time double, leader int"
)


def _kernel_input(attempts: DataFrame, local: DataFrame, leaders: DataFrame | None) -> DataFrame:
    from pyspark.sql import functions as F

    names = [c.split()[0] for c in _KERNEL_INPUT.split(", ")]
    types = dict(c.split() for c in _KERNEL_INPUT.split(", "))

    def shaped(frame: DataFrame, kind: str, given: dict[str, Column]) -> DataFrame:
        cols = []
        for name in names:
            if name == "kind":
                cols.append(F.lit(kind).alias("kind"))
            elif name in given:
                cols.append(given[name].cast(types[name]).alias(name))
            else:
                cols.append(F.lit(None).cast(types[name]).alias(name))
        return frame.select(*cols)

    parts = [
        shaped(attempts, "attempt", {
            "topic": F.col("topic"), "partition": F.col("partition"), "segment_id": F.col("segment_id"),
            "start_offset": F.col("start_offset"), "end_offset": F.col("end_offset"),
            "size_bytes": F.col("size_bytes"), "max_ts": _ms("max_timestamp"), "broker": F.col("broker"),
            "copy_started": _ms("copy_started"), "copy_finished": _ms("copy_finished"),
            "delete_started": _ms("delete_started"), "delete_finished": _ms("delete_finished")}),
        shaped(local, "local", {c: F.col(c) for c in ("topic", "partition", "node_id", "base_offset", "last_offset",
                                                      "bytes", "max_ts", "first_ts", "records", "active")}),
    ]
    if leaders is not None:
        parts.append(shaped(leaders, "leader", {c: F.col(c) for c in ("topic", "partition", "time", "leader")}))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _split(pdf: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[float, int]]]:
    """A partition's kernel input as its copy attempts, local segments and leader changes (a change
    whose time or leader is unknown is left out: it cannot be placed or named)."""
    attempts = pdf[pdf["kind"] == "attempt"][list(model.ATTEMPT_COLUMNS)].reset_index(drop=True)
    local = pdf[pdf["kind"] == "local"][list(model.LOCAL_COLUMNS)].reset_index(drop=True)
    lead = pdf[(pdf["kind"] == "leader") & pdf["time"].notna() & pdf["leader"].notna()]
    lead = lead.sort_values("time", kind="stable")
    leaders = [(float(t), int(b)) for t, b in zip(lead["time"], lead["leader"], strict=True)]
    compact: list[tuple[float, int]] = []
    for t, b in leaders:
        if not compact or compact[-1][1] != b:
            compact.append((t, b))
    return attempts, local, compact


def _run_kernel(tables: Any, params: Mapping[str, Any], which: str) -> DataFrame:
    """Apply the history (``which='history'``) or series kernel to every tiered partition."""
    from pyspark.sql import functions as F

    topics = _tiered_topics_of(tables)
    spark = tables.spark
    schema = HISTORY_SCHEMA if which == "history" else SERIES_SCHEMA
    if not topics:
        return spark.createDataFrame([], schema)
    attempts = copy_attempts(tables["remote"]).where(F.col("topic").isin(topics))
    local = local_segments(tables["inventory"], tables["batches"], topics)
    leaders = leader_changes(tables, params, topics)
    settings, env = settings_for(tables["configs"], topics)
    env = model.Env(env.task_interval_ms, env.check_interval_ms, bundle_end_ms(tables, topics))
    return apply_kernel(_kernel_input(attempts, local, leaders), settings, env, which)


_HISTORY_KERNEL_TYPES: dict[str, str] = {
    **{c: "double" for c in _TIMES}, "base_offset": "long", "end_offset": "long", "records": "long",
    "bytes": "double", "source": "string", "in_bundle": "boolean", "active": "boolean", "roll_evidence": "string",
    "attempts": "int", "failed_attempts": "int", "segment_id": "string", "uploaded_by": "int", "broker": "int",
}


def _kernel_schema(which: str) -> list[tuple[str, str]]:
    if which == "history":
        cols = [(c, _HISTORY_KERNEL_TYPES[c]) for c in model.HISTORY_COLUMNS]
    else:
        cols = [(c, "double" if c in _SERIES_TIMES else ("int" if c in _SERIES_INTS else "double"))
                for c in model.SERIES_COLUMNS]
    return [("topic", "string"), ("partition", "int"), *cols]


def apply_kernel(kernel_input: DataFrame, settings: Mapping[str, model.TopicSettings], env: model.Env,
                 which: str) -> DataFrame:
    """Run :func:`model.build_history` (``which='history'``) or :func:`model.build_series` per partition.

    ``kernel_input`` holds, per partition, its copy attempts, local segments and leader changes
    (``kind`` = ``attempt``, ``local``, ``leader``); ``settings`` maps each topic to its settings.
    """
    import pandas as pd
    from pyspark.sql import functions as F

    if which not in ("history", "series"):
        raise ValueError(f"which must be 'history' or 'series', got {which!r}")
    fields = _kernel_schema(which)
    udf_schema = ", ".join(f"{n} {t}" for n, t in fields)
    empty = model.TopicSettings()

    def kernel(pdf: pd.DataFrame) -> pd.DataFrame:
        topic, partition = pdf["topic"].iloc[0], pdf["partition"].iloc[0]
        topic, partition = (None if pd.isna(topic) else str(topic)), (None if pd.isna(partition) else int(partition))
        attempts, local, leaders = _split(pdf)
        s = settings.get(topic, empty)
        history = model.build_history(attempts, local, s, env, leaders)
        frame = history if which == "history" else model.build_series(history, attempts, s, env, leaders)
        frame = frame.copy()
        frame.insert(0, "partition", partition)
        frame.insert(0, "topic", topic)
        for name, kind in fields:
            if kind in ("int", "long"):
                frame[name] = pd.array([None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)
                                        for v in frame[name]], dtype="Int64")
            elif kind == "double":
                frame[name] = pd.to_numeric(frame[name], errors="coerce").astype("float64")
        return frame[[n for n, _t in fields]]

    out = kernel_input.groupBy("topic", "partition").applyInPandas(kernel, udf_schema)
    final = HISTORY_SCHEMA if which == "history" else SERIES_SCHEMA
    selected = []
    for spec in final.split(", "):
        name, kind = spec.split()
        source = "max_ts" if (which == "history" and name == "max_timestamp") else name
        if kind == "timestamp":
            selected.append(_ts(source).alias(name))
        elif kind in ("int", "long"):
            selected.append(F.col(source).cast(kind).alias(name))
        else:
            selected.append(F.col(source).alias(name))
    return out.select(*selected)


def segment_history(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """One row per segment of each tiered partition's log, with its life cycle (computed once per bundle).

    Rows of :data:`HISTORY_SCHEMA`: ``topic, partition, base_offset, end_offset`` (inclusive),
    ``records`` (offsets), ``bytes`` (null: unknown), ``max_timestamp``, ``source`` (``remote``,
    ``local``, ``remote+local``, ``unknown``: offsets no event and no file holds), ``in_bundle``,
    ``active`` (at the end), ``created``, ``rolled``, ``rolled_latest``, ``roll_evidence`` (what fixed
    ``rolled``), ``attempts``, ``failed_attempts``, ``first_copy_started``, ``uploaded`` (first
    COPY_SEGMENT_FINISHED covering it), ``segment_id, uploaded_by``, ``remote_deleted``,
    ``remote_delete_finished``, ``covered`` (Kafka's highest copied offset reached its end: local
    deletion allowed), ``log_start_passed``, ``retention_due`` (remote), ``local_due``,
    ``local_deleted``, ``local_deleted_latest``, ``gap_start``, ``gap_end`` (existed nowhere), ``broker``.

    >>> segment_history(tables).where("source = 'unknown' or gap_start is not null").show()   # doctest: +SKIP
    """
    p = dict(params or {})
    return tables.derive("tier.segment_history", lambda: _run_kernel(tables, p, "history"))


def backlog_series(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """Each tiered partition's backlog, ranges and sizes at every change (computed once per bundle).

    Rows of :data:`SERIES_SCHEMA`; a value holds until the partition's next row. ``broker`` is the
    leader; ``upload_*`` and ``delete_*`` are the lags; ``uncertain_*`` the part of the upload lag whose
    roll time is uncertain; ``phantom_*`` uploaded single-offset segments Kafka still counts
    (KAFKA-20977); ``kafka_copy_after_copy_*`` / ``kafka_copy_after_run_*`` what Kafka's RemoteCopyLag*
    gauge would show if updated after each copy (3.x) or each copy task run (4.x);
    ``kafka_delete_*`` Kafka's RemoteDeleteLag*; ``overdue_segments`` past retention, deletion not
    started; offsets (``log_*``, ``local_*``, ``remote_*``) have exclusive ends;
    ``remote_listed_bytes`` / ``remote_listed_v4_bytes`` as Kafka 3.x / 4.x count RemoteLogSizeBytes;
    ``overlap_offsets`` are both local and remote; ``gap_*`` nowhere.

    >>> backlog_series(tables).where("upload_segments > 0").orderBy("time").show()   # doctest: +SKIP
    """
    p = dict(params or {})
    return tables.derive("tier.backlog_series", lambda: _run_kernel(tables, p, "series"))


def task_interval_ms(tables: Any) -> float:
    """``remote.log.manager.task.interval.ms`` of the brokers (Kafka's default when unset)."""
    topics = _tiered_topics_of(tables)
    return settings_for(tables["configs"], topics)[1].task_interval_ms


# ----------------------------------------------------------------------------------- roll-ups

def rollup(series: DataFrame, by: Sequence[str] = ("broker",)) -> DataFrame:
    """The partitions' series added up per group (``broker``, ``topic``, or both), at every change.

    A partition counts for the broker that led it at that moment, so a leadership move moves its
    backlog from one broker's line to the other's.

    Parameters
    ----------
    series : DataFrame
        From :func:`backlog_series`.
    by : sequence of str
        ``("broker",)``, ``("topic",)`` or ``("broker", "topic")``.

    Returns
    -------
    DataFrame
        One row per group and change time: the ``by`` columns, ``time``, the sums of
        :data:`ROLLUP_SUMS`, the partition counts of :data:`ROLLUP_COUNTS`, and the latest of
        :data:`ROLLUP_LATEST` (when Kafka's gauge of any of its partitions was last set).

    Examples
    --------
    >>> rollup(backlog_series(tables), by=["broker"]).where("upload_segments > 0").show()   # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    by = list(by)
    if not by or any(b not in ("broker", "topic") for b in by):
        raise ValueError(f"by must name broker and/or topic, got {by}")
    require_columns(series, ("topic", "partition", "time", "broker", *ROLLUP_SUMS, *ROLLUP_LATEST), "rollup")
    # Written as SQL text: a Column built in Python costs a py4j round trip per function, literal,
    # cast and alias (thousands for one roll-up of 30-odd measures); each expression below is
    # parsed by Spark in one.
    measures = list(ROLLUP_SUMS) + list(ROLLUP_COUNTS)
    keys = [f"`{b}`" for b in by]
    latest = [f"`{c}`" for c in ROLLUP_LATEST]
    w = "OVER (PARTITION BY `topic`, `partition` ORDER BY `time`)"
    keyed = series.selectExpr(
        "`topic`", "`partition`", "`time`", "`broker`", *latest,
        *[f"coalesce(cast(`{m}` AS BIGINT), 0) AS `{m}`" for m in ROLLUP_SUMS],
        *[f"CAST(CASE WHEN {cond} THEN 1 ELSE 0 END AS BIGINT) AS `{name}`" for name, cond in ROLLUP_COUNTS.items()])
    keyed = keyed.selectExpr(
        "*", *[f"coalesce(lag(`{m}`) {w}, 0) AS `_p_{m}`" for m in measures], f"lag(`broker`) {w} AS `_p_broker`",
        f"lag(`time`) {w} IS NULL AS `_first`")
    keyed = keyed.selectExpr(
        "*", "`_first` OR coalesce(`_p_broker` = `broker`, `_p_broker` IS NULL AND `broker` IS NULL) AS `_same`")
    current = keyed.selectExpr(*keys, "`time`", *latest, *[
        f"`{m}` - CASE WHEN `_same` THEN `_p_{m}` ELSE 0 END AS `{m}`" for m in measures])
    moved = keyed.where("NOT `_same`").selectExpr(
        *[("`_p_broker` AS `broker`" if b == "broker" else f"`{b}`") for b in by], "`time`",
        *[f"CAST(NULL AS TIMESTAMP) AS {c}" for c in latest], *[f"-`_p_{m}` AS `{m}`" for m in measures])
    deltas = current.unionByName(moved).groupBy(*by, "time").agg(
        *[F.expr(f"sum(`{m}`) AS `{m}`") for m in measures], *[F.expr(f"max({c}) AS {c}") for c in latest])
    g = f"OVER (PARTITION BY {', '.join(keys)} ORDER BY `time` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    return deltas.selectExpr(*keys, "`time`", *[f"CAST(sum(`{m}`) {g} AS BIGINT) AS `{m}`" for m in measures],
                             *[f"max({c}) {g} AS {c}" for c in latest])


# --------------------------------------------------------------------------------------- gaps

def gaps(history: DataFrame) -> DataFrame:
    """Offset ranges that existed nowhere (neither local nor readable in remote storage, above the log start).

    Returns
    -------
    DataFrame
        One row per such segment: ``topic, partition, base_offset, end_offset, records, bytes,
        start, end`` (when; ``end`` is the bundle's end while it lasted), ``source``, ``evidence``
        (plain text: why the workbench says so).
    """
    from pyspark.sql import functions as F

    require_columns(history, ("topic", "partition", "base_offset", "end_offset", "gap_start", "gap_end", "source",
                              "uploaded", "local_deleted", "attempts"), "gaps")
    why = (F.when(F.col("source") == "unknown", F.lit(
        "no remote segment event and no local file holds these offsets, while segments after them were uploaded"))
        .when(F.col("uploaded").isNull(), F.concat(
            F.lit("never uploaded ("), F.col("attempts").cast("string"),
            F.lit(" copy attempt(s)) and its local segment was deletable "
                  "(Kafka's highest copied offset had passed it)")))
        .otherwise(F.lit("its remote copy was deleted before the log start offset passed it")))
    return (history.where(F.col("gap_start").isNotNull())
            .select("topic", "partition", "base_offset", "end_offset", "records", "bytes",
                    F.col("gap_start").alias("start"), F.col("gap_end").alias("end"), "source", why.alias("evidence"))
            .orderBy("topic", "partition", "base_offset"))


# ----------------------------------------------------------------------------------- episodes

def episodes(series: DataFrame, lag: str = "upload", *, min_seconds: float = 0.0) -> DataFrame:
    """Maximal periods during which a partition's upload (or delete) lag stayed above zero (for
    uploads: above the segments whose roll time is uncertain, ``uncertain_segments``).

    Parameters
    ----------
    series : DataFrame
        From :func:`backlog_series`.
    lag : str
        ``upload`` or ``delete``.
    min_seconds : float
        Only episodes lasting at least this long (an upload lag always appears between a roll and
        the next task run; a backlog is one that outlasts that).

    Returns
    -------
    DataFrame
        One row per episode: ``topic, partition, broker`` (the leader when it began), ``start, end``
        (``end`` null: still behind at the end of the bundle), ``seconds``, ``peak_segments,
        peak_records, peak_bytes``, ``failed_copies`` (copy attempts that failed meanwhile).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if lag not in ("upload", "delete"):
        raise ValueError(f"lag must be 'upload' or 'delete', got {lag!r}")
    seg, rec, byt = f"{lag}_segments", f"{lag}_records", f"{lag}_bytes"
    require_columns(series, ("topic", "partition", "time", "broker", seg, rec, byt, "copies_failed"), "episodes")
    w = Window.partitionBy("topic", "partition").orderBy("time")
    ends = series.agg(F.max("time").alias("_bundle_end"))
    on = F.col(seg) > 0
    if lag == "upload" and "uncertain_segments" in series.columns:
        # a segment whose roll time the bundle does not pin down (an idle active segment rolled by
        # time, at some moment before its upload) may not have been waiting at all: it does not
        # start or keep up a backlog on its own
        on = (F.col(seg) - F.coalesce(F.col("uncertain_segments"), F.lit(0))) > 0
    flagged = (series.withColumn("_on", on)
               .withColumn("_next", F.lead("time").over(w))
               .withColumn("_begin", F.col("_on") & ~F.coalesce(F.lag("_on").over(w), F.lit(False)))
               .withColumn("_run", F.sum(F.col("_begin").cast("int")).over(w.rowsBetween(Window.unboundedPreceding, 0)))
               .withColumn("_failed_before", F.coalesce(F.lag("copies_failed").over(w), F.lit(0))))
    runs = (flagged.where("_on").groupBy("topic", "partition", "_run").agg(
        F.min("time").alias("start"), F.max(F.struct("time", "_next")).alias("_last"),
        F.min_by("broker", "time").alias("broker"),
        F.max(seg).alias("peak_segments"), F.max(rec).alias("peak_records"), F.max(byt).alias("peak_bytes"),
        (F.max("copies_failed") - F.min("_failed_before")).alias("failed_copies")))
    runs = runs.crossJoin(ends).withColumn("end", F.col("_last._next"))
    until = F.coalesce(F.col("end"), F.col("_bundle_end"))
    seconds = (F.unix_micros(until) - F.unix_micros("start")) / F.lit(1e6)
    return (runs.withColumn("seconds", seconds).where(F.col("seconds") >= F.lit(float(min_seconds)))
            .select("topic", "partition", F.col("broker").cast("int"), "start", "end", "seconds",
                    F.col("peak_segments").cast("int"), F.col("peak_records").cast("long"),
                    F.col("peak_bytes").cast("long"), F.col("failed_copies").cast("int"))
            .orderBy("start", "topic", "partition"))


# ------------------------------------------------------------------------------ Kafka's gauges

def reported(metrics: DataFrame) -> DataFrame:
    """Kafka's own tiered-storage gauges from the bundle's metric exports (JmxTool CSV, Prometheus).

    Returns
    -------
    DataFrame
        :data:`REPORTED_SCHEMA`: ``metric`` (``RemoteCopyLagSegments``, ``RemoteCopyLagBytes``,
        ``RemoteDeleteLagSegments``, ``RemoteDeleteLagBytes``, ``RemoteLogSizeBytes``,
        ``RemoteLogMetadataCount``), ``broker`` (the exporting node), ``topic`` (null: the
        broker-wide gauge), ``time``, ``value``, ``format``; one row per sample.
    """
    from pyspark.sql import functions as F

    require_columns(metrics, ("node_id", "name", "labels", "timestamp", "value", "format"), "reported")
    short = F.lit(None).cast("string")
    for name, (label, _c, _m) in KAFKA_GAUGES.items():
        short = F.when(F.col("name") == name, F.lit(label)).otherwise(short)
    return (metrics.where(F.col("name").isin(list(KAFKA_GAUGES)) & F.col("timestamp").isNotNull()
                          & F.col("value").isNotNull() & ~F.isnan("value"))
            .where(F.coalesce(F.col("labels").getItem("partition"), F.lit("")) == "")
            .select(short.alias("metric"), F.col("node_id").cast("int").alias("broker"),
                    F.col("labels").getItem("topic").alias("topic"), F.col("timestamp").alias("time"),
                    F.col("value").cast("double").alias("value"), "format"))


#: The evidence :func:`compare` writes in its notes.
_COMPARE_TEXT = {
    "after_copy": "; Kafka's value is the lag right after the last successful copy, at ",
    "after_copy_3x": " (Kafka 3.x updates RemoteCopyLag* only after a successful copy; ",
    "after_copy_failed": " copy attempt(s) had failed by then or since: KAFKA-19530, KAFKA-19995), while the segments "
                         "and events show the backlog now",
    "after_run": "; Kafka's value is the lag at the end of the copy task run at ",
    "after_run_4x": " (Kafka 4.x updates RemoteCopyLag* once per run of ",
    "after_run_in_flight": " copy in flight now), while the segments and events show the backlog now",
    "deletions": "; Kafka's value was set by the expiration task at ",
    "deletions_hold": " and holds until its next run, while the deletion events and retention show the backlog now",
    "listed": "; Kafka counts every segment not yet deleted, copies that only started (COPY_SEGMENT_STARTED, failed "
              "or in flight) included",
    "listed_v4": "; Kafka counts segments whose deletion started too",
    "phantom": "; Kafka counts an already uploaded single-offset segment at its highest copied offset as still local "
               "(KAFKA-20977 phantom lag)",
    "uncertain": "; the difference is segment(s) whose roll time the bundle does not pin down (no later batch is "
                 "left): the computed value counts them from their last record",
    "unexplained": "; no evidence in the segments and events explains the difference",
}


def _sql_str(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _sql_time(column: str) -> str:
    """SQL text of :func:`_fmt_time`."""
    return f"date_format(`{column}`, 'HH:mm:ss.SSS')"


def compare(series: DataFrame, samples: DataFrame, *, interval_ms: float) -> DataFrame:
    """Kafka's gauge samples beside the computed values, each difference classified and explained.

    Each sample is compared with the roll-up of its broker (and topic, when the gauge is per topic)
    at the sample's time.

    Parameters
    ----------
    series : DataFrame
        From :func:`backlog_series`.
    samples : DataFrame
        From :func:`reported`.
    interval_ms : float
        ``remote.log.manager.task.interval.ms``: Kafka refreshes these gauges from its tasks, so a
        sample within one interval of a change of the computed value may lag it.

    Returns
    -------
    DataFrame
        :data:`COMPARE_COLUMNS`, one row per sample: ``metric, broker, topic, time, format``,
        ``reported`` (Kafka), ``computed``, ``difference`` (reported - computed), ``modelled`` (the
        value of Kafka's own way of counting that matches the sample, when one does),
        ``changed_before`` and ``changes_after`` (the computed value's last change at or before
        the sample, and its next change), ``reason`` (:data:`REASONS`, the first that holds:
        ``agree``; ``gauge_stale``: Kafka's value is the lag at its
        last update (after each successful copy in 3.x, so failing copies leave it stale:
        KAFKA-19530, KAFKA-19995; at the end of each copy task run in 4.x; at each deletion for
        the delete lag); ``kafka_definition``: Kafka's RemoteLogSizeBytes counts segments whose
        copy started, or whose deletion started, too; ``settling``: within one task interval (and
        a second, or a tenth of the interval when longer, for that run to reach the gauge) of
        a change of the computed value or of one of Kafka's ways of counting it (the task run that
        refreshes the gauge may have seen either before it); ``phantom_segment``: Kafka counts an
        uploaded single-offset segment as still local (KAFKA-20977); ``roll_time_uncertain``:
        the difference is segments whose roll time the bundle does not pin down; ``unexplained``),
        ``note`` (the evidence, in words).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(samples, ("metric", "broker", "topic", "time", "value", "format"), "compare")
    by_topic = rollup(series, by=("broker", "topic"))
    by_broker = rollup(series, by=("broker",)).withColumn("topic", F.lit(None).cast("string"))
    rolled = by_topic.unionByName(by_broker).withColumn("_key", F.coalesce(F.col("topic"), F.lit("*")))
    w = Window.partitionBy("broker", "_key").orderBy("time")
    fwd = w.rowsBetween(Window.unboundedPreceding, 0)
    after = w.rowsBetween(1, Window.unboundedFollowing)
    # changes of the computed columns and of Kafka's own ways of counting them (a gauge refreshed
    # by a task run may show either as it was up to one interval before)
    compared = sorted({c for _l, c, _m in KAFKA_GAUGES.values()}
                      | {v for _l, _c, m in KAFKA_GAUGES.values() for v in m.values()})
    rolled = rolled.withColumns({f"_chg_{c}": F.when(F.coalesce(F.col(c) != F.lag(c).over(w), F.lit(True)),
                                                     F.col("time")) for c in compared})
    rolled = rolled.withColumns({
        **{f"{c}__since": F.last(f"_chg_{c}", ignorenulls=True).over(fwd) for c in compared},
        **{f"{c}__until": F.first(f"_chg_{c}", ignorenulls=True).over(after) for c in compared}})
    carried = [*ROLLUP_SUMS, *ROLLUP_LATEST, *[f"{c}__since" for c in compared], *[f"{c}__until" for c in compared]]
    right = rolled.select("broker", "_key", "time", *carried)
    from workbench.analysis.logs import asof

    left = samples.withColumn("_key", F.coalesce(F.col("topic"), F.lit("*")))
    # every gauge below reads these rows: kept once, instead of its window and as-of plan per gauge
    joined = asof(left, right, by=["broker", "_key"], left_time="time", right_time="time",
                  columns=carried).localCheckpoint(eager=True)

    interval_s = float(interval_ms) / 1000.0
    # Kafka runs its remote log tasks with a fixed delay: the run that refreshes a gauge starts one
    # interval after the run that made the change ended, and reaches the gauge's update a moment
    # later (a JmxTool sample taken just after the next run began can still read the old count)
    settle_s = interval_s + max(1.0, 0.1 * interval_s)
    # Each gauge's columns are SQL text: built as Python Columns they take tens of thousands of
    # py4j round trips; Spark parses each expression in one.
    lit, fmt = _sql_str, _sql_time
    parts = []
    for _name, (label, col, variants) in KAFKA_GAUGES.items():
        sub = joined.where(F.col("metric") == label)
        computed = f"coalesce(CAST(`{col}` AS DOUBLE), 0.0D)"
        settling = " OR ".join(
            f"coalesce((unix_micros(`time`) - unix_micros(`{t}__since`)) / 1000000.0D < {settle_s!r}D, false)"
            f" OR coalesce((unix_micros(`{t}__until`) - unix_micros(`time`)) / 1000000.0D < {settle_s!r}D, false)"
            for t in (col, *variants.values()))
        matched, modelled = "CAST(NULL AS STRING)", "CAST(NULL AS DOUBLE)"
        for vname, vcol in reversed(list(variants.items())):
            hit = f"coalesce(CAST(`{vcol}` AS DOUBLE), 0.0D) = `value`"
            matched = f"CASE WHEN {hit} THEN {lit(vname)} ELSE {matched} END"
            modelled = f"CASE WHEN {hit} THEN coalesce(CAST(`{vcol}` AS DOUBLE), 0.0D) ELSE {modelled} END"
        segments = col.endswith("segments")
        phantom = f"coalesce(CAST(`{'phantom_segments' if segments else 'phantom_bytes'}` AS DOUBLE), 0.0D)"
        uncertain = f"coalesce(CAST(`{'uncertain_segments' if segments else 'uncertain_bytes'}` AS DOUBLE), 0.0D)"
        diff = f"(`value` - {computed})"
        reason = ("CASE WHEN _diff = 0 THEN 'agree' WHEN _matched IN ('after_copy', 'after_run', 'deletions') "
                  "THEN 'gauge_stale' WHEN _matched IN ('listed', 'listed_v4') THEN 'kafka_definition' "
                  "WHEN _settling THEN 'settling' ")
        if col.startswith("upload"):
            reason += (f"WHEN {phantom} > 0 AND _diff = {phantom} THEN 'phantom_segment' "
                       f"WHEN {uncertain} > 0 AND _diff < 0 AND -_diff <= {uncertain} THEN 'roll_time_uncertain' ")
        reason += "ELSE 'unexplained' END"
        unit = lit(" segment(s)" if segments else (" offset(s)" if col == "remote_metadata_count" else " byte(s)"))
        what = (f"concat('computed ', format_number(_computed, 0), {unit}, ', Kafka ', "
                f"format_number(`value`, 0), {unit})")
        t = {k: lit(v) for k, v in _COMPARE_TEXT.items()}
        stale_text = (
            f"CASE WHEN _matched = 'after_copy' THEN concat({t['after_copy']}, {fmt('kafka_copy_after_copy_at')}, "
            f"{t['after_copy_3x']}, CAST(coalesce(`copies_failed`, 0) AS STRING), {t['after_copy_failed']}) "
            f"WHEN _matched = 'after_run' THEN concat({t['after_run']}, {fmt('kafka_copy_after_run_at')}, "
            f"{t['after_run_4x']}, {lit(f'{interval_s:g} s')}, '; ', CAST(coalesce(`copies_in_flight`, 0) AS STRING), "
            f"{t['after_run_in_flight']}) "
            f"WHEN _matched = 'deletions' THEN concat({t['deletions']}, {fmt('kafka_delete_at')}, "
            f"{t['deletions_hold']}) "
            f"WHEN _matched = 'listed' THEN {t['listed']} WHEN _matched = 'listed_v4' THEN {t['listed_v4']} END")
        settling_text = lit(f", within one task interval ({interval_s:g} s, and {settle_s - interval_s:g} s for "
                            "the run to reach the gauge)")
        note = (
            f"CASE WHEN _reason = 'agree' THEN concat('agree: ', {what}) "
            f"WHEN _reason = 'settling' THEN concat({what}, '; the computed value changed at ', "
            f"{fmt(col + '__since')}, ' and next changes at ', coalesce({fmt(col + '__until')}, 'the end'), "
            f"{settling_text}) "
            f"WHEN _reason IN ('gauge_stale', 'kafka_definition') THEN concat({what}, {stale_text}) "
            f"WHEN _reason = 'phantom_segment' THEN concat({what}, {t['phantom']}) "
            f"WHEN _reason = 'roll_time_uncertain' THEN concat({what}, {t['uncertain']}) "
            f"ELSE concat({what}, {t['unexplained']}) END")
        step = sub.selectExpr("*", f"{computed} AS _computed", f"{diff} AS _diff", f"{matched} AS _matched",
                              f"{modelled} AS _modelled", f"{settling} AS _settling")
        step = step.selectExpr("*", f"{reason} AS _reason")
        parts.append(step.selectExpr(
            "metric", "broker", "topic", "time", "format", "`value` AS reported", "_computed AS computed",
            "_diff AS difference", "_modelled AS modelled", f"`{col}__since` AS changed_before",
            f"`{col}__until` AS changes_after", "_reason AS reason", f"{note} AS note"))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out.orderBy("metric", "broker", F.col("topic").asc_nulls_first(), "time", "format")


# ----------------------------------------------------------------------------------- findings

def backlog_threshold_s(tables: Any, params: Mapping[str, Any]) -> float:
    """Seconds a lag must last to be a backlog episode: the ``tier_backlog_s`` parameter, else two task intervals."""
    given = float(params.get("tier_backlog_s") or 0)
    return given if given > 0 else 2 * task_interval_ms(tables) / 1000.0


def _broker_episodes(part_eps: DataFrame, rolled: DataFrame, what: str) -> DataFrame:
    """Overlapping partition episodes merged per broker, with the broker's peak from its roll-up."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ends = part_eps.agg(F.max(F.coalesce("end", "start")).alias("_e"))
    eps = part_eps.crossJoin(ends).withColumn("_end", F.coalesce("end", "_e"))
    w = Window.partitionBy("broker").orderBy("start", "_end")
    merged = (eps.withColumn("_reach", F.max("_end").over(w.rowsBetween(Window.unboundedPreceding, -1)))
              .withColumn("_new", F.col("_reach").isNull() | (F.col("start") > F.col("_reach")))
              .withColumn("_grp", F.sum(F.col("_new").cast("int")).over(w.rowsBetween(Window.unboundedPreceding, 0))))
    grouped = merged.groupBy("broker", "_grp").agg(
        F.min("start").alias("start"), F.max("_end").alias("_stop"),
        F.max(F.col("end").isNull()).alias("open"),
        F.sort_array(F.collect_set(F.concat("topic", F.lit("-"), F.col("partition").cast("string")))).alias("parts"),
        F.sum("failed_copies").alias("failed_copies"))
    seg, byt, rec = f"{what}_segments", f"{what}_bytes", f"{what}_records"
    peaks = (grouped.join(rolled.select(F.col("broker").alias("_b"), F.col("time").alias("_t"), seg, byt, rec),
                          (F.col("_b") == F.col("broker")) & (F.col("_t") >= F.col("start"))
                          & (F.col("_t") <= F.col("_stop")), "left")
             .groupBy("broker", "_grp", "start", "_stop", "open", "parts", "failed_copies")
             .agg(F.max(seg).alias("peak_segments"), F.max(byt).alias("peak_bytes"), F.max(rec).alias("peak_records")))
    return peaks.select("broker", "start", F.when(F.col("open"), F.lit(None)).otherwise(F.col("_stop")).alias("end"),
                        ((F.unix_micros("_stop") - F.unix_micros("start")) / F.lit(1e6)).alias("seconds"),
                        "parts", F.col("failed_copies").cast("long"), "peak_segments", "peak_bytes", "peak_records")


def comparison(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame | None:
    """:func:`compare` of :func:`backlog_series` with Kafka's own gauges (:func:`reported`), computed once
    per bundle; ``None`` when the bundle has no gauge samples.

    >>> comparison(tables).where("reason != 'agree'").show()          # doctest: +SKIP
    """
    samples = reported(tables["metrics"])
    if not samples.limit(1).count():
        return None
    p = dict(params or {})
    return tables.derive("tier.compare", lambda: compare(backlog_series(tables, p), samples,
                                                         interval_ms=task_interval_ms(tables)))


def findings(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """Tiered-storage findings of a bundle (computed once per bundle and parameters).

    Kinds: ``upload_backlog`` and ``delete_backlog`` (warning: behind longer than
    :func:`backlog_threshold_s`), ``copy_failed`` and ``copy_unfinished`` (warning), ``offset_gap``
    (critical: :func:`gaps`), ``gauge_unexplained`` (info: :func:`compare`), ``no_remote_metadata``
    (info: tiered topics without any ``__remote_log_metadata`` event, so uploads cannot be judged).
    """
    p = dict(params or {})
    return tables.derive(f"tier.findings:{sorted(p.items())!r}", lambda: _findings(tables, p))


def _findings(tables: Any, p: dict[str, Any]) -> DataFrame:
    from pyspark.sql import functions as F

    from workbench.analysis.findings import FINDINGS_COLUMNS, FINDINGS_SCHEMA, empty_findings

    spark = tables.spark
    out = empty_findings(spark)
    topics = _tiered_topics_of(tables)
    if not topics:
        return out
    with_events = {r["topic"] for r in tables["remote"].select("topic").distinct().collect()}
    silent = [t for t in topics if t not in with_events]
    if silent:
        out = out.unionByName(spark.createDataFrame([(
            "tier", "no_remote_metadata", "info", "topic", t, None, None,
            f"topic {t} has remote.storage.enable=true but the bundle holds no __remote_log_metadata event for it: "
            "its uploads and deletions cannot be judged", {}) for t in silent], FINDINGS_SCHEMA))
    series = backlog_series(tables, p)
    history = segment_history(tables, p)
    threshold = backlog_threshold_s(tables, p)
    by_broker = rollup(series, by=("broker",))
    when = F.date_format("start", "yyyy-MM-dd HH:mm:ss")
    for what, kind in (("upload", "upload_backlog"), ("delete", "delete_backlog")):
        eps = _broker_episodes(episodes(series, what, min_seconds=threshold), by_broker, what)
        verb = "uploads on broker " if what == "upload" else "deletions on broker "
        summary = F.concat(
            F.lit(verb), F.col("broker").cast("string"), F.lit(" fell "), F.col("peak_segments").cast("string"),
            F.lit(" segment(s) ("), bytes_text("peak_bytes"), F.lit(", "), F.col("peak_records").cast("string"),
            F.lit(" records) behind for "), F.format_string("%.0f s", "seconds"), F.lit(" after "), when,
            F.lit(" UTC"), F.when(F.col("end").isNull(), F.lit(" (still behind at the end of the bundle)"))
            .otherwise(F.lit("")),
            F.lit(" ("), F.size("parts").cast("string"), F.lit(" partition(s): "),
            F.array_join(F.slice("parts", 1, 5), ", "),
            F.when(F.size("parts") > 5, F.lit(", ...")).otherwise(F.lit("")),
            F.lit(")"),
            F.when(F.col("failed_copies") > 0, F.concat(F.lit("; "), F.col("failed_copies").cast("string"),
                                                        F.lit(" copy attempt(s) failed meanwhile")))
            .otherwise(F.lit("")))
        figures = F.create_map(
            F.lit("seconds"), F.col("seconds").cast("double"),
            F.lit("peak_segments"), F.col("peak_segments").cast("double"),
            F.lit("peak_bytes"), F.col("peak_bytes").cast("double"),
            F.lit("peak_records"), F.col("peak_records").cast("double"),
            F.lit("partitions"), F.size("parts").cast("double"),
            F.lit("failed_copies"), F.col("failed_copies").cast("double"))
        out = out.unionByName(eps.select(
            F.lit("tier").alias("area"), F.lit(kind).alias("kind"), F.lit("warning").alias("severity"),
            F.lit("broker").alias("subject_type"), F.col("broker").cast("string").alias("subject"),
            "start", "end", summary.alias("summary"), figures.alias("figures")))

    att = copy_attempts(tables["remote"]).where(F.col("topic").isin(topics))
    subject = F.concat("topic", F.lit("-"), F.col("partition").cast("string"))
    failed = (att.where(F.col("outcome") == "failed").groupBy("topic", "partition").agg(
        F.count("*").alias("n"), F.min("copy_started").alias("start"), F.max("ended").alias("end"),
        F.min("start_offset").alias("lo"), F.max("end_offset").alias("hi"),
        F.sort_array(F.collect_set("broker")).alias("brokers")))
    retried = (history.where(F.col("failed_attempts") > 0).groupBy("topic", "partition").agg(
        F.max("uploaded").alias("recovered"), F.sum(F.col("uploaded").isNull().cast("int")).alias("not_uploaded")))
    failed = failed.join(retried, ["topic", "partition"], "left")
    out = out.unionByName(failed.select(
        F.lit("tier").alias("area"), F.lit("copy_failed").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("partition").alias("subject_type"), subject.alias("subject"), "start", "end",
        F.concat(F.col("n").cast("string"), F.lit(" copy attempt(s) of partition "), subject,
                 F.lit(" (offsets "), F.col("lo").cast("string"), F.lit("-"), F.col("hi").cast("string"),
                 F.lit(") failed between "), F.date_format("start", "HH:mm:ss"), F.lit(" and "),
                 F.date_format("end", "HH:mm:ss"), F.lit(" UTC (COPY_SEGMENT_STARTED without COPY_SEGMENT_FINISHED, "
                                                          "broker "),
                 F.array_join(F.col("brokers").cast("array<string>"), ", "),
                 F.lit(")"),
                 F.when(F.coalesce(F.col("not_uploaded"), F.lit(0)) == 0, F.concat(
                     F.lit("; retries uploaded them by "), F.date_format("recovered", "HH:mm:ss"), F.lit(" UTC")))
                 .otherwise(F.lit("; some were still not uploaded at the end of the bundle"))).alias("summary"),
        F.create_map(F.lit("attempts"), F.col("n").cast("double")).alias("figures")))
    unfinished = att.where(F.col("outcome") == "unfinished")
    out = out.unionByName(unfinished.select(
        F.lit("tier").alias("area"), F.lit("copy_unfinished").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("partition").alias("subject_type"), subject.alias("subject"), F.col("copy_started").alias("start"),
        F.lit(None).cast("timestamp").alias("end"),
        F.concat(F.lit("the copy of offsets "), F.col("start_offset").cast("string"), F.lit("-"),
                 F.col("end_offset").cast("string"), F.lit(" of partition "), subject, F.lit(" (segment "),
                 F.col("segment_id"), F.lit(") started at "), F.date_format("copy_started", "HH:mm:ss"),
                 F.lit(" UTC and never finished by the end of the bundle")).alias("summary"),
        F.create_map(F.lit("bytes"), F.col("size_bytes").cast("double")).alias("figures")))
    holes = gaps(history)
    out = out.unionByName(holes.select(
        F.lit("tier").alias("area"), F.lit("offset_gap").alias("kind"), F.lit("critical").alias("severity"),
        F.lit("partition").alias("subject_type"), subject.alias("subject"), "start", "end",
        F.concat(F.lit("offsets "), F.col("base_offset").cast("string"), F.lit("-"), F.col("end_offset").cast("string"),
                 F.lit(" of partition "), subject,
                 F.lit(" existed nowhere (neither local nor in remote storage) from "),
                 F.date_format("start", "HH:mm:ss"), F.lit(" UTC"),
                 F.when(F.col("end").isNotNull(), F.concat(F.lit(" to "), F.date_format("end", "HH:mm:ss"),
                                                           F.lit(" UTC"))).otherwise(F.lit("")),
                 F.lit(": "), F.col("evidence")).alias("summary"),
        F.create_map(F.lit("records"), F.col("records").cast("double"), F.lit("bytes"),
                     F.col("bytes").cast("double")).alias("figures")))
    cmp = comparison(tables, p)
    if cmp is not None:
        bad = cmp.where(F.col("reason") == "unexplained").groupBy("metric", "broker").agg(
            F.count("*").alias("n"), F.min("time").alias("start"), F.max("time").alias("end"),
            F.first("note").alias("example"))
        out = out.unionByName(bad.select(
            F.lit("tier").alias("area"), F.lit("gauge_unexplained").alias("kind"), F.lit("info").alias("severity"),
            F.lit("node").alias("subject_type"), F.col("broker").cast("string").alias("subject"), "start", "end",
            F.concat(F.col("n").cast("string"), F.lit(" sample(s) of broker "), F.col("broker").cast("string"),
                     F.lit("'s "), F.col("metric"), F.lit(" differ from the computed value without explanation, e.g. "),
                     F.col("example")).alias("summary"),
            F.create_map(F.lit("samples"), F.col("n").cast("double")).alias("figures")))
    return out.select(*FINDINGS_COLUMNS)


def summary_sentence(tables: Any, params: Mapping[str, Any] | None = None) -> str:
    """One plain sentence on the whole bundle: uploads, deletions and missing ranges.

    Examples
    --------
    >>> summary_sentence(tables)   # doctest: +SKIP
    'uploads on broker 2 fell 8 segment(s) (7.7 MiB) behind for 44 s after 07:21:47 (2 episodes in all); ...'
    """
    from pyspark.sql import functions as F

    p = dict(params or {})
    if not _tiered_topics_of(tables):
        return "no tiered-storage topic in this bundle"
    series = backlog_series(tables, p)
    threshold = backlog_threshold_s(tables, p)
    by_broker = rollup(series, by=("broker",))
    parts = []
    for what, verb in (("upload", "uploads"), ("delete", "deletes")):
        eps = _broker_episodes(episodes(series, what, min_seconds=threshold), by_broker, what).orderBy(
            F.col("peak_segments").desc(), "start").collect()
        if not eps:
            parts.append(f"{verb} kept pace")
            continue
        worst = eps[0]
        more = f" ({len(eps)} episodes in all)" if len(eps) > 1 else ""
        parts.append(f"{verb} on broker {worst['broker']} fell {worst['peak_segments']} segment(s) "
                     f"({(worst['peak_bytes'] or 0) / 1048576:.1f} MiB) behind for {worst['seconds']:.0f} s after "
                     f"{worst['start']:%H:%M:%S}{more}")
    holes = gaps(segment_history(tables, p)).count()
    parts.append("no offset range is missing" if holes == 0 else f"{holes} offset range(s) existed nowhere for a while")
    return "; ".join(parts)


# ------------------------------------------------------------------------------------ the area

@dataclass(frozen=True, eq=False)   # equal only to itself: no comparison of whole tables
class TierAnalysis:
    """The tiered-storage area's analysis of one bundle (:func:`analyse`): its tables and parameters.

    Each output (the backlog series, segment history, the comparison with Kafka's gauges) is kept
    with the tables when first computed, so the roles below read them once.
    """

    tables: Any
    params: Mapping[str, Any]


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> TierAnalysis:
    """The tiered-storage area's analysis of a bundle's tables."""
    return TierAnalysis(tables, dict(params or {}))


def area_findings(result: TierAnalysis) -> DataFrame:
    """The area's findings of one analysis (:func:`findings`)."""
    return findings(result.tables, result.params)


def view_frames(result: TierAnalysis) -> dict[str, DataFrame]:
    """What the tier view draws: the backlog series, every segment's history, Kafka's own samples."""
    tables, params = result.tables, result.params
    series = backlog_series(tables, params)
    frames = {"series": series, "history": segment_history(tables, params)}
    samples = reported(tables["metrics"])
    frames["reported"] = samples
    return frames


def key_figures(result: TierAnalysis) -> dict[str, Any]:
    """The summary's figures: partitions, the largest upload and delete lags, copies, gaps, Kafka's samples."""
    from pyspark.sql import functions as F

    tables, params = result.tables, result.params
    series = backlog_series(tables, params)
    row = series.agg(
        F.countDistinct("topic", "partition").alias("partitions"),
        F.max("upload_segments").alias("max_upload_lag_segments"),
        F.max("upload_bytes").alias("max_upload_lag_bytes"),
        F.max("delete_segments").alias("max_delete_lag_segments"),
        F.max("delete_bytes").alias("max_delete_lag_bytes"),
    ).collect()[0].asDict()
    att = copy_attempts(tables["remote"])
    counts = att.groupBy("outcome").count().collect()
    row.update({f"copies_{r['outcome']}": r["count"] for r in counts})
    row["gap_ranges"] = gaps(segment_history(tables, params)).count()
    cmp = comparison(tables, params)
    if cmp is not None:
        reasons = cmp.groupBy("reason").count().collect()
        row.update({f"kafka_samples_{r['reason']}": r["count"] for r in reasons})
    return {k: (0 if v is None else v) for k, v in row.items()}


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("tier", title="Tiered storage backlog (KIP-405, KIP-963)", order=5, analyse=analyse,
                  findings=area_findings, tables=("remote",), frames=view_frames, key_figures=key_figures)


_register()
