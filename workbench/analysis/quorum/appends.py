"""The metadata log's appends: NoOpRecord writing, the leader's cadence and commit stalls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyspark.sql import DataFrame


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

#: Columns of :func:`log_appends`.
APPENDS_COLUMNS = ("node_id", "epoch", "base_offset", "last_offset", "records", "bytes", "time", "prev_time",
                   "interval_ms", "same_epoch", "is_control", "noops")

#: Columns of :func:`stalls`.
STALLS_COLUMNS = ("start", "end", "seconds", "epoch_before", "leader_before", "epoch_after", "leader_after",
                  "last_offset_before", "first_offset_after", "new_epoch", "threshold_ms")


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
                 stall_multiple: float = DEFAULT_STALL_MULTIPLE,
                 configured: Sequence[str | None] | None = None) -> NoOpWriting:
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
    configured : sequence of str, optional
        The interval's values in the properties files, when already read
        (:func:`workbench.spark.configs.static_settings`); ``configs`` is then not queried.

    Examples
    --------
    >>> noop_writing(tables.metadata, tables.configs).reason()    # doctest: +SKIP
    'the leader appends a NoOpRecord after 500 ms without records ...'
    """
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
    elif configured is not None or configs is not None:
        values = list(configured) if configured is not None else [
            r["value"] for r in configs.where((F.col("scope") == "static") & (F.col("name") == IDLE_CONFIG))
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
