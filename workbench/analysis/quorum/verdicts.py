"""The quorum findings and their sentences: commit stalls, new leaders, nodes left behind, missing inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.quorum.appends import NoOpWriting

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame



def _at(column: str) -> Column:
    return F.concat(F.date_format(column, "yyyy-MM-dd HH:mm:ss"), F.lit(" UTC"))


def _node_name(role: Column, node: Column) -> Column:
    return F.concat(F.coalesce(role, F.lit("node")), F.lit(" "), node.cast("string"))


def findings(writing: NoOpWriting, stall_rows: DataFrame, episodes: DataFrame, timeline: DataFrame, *,
             missing: tuple[str, ...] = ()) -> DataFrame:
    """Quorum findings: commit stalls, new leaders, nodes left behind, and what could not be judged.

    * ``commit_stall`` (critical): the leader appended nothing for longer than the stall
      threshold; the summary names the leader before and the one that led the next epoch;
    * ``leader_elected`` (info): a new epoch was led by a controller (every epoch after the
      log's first);
    * ``node_behind`` (warning): a divergence episode: a node lacked records the leader had
      appended, for how long and by how much, and the fence and unfence of a broker meanwhile;
    * ``no_noop_records`` (info): the cluster writes no NoOpRecords: a quiet log is no evidence,
      and no stall is claimed;
    * ``input_missing`` (info): one per input the bundle lacks (``missing``), naming what is not
      judged without it.

    Parameters
    ----------
    writing : NoOpWriting
        From :func:`noop_writing`.
    stall_rows, episodes, timeline : DataFrame
        From :func:`stalls`, :func:`divergence_episodes` and :func:`leader_timeline`.
    missing : tuple of str
        Plain-language notes of inputs the bundle lacks.

    Returns
    -------
    DataFrame
        Rows of :data:`workbench.analysis.findings.FINDINGS_SCHEMA` (area ``quorum``; subject
        type ``quorum`` or ``node``).

    Examples
    --------
    >>> findings(writing, stalls(...), episodes, timeline).select("summary").show(truncate=False)  # doctest: +SKIP
    """
    from workbench.analysis.findings import FINDINGS_COLUMNS, FINDINGS_SCHEMA

    spark = timeline.sparkSession
    next_leader = F.when(F.col("new_epoch") & F.col("leader_after").isNotNull(), F.concat(
        F.lit("; controller "), F.col("leader_after").cast("string"), F.lit(" led epoch "),
        F.col("epoch_after").cast("string"), F.lit(" from "), _at("end"))).otherwise(F.lit(""))
    before = F.when(F.col("leader_before").isNotNull(), F.concat(
        F.lit(" (leader: controller "), F.col("leader_before").cast("string"), F.lit(", epoch "),
        F.col("epoch_before").cast("string"), F.lit(")"))).otherwise(F.lit(""))
    stall_f = stall_rows.select(
        F.lit("commit_stall").alias("kind"), F.lit("critical").alias("severity"), F.lit("quorum").alias("subject_type"),
        F.lit("metadata log").alias("subject"), "start", "end",
        F.concat(F.lit("the quorum committed nothing for "), F.format_string("%.1f", "seconds"), F.lit(" s from "),
                 _at("start"), before, next_leader, F.lit(" (NoOpRecords keep a healthy log moving every "),
                 F.lit(str(writing.idle_ms)), F.lit(" ms)")).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("threshold_ms"), F.col("threshold_ms"),
                     F.lit("epoch_after"), F.col("epoch_after").cast("double")).alias("figures"))
    first = Window.partitionBy(F.lit(1)).orderBy("epoch")
    elected = (timeline.where(F.col("start").isNotNull())
               .withColumn("_n", F.row_number().over(first)).where(F.col("_n") > 1)
               .select(F.lit("leader_elected").alias("kind"), F.lit("info").alias("severity"),
                       F.lit("node").alias("subject_type"), F.col("leader").cast("string").alias("subject"),
                       "start", "end",
                       F.concat(F.when(F.col("leader") >= 0,
                                       F.concat(F.lit("controller "), F.col("leader").cast("string")))
                                .otherwise(F.lit("no known controller")),
                                F.lit(" led epoch "), F.col("epoch").cast("string"), F.lit(" from "), _at("start"),
                                F.when(F.col("skipped_epochs") > 0, F.concat(
                                    F.lit(" after "), F.col("skipped_epochs").cast("string"),
                                    F.lit(" epoch(s) that elected no leader who wrote"))).otherwise(F.lit("")))
                       .alias("summary"),
                       F.create_map(F.lit("epoch"), F.col("epoch").cast("double"), F.lit("records"),
                                    F.col("records").cast("double")).alias("figures")))
    fenced = F.when(F.col("fenced_at").isNotNull(), F.concat(
        F.lit("; fenced at "), _at("fenced_at"),
        F.when(F.col("unfenced_at").isNotNull(), F.concat(F.lit(", unfenced at "), _at("unfenced_at")))
        .otherwise(F.lit("")))).otherwise(F.lit(""))
    behind = episodes.select(
        F.lit("node_behind").alias("kind"), F.lit("warning").alias("severity"), F.lit("node").alias("subject_type"),
        F.col("node_id").cast("string").alias("subject"), "start", "end",
        F.concat(_node_name(F.col("role"), F.col("node_id")), F.lit(" fell behind the metadata log for "),
                 F.format_string("%.1f", "seconds"), F.lit(" s from "), _at("start"),
                 F.when(F.col("open"), F.lit(" (still behind at its last observation)")).otherwise(F.lit("")),
                 F.lit(": up to "), F.coalesce(F.col("peak_offset_lag"), F.lit(0)).cast("string"),
                 F.lit(" offsets and "), F.format_string("%.1f", F.coalesce("peak_time_lag_ms", F.lit(0)) / 1000.0),
                 F.lit(" s behind the leader"), fenced).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"),
                     F.lit("peak_offset_lag"), F.col("peak_offset_lag").cast("double"),
                     F.lit("peak_time_lag_ms"), F.col("peak_time_lag_ms").cast("double")).alias("figures"))
    notes: list[tuple] = []
    if not writing.writes_noops:
        notes.append(("no_noop_records", "info", "quorum", "metadata log", None, None, writing.reason(),
                      {"noop_records": float(writing.noop_records)}))
    for note in missing:
        notes.append(("input_missing", "info", "quorum", "bundle", None, None, note, {}))
    extra = spark.createDataFrame([(*n[:7], n[7]) for n in notes] if notes else [],
                                  "kind string, severity string, subject_type string, subject string, start timestamp, "
                                  "end timestamp, summary string, figures map<string,double>")
    out = stall_f.unionByName(behind).unionByName(elected).unionByName(extra)
    return spark.createDataFrame([], FINDINGS_SCHEMA).unionByName(
        out.withColumn("area", F.lit("quorum")).select(*FINDINGS_COLUMNS))
