"""The KRaft metadata log as one ordered stream of records, from any number of node replicas.

Every controller and broker keeps a replica of ``__cluster_metadata-0``. Committed records are
the same on every replica, so the analyses read one stream per cluster: each offset once, taking the record
of the highest leader epoch where replicas diverge (a divergent uncommitted tail is truncated and
rewritten in a later epoch). A bundle with a single replica whose segment files cover disjoint
offset ranges needs no such choice (and skips the shuffle it costs). When the oldest log segment
no longer starts at offset 0, the newest
snapshot that ends at or before the log start seeds the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_NEEDED = ("node_id", "cluster_id", "file_kind", "file_offset", "offset", "timestamp", "leader_epoch", "is_control",
           "record_type")


def ordered_records(metadata: DataFrame) -> DataFrame:
    """One row per metadata-log position of each cluster, deduplicated across node replicas.

    Each cluster (``cluster_id``; null for nodes of unknown cluster) has its own log, deduplicated and
    seeded from its own snapshots. Adds ``seq`` (order within a seeding snapshot, 0 for log records):
    order by ``cluster_id, offset, seq`` to replay. Control records are kept.

    >>> ordered_records(tables.metadata).orderBy("cluster_id", "offset", "seq").show()   # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    require_columns(metadata, _NEEDED, "ordered_records")
    found = metadata.where(F.col("file_kind").isin("segment", "snapshot")).groupBy(
        "cluster_id", "node_id", "path", "file_kind").agg(F.min("offset").alias("first"), F.max("offset").alias("last"))
    spans: dict[str | None, list[tuple[int, int, int]]] = {}
    for r in found.collect():
        files = spans.setdefault(r["cluster_id"], [])
        if r["file_kind"] == "segment" and r["first"] is not None:
            files.append((r["first"], r["last"], r["node_id"]))
    if len(spans) <= 1:
        return _cluster_records(metadata, sorted(next(iter(spans.values()), [])))
    out = None
    for cluster in sorted(spans, key=lambda c: (c is None, c or "")):
        one = _cluster_records(metadata.where(F.col("cluster_id").eqNullSafe(F.lit(cluster).cast("string"))),
                               sorted(spans[cluster]))
        out = one if out is None else out.unionByName(one)
    return out


def _cluster_records(metadata: DataFrame, spans: list[tuple[int, int, int]]) -> DataFrame:
    """:func:`ordered_records` of one cluster's rows (``spans``: its segments' first and last offsets and node)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    log = metadata.where(F.col("file_kind") == "segment")
    if len({node for _f, _l, node in spans}) > 1 or any(b[0] <= a[1] for a, b in zip(spans, spans[1:], strict=False)):
        best = Window.partitionBy("cluster_id", "offset").orderBy(F.col("leader_epoch").desc(), F.col("node_id"))
        log = log.withColumn("_rank", F.row_number().over(best)).where(F.col("_rank") == 1).drop("_rank")
    # else: one replica whose segments do not overlap holds each offset once; nothing to choose
    log = log.withColumn("seq", F.lit(0).cast("long"))
    log_start = spans[0][0] if spans else None
    if log_start is None or log_start == 0:
        return log
    snaps = metadata.where((F.col("file_kind") == "snapshot") & (F.col("file_offset") <= log_start))
    snap_end = snaps.agg(F.max("file_offset").alias("end")).collect()[0]["end"]
    if snap_end is None:
        return log
    seed = (
        snaps.where((F.col("file_offset") == snap_end) & ~F.col("is_control"))
        .withColumn("_rank", F.row_number().over(
            Window.partitionBy("cluster_id", "offset").orderBy(F.col("node_id"))))
        .where(F.col("_rank") == 1).drop("_rank")
        .withColumn("seq", F.col("offset"))
        .withColumn("offset", F.lit(snap_end - 1).cast("long"))
    )
    return seed.unionByName(log.where(F.col("offset") >= snap_end))
