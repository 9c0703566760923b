"""The KRaft metadata log as one ordered stream of records, from any number of node replicas.

Every controller and broker keeps a replica of ``__cluster_metadata-0``. Committed records are
the same on every replica, so the analyses read one stream: each offset once, taking the record
of the highest leader epoch where replicas diverge (a divergent uncommitted tail is truncated and
rewritten in a later epoch). When the oldest log segment no longer starts at offset 0, the newest
snapshot that ends at or before the log start seeds the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_NEEDED = ("node_id", "file_kind", "file_offset", "offset", "timestamp", "leader_epoch", "is_control",
           "record_type", "fields")


def ordered_records(metadata: DataFrame) -> DataFrame:
    """One row per metadata-log position, deduplicated across node replicas.

    Parameters
    ----------
    metadata : DataFrame
        The ``metadata`` table (see :data:`workbench.spark.sources.METADATA_SCHEMA`).

    Returns
    -------
    DataFrame
        The input columns plus ``seq`` (order within a seeding snapshot, 0 for log records);
        order by ``offset, seq`` to replay. Control records are kept (``is_control``).

    Examples
    --------
    >>> ordered_records(tables.metadata).orderBy("offset", "seq").show()   # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(metadata, _NEEDED, "ordered_records")
    log = metadata.where(F.col("file_kind") == "segment")
    best = Window.partitionBy("offset").orderBy(F.col("leader_epoch").desc(), F.col("node_id"))
    log = (log.withColumn("_rank", F.row_number().over(best)).where(F.col("_rank") == 1)
           .drop("_rank").withColumn("seq", F.lit(0).cast("long")))
    log_start = log.agg(F.min("offset").alias("start")).collect()[0]["start"]
    if log_start is None or log_start == 0:
        return log
    snaps = metadata.where((F.col("file_kind") == "snapshot") & (F.col("file_offset") <= log_start))
    snap_end = snaps.agg(F.max("file_offset").alias("end")).collect()[0]["end"]
    if snap_end is None:
        return log
    seed = (
        snaps.where((F.col("file_offset") == snap_end) & ~F.col("is_control"))
        .withColumn("_rank", F.row_number().over(
            Window.partitionBy("offset").orderBy(F.col("node_id"))))
        .where(F.col("_rank") == 1).drop("_rank")
        .withColumn("seq", F.col("offset"))
        .withColumn("offset", F.lit(snap_end - 1).cast("long"))
    )
    return seed.unionByName(log.where(F.col("offset") >= snap_end))
