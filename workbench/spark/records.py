"""``records``: one row per record of the bundle's data segments; payloads redacted unless asked for.

Name
    ``kafka_records``.
Reads
    Log segments of application and internal topics (KRaft metadata logs are the ``metadata``
    table's business and are left out).
Options
    ``files``, ``strict``, ``payloads`` (default false: ``key``, ``value`` and header values are
    null, their sizes and the header keys stay), ``split_bytes``.
Partitioning
    As ``batches``: one input partition per file, large segments split at ``.index`` boundaries,
    which bounds each task's memory.

The table decodes every record with the compiled decoder
(:mod:`workbench.formats.fastrecords`), so it is not kept once read (``persist`` is off):
evaluate it for the topics you need, with :func:`load_records`.

Examples
--------
>>> records, problems = load_records(workbench.open_bundle("bundle/"), spark, topics=["orders"])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from workbench.spark.batches import SplitSegmentsReader
from workbench.spark.registry import read_table, register_table
from workbench.spark.source import (
    ARROW_BATCH_ROWS,
    ArtifactSource,
    FilePartition,
    constant,
    option_bool,
    timestamps_us,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from workbench.bundle import Artifact, Bundle
    from workbench.formats.problems import ProblemLog

RECORDS_SCHEMA = (
    "node_id int, path string, topic string, partition int, batch_position long, offset long, "
    "timestamp timestamp, attributes int, size int, key_size int, value_size int, key binary, value binary, "
    "headers array<struct<key:string,value:binary>>"
)


class RecordsReader(SplitSegmentsReader):
    """Records of log segments, decoded by :mod:`workbench.formats.fastrecords` (compiled loops)."""

    schema_ddl = RECORDS_SCHEMA

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        super().__init__(schema, options)
        self.payloads = option_bool(options, "payloads", False)

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[Any]:
        import fsspec
        import pyarrow as pa

        from workbench.formats.batch import read_batches
        from workbench.formats.fastrecords import records_table

        with fsspec.open(partition.path, "rb") as f:
            table = records_table(read_batches(f, partition.path, problems=log, strict=self.strict,
                                               start=partition.start, end=partition.end), log)
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
            "node_id": constant(n, partition.node_id, i32), "path": constant(n, partition.path, pa.string()),
            "topic": constant(n, partition.topic, pa.string()), "partition": constant(n, partition.partition, i32),
            "batch_position": chunk.column("batch_position"), "offset": chunk.column("offset"),
            "timestamp": timestamps_us(chunk.column("timestamp").to_numpy(zero_copy_only=False)),
            "attributes": chunk.column("attributes").cast(i32), "size": chunk.column("size"),
            "key_size": size(chunk.column("key")), "value_size": size(chunk.column("value")),
            "key": key, "value": value, "headers": headers,
        }
        names = [c.split()[0] for c in RECORDS_SCHEMA.split(", ")]
        return pa.RecordBatch.from_pydict({c: arrays[c] for c in names})


class RecordsSource(ArtifactSource):
    """``spark.read.format("kafka_records")``: one row per record of every log segment."""

    reader_class = RecordsReader

    @classmethod
    def name(cls) -> str:
        return "kafka_records"


def data_segments(bundle: Bundle, topics: Sequence[str] | None = None) -> list[Artifact]:
    """Log segments of data and internal topics (not KRaft metadata), of ``topics`` when given."""
    meta = {a.path for a in bundle.metadata_files}
    return [a for a in bundle.of_kind("segment") if a.path not in meta and a.path.endswith(".log")
            and (topics is None or a.topic in topics)]


TABLE = register_table(
    "records",
    row="record of the data segments (payloads redacted unless payloads=True)",
    schema=RECORDS_SCHEMA,
    kinds=("segment",),
    source=RecordsSource,
    select=data_segments,
    options=("payloads",),
    persist=False,
)


def load_records(bundle: Bundle, spark: SparkSession, *, topics: list[str] | None = None, payloads: bool = False,
                 strict: bool = False) -> tuple[DataFrame, DataFrame]:
    """The ``records`` table of chosen topics' data segments (all by default), and its problems.

    Payloads are redacted (null, sizes kept) unless ``payloads``, so reports built on the table carry none.
    """
    from workbench.spark.registry import register_sources

    register_sources(spark)
    built = read_table(spark, bundle, TABLE, data_segments(bundle, topics), strict=strict, persist=False,
                       payloads=payloads)
    return built.rows, built.problems  # type: ignore[return-value]
