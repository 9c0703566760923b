"""The bundle's commits and log positions: effective commits, removed offsets, leaders, LogEndOffset samples."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.logs import log_growth

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


#: Columns of :func:`effective_commits`.
COMMIT_COLUMNS = ("group", "topic", "partition", "commit_time", "committed_offset", "leader_epoch", "metadata",
                  "transactional", "offsets_partition", "commit_log_offset")

_OFFSETS_NEEDED = ("node_id", "offsets_partition", "offset", "timestamp", "producer_id", "is_transactional",
                   "record_kind", "deleted", "group", "topic", "partition", "committed_offset", "leader_epoch",
                   "metadata", "commit_timestamp", "marker", "txn_outcome", "error")


def effective_commits(offsets: DataFrame) -> DataFrame:
    """One row per offset commit that took effect, from one replica of ``__consumer_offsets``.

    The effective-commit filter of the ``offsets`` table (README): transaction markers out, and a
    transactional commit only when its transaction committed. A transactional commit takes effect when
    the COMMIT marker is written, so its ``commit_time`` is the marker's time; any other commit's is the
    record's own timestamp (when the coordinator appended it). Tombstones are left out
    (:func:`removed_offsets`).

    Parameters
    ----------
    offsets : DataFrame
        The ``offsets`` table (any number of replicas; the lowest node id holding a record is read).

    Returns
    -------
    DataFrame
        One row per commit, :data:`COMMIT_COLUMNS`: ``group, topic, partition, commit_time,
        committed_offset, leader_epoch, metadata, transactional, offsets_partition`` and
        ``commit_log_offset`` (the commit's own offset in ``__consumer_offsets``).

    Examples
    --------
    >>> effective_commits(tables.offsets).where("group = 'billing'").show()   # doctest: +SKIP
    """
    require_columns(offsets, _OFFSETS_NEEDED, "effective_commits")
    one = _one_replica(offsets)
    commits = one.where((F.col("record_kind") != "TxnMarker") & ~F.coalesce(F.col("deleted"), F.lit(False))
                        & F.col("group").isNotNull() & F.col("topic").isNotNull() & F.col("partition").isNotNull()
                        & F.col("committed_offset").isNotNull() & F.col("error").isNull())
    commits = commits.where(~F.coalesce(F.col("is_transactional"), F.lit(False)) | (F.col("txn_outcome") == "COMMIT"))
    # a transactional commit takes effect at the first COMMIT marker after it (same replica, partition, producer)
    markers = one.where(F.col("record_kind") == "TxnMarker").select(
        "node_id", "offsets_partition", "producer_id", "offset", F.col("timestamp").alias("_marker_time"),
        F.lit(True).alias("_is_marker"))
    txn = commits.where(F.coalesce(F.col("is_transactional"), F.lit(False)))
    following = (Window.partitionBy("node_id", "offsets_partition", "producer_id").orderBy("offset")
                 .rowsBetween(Window.currentRow, Window.unboundedFollowing))
    settled = (txn.select("node_id", "offsets_partition", "producer_id", "offset", F.lit(None).cast("timestamp")
                          .alias("_marker_time"), F.lit(False).alias("_is_marker"))
               .unionByName(markers)
               .withColumn("_effective", F.first(F.when(F.col("_is_marker"), F.col("_marker_time")), ignorenulls=True)
                           .over(following))
               .where(~F.col("_is_marker"))
               .select("node_id", "offsets_partition", "offset", "_effective"))
    with_time = commits.join(settled, ["node_id", "offsets_partition", "offset"], "left")
    commit_time = F.when(F.coalesce(F.col("is_transactional"), F.lit(False)),
                         F.coalesce(F.col("_effective"), F.col("timestamp"))) \
        .otherwise(F.coalesce(F.col("timestamp"), F.col("commit_timestamp")))
    return with_time.select(
        "group", "topic", F.col("partition").cast("int").alias("partition"), commit_time.alias("commit_time"),
        F.col("committed_offset").cast("long").alias("committed_offset"), "leader_epoch", "metadata",
        F.coalesce(F.col("is_transactional"), F.lit(False)).alias("transactional"), "offsets_partition",
        F.col("offset").alias("commit_log_offset"))


def removed_offsets(offsets: DataFrame) -> DataFrame:
    """One row per offset tombstone: a group's committed offset for a partition removed (expired or deleted).

    Columns ``group, topic, partition, removed_time, offsets_partition, commit_log_offset``. Expiry and
    deletion write the same tombstone, so the log cannot tell them apart.
    """
    require_columns(offsets, _OFFSETS_NEEDED, "removed_offsets")
    return (_one_replica(offsets)
            .where((F.col("record_kind") != "TxnMarker") & F.coalesce(F.col("deleted"), F.lit(False))
                   & F.col("group").isNotNull() & F.col("topic").isNotNull())
            .select("group", "topic", F.col("partition").cast("int").alias("partition"),
                    F.col("timestamp").alias("removed_time"), "offsets_partition",
                    F.col("offset").alias("commit_log_offset")))


def _one_replica(offsets: DataFrame) -> DataFrame:
    """The rows of one replica per ``__consumer_offsets`` record (the lowest node id holding it)."""
    first = offsets.groupBy("offsets_partition", "offset").agg(F.min("node_id").alias("node_id"))
    return offsets.join(first, ["offsets_partition", "offset", "node_id"])


def log_offsets_from_metrics(metrics: DataFrame | None, which: str = "end") -> DataFrame | None:
    """The brokers' ``LogEndOffset`` (``which='end'``) or ``LogStartOffset`` (``'start'``) samples.

    Returns
    -------
    DataFrame or None
        ``topic, partition, node_id, time, value`` (one row per sample), or None when the bundle has
        no such metric (or no metrics at all).
    """
    if metrics is None:
        return None

    name = {"end": "kafka_log_log_logendoffset", "start": "kafka_log_log_logstartoffset"}[which]
    require_columns(metrics, ("node_id", "name", "labels", "timestamp", "value"), "log_offsets_from_metrics")
    rows = (metrics.where((F.col("name") == name) & F.col("timestamp").isNotNull() & F.col("value").isNotNull())
            .select(F.col("labels")["topic"].alias("topic"),
                    F.col("labels")["partition"].cast("int").alias("partition"), "node_id",
                    F.col("timestamp").alias("time"), F.col("value").cast("long").alias("value"))
            .where(F.col("topic").isNotNull() & F.col("partition").isNotNull()))
    return rows


def leader_changes(metadata: DataFrame | None) -> DataFrame | None:
    """Leader of each partition over time, from the KRaft metadata log (``PartitionRecord``/``PartitionChangeRecord``).

    Returns
    -------
    DataFrame or None
        One row per record that set a leader: ``topic, partition, time, metadata_offset, leader`` (-1:
        none); None without a metadata log.
    """
    if metadata is None:
        return None

    from workbench.analysis.metadata_log import ordered_records

    records = ordered_records(metadata).where(~F.col("is_control"))
    present = set(records.columns)

    def field(typed: str, key: str, cast: str = "string") -> Column:
        """The metadata table's typed column, or the record's ``fields`` JSON where it is null."""
        from_json = F.get_json_object("fields", f"$.{key}").cast(cast)
        return F.coalesce(F.col(typed).cast(cast), from_json) if typed in present else from_json

    names = (records.where(F.col("record_type") == "TopicRecord")
             .select(field("topic_id", "topicId").alias("topic_id"), field("topic", "name").alias("topic"))
             .dropDuplicates(["topic_id"]))
    parts = (records.where(F.col("record_type").isin("PartitionRecord", "PartitionChangeRecord"))
             .select(field("topic_id", "topicId").alias("topic_id"),
                     field("partition", "partitionId", "int").alias("partition"),
                     field("leader", "leader", "int").alias("leader"),
                     F.col("timestamp").alias("time"), (F.col("offset") * 1_000_000 + F.col("seq"))
                     .alias("metadata_offset"))
             .where(F.col("leader").isNotNull() & (F.col("leader") != -2)))
    return parts.join(names, "topic_id").select("topic", "partition", "time", "metadata_offset", "leader")


def growth_for(tables: Any, topics: Sequence[str] | None = None) -> DataFrame:
    """:func:`~workbench.analysis.logs.log_growth` of the topics with commits, computed once per bundle."""
    def compute() -> DataFrame:
        wanted = topics
        if wanted is None:
            wanted = sorted(r["topic"] for r in commits_for(tables).select("topic").distinct().collect())
        return log_growth(tables.batches, topics=wanted)

    return tables.derive(f"consumer_lag.growth:{','.join(topics or [])}", compute)


def commits_for(tables: Any) -> DataFrame:
    """:func:`effective_commits` of a bundle, computed once."""
    return tables.derive("consumer_lag.commits", lambda: effective_commits(tables.offsets))


def removed_for(tables: Any) -> DataFrame:
    """:func:`removed_offsets` of a bundle, computed once (the findings, the retention loss, Burrow's
    instants and the summary all read it)."""
    return tables.derive("consumer_lag.removed", lambda: removed_offsets(tables.offsets))


def _leaders(tables: Any) -> DataFrame | None:
    try:
        return leader_changes(tables.metadata) if not tables.metadata.isEmpty() else None
    except (KeyError, AttributeError):
        return None


def _metrics(tables: Any) -> DataFrame | None:
    try:
        return tables.metrics
    except (KeyError, AttributeError):
        return None


def _has_commits(tables: Any) -> bool:
    try:
        return not tables.offsets.isEmpty()
    except (KeyError, AttributeError):
        return False
