"""Distributions of lag: Kafka-style histograms and summaries, page cache quantiles and the byte-lag CDF."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.consumer_lag.lag import _as_datetime, lags_for
from workbench.analysis.logs import asof
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


#: The percentiles a Kafka (Yammer) histogram MBean reports, and their attribute names.
YAMMER_PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p98", 0.98), ("p99", 0.99), ("p999", 0.999))
#: The page-cache quantiles the seed asks for.
CACHE_QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.99, 0.999)
#: ``metric`` of :func:`lag_histogram` -> (column, unit, Kafka metric name of the seed).
METRICS: dict[str, tuple[str, str, str]] = {
    "bytes": ("bytes_lag", "bytes", "ConsumerFetchLagBytes"),
    "time": ("time_lag_ms", "ms", "ConsumerFetchLagTimeInMs"),
    "records": ("records_lag", "records", "records lag"),
}


def _window(lags: DataFrame, start: Any, end: Any, time: str = "commit_time") -> DataFrame:
    if start is not None:
        lags = lags.where(F.col(time) >= F.lit(_as_datetime(start)))
    if end is not None:
        lags = lags.where(F.col(time) < F.lit(_as_datetime(end)))
    return lags


def _metric_column(metric: str) -> str:
    if metric not in METRICS:
        raise ConfigError(f"metric: expected one of {sorted(METRICS)}, got {metric!r}")
    return METRICS[metric][0]


def bucket_of(value: Column) -> Column:
    """The power-of-two bucket of a lag: -1 for 0 (or less), else ``k`` with ``2^(k-1) < value <= 2^k``."""
    return F.when(value <= 0, F.lit(-1)).otherwise(F.ceil(F.log2(value.cast("double")))).cast("int")


def lag_histogram(lags: DataFrame, *, metric: str = "bytes", by: Sequence[str] = ("broker",), start: Any = None,
                  end: Any = None) -> DataFrame:
    """``ConsumerFetchLagBytes`` / ``ConsumerFetchLagTimeInMs`` as bucket counts over a window of commits.

    ``lags`` from :func:`lag_at_commits`; ``metric`` is ``bytes``, ``time`` (ms) or ``records``; commits in
    ``[start, end)``. One row per key and non-empty bucket: ``bucket`` -1 holds 0, bucket ``k`` holds
    ``(2^(k-1), 2^k]`` (``lower``, ``upper``). Commits of unknown lag are left out.

    >>> lag_histogram(lags, metric="time", by=["broker", "group"]).show()   # doctest: +SKIP
    """
    column = _metric_column(metric)
    require_columns(lags, (column, "commit_time", *by), "lag_histogram")
    data = _window(lags, start, end).where(F.col(column).isNotNull())
    counted = data.groupBy(*by, bucket_of(F.col(column)).alias("bucket")).agg(F.count("*").alias("count"))
    return counted.select(
        *by, F.lit(metric).alias("metric"), "bucket",
        F.when(F.col("bucket") <= 0, F.lit(0.0)).otherwise(F.pow(F.lit(2.0), F.col("bucket") - 1)).alias("lower"),
        F.when(F.col("bucket") < 0, F.lit(0.0)).otherwise(F.pow(F.lit(2.0), F.col("bucket"))).alias("upper"),
        "count")


def lag_summary(lags: DataFrame, *, metric: str = "bytes", by: Sequence[str] = ("broker",), start: Any = None,
                end: Any = None) -> DataFrame:
    """The attributes of a Kafka histogram MBean for the lag of the commits in a window.

    Percentiles follow Yammer's ``Snapshot.getValue`` (Kafka's histograms): over the ``n`` sorted values,
    ``pos = q·(n+1)``; below 1 the minimum, at ``n`` or above the maximum, else the values at ranks
    ``floor(pos)`` and ``floor(pos)+1`` interpolated. Computed over every commit, not a decaying sample.

    Returns
    -------
    DataFrame
        One row per key: ``by`` columns, ``metric``, ``name`` (the seed's metric name), ``count``,
        ``unknown`` (commits whose lag is unknown), ``min, max, mean, stddev, p50, p75, p95, p98, p99,
        p999``.
    """
    column = _metric_column(metric)
    require_columns(lags, (column, "commit_time", *by), "lag_summary")
    data = _window(lags, start, end)
    key = list(by)
    unknown = data.groupBy(*key).agg(F.sum(F.col(column).isNull().cast("long")).alias("unknown"))
    known = data.where(F.col(column).isNotNull()).select(*key, F.col(column).cast("double").alias("_v"))
    part = Window.partitionBy(*key) if key else Window.partitionBy(F.lit(1))
    ranked = (known.withColumn("_rank", F.row_number().over(part.orderBy("_v")))
              .withColumn("_n", F.count("*").over(part)))
    aggs = [F.count("*").alias("count"), F.min("_v").alias("min"), F.max("_v").alias("max"),
            F.mean("_v").alias("mean"), F.coalesce(F.stddev_samp("_v"), F.lit(0.0)).alias("stddev")]
    for name, q in YAMMER_PERCENTILES:
        pos = F.lit(q) * (F.col("_n") + 1)
        lo = F.floor(pos).cast("long")
        aggs.append(F.max(F.when(F.col("_rank") == F.greatest(F.least(lo, F.col("_n")), F.lit(1)), F.col("_v")))
                    .alias(f"_{name}_lo"))
        aggs.append(F.max(F.when(F.col("_rank") == F.least(lo + 1, F.col("_n")), F.col("_v"))).alias(f"_{name}_hi"))
        aggs.append(F.first(pos - F.floor(pos)).alias(f"_{name}_frac"))
        aggs.append(F.first(pos).alias(f"_{name}_pos"))
    summary = ranked.groupBy(*key).agg(*aggs)
    cols = []
    for name, _q in YAMMER_PERCENTILES:
        lo, hi, frac, pos = (F.col(f"_{name}_{s}") for s in ("lo", "hi", "frac", "pos"))
        cols.append(F.when(pos < 1, F.col("min")).when(pos >= F.col("count"), F.col("max"))
                    .otherwise(lo + frac * (hi - lo)).alias(name))
    result = summary.select(*key, "count", "min", "max", "mean", "stddev", *cols)
    joined = unknown.join(result, key, "left") if key else unknown.crossJoin(result)
    return joined.select(*key, F.lit(metric).alias("metric"), F.lit(METRICS[metric][2]).alias("name"),
                         F.coalesce(F.col("count"), F.lit(0)).cast("long").alias("count"),
                         F.col("unknown").cast("long").alias("unknown"),
                         "min", "max", "mean", "stddev", *[n for n, _ in YAMMER_PERCENTILES])


def broker_writes(batches: DataFrame) -> DataFrame:
    """Bytes each node had written over time, all its replicas together (what fills its page cache).

    Returns
    -------
    DataFrame
        One row per batch of each node's log dirs (KRaft snapshots left out): ``broker, time`` (when the
        node's log held it: the running maximum of batch timestamps in its partition), ``written``
        (bytes the node had written by then, cumulative in time order).
    """
    require_columns(batches, ("node_id", "topic", "partition", "segment_base_offset", "base_offset", "size",
                              "max_timestamp"), "broker_writes")
    data = batches.where(F.col("segment_base_offset").isNotNull() & F.col("topic").isNotNull())
    in_partition = (Window.partitionBy("node_id", "topic", "partition").orderBy("base_offset", "segment_base_offset")
                    .rowsBetween(Window.unboundedPreceding, 0))
    timed = data.withColumn("time", F.max("max_timestamp").over(in_partition))
    in_node = (Window.partitionBy("node_id").orderBy("time", "topic", "partition", "base_offset")
               .rowsBetween(Window.unboundedPreceding, 0))
    return timed.select(F.col("node_id").alias("broker"), "time",
                        F.sum(F.col("size").cast("long")).over(in_node).alias("written"))


def with_cache_bytes(lags: DataFrame, writes: DataFrame) -> DataFrame:
    """``lags`` plus ``cache_bytes``: bytes the leader wrote from when the read batch was written to the commit.

    0 when caught up; null when the read batch or the leader's log dirs are not in the bundle.
    """
    require_columns(lags, ("broker", "commit_time", "committed_batch_reached", "records_lag"), "with_cache_bytes")
    w = writes.select("broker", F.col("time").alias("_wt"), F.col("written").alias("_w"))
    # as-of joins carry each row whole (no generated row id to join back on)
    now = asof(lags, w, by=["broker"], left_time="commit_time", right_time="_wt", columns=["_wt", "_w"],
               suffix="_now").drop("_wt_now")
    before = now.withColumn("_b", F.col("committed_batch_reached") - F.expr("INTERVAL 1 MICROSECOND"))
    joined = asof(before, w, by=["broker"], left_time="_b", right_time="_wt", columns=["_wt", "_w"],
                  suffix="_then").drop("_b", "_wt_then")
    cache = (F.when(F.col("records_lag") <= 0, F.lit(0))
             .when(F.col("committed_batch_reached").isNull() | F.col("_w_now").isNull(), F.lit(None))
             .otherwise(F.greatest(F.col("_w_now") - F.coalesce(F.col("_w_then"), F.lit(0)), F.lit(0))))
    return joined.withColumn("cache_bytes", cache.cast("long")).drop("_w_now", "_w_then")


def page_cache(lags: DataFrame, *, quantiles: Sequence[float] = CACHE_QUANTILES, by: Sequence[str] = ("broker",),
               start: Any = None, end: Any = None) -> DataFrame:
    """How many bytes of log tail, and of page cache, would have served each share of consumer reads.

    One row per key and quantile (nearest rank over commits with a known byte lag): ``tail_bytes``, the
    bytes behind the log end, and ``cache_bytes``, the bytes the broker wrote since the data read (null
    unless ``lags`` has ``cache_bytes``: :func:`with_cache_bytes`).
    """
    require_columns(lags, ("bytes_lag", "commit_time", *by), "page_cache")
    data = _window(lags, start, end)
    has_cache = "cache_bytes" in lags.columns
    tail = _nearest_rank(data, "bytes_lag", by, quantiles, "tail_bytes")
    if has_cache:
        cache = _nearest_rank(data, "cache_bytes", by, quantiles, "cache_bytes").drop("reads")
        return tail.join(cache, [*by, "quantile"], "left").select(*by, "quantile", "reads", "tail_bytes",
                                                                 "cache_bytes")
    return tail.withColumn("cache_bytes", F.lit(None).cast("long"))


def _nearest_rank(data: DataFrame, column: str, by: Sequence[str], quantiles: Sequence[float],
                  name: str) -> DataFrame:
    for q in quantiles:
        if not 0 < q <= 1:
            raise ConfigError(f"quantiles: expected values in (0, 1], got {q}")
    known = data.where(F.col(column).isNotNull()).select(*by, F.col(column).alias("_v"))
    part = Window.partitionBy(*by) if by else Window.partitionBy(F.lit(1))
    ranked = (known.withColumn("_rank", F.row_number().over(part.orderBy("_v")))
              .withColumn("_n", F.count("*").over(part)))
    qs = F.explode(F.array(*[F.lit(float(q)) for q in quantiles])).alias("quantile")
    spark = data.sparkSession
    qframe = spark.range(1).select(qs)
    picked = ranked.crossJoin(qframe).where(F.col("_rank") == F.greatest(F.ceil(F.col("quantile") * F.col("_n")),
                                                                          F.lit(1)))
    return picked.select(*by, "quantile", F.col("_n").alias("reads"), F.col("_v").cast("long").alias(name))


def lag_points(lags: DataFrame, *, column: str = "bytes_lag", by: Sequence[str] = ("broker",),
               per_octave: int = 4, start: Any = None, end: Any = None) -> DataFrame:
    """Commits per point of a log scale of a byte measure: what :func:`byte_lag_cdf` accumulates.

    Returns
    -------
    DataFrame
        One row per key and point holding commits: ``by`` columns, ``bytes`` (0, then
        ``2^(j/per_octave)``: the commits counted have ``column`` above the point before and at most
        this one), ``count``. At most ``per_octave`` × 60 points per key.
    """
    require_columns(lags, (column, "commit_time", *by), "lag_points")
    if per_octave < 1:
        raise ConfigError(f"per_octave: expected at least 1, got {per_octave}")
    data = _window(lags, start, end).where(F.col(column).isNotNull())
    point = F.when(F.col(column) <= 0, F.lit(-1)).otherwise(
        F.ceil(F.log2(F.col(column).cast("double")) * per_octave)).cast("int")
    counted = data.groupBy(*by, point.alias("_j")).agg(F.count("*").alias("count"))
    return counted.select(*by, F.when(F.col("_j") < 0, F.lit(0.0)).otherwise(
        F.pow(F.lit(2.0), F.col("_j") / per_octave)).alias("bytes"), "count")


def byte_lag_cdf(lags: DataFrame, *, column: str = "bytes_lag", by: Sequence[str] = ("broker",),
                 per_octave: int = 4, start: Any = None, end: Any = None) -> DataFrame:
    """The cumulative distribution of a byte measure over commits, at fixed points on a log scale.

    Returns
    -------
    DataFrame
        One row per key and point: ``by`` columns, ``bytes`` (0, then ``2^(j/per_octave)``), ``fraction``
        (share of commits whose ``column`` is at most ``bytes``), ``reads`` (commits with a known value).
        Small however many commits: at most ``per_octave`` × 60 points per key.
    """
    require_columns(lags, (column, "commit_time", *by), "byte_lag_cdf")
    counted = lag_points(lags, column=column, by=by, per_octave=per_octave, start=start, end=end)
    order = (Window.partitionBy(*by) if by else Window.partitionBy(F.lit(1))).orderBy("bytes")
    cum = (counted.withColumn("_cum", F.sum("count").over(order.rowsBetween(Window.unboundedPreceding, 0)))
           .withColumn("reads", F.sum("count").over(Window.partitionBy(*by) if by else Window.partitionBy(F.lit(1)))))
    return cum.select(*by, "bytes", (F.col("_cum") / F.col("reads")).alias("fraction"), "reads")


#: Equal parts of a bundle's commit span that the view's distributions are counted in, so that they
#: can follow a time window without the commits themselves.
VIEW_SLICES = 48


def with_time_slices(lags: DataFrame, *, slices: int = VIEW_SLICES, time: str = "commit_time") -> DataFrame:
    """``lags`` with ``slice_start, slice_end``: the part of the span from the first to the last ``time``,
    cut into ``slices`` equal parts (whole milliseconds), that holds each row."""
    require_columns(lags, (time,), "with_time_slices")
    if slices < 1:
        raise ConfigError(f"slices: expected at least 1, got {slices}")
    span = lags.agg(F.unix_millis(F.min(time)).alias("_t0"), F.unix_millis(F.max(time)).alias("_t1"))
    width = F.greatest(F.lit(1), F.ceil((F.col("_t1") - F.col("_t0") + 1) / F.lit(slices))).cast("long")
    first = F.col("_t0") + F.floor((F.unix_millis(F.col(time)) - F.col("_t0")) / F.col("_w")).cast("long") * F.col("_w")
    return (lags.crossJoin(F.broadcast(span.select("_t0", width.alias("_w"))))
            .withColumn("slice_start", F.timestamp_millis(first))
            .withColumn("slice_end", F.timestamp_millis(first + F.col("_w")))
            .drop("_t0", "_w"))


def in_slices(frame: pd.DataFrame, start: Any = None, end: Any = None) -> pd.DataFrame:
    """The rows of a frame counted in time slices (``slice_start, slice_end``) whose slice overlaps
    ``[start, end)``; a frame without slices is returned whole (it covers the whole bundle)."""
    if "slice_start" not in frame.columns or (start is None and end is None):
        return frame
    keep = pd.Series(True, index=frame.index)
    if start is not None:
        keep &= pd.to_datetime(frame["slice_end"]) > pd.Timestamp(_as_datetime(start))
    if end is not None:
        keep &= pd.to_datetime(frame["slice_start"]) < pd.Timestamp(_as_datetime(end))
    return frame[keep]


def cdf_of_points(points: pd.DataFrame, *, by: Sequence[str] = ("broker",), start: Any = None,
                  end: Any = None) -> pd.DataFrame:
    """:func:`byte_lag_cdf`'s rows (``by, bytes, fraction, reads``) from :func:`lag_points` rows, summed over
    the time slices that overlap ``[start, end)`` (:func:`in_slices`; all of them by default)."""
    data = in_slices(points, start, end)
    key = list(by)
    counted = data.groupby([*key, "bytes"], as_index=False)["count"].sum().sort_values([*key, "bytes"])
    grouped = counted.groupby(key) if key else counted.groupby(lambda _i: 0)
    counted["reads"] = grouped["count"].transform("sum")
    counted["fraction"] = grouped["count"].cumsum() / counted["reads"]
    return counted[[*key, "bytes", "fraction", "reads"]].reset_index(drop=True)


def cache_lags_for(tables: Any) -> DataFrame:
    """:func:`lags_for` with ``cache_bytes`` (:func:`with_cache_bytes` over the bundle's batches), computed once."""
    return tables.derive("consumer_lag.cache_lags",
                         lambda: with_cache_bytes(lags_for(tables), broker_writes(tables.batches)))
