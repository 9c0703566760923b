"""The table registry: every table a bundle can give, declared by the module that builds it.

A table module under ``workbench/spark/`` calls :func:`register_table` at import time with the
table's name, the artifact kinds it reads, its schema, a one-line "one row per ..." and either a
Spark data source (:class:`~workbench.spark.source.ArtifactSource`) plus a function choosing the
bundle's files, or a ``build`` function of its own (for tables derived from other tables or
read from a few small files on the driver). :func:`load` returns a :class:`Tables` mapping
that builds a table the first time it is asked for, so a new question adds a module and edits
no central list, and asking for one table never decodes the others.

A table read from files is read once per :class:`Tables`: the read is persisted (memory, then
disk) and split into the table's rows and the problems met reading them; ``tables.problems``
is the union of the bundle's discovery problems and the problems of every table the bundle has
files for (each read once, shared with the table's rows; the ``records`` table, too large to
keep, only once something built it: ``batches`` checks the framing and checksum of its files).
A read of at least ``materialize_bytes`` of files (32 MiB) is written once as Parquet to a scratch
directory (:func:`scratch_root`) and read back instead: Spark's columnar cache ran the heap out
caching a large metadata log, while the Parquet copy keeps memory flat in the log's size.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, WorkbenchError
from workbench.spark.source import PROBLEMS_SCHEMA, ArtifactSource, column_names, files_option, local_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from workbench.bundle import Artifact, Bundle

#: Options every table understands.
COMMON_OPTIONS = frozenset({"strict", "materialize_bytes"})

#: Reads of at least this many bytes of files go to Parquet in :func:`scratch_root` instead of
#: Spark's cache (load option ``materialize_bytes``; 0: every read).
MATERIALIZE_BYTES = 32 << 20

#: Rows per row group of the Parquet copies :func:`write_parquet` writes.
ROW_GROUP_ROWS = 1 << 18

#: Environment variable naming where large reads are written (a local directory, or a URL every
#: executor can reach, such as ``hdfs://`` or ``s3a://``, on a cluster of several hosts).
SCRATCH_ENV = "WORKBENCH_SCRATCH"

_SCRATCH: dict[str, str] = {}


def scratch_root() -> str:
    """Where this process writes large decoded tables: ``$WORKBENCH_SCRATCH``, else a directory of
    its own under the temp directory, created on first use and removed when the process exits.

    Examples
    --------
    >>> scratch_root() == scratch_root()
    True
    """
    given = os.environ.get(SCRATCH_ENV)
    if given:
        return given.rstrip("/")
    if "local" not in _SCRATCH:
        import atexit
        import shutil
        import tempfile

        path = tempfile.mkdtemp(prefix="workbench-tables-")
        atexit.register(shutil.rmtree, path, True)
        _SCRATCH["local"] = path
    return _SCRATCH["local"]


@dataclass(frozen=True)
class Built:
    """A built table: its rows, and the problems met building it (None: it cannot have any)."""

    rows: DataFrame
    problems: DataFrame | None = None
    persisted: DataFrame | None = None
    #: The Parquet copy of a large read (:data:`MATERIALIZE_BYTES`), removed by :meth:`Tables.unpersist`.
    scratch: str | None = None


@dataclass(frozen=True)
class TableSpec:
    """How one table is built.

    Attributes
    ----------
    name : str
        The key in :class:`Tables` (``"offsets"``).
    row : str
        What one row is ("one offset commit or tombstone of ``__consumer_offsets``").
    schema : str
        The columns, as a Spark DDL string; the code's single definition of them.
    kinds : tuple of str
        The artifact kinds (:data:`workbench.bundle.KINDS`) the table reads; empty for derived tables.
    source : type of ArtifactSource, optional
        The data source reading the files chosen by ``select``.
    select : callable, optional
        ``select(bundle) -> list of Artifact``: the files ``source`` reads (default: every
        artifact of ``kinds``); for a derived table, the files its rows come from, so a bundle
        without them is known to give no row without a Spark job (:meth:`Tables.reads_no_file`).
    build : callable, optional
        ``build(ctx: BuildContext) -> DataFrame | Built``, for tables without a source.
    options : frozenset of str
        The load options the table takes besides ``strict`` (``verify_crc``, ``payloads``...).
    persist : bool
        Keep the read for the life of the :class:`Tables` (decode each file once). Off for tables
        too large to keep, such as ``records``.
    """

    name: str
    row: str
    schema: str
    kinds: tuple[str, ...] = ()
    source: type[ArtifactSource] | None = None
    select: Callable[[Bundle], Sequence[Artifact]] | None = None
    build: Callable[[BuildContext], Any] | None = None
    options: frozenset[str] = frozenset()
    persist: bool = True

    @property
    def columns(self) -> tuple[str, ...]:
        """The column names, in order."""
        return column_names(self.schema)


_REGISTRY: dict[str, TableSpec] = {}
_DISCOVERED = False
_LOCK = threading.Lock()


def register_table(
    name: str,
    *,
    row: str,
    schema: str,
    kinds: Sequence[str] = (),
    source: type[ArtifactSource] | None = None,
    select: Callable[[Bundle], Sequence[Artifact]] | None = None,
    build: Callable[[BuildContext], Any] | None = None,
    options: Sequence[str] = (),
    persist: bool = True,
) -> TableSpec:
    """Declare a table (called by its module at import time); returns its spec.

    Exactly one of ``source`` and ``build`` is given. Registering a name twice with a different
    spec is an error (two modules claiming one table).

    Examples
    --------
    >>> from workbench.spark.registry import register_table, table_spec
    >>> spec = table_spec("batches")
    >>> spec.row
    'record batch of every log segment and snapshot'
    """
    if (source is None) == (build is None):
        raise ConfigError(f"table {name!r}: give exactly one of source= and build=")
    if name == "problems":
        raise ConfigError("'problems' is built by Tables itself from every table's problems")
    spec = TableSpec(name=name, row=row, schema=schema, kinds=tuple(kinds), source=source, select=select,
                     build=build, options=frozenset(options), persist=persist)
    with _LOCK:
        old = _REGISTRY.get(name)
        if old is not None and old != spec:
            raise ConfigError(f"table {name!r} is registered twice ({old.source or old.build} and {source or build})")
        _REGISTRY[name] = spec
    return spec


def unregister_table(name: str) -> None:
    """Forget a registered table (for tests that register a table of their own)."""
    with _LOCK:
        _REGISTRY.pop(name, None)


def _discover() -> None:
    """Import every module of the ``workbench.spark`` package once: table modules register themselves
    (this one and ``source``, the readers' base, register nothing)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    here = Path(__file__).resolve().parent
    package = __name__.rpartition(".")[0]
    for info in pkgutil.iter_modules([str(here)]):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"{package}.{info.name}")
    _DISCOVERED = True


def table_specs() -> dict[str, TableSpec]:
    """Every registered table, by name (in name order).

    >>> {"inventory", "metadata", "batches", "metrics"} <= set(table_specs())
    True
    """
    _discover()
    return dict(sorted(_REGISTRY.items()))


def table_spec(name: str) -> TableSpec:
    """The spec of one table; a one-line error names the tables there are."""
    specs = table_specs()
    if name not in specs:
        raise ConfigError(f"no table named {name!r}; tables: {', '.join(['problems', *specs])}")
    return specs[name]


#: Environment variables object stores read their credentials and endpoints from (fsspec's filesystems:
#: S3, Google Cloud Storage, Azure, and fsspec's own ``FSSPEC_<PROTOCOL>_<OPTION>`` configuration).
STORAGE_ENVIRONMENT = ("AWS_", "FSSPEC_", "GOOGLE_", "AZURE_")


def pass_storage_environment(spark: SparkSession) -> None:
    """Give the Python workers of ``spark`` the object-store variables of this process's environment.

    A data source's workers get the environment its registration captured (``SparkContext.environment``),
    not the driver's: a bundle at an ``s3://`` URL opened after the session started would otherwise be
    read without the credentials the driver found it with. Values are never logged.
    """
    try:
        environment = spark.sparkContext.environment
    except Exception:  # Spark Connect: the server's environment is its own
        return
    for name, value in os.environ.items():
        if name.startswith(STORAGE_ENVIRONMENT):
            environment[name] = value


def register_sources(spark: SparkSession) -> None:
    """Register every table's data source with ``spark`` (registration is per session), its workers
    given the object-store environment of this moment (:func:`pass_storage_environment`)."""
    pass_storage_environment(spark)
    seen: set[type] = set()
    for spec in table_specs().values():
        if spec.source is not None and spec.source not in seen:
            spark.dataSource.register(spec.source)
            seen.add(spec.source)


@dataclass
class BuildContext:
    """What a table's ``build`` function gets: the bundle, the session, the options and the other tables."""

    bundle: Bundle
    spark: SparkSession
    options: Mapping[str, Any]
    tables: Tables

    def option(self, name: str, default: Any = None) -> Any:
        """A load option's value."""
        return self.options.get(name, default)

    def empty(self, schema: str) -> DataFrame:
        """An empty DataFrame of ``schema``."""
        return self.spark.createDataFrame([], schema)

    def read(self, spec: TableSpec, artifacts: Sequence[Artifact], **options: Any) -> Built:
        """Read ``artifacts`` with ``spec.source``: rows and problems from one pass over each file."""
        return read_table(self.spark, self.bundle, spec, artifacts, strict=bool(self.option("strict", False)),
                          persist=spec.persist,
                          materialize_bytes=int(self.option("materialize_bytes", MATERIALIZE_BYTES)), **options)


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_parquet(spark: SparkSession, source: ArtifactSource, directory: str) -> int:
    """Decode ``source``'s files into Parquet files under the local ``directory``; the rows written.

    Each Spark task reads one of the source's partitions with the source's own reader and writes
    its Arrow batches straight to one Parquet file with pyarrow, so the rows never pass through
    the JVM on the way in (Spark's Python data source moving them into the JVM, and Spark's
    Parquet writer encoding them again, cost about six times the decode itself on a 10 M-record
    metadata log). The files hold exactly the source's schema, problem columns included; read them
    back with ``spark.read.schema(...).parquet(directory)``. The directory must be one every
    executor writes to and the driver reads (a local path: ``local`` masters, or a standalone
    cluster on one host).
    """
    reader = source.reader(None)
    parts = list(enumerate(reader.partitions()))
    ddl = source.schema()
    os.makedirs(directory, exist_ok=True)

    def write(item: tuple[int, Any]) -> int:
        import pyarrow as pa

        from workbench.spark.source import TaskParquet, arrow_schema

        index, part = item
        schema = arrow_schema(ddl)
        out = TaskParquet(directory, f"part-{index:05d}", schema, create=True)
        rows, held, held_rows = 0, [], 0
        for batch in reader.read(part):
            held.append(batch)
            rows += batch.num_rows
            held_rows += batch.num_rows
            if held_rows >= ROW_GROUP_ROWS:
                out.write(pa.Table.from_batches(held, schema))
                held, held_rows = [], 0
        out.write(pa.Table.from_batches(held, schema))
        out.close()
        return rows

    if not parts:
        return 0
    return sum(spark.sparkContext.parallelize(parts, len(parts)).map(write).collect())


def read_table(spark: SparkSession, bundle: Bundle, spec: TableSpec, artifacts: Sequence[Artifact], *,
               strict: bool = False, persist: bool = True, materialize_bytes: int = MATERIALIZE_BYTES,
               **options: Any) -> Built:
    """Read files with a table's data source and split the one pass into rows and problems.

    Parameters
    ----------
    spark, bundle
        The session and the bundle the artifacts belong to.
    spec
        A spec with a ``source``.
    artifacts
        The files to read (none: empty rows and problems).
    strict
        Raise at the first unreadable byte.
    persist
        Persist the read so that rows and problems come from one decode of each file.
    materialize_bytes
        When persisting files of at least this many bytes in all, write the read once as Parquet
        under :func:`scratch_root` and read that instead of caching it (memory flat in the size).
    **options
        Further source options (values become strings).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if spec.source is None:
        raise ConfigError(f"table {spec.name!r} has no data source")
    if not artifacts:
        return Built(spark.createDataFrame([], spec.schema), spark.createDataFrame([], PROBLEMS_SCHEMA))
    text = {"files": files_option(bundle, artifacts), "strict": _option_text(strict),
            **{k: _option_text(v) for k, v in options.items() if v is not None}}

    def loaded() -> DataFrame:
        return spark.read.format(spec.source.name()).options(**text).load()

    scratch = None
    if persist and sum(a.bytes or 0 for a in artifacts) >= materialize_bytes:
        import uuid

        scratch = f"{scratch_root()}/{spec.name}-{uuid.uuid4().hex}"
        if local_path(scratch) is not None:
            # decoded by our own tasks; the schema comes from the source made here, not from Spark's
            # planning of a Python data source (a Python worker started to ask it: seconds of a session)
            source = spec.source(text)
            write_parquet(spark, source, local_path(scratch))
            raw = spark.read.schema(source.schema()).parquet(scratch)
        else:  # a cluster's shared filesystem (hdfs://, s3a://): Spark's own writer reaches it
            loaded().write.option("parquet.block.size", str(16 << 20)).parquet(scratch)
            raw = spark.read.parquet(scratch)
    elif persist:
        raw = loaded().persist(StorageLevel.MEMORY_AND_DISK)
    else:
        raw = loaded()
    rows = raw.where(F.col("_problem_kind").isNull()).select(*spec.columns)
    problems = raw.where(F.col("_problem_kind").isNotNull()).select(
        F.col("_problem_node").alias("node_id"), F.col("_problem_path").alias("path"),
        F.col("_problem_position").alias("position"), F.col("_problem_kind").alias("kind"),
        F.col("_problem_detail").alias("detail"))
    if scratch is not None and local_path(scratch) is not None:
        _COPIES[rows] = local_path(scratch)
    return Built(rows, problems, raw if persist and scratch is None else None, scratch)


#: Table DataFrames read from a local Parquet copy (:func:`read_table`), with its directory.
_COPIES: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def parquet_copy(df: DataFrame) -> str | None:
    """The local directory of the Parquet copy ``df`` is read from, when ``df`` is exactly a table
    :func:`read_table` wrote as one (else None, also for anything derived from it).

    A replay may read its files (source schema, problem rows included) itself:
    :func:`workbench.analysis.replay.replay_files`.
    """
    directory = _COPIES.get(df)
    return directory if directory is not None and os.path.isdir(directory) else None


class Tables(Mapping[str, "DataFrame"]):
    """The tables of one bundle, built on first use (``tables["offsets"]`` or ``tables.offsets``).

    Iterating gives every registered table's name plus ``problems``; only the tables actually
    asked for are read. ``problems`` asks for every table the bundle has files for
    (:meth:`with_files`), so it holds the bundle's problems whichever tables were read before.

    Examples
    --------
    >>> tables = workbench.load(workbench.open_bundle("bundle/"), spark)   # doctest: +SKIP
    >>> tables["metadata"].groupBy("record_type").count().show()          # doctest: +SKIP
    >>> tables.built                                                      # doctest: +SKIP
    ('metadata',)
    """

    def __init__(self, bundle: Bundle, spark: SparkSession, options: Mapping[str, Any] | None = None) -> None:
        self.bundle = bundle
        self.spark = spark
        self.options = dict(options or {})
        self._built: dict[str, Built] = {}
        self._building: list[str] = []
        self._derived: dict[str, DataFrame] = {}
        self._kept: dict[str, Any] = {}
        known = COMMON_OPTIONS.union(*(s.options for s in table_specs().values()))
        unknown = sorted(set(self.options) - known)
        if unknown:
            raise ConfigError(f"unknown load option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        size = self.options.get("materialize_bytes", 0)
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ConfigError(f"load option materialize_bytes must be a whole number of bytes >= 0, got {size!r}")
        register_sources(spark)

    # -- Mapping ----------------------------------------------------------------------------

    def __getitem__(self, name: str) -> DataFrame:
        if name == "problems":
            return self.problems
        return self._build(name).rows

    def __iter__(self) -> Iterator[str]:
        return iter(["problems", *table_specs()])

    def __len__(self) -> int:
        return len(table_specs()) + 1

    def __contains__(self, name: object) -> bool:
        return name == "problems" or name in table_specs()

    def __getattr__(self, name: str) -> DataFrame:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in table_specs():
            return self[name]
        raise AttributeError(f"{type(self).__name__} has no table or attribute {name!r}")

    def __repr__(self) -> str:
        return f"Tables({self.bundle.root}, built={list(self._built)})"

    # -- building ---------------------------------------------------------------------------

    @property
    def built(self) -> tuple[str, ...]:
        """Names of the tables built so far, in build order."""
        return tuple(self._built)

    def _build(self, name: str) -> Built:
        if name in self._built:
            return self._built[name]
        spec = table_spec(name)
        if name in self._building:
            raise ConfigError(f"tables build each other in a circle: {' -> '.join([*self._building, name])}")
        self._building.append(name)
        try:
            ctx = BuildContext(self.bundle, self.spark, self.options, self)
            if spec.build is not None:
                result = spec.build(ctx)
                built = result if isinstance(result, Built) else Built(result)
            else:
                chosen = self._files_of(spec)
                opts = {k: self.options[k] for k in spec.options if k in self.options}
                built = ctx.read(spec, list(chosen), **opts)
        finally:
            self._building.pop()
        self._built[name] = built
        return built

    def _files_of(self, spec: TableSpec) -> Sequence[Artifact]:
        """The bundle's files a table's data source reads (``spec.select``'s, else every file of its kinds)."""
        return spec.select(self.bundle) if spec.select else self.bundle.of_kind(*spec.kinds)

    def reads_no_file(self, name: str) -> bool:
        """Whether table ``name`` is read from files by its data source and the bundle has none of them:
        it has no row, known without a Spark job (a report asks every area's tables; most bundles
        lack several kinds of file). A derived table counts when it names its files (``select``).
        False when it may have rows (built already, derived without ``select``, or files)."""
        spec = table_spec(name)
        if name in self._built or (spec.source is None and spec.select is None):
            return False
        return not self._files_of(spec)

    def problems_of(self, name: str) -> DataFrame:
        """The problems met building one table (built now if it was not yet)."""
        built = self._build(name)
        return built.problems if built.problems is not None else self.spark.createDataFrame([], PROBLEMS_SCHEMA)

    def with_files(self) -> tuple[str, ...]:
        """Names of the tables that read files of this bundle and have some to read (what
        :attr:`problems` builds), in name order.

        A table without artifact kinds (derived from other tables) reads no file. A table whose
        read is not kept (``persist=False``: ``records``, every record of every data segment) is
        left out until something builds it: reading it only for its problems would decode every
        record, and ``batches`` reads the same files (framing, lengths, checksums) anyway.
        """
        out = []
        for name, spec in table_specs().items():
            if not spec.kinds or (not spec.persist and name not in self._built):
                continue
            if spec.source is not None:
                chosen = self._files_of(spec)
            else:
                chosen = self.bundle.of_kind(*spec.kinds)
            if chosen:
                out.append(name)
        return tuple(out)

    @property
    def problems(self) -> DataFrame:
        """Every problem of the bundle (rows of ``PROBLEMS_SCHEMA``): discovery problems, and the
        problems of every table built so far and of every table the bundle has files for
        (:meth:`with_files`; built now if need be, so a report's appendix lists a bad value in a
        file no section read). A table whose build fails adds one ``table_error`` row naming it
        (raised in strict mode). Kept per set of tables built (a report reads it three times)."""
        failed = []
        for name in self.with_files():
            try:
                self._build(name)
            except WorkbenchError as exc:
                if self.options.get("strict"):
                    raise
                failed.append((-1, str(self.bundle.root), None, "table_error", f"table {name} not read: {exc}"))

        def union() -> DataFrame:
            out = self.spark.createDataFrame(
                [(-1, p.path, p.position, p.kind, p.detail) for p in self.bundle.problems] + failed, PROBLEMS_SCHEMA)
            for built in list(self._built.values()):
                if built.problems is not None:
                    out = out.unionByName(built.problems)
            return out.dropDuplicates()

        return self.derive("problems:" + ",".join(self._built) + "|" + "|".join(f[4] for f in failed), union)

    def derive(self, key: str, compute: Callable[[], DataFrame]) -> DataFrame:
        """A result computed from these tables once and kept with them, under ``key``.

        Kept as a local checkpoint (memory, then disk), so its consumers plan from the kept rows: a lazily
        persisted frame would be recomputed by every branch of the first query that uses it several times.

        >>> states = tables.derive("isr.partition_states", lambda: partition_states(tables.metadata))  # doctest: +SKIP
        """
        from pyspark import StorageLevel

        if key not in self._derived:
            self._derived[key] = compute().localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
        return self._derived[key]

    def kept(self, key: str, compute: Callable[[], Any]) -> Any:
        """An object computed from these tables once and kept with them under ``key`` (an area's
        result: :meth:`workbench.analysis.findings.Area.result_for`); :meth:`unpersist` drops it."""
        if key not in self._kept:
            self._kept[key] = compute()
        return self._kept[key]

    def unpersist(self) -> None:
        """Drop every persisted read and Parquet copy (the tables are read again if asked for later)."""
        import shutil

        for built in self._built.values():
            if built.persisted is not None:
                built.persisted.unpersist()
            if built.scratch is not None and "://" not in built.scratch:
                shutil.rmtree(built.scratch, ignore_errors=True)
        for frame in self._derived.values():
            frame.unpersist()
        self._built.clear()
        self._derived.clear()
        self._kept.clear()


def kept_with(tables: Any, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` kept with ``tables`` under ``key`` (:meth:`Tables.kept`) when they keep
    results; computed each time for tables that do not (a plain mapping of frames)."""
    keep = getattr(tables, "kept", None)
    return keep(key, compute) if keep is not None else compute()


def derived_with(tables: Any, key: str, compute: Callable[[], DataFrame]) -> DataFrame:
    """``compute()`` kept with ``tables`` under ``key`` (:meth:`Tables.derive`) when they keep derived
    results; computed each time for tables that do not (a plain mapping of frames)."""
    derive = getattr(tables, "derive", None)
    return derive(key, compute) if derive is not None else compute()


_SESSION_TABLES: dict[tuple, Tables] = {}


def unpersist_all(keep: Callable[[Path], bool] | None = None) -> None:
    """Drop what every bundle loaded in this process keeps in Spark (persisted reads, Parquet
    copies, derived results); each is read or computed again when next asked for. Bundles whose
    root ``keep`` accepts keep theirs (a test session keeps the real bundles it reads again)."""
    for tables in list(_SESSION_TABLES.values()):
        if keep is None or not keep(tables.bundle.root):
            tables.unpersist()


def forget_all() -> None:
    """Drop what every loaded bundle keeps in Spark and forget the bundles: the next :func:`load`
    of any bundle starts afresh (a kept report kernel between two reports)."""
    unpersist_all()
    _SESSION_TABLES.clear()


def load(bundle: Bundle, spark: SparkSession, *, strict: bool = False, **options: Any) -> Tables:
    """The tables of a bundle, built on first use and kept for the life of the session.

    Loading the same bundle with the same options again returns the same :class:`Tables`, so each file
    is decoded once. ``options`` are tables' own (``verify_crc=False``: ``batches`` reads headers only,
    ``crc_valid`` null; ``payloads`` for ``records``); unknown ones are refused.

    >>> tables = load(open_bundle("bundle/"), spark)                  # doctest: +SKIP
    >>> tables.metadata.groupBy("record_type").count().show()          # doctest: +SKIP
    """
    opts = {"strict": bool(strict), **options}
    fingerprint = tuple((a.path, a.bytes) for a in bundle.artifacts)
    key = (id(spark), str(bundle.root), fingerprint, tuple(sorted((k, repr(v)) for k, v in opts.items())))
    tables = _SESSION_TABLES.get(key)
    if tables is None or tables.spark is not spark or _stopped(spark):
        tables = Tables(bundle, spark, opts)
        _SESSION_TABLES[key] = tables
    return tables


def _stopped(spark: SparkSession) -> bool:
    try:
        return spark.sparkContext._jsc is None  # type: ignore[union-attr]
    except Exception:  # Spark Connect sessions have no SparkContext
        return False
