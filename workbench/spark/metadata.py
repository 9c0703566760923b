"""``metadata``: one row per KRaft metadata record or control record, per node replica.

Name
    ``kafka_metadata`` (``spark.read.format("kafka_metadata")``).
Reads
    ``__cluster_metadata`` log segments and snapshots, and ``bootstrap.checkpoint`` files; and
    ``kafka-dump-log.sh --cluster-metadata-decoder`` text of those the bundle holds only as dump
    text (``path`` = ``<dump file>#<described file>``; :mod:`workbench.spark.metadata_dump`).
Options
    ``files`` (see :mod:`workbench.spark.source`), ``strict``, ``fields`` (default false: the JSON
    ``fields`` column only for the rows the typed columns do not describe; true: for every row,
    at the careful decoder's speed), ``split_bytes``.
Partitioning
    Small files packed into one input partition (:mod:`workbench.spark.source`); local files
    larger than ``split_bytes`` (32 MiB) are split at batch boundaries taken from their
    ``.index`` or, without one, from a scan of their batch headers, so one large log segment
    spreads over executors.

Columns: the record's place (node, its cluster id from ``meta.properties``: a bundle may hold
several clusters, as MirrorMaker 2's does; file, batch, offset, time, Raft epoch), its type, then the typed
columns of :data:`workbench.formats.fastmetadata.TYPED_COLUMNS` (topic id and name, partition,
leader, ISR, replicas, ELR, adding and removing replicas, partition and leader epochs, config
resource and value, broker id, epoch and fencing, feature levels), then ``fields``, ``crc_valid``
and ``error``. Records are decoded by :mod:`workbench.formats.fastmetadata`: compiled loops for
the clean records of the hot types, the careful decoder for everything else (same rows and
problems).

Examples
--------
>>> tables = workbench.load(workbench.open_bundle("bundle/"), spark)          # doctest: +SKIP
>>> tables.metadata.groupBy("record_type").count().show()                    # doctest: +SKIP
>>> changes = tables.metadata.where("record_type = 'PartitionChangeRecord'")    # doctest: +SKIP
>>> changes.select("cluster_id", "topic_id", "partition", "isr").show()        # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from workbench.spark.batches import balanced_cuts, split_segment
from workbench.spark.registry import register_table
from workbench.spark.source import (
    ArtifactReader,
    ArtifactSource,
    FilePartition,
    local_path,
    option_bool,
    option_int,
    timestamps_us,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from workbench.bundle import Artifact, Bundle
    from workbench.formats.problems import ProblemLog

METADATA_SCHEMA = (
    "node_id int, cluster_id string, path string, file_kind string, file_offset long, batch_position long, "
    "batch_base_offset long, offset long, timestamp timestamp, leader_epoch int, is_control boolean, "
    "record_type string, api_key int, version int, "
    "topic_id string, topic string, partition int, leader int, isr array<int>, replicas array<int>, "
    "elr array<int>, last_known_elr array<int>, adding array<int>, removing array<int>, partition_epoch int, "
    "record_leader_epoch int, leader_recovery_state int, config_resource_type int, config_resource_name string, "
    "config_name string, config_value string, broker_id int, broker_epoch long, fenced boolean, "
    "in_controlled_shutdown boolean, feature_name string, feature_level int, "
    "fields string, crc_valid boolean, error string"
)
#: Local files larger than this are read by several tasks (at batch boundaries).
SPLIT_BYTES = 32 * 1024 * 1024


def fields_json(fields: dict) -> str:
    """JSON text of decoded record fields (bytes as base64, like Kafka's tools print them).

    >>> fields_json({"name": "orders", "blob": b"\\x00\\x01"})
    '{"name":"orders","blob":"AAE="}'
    """
    from workbench.formats.fastmetadata import fields_json as to_json

    return to_json(fields)


def split_by_scan(part: FilePartition, local: str, size: int, split_bytes: int) -> list[FilePartition]:
    """Byte ranges of a local file without an offset index, cut at batch positions found by a header scan.

    The scan reads only batch headers (a few pages per MiB); its problems are left to the readers.
    The pieces are of about equal size (:func:`~workbench.spark.batches.balanced_cuts`).
    """
    from workbench.formats.fastscan import scan_batch_columns
    from workbench.formats.problems import ProblemLog

    positions: list[int] = []
    try:
        for piece in scan_batch_columns(local, part.path, problems=ProblemLog(part.path), verify=False):
            positions.extend(piece["position"].tolist())
    except (OSError, ValueError):
        return [part]
    bounds = balanced_cuts(positions, part.start, size, split_bytes) + [None]
    return [part.piece(start, end) for start, end in zip(bounds[:-1], bounds[1:], strict=True)]


class MetadataReader(ArtifactReader):
    """Decodes KRaft metadata log segments, snapshots and bootstrap checkpoints into typed columns."""

    schema_ddl = METADATA_SCHEMA

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        super().__init__(schema, options)
        self.fields = option_bool(options, "fields", False)
        self.split_bytes = option_int(options, "split_bytes", SPLIT_BYTES)

    def pieces(self) -> list[FilePartition]:
        import os

        out: list[FilePartition] = []
        for part in self.files:
            local = local_path(part.path)
            try:
                size = os.path.getsize(local) if local is not None else 0
            except OSError:
                size = 0
            if local is None or size <= self.split_bytes or part.kind == "dump_text":
                out.append(part)
                continue
            index = local[: -len(".log")] + ".index" if local.endswith(".log") else None
            if index is not None and os.path.exists(index):
                out.extend(split_segment(part, size, index, self.split_bytes))
            else:
                out.extend(split_by_scan(part, local, size, self.split_bytes))
        return out

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[Any]:
        import fsspec
        import pyarrow as pa

        from workbench.formats.batch import read_batches
        from workbench.formats.fastmetadata import metadata_batches

        if partition.kind == "dump_text":
            from workbench.spark.metadata_dump import dump_metadata_batches
            from workbench.spark.source import arrow_schema

            yield from dump_metadata_batches(partition, arrow_schema(METADATA_SCHEMA), log, want_fields=self.fields)
            return
        with fsspec.open(partition.path, "rb") as f:
            batches = read_batches(f, partition.path, problems=log, strict=self.strict, start=partition.start,
                                   end=partition.end)
            for chunk in metadata_batches(batches, log, fields=self.fields):
                yield _chunk_to_arrow(pa, partition, _report_out_of_range(chunk, log))


#: Ids and epochs of the ``metadata`` table and the values they can take (-1: none or unknown;
#: a PartitionChangeRecord's leader -2: unchanged); a value outside is null, with a problem.
RANGES: dict[str, tuple[int, int]] = {
    "leader_epoch": (-1, 2**31 - 1), "partition": (0, 2**31 - 1), "leader": (-2, 2**31 - 1),
    "record_leader_epoch": (-1, 2**31 - 1), "partition_epoch": (-1, 2**31 - 1), "broker_id": (0, 2**31 - 1),
    "broker_epoch": (-1, 2**63 - 1),
}


def _report_out_of_range(chunk: pa.RecordBatch, log: ProblemLog) -> pa.RecordBatch:
    """``chunk`` with ids and epochs out of range null, and an ``out_of_range`` problem for each
    of them and for each record whose timestamp no table can hold (kept, time null)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from workbench.formats.problems import TIMESTAMP_RANGE_MS

    ms = chunk.column("timestamp").to_numpy(zero_copy_only=False)
    lo, hi = TIMESTAMP_RANGE_MS
    for i in np.flatnonzero((ms < lo) | (ms > hi)).tolist():
        log.report(int(chunk.column("batch_position")[i].as_py()), "out_of_range",
                   f"offset {chunk.column('offset')[i].as_py()}: timestamp {int(ms[i])} ms is outside "
                   "1970-01-01..2262-04-11; the record is kept with a null timestamp")
    names = chunk.schema.names
    columns = list(chunk.columns)
    for name, (low, high) in RANGES.items():
        if name not in names:
            continue
        col = columns[names.index(name)]
        bad = pc.fill_null(pc.or_(pc.less(col, low), pc.greater(col, high)), False)
        if not pc.any(bad).as_py():
            continue
        for i in np.flatnonzero(bad.to_numpy(zero_copy_only=False)).tolist():
            log.report(int(chunk.column("batch_position")[i].as_py()), "out_of_range",
                       f"offset {chunk.column('offset')[i].as_py()}: {chunk.column('record_type')[i].as_py()} "
                       f"{name} {col[i].as_py()} is outside {low}..{high}; null")
        columns[names.index(name)] = pc.if_else(bad, pa.nulls(len(col), col.type), col)
    return pa.RecordBatch.from_arrays(columns, schema=chunk.schema)


_NAMES: tuple[str, ...] = tuple(part.split()[0] for part in METADATA_SCHEMA.split(", "))


def _chunk_to_arrow(pa: Any, partition: FilePartition, chunk: pa.RecordBatch) -> pa.RecordBatch:
    """A :data:`~workbench.formats.fastmetadata.METADATA_ARROW_SCHEMA` batch as a ``metadata`` table batch."""
    n = chunk.num_rows

    def repeat(value: Any, typ: Any) -> Any:
        return pa.repeat(pa.scalar(value, typ), n)

    arrays = {
        "node_id": repeat(partition.node_id, pa.int32()),
        "cluster_id": repeat(partition.cluster_id, pa.string()),
        "path": repeat(partition.path, pa.string()),
        "file_kind": repeat(partition.kind, pa.string()),
        "file_offset": repeat(partition.base_offset, pa.int64()),
        "timestamp": timestamps_us(chunk.column("timestamp").to_numpy()),
    }
    return pa.RecordBatch.from_arrays([arrays[c] if c in arrays else chunk.column(c) for c in _NAMES],
                                      names=list(_NAMES))


class MetadataSource(ArtifactSource):
    """``spark.read.format("kafka_metadata")``: one row per KRaft metadata or control record."""

    reader_class = MetadataReader

    @classmethod
    def name(cls) -> str:
        return "kafka_metadata"


def metadata_files(bundle: Bundle) -> list[Artifact]:
    """The bundle's KRaft metadata log segments, snapshots and bootstrap checkpoints, and the dump
    text of those it holds only as ``kafka-dump-log.sh`` output (:mod:`workbench.spark.metadata_dump`)."""
    from workbench.spark.metadata_dump import dump_metadata_files

    binary = bundle.metadata_files
    return binary + dump_metadata_files(bundle, binary)


TABLE = register_table(
    "metadata",
    row="KRaft metadata or control record, per node replica",
    schema=METADATA_SCHEMA,
    kinds=("segment", "snapshot", "bootstrap", "dump_text"),
    source=MetadataSource,
    select=metadata_files,
    options=("fields",),
)
