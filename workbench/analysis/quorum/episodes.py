"""Divergence episodes: the runs during which a node was behind the metadata log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.quorum.appends import DEFAULT_IDLE_MS, NoOpWriting
from workbench.analysis.quorum.positions import OFFSETS_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


#: Kinds of :func:`node_offsets` rows that say where a node's metadata stood (episodes are found
#: from these; ``committed`` and ``high_watermark`` are the commit point, shown but not judged).
POSITION_KINDS: tuple[str, ...] = ("applied", "fetched", "snapshot", "log_end", "unanswered")

#: Columns of :func:`divergence_episodes`.
EPISODES_COLUMNS = ("node_id", "role", "start", "end", "seconds", "open", "first_behind", "last_behind",
                    "stopped_offset", "peak_offset_lag", "peak_time_lag_ms", "peak_behind_ms", "observations",
                    "sources", "fenced_at", "unfenced_at")


def divergence_episodes(offsets: DataFrame, writing: NoOpWriting | None = None, *, tolerance_ms: float | None = None,
                        fences: DataFrame | None = None) -> DataFrame:
    """Episodes during which a node was behind the metadata log.

    A node is behind at an observation when it lacks a record the leader appended more than
    ``tolerance_ms`` earlier (``behind_ms`` of :func:`node_offsets`); an episode is a run of such
    observations of one node (every source together, kinds :data:`POSITION_KINDS`; a sample
    ``ahead of the log`` is skipped). It starts when the first record the node lacked was
    appended, or, where NoOpRecords are written, one idle interval after the last record it had
    (the leader would have appended a NoOp by then: so a paused leader's episode starts when it
    stopped, not when its successor first wrote), and never before the node's previous
    observation that was not behind. It ends at the first observation that is not behind; an
    episode still running at the node's last observation is ``open`` (no ``end``).

    Parameters
    ----------
    offsets : DataFrame
        From :func:`node_offsets`.
    writing : NoOpWriting, optional
        From :func:`noop_writing` (the idle interval; without it the start is the first missing
        record's append time).
    tolerance_ms : float, optional
        Default: twice the idle interval (1 s with Kafka's defaults).
    fences : DataFrame, optional
        From :func:`fence_events` (without episodes): a broker's first fence within the episode and
        the first unfence after it, before the node's next episode (a resumed broker catches up
        first and is unfenced on a later heartbeat: the unfence may follow the episode's end).

    Returns
    -------
    DataFrame
        One row per episode, :data:`EPISODES_COLUMNS`: ``node_id, role, start, end, seconds``
        (to ``end``, or to the last observation when open), ``open``, ``first_behind`` and
        ``last_behind`` (the observations), ``stopped_offset`` (the node's offset at the first),
        ``peak_offset_lag, peak_time_lag_ms, peak_behind_ms``, ``observations`` (behind),
        ``sources``, ``fenced_at``, ``unfenced_at``.

    Examples
    --------
    >>> divergence_episodes(offsets, writing).show()    # doctest: +SKIP
    """
    require_columns(offsets, OFFSETS_COLUMNS, "divergence_episodes")
    idle = writing.idle_ms if writing is not None else DEFAULT_IDLE_MS
    tolerance = float(tolerance_ms) if tolerance_ms is not None and tolerance_ms > 0 else 2.0 * idle
    noop_start = writing is not None and writing.writes_noops
    has_applied = (offsets.where(F.col("kind") == "applied").select("node_id").distinct()
                   .withColumn("_has_applied", F.lit(True)))
    obs = (offsets.join(has_applied, "node_id", "left")
           .where(F.col("kind").isin(*POSITION_KINDS) & F.col("leader_offset").isNotNull()
                  & F.col("note").isNull()
                  & ~((F.col("kind") == "log_end") & F.coalesce("_has_applied", F.lit(False)))))
    order = Window.partitionBy("node_id").orderBy("time", "source", "kind")
    flagged = (obs.withColumn("_behind", F.coalesce(F.col("behind_ms") > F.lit(tolerance), F.lit(False)))
               .withColumn("_prev_behind", F.coalesce(F.lag("_behind").over(order), F.lit(False)))
               # the bound on an episode's start: the node's previous *answer* that was not behind
               .withColumn("_prev_time", F.last(F.when(F.col("kind") != "unanswered", F.col("time")), ignorenulls=True)
                           .over(order.rowsBetween(Window.unboundedPreceding, -1)))
               .withColumn("_begin", F.col("_behind") & ~F.col("_prev_behind"))
               .withColumn("_run", F.sum(F.col("_begin").cast("int"))
                           .over(order.rowsBetween(Window.unboundedPreceding, 0)))
               .withColumn("_next_time", F.lead("time").over(order))
               .withColumn("_next_behind", F.lead("_behind").over(order)))
    stop_time = F.col("missing_since")
    if noop_start:
        stop_time = F.least(F.col("missing_since"), F.col("record_time") + F.expr(f"INTERVAL {int(idle)} MILLISECONDS"))
    flagged = flagged.withColumn("_start", F.greatest(stop_time, F.coalesce("_prev_time", stop_time)))
    runs = (flagged.where("_behind").groupBy("node_id", "role", "_run").agg(
        F.min_by("_start", "time").alias("start"), F.min("time").alias("first_behind"),
        F.max("time").alias("last_behind"), F.min_by("offset", "time").alias("stopped_offset"),
        F.max("offset_lag").alias("peak_offset_lag"), F.max("time_lag_ms").alias("peak_time_lag_ms"),
        F.max("behind_ms").alias("peak_behind_ms"), F.count("*").alias("observations"),
        F.array_sort(F.collect_set("source")).alias("sources"),
        F.max_by("_next_time", "time").alias("end"), F.max_by("_next_behind", "time").alias("_after")))
    # runs that touch or overlap (two sources observed at the same instant, one behind, one not)
    # are one episode
    far = F.lit("9999-12-31").cast("timestamp")
    by_start = Window.partitionBy("node_id").orderBy("start", "first_behind")
    runs = (runs.withColumn("_reach", F.max(F.coalesce("end", far)).over(
                by_start.rowsBetween(Window.unboundedPreceding, -1)))
            .withColumn("_new", F.col("_reach").isNull() | (F.col("start") > F.col("_reach")))
            .withColumn("_episode", F.sum(F.col("_new").cast("int")).over(
                by_start.rowsBetween(Window.unboundedPreceding, 0)))
            .groupBy("node_id", "_episode").agg(
                F.first("role").alias("role"), F.min("start").alias("start"),
                F.min("first_behind").alias("first_behind"), F.max("last_behind").alias("last_behind"),
                F.min_by("stopped_offset", "first_behind").alias("stopped_offset"),
                F.max("peak_offset_lag").alias("peak_offset_lag"), F.max("peak_time_lag_ms").alias("peak_time_lag_ms"),
                F.max("peak_behind_ms").alias("peak_behind_ms"), F.sum("observations").alias("observations"),
                F.array_sort(F.array_distinct(F.flatten(F.collect_list("sources")))).alias("sources"),
                F.when(F.max(F.col("end").isNull().cast("int")) == 1, F.lit(None).cast("timestamp"))
                .otherwise(F.max("end")).alias("end"))
            .drop("_episode"))
    runs = (runs.withColumn("open", F.col("end").isNull())
            .withColumn("seconds", (F.unix_millis(F.coalesce("end", "last_behind")) - F.unix_millis("start")) / 1000.0))
    if fences is not None:
        # fenced_at: the broker's first fence within the episode. unfenced_at: the first unfence
        # after it, even once the episode has ended (a resumed broker catches up with the log
        # first and the controller unfences it on a later heartbeat), but before the node's next
        # episode; without a fence in the episode, the last unfence within it
        columns = runs.columns
        runs = runs.withColumn("_next_start", F.lead("start").over(Window.partitionBy("node_id").orderBy("start")))
        f = (fences.where(F.col("event").isin("fenced", "unfenced"))
             .select(F.col("broker_id").alias("node_id"), "time", "event"))
        cond = ((F.col("f.node_id") == F.col("e.node_id")) & (F.col("f.time") >= F.col("e.start"))
                & (F.col("e._next_start").isNull() | (F.col("f.time") < F.col("e._next_start"))))
        inside = F.col("e.end").isNull() | (F.col("f.time") <= F.col("e.end"))
        runs = (runs.alias("e").join(f.alias("f"), cond, "left")
                .groupBy(*[F.col(f"e.{c}") for c in columns])
                .agg(F.min(F.when((F.col("f.event") == "fenced") & inside, F.col("f.time"))).alias("fenced_at"),
                     F.array_sort(F.collect_list(F.when(F.col("f.event") == "unfenced",
                                                        F.struct(F.col("f.time").alias("t"), inside.alias("i")))))
                     .alias("_unfences"))
                .withColumn("unfenced_at", F.when(
                    F.col("fenced_at").isNotNull(),
                    F.try_element_at(F.filter("_unfences", lambda u: u["t"] > F.col("fenced_at")), F.lit(1))["t"])
                    .otherwise(F.try_element_at(F.filter("_unfences", lambda u: u["i"]), F.lit(-1))["t"])))
    else:
        runs = (runs.withColumn("fenced_at", F.lit(None).cast("timestamp"))
                .withColumn("unfenced_at", F.lit(None).cast("timestamp")))
    return runs.select(*EPISODES_COLUMNS).orderBy("start", "node_id")
