"""Spark Python data sources over Kafka artifacts (the only module that knows Spark's API).

Each source takes a JSON list of files in the option ``files`` (objects with ``path``,
``node_id``, ``kind`` and ``base_offset``, as :mod:`workbench.spark.load` builds them from a
bundle's inventory), makes one input partition per file, and yields ``pyarrow.RecordBatch``es
built column-wise. The option ``emit`` chooses between the table itself (``rows``, the default)
and the problems met while reading it (``problems``), so that unreadable bytes become rows of
the ``problems`` table without stopping the load. ``strict=true`` raises at the first problem.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from workbench.errors import ConfigError

#: Rows per yielded Arrow batch.
ARROW_BATCH_ROWS = 8192

METADATA_SCHEMA = (
    "node_id int, path string, file_kind string, file_offset long, batch_position long, "
    "batch_base_offset long, offset long, timestamp timestamp, leader_epoch int, is_control boolean, "
    "record_type string, api_key int, version int, fields string, crc_valid boolean, error string"
)
PROBLEMS_SCHEMA = "node_id int, path string, position long, kind string, detail string"
BATCHES_SCHEMA = (
    "node_id int, path string, topic string, partition int, segment_base_offset long, position long, "
    "base_offset long, last_offset long, record_count int, size int, magic int, compression string, "
    "timestamp_type string, base_timestamp timestamp, max_timestamp timestamp, producer_id long, "
    "producer_epoch int, base_sequence int, is_transactional boolean, is_control boolean, "
    "partition_leader_epoch int, crc_valid boolean"
)
#: Segments larger than this are read by several tasks, split at batch boundaries from the ``.index``.
SPLIT_BYTES = 128 * 1024 * 1024


def column_names(ddl: str) -> tuple[str, ...]:
    """Column names of a DDL schema string (commas inside ``<...>`` types are not separators).

    Examples
    --------
    >>> column_names("a int, m map<string,string>, t timestamp")
    ('a', 'm', 't')
    """
    names, depth, start = [], 0, 0
    for i, ch in enumerate(ddl + ","):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            names.append(ddl[start:i].split()[0])
            start = i + 1
    return tuple(names)


class FilePartition(InputPartition):
    """One artifact file to read (picklable: plain values only)."""

    def __init__(self, path: str, node_id: int, kind: str, base_offset: int | None, topic: str | None = None,
                 partition: int | None = None, start: int = 0, end: int | None = None) -> None:
        super().__init__(path)
        self.path = path
        self.node_id = node_id
        self.kind = kind
        self.base_offset = base_offset
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end


def _parse_files(options: dict[str, str]) -> list[FilePartition]:
    raw = options.get("files")
    if raw is None:
        raise ConfigError("option 'files' is required: a JSON list of {path, node_id, kind, base_offset}")
    try:
        items = json.loads(raw)
        return [FilePartition(str(i["path"]), int(i.get("node_id", -1)), str(i.get("kind", "segment")),
                              None if i.get("base_offset") is None else int(i["base_offset"]),
                              i.get("topic"), None if i.get("partition") is None else int(i["partition"]))
                for i in items]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"option 'files' must be a JSON list of objects with a 'path': {exc}") from exc


def _parse_bool(options: dict[str, str], name: str, default: bool) -> bool:
    value = options.get(name)
    if value is None:
        return default
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise ConfigError(f"option {name!r} must be true or false, got {value!r}")


def _parse_emit(options: dict[str, str]) -> str:
    emit = options.get("emit", "rows")
    if emit not in ("rows", "problems"):
        raise ConfigError(f"option 'emit' must be 'rows' or 'problems', got {emit!r}")
    return emit


def _json_default(value: Any) -> Any:
    import base64

    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def fields_json(fields: dict) -> str:
    """JSON text of decoded record fields (bytes as base64, like Kafka's tools print them)."""
    return json.dumps(fields, default=_json_default, separators=(",", ":"))


def _problems_batch(pa: Any, partition: FilePartition, log: Any) -> Any:
    """The problems of one partition as a ``problems`` table batch."""
    return pa.RecordBatch.from_pydict(
        {
            "node_id": pa.array([partition.node_id] * len(log.problems), pa.int32()),
            "path": pa.array([p.path for p in log.problems], pa.string()),
            "position": pa.array([p.position for p in log.problems], pa.int64()),
            "kind": pa.array([p.kind for p in log.problems], pa.string()),
            "detail": pa.array([p.detail for p in log.problems], pa.string()),
        }
    )


def local_path(path: str) -> str | None:
    """The local file behind ``path`` (plain or ``file://``), or None for other filesystems."""
    if path.startswith("file://"):
        return path[len("file://"):]
    return None if "://" in path else path


class _ArtifactReader(DataSourceReader):
    """Shared partitioning and problem emission; subclasses decode one file into columns."""

    columns: tuple[str, ...] = ()

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        self.files = _parse_files(options)
        self.strict = _parse_bool(options, "strict", False)
        self.emit = _parse_emit(options)

    def partitions(self) -> list[FilePartition]:
        return self.files

    def read(self, partition: FilePartition) -> Iterator[Any]:  # type: ignore[override]
        import pyarrow as pa

        from workbench.formats.problems import ProblemLog

        log = ProblemLog(partition.path, strict=self.strict)
        cols: dict[str, list] = {c: [] for c in self.columns}
        rows = 0
        try:
            for _ in self._decode(partition, log, cols):
                rows += 1
                if self.emit == "rows" and rows % ARROW_BATCH_ROWS == 0:
                    yield self._to_arrow(pa, cols)
                    for values in cols.values():  # the decoder holds this dict: clear in place
                        values.clear()
        except OSError as exc:
            log.report(0, "unreadable", f"cannot read file: {exc}")
        if self.emit == "rows":
            if cols[self.columns[0]]:
                yield self._to_arrow(pa, cols)
            return
        if log.problems:
            yield _problems_batch(pa, partition, log)

    def _decode(self, partition: FilePartition, log: Any, cols: dict[str, list]) -> Iterator[None]:
        raise NotImplementedError

    def _to_arrow(self, pa: Any, cols: dict[str, list]) -> Any:
        raise NotImplementedError


class MetadataReader(_ArtifactReader):
    """Decodes KRaft metadata log segments, snapshots and bootstrap checkpoints."""

    columns = column_names(METADATA_SCHEMA)

    def _decode(self, partition: FilePartition, log: Any, cols: dict[str, list]) -> Iterator[None]:
        import fsspec

        from workbench.formats.batch import read_batches
        from workbench.formats.control import decode_control_record
        from workbench.formats.metadata import decode_metadata_record

        with fsspec.open(partition.path, "rb") as f:
            for batch in read_batches(f, path=partition.path, problems=log, strict=self.strict):
                for record in batch.records(log):
                    if batch.is_control:
                        ctl = decode_control_record(record.key, record.value)
                        rtype, api_key, version, fields, error = (
                            ctl.type_name, ctl.type, ctl.key_version, ctl.fields, ctl.error)
                    else:
                        if record.value is None:
                            log.report(batch.position, "record_error",
                                       f"metadata record at offset {record.offset} has a null value")
                            continue
                        md = decode_metadata_record(record.value)
                        rtype, api_key, version, fields, error = (
                            md.name, md.api_key, md.version, md.fields, md.error)
                        if error:
                            log.report(batch.position, "decode_error",
                                       f"offset {record.offset}: {error}")
                    cols["node_id"].append(partition.node_id)
                    cols["path"].append(partition.path)
                    cols["file_kind"].append(partition.kind)
                    cols["file_offset"].append(partition.base_offset)
                    cols["batch_position"].append(batch.position)
                    cols["batch_base_offset"].append(batch.base_offset)
                    cols["offset"].append(record.offset)
                    cols["timestamp"].append(record.timestamp * 1000 if record.timestamp >= 0 else None)
                    cols["leader_epoch"].append(batch.partition_leader_epoch)
                    cols["is_control"].append(batch.is_control)
                    cols["record_type"].append(rtype)
                    cols["api_key"].append(api_key)
                    cols["version"].append(version)
                    cols["fields"].append(fields_json(fields) if fields is not None else None)
                    cols["crc_valid"].append(batch.crc_valid)
                    cols["error"].append(error)
                    yield None

    def _to_arrow(self, pa: Any, cols: dict[str, list]) -> Any:
        ts = pa.timestamp("us", tz="UTC")
        types = {
            "node_id": pa.int32(), "path": pa.string(), "file_kind": pa.string(), "file_offset": pa.int64(),
            "batch_position": pa.int64(), "batch_base_offset": pa.int64(), "offset": pa.int64(),
            "timestamp": ts, "leader_epoch": pa.int32(), "is_control": pa.bool_(),
            "record_type": pa.string(), "api_key": pa.int32(), "version": pa.int32(),
            "fields": pa.string(), "crc_valid": pa.bool_(), "error": pa.string(),
        }
        return pa.RecordBatch.from_pydict({c: pa.array(cols[c], types[c]) for c in self.columns})


class MetadataSource(DataSource):
    """``spark.read.format("kafka_metadata")``: one row per KRaft metadata or control record."""

    @classmethod
    def name(cls) -> str:
        return "kafka_metadata"

    def schema(self) -> str:
        return PROBLEMS_SCHEMA if self.options.get("emit") == "problems" else METADATA_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return MetadataReader(schema, self.options)


#: Largest millisecond timestamp whose microseconds fit a Spark timestamp; larger ones load as null.
MAX_TIMESTAMP_MS = (2**63 - 1) // 1000


def _ms_to_us(ms: int) -> int | None:
    return ms * 1000 if 0 <= ms <= MAX_TIMESTAMP_MS else None


def _timestamps(pa: Any, ms: Any) -> Any:
    """Millisecond timestamps (a NumPy int64 array) as Spark's µs timestamps; out-of-range ones null."""
    bad = (ms < 0) | (ms > MAX_TIMESTAMP_MS)
    return pa.array(np.where(bad, 0, ms) * 1000, pa.timestamp("us", tz="UTC"), mask=bad)


def _constant(pa: Any, n: int, value: Any, typ: Any) -> Any:
    """A column of ``n`` copies of ``value`` (nulls for None): a partition's node, path, topic, ..."""
    return pa.nulls(n, typ) if value is None else pa.array([value] * n, typ)


def split_segment(part: FilePartition, size: int, index_path: str | None, split_bytes: int) -> list[FilePartition]:
    """Byte ranges of one segment that start at batch boundaries known from its offset index."""
    if size <= split_bytes or index_path is None:
        return [part]
    import os

    from workbench.formats.index import read_offset_index

    if not os.path.exists(index_path):
        return [part]
    with open(index_path, "rb") as f:
        entries = read_offset_index(f, part.base_offset or 0, path=index_path)
    cuts = [0]
    for _offset, position in entries:
        if position - cuts[-1] >= split_bytes:
            cuts.append(position)
    bounds = cuts + [None]
    return [FilePartition(part.path, part.node_id, part.kind, part.base_offset, part.topic, part.partition,
                          start, end) for start, end in zip(bounds[:-1], bounds[1:], strict=True)]


class BatchesReader(_ArtifactReader):
    """Batch headers of log segments: no record is decoded, so it runs near disk speed.

    Local files go through :func:`~workbench.formats.fastscan.scan_batch_columns` (compiled
    header hopping, bulk CRC check, the careful reader wherever a header is not clean) and become
    Arrow batches column-wise; other filesystems (fsspec URLs) are read with the careful reader.
    The option ``verify_crc=false`` reads headers only: ``crc_valid`` is then null.
    """

    columns = column_names(BATCHES_SCHEMA)

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        super().__init__(schema, options)
        self.verify = _parse_bool(options, "verify_crc", True)
        raw = options.get("split_bytes", str(SPLIT_BYTES))
        if not raw.isdigit() or int(raw) <= 0:
            raise ConfigError(f"option 'split_bytes' must be a positive integer, got {raw!r}")
        self.split_bytes = int(raw)

    def partitions(self) -> list[FilePartition]:
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

    def read(self, partition: FilePartition) -> Iterator[Any]:  # type: ignore[override]
        local = local_path(partition.path)
        if local is None:
            yield from super().read(partition)
            return
        import pyarrow as pa

        from workbench.formats.fastscan import scan_batch_columns
        from workbench.formats.problems import ProblemLog

        log = ProblemLog(partition.path, strict=self.strict)
        try:
            for piece in scan_batch_columns(local, partition.path, problems=log, strict=self.strict,
                                            start=partition.start, end=partition.end, verify=self.verify,
                                            chunk=ARROW_BATCH_ROWS):
                if self.emit == "rows" and len(piece["position"]):
                    yield self._piece_to_arrow(pa, partition, piece)
        except OSError as exc:
            log.report(0, "unreadable", f"cannot read file: {exc}")
        if self.emit == "problems" and log.problems:
            yield _problems_batch(pa, partition, log)

    def _piece_to_arrow(self, pa: Any, partition: FilePartition, piece: dict[str, Any]) -> Any:
        """One piece of scanned columns as a ``batches`` table batch (timestamps in µs, -1 → null)."""
        n = len(piece["position"])
        i32, i64 = pa.int32(), pa.int64()
        arrays = {
            "node_id": _constant(pa, n, partition.node_id, i32), "path": _constant(pa, n, partition.path, pa.string()),
            "topic": _constant(pa, n, partition.topic, pa.string()),
            "partition": _constant(pa, n, partition.partition, i32),
            "segment_base_offset": _constant(pa, n, partition.base_offset, i64),
            "position": pa.array(piece["position"], i64), "base_offset": pa.array(piece["base_offset"], i64),
            "last_offset": pa.array(piece["last_offset"], i64), "record_count": pa.array(piece["record_count"], i32),
            "size": pa.array(piece["size"], i32), "magic": pa.array(piece["magic"], i32),
            "compression": pa.array(piece["compression"], pa.string()),
            "timestamp_type": pa.array(piece["timestamp_type"], pa.string()),
            "base_timestamp": _timestamps(pa, piece["base_timestamp"]),
            "max_timestamp": _timestamps(pa, piece["max_timestamp"]),
            "producer_id": pa.array(piece["producer_id"], i64),
            "producer_epoch": pa.array(piece["producer_epoch"], i32),
            "base_sequence": pa.array(piece["base_sequence"], i32),
            "is_transactional": pa.array(piece["is_transactional"], pa.bool_()),
            "is_control": pa.array(piece["is_control"], pa.bool_()),
            "partition_leader_epoch": pa.array(piece["partition_leader_epoch"], i32),
            "crc_valid": pa.array(piece["crc_valid"], pa.bool_(), mask=~piece["crc_checked"]),
        }
        return pa.RecordBatch.from_pydict({c: arrays[c] for c in self.columns})

    def _decode(self, partition: FilePartition, log: Any, cols: dict[str, list]) -> Iterator[None]:
        import fsspec

        from workbench.formats.batch import read_batches

        c = cols
        with fsspec.open(partition.path, "rb") as f:
            for b in read_batches(f, path=partition.path, problems=log, strict=self.strict,
                                  start=partition.start, end=partition.end):
                c["node_id"].append(partition.node_id)
                c["path"].append(partition.path)
                c["topic"].append(partition.topic)
                c["partition"].append(partition.partition)
                c["segment_base_offset"].append(partition.base_offset)
                c["position"].append(b.position)
                c["base_offset"].append(b.base_offset)
                c["last_offset"].append(b.last_offset)
                c["record_count"].append(b.record_count)
                c["size"].append(b.size)
                c["magic"].append(b.magic)
                c["compression"].append(b.compression)
                c["timestamp_type"].append(b.timestamp_type)
                c["base_timestamp"].append(_ms_to_us(b.base_timestamp))
                c["max_timestamp"].append(_ms_to_us(b.max_timestamp))
                c["producer_id"].append(b.producer_id)
                c["producer_epoch"].append(b.producer_epoch)
                c["base_sequence"].append(b.base_sequence)
                c["is_transactional"].append(b.is_transactional)
                c["is_control"].append(b.is_control)
                c["partition_leader_epoch"].append(b.partition_leader_epoch)
                c["crc_valid"].append(b.crc_valid)
                yield None

    def _to_arrow(self, pa: Any, cols: dict[str, list]) -> Any:
        ts = pa.timestamp("us", tz="UTC")
        i32, i64 = pa.int32(), pa.int64()
        types = {
            "node_id": i32, "path": pa.string(), "topic": pa.string(), "partition": i32,
            "segment_base_offset": i64, "position": i64, "base_offset": i64, "last_offset": i64,
            "record_count": i32, "size": i32, "magic": i32, "compression": pa.string(),
            "timestamp_type": pa.string(), "base_timestamp": ts, "max_timestamp": ts, "producer_id": i64,
            "producer_epoch": i32, "base_sequence": i32, "is_transactional": pa.bool_(), "is_control": pa.bool_(),
            "partition_leader_epoch": i32, "crc_valid": pa.bool_(),
        }
        return pa.RecordBatch.from_pydict({c: pa.array(cols[c], types[c]) for c in self.columns})


class BatchesSource(DataSource):
    """``spark.read.format("kafka_batches")``: one row per record batch of every log segment."""

    @classmethod
    def name(cls) -> str:
        return "kafka_batches"

    def schema(self) -> str:
        return PROBLEMS_SCHEMA if self.options.get("emit") == "problems" else BATCHES_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return BatchesReader(schema, self.options)


RECORDS_SCHEMA = (
    "node_id int, path string, topic string, partition int, batch_position long, offset long, "
    "timestamp timestamp, attributes int, size int, key_size int, value_size int, key binary, value binary, "
    "headers array<struct<key:string,value:binary>>"
)


class RecordsReader(BatchesReader):
    """Records of log segments, decoded by :mod:`workbench.formats.fastrecords` (compiled loops).

    Payloads are redacted unless the option ``payloads=true`` is given: ``key``, ``value`` and
    header values are then null, while ``key_size``/``value_size`` (-1 when absent) and header
    keys stay. Segments over ``split_bytes`` are split at ``.index`` batch boundaries, as for
    the ``batches`` table, which bounds each task's memory.
    """

    columns = column_names(RECORDS_SCHEMA)

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        super().__init__(schema, options)
        self.payloads = _parse_bool(options, "payloads", False)

    def read(self, partition: FilePartition) -> Iterator[Any]:  # type: ignore[override]
        import fsspec
        import pyarrow as pa

        from workbench.formats.batch import read_batches
        from workbench.formats.fastrecords import records_table
        from workbench.formats.problems import ProblemLog

        log = ProblemLog(partition.path, strict=self.strict)
        table = None
        try:
            with fsspec.open(partition.path, "rb") as f:
                table = records_table(read_batches(f, partition.path, problems=log, strict=self.strict,
                                                   start=partition.start, end=partition.end), log)
        except OSError as exc:
            log.report(0, "unreadable", f"cannot read file: {exc}")
        if self.emit == "problems":
            if log.problems:
                yield _problems_batch(pa, partition, log)
            return
        if table is not None:
            for chunk in table.to_batches(max_chunksize=ARROW_BATCH_ROWS):
                yield self._chunk_to_arrow(pa, partition, chunk)

    def _chunk_to_arrow(self, pa: Any, partition: FilePartition, chunk: Any) -> Any:
        import pyarrow.compute as pc

        n = chunk.num_rows
        i32 = pa.int32()
        key, value, headers = chunk.column("key"), chunk.column("value"), chunk.column("headers")
        header_type = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
        if self.payloads:
            key, value = key.cast(pa.binary()), value.cast(pa.binary())
            headers = headers.cast(header_type)
        else:
            key, value = pa.nulls(n, pa.binary()), pa.nulls(n, pa.binary())
            flat = headers.values  # the whole child array: the offsets of a slice index into it
            redacted = pa.StructArray.from_arrays([flat.field("key"), pa.nulls(len(flat), pa.binary())],
                                                  fields=list(header_type.value_type))
            headers = pa.ListArray.from_arrays(headers.offsets, redacted, type=header_type)

        def size(col: Any) -> Any:
            return pc.fill_null(pc.binary_length(col), -1).cast(i32)

        arrays = {
            "node_id": _constant(pa, n, partition.node_id, i32), "path": _constant(pa, n, partition.path, pa.string()),
            "topic": _constant(pa, n, partition.topic, pa.string()),
            "partition": _constant(pa, n, partition.partition, i32),
            "batch_position": chunk.column("batch_position"), "offset": chunk.column("offset"),
            "timestamp": _timestamps(pa, chunk.column("timestamp").to_numpy(zero_copy_only=False)),
            "attributes": chunk.column("attributes").cast(i32), "size": chunk.column("size"),
            "key_size": size(chunk.column("key")), "value_size": size(chunk.column("value")),
            "key": key, "value": value, "headers": headers,
        }
        return pa.RecordBatch.from_pydict({c: arrays[c] for c in self.columns})


class RecordsSource(DataSource):
    """``spark.read.format("kafka_records")``: one row per record of every log segment."""

    @classmethod
    def name(cls) -> str:
        return "kafka_records"

    def schema(self) -> str:
        return PROBLEMS_SCHEMA if self.options.get("emit") == "problems" else RECORDS_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return RecordsReader(schema, self.options)


METRICS_SCHEMA = (
    "node_id int, path string, metric string, mbean string, attribute string, labels map<string,string>, "
    "timestamp timestamp, value double"
)


def mbean_labels(mbean: str) -> dict[str, str]:
    """Key properties of an MBean name (``domain:k=v,...``), with the domain under ``domain``."""
    domain, _, props = mbean.partition(":")
    labels = {"domain": domain}
    for item in props.split(","):
        key, sep, value = item.partition("=")
        if sep:
            labels[key.strip()] = value.strip()
    return labels


class JmxReader(_ArtifactReader):
    """JmxTool CSV exports in the long ``metrics`` layout (one row per numeric sample value)."""

    columns = column_names(METRICS_SCHEMA)

    def _decode(self, partition: FilePartition, log: Any, cols: dict[str, list]) -> Iterator[None]:
        import fsspec

        from workbench.formats.jmx import read_jmx_csv

        with fsspec.open(partition.path, "rt", encoding="utf-8", errors="replace") as f:
            text = f.read()
        labels_cache: dict[str, list[tuple[str, str]]] = {}
        for sample in read_jmx_csv(text, partition.path, log):
            labels = labels_cache.get(sample.mbean)
            if labels is None:
                labels = labels_cache[sample.mbean] = list(mbean_labels(sample.mbean).items())
            cols["node_id"].append(partition.node_id)
            cols["path"].append(partition.path)
            cols["metric"].append(dict(labels).get("name") or dict(labels).get("type") or sample.mbean)
            cols["mbean"].append(sample.mbean)
            cols["attribute"].append(sample.attribute)
            cols["labels"].append(labels)
            cols["timestamp"].append(sample.timestamp_ms * 1000)
            cols["value"].append(sample.value)
            yield None

    def _to_arrow(self, pa: Any, cols: dict[str, list]) -> Any:
        types = {"node_id": pa.int32(), "path": pa.string(), "metric": pa.string(), "mbean": pa.string(),
                 "attribute": pa.string(), "labels": pa.map_(pa.string(), pa.string()),
                 "timestamp": pa.timestamp("us", tz="UTC"), "value": pa.float64()}
        return pa.RecordBatch.from_pydict({c: pa.array(cols[c], types[c]) for c in self.columns})


class JmxSource(DataSource):
    """``spark.read.format("kafka_jmx")``: JmxTool CSV samples as rows of the ``metrics`` table."""

    @classmethod
    def name(cls) -> str:
        return "kafka_jmx"

    def schema(self) -> str:
        return PROBLEMS_SCHEMA if self.options.get("emit") == "problems" else METRICS_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        return JmxReader(schema, self.options)


SOURCES: tuple[type[DataSource], ...] = (MetadataSource, BatchesSource, RecordsSource, JmxSource)


def register_sources(spark: Any) -> None:
    """Register every workbench data source with ``spark`` (registration is per session)."""
    for source in SOURCES:
        spark.dataSource.register(source)
