"""KRaft quorum health (KIP-835): commit stalls, leaders and epochs, and how far each node fell behind.

Since metadata version 3.3-IV1 the active controller appends a ``NoOpRecord`` whenever the
metadata log would otherwise stay idle for ``metadata.max.idle.interval.ms`` (500 ms by default),
so a healthy quorum's log never stops growing: a gap in the leader's appends is a stall, and a
node whose applied offset stops while the log grows has fallen behind. This module answers, from
the artifacts, the questions the KIP-835 gauges answer live, and puts the gauges (where a bundle
holds exports of them) beside its own figures.

Outputs, each a DataFrame (computed from DataFrames; the functions never collect an unbounded
result):

* :func:`log_appends` — one row per batch the leaders appended to the metadata log (the fullest
  replica's segments), with the interval since the previous batch and its NoOpRecords;
* :func:`noop_writing` — one row: whether the cluster writes NoOpRecords at all (metadata version
  before 3.3-IV1: none, and then no stall is claimed) and the effective idle interval;
* :func:`cadence` — one row per leader epoch: the distribution of the intervals between the
  leader's appends, and its NoOpRecords;
* :func:`stalls` — one row per commit stall: a gap between consecutive appends longer than a
  multiple (default 4) of ``metadata.max.idle.interval.ms``;
* :func:`leader_timeline` — one row per leader epoch: who led, from when, with which voters, and
  which sources say so (LeaderChange control records, the batches' epochs, each node's
  ``quorum-state``, ``kafka-metadata-quorum describe --status`` captures);
* :func:`voter_changes` — one row per KRaft voters record;
* :func:`node_offsets` — one row per observation of one node's position in the metadata log, from
  every source the bundle has (scraped KIP-835 and raft gauges, ``describe --replication``
  captures, snapshots, each replica's own log end), each with the leader's log end at that moment,
  the offset lag and the time lag;
* :func:`divergence_episodes` — one row per episode during which a node was behind the log;
* :func:`fence_events` — one row per broker registration, fence, unfence or controlled shutdown
  of the metadata log, with the divergence episode it falls in;
* :func:`batch_sizes` — one row per time window and source: metadata batch sizes computed from the
  log, beside the brokers' ``MetadataBatchSizes`` and ``MetadataBatchProcessingTimeUs`` (and
  ``record-batch-size-byte-*``/``pending-record-processing-time-us``) where scraped;
* :func:`raft_latencies` — one row per node and sample: Kafka's own ``raft-metrics`` commit and
  election latency, append and fetch rates, epoch and leader, where scraped;
* :func:`findings` — the above as plain-language findings; :func:`analyse` computes everything
  once per bundle (the ``quorum`` area, order 1, registered with
  :func:`workbench.analysis.findings.register_area`).

Times are the leader's append times (the batches' ``max_timestamp``): a follower's replica holds
the batches exactly as the leader wrote them, so its own log says *what* it holds, never *when*
it fetched it. When a node had a record comes from the node's own exports (the gauges), the
leader's view of it (``describe --replication``) and the snapshots it wrote (their header time is
the node's clock).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.analysis._checks import require_columns
from workbench.analysis.metadata_log import restarts_for

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: The KRaft metadata log's topic.
METADATA_TOPIC = "__cluster_metadata"
#: Kafka's default ``metadata.max.idle.interval.ms``.
DEFAULT_IDLE_MS = 500
IDLE_CONFIG = "metadata.max.idle.interval.ms"
#: A gap between appends longer than this many idle intervals is a stall.
DEFAULT_STALL_MULTIPLE = 4.0
#: ``metadata.version`` feature level from which the controller writes NoOpRecords (3.3-IV1).
NOOP_MIN_LEVEL = 5

#: ``metadata.version`` feature levels (Kafka's ``MetadataVersion``, read from the 3.9.2 and 4.3.1 jars).
METADATA_VERSIONS: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3",
    8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2",
    15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0",
    22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0",
    29: "4.2-IV1", 30: "4.3-IV0", 31: "4.4-IV0",
}

#: Normalised metric names (``metrics.name``) of a node's position, by the kind of position.
#: Offsets of ``log_end`` and ``high_watermark`` are exclusive (the next offset) in Kafka.
OFFSET_GAUGES: dict[str, tuple[str, ...]] = {
    "applied": ("kafka_controller_kafkacontroller_lastappliedrecordoffset",
                "kafka_controller_kafkacontroller_metadatalastappliedrecordoffset",
                "kafka_server_broker_metadata_metrics_last_applied_record_offset"),
    "committed": ("kafka_controller_kafkacontroller_lastcommittedrecordoffset",
                  "kafka_controller_kafkacontroller_metadatalastcommittedrecordoffset"),
    "log_end": ("kafka_server_raft_metrics_log_end_offset",),
    "high_watermark": ("kafka_server_raft_metrics_high_watermark",),
}
#: The applied record's append time (epoch ms) and Kafka's own lag (now minus that time).
TIME_GAUGES: tuple[str, ...] = ("kafka_controller_kafkacontroller_lastappliedrecordtimestamp",
                                "kafka_controller_kafkacontroller_metadatalastappliedrecordtimestamp",
                                "kafka_server_broker_metadata_metrics_last_applied_record_timestamp")
LAG_GAUGES: tuple[str, ...] = ("kafka_controller_kafkacontroller_lastappliedrecordlagms",
                               "kafka_controller_kafkacontroller_metadatalastappliedrecordlagms",
                               "kafka_server_broker_metadata_metrics_last_applied_record_lag_ms")
_EXCLUSIVE = ("log_end", "high_watermark")

#: Kinds of :func:`node_offsets` rows that say where a node's metadata stood (episodes are found
#: from these; ``committed`` and ``high_watermark`` are the commit point, shown but not judged).
POSITION_KINDS: tuple[str, ...] = ("applied", "fetched", "snapshot", "log_end", "unanswered")
#: A gap between a node's scrapes longer than this many of its usual intervals (and than
#: :data:`MIN_GAP_MS`) means the node did not answer: it held at most what it had before.
GAP_INTERVALS = 2.0
MIN_GAP_MS = 3000
#: How long after a gauge sample's stamp the leader may have appended the record the sample
#: reports (its linger, 25 ms, and the waits of a loaded machine). Shorter than any election
#: (at least the 2 s fetch timeout): a frozen node's last answer is held only to what the log
#: had by then, so a write an election dropped (the active controller's applied offset counts
#: writes when scheduled) is not taken for the new leader's record at that offset.
ANSWER_SLACK_MS = 500

#: Columns of :func:`log_appends`.
APPENDS_COLUMNS = ("node_id", "epoch", "base_offset", "last_offset", "records", "bytes", "time", "prev_time",
                   "interval_ms", "same_epoch", "is_control", "noops")
#: Columns of :func:`node_offsets`.
OFFSETS_COLUMNS = ("node_id", "role", "time", "source", "kind", "offset", "record_time", "leader_offset",
                   "leader_time", "offset_lag", "time_lag_ms", "missing_since", "behind_ms", "reported_lag_ms",
                   "reported_offset_lag", "note")
#: Columns of :func:`divergence_episodes`.
EPISODES_COLUMNS = ("node_id", "role", "start", "end", "seconds", "open", "first_behind", "last_behind",
                    "stopped_offset", "peak_offset_lag", "peak_time_lag_ms", "peak_behind_ms", "observations",
                    "sources", "fenced_at", "unfenced_at")
#: Columns of :func:`stalls`.
STALLS_COLUMNS = ("start", "end", "seconds", "epoch_before", "leader_before", "epoch_after", "leader_after",
                  "last_offset_before", "first_offset_after", "new_epoch", "threshold_ms")
#: Columns of :func:`leader_timeline`.
TIMELINE_COLUMNS = ("epoch", "leader", "start", "end", "last_append", "first_offset", "last_offset", "batches",
                    "records", "voters", "granting_voters", "skipped_epochs", "sources", "quorum_state_nodes")
#: Columns of :func:`fence_events`.
FENCE_COLUMNS = ("time", "offset", "broker_id", "broker_epoch", "event", "record_type", "episode_start",
                 "episode_end")
#: Columns of :func:`batch_sizes`.
BATCH_SIZE_COLUMNS = ("window_start", "window_end", "source", "node_id", "batches", "records_avg", "records_max",
                      "bytes_avg", "bytes_max", "processing_us_avg", "processing_us_max")


# ---------------------------------------------------------------------------------------------
# the metadata log


def log_appends(batches: DataFrame, metadata: DataFrame | None = None) -> DataFrame:
    """One row per batch the leaders appended to the metadata log, in offset order.

    The batches are those of the fullest replica's ``__cluster_metadata`` segments
    (:func:`workbench.analysis.logs.log_growth`; snapshots are not part of the log).

    Parameters
    ----------
    batches : DataFrame
        The ``batches`` table.
    metadata : DataFrame, optional
        The ``metadata`` table: counts each batch's NoOpRecords (else ``noops`` is null).

    Returns
    -------
    DataFrame
        :data:`APPENDS_COLUMNS`: ``node_id`` (the replica read), ``epoch`` (the batch's partition
        leader epoch), ``base_offset, last_offset, records, bytes``, ``time`` (when the log reached
        the batch: the running maximum of the append times), ``prev_time`` and ``interval_ms``
        (since the previous batch; null for the first), ``same_epoch`` (the previous batch has
        the same epoch), ``is_control``, ``noops``.

    Examples
    --------
    >>> log_appends(tables.batches, tables.metadata).where("interval_ms > 2000").show()   # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from workbench.analysis.logs import log_growth

    growth = log_growth(batches, topics=[METADATA_TOPIC])
    epochs = (batches.where((F.col("topic") == METADATA_TOPIC) & F.col("segment_base_offset").isNotNull()
                            & ~F.col("path").rlike(r"\.checkpoint(\.[a-z]+)?$"))
              .groupBy("node_id", "base_offset", (F.col("last_offset") + 1).alias("end_offset"))
              .agg(F.max("partition_leader_epoch").alias("epoch")))
    rows = growth.join(epochs, ["node_id", "base_offset", "end_offset"], "left")
    order = Window.partitionBy("topic").orderBy("base_offset")
    rows = (rows.withColumn("prev_time", F.lag("reached").over(order))
            .withColumn("_prev_epoch", F.lag("epoch").over(order)))
    if metadata is not None:
        require_columns(metadata, ("file_kind", "record_type", "offset", "batch_base_offset"), "log_appends")
        noops = (metadata.where((F.col("file_kind") == "segment") & (F.col("record_type") == "NoOpRecord"))
                 .select("batch_base_offset", "offset").distinct()
                 .groupBy(F.col("batch_base_offset").alias("base_offset")).agg(F.count("*").alias("noops")))
        rows = (rows.join(noops, "base_offset", "left")
                .withColumn("noops", F.coalesce(F.col("noops"), F.lit(0)).cast("long")))
    else:
        rows = rows.withColumn("noops", F.lit(None).cast("long"))
    return (rows.select(
        F.col("node_id").cast("int"), F.col("epoch").cast("int"), "base_offset",
        (F.col("end_offset") - 1).alias("last_offset"), F.col("record_count").cast("long").alias("records"),
        F.col("size").cast("long").alias("bytes"), F.col("reached").alias("time"), "prev_time",
        (F.unix_millis("reached") - F.unix_millis("prev_time")).alias("interval_ms"),
        (F.col("_prev_epoch") == F.col("epoch")).alias("same_epoch"), "is_control", "noops")
        .orderBy("base_offset"))


def metadata_version_levels(metadata: DataFrame) -> DataFrame:
    """Every ``metadata.version`` the log, its snapshots or a bootstrap checkpoint records.

    Returns
    -------
    DataFrame
        One row per ``FeatureLevelRecord`` of ``metadata.version`` (deduplicated across replicas):
        ``time, offset, file_kind, level``.
    """
    from pyspark.sql import functions as F

    require_columns(metadata, ("record_type", "fields", "timestamp", "offset", "file_kind"), "metadata_version_levels")
    rows = metadata.where(F.col("record_type") == "FeatureLevelRecord")
    if "feature_name" in metadata.columns:  # typed columns (the metadata table's compiled decoder)
        name, level = F.col("feature_name"), F.col("feature_level")
    else:
        name = F.get_json_object("fields", "$.name")
        level = F.get_json_object("fields", "$.featureLevel").cast("int")
    return (rows.where(name == "metadata.version")
            .select(F.col("timestamp").alias("time"), "offset", "file_kind", level.cast("int").alias("level"))
            .distinct())


@dataclass(frozen=True)
class NoOpWriting:
    """Whether and how often the cluster writes NoOpRecords (see :func:`noop_writing`)."""

    noop_records: int
    first_noop: Any
    metadata_level: int | None
    idle_ms: int
    idle_source: str
    stall_multiple: float

    @property
    def metadata_version(self) -> str | None:
        """The ``metadata.version`` name of :attr:`metadata_level`."""
        if self.metadata_level is None:
            return None
        return METADATA_VERSIONS.get(self.metadata_level, f"level {self.metadata_level}")

    @property
    def writes_noops(self) -> bool:
        """NoOpRecords are in the log, or the metadata version has them (3.3-IV1 and later)."""
        return self.noop_records > 0 or (self.metadata_level is not None and self.metadata_level >= NOOP_MIN_LEVEL)

    @property
    def threshold_ms(self) -> float:
        """A gap between appends longer than this is a stall."""
        return self.idle_ms * self.stall_multiple

    def reason(self) -> str:
        """One sentence on the cadence the cluster keeps, or why no stall can be claimed."""
        if self.noop_records > 0:
            return (f"the leader appends a NoOpRecord after {self.idle_ms} ms without records "
                    f"({IDLE_CONFIG}, {self.idle_source}); a gap over {self.threshold_ms:.0f} ms is a stall")
        if self.writes_noops:
            return (f"metadata version {self.metadata_version} writes NoOpRecords, but none is in the log read: "
                    f"gaps between appends are still judged against {self.threshold_ms:.0f} ms")
        version = self.metadata_version or "unknown (no metadata.version record: Kafka 3.2 or older)"
        return (f"the cluster writes no NoOpRecords (metadata version {version}; they came with 3.3-IV1): "
                "a quiet metadata log is not evidence of a stall, so no stall is claimed")


def noop_writing(metadata: DataFrame, configs: DataFrame | None = None, *, idle_ms: int | None = None,
                 stall_multiple: float = DEFAULT_STALL_MULTIPLE) -> NoOpWriting:
    """Whether the cluster writes NoOpRecords, with the idle interval and stall threshold in force.

    A small driver-side summary (a few aggregates) that the frame functions take as parameters.

    Parameters
    ----------
    metadata : DataFrame
        The ``metadata`` table.
    configs : DataFrame, optional
        The ``configs`` table: ``metadata.max.idle.interval.ms`` of the controllers'
        properties (the largest value set, else Kafka's default, 500 ms).
    idle_ms : int, optional
        Overrides the configured interval.
    stall_multiple : float
        Gaps longer than this many intervals are stalls.

    Examples
    --------
    >>> noop_writing(tables.metadata, tables.configs).reason()    # doctest: +SKIP
    'the leader appends a NoOpRecord after 500 ms without records ...'
    """
    from pyspark.sql import functions as F

    if stall_multiple <= 1:
        raise ValueError(f"stall_multiple must be > 1, got {stall_multiple}")
    noops = (metadata.where((F.col("record_type") == "NoOpRecord") & (F.col("file_kind") == "segment"))
             .agg(F.countDistinct("offset").alias("n"), F.min("timestamp").alias("first")).collect()[0])
    level_row = (metadata_version_levels(metadata)
                 .orderBy(F.col("file_kind") == "bootstrap", F.col("time").desc_nulls_last(), F.col("offset").desc())
                 .limit(1).collect())
    level = level_row[0]["level"] if level_row else None
    source = "Kafka's default"
    chosen = DEFAULT_IDLE_MS
    if idle_ms is not None and idle_ms > 0:
        chosen, source = int(idle_ms), "given"
    elif configs is not None:
        values = [r["value"] for r in configs.where((F.col("scope") == "static") & (F.col("name") == IDLE_CONFIG))
                  .select("value").collect()]
        parsed = [int(v) for v in values if v is not None and v.strip().isdigit()]
        if parsed:
            chosen, source = max(parsed), "the controllers' properties"
    return NoOpWriting(int(noops["n"] or 0), noops["first"], level, chosen, source, float(stall_multiple))


def cadence(appends: DataFrame, timeline: DataFrame | None = None) -> DataFrame:
    """The leader's append cadence, per leader epoch.

    Parameters
    ----------
    appends : DataFrame
        From :func:`log_appends`.
    timeline : DataFrame, optional
        From :func:`leader_timeline` (for the leader of each epoch).

    Returns
    -------
    DataFrame
        One row per leader epoch: ``epoch, leader, first_append, last_append, batches, records,
        noops`` (NoOpRecords), ``noop_batches``, ``intervals`` (between consecutive appends of the
        epoch; the gap before its first append is the election, counted in :func:`stalls`),
        ``interval_p50_ms, interval_p90_ms, interval_p99_ms, interval_max_ms, interval_mean_ms``,
        ``noop_interval_p50_ms`` (between consecutive batches holding NoOpRecords).

    Examples
    --------
    >>> cadence(log_appends(tables.batches, tables.metadata)).show()    # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(appends, APPENDS_COLUMNS, "cadence")
    within = F.when(F.col("same_epoch"), F.col("interval_ms"))
    noop_order = Window.partitionBy("epoch").orderBy("base_offset")
    noop_batches = (appends.where(F.col("noops") > 0)
                    .withColumn("_noop_gap", F.unix_millis("time") - F.unix_millis(F.lag("time").over(noop_order)))
                    .groupBy("epoch").agg(F.percentile_approx("_noop_gap", 0.5, 10000).alias("noop_interval_p50_ms")))
    per_epoch = appends.groupBy("epoch").agg(
        F.min("time").alias("first_append"), F.max("time").alias("last_append"),
        F.count("*").alias("batches"), F.sum("records").alias("records"),
        F.sum("noops").alias("noops"), F.sum((F.col("noops") > 0).cast("long")).alias("noop_batches"),
        F.count(within).alias("intervals"),
        F.percentile_approx(within, 0.5, 10000).alias("interval_p50_ms"),
        F.percentile_approx(within, 0.9, 10000).alias("interval_p90_ms"),
        F.percentile_approx(within, 0.99, 10000).alias("interval_p99_ms"),
        F.max(within).alias("interval_max_ms"), F.avg(within).alias("interval_mean_ms"))
    out = per_epoch.join(noop_batches, "epoch", "left")
    if timeline is not None:
        out = out.join(timeline.select("epoch", "leader"), "epoch", "left")
    else:
        out = out.withColumn("leader", F.lit(None).cast("int"))
    return out.select("epoch", "leader", "first_append", "last_append", "batches", "records", "noops",
                      "noop_batches", "intervals", "interval_p50_ms", "interval_p90_ms", "interval_p99_ms",
                      "interval_max_ms", "interval_mean_ms", "noop_interval_p50_ms").orderBy("epoch")


def stalls(appends: DataFrame, writing: NoOpWriting, timeline: DataFrame | None = None) -> DataFrame:
    """Commit stalls: gaps between consecutive appends longer than the stall threshold.

    Only claimed where the cluster writes NoOpRecords (after the first one in the log, or with a
    metadata version that has them): elsewhere a quiet log is not evidence of anything, and the
    result is empty (:meth:`NoOpWriting.reason` says why). A gap at the end of the log (the
    bundle was collected after the cluster stopped) is not a stall.

    Parameters
    ----------
    appends : DataFrame
        From :func:`log_appends`.
    writing : NoOpWriting
        From :func:`noop_writing` (the threshold and whether NoOps are written).
    timeline : DataFrame, optional
        From :func:`leader_timeline` (the leaders before and after).

    Returns
    -------
    DataFrame
        One row per stall, :data:`STALLS_COLUMNS`: ``start`` (the last append before), ``end``
        (the next append), ``seconds``, ``epoch_before, leader_before, epoch_after, leader_after``,
        ``last_offset_before, first_offset_after``, ``new_epoch`` (the next append was a new
        leader's), ``threshold_ms``.

    Examples
    --------
    >>> stalls(appends, noop_writing(tables.metadata, tables.configs)).show()    # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(appends, APPENDS_COLUMNS, "stalls")
    spark = appends.sparkSession
    schema = ("start timestamp, end timestamp, seconds double, epoch_before int, leader_before int, "
              "epoch_after int, leader_after int, last_offset_before long, first_offset_after long, "
              "new_epoch boolean, threshold_ms double")
    if not writing.writes_noops:
        return spark.createDataFrame([], schema)
    order = Window.partitionBy(F.lit(1)).orderBy("base_offset")
    gaps = (appends.withColumn("_prev_epoch", F.lag("epoch").over(order))
            .withColumn("_prev_last", F.lag("last_offset").over(order))
            .where(F.col("interval_ms") > F.lit(writing.threshold_ms)))
    if writing.noop_records > 0 and writing.first_noop is not None:
        gaps = gaps.where(F.col("prev_time") >= F.lit(writing.first_noop).cast("timestamp"))
    out = gaps.select(
        F.col("prev_time").alias("start"), F.col("time").alias("end"),
        (F.col("interval_ms") / 1000.0).alias("seconds"), F.col("_prev_epoch").cast("int").alias("epoch_before"),
        F.col("epoch").cast("int").alias("epoch_after"), F.col("_prev_last").alias("last_offset_before"),
        F.col("base_offset").alias("first_offset_after"),
        (F.col("epoch") != F.col("_prev_epoch")).alias("new_epoch"),
        F.lit(float(writing.threshold_ms)).alias("threshold_ms"))
    if timeline is not None:
        leaders = timeline.select("epoch", "leader")
        out = (out.join(leaders.withColumnRenamed("epoch", "epoch_before").withColumnRenamed("leader", "leader_before"),
                        "epoch_before", "left")
               .join(leaders.withColumnRenamed("epoch", "epoch_after").withColumnRenamed("leader", "leader_after"),
                     "epoch_after", "left"))
    else:
        out = (out.withColumn("leader_before", F.lit(None).cast("int"))
               .withColumn("leader_after", F.lit(None).cast("int")))
    return out.select(*STALLS_COLUMNS).orderBy("start")


# ---------------------------------------------------------------------------------------------
# leaders, epochs and voters


def _control_records(metadata: DataFrame, kind: str, file_kinds: tuple[str, ...] = ("segment",)) -> DataFrame:
    """Control records of one type, each offset once (the highest leader epoch's, like the log)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = metadata.where(F.col("is_control") & (F.col("record_type") == kind) & F.col("file_kind").isin(*file_kinds))
    best = Window.partitionBy("file_kind", "file_offset", "offset").orderBy(F.col("leader_epoch").desc(), "node_id")
    return rows.withColumn("_rank", F.row_number().over(best)).where(F.col("_rank") == 1).drop("_rank")


def _voter_ids(column: str, path: str) -> Column:
    from pyspark.sql import functions as F

    return F.array_sort(F.from_json(F.get_json_object(column, path), "array<struct<voterId:int>>")
                        .getField("voterId"))


def voter_changes(metadata: DataFrame) -> DataFrame:
    """The voter set of each KRaft voters control record (Kafka 3.9+, KIP-853).

    Returns
    -------
    DataFrame
        One row per voters record of the log, its snapshots or a bootstrap checkpoint:
        ``time, offset, epoch, file_kind, voters`` (sorted node ids).
    """
    from pyspark.sql import functions as F

    require_columns(metadata, ("is_control", "record_type", "fields", "file_kind", "file_offset", "offset",
                               "leader_epoch", "node_id", "timestamp"), "voter_changes")
    rows = _control_records(metadata, "KRAFT_VOTERS", ("segment", "snapshot", "bootstrap"))
    return (rows.select(F.col("timestamp").alias("time"), "offset", F.col("leader_epoch").alias("epoch"),
                        "file_kind", _voter_ids("fields", "$.voters").alias("voters"))
            .dropDuplicates(["time", "offset", "file_kind", "voters"]).orderBy("time", "offset"))


def leader_timeline(metadata: DataFrame, appends: DataFrame, quorum: DataFrame | None = None,
                    status: DataFrame | None = None) -> DataFrame:
    """Who led the quorum in each epoch, from when, elected by whom, and which sources say so.

    Parameters
    ----------
    metadata : DataFrame
        The ``metadata`` table (``LEADER_CHANGE`` control records: leader, voters and the voters
        that granted the vote).
    appends : DataFrame
        From :func:`log_appends` (the epochs of the batches, with their first and last appends).
    quorum : DataFrame, optional
        The ``quorum`` table (each node's ``quorum-state``: the epoch and leader it last knew).
    status : DataFrame, optional
        The ``tool_quorum_status`` table (``describe --status`` captures: leader and epoch at a time).

    Returns
    -------
    DataFrame
        One row per leader epoch, :data:`TIMELINE_COLUMNS`: ``epoch, leader`` (-1: no leader known),
        ``start`` (the LeaderChange record, else the epoch's first append, else its first
        capture), ``end`` (the next epoch's start; null for the last), ``last_append``,
        ``first_offset, last_offset, batches, records``, ``voters, granting_voters`` (from the
        LeaderChange record), ``skipped_epochs`` (epoch numbers since the previous row that
        elected nobody who appended: failed or disrupted elections), ``sources`` (any of
        ``leader_change``, ``batches``, ``quorum_state``, ``describe_status``),
        ``quorum_state_nodes`` (nodes whose ``quorum-state`` ends in this epoch).

    Examples
    --------
    >>> leader_timeline(tables.metadata, appends, tables.quorum).show()    # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(metadata, ("is_control", "record_type", "fields", "file_kind", "file_offset", "offset",
                               "leader_epoch", "node_id", "timestamp"), "leader_timeline")
    changes = (_control_records(metadata, "LEADER_CHANGE")
               .select(F.col("leader_epoch").alias("epoch"),
                       F.get_json_object("fields", "$.leaderId").cast("int").alias("lc_leader"),
                       F.col("timestamp").alias("lc_time"), F.col("offset").alias("lc_offset"),
                       _voter_ids("fields", "$.voters").alias("voters"),
                       _voter_ids("fields", "$.grantingVoters").alias("granting_voters"))
               .groupBy("epoch").agg(F.min_by(F.struct("lc_leader", "lc_time", "lc_offset", "voters",
                                                        "granting_voters"),
                                              "lc_offset").alias("lc"))
               .select("epoch", "lc.*"))
    per_epoch = appends.groupBy("epoch").agg(
        F.min("time").alias("first_append"), F.max("time").alias("last_append"),
        F.min("base_offset").alias("first_offset"), F.max("last_offset").alias("last_offset"),
        F.count("*").alias("batches"), F.sum("records").alias("records"))
    epochs = per_epoch.join(changes, "epoch", "full")
    spark = metadata.sparkSession
    if quorum is not None:
        qs = (quorum.where(F.col("leader_epoch") >= 0)
              .groupBy(F.col("leader_epoch").alias("epoch"))
              .agg(F.array_sort(F.collect_set("node_id")).alias("quorum_state_nodes"),
                   F.max(F.when(F.col("leader_id") >= 0, F.col("leader_id"))).alias("qs_leader")))
    else:
        qs = spark.createDataFrame([], "epoch int, quorum_state_nodes array<int>, qs_leader int")
    if status is not None:
        st = (status.where(F.col("leader_epoch").isNotNull())
              .groupBy(F.col("leader_epoch").alias("epoch"))
              .agg(F.min("captured").alias("st_time"),
                   F.max(F.when(F.col("leader_id") >= 0, F.col("leader_id"))).alias("st_leader")))
    else:
        st = spark.createDataFrame([], "epoch int, st_time timestamp, st_leader int")
    joined = epochs.join(qs, "epoch", "full").join(st, "epoch", "full")
    sources = F.filter(F.array(
        F.when(F.col("lc_time").isNotNull(), F.lit("leader_change")),
        F.when(F.col("batches").isNotNull(), F.lit("batches")),
        F.when(F.col("quorum_state_nodes").isNotNull(), F.lit("quorum_state")),
        F.when(F.col("st_time").isNotNull(), F.lit("describe_status"))), lambda x: x.isNotNull())
    order = Window.partitionBy(F.lit(1)).orderBy("epoch")
    out = (joined
           .withColumn("leader", F.coalesce("lc_leader", "st_leader", "qs_leader", F.lit(-1)).cast("int"))
           .withColumn("start", F.coalesce("lc_time", "first_append", "st_time"))
           .withColumn("sources", sources)
           .withColumn("end", F.lead("start").over(order))
           .withColumn("skipped_epochs",
                       F.coalesce(F.col("epoch") - F.lag("epoch").over(order) - 1, F.lit(0)).cast("int"))
           .withColumn("batches", F.coalesce("batches", F.lit(0)).cast("long"))
           .withColumn("records", F.coalesce("records", F.lit(0)).cast("long")))
    return out.select(F.col("epoch").cast("int"), *TIMELINE_COLUMNS[1:]).orderBy("epoch")


# ---------------------------------------------------------------------------------------------
# brokers: registration and fencing (the one place that reads these records' fields)


def broker_changes(metadata: DataFrame) -> DataFrame:
    """Broker registrations and their changes, one row per record of the metadata log.

    The only reader of these records' fields in this module: with the ``metadata`` table's typed
    columns (``broker_id, broker_epoch, fenced, in_controlled_shutdown``) it reads those, else the
    ``fields`` JSON.

    Returns
    -------
    DataFrame
        ``time, offset, record_type, broker_id, broker_epoch, fenced`` (true: fenced, false:
        unfenced, null: unchanged), ``in_controlled_shutdown`` (true when it began).
    """
    from pyspark.sql import functions as F

    types = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "FenceBrokerRecord",
             "UnfenceBrokerRecord", "UnregisterBrokerRecord")
    rows = metadata.where((F.col("file_kind") == "segment") & F.col("record_type").isin(*types))
    rtype = F.col("record_type")
    if {"broker_id", "broker_epoch", "fenced", "in_controlled_shutdown"} <= set(metadata.columns):
        broker, epoch, fenced, shutdown = (F.col("broker_id"), F.col("broker_epoch"), F.col("fenced"),
                                           F.col("in_controlled_shutdown"))
    else:
        def field(name: str) -> Column:
            return F.get_json_object("fields", f"$.{name}")

        broker = F.coalesce(field("brokerId"), field("id")).cast("int")
        epoch = F.coalesce(field("brokerEpoch"), field("epoch")).cast("long")
        flag = field("fenced")
        fenced = (F.when(rtype == "FenceBrokerRecord", F.lit(True))
                  .when(rtype == "UnfenceBrokerRecord", F.lit(False))
                  .when(rtype == "RegisterBrokerRecord", F.coalesce(flag.cast("boolean"), F.lit(True)))
                  .when(rtype == "BrokerRegistrationChangeRecord",
                        F.when(flag == "1", F.lit(True)).when(flag == "-1", F.lit(False))))
        ics = field("inControlledShutdown")
        shutdown = (F.when(rtype == "RegisterBrokerRecord", ics.cast("boolean"))
                    .when(rtype == "BrokerRegistrationChangeRecord", F.when(ics == "1", F.lit(True))))
    return (rows.select(F.col("timestamp").alias("time"), "offset", "record_type", broker.alias("broker_id"),
                        epoch.alias("broker_epoch"), fenced.alias("fenced"), shutdown.alias("in_controlled_shutdown"))
            .dropDuplicates(["offset"]))


def fence_events(metadata: DataFrame, episodes: DataFrame | None = None) -> DataFrame:
    """Broker fence, unfence, registration and controlled-shutdown events, joined to divergence episodes.

    Parameters
    ----------
    metadata : DataFrame
        The ``metadata`` table.
    episodes : DataFrame, optional
        From :func:`divergence_episodes`: an event of a broker during one of its episodes (from
        the episode's start to its end, or on, for an open one) carries the episode's bounds.

    Returns
    -------
    DataFrame
        One row per event, :data:`FENCE_COLUMNS`: ``time, offset, broker_id, broker_epoch,
        event`` (``registered``, ``registered_fenced``, ``fenced``, ``unfenced``,
        ``controlled_shutdown``, ``unregistered``), ``record_type, episode_start, episode_end``.

    Examples
    --------
    >>> fence_events(tables.metadata).where("event = 'fenced'").show()    # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    require_columns(metadata, ("file_kind", "record_type", "timestamp", "offset"), "fence_events")
    changes = broker_changes(metadata)
    rtype = F.col("record_type")
    event = (F.when(rtype == "UnregisterBrokerRecord", F.lit("unregistered"))
             .when(rtype == "RegisterBrokerRecord",
                   F.when(F.col("fenced"), F.lit("registered_fenced")).otherwise(F.lit("registered")))
             .when(F.col("fenced") == F.lit(True), F.lit("fenced"))
             .when(F.col("fenced") == F.lit(False), F.lit("unfenced"))
             .when(F.col("in_controlled_shutdown"), F.lit("controlled_shutdown")))
    events = (changes.withColumn("event", event).where(F.col("event").isNotNull())
              .select("time", "offset", "broker_id", "broker_epoch", "event", "record_type"))
    if episodes is None:
        return (events.withColumn("episode_start", F.lit(None).cast("timestamp"))
                .withColumn("episode_end", F.lit(None).cast("timestamp")).select(*FENCE_COLUMNS).orderBy("offset"))
    eps = episodes.select(F.col("node_id").alias("_node"), F.col("start").alias("episode_start"),
                          F.col("end").alias("episode_end"))
    cond = ((F.col("broker_id") == F.col("_node")) & (F.col("time") >= F.col("episode_start"))
            & (F.col("episode_end").isNull() | (F.col("time") <= F.col("episode_end"))))
    return events.join(eps, cond, "left").select(*FENCE_COLUMNS).orderBy("offset")


def node_roles(metadata: DataFrame, configs: DataFrame | None = None) -> DataFrame:
    """Each node's role: ``controller``, ``broker`` or ``controller+broker``.

    From ``process.roles`` in the nodes' properties when the bundle has them, else from the
    metadata log (brokers register with ``RegisterBrokerRecord``, controllers with
    ``RegisterControllerRecord`` or appear as voters of a LeaderChange record).

    Returns
    -------
    DataFrame
        One row per node: ``node_id, role``.
    """
    from pyspark.sql import functions as F

    spark = metadata.sparkSession
    pairs = spark.createDataFrame([], "node_id int, r string")
    if configs is not None:
        pairs = pairs.unionByName(
            configs.where((F.col("scope") == "static") & (F.col("name") == "process.roles"))
            .select(F.col("node_id").cast("int"), F.explode(F.split("value", r"\s*,\s*")).alias("r")))
    brokers = (metadata.where(F.col("record_type") == "RegisterBrokerRecord")
               .select(F.get_json_object("fields", "$.brokerId").cast("int").alias("node_id"),
                       F.lit("broker").alias("r")))
    if "broker_id" in metadata.columns:
        brokers = (metadata.where(F.col("record_type") == "RegisterBrokerRecord")
                   .select(F.col("broker_id").alias("node_id"), F.lit("broker").alias("r")))
    controller_id = F.get_json_object("fields", "$.controllerId").cast("int")
    if "broker_id" in metadata.columns:  # the typed column holds a RegisterControllerRecord's controllerId
        controller_id = F.coalesce(F.col("broker_id"), controller_id)
    controllers = (metadata.where(F.col("record_type") == "RegisterControllerRecord")
                   .select(controller_id.alias("node_id"), F.lit("controller").alias("r")))
    voters = (metadata.where(F.col("record_type") == "LEADER_CHANGE")
              .select(F.explode(_voter_ids("fields", "$.voters")).alias("node_id"), F.lit("controller").alias("r")))
    logged = brokers.unionByName(controllers).unionByName(voters).where(F.col("node_id").isNotNull())
    from_props = pairs.select("node_id").distinct()
    all_pairs = pairs.unionByName(logged.join(from_props, "node_id", "left_anti")).distinct()
    return (all_pairs.groupBy("node_id").agg(F.array_sort(F.collect_set("r")).alias("_r"))
            .select("node_id", F.when(F.size("_r") > 1, F.lit("controller+broker"))
                    .otherwise(F.col("_r")[0]).alias("role")))


# ---------------------------------------------------------------------------------------------
# each node's position over time


def _metric_positions(metrics: DataFrame) -> DataFrame:
    """Gauge samples of a node's position, one row per (node, export file, sample time, kind)."""
    from pyspark.sql import functions as F

    names = {n: kind for kind, ns in OFFSET_GAUGES.items() for n in ns}
    kind_col = F.lit(None).cast("string")
    for n, k in names.items():
        kind_col = F.when(F.col("name") == n, F.lit(k)).otherwise(kind_col)
    wanted = [*names, *TIME_GAUGES, *LAG_GAUGES]
    rows = metrics.where(F.col("name").isin(wanted) & F.col("timestamp").isNotNull() & F.col("node_id").isNotNull())
    rows = rows.withColumn("_v", F.when(~F.isnan("value"), F.col("value")))
    keys = ["node_id", "path", "format", "timestamp"]
    per_sample = rows.groupBy(*keys).agg(
        F.max(F.when(F.col("name").isin(*TIME_GAUGES) & (F.col("_v") > 0), F.col("_v"))).alias("_ts_ms"),
        F.max(F.when(F.col("name").isin(*LAG_GAUGES), F.col("_v"))).alias("_lag"))
    offsets = (rows.withColumn("kind", kind_col).where(F.col("kind").isNotNull() & F.col("_v").isNotNull())
               .groupBy(*keys, "kind").agg(F.max("_v").alias("_o")))
    offsets = offsets.withColumn("offset", (F.when(F.col("kind").isin(*_EXCLUSIVE), F.col("_o") - 1)
                                            .otherwise(F.col("_o"))).cast("long")).where(F.col("offset") >= 0)
    joined = offsets.join(per_sample, keys, "left")
    applied = F.col("kind") == "applied"
    return joined.select(
        F.col("node_id").cast("int"), F.col("timestamp").alias("time"), F.col("format").alias("source"), "kind",
        "offset",
        F.when(applied, F.timestamp_millis(F.col("_ts_ms").cast("long"))).alias("reported_time"),
        F.when(applied, F.col("_lag").cast("long")).alias("reported_lag_ms"),
        F.lit(None).cast("long").alias("reported_offset_lag"), F.lit(None).cast("string").alias("note"))


def _unanswered(positions: DataFrame, moved: DataFrame | None = None) -> DataFrame:
    """Where a node's scrapes stopped answering (a frozen or overloaded JVM): its last offset, repeated.

    For each node and export format, the usual interval is the median between its ``applied``
    samples; a gap longer than :data:`GAP_INTERVALS` of them (and :data:`MIN_GAP_MS`) gets one
    ``unanswered`` row per missed interval, each with the offset of the last answer and its time
    (``answered_at``): the node held at most that (an unanswered node is not shown to be current). A series that stops
    while other nodes' go on (the scraper gave up on the node) runs to the format's last sample.
    A gap ends where the node answered through another export (a scraper held up by another
    node, not this one, is no evidence; an answer within one usual interval of the last and at
    its offset is of the same moment, e.g. both scrapers answered just before a freeze, and does
    not end it), or where ``moved`` (other observations of the node, e.g.
    the leader's ``describe --replication`` view of its fetches) shows it past the offset it last
    answered after a silence that is itself a gap: it was running again, whatever the stalled
    scraper says (a scraper blocked on a frozen JVM may take seconds to answer again once it
    resumed). A stale position there (the leader repeats a frozen follower's last fetch), or one
    seen just after the last answer, is no evidence.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    series = Window.partitionBy("node_id", "source").orderBy("time")
    last_of_source = F.max("time").over(Window.partitionBy("source"))
    applied = (positions.where(F.col("kind") == "applied")
               .withColumn("_next", F.coalesce(F.lead("time").over(series), last_of_source))
               .withColumn("_gap", F.unix_millis("_next") - F.unix_millis("time")))
    usual = applied.groupBy("node_id", "source").agg(F.percentile_approx("_gap", 0.5, 1000).alias("_usual"))
    threshold = F.greatest(F.lit(MIN_GAP_MS), F.col("_usual") * GAP_INTERVALS)
    gaps = applied.join(usual, ["node_id", "source"]).where((F.col("_usual") > 0) & (F.col("_gap") > threshold))

    def evidence(frame: DataFrame, any_offset: bool) -> DataFrame:
        return frame.select(F.col("node_id").alias("_a_node"), F.col("source").alias("_a_source"),
                            F.col("time").alias("_a_time"), F.col("offset").alias("_a_offset"),
                            F.lit(any_offset).alias("_a_any"))

    answers = evidence(positions.where(F.col("kind") == "applied"), True)
    if moved is not None:
        answers = answers.unionByName(evidence(moved, False))
    # moved evidence counts once the silence before it is itself a gap: a position seen just
    # after the last answer says nothing about the time after it
    moved_on = ((F.col("_a_offset") > F.col("offset"))
                & (F.unix_millis("_a_time") - F.unix_millis("time") > threshold))
    # an answer through another export within one usual interval of the last, at the same
    # offset, is of the same moment: it says nothing about the time after it (a node frozen
    # right after both answered)
    later = ((F.unix_millis("_a_time") - F.unix_millis("time") > F.col("_usual"))
             | (F.col("_a_offset") > F.col("offset")))
    answered = ((F.col("_a_node") == F.col("node_id")) & (F.col("_a_source") != F.col("source"))
                & (F.col("_a_time") > F.col("time")) & (F.col("_a_time") < F.col("_next"))
                & ((F.col("_a_any") & later) | moved_on))
    # a gap ends where the node answered through another export, or was seen past its last answer
    cut = (gaps.join(answers, answered, "left")
           .groupBy("node_id", "source", "time", "offset", "_next", "_usual").agg(F.min("_a_time").alias("_answer"))
           .withColumn("_next", F.coalesce("_answer", "_next"))
           .withColumn("_gap", F.unix_millis("_next") - F.unix_millis("time")))
    gaps = cut.where(F.col("_gap") > threshold)
    missed = gaps.withColumn("_k", F.explode(F.sequence(F.lit(1), F.least(
        F.floor(F.col("_gap") / F.col("_usual")).cast("int") - 1, F.lit(100_000)))))
    return missed.select(
        "node_id", (F.col("time") + F.make_dt_interval(secs=F.col("_k") * F.col("_usual") / 1000.0)).alias("time"),
        "source", F.lit("unanswered").alias("kind"), "offset", F.lit(None).cast("timestamp").alias("reported_time"),
        F.lit(None).cast("long").alias("reported_lag_ms"), F.lit(None).cast("long").alias("reported_offset_lag"),
        F.lit(None).cast("string").alias("note"), F.col("time").alias("answered_at"))


def _replication_positions(replication: DataFrame) -> DataFrame:
    """``describe --replication`` rows as positions at the moment the leader answered."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    per_capture = Window.partitionBy("path")
    leader_now = F.max(F.when(F.lower("status") == "leader", F.col("last_fetch_time"))).over(per_capture)
    rows = replication.where(F.col("node_id").isNotNull() & F.col("log_end_offset").isNotNull())
    return rows.select(
        F.col("node_id").cast("int"), F.coalesce(leader_now, F.col("captured")).alias("time"),
        F.lit("describe_replication").alias("source"),
        F.when(F.lower("status") == "leader", F.lit("log_end")).otherwise(F.lit("fetched")).alias("kind"),
        (F.col("log_end_offset") - 1).alias("offset"), F.lit(None).cast("timestamp").alias("reported_time"),
        F.lit(None).cast("long").alias("reported_lag_ms"), F.col("lag").alias("reported_offset_lag"),
        F.lit(None).cast("string").alias("note"))


def _snapshot_positions(snapshots: DataFrame) -> DataFrame:
    """Snapshots a node wrote (header time: the node's clock), and copies it fetched from the leader.

    A snapshot whose end offset, epoch and header time equal another node's is one file written
    once and fetched by the others: its time says nothing about when they had it (``snapshot_copy``).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    snaps = snapshots.where((F.col("file_kind") == "snapshot") & F.col("end_offset").isNotNull()
                            & F.col("header_time").isNotNull() & F.col("node_id").isNotNull())
    same = Window.partitionBy("end_offset", "epoch", "header_time")
    first = F.min("node_id").over(same)
    count = F.count("*").over(same)
    kind = F.when((count > 1) & (F.col("node_id") != first), F.lit("snapshot_copy")).otherwise(F.lit("snapshot"))
    return snaps.select(
        F.col("node_id").cast("int"), F.col("header_time").alias("time"), F.lit("snapshot").alias("source"),
        kind.alias("kind"), (F.col("end_offset") - 1).alias("offset"),
        F.col("last_contained_time").alias("reported_time"), F.lit(None).cast("long").alias("reported_lag_ms"),
        F.lit(None).cast("long").alias("reported_offset_lag"),
        F.when(kind == "snapshot_copy", F.concat(F.lit("the same snapshot as node "), first.cast("string"),
                                                 F.lit("'s: fetched, not written here")))
        .alias("note"))


def _replica_ends(batches: DataFrame) -> DataFrame:
    """Each replica's own log end: the last batch it holds (at the leader's append time of it)."""
    from pyspark.sql import functions as F

    from workbench.analysis.logs import log_growth

    growth = log_growth(batches, topics=[METADATA_TOPIC], per_replica=True)
    last = growth.groupBy("node_id").agg(F.max_by(F.struct("end_offset", "reached"), "end_offset").alias("b"))
    return last.select(
        F.col("node_id").cast("int"), F.col("b.reached").alias("time"), F.lit("replica_log").alias("source"),
        F.lit("replica_end").alias("kind"), (F.col("b.end_offset") - 1).alias("offset"),
        F.col("b.reached").alias("reported_time"), F.lit(None).cast("long").alias("reported_lag_ms"),
        F.lit(None).cast("long").alias("reported_offset_lag"),
        F.lit("the last record this node's log holds, at the leader's append time").alias("note"))


def offset_times(appends: DataFrame, positions: DataFrame | None = None) -> DataFrame:
    """Known append times of metadata log offsets: the log's batches, snapshots and gauge readings.

    The log gives each batch's last offset and append time; a snapshot gives its last offset and
    the timestamp of that record (``lastContainedLogTimestamp``); a KIP-835 gauge sample gives an
    applied offset and that record's timestamp. The log is the authority where it reaches: the
    other sources date only offsets before its first one (a gauge's offset and timestamp are read
    one after the other, so a sample may pair an offset with the previous batch's time).

    Returns
    -------
    DataFrame
        One row per offset: ``offset, time`` (the earliest time any source gives).
    """
    from pyspark.sql import functions as F

    pairs = appends.select(F.col("last_offset").alias("offset"), "time")
    if positions is not None:
        first = appends.agg(F.min("base_offset").alias("_first"))
        older = (positions.where(F.col("kind").isin("applied", "snapshot", "snapshot_copy")
                                 & F.col("reported_time").isNotNull())
                 .crossJoin(first).where(F.col("_first").isNull() | (F.col("offset") < F.col("_first")))
                 .select("offset", F.col("reported_time").alias("time")))
        pairs = pairs.unionByName(older)
    return pairs.where(F.col("offset").isNotNull() & F.col("time").isNotNull()).groupBy("offset").agg(
        F.min("time").alias("time"))


def node_offsets(appends: DataFrame, *, metrics: DataFrame | None = None, replication: DataFrame | None = None,
                 snapshots: DataFrame | None = None, batches: DataFrame | None = None,
                 roles: DataFrame | None = None) -> DataFrame:
    """Every observation of a node's position in the metadata log, with its lag behind the leader.

    Sources (``source``) and kinds of position (``kind``):

    * scraped gauges (``jmxtool``, ``prometheus_text``, ``prometheus_json``): ``applied``
      (controllers' ``LastAppliedRecordOffset``, brokers' ``last-applied-record-offset``),
      ``committed`` (``LastCommittedRecordOffset``), ``log_end`` and ``high_watermark``
      (``raft-metrics``), and ``unanswered``: where a node's scrapes stopped for longer than
      :data:`GAP_INTERVALS` usual intervals, one row per missed interval with its last answered
      offset (a frozen node applies nothing), or the log's end :data:`ANSWER_SLACK_MS` after that
      answer if lower (a frozen active controller's last write may be one an election dropped);
    * ``describe_replication``: each voter's and observer's log end as the leader saw it at its
      last fetch (``fetched``; the leader's own row is ``log_end``), at the moment the leader
      answered;
    * ``snapshot``: a snapshot the node wrote (``snapshot``, at its header time) or fetched from
      the leader (``snapshot_copy``: its time is the leader's);
    * ``replica_log``: the last record of the node's own log (``replica_end``).

    Offsets are of the last record held (Kafka's exclusive log end and high watermark minus one).

    Parameters
    ----------
    appends : DataFrame
        From :func:`log_appends`: the leader's log end at each moment.
    metrics, replication, snapshots, batches : DataFrame, optional
        The ``metrics``, ``tool_quorum_replication``, ``snapshots`` and ``batches`` tables.
    roles : DataFrame, optional
        From :func:`node_roles`.

    Returns
    -------
    DataFrame
        One row per observation, :data:`OFFSETS_COLUMNS`: ``node_id, role, time, source, kind,
        offset``, ``record_time`` (when the leader appended that record), ``leader_offset`` and
        ``leader_time`` (the last record of the leader's log at ``time``, and when it was
        appended), ``offset_lag`` (leader_offset - offset), ``time_lag_ms`` (leader_time -
        record_time), ``missing_since`` (when the first record the node lacked was appended) and
        ``behind_ms`` (``time`` - ``missing_since``), ``reported_lag_ms`` (Kafka's own
        ``LastAppliedRecordLagMs``/``last-applied-record-lag-ms``), ``reported_offset_lag`` (the
        quorum tool's ``Lag``), ``note`` (``ahead of the log``: a sample stamped before the
        leader appended the offset it reports, e.g. a scrape answered after a pause, is not used
        to judge the node).

    Examples
    --------
    >>> node_offsets(appends, metrics=tables.metrics).where("kind = 'applied'").show()    # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from workbench.analysis.logs import asof

    require_columns(appends, APPENDS_COLUMNS, "node_offsets")
    spark = appends.sparkSession
    schema = ("node_id int, time timestamp, source string, kind string, offset long, reported_time timestamp, "
              "reported_lag_ms long, reported_offset_lag long, note string")
    parts = spark.createDataFrame([], schema)
    fetches = _replication_positions(replication) if replication is not None else None
    parts = parts.withColumn("answered_at", F.lit(None).cast("timestamp"))
    if metrics is not None:
        gauges = _metric_positions(metrics)
        parts = (parts.unionByName(gauges, allowMissingColumns=True)
                 .unionByName(_unanswered(gauges, fetches)))
    if fetches is not None:
        parts = parts.unionByName(fetches, allowMissingColumns=True)
    if snapshots is not None:
        parts = parts.unionByName(_snapshot_positions(snapshots), allowMissingColumns=True)
    if batches is not None:
        parts = parts.unionByName(_replica_ends(batches), allowMissingColumns=True)
    # the observations and the offsets' times are read by every as-of pass below: each is kept once
    # (a few rows a node and a second), so the passes plan and run from rows, not from their lineage
    parts = parts.where(F.col("time").isNotNull() & F.col("offset").isNotNull()).localCheckpoint(eager=True)

    known = offset_times(appends, parts).withColumn("_k", F.lit(1)).localCheckpoint(eager=True)
    # the leader's last record at each moment: the largest offset appended by then
    by_time = known.withColumn("_reach", F.max("offset").over(
        Window.partitionBy("_k").orderBy("time", "offset").rowsBetween(Window.unboundedPreceding, 0)))
    leader_ends = by_time.select("_k", F.col("time").alias("_t"), F.col("_reach").alias("leader_offset"))
    # an unanswered node held at most what the log had shortly after its last answer: an offset
    # the log reached only later is another record there (a write an election dropped)
    obs = parts.withColumn("_k", F.lit(1)).withColumn(
        "_held_at", F.col("answered_at") + F.expr(f"INTERVAL {ANSWER_SLACK_MS} MILLISECONDS"))
    obs = asof(obs, leader_ends.withColumnRenamed("leader_offset", "_held"), by=["_k"], left_time="_held_at",
               right_time="_t", columns=["_held"])
    obs = (obs.withColumn("offset", F.when(F.col("_held").isNotNull(), F.least("offset", "_held"))
                          .otherwise(F.col("offset")))
           .withColumn("_next", F.col("offset") + 1))
    obs = asof(obs, leader_ends,
               by=["_k"], left_time="time", right_time="_t", columns=["leader_offset"])
    # append time of an offset: the first known offset at or after it (offsets grow with time)
    ahead = known.select("_k", (-F.col("offset")).alias("_neg"), "time")
    for column, target in (("offset", "record_time"), ("_next", "missing_since"), ("leader_offset", "leader_time")):
        obs = obs.withColumn("_q", -F.col(column))
        obs = asof(obs, ahead.withColumnRenamed("time", target), by=["_k"], left_time="_q", right_time="_neg",
                   columns=[target])
    record_time = F.coalesce("record_time", "reported_time")
    behind = F.col("leader_offset") > F.col("offset")
    out = (obs
           .withColumn("record_time", record_time)
           .withColumn("offset_lag", F.col("leader_offset") - F.col("offset"))
           .withColumn("time_lag_ms", F.greatest(F.lit(0), F.unix_millis("leader_time") - F.unix_millis("record_time")))
           .withColumn("missing_since", F.when(behind, F.col("missing_since")))
           .withColumn("behind_ms", F.when(behind, F.greatest(F.lit(0), F.unix_millis("time")
                                                               - F.unix_millis("missing_since"))))
           .withColumn("note", F.coalesce("note", F.when(F.col("offset") > F.col("leader_offset")
                                                         + F.lit(0), F.lit("ahead of the log")))))
    if roles is not None:
        out = out.join(roles, "node_id", "left")
    else:
        out = out.withColumn("role", F.lit(None).cast("string"))
    return out.select(*OFFSETS_COLUMNS).orderBy("node_id", "time", "source", "kind")


def divergence_episodes(offsets: DataFrame, writing: NoOpWriting | None = None, *, tolerance_ms: float | None = None,
                        fences: DataFrame | None = None) -> DataFrame:
    """Episodes during which a node was behind the metadata log.

    A node is behind at an observation when it lacks a record the leader appended more than
    ``tolerance_ms`` earlier (``behind_ms`` of :func:`node_offsets`); an episode is a run of such
    observations of one node (every source together, kinds :data:`POSITION_KINDS`; a sample
    ``ahead of the log`` is skipped). It starts when the first record the node lacked was
    appended, or, where NoOpRecords are written, one idle interval after the last record it had
    (the leader would have appended a NoOp by then: so a paused leader's episode starts when it
    stopped, not when its successor first wrote), and never before the node's previous
    observation that was not behind. It ends at the first observation that is not behind; an
    episode still running at the node's last observation is ``open`` (no ``end``).

    Parameters
    ----------
    offsets : DataFrame
        From :func:`node_offsets`.
    writing : NoOpWriting, optional
        From :func:`noop_writing` (the idle interval; without it the start is the first missing
        record's append time).
    tolerance_ms : float, optional
        Default: twice the idle interval (1 s with Kafka's defaults).
    fences : DataFrame, optional
        From :func:`fence_events` (without episodes): a broker's first fence within the episode and
        the first unfence after it, before the node's next episode (a resumed broker catches up
        first and is unfenced on a later heartbeat: the unfence may follow the episode's end).

    Returns
    -------
    DataFrame
        One row per episode, :data:`EPISODES_COLUMNS`: ``node_id, role, start, end, seconds``
        (to ``end``, or to the last observation when open), ``open``, ``first_behind`` and
        ``last_behind`` (the observations), ``stopped_offset`` (the node's offset at the first),
        ``peak_offset_lag, peak_time_lag_ms, peak_behind_ms``, ``observations`` (behind),
        ``sources``, ``fenced_at``, ``unfenced_at``.

    Examples
    --------
    >>> divergence_episodes(offsets, writing).show()    # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(offsets, OFFSETS_COLUMNS, "divergence_episodes")
    idle = writing.idle_ms if writing is not None else DEFAULT_IDLE_MS
    tolerance = float(tolerance_ms) if tolerance_ms is not None and tolerance_ms > 0 else 2.0 * idle
    noop_start = writing is not None and writing.writes_noops
    has_applied = (offsets.where(F.col("kind") == "applied").select("node_id").distinct()
                   .withColumn("_has_applied", F.lit(True)))
    obs = (offsets.join(has_applied, "node_id", "left")
           .where(F.col("kind").isin(*POSITION_KINDS) & F.col("leader_offset").isNotNull()
                  & F.col("note").isNull()
                  & ~((F.col("kind") == "log_end") & F.coalesce("_has_applied", F.lit(False)))))
    order = Window.partitionBy("node_id").orderBy("time", "source", "kind")
    flagged = (obs.withColumn("_behind", F.coalesce(F.col("behind_ms") > F.lit(tolerance), F.lit(False)))
               .withColumn("_prev_behind", F.coalesce(F.lag("_behind").over(order), F.lit(False)))
               # the bound on an episode's start: the node's previous *answer* that was not behind
               .withColumn("_prev_time", F.last(F.when(F.col("kind") != "unanswered", F.col("time")), ignorenulls=True)
                           .over(order.rowsBetween(Window.unboundedPreceding, -1)))
               .withColumn("_begin", F.col("_behind") & ~F.col("_prev_behind"))
               .withColumn("_run", F.sum(F.col("_begin").cast("int"))
                           .over(order.rowsBetween(Window.unboundedPreceding, 0)))
               .withColumn("_next_time", F.lead("time").over(order))
               .withColumn("_next_behind", F.lead("_behind").over(order)))
    stop_time = F.col("missing_since")
    if noop_start:
        stop_time = F.least(F.col("missing_since"), F.col("record_time") + F.expr(f"INTERVAL {int(idle)} MILLISECONDS"))
    flagged = flagged.withColumn("_start", F.greatest(stop_time, F.coalesce("_prev_time", stop_time)))
    runs = (flagged.where("_behind").groupBy("node_id", "role", "_run").agg(
        F.min_by("_start", "time").alias("start"), F.min("time").alias("first_behind"),
        F.max("time").alias("last_behind"), F.min_by("offset", "time").alias("stopped_offset"),
        F.max("offset_lag").alias("peak_offset_lag"), F.max("time_lag_ms").alias("peak_time_lag_ms"),
        F.max("behind_ms").alias("peak_behind_ms"), F.count("*").alias("observations"),
        F.array_sort(F.collect_set("source")).alias("sources"),
        F.max_by("_next_time", "time").alias("end"), F.max_by("_next_behind", "time").alias("_after")))
    # runs that touch or overlap (two sources observed at the same instant, one behind, one not)
    # are one episode
    far = F.lit("9999-12-31").cast("timestamp")
    by_start = Window.partitionBy("node_id").orderBy("start", "first_behind")
    runs = (runs.withColumn("_reach", F.max(F.coalesce("end", far)).over(
                by_start.rowsBetween(Window.unboundedPreceding, -1)))
            .withColumn("_new", F.col("_reach").isNull() | (F.col("start") > F.col("_reach")))
            .withColumn("_episode", F.sum(F.col("_new").cast("int")).over(
                by_start.rowsBetween(Window.unboundedPreceding, 0)))
            .groupBy("node_id", "_episode").agg(
                F.first("role").alias("role"), F.min("start").alias("start"),
                F.min("first_behind").alias("first_behind"), F.max("last_behind").alias("last_behind"),
                F.min_by("stopped_offset", "first_behind").alias("stopped_offset"),
                F.max("peak_offset_lag").alias("peak_offset_lag"), F.max("peak_time_lag_ms").alias("peak_time_lag_ms"),
                F.max("peak_behind_ms").alias("peak_behind_ms"), F.sum("observations").alias("observations"),
                F.array_sort(F.array_distinct(F.flatten(F.collect_list("sources")))).alias("sources"),
                F.when(F.max(F.col("end").isNull().cast("int")) == 1, F.lit(None).cast("timestamp"))
                .otherwise(F.max("end")).alias("end"))
            .drop("_episode"))
    runs = (runs.withColumn("open", F.col("end").isNull())
            .withColumn("seconds", (F.unix_millis(F.coalesce("end", "last_behind")) - F.unix_millis("start")) / 1000.0))
    if fences is not None:
        # fenced_at: the broker's first fence within the episode. unfenced_at: the first unfence
        # after it, even once the episode has ended (a resumed broker catches up with the log
        # first and the controller unfences it on a later heartbeat), but before the node's next
        # episode; without a fence in the episode, the last unfence within it
        columns = runs.columns
        runs = runs.withColumn("_next_start", F.lead("start").over(Window.partitionBy("node_id").orderBy("start")))
        f = (fences.where(F.col("event").isin("fenced", "unfenced"))
             .select(F.col("broker_id").alias("node_id"), "time", "event"))
        cond = ((F.col("f.node_id") == F.col("e.node_id")) & (F.col("f.time") >= F.col("e.start"))
                & (F.col("e._next_start").isNull() | (F.col("f.time") < F.col("e._next_start"))))
        inside = F.col("e.end").isNull() | (F.col("f.time") <= F.col("e.end"))
        runs = (runs.alias("e").join(f.alias("f"), cond, "left")
                .groupBy(*[F.col(f"e.{c}") for c in columns])
                .agg(F.min(F.when((F.col("f.event") == "fenced") & inside, F.col("f.time"))).alias("fenced_at"),
                     F.array_sort(F.collect_list(F.when(F.col("f.event") == "unfenced",
                                                        F.struct(F.col("f.time").alias("t"), inside.alias("i")))))
                     .alias("_unfences"))
                .withColumn("unfenced_at", F.when(
                    F.col("fenced_at").isNotNull(),
                    F.try_element_at(F.filter("_unfences", lambda u: u["t"] > F.col("fenced_at")), F.lit(1))["t"])
                    .otherwise(F.try_element_at(F.filter("_unfences", lambda u: u["i"]), F.lit(-1))["t"])))
    else:
        runs = (runs.withColumn("fenced_at", F.lit(None).cast("timestamp"))
                .withColumn("unfenced_at", F.lit(None).cast("timestamp")))
    return runs.select(*EPISODES_COLUMNS).orderBy("start", "node_id")


# ---------------------------------------------------------------------------------------------
# batch sizes


_SIZE_GAUGES = {
    "records": ("_metadatabatchsizes",),
    "processing": ("_metadatabatchprocessingtimeus", "_pending_record_processing_time_us"),
    "bytes": ("_record_batch_size_byte",),
}


def batch_sizes(appends: DataFrame, metrics: DataFrame | None = None, *, window_s: float = 10.0) -> DataFrame:
    """Metadata batch sizes per time window: computed from the log, and as the brokers reported them.

    From the log: batches appended in the window, records and bytes per batch (average and
    maximum). From the brokers' exports (where scraped): the ``MetadataBatchSizes`` and
    ``MetadataBatchProcessingTimeUs`` histograms (``kafka.server:type=BrokerMetadataListener``;
    their count and mean give the batches loaded in the window and their average; their maximum
    is since the broker started), and ``record-batch-size-byte-avg/max`` and
    ``pending-record-processing-time-us`` gauges of releases that had them.

    Parameters
    ----------
    appends : DataFrame
        From :func:`log_appends`.
    metrics : DataFrame, optional
        The ``metrics`` table.
    window_s : float
        Window length in seconds (windows start at multiples of it since the epoch).

    Returns
    -------
    DataFrame
        One row per window and source (``log``, or the export format with ``node_id``),
        :data:`BATCH_SIZE_COLUMNS`.

    Examples
    --------
    >>> batch_sizes(appends, tables.metrics, window_s=30).show()    # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if window_s <= 0:
        raise ValueError(f"window_s must be > 0, got {window_s}")
    width_ms = int(window_s * 1000)

    def window_start(col: str) -> Column:
        return F.timestamp_millis((F.floor(F.unix_millis(col) / width_ms) * width_ms).cast("long"))

    log = (appends.withColumn("window_start", window_start("time")).groupBy("window_start").agg(
        F.count("*").cast("long").alias("batches"), F.avg("records").alias("records_avg"),
        F.max("records").cast("double").alias("records_max"), F.avg("bytes").alias("bytes_avg"),
        F.max("bytes").cast("double").alias("bytes_max"))
        .select("window_start", F.lit("log").alias("source"), F.lit(None).cast("int").alias("node_id"), "batches",
                "records_avg", "records_max", "bytes_avg", "bytes_max",
                F.lit(None).cast("double").alias("processing_us_avg"),
                F.lit(None).cast("double").alias("processing_us_max")))
    out = log
    if metrics is not None:
        def family(kind: str) -> Column:
            cond = F.lit(False)
            for stem in _SIZE_GAUGES[kind]:
                cond = cond | F.col("name").contains(stem)
            return cond

        rows = (metrics.where(F.col("timestamp").isNotNull() & F.col("node_id").isNotNull()
                              & (family("records") | family("processing") | family("bytes")))
                .withColumn("_kind", F.when(family("records"), F.lit("records"))
                            .when(family("processing"), F.lit("processing")).otherwise(F.lit("bytes")))
                .withColumn("_stat", F.when(F.col("name").endswith("_count"), F.lit("count"))
                            .when(F.col("name").endswith("_mean") | F.col("name").endswith("_avg"), F.lit("mean"))
                            .when(F.col("name").endswith("_max"), F.lit("max")))
                .where(F.col("_stat").isNotNull() & ~F.isnan("value")))
        samples = (rows.groupBy("node_id", "format", "path", "timestamp")
                   .pivot("_kind", ["records", "processing", "bytes"])
                   .agg(F.max(F.when(F.col("_stat") == "count", F.col("value"))).alias("count"),
                        F.max(F.when(F.col("_stat") == "mean", F.col("value"))).alias("mean"),
                        F.max(F.when(F.col("_stat") == "max", F.col("value"))).alias("max")))
        order = Window.partitionBy("node_id", "format", "path").orderBy("timestamp")
        for kind in ("records", "processing"):
            samples = (samples.withColumn(f"_{kind}_sum", F.col(f"{kind}_count") * F.col(f"{kind}_mean"))
                       .withColumn(f"_{kind}_dn", F.col(f"{kind}_count") - F.lag(f"{kind}_count").over(order))
                       .withColumn(f"_{kind}_ds", F.col(f"_{kind}_sum") - F.lag(f"_{kind}_sum").over(order)))
        scraped = (samples.withColumn("window_start", window_start("timestamp"))
                   .groupBy("window_start", F.col("format").alias("source"), "node_id").agg(
                       F.sum("_records_dn").cast("long").alias("batches"),
                       (F.sum("_records_ds") / F.sum("_records_dn")).alias("records_avg"),
                       F.max("records_max").alias("records_max"),
                       F.avg("bytes_mean").alias("bytes_avg"), F.max("bytes_max").alias("bytes_max"),
                       (F.sum("_processing_ds") / F.sum("_processing_dn")).alias("processing_us_avg"),
                       F.max("processing_max").alias("processing_us_max")))
        out = out.unionByName(scraped.select(*[c for c in log.columns]))
    return (out.withColumn("window_end", F.col("window_start") + F.expr(f"INTERVAL {width_ms} MILLISECONDS"))
            .select(*BATCH_SIZE_COLUMNS).orderBy("window_start", "source", "node_id"))


#: ``raft-metrics`` gauges of :func:`raft_latencies`, by output column.
RAFT_GAUGES: dict[str, str] = {
    "commit_latency_avg_ms": "kafka_server_raft_metrics_commit_latency_avg",
    "commit_latency_max_ms": "kafka_server_raft_metrics_commit_latency_max",
    "election_latency_avg_ms": "kafka_server_raft_metrics_election_latency_avg",
    "election_latency_max_ms": "kafka_server_raft_metrics_election_latency_max",
    "append_records_rate": "kafka_server_raft_metrics_append_records_rate",
    "fetch_records_rate": "kafka_server_raft_metrics_fetch_records_rate",
    "current_epoch": "kafka_server_raft_metrics_current_epoch",
    "current_leader": "kafka_server_raft_metrics_current_leader",
    "high_watermark": "kafka_server_raft_metrics_high_watermark",
    "log_end_offset": "kafka_server_raft_metrics_log_end_offset",
}


def raft_latencies(metrics: DataFrame) -> DataFrame:
    """Each node's scraped ``raft-metrics``: commit and election latency, append and fetch rates, epoch.

    Kafka's own figures, where the bundle exported them (the log holds no latencies): the commit
    latency is the time from the leader's append to the high watermark passing it (leader only;
    NaN elsewhere), the election latency the length of the last election.

    Parameters
    ----------
    metrics : DataFrame
        The ``metrics`` table.

    Returns
    -------
    DataFrame
        One row per node, export file and sample time: ``node_id, source, time`` and the
        columns of :data:`RAFT_GAUGES` (null when not sampled, or NaN as Kafka reported it).

    Examples
    --------
    >>> raft_latencies(tables.metrics).where("commit_latency_max_ms > 100").show()    # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    require_columns(metrics, ("node_id", "path", "format", "name", "timestamp", "value"), "raft_latencies")
    rows = metrics.where(F.col("name").isin(list(RAFT_GAUGES.values())) & F.col("timestamp").isNotNull()
                         & F.col("node_id").isNotNull())
    aggs = [F.max(F.when(F.col("name") == name, F.col("value"))).alias(column) for column, name in RAFT_GAUGES.items()]
    return (rows.groupBy(F.col("node_id").cast("int").alias("node_id"), F.col("format").alias("source"), "path",
                         F.col("timestamp").alias("time")).agg(*aggs)
            .drop("path").orderBy("node_id", "time", "source"))


# ---------------------------------------------------------------------------------------------
# findings and the area


def _at(column: str) -> Column:
    from pyspark.sql import functions as F

    return F.concat(F.date_format(column, "yyyy-MM-dd HH:mm:ss"), F.lit(" UTC"))


def _node_name(role: Column, node: Column) -> Column:
    from pyspark.sql import functions as F

    return F.concat(F.coalesce(role, F.lit("node")), F.lit(" "), node.cast("string"))


def findings(writing: NoOpWriting, stall_rows: DataFrame, episodes: DataFrame, timeline: DataFrame, *,
             missing: tuple[str, ...] = ()) -> DataFrame:
    """Quorum findings: commit stalls, new leaders, nodes left behind, and what could not be judged.

    * ``commit_stall`` (critical): the leader appended nothing for longer than the stall
      threshold; the summary names the leader before and the one that led the next epoch;
    * ``leader_elected`` (info): a new epoch was led by a controller (every epoch after the
      log's first);
    * ``node_behind`` (warning): a divergence episode: a node lacked records the leader had
      appended, for how long and by how much, and the fence and unfence of a broker meanwhile;
    * ``no_noop_records`` (info): the cluster writes no NoOpRecords: a quiet log is no evidence,
      and no stall is claimed;
    * ``input_missing`` (info): one per input the bundle lacks (``missing``), naming what is not
      judged without it.

    Parameters
    ----------
    writing : NoOpWriting
        From :func:`noop_writing`.
    stall_rows, episodes, timeline : DataFrame
        From :func:`stalls`, :func:`divergence_episodes` and :func:`leader_timeline`.
    missing : tuple of str
        Plain-language notes of inputs the bundle lacks.

    Returns
    -------
    DataFrame
        Rows of :data:`workbench.analysis.findings.FINDINGS_SCHEMA` (area ``quorum``; subject
        type ``quorum`` or ``node``).

    Examples
    --------
    >>> findings(writing, stalls(...), episodes, timeline).select("summary").show(truncate=False)  # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from workbench.analysis.findings import FINDINGS_COLUMNS, FINDINGS_SCHEMA

    spark = timeline.sparkSession
    next_leader = F.when(F.col("new_epoch") & F.col("leader_after").isNotNull(), F.concat(
        F.lit("; controller "), F.col("leader_after").cast("string"), F.lit(" led epoch "),
        F.col("epoch_after").cast("string"), F.lit(" from "), _at("end"))).otherwise(F.lit(""))
    before = F.when(F.col("leader_before").isNotNull(), F.concat(
        F.lit(" (leader: controller "), F.col("leader_before").cast("string"), F.lit(", epoch "),
        F.col("epoch_before").cast("string"), F.lit(")"))).otherwise(F.lit(""))
    stall_f = stall_rows.select(
        F.lit("commit_stall").alias("kind"), F.lit("critical").alias("severity"), F.lit("quorum").alias("subject_type"),
        F.lit("metadata log").alias("subject"), "start", "end",
        F.concat(F.lit("the quorum committed nothing for "), F.format_string("%.1f", "seconds"), F.lit(" s from "),
                 _at("start"), before, next_leader, F.lit(" (NoOpRecords keep a healthy log moving every "),
                 F.lit(str(writing.idle_ms)), F.lit(" ms)")).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("threshold_ms"), F.col("threshold_ms"),
                     F.lit("epoch_after"), F.col("epoch_after").cast("double")).alias("figures"))
    first = Window.partitionBy(F.lit(1)).orderBy("epoch")
    elected = (timeline.where(F.col("start").isNotNull())
               .withColumn("_n", F.row_number().over(first)).where(F.col("_n") > 1)
               .select(F.lit("leader_elected").alias("kind"), F.lit("info").alias("severity"),
                       F.lit("node").alias("subject_type"), F.col("leader").cast("string").alias("subject"),
                       "start", "end",
                       F.concat(F.when(F.col("leader") >= 0,
                                       F.concat(F.lit("controller "), F.col("leader").cast("string")))
                                .otherwise(F.lit("no known controller")),
                                F.lit(" led epoch "), F.col("epoch").cast("string"), F.lit(" from "), _at("start"),
                                F.when(F.col("skipped_epochs") > 0, F.concat(
                                    F.lit(" after "), F.col("skipped_epochs").cast("string"),
                                    F.lit(" epoch(s) that elected no leader who wrote"))).otherwise(F.lit("")))
                       .alias("summary"),
                       F.create_map(F.lit("epoch"), F.col("epoch").cast("double"), F.lit("records"),
                                    F.col("records").cast("double")).alias("figures")))
    fenced = F.when(F.col("fenced_at").isNotNull(), F.concat(
        F.lit("; fenced at "), _at("fenced_at"),
        F.when(F.col("unfenced_at").isNotNull(), F.concat(F.lit(", unfenced at "), _at("unfenced_at")))
        .otherwise(F.lit("")))).otherwise(F.lit(""))
    behind = episodes.select(
        F.lit("node_behind").alias("kind"), F.lit("warning").alias("severity"), F.lit("node").alias("subject_type"),
        F.col("node_id").cast("string").alias("subject"), "start", "end",
        F.concat(_node_name(F.col("role"), F.col("node_id")), F.lit(" fell behind the metadata log for "),
                 F.format_string("%.1f", "seconds"), F.lit(" s from "), _at("start"),
                 F.when(F.col("open"), F.lit(" (still behind at its last observation)")).otherwise(F.lit("")),
                 F.lit(": up to "), F.coalesce(F.col("peak_offset_lag"), F.lit(0)).cast("string"),
                 F.lit(" offsets and "), F.format_string("%.1f", F.coalesce("peak_time_lag_ms", F.lit(0)) / 1000.0),
                 F.lit(" s behind the leader"), fenced).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"),
                     F.lit("peak_offset_lag"), F.col("peak_offset_lag").cast("double"),
                     F.lit("peak_time_lag_ms"), F.col("peak_time_lag_ms").cast("double")).alias("figures"))
    notes: list[tuple] = []
    if not writing.writes_noops:
        notes.append(("no_noop_records", "info", "quorum", "metadata log", None, None, writing.reason(),
                      {"noop_records": float(writing.noop_records)}))
    for note in missing:
        notes.append(("input_missing", "info", "quorum", "bundle", None, None, note, {}))
    extra = spark.createDataFrame([(*n[:7], n[7]) for n in notes] if notes else [],
                                  "kind string, severity string, subject_type string, subject string, start timestamp, "
                                  "end timestamp, summary string, figures map<string,double>")
    out = stall_f.unionByName(behind).unionByName(elected).unionByName(extra)
    return spark.createDataFrame([], FINDINGS_SCHEMA).unionByName(
        out.withColumn("area", F.lit("quorum")).select(*FINDINGS_COLUMNS))


@dataclass(frozen=True)
class QuorumAnalysis:
    """Every output of this module for one bundle (see :func:`analyse`)."""

    writing: NoOpWriting
    appends: DataFrame
    timeline: DataFrame
    cadence: DataFrame
    stalls: DataFrame
    offsets: DataFrame
    episodes: DataFrame
    fences: DataFrame
    voters: DataFrame
    latencies: DataFrame
    batch_sizes: DataFrame
    missing: tuple[str, ...]
    restarts: DataFrame | None = None


def _has_rows(frame: DataFrame | None) -> bool:
    return frame is not None and frame.limit(1).count() > 0


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> QuorumAnalysis:
    """The quorum analysis of a bundle's tables, each output computed once per bundle and parameters.

    Parameters
    ----------
    tables : Tables
        A loaded bundle (:func:`workbench.load`).
    params : mapping, optional
        ``quorum_stall_multiple`` (default 4), ``quorum_idle_ms`` (0 or absent: from the
        controllers' properties, else Kafka's 500 ms).

    Examples
    --------
    >>> result = analyse(tables)    # doctest: +SKIP
    >>> result.stalls.show()        # doctest: +SKIP
    """
    params = params or {}
    multiple = float(params.get("quorum_stall_multiple") or DEFAULT_STALL_MULTIPLE)
    idle = int(params.get("quorum_idle_ms") or 0) or None
    key = f"quorum:{multiple}:{idle}"
    cache = _CACHE.get(id(tables))
    if cache is None:
        cache = _CACHE[id(tables)] = {}
        weakref.finalize(tables, _CACHE.pop, id(tables), None)
    if key in cache:
        return cache[key]
    metadata = tables.metadata
    configs = tables.configs
    writing = noop_writing(metadata, configs, idle_ms=idle, stall_multiple=multiple)
    # the metadata log's batches only: the inventory names its files (not every data segment read)
    from workbench.analysis.logs import batches_of

    log_batches = batches_of(tables, [METADATA_TOPIC])
    appends = tables.derive("quorum.log_appends", lambda: log_appends(log_batches, metadata))
    timeline = tables.derive("quorum.leader_timeline", lambda: leader_timeline(
        metadata, appends, tables.quorum, tables.tool_quorum_status))
    roles = node_roles(metadata, configs)
    offsets = tables.derive("quorum.node_offsets", lambda: node_offsets(
        appends, metrics=tables.metrics, replication=tables.tool_quorum_replication, snapshots=tables.snapshots,
        batches=log_batches, roles=roles))
    plain_fences = fence_events(metadata)
    episodes = tables.derive(f"quorum.episodes:{key}",
                             lambda: divergence_episodes(offsets, writing, fences=plain_fences))
    missing: list[str] = []
    if not _has_rows(appends):
        missing.append("the bundle holds no metadata log segment: no cadence, stall or leader timeline is judged")
    gauges = "name like '%lastappliedrecordoffset%' or name like '%last_applied_record_offset%'"
    if not _has_rows(tables.metrics.where(gauges)):
        missing.append("no KIP-835 gauge (LastAppliedRecordOffset, last-applied-record-offset) was exported: "
                       "nodes' applied offsets come only from captures, snapshots and their own logs")
    if not _has_rows(tables.tool_quorum_replication):
        missing.append("no kafka-metadata-quorum describe --replication capture: the leader's view of each "
                       "node's log end is not shown")
    result = QuorumAnalysis(
        writing=writing, appends=appends, timeline=timeline, cadence=cadence(appends, timeline),
        stalls=stalls(appends, writing, timeline), offsets=offsets, episodes=episodes,
        fences=fence_events(metadata, episodes), voters=voter_changes(metadata),
        latencies=raft_latencies(tables.metrics), batch_sizes=batch_sizes(appends, tables.metrics),
        missing=tuple(missing), restarts=restarts_for(tables))
    cache[key] = result
    return result


#: Analyses of the bundles in use, by ``id(tables)`` (dropped when the tables are collected).
_CACHE: dict[int, dict[str, QuorumAnalysis]] = {}


def findings_for(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """:func:`findings` of a bundle's tables (the quorum area's findings; see :func:`analyse`).

    Examples
    --------
    >>> findings_for(tables, {"quorum_stall_multiple": 4}).show(truncate=False)    # doctest: +SKIP
    """
    return area_findings(analyse(tables, params))


def area_findings(result: QuorumAnalysis) -> DataFrame:
    """The area's findings of one analysis: commit stalls, leader changes, nodes left behind, what is missing."""
    return findings(result.writing, unexplained_stalls(result), result.episodes, result.timeline,
                    missing=result.missing)


def unexplained_stalls(result: QuorumAnalysis) -> DataFrame:
    """The commit stalls that no whole-cluster stop explains: a stall that began while the whole cluster
    was down (:func:`workbench.analysis.metadata_log.cluster_restarts`, told by the ISR area) is its silence."""
    from pyspark.sql import functions as F

    if result.restarts is None:
        return result.stalls
    down = result.restarts.select(F.col("start").alias("_down"), F.col("end").alias("_back"))
    return result.stalls.join(down, (F.col("start") >= F.col("_down")) & (F.col("start") <= F.col("_back")),
                              "left_anti")


def view_frames(result: QuorumAnalysis) -> dict[str, DataFrame]:
    """What the quorum view draws: the leader timeline, stalls, every node's offsets and episodes, fences."""
    return {"timeline": result.timeline, "stalls": result.stalls, "offsets": result.offsets,
            "episodes": result.episodes, "fences": result.fences, "cadence": result.cadence,
            "latencies": result.latencies}


def key_figures(result: QuorumAnalysis) -> dict[str, Any]:
    """The summary's figures: stalls, leader epochs, divergence episodes, Raft latencies."""
    from pyspark.sql import functions as F

    st = unexplained_stalls(result).agg(F.count("*").alias("n"), F.max("seconds").alias("longest"),
                           F.sum("seconds").alias("total")).collect()[0]
    ep = result.episodes.agg(F.count("*").alias("n"), F.max("peak_offset_lag").alias("lag"),
                             F.max("peak_time_lag_ms").alias("ms")).collect()[0]
    lat = result.latencies.agg(F.max(F.when(~F.isnan("commit_latency_max_ms"), F.col("commit_latency_max_ms")))
                               .alias("commit"),
                               F.max(F.when(~F.isnan("election_latency_max_ms"), F.col("election_latency_max_ms")))
                               .alias("election")).collect()[0]
    tl = result.timeline.agg(F.count("*").alias("epochs"),
                             F.countDistinct(F.when(F.col("leader") >= 0, F.col("leader"))).alias("leaders")
                             ).collect()[0]
    return {
        "noop_records": result.writing.noop_records,
        "writes_noop_records": result.writing.writes_noops,
        "idle_interval_ms": result.writing.idle_ms,
        "stall_threshold_ms": result.writing.threshold_ms,
        "commit_stalls": st["n"] if result.writing.writes_noops else None,
        "longest_stall_seconds": st["longest"] or 0.0,
        "stalled_seconds": st["total"] or 0.0,
        "leader_epochs": tl["epochs"],
        "leaders": tl["leaders"],
        "divergence_episodes": ep["n"],
        "peak_offset_lag": ep["lag"] or 0,
        "peak_time_lag_ms": ep["ms"] or 0,
        "commit_latency_max_ms": lat["commit"],
        "election_latency_max_ms": lat["election"],
    }


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("quorum", title="KRaft quorum health (KIP-835)", order=1, analyse=analyse, findings=area_findings,
                  tables=("metadata", "quorum", "tool_quorum_status", "tool_quorum_replication"),
                  frames=view_frames, key_figures=key_figures)


_register()
