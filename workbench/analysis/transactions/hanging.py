"""Transactions left open on a partition, judged by the rule of ``kafka-transactions.sh find-hanging``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis.transactions.inputs import (
    ABORT_INTERVAL_MS,
    DEFAULT_MAX_TIMEOUT_MS,
    coordinator_known,
    coordinator_state,
)
from workbench.analysis.transactions.spans import transaction_spans

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Columns of :func:`open_transactions`.
OPEN_COLUMNS = ("topic", "partition", "producer_id", "producer_epoch", "transactional_id", "first_offset", "records",
                "bytes", "start", "last_write", "open_ms", "coordinator_state", "coordinator_epoch_of_id",
                "coordinator_partitions", "timeout_ms", "candidate", "orphaned", "hanging", "past_timeout", "reason")


def open_transactions(tables: Any, at_ms: int, *, max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS) -> DataFrame:
    """One row per transaction open on a partition at ``at_ms``, with the coordinator's view of it.

    ``find-hanging`` asks each partition leader for its producers, keeps those with an open
    transaction whose last write is more than ``max_timeout_ms`` old (``candidate``), looks their
    producer ids up in the coordinators' state and calls a candidate **hanging** when no coordinator
    knows the producer id, when the id's transaction cannot be described, or when the coordinator's
    transaction does not list the partition (so no marker will ever be written there). Here the
    leader's producer state is the partition's log and the coordinator's state its log
    (``__transaction_state``) as both stood at ``at_ms``. Columns :data:`OPEN_COLUMNS`: ``open_ms``
    (``at_ms`` − last write, as the tool measures), ``coordinator_state`` (the id's state then, null
    when the coordinator holds no record of the producer id), ``coordinator_partitions``,
    ``timeout_ms`` (the id's ``transaction.timeout.ms``), ``candidate``, ``orphaned`` (no coordinator
    will write its marker: the second half of the rule, whatever its age), ``hanging`` (a candidate
    that is orphaned), ``past_timeout`` (open past its own timeout plus the coordinator's abort
    interval: the coordinator should have aborted it), ``reason`` (why orphaned; null otherwise).
    When the bundle holds no coordinator log at all, ``orphaned`` and ``hanging`` are null: the rule
    cannot be applied.
    """
    spans = transaction_spans(tables, at_ms).where(F.col("outcome") == "open")
    state = coordinator_state(tables, at_ms).select(
        F.col("transactional_id").alias("_tid"), F.col("producer_id").alias("_pid"),
        F.col("producer_epoch").alias("coordinator_epoch_of_id"), F.col("state").alias("coordinator_state"),
        F.col("partitions").alias("coordinator_partitions"), "timeout_ms", F.col("start_time").alias("_started"))
    joined = spans.join(state, spans["producer_id"] == state["_pid"], "left")
    part = F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string"))
    open_ms = F.lit(int(at_ms)) - F.unix_millis("last_write")
    candidate = open_ms > F.lit(int(max_timeout_ms))
    known = coordinator_known(tables)
    unlisted = ~F.coalesce(F.array_contains("coordinator_partitions", part), F.lit(False))
    reason = (F.when(F.col("_pid").isNull(), F.concat(F.lit("no coordinator holds producer id "),
                                                      F.col("producer_id").cast("string")))
              .otherwise(F.concat(F.lit("the coordinator's transaction of "), F.col("_tid"), F.lit(" ("),
                                  F.col("coordinator_state"), F.lit(", epoch "),
                                  F.col("coordinator_epoch_of_id").cast("string"),
                                  F.lit(") does not list "), part)))
    orphaned = (F.col("_pid").isNull() | unlisted) if known else F.lit(None).cast("boolean")
    past = (F.col("timeout_ms").isNotNull() & (F.lit(int(at_ms)) - F.unix_millis(F.coalesce("_started", "start"))
                                               > F.col("timeout_ms") + F.lit(ABORT_INTERVAL_MS)))
    return joined.select(
        "topic", "partition", "producer_id", "producer_epoch", F.coalesce("transactional_id", "_tid")
        .alias("transactional_id"), "first_offset", "records", "bytes", "start", "last_write",
        open_ms.alias("open_ms"), "coordinator_state", "coordinator_epoch_of_id", "coordinator_partitions",
        "timeout_ms", candidate.alias("candidate"), orphaned.alias("orphaned"),
        (candidate & orphaned).alias("hanging"), past.alias("past_timeout"), F.when(orphaned, reason).alias("reason"))


def hanging_transactions(tables: Any, at_ms: int, *, max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS) -> DataFrame:
    """The rows ``kafka-transactions.sh find-hanging --max-transaction-timeout`` would list at ``at_ms``:
    :func:`open_transactions` that are hanging."""
    return open_transactions(tables, at_ms, max_timeout_ms=max_timeout_ms).where(F.col("hanging"))
