"""A partition's log over time, from its batches: the log end at any moment, and bytes between offsets.

Three questions read the log of a data partition at past moments — consumer lag (the log end when a
group committed), MirrorMaker 2 (the source's log end when MM2 had replicated up to an offset) and
tiered storage (what was rolled and not uploaded). This module answers them once, from the
``batches`` table alone (no record is decoded):

* :func:`log_growth`: one row per batch of the partition's fullest replica, with the time by which
  the log had grown to include it (``reached``), its end offset and the bytes of log from the first
  batch in the bundle up to its end;
* :func:`asof`: for rows holding a time, the last row of another frame at or before that time,
  per key — the as-of join the three analyses need;
* :func:`log_end_at`: the log end offset and bytes at given instants, per partition.

The time a batch joined the log is its ``max_timestamp``. With ``LogAppendTime`` it is the broker's
append time; with ``CreateTime`` it is the producer's clock, which can run behind or out of order, so
``reached`` is the running maximum of ``max_timestamp`` in offset order (a log only grows: it reached
offset *n* no earlier than any batch before *n* was stamped). ``timestamp_type`` is carried so a
view can say when the time is the producer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.sql import sql_name

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: Columns of :func:`log_growth`.
GROWTH_COLUMNS = (
    "topic", "partition", "node_id", "segment_base_offset", "position", "base_offset", "end_offset",
    "record_count", "size", "bytes_before", "bytes_end", "max_timestamp", "reached", "timestamp_type",
    "is_control",
)

#: The KRaft metadata log's topic: read only when asked for by name.
METADATA_TOPIC = "__cluster_metadata"

_NEEDED = ("node_id", "topic", "partition", "segment_base_offset", "position", "base_offset", "last_offset",
           "record_count", "size", "max_timestamp", "timestamp_type", "is_control", "crc_valid")


def log_growth(batches: DataFrame, *, topics: Sequence[str] | None = None,
               per_replica: bool = False, carry: Sequence[str] = ()) -> DataFrame:
    """One row per batch of each partition's fullest replica, in offset order, with cumulative bytes and times.

    Parameters
    ----------
    batches : DataFrame
        The ``batches`` table (any number of replicas per partition). Snapshot batches are left
        out, and so is the KRaft metadata log unless ``topics`` names ``__cluster_metadata``.
    topics : sequence of str, optional
        Only these topics.
    per_replica : bool
        Every replica's own log instead of the fullest one's: the running figures are per node.
    carry : sequence of str
        Further columns of ``batches`` kept after the growth columns (e.g. the producer's id).

    Returns
    -------
    DataFrame
        :data:`GROWTH_COLUMNS`: ``topic, partition, node_id`` (the replica read: the one whose log
        reaches the highest offset, ties to the lowest node id), ``segment_base_offset, position,
        base_offset, end_offset`` (``last_offset + 1``), ``record_count, size``, ``bytes_before`` and
        ``bytes_end`` (bytes of log from the replica's first batch in the bundle to the batch's start
        and end, across segments), ``max_timestamp``, ``reached`` (running maximum of
        ``max_timestamp`` in offset order: by then the log held the batch), ``timestamp_type,
        is_control``. Batches whose CRC failed are kept (their offsets and sizes are in the header).
        With ``per_replica``, every node's batches (``node_id`` tells them apart).

    Examples
    --------
    >>> log_growth(tables.batches, topics=["orders"]).show()   # doctest: +SKIP
    """
    require_columns(batches, (*_NEEDED, "path"), "log_growth")
    metadata_asked = topics is not None and METADATA_TOPIC in topics
    # log segments only: a KRaft snapshot (.checkpoint) is not part of the log
    data = batches.where(F.col("topic").isNotNull() & F.col("segment_base_offset").isNotNull()
                         & ~F.col("path").rlike(r"\.checkpoint(\.[a-z]+)?$"))
    if not metadata_asked:
        data = data.where(F.col("topic") != METADATA_TOPIC)
    if topics is not None:
        data = data.where(F.col("topic").isin(list(topics)))
    keys = ["topic", "partition"]
    if per_replica:
        keys.append("node_id")
    else:
        # the fullest replica of each partition
        reach = data.groupBy("topic", "partition", "node_id").agg(F.max("last_offset").alias("_reach"))
        best = Window.partitionBy("topic", "partition").orderBy(F.col("_reach").desc(), "node_id")
        chosen = (reach.withColumn("_rank", F.row_number().over(best)).where(F.col("_rank") == 1)
                  .select("topic", "partition", "node_id"))
        data = data.join(chosen, ["topic", "partition", "node_id"])
    # one row per offset range: a batch present twice (a segment and its .deleted twin) counts once
    rows = data.dropDuplicates([*keys, "base_offset", "last_offset"])
    order = Window.partitionBy(*keys).orderBy("base_offset", "segment_base_offset", "position")
    running = order.rowsBetween(Window.unboundedPreceding, 0)
    return (rows
            .withColumn("end_offset", F.col("last_offset") + 1)
            .withColumn("bytes_end", F.sum(F.col("size").cast("long")).over(running))
            .withColumn("bytes_before", F.col("bytes_end") - F.col("size"))
            .withColumn("reached", F.max("max_timestamp").over(running))
            .select(*GROWTH_COLUMNS, *carry))


def batches_of(tables: Any, topics: Sequence[str]) -> DataFrame:
    """The ``batches`` table's rows of some topics only, read from their own files, kept per bundle.

    Exactly ``tables.batches.where(topic in topics)``, without decoding every other topic's segment
    headers (filtered from the whole table when that is read already).

    >>> batches_of(tables, [METADATA_TOPIC]).count()   # doctest: +SKIP
    """
    wanted = sorted(set(topics))

    def compute() -> DataFrame:
        if "batches" in getattr(tables, "built", ()) or not hasattr(tables, "bundle"):
            return tables.batches.where(F.col("topic").isin(wanted))
        from workbench.spark.registry import read_table, table_spec

        spec = table_spec("batches")
        chosen = spec.select(tables.bundle) if spec.select else tables.bundle.of_kind(*spec.kinds)
        files = [a for a in chosen if a.topic in wanted]
        options = {k: v for k, v in tables.options.items() if k in spec.options}
        return read_table(tables.spark, tables.bundle, spec, files, strict=bool(tables.options.get("strict")),
                          persist=False, **options).rows

    return tables.derive(f"logs.batches_of:{','.join(wanted)}", compute)


def asof(left: DataFrame, right: DataFrame, *, by: Sequence[str], left_time: str, right_time: str,
         columns: Sequence[str], suffix: str = "") -> DataFrame:
    """For each left row, the named columns of the last right row (same ``by`` keys) at or before its time.

    Nulls when there is none. Among right rows of equal time the last by ``columns`` wins (give a
    monotone column, such as an offset, first). Carried columns are named ``<column><suffix>``.

    >>> asof(commits, log_growth(batches), by=["topic", "partition"], left_time="commit_time",
    ...      right_time="reached", columns=["end_offset", "bytes_end"], suffix="_at_commit")   # doctest: +SKIP
    """
    require_columns(left, (*by, left_time), "asof (left)")
    require_columns(right, (*by, right_time, *columns), "asof (right)")
    # the left rows travel through the union themselves: tagging them with an id and joining back
    # would pair rows wrongly when the left side is recomputed in another order (ids of
    # monotonically_increasing_id depend on the partitioning of each evaluation)
    carried_names = [f"_asof_c{i}" for i in range(len(columns))]
    # SQL text, not Columns built in Python: one py4j round trip per expression instead of one per
    # function, literal, cast and alias (thousands per call on a wide left side)
    q = sql_name
    keys = [q(b) for b in by]

    def null_of(column: str, name: str) -> Column:
        return F.lit(None).cast(right.schema[column].dataType).alias(name)

    l_part = left.selectExpr(*keys, f"{q(left_time)} AS _asof_t", "1 AS _asof_side",
                             f"struct({', '.join(q(c) for c in left.columns)}) AS _asof_left")
    l_part = l_part.select("*", *[null_of(c, n) for c, n in zip(columns, carried_names, strict=True)])
    r_part = right.selectExpr(*keys, f"{q(right_time)} AS _asof_t", "0 AS _asof_side",
                              *[f"{q(c)} AS {n}" for c, n in zip(columns, carried_names, strict=True)])
    r_part = r_part.select("*", F.lit(None).cast(l_part.schema["_asof_left"].dataType).alias("_asof_left"))
    # right rows sort before left rows of the same time: "at or before"
    order = (f"OVER (PARTITION BY {', '.join(keys)} ORDER BY _asof_t, _asof_side, {', '.join(carried_names)} "
             "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)")
    filled = l_part.unionByName(r_part).selectExpr(
        "_asof_side", "_asof_left",
        *[f"last(CASE WHEN _asof_side = 0 THEN {n} END, true) {order} AS {q(c + suffix)}"
          for c, n in zip(columns, carried_names, strict=True)])
    carried = filled.where("_asof_side = 1")
    return carried.selectExpr(*[f"_asof_left.{q(c)} AS {q(c)}" for c in left.columns],
                              *[q(c + suffix) for c in columns])


def log_end_at(growth: DataFrame, instants: DataFrame, *, time: str = "time") -> DataFrame:
    """The log end offset and bytes of each partition at the given instants.

    ``instants`` has ``topic, partition`` and a timestamp column ``time``. Adds ``log_end_offset`` and
    ``log_end_bytes`` (null before the bundle's first batch) and ``log_end_reached``.
    """
    return asof(instants, growth.withColumnRenamed("end_offset", "log_end_offset")
                .withColumnRenamed("bytes_end", "log_end_bytes").withColumn("log_end_reached", F.col("reached")),
                by=["topic", "partition"], left_time=time, right_time="reached",
                columns=["log_end_offset", "log_end_bytes", "log_end_reached"])
