"""The ``metrics`` table from JmxTool CSV exports."""

from __future__ import annotations

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
    labels = {"domain": "kafka.server", "type": "ReplicaManager", "name": "UnderMinIsrPartitionCount"}
    mbean = "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"
    want = spark.createDataFrame(
        [(5, str(path), "UnderMinIsrPartitionCount", mbean, "Value", labels,
          datetime.fromtimestamp(ms / 1000, UTC), value)
         for ms, value in ((1795290596161, 0.0), (1795290597161, 2.0))],
        workbench.spark.sources.METRICS_SCHEMA)
    assertDataFrameEqual(tables.metrics, want)
    assertDataFrameEqual(tables.problems.select("node_id", "path", "position", "kind"),
                         spark.createDataFrame([(5, str(path), 3, "unparsed_line")],
                                               "node_id int, path string, position long, kind string"))


def test_reported_under_min_isr(spark, tmp_path):
    from workbench.analysis import isr

    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "5-isr.csv").write_text(CSV)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    want = spark.createDataFrame(
        [(5, datetime.fromtimestamp(1795290596.161, UTC), 0), (5, datetime.fromtimestamp(1795290597.161, UTC), 2)],
        "broker int, time timestamp, count int")
    assertDataFrameEqual(isr.reported_under_min_isr(tables.metrics), want)
