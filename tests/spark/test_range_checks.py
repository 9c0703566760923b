"""Out-of-range values in the ``metadata`` and ``metrics`` tables: null plus a problem, and the tables convert."""

from __future__ import annotations

import pytest

import workbench
from tests.spark.test_metadata_source import ms
from workbench.formats.kraft_log import MetadataLogWriter

pytestmark = pytest.mark.spark

YEAR_3000_MS = 32_503_680_000_000


def test_metadata_timestamps_beyond_range_are_null_with_a_problem(spark, tmp_path):
    seg_dir = tmp_path / "nodes" / "1" / "__cluster_metadata-0"
    seg_dir.mkdir(parents=True)
    w = MetadataLogWriter()
    for stamp in (ms(0), 2**62, YEAR_3000_MS, ms(3)):
        w.append([("NoOpRecord", 0, {})], timestamp=stamp, epoch=1)
    path = seg_dir / "00000000000000000000.log"
    path.write_bytes(w.to_bytes())
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    rows = tables.metadata.select("offset", "timestamp").orderBy("offset").toPandas()  # converts: no overflow
    assert list(rows["offset"]) == [0, 1, 2, 3]
    assert [t is None or t != t for t in rows["timestamp"]] == [False, True, True, False]
    problems = tables.problems.select("path", "position", "kind", "detail").orderBy("position").collect()
    assert [(p["path"], p["position"], p["kind"]) for p in problems] == [
        (str(path), w.positions[1], "out_of_range"), (str(path), w.positions[2], "out_of_range")]
    assert f"timestamp {2**62} ms is outside" in problems[0]["detail"]


def test_jmx_csv_out_of_range_rows_load_and_convert(spark, tmp_path):
    (tmp_path / "metrics").mkdir()
    mbean = "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"
    (tmp_path / "metrics" / "1-isr.csv").write_text(
        f'"time","{mbean}:Value"\n1795290596161,1\ninf,2\n1e25,3\n1795290597161,1e300\n')
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    got = tables.metrics.select("timestamp", "value").toPandas()
    assert len(got) == 4
    assert got["timestamp"].isna().tolist() == [False, True, True, False]
    assert got["value"].isna().tolist() == [False, False, False, True]
    assert sorted(tables.problems.select("position", "kind").collect()) == [
        (3, "out_of_range"), (4, "out_of_range"), (5, "out_of_range")]
