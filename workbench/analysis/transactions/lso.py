"""The last stable offset of each transactional partition over time, and how far it lagged its log end."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.transactions.inputs import as_of, log_rows
from workbench.analysis.transactions.spans import transaction_spans

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

_STEP_SCHEMA = ("topic string, partition int, node_id int, t_us long, log_end_offset long, lso long, "
                "lag_records long, lag_bytes long, pinned_producer_id long, pinned_since_us long")
#: Columns of :func:`lso_series`.
SERIES_COLUMNS = ("topic", "partition", "node_id", "time", "log_end_offset", "lso", "lag_records", "lag_bytes",
                  "lag_seconds", "pinned_producer_id", "pinned_since")


def _steps(rows: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """One partition's LSO after each batch: its log end, or the first offset of the earliest open transaction."""
    import numpy as np
    import pandas as pd

    rows = rows.sort_values("base_offset", kind="stable").reset_index(drop=True)
    if rows.empty:
        return pd.DataFrame(columns=[c.split(" ")[0] for c in _STEP_SCHEMA.split(", ")])
    bases = rows["base_offset"].to_numpy(np.int64)
    ends = rows["end_offset"].to_numpy(np.int64)
    lso = ends.copy()
    pinned = np.full(len(rows), -1, np.int64)
    since = np.full(len(rows), np.iinfo(np.int64).min, np.int64)
    # the earliest open transaction wins: later-starting spans are written first and overwritten
    for span in spans.sort_values("first_offset", ascending=False).itertuples(index=False):
        lo = int(np.searchsorted(bases, span.first_offset, "left"))
        hi = len(bases) if pd.isna(span.marker_offset) else int(np.searchsorted(bases, span.marker_offset, "left"))
        if hi > lo:
            lso[lo:hi] = span.first_offset
            pinned[lo:hi] = span.producer_id
            since[lo:hi] = -1 if pd.isna(span.start_us) else span.start_us
    at = np.clip(np.searchsorted(bases, lso, "left"), 0, len(bases) - 1)
    bytes_before = rows["bytes_before"].to_numpy(np.int64)
    bytes_end = rows["bytes_end"].to_numpy(np.int64)
    lag_bytes = np.where(lso < ends, bytes_end - bytes_before[at], 0)
    return pd.DataFrame({
        "topic": rows["topic"], "partition": rows["partition"], "node_id": rows["node_id"], "t_us": rows["t_us"],
        "log_end_offset": ends, "lso": lso, "lag_records": ends - lso, "lag_bytes": lag_bytes,
        "pinned_producer_id": pd.Series(pinned, dtype="Int64").mask(pinned < 0),
        "pinned_since_us": pd.Series(since, dtype="Int64").mask(since == np.iinfo(np.int64).min)})


def lso_series(tables: Any, at_ms: int | None = None) -> DataFrame:
    """One row per batch appended to a transactional partition: the log end and the last stable offset after it.

    The LSO is what a ``read_committed`` consumer may read up to and what ``ListOffsets`` answers
    with isolation level read_committed: the first offset of the earliest transaction still open
    on the partition, or the log end when none is (the high watermark, on a leader whose followers
    kept up). Columns :data:`SERIES_COLUMNS`: ``time`` (when the log held the batch), ``log_end_offset``,
    ``lso``, ``lag_records`` (log end − LSO, in offsets: markers take one each), ``lag_bytes`` (bytes
    of log from the LSO to the log end), ``lag_seconds`` (how long the record at the LSO had been
    waiting: since the pinning transaction's first batch; 0 when nothing pins it),
    ``pinned_producer_id`` and ``pinned_since`` (the transaction holding the LSO back).
    """
    def compute() -> DataFrame:
        rows = log_rows(tables, at_ms).where(F.col("base_offset").isNotNull() & F.col("end_offset").isNotNull())
        spans = transaction_spans(tables, at_ms).select(
            "topic", "partition", "producer_id", "first_offset", "marker_offset",
            F.unix_micros("start").alias("start_us"))
        steps = (rows.select("topic", "partition", "node_id", "base_offset", "end_offset", "bytes_before",
                             "bytes_end", "t_us")
                 .groupBy("topic", "partition").cogroup(spans.groupBy("topic", "partition"))
                 .applyInPandas(_steps, _STEP_SCHEMA))
        since = F.timestamp_micros("pinned_since_us")
        time = F.timestamp_micros("t_us")
        waited = F.when(F.col("pinned_since_us").isNull(), F.lit(0.0)).otherwise(
            F.greatest(F.lit(0.0), (F.col("t_us") - F.col("pinned_since_us")) / F.lit(1e6)))
        return steps.select("topic", "partition", "node_id", time.alias("time"), "log_end_offset", "lso",
                            "lag_records", "lag_bytes", waited.alias("lag_seconds"), "pinned_producer_id",
                            since.alias("pinned_since"))

    # a past moment is asked for once (a test, a what-if): kept only at the bundle's end
    at_ms = as_of(tables, at_ms)
    return compute() if at_ms is not None else tables.derive("transactions.lso", compute)


def lso_at(series: DataFrame, topic: str, partition: int, t_ms: int) -> DataFrame:
    """The series' last row of one partition at or before ``t_ms`` (what ``ListOffsets`` would have answered)."""
    w = Window.orderBy(F.col("time").desc(), F.col("log_end_offset").desc())
    return (series.where((F.col("topic") == topic) & (F.col("partition") == partition)
                         & (F.unix_millis("time") <= F.lit(int(t_ms))))
            .withColumn("_n", F.row_number().over(w)).where("_n = 1").drop("_n"))


def pinned_episodes(series: DataFrame, end_ms: int | None, min_seconds: float) -> DataFrame:
    """Stretches during which one transaction held a partition's LSO behind its log end, ``min_seconds`` or longer.

    One row per stretch: ``topic, partition, lso, pinned_producer_id, start`` (the transaction's
    first batch), ``end`` (the first batch after which the LSO moved on; null: still pinned at the
    bundle's end), ``seconds`` (to ``end_ms`` when still pinned), ``peak_records, peak_bytes``,
    ``log_end_offset`` (the log end when it ended, or at the end).
    """
    order = Window.partitionBy("topic", "partition").orderBy("time", "log_end_offset")
    marked = (series.withColumn("_next_lso", F.lead("lso").over(order))
              .withColumn("_next_time", F.lead("time").over(order)))
    pinned = marked.where(F.col("lag_records") > 0)
    stretches = pinned.groupBy("topic", "partition", "lso", "pinned_producer_id").agg(
        F.min("pinned_since").alias("_since"), F.min("time").alias("_first"),
        F.max("lag_records").alias("peak_records"), F.max("lag_bytes").alias("peak_bytes"),
        F.max("log_end_offset").alias("log_end_offset"),
        F.min(F.when(F.col("_next_lso") != F.col("lso"), F.col("_next_time"))).alias("end"))
    until = F.coalesce(F.unix_micros("end"), F.lit(None if end_ms is None else int(end_ms) * 1000).cast("long"))
    start = F.coalesce("_since", "_first")
    seconds = (until - F.unix_micros(start)) / F.lit(1e6)
    return (stretches.select("topic", "partition", "lso", "pinned_producer_id", start.alias("start"), "end",
                             seconds.alias("seconds"), "peak_records", "peak_bytes", "log_end_offset")
            .where(F.col("seconds") >= F.lit(float(min_seconds))))
