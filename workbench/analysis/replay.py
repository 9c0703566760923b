"""Replaying a log per key inside Spark: sorted rows, Arrow batches, a state machine that carries over.

Many questions are answered by replaying a log in order, one state per key: a partition's ISR
from its metadata records, a consumer group's committed offsets, a mirrored partition's
checkpoints, a remote segment's lifecycle. :func:`replay_by_key` is the one way the workbench
runs such a replay on a DataFrame:

1. a first ``mapInArrow`` pass (no shuffle) gathers a task's rows a few hundred thousand at a
   time, sorts them by key and replay order (Arrow's sort) and packs each key's run of rows into
   one binary cell, an Arrow IPC message: a run, not a row, is what Spark handles from here on;
2. the runs are hash-partitioned by key (``repartition``), so each key lives in one Spark
   partition, and sorted by key and first row within it (``sortWithinPartitions``, an external
   sort that spills rather than grows);
3. a second ``mapInArrow`` pass unpacks the runs in order and hands them to a
   :class:`KeyedReplay` (one per Spark partition, made by the caller's factory) as Arrow record
   batches of a few tens of thousands of rows, each with a boolean array marking the rows that
   start a new key (the first row of a batch is compared with the last row of the previous one);
   the replay returns output rows as Arrow batches. Its state lives between calls, so a key whose
   rows span two batches is replayed as one; :meth:`KeyedReplay.finish` closes the last key.

Spark's per-row costs (row format, shuffle, sort, Arrow conversion) are what make a naive
``repartition``/``sortWithinPartitions``/``mapInArrow`` replay slow; packing pays them per run.
Two runs of one key overlap in replay order only when their tasks' inputs interleave (e.g. rows
coming out of another shuffle); the key's runs are then gathered and sorted before the replay
sees them, which costs memory in proportion to that key's rows.

A replay typically keeps its state in a few NumPy arrays and does the work in one compiled
(numba) function per batch, over the batch's columns as arrays: memory is bounded by one batch
and one key's state, whatever the log size, and the rows never become Python objects.
:mod:`workbench.analysis.isr.kernel` is the worked example.

Examples
--------
A running count per key (a real replay would hand the arrays to a compiled function):

>>> class Count:
...     def __init__(self):
...         self.key, self.n = None, 0
...     def step(self, batch, starts):
...         import pyarrow as pa
...         keys, out = batch.column("k").to_pylist(), []
...         for key, start in zip(keys, starts):
...             if start and self.key is not None:
...                 out.append((self.key, self.n))
...                 self.n = 0
...             self.key, self.n = key, self.n + 1
...         return pa.RecordBatch.from_pylist([{"k": k, "n": n} for k, n in out], schema=pa.schema(
...             [("k", pa.string()), ("n", pa.int64())])) if out else None
...     def finish(self):
...         import pyarrow as pa
...         return None if self.key is None else pa.RecordBatch.from_pylist(
...             [{"k": self.key, "n": self.n}], schema=pa.schema([("k", pa.string()), ("n", pa.int64())]))
>>> df = spark.createDataFrame([("a", 1), ("b", 2), ("a", 3)], "k string, t int")   # doctest: +SKIP
>>> replay_by_key(df, ["k"], ["t"], "k string, n long", Count).orderBy("k").collect()  # doctest: +SKIP
[Row(k='a', n=2), Row(k='b', n=1)]
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql import functions as F

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["BUCKET_ROWS", "Follower", "KeyedReplay", "PACK_ROWS", "ROW_GROUP_ROWS", "STEP_ROWS", "is_clustered",
           "key_buckets", "key_starts", "mark_clustered", "replay_by_key", "replay_clustered", "replay_files",
           "replay_to_parquet"]


class KeyedReplay(Protocol):
    """A state machine fed the sorted rows of one Spark partition, batch by batch."""

    def step(self, batch: pa.RecordBatch, starts: np.ndarray) -> pa.RecordBatch | None:
        """Replay ``batch`` (``starts[i]``: row ``i`` begins a new key); returns output rows."""

    def finish(self) -> pa.RecordBatch | None:
        """Close the last key, after the last batch; returns output rows."""


def key_starts(batch: pa.RecordBatch, keys: Sequence[str], previous: tuple | None) -> np.ndarray:
    """Rows of ``batch`` whose key differs from the row before (the first row: from ``previous``).

    Nulls compare equal to nulls. ``previous`` is the last key of the previous batch (``None``
    for the first batch).

    Examples
    --------
    >>> import pyarrow as pa
    >>> b = pa.RecordBatch.from_pydict({"t": ["a", "a", "b", None, None], "p": [0, 0, 0, 1, 1]})
    >>> key_starts(b, ["t", "p"], ("a", 0)).tolist()
    [False, False, True, True, False]
    """
    import numpy as np
    import pyarrow.compute as pc

    n = batch.num_rows
    starts = np.zeros(n, np.bool_)
    if n == 0:
        return starts
    first = tuple(batch.column(k)[0].as_py() for k in keys)
    starts[0] = previous is None or first != previous
    if n > 1:
        for k in keys:
            col = batch.column(k)
            a, b = col.slice(1), col.slice(0, n - 1)
            differ = pc.fill_null(pc.not_equal(a, b), True)
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            differ = pc.and_(differ, pc.invert(both_null))
            starts[1:] |= differ.to_numpy(zero_copy_only=False)
    return starts


#: Input rows gathered by a packing task before it sorts them and cuts them into runs per key.
PACK_ROWS = 1 << 19
#: Rows handed to :meth:`KeyedReplay.step` at a time (runs of several keys concatenated).
STEP_ROWS = 1 << 16
_PAYLOAD = "_run"
_FIRST = "_first_"
_NULL = "_null_"


def _arrow_type(dtype: Any) -> Any:
    """The Arrow type Spark's ``mapInArrow`` uses for a Spark SQL type (the ones replays need)."""
    import pyarrow as pa
    from pyspark.sql import types as T

    simple = {T.IntegerType: pa.int32(), T.LongType: pa.int64(), T.ShortType: pa.int16(), T.ByteType: pa.int8(),
              T.BooleanType: pa.bool_(), T.DoubleType: pa.float64(), T.FloatType: pa.float32(),
              T.StringType: pa.string(), T.BinaryType: pa.binary(), T.DateType: pa.date32(),
              T.TimestampType: pa.timestamp("us", tz="UTC")}
    for cls, arrow in simple.items():
        if isinstance(dtype, cls):
            return arrow
    if isinstance(dtype, T.ArrayType):
        return pa.list_(_arrow_type(dtype.elementType))
    if isinstance(dtype, T.StructType):
        return pa.struct([pa.field(f.name, _arrow_type(f.dataType)) for f in dtype.fields])
    from workbench.errors import ConfigError

    raise ConfigError(f"replay_by_key cannot carry a column of type {dtype.simpleString()}")


def _pack(keys: list[str], order: list[str], arrays: list[str], schema: Any,
          chunk_rows: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The packing task: sorted runs of each key's rows, one Arrow IPC message per run."""

    def pack_chunk(batches: list[Any]) -> Any:
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        table = pa.Table.from_batches(batches).combine_chunks()
        for name in arrays:  # restore the nulls of array columns (shipped as empty arrays and a flag)
            col = table.column(name).chunk(0)
            flag = table.column(_NULL + name).chunk(0)
            restored = pa.ListArray.from_arrays(col.offsets, col.values, type=col.type, mask=flag)
            table = table.set_column(table.schema.get_field_index(name), name, restored)
        table = table.select(schema.names).cast(schema)
        idx = pc.sort_indices(table, sort_keys=[(c, "ascending") for c in keys + order])
        table = table.take(idx)
        batch = table.combine_chunks().to_batches()[0]
        starts = np.flatnonzero(key_starts(batch, keys, None))
        bounds = np.append(starts, batch.num_rows)
        payloads = [batch.slice(a, b - a).serialize().to_pybytes() for a, b in zip(bounds[:-1], bounds[1:],
                                                                                     strict=True)]
        firsts = pa.array(starts)
        cols = [batch.column(k).take(firsts) for k in keys] + [batch.column(o).take(firsts) for o in order]
        names = keys + [_FIRST + o for o in order] + [_PAYLOAD]
        return pa.RecordBatch.from_arrays(cols + [pa.array(payloads, pa.binary())], names=names)

    def pack(batches: Iterator[Any]) -> Iterator[Any]:
        pending: list[Any] = []
        rows = 0
        for b in batches:
            if b.num_rows == 0:
                continue
            pending.append(b)
            rows += b.num_rows
            if rows >= chunk_rows:
                yield pack_chunk(pending)
                pending, rows = [], 0
        if pending:
            yield pack_chunk(pending)

    return pack


class _Feeder:
    """Feeds one Spark partition's runs to a :class:`KeyedReplay`, in order, a few thousand rows at a time.

    Runs of a key come sorted by their first row. When two runs of a key overlap in replay order
    (their rows came from tasks whose inputs interleave, e.g. after a shuffle), the key's remaining
    runs are gathered and sorted before they are fed.
    """

    def __init__(self, keys: list[str], order: list[str], replay: KeyedReplay) -> None:
        self.keys, self.order, self.replay = keys, order, replay
        self.key: tuple | None = None
        self.held: Any = None  # the current key's last run, not yet fed
        self.gathered: list[Any] | None = None
        self.pending: list[Any] = []
        self.rows = 0
        self.previous: tuple | None = None  # last key handed to the replay

    def _order(self, batch: Any, row: int) -> tuple:
        """The replay order of ``batch``'s row ``row``, nulls after every value (as Arrow sorts them)."""
        values = (batch.column(o)[row].as_py() for o in self.order)
        return tuple((v is None, 0 if v is None else v) for v in values)

    def add(self, key: tuple, run: Any) -> Iterator[Any]:
        if key != self.key:
            yield from self._end_key()
            self.key, self.held = key, run
            return
        if self.gathered is not None:
            self.gathered.append(run)
        elif self._order(run, 0) < self._order(self.held, self.held.num_rows - 1):
            self.gathered, self.held = [self.held, run], None
        else:
            yield from self._feed(self.held)
            self.held = run

    def _end_key(self) -> Iterator[Any]:
        import pyarrow as pa

        if self.gathered is not None:
            table = pa.Table.from_batches(self.gathered).sort_by([(o, "ascending") for o in self.order])
            for b in table.combine_chunks().to_batches():
                yield from self._feed(b)
        elif self.held is not None:
            yield from self._feed(self.held)
        self.held, self.gathered = None, None

    def _feed(self, run: Any) -> Iterator[Any]:
        self.pending.append(run)
        self.rows += run.num_rows
        if self.rows >= STEP_ROWS:
            yield from self._step()

    def _step(self) -> Iterator[Any]:
        import pyarrow as pa

        if not self.pending:
            return
        batch = pa.Table.from_batches(self.pending).combine_chunks().to_batches()[0]
        self.pending, self.rows = [], 0
        starts = key_starts(batch, self.keys, self.previous)
        self.previous = tuple(batch.column(k)[batch.num_rows - 1].as_py() for k in self.keys)
        out = self.replay.step(batch, starts)
        if out is not None and out.num_rows:
            yield out

    def finish(self) -> Iterator[Any]:
        yield from self._end_key()
        yield from self._step()
        out = self.replay.finish()
        if out is not None and out.num_rows:
            yield out


def _unpack(keys: list[str], order: list[str], schema: Any,
            factory: Callable[[], KeyedReplay]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The replay task: runs in key and order, unpacked and fed to a fresh replay."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        feeder = _Feeder(keys, order, factory())
        for packed in batches:
            key_cols = [packed.column(k).to_pylist() for k in keys]
            payloads = packed.column(_PAYLOAD)
            for i in range(packed.num_rows):
                run_batch = pa.ipc.read_record_batch(pa.py_buffer(payloads[i].as_py()), schema)
                yield from feeder.add(tuple(c[i] for c in key_cols), run_batch)
        yield from feeder.finish()

    return run


def replay_by_key(df: DataFrame, keys: Sequence[str], order: Sequence[str], schema: str,
                  factory: Callable[[], KeyedReplay], *, partitions: int | None = None,
                  pack_rows: int = PACK_ROWS) -> DataFrame:
    """Replay ``df`` per key in ``order`` with a :class:`KeyedReplay`, inside Spark.

    Each key's rows are packed into one Arrow cell before the shuffle, so Spark's per-row costs are paid
    per run of a key. A null key is a key of its own; null order values sort last. ``df`` should hold only
    the columns the replay needs (they all travel to Python); ``order`` should be total. ``factory`` is
    called once per Spark partition on the executor and must pickle. ``pack_rows`` bounds the rows a
    packing task sorts at a time (its memory).
    """
    ordered, arrow_schema = _ordered_runs(df, list(keys), list(order), partitions, pack_rows)
    return ordered.mapInArrow(_unpack(list(keys), list(order), arrow_schema, factory), schema)


def _ordered_runs(df: DataFrame, keys: list[str], order: list[str], partitions: int | None,
                  pack_rows: int) -> tuple[DataFrame, Any]:
    """The packed runs of ``df``, partitioned by key and sorted (steps 1 and 2), and its Arrow schema."""
    import pyarrow as pa
    from pyspark.sql import types as T

    arrays = [f.name for f in df.schema.fields if isinstance(f.dataType, T.ArrayType)]
    arrow_schema = pa.schema([pa.field(f.name, _arrow_type(f.dataType)) for f in df.schema.fields])
    wire = df.select(*[F.coalesce(F.col(f.name), F.array().cast(f.dataType)).alias(f.name) if f.name in arrays
                       else F.col(f.name) for f in df.schema.fields],
                     *[F.col(a).isNull().alias(_NULL + a) for a in arrays])
    packed_ddl = ", ".join(
        [f"`{f.name}` {f.dataType.simpleString()}" for k in keys for f in [df.schema[k]]]
        + [f"`{_FIRST}{o}` {df.schema[o].dataType.simpleString()}" for o in order] + [f"`{_PAYLOAD}` binary"])
    packed = wire.mapInArrow(_pack(keys, order, arrays, arrow_schema, pack_rows), packed_ddl)
    cols = [F.col(k) for k in keys]
    parted = packed.repartition(partitions, *cols) if partitions else packed.repartition(*cols)
    return parted.sortWithinPartitions(*cols, *[F.col(_FIRST + o).asc_nulls_last() for o in order]), arrow_schema


#: Rows one task of a bucketed replay (:func:`replay_files`) sorts at a time, about: the number of
#: buckets grows with the input so that a bucket holds no more (unless one key alone has more).
BUCKET_ROWS = 1 << 20
_FNV_PRIME = 1099511628211


def key_buckets(table: pa.Table, keys: Sequence[str], buckets: int) -> np.ndarray:
    """The bucket (``0 .. buckets - 1``) of each row's key: the same key, the same bucket, in any
    task and process (a hash of the values, not of Python objects). Keys are integer or string
    columns; a null hashes as a value of its own.

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"t": ["a", "b", "a", None], "p": [1, 1, 1, 2]})
    >>> b = key_buckets(t, ["t", "p"], 1024)
    >>> bool(b[0] == b[2]), bool(b[0] != b[1]), int(b.max()) < 1024
    (True, True, True)
    """
    import hashlib

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    h = np.zeros(table.num_rows, np.uint64)
    prime = np.uint64(_FNV_PRIME)
    with np.errstate(over="ignore"):
        for k in keys:
            col = table.column(k)
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            if pa.types.is_string(col.type) or pa.types.is_binary(col.type) or pa.types.is_dictionary(col.type):
                # each distinct value hashed once (a few thousand topic ids in a million rows)
                encoded = col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col)
                words = [hashlib.blake2b(v if isinstance(v, bytes) else v.encode(), digest_size=8).digest()
                         for v in encoded.dictionary.to_pylist()]
                distinct = np.frombuffer(b"".join(words), np.uint64) if words else np.zeros(0, np.uint64)
                index = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
                value = np.where(index >= 0, distinct[np.maximum(index, 0)] if words else 0, np.uint64(1))
            else:
                value = pc.fill_null(col, 0).to_numpy(zero_copy_only=False).astype(np.int64).view(np.uint64)
                value = np.where(col.is_null().to_numpy(zero_copy_only=False), np.uint64(1) << np.uint64(63) | 1, value)
            h = h * prime + value.astype(np.uint64)
        h ^= h >> np.uint64(33)
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
    return (h % np.uint64(buckets)).astype(np.int64)


def _sort_indices(table: pa.Table, keys: list[str], order: list[str]) -> Any:
    """Indices grouping ``table``'s rows by key and sorting each key's rows by ``order``.

    Keys are grouped, not sorted by value: strings by their index in a dictionary of the column,
    so that one NumPy ``lexsort`` over integers does the work (Arrow's sort compares the strings
    themselves, much slower on topic ids). Order columns that are not integers without nulls
    fall back to Arrow's sort of everything.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def integers(name: str) -> bool:
        col = table.column(name)
        return pa.types.is_integer(col.type) and col.null_count == 0

    if not all(integers(o) for o in order):
        return pc.sort_indices(table, sort_keys=[(c, "ascending") for c in keys + order])
    columns = []
    for k in keys:
        col = table.column(k).combine_chunks()
        if pa.types.is_integer(col.type):
            columns.append(pc.fill_null(col, 0).to_numpy(zero_copy_only=False).astype(np.int64))
            columns.append(col.is_null().to_numpy(zero_copy_only=False))
        else:
            encoded = col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col)
            columns.append(pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64))
    columns += [table.column(o).to_numpy() for o in order]
    return pa.array(np.lexsort(columns[::-1]))


def _file_pack(files: list[str], columns: list[str], prepare: Callable[[Any], Any], schema: Any, keys: list[str],
               buckets: int, chunk_rows: int, dictionaries: list[str],
               exchange: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The packing task of :func:`replay_files`: one Parquet file read with pyarrow, a chunk at a
    time, turned into replay rows by ``prepare``, cut by bucket and appended to one Arrow IPC
    stream per bucket, ``<exchange>/<bucket>/<file>.arrow`` (renamed into place when complete)."""

    def pack(batches: Iterator[Any]) -> Iterator[Any]:
        import os

        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = 0
        for ids in batches:
            for i in ids.column(0).to_pylist():
                writers: dict[int, Any] = {}
                reader = pq.ParquetFile(files[i], read_dictionary=[c for c in dictionaries if c in columns])
                for chunk in reader.iter_batches(batch_size=chunk_rows, columns=columns, use_threads=False):
                    table = prepare(pa.Table.from_batches([chunk])).select(schema.names).cast(schema)
                    if table.num_rows == 0:
                        continue
                    bucket = key_buckets(table, keys, buckets)
                    idx = np.argsort(bucket, kind="stable")
                    table = table.take(pa.array(idx))
                    at = 0
                    for b, n in enumerate(np.bincount(bucket, minlength=buckets).tolist()):
                        if n:
                            if b not in writers:
                                os.makedirs(f"{exchange}/{b}", exist_ok=True)
                                writers[b] = pa.ipc.new_stream(f"{exchange}/{b}/.{i}.arrow.partial", schema)
                            writers[b].write_table(table.slice(at, n))
                        at += n
                    rows += table.num_rows
                for b, writer in writers.items():
                    writer.close()
                    os.replace(f"{exchange}/{b}/.{i}.arrow.partial", f"{exchange}/{b}/{i}.arrow")
        yield pa.RecordBatch.from_pydict({"rows": pa.array([rows], pa.int64())})

    return pack


def _bucket_replay(keys: list[str], order: list[str], factory: Callable[[], KeyedReplay],
                   exchange: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The replay task of :func:`replay_files`: its bucket's rows (every packing task's stream of
    it) sorted by key and order, fed to a fresh replay :data:`STEP_ROWS` at a time."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import glob

        import pyarrow as pa

        for ids in batches:
            for b in ids.column(0).to_pylist():
                streams = sorted(glob.glob(f"{exchange}/{b}/*.arrow"))
                replay = factory()
                if streams:
                    table = pa.concat_tables([pa.ipc.open_stream(pa.memory_map(s)).read_all() for s in streams])
                    table = table.combine_chunks()
                    table = table.take(_sort_indices(table, keys, order))
                    previous: tuple | None = None
                    for batch in table.to_batches(max_chunksize=STEP_ROWS):
                        starts = key_starts(batch, keys, previous)
                        previous = tuple(batch.column(k)[batch.num_rows - 1].as_py() for k in keys)
                        out = replay.step(batch, starts)
                        if out is not None and out.num_rows:
                            yield out
                    del table
                out = replay.finish()
                if out is not None and out.num_rows:
                    yield out

    return run


def replay_files(spark: Any, files: Sequence[str], columns: Sequence[str], prepare: Callable[[Any], Any],
                 rows_ddl: str, keys: Sequence[str], order: Sequence[str], schema: str,
                 factory: Callable[[], KeyedReplay], directory: str, *, buckets: int | None = None,
                 pack_rows: int = PACK_ROWS, row_group_rows: int | None = None,
                 followers: Sequence[Follower] = (), read_dictionary: Sequence[str] = ()) -> DataFrame:
    """:func:`replay_to_parquet` of rows read from local Parquet files by the tasks themselves.

    For a table the registry keeps as a local Parquet copy (:func:`workbench.spark.registry.parquet_copy`):
    converting rows to Arrow for Python and shuffling them costs far more than the replay, so packing
    tasks read the files with pyarrow, ``prepare`` (it must pickle) turns each chunk into the replay's
    rows (``rows_ddl``), and the rows go by key hash (:func:`key_buckets`) to Arrow streams beside
    ``directory``; one replay task per bucket then sorts and replays them and writes Parquet under
    ``directory``. ``read_dictionary`` names string columns to read as dictionaries. ``buckets`` defaults
    to :data:`BUCKET_ROWS` input rows each (at least twice the default parallelism), so memory stays flat
    unless one key is larger. ``followers`` see the output as it is produced (no second read). Nulls as
    in :func:`replay_by_key`.
    """
    import shutil

    import pyarrow.parquet as pq

    from workbench.spark.source import arrow_schema as to_arrow

    files, keys, order = list(files), list(keys), list(order)
    if not files:
        return spark.createDataFrame([], schema)
    if buckets is None:
        total = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        buckets = max(2 * spark.sparkContext.defaultParallelism, -(-total // BUCKET_ROWS))
    exchange = f"{directory.rstrip('/')}.exchange"
    try:
        pack = _file_pack(files, list(columns), prepare, to_arrow(rows_ddl), keys, buckets, pack_rows,
                          list(read_dictionary), exchange)
        spark.range(0, len(files), 1, len(files)).mapInArrow(pack, "rows long").agg(F.sum("rows")).collect()
        ordered = spark.range(0, buckets, 1, buckets)
        run = _bucket_replay(keys, order, factory, exchange)
        return _write_replayed(spark, ordered, run, keys, schema, directory, row_group_rows, followers)
    finally:
        shutil.rmtree(exchange, ignore_errors=True)


#: Rows a replay task writing Parquet (:func:`replay_to_parquet`) holds before it writes a row group.
ROW_GROUP_ROWS = 1 << 18


def replay_to_parquet(df: DataFrame, keys: Sequence[str], order: Sequence[str], schema: str,
                      factory: Callable[[], KeyedReplay], directory: str, *, partitions: int | None = None,
                      pack_rows: int = PACK_ROWS, row_group_rows: int | None = None) -> DataFrame:
    """:func:`replay_by_key`, run now, its output written by the replay tasks straight to Parquet.

    For large replays whose output several questions read: the rows never become Spark rows or a
    Spark cache. The output must carry the ``keys`` columns: each key's rows stay in one row group, so
    the result is clustered by key (:func:`mark_clustered` it when that order is a replay order).
    ``row_group_rows`` (default :data:`ROW_GROUP_ROWS`) is the rows a task holds before writing a group.
    """

    keys, order = list(keys), list(order)
    ordered, arrow_schema = _ordered_runs(df, keys, order, partitions, pack_rows)
    run = _unpack(keys, order, arrow_schema, factory)
    return _write_replayed(df.sparkSession, ordered, run, keys, schema, directory, row_group_rows)


@dataclass(frozen=True)
class Follower:
    """A replay of another replay's output, run by :func:`replay_files` in the task that produces it.

    What :func:`replay_clustered` would run over the output afterwards (each key's rows together,
    in replay order), without reading them back: ``prepare`` (default: none) turns each output
    batch into this replay's rows, ``factory`` makes one :class:`KeyedReplay` per task, keyed by ``keys``; what it
    returns (``schema``, a DDL string) is written to one Parquet file per task under ``directory``.
    Meant for small outputs (a row per key, pre-aggregated steps): a task holds them until it ends.
    """

    keys: tuple[str, ...]
    factory: Callable[[], KeyedReplay]
    schema: str
    directory: str
    prepare: Callable[[Any], Any] | None = None


def _write_replayed(spark: Any, ordered: DataFrame, run: Callable[[Iterator[Any]], Iterator[Any]], keys: list[str],
                    schema: str, directory: str, row_group_rows: int | None,
                    followers: Sequence[Follower] = (), read_dictionary: Sequence[str] = ()) -> DataFrame:
    """Run ``run`` over ``ordered``'s Spark partitions, each task writing what it returns to one
    Parquet file under ``directory`` (whole keys per row group) and feeding its ``followers``; the
    rows read back."""
    import os


    group_rows = row_group_rows or ROW_GROUP_ROWS

    def write(batches: Iterator[Any]) -> Iterator[Any]:
        import uuid

        import numpy as np
        import pyarrow as pa

        from workbench.spark.source import TaskParquet
        from workbench.spark.source import arrow_schema as to_arrow

        target = to_arrow(schema)
        name = f"part-{uuid.uuid4().hex}"
        out = TaskParquet(directory, name, target)
        fed = [_Fed(f) for f in followers]
        held, held_rows, rows = [], 0, 0
        for batch in run(batches):
            for one in fed:
                one.step(batch)
            held.append(pa.Table.from_batches([batch]).cast(target))
            rows += batch.num_rows
            held_rows += batch.num_rows
            if held_rows < group_rows:
                continue
            table = pa.concat_tables(held).combine_chunks()
            starts = np.flatnonzero(key_starts(table.to_batches()[0], keys, None))
            cut = int(starts[-1]) if len(starts) else 0
            if cut > 0:  # write whole keys; the last one may go on in the next batch
                out.write(table.slice(0, cut))
                table = table.slice(cut)
            held, held_rows = [table], table.num_rows
        if held:
            out.write(pa.concat_tables(held))
        out.close()
        for one in fed:
            one.close(name)
        yield pa.RecordBatch.from_pydict({"rows": pa.array([rows], pa.int64())})

    os.makedirs(directory, exist_ok=True)
    for f in followers:
        os.makedirs(f.directory, exist_ok=True)
    total = ordered.mapInArrow(write, "rows long").agg(F.sum("rows").alias("rows")).collect()[0]["rows"]
    if not total:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(directory)


class _Fed:
    """A :class:`Follower` at work in one task: its replay, the last key it saw, what it returned."""

    def __init__(self, follower: Follower) -> None:
        self.follower, self.replay = follower, follower.factory()
        self.previous: tuple | None = None
        self.out: list[Any] = []

    def _keep(self, out: Any) -> None:
        if out is not None and out.num_rows:
            self.out.append(out)

    def step(self, batch: Any) -> None:
        rows = batch if self.follower.prepare is None else self.follower.prepare(batch)
        if rows.num_rows == 0:
            return
        keys = list(self.follower.keys)
        starts = key_starts(rows, keys, self.previous)
        self.previous = tuple(rows.column(k)[rows.num_rows - 1].as_py() for k in keys)
        self._keep(self.replay.step(rows, starts))

    def close(self, name: str) -> None:
        import pyarrow as pa

        from workbench.spark.source import TaskParquet
        from workbench.spark.source import arrow_schema as to_arrow

        self._keep(self.replay.finish())
        target = to_arrow(self.follower.schema)
        out = TaskParquet(self.follower.directory, name, target)
        if self.out:
            out.write(pa.Table.from_batches(self.out).cast(target))
        out.close()


#: DataFrames whose rows are known to be clustered by key and in replay order within each Spark
#: partition (:func:`mark_clustered`), with those keys and that order.
_CLUSTERED: weakref.WeakKeyDictionary[Any, tuple[tuple[str, ...], tuple[str, ...]]] = weakref.WeakKeyDictionary()


def mark_clustered(df: DataFrame, keys: Sequence[str], order: Sequence[str]) -> DataFrame:
    """Record that each key's rows of ``df`` lie in one Spark partition, together, in ``order``.

    The mark belongs to this DataFrame object only, so a filter, join or union derived from it never
    inherits a promise it may break.
    """
    _CLUSTERED[df] = (tuple(keys), tuple(order))
    return df


def is_clustered(df: DataFrame, keys: Sequence[str], order: Sequence[str]) -> bool:
    """Whether ``df`` was marked clustered by exactly ``keys`` and ordered by ``order`` (:func:`mark_clustered`)."""
    return _CLUSTERED.get(df) == (tuple(keys), tuple(order))


def replay_clustered(df: DataFrame, keys: Sequence[str], schema: str,
                     factory: Callable[[], KeyedReplay]) -> DataFrame:
    """Replay rows already clustered by key and in replay order in each Spark partition: no shuffle.

    The rows of a DataFrame :func:`mark_clustered` (the output of another replay, such as
    :func:`workbench.analysis.isr.partition_states`) go to one :class:`KeyedReplay` per Spark
    partition as they come, with the same ``starts`` flags as :func:`replay_by_key` gives; the
    output is the same rows, without packing, shuffling or sorting them again.
    """
    keys = list(keys)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        replay = factory()
        previous: tuple | None = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            starts = key_starts(batch, keys, previous)
            previous = tuple(batch.column(k)[batch.num_rows - 1].as_py() for k in keys)
            out = replay.step(batch, starts)
            if out is not None and out.num_rows:
                yield out
        out = replay.finish()
        if out is not None and out.num_rows:
            yield out

    return df.mapInArrow(run, schema)
