"""What the ISR view plots: the least healthy partitions' intervals and the thinned UnderMinIsr counts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.isr.summary import under_min_isr_counts
from workbench.params import parse_window

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


#: Partitions whose intervals a view receives at most (the least healthy; ``isr_view_partitions``).
VIEW_PARTITIONS = 500

#: Points per broker of the UnderMinIsr count series a view receives at most (``isr_view_points``).
VIEW_POINTS = 2000


def view_frames(states: DataFrame, *, topics: Any = None, start: Any = None, end: Any = None,
                partitions: int = VIEW_PARTITIONS, points: int = VIEW_POINTS) -> dict[str, DataFrame]:
    """What the ISR view plots, bounded whatever the cluster's size, aggregated in Spark.

    Parameters
    ----------
    states : DataFrame
        From :func:`partition_states`.
    topics : str or iterable of str, optional
        Only these topics (a string is a comma-separated list); empty: all.
    start, end : optional
        The time window (``datetime``, ``Timestamp`` or ISO text; UTC when naive): intervals
        outside it are left out and the ranking counts time inside it only.
    partitions : int
        At most this many partitions' intervals: the least healthy ones (most offline time, then
        under min ISR, then otherwise unhealthy time within the window; then topic, partition), as
        the timeline's own ``max_rows`` ranks them.
    points : int
        At most about twice this many rows per broker of the count series: where a broker's
        series has more changes, time is cut into ``points`` equal buckets and each bucket keeps
        its highest count and its last one (peaks and the level after each bucket survive), and
        the series keeps its first row.

    Returns
    -------
    dict of str to DataFrame
        ``states`` (rows of ``states``), ``counts`` (:func:`under_min_isr_counts`, the whole log:
        thinned, not windowed) and ``partitions``: one row, ``partitions`` (in the filters) and
        ``shown``.

    Examples
    --------
    >>> frames = view_frames(states_for(tables, {}), partitions=200)        # doctest: +SKIP
    >>> frames["partitions"].first()                                       # doctest: +SKIP
    Row(partitions=10000, shown=200)
    """
    require_columns(states, ("topic", "topic_id", "partition", "start", "end", "state", "leader"), "view_frames")
    if partitions < 1 or points < 1:
        raise ValueError(f"view_frames: partitions and points must be positive, got {partitions} and {points}")
    chosen = [t.strip() for t in topics.split(",")] if isinstance(topics, str) else list(topics or ())
    chosen = [t for t in chosen if t]
    lo, hi = parse_window(start, end)
    rows = states
    if chosen:
        rows = rows.where(F.col("topic").isin(chosen))
    if lo is not None:
        rows = rows.where(F.col("end") > F.lit(lo))
    if hi is not None:
        rows = rows.where(F.col("start") < F.lit(hi))
    begin = F.unix_micros("start") if lo is None else F.greatest(F.unix_micros("start"), F.unix_micros(F.lit(lo)))
    finish = F.unix_micros("end") if hi is None else F.least(F.unix_micros("end"), F.unix_micros(F.lit(hi)))
    micros = F.greatest(finish - begin, F.lit(0))  # whole µs, summed exactly: ties stay ties
    keys = ["topic", "topic_id", "partition"]
    ranked = (rows.groupBy(*keys).agg(
        F.sum(F.when(F.col("state") == "offline", micros).otherwise(0)).alias("_offline"),
        F.sum(F.when(F.col("state") == "under_min_isr", micros).otherwise(0)).alias("_under_min"),
        F.sum(F.when(F.col("state") != "healthy", micros).otherwise(0)).alias("_unhealthy"))
        .withColumn("_rank", F.row_number().over(Window.orderBy(
            F.col("_offline").desc(), F.col("_under_min").desc(), F.col("_unhealthy").desc(), "topic", "partition",
            "topic_id"))))
    kept = ranked.where(F.col("_rank") <= partitions).select(*keys)
    shown_states = rows.join(F.broadcast(kept), ["topic_id", "partition", "topic"], "left_semi").select(*states.columns)
    total = ranked.agg(F.count("*").cast("long").alias("partitions")).withColumn(
        "shown", F.least(F.col("partitions"), F.lit(partitions)).cast("long"))
    counts = under_min_isr_counts(states)
    span = counts.groupBy("broker").agg(F.count("*").alias("_n"), F.min(F.unix_micros("time")).alias("_t0"),
                                        F.max(F.unix_micros("time")).alias("_t1"))
    bucketed = (counts.join(span, "broker")
                .withColumn("_bucket", F.when(F.col("_n") <= 2 * points, F.monotonically_increasing_id()).otherwise(
                    F.floor((F.unix_micros("time") - F.col("_t0")) * F.lit(points)
                            / F.greatest(F.col("_t1") - F.col("_t0"), F.lit(1))))))
    by_bucket = Window.partitionBy("broker", "_bucket")
    thinned = (bucketed
               .withColumn("_peak", F.row_number().over(by_bucket.orderBy(F.col("count").desc(), "time")))
               .withColumn("_last", F.row_number().over(by_bucket.orderBy(F.col("time").desc())))
               .where((F.col("_peak") == 1) | (F.col("_last") == 1) | (F.unix_micros("time") == F.col("_t0")))
               .select("broker", "time", "count").orderBy("broker", "time"))
    return {"states": shown_states, "counts": thinned, "partitions": total}
