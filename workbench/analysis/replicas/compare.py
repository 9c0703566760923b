"""Each replica's offset range, and its batches held against the other replicas' over the offsets they share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.replicas.inputs import Compaction

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: A replica of a partition: the cluster, the partition and the node holding the copy.
REPLICA = ("cluster_id", "topic", "partition", "node_id")
PARTITION = ("cluster_id", "topic", "partition")
NEEDED = (*REPLICA, "base_offset", "last_offset", "record_count", "partition_leader_epoch", "crc", "max_timestamp")

#: Columns of :func:`replica_ranges`.
RANGE_COLUMNS = (*REPLICA, "log_start_offset", "log_end_offset", "batches", "records", "first_time", "last_time",
                 "cleaned_to")
#: Columns of :func:`compare_replicas`.
COMPARISON_COLUMNS = (*REPLICA, "base_offset", "last_offset", "records", "leader_epoch", "crc", "time", "status",
                      "others")


def _join(left: DataFrame, right: DataFrame, keys: tuple[str, ...], how: str = "inner") -> DataFrame:
    """``left`` joined with ``right`` on ``keys`` where a null equals a null (a node directory without
    ``meta.properties`` has no cluster id), the keys kept once."""
    renamed = right.select(*(F.col(c).alias(f"_r_{c}") if c in keys else F.col(c) for c in right.columns))
    on = [left[c].eqNullSafe(renamed[f"_r_{c}"]) for c in keys]
    return left.join(renamed, on, how).drop(*(f"_r_{c}" for c in keys))


def _batches(batches: DataFrame) -> DataFrame:
    """The batches with the columns the comparison reads, an unreadable offset left out, each batch once
    per replica (a file copied twice into a bundle holds it twice)."""
    require_columns(batches, NEEDED, "the replica comparison")
    return (batches.where(F.col("base_offset").isNotNull() & F.col("last_offset").isNotNull()
                          & F.col("node_id").isNotNull())
            .select(*NEEDED).dropDuplicates([*REPLICA, "base_offset", "last_offset", "partition_leader_epoch", "crc"]))


def _compacted(compaction: Compaction | None) -> Column:
    """Whether a row's topic may have been compacted (``compaction``: Kafka's own topics when none)."""
    c = compaction or Compaction()
    named = F.col("topic").isin(sorted(c.topics)) if c.topics else F.lit(False)
    if not c.default:
        return named
    return named | ~(F.col("topic").isin(sorted(c.not_compacted)) if c.not_compacted else F.lit(False))


def replica_ranges(batches: DataFrame, compaction: Compaction | None = None) -> DataFrame:
    """One row per replica: the offsets its segments hold and how far its log cleaner rewrote them.

    Columns :data:`RANGE_COLUMNS`: ``log_start_offset`` (its first batch's base offset),
    ``log_end_offset`` (after its last batch), ``batches``, ``records``, ``first_time`` and
    ``last_time`` (its batches' largest timestamps), ``cleaned_to``: the last offset of the last batch
    the log cleaner visibly rewrote (fewer records than offsets, which only the cleaner writes; on a
    topic ``compaction`` says it compacts, also offsets missing before it), null when none shows it.
    Kafka's cleaner compacts each replica on its own schedule, so below that point replicas may
    differ without fault; on a topic it does not compact, offsets missing inside a replica are not
    the cleaner's (they show as ``missing`` in :func:`compare_replicas`).
    """
    rows = _batches(batches)
    order = Window.partitionBy(*REPLICA).orderBy("base_offset", "last_offset")
    gap = F.col("base_offset") > F.lag("last_offset").over(order) + 1
    rewritten = ((F.col("record_count") < F.col("last_offset") - F.col("base_offset") + 1)
                 | (F.coalesce(gap, F.lit(False)) & _compacted(compaction)))
    marked = rows.withColumn("_cleaned", F.when(rewritten, F.col("last_offset")))
    return marked.groupBy(*REPLICA).agg(
        F.min("base_offset").alias("log_start_offset"), (F.max("last_offset") + 1).alias("log_end_offset"),
        F.count("*").alias("batches"), F.sum("record_count").cast("long").alias("records"),
        F.min("max_timestamp").alias("first_time"), F.max("max_timestamp").alias("last_time"),
        F.max("_cleaned").alias("cleaned_to")).select(*RANGE_COLUMNS)


def shared_ranges(ranges: DataFrame) -> DataFrame:
    """One row per partition with two replicas or more: the offsets every replica holds, above what any
    replica's cleaner rewrote.

    Columns: ``cluster_id, topic, partition``, ``replicas`` (the nodes, ascending), ``compared_from``
    (one past the highest ``cleaned_to``; null when no replica shows cleaning), ``shared_start``
    (the highest log start, raised to ``compared_from``) and ``shared_end`` (the lowest log end):
    the batches inside ``[shared_start, shared_end)`` are compared.
    """
    parts = ranges.groupBy(*PARTITION).agg(
        F.array_sort(F.collect_set("node_id")).alias("replicas"),
        (F.max("cleaned_to") + 1).alias("compared_from"),
        F.max("log_start_offset").alias("_start"), F.min("log_end_offset").alias("shared_end"))
    return parts.where(F.size("replicas") > 1).select(
        *PARTITION, "replicas", "compared_from",
        F.greatest("_start", F.coalesce("compared_from", "_start")).alias("shared_start"), "shared_end")


def compare_replicas(batches: DataFrame, ranges: DataFrame | None = None,
                     compaction: Compaction | None = None) -> DataFrame:
    """One row per batch of a replica compared with the other replicas, and per batch a replica lacks.

    Over each partition's shared range (:func:`shared_ranges`), the batches starting at one base
    offset are grouped across replicas. A batch is the same on two replicas when its last offset,
    leader epoch and stored CRC (which covers every byte after it) are. Columns
    :data:`COMPARISON_COLUMNS`; ``status``:

    * ``same``: every other replica holding a batch there holds this one, or more than half of the
      replicas holding one do (the odd ones are ``divergent``);
    * ``divergent``: other replicas hold different contents at this base offset, and this replica's
      version is not held by a majority (two replicas that differ are both divergent: which one Kafka
      kept is the one its leader held);
    * ``missing``: the other replicas hold a batch here that this replica lacks, inside the offsets it
      holds (its columns describe the others' batch).

    ``others``: for a divergent batch the nodes holding another version, for a missing one the nodes
    holding it ("1, 3"). ``leader_epoch`` is the batch's partition leader epoch, ``time`` its largest
    timestamp.
    """
    rows = _batches(batches)
    ranges = replica_ranges(rows, compaction) if ranges is None else ranges
    shared = shared_ranges(ranges)
    inside = _join(rows, shared, PARTITION).where(
        (F.col("base_offset") >= F.col("shared_start")) & (F.col("last_offset") < F.col("shared_end")))
    copy = F.struct(F.col("node_id").alias("node"), F.col("last_offset").alias("last"),
                    F.col("partition_leader_epoch").alias("epoch"), F.col("crc").alias("crc"),
                    F.col("record_count").alias("records"), F.col("max_timestamp").alias("time"))
    keys = inside.groupBy(*PARTITION, "base_offset").agg(F.collect_list(copy).alias("copies"),
                                                         F.first("replicas").alias("replicas"))
    # per copy: how many copies share its version; a majority is more than half of the holders
    same = ("size(filter(copies, o -> o.last <=> c.last AND o.epoch <=> c.epoch AND o.crc <=> c.crc))")
    others = ("array_join(transform(array_sort(transform(filter(copies, o -> NOT (o.last <=> c.last "
              "AND o.epoch <=> c.epoch AND o.crc <=> c.crc)), o -> o.node)), n -> cast(n AS string)), ', ')")
    held = keys.selectExpr(
        *PARTITION, "base_offset", "replicas", "copies",
        f"transform(copies, c -> named_struct('c', c, 'same', {same}, 'others', {others})) AS judged")
    judged = held.select(*PARTITION, "base_offset", F.explode("judged").alias("j"), F.size("copies").alias("_n"))
    compared = judged.select(
        *PARTITION, F.col("j.c.node").alias("node_id"), "base_offset", F.col("j.c.last").alias("last_offset"),
        F.col("j.c.records").cast("long").alias("records"), F.col("j.c.epoch").alias("leader_epoch"),
        F.col("j.c.crc").alias("crc"), F.col("j.c.time").alias("time"),
        F.when((F.col("j.same") == F.col("_n")) | (F.col("j.same") * 2 > F.col("_n")), F.lit("same"))
        .otherwise(F.lit("divergent")).alias("status"),
        F.when(F.col("j.same") < F.col("_n"), F.col("j.others")).alias("others"))
    # a batch some replicas hold and others lack: one row per lacking replica, describing the held batch
    lacking = held.selectExpr(
        *PARTITION, "base_offset", "copies[0] AS c",
        "array_except(replicas, transform(copies, o -> o.node)) AS lacking",
        "array_join(transform(array_sort(transform(copies, o -> o.node)), n -> cast(n AS string)), ', ') AS others"
    ).where(F.size("lacking") > 0)
    missing = lacking.select(
        *PARTITION, F.explode("lacking").alias("node_id"), "base_offset", F.col("c.last").alias("last_offset"),
        F.col("c.records").cast("long").alias("records"), F.col("c.epoch").alias("leader_epoch"),
        F.col("c.crc").alias("crc"), F.col("c.time").alias("time"), F.lit("missing").alias("status"), "others")
    return compared.unionByName(missing).select(*COMPARISON_COLUMNS)


def replica_summary(ranges: DataFrame, comparison: DataFrame) -> DataFrame:
    """One row per replica of a partition held on several nodes: its range, the shared range, and how
    many of its batches were compared, differ or are missing.

    Columns: :data:`RANGE_COLUMNS` less ``cleaned_to``, then ``compared_from, shared_start,
    shared_end, compared_batches, divergent_batches, missing_batches``.
    """
    counts = comparison.groupBy(*REPLICA).agg(
        F.sum((F.col("status") != "missing").cast("long")).alias("compared_batches"),
        F.sum((F.col("status") == "divergent").cast("long")).alias("divergent_batches"),
        F.sum((F.col("status") == "missing").cast("long")).alias("missing_batches"))
    shared = shared_ranges(ranges).drop("replicas")
    out = _join(_join(ranges, shared, PARTITION), counts, REPLICA, "left")
    return out.select(
        *REPLICA, "log_start_offset", "log_end_offset", "batches", "records", "first_time", "last_time",
        "compared_from", "shared_start", "shared_end",
        *(F.coalesce(c, F.lit(0)).alias(c) for c in ("compared_batches", "divergent_batches", "missing_batches")))
