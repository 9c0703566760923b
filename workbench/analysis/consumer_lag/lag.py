"""Lag in records, bytes and time at every commit and at chosen instants, and the worst partitions."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.consumer_lag.inputs import _leaders, _metrics, commits_for, growth_for, log_offsets_from_metrics
from workbench.analysis.logs import asof
from workbench.errors import ConfigError
from workbench.params import parse_instant

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


#: Columns of :func:`lag_at_commits` (and, with ``time`` and ``last_commit_time``, of :func:`lag_at`).
LAG_COLUMNS = ("group", "topic", "partition", "commit_time", "committed_offset", "log_end_offset", "log_end_source",
               "records_lag", "bytes_lag", "time_lag_ms", "committed_batch_offset", "committed_batch_time",
               "committed_batch_reached", "log_end_time", "timestamp_type", "broker", "note")

CREATE_TIME_NOTE = "CreateTime: times are the producers' clocks"
METRIC_END_NOTE = "log end from the broker's LogEndOffset metric (segments gone)"
BELOW_START_NOTE = "committed offset below the first batch in the bundle: bytes and time unknown"
UNKNOWN_END_NOTE = "log end at that time unknown (no batch, no LogEndOffset sample)"
NEGATIVE_OFFSET_NOTE = "committed offset negative: no position in the log, lag unknown"
_US = 1_000_000


def lag_at_commits(commits: DataFrame, growth: DataFrame, *, leaders: DataFrame | None = None,
                   log_ends: DataFrame | None = None) -> DataFrame:
    """Lag in records, bytes and time of every commit, when it was made: one row of :data:`LAG_COLUMNS` each.

    ``commits``: :func:`effective_commits`; ``growth``: :func:`~workbench.analysis.logs.log_growth` of the
    committed topics; ``leaders`` (:func:`leader_changes`) name the ``broker``, else the node whose replica
    was read; ``log_ends`` (:func:`log_offsets_from_metrics`) give the log end where the segments are gone
    (``log_end_source`` ``metric``, else ``segments``). ``records_lag`` is log end minus committed offset, as
    ``kafka-consumer-groups`` computes it; ``bytes_lag`` and ``time_lag_ms`` run from the batch holding the
    committed offset (``committed_batch_*``: the next batch when the offset lies in a gap; its time is the
    max timestamp of its header) to the log end (``log_end_time``: the largest record timestamp then), 0
    when caught up; ``note`` says why a figure is missing or what it rests on.

    >>> lag_at_commits(commits, growth).orderBy(F.desc("bytes_lag")).show(5)   # doctest: +SKIP
    """
    require_columns(commits, ("group", "topic", "partition", "commit_time", "committed_offset"), "lag_at_commits")
    return _lag_rows(commits, growth, time="commit_time", leaders=leaders, log_ends=log_ends).select(*LAG_COLUMNS)


def lag_at(commits: DataFrame, growth: DataFrame, instants: DataFrame | Sequence[Any], *,
           removed: DataFrame | None = None, leaders: DataFrame | None = None,
           log_ends: DataFrame | None = None) -> DataFrame:
    """Lag of every group and partition at chosen instants: the state ``kafka-consumer-groups --describe`` shows.

    Each group-partition's last commit strictly before the instant against the log end at it; a partition
    whose offset was removed before it is left out, as the tool does. ``instants`` is a DataFrame with a
    timestamp column ``time`` (other columns kept) or datetimes / ISO strings (UTC); ``removed`` is
    :func:`removed_offsets`; the rest as for :func:`lag_at_commits`. Returns the instants' columns then
    :data:`LAG_COLUMNS`, ``commit_time`` renamed ``last_commit_time``.

    >>> lag_at(commits, growth, ["2026-03-01T03:12:00"]).show()   # doctest: +SKIP
    """
    require_columns(commits, ("group", "topic", "partition", "commit_time", "committed_offset"), "lag_at")
    spark = commits.sparkSession
    if not hasattr(instants, "columns"):
        instants = spark.createDataFrame([(_as_datetime(v),) for v in instants], "time timestamp")
    require_columns(instants, ("time",), "lag_at (instants)")
    keys = commits.select("group", "topic", "partition").distinct()
    events = commits.select("group", "topic", "partition", F.col("commit_time").alias("_et"), "committed_offset",
                            F.lit(False).alias("_removed"))
    if removed is not None:
        events = events.unionByName(removed.select("group", "topic", "partition", F.col("removed_time").alias("_et"),
                                                   F.lit(None).cast("long").alias("committed_offset"),
                                                   F.lit(True).alias("_removed")))
    grid = keys.crossJoin(instants).withColumn("_before", F.col("time") - F.expr("INTERVAL 1 MICROSECOND"))
    positions = asof(grid, events, by=["group", "topic", "partition"], left_time="_before", right_time="_et",
                     columns=["_et", "_removed", "committed_offset"])
    positions = (positions.where(F.col("_et").isNotNull() & ~F.col("_removed"))
                 .withColumnRenamed("_et", "last_commit_time").drop("_before", "_removed"))
    rows = _lag_rows(positions, growth, time="time", leaders=leaders, log_ends=log_ends)
    inst_cols = [c for c in instants.columns]
    out = [c if c != "commit_time" else "last_commit_time" for c in LAG_COLUMNS]
    return rows.select(*inst_cols, *[c for c in out if c not in inst_cols])


def _as_datetime(value: Any) -> dt.datetime:
    """An instant given by a person (:func:`workbench.params.parse_instant`) as a naive UTC datetime,
    what a Spark timestamp literal in the session's UTC takes; none is refused."""
    stamp = parse_instant(value, "instant")
    if stamp is None:
        raise ConfigError(f"instant: expected a date and time such as 2026-03-01T03:12:05, got {value!r}")
    return stamp.replace(tzinfo=None)


def _lag_rows(positions: DataFrame, growth: DataFrame, *, time: str, leaders: DataFrame | None,
              log_ends: DataFrame | None) -> DataFrame:
    """Log end at ``time``, the batch holding the committed offset, and the three lags."""
    require_columns(growth, ("topic", "partition", "node_id", "base_offset", "end_offset", "bytes_before",
                             "bytes_end", "max_timestamp", "reached", "timestamp_type"), "consumer lag (growth)")
    by = ["topic", "partition"]
    ends = growth.select(*by, "reached", F.col("end_offset").alias("_leo"), F.col("bytes_end").alias("_leo_bytes"),
                         F.col("reached").alias("_leo_time"))
    rows = asof(positions, ends, by=by, left_time=time, right_time="reached",
                columns=["_leo", "_leo_bytes", "_leo_time"])
    # the batch holding the committed offset: the first batch whose last offset is at or after it
    holders = growth.select(*by, (-(F.col("end_offset") - 1)).alias("_hkey"), F.col("base_offset").alias("_hb_base"),
                            F.col("bytes_before").alias("_hb_bytes"), F.col("max_timestamp").alias("_hb_time"),
                            F.col("reached").alias("_hb_reached"))
    rows = asof(rows.withColumn("_ckey", -F.col("committed_offset")), holders, by=by, left_time="_ckey",
                right_time="_hkey", columns=["_hb_base", "_hb_bytes", "_hb_time", "_hb_reached"]).drop("_ckey")
    facts = growth.groupBy(*by).agg(
        F.min("base_offset").alias("_first_offset"),
        F.max(F.when(F.col("timestamp_type") == "CreateTime", 1).otherwise(0)).alias("_create_time"),
        F.first("timestamp_type", ignorenulls=True).alias("timestamp_type"),
        F.first("node_id", ignorenulls=True).alias("_replica"))
    rows = rows.join(facts, by, "left")
    if log_ends is not None:
        samples = log_ends.groupBy(*by, "time").agg(F.max("value").alias("_m_leo"))
        rows = asof(rows, samples.withColumnRenamed("time", "_mt"), by=by, left_time=time, right_time="_mt",
                    columns=["_m_leo"])
    else:
        rows = rows.withColumn("_m_leo", F.lit(None).cast("long"))
    if leaders is not None:
        rows = asof(rows, leaders.select(*by, F.col("time").alias("_lt"), "metadata_offset", "leader"), by=by,
                    left_time=time, right_time="_lt", columns=["metadata_offset", "leader"]).drop("metadata_offset")
    else:
        rows = rows.withColumn("leader", F.lit(None).cast("int"))

    from_metric = F.col("_leo").isNull() & F.col("_m_leo").isNotNull()
    # a negative committed offset (a damaged record, or -1 for "no position") reads from nowhere: its lags
    # stay unknown, as kafka-consumer-groups shows them, and it counts in no broker's distribution
    committed = F.col("committed_offset")
    negative = committed < 0
    rows = rows.select(*[F.when(~negative, F.col(c)).alias(c) if c.startswith("_hb_") else c for c in rows.columns])
    # a consumer commits only offsets it has read: the log end was at least the committed offset (the
    # metric, sampled each second, can be older than the commit)
    leo = F.coalesce(F.col("_leo"), F.greatest(F.col("_m_leo"), F.when(~negative, committed)))
    caught_up = committed >= leo
    below = F.col("_first_offset").isNotNull() & (committed < F.col("_first_offset"))
    known = ~below & F.col("_hb_base").isNotNull() & F.col("_leo").isNotNull()
    bytes_lag = (F.when(leo.isNull(), F.lit(None)).when(caught_up, F.lit(0))
                 .when(known, F.greatest(F.col("_leo_bytes") - F.col("_hb_bytes"), F.lit(0))))
    time_lag = (F.when(leo.isNull(), F.lit(None)).when(caught_up, F.lit(0))
                .when(known, F.greatest((F.unix_micros("_leo_time") - F.unix_micros("_hb_time")) / 1000, F.lit(0))))
    note = F.concat_ws("; ",
                       F.when(F.col("_create_time") == 1, F.lit(CREATE_TIME_NOTE)),
                       F.when(from_metric, F.lit(METRIC_END_NOTE)),
                       F.when(negative, F.lit(NEGATIVE_OFFSET_NOTE)),
                       F.when(below & ~caught_up & ~negative, F.lit(BELOW_START_NOTE)),
                       F.when(leo.isNull(), F.lit(UNKNOWN_END_NOTE)))
    return rows.select(
        *positions.columns,
        leo.cast("long").alias("log_end_offset"),
        F.when(F.col("_leo").isNotNull(), F.lit("segments")).when(from_metric, F.lit("metric")).alias("log_end_source"),
        F.when(~negative, leo - committed).cast("long").alias("records_lag"),
        bytes_lag.cast("long").alias("bytes_lag"),
        time_lag.cast("long").alias("time_lag_ms"),
        F.col("_hb_base").alias("committed_batch_offset"),
        F.col("_hb_time").alias("committed_batch_time"),
        F.col("_hb_reached").alias("committed_batch_reached"),
        F.col("_leo_time").alias("log_end_time"),
        "timestamp_type",
        F.coalesce(F.col("leader"), F.col("_replica")).cast("int").alias("broker"),
        note.alias("note"))


def lags_for(tables: Any) -> DataFrame:
    """:func:`lag_at_commits` of a bundle (leaders from its metadata log, LogEndOffset samples), computed once."""
    def compute() -> DataFrame:
        return lag_at_commits(commits_for(tables), growth_for(tables), leaders=_leaders(tables),
                              log_ends=log_offsets_from_metrics(_metrics(tables), "end"))

    return tables.derive("consumer_lag.lags", compute)


#: How many partitions :func:`view_frames` keeps per frame (the worst by byte lag).
VIEW_TOP_PARTITIONS = 50


def top_partitions(lags: DataFrame, n: int = VIEW_TOP_PARTITIONS) -> DataFrame:
    """The ``n`` group-partitions with the largest byte lag (then time lag), worst first.

    Returns
    -------
    DataFrame
        ``group, topic, partition, broker, commits, max_records_lag, max_bytes_lag, max_time_lag_ms``.
    """
    agg = lags.groupBy("group", "topic", "partition").agg(
        F.max("broker").alias("broker"), F.count("*").cast("long").alias("commits"),
        F.max("records_lag").alias("max_records_lag"), F.max("bytes_lag").alias("max_bytes_lag"),
        F.max("time_lag_ms").alias("max_time_lag_ms"))
    return agg.orderBy(F.col("max_bytes_lag").desc_nulls_last(), F.col("max_time_lag_ms").desc_nulls_last(),
                       "group", "topic", "partition").limit(n)
