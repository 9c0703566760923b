"""``batches``: one row per record batch of every log segment and snapshot (headers only).

Name
    ``kafka_batches``.
Reads
    Log segments, KRaft snapshots and bootstrap checkpoints. No record is decoded. A segment's
    headers-only extract (``<base>.log.headers``, :mod:`workbench.formats.header_extract`) gives
    the same rows but ``crc_valid`` (null: its records are not there).
Options
    ``files``, ``strict``, ``verify_crc`` (default true: every batch's CRC-32C is checked; false
    reads the 61-byte headers only and leaves ``crc_valid`` null), ``split_bytes``.
Partitioning
    Small files packed into one input partition (:mod:`workbench.spark.source`); segments
    larger than ``split_bytes`` (128 MiB) are split at batch boundaries found in their
    ``.index``, so one large segment spreads over executors.

Local files go through :func:`~workbench.formats.fastscan.scan_batch_columns` (compiled header
hopping, bulk CRC check, the careful reader wherever a header is not clean) and become Arrow
batches column-wise; other filesystems (fsspec URLs) are read with the careful reader.

Examples
--------
>>> tables = workbench.load(workbench.open_bundle("bundle/"), spark, verify_crc=False)   # doctest: +SKIP
>>> tables.batches.groupBy("topic").sum("record_count").show()                         # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from workbench.formats.header_extract import SUFFIX as EXTRACT_SUFFIX
from workbench.spark.registry import register_table
from workbench.spark.source import (
    ARROW_BATCH_ROWS,
    ArtifactReader,
    ArtifactSource,
    FilePartition,
    arrow_schema,
    checked_timestamps_us,
    constant,
    local_path,
    ms_to_us,
    option_bool,
    option_int,
    report_range,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from workbench.formats.problems import ProblemLog

BATCHES_SCHEMA = (
    "node_id int, path string, topic string, partition int, segment_base_offset long, position long, "
    "base_offset long, last_offset long, record_count int, size int, magic int, compression string, "
    "timestamp_type string, base_timestamp timestamp, max_timestamp timestamp, producer_id long, "
    "producer_epoch int, base_sequence int, is_transactional boolean, is_control boolean, "
    "partition_leader_epoch int, crc long, crc_valid boolean"
)
#: Segments larger than this are read by several tasks, split at batch boundaries from the ``.index``.
SPLIT_BYTES = 128 * 1024 * 1024


def balanced_cuts(positions: Iterable[int], start: int, size: int, split_bytes: int) -> list[int]:
    """Where to cut the bytes ``start .. size`` of a file into pieces of about equal size, none over ``split_bytes``.

    Cuts go only at ``positions`` (the known batch positions, in order), at the first at or past each
    equal share: a file a little over ``split_bytes`` becomes two halves for two executors, not a full
    piece and a sliver. Returns the piece starts, beginning with ``start``.

    >>> balanced_cuts(range(0, 100, 10), 0, 100, 60)
    [0, 50]
    >>> balanced_cuts(range(0, 100, 10), 0, 100, 100)
    [0]
    """
    total = size - start
    if total <= split_bytes:
        return [start]
    share = total / -(-total // split_bytes)
    cuts = [start]
    for position in positions:
        if position - start >= share * len(cuts) and position > cuts[-1]:
            cuts.append(position)
    return cuts


def split_segment(part: FilePartition, size: int, index_path: str | None, split_bytes: int) -> list[FilePartition]:
    """Byte ranges of one segment that start at batch boundaries known from its offset index (:func:`balanced_cuts`)."""
    if size <= split_bytes or index_path is None:
        return [part]
    import os

    from workbench.formats.index import read_offset_index

    if not os.path.exists(index_path):
        return [part]
    with open(index_path, "rb") as f:
        entries = read_offset_index(f, part.base_offset or 0, path=index_path)
    bounds = balanced_cuts((position for _offset, position in entries), 0, size, split_bytes) + [None]
    return [part.piece(start, end) for start, end in zip(bounds[:-1], bounds[1:], strict=True)]


class SplitSegmentsReader(ArtifactReader):
    """A reader whose large segments are split at ``.index`` batch boundaries (``split_bytes``)."""

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        super().__init__(schema, options)
        self.split_bytes = option_int(options, "split_bytes", SPLIT_BYTES)

    def pieces(self) -> list[FilePartition]:
        import os

        out: list[FilePartition] = []
        for part in self.files:
            index = part.path[: -len(".log")] + ".index" if part.path.endswith(".log") else None
            try:
                size = os.path.getsize(part.path)
            except OSError:
                size = 0
            out.extend(split_segment(part, size, index, self.split_bytes))
        return out


class BatchesReader(SplitSegmentsReader):
    """Batch headers of log segments: no record is decoded, so it runs near disk speed."""

    schema_ddl = BATCHES_SCHEMA
    ranges = {"partition_leader_epoch": (-1, 2**31 - 1), "producer_id": (-1, 2**63 - 1),
              "producer_epoch": (-1, 2**15 - 1), "base_sequence": (-1, 2**31 - 1)}

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        super().__init__(schema, options)
        self.verify = option_bool(options, "verify_crc", True)

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[Any]:
        local = local_path(partition.path)
        if partition.path.endswith(".log" + EXTRACT_SUFFIX):
            yield from self._extract(partition, local, log)
            return
        if local is None:
            yield from self._careful(partition, log)
            return
        import pyarrow as pa

        from workbench.formats.fastscan import scan_batch_columns

        schema = arrow_schema(BATCHES_SCHEMA)
        for piece in scan_batch_columns(local, partition.path, problems=log, strict=self.strict,
                                        start=partition.start, end=partition.end, verify=self.verify,
                                        chunk=ARROW_BATCH_ROWS):
            if len(piece["position"]):
                yield _piece_to_arrow(pa, schema, partition, piece, log)

    def _extract(self, partition: FilePartition, local: str | None, log: ProblemLog) -> Iterator[Any]:
        """A headers-only extract (:mod:`workbench.formats.header_extract`): ``crc_valid`` null."""
        import pyarrow as pa

        from workbench.formats.header_extract import header_extract_columns

        if local is not None:
            with open(local, "rb") as f:
                data = f.read()
        else:
            import fsspec

            with fsspec.open(partition.path, "rb") as f:
                data = f.read()
        schema = arrow_schema(BATCHES_SCHEMA)
        for piece in header_extract_columns(data, partition.path, problems=log, chunk=ARROW_BATCH_ROWS):
            if len(piece["position"]):
                yield _piece_to_arrow(pa, schema, partition, piece, log)

    def _careful(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import fsspec

        from workbench.formats.batch import read_batches

        with fsspec.open(partition.path, "rb") as f:
            for b in read_batches(f, path=partition.path, problems=log, strict=self.strict,
                                  start=partition.start, end=partition.end):
                yield {
                    "node_id": partition.node_id, "path": partition.path, "topic": partition.topic,
                    "partition": partition.partition, "segment_base_offset": partition.base_offset,
                    "position": b.position, "base_offset": b.base_offset, "last_offset": b.last_offset,
                    "record_count": b.record_count, "size": b.size, "magic": b.magic,
                    "compression": b.compression, "timestamp_type": b.timestamp_type,
                    "base_timestamp": ms_to_us(b.base_timestamp), "max_timestamp": ms_to_us(b.max_timestamp),
                    "producer_id": b.producer_id, "producer_epoch": b.producer_epoch,
                    "base_sequence": b.base_sequence, "is_transactional": b.is_transactional,
                    "is_control": b.is_control, "partition_leader_epoch": b.partition_leader_epoch,
                    "crc": b.crc, "crc_valid": b.crc_valid if self.verify else None,
                }


def _piece_to_arrow(pa: Any, schema: pa.Schema, partition: FilePartition, piece: dict[str, Any],
                    log: ProblemLog) -> pa.RecordBatch:
    """One piece of scanned columns as a ``batches`` table batch (timestamps in µs, -1 → null; times,
    epochs, producer ids and sequences out of range null, an ``out_of_range`` problem each)."""
    n = len(piece["position"])
    i32, i64 = pa.int32(), pa.int64()
    at = piece["position"]
    checked = {name: report_range(piece[name], at, log, name, low, high).cast(i64 if name == "producer_id" else i32)
               for name, (low, high) in BatchesReader.ranges.items()}
    arrays = {
        "node_id": constant(n, partition.node_id, i32), "path": constant(n, partition.path, pa.string()),
        "topic": constant(n, partition.topic, pa.string()), "partition": constant(n, partition.partition, i32),
        "segment_base_offset": constant(n, partition.base_offset, i64),
        "position": pa.array(piece["position"], i64), "base_offset": pa.array(piece["base_offset"], i64),
        "last_offset": pa.array(piece["last_offset"], i64), "record_count": pa.array(piece["record_count"], i32),
        "size": pa.array(piece["size"], i32), "magic": pa.array(piece["magic"], i32),
        "compression": pa.array(piece["compression"], pa.string()),
        "timestamp_type": pa.array(piece["timestamp_type"], pa.string()),
        "base_timestamp": checked_timestamps_us(piece["base_timestamp"], at, log, "base_timestamp"),
        "max_timestamp": checked_timestamps_us(piece["max_timestamp"], at, log, "max_timestamp"),
        "producer_id": checked["producer_id"],
        "producer_epoch": checked["producer_epoch"],
        "base_sequence": checked["base_sequence"],
        "is_transactional": pa.array(piece["is_transactional"], pa.bool_()),
        "is_control": pa.array(piece["is_control"], pa.bool_()),
        "partition_leader_epoch": checked["partition_leader_epoch"],
        "crc": pa.array(piece["crc"], i64),
        "crc_valid": pa.array(piece["crc_valid"], pa.bool_(), mask=~piece["crc_checked"]),
    }
    return pa.RecordBatch.from_arrays([arrays[f.name] for f in schema], schema=schema)


class BatchesSource(ArtifactSource):
    """``spark.read.format("kafka_batches")``: one row per record batch of every log segment."""

    reader_class = BatchesReader

    @classmethod
    def name(cls) -> str:
        return "kafka_batches"


TABLE = register_table(
    "batches",
    row="record batch of every log segment and snapshot",
    schema=BATCHES_SCHEMA,
    kinds=("segment", "snapshot", "bootstrap"),
    source=BatchesSource,
    options=("verify_crc",),
)
