"""``producer_state``: one row per producer of every producer-state snapshot (``<offset>.snapshot``).

Name
    ``kafka_producer_state``.
Reads
    The producer-state snapshots of every partition directory of every node (``producer_snapshot``
    artifacts). A broker writes one when a segment rolls and at a clean shutdown; on start-up it
    restores the partition's producers from the newest and replays the log after it.
Options
    ``files``, ``strict``.
Partitioning
    Each file read whole; small files are packed into one input partition (:mod:`workbench.spark.source`).

Columns
    ``node_id``, ``path``, ``topic``, ``partition``; ``snapshot_offset`` (the offset in the file
    name: the log end offset when the snapshot was taken); per producer: ``producer_id``,
    ``producer_epoch``, ``last_sequence``, ``last_offset`` (of its last batch), ``offset_delta``
    (last offset minus first offset of that batch) (all three null when Kafka writes offset -1:
    no batch kept, e.g. a producer whose last write was a marker),
    ``last_timestamp`` (its last write's timestamp), ``coordinator_epoch`` (of the last marker
    written for it; -1 = none), ``current_txn_first_offset`` (the first offset of its open
    transaction, null when none is open: what ``kafka-transactions describe-producers`` shows as
    ``CurrentTransactionStartOffset``, and what holds the partition's last stable offset back).

Examples
--------
>>> tables.producer_state.where("current_txn_first_offset IS NOT NULL").show()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from workbench.spark.registry import register_table
from workbench.spark.source import ArtifactReader, ArtifactSource, FilePartition, ms_to_us

if TYPE_CHECKING:
    from workbench.formats.problems import ProblemLog

PRODUCER_STATE_SCHEMA = (
    "node_id int, path string, topic string, partition int, snapshot_offset long, producer_id long, "
    "producer_epoch int, last_sequence int, last_offset long, offset_delta int, last_timestamp timestamp, "
    "coordinator_epoch int, current_txn_first_offset long"
)


class ProducerStateReader(ArtifactReader):
    """Entries of producer-state ``.snapshot`` files."""

    schema_ddl = PRODUCER_STATE_SCHEMA

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import fsspec

        from workbench.formats.index import read_producer_snapshot

        with fsspec.open(partition.path, "rb") as f:
            entries = read_producer_snapshot(f, partition.path, problems=log)
        for e in entries:
            kept = e.last_offset >= 0
            yield {
                "node_id": partition.node_id, "path": partition.path, "topic": partition.topic,
                "partition": partition.partition, "snapshot_offset": partition.base_offset,
                "producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
                "last_sequence": e.last_sequence if kept else None, "last_offset": e.last_offset if kept else None,
                "offset_delta": e.offset_delta if kept else None,
                "last_timestamp": ms_to_us(e.timestamp) if e.timestamp >= 0 else None,
                "coordinator_epoch": e.coordinator_epoch,
                "current_txn_first_offset": e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None,
            }


class ProducerStateSource(ArtifactSource):
    """``spark.read.format("kafka_producer_state")``: one row per producer of a producer-state snapshot."""

    reader_class = ProducerStateReader

    @classmethod
    def name(cls) -> str:
        return "kafka_producer_state"


TABLE = register_table(
    "producer_state",
    row="producer of a producer-state snapshot (<offset>.snapshot), per partition and node",
    schema=PRODUCER_STATE_SCHEMA,
    kinds=("producer_snapshot",),
    source=ProducerStateSource,
)
