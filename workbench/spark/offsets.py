"""``offsets``: one row per offset commit, offset tombstone or transaction marker of ``__consumer_offsets``.

Name
    ``kafka_offsets`` (``spark.read.format("kafka_offsets")``).
Reads
    Every segment of ``__consumer_offsets`` in every node's log dirs. Each replica is read: a
    partition of ``__consumer_offsets`` replicated to three brokers gives each commit three
    times, told apart by ``node_id``.
Options
    ``files`` (see :mod:`workbench.spark.source`), ``strict``.
Partitioning
    Each file read whole (small ones packed: :mod:`workbench.spark.source`). Segments of
    ``__consumer_offsets`` are at most ``offsets.topic.segment.bytes`` (100 MiB by default),
    and reading a whole file lets the reader settle the transactions it holds (``txn_outcome``).

Columns
    ``node_id``, ``path``: the replica read (the node whose log dir holds the file);
    ``offsets_partition``: the partition *of* ``__consumer_offsets`` (every record of a group
    lies in partition ``abs(groupId.hashCode()) % offsets.topic.num.partitions``, the partition
    whose leader is the group's coordinator); ``batch_position``, ``offset``, ``timestamp``: the
    record's batch, its own offset in ``__consumer_offsets`` and its timestamp (when the
    coordinator appended the commit); ``producer_id``, ``producer_epoch``, ``is_transactional``:
    of the record's batch; ``record_kind``: ``OffsetCommit`` (key type 1, what Kafka 0.9 to 4.x
    write), ``LegacyOffsetCommit`` (key type 0, Kafka 0.8.2) or ``TxnMarker`` (a COMMIT/ABORT
    control record); ``deleted``: a tombstone (null value: the group's offset for the partition
    was deleted, expired, or the group itself was deleted); ``group``, ``topic``, ``partition``,
    ``topic_id``: the committed topic partition (``topic_id`` only in value version 4, else
    null); ``committed_offset``, ``leader_epoch`` (-1 = none, as Kafka writes it),
    ``metadata``, ``commit_timestamp``, ``expire_timestamp`` (value version 1 only, else null),
    ``value_version``; ``marker`` (``COMMIT`` or ``ABORT`` on ``TxnMarker`` rows);
    ``txn_outcome``; ``error`` (why a record's value could not be decoded; also a ``problems``
    row).

Transactional offset commits
    A consumer of a transactional producer (exactly-once stream processing) commits offsets
    with ``TxnOffsetCommit``: they are appended in transactional batches and take effect only
    when the transaction coordinator writes a COMMIT marker to the same partition; a commit
    whose transaction is aborted never takes effect. ``txn_outcome`` is the marker of the
    commit's transaction when it lies in the same file (``COMMIT`` or ``ABORT``; on marker rows,
    the marker itself), null for non-transactional rows and for a transaction whose marker is
    not in the file (still open when the bundle was taken, or closed in a later segment). The
    effective commits are therefore::

        offsets.where("record_kind != 'TxnMarker' and (not is_transactional or txn_outcome = 'COMMIT')")

    A transaction that spans a segment roll is settled with the marker rows: the marker of a
    transactional commit is the first ``TxnMarker`` row after it of the same ``node_id``,
    ``offsets_partition`` and ``producer_id``.

Examples
--------
>>> tables = workbench.load(workbench.open_bundle("bundle/"), spark)             # doctest: +SKIP
>>> last = (tables.offsets.where("record_kind = 'OffsetCommit' and not deleted")  # doctest: +SKIP
...         .groupBy("group", "topic", "partition").agg(F.max_by("committed_offset", "offset")))
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from workbench.formats.topics import OFFSETS_TOPIC
from workbench.spark.registry import register_table
from workbench.spark.source import (
    ARROW_BATCH_ROWS,
    ArtifactReader,
    ArtifactSource,
    FilePartition,
    OutOfRange,
    arrow_schema,
    column_names,
    ms_to_us,
)

if TYPE_CHECKING:
    from workbench.bundle import Artifact, Bundle
    from workbench.formats.batch import Record
    from workbench.formats.coordinator import CoordinatorRecord
    from workbench.formats.problems import ProblemLog
    from workbench.formats.topicrecords import BatchInfo

OFFSETS_SCHEMA = (
    "node_id int, path string, offsets_partition int, batch_position long, offset long, timestamp timestamp, "
    "producer_id long, producer_epoch int, is_transactional boolean, record_kind string, deleted boolean, "
    "group string, topic string, partition int, topic_id string, committed_offset long, leader_epoch int, "
    "metadata string, commit_timestamp timestamp, expire_timestamp timestamp, value_version int, marker string, "
    "txn_outcome string, error string"
)

#: The columns, in order; rows are built as lists in this order (see ``OffsetsReader``).
OFFSETS_COLUMNS = column_names(OFFSETS_SCHEMA)
_OUTCOME = OFFSETS_COLUMNS.index("txn_outcome")
_POSITION = OFFSETS_COLUMNS.index("batch_position")
#: Timestamp columns (maybe :class:`~workbench.spark.source.OutOfRange`) and integer columns with their range.
_TIMES = tuple(OFFSETS_COLUMNS.index(c) for c in ("timestamp", "commit_timestamp", "expire_timestamp"))
_RANGES = ((OFFSETS_COLUMNS.index("committed_offset"), -1, 2**63 - 1),
           (OFFSETS_COLUMNS.index("leader_epoch"), -1, 2**31 - 1))
_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def is_commit_key(key: bytes | None) -> bool:
    """Whether a ``__consumer_offsets`` key is an offset commit's (record type 0 or 1), from its first bytes.

    >>> is_commit_key(b"\\x00\\x01\\x00\\x01g"), is_commit_key(b"\\x00\\x02\\x00\\x01g"), is_commit_key(None)
    (True, False, False)
    """
    return key is not None and len(key) >= 2 and key[0] == 0 and key[1] in (0, 1)


def offsets_files(bundle: Bundle) -> list[Artifact]:
    """The bundle's ``__consumer_offsets`` segments (every node's replica)."""
    return [a for a in bundle.of_kind("segment") if a.topic == OFFSETS_TOPIC and a.path.endswith(".log")]


def coordinator_records(partition: FilePartition, log: ProblemLog, strict: bool) -> Iterator[tuple[BatchInfo,
                                                                                                 Record]]:
    """Every readable record of a ``__consumer_offsets`` file, with its batch (shared with ``groups``)."""
    import fsspec

    from workbench.formats.topicrecords import records_with_batches

    with fsspec.open(partition.path, "rb") as f:
        yield from records_with_batches(f, partition.path, problems=log, strict=strict)


def report_unreadable_key(log: ProblemLog, position: int, offset: int, error: str | None) -> None:
    """The problem of a record whose key names no record type (the ``offsets`` and ``groups`` tables agree)."""
    log.report(position, "decode_error", f"__consumer_offsets record at offset {offset}: {error}")


def record_base(partition: FilePartition, info: BatchInfo, record: Record) -> dict[str, Any]:
    """The first columns of a ``groups`` row (``offsets`` rows start with the same, in column order)."""
    return {
        "node_id": partition.node_id, "path": partition.path, "offsets_partition": partition.partition,
        "batch_position": info.position, "offset": record.offset, "timestamp": ms_to_us(record.timestamp),
    }


def commit_columns(rec: CoordinatorRecord) -> list[Any]:
    """The columns from ``record_kind`` to ``error`` of a decoded offset commit, in table order.

    >>> from workbench.formats.coordinator import decode_offsets_record, encode_offsets_record
    >>> rec = decode_offsets_record(*encode_offsets_record(1, {"group": "g", "topic": "t", "partition": 0},
    ...     {"offset": 42, "leaderEpoch": 3, "metadata": "", "commitTimestamp": 1000}))
    >>> dict(zip(OFFSETS_COLUMNS[9:], commit_columns(rec)))  # doctest: +NORMALIZE_WHITESPACE
    {'record_kind': 'OffsetCommit', 'deleted': False, 'group': 'g', 'topic': 't', 'partition': 0, 'topic_id': None,
     'committed_offset': 42, 'leader_epoch': 3, 'metadata': '', 'commit_timestamp': 1000000, 'expire_timestamp': None,
     'value_version': 3, 'marker': None, 'txn_outcome': None, 'error': None}
    """
    key, value, version = rec.key, rec.value, rec.value_version
    head = [rec.name, rec.tombstone, key.get("group"), key.get("topic"), key.get("partition")]
    if value is None:
        return [*head, None, None, None, None, None, None, version, None, None, rec.error]
    topic_id = value.get("topicId") if (version or 0) >= 4 else None
    return [*head, None if topic_id == _ZERO_UUID else topic_id, value.get("offset"), value.get("leaderEpoch", -1),
            value.get("metadata"), ms_to_us(value.get("commitTimestamp")),
            ms_to_us(value.get("expireTimestamp")) if version == 1 else None, version, None, None, rec.error]


def _arrow(pa: Any, schema: Any, rows: list[list[Any]]) -> Any:
    """Rows (lists in column order) as one Arrow batch, column by column (faster than ``from_pylist``)."""
    columns = zip(*rows, strict=True)
    return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)],
                                      schema=schema)


def _checked(row: list[Any], log: ProblemLog) -> list[Any]:
    """``row`` with out-of-range times, offsets and epochs null, an ``out_of_range`` problem each."""
    for i in _TIMES:
        value = row[i]
        if isinstance(value, OutOfRange):
            row[i] = None
            log.report(row[_POSITION], "out_of_range",
                       f"offset {row[_POSITION + 1]}: {OFFSETS_COLUMNS[i]} {value.raw} {value.why}; null")
    for i, low, high in _RANGES:
        value = row[i]
        if value is not None and not low <= value <= high:
            row[i] = None
            log.report(row[_POSITION], "out_of_range",
                       f"offset {row[_POSITION + 1]}: {OFFSETS_COLUMNS[i]} {value} is outside {low}..{high}; null")
    return row


class OffsetsReader(ArtifactReader):
    """Offset commits, tombstones and transaction markers of ``__consumer_offsets`` segments.

    The hot path of the table (``__consumer_offsets`` is nearly all commits): a commit is decoded
    by :func:`~workbench.formats.coordinator.decode_offset_commit_fast` (the schema-driven
    decoder when it defers), its row built as a list in column order and the rows turned into
    Arrow batches column by column.
    """

    schema_ddl = OFFSETS_SCHEMA

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[Any]:
        import pyarrow as pa

        schema = arrow_schema(OFFSETS_SCHEMA)
        rows: list[list[Any]] = []
        for row in self._rows(partition, log):
            rows.append(_checked(row, log))
            if len(rows) >= ARROW_BATCH_ROWS:
                yield _arrow(pa, schema, rows)
                rows = []
        if rows:
            yield _arrow(pa, schema, rows)

    def _rows(self, partition: FilePartition, log: ProblemLog) -> Iterator[list[Any]]:
        from workbench.formats.control import decode_control_record
        from workbench.formats.coordinator import decode_offset_commit_fast, decode_offsets_record

        node, path, part = partition.node_id, partition.path, partition.partition
        pending: dict[int, list[list[Any]]] = {}  # open transactions' commits, by producer id
        for info, record in coordinator_records(partition, log, self.strict):
            head = [node, path, part, info.position, record.offset, ms_to_us(record.timestamp), info.producer_id,
                    info.producer_epoch, info.is_transactional]
            if info.is_control:
                ctl = decode_control_record(record.key, record.value)
                marker = ctl.type_name if ctl.type_name in ("COMMIT", "ABORT") else None
                error = ctl.error or (None if marker else f"{ctl.type_name} control record in {OFFSETS_TOPIC}")
                if error:
                    log.report(info.position, "decode_error", f"control record at offset {record.offset}: {error}")
                for commit in pending.pop(info.producer_id, []):
                    commit[_OUTCOME] = marker
                    yield commit
                yield [*head, "TxnMarker", False, *[None] * 10, marker, marker, error]
                continue
            if record.key is not None and len(record.key) >= 2 and not is_commit_key(record.key):
                continue  # group metadata and the other record types: the groups table
            rec = decode_offset_commit_fast(record.key, record.value) or decode_offsets_record(record.key, record.value)
            if rec.record_type == -1:
                report_unreadable_key(log, info.position, record.offset, rec.error)
                continue
            if rec.error:
                log.report(info.position, "decode_error", f"{rec.name} at offset {record.offset}: {rec.error}")
            row = head + commit_columns(rec)
            if info.is_transactional:
                pending.setdefault(info.producer_id, []).append(row)
                continue
            yield row
        for commits in pending.values():
            yield from commits


class OffsetsSource(ArtifactSource):
    """``spark.read.format("kafka_offsets")``: one row per offset commit, tombstone or marker."""

    reader_class = OffsetsReader

    @classmethod
    def name(cls) -> str:
        return "kafka_offsets"


TABLE = register_table(
    "offsets",
    row="offset commit, offset tombstone or transaction marker of __consumer_offsets, per node replica",
    schema=OFFSETS_SCHEMA,
    kinds=("segment",),
    source=OffsetsSource,
    select=offsets_files,
)
