"""Consumer lag on small hand-written tables: the cases a real scenario shows rarely or never.

Each expected figure is worked out by hand from the rows below (offsets, positions, sizes, times), in
the comments beside it; the real-Kafka tests (``test_consumer_lag_real_kafka.py``) judge the common case.
"""

from __future__ import annotations

import pandas as pd
import pytest
from pyspark.testing import assertDataFrameEqual

from tests.analysis.metadata_rows import at
from workbench.analysis import consumer_lag as cl
from workbench.analysis import logs
from workbench.analysis.consumer_lag import burrow_history
from workbench.errors import ConfigError
from workbench.spark.batches import BATCHES_SCHEMA
from workbench.spark.offsets import OFFSETS_SCHEMA

pytestmark = pytest.mark.spark


def batch(topic, part, seg, pos, base, last, size, ts, node=1):
    return (node, f"/b/{node}/{topic}-{part}/{seg:020d}.log", topic, part, seg, pos, base, last, last - base + 1,
            size, 2, "none", "CreateTime", at(ts), at(ts), -1, -1, -1, False, False, 0, 0, True)


# orders-0: segment 0 holds offsets 0-19 (2 batches, 300 + 200 bytes), segment 20 holds 20-29 (100 bytes)
BATCHES = [
    batch("orders", 0, 0, 0, 0, 9, 300, 1),
    batch("orders", 0, 0, 300, 10, 19, 200, 2),
    batch("orders", 0, 20, 0, 20, 29, 100, 4),
]


def commit(offset_in_log, ts, group, topic, part, committed, *, txn=False, producer=-1, deleted=False,
           outcome=None):
    return (1, "/b/1/__consumer_offsets-0/0.log", 0, 0, offset_in_log, at(ts), producer, 0, txn, "OffsetCommit",
            deleted, group, topic, part, None, None if deleted else committed, -1, "", at(ts), None, 3, None,
            outcome, None)


def marker(offset_in_log, ts, producer, kind="COMMIT"):
    return (1, "/b/1/__consumer_offsets-0/0.log", 0, 0, offset_in_log, at(ts), producer, 0, True, "TxnMarker",
            False, None, None, None, None, None, None, None, None, None, None, kind, kind, None)


OFFSETS = [
    commit(0, 1.5, "billing", "orders", 0, 5),       # in batch 0-9, log end 10 (batch stamped 1 s)
    commit(1, 3.0, "billing", "orders", 0, 10),      # in batch 10-19, log end 20
    commit(2, 5.0, "billing", "orders", 0, 30),      # caught up: log end 30
    commit(3, 2.5, "audit", "orders", 0, 0, txn=True, producer=7, outcome="COMMIT"),
    marker(4, 4.5, 7),                               # audit's commit takes effect at 4.5 s: log end 30
    commit(5, 2.6, "audit", "orders", 0, 3, txn=True, producer=8, outcome="ABORT"),
    marker(6, 2.7, 8, "ABORT"),
    commit(7, 6.0, "audit", "orders", 0, None, deleted=True),
]


@pytest.fixture(scope="module")
def frames(spark):
    batches = spark.createDataFrame(BATCHES, BATCHES_SCHEMA)
    offsets = spark.createDataFrame(OFFSETS, OFFSETS_SCHEMA)
    return batches, offsets, logs.log_growth(batches)


def test_effective_commits_time_transactions_at_their_marker_and_drop_aborted(frames, spark):
    _b, offsets, _g = frames
    got = cl.effective_commits(offsets).select("group", "committed_offset", "commit_time", "transactional")
    want = spark.createDataFrame([("billing", 5, at(1.5), False), ("billing", 10, at(3.0), False),
                                  ("billing", 30, at(5.0), False), ("audit", 0, at(4.5), True)],
                                 "group string, committed_offset long, commit_time timestamp, transactional boolean")
    assertDataFrameEqual(got, want)


def test_lag_in_records_bytes_and_time_across_segments(frames, spark):
    _b, offsets, growth = frames
    got = cl.lag_at_commits(cl.effective_commits(offsets), growth).select(
        "group", "committed_offset", "log_end_offset", "records_lag", "bytes_lag", "time_lag_ms", "broker")
    want = spark.createDataFrame([
        ("billing", 5, 10, 5, 300, 0, 1),        # batch 0-9 (pos 0) to log end 10: 300 B; 1 s - 1 s
        ("billing", 10, 20, 10, 200, 0, 1),      # batch 10-19 to its end: 200 B; stamped 2 s, newest 2 s
        ("billing", 30, 30, 0, 0, 0, 1),         # caught up
        ("audit", 0, 30, 30, 600, 3000, 1),      # 300 + 200 + 100 across two segments; 4 s - 1 s
    ], "group string, committed_offset long, log_end_offset long, records_lag long, bytes_lag long, "
       "time_lag_ms long, broker int")
    assertDataFrameEqual(got, want)


def test_lag_at_an_instant_uses_commits_strictly_before_and_drops_removed_offsets(frames, spark):
    _b, offsets, growth = frames
    commits = cl.effective_commits(offsets)
    got = cl.lag_at(commits, growth, [at(3.0), at(7.0)], removed=cl.removed_offsets(offsets)).select(
        "time", "group", "committed_offset", "log_end_offset", "records_lag")
    want = spark.createDataFrame([
        (at(3.0), "billing", 5, 20, 15),         # the commit at exactly 3 s is not yet seen
        (at(7.0), "billing", 30, 30, 0),         # audit's offset was removed at 6 s
    ], "time timestamp, group string, committed_offset long, log_end_offset long, records_lag long")
    assertDataFrameEqual(got, want)


def test_log_end_from_the_metric_where_segments_are_gone_and_unknown_bytes_below_the_first_batch(frames, spark):
    _b, _o, growth = frames
    commits = spark.createDataFrame([("late", "orders", 0, at(0.5), 2)],
                                    "group string, topic string, partition int, commit_time timestamp, "
                                    "committed_offset long")
    metric = spark.createDataFrame([("orders", 0, 1, at(0.2), 4)],
                                   "topic string, partition int, node_id int, time timestamp, value long")
    got = cl.lag_at_commits(commits, growth, log_ends=metric).select(
        "log_end_offset", "log_end_source", "records_lag", "bytes_lag", "time_lag_ms", "note")
    want = spark.createDataFrame([(4, "metric", 2, None, None, f"{cl.CREATE_TIME_NOTE}; {cl.METRIC_END_NOTE}")],
                                 "log_end_offset long, log_end_source string, records_lag long, bytes_lag long, "
                                 "time_lag_ms long, note string")
    assertDataFrameEqual(got, want)


def test_retention_loss_counts_the_records_skipped(spark):
    lags = spark.createDataFrame([("g", "t", 0, at(1), 100), ("g", "t", 0, at(9), 180)],
                                 "group string, topic string, partition int, commit_time timestamp, "
                                 "committed_offset long")
    growth = spark.createDataFrame([("t", 0, 150)], "topic string, partition int, base_offset long")
    starts = spark.createDataFrame([("t", 0, 1, at(8), 150)],
                                   "topic string, partition int, node_id int, time timestamp, value long")
    # the group's offsets were removed at 5 s: it came back at the log start, the loss is certain
    removed = spark.createDataFrame([("g", "t", 0, at(5))],
                                    "group string, topic string, partition int, removed_time timestamp")
    got = cl.retention_loss(lags, growth, log_starts=starts, removed=removed).select(
        "kind", "committed_offset", "next_offset", "log_start_offset", "records_lost", "exact")
    want = spark.createDataFrame([("skipped", 100, 180, 150, 50, True)],
                                 "kind string, committed_offset long, next_offset long, log_start_offset long, "
                                 "records_lost long, exact boolean")
    assertDataFrameEqual(got, want)
    # a group that kept committing may have read them before they were deleted: an upper bound
    live = cl.retention_loss(lags, growth, log_starts=starts).select("kind", "records_lost", "exact")
    assertDataFrameEqual(live, spark.createDataFrame([("possibly_skipped", 50, False)],
                                                     "kind string, records_lost long, exact boolean"))
    # without the metric the bundle's first batch bounds it
    bounded = cl.retention_loss(lags, growth, removed=removed).select("kind", "records_lost", "exact", "basis")
    assertDataFrameEqual(bounded, spark.createDataFrame([("skipped", 50, False, "bundle")],
                                                        "kind string, records_lost long, exact boolean, "
                                                        "basis string"))


def test_stuck_runs_and_removed_groups(frames, spark):
    _b, offsets, growth = frames
    lags = spark.createDataFrame([("g", "orders", 0, at(1), 5, 10), ("g", "orders", 0, at(2), 5, 20),
                                  ("g", "orders", 0, at(3), 5, 20)],
                                 "group string, topic string, partition int, commit_time timestamp, "
                                 "committed_offset long, log_end_offset long")
    got = cl.stuck_partitions(lags).select("group", "committed_offset", "start", "end", "commits", "lag_start",
                                           "lag_end")
    assertDataFrameEqual(got, spark.createDataFrame([("g", 5, at(1), at(3), 3, 5, 15)],
                                                    "group string, committed_offset long, start timestamp, "
                                                    "end timestamp, commits long, lag_start long, lag_end long"))
    removed = cl.removed_groups(cl.effective_commits(offsets), cl.removed_offsets(offsets)).select(
        "group", "partitions", "removed_partitions", "all_removed", "last_removed")
    assertDataFrameEqual(removed, spark.createDataFrame([("audit", 1, 1, True, at(6))],
                                                        "group string, partitions long, removed_partitions long, "
                                                        "all_removed boolean, last_removed timestamp"))


def test_findings_say_what_was_found(frames):
    _b, offsets, growth = frames
    commits = cl.effective_commits(offsets)
    lags = cl.lag_at_commits(commits, growth)
    # billing's offset 5 stood still for two commits while the log grew from 10 to 20
    still = lags.sparkSession.createDataFrame(
        [("billing", "orders", 0, at(1), 5, 10), ("billing", "orders", 0, at(2), 5, 20)],
        "group string, topic string, partition int, commit_time timestamp, committed_offset long, "
        "log_end_offset long")
    found = cl.findings(lags, removed=cl.removed_groups(commits, cl.removed_offsets(offsets)),
                        stuck=cl.stuck_partitions(still), lag_warn_s=2.0).toPandas().sort_values(["kind", "subject"])
    assert list(zip(found.kind, found.subject, found.severity, strict=True)) == [
        ("lag", "audit", "warning"), ("lag", "billing", "info"), ("offsets_removed", "audit", "info"),
        ("stuck", "billing", "warning")]
    stuck = found[found.kind == "stuck"].iloc[0]
    assert "stood still on 1 partition(s)" in stuck.summary and "log grew by 10 records (lag then 15" in stuck.summary
    audit = found[(found.kind == "lag") & (found.subject == "audit")].iloc[0]
    assert audit.summary.startswith("group audit read up to 600 B (3.0 s, 30 records) behind the tail on broker 1")
    assert audit.figures["max_bytes_lag"] == 600 and audit.figures["max_time_lag_ms"] == 3000


def test_bad_parameters_are_one_line_errors(frames):
    _b, offsets, growth = frames
    lags = cl.lag_at_commits(cl.effective_commits(offsets), growth)
    with pytest.raises(ConfigError, match="metric"):
        cl.lag_histogram(lags, metric="furlongs")
    with pytest.raises(ConfigError, match="quantiles"):
        cl.page_cache(lags, quantiles=(1.5,))
    with pytest.raises(ConfigError, match="instant"):
        cl.lag_at(cl.effective_commits(offsets), growth, ["yesterday"])


def test_page_cache_from_what_the_broker_wrote_since_the_read_data(frames, spark):
    batches, offsets, growth = frames
    lags = cl.with_cache_bytes(cl.lag_at_commits(cl.effective_commits(offsets), growth), cl.broker_writes(batches))
    got = lags.select("group", "committed_offset", "bytes_lag", "cache_bytes")
    # broker 1 wrote 300 B by 1 s, 500 B by 2 s, 600 B by 4 s
    want = spark.createDataFrame([("billing", 5, 300, 300), ("billing", 10, 200, 200), ("billing", 30, 0, 0),
                                  ("audit", 0, 600, 600)],
                                 "group string, committed_offset long, bytes_lag long, cache_bytes long")
    assertDataFrameEqual(got, want)
    # nearest rank over [0, 200, 300, 600]: p50 = the 2nd, p99 = the 4th
    cache = cl.page_cache(lags, quantiles=(0.5, 0.99)).select("broker", "quantile", "reads", "tail_bytes",
                                                              "cache_bytes")
    assert sorted(tuple(r) for r in cache.collect()) == [(1, 0.5, 4, 200, 200), (1, 0.99, 4, 600, 600)]


def test_a_negative_committed_offset_reads_from_nowhere(frames, spark):
    batches, _o, growth = frames
    commits = spark.createDataFrame([("nowhere", "orders", 0, at(3.0), -1), ("damaged", "orders", 0, at(3.0), -9)],
                                    "group string, topic string, partition int, commit_time timestamp, "
                                    "committed_offset long")
    lags = cl.with_cache_bytes(cl.lag_at_commits(commits, growth), cl.broker_writes(batches))
    got = lags.select("group", "log_end_offset", "records_lag", "bytes_lag", "time_lag_ms", "committed_batch_offset",
                      "cache_bytes", "note")
    note = f"{cl.CREATE_TIME_NOTE}; {cl.NEGATIVE_OFFSET_NOTE}"
    # log end 20 at 3 s (batch 10-19 reached at 2 s); kafka-consumer-groups shows no lag for such an offset
    want = spark.createDataFrame([("nowhere", 20, None, None, None, None, None, note),
                                  ("damaged", 20, None, None, None, None, None, note)],
                                 "group string, log_end_offset long, records_lag long, bytes_lag long, "
                                 "time_lag_ms long, committed_batch_offset long, cache_bytes long, note string")
    assertDataFrameEqual(got, want)


def test_a_groups_lag_finding_holds_its_own_page_cache_not_the_other_groups(spark):
    batches = spark.createDataFrame(BATCHES, BATCHES_SCHEMA)
    growth, writes = logs.log_growth(batches), cl.broker_writes(batches)

    def billing_lag(rows):
        lags = cl.with_cache_bytes(cl.lag_at_commits(cl.effective_commits(spark.createDataFrame(rows, OFFSETS_SCHEMA)),
                                                     growth), writes)
        found = cl.findings(lags, cache=cl.page_cache(lags, by=("group", "broker"))).where(
            "kind = 'lag' AND subject = 'billing'")
        return [(r.summary, dict(r.figures)) for r in found.collect()]

    alone = billing_lag([r for r in OFFSETS if r[11] == "billing"])
    # billing's reads needed 300, 200 and 0 B of cache; audit's read needed all 600 B the broker wrote,
    # which moves the broker's p99 but not billing's
    assert billing_lag(OFFSETS) == alone
    assert alone[0][1]["p99_cache_bytes"] == 300 and "; 300 B of page cache on broker 1" in alone[0][0]


def test_burrow_status_of_many_partitions_per_call_equals_one_call_per_partition(spark, monkeypatch):
    """The status rows when each pandas call holds many groups' partitions (as it does since
    10,000 partitions cost 100 s one call each) equal those of one call per group and partition."""
    import random

    from pyspark.sql import functions as F

    rng = random.Random(3)
    lags, growth = [], []
    for p in range(9):
        end = 0
        for i in range(40):
            end += rng.randrange(0, 30)
            growth.append(("orders", p, at(i), end))
    ends = {(t, p, r): e for t, p, r, e in growth}
    for g in ("billing", "audit", "search"):
        for p in rng.sample(range(9), 6):
            offset = 0
            for i in sorted(rng.sample(range(40), 12)):
                offset = rng.choice([offset, max(0, offset - 5), ends[("orders", p, at(i))]])  # stall, rewind, catch up
                lag = None if rng.random() < 0.1 else ends[("orders", p, at(i))] - offset
                lags.append((g, "orders", p, at(i + 0.5), offset, lag))
    lags = spark.createDataFrame(lags, "group string, topic string, partition int, commit_time timestamp, "
                                       "committed_offset long, records_lag long")
    growth = spark.createDataFrame(growth, "topic string, partition int, reached timestamp, end_offset long")

    def one_call_per_partition(**kwargs):
        rows = cl.burrow_inputs(lags, growth, **kwargs)
        return rows.groupBy("group", "topic", "partition").applyInPandas(
            lambda pdf: burrow_history._burrow_kernel(pdf, 3, 0), cl.BURROW_SCHEMA)

    monkeypatch.setattr(burrow_history, "BURROW_BUCKETS", 2)  # 18 partitions of groups in 2 calls
    got = cl.burrow_status(lags, growth, intervals=3)
    assert got.count() == lags.count() > 150
    assert {r.status for r in got.select("status").distinct().collect()} >= {"OK", "STALL", "REWIND"}
    assertDataFrameEqual(got, one_call_per_partition(intervals=3))
    instants = cl.group_instants(lags, points=5)
    assertDataFrameEqual(cl.burrow_status(lags, growth, instants=instants, intervals=3),
                         one_call_per_partition(instants=instants, intervals=3))
    assert got.select(F.countDistinct("group", "partition")).first()[0] == 18


def test_burrow_ring_of_a_partition_younger_than_the_look_back_starts_at_its_first_batch(spark):
    """A group that caught up with a new partition's first batch and stopped: Burrow's ring of log ends
    holds its polls since the partition appeared, the oldest at most the first batch's base offset, at
    or below the group's offset, so a ring that reaches back past the partition's start keeps the group
    OK (``checkIfRecentLagZero``); a ring that looks back only into the log's growth since rates it STOP."""
    growth = spark.createDataFrame([("t", 0, at(10 * i), 10 * i, 10 * i + 10) for i in range(4)],
                                   "topic string, partition int, reached timestamp, base_offset long, end_offset long")
    lags = spark.createDataFrame([("g", "t", 0, at(s), 10, 0) for s in (1, 2, 3)],
                                 "group string, topic string, partition int, commit_time timestamp, "
                                 "committed_offset long, records_lag long")
    instants = spark.createDataFrame([("g", at(s)) for s in (15, 25, 35)], "group string, time timestamp")

    def statuses(**ring):
        got = cl.burrow_status(lags, growth, instants=instants, intervals=10, **ring)
        return [r.status for r in got.orderBy("time").collect()]

    assert statuses(refresh_s=10) == ["OK", "OK", "OK"]      # looks back 90 s: before the first batch
    # 9 s: at 15 s the ring reaches back to the log end of 6 s (10, the group's offset), later past it
    assert statuses(refresh_s=1) == ["OK", "STOP", "STOP"]
    # without the batches' base offsets the ring before the first batch is unknown: no poll counts
    assert cl.burrow_status(lags, growth.drop("base_offset"), instants=instants, intervals=10,
                            refresh_s=10).where("status = 'STOP'").count() == 3


def test_group_instants_reach_the_logs_end_or_the_removal_of_the_offsets_within_the_points(spark):
    """Between and after a group's commits, instants every ``every_s`` up to its logs' last growth
    (or the first removal of its offsets after its last commit), thinned to ``points``; a group whose
    logs stopped growing before its first commit gets its commit times only."""
    from pyspark.sql import functions as F

    lags = spark.createDataFrame(
        [("a", "t", 0, at(0), 1, 0), ("a", "t", 0, at(10), 2, 0),    # commits at 0 and 10 s
         ("b", "t", 0, at(0), 1, 0), ("c", "u", 0, at(30), 5, 0)],
        "group string, topic string, partition int, commit_time timestamp, committed_offset long, records_lag long")
    growth = spark.createDataFrame([("t", 0, at(5), 3), ("t", 0, at(100), 9), ("u", 0, at(20), 5)],
                                   "topic string, partition int, reached timestamp, end_offset long")
    removed = spark.createDataFrame([("b", "t", 0, at(42)), ("a", "t", 0, at(5))],   # a's removal precedes a commit
                                    "group string, topic string, partition int, removed_time timestamp")

    def times(**kwargs):
        got = (cl.group_instants(lags, growth=growth, removed=removed, every_s=10, **kwargs)
               .select("group", F.unix_millis("time").alias("ms")).collect())
        zero = at(0).timestamp() * 1000
        return {g: sorted(round((r.ms - zero) / 1000) for r in got if r.group == g) for g in "abc"}

    assert times() == {"a": list(range(0, 101, 10)), "b": [0, 10, 20, 30, 40], "c": [30]}
    thinned = times(points=4)    # steps of a quarter of the span, then every other instant and the last
    assert thinned == {"a": [0, 25, 75, 100], "b": [0, 21, 42], "c": [30]}


def test_distributions_counted_per_time_slice_follow_a_window(spark):
    """The view's histograms and page-cache curve are counted per slice of the commits' span (equal parts,
    whole ms): summed over every slice they are the whole bundle's; over the slices a window overlaps they
    are those computed over the span of those slices."""
    commits = [(1, 0, 0), (1, 1, 100), (1, 2, 5000), (1, 3.5, 700), (2, 5, 64), (1, 9, 2**20), (2, 10, 3)]
    lags = spark.createDataFrame([(b, "g", "t", at(s), lag, lag // 10) for b, s, lag in commits],
                                 "broker int, group string, topic string, commit_time timestamp, bytes_lag long, "
                                 "time_lag_ms long")
    sliced = cl.with_time_slices(lags, slices=5)
    # the span 0 .. 10 s is 10,001 ms: five slices of 2,001 ms from 0 s
    got = sliced.select("commit_time", "slice_start", "slice_end").orderBy("commit_time").toPandas()
    firsts = [0, 0, 0, 2.001, 4.002, 8.004, 8.004]
    assert list(got.slice_start) == [pd.Timestamp(at(f)).tz_localize(None) for f in firsts]
    assert list(got.slice_end - got.slice_start) == [pd.Timedelta(milliseconds=2001)] * len(commits)
    slices = ("slice_start", "slice_end")
    points = cl.lag_points(sliced, by=("broker", *slices)).toPandas()

    def ordered(frame):
        return frame.sort_values(["broker", "bytes"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(ordered(cl.cdf_of_points(points)), ordered(cl.byte_lag_cdf(lags).toPandas()),
                                  check_dtype=False)
    # a window inside the second slice keeps that slice whole: the commit at 3.5 s
    pd.testing.assert_frame_equal(
        ordered(cl.cdf_of_points(points, start=at(2.5), end=at(3))),
        ordered(cl.byte_lag_cdf(lags, start=at(2.001), end=at(4.002)).toPandas()), check_dtype=False)
    assert cl.cdf_of_points(points, start=at(2.5), end=at(3)).reads.tolist() == [1]
    hist = cl.lag_histogram(sliced, by=("broker", *slices)).toPandas()
    summed = hist.groupby(["broker", "bucket"])["count"].sum().sort_index()
    whole = cl.lag_histogram(lags).toPandas().set_index(["broker", "bucket"])["count"].sort_index()
    pd.testing.assert_series_equal(summed, whole, check_dtype=False)
    windowed = cl.in_slices(hist, at(4.5), at(9))  # the third slice to the fifth (the fourth is empty), whole
    assert sorted(zip(windowed.broker, windowed.bucket, windowed["count"], strict=True)) == [
        (1, 20, 1), (2, 2, 1), (2, 6, 1)]
