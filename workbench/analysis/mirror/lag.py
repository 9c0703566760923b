"""MirrorMaker 2's replicated position and the replication lag over time (KIP-971's replication-record-lag)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.logs import asof, log_growth

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The KIP-971 refresh interval: the default window of value/min/max/avg.
DEFAULT_WINDOW_S = 15.0

#: How long KIP-971's proposed cache keeps a partition's last replicated offset after its last update:
#: the metric stops reporting a partition that replicated nothing for this long.
KIP971_TTL_S = 20.0

#: Key of a replicated source partition.
KEY = ("source_alias", "target_alias", "topic", "partition")

OBSERVATION_SCHEMA = (
    "source_alias string, target_alias string, topic string, partition int, time timestamp, kind string, "
    "replicated_end long, downstream_offset long, record_offset long"
)
TIMELINE_COLUMNS = (
    "source_alias", "target_alias", "topic", "partition", "time", "boundary", "log_end_offset", "log_end_bytes",
    "replicated_end", "lro_source", "connect_end", "synced_end", "progress_end", "lag_records", "lag_bytes",
    "lag_age_s", "connect_age_s", "next_connect_end", "lag_records_low", "kip971_reported",
)
WINDOW_COLUMNS = (
    "source_alias", "target_alias", "topic", "partition", "window_start", "window_end", "lro_source",
    "log_end_offset", "replicated_end", "lag_records", "lag_records_min", "lag_records_max", "lag_records_avg",
    "lag_bytes", "lag_bytes_max", "lag_age_s", "lag_age_s_max", "lag_records_low", "kip971_reported",
)


def lro_observations(mirror: DataFrame) -> DataFrame:
    """One row per observation of MirrorMaker 2's replicated position of a source partition.

    Rows of :data:`OBSERVATION_SCHEMA`, each record of the ``mirror`` table counted once across node
    replicas. ``kind`` is ``connect_offset`` or ``offset_sync``; ``replicated_end`` is the offset after
    the last record replicated (source offset or sync's upstream offset, plus 1); ``downstream_offset``
    is a sync's offset in the target, else null. Tombstones and records without an offset are left out.
    """
    require_columns(mirror, ("cluster", "internal_topic", "internal_partition", "offset", "timestamp", "kind",
                             "source_alias", "target_alias", "topic", "partition", "upstream_offset",
                             "downstream_offset", "deleted"), "lro_observations")
    rows = (mirror.where(F.col("kind").isin("source_offset", "offset_sync")
                         & ~F.coalesce(F.col("deleted"), F.lit(False))
                         & F.col("upstream_offset").isNotNull() & F.col("topic").isNotNull()
                         & F.col("partition").isNotNull() & F.col("timestamp").isNotNull())
            .dropDuplicates(["cluster", "internal_topic", "internal_partition", "offset"]))
    return rows.select(
        "source_alias", "target_alias", "topic", "partition", F.col("timestamp").alias("time"),
        F.when(F.col("kind") == "source_offset", F.lit("connect_offset")).otherwise(F.lit("offset_sync")).alias("kind"),
        (F.col("upstream_offset") + 1).alias("replicated_end"),
        F.when(F.col("kind") == "offset_sync", F.col("downstream_offset")).cast("long").alias("downstream_offset"),
        F.col("offset").alias("record_offset"))


def source_growth(batches: DataFrame, partitions: DataFrame, source_nodes: Mapping[str, Sequence[int]]) -> DataFrame:
    """The source log over time (:func:`workbench.analysis.logs.log_growth`) of each replicated partition.

    ``source_nodes`` maps a source alias to its cluster's node ids: only their replicas are read, as a
    target may hold a topic of the same name. Adds ``source_alias, target_alias`` (one copy per flow).
    """
    topics = [r[0] for r in partitions.select("topic").distinct().collect()]
    out = log_growth(batches.where(F.lit(False))).withColumn("source_alias", F.lit(None).cast("string"))
    for alias in sorted(source_nodes):
        nodes = [int(n) for n in source_nodes[alias]]
        if nodes:
            growth = log_growth(batches.where(F.col("node_id").isin(nodes)), topics=topics)
            out = out.unionByName(growth.withColumn("source_alias", F.lit(alias)))
    return out.join(partitions.select(*KEY), ["source_alias", "topic", "partition"])


def _grid(frame: DataFrame, key: Sequence[str], time: str, window_s: float, start: Any = None,
          end: Any = None) -> DataFrame:
    """Window boundaries (epoch-aligned, every ``window_s``) over each key's span of ``time``."""
    step = int(round(window_s * 1_000_000))
    span = frame.groupBy(*key).agg(F.min(time).alias("_lo"), F.max(time).alias("_hi"))
    if start is not None:
        span = span.withColumn("_lo", F.greatest("_lo", F.lit(start).cast("timestamp")))
    if end is not None:
        span = span.withColumn("_hi", F.least("_hi", F.lit(end).cast("timestamp")))
    lo = F.floor(F.unix_micros("_lo") / F.lit(step)) * F.lit(step)
    hi = F.ceil(F.unix_micros("_hi") / F.lit(step)) * F.lit(step)
    return (span.where(F.col("_lo") <= F.col("_hi"))
            .select(*key, F.explode(F.sequence(lo.cast("long"), hi.cast("long"),
                                               F.lit(step).cast("long"))).alias("_us"))
            .select(*key, F.timestamp_micros("_us").alias(time)))


def lag_timeline(growth: DataFrame, observations: DataFrame, *, window_s: float = DEFAULT_WINDOW_S,
                 start: Any = None, end: Any = None) -> DataFrame:
    """The replication lag of each source partition at every change, and at each window boundary.

    Parameters
    ----------
    growth : DataFrame
        :func:`source_growth`.
    observations : DataFrame
        :func:`lro_observations`.
    window_s : float
        Window length: a row is added at every multiple of it (epoch-aligned), so that each window
        opens with the value in force.
    start, end : timestamp, optional
        Keep only instants in ``[start, end]`` (the values in force at ``start`` are carried in).

    Returns
    -------
    DataFrame
        :data:`TIMELINE_COLUMNS`, one row per (``source_alias, target_alias, topic, partition``,
        ``time``), the values in force from ``time`` until the next row:

        * ``boundary``: a window boundary falls on ``time``;
        * ``log_end_offset``, ``log_end_bytes``: the source partition's end offset and the bytes of
          its log (from the first batch in the bundle) at ``time`` (null before the first batch);
        * ``connect_end``, ``synced_end``: ``replicated_end`` of the last Connect source offset and of
          the last offset sync at or before ``time``; ``replicated_end``: the first of them that is
          known, ``lro_source`` saying which (``connect_offset``, ``offset_sync``, null: neither yet);
          ``progress_end``: the larger (what MM2 is known to have replicated);
        * ``lag_records`` = ``log_end_offset - replicated_end`` (KIP-971's replication-record-lag);
        * ``lag_bytes``: bytes of source log from the batch holding offset ``replicated_end`` to the
          log end (a batch partly replicated counts in full); 0 when nothing waits;
        * ``lag_age_s``: seconds since the log held that batch (its ``max_timestamp``, as a running
          maximum): the age of the oldest record not yet replicated; 0 when nothing waits;
        * ``connect_age_s``: seconds since the last Connect source offset (null before the first).
          Connect commits them every ``offset.flush.interval.ms`` while records move, and KIP-971's
          metric reads the task's in-memory offset: a backlog from ``connect_offset`` overstates it by
          at most what MirrorMaker 2 replicated in these seconds;
        * ``next_connect_end``: ``replicated_end`` of the first Connect source offset after ``time``
          (null: none in the bundle). The in-memory offset at ``time`` lies between an offset sync's
          and this: a sync is written once its record is acknowledged, and the next commit holds every
          record acknowledged before it snapshotted the offsets, moments before it was written (a
          record acknowledged in between, rare and few, is in the commit after);
        * ``lag_records_low`` = ``log_end_offset - least(next_connect_end, log_end_offset)``, where
          ``lag_records`` is from ``connect_offset``: KIP-971's in-memory figure lies in
          ``[lag_records_low, lag_records]`` (null: no later commit, or not from Connect);
        * ``kip971_reported``: whether KIP-971's metric, whose cache drops a partition's offset
          :data:`KIP971_TTL_S` after its last update, still held the partition (while its task ran:
          a stopped task reports nothing): true within that time of an offset sync; false when the
          log end is the committed position (nothing to replicate) and that commit is older than it
          (the last update came before it); null when the bundle cannot tell (a stalled task,
          between sparse commits).

    Examples
    --------
    >>> lag_timeline(source_growth(tables.batches, parts, {"source": [1]}),
    ...              lro_observations(tables.mirror)).show()     # doctest: +SKIP
    """
    require_columns(growth, (*KEY, "reached", "end_offset", "bytes_end", "bytes_before"), "lag_timeline (growth)")
    require_columns(observations, (*KEY, "time", "kind", "replicated_end", "record_offset"),
                    "lag_timeline (observations)")
    key = list(KEY)
    nothing = F.lit(None)
    g = growth.select(*key, F.col("reached").alias("time"), F.lit(0).alias("_src"), F.col("end_offset").alias("_ord"),
                      F.col("end_offset").alias("_leo"), F.col("bytes_end").alias("_leo_bytes"),
                      nothing.cast("long").alias("_c"), nothing.cast("long").alias("_s"),
                      nothing.cast("timestamp").alias("_ct"), nothing.cast("timestamp").alias("_st"))
    connect = F.col("kind") == "connect_offset"
    o = observations.select(*key, "time",
                            F.when(connect, 1).otherwise(2).alias("_src"),
                            F.col("record_offset").alias("_ord"), nothing.cast("long").alias("_leo"),
                            nothing.cast("long").alias("_leo_bytes"),
                            F.when(connect, F.col("replicated_end")).alias("_c"),
                            F.when(F.col("kind") == "offset_sync", F.col("replicated_end")).alias("_s"),
                            F.when(connect, F.col("time")).alias("_ct"),
                            F.when(F.col("kind") == "offset_sync", F.col("time")).alias("_st"))
    events = g.unionByName(o)
    filled_cols = ("_leo", "_leo_bytes", "_c", "_s", "_ct", "_st")
    grid = _grid(events, key, "time", window_s, start, end).select(
        *key, "time", F.lit(3).alias("_src"), F.lit(None).cast("long").alias("_ord"),
        *[nothing.cast("long").alias(c) for c in ("_leo", "_leo_bytes", "_c", "_s")],
        nothing.cast("timestamp").alias("_ct"), nothing.cast("timestamp").alias("_st"))
    order = Window.partitionBy(*key).orderBy("time", "_src", F.col("_ord").asc_nulls_first())
    running = order.rowsBetween(Window.unboundedPreceding, 0)
    following = order.rowsBetween(1, Window.unboundedFollowing)
    filled = events.unionByName(grid).select(
        *key, "time", "_src", "_ord", *[F.last(c, ignorenulls=True).over(running).alias(c) for c in filled_cols],
        F.first("_c", ignorenulls=True).over(following).alias("_c_next"))
    at_time = Window.partitionBy(*key, "time")
    last = Window.partitionBy(*key, "time").orderBy(F.col("_src").desc(), F.col("_ord").desc_nulls_last())
    rows = (filled.withColumn("boundary", F.max((F.col("_src") == 3).cast("int")).over(at_time) == 1)
            .withColumn("_n", F.row_number().over(last)).where(F.col("_n") == 1)
            .select(*key, "time", "boundary", F.col("_leo").alias("log_end_offset"),
                    F.col("_leo_bytes").alias("log_end_bytes"), F.col("_c").alias("connect_end"),
                    F.col("_s").alias("synced_end"),
                    ((F.unix_micros("time") - F.unix_micros("_ct")) / F.lit(1e6)).alias("connect_age_s"),
                    ((F.unix_micros("time") - F.unix_micros("_st")) / F.lit(1e6)).alias("_sync_age_s"),
                    F.col("_c_next").alias("next_connect_end"))
            .withColumn("replicated_end", F.coalesce("connect_end", "synced_end"))
            .withColumn("lro_source", F.when(F.col("connect_end").isNotNull(), F.lit("connect_offset"))
                        .when(F.col("synced_end").isNotNull(), F.lit("offset_sync")))
            .withColumn("progress_end", F.greatest("connect_end", "synced_end"))
            .withColumn("lag_records", F.col("log_end_offset") - F.col("replicated_end"))
            .withColumn("lag_records_low", F.when(
                (F.col("lro_source") == "connect_offset") & F.col("next_connect_end").isNotNull(),
                # a rewound position (a reset connector) is no upper bound of the in-memory one
                F.least(F.col("log_end_offset") - F.least("next_connect_end", "log_end_offset"), "lag_records")))
            .withColumn("kip971_reported", F.when(F.col("_sync_age_s") <= KIP971_TTL_S, F.lit(True)).when(
                (F.col("lro_source") == "connect_offset") & (F.col("lag_records") <= 0)
                & (F.col("connect_age_s") > KIP971_TTL_S), F.lit(False))))
    if start is not None:
        rows = rows.where(F.col("time") >= F.lit(start).cast("timestamp"))
    if end is not None:
        rows = rows.where(F.col("time") <= F.lit(end).cast("timestamp"))
    # the first batch holding an offset >= replicated_end: its start in bytes and when the log held it
    look = rows.withColumn("_after", -(F.col("replicated_end") + 1))
    batches = growth.select(*key, (-F.col("end_offset")).alias("_neg_end"), "bytes_before",
                            F.col("reached").alias("_held"))
    found = asof(look, batches, by=key, left_time="_after", right_time="_neg_end",
                 columns=["bytes_before", "_held"], suffix="")
    waiting = F.coalesce(F.col("lag_records"), F.lit(0)) > 0
    return (found
            .withColumn("lag_bytes", F.when(waiting, F.col("log_end_bytes") - F.col("bytes_before"))
                        .when(F.col("lag_records").isNotNull(), F.lit(0).cast("long")))
            .withColumn("lag_age_s", F.when(waiting, (F.unix_micros("time") - F.unix_micros("_held")) / F.lit(1e6))
                        .when(F.col("lag_records").isNotNull(), F.lit(0.0)))
            .select(*TIMELINE_COLUMNS))


def lag_windows(timeline: DataFrame, *, window_s: float = DEFAULT_WINDOW_S) -> DataFrame:
    """KIP-971's value, min, max and avg of the lag per source partition and window.

    Parameters
    ----------
    timeline : DataFrame
        :func:`lag_timeline` built with the same ``window_s``.
    window_s : float
        Window length (windows are epoch-aligned).

    Returns
    -------
    DataFrame
        :data:`WINDOW_COLUMNS`, one row per source partition and window ``[window_start,
        window_end)`` holding a timeline row: ``lag_records`` (the value at the end of the window, as
        the metric would read), ``lag_records_min``/``_max`` (over the values in force during the
        window), ``lag_records_avg`` (time-weighted), ``lag_bytes``/``lag_bytes_max``,
        ``lag_age_s``/``lag_age_s_max``; ``log_end_offset``, ``replicated_end``, ``lro_source``,
        ``lag_records_low`` and ``kip971_reported`` at the end of the window. Lag columns are null
        where MM2's position is not known.
    """
    require_columns(timeline, TIMELINE_COLUMNS, "lag_windows")
    step = int(round(window_s * 1_000_000))
    key = list(KEY)
    order = Window.partitionBy(*key).orderBy("time")
    start_us = F.floor(F.unix_micros("time") / F.lit(step)) * F.lit(step)
    rows = (timeline.withColumn("_w", start_us.cast("long"))
            .withColumn("_next", F.lead("time").over(order))
            .withColumn("_dur", F.when(F.col("_next").isNull(), F.lit(0.0)).otherwise(
                (F.least(F.unix_micros("_next"), F.col("_w") + F.lit(step)) - F.unix_micros("time")) / F.lit(1e6))))
    last = F.struct("time", "log_end_offset", "replicated_end", "lro_source", "lag_records", "lag_bytes", "lag_age_s",
                    "lag_records_low", "kip971_reported")
    weighted = F.sum(F.when(F.col("lag_records").isNotNull(), F.col("lag_records") * F.col("_dur")))
    covered = F.sum(F.when(F.col("lag_records").isNotNull(), F.col("_dur")))
    agg = rows.groupBy(*key, "_w").agg(
        F.max_by(last, "time").alias("_last"),
        F.min("lag_records").alias("lag_records_min"), F.max("lag_records").alias("lag_records_max"),
        weighted.alias("_weighted"), covered.alias("_covered"),
        F.max("lag_bytes").alias("lag_bytes_max"), F.max("lag_age_s").alias("lag_age_s_max"))
    return agg.select(
        *key, F.timestamp_micros("_w").alias("window_start"),
        F.timestamp_micros(F.col("_w") + F.lit(step)).alias("window_end"),
        F.col("_last.lro_source").alias("lro_source"), F.col("_last.log_end_offset").alias("log_end_offset"),
        F.col("_last.replicated_end").alias("replicated_end"), F.col("_last.lag_records").alias("lag_records"),
        "lag_records_min", "lag_records_max",
        F.when(F.col("_covered") > 0, F.col("_weighted") / F.col("_covered"))
        .otherwise(F.col("_last.lag_records").cast("double")).alias("lag_records_avg"),
        F.col("_last.lag_bytes").alias("lag_bytes"), "lag_bytes_max",
        F.col("_last.lag_age_s").alias("lag_age_s"), "lag_age_s_max",
        F.col("_last.lag_records_low").alias("lag_records_low"),
        F.col("_last.kip971_reported").alias("kip971_reported"))


def lag_at(timeline: DataFrame, instants: DataFrame, *, time: str = "time") -> DataFrame:
    """The lag of each source partition at given instants (the values of the timeline in force then).

    ``instants`` has ``topic, partition``, a timestamp column ``time`` and, with several flows,
    ``source_alias, target_alias``. Adds the lag columns, null before a partition's first timeline row.

    >>> lag_at(timeline, tables.tool_get_offsets.select("topic", "partition", F.col("captured").alias("time")))
    ...                                                              # doctest: +SKIP
    """
    by = [c for c in KEY if c in instants.columns]
    require_columns(instants, ("topic", "partition", time), "lag_at")
    values = ["log_end_offset", "replicated_end", "lro_source", "lag_records", "lag_bytes", "lag_age_s"]
    right = timeline.select(*by, F.col("time").alias("_t"), *values)
    return asof(instants, right, by=by, left_time=time, right_time="_t", columns=values)
