"""``transactions``: one row per record of ``__transaction_state`` (a transaction coordinator's log).

Name
    ``kafka_transactions``.
Reads
    Every segment of ``__transaction_state`` in every node's log dirs (each replica, told apart by
    ``node_id``).
Options
    ``files``, ``strict``.
Partitioning
    Each file read whole; small files are packed into one input partition (:mod:`workbench.spark.source`).

Rows
    The coordinator writes a transactional id's whole state on every change: after
    ``InitProducerId`` (``Empty``), when a transaction adds its first partition (``Ongoing``), when
    it adds more, when the producer ends it (``PrepareCommit``/``PrepareAbort``), once every marker
    is written (``CompleteCommit``/``CompleteAbort``), when a new producer fences the old one
    (``PrepareEpochFence``), and a tombstone when the id expires (``deleted``). Columns:

    * ``txn_partition``: the partition of ``__transaction_state`` (every record of a transactional
      id lies in ``abs(id.hashCode()) % transaction.state.log.num.partitions``, whose leader is the
      id's coordinator); ``batch_position``, ``offset``, ``timestamp`` (when the coordinator wrote it);
    * ``transactional_id``; ``deleted``;
    * ``producer_id``, ``producer_epoch``, ``previous_producer_id``, ``next_producer_id``,
      ``next_producer_epoch`` (the last three from value version 1, Kafka 4.0's transactions V2;
      -1 = none, as Kafka writes them; null in version 0), ``timeout_ms``
      (``transaction.timeout.ms``), ``state`` (Kafka's ``TransactionState`` name; ``Unknown(n)``
      for a status this workbench does not know, also a ``problems`` row), ``topic_partitions``
      (the partitions the transaction has written to: one struct per partition, in Kafka's order),
      ``last_update_time``, ``start_time`` (null when Kafka writes -1: no transaction started),
      ``client_transaction_version`` (0 before transactions V2), ``value_version``;
    * ``error``: why a record could not be decoded (also a ``problems`` row).

Examples
--------
>>> tables.transactions.where("transactional_id = 'payments'").orderBy("offset").show()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from workbench.spark.offsets import coordinator_records
from workbench.spark.registry import register_table
from workbench.spark.source import ArtifactReader, ArtifactSource, FilePartition, ms_to_us

if TYPE_CHECKING:
    from workbench.bundle import Artifact, Bundle
    from workbench.formats.coordinator import CoordinatorRecord
    from workbench.formats.problems import ProblemLog

TRANSACTIONS_SCHEMA = (
    "node_id int, path string, txn_partition int, batch_position long, offset long, timestamp timestamp, "
    "transactional_id string, deleted boolean, producer_id long, producer_epoch int, previous_producer_id long, "
    "next_producer_id long, next_producer_epoch int, timeout_ms int, state string, "
    "topic_partitions array<struct<topic:string,partition:int>>, last_update_time timestamp, "
    "start_time timestamp, client_transaction_version int, value_version int, error string"
)


def transaction_files(bundle: Bundle) -> list[Artifact]:
    """The bundle's ``__transaction_state`` segments (every node's replica)."""
    from workbench.formats.topics import TRANSACTION_TOPIC

    return [a for a in bundle.of_kind("segment") if a.topic == TRANSACTION_TOPIC and a.path.endswith(".log")]


def _time(ms: int | None) -> int | None:
    return None if ms is None or ms < 0 else ms_to_us(ms)


def transaction_columns(rec: CoordinatorRecord) -> dict[str, Any]:
    """The typed columns of one decoded ``__transaction_state`` record (see the module docstring).

    Examples
    --------
    >>> from workbench.formats.coordinator import decode_transaction_record, encode_transaction_record
    >>> rec = decode_transaction_record(*encode_transaction_record({"transactionalId": "t"}, {
    ...     "producerId": 7, "producerEpoch": 2, "transactionTimeoutMs": 60000, "transactionStatus": 1,
    ...     "transactionPartitions": [{"topic": "a", "partitionIds": [1, 0]}],
    ...     "transactionLastUpdateTimestampMs": 5, "transactionStartTimestampMs": 4}))
    >>> cols = transaction_columns(rec)
    >>> cols["state"], cols["topic_partitions"], cols["next_producer_id"], cols["start_time"]
    ('Ongoing', [{'topic': 'a', 'partition': 1}, {'topic': 'a', 'partition': 0}], None, 4000)
    """
    from workbench.formats.coordinator import TRANSACTION_STATUS

    row: dict[str, Any] = {"transactional_id": rec.key.get("transactionalId"), "deleted": rec.tombstone,
                           "value_version": rec.value_version}
    value = rec.value
    if value is None:
        return row
    status = value.get("transactionStatus")
    v1 = rec.value_version is not None and rec.value_version >= 1
    row.update(
        producer_id=value.get("producerId"), producer_epoch=value.get("producerEpoch"),
        previous_producer_id=value.get("previousProducerId") if v1 else None,
        next_producer_id=value.get("nextProducerId") if v1 else None,
        next_producer_epoch=value.get("nextProducerEpoch") if v1 else None,
        timeout_ms=value.get("transactionTimeoutMs"),
        state=TRANSACTION_STATUS.get(status, f"Unknown({status})") if status is not None else None,
        topic_partitions=[{"topic": tp.get("topic"), "partition": p}
                          for tp in value.get("transactionPartitions") or [] for p in tp.get("partitionIds") or []],
        last_update_time=_time(value.get("transactionLastUpdateTimestampMs")),
        start_time=_time(value.get("transactionStartTimestampMs")),
        client_transaction_version=value.get("clientTransactionVersion", 0),
    )
    return row


class TransactionsReader(ArtifactReader):
    """Records of ``__transaction_state`` segments."""

    schema_ddl = TRANSACTIONS_SCHEMA

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        from workbench.formats.coordinator import TRANSACTION_STATUS, decode_transaction_record

        for info, record in coordinator_records(partition, log, self.strict):
            if info.is_control:
                continue
            rec = decode_transaction_record(record.key, record.value)
            row: dict[str, Any] = {
                "node_id": partition.node_id, "path": partition.path, "txn_partition": partition.partition,
                "batch_position": info.position, "offset": record.offset, "timestamp": ms_to_us(record.timestamp),
            }
            where = f"__transaction_state record at offset {record.offset}"
            if rec.record_type == -1:
                log.report(info.position, "decode_error", f"{where}: {rec.error}")
                row["error"] = rec.error
                yield row
                continue
            row.update(transaction_columns(rec))
            status = (rec.value or {}).get("transactionStatus")
            if status is not None and status not in TRANSACTION_STATUS:
                log.report(info.position, "unknown_value", f"{where}: transaction status {status}")
            if rec.error:
                row["error"] = rec.error
                log.report(info.position, "decode_error", f"{where}: {rec.error}")
            yield row


class TransactionsSource(ArtifactSource):
    """``spark.read.format("kafka_transactions")``: one row per ``__transaction_state`` record."""

    reader_class = TransactionsReader

    @classmethod
    def name(cls) -> str:
        return "kafka_transactions"


TABLE = register_table(
    "transactions",
    row="record of __transaction_state (a transactional id's state after each change), per node replica",
    schema=TRANSACTIONS_SCHEMA,
    kinds=("segment",),
    source=TransactionsSource,
    select=transaction_files,
)
