"""MirrorMaker 2 outages: the stalls of each partition's replicated position, and of a whole flow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.logs import asof
from workbench.analysis.mirror.lag import KEY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Shortest stall counted as an outage when the partition's own cadence does not ask for longer.
MIN_OUTAGE_S = 5.0
#: A stall is an outage when longer than this many times the partition's median interval between
#: advances of MirrorMaker 2's position (and than :data:`MIN_OUTAGE_S`).
OUTAGE_CADENCES = 3.0
#: A partition's outage is "full" when MirrorMaker 2 replicated nothing at all for its flow during at
#: least this share of it; otherwise other partitions kept moving: a "partial" outage.
FULL_SHARE = 0.9

EPISODE_COLUMNS = (
    "source_alias", "target_alias", "topic", "partition", "start", "end", "seconds", "open", "scope",
    "last_progress", "resumed", "replicated_end_at_start", "log_end_at_end", "peak_records", "peak_bytes",
    "peak_age_s", "peak_at", "caught_up_at", "catch_up_s", "evidence", "threshold_s",
)
OUTAGE_COLUMNS = ("source_alias", "target_alias", "start", "end", "seconds", "open", "partitions")


def _progress(observations: DataFrame, start: Any = None, end: Any = None) -> DataFrame:
    """Moments MirrorMaker 2's known position of a partition advanced (running maximum over both sources)."""
    key = list(KEY)
    order = Window.partitionBy(*key).orderBy("time", "record_offset")
    obs = observations
    if end is not None:
        obs = obs.where(F.col("time") <= F.lit(end).cast("timestamp"))
    marked = (obs.withColumn("_best", F.max("replicated_end").over(order.rowsBetween(Window.unboundedPreceding, 0)))
              .withColumn("_before", F.lag("_best").over(order))
              .where(F.col("_before").isNull() | (F.col("_best") > F.col("_before"))))
    per_time = marked.groupBy(*key, "time").agg(F.max("_best").alias("progress_end"),
                                                F.collect_set("kind").alias("_kinds"))
    if start is not None:
        # the last advance before the window opens its first interval
        t0 = F.lit(start).cast("timestamp")
        before = (per_time.where(F.col("time") < t0)
                  .withColumn("_r", F.row_number().over(Window.partitionBy(*key).orderBy(F.col("time").desc())))
                  .where("_r = 1").drop("_r").withColumn("time", t0))
        per_time = per_time.where(F.col("time") >= t0).unionByName(before)
    return per_time


def outage_episodes(timeline: DataFrame, observations: DataFrame, growth: DataFrame, *,
                    min_outage_s: float = 0.0, start: Any = None, end: Any = None) -> DataFrame:
    """Intervals in which a partition's LRO did not advance while its LEO did (MirrorMaker 2 outages).

    MirrorMaker 2's known position of a partition (``progress_end``: the larger of its Connect source
    offset and its offset syncs) advances at its commit and sync cadence. A stall is the time from
    the later of its last advance and the moment the first record it had not replicated joined the
    source log, to its next advance (or to the end of the bundle's data: ``open``); it is an episode
    when longer than ``min_outage_s`` (0: :data:`OUTAGE_CADENCES` times the partition's median
    interval between advances, at least :data:`MIN_OUTAGE_S`).

    Parameters
    ----------
    timeline, observations, growth : DataFrame
        :func:`lag_timeline`, :func:`lro_observations`, :func:`source_growth`.
    min_outage_s : float
        Shortest stall reported (0: per partition, from its cadence).
    start, end : timestamp, optional
        Only what happened within ``[start, end]`` (a healthy window reports nothing).

    Returns
    -------
    DataFrame
        :data:`EPISODE_COLUMNS`, one row per episode: ``start, end, seconds, open``; ``scope``
        (``full``: MM2 replicated nothing for the flow during at least :data:`FULL_SHARE` of it,
        else ``partial``: other partitions kept moving); ``last_progress``, ``resumed`` (the advances
        around it); ``replicated_end_at_start``; ``log_end_at_end``; the peak lag from ``start`` to
        the catch-up (``peak_records, peak_bytes, peak_age_s, peak_at``); ``caught_up_at``: when MM2
        had replicated every record that was in the source log when it resumed, ``catch_up_s`` from
        ``end`` to then (null when that is not in the data); ``evidence`` (the kinds of observation
        of the advances around it); ``threshold_s``.
    """
    key = list(KEY)
    progress = _progress(observations, start, end)
    order = Window.partitionBy(*key).orderBy("time")
    steps = (progress.withColumn("resumed", F.lead("time").over(order))
             .withColumn("_kinds_next", F.lead("_kinds").over(order)))
    gaps = steps.withColumn("_gap", (F.unix_micros("resumed") - F.unix_micros("time")) / F.lit(1e6))
    cadence = gaps.groupBy(*key).agg(F.percentile_approx("_gap", 0.5).alias("_median"))
    threshold = (F.lit(float(min_outage_s)) if min_outage_s > 0
                 else F.greatest(F.lit(MIN_OUTAGE_S), F.coalesce(F.col("_median") * F.lit(OUTAGE_CADENCES),
                                                                 F.lit(MIN_OUTAGE_S))))
    data_end = growth.groupBy(*key).agg(F.max("reached").alias("_data_end"))
    if end is not None:
        data_end = data_end.withColumn("_data_end", F.least("_data_end", F.lit(end).cast("timestamp")))
    # when the first record not yet replicated at the last advance joined the source log
    held = growth.select(*key, (-F.col("end_offset")).alias("_neg_end"), F.col("reached").alias("_waiting"))
    candidates = (steps.join(cadence, key, "left").join(data_end, key, "left")
                  .withColumn("threshold_s", threshold)
                  .withColumn("open", F.col("resumed").isNull())
                  .withColumn("_stop", F.coalesce("resumed", "_data_end"))
                  .withColumn("_after", -(F.col("progress_end") + 1)))
    candidates = asof(candidates, held, by=key, left_time="_after", right_time="_neg_end", columns=["_waiting"])
    eps = (candidates
           .withColumn("start", F.greatest("time", "_waiting"))
           .withColumn("seconds", (F.unix_micros("_stop") - F.unix_micros("start")) / F.lit(1e6))
           .where(F.col("_waiting").isNotNull() & (F.col("_waiting") < F.col("_stop"))
                  & (F.col("seconds") >= F.col("threshold_s")))
           .select(*key, "start", F.col("_stop").alias("end"), "seconds", "open",
                   F.col("time").alias("last_progress"), "resumed",
                   F.col("progress_end").alias("replicated_end_at_start"),
                   F.array_sort(F.array_union("_kinds", F.coalesce("_kinds_next", F.array().cast("array<string>"))))
                   .alias("evidence"), "threshold_s"))
    # the log end when MM2 resumed, and when its position first reached it
    ends = asof(eps, growth.select(*key, "reached", "end_offset"), by=key, left_time="end", right_time="reached",
                columns=["end_offset"]).withColumnRenamed("end_offset", "log_end_at_end")
    caught = (ends.alias("e").join(progress.alias("p"), key)
              .where((F.col("p.time") >= F.col("e.end")) & (F.col("p.progress_end") >= F.col("e.log_end_at_end"))
                     & ~F.col("e.open"))
              .groupBy(*[F.col(f"e.{k}") for k in key], F.col("e.start")).agg(F.min("p.time").alias("caught_up_at")))
    eps = ends.join(caught, [*key, "start"], "left")
    # peak lag from the start to the catch-up (or the end of the data)
    t = timeline.select(*key, F.col("time").alias("_t"), "lag_records", "lag_bytes", "lag_age_s")
    window = (eps.select(*key, "start", F.coalesce("caught_up_at", "end").alias("_until")).join(t, key)
              .where((F.col("_t") >= F.col("start")) & (F.col("_t") <= F.col("_until")))
              .groupBy(*key, "start").agg(
                  F.max_by(F.struct("lag_records", "_t"), "lag_records").alias("_peak"),
                  F.max("lag_bytes").alias("peak_bytes"), F.max("lag_age_s").alias("peak_age_s")))
    eps = eps.join(window, [*key, "start"], "left")
    eps = (eps.withColumn("peak_records", F.col("_peak.lag_records")).withColumn("peak_at", F.col("_peak._t"))
           .withColumn("catch_up_s", (F.unix_micros("caught_up_at") - F.unix_micros("end")) / F.lit(1e6)))
    full = flow_outages(observations, growth, episodes=eps, min_outage_s=min_outage_s, start=start, end=end)
    overlap = (eps.select(*key, "start", "end", "seconds").alias("e")
               .join(full.alias("f"), ["source_alias", "target_alias"])
               .where((F.col("f.start") < F.col("e.end")) & (F.col("f.end") > F.col("e.start")))
               .groupBy(*[F.col(f"e.{k}") for k in key], F.col("e.start"))
               .agg(F.sum((F.unix_micros(F.least("e.end", "f.end")) - F.unix_micros(F.greatest("e.start", "f.start")))
                          / F.lit(1e6)).alias("_full_s")))
    eps = eps.join(overlap, [*key, "start"], "left")
    scope = F.when(F.coalesce(F.col("_full_s"), F.lit(0.0)) >= F.col("seconds") * F.lit(FULL_SHARE), F.lit("full"))
    return eps.withColumn("scope", scope.otherwise(F.lit("partial"))).select(*EPISODE_COLUMNS)


def flow_outages(observations: DataFrame, growth: DataFrame, *, episodes: DataFrame | None = None,
                 min_outage_s: float = 0.0, start: Any = None, end: Any = None) -> DataFrame:
    """Intervals in which MirrorMaker 2 replicated nothing at all for a flow while records waited.

    The flow's progress is every advance of any of its partitions (:func:`outage_episodes`); a gap
    between two of them is an outage when it is at least the threshold (``min_outage_s``, else
    :data:`OUTAGE_CADENCES` times the flow's median gap, at least :data:`MIN_OUTAGE_S`) and some
    partition's episode overlaps it; it starts at the later of the gap's start and the earliest
    overlapping episode's start.

    Returns
    -------
    DataFrame
        :data:`OUTAGE_COLUMNS`: one row per outage: ``source_alias, target_alias, start, end,
        seconds, open`` (no advance after it in the data), ``partitions`` (the partitions whose
        episodes overlap it, ``topic-partition``).
    """
    flow = ["source_alias", "target_alias"]
    if episodes is None:
        raise ValueError("flow_outages needs the partition episodes (outage_episodes computes them)")
    progress = _progress(observations, start, end).select(*flow, "time").distinct()
    order = Window.partitionBy(*flow).orderBy("time")
    gaps = (progress.withColumn("resumed", F.lead("time").over(order))
            .withColumn("_gap", (F.unix_micros("resumed") - F.unix_micros("time")) / F.lit(1e6)))
    cadence = gaps.groupBy(*flow).agg(F.percentile_approx("_gap", 0.5).alias("_median"))
    data_end = growth.groupBy(*flow).agg(F.max("reached").alias("_data_end"))
    if end is not None:
        data_end = data_end.withColumn("_data_end", F.least("_data_end", F.lit(end).cast("timestamp")))
    threshold = (F.lit(float(min_outage_s)) if min_outage_s > 0
                 else F.greatest(F.lit(MIN_OUTAGE_S), F.coalesce(F.col("_median") * F.lit(OUTAGE_CADENCES),
                                                                 F.lit(MIN_OUTAGE_S))))
    cands = (gaps.join(cadence, flow, "left").join(data_end, flow, "left")
             .withColumn("_stop", F.coalesce("resumed", "_data_end")).withColumn("_thr", threshold))
    eps = episodes.select(*flow, F.col("start").alias("_es"), F.col("end").alias("_ee"),
                          F.concat_ws("-", "topic", F.col("partition").cast("string")).alias("_p"))
    joined = (cands.join(eps, flow)
              .where((F.col("_es") < F.col("_stop")) & (F.col("_ee") > F.col("time")))
              .groupBy(*flow, "time", "_stop", "_thr", "resumed")
              .agg(F.min("_es").alias("_first"), F.array_sort(F.collect_set("_p")).alias("partitions")))
    return (joined.withColumn("start", F.greatest("time", "_first"))
            .withColumn("seconds", (F.unix_micros("_stop") - F.unix_micros("start")) / F.lit(1e6))
            .where(F.col("seconds") >= F.col("_thr"))
            .select(*flow, "start", F.col("_stop").alias("end"), "seconds",
                    F.col("resumed").isNull().alias("open"), "partitions"))
