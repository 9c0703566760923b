"""The replica comparison on inline batch headers: divergent, missing and cleaned batches, told apart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pyspark.testing import assertDataFrameEqual

from tests.analysis.test_replica_epochs import events, offsets
from workbench.analysis import replicas
from workbench.analysis.replicas.compare import COMPARISON_COLUMNS, RANGE_COLUMNS
from workbench.analysis.replicas.epochs import election_losses, leader_history, replica_epochs
from workbench.analysis.replicas.truncations import groups_beyond, truncations
from workbench.spark.leader_epochs import LEADER_EPOCHS_SCHEMA
from workbench.spark.metadata import METADATA_SCHEMA
from workbench.spark.replica_batches import REPLICA_BATCHES_SCHEMA

pytestmark = pytest.mark.spark

T0 = datetime(2026, 11, 21, 3, 0, 0, tzinfo=UTC)


def at(offset: int) -> datetime:
    return T0 + timedelta(seconds=offset)


def batch(cluster, node, topic, partition, base, last, crc, *, epoch=1, records=None):
    """A batch header row of ``replica_batches`` (its time: T0 + its last offset in seconds)."""
    count = last - base + 1 if records is None else records
    return (cluster, node, topic, partition, f"/b/{node}/{topic}-{partition}/0.log", base * 10, base, last, count,
            70 + count, epoch, crc, False, at(last))


def rows():
    out = []
    # cluster c, orders-0 on nodes 1, 2, 3: node 2 holds other bytes at 20-29; node 3 is behind (no 40-49)
    for node in (1, 2, 3):
        out += [batch("c", node, "orders", 0, 0, 9, 100), batch("c", node, "orders", 0, 10, 19, 101),
                batch("c", node, "orders", 0, 20, 29, 999 if node == 2 else 102, epoch=2),
                batch("c", node, "orders", 0, 30, 39, 103, epoch=2)]
        if node != 3:
            out.append(batch("c", node, "orders", 0, 40, 49, 104, epoch=2))
    # pay-1 on nodes 1 and 2, batched differently: both diverge at 0, node 2 lacks node 1's batch at 5
    out += [batch("c", 1, "pay", 1, 0, 4, 200), batch("c", 1, "pay", 1, 5, 9, 201), batch("c", 2, "pay", 1, 0, 9, 555)]
    # __consumer_offsets-0: node 1 cleaned (a batch with fewer records than offsets, then 5-9 removed): from 15 on only
    out += [batch("c", 1, "__consumer_offsets", 0, 0, 4, 300, records=2),
            batch("c", 1, "__consumer_offsets", 0, 10, 14, 302), batch("c", 1, "__consumer_offsets", 0, 15, 19, 303)]
    out += [batch("c", 2, "__consumer_offsets", 0, b, b + 4, 300 + b // 5) for b in (0, 5, 10, 15)]
    out[-2] = batch("c", 2, "__consumer_offsets", 0, 10, 14, 777)  # below node 1's cleaned point: not compared
    # logs-0 (not compacted): node 1 lacks 5-9 inside its range
    out += [batch("c", 1, "logs", 0, 0, 4, 400), batch("c", 1, "logs", 0, 10, 14, 402)]
    out += [batch("c", 2, "logs", 0, b, b + 4, 400 + b // 5) for b in (0, 5, 10)]
    # a cluster without a cluster id, its own orders-0 on nodes 1 and 2: identical, and kept apart from c's
    out += [batch(None, node, "orders", 0, 0, 9, 900) for node in (1, 2)]
    # one replica only: nothing to compare
    out.append(batch("c", 1, "solo", 0, 0, 9, 1))
    return out


def test_every_batch_is_judged_against_the_other_replicas(spark):
    frame = spark.createDataFrame(rows(), REPLICA_BATCHES_SCHEMA)
    got = replicas.compare_replicas(frame)

    def row(cluster, topic, partition, node, base, last, crc, status, others=None, *, epoch=1, records=None):
        return (cluster, topic, partition, node, base, last, last - base + 1 if records is None else records, epoch,
                crc, at(last), status, others)

    want = []
    for node in (1, 2, 3):
        want += [row("c", "orders", 0, node, 0, 9, 100, "same"), row("c", "orders", 0, node, 10, 19, 101, "same"),
                 row("c", "orders", 0, node, 30, 39, 103, "same", epoch=2)]
    want += [row("c", "orders", 0, 1, 20, 29, 102, "same", "2", epoch=2),
             row("c", "orders", 0, 3, 20, 29, 102, "same", "2", epoch=2),
             row("c", "orders", 0, 2, 20, 29, 999, "divergent", "1, 3", epoch=2)]
    want += [row("c", "pay", 1, 1, 0, 4, 200, "divergent", "2"), row("c", "pay", 1, 2, 0, 9, 555, "divergent", "1"),
             row("c", "pay", 1, 1, 5, 9, 201, "same"), row("c", "pay", 1, 2, 5, 9, 201, "missing", "1")]
    want += [row("c", "__consumer_offsets", 0, node, 15, 19, 303, "same") for node in (1, 2)]
    want += [row("c", "logs", 0, node, b, b + 4, 400 + b // 5, "same") for node in (1, 2) for b in (0, 10)]
    want += [row("c", "logs", 0, 2, 5, 9, 401, "same"), row("c", "logs", 0, 1, 5, 9, 401, "missing", "2")]
    want += [row(None, "orders", 0, node, 0, 9, 900, "same") for node in (1, 2)]
    schema = ("cluster_id string, topic string, partition int, node_id int, base_offset long, last_offset long, "
              "records long, leader_epoch int, crc long, time timestamp, status string, others string")
    assert tuple(got.columns) == COMPARISON_COLUMNS
    assertDataFrameEqual(got, spark.createDataFrame(want, schema))


def test_each_replica_range_names_where_its_cleaner_rewrote_it(spark):
    frame = spark.createDataFrame(rows(), REPLICA_BATCHES_SCHEMA)
    got = replicas.replica_ranges(frame)

    def rng(cluster, topic, partition, node, start, end, batches, records, first, cleaned=None):
        return (cluster, topic, partition, node, start, end, batches, records, at(first), at(end - 1), cleaned)

    want = [rng("c", "orders", 0, 1, 0, 50, 5, 50, 9), rng("c", "orders", 0, 2, 0, 50, 5, 50, 9),
            rng("c", "orders", 0, 3, 0, 40, 4, 40, 9),
            rng("c", "pay", 1, 1, 0, 10, 2, 10, 4), rng("c", "pay", 1, 2, 0, 10, 1, 10, 9),
            rng("c", "__consumer_offsets", 0, 1, 0, 20, 3, 12, 4, cleaned=14),
            rng("c", "__consumer_offsets", 0, 2, 0, 20, 4, 20, 4),
            rng("c", "logs", 0, 1, 0, 15, 2, 10, 4), rng("c", "logs", 0, 2, 0, 15, 3, 15, 4),
            rng(None, "orders", 0, 1, 0, 10, 1, 10, 9), rng(None, "orders", 0, 2, 0, 10, 1, 10, 9),
            rng("c", "solo", 0, 1, 0, 10, 1, 10, 9)]
    schema = ("cluster_id string, topic string, partition int, node_id int, log_start_offset long, "
              "log_end_offset long, batches long, records long, first_time timestamp, last_time timestamp, "
              "cleaned_to long")
    assert tuple(got.columns) == RANGE_COLUMNS
    assertDataFrameEqual(got, spark.createDataFrame(want, schema))
    # a topic whose cleanup.policy says compact: the gap in logs-0 is the cleaner's, nothing compared below 15
    compacting = replicas.Compaction(topics=frozenset({"logs"}))
    cleaned = replicas.replica_ranges(frame, compacting).where("topic = 'logs'").select("node_id", "cleaned_to")
    assert sorted(map(tuple, cleaned.collect())) == [(1, 14), (2, None)]
    assert replicas.compare_replicas(frame, compaction=compacting).where("topic = 'logs'").count() == 0
    # the brokers compact by default: every topic that sets no policy of its own
    default = replicas.Compaction(default=True, not_compacted=frozenset({"orders"}))
    assert default.compacts("logs") and not default.compacts("orders") and default.compacts("__consumer_offsets")


def test_findings_name_each_replica_that_differs(spark):
    frame = spark.createDataFrame(rows(), REPLICA_BATCHES_SCHEMA)
    got = replicas.findings(replicas.compare_replicas(frame))
    want = [("replica_divergent", "critical", "orders-0 on node 2", at(29), at(29)),
            ("replica_divergent", "critical", "pay-1 on node 1", at(4), at(4)),
            ("replica_divergent", "critical", "pay-1 on node 2", at(9), at(9)),
            ("replica_missing", "warning", "pay-1 on node 2", at(9), at(9)),
            ("replica_missing", "warning", "logs-0 on node 1", at(9), at(9))]
    assertDataFrameEqual(got.select("kind", "severity", "subject", "start", "end"),
                         spark.createDataFrame(want, "kind string, severity string, subject string, "
                                                     "start timestamp, end timestamp"))
    assert {r["area"] for r in got.collect()} == {"replicas"}
    told = {r["subject"]: r["summary"] for r in got.where("kind = 'replica_divergent'").collect()}
    assert told["orders-0 on node 2"] == (
        "orders-0 on node 2 holds different contents than node(s) 1, 3 at the same offsets: the replicas diverged: "
        "offsets 20–29 (1 batch(es), 10 record(s), leader epoch(s) 2, written 2026-11-21 03:00:29 UTC to "
        "2026-11-21 03:00:29 UTC)")
    missing = got.where("subject = 'logs-0 on node 1'").collect()[0]
    assert missing["summary"].startswith("logs-0 on node 1 lacks batches that node(s) 2 hold, inside the offsets it "
                                         "holds: offsets 5–9 (1 batch(es), 5 record(s)")
    assert missing["figures"] == {"first_offset": 5.0, "last_offset": 9.0, "batches": 1.0, "records": 5.0}


def test_the_cluster_is_named_when_replicas_of_several_differ(spark):
    data = [batch("a", node, "t", 0, 0, 9, 1 if node == 1 else 2) for node in (1, 2, 3)]
    data += [batch("b", node, "t", 0, b, b + 9, 5) for node in (1, 2, 3) for b in (0, 10, 20) if (node, b) != (3, 10)]
    got = replicas.findings(replicas.compare_replicas(spark.createDataFrame(data, REPLICA_BATCHES_SCHEMA)))
    # one cluster's replica diverged, another's lacks a batch: each told with its cluster
    assert sorted(r["subject"] for r in got.collect()) == ["cluster a: t-0 on node 1", "cluster b: t-0 on node 3"]


def test_identical_replicas_give_no_finding_and_a_summary_per_replica(spark):
    data = [batch("c", node, "t", p, b, b + 9, 10 * p + b) for node in (1, 2, 3) for p in (0, 1) for b in (0, 10)]
    data = [r for r in data if not (r[1] == 3 and r[3] == 1 and r[6] == 10)]  # node 3 behind on t-1
    frame = spark.createDataFrame(data, REPLICA_BATCHES_SCHEMA)
    comparison = replicas.compare_replicas(frame)
    assert replicas.findings(comparison).count() == 0
    summary = replicas.replica_summary(replicas.replica_ranges(frame), comparison)
    got = summary.select("topic", "partition", "node_id", "log_end_offset", "shared_start", "shared_end",
                         "compared_batches", "divergent_batches", "missing_batches")
    want = [("t", 0, n, 20, 0, 20, 2, 0, 0) for n in (1, 2, 3)]
    want += [("t", 1, n, 20, 0, 10, 1, 0, 0) for n in (1, 2)] + [("t", 1, 3, 10, 0, 10, 1, 0, 0)]
    assertDataFrameEqual(got, spark.createDataFrame(
        want, "topic string, partition int, node_id int, log_end_offset long, shared_start long, shared_end long, "
              "compared_batches long, divergent_batches long, missing_batches long"))


def test_key_figures_count_every_partition_compared_with_or_without_a_cluster_id(spark):
    frame = spark.createDataFrame(rows(), REPLICA_BATCHES_SCHEMA)
    ranges = replicas.replica_ranges(frame)
    history = leader_history(spark.createDataFrame([], METADATA_SCHEMA))
    epochs = replica_epochs(spark.createDataFrame([], LEADER_EPOCHS_SCHEMA), history)
    losses = election_losses(history, epochs, frame)
    cuts, groups = truncations(events(spark, [])), groups_beyond(offsets(spark, []), losses)
    result = replicas.ReplicasAnalysis(None, {}, ranges, replicas.compare_replicas(frame, ranges), history, epochs,
                                       losses, cuts, groups)
    assert replicas.key_figures(result) == {"partitions_compared": 5, "batches_compared": 24, "divergent_batches": 3,
                                            "missing_batches": 2, "unclean_elections": 0}
