"""The table registry: tables built on first use, each file decoded once, problems of every file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from workbench.errors import ConfigError
from workbench.formats.batch import encode_batch
from workbench.spark.registry import Tables, register_table, table_specs, unregister_table
from workbench.spark.source import PROBLEMS_SCHEMA, ArtifactReader, ArtifactSource

pytestmark = pytest.mark.spark

COUNTED_SCHEMA = "node_id int, path string, line string"


class CountingReader(ArtifactReader):
    """Reads text files line by line and appends one line to ``<file>.reads`` per decode call."""

    schema_ddl = COUNTED_SCHEMA

    def decode(self, partition, log) -> Iterator[dict]:
        with open(partition.path + ".reads", "a", encoding="utf-8") as marker:
            marker.write("read\n")
        with open(partition.path, encoding="utf-8") as f:
            for n, line in enumerate(f):
                if line.startswith("bad"):
                    log.report(n, "decode_error", f"bad line {n}")
                    continue
                yield {"node_id": partition.node_id, "path": partition.path, "line": line.rstrip("\n")}


class CountingSource(ArtifactSource):
    reader_class = CountingReader

    @classmethod
    def name(cls) -> str:
        return "test_counted"


@pytest.fixture()
def counted():
    spec = register_table("counted", row="line of a tool output file (test table)", schema=COUNTED_SCHEMA,
                          kinds=("tool_output",), source=CountingSource)
    yield spec
    unregister_table("counted")


def reads(path: Path) -> int:
    marker = Path(str(path) + ".reads")
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def make_bundle(root: Path) -> tuple[Path, Path]:
    tools = root / "tools"
    tools.mkdir(parents=True)
    a, b = tools / "1-a.txt", tools / "2-b.txt"
    a.write_text("one\nbad\ntwo\n")
    b.write_text("three\n")
    seg = root / "nodes" / "1" / "logs" / "t-0"
    seg.mkdir(parents=True)
    (seg.parent / "meta.properties").write_text("node.id=1\nversion=1\ncluster.id=c\n")
    batch = encode_batch([(0, 1000, b"k", b"v")], base_offset=0)
    (seg / "00000000000000000000.log").write_bytes(batch + b"\x00\x01garbage")
    return a, b


def test_a_table_nobody_asks_for_is_never_read(spark, tmp_path, counted):
    a, b = make_bundle(tmp_path)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    assert isinstance(tables, Tables)
    # other tables, evaluated: the counted table's files are not opened
    assert tables.batches.count() == 1
    tables.inventory.collect()
    tables.problems_of("batches").collect()
    assert (reads(a), reads(b)) == (0, 0)
    assert "counted" not in tables.built


def test_rows_and_problems_come_from_one_read_of_each_file(spark, tmp_path, counted):
    a, b = make_bundle(tmp_path)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    rows = tables["counted"]
    want = spark.createDataFrame([(-1, str(a), "one"), (-1, str(a), "two"), (-1, str(b), "three")], COUNTED_SCHEMA)
    assertDataFrameEqual(rows, want)
    assertDataFrameEqual(tables.problems_of("counted"),
                         spark.createDataFrame([(-1, str(a), 1, "decode_error", "bad line 1")], PROBLEMS_SCHEMA))
    assertDataFrameEqual(tables.counted, want)  # attribute access, same table
    assert (reads(a), reads(b)) == (1, 1)


def test_problems_hold_every_table_with_files_whatever_was_built_before(spark, tmp_path, counted):
    """A report's appendix asks for the problems last, and only some tables were read by its
    sections: the problems still name a bad line in a file no section read, from the read the
    table's rows then come from; tables without files and the records table are not read."""
    a, b = make_bundle(tmp_path)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    assert "counted" in tables.with_files() and "batches" in tables.with_files()
    assert not {"metrics", "offsets", "quorum", "records", "inventory"} & set(tables.with_files())
    got = {(r.path, r.kind) for r in tables.problems.collect()}
    assert (str(a), "decode_error") in got
    assert any(path.endswith(".log") for path, _ in got)  # the segment's garbage tail, from batches
    assert set(tables.built) == set(tables.with_files())
    assert tables.counted.count() == 3
    assert (reads(a), reads(b)) == (1, 1)  # the problems' read is the rows' read
    assertDataFrameEqual(tables.problems, tables.problems)  # asking again reads nothing again
    assert (reads(a), reads(b)) == (1, 1)


def test_a_table_that_cannot_be_built_is_a_problem_not_an_error(spark, tmp_path, counted):
    from workbench.spark.registry import register_table

    def refuse(ctx):
        raise ConfigError("this table refuses")

    register_table("refusing", row="nothing (test table)", schema="node_id int", kinds=("tool_output",), build=refuse)
    try:
        make_bundle(tmp_path)
        tables = workbench.load(workbench.open_bundle(tmp_path), spark)
        got = [(r.kind, r.detail) for r in tables.problems.collect() if r.kind == "table_error"]
        assert got == [("table_error", "table refusing not read: this table refuses")]
        strict = workbench.load(workbench.open_bundle(tmp_path), spark, strict=True)
        with pytest.raises(ConfigError, match="refuses"):
            strict.problems  # noqa: B018
    finally:
        unregister_table("refusing")


def test_a_large_read_is_written_to_parquet_once_with_the_same_rows_and_problems(spark, tmp_path, counted):
    """``materialize_bytes=0`` sends every read to Parquet in the scratch directory: each file is
    decoded once, the rows and problems are those of the cached read, and unpersist removes it."""
    a, b = make_bundle(tmp_path)
    cached = workbench.load(workbench.open_bundle(tmp_path), spark)
    want_rows, want_problems = cached.counted, cached.problems_of("counted")
    want_batches, want_batch_problems = cached.batches, cached.problems_of("batches")
    written = workbench.load(workbench.open_bundle(tmp_path), spark, materialize_bytes=0)
    assert written is not cached
    assertDataFrameEqual(written.counted, want_rows)
    assertDataFrameEqual(written.problems_of("counted"), want_problems)
    assertDataFrameEqual(written.batches, want_batches)
    assertDataFrameEqual(written.problems_of("batches"), want_batch_problems)
    assert want_batch_problems.count() > 0
    assert (reads(a), reads(b)) == (2, 2)  # one decode per load each: the Parquet copy is read after it
    copies = [written._build(name).scratch for name in ("counted", "batches")]
    assert all(c is not None and any(Path(c).glob("*.parquet")) for c in copies)
    assert cached._build("counted").scratch is None
    written.unpersist()
    assert not any(Path(c).exists() for c in copies)
    with pytest.raises(ConfigError, match="materialize_bytes"):
        workbench.load(workbench.open_bundle(tmp_path), spark, materialize_bytes="lots")


def test_same_bundle_same_session_same_tables(spark, tmp_path, counted):
    make_bundle(tmp_path)
    bundle = workbench.open_bundle(tmp_path)
    first = workbench.load(bundle, spark)
    assert workbench.load(workbench.open_bundle(tmp_path), spark) is first
    assert workbench.load(bundle, spark, verify_crc=False) is not first


def test_mapping_surface_and_errors(spark, tmp_path):
    make_bundle(tmp_path)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    assert set(tables) == {"problems", *table_specs()}
    assert "metadata" in tables and "nope" not in tables
    with pytest.raises(ConfigError, match="no table named 'nope'"):
        tables["nope"]
    with pytest.raises(AttributeError):
        tables.nope  # noqa: B018
    with pytest.raises(ConfigError, match="unknown load option"):
        workbench.load(workbench.open_bundle(tmp_path), spark, colour="red")


def test_a_table_said_to_read_no_file_has_no_row(spark, tmp_path):
    """``reads_no_file`` answers without Spark for the tables whose files a bundle lacks (an area's
    "no data"): on a bundle of one metadata log, each table it names has no row, the log's does."""
    from tests.incident import write_incident_bundle

    tables = workbench.load(workbench.open_bundle(write_incident_bundle(tmp_path / "incident")), spark)
    said = {name for name in table_specs() if tables.reads_no_file(name)}
    assert "metadata" not in said and {"offsets", "quorum", "remote", "events", "transactions"} <= said
    for name in said:
        assert tables[name].count() == 0, name
        assert not tables.reads_no_file(name)  # built: its rows are what they are
    assert tables.metadata.count() > 0


def test_every_registered_table_documents_its_rows_and_builds_on_an_empty_bundle(spark, tmp_path):
    (tmp_path / "empty").mkdir()
    tables = workbench.load(workbench.open_bundle(tmp_path / "empty"), spark)
    for name, spec in table_specs().items():
        assert spec.row and spec.columns, name
        frame = tables[name]
        assert tuple(frame.columns) == spec.columns, name
        assert frame.count() == 0, name
