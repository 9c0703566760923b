"""Quorum analysis on small inline metadata logs: NoOp cadence, stalls, their absence before 3.3."""

from __future__ import annotations

import pytest

from tests.analysis.metadata_rows import COLUMNS, MetadataLog, at
from workbench.analysis import quorum
from workbench.spark.batches import BATCHES_SCHEMA
from workbench.spark.metadata import METADATA_SCHEMA

pytestmark = pytest.mark.spark

PATH = "/b/1/__cluster_metadata-0/00000000000000000000.log"


def frames(spark, log: MetadataLog, epochs: dict[int, int] | None = None):
    """The metadata rows and one batch per record (leader epoch by offset from ``epochs``)."""
    epochs = epochs or {}
    batches = []
    for row in log.rows:
        offset, ts = row[COLUMNS.index("offset")], row[COLUMNS.index("timestamp")]
        epoch = max((e for start, e in epochs.items() if start <= offset), default=1)
        batches.append((1, PATH, "__cluster_metadata", 0, 0, offset * 100, offset, offset, 1, 80, 2, "none",
                        "CreateTime", ts, ts, -1, -1, -1, False, row[COLUMNS.index("is_control")], epoch, True))
    return spark.createDataFrame(log.rows, METADATA_SCHEMA), spark.createDataFrame(batches, BATCHES_SCHEMA)


def version_record(log: MetadataLog, s: float, level: int) -> MetadataLog:
    return log.add(s, "FeatureLevelRecord", {"feature_name": "metadata.version", "feature_level": level}, api_key=12)


def test_a_gap_in_the_noops_is_a_stall_and_the_cadence_is_the_idle_interval(spark):
    log = version_record(MetadataLog(), 0.0, 21)
    for i in range(1, 21):
        log.noop(i * 0.5)                       # offsets 1-20, every 500 ms, until 10 s
    for i in range(0, 10):
        log.noop(15.0 + i * 0.5)                # offsets 21-30: a new leader from 15 s
    metadata, batches = frames(spark, log, {21: 2})
    appends = quorum.log_appends(batches, metadata)
    writing = quorum.noop_writing(metadata)
    assert (writing.noop_records, writing.metadata_level, writing.idle_ms, writing.writes_noops) == (30, 21, 500, True)
    got = [tuple(r) for r in quorum.stalls(appends, writing).select(
        "start", "end", "seconds", "epoch_before", "epoch_after", "last_offset_before", "first_offset_after",
        "new_epoch").collect()]
    assert got == [(at(10.0).replace(tzinfo=None), at(15.0).replace(tzinfo=None), 5.0, 1, 2, 20, 21, True)]
    cadence = {r.epoch: (r.batches, r.noops, r.interval_p50_ms, r.interval_max_ms)
               for r in quorum.cadence(appends).collect()}
    assert cadence == {1: (21, 20, 500, 500), 2: (10, 10, 500, 500)}


def test_the_stall_threshold_follows_the_configured_idle_interval(spark):
    log = version_record(MetadataLog(), 0.0, 21)
    for s in (1.0, 2.0, 3.0, 6.0, 7.0):         # a 3 s gap: a stall at 500 ms, not at 1 s
        log.noop(s)
    metadata, batches = frames(spark, log)
    configs = spark.createDataFrame([("static", quorum.IDLE_CONFIG, "1000")], "scope string, name string, value string")
    appends = quorum.log_appends(batches, metadata)
    assert quorum.stalls(appends, quorum.noop_writing(metadata)).count() == 1
    writing = quorum.noop_writing(metadata, configs)
    assert (writing.idle_ms, writing.threshold_ms, writing.idle_source) == (1000, 4000.0, "the controllers' properties")
    assert quorum.stalls(appends, writing).count() == 0


def test_before_metadata_version_3_3_no_stall_is_claimed_and_the_finding_says_why(spark):
    log = version_record(MetadataLog(), 0.0, 3)  # 3.2-IV0: no NoOpRecords
    log.topic(1.0, "t", "AAAAAAAAAAAAAAAAAAAAAA").topic(30.0, "u", "AAAAAAAAAAAAAAAAAAAAAQ")
    metadata, batches = frames(spark, log)
    appends = quorum.log_appends(batches, metadata)
    writing = quorum.noop_writing(metadata)
    assert not writing.writes_noops and writing.metadata_version == "3.2-IV0"
    assert quorum.stalls(appends, writing).count() == 0
    timeline = quorum.leader_timeline(metadata, appends)
    found = quorum.findings(writing, quorum.stalls(appends, writing), spark.createDataFrame(
        [], ", ".join(f"{c} string" for c in quorum.EPISODES_COLUMNS)).selectExpr(
        "cast(node_id as int) node_id", "role", "cast(start as timestamp) start", "cast(end as timestamp) end",
        "cast(seconds as double) seconds", "cast(open as boolean) open",
        "cast(peak_offset_lag as long) peak_offset_lag", "cast(peak_time_lag_ms as long) peak_time_lag_ms",
        "cast(fenced_at as timestamp) fenced_at", "cast(unfenced_at as timestamp) unfenced_at"), timeline)
    rows = [(r.kind, r.severity) for r in found.collect()]
    assert rows == [("no_noop_records", "info")]
    summary = found.first().summary
    assert "3.2-IV0" in summary and "no stall is claimed" in summary
