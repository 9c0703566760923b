"""MirrorMaker 2 lag on small inline frames, compared as whole frames (values worked out by hand)."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.testing import assertDataFrameEqual

from workbench.analysis import mirror
from workbench.analysis.findings import areas

pytestmark = pytest.mark.spark

T0 = dt.datetime(2026, 1, 1)
K = ("A", "B", "t", 0)


def at(s: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=s)


def three_batches(spark):
    """The source log: offsets 0-9, 10-19, 20-29 of 100 bytes each, in the log by 1 s, 5 s, 12 s."""
    return spark.createDataFrame(
        [(*K, at(1), 10, 0, 100), (*K, at(5), 20, 100, 200), (*K, at(12), 30, 200, 300)],
        "source_alias string, target_alias string, topic string, partition int, reached timestamp, "
        "end_offset long, bytes_before long, bytes_end long")


@pytest.fixture(scope="module")
def frames(spark):
    growth = three_batches(spark)
    # an offset sync at 3 s (record 4 replicated), a Connect commit at 6 s (record 9 replicated)
    observations = spark.createDataFrame(
        [(*K, at(3), "offset_sync", 5, 4, 0), (*K, at(6), "connect_offset", 10, None, 0)],
        mirror.OBSERVATION_SCHEMA)
    timeline = mirror.lag_timeline(growth, observations, window_s=10)
    return timeline, mirror.lag_windows(timeline, window_s=10)


def test_timeline(spark, frames):
    timeline, _ = frames
    cols = "time timestamp, boundary boolean, log_end_offset long, replicated_end long, lro_source string, " \
           "lag_records long, lag_bytes long, lag_age_s double, connect_age_s double"
    want = spark.createDataFrame([
        (at(0), True, None, None, None, None, None, None, None),
        (at(1), False, 10, None, None, None, None, None, None),
        (at(3), False, 10, 5, "offset_sync", 5, 100, 2.0, None),       # batch 1 waits since 1 s
        (at(5), False, 20, 5, "offset_sync", 15, 200, 4.0, None),
        (at(6), False, 20, 10, "connect_offset", 10, 100, 1.0, 0.0),  # the Connect offset wins; batch 2 since 5 s
        (at(10), True, 20, 10, "connect_offset", 10, 100, 5.0, 4.0),  # committed 4 s ago
        (at(12), False, 30, 10, "connect_offset", 20, 200, 7.0, 6.0),
        (at(20), True, 30, 10, "connect_offset", 20, 200, 15.0, 14.0),
    ], cols)
    assertDataFrameEqual(timeline.select(*[c.split()[0] for c in cols.split(", ")]), want)


def test_windows(spark, frames):
    _, windows = frames
    want = spark.createDataFrame([
        (at(0), at(10), "connect_offset", 20, 10, 10, 5, 15, 65 / 7, 100, 200, 1.0, 4.0),
        (at(10), at(20), "connect_offset", 30, 10, 20, 10, 20, 18.0, 200, 200, 7.0, 7.0),
        (at(20), at(30), "connect_offset", 30, 10, 20, 20, 20, 20.0, 200, 200, 15.0, 15.0),
    ], "window_start timestamp, window_end timestamp, lro_source string, log_end_offset long, "
       "replicated_end long, lag_records long, lag_records_min long, lag_records_max long, "
       "lag_records_avg double, lag_bytes long, lag_bytes_max long, lag_age_s double, lag_age_s_max double")
    assertDataFrameEqual(windows.select(*want.columns), want)


def test_area_is_registered_fourth():
    area = areas()["mirror"]
    assert area.order == 4 and area.tables == ("mirror",)


def test_bad_window_parameter_is_a_clear_error():
    from workbench.errors import ConfigError

    with pytest.raises(ConfigError, match="mirror_window_s"):
        mirror.settings_from({"mirror_window_s": "soon"})
    with pytest.raises(ConfigError, match="positive"):
        mirror.settings_from({"mirror_window_s": 0})


def test_reported_metrics_leave_out_nan_samples(spark):
    """MM2 reports the -max of a window without records as NaN: no value, and it would win every max."""
    from workbench.spark.metrics import METRICS_SCHEMA

    name = "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max"
    labels = {"target": "B", "topic": "A.t", "partition": "0"}
    metrics = spark.createDataFrame([
        (0, "m.csv", "jmxtool", name, None, None, None, labels, at(1), 40.0),
        (0, "m.csv", "jmxtool", name, None, None, None, labels, at(2), float("nan")),
        (0, "m.csv", "jmxtool", name, None, None, None, labels, at(3), None),  # out of range: kept, null
        (0, "m.csv", "jmxtool", "kafka_server_other", None, None, None, labels, at(3), 1.0),
    ], METRICS_SCHEMA)
    got = mirror.reported_metrics(metrics, [mirror.Flow("A", "B")])
    want = spark.createDataFrame([
        ("A", "B", "t", "A.t", 0, None, "replication-latency-ms-max", at(1), 40.0, "jmxtool", 0),
        ("A", "B", "t", "A.t", 0, None, "replication-latency-ms-max", at(3), None, "jmxtool", 0),
    ], got.schema)
    assertDataFrameEqual(got, want)


def test_the_audit_takes_the_source_groups_mm2s_group_filter_takes(spark):
    """Which source groups the offset-translation audit follows is MirrorMaker 2's DefaultGroupFilter:
    ``groups`` minus ``groups.exclude``, whose default leaves out console consumers, Connect's own
    groups and ``__`` groups; each list is one Java regex matched whole, and a list that is not a
    regex names groups literally."""
    from workbench.analysis.mirror.audit import translation_audit
    from workbench.analysis.mirror.flows import Flow
    from workbench.spark.mirror import MIRROR_SCHEMA

    flows = [Flow("A", "B"), Flow("C", "D", settings={"groups": "bill.*, app", "groups.exclude": "billing"}),
             Flow("E", "F", settings={"groups": "bill["})]
    observations = spark.createDataFrame(
        [(f.source, f.target, "t", 0, at(1), "offset_sync", 5, 4, 0) for f in flows], mirror.OBSERVATION_SCHEMA)
    groups = ["app", "console-consumer-7", "connect-sink", "__internal", "billing", "bill[", "apps"]
    commits_schema = "group string, topic string, partition int, time timestamp, committed_offset long, _ord long"
    source = spark.createDataFrame([(g, "t", 0, at(2), 3, i) for i, g in enumerate(groups)], commits_schema)
    audit = translation_audit(spark.createDataFrame([], MIRROR_SCHEMA), observations, source,
                              spark.createDataFrame([], commits_schema), flows)
    followed = {(r["source_alias"], r["group"]) for r in audit.select("source_alias", "group").distinct().collect()}
    assert followed == {("A", "app"), ("A", "billing"), ("A", "bill["), ("A", "apps"),
                        ("C", "app"), ("C", "bill["), ("E", "bill[")}


def test_kip971_bounds_and_its_cache_ttl(spark):
    # the three batches; an offset sync at 3 s (record 4); Connect commits at 6 s (record 9), 15 s
    # (record 24) and 30 s (record 29: all replicated)
    growth = three_batches(spark)
    observations = spark.createDataFrame(
        [(*K, at(3), "offset_sync", 5, 4, 0), (*K, at(6), "connect_offset", 10, None, 0),
         (*K, at(15), "connect_offset", 25, None, 1), (*K, at(30), "connect_offset", 30, None, 2)],
        mirror.OBSERVATION_SCHEMA)
    timeline = mirror.lag_timeline(growth, observations, window_s=60)
    cols = "time timestamp, lro_source string, lag_records long, next_connect_end long, lag_records_low long, " \
           "kip971_reported boolean"
    want = spark.createDataFrame([
        (at(0), None, None, 10, None, None),
        (at(1), None, None, 10, None, None),
        (at(3), "offset_sync", 5, 10, None, True),            # a sync: acknowledged just now
        (at(5), "offset_sync", 15, 10, None, True),
        (at(6), "connect_offset", 10, 25, 0, True),           # the next commit is past the log end
        (at(12), "connect_offset", 20, 25, 5, True),          # in memory: between 10 and 25 replicated
        (at(15), "connect_offset", 5, 30, 0, True),           # the sync is 12 s old
        (at(30), "connect_offset", 0, None, None, None),      # caught up at a commit of now
        (at(60), "connect_offset", 0, None, None, False),     # caught up 30 s ago: dropped from the cache
    ], cols)
    assertDataFrameEqual(timeline.select(*[c.split()[0] for c in cols.split(", ")]), want)
    windows = mirror.lag_windows(timeline, window_s=60)
    assertDataFrameEqual(windows.select("window_start", "lag_records", "lag_records_low", "kip971_reported"),
                         spark.createDataFrame([(at(0), 0, None, None), (at(60), 0, None, False)],
                                               "window_start timestamp, lag_records long, lag_records_low long, "
                                               "kip971_reported boolean"))
