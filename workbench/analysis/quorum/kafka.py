"""Kafka's own figures: metadata batch sizes beside the brokers' histograms, and scraped raft-metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


#: Columns of :func:`batch_sizes`.
BATCH_SIZE_COLUMNS = ("window_start", "window_end", "source", "node_id", "batches", "records_avg", "records_max",
                      "bytes_avg", "bytes_max", "processing_us_avg", "processing_us_max")

_SIZE_GAUGES = {
    "records": ("_metadatabatchsizes",),
    "processing": ("_metadatabatchprocessingtimeus", "_pending_record_processing_time_us"),
    "bytes": ("_record_batch_size_byte",),
}


def batch_sizes(appends: DataFrame, metrics: DataFrame | None = None, *, window_s: float = 10.0) -> DataFrame:
    """Metadata batch sizes per time window: computed from the log, and as the brokers reported them.

    From the log: batches appended in the window, metadata records and bytes per batch (average
    and maximum; a control batch counts as a batch of 0 records, as Kafka's loader counts it).
    From the brokers' exports (where scraped): the ``MetadataBatchSizes`` and
    ``MetadataBatchProcessingTimeUs`` histograms (``kafka.server:type=BrokerMetadataListener``;
    their count and mean give the batches loaded in the window and their average; their maximum
    is since the broker started), and ``record-batch-size-byte-avg/max`` and
    ``pending-record-processing-time-us`` gauges of releases that had them.

    Parameters
    ----------
    appends : DataFrame
        From :func:`log_appends`.
    metrics : DataFrame, optional
        The ``metrics`` table.
    window_s : float
        Window length in seconds (windows start at multiples of it since the epoch).

    Returns
    -------
    DataFrame
        One row per window and source (``log``, or the export format with ``node_id``),
        :data:`BATCH_SIZE_COLUMNS`.

    Examples
    --------
    >>> batch_sizes(appends, tables.metrics, window_s=30).show()    # doctest: +SKIP
    """
    if window_s <= 0:
        raise ValueError(f"window_s must be > 0, got {window_s}")
    width_ms = int(window_s * 1000)

    def window_start(col: str) -> Column:
        return F.timestamp_millis((F.floor(F.unix_millis(col) / width_ms) * width_ms).cast("long"))

    # a control batch (LeaderChange, snapshot markers, voters) carries no metadata record: Kafka's
    # loader counts it as a batch of 0 records in MetadataBatchSizes
    metadata_records = F.when(F.coalesce("is_control", F.lit(False)), F.lit(0)).otherwise(F.col("records"))
    log = (appends.withColumn("window_start", window_start("time")).withColumn("_records", metadata_records)
           .groupBy("window_start").agg(
        F.count("*").cast("long").alias("batches"), F.avg("_records").alias("records_avg"),
        F.max("_records").cast("double").alias("records_max"), F.avg("bytes").alias("bytes_avg"),
        F.max("bytes").cast("double").alias("bytes_max"))
        .select("window_start", F.lit("log").alias("source"), F.lit(None).cast("int").alias("node_id"), "batches",
                "records_avg", "records_max", "bytes_avg", "bytes_max",
                F.lit(None).cast("double").alias("processing_us_avg"),
                F.lit(None).cast("double").alias("processing_us_max")))
    out = log
    if metrics is not None:
        def family(kind: str) -> Column:
            cond = F.lit(False)
            for stem in _SIZE_GAUGES[kind]:
                cond = cond | F.col("name").contains(stem)
            return cond

        rows = (metrics.where(F.col("timestamp").isNotNull() & F.col("node_id").isNotNull()
                              & (family("records") | family("processing") | family("bytes")))
                .withColumn("_kind", F.when(family("records"), F.lit("records"))
                            .when(family("processing"), F.lit("processing")).otherwise(F.lit("bytes")))
                .withColumn("_stat", F.when(F.col("name").endswith("_count"), F.lit("count"))
                            .when(F.col("name").endswith("_mean") | F.col("name").endswith("_avg"), F.lit("mean"))
                            .when(F.col("name").endswith("_max"), F.lit("max")))
                .where(F.col("_stat").isNotNull() & ~F.isnan("value")))
        samples = (rows.groupBy("node_id", "format", "path", "timestamp")
                   .pivot("_kind", ["records", "processing", "bytes"])
                   .agg(F.max(F.when(F.col("_stat") == "count", F.col("value"))).alias("count"),
                        F.max(F.when(F.col("_stat") == "mean", F.col("value"))).alias("mean"),
                        F.max(F.when(F.col("_stat") == "max", F.col("value"))).alias("max")))
        order = Window.partitionBy("node_id", "format", "path").orderBy("timestamp")
        for kind in ("records", "processing"):
            samples = (samples.withColumn(f"_{kind}_sum", F.col(f"{kind}_count") * F.col(f"{kind}_mean"))
                       .withColumn(f"_{kind}_dn", F.col(f"{kind}_count") - F.lag(f"{kind}_count").over(order))
                       .withColumn(f"_{kind}_ds", F.col(f"_{kind}_sum") - F.lag(f"_{kind}_sum").over(order)))
        scraped = (samples.withColumn("window_start", window_start("timestamp"))
                   .groupBy("window_start", F.col("format").alias("source"), "node_id").agg(
                       F.sum("_records_dn").cast("long").alias("batches"),
                       (F.sum("_records_ds") / F.sum("_records_dn")).alias("records_avg"),
                       F.max("records_max").alias("records_max"),
                       F.avg("bytes_mean").alias("bytes_avg"), F.max("bytes_max").alias("bytes_max"),
                       (F.sum("_processing_ds") / F.sum("_processing_dn")).alias("processing_us_avg"),
                       F.max("processing_max").alias("processing_us_max")))
        out = out.unionByName(scraped.select(*[c for c in log.columns]))
    return (out.withColumn("window_end", F.col("window_start") + F.expr(f"INTERVAL {width_ms} MILLISECONDS"))
            .select(*BATCH_SIZE_COLUMNS).orderBy("window_start", "source", "node_id"))


#: ``raft-metrics`` gauges of :func:`raft_latencies`, by output column.
RAFT_GAUGES: dict[str, str] = {
    "commit_latency_avg_ms": "kafka_server_raft_metrics_commit_latency_avg",
    "commit_latency_max_ms": "kafka_server_raft_metrics_commit_latency_max",
    "election_latency_avg_ms": "kafka_server_raft_metrics_election_latency_avg",
    "election_latency_max_ms": "kafka_server_raft_metrics_election_latency_max",
    "append_records_rate": "kafka_server_raft_metrics_append_records_rate",
    "fetch_records_rate": "kafka_server_raft_metrics_fetch_records_rate",
    "current_epoch": "kafka_server_raft_metrics_current_epoch",
    "current_leader": "kafka_server_raft_metrics_current_leader",
    "high_watermark": "kafka_server_raft_metrics_high_watermark",
    "log_end_offset": "kafka_server_raft_metrics_log_end_offset",
}


def raft_latencies(metrics: DataFrame) -> DataFrame:
    """Each node's scraped ``raft-metrics``: commit and election latency, append and fetch rates, epoch.

    Kafka's own figures, where the bundle exported them (the log holds no latencies): the commit
    latency is the time from the leader's append to the high watermark passing it (leader only;
    NaN elsewhere), the election latency the length of the last election.

    Parameters
    ----------
    metrics : DataFrame
        The ``metrics`` table.

    Returns
    -------
    DataFrame
        One row per node, export file and sample time: ``node_id, source, time`` and the
        columns of :data:`RAFT_GAUGES` (null when not sampled, or NaN as Kafka reported it).

    Examples
    --------
    >>> raft_latencies(tables.metrics).where("commit_latency_max_ms > 100").show()    # doctest: +SKIP
    """
    require_columns(metrics, ("node_id", "path", "format", "name", "timestamp", "value"), "raft_latencies")
    rows = metrics.where(F.col("name").isin(list(RAFT_GAUGES.values())) & F.col("timestamp").isNotNull()
                         & F.col("node_id").isNotNull())
    aggs = [F.max(F.when(F.col("name") == name, F.col("value"))).alias(column) for column, name in RAFT_GAUGES.items()]
    return (rows.groupBy(F.col("node_id").cast("int").alias("node_id"), F.col("format").alias("source"), "path",
                         F.col("timestamp").alias("time")).agg(*aggs)
            .drop("path").orderBy("node_id", "time", "source"))
