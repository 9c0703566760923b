"""The replicas area's contract: its analysis of a bundle, findings, view frames and key figures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.replicas.compare import compare_replicas, replica_ranges, replica_summary
from workbench.analysis.replicas.epochs import (
    election_losses,
    leader_history,
    replica_epochs,
    unclean_elections,
    unclean_findings,
)
from workbench.analysis.replicas.inputs import compaction
from workbench.analysis.replicas.truncations import groups_beyond, truncations
from workbench.analysis.replicas.verdicts import area_findings as grouped_area_findings
from workbench.spark.registry import derived_with

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The view draws at most this many partitions (most differences first) and differing batches (also
#: unclean elections and replica epochs).
VIEW_PARTITIONS = 200
VIEW_DIFFERENCES = 2000


@dataclass(frozen=True, eq=False)   # equal only to itself: no comparison of whole tables
class ReplicasAnalysis:
    """The replicas area's analysis of one bundle (:func:`analyse`): each replica's range, the comparison,
    every partition's leader epochs, each replica's epoch history, the truncations the brokers logged,
    what each unclean election lost and the consumer groups that had read past it."""

    tables: Any
    params: Mapping[str, Any]
    ranges: DataFrame
    comparison: DataFrame
    history: DataFrame
    epochs: DataFrame
    losses: DataFrame
    truncations: DataFrame
    groups: DataFrame


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> ReplicasAnalysis:
    """Each replica's range (:func:`~.compare.replica_ranges`) and every compared batch
    (:func:`~.compare.compare_replicas`) of the bundle's ``replica_batches``; the metadata log's leader
    epochs (:func:`~.epochs.leader_history`) and each replica's checkpoint against them
    (:func:`~.epochs.replica_epochs`), the brokers' truncations (:func:`~.truncations.truncations`), what
    each unclean election lost (:func:`~.epochs.election_losses`: from the old leader's copy, or its
    truncation line) and the groups committed past it (:func:`~.truncations.groups_beyond`); kept with its
    tables."""
    batches = tables["replica_batches"]
    ranges = derived_with(tables, "replicas.ranges", lambda: replica_ranges(batches, compaction(tables)))
    comparison = derived_with(tables, "replicas.comparison", lambda: compare_replicas(batches, ranges))
    history = derived_with(tables, "replicas.history", lambda: leader_history(tables["metadata"]))
    epochs = replica_epochs(tables["leader_epochs"], history, ranges)
    cuts = derived_with(tables, "replicas.truncations", lambda: truncations(tables["events"]))
    losses = derived_with(tables, "replicas.losses", lambda: election_losses(history, epochs, batches, cuts))
    groups = derived_with(tables, "replicas.groups", lambda: groups_beyond(tables["offsets"], losses))
    return ReplicasAnalysis(tables, dict(params or {}), ranges, comparison, history, epochs, losses, cuts, groups)


def area_findings(result: ReplicasAnalysis) -> DataFrame:
    """The area's findings of one analysis: replicas that differ (:func:`~.verdicts.area_findings`) and
    elections from outside the ISR (:func:`~.epochs.unclean_findings`)."""
    return grouped_area_findings(result.comparison).unionByName(
        unclean_findings(result.history, result.losses, result.groups))


def view_frames(result: ReplicasAnalysis) -> dict[str, DataFrame]:
    """What the replicas view draws: each replica's range of the partitions with most differences, and
    their differing batches; the elections from outside the ISR and each replica's epochs (unclean first);
    the brokers' truncations and the groups committed past a lost log end."""
    summary = replica_summary(result.ranges, result.comparison)
    part = ("cluster_id", "topic", "partition")
    score = (summary.groupBy(*part).agg((F.sum("divergent_batches") + F.sum("missing_batches")).alias("_d"))
             .withColumn("_n", F.row_number().over(Window.orderBy(F.col("_d").desc(), *part)))
             .where(F.col("_n") <= VIEW_PARTITIONS)
             .select(*(F.col(c).alias(f"_s_{c}") for c in part), "_n"))
    ranges = (summary.join(score, [F.col(c).eqNullSafe(F.col(f"_s_{c}")) for c in part])
              .orderBy("_n", "node_id").select(*summary.columns))
    order = Window.orderBy(F.col("status").desc(), "topic", "partition", "base_offset", "node_id")
    differences = (result.comparison.where(F.col("status") != "same")
                   .withColumn("_n", F.row_number().over(order)).where(F.col("_n") <= VIEW_DIFFERENCES)
                   .select("cluster_id", "topic", "partition", "node_id", F.col("status").alias("kind"), "base_offset",
                           "last_offset", "records", "leader_epoch", "time", "others"))
    elections = (unclean_elections(result.history, result.losses).orderBy("time", "topic", "partition")
                 .limit(VIEW_DIFFERENCES))
    epochs = result.epochs.orderBy(F.col("unclean").desc_nulls_last(), "topic", "partition", "node_id", "epoch")
    cuts = result.truncations.orderBy("time", "topic", "partition", "node_id").limit(VIEW_DIFFERENCES)
    groups = result.groups.orderBy("elected", "topic", "partition", "group").limit(VIEW_DIFFERENCES)
    return {"ranges": ranges, "differences": differences, "elections": elections,
            "epochs": epochs.limit(VIEW_DIFFERENCES), "truncations": cuts, "groups": groups}


def key_figures(result: ReplicasAnalysis) -> dict[str, Any]:
    """The summary's figures: partitions and replicas compared, batches compared, divergent and missing,
    elections from outside the ISR."""
    row = result.comparison.agg(
        F.countDistinct(F.coalesce("cluster_id", F.lit("")), "topic", "partition").alias("partitions"),
        F.sum((F.col("status") != "missing").cast("long")).alias("compared"),
        F.sum((F.col("status") == "divergent").cast("long")).alias("divergent"),
        F.sum((F.col("status") == "missing").cast("long")).alias("missing")).collect()[0]
    return {"partitions_compared": row["partitions"] or 0, "batches_compared": row["compared"] or 0,
            "divergent_batches": row["divergent"] or 0, "missing_batches": row["missing"] or 0,
            "unclean_elections": result.history.where(F.col("unclean")).count()}


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("replicas", title="Replica consistency", order=7, analyse=analyse, findings=area_findings,
                  tables=("replica_batches",), frames=view_frames, key_figures=key_figures)


_register()
