"""The ``metrics`` table from JmxTool CSV exports."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench

pytestmark = pytest.mark.spark

CSV = ('"time","kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount:Value",'
       '"kafka.server:type=ReplicaManager,name=IsrShrinksPerSec:RateUnit"\n'
       "1795290596161,0,SECONDS\n"
       "not-a-time,1,SECONDS\n"
       "1795290597161,2,SECONDS\n")


def test_jmx_csv_rows_and_problems(spark, tmp_path):
    (tmp_path / "metrics").mkdir()
    path = tmp_path / "metrics" / "5-isr.csv"
    path.write_text(CSV)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    mbean = "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"
    want = spark.createDataFrame(
        [(5, str(path), "jmxtool", "kafka_server_replicamanager_underminisrpartitioncount", "UnderMinIsrPartitionCount",
          mbean, "Value", {}, datetime.fromtimestamp(ms / 1000, UTC), value)
         for ms, value in ((1795290596161, 0.0), (1795290597161, 2.0))],
        workbench.spark.metrics.METRICS_SCHEMA)
    assertDataFrameEqual(tables.metrics, want)
    assertDataFrameEqual(tables.problems.select("node_id", "path", "position", "kind"),
                         spark.createDataFrame([(5, str(path), 3, "unparsed_line")],
                                               "node_id int, path string, position long, kind string"))


def test_reported_under_min_isr(spark, tmp_path):
    """JmxTool columns and Prometheus samples alike, by their normalised name."""
    from workbench.analysis import isr

    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "5-isr.csv").write_text(CSV)
    (tmp_path / "metrics" / "4-1795290596161.prom").write_text(PROM)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    want = spark.createDataFrame(
        [(5, datetime.fromtimestamp(1795290596.161, UTC), 0), (5, datetime.fromtimestamp(1795290597.161, UTC), 2),
         (4, datetime.fromtimestamp(1795290596.161, UTC), 2)],
        "broker int, time timestamp, count int")
    assertDataFrameEqual(isr.reported_under_min_isr(tables.metrics), want)


PROM = ("# TYPE kafka_server_replicamanager_underminisrpartitioncount gauge\n"
        "kafka_server_replicamanager_underminisrpartitioncount 2.0\n"
        'kafka_server_brokertopicmetrics_bytesin_total{topic="orders",} 7 1795290599000\n')


def test_prometheus_text_capture_time_from_manifest_then_name(spark, tmp_path):
    """A sample without a timestamp takes its file's capture time: the manifest's t_ms, else the name's."""
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "4-1795290596161.prom").write_text(PROM)
    (tmp_path / "metrics" / "scrape.prom").write_text(PROM)
    (tmp_path / "metrics" / "broker-7-1795290598000.prom").write_text(PROM)
    (tmp_path / "manifest.json").write_text(json.dumps({"metrics": [
        {"file": "metrics/scrape.prom", "node": 6, "t_ms": 1795290597000, "format": "prometheus"}]}))
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)

    def when(ms):
        return datetime.fromtimestamp(ms / 1000, UTC)

    rows = []
    for name, node, t in (("4-1795290596161.prom", 4, 1795290596161), ("scrape.prom", 6, 1795290597000),
                          ("broker-7-1795290598000.prom", -1, 1795290598000)):
        path = str(tmp_path / "metrics" / name)
        rows.append((node, path, "prometheus_text", "kafka_server_replicamanager_underminisrpartitioncount",
                     "kafka_server_replicamanager_underminisrpartitioncount", None, None, {}, when(t), 2.0))
        rows.append((node, path, "prometheus_text", "kafka_server_brokertopicmetrics_bytesin_total",
                     "kafka_server_brokertopicmetrics_bytesin_total", None, None, {"topic": "orders"},
                     when(1795290599000), 7.0))
    assertDataFrameEqual(tables.metrics, spark.createDataFrame(rows, workbench.spark.metrics.METRICS_SCHEMA))
    assert tables.problems.count() == 0


def test_prometheus_text_without_any_time(spark, tmp_path):
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "broker.prom").write_text("up 1\n")
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    assert [(r.name, r.timestamp, r.value) for r in tables.metrics.collect()] == [("up", None, 1.0)]
