"""The shape every file-reading table source shares: one input partition per file, Arrow batches out.

A table module (``workbench/spark/<table>.py``) subclasses :class:`ArtifactReader` with a
``decode`` method that turns one file into rows, and :class:`ArtifactSource` with its name and
schema. Everything else is here:

* the option ``files``: a JSON list of ``{path, node_id, kind, base_offset, topic, partition}``
  (:func:`files_option` builds it from a bundle's artifacts);
* input partitions: a reader's :meth:`ArtifactReader.pieces` are its files (or byte ranges of
  large ones), and consecutive small pieces are packed into one input partition
  (:class:`FilePack`) up to ``pack_bytes`` (default 32 MiB) or ``pack_files`` (default 256)
  pieces, so a bundle of 10,000 small segments is read by tens of Spark tasks, not 10,000;
* one pass per file yields both the table's rows and the problems met reading it: the source's
  schema is the table's columns followed by :data:`PROBLEM_COLUMNS`, and a row whose
  ``_problem_kind`` is set is a problem. :func:`workbench.spark.registry.read_table` splits the
  two after persisting the read, so a file is decoded once however both are used;
* ``strict=true`` raises at the first problem instead;
* Arrow types follow Spark's exactly (``int`` = int32, ``long`` = int64, ``timestamp`` = µs UTC).

Options arrive as strings: :func:`option_bool` and :func:`option_int` validate them once, with
a message naming the option.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from workbench.errors import ConfigError
from workbench.formats.problems import TIMESTAMP_RANGE_MS

if TYPE_CHECKING:
    import pyarrow as pa

    from workbench.bundle import Artifact, Bundle
    from workbench.formats.problems import ProblemLog

#: Rows per yielded Arrow batch.
ARROW_BATCH_ROWS = 8192

#: Bytes of small files packed into one input partition (option ``pack_bytes``).
PACK_BYTES = 32 * 1024 * 1024

#: Files (or pieces of files) packed into one input partition at most (option ``pack_files``).
PACK_FILES = 256

#: The ``problems`` table: everything that could not be read.
PROBLEMS_SCHEMA = "node_id int, path string, position long, kind string, detail string"

#: Columns a source appends to its table's columns, set on problem rows only.
PROBLEM_COLUMNS = (
    "_problem_node int, _problem_path string, _problem_position long, _problem_kind string, _problem_detail string"
)

#: Largest millisecond timestamp a table holds (2262-04-11, the last instant pandas represents, so
#: that ``toPandas`` never fails on a far-future time); larger ones load as null.
MAX_TIMESTAMP_MS = TIMESTAMP_RANGE_MS[1]


def column_names(ddl: str) -> tuple[str, ...]:
    """Column names of a DDL schema string (commas inside ``<...>`` types are not separators).

    >>> column_names("a int, m map<string,string>, t timestamp")
    ('a', 'm', 't')
    """
    return tuple(name for name, _ in _split_fields(ddl))


def _split_fields(ddl: str) -> list[tuple[str, str]]:
    fields, depth, start = [], 0, 0
    for i, ch in enumerate(ddl + ","):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            part = ddl[start:i].strip()
            if part:
                name, _, typ = part.partition(" ") if " " in part else part.partition(":")
                fields.append((name.strip().rstrip(":"), typ.strip()))
            start = i + 1
    return fields


def arrow_type(typ: str) -> pa.DataType:
    """The Arrow type Spark expects for a DDL type (``int``, ``array<int>``, ``map<string,string>``...).

    Examples
    --------
    >>> str(arrow_type("array<struct<key:string,value:binary>>"))
    'list<item: struct<key: string, value: binary>>'
    >>> str(arrow_type("timestamp"))
    'timestamp[us, tz=UTC]'
    """
    import pyarrow as pa

    t = typ.strip()
    low = t.lower()
    simple = {
        "int": pa.int32(), "integer": pa.int32(), "long": pa.int64(), "bigint": pa.int64(),
        "short": pa.int16(), "smallint": pa.int16(), "byte": pa.int8(), "tinyint": pa.int8(),
        "string": pa.string(), "binary": pa.binary(), "boolean": pa.bool_(), "double": pa.float64(),
        "float": pa.float32(), "timestamp": pa.timestamp("us", tz="UTC"), "date": pa.date32(),
    }
    if low in simple:
        return simple[low]
    if low.startswith("array<") and low.endswith(">"):
        return pa.list_(arrow_type(t[6:-1]))
    if low.startswith("map<") and low.endswith(">"):
        inner = t[4:-1]
        depth = 0
        for i, ch in enumerate(inner):
            depth += ch == "<"
            depth -= ch == ">"
            if ch == "," and depth == 0:
                return pa.map_(arrow_type(inner[:i]), arrow_type(inner[i + 1:]))
    if low.startswith("struct<") and low.endswith(">"):
        return pa.struct([pa.field(n, arrow_type(ty)) for n, ty in _split_fields(t[7:-1])])
    raise ConfigError(f"unsupported column type in a table schema: {typ!r}")


def arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema of a DDL schema string (see :func:`arrow_type`)."""
    import pyarrow as pa

    return pa.schema([pa.field(name, arrow_type(typ)) for name, typ in _split_fields(ddl)])


class TaskParquet:
    """One Parquet file a Spark task writes with pyarrow under a local directory.

    Readers never see it half-written: it is ``.<name>.parquet.partial`` (hidden) until
    :meth:`close` renames it ``<name>.parquet``. Each :meth:`write` is one row group. With
    ``create`` the file exists even if nothing is written; else a task with no rows leaves none.
    """

    def __init__(self, directory: str, name: str, schema: pa.Schema, *, create: bool = False) -> None:
        self.partial, self.final = f"{directory}/.{name}.parquet.partial", f"{directory}/{name}.parquet"
        self.schema = schema
        self._writer: Any = None
        if create:
            self._open()

    def _open(self) -> None:
        import pyarrow.parquet as pq

        self._writer = pq.ParquetWriter(self.partial, self.schema, compression="snappy")

    def write(self, table: pa.Table) -> None:
        """Write ``table`` (of :attr:`schema`) as one row group; an empty table writes nothing."""
        if table.num_rows == 0:
            return
        if self._writer is None:
            self._open()
        self._writer.write_table(table, row_group_size=table.num_rows)

    def close(self) -> None:
        """Finish the file and give it its final name (nothing if it was never opened)."""
        import os

        if self._writer is not None:
            self._writer.close()
            os.replace(self.partial, self.final)


class FilePartition(InputPartition):
    """One artifact file (or byte range of one) to read. Picklable: plain values only."""

    def __init__(self, path: str, node_id: int, kind: str, base_offset: int | None, topic: str | None = None,
                 partition: int | None = None, start: int = 0, end: int | None = None,
                 cluster_id: str | None = None, size: int | None = None) -> None:
        super().__init__(path)
        self.path = path
        self.node_id = node_id
        self.kind = kind
        self.base_offset = base_offset
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end
        self.cluster_id = cluster_id
        #: the file's bytes as discovery listed them, for a file of another filesystem (a URL), whose
        #: size is not asked again; None for a local file (its size is read where it is packed)
        self.size = size

    def piece(self, start: int, end: int | None) -> FilePartition:
        """The same file, restricted to the byte range ``[start, end)``."""
        return FilePartition(self.path, self.node_id, self.kind, self.base_offset, self.topic, self.partition,
                             start, end, self.cluster_id, self.size)


class FilePack(InputPartition):
    """Consecutive pieces read by one Spark task, each with its own problem log. Picklable."""

    def __init__(self, pieces: Sequence[FilePartition]) -> None:
        super().__init__(len(pieces))
        self.pieces = list(pieces)


def piece_bytes(piece: FilePartition) -> int | None:
    """The bytes ``piece`` covers, or None when unknown (a file of another filesystem that discovery
    did not size: it gets a partition of its own)."""
    import os

    if piece.end is not None:
        return max(0, piece.end - piece.start)
    local = local_path(piece.path)
    if local is None:
        return None if piece.size is None else max(0, piece.size - piece.start)
    try:
        return max(0, os.path.getsize(local) - piece.start)
    except OSError:
        return 0


def pack(pieces: Iterable[FilePartition], pack_bytes: int, pack_files: int) -> list[FilePack]:
    """Consecutive ``pieces`` packed into partitions of at most ``pack_bytes`` bytes or ``pack_files`` pieces.

    A piece larger than ``pack_bytes`` (or of unknown size) is a partition of its own; order is kept.

    Examples
    --------
    >>> parts = [FilePartition(f"/nonexistent/{i}", 1, "segment", 0) for i in range(5)]
    >>> [len(p.pieces) for p in pack(parts, 1 << 20, 2)]
    [2, 2, 1]
    """
    out: list[FilePack] = []
    current: list[FilePartition] = []
    size = 0
    for piece in pieces:
        n = piece_bytes(piece)
        if n is None or n >= pack_bytes:
            if current:
                out.append(FilePack(current))
                current, size = [], 0
            out.append(FilePack([piece]))
            continue
        if current and (size + n > pack_bytes or len(current) >= pack_files):
            out.append(FilePack(current))
            current, size = [], 0
        current.append(piece)
        size += n
    if current:
        out.append(FilePack(current))
    return out


def files_option(bundle: Bundle, artifacts: Iterable[Artifact]) -> str:
    """The ``files`` option of a source: the artifacts with absolute paths and their cluster id, as JSON
    (and their sizes, for a bundle at a URL: asking a store each file's size again costs a request)."""
    sized = not isinstance(bundle.root, Path)
    return json.dumps([
        {"path": str(bundle.root / a.path), "node_id": a.node_id, "kind": a.kind, "base_offset": a.base_offset,
         "topic": a.topic, "partition": a.partition, "cluster_id": bundle.cluster_of(a),
         **({"bytes": a.bytes} if sized else {})}
        for a in artifacts
    ])


def parse_files(options: dict[str, str]) -> list[FilePartition]:
    """The partitions named by the ``files`` option."""
    raw = options.get("files")
    if raw is None:
        raise ConfigError("option 'files' is required: a JSON list of {path, node_id, kind, base_offset}")
    try:
        items = json.loads(raw)
        return [FilePartition(str(i["path"]), int(i.get("node_id", -1)), str(i.get("kind", "segment")),
                              None if i.get("base_offset") is None else int(i["base_offset"]),
                              i.get("topic"), None if i.get("partition") is None else int(i["partition"]),
                              cluster_id=None if i.get("cluster_id") is None else str(i["cluster_id"]),
                              size=None if i.get("bytes") is None else int(i["bytes"]))
                for i in items]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"option 'files' must be a JSON list of objects with a 'path': {exc}") from exc


def option_bool(options: dict[str, str], name: str, default: bool) -> bool:
    """A boolean option (``true``/``false``, ``1``/``0``, ``yes``/``no``)."""
    value = options.get(name)
    if value is None:
        return default
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise ConfigError(f"option {name!r} must be true or false, got {value!r}")


def option_int(options: dict[str, str], name: str, default: int, *, minimum: int = 1) -> int:
    """An integer option of at least ``minimum``."""
    raw = options.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ConfigError(f"option {name!r} must be an integer >= {minimum}, got {raw!r}")
    return value


def local_path(path: str) -> str | None:
    """The local file behind ``path`` (plain or ``file://``), or None for other filesystems."""
    if path.startswith("file://"):
        return path[len("file://"):]
    return None if "://" in path else path


def timestamps_us(ms: Any) -> Any:
    """Millisecond timestamps (a NumPy int64 array) as Spark's µs timestamps; out-of-range ones null."""
    import pyarrow as pa

    ms = np.asarray(ms, dtype=np.int64)
    bad = (ms < 0) | (ms > MAX_TIMESTAMP_MS)
    return pa.array(np.where(bad, 0, ms) * 1000, pa.timestamp("us", tz="UTC"), mask=bad)


class OutOfRange:
    """A value read from a file that its column cannot hold, in place of the value in a row.

    :meth:`ArtifactReader.read` turns it into a null and an ``out_of_range`` problem at the row's
    position (its ``batch_position``, ``position`` or ``line``) quoting the raw value.
    """

    __slots__ = ("raw", "why")

    def __init__(self, raw: Any, why: str) -> None:
        self.raw = raw
        self.why = why

    def __repr__(self) -> str:
        return f"OutOfRange({self.raw!r}, {self.why!r})"


def ms_to_us(ms: int | None) -> int | OutOfRange | None:
    """One millisecond timestamp as µs for a Spark ``timestamp`` column.

    None and -1 (Kafka's "no timestamp") are null; a time out of range is an :class:`OutOfRange`.

    >>> ms_to_us(1_700_000_000_000), ms_to_us(-1), ms_to_us(2**62)
    (1700000000000000, None, OutOfRange(4611686018427387904, 'ms is outside 1970-01-01..2262-04-11'))
    """
    if ms is None or ms == -1:
        return None
    if isinstance(ms, int | float) and not isinstance(ms, bool) and 0 <= ms <= MAX_TIMESTAMP_MS:
        return ms * 1000
    return OutOfRange(ms, "ms is outside 1970-01-01..2262-04-11")


def checked_timestamps_us(ms: Any, positions: Any, log: ProblemLog, what: str) -> Any:
    """:func:`timestamps_us`, with an ``out_of_range`` problem (at the row's position) for each
    time other than -1 (Kafka's "no timestamp") that no table can hold."""
    ms = np.asarray(ms, dtype=np.int64)
    bad = np.flatnonzero(((ms < 0) & (ms != -1)) | (ms > MAX_TIMESTAMP_MS))
    for i in bad.tolist():
        log.report(int(positions[i]), "out_of_range",
                   f"{what} {int(ms[i])} ms is outside 1970-01-01..2262-04-11; null")
    return timestamps_us(ms)


def report_range(values: Any, positions: Any, log: ProblemLog, what: str, low: int, high: int) -> Any:
    """``values`` (a NumPy integer array) as an Arrow array with those outside ``low..high`` null,
    each with an ``out_of_range`` problem at its row's position."""
    import pyarrow as pa

    values = np.asarray(values)
    mask = (values < low) | (values > high)
    for i in np.flatnonzero(mask).tolist():
        log.report(int(positions[i]), "out_of_range", f"{what} {int(values[i])} is outside {low}..{high}; null")
    return pa.array(values, mask=mask if mask.any() else None)


def constant(n: int, value: Any, typ: pa.DataType) -> pa.Array:
    """A column of ``n`` copies of ``value`` (nulls for None): a partition's node, path, topic, ..."""
    import pyarrow as pa

    return pa.nulls(n, typ) if value is None else pa.array([value] * n, typ)


class ArtifactReader(DataSourceReader):
    """Reads the files of the ``files`` option, small ones packed together, rows and problems in one pass.

    Subclasses set :attr:`schema_ddl` and implement :meth:`decode`, which yields either row
    dicts (column name -> value; timestamps as µs) or ``pyarrow.RecordBatch``\\ es with exactly
    the table's columns. Problems go to the :class:`~workbench.formats.problems.ProblemLog`
    given to ``decode``; they are emitted after each file's rows, as rows of their own. A subclass
    that splits large files overrides :meth:`pieces`.
    """

    #: The table's columns (DDL), without the problem columns.
    schema_ddl: str = ""

    #: Integer columns of row dicts whose values must lie in ``(low, high)`` (ids, epochs,
    #: offsets): a value outside is null, with an ``out_of_range`` problem naming it.
    ranges: dict[str, tuple[int, int]] = {}

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        self.options = dict(options)
        self.files = parse_files(options)
        self.strict = option_bool(options, "strict", False)
        self.pack_bytes = option_int(options, "pack_bytes", PACK_BYTES)
        self.pack_files = option_int(options, "pack_files", PACK_FILES)

    def pieces(self) -> Sequence[FilePartition]:
        """What is read: one piece per file (override to split large files into byte ranges)."""
        return self.files

    def partitions(self) -> Sequence[FilePack]:
        return pack(self.pieces(), self.pack_bytes, self.pack_files)

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any] | pa.RecordBatch]:
        """Rows of one partition (override)."""
        raise NotImplementedError

    def read(self, partition: FilePack | FilePartition) -> Iterator[Any]:  # type: ignore[override]
        schema = arrow_schema(self.schema_ddl)
        full = arrow_schema(f"{self.schema_ddl}, {PROBLEM_COLUMNS}")
        for piece in partition.pieces if isinstance(partition, FilePack) else [partition]:
            yield from self._read_piece(piece, schema, full)

    def _checked(self, row: dict[str, Any], log: ProblemLog) -> dict[str, Any]:
        """``row`` with each :class:`OutOfRange` value and each value outside :attr:`ranges` null, a problem each."""
        for name, value in row.items():
            if isinstance(value, OutOfRange):
                row[name] = None
                log.report(row_position(row), "out_of_range", f"{name} {_raw(value.raw)} {value.why}; null")
        for name, (low, high) in self.ranges.items():
            value = row.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and not low <= value <= high:
                row[name] = None
                log.report(row_position(row), "out_of_range", f"{name} {value} is outside {low}..{high}; null")
        return row

    def _read_piece(self, partition: FilePartition, schema: pa.Schema, full: pa.Schema) -> Iterator[Any]:
        import pyarrow as pa

        from workbench.formats.problems import ProblemLog

        log = ProblemLog(partition.path, strict=self.strict)
        rows: list[dict[str, Any]] = []
        try:
            for item in self.decode(partition, log):
                if isinstance(item, pa.RecordBatch):
                    if rows:
                        yield _with_problem_columns(pa.RecordBatch.from_pylist(rows, schema), full)
                        rows = []
                    if item.num_rows:
                        yield _with_problem_columns(item, full)
                    continue
                rows.append(self._checked(item, log))
                if len(rows) >= ARROW_BATCH_ROWS:
                    yield _with_problem_columns(_from_rows(rows, schema, log), full)
                    rows = []
        except OSError as exc:
            log.report(0, "unreadable", f"cannot read file: {exc}")
        if rows:
            yield _with_problem_columns(_from_rows(rows, schema, log), full)
        if log.problems:
            yield _problem_rows(log, partition.node_id, full)


#: Row keys that give a row's position in its file, first present wins (else 0).
POSITION_KEYS = ("batch_position", "position", "line")


def row_position(row: dict[str, Any]) -> int:
    """The position in its file of a row (for its problems): its batch's, its own, or its line; else 0."""
    for key in POSITION_KEYS:
        value = row.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def _raw(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _from_rows(rows: list[dict[str, Any]], schema: pa.Schema, log: ProblemLog) -> pa.RecordBatch:
    """Rows as one Arrow batch; a value its column's type cannot hold (an integer beyond it, a
    number as text...) is null with an ``out_of_range`` problem, instead of failing the read."""
    import pyarrow as pa

    try:
        return pa.RecordBatch.from_pylist(rows, schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        pass
    for row in rows:
        for f in schema:
            value = row.get(f.name)
            if value is None:
                continue
            try:
                pa.array([value], f.type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
                row[f.name] = None
                log.report(row_position(row), "out_of_range",
                           f"{f.name} {_raw(value)[:80]} does not fit the column's type {f.type}; null")
    return pa.RecordBatch.from_pylist(rows, schema)


def _with_problem_columns(batch: pa.RecordBatch, full: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    n = batch.num_rows
    columns = [batch.column(i) for i in range(batch.num_columns)]
    columns += [pa.nulls(n, full.field(i).type) for i in range(batch.num_columns, len(full))]
    return pa.RecordBatch.from_arrays(columns, schema=full)


def _problem_rows(log: ProblemLog, node_id: int, full: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    n = len(log.problems)
    tail = {
        "_problem_node": pa.array([node_id] * n, pa.int32()),
        "_problem_path": pa.array([p.path for p in log.problems], pa.string()),
        "_problem_position": pa.array([p.position for p in log.problems], pa.int64()),
        "_problem_kind": pa.array([p.kind for p in log.problems], pa.string()),
        "_problem_detail": pa.array([p.detail for p in log.problems], pa.string()),
    }
    columns = [tail[f.name] if f.name in tail else pa.nulls(n, f.type) for f in full]
    return pa.RecordBatch.from_arrays(columns, schema=full)


class ArtifactSource(DataSource):
    """A Spark data source over artifact files; subclasses set ``reader_class`` and ``name()``."""

    reader_class: type[ArtifactReader] = ArtifactReader

    def schema(self) -> str:
        return f"{self.reader_class.schema_ddl}, {PROBLEM_COLUMNS}"

    def reader(self, schema: Any) -> DataSourceReader:
        return self.reader_class(schema, self.options)
