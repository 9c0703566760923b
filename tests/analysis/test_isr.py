"""ISR analysis on inline metadata sequences, compared as whole frames.

Every test runs on the compiled replay and on the reference (Python) replay.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from tests.analysis.metadata_rows import MetadataLog, at
from workbench.analysis import isr
from workbench.analysis.metadata_log import broker_changes as isr_changes
from workbench.spark.metadata import METADATA_SCHEMA

pytestmark = pytest.mark.spark

ORDERS, AUDIT = "T3JkZXJzT3JkZXJzT3JkZQ", "QXVkaXRBdWRpdEF1ZGl0QQ"


@pytest.fixture(params=[True, False], ids=["compiled", "reference"])
def compiled(request):
    return request.param


def incident_log() -> MetadataLog:
    """Two topics, RF 3; cluster min ISR 2; brokers 2 then 3 drop out; a topic override; a deletion."""
    log = MetadataLog()
    log.config(0, 4, "", "min.insync.replicas", "2")
    log.topic(1, "orders", ORDERS).partition(1, ORDERS, 0, [1, 2, 3], [1, 2, 3], 1)
    log.topic(2, "audit", AUDIT).partition(2, AUDIT, 0, [2, 3, 1], [2, 3, 1], 2)
    log.change(10, ORDERS, 0, isr=[1, 3])                   # broker 2 out: at min ISR
    log.change(10.5, AUDIT, 0, isr=[3, 1], leader=3)          # leader 2 out
    log.change(20, ORDERS, 0, isr=[1])                        # broker 3 out: under min ISR
    log.change(20.5, AUDIT, 0, isr=[1], leader=1)
    log.config(30, 2, "orders", "min.insync.replicas", "1")   # topic override mid-incident
    log.change(40, ORDERS, 0, isr=[1, 2, 3])
    log.remove_topic(45, AUDIT)
    log.change(50, ORDERS, 0, leader=-1, isr=[])              # leaderless
    log.noop(60)
    return log


def states_frame(spark, log: MetadataLog):
    return spark.createDataFrame(log.rows, METADATA_SCHEMA)


def expected(spark, rows):
    cols = isr.STATES_SCHEMA
    return spark.createDataFrame([(*r, None) for r in rows], cols)  # cluster_id: the rows name none


def test_partition_states_follow_the_incident(spark, compiled):
    got = isr.partition_states(states_frame(spark, incident_log()), compiled=compiled)
    o, a = "orders", "audit"
    rows = [
        (o, ORDERS, 0, at(1), at(10), 2, 1, [1, 2, 3], [1, 2, 3], None, 2, False, False, False, False, "healthy",
         "next_change"),
        (o, ORDERS, 0, at(10), at(20), 5, 1, [1, 3], [1, 2, 3], None, 2, True, False, True, False, "at_min_isr",
         "next_change"),
        (o, ORDERS, 0, at(20), at(30), 7, 1, [1], [1, 2, 3], None, 2, True, True, False, False, "under_min_isr",
         "next_change"),
        (o, ORDERS, 0, at(30), at(40), 9, 1, [1], [1, 2, 3], None, 1, True, False, True, False, "at_min_isr",
         "next_change"),
        (o, ORDERS, 0, at(40), at(50), 10, 1, [1, 2, 3], [1, 2, 3], None, 1, False, False, False, False, "healthy",
         "next_change"),
        (o, ORDERS, 0, at(50), at(60), 12, -1, [], [1, 2, 3], None, 1, True, True, False, True, "offline",
         "log_end"),
        (a, AUDIT, 0, at(2), at(10.5), 4, 2, [2, 3, 1], [2, 3, 1], None, 2, False, False, False, False, "healthy",
         "next_change"),
        (a, AUDIT, 0, at(10.5), at(20.5), 6, 3, [3, 1], [2, 3, 1], None, 2, True, False, True, False, "at_min_isr",
         "next_change"),
        (a, AUDIT, 0, at(20.5), at(45), 8, 1, [1], [2, 3, 1], None, 2, True, True, False, False, "under_min_isr",
         "topic_deleted"),
    ]
    assertDataFrameEqual(got, expected(spark, rows))


def test_changes_in_the_last_millisecond_each_apply_in_offset_order(spark, compiled):
    """A cluster stopping at once writes several changes of one partition in the log's last
    millisecond: each applies in offset order, and the final state is the last one's."""
    log = MetadataLog()
    log.topic(0, "t", ORDERS).partition(0, ORDERS, 0, [1, 2, 3], [1, 2, 3], 1)
    log.partition(0, ORDERS, 1, [1, 2, 3], [1, 2, 3], 2)
    log.change(10, ORDERS, 0, isr=[1, 3]).change(10, ORDERS, 0, isr=[1]).change(10, ORDERS, 0, leader=-1)
    log.change(10, ORDERS, 1, isr=[2, 1]).change(10, ORDERS, 1, leader=1, isr=[1])
    got = isr.partition_states(states_frame(spark, log), compiled=compiled).select(
        "partition", "start", "end", "start_offset", "leader", "isr", "state", "end_reason")
    s10 = at(10)
    want = spark.createDataFrame([
        (0, at(0), s10, 1, 1, [1, 2, 3], "healthy", "next_change"),
        (0, s10, s10, 3, 1, [1, 3], "under_replicated", "next_change"),   # min ISR 1 (no setting)
        (0, s10, s10, 4, 1, [1], "at_min_isr", "next_change"),
        (0, s10, s10, 5, -1, [1], "offline", "log_end"),
        (1, at(0), s10, 2, 2, [1, 2, 3], "healthy", "next_change"),
        (1, s10, s10, 6, 2, [2, 1], "under_replicated", "next_change"),
        (1, s10, s10, 7, 1, [1], "at_min_isr", "log_end"),
    ], "partition int, start timestamp, end timestamp, start_offset long, leader int, isr array<int>, "
       "state string, end_reason string")
    assertDataFrameEqual(got, want)


def test_broker_level_min_isr_follows_the_leader(spark, compiled):
    log = MetadataLog()
    log.topic(0, "t", ORDERS).partition(0, ORDERS, 0, [1, 2, 3], [1, 2], 1)
    log.config(5, 4, "2", "min.insync.replicas", "3")      # only broker 2's partitions
    log.change(10, ORDERS, 0, leader=2)                      # now led by broker 2: min ISR 3
    log.config(15, 4, "2", "min.insync.replicas", None)     # deleted: back to the static default
    log.noop(20)
    got = isr.partition_states(states_frame(spark, log), static_min_isr=2, compiled=compiled).select(
        "start", "end", "leader", "min_isr", "state")
    want = spark.createDataFrame(
        [(at(0), at(10), 1, 2, "at_min_isr"), (at(10), at(15), 2, 3, "under_min_isr"),
         (at(15), at(20), 2, 2, "at_min_isr")],
        "start timestamp, end timestamp, leader int, min_isr int, state string")
    assertDataFrameEqual(got, want)


def test_topic_config_overrides_the_static_value_of_its_cluster(spark, compiled):
    """A static value per cluster id (from server.properties); a topic's ConfigRecord wins over it."""
    log = MetadataLog()
    log.topic(0, "orders", ORDERS).partition(0, ORDERS, 0, [1, 2, 3], [1, 2], 1)
    log.topic(1, "audit", AUDIT).partition(1, AUDIT, 0, [1, 2, 3], [1, 2], 1)
    log.config(5, 2, "orders", "min.insync.replicas", "2")
    log.noop(10)
    got = isr.partition_states(states_frame(spark, log), static_min_isr={None: 3, "other": 1},
                               compiled=compiled).select("topic", "start", "end", "min_isr", "state")
    want = spark.createDataFrame(
        [("orders", at(0), at(5), 3, "under_min_isr"), ("orders", at(5), at(10), 2, "at_min_isr"),
         ("audit", at(1), at(10), 3, "under_min_isr")],
        "topic string, start timestamp, end timestamp, min_isr int, state string")
    assertDataFrameEqual(got, want)


def test_under_min_isr_counts_per_leader(spark, compiled):
    states = isr.partition_states(states_frame(spark, incident_log()), compiled=compiled)
    got = isr.under_min_isr_counts(states, compiled=compiled)
    want = spark.createDataFrame(
        [
            (1, at(1), 0), (1, at(20), 1), (1, at(20.5), 2), (1, at(30), 1), (1, at(45), 0), (1, at(60), 0),
            (2, at(2), 0), (2, at(60), 0),
            (3, at(10.5), 0), (3, at(60), 0),
        ],
        "broker int, time timestamp, count int")
    assertDataFrameEqual(got, want)


def test_per_partition_gauges_are_the_leaders_figures_and_zero_on_followers(spark):
    """Kafka's ``kafka.cluster:type=Partition`` gauges of each replica: the leader's figure, 0 on a follower
    and while the partition has no leader; a row only where a replica's value changes."""
    states = isr.partition_states(states_frame(spark, incident_log()))
    got = isr.partition_gauges(states).where("gauge in ('UnderMinIsr', 'InSyncReplicasCount')")
    o, a = "orders", "audit"
    rows = [(1, o, "UnderMinIsr", 1, 0), (1, o, "UnderMinIsr", 20, 1), (1, o, "UnderMinIsr", 30, 0),
            (2, o, "UnderMinIsr", 1, 0), (3, o, "UnderMinIsr", 1, 0),
            (1, o, "InSyncReplicasCount", 1, 3), (1, o, "InSyncReplicasCount", 10, 2),
            (1, o, "InSyncReplicasCount", 20, 1), (1, o, "InSyncReplicasCount", 40, 3),
            (1, o, "InSyncReplicasCount", 50, 0), (2, o, "InSyncReplicasCount", 1, 0),
            (3, o, "InSyncReplicasCount", 1, 0),
            (1, a, "UnderMinIsr", 2, 0), (1, a, "UnderMinIsr", 20.5, 1), (2, a, "UnderMinIsr", 2, 0),
            (3, a, "UnderMinIsr", 2, 0),
            (1, a, "InSyncReplicasCount", 2, 0), (1, a, "InSyncReplicasCount", 20.5, 1),
            (2, a, "InSyncReplicasCount", 2, 3), (2, a, "InSyncReplicasCount", 10.5, 0),
            (3, a, "InSyncReplicasCount", 2, 0), (3, a, "InSyncReplicasCount", 10.5, 2),
            (3, a, "InSyncReplicasCount", 20.5, 0)]
    want = spark.createDataFrame([(b, t, 0, g, at(s), v) for b, t, g, s, v in rows],
                                 "broker int, topic string, partition int, gauge string, time timestamp, value int")
    assertDataFrameEqual(got, want)


def test_cluster_gauges_count_offline_and_existing_partitions(spark):
    """The controllers' ``OfflinePartitionsCount`` and ``GlobalPartitionCount``: a deleted topic's
    partitions leave the count, a leaderless partition enters the offline one; a row at each change
    and at the end of the log."""
    states = isr.partition_states(states_frame(spark, incident_log()))
    want = spark.createDataFrame(
        [(None, "GlobalPartitionCount", at(1), 1), (None, "GlobalPartitionCount", at(2), 2),
         (None, "GlobalPartitionCount", at(45), 1), (None, "GlobalPartitionCount", at(60), 1),
         (None, "OfflinePartitionsCount", at(1), 0), (None, "OfflinePartitionsCount", at(50), 1),
         (None, "OfflinePartitionsCount", at(60), 1)],
        "cluster_id string, gauge string, time timestamp, value int")
    assertDataFrameEqual(isr.cluster_gauges(states), want)


def test_every_kafka_gauge_sample_is_judged_against_its_own_series(spark):
    """One frame for the three families: a per-partition sample is held against its replica's series, a
    controller's against its cluster's, a broker's against its ReplicaManager series; a sample within
    1.5 s of a change of its series is settling, not judged."""
    states = isr.partition_states(states_frame(spark, incident_log()))
    sample = [(1, "kafka_cluster_partition_underminisr", {"topic": "orders", "partition": "0"}, 25, 1.0),
              (2, "kafka_cluster_partition_underminisr", {"topic": "orders", "partition": "0"}, 25, 1.0),
              (1, "kafka_cluster_partition_underminisr", {"topic": "orders", "partition": "0"}, 30.5, 1.0),
              (9, "kafka_controller_kafkacontroller_offlinepartitionscount", {}, 55, 1.0),
              (1, "kafka_server_replicamanager_underminisrpartitioncount", {}, 25, 2.0)]
    metrics = spark.createDataFrame([(n, name, labels, at(t), v) for n, name, labels, t, v in sample],
                                    "node_id int, name string, labels map<string,string>, timestamp timestamp, "
                                    "value double")
    got = isr.kafka_gauges_beside(states, metrics).select("broker", "gauge", "subject", "time", "reported",
                                                          "computed", "settling", "agrees")
    want = spark.createDataFrame(
        [(1, "UnderMinIsr", "orders-0", at(25), 1, 1, False, True),
         (2, "UnderMinIsr", "orders-0", at(25), 1, 0, False, False),
         (1, "UnderMinIsr", "orders-0", at(30.5), 1, 0, True, None),
         (9, "OfflinePartitionsCount", "cluster ", at(55), 1, 1, False, True),
         (1, "UnderMinIsrPartitionCount", "broker 1", at(25), 2, 2, False, True)],
        "broker int, gauge string, subject string, time timestamp, reported int, computed int, settling boolean, "
        "agrees boolean")
    assertDataFrameEqual(got, want)


def test_a_partition_entering_a_count_as_another_leaves_it_is_a_step_the_gauge_passes_through(spark):
    """Two partitions of one leader swap places in ``AtMinIsrPartitionCount`` in one metadata batch:
    the count stays 1, but Kafka updates its partitions one at a time and a sample between them reads
    0 (seen in a real scenario). The series has a row at that moment, so a sample just after it is
    settling; a 0 read well after it still differs. Kafka's ``UnderMinIsrPartitionCount``, which only
    grows there, is a plain step."""
    log = MetadataLog()
    log.config(0, 4, "", "min.insync.replicas", "2")
    log.topic(1, "orders", ORDERS).partition(1, ORDERS, 0, [1, 2, 3], [1, 2, 3], 1)
    log.partition(1, ORDERS, 1, [1, 2, 3], [1, 2, 3], 1)
    log.change(10, ORDERS, 1, isr=[1, 2])                    # at min ISR
    log.change(20, ORDERS, 0, isr=[1, 2]).change(20, ORDERS, 1, isr=[1])  # one in, one out: still one
    log.noop(30)
    states = isr.partition_states(states_frame(spark, log))
    got = isr.leader_gauges(states).where("gauge in ('AtMinIsrPartitionCount', 'UnderMinIsrPartitionCount')")
    gauges = "broker int, gauge string, time timestamp, value int"
    at_min, under = "AtMinIsrPartitionCount", "UnderMinIsrPartitionCount"
    assertDataFrameEqual(got, spark.createDataFrame(
        [(1, at_min, at(1), 0), (1, at_min, at(10), 1), (1, at_min, at(20), 1), (1, at_min, at(30), 1),
         (1, under, at(1), 0), (1, under, at(20), 1), (1, under, at(30), 1)], gauges))
    reported = spark.createDataFrame([(1, at_min, at(20.3), 0), (1, at_min, at(25), 0), (1, at_min, at(26), 1)],
                                     gauges)
    assertDataFrameEqual(
        isr.gauges_beside_reported(got, reported).select("time", "reported", "computed", "settling", "agrees"),
        spark.createDataFrame([(at(20.3), 0, 1, True, None), (at(25), 0, 1, False, False),
                               (at(26), 1, 1, False, True)],
                              "time timestamp, reported int, computed int, settling boolean, agrees boolean"))


def test_zookeeper_era_controller_gauges_are_judged_at_the_active_controller_only(spark):
    """A ZooKeeper-era broker reports ``OfflinePartitionsCount`` 0 unless it is the active controller
    (Kafka's ``KafkaController``): in such a cluster a sample is judged when the same sample holds
    ``ActiveControllerCount`` 1 or its value is above 0; the other zeros say nothing of the cluster. A
    KRaft controller computes the gauge from its own image, active or not: each of its samples is judged."""
    states = isr.partition_states(states_frame(spark, incident_log()))
    controller = "kafka_controller_kafkacontroller_"
    sample = [(9, controller + "activecontrollercount", 55, 1.0), (9, controller + "offlinepartitionscount", 55, 1.0),
              (8, controller + "activecontrollercount", 55, 0.0), (8, controller + "offlinepartitionscount", 55, 0.0),
              (7, controller + "offlinepartitionscount", 55, 0.0), (6, controller + "offlinepartitionscount", 55, 1.0)]
    metrics = spark.createDataFrame([(n, name, {}, at(t), v) for n, name, t, v in sample],
                                    "node_id int, name string, labels map<string,string>, timestamp timestamp, "
                                    "value double")

    def judged(**kw):
        return (isr.kafka_gauges_beside(states, metrics, **kw).where(F.col("gauge") == "OfflinePartitionsCount")
                .select("broker", "reported", "computed", "agrees"))

    schema = "broker int, reported int, computed int, agrees boolean"
    assertDataFrameEqual(judged(zookeeper=[None]),
                         spark.createDataFrame([(9, 1, 1, True), (6, 1, 1, True)], schema))
    assertDataFrameEqual(judged(), spark.createDataFrame(
        [(9, 1, 1, True), (8, 0, 1, False), (7, 0, 1, False), (6, 1, 1, True)], schema))
    assert judged(zookeeper=["another-cluster"]).count() == 4


def test_partition_summary(spark, compiled):
    states = isr.partition_states(states_frame(spark, incident_log()), compiled=compiled)
    got = isr.partition_summary(states, compiled=compiled)
    want = spark.createDataFrame(
        [("audit", 0, 2, 24.5, 34.5, 0.0, at(20.5), 2, 0),
         ("orders", 0, 1, 20.0, 40.0, 10.0, at(20), 3, 1)],
        "topic string, partition int, min_isr int, under_min_isr_seconds double, under_replicated_seconds double, "
        "offline_seconds double, first_under_min_isr timestamp, isr_shrinks int, isr_expands int")
    assertDataFrameEqual(got, want)


def test_changes_before_creation_and_replica_duplicates_are_ignored(spark, compiled):
    one = MetadataLog(node_id=1)
    one.change(0, ORDERS, 0, isr=[1])                        # partition unknown yet (log cleaned)
    one.topic(1, "t", ORDERS).partition(1, ORDERS, 0, [1, 2], [1, 2], 1)
    one.change(2, ORDERS, 0, isr=[1, 2])                     # no visible change: no new interval
    one.noop(3)
    two = MetadataLog(node_id=2)                             # the same log from a second replica
    two.rows = [(2,) + r[1:] for r in one.rows]
    frame = spark.createDataFrame(one.rows + two.rows, METADATA_SCHEMA)
    got = isr.partition_states(frame, compiled=compiled).select("start", "end", "isr", "state")
    want = spark.createDataFrame([(at(1), at(3), [1, 2], "healthy")],
                                 "start timestamp, end timestamp, isr array<int>, state string")
    assertDataFrameEqual(got, want)


FINDINGS = "area string, kind string, severity string, subject_type string, subject string, start timestamp, " \
           "end timestamp, summary string, figures map<string,double>"


def test_findings_are_episodes_and_flapping(spark):
    states = isr.partition_states(states_frame(spark, incident_log()))
    got = isr.findings(states)
    still = " (still so at the end of the log)"
    want = spark.createDataFrame([
        ("isr", "offline", "critical", "partition", "orders-0", at(50), at(60),
         "topic orders partition 0 was offline for 10.0 s starting 2026-03-01 03:12:50 UTC" + still,
         {"seconds": 10.0}),
        ("isr", "under_min_isr", "critical", "partition", "orders-0", at(20), at(30),
         "topic orders partition 0 was under min ISR (2) for 10.0 s starting 2026-03-01 03:12:20 UTC",
         {"seconds": 10.0, "min_isr": 2.0, "smallest_isr": 1.0}),
        # leaderless with an empty ISR under the topic's min ISR 1: under min ISR as well
        ("isr", "under_min_isr", "critical", "partition", "orders-0", at(50), at(60),
         "topic orders partition 0 was under min ISR (1) for 10.0 s starting 2026-03-01 03:12:50 UTC" + still,
         {"seconds": 10.0, "min_isr": 1.0, "smallest_isr": 0.0}),
        # the episode ends with the topic's deletion
        ("isr", "under_min_isr", "critical", "partition", "audit-0", at(20.5), at(45),
         "topic audit partition 0 was under min ISR (2) for 24.5 s starting 2026-03-01 03:12:20 UTC",
         {"seconds": 24.5, "min_isr": 2.0, "smallest_isr": 1.0}),
        # 3 -> 2 at 10 s, 2 -> 1 at 20 s, 3 -> 0 at 50 s; back to 3 at 40 s
        ("isr", "isr_flapping", "warning", "partition", "orders-0", at(10), at(50),
         "ISR of topic orders partition 0 shrank 3 times and expanded 1 times (flapping): broker 2 left 2 times; "
         "broker 3 left 2 times; broker 1 left 1 times",
         {"shrinks": 3.0, "expands": 1.0, "fenced_leaves": 0.0, "lagged_leaves": 0.0}),
    ], FINDINGS)
    assertDataFrameEqual(got, want)
    # audit shrank twice: flapping only from a threshold of 2
    assert {r.subject for r in isr.findings(states, flap_threshold=2).where("kind = 'isr_flapping'").collect()} == {
        "orders-0", "audit-0"}


def test_each_replica_that_left_or_joined_is_named_with_the_broker_event_that_explains_it(spark):
    """A fence written with the ISR change explains a leave, an unfence before a join explains the join,
    a leave with no broker event is the leader's shrink of a replica behind; a same-size swap is a
    shrink and an expand both; the flapping finding names each replica that left and why."""
    log = MetadataLog()
    log.topic(1, "orders", ORDERS).partition(1, ORDERS, 0, [1, 2, 3], [1, 2, 3], 1)
    log.broker(10, "BrokerRegistrationChangeRecord", 3, fenced=True)
    log.change(10, ORDERS, 0, isr=[1, 2]).same_batch()          # fenced: out in the fence's batch
    log.broker(14, "BrokerRegistrationChangeRecord", 3, fenced=False)
    log.change(16, ORDERS, 0, isr=[1, 2, 3])                    # back 2 s after its unfence
    log.change(20, ORDERS, 0, isr=[1, 2])                       # behind: no broker event
    log.change(25, ORDERS, 0, isr=[1, 3])                       # a swap: 2 out, 3 in, same size
    log.broker(30, "BrokerRegistrationChangeRecord", 3, in_controlled_shutdown=True)
    log.change(30, ORDERS, 0, isr=[1]).same_batch()             # out in its controlled shutdown's batch
    log.change(34, ORDERS, 0, isr=[1, 2])                       # 2 back: caught up
    log.change(34.2, ORDERS, 0, isr=[1])                        # 2 out 200 ms after a fence of 2...
    log.broker(34.2, "BrokerRegistrationChangeRecord", 1, fenced=True)   # ...of another broker: behind
    log.noop(40)
    states = isr.partition_states(states_frame(spark, log))
    got = isr.replica_moves(states, isr_changes(states_frame(spark, log)))
    rows = [(10, 3, "left", "fenced", 10), (16, 3, "joined", "unfenced", 14), (20, 3, "left", "fell_behind", None),
            (25, 2, "left", "fell_behind", None), (25, 3, "joined", "caught_up", None),
            (30, 3, "left", "controlled_shutdown", 30), (34, 2, "joined", "caught_up", None),
            (34.2, 2, "left", "fell_behind", None)]
    want = spark.createDataFrame(
        [(None, "orders", ORDERS, 0, at(t), r, m, c, None if ct is None else at(ct)) for t, r, m, c, ct in rows],
        "cluster_id string, topic string, topic_id string, partition int, time timestamp, replica int, move string, "
        "cause string, cause_time timestamp")
    assertDataFrameEqual(got, want)
    found = isr.findings(states, changes=isr_changes(states_frame(spark, log))).where("kind = 'isr_flapping'").collect()
    assert [(f.summary, f.figures) for f in found] == [(
        "ISR of topic orders partition 0 shrank 5 times and expanded 3 times (flapping): broker 3 left 3 times "
        "(fenced 1, controlled shutdown 1, fell behind 1); broker 2 left 2 times (fell behind 2)",
        {"shrinks": 5.0, "expands": 3.0, "fenced_leaves": 1.0, "lagged_leaves": 3.0})]
    summary = isr.move_summary(got).collect()
    assert [(r.replica, r.left, r.joined, r.fenced, r.controlled_shutdown, r.fell_behind) for r in summary] == [
        (3, 3, 2, 1, 1, 1), (2, 2, 1, 0, 0, 2)]


def test_notable_partitions_worst_first_quiet_ones_left_out(spark):
    log = incident_log()
    log.topic(61, "quiet", "UXVpZXRRdWlldFF1aWV0UQ").partition(61, "UXVpZXRRdWlldFF1aWV0UQ", 0, [1, 2], [1, 2], 1)
    log.noop(70)
    states = isr.partition_states(states_frame(spark, log))
    got = isr.notable_partitions(isr.partition_summary(states)).select(
        "topic", "offline_seconds", "under_min_isr_seconds", "under_replicated_seconds", "isr_shrinks")
    # orders: offline 50-70 s (20 s); under min ISR 20-30 and 50-70 (30 s); under-replicated 10-40, 50-70 (50 s)
    assert [tuple(r) for r in got.collect()] == [("orders", 20.0, 30.0, 50.0, 3), ("audit", 0.0, 24.5, 34.5, 2)]


def test_every_episode_a_final_stop_began_is_told_in_its_finding_whether_or_not_it_lasted(spark):
    """Brokers 3, 2 and 1 stop in turn at the end of the log. ``orders-0`` goes under min ISR as broker 3
    stops (broker 2 behind), back to min ISR as broker 2 catches up, under again as broker 2 stops, then
    offline: every episode began with the stop, the first ended within it. One info finding counts them,
    no critical finding is left of them, and an episode from before the stop stays."""
    log = MetadataLog()
    log.add(0, "FeatureLevelRecord", {"feature_name": "metadata.version", "feature_level": 7}, api_key=12)
    log.config(0, 4, "", "min.insync.replicas", "2")
    for b in (1, 2, 3):
        log.broker(0.5, "RegisterBrokerRecord", b, fenced=True).broker(0.6, "UnfenceBrokerRecord", b, fenced=False)
    log.topic(1, "orders", ORDERS).partition(1, ORDERS, 0, [1, 2, 3], [1, 2, 3], 1)
    log.topic(1, "audit", AUDIT).partition(1, AUDIT, 0, [2, 3], [2, 3], 2)
    log.change(5, AUDIT, 0, isr=[2])                                    # before the stop: its own episode
    log.broker(10, "BrokerRegistrationChangeRecord", 3, in_controlled_shutdown=True)
    log.change(10.1, ORDERS, 0, isr=[1]).change(10.3, ORDERS, 0, isr=[1, 2])
    log.broker(10.5, "BrokerRegistrationChangeRecord", 2, in_controlled_shutdown=True)
    log.change(10.6, ORDERS, 0, isr=[1]).change(10.6, AUDIT, 0, leader=-1)
    log.broker(11, "BrokerRegistrationChangeRecord", 1, in_controlled_shutdown=True)
    log.change(11.1, ORDERS, 0, leader=-1).noop(12)
    metadata = states_frame(spark, log)
    states = isr.partition_states(metadata)
    bare = isr.findings(states).select("kind", "subject", "start", "end").collect()
    def naive(seconds):
        return at(seconds).replace(tzinfo=None)

    assert ("under_min_isr", "orders-0", naive(10.1), naive(10.3)) in [tuple(r) for r in bare]  # ended in the stop
    found = isr.findings(states, stops=isr.cluster_stops(metadata)).orderBy("start").collect()
    assert [(f.kind, f.severity, f.subject, f.start) for f in found] == [
        ("under_min_isr", "critical", "audit-0", naive(5)), ("cluster_stopped", "info", "unknown", naive(10))]
    assert found[1].figures == {"brokers": 3.0, "offline_partitions": 2.0, "under_min_isr_partitions": 1.0}


def test_a_stop_before_metadata_version_is_the_partition_batch_ahead_of_the_fence(spark):
    """Kafka 3.0-3.2 record no inControlledShutdown: a stopping broker's partitions move in a batch of
    their own, then it is fenced; a broker whose session was lost has them changed in the fence's batch."""
    def log(*, shutdown: bool, versioned: bool = False) -> MetadataLog:
        log = MetadataLog()
        if versioned:
            log.add(0, "FeatureLevelRecord", {"feature_name": "metadata.version", "feature_level": 7}, api_key=12)
        log.broker(0.5, "RegisterBrokerRecord", 1, fenced=True).broker(0.6, "UnfenceBrokerRecord", 1, fenced=False)
        log.topic(1, "orders", ORDERS).partition(1, ORDERS, 0, [1], [1], 1)
        log.change(10, ORDERS, 0, leader=-1)
        log.broker(10 if not shutdown else 10.08, "FenceBrokerRecord", 1, fenced=True)
        return log if shutdown else log.same_batch()

    stops = isr.cluster_stops(states_frame(spark, log(shutdown=True)))
    schema = "cluster_id string, start timestamp, end timestamp, brokers array<int>"
    assertDataFrameEqual(stops, spark.createDataFrame([(None, at(10), at(10.08), [1])], schema))
    assert isr.cluster_stops(states_frame(spark, log(shutdown=False))).count() == 0
    # from metadata.version on, Kafka says inControlledShutdown itself: a bare fence is no stop
    assert isr.cluster_stops(states_frame(spark, log(shutdown=True, versioned=True))).count() == 0
