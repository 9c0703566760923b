"""Records lost to retention, committed offsets standing still, and groups whose offsets were removed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.consumer_lag.inputs import _metrics, growth_for, log_offsets_from_metrics, removed_for
from workbench.analysis.consumer_lag.lag import lags_for
from workbench.analysis.logs import asof

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def retention_loss(lags: DataFrame, growth: DataFrame, *, log_starts: DataFrame | None = None,
                   removed: DataFrame | None = None, away_s: float = 30.0) -> DataFrame:
    """Records a group skipped because retention deleted them before it read them.

    Three cases, each with the group, the partition and the count of records lost:

    * ``skipped``: between two commits ``X`` (earlier) and ``Y``, the log start overtook ``X``: the
      group resumed at the log start (``auto.offset.reset``), so the records from ``X`` to
      ``min(Y, log start)`` were never read by it. The log start at the second commit is the broker's
      ``LogStartOffset`` metric (``basis = 'metric'``), exact when the log start did not move between
      the group's reset and that commit; without the metric the bundle's log start (its first batch)
      bounds it (``basis = 'bundle'``, an upper bound: ``exact`` false). The loss is taken as certain when
      the group was gone in between — its offsets were removed (``removed``: :func:`removed_offsets`), or
      it committed nothing for more than ``away_s`` seconds (consumers commit every few seconds while they
      read: a longer silence means no member was reading) — and it restarted at the log start.
      Otherwise the group may have read the records before retention deleted
      them (a consumer reads ahead of its commits): the row is ``possibly_skipped``, ``exact`` false, its
      count an upper bound;
    * ``commit_below_log_start``: a commit of an offset already below the log start when made (the
      metric says so): the group will skip the records up to the log start;
    * ``behind_log_start``: the group's last commit is below the log start of the bundle (its first
      batch): the records between are gone for it, should it come back.

    Returns
    -------
    DataFrame
        One row per case: ``kind, group, topic, partition, time`` (the commit that showed it, or of the
        last commit), ``committed_offset`` (X), ``next_offset`` (Y, or null), ``log_start_offset``,
        ``records_lost``, ``basis`` (``metric`` or ``bundle``), ``exact``; ``kind`` is ``skipped``,
        ``possibly_skipped``, ``commit_below_log_start`` or ``behind_log_start``.
    """
    require_columns(lags, ("group", "topic", "partition", "commit_time", "committed_offset"), "retention_loss")
    by = ["topic", "partition"]
    first = growth.groupBy(*by).agg(F.min("base_offset").alias("_bundle_start"))
    keys = ["group", "topic", "partition"]
    order = Window.partitionBy(*keys).orderBy("commit_time", "committed_offset")
    rows = lags.select(*keys, "commit_time", "committed_offset").withColumn(
        "_prev", F.lag("committed_offset").over(order)).withColumn(
        "_next", F.lead("committed_offset").over(order))
    if log_starts is not None:
        samples = log_starts.groupBy(*by, "time").agg(F.max("value").alias("_m_start"))
        rows = asof(rows, samples.withColumnRenamed("time", "_st"), by=by, left_time="commit_time", right_time="_st",
                    columns=["_m_start"])
    else:
        rows = rows.withColumn("_m_start", F.lit(None).cast("long"))
    rows = rows.join(first, by, "left")
    rows = rows.withColumn("_prev_time", F.lag("commit_time").over(order))
    away = (F.unix_micros("commit_time") - F.unix_micros("_prev_time")) > F.lit(int(away_s * 1e6))
    if removed is not None:
        gone = removed.select(*keys, "removed_time")
        cond = [rows[k] == gone[k] for k in keys] + [gone["removed_time"] > rows["_prev_time"],
                                                      gone["removed_time"] <= rows["commit_time"]]
        hits = rows.join(gone, cond, "left_semi").select(*keys, "commit_time", "committed_offset").distinct() \
            .withColumn("_reset", F.lit(True))
        rows = rows.join(hits, [*keys, "commit_time", "committed_offset"], "left")
    else:
        rows = rows.withColumn("_reset", F.lit(None).cast("boolean"))
    reset = F.coalesce(F.col("_reset"), F.lit(False)) | F.coalesce(away, F.lit(False))
    skip_kind = F.when(reset, F.lit("skipped")).otherwise(F.lit("possibly_skipped")).alias("kind")
    start_now = F.col("_m_start")
    x, y = F.col("_prev"), F.col("committed_offset")
    skipped_metric = (rows.where(start_now.isNotNull() & x.isNotNull() & (y > x) & (start_now > x))
                      .select(skip_kind, *keys, F.col("commit_time").alias("time"),
                              x.alias("committed_offset"), y.alias("next_offset"),
                              start_now.alias("log_start_offset"), (F.least(y, start_now) - x).alias("records_lost"),
                              F.lit("metric").alias("basis"), reset.alias("exact")))
    skipped_bundle = (rows.where(start_now.isNull() & x.isNotNull() & (y > x) & (F.col("_bundle_start") > x))
                      .select(skip_kind, *keys, F.col("commit_time").alias("time"),
                              x.alias("committed_offset"), y.alias("next_offset"),
                              F.col("_bundle_start").alias("log_start_offset"),
                              (F.least(y, F.col("_bundle_start")) - x).alias("records_lost"),
                              F.lit("bundle").alias("basis"), F.lit(False).alias("exact")))
    below = (rows.where(start_now.isNotNull() & (y < start_now) & (x.isNull() | (x >= start_now) | (x == y)))
             .select(F.lit("commit_below_log_start").alias("kind"), *keys, F.col("commit_time").alias("time"),
                     y.alias("committed_offset"), F.lit(None).cast("long").alias("next_offset"),
                     start_now.alias("log_start_offset"), (start_now - y).alias("records_lost"),
                     F.lit("metric").alias("basis"), F.lit(True).alias("exact")))
    behind = (rows.where(F.col("_next").isNull() & F.col("_bundle_start").isNotNull() & (y < F.col("_bundle_start")))
              .select(F.lit("behind_log_start").alias("kind"), *keys, F.col("commit_time").alias("time"),
                      y.alias("committed_offset"), F.lit(None).cast("long").alias("next_offset"),
                      F.col("_bundle_start").alias("log_start_offset"),
                      (F.col("_bundle_start") - y).alias("records_lost"),
                      F.lit("bundle").alias("basis"), F.lit(True).alias("exact")))
    out = skipped_metric.unionByName(skipped_bundle).unionByName(below).unionByName(behind)
    return out.select("kind", *keys, "time", F.col("committed_offset").cast("long"), F.col("next_offset").cast("long"),
                      F.col("log_start_offset").cast("long"), F.col("records_lost").cast("long"), "basis", "exact")


def stuck_partitions(lags: DataFrame, growth: DataFrame | None = None, *, min_commits: int = 2) -> DataFrame:
    """Committed offsets that stood still while the log end grew.

    A run is a maximal sequence of consecutive commits of one group and partition with the same offset,
    of at least ``min_commits`` commits, during which the log end grew; with ``growth``, a group's last
    commit also counts as a run to the end of the bundle when the log grew after it (it stopped
    committing with lag: ``to_end`` true).

    Returns
    -------
    DataFrame
        One row per run: ``group, topic, partition, committed_offset, start, end, commits, log_end_start,
        log_end_end, lag_start, lag_end, to_end``.
    """
    require_columns(lags, ("group", "topic", "partition", "commit_time", "committed_offset", "log_end_offset"),
                    "stuck_partitions")
    keys = ["group", "topic", "partition"]
    order = Window.partitionBy(*keys).orderBy("commit_time", "commit_log_offset" if "commit_log_offset" in
                                               lags.columns else "committed_offset")
    flagged = (lags.withColumn("_new", F.coalesce(F.col("committed_offset") != F.lag("committed_offset").over(order),
                                                  F.lit(True)))
               .withColumn("_run", F.sum(F.col("_new").cast("long")).over(order.rowsBetween(Window.unboundedPreceding,
                                                                                           0)))
               .withColumn("_last", F.lead("commit_time").over(order).isNull()))
    runs = flagged.groupBy(*keys, "_run").agg(
        F.first("committed_offset").alias("committed_offset"), F.min("commit_time").alias("start"),
        F.max("commit_time").alias("end"), F.count("*").alias("commits"),
        F.min("log_end_offset").alias("log_end_start"), F.max("log_end_offset").alias("log_end_end"),
        F.max(F.col("_last").cast("int")).alias("_is_last"))
    runs = runs.withColumn("to_end", F.lit(False))
    if growth is not None:
        final = growth.groupBy("topic", "partition").agg(F.max("end_offset").alias("_final"),
                                                         F.max("reached").alias("_final_time"))
        runs = (runs.join(final, ["topic", "partition"], "left")
                .withColumn("to_end", (F.col("_is_last") == 1) & (F.col("_final") > F.greatest(
                    F.col("log_end_end"), F.col("committed_offset"))) & (F.col("_final_time") > F.col("end")))
                .withColumn("end", F.when(F.col("to_end"), F.col("_final_time")).otherwise(F.col("end")))
                .withColumn("log_end_end", F.when(F.col("to_end"), F.col("_final")).otherwise(F.col("log_end_end"))))
    grew = F.col("log_end_end") > F.col("log_end_start")
    stuck = runs.where(((F.col("commits") >= min_commits) & grew) | F.col("to_end"))
    return stuck.select(*keys, "committed_offset", "start", "end", F.col("commits").cast("long"), "log_end_start",
                        "log_end_end", (F.col("log_end_start") - F.col("committed_offset")).alias("lag_start"),
                        (F.col("log_end_end") - F.col("committed_offset")).alias("lag_end"), "to_end")


def removed_groups(commits: DataFrame, removed: DataFrame) -> DataFrame:
    """Groups whose offsets were removed (expired, or deleted): per group, what was removed and when.

    Returns
    -------
    DataFrame
        One row per group with a tombstone: ``group, partitions`` (committed partitions in the bundle),
        ``removed_partitions``, ``all_removed`` (every committed partition's last event is a tombstone),
        ``last_commit``, ``first_removed``, ``last_removed``.
    """
    keys = ["group", "topic", "partition"]
    last_commit = commits.groupBy(*keys).agg(F.max("commit_time").alias("_lc"))
    last_removal = removed.groupBy(*keys).agg(F.max("removed_time").alias("_lr"), F.min("removed_time").alias("_fr"))
    both = last_commit.join(last_removal, keys, "full")
    gone = F.col("_lr").isNotNull() & (F.col("_lc").isNull() | (F.col("_lr") >= F.col("_lc")))
    per_group = both.groupBy("group").agg(
        F.countDistinct(F.when(F.col("_lc").isNotNull(), F.concat_ws("\u0000", "topic", F.col("partition").cast(
            "string")))).alias("partitions"),
        F.sum(gone.cast("int")).alias("removed_partitions"),
        F.min(gone.cast("int")).alias("_all"),
        F.max("_lc").alias("last_commit"), F.min(F.when(gone, F.col("_fr"))).alias("first_removed"),
        F.max(F.when(gone, F.col("_lr"))).alias("last_removed"))
    return (per_group.where(F.col("removed_partitions") > 0)
            .select("group", F.col("partitions").cast("long"), F.col("removed_partitions").cast("long"),
                    (F.col("_all") == 1).alias("all_removed"), "last_commit", "first_removed", "last_removed"))


def loss_for(tables: Any) -> DataFrame:
    """:func:`retention_loss` of a bundle (LogStartOffset samples when it has them), computed once."""
    return tables.derive("consumer_lag.loss", lambda: retention_loss(
        lags_for(tables), growth_for(tables), log_starts=log_offsets_from_metrics(_metrics(tables), "start"),
        removed=removed_for(tables)))
