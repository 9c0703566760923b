"""Consumer groups whose committed position sat at a pinned last stable offset: read_committed readers stalled."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.logs import asof
from workbench.analysis.transactions.inputs import transactional_topics
from workbench.analysis.transactions.lso import lso_series

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Carried by the as-of join, which fills a null from an earlier row: the nullable ones travel as -1.
_CARRIED = ["log_end_offset", "lso", "lag_records", "_pin", "_since"]


def commits_vs_lso(tables: Any) -> DataFrame:
    """One row per effective offset commit on a transactional partition, beside the LSO and log end then.

    Columns: ``group, topic, partition, commit_time, committed_offset``, the :func:`lso_series`
    row at the commit (``lso, log_end_offset, lag_records, pinned_producer_id, pinned_since``),
    ``lag_to_end`` (log end − committed) and ``lag_to_lso`` (LSO − committed: what a
    read_committed reader could still read; markers count as offsets in both), ``at_lso`` (the
    position is the LSO while the log end is beyond it).
    """
    from workbench.analysis.consumer_lag.inputs import commits_for

    def compute() -> DataFrame:
        topics = transactional_topics(tables)
        commits = commits_for(tables).where(F.col("topic").isin(topics)).select(
            "group", "topic", "partition", "commit_time", "committed_offset")
        series = lso_series(tables).select(
            "topic", "partition", "time", "log_end_offset", "lso", "lag_records",
            F.coalesce("pinned_producer_id", F.lit(-1)).alias("_pin"),
            F.coalesce(F.unix_micros("pinned_since"), F.lit(-1)).alias("_since"))
        joined = asof(commits, series, by=["topic", "partition"], left_time="commit_time",
                      right_time="time", columns=_CARRIED)
        pinned = F.col("_pin") >= 0
        return joined.select(
            *commits.columns, "log_end_offset", "lso", "lag_records",
            F.when(pinned, F.col("_pin")).alias("pinned_producer_id"),
            F.when(pinned, F.timestamp_micros("_since")).alias("pinned_since"),
            (F.col("log_end_offset") - F.col("committed_offset")).alias("lag_to_end"),
            (F.col("lso") - F.col("committed_offset")).alias("lag_to_lso"),
            ((F.col("committed_offset") == F.col("lso")) & (F.col("log_end_offset") > F.col("lso"))).alias("at_lso"))

    return tables.derive("transactions.commits_vs_lso", compute)


def stalled_groups(tables: Any) -> DataFrame:
    """Stretches of commits of a group on a partition that all sat at a pinned LSO.

    A read_committed consumer cannot read past the LSO, so while an open transaction pins it the
    group commits the same position again and again, at the LSO, while the log end grows; a
    read_uncommitted group moves past it. One row per stretch: ``group, topic, partition, lso``
    (the stalled position), ``pinned_producer_id``, ``start`` and ``last_commit`` (the first and
    last commit at it), ``commits``, ``log_end_offset`` (the largest seen meanwhile),
    ``released`` (the first later commit past it; null: still stalled at its last commit).

    A read_uncommitted group can commit at the LSO by chance (it had read up to the first record
    of a transaction just begun); its next commit then goes past the LSO while the LSO still sits
    there, which no read_committed reader can do: such a stretch is not a stall and is left out.
    """
    rows = commits_vs_lso(tables)
    order = Window.partitionBy("group", "topic", "partition").orderBy("commit_time", "committed_offset")
    marked = (rows.withColumn("_at", F.coalesce("at_lso", F.lit(False)))
              .withColumn("_run", F.sum((~F.col("_at")).cast("int")).over(
                  order.rowsBetween(Window.unboundedPreceding, 0)))
              .withColumn("_next", F.lead("commit_time").over(order))
              .withColumn("_read_past", (F.lead("committed_offset").over(order) > F.col("lso"))
                          & (F.lead("lso").over(order) == F.col("lso"))))
    stalled = marked.where("_at")
    # one stretch per run of commits at one LSO (a run can move on to the next pinned LSO at once)
    return (stalled.groupBy("group", "topic", "partition", "_run", "lso").agg(
        F.first("pinned_producer_id", ignorenulls=True).alias("pinned_producer_id"),
        F.min("commit_time").alias("start"), F.max("commit_time").alias("last_commit"),
        F.count("*").alias("commits"), F.max("log_end_offset").alias("log_end_offset"),
        F.max_by("_next", "commit_time").alias("released"),
        F.max_by("_read_past", "commit_time").alias("_read_past"))
        .where(~F.coalesce("_read_past", F.lit(False))).drop("_run", "_read_past"))


def group_positions(tables: Any) -> DataFrame:
    """Each group's last commit on each transactional partition (:func:`commits_vs_lso` columns)."""
    last = Window.partitionBy("group", "topic", "partition").orderBy(F.col("commit_time").desc(),
                                                                      F.col("committed_offset").desc())
    return commits_vs_lso(tables).withColumn("_n", F.row_number().over(last)).where("_n = 1").drop("_n")


def lag_explained(tables: Any) -> DataFrame:
    """:func:`group_positions` with ``markers_in_lag``: how many of the offsets between the committed
    position and the LSO are transaction markers (no consumer ever receives them).

    A read_committed group that read everything still shows a lag of 1 against the log end when
    the log ends with a COMMIT marker; ``records_to_read`` (``lag_to_lso`` − ``markers_in_lag``,
    aborted records still counted) is 0 then.
    """
    positions = group_positions(tables)
    markers = tables["markers"].select("topic", "partition", F.col("offset").alias("_m")).distinct()
    counted = (positions.alias("p").join(
        markers.alias("m"), (F.col("p.topic") == F.col("m.topic")) & (F.col("p.partition") == F.col("m.partition"))
        & (F.col("m._m") >= F.col("p.committed_offset")) & (F.col("m._m") < F.col("p.lso")), "left")
        .groupBy(*[F.col(f"p.{c}") for c in positions.columns]).agg(F.count("m._m").alias("markers_in_lag")))
    return counted.withColumn("records_to_read", F.greatest(F.lit(0), F.col("lag_to_lso") - F.col("markers_in_lag")))
