"""The ``events`` table over text logs as bundles hold them: rotated, gzip-compressed, damaged, in a zone."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from workbench.spark.events import EVENTS_SCHEMA

pytestmark = pytest.mark.spark

SHRINK = ("[2024-05-01 13:00:00,123] INFO [Partition orders-0 broker=3] Shrinking ISR from 3,1 to 3. Leader: "
          "(highWatermark: 5, endOffset: 9). (kafka.cluster.Partition)\n")
UPDATED = ("[2024-05-01 13:00:00,130] INFO [Partition orders-0 broker=3] ISR updated to [3] and zkVersion updated "
           "to [4] (kafka.cluster.Partition)\n")
ELECTED = ("[2024-05-01 12:59:00,000] INFO [Controller id=3] 3 successfully elected as the controller. Epoch "
           "incremented to 2 and epoch zk version is now 2 (kafka.controller.KafkaController)\n")


def write_bundle(root):
    logs = root / "nodes" / "3" / "log4j"
    logs.mkdir(parents=True)
    # a dated, compressed copy as log4j's DailyRollingFileAppender and logrotate leave it
    with gzip.open(logs / "server.log.2024-05-01-13.gz", "wt", encoding="utf-8") as f:
        f.write(SHRINK + "\tat some.Stack(Trace.java:1)\n" + UPDATED)
    (logs / "controller.log").write_bytes(b"[2024-05-01 12:58:00,000] INFO caf\xe9 (kafka.controller)\n"
                                          + ELECTED.encode())
    return logs


def test_rows_of_rotated_compressed_and_damaged_logs(spark, tmp_path):
    logs = write_bundle(tmp_path)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    gz, ctl = str(logs / "server.log.2024-05-01-13.gz"), str(logs / "controller.log")

    def at(text):
        return datetime.fromisoformat(text).replace(tzinfo=UTC)

    want = spark.createDataFrame([
        (gz, 1, at("2024-05-01 13:00:00.123"), "INFO", "kafka.cluster.Partition", 3, None, "isr_shrink", "orders", 0,
         3, [3], [3, 1], None, None, None, None, None, None, None, None, None, SHRINK.rstrip("\n")),
        (gz, 3, at("2024-05-01 13:00:00.130"), "INFO", "kafka.cluster.Partition", 3, None, "isr_updated", "orders", 0,
         3, [3], None, None, None, 4, None, None, None, None, None, None, UPDATED.rstrip("\n")),
        (ctl, 2, at("2024-05-01 12:59:00"), "INFO", "kafka.controller.KafkaController", 3, None, "controller", None,
         None, None, None, None, None, None, None, 2, None, None, None, None, None, ELECTED.rstrip("\n")),
    ], EVENTS_SCHEMA)
    assertDataFrameEqual(tables.events, want)
    problems = tables.problems.where(f"path = '{ctl}'").select("kind").collect()
    assert [p.kind for p in problems] == ["decode_error"]


def test_log_timezone_reads_local_times(spark, tmp_path):
    write_bundle(tmp_path)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark, log_timezone="Europe/Berlin")
    times = sorted(r.time for r in tables.events.select("time").collect())
    assert times[0] == datetime(2024, 5, 1, 10, 59)   # 12:59 in Berlin (CEST) is 10:59 UTC


def test_a_zone_that_is_no_zone_is_a_clear_error(spark, tmp_path):
    write_bundle(tmp_path)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark, log_timezone="Mars/Olympus")
    with pytest.raises(Exception, match="log_timezone: 'Mars/Olympus' is not a time zone name"):
        tables.events.count()
