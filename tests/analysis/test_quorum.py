"""Quorum analysis on small inline metadata logs: NoOp cadence, stalls, their absence before 3.3."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.analysis.metadata_rows import COLUMNS, MetadataLog, at
from workbench.analysis import quorum
from workbench.analysis.quorum import positions
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
                        "CreateTime", ts, ts, -1, -1, -1, False, row[COLUMNS.index("is_control")], epoch, 0, True))
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


OFFSETS_DDL = ("node_id int, role string, time timestamp, source string, kind string, offset long, "
               "record_time timestamp, leader_offset long, leader_time timestamp, offset_lag long, "
               "time_lag_ms double, missing_since timestamp, behind_ms double, reported_lag_ms double, "
               "reported_offset_lag long, note string")


def test_a_brokers_unfence_after_its_episode_ends_is_the_episodes_unfence(spark):
    # a resumed broker catches up with the log first and is unfenced on a later heartbeat: the
    # unfence lands after the episode has ended and still tells when its fence ended; a second
    # episode's fence and unfence are its own
    from datetime import datetime, timedelta

    t0 = datetime(2026, 1, 1, 0, 0, 0)

    def t(s: float) -> datetime:
        return t0 + timedelta(seconds=s)

    def obs(s: float, behind_ms: float):
        return (5, "broker", t(s), "jmxtool", "applied", 100, t(s - behind_ms / 1000), 110, t(s), 10,
                behind_ms, t(s - behind_ms / 1000), behind_ms, None, None, None)

    rows = [obs(0, 0.0), obs(1, 3000.0), obs(2, 4000.0), obs(3, 5000.0), obs(4, 0.0), obs(5, 0.0),
            obs(10, 0.0), obs(11, 2000.0), obs(12, 0.0), obs(13, 0.0)]
    offsets = spark.createDataFrame(rows, OFFSETS_DDL)
    fence_rows = [(t(2.5), 50, 5, 17, "fenced", "BrokerRegistrationChangeRecord", None, None),
                  (t(4.3), 55, 5, 17, "unfenced", "BrokerRegistrationChangeRecord", None, None),
                  (t(11.5), 60, 5, 17, "fenced", "BrokerRegistrationChangeRecord", None, None),
                  (t(11.8), 61, 5, 17, "unfenced", "BrokerRegistrationChangeRecord", None, None),
                  (t(20), 70, 5, 17, "fenced", "BrokerRegistrationChangeRecord", None, None),
                  (t(21), 71, 5, 17, "unfenced", "BrokerRegistrationChangeRecord", None, None)]
    fences = spark.createDataFrame(fence_rows, "time timestamp, offset long, broker_id int, broker_epoch long, "
                                   "event string, record_type string, episode_start timestamp, episode_end timestamp")
    got = quorum.divergence_episodes(offsets, None, fences=fences).toPandas()
    assert [(r.start, r.end, r.fenced_at, r.unfenced_at) for r in got.itertuples()] == [
        (t(0), t(4), t(2.5), t(4.3)), (t(10), t(12), t(11.5), t(11.8))]
    # without a fence in the episode, an unfence after its end is not its own
    late = quorum.divergence_episodes(offsets, None, fences=fences.where("offset >= 55")).toPandas()
    assert late.fenced_at.iloc[0] is pd.NaT and late.unfenced_at.iloc[0] is pd.NaT


POSITIONS_DDL = ("node_id int, time timestamp, source string, kind string, offset long, reported_time timestamp, "
                 "reported_lag_ms long, reported_offset_lag long, note string")


def test_a_silent_scraper_stands_for_a_frozen_node_until_the_node_is_seen_past_its_last_answer(spark):
    # JmxTool answers node 1 every second up to 10 s, then nothing until 22 s (blocked on a
    # frozen JVM, and slow to answer again once it resumed). The leader's view of the node's
    # fetches ends the silence where it shows the node past its last answer after a gap; a
    # position seen just after the last answer, or a stale one, does not.
    from datetime import datetime, timedelta

    t0 = datetime(2026, 1, 1)

    def row(s: float, offset: int, source: str = "jmxtool", kind: str = "applied"):
        return (1, t0 + timedelta(seconds=s), source, kind, offset, None, None, None, None)

    gauges = spark.createDataFrame([row(s, s) for s in range(11)] + [row(22, 30)], POSITIONS_DDL)

    def filled(moved):
        got = positions._unanswered(gauges, moved).orderBy("time").collect()
        return [((r.time - t0).total_seconds(), r.offset) for r in got]

    assert filled(None) == [(float(s), 10) for s in range(11, 22)]
    fetches = spark.createDataFrame([row(10.5, 11, "describe_replication", "fetched"),
                                     row(15, 10, "describe_replication", "fetched"),
                                     row(18, 25, "describe_replication", "fetched")], POSITIONS_DDL)
    assert filled(fetches) == [(float(s), 10) for s in range(11, 18)]
    # another export's answer at the same moment and offset (the node froze right after both
    # answered) does not end the silence; one showing the node further on does
    same = gauges.unionByName(spark.createDataFrame([row(10.3, 10, "prometheus_text")], POSITIONS_DDL))
    further = gauges.unionByName(spark.createDataFrame([row(10.4, 11, "prometheus_text")], POSITIONS_DDL))
    got = {name: [((r.time - t0).total_seconds(), r.offset) for r in
                  positions._unanswered(frame).where("source = 'jmxtool'").orderBy("time").collect()]
           for name, frame in (("same", same), ("further", further))}
    assert got == {"same": [(float(s), 10) for s in range(11, 22)], "further": []}


def test_a_frozen_leaders_dropped_write_does_not_move_its_episode_to_the_next_epoch(spark):
    # The leader (node 1) writes a NoOp every 500 ms (offsets 1-20) until it is frozen at 10.3 s;
    # its last scrape, at 10.2 s, reported applied offset 21: the active controller counts a write
    # when it schedules it, and the election dropped that one. Node 2 leads from 15 s and its
    # first record is offset 21. Node 1 answers again when resumed at 20 s. Its episode starts
    # when it stopped (one idle interval after its last record in the log, offset 20 at 10 s),
    # not when the new leader wrote the record that took offset 21.
    from workbench.spark.metrics import METRICS_SCHEMA

    log = version_record(MetadataLog(), 0.0, 21)
    for i in range(1, 21):
        log.noop(i * 0.5)
    for i in range(0, 20):
        log.noop(15.0 + i * 0.5)                # offsets 21-40, node 2 from 15 s
    metadata, batches = frames(spark, log, {21: 2})
    appends = quorum.log_appends(batches, metadata)
    applied = quorum.OFFSET_GAUGES["applied"][0]

    def sample(node: int, s: float, offset: int):
        return (node, f"/m/{node}.csv", "jmxtool", applied, applied, None, None, None,
                at(s).replace(tzinfo=None), float(offset))

    rows = [sample(1, s + 0.2, min(2 * s, 20) if s < 10 else 21) for s in range(0, 11)]
    rows += [sample(1, s + 0.2, 2 * (s - 15) + 21) for s in range(20, 25)]     # answering again
    rows += [sample(2, s + 0.1, 2 * s if s < 10 else (20 if s < 15 else 2 * (s - 15) + 21)) for s in range(0, 25)]
    metrics = spark.createDataFrame(rows, METRICS_SCHEMA)
    offsets = quorum.node_offsets(appends, metrics=metrics)
    writing = quorum.noop_writing(metadata)
    got = quorum.divergence_episodes(offsets, writing).where("node_id = 1").toPandas()
    # one episode, from when node 1 stopped (10.5 s) to its answer after the resume
    assert [(r.start, r.end) for r in got.itertuples()] == [
        (pd.Timestamp(at(10.5).replace(tzinfo=None)), pd.Timestamp(at(20.2).replace(tzinfo=None)))], got
    # its silence stands at the last offset the log held then, not at the dropped write's offset
    silent = offsets.where("node_id = 1 AND kind = 'unanswered'").select("offset").distinct().collect()
    assert [r.offset for r in silent] == [20]


def test_each_status_capture_is_held_against_the_voter_set_in_force_at_its_time(spark):
    """``voters_beside_status``: a capture before the first voters record is held against the nodes'
    common ``controller.quorum.voters`` when given, else not judged; one after a change is held
    against the new set (the capture's order of ids does not matter); one the log contradicts differs."""
    from pyspark.testing import assertDataFrameEqual

    voters = spark.createDataFrame([(at(10), [1]), (at(20), [1, 2]), (at(30), [1, 3])],
                                   "time timestamp, voters array<int>")
    status = spark.createDataFrame([(at(5), 1, [1]), (at(12), 1, [1]), (at(25), 1, [2, 1]), (at(35), 1, [1, 2])],
                                   "captured timestamp, leader_id int, voters array<int>")
    schema = ("captured timestamp, leader_id int, captured_voters array<int>, voters array<int>, "
              "voters_from string, since timestamp, agrees boolean")
    later = [(at(12), 1, [1], [1], "log", at(10), True), (at(25), 1, [2, 1], [1, 2], "log", at(20), True),
             (at(35), 1, [1, 2], [1, 3], "log", at(30), False)]
    assertDataFrameEqual(quorum.voters_beside_status(voters, status),
                         spark.createDataFrame([(at(5), 1, [1], None, None, None, None), *later], schema))
    static = quorum.configured_voters(["2@127.0.0.1:9094,1@127.0.0.1:9093", "1@127.0.0.1:9093,2@127.0.0.1:9094"])
    assert static == [1, 2]
    assertDataFrameEqual(quorum.voters_beside_status(voters, status, static), spark.createDataFrame(
        [(at(5), 1, [1], [1, 2], quorum.STATIC_VOTERS_CONFIG, None, False), *later], schema))
    assert quorum.configured_voters(["1@h:1", "1@h:1,2@h:2"]) is None and quorum.configured_voters([None]) is None
    assert quorum.configured_voters(["1@h:1,x@h:2"]) is None  # a damaged value says nothing: not judged
