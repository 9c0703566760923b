"""The tiered-storage findings and the area's one-sentence summary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.text import bytes_text
from workbench.analysis.tier.backlog import backlog_series, episodes, gaps, rollup, segment_history, task_interval_ms
from workbench.analysis.tier.inputs import _tiered_topics_of, copy_attempts
from workbench.analysis.tier.kafka import comparison

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def backlog_threshold_s(tables: Any, params: Mapping[str, Any]) -> float:
    """Seconds a lag must last to be a backlog episode: the ``tier_backlog_s`` parameter, else two task intervals."""
    given = float(params.get("tier_backlog_s") or 0)
    return given if given > 0 else 2 * task_interval_ms(tables) / 1000.0


def _broker_episodes(part_eps: DataFrame, rolled: DataFrame, what: str) -> DataFrame:
    """Overlapping partition episodes merged per broker, with the broker's peak from its roll-up."""
    ends = part_eps.agg(F.max(F.coalesce("end", "start")).alias("_e"))
    eps = part_eps.crossJoin(ends).withColumn("_end", F.coalesce("end", "_e"))
    w = Window.partitionBy("broker").orderBy("start", "_end")
    merged = (eps.withColumn("_reach", F.max("_end").over(w.rowsBetween(Window.unboundedPreceding, -1)))
              .withColumn("_new", F.col("_reach").isNull() | (F.col("start") > F.col("_reach")))
              .withColumn("_grp", F.sum(F.col("_new").cast("int")).over(w.rowsBetween(Window.unboundedPreceding, 0))))
    grouped = merged.groupBy("broker", "_grp").agg(
        F.min("start").alias("start"), F.max("_end").alias("_stop"),
        F.max(F.col("end").isNull()).alias("open"),
        F.sort_array(F.collect_set(F.concat("topic", F.lit("-"), F.col("partition").cast("string")))).alias("parts"),
        F.sum("failed_copies").alias("failed_copies"))
    seg, byt, rec = f"{what}_segments", f"{what}_bytes", f"{what}_records"
    peaks = (grouped.join(rolled.select(F.col("broker").alias("_b"), F.col("time").alias("_t"), seg, byt, rec),
                          (F.col("_b") == F.col("broker")) & (F.col("_t") >= F.col("start"))
                          & (F.col("_t") <= F.col("_stop")), "left")
             .groupBy("broker", "_grp", "start", "_stop", "open", "parts", "failed_copies")
             .agg(F.max(seg).alias("peak_segments"), F.max(byt).alias("peak_bytes"), F.max(rec).alias("peak_records")))
    return peaks.select("broker", "start", F.when(F.col("open"), F.lit(None)).otherwise(F.col("_stop")).alias("end"),
                        ((F.unix_micros("_stop") - F.unix_micros("start")) / F.lit(1e6)).alias("seconds"),
                        "parts", F.col("failed_copies").cast("long"), "peak_segments", "peak_bytes", "peak_records")


def findings(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """Tiered-storage findings of a bundle (computed once per bundle and parameters).

    Kinds: ``upload_backlog`` and ``delete_backlog`` (warning: behind longer than
    :func:`backlog_threshold_s`), ``copy_failed`` and ``copy_unfinished`` (warning), ``offset_gap``
    (critical: :func:`gaps`), ``gauge_unexplained`` (info: :func:`compare`), ``no_remote_metadata``
    (info: tiered topics without any ``__remote_log_metadata`` event, so uploads cannot be judged).
    """
    p = dict(params or {})
    return tables.derive(f"tier.findings:{sorted(p.items())!r}", lambda: _findings(tables, p))


def _findings(tables: Any, p: dict[str, Any]) -> DataFrame:
    from workbench.analysis.findings import FINDINGS_COLUMNS, FINDINGS_SCHEMA, empty_findings

    spark = tables.spark
    out = empty_findings(spark)
    topics = _tiered_topics_of(tables)
    if not topics:
        return out
    with_events = {r["topic"] for r in tables["remote"].select("topic").distinct().collect()}
    silent = [t for t in topics if t not in with_events]
    if silent:
        out = out.unionByName(spark.createDataFrame([(
            "tier", "no_remote_metadata", "info", "topic", t, None, None,
            f"topic {t} has remote.storage.enable=true but the bundle holds no __remote_log_metadata event for it: "
            "its uploads and deletions cannot be judged", {}) for t in silent], FINDINGS_SCHEMA))
    series = backlog_series(tables, p)
    history = segment_history(tables, p)
    threshold = backlog_threshold_s(tables, p)
    by_broker = rollup(series, by=("broker",))
    when = F.date_format("start", "yyyy-MM-dd HH:mm:ss")
    for what, kind in (("upload", "upload_backlog"), ("delete", "delete_backlog")):
        eps = _broker_episodes(episodes(series, what, min_seconds=threshold), by_broker, what)
        verb = "uploads on broker " if what == "upload" else "deletions on broker "
        summary = F.concat(
            F.lit(verb), F.col("broker").cast("string"), F.lit(" fell "), F.col("peak_segments").cast("string"),
            F.lit(" segment(s) ("), bytes_text("peak_bytes"), F.lit(", "), F.col("peak_records").cast("string"),
            F.lit(" records) behind for "), F.format_string("%.0f s", "seconds"), F.lit(" after "), when,
            F.lit(" UTC"), F.when(F.col("end").isNull(), F.lit(" (still behind at the end of the bundle)"))
            .otherwise(F.lit("")),
            F.lit(" ("), F.size("parts").cast("string"), F.lit(" partition(s): "),
            F.array_join(F.slice("parts", 1, 5), ", "),
            F.when(F.size("parts") > 5, F.lit(", ...")).otherwise(F.lit("")),
            F.lit(")"),
            F.when(F.col("failed_copies") > 0, F.concat(F.lit("; "), F.col("failed_copies").cast("string"),
                                                        F.lit(" copy attempt(s) failed meanwhile")))
            .otherwise(F.lit("")))
        figures = F.create_map(
            F.lit("seconds"), F.col("seconds").cast("double"),
            F.lit("peak_segments"), F.col("peak_segments").cast("double"),
            F.lit("peak_bytes"), F.col("peak_bytes").cast("double"),
            F.lit("peak_records"), F.col("peak_records").cast("double"),
            F.lit("partitions"), F.size("parts").cast("double"),
            F.lit("failed_copies"), F.col("failed_copies").cast("double"))
        out = out.unionByName(eps.select(
            F.lit("tier").alias("area"), F.lit(kind).alias("kind"), F.lit("warning").alias("severity"),
            F.lit("broker").alias("subject_type"), F.col("broker").cast("string").alias("subject"),
            "start", "end", summary.alias("summary"), figures.alias("figures")))

    att = copy_attempts(tables["remote"]).where(F.col("topic").isin(topics))
    subject = F.concat("topic", F.lit("-"), F.col("partition").cast("string"))
    failed = (att.where(F.col("outcome") == "failed").groupBy("topic", "partition").agg(
        F.count("*").alias("n"), F.min("copy_started").alias("start"), F.max("ended").alias("end"),
        F.min("start_offset").alias("lo"), F.max("end_offset").alias("hi"),
        F.sort_array(F.collect_set("broker")).alias("brokers")))
    retried = (history.where(F.col("failed_attempts") > 0).groupBy("topic", "partition").agg(
        F.max("uploaded").alias("recovered"), F.sum(F.col("uploaded").isNull().cast("int")).alias("not_uploaded")))
    failed = failed.join(retried, ["topic", "partition"], "left")
    out = out.unionByName(failed.select(
        F.lit("tier").alias("area"), F.lit("copy_failed").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("partition").alias("subject_type"), subject.alias("subject"), "start", "end",
        F.concat(F.col("n").cast("string"), F.lit(" copy attempt(s) of partition "), subject,
                 F.lit(" (offsets "), F.col("lo").cast("string"), F.lit("-"), F.col("hi").cast("string"),
                 F.lit(") failed between "), F.date_format("start", "HH:mm:ss"), F.lit(" and "),
                 F.date_format("end", "HH:mm:ss"), F.lit(" UTC (COPY_SEGMENT_STARTED without COPY_SEGMENT_FINISHED, "
                                                          "broker "),
                 F.array_join(F.col("brokers").cast("array<string>"), ", "),
                 F.lit(")"),
                 F.when(F.coalesce(F.col("not_uploaded"), F.lit(0)) == 0, F.concat(
                     F.lit("; retries uploaded them by "), F.date_format("recovered", "HH:mm:ss"), F.lit(" UTC")))
                 .otherwise(F.lit("; some were still not uploaded at the end of the bundle"))).alias("summary"),
        F.create_map(F.lit("attempts"), F.col("n").cast("double")).alias("figures")))
    unfinished = att.where(F.col("outcome") == "unfinished")
    out = out.unionByName(unfinished.select(
        F.lit("tier").alias("area"), F.lit("copy_unfinished").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("partition").alias("subject_type"), subject.alias("subject"), F.col("copy_started").alias("start"),
        F.lit(None).cast("timestamp").alias("end"),
        F.concat(F.lit("the copy of offsets "), F.col("start_offset").cast("string"), F.lit("-"),
                 F.col("end_offset").cast("string"), F.lit(" of partition "), subject, F.lit(" (segment "),
                 F.col("segment_id"), F.lit(") started at "), F.date_format("copy_started", "HH:mm:ss"),
                 F.lit(" UTC and never finished by the end of the bundle")).alias("summary"),
        F.create_map(F.lit("bytes"), F.col("size_bytes").cast("double")).alias("figures")))
    holes = gaps(history)
    out = out.unionByName(holes.select(
        F.lit("tier").alias("area"), F.lit("offset_gap").alias("kind"), F.lit("critical").alias("severity"),
        F.lit("partition").alias("subject_type"), subject.alias("subject"), "start", "end",
        F.concat(F.lit("offsets "), F.col("base_offset").cast("string"), F.lit("-"), F.col("end_offset").cast("string"),
                 F.lit(" of partition "), subject,
                 F.lit(" existed nowhere (neither local nor in remote storage) from "),
                 F.date_format("start", "HH:mm:ss"), F.lit(" UTC"),
                 F.when(F.col("end").isNotNull(), F.concat(F.lit(" to "), F.date_format("end", "HH:mm:ss"),
                                                           F.lit(" UTC"))).otherwise(F.lit("")),
                 F.lit(": "), F.col("evidence")).alias("summary"),
        F.create_map(F.lit("records"), F.col("records").cast("double"), F.lit("bytes"),
                     F.col("bytes").cast("double")).alias("figures")))
    cmp = comparison(tables, p)
    if cmp is not None:
        bad = cmp.where(F.col("reason") == "unexplained").groupBy("metric", "broker").agg(
            F.count("*").alias("n"), F.min("time").alias("start"), F.max("time").alias("end"),
            F.first("note").alias("example"))
        out = out.unionByName(bad.select(
            F.lit("tier").alias("area"), F.lit("gauge_unexplained").alias("kind"), F.lit("info").alias("severity"),
            F.lit("node").alias("subject_type"), F.col("broker").cast("string").alias("subject"), "start", "end",
            F.concat(F.col("n").cast("string"), F.lit(" sample(s) of broker "), F.col("broker").cast("string"),
                     F.lit("'s "), F.col("metric"), F.lit(" differ from the computed value without explanation, e.g. "),
                     F.col("example")).alias("summary"),
            F.create_map(F.lit("samples"), F.col("n").cast("double")).alias("figures")))
    return out.select(*FINDINGS_COLUMNS)


def summary_sentence(tables: Any, params: Mapping[str, Any] | None = None) -> str:
    """One plain sentence on the whole bundle: uploads, deletions and missing ranges.

    Examples
    --------
    >>> summary_sentence(tables)   # doctest: +SKIP
    'uploads on broker 2 fell 8 segment(s) (7.7 MiB) behind for 44 s after 07:21:47 (2 episodes in all); ...'
    """
    p = dict(params or {})
    if not _tiered_topics_of(tables):
        return "no tiered-storage topic in this bundle"
    series = backlog_series(tables, p)
    threshold = backlog_threshold_s(tables, p)
    by_broker = rollup(series, by=("broker",))
    parts = []
    for what, verb in (("upload", "uploads"), ("delete", "deletes")):
        eps = _broker_episodes(episodes(series, what, min_seconds=threshold), by_broker, what).orderBy(
            F.col("peak_segments").desc(), "start").collect()
        if not eps:
            parts.append(f"{verb} kept pace")
            continue
        worst = eps[0]
        more = f" ({len(eps)} episodes in all)" if len(eps) > 1 else ""
        parts.append(f"{verb} on broker {worst['broker']} fell {worst['peak_segments']} segment(s) "
                     f"({(worst['peak_bytes'] or 0) / 1048576:.1f} MiB) behind for {worst['seconds']:.0f} s after "
                     f"{worst['start']:%H:%M:%S}{more}")
    holes = gaps(segment_history(tables, p)).count()
    parts.append("no offset range is missing" if holes == 0 else f"{holes} offset range(s) existed nowhere for a while")
    return "; ".join(parts)
