"""The mirror area's findings and their sentences, and the sentences naming what a bundle lacks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.text import bytes_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from workbench.analysis.mirror.result import MirrorAnalysis


def missing_inputs(result: MirrorAnalysis, tables: Any) -> list[str]:
    """Plain sentences naming what the bundle lacks for a complete mirror answer (empty: nothing)."""
    out = []
    if not result.flows:
        return ["No MirrorMaker 2 topic and no MirrorMaker 2 configuration in the bundle: nothing to say about "
                "replication."]
    for f in result.flows:
        flow = f"{f.source}->{f.target}"
        if not any(a == f.source for a in result.clusters.values()):
            out.append(f"No node of the source cluster {f.source} ({flow}) in the bundle: its log end offsets "
                       "over time cannot be computed.")
        if not any(a == f.target for a in result.clusters.values()):
            out.append(f"No node of the target cluster {f.target} ({flow}) in the bundle: MirrorMaker 2's Connect "
                       "offsets, its checkpoints and the target group offsets live there.")
    per_flow = {(r[0], r[1], r[2]) for r in tables.mirror.where("source_alias is not null and target_alias is not null")
                .select("source_alias", "target_alias", "kind").distinct().collect()}
    for f in result.flows:
        flow = f"{f.source}->{f.target}"
        if (f.source, f.target, "source_offset") not in per_flow:
            out.append(f"No Connect source offsets of MirrorMaker 2 for {flow} (mm2-offsets.{f.source}.internal, on "
                       "the target cluster): its position is taken from the offset syncs alone.")
        if (f.source, f.target, "offset_sync") not in per_flow:
            out.append(f"No offset syncs for {flow} (mm2-offset-syncs.{f.target}.internal): offset translation "
                       "cannot be checked, and MirrorMaker 2's position is known only at its Connect commits.")
        if (f.source, f.target, "checkpoint") not in per_flow:
            out.append(f"No checkpoints for {flow} ({f.source}.checkpoints.internal, on the target cluster): what "
                       "MirrorMaker 2 published for the consumer groups cannot be audited.")
    if result.partitions.limit(1).count() and result.growth.limit(1).count() == 0:
        out.append("No segment of the replicated topics on the source cluster's nodes: no log end offsets.")
    if result.partitions.limit(1).count() and result.observations.limit(1).count() == 0:
        out.append("No record of MirrorMaker 2's position (Connect source offsets or offset syncs): the lag cannot "
                   "be computed, only the source log's growth.")
    return out


def findings(result: MirrorAnalysis, spark: SparkSession | None = None) -> DataFrame:
    """The mirror area's findings.

    * ``mirror_outage`` (critical): MirrorMaker 2 replicated nothing for a flow, from start to end,
      with the partition that fell furthest behind;
    * ``mirror_partial_outage`` (warning): a partition was not replicated while others of its flow were;
    * ``mirror_failover_reread`` / ``mirror_failover_skip`` (warning / critical): the moment a consumer
      group failing over to the target would have re-read (skipped) the most records;
    * ``mirror_translation_stale`` (warning): checkpoints of a group stopped while it committed;
    * ``mirror_inputs_missing`` (info): what the bundle lacks (never a claim of health without inputs).

    Returns
    -------
    DataFrame
        Rows of :data:`workbench.analysis.findings.FINDINGS_SCHEMA` (area ``mirror``).
    """
    from workbench.analysis.findings import FINDINGS_COLUMNS

    spark = spark or result.timeline.sparkSession
    when = lambda c: F.concat(F.date_format(c, "yyyy-MM-dd HH:mm:ss"), F.lit(" UTC"))  # noqa: E731
    flow_name = F.concat("source_alias", F.lit("->"), "target_alias")
    part = F.concat("topic", F.lit("-"), F.col("partition").cast("string"))
    eps = result.episodes
    # full outages, each with the partition that peaked highest within it
    o = result.outages.alias("o")
    e = eps.alias("e")
    peaks = (o.join(e, ["source_alias", "target_alias"])
             .where((F.col("e.start") < F.col("o.end")) & (F.col("e.end") > F.col("o.start")))
             .withColumn("_r", F.row_number().over(Window.partitionBy("source_alias", "target_alias", "o.start")
                                                   .orderBy(F.col("e.peak_records").desc_nulls_last(), "e.topic",
                                                            "e.partition")))
             .where("_r = 1")
             .select("source_alias", "target_alias", F.col("o.start").alias("start"), F.col("o.end").alias("end"),
                     F.col("o.seconds").alias("seconds"), F.col("o.open").alias("open"),
                     F.size("o.partitions").alias("n"), F.col("e.topic").alias("topic"),
                     F.col("e.partition").alias("partition"), F.col("e.peak_records").alias("peak_records"),
                     F.col("e.peak_bytes").alias("peak_bytes"), F.col("e.peak_age_s").alias("peak_age_s"),
                     F.col("e.catch_up_s").alias("catch_up_s")))
    outage = peaks.select(
        F.lit("mirror_outage").alias("kind"), F.lit("critical").alias("severity"), F.lit("flow").alias("subject_type"),
        flow_name.alias("subject"), "start", "end",
        F.concat(F.lit("MirrorMaker 2 ("), flow_name, F.lit(") replicated nothing for "),
                 F.format_string("%.1f", "seconds"), F.lit(" s from "), when("start"),
                 F.when(F.col("open"), F.lit(" (still so at the end of the data)")).otherwise(F.lit("")),
                 F.lit("; partition "), part, F.lit(" peaked at "), F.col("peak_records").cast("string"),
                 F.lit(" records ("), bytes_text("peak_bytes"), F.lit(", "), F.format_string("%.0f", "peak_age_s"),
                 F.lit(" s) behind"),
                 F.when(F.col("catch_up_s").isNotNull(),
                        F.concat(F.lit(" and caught up "), F.format_string("%.1f", "catch_up_s"),
                                 F.lit(" s after replication resumed"))).otherwise(F.lit(""))).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("partitions"), F.col("n").cast("double"),
                     F.lit("peak_records"), F.col("peak_records").cast("double"),
                     F.lit("peak_bytes"), F.col("peak_bytes").cast("double"),
                     F.lit("peak_age_s"), F.col("peak_age_s"),
                     F.lit("catch_up_s"), F.col("catch_up_s")).alias("figures"))
    partial = eps.where(F.col("scope") == "partial").select(
        F.lit("mirror_partial_outage").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("partition").alias("subject_type"), part.alias("subject"), "start", "end",
        F.concat(F.lit("Partition "), part, F.lit(" ("), flow_name, F.lit(") was not replicated for "),
                 F.format_string("%.1f", "seconds"), F.lit(" s from "), when("start"),
                 F.lit(" while other partitions of the flow were"),
                 F.when(F.col("open"), F.lit(" (still so at the end of the data)")).otherwise(F.lit("")),
                 F.lit("; it peaked at "), F.coalesce(F.col("peak_records").cast("string"), F.lit("?")),
                 F.lit(" records ("), F.coalesce(bytes_text("peak_bytes"), F.lit("? bytes")), F.lit(", "),
                 F.format_string("%.0f", "peak_age_s"), F.lit(" s) behind"),
                 F.when(F.col("catch_up_s").isNotNull(),
                        F.concat(F.lit(" and caught up "), F.format_string("%.1f", "catch_up_s"),
                                 F.lit(" s after replication resumed"))).otherwise(F.lit(""))).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("peak_records"), F.col("peak_records").cast("double"),
                     F.lit("peak_bytes"), F.col("peak_bytes").cast("double"), F.lit("peak_age_s"), F.col("peak_age_s"),
                     F.lit("catch_up_s"), F.col("catch_up_s")).alias("figures"))
    # failover: per group, the boundary instant where the whole group would have re-read (skipped) the most
    grid = (result.audit.where("boundary")
            .groupBy("source_alias", "target_alias", "group", "time")
            .agg(F.sum("reread").alias("reread"), F.sum("skip").alias("skip"),
                 F.sort_array(F.collect_list(F.struct(F.col("reread").alias("n"),
                                                      F.concat("target_topic", F.lit("-"),
                                                               F.col("partition").cast("string")).alias("p"))),
                              asc=False).alias("_parts")))

    def failover(measure: str, kind: str, severity: str, verb: str) -> DataFrame:
        top = (grid.where(F.col(measure) > 0)
               .withColumn("_r", F.row_number().over(Window.partitionBy("source_alias", "target_alias", "group")
                                                     .orderBy(F.col(measure).desc(), "time")))
               .where("_r = 1"))
        return top.select(
            F.lit(kind).alias("kind"), F.lit(severity).alias("severity"), F.lit("group").alias("subject_type"),
            F.col("group").alias("subject"), F.col("time").alias("start"), F.lit(None).cast("timestamp").alias("end"),
            F.concat(F.lit("A consumer of group "), F.col("group"), F.lit(" failing over to "), F.col("target_alias"),
                     F.lit(" at "), when("time"), F.lit(f" would have {verb} "), F.col(measure).cast("string"),
                     F.lit(" records (MirrorMaker 2's offsets for it on the target were behind what it had "
                           "committed on the source)" if measure == "reread"
                           else " records (its offsets on the target were ahead of what it had committed on the "
                                "source)")).alias("summary"),
            F.create_map(F.lit(measure), F.col(measure).cast("double")).alias("figures"))

    reread = failover("reread", "mirror_failover_reread", "warning", "re-read")
    skip = failover("skip", "mirror_failover_skip", "critical", "skipped")
    stale_eps = _stale_episodes(result.audit)
    stale = stale_eps.select(
        F.lit("mirror_translation_stale").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("group").alias("subject_type"), F.col("group").alias("subject"), "start", "end",
        F.concat(F.lit("MirrorMaker 2 published no checkpoint for group "), F.col("group"), F.lit(" on "),
                 F.col("partitions"), F.lit(" for "), F.format_string("%.1f", "seconds"),
                 F.lit(" s from "), when("start"), F.lit(" while the group committed on the source")).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds")).alias("figures"))
    out = outage.unionByName(partial).unionByName(reread).unionByName(skip).unionByName(stale)
    if result.missing:
        missing = spark.createDataFrame(
            [("mirror_inputs_missing", "info", "bundle", "mirror inputs", None, None, text, {}) for text in
             result.missing],
            "kind string, severity string, subject_type string, subject string, start timestamp, end timestamp, "
            "summary string, figures map<string,double>")
        out = out.unionByName(missing)
    return out.withColumn("area", F.lit("mirror")).select(*FINDINGS_COLUMNS)


def _stale_episodes(audit: DataFrame) -> DataFrame:
    """Intervals in which a group's translation was stale on some partition (merged over partitions)."""
    key = ["source_alias", "target_alias", "group", "topic", "partition"]
    order = Window.partitionBy(*key).orderBy("time")
    flagged = (audit.withColumn("_on", F.coalesce(F.col("stale"), F.lit(False)))
               .withColumn("_next", F.lead("time").over(order))
               .withColumn("_begin", F.col("_on") & ~F.coalesce(F.lag("_on").over(order), F.lit(False)))
               .withColumn("_run", F.sum(F.col("_begin").cast("int"))
                           .over(order.rowsBetween(Window.unboundedPreceding, 0)))
               .where("_on"))
    runs = (flagged.groupBy(*key, "_run").agg(F.min("time").alias("start"),
                                               F.max(F.coalesce("_next", "time")).alias("end")))
    return (runs.groupBy("source_alias", "target_alias", "group")
            .agg(F.min("start").alias("start"), F.max("end").alias("end"),
                 F.concat_ws(", ", F.array_sort(F.collect_set(F.concat("topic", F.lit("-"),
                                                                       F.col("partition").cast("string")))))
                 .alias("partitions"))
            .withColumn("seconds", (F.unix_micros("end") - F.unix_micros("start")) / F.lit(1e6)))
