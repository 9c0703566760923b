"""The consumer-lag findings and their sentences: per-group lag summaries, findings of a bundle."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

import workbench.analysis.consumer_lag.burrow as burrow_rules
from workbench.analysis._checks import require_columns
from workbench.analysis.consumer_lag.burrow_history import group_status_for
from workbench.analysis.consumer_lag.distributions import cache_lags_for, page_cache
from workbench.analysis.consumer_lag.inputs import _has_commits, commits_for, growth_for, removed_for
from workbench.analysis.consumer_lag.lag import lags_for
from workbench.analysis.consumer_lag.retention import loss_for, removed_groups, stuck_partitions
from workbench.analysis.text import bytes_text, duration_text, time_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


#: A group whose time lag reaches this many seconds is a ``warning`` (parameter ``lag_warn_seconds``).
DEFAULT_LAG_WARN_S = 60.0


def group_lag_summary(lags: DataFrame) -> DataFrame:
    """Per group and leader broker: how far behind the tail its commits were, and when.

    Returns
    -------
    DataFrame
        One row per group and broker: ``group, broker, commits, partitions, lagging_commits`` (records
        lag above 0), ``start, end`` (first and last commit with lag), ``max_records_lag, max_bytes_lag,
        max_time_lag_ms``, ``at_max`` (commit time of the largest time lag), ``unknown`` (commits whose
        bytes or time lag is unknown), ``create_time`` (times are the producers').
    """
    require_columns(lags, ("group", "broker", "topic", "partition", "commit_time", "records_lag", "bytes_lag",
                           "time_lag_ms", "timestamp_type"), "group_lag_summary")
    lagging = F.col("records_lag") > 0
    return lags.groupBy("group", "broker").agg(
        F.count("*").alias("commits"),
        F.countDistinct("topic", "partition").alias("partitions"),
        F.sum(lagging.cast("long")).alias("lagging_commits"),
        F.min(F.when(lagging, F.col("commit_time"))).alias("start"),
        F.max(F.when(lagging, F.col("commit_time"))).alias("end"),
        F.max("records_lag").alias("max_records_lag"),
        F.max("bytes_lag").alias("max_bytes_lag"),
        F.max("time_lag_ms").alias("max_time_lag_ms"),
        F.max_by("commit_time", F.coalesce(F.col("time_lag_ms"), F.lit(-1))).alias("at_max"),
        F.sum((F.col("bytes_lag").isNull() | F.col("time_lag_ms").isNull()).cast("long")).alias("unknown"),
        F.max((F.col("timestamp_type") == "CreateTime").cast("int")).alias("_ct"),
    ).select("group", "broker", F.col("commits").cast("long"), F.col("partitions").cast("long"),
             F.col("lagging_commits").cast("long"), "start", "end", F.col("max_records_lag").cast("long"),
             F.col("max_bytes_lag").cast("long"), F.col("max_time_lag_ms").cast("long"), "at_max",
             F.col("unknown").cast("long"), (F.col("_ct") == 1).alias("create_time"))


def findings(lags: DataFrame, *, loss: DataFrame | None = None, removed: DataFrame | None = None,
             cache: DataFrame | None = None, group_status: DataFrame | None = None,
             stuck: DataFrame | None = None,
             lag_warn_s: float = DEFAULT_LAG_WARN_S,
             burrow_intervals: int = burrow_rules.DEFAULT_INTERVALS) -> DataFrame:
    """Consumer-lag findings, as rows of :data:`workbench.analysis.findings.FINDINGS_SCHEMA` (area ``consumer_lag``).

    * ``lag`` (``warning`` when the time lag reached ``lag_warn_s``, else ``info``; one per group and
      leader broker with lag): how far behind the tail the group read, from when to when, and with
      ``cache`` (:func:`page_cache` by group and broker) the page cache that would have served 99 % of
      the group's reads there (the group's own: another group's commits do not change its finding);
    * ``retention_loss`` (critical): :func:`retention_loss` rows, records the group will never read;
    * ``offsets_removed`` (info): :func:`removed_groups` rows: a group's committed offsets were removed
      (expired after it was empty for ``offsets.retention.minutes``, or deleted);
    * ``burrow_err`` / ``burrow_warn`` (warning / info): maximal runs of instants at which Burrow's
      rules rate the group ERR or WARN (:func:`burrow_group_status`), counting only complete
      evaluations (every partition's window holds ``burrow_intervals`` commits: a window of one or two
      commits rates any lag a STALL);
    * ``stuck`` (warning): :func:`stuck_partitions` runs, per group: committed offsets that stood
      still while the log grew, or a group that stopped committing with lag (``to_end``);
    * ``lag_unknown`` (info): commits whose lag in bytes or time cannot be computed (the segments of
      that time are not in the bundle): what is missing rather than a claim of health.

    Returns
    -------
    DataFrame
        Subject type ``group``, subject the group name; ``figures`` holds the numbers of the summary.
    """
    from workbench.analysis.findings import FINDINGS_COLUMNS, empty_findings

    spark = lags.sparkSession
    out = empty_findings(spark).drop("area", "subject_type")
    summary = group_lag_summary(lags)
    p99 = None
    if cache is not None:
        p99 = (cache.where(F.abs(F.col("quantile") - 0.99) < 1e-9)
               .select("group", "broker", F.col("tail_bytes").alias("_p99_tail"),
                       F.col("cache_bytes").alias("_p99_cache")))
    lagged = summary.where(F.col("lagging_commits") > 0)
    if p99 is not None:
        lagged = lagged.join(p99, ["group", "broker"], "left")
    else:
        lagged = lagged.withColumn("_p99_tail", F.lit(None).cast("long")).withColumn("_p99_cache",
                                                                                   F.lit(None).cast("long"))
    cache_text = F.when(F.col("_p99_cache").isNotNull(), F.concat(
        F.lit("; "), bytes_text(F.col("_p99_cache")), F.lit(" of page cache on broker "),
        F.col("broker").cast("string"),
        F.lit(" would have served 99 % of the group's reads there"))).otherwise(F.lit(""))
    lag_rows = lagged.select(
        F.lit("lag").alias("kind"),
        F.when(F.col("max_time_lag_ms") >= F.lit(lag_warn_s * 1000), F.lit("warning")).otherwise(F.lit("info"))
        .alias("severity"),
        F.col("group").alias("subject"), "start", "end",
        F.concat(F.lit("group "), F.col("group"), F.lit(" read up to "), bytes_text(F.coalesce("max_bytes_lag",
                                                                                              F.lit(0))),
                 F.lit(" ("), duration_text(F.coalesce("max_time_lag_ms", F.lit(0))), F.lit(", "),
                 F.col("max_records_lag").cast("string"), F.lit(" records) behind the tail on broker "),
                 F.col("broker").cast("string"), F.lit(" from "), time_text(F.col("start")), F.lit(" to "),
                 time_text(F.col("end")), cache_text,
                 F.when(F.col("create_time"), F.lit(" (times are the producers' CreateTime)")).otherwise(F.lit("")))
        .alias("summary"),
        F.map_from_arrays(
            F.array(*[F.lit(n) for n in ("broker", "max_records_lag", "max_bytes_lag", "max_time_lag_ms",
                                         "lagging_commits", "partitions", "p99_cache_bytes", "p99_tail_bytes")]),
            F.array(*[F.col(c).cast("double") for c in ("broker", "max_records_lag", "max_bytes_lag",
                                                        "max_time_lag_ms", "lagging_commits", "partitions",
                                                        "_p99_cache", "_p99_tail")])).alias("figures"))
    out = out.unionByName(lag_rows)
    unknown = summary.where(F.col("unknown") > 0).groupBy("group").agg(
        F.sum("unknown").alias("unknown"), F.sum("commits").alias("commits"))
    out = out.unionByName(unknown.select(
        F.lit("lag_unknown").alias("kind"), F.lit("info").alias("severity"), F.col("group").alias("subject"),
        F.lit(None).cast("timestamp").alias("start"), F.lit(None).cast("timestamp").alias("end"),
        F.concat(F.lit("lag in bytes or time of "), F.col("unknown").cast("string"), F.lit(" of "),
                 F.col("commits").cast("string"), F.lit(" commits of group "), F.col("group"),
                 F.lit(" is unknown: the segments holding the committed offsets or the log end then are not in "
                       "the bundle")).alias("summary"),
        F.create_map(F.lit("unknown_commits"), F.col("unknown").cast("double"), F.lit("commits"),
                     F.col("commits").cast("double")).alias("figures")))
    if loss is not None:
        out = out.unionByName(loss.select(
            F.lit("retention_loss").alias("kind"),
            F.when(F.col("kind") == "possibly_skipped", F.lit("info")).otherwise(F.lit("critical")).alias("severity"),
            F.col("group").alias("subject"), F.col("time").alias("start"), F.lit(None).cast("timestamp").alias("end"),
            F.concat(F.lit("group "), F.col("group"),
                     F.when(F.col("kind") == "possibly_skipped", F.lit(" may have lost up to "))
                     .otherwise(F.lit(" lost ")),
                     F.col("records_lost").cast("string"),
                     F.lit(" records of "), F.col("topic"), F.lit("-"), F.col("partition").cast("string"),
                     F.lit(" to retention (committed offset "), F.col("committed_offset").cast("string"),
                     F.lit(", log start "), F.col("log_start_offset").cast("string"),
                     F.when(F.col("exact"), F.lit(")")).otherwise(F.lit("; at most: the log start is the bundle's)")))
            .alias("summary"),
            F.create_map(F.lit("records_lost"), F.col("records_lost").cast("double"), F.lit("committed_offset"),
                         F.col("committed_offset").cast("double"), F.lit("log_start_offset"),
                         F.col("log_start_offset").cast("double"), F.lit("partition"),
                         F.col("partition").cast("double")).alias("figures")))
    if removed is not None:
        out = out.unionByName(removed.select(
            F.lit("offsets_removed").alias("kind"), F.lit("info").alias("severity"), F.col("group").alias("subject"),
            F.col("first_removed").alias("start"), F.col("last_removed").alias("end"),
            F.concat(F.lit("the committed offsets of group "), F.col("group"), F.lit(" for "),
                     F.col("removed_partitions").cast("string"), F.lit(" of its "), F.col("partitions").cast("string"),
                     F.lit(" partitions were removed (expired or deleted) at "), time_text(F.col("first_removed")),
                     F.lit("; its last commit was at "), time_text(F.col("last_commit")),
                     F.when(F.col("all_removed"), F.lit(": the group is gone")).otherwise(F.lit("")))
            .alias("summary"),
            F.create_map(F.lit("removed_partitions"), F.col("removed_partitions").cast("double"),
                         F.lit("partitions"), F.col("partitions").cast("double")).alias("figures")))
    if stuck is not None:
        per_group = stuck.groupBy("group").agg(
            F.countDistinct("topic", "partition").alias("partitions"), F.min("start").alias("start"),
            F.max("end").alias("end"), F.sum("lag_end").alias("lag"), F.max(F.col("to_end").cast("int")).alias("_left"),
            F.sum((F.col("log_end_end") - F.col("log_end_start")).cast("long")).alias("grew"))
        out = out.unionByName(per_group.select(
            F.lit("stuck").alias("kind"), F.lit("warning").alias("severity"), F.col("group").alias("subject"),
            "start", "end",
            F.concat(F.lit("the committed offsets of group "), F.col("group"), F.lit(" stood still on "),
                     F.col("partitions").cast("string"), F.lit(" partition(s) from "), time_text(F.col("start")),
                     F.lit(" to "), time_text(F.col("end")), F.lit(" while the log grew by "),
                     F.col("grew").cast("string"), F.lit(" records (lag then "), F.col("lag").cast("string"),
                     F.lit(" records"),
                     F.when(F.col("_left") == 1, F.lit("; it stopped committing with lag")).otherwise(F.lit("")),
                     F.lit(")")).alias("summary"),
            F.create_map(F.lit("partitions"), F.col("partitions").cast("double"), F.lit("lag"),
                         F.col("lag").cast("double"), F.lit("grew"), F.col("grew").cast("double")).alias("figures")))
    if group_status is not None:
        order = Window.partitionBy("group").orderBy("time")
        flagged = (group_status.where(F.col("min_window") >= burrow_intervals)
                   .withColumn("_next", F.lead("time").over(order))
                   .withColumn("_new", F.coalesce(F.col("status") != F.lag("status").over(order), F.lit(True)))
                   .withColumn("_run", F.sum(F.col("_new").cast("long")).over(
                       order.rowsBetween(Window.unboundedPreceding, 0))))
        runs = (flagged.where(F.col("status").isin("ERR", "WARN"))
                .groupBy("group", "_run", "status").agg(
                    F.min("time").alias("start"), F.max(F.coalesce("_next", "time")).alias("end"),
                    F.count("*").alias("instants"), F.max("stop").alias("stop"), F.max("stall").alias("stall"),
                    F.max("rewind").alias("rewind"), F.max("warn").alias("warn"),
                    F.max("total_lag").alias("max_total_lag")))
        parts = F.concat_ws(", ", *[F.when(F.col(c) > 0, F.concat(F.lit(f"{c.upper()} on "), F.col(c).cast("string"),
                                                                      F.lit(" partition(s)")))
                                    for c in ("stop", "stall", "rewind", "warn")])
        out = out.unionByName(runs.select(
            F.when(F.col("status") == "ERR", F.lit("burrow_err")).otherwise(F.lit("burrow_warn")).alias("kind"),
            F.when(F.col("status") == "ERR", F.lit("warning")).otherwise(F.lit("info")).alias("severity"),
            F.col("group").alias("subject"), "start", "end",
            F.concat(F.lit("Burrow's rules rate group "), F.col("group"), F.lit(" "), F.col("status"),
                     F.lit(" from "), time_text(F.col("start")), F.lit(" to "), time_text(F.col("end")),
                     F.lit(" ("), parts, F.lit("; total lag up to "), F.col("max_total_lag").cast("string"),
                     F.lit(" records)")).alias("summary"),
            F.create_map(*[x for c in ("stop", "stall", "rewind", "warn", "max_total_lag", "instants")
                           for x in (F.lit(c), F.col(c).cast("double"))]).alias("figures")))
    return (out.withColumn("area", F.lit("consumer_lag")).withColumn("subject_type", F.lit("group"))
            .select(*FINDINGS_COLUMNS))


def findings_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """:func:`findings` of a bundle, one per group (and broker), computed once per parameters."""
    from workbench.analysis.findings import empty_findings

    if not _has_commits(tables):
        return empty_findings(tables.spark)
    warn_s = float(params.get("lag_warn_seconds") or DEFAULT_LAG_WARN_S)
    intervals = int(params.get("burrow_intervals") or burrow_rules.DEFAULT_INTERVALS)
    refresh = int(params.get("burrow_refresh_s") or burrow_rules.DEFAULT_REFRESH_S)

    def compute() -> DataFrame:
        commits = commits_for(tables)
        return findings(lags_for(tables), loss=loss_for(tables),
                        removed=removed_groups(commits, removed_for(tables)),
                        cache=page_cache(cache_lags_for(tables), by=("group", "broker")),
                        group_status=group_status_for(tables, params),
                        stuck=stuck_partitions(lags_for(tables), growth_for(tables)),
                        lag_warn_s=warn_s, burrow_intervals=intervals)

    return tables.derive(f"consumer_lag.findings:{warn_s}:{intervals}:{refresh}", compute)


#: A run of overlapping consumer-lag findings of one kind on at least this many groups is one finding
#: (``lag_group_groups``; :func:`workbench.analysis.findings.grouped_findings`).
GROUP_GROUPS = 20

#: How a grouped consumer-lag finding's sentence says what its groups went through.
_GROUPED_PHRASES = {"lag": "read behind the tail", "retention_loss": "lost records to retention",
                    "offsets_removed": "had their committed offsets removed", "burrow_err": "were rated ERR by Burrow",
                    "burrow_warn": "were rated WARN by Burrow", "stuck": "had committed offsets standing still"}
