"""The offset-translation audit: what MirrorMaker 2 translated for each synced group, and what a failover would do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.logs import asof
from workbench.analysis.mirror.flows import Flow, synced_groups
from workbench.analysis.mirror.lag import DEFAULT_WINDOW_S, _grid

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

AUDIT_COLUMNS = (
    "source_alias", "target_alias", "group", "topic", "target_topic", "partition", "time", "boundary",
    "source_committed", "source_commit_time", "checkpoint_time", "checkpoint_upstream", "checkpoint_downstream",
    "target_committed", "target_commit_time", "exact_downstream", "checkpoint_exact", "translation_gap",
    "checkpoint_age_s", "stale", "behind_sync_cadence", "failover_offset", "failover_from", "reread", "skip",
    "status",
)


def effective_commits(offsets: DataFrame, nodes: Sequence[int]) -> DataFrame:
    """One row per effective offset commit (or deletion) in the ``__consumer_offsets`` of the given nodes.

    Returns
    -------
    DataFrame
        ``group, topic, partition, time, committed_offset`` (null for a tombstone), each record
        once however many replicas hold it; transactional commits count once committed.
    """
    require_columns(offsets, ("node_id", "offsets_partition", "offset", "timestamp", "record_kind", "is_transactional",
                              "txn_outcome", "deleted", "group", "topic", "partition", "committed_offset"),
                    "effective_commits")
    effective = ((F.col("record_kind") != "TxnMarker")
                 & (~F.coalesce(F.col("is_transactional"), F.lit(False)) | (F.col("txn_outcome") == "COMMIT")))
    return (offsets.where(F.col("node_id").isin([int(n) for n in nodes]) & effective & F.col("group").isNotNull()
                          & F.col("topic").isNotNull() & F.col("partition").isNotNull())
            .dropDuplicates(["offsets_partition", "offset"])
            .select("group", "topic", "partition", F.col("timestamp").alias("time"),
                    F.when(~F.coalesce(F.col("deleted"), F.lit(False)), F.col("committed_offset"))
                    .alias("committed_offset"),
                    F.col("offset").alias("_ord")))


def translation_audit(mirror: DataFrame, observations: DataFrame, source_commits: DataFrame,
                      target_commits: DataFrame, flows: Sequence[Flow], *, window_s: float = DEFAULT_WINDOW_S,
                      stale_s: float = 0.0, groups: Sequence[str] | None = None) -> DataFrame:
    """For each synced group and partition, over time: what MirrorMaker 2 translated, and what a failover would do.

    At every instant a commit or checkpoint changed (and at every window boundary), for each consumer
    group MirrorMaker 2's checkpoint connector synced and each partition:

    * ``source_committed``: the group's committed offset on the source cluster;
    * ``checkpoint_upstream``, ``checkpoint_downstream``: the last checkpoint MM2 published (the
      source offset it saw and its translation on the target);
    * ``target_committed``: the group's committed offset on the target cluster (MM2's group offset
      sync, or the group's own commits there);
    * ``exact_downstream``: the target offset of the record at ``source_committed``, from the offset
      sync with the largest upstream offset at or below it (MirrorMaker 2 writes a sync whenever
      upstream offsets skip, so records between two syncs are consecutive on both sides);
      ``checkpoint_exact`` likewise for ``checkpoint_upstream``, and ``translation_gap`` =
      ``checkpoint_exact - checkpoint_downstream`` (how far behind MM2's translation was);
    * ``stale``: the checkpoint is older than ``stale_s`` while the source group had committed past it;
      ``behind_sync_cadence``: ``translation_gap`` exceeds the flow's ``offset.lag.max`` (the syncs
      were further apart than their cadence promises);
    * a consumer failing over then starts at ``failover_offset``: the target group's committed offset
      (``failover_from = 'target_group'``), else the checkpoint's (``'checkpoint'``); it re-reads
      ``reread = exact_downstream - failover_offset`` records it had processed on the source, or
      skips ``skip = failover_offset - exact_downstream`` records it never saw;
    * ``status``: ``no_source_commit``, ``no_checkpoint``, ``skip``, ``stale``,
      ``behind_sync_cadence``, ``reread`` or ``ok``, the first that applies.

    Parameters
    ----------
    mirror : DataFrame
        The ``mirror`` table (its checkpoints).
    observations : DataFrame
        :func:`lro_observations` (its offset syncs).
    source_commits, target_commits : DataFrame
        :func:`effective_commits` of the source and of the target cluster's nodes.
    flows : sequence of Flow
        For the separator, ``offset.lag.max``, ``emit.checkpoints.interval.seconds``, ``groups`` and
        ``groups.exclude``.
    window_s : float
        Window boundaries added as instants.
    stale_s : float
        Checkpoint age beyond which translation is stale (0: three times the flow's
        ``emit.checkpoints.interval.seconds``).
    groups : sequence of str, optional
        Only these groups.

    Returns
    -------
    DataFrame
        :data:`AUDIT_COLUMNS`, one row per (flow, ``group``, source ``topic``, ``partition``,
        ``time``); ``target_topic`` is the replicated topic; ``boundary`` marks window boundaries.
    """
    spark = mirror.sparkSession
    flow = ["source_alias", "target_alias"]
    key = [*flow, "group", "topic", "partition"]
    settings = spark.createDataFrame(
        [(f.source, f.target, f.source + f.separator, int(f.number("offset.lag.max")),
          float(stale_s) if stale_s > 0 else 3.0 * f.number("emit.checkpoints.interval.seconds"))
         for f in flows] or [("", "", ".", 100, 180.0)],
        "source_alias string, target_alias string, _prefix string, _lag_max int, _stale_s double")
    cps = (mirror.where((F.col("kind") == "checkpoint") & ~F.coalesce(F.col("deleted"), F.lit(False))
                        & F.col("group").isNotNull() & F.col("topic").isNotNull())
           .dropDuplicates(["cluster", "internal_topic", "internal_partition", "offset"])
           .join(settings, flow)
           .select(*flow, "group", F.col("topic").alias("target_topic"),
                   F.when(F.col("topic").startswith(F.col("_prefix")),
                          F.expr("substring(topic, length(_prefix) + 1)")).otherwise(F.col("topic")).alias("topic"),
                   "partition", F.col("timestamp").alias("time"), F.col("upstream_offset").alias("_cu"),
                   F.col("downstream_offset").alias("_cd"), F.col("offset").alias("_ord")))
    if groups is not None:
        cps = cps.where(F.col("group").isin(list(groups)))
    # the checkpoints and the synced pairs are each read three times: kept once (a few rows a group
    # and partition), so those branches plan and run from rows, not again from their lineage
    cps = cps.localCheckpoint(eager=True)
    # the synced (group, partition)s: those MM2 checkpointed, and those of the source commits its
    # group filter takes for a replicated topic (a bundle without the target cluster has no checkpoints)
    replicated = observations.select(*flow, "topic", "partition").distinct()
    pairs = cps.select(*key).distinct()
    from_source = (source_commits.select("group", "topic", "partition").distinct()
                   .join(replicated, ["topic", "partition"])
                   .where(synced_groups(flows, spark)).select(*key))
    if groups is not None:
        from_source = from_source.where(F.col("group").isin(list(groups)))
    pairs = pairs.unionByName(from_source).distinct().join(settings.select(*flow, "_prefix"), flow).withColumn(
        "target_topic", F.concat("_prefix", "topic")).drop("_prefix")
    cp_topics = cps.select(*flow, "topic", "target_topic").distinct()
    pairs = (pairs.alias("p").join(cp_topics.alias("c"), [*flow, "topic"], "left")
             .select(*[F.col(f"p.{k}") for k in key],
                     F.coalesce("c.target_topic", "p.target_topic").alias("target_topic")))
    pairs = pairs.localCheckpoint(eager=True)
    src = (source_commits.join(pairs.select(*key), ["group", "topic", "partition"])
           .select(*key, "time", F.lit(0).alias("_src"), "_ord", F.col("committed_offset").alias("_sc"),
                   F.col("time").alias("_sct")))
    tgt = (target_commits.withColumnRenamed("topic", "target_topic")
           .join(pairs, ["group", "target_topic", "partition"])
           .select(*key, "time", F.lit(2).alias("_src"), "_ord", F.col("committed_offset").alias("_tc"),
                   F.col("time").alias("_tct")))
    cpe = cps.select(*key, "time", F.lit(1).alias("_src"), "_ord", "_cu", "_cd", F.col("time").alias("_cpt"))
    value_cols = ["_sc", "_sct", "_cu", "_cd", "_cpt", "_tc", "_tct"]
    types = {"_sc": "long", "_sct": "timestamp", "_cu": "long", "_cd": "long", "_cpt": "timestamp", "_tc": "long",
             "_tct": "timestamp"}

    def widen(frame: DataFrame) -> DataFrame:
        for c in value_cols:
            if c not in frame.columns:
                frame = frame.withColumn(c, F.lit(None).cast(types[c]))
        return frame.select(*key, "time", "_src", "_ord", *value_cols)

    events = widen(src).unionByName(widen(tgt)).unionByName(widen(cpe))
    grid = widen(_grid(events, key, "time", window_s).withColumn("_src", F.lit(3))
                 .withColumn("_ord", F.lit(None).cast("long")))
    order = Window.partitionBy(*key).orderBy("time", "_src", F.col("_ord").asc_nulls_first())
    running = order.rowsBetween(Window.unboundedPreceding, 0)
    # a tombstone clears the committed offset: carry the commit's time, then its (null) offset
    filled = events.unionByName(grid).select(
        *key, "time", "_src", "_ord",
        F.last(F.when(F.col("_src") == 0, F.struct("_sc")), ignorenulls=True).over(running).alias("_s"),
        F.last("_sct", ignorenulls=True).over(running).alias("source_commit_time"),
        F.last("_cu", ignorenulls=True).over(running).alias("checkpoint_upstream"),
        F.last("_cd", ignorenulls=True).over(running).alias("checkpoint_downstream"),
        F.last("_cpt", ignorenulls=True).over(running).alias("checkpoint_time"),
        F.last(F.when(F.col("_src") == 2, F.struct("_tc")), ignorenulls=True).over(running).alias("_t"),
        F.last("_tct", ignorenulls=True).over(running).alias("target_commit_time"))
    last = Window.partitionBy(*key, "time").orderBy(F.col("_src").desc(), F.col("_ord").desc_nulls_last())
    at_time = Window.partitionBy(*key, "time")
    rows = (filled.withColumn("boundary", F.max((F.col("_src") == 3).cast("int")).over(at_time) == 1)
            .withColumn("_n", F.row_number().over(last)).where("_n = 1")
            .withColumn("source_committed", F.col("_s._sc")).withColumn("target_committed", F.col("_t._tc"))
            .drop("_s", "_t", "_n", "_src", "_ord")
            .join(pairs, key))
    # exact target offsets through the offset syncs: the sync with the largest upstream offset at or below
    syncs = (observations.where((F.col("kind") == "offset_sync") & F.col("downstream_offset").isNotNull())
             .select(*flow, "topic", "partition", (F.col("replicated_end") - 1).alias("_up"),
                     F.col("downstream_offset").alias("_down"), "time"))
    sync_key = [*flow, "topic", "partition"]
    mapped = asof(rows, syncs, by=sync_key, left_time="source_committed", right_time="_up",
                  columns=["_up", "_down"], suffix="_s")
    mapped = asof(mapped, syncs, by=sync_key, left_time="checkpoint_upstream", right_time="_up",
                  columns=["_up", "_down"], suffix="_c")
    exact = F.col("_down_s") + (F.col("source_committed") - F.col("_up_s"))
    cp_exact = F.col("_down_c") + (F.col("checkpoint_upstream") - F.col("_up_c"))
    out = (mapped.join(settings.select(*flow, "_lag_max", "_stale_s"), flow, "left")
           .withColumn("exact_downstream", exact).withColumn("checkpoint_exact", cp_exact)
           .withColumn("translation_gap", F.col("checkpoint_exact") - F.col("checkpoint_downstream"))
           .withColumn("checkpoint_age_s", (F.unix_micros("time") - F.unix_micros("checkpoint_time")) / F.lit(1e6))
           .withColumn("stale", (F.col("checkpoint_age_s") > F.col("_stale_s"))
                       & (F.col("source_committed") != F.col("checkpoint_upstream"))
                       & (F.col("source_commit_time") > F.col("checkpoint_time")))
           .withColumn("behind_sync_cadence", F.col("translation_gap") > F.col("_lag_max"))
           .withColumn("failover_offset", F.coalesce("target_committed", "checkpoint_downstream"))
           .withColumn("failover_from", F.when(F.col("target_committed").isNotNull(), F.lit("target_group"))
                       .when(F.col("checkpoint_downstream").isNotNull(), F.lit("checkpoint")))
           .withColumn("reread", F.greatest(F.col("exact_downstream") - F.col("failover_offset"), F.lit(0)))
           .withColumn("skip", F.greatest(F.col("failover_offset") - F.col("exact_downstream"), F.lit(0))))
    status = (F.when(F.col("source_committed").isNull(), F.lit("no_source_commit"))
              .when(F.col("failover_offset").isNull(), F.lit("no_checkpoint"))
              .when(F.col("skip") > 0, F.lit("skip"))
              .when(F.coalesce(F.col("stale"), F.lit(False)), F.lit("stale"))
              .when(F.coalesce(F.col("behind_sync_cadence"), F.lit(False)), F.lit("behind_sync_cadence"))
              .when(F.col("reread") > 0, F.lit("reread"))
              .when(F.col("exact_downstream").isNull(), F.lit("no_offset_sync"))
              .otherwise(F.lit("ok")))
    return out.withColumn("status", status).select(*AUDIT_COLUMNS)


def audit_summary(audit: DataFrame) -> DataFrame:
    """Per synced group and partition: the last audit row and the worst re-read and skip.

    Returns
    -------
    DataFrame
        ``source_alias, target_alias, group, topic, target_topic, partition, time`` (of the last row),
        ``source_committed, checkpoint_downstream, target_committed, exact_downstream, checkpoint_age_s,
        status``, ``max_reread, max_reread_at, max_skip, max_skip_at, stale_rows, behind_cadence_rows``.
    """
    key = ["source_alias", "target_alias", "group", "topic", "target_topic", "partition"]
    last = F.struct("time", "source_committed", "checkpoint_downstream", "target_committed", "exact_downstream",
                    "checkpoint_age_s", "status")
    return (audit.groupBy(*key).agg(
        F.max_by(last, "time").alias("_l"),
        F.max_by(F.struct("reread", "time"), "reread").alias("_rr"),
        F.max_by(F.struct("skip", "time"), "skip").alias("_sk"),
        F.sum(F.coalesce(F.col("stale"), F.lit(False)).cast("int")).alias("stale_rows"),
        F.sum(F.coalesce(F.col("behind_sync_cadence"), F.lit(False)).cast("int")).alias("behind_cadence_rows"))
        .select(*key, "_l.*", F.col("_rr.reread").alias("max_reread"), F.col("_rr.time").alias("max_reread_at"),
                F.col("_sk.skip").alias("max_skip"), F.col("_sk.time").alias("max_skip_at"), "stale_rows",
                "behind_cadence_rows")
        .orderBy("group", "topic", "partition"))
