"""Each transaction's span on each partition: from its first record to the marker that ended it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.transactions.inputs import as_of, log_rows, producer_ids

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Columns of :func:`transaction_spans`.
SPAN_COLUMNS = ("topic", "partition", "node_id", "producer_id", "producer_epoch", "transactional_id", "first_offset",
                "last_data_offset", "batches", "records", "bytes", "start", "last_write", "marker_offset", "end",
                "outcome", "coordinator_epoch")


def transaction_spans(tables: Any, at_ms: int | None = None) -> DataFrame:
    """One row per transaction of a producer on a partition, as the partition's leader kept it.

    A producer's transactional batches on a partition belong to one transaction until its next
    control batch (the COMMIT or ABORT marker the coordinator wrote); the batches after that marker
    begin the next one. Columns :data:`SPAN_COLUMNS`: ``first_offset`` (what Kafka's producer state
    calls the transaction's first offset: the LSO cannot pass it while it is open),
    ``last_data_offset``, ``batches``, ``records`` and ``bytes`` of its data, ``start`` (when the log
    held its first batch), ``last_write`` (its last batch's largest timestamp: Kafka's
    ``lastTimestamp`` of the producer), ``marker_offset`` and ``end`` (the marker's offset and time;
    null while open), ``outcome`` (``COMMIT``, ``ABORT``, or ``open``), ``coordinator_epoch`` (of the
    marker), ``transactional_id`` (from the coordinator's log; null when it holds no record of the
    producer id). With ``at_ms``: the transactions as they stood then (a marker written later leaves
    its transaction open). A producer id or offset the reader refused (null) is left out.
    """
    def compute() -> DataFrame:
        rows = log_rows(tables, at_ms).where(
            F.col("producer_id").isNotNull() & (F.col("producer_id") >= 0) & F.col("base_offset").isNotNull()
            & (F.col("is_transactional") | F.col("is_control")))
        by_producer = (Window.partitionBy("topic", "partition", "producer_id").orderBy("base_offset")
                       .rowsBetween(Window.unboundedPreceding, -1))
        numbered = rows.withColumn("_span", F.coalesce(F.sum(F.col("is_control").cast("int")).over(by_producer),
                                                       F.lit(0)))
        data = ~F.col("is_control")
        spans = numbered.groupBy("topic", "partition", "node_id", "producer_id", "_span").agg(
            F.max("producer_epoch").alias("producer_epoch"),
            F.min(F.when(data, F.col("base_offset"))).alias("first_offset"),
            F.max(F.when(data, F.col("end_offset") - 1)).alias("last_data_offset"),
            F.sum(data.cast("int")).alias("batches"),
            F.sum(F.when(data, F.col("record_count"))).cast("long").alias("records"),
            F.sum(F.when(data, F.col("size"))).cast("long").alias("bytes"),
            F.min(F.when(data, F.col("t_us"))).alias("_start"),
            F.max(F.when(data, F.col("last_us"))).alias("_last"),
            F.min(F.when(~data, F.col("base_offset"))).alias("marker_offset"),
            F.min(F.when(~data, F.col("last_us"))).alias("_end"))
        spans = spans.where(F.col("first_offset").isNotNull())
        markers = tables["markers"].select(
            "node_id", "topic", "partition", F.col("offset").alias("marker_offset"), F.col("marker").alias("_kind"),
            "coordinator_epoch")
        named = spans.join(markers, ["node_id", "topic", "partition", "marker_offset"], "left").join(
            producer_ids(tables), "producer_id", "left")
        outcome = F.when(F.col("marker_offset").isNull(), F.lit("open")).otherwise(
            F.coalesce("_kind", F.lit("unknown")))
        return named.select(
            "topic", "partition", "node_id", "producer_id", "producer_epoch", "transactional_id", "first_offset",
            "last_data_offset", F.col("batches").cast("long"), "records", "bytes",
            F.timestamp_micros("_start").alias("start"), F.timestamp_micros("_last").alias("last_write"),
            "marker_offset", F.timestamp_micros("_end").alias("end"), outcome.alias("outcome"), "coordinator_epoch")

    # a past moment is asked for once (a test, a what-if): kept only at the bundle's end
    at_ms = as_of(tables, at_ms)
    return compute() if at_ms is not None else tables.derive("transactions.spans", compute)
