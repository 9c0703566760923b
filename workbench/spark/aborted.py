"""``aborted``: one row per entry of every aborted-transaction index (``<offset>.txnindex``).

Name
    ``kafka_aborted``.
Reads
    The ``.txnindex`` files of every partition directory of every node (``txn_index`` artifacts):
    a segment's index lists the transactions whose ABORT marker lies in that segment, in the
    order the markers were written; a ``read_committed`` fetch uses it to drop their records.
Options
    ``files``, ``strict``.
Partitioning
    Each file read whole; small files are packed into one input partition (:mod:`workbench.spark.source`).

Columns
    ``node_id``, ``path``, ``topic``, ``partition``, ``segment_base_offset`` (the offset in the
    file name); per aborted transaction: ``producer_id``, ``first_offset`` (its first record),
    ``last_offset`` (its ABORT marker), ``last_stable_offset`` (the partition's LSO when the
    marker was written: below ``first_offset`` while another transaction was still open),
    ``version`` (0; another value is also a ``problems`` row).

Examples
--------
>>> tables.aborted.groupBy("topic", "partition").count().show()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from workbench.spark.registry import register_table
from workbench.spark.source import ArtifactReader, ArtifactSource, FilePartition

if TYPE_CHECKING:
    from workbench.formats.problems import ProblemLog

ABORTED_SCHEMA = (
    "node_id int, path string, topic string, partition int, segment_base_offset long, producer_id long, "
    "first_offset long, last_offset long, last_stable_offset long, version int"
)


class AbortedReader(ArtifactReader):
    """Entries of ``.txnindex`` files."""

    schema_ddl = ABORTED_SCHEMA

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import fsspec

        from workbench.formats.index import read_txn_index

        with fsspec.open(partition.path, "rb") as f:
            entries = read_txn_index(f, partition.path, problems=log)
        for e in entries:
            yield {
                "node_id": partition.node_id, "path": partition.path, "topic": partition.topic,
                "partition": partition.partition, "segment_base_offset": partition.base_offset,
                "producer_id": e.producer_id, "first_offset": e.first_offset, "last_offset": e.last_offset,
                "last_stable_offset": e.last_stable_offset, "version": e.version,
            }


class AbortedSource(ArtifactSource):
    """``spark.read.format("kafka_aborted")``: one row per aborted transaction of a ``.txnindex``."""

    reader_class = AbortedReader

    @classmethod
    def name(cls) -> str:
        return "kafka_aborted"


TABLE = register_table(
    "aborted",
    row="aborted transaction of an aborted-transaction index (<offset>.txnindex), per partition and node",
    schema=ABORTED_SCHEMA,
    kinds=("txn_index",),
    source=AbortedSource,
)
