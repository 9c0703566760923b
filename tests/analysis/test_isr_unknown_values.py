"""The ISR replays on metadata rows whose time or offset a reader refused (null), as whole frames.

A value a reader cannot hold loads as null with a problem (issue 43: one PartitionChangeRecord
batch stamped in the year 3000 failed the whole report). The replays' rule: a row without an
offset is skipped; an event without a time takes the partition's latest known time, or, before
the partition has one, changes the state without opening an interval. The compiled replay and the
reference replay must give the same rows, and the per-broker counts and per-partition summary must
take intervals whose times are unknown.
"""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from tests.analysis.metadata_rows import COLUMNS, MetadataLog, at
from workbench.analysis import isr
from workbench.spark.metadata import METADATA_SCHEMA

pytestmark = pytest.mark.spark

ORDERS, AUDIT = "T3JkZXJzT3JkZXJzT3JkZQ", "QXVkaXRBdWRpdEF1ZGl0QQ"


@pytest.fixture(params=[True, False], ids=["compiled", "reference"])
def compiled(request):
    return request.param


def _null(log: MetadataLog, column: str) -> MetadataLog:
    """The last row added, with ``column`` null (as a reader leaves a value it refused)."""
    row = list(log.rows[-1])
    row[COLUMNS.index(column)] = None
    log.rows[-1] = tuple(row)
    return log


def unknown_times_log() -> MetadataLog:
    """Two topics; an ISR shrink, a topic config and a topic deletion whose times are unknown; a
    change without an offset; a partition created at an unknown time."""
    log = MetadataLog()
    log.config(0, 4, "", "min.insync.replicas", "2")
    log.topic(1, "orders", ORDERS).partition(1, ORDERS, 0, [1, 2, 3], [1, 2, 3], 1)
    log.topic(2, "audit", AUDIT).partition(2, AUDIT, 0, [2, 3, 1], [2, 3, 1], 2)
    _null(log.topic(3, "late", "TGF0ZUxhdGVMYXRlTGF0ZQ").partition(3, "TGF0ZUxhdGVMYXRlTGF0ZQ", 0, [1, 2], [1, 2], 1),
          "timestamp")                                                     # created at an unknown time
    log.change(10, ORDERS, 0, isr=[1, 3])                                  # at min ISR
    log.change(10.5, AUDIT, 0, isr=[3, 1], leader=3)
    _null(log.change(20, ORDERS, 0, isr=[1]), "timestamp")                 # under min ISR, time unknown: 10
    _null(log.change(21, ORDERS, 0, isr=[2]), "offset")                    # cannot be placed: skipped
    log.change(20.5, AUDIT, 0, isr=[1], leader=1)
    log.change(25, "TGF0ZUxhdGVMYXRlTGF0ZQ", 0, isr=[1])                   # the late partition shows from here
    log.change(30, ORDERS, 0, isr=[1, 3])
    _null(log.config(35, 2, "orders", "min.insync.replicas", "3"), "timestamp")   # takes 30
    log.change(40, ORDERS, 0, isr=[1, 2, 3])
    _null(log.remove_topic(45, AUDIT), "timestamp")                        # ends audit's last interval at 20.5
    log.noop(60)
    return log


def test_unknown_times_take_the_partitions_latest_known_time(spark, compiled):
    frame = spark.createDataFrame(unknown_times_log().rows, METADATA_SCHEMA)
    got = isr.partition_states(frame, compiled=compiled)
    o, a, late = "orders", "audit", "late"
    late_id = "TGF0ZUxhdGVMYXRlTGF0ZQ"
    rows = [
        (o, ORDERS, 0, at(1), at(10), 2, 1, [1, 2, 3], [1, 2, 3], None, 2, False, False, False, False, "healthy",
         "next_change"),
        (o, ORDERS, 0, at(10), at(10), 7, 1, [1, 3], [1, 2, 3], None, 2, True, False, True, False, "at_min_isr",
         "next_change"),
        (o, ORDERS, 0, at(10), at(30), 9, 1, [1], [1, 2, 3], None, 2, True, True, False, False, "under_min_isr",
         "next_change"),
        (o, ORDERS, 0, at(30), at(30), 13, 1, [1, 3], [1, 2, 3], None, 2, True, False, True, False, "at_min_isr",
         "next_change"),
        (o, ORDERS, 0, at(30), at(40), 14, 1, [1, 3], [1, 2, 3], None, 3, True, True, False, False, "under_min_isr",
         "next_change"),
        (o, ORDERS, 0, at(40), at(60), 15, 1, [1, 2, 3], [1, 2, 3], None, 3, False, False, True, False, "at_min_isr",
         "log_end"),
        (a, AUDIT, 0, at(2), at(10.5), 4, 2, [2, 3, 1], [2, 3, 1], None, 2, False, False, False, False, "healthy",
         "next_change"),
        (a, AUDIT, 0, at(10.5), at(20.5), 8, 3, [3, 1], [2, 3, 1], None, 2, True, False, True, False, "at_min_isr",
         "next_change"),
        (a, AUDIT, 0, at(20.5), at(20.5), 11, 1, [1], [2, 3, 1], None, 2, True, True, False, False, "under_min_isr",
         "topic_deleted"),
        (late, late_id, 0, at(25), at(60), 12, 1, [1], [1, 2], None, 2, True, True, False, False, "under_min_isr",
         "log_end"),
    ]
    want = spark.createDataFrame([(*r, None) for r in rows], isr.STATES_SCHEMA)
    assertDataFrameEqual(got, want)


def test_counts_and_summary_take_intervals_of_unknown_time(spark):
    """Intervals whose start or end is null (a states frame from elsewhere) move no count and count no
    seconds, one whose start is known can still be the first under min ISR; a null ISR or min ISR
    is compared with nothing."""
    rows = [
        ("orders", ORDERS, 0, at(0), at(10), 0, 1, [1, 2], [1, 2], None, 2, False, False, True, False, "at_min_isr",
         "next_change", None),
        ("orders", ORDERS, 0, None, at(20), 1, 1, [1], [1, 2], None, 2, True, True, False, False, "under_min_isr",
         "next_change", None),
        ("orders", ORDERS, 0, at(20), None, 2, 1, None, [1, 2], None, None, True, True, False, False,
         "under_min_isr", "next_change", None),
        ("orders", ORDERS, 0, at(30), at(60), 3, 1, [1], [1, 2], None, 2, True, True, False, False, "under_min_isr",
         "log_end", None),
        ("audit", AUDIT, 0, at(5), at(60), 0, None, [1, 2], [1, 2], None, 2, False, False, True, True, "offline",
         "log_end", None),
    ]
    states = spark.createDataFrame(rows, isr.STATES_SCHEMA)
    counts = isr.under_min_isr_counts(states)
    assertDataFrameEqual(counts, spark.createDataFrame(
        [(1, at(0), 0), (1, at(30), 1), (1, at(60), 1)], "broker int, time timestamp, count int"))
    summary = isr.partition_summary(states)
    assertDataFrameEqual(summary, spark.createDataFrame(
        [("audit", 0, 2, 0.0, 0.0, 55.0, None, 0, 0), ("orders", 0, 2, 30.0, 30.0, 0.0, at(20), 1, 0)],
        "topic string, partition int, min_isr int, under_min_isr_seconds double, under_replicated_seconds double, "
        "offline_seconds double, first_under_min_isr timestamp, isr_shrinks int, isr_expands int"))
