"""A partition's log over time from its batches: growth, as-of joins, log end at instants."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from tests.analysis.metadata_rows import at
from workbench.analysis import logs
from workbench.spark.batches import BATCHES_SCHEMA

pytestmark = pytest.mark.spark


def batch(node, topic, part, seg, pos, base, last, size, ts, ts_type="CreateTime"):
    return (node, f"/b/{node}/{topic}-{part}/{seg:020d}.log", topic, part, seg, pos, base, last, last - base + 1,
            size, 2, "none", ts_type, at(ts), at(ts), -1, -1, -1, False, False, 0, 0, True)


ROWS = [
    # broker 1 leads orders-0: two segments; its CreateTime stamps go back once (a slow producer)
    batch(1, "orders", 0, 0, 0, 0, 9, 500, 1),
    batch(1, "orders", 0, 0, 500, 10, 19, 400, 3),
    batch(1, "orders", 0, 20, 0, 20, 24, 300, 2),      # stamped before the previous batch
    batch(1, "orders", 0, 20, 300, 25, 29, 200, 6),
    # broker 2 is a follower behind: not read
    batch(2, "orders", 0, 0, 0, 0, 9, 500, 1),
    # another partition, LogAppendTime
    batch(1, "orders", 1, 0, 0, 0, 4, 100, 2, "LogAppendTime"),
]


def test_log_growth_reads_the_fullest_replica_with_cumulative_bytes_and_times(spark):
    got = logs.log_growth(spark.createDataFrame(ROWS, BATCHES_SCHEMA))
    want = spark.createDataFrame([
        ("orders", 0, 1, 0, 0, 0, 10, 10, 500, 0, 500, at(1), at(1), "CreateTime", False),
        ("orders", 0, 1, 0, 500, 10, 20, 10, 400, 500, 900, at(3), at(3), "CreateTime", False),
        ("orders", 0, 1, 20, 0, 20, 25, 5, 300, 900, 1200, at(2), at(3), "CreateTime", False),
        ("orders", 0, 1, 20, 300, 25, 30, 5, 200, 1200, 1400, at(6), at(6), "CreateTime", False),
        ("orders", 1, 1, 0, 0, 0, 5, 5, 100, 0, 100, at(2), at(2), "LogAppendTime", False),
    ], "topic string, partition int, node_id int, segment_base_offset long, position long, base_offset long, "
       "end_offset long, record_count int, size int, bytes_before long, bytes_end long, max_timestamp timestamp, "
       "reached timestamp, timestamp_type string, is_control boolean")
    assertDataFrameEqual(got, want)


def test_log_end_at_instants_before_between_and_at_batches(spark):
    growth = logs.log_growth(spark.createDataFrame(ROWS, BATCHES_SCHEMA))
    instants = spark.createDataFrame(
        [("orders", 0, at(0.5), "before"), ("orders", 0, at(2.5), "between"), ("orders", 0, at(3), "at"),
         ("orders", 0, at(9), "after"), ("orders", 1, at(3), "other"), ("audit", 0, at(3), "unknown")],
        "topic string, partition int, time timestamp, label string")
    got = logs.log_end_at(growth, instants)
    want = spark.createDataFrame(
        [("orders", 0, at(0.5), "before", None, None, None), ("orders", 0, at(2.5), "between", 10, 500, at(1)),
         # at 3 s the log held offsets up to 24: the batch stamped 2 s came after the one stamped 3 s
         ("orders", 0, at(3), "at", 25, 1200, at(3)), ("orders", 0, at(9), "after", 30, 1400, at(6)),
         ("orders", 1, at(3), "other", 5, 100, at(2)), ("audit", 0, at(3), "unknown", None, None, None)],
        "topic string, partition int, time timestamp, label string, log_end_offset long, log_end_bytes long, "
        "log_end_reached timestamp")
    assertDataFrameEqual(got, want)


def test_asof_returns_every_left_row_whole_even_duplicates_and_dotted_names(spark):
    """Left rows travel through the join whole: identical rows stay two rows, odd column names survive."""
    right = spark.createDataFrame([("a", at(1), 10), ("a", at(3), 30), ("b", at(2), 20)],
                                  "k string, t timestamp, v long")
    left = spark.createDataFrame([("a", at(2), "x"), ("a", at(2), "x"), ("a", at(0), "y"), ("b", at(5), "z")],
                                 "k string, when timestamp, `odd.name` string")
    got = logs.asof(left, right, by=["k"], left_time="when", right_time="t", columns=["v"], suffix="_then")
    want = spark.createDataFrame([("a", at(2), "x", 10), ("a", at(2), "x", 10), ("a", at(0), "y", None),
                                  ("b", at(5), "z", 20)], "k string, when timestamp, `odd.name` string, v_then long")
    assertDataFrameEqual(got, want)


META_ROWS = [
    # the metadata log: node 1 holds offsets 0-5, node 2 (behind) 0-2, and node 1 a snapshot
    batch(1, "__cluster_metadata", 0, 0, 0, 0, 2, 90, 1),
    batch(1, "__cluster_metadata", 0, 0, 90, 3, 5, 80, 2),
    batch(2, "__cluster_metadata", 0, 0, 0, 0, 2, 90, 1),
]


def test_log_growth_reads_the_metadata_log_only_when_asked_and_each_replica(spark):
    snapshot = list(batch(1, "__cluster_metadata", 0, 0, 0, 0, 5, 300, 3))
    snapshot[1] = "/b/1/__cluster_metadata-0/00000000000000000006-0000000001.checkpoint"
    frame = spark.createDataFrame([*META_ROWS, tuple(snapshot), *ROWS], BATCHES_SCHEMA)
    assert logs.log_growth(frame).where("topic = '__cluster_metadata'").count() == 0
    fullest = logs.log_growth(frame, topics=["__cluster_metadata"]).select("node_id", "base_offset", "end_offset")
    assertDataFrameEqual(fullest, spark.createDataFrame([(1, 0, 3), (1, 3, 6)],
                                                        "node_id int, base_offset long, end_offset long"))
    each = (logs.log_growth(frame, topics=["__cluster_metadata"], per_replica=True)
            .select("node_id", "base_offset", "end_offset", "bytes_end"))
    assertDataFrameEqual(each, spark.createDataFrame([(1, 0, 3, 90), (1, 3, 6, 170), (2, 0, 3, 90)],
                                                     "node_id int, base_offset long, end_offset long, bytes_end long"))


def test_asof_pairs_rows_right_when_the_left_side_is_recomputed_in_another_order(spark):
    # a left side built by a shuffle (repartition) gets its rows in a different order at each
    # evaluation; the as-of join must still give each row its own match
    n = 2000
    left = (spark.range(n).selectExpr("id as k_id", "timestamp_seconds(id) as t")
            .repartition(7).withColumn("key", __import__("pyspark.sql.functions", fromlist=["lit"]).lit(1)))
    right = spark.range(0, n, 10).selectExpr("1 as key", "timestamp_seconds(id) as rt", "id as at_id")
    got = logs.asof(left, right, by=["key"], left_time="t", right_time="rt", columns=["at_id"])
    want = spark.range(n).selectExpr("id as k_id", "timestamp_seconds(id) as t", "1 as key",
                                     "cast(floor(id / 10) * 10 as long) as at_id")
    assertDataFrameEqual(got.select("k_id", "t", "key", "at_id"), want)
