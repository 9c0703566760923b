"""What the transactions area reads: the transactional partitions' log, the coordinator's state, the bundle's end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.logs import log_growth

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Kafka's ``transaction.max.timeout.ms`` default, which ``kafka-transactions.sh find-hanging`` also
#: takes as its ``--max-transaction-timeout`` (15 minutes) when none is given.
DEFAULT_MAX_TIMEOUT_MS = 15 * 60 * 1000
#: A partition whose last stable offset stays behind its log end this long is reported as pinned,
#: unless the ``txn_pinned_s`` parameter says otherwise (Kafka's default ``transaction.timeout.ms``).
DEFAULT_PINNED_S = 60.0
#: The coordinator's ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` default: how long
#: after its timeout a transaction may still be open before the coordinator aborts it.
ABORT_INTERVAL_MS = 10_000
_BATCH_NEEDED = ("node_id", "path", "topic", "partition", "segment_base_offset", "position", "base_offset",
                 "last_offset", "record_count", "size", "max_timestamp", "timestamp_type", "is_control",
                 "crc_valid", "producer_id", "producer_epoch", "is_transactional")


def transactional_topics(tables: Any) -> list[str]:
    """The data topics any transactional batch or control marker was written to (internal topics excluded)."""
    def compute() -> list[str]:
        batches = tables["batches"]
        rows = (batches.where((F.coalesce("is_transactional", F.lit(False)) | F.coalesce("is_control", F.lit(False)))
                              & F.col("topic").isNotNull() & ~F.col("topic").startswith("__"))
                .select("topic").distinct().collect())
        return sorted(r["topic"] for r in rows)

    from workbench.spark.registry import kept_with

    return kept_with(tables, "transactions.topics", compute)


def latest_ms(tables: Any) -> int | None:
    """The last moment any transactional partition's log changed (its latest batch or marker)."""
    from workbench.spark.registry import kept_with

    def compute() -> int | None:
        value = log_rows(tables).agg(F.max("t_us")).collect()[0][0]
        return None if value is None else int(value) // 1000

    return kept_with(tables, "transactions.latest_ms", compute)


def as_of(tables: Any, at_ms: int | None) -> int | None:
    """``at_ms``, or None (the bundle's end, whose results are kept) when nothing changed after it."""
    if at_ms is None:
        return None
    latest = latest_ms(tables)
    return None if latest is None or at_ms >= latest else int(at_ms)


def log_rows(tables: Any, at_ms: int | None = None) -> DataFrame:
    """One row per batch of each transactional partition's fullest replica, in offset order.

    Columns: ``topic, partition, node_id, base_offset, end_offset, record_count, size, bytes_before,
    bytes_end`` (as :func:`~workbench.analysis.logs.log_growth`), ``t_us`` (``reached`` in
    microseconds: by then the log held the batch), ``last_us`` (the batch's own largest timestamp),
    ``producer_id, producer_epoch, is_transactional, is_control``. With ``at_ms``, only the
    batches the log held by then (a control batch carries the broker's time of its marker).
    """
    def compute() -> DataFrame:
        topics = transactional_topics(tables)
        batches = tables["batches"]
        require_columns(batches, _BATCH_NEEDED, "transactions.log_rows")
        grown = log_growth(batches.where(F.col("topic").isin(topics)), topics=topics,
                           carry=("producer_id", "producer_epoch", "is_transactional"))
        return grown.select(
            "topic", "partition", "node_id", "base_offset", "end_offset", "record_count", "size", "bytes_before",
            "bytes_end", F.unix_micros("reached").alias("t_us"), F.unix_micros("max_timestamp").alias("last_us"),
            "producer_id", "producer_epoch", F.coalesce("is_transactional", F.lit(False)).alias("is_transactional"),
            F.coalesce("is_control", F.lit(False)).alias("is_control"))

    rows = tables.derive("transactions.log_rows", compute)
    return rows if at_ms is None else rows.where(F.col("t_us") <= F.lit(int(at_ms) * 1000))


def coordinator_records(tables: Any, at_ms: int | None = None) -> DataFrame:
    """The coordinator's records (one replica of each ``__transaction_state`` record), written by ``at_ms``."""
    txns = tables["transactions"]
    first = txns.groupBy("txn_partition", "offset").agg(F.min("node_id").alias("node_id"))
    one = txns.join(first, ["txn_partition", "offset", "node_id"]).where(F.col("error").isNull()
                                                                       & F.col("transactional_id").isNotNull())
    return one if at_ms is None else one.where(F.unix_millis("timestamp") <= F.lit(int(at_ms)))


def coordinator_state(tables: Any, at_ms: int | None = None) -> DataFrame:
    """What the coordinator held for each transactional id at ``at_ms`` (default: the bundle's end).

    One row per transactional id whose last record is not a tombstone: ``transactional_id,
    producer_id, producer_epoch, state, timeout_ms, partitions`` (``array<string>``, ``topic-partition``
    as Kafka prints them; what ``kafka-transactions.sh describe`` lists: the partitions of an
    ``Ongoing`` or ``Prepare*`` transaction, none otherwise), ``start_time``, ``last_update_time``,
    ``written`` (the record's own time).
    """
    records = coordinator_records(tables, at_ms)
    last = Window.partitionBy("transactional_id").orderBy(F.col("timestamp").desc(), F.col("txn_partition"),
                                                          F.col("offset").desc())
    live = records.withColumn("_n", F.row_number().over(last)).where((F.col("_n") == 1) & ~F.col("deleted"))
    parts = F.transform("topic_partitions", lambda p: F.concat(p["topic"], F.lit("-"), p["partition"].cast("string")))
    listed = F.when(F.col("state").isin("Ongoing", "PrepareCommit", "PrepareAbort"),
                    F.coalesce(parts, F.array().cast("array<string>"))).otherwise(F.array().cast("array<string>"))
    return live.select("transactional_id", "producer_id", "producer_epoch", "state", "timeout_ms",
                       listed.alias("partitions"), "start_time", "last_update_time",
                       F.col("timestamp").alias("written"))


def producer_ids(tables: Any) -> DataFrame:
    """``producer_id, transactional_id``: every producer id the coordinator's log ties to a transactional id."""
    records = coordinator_records(tables)
    pairs = records.select("producer_id", "transactional_id").unionByName(
        records.where(F.col("next_producer_id") >= 0).select(F.col("next_producer_id").alias("producer_id"),
                                                             "transactional_id"))
    return (pairs.where(F.col("producer_id") >= 0).groupBy("producer_id")
            .agg(F.min("transactional_id").alias("transactional_id")))


def coordinator_known(tables: Any) -> bool:
    """Whether the bundle holds the transaction coordinator's log at all (any ``__transaction_state`` file)."""
    bundle = getattr(tables, "bundle", None)
    if bundle is not None:
        return any(a.topic == "__transaction_state" for a in bundle.of_kind("segment"))
    return not tables["transactions"].isEmpty()


def bundle_end_ms(tables: Any, params: Mapping[str, Any] | None = None) -> int | None:
    """The moment the analysis stands at: the ``txn_at_ms`` parameter, else the latest batch time of the
    bundle's internal topics (the KRaft metadata log, ``__consumer_offsets``...: stamped by the brokers,
    which write them until the cluster stops), or of any topic when it holds none."""
    given = (params or {}).get("txn_at_ms")
    if given is not None:
        return int(given)
    from workbench.spark.registry import kept_with

    def compute() -> int | None:
        # the internal topics carry the brokers' clocks (a producer's clock may run ahead)
        stamps = tables["batches"].select(F.col("topic").startswith("__").alias("internal"),
                                          F.unix_millis("max_timestamp").alias("ms"))
        row = stamps.agg(F.max(F.when(F.col("internal"), F.col("ms"))).alias("internal"),
                         F.max("ms").alias("any")).collect()[0]
        value = row["internal"] if row["internal"] is not None else row["any"]
        return None if value is None else int(value)

    return kept_with(tables, "transactions.bundle_end_ms", compute)
