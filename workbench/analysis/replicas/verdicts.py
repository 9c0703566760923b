"""The replica findings: replicas holding different batches over the offsets they share, or lacking some."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.replicas.compare import REPLICA
from workbench.analysis.text import time_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Overlapping findings of one kind on at least this many replicas are told as one
#: (:func:`workbench.analysis.findings.grouped_findings`).
GROUP_REPLICAS = 20

_KINDS = {
    "divergent": ("replica_divergent", "critical",
                  "holds different contents than node(s) {others} at the same offsets: the replicas diverged"),
    "missing": ("replica_missing", "warning",
                "lacks batches that node(s) {others} hold, inside the offsets it holds"),
}
_GROUPED_PHRASES = {"replica_divergent": "held batches their other replicas did not",
                    "replica_missing": "lacked batches their other replicas held"}


def _subject() -> F.Column:
    """``orders-3 on node 2``, with the cluster named when the bundle's replicas span several."""
    clusters = F.size(F.collect_set(F.coalesce("cluster_id", F.lit(""))).over(Window.partitionBy()))
    part = F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string"), F.lit(" on node "),
                    F.col("node_id").cast("string"))
    return F.when(clusters > 1, F.concat(F.lit("cluster "), F.coalesce("cluster_id", F.lit("?")), F.lit(": "), part)
                  ).otherwise(part)


def findings(comparison: DataFrame) -> DataFrame:
    """One finding per replica and kind of difference (:func:`~.compare.compare_replicas`), every replica's.

    Kinds: ``replica_divergent`` (critical: the replica holds other contents than the majority of its
    partition's replicas at the same offsets; two replicas that differ are both named) and
    ``replica_missing`` (warning: batches the others hold are absent inside its range). The finding
    spans the differing batches' timestamps and names their offsets, records and leader epochs.
    """
    from workbench.analysis.findings import FINDINGS_COLUMNS

    differing = comparison.where(F.col("status") != "same")
    per = differing.groupBy(*REPLICA, "status").agg(
        F.min("base_offset").alias("first_offset"), F.max("last_offset").alias("last_offset"),
        F.count("*").alias("batches"), F.sum("records").alias("records"),
        F.array_sort(F.collect_set("leader_epoch")).alias("epochs"),
        F.array_sort(F.collect_set("others")).alias("_others"),
        F.min("time").alias("start"), F.max("time").alias("end")).withColumn("_subject", _subject())
    nodes = F.array_join(F.array_distinct(F.flatten(F.transform("_others", lambda o: F.split(o, ", ")))), ", ")
    out = None
    for status, (kind, severity, phrase) in _KINDS.items():
        before, after = phrase.split("{others}")
        epochs = F.array_join(F.transform("epochs", lambda e: e.cast("string")), ", ")
        written = F.when(F.col("start").isNotNull(), F.concat(F.lit(", written "), time_text("start"), F.lit(" to "),
                                                              time_text("end"))).otherwise(F.lit(""))
        summary = F.concat(
            F.col("_subject"), F.lit(" " + before), nodes, F.lit(after), F.lit(": offsets "),
            F.col("first_offset").cast("string"), F.lit("–"), F.col("last_offset").cast("string"), F.lit(" ("),
            F.col("batches").cast("string"), F.lit(" batch(es), "),
            F.coalesce(F.col("records").cast("string"), F.lit("?")), F.lit(" record(s), leader epoch(s) "), epochs,
            written, F.lit(")"))
        rows = per.where(F.col("status") == status).select(
            F.lit("replicas").alias("area"), F.lit(kind).alias("kind"), F.lit(severity).alias("severity"),
            F.lit("replica").alias("subject_type"), F.col("_subject").alias("subject"), "start", "end",
            summary.alias("summary"),
            F.create_map(F.lit("first_offset"), F.col("first_offset").cast("double"),
                         F.lit("last_offset"), F.col("last_offset").cast("double"),
                         F.lit("batches"), F.col("batches").cast("double"),
                         F.lit("records"), F.col("records").cast("double")).alias("figures"))
        out = rows if out is None else out.unionByName(rows)
    return out.select(*FINDINGS_COLUMNS)


def area_findings(comparison: DataFrame, *, group_replicas: int = GROUP_REPLICAS) -> DataFrame:
    """:func:`findings`, with many replicas differing at once told as one finding."""
    from workbench.analysis.findings import grouped_findings

    return grouped_findings(findings(comparison), min_subjects=group_replicas, phrases=_GROUPED_PHRASES)
