"""Partition-state lines of Kafka's text logs, as each release prints them.

The messages are those of Kafka's own format strings, release by release (``kafka.cluster.Partition``,
the controller's and brokers' ``state.change.logger``, ``KafkaServer``/``BrokerServer``); the
events table is judged on real brokers' logs by ``tests/analysis/test_events_real_kafka.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from workbench.formats.brokerlog import parse_line, read_events
from workbench.formats.problems import ProblemLog

FIELDS = ("kind", "node_id", "topic", "partition", "leader", "isr", "isr_before", "replicas", "leader_epoch",
          "partition_epoch", "controller_epoch", "state_from", "state_to", "properties")

CASES = [
    # 0.10-0.11: "Partition [t,0] on broker 1: " log ident
    ("Partition [orders,0] on broker 1: Shrinking ISR for partition [orders,0] from 1,2,3 to 1,2",
     dict(kind="isr_shrink", node_id=1, topic="orders", partition=0, leader=1, isr=[1, 2], isr_before=[1, 2, 3])),
    ("Partition [orders,0] on broker 1: Expanding ISR for partition [orders,0] from 1,2 to 1,2,3",
     dict(kind="isr_expand", node_id=1, topic="orders", partition=0, leader=1, isr=[1, 2, 3], isr_before=[1, 2])),
    ("Controller 1 epoch 2 changed partition [orders,0] state from OfflinePartition to OnlinePartition with leader 2",
     dict(kind="partition_state", topic="orders", partition=0, leader=2, state_from="OfflinePartition",
          state_to="OnlinePartition")),
    ("Controller 1 incremented epoch to 2", dict(kind="controller", node_id=1, controller_epoch=2)),
    ("[Kafka Server 1], started", dict(kind="server", node_id=1, state_to="started")),
    ("[Kafka Server 1], shut down completed", dict(kind="server", node_id=1, state_to="stopped")),
    ("Created log for partition [orders,0] in /tmp/kafka-logs with properties {compression.type -> producer, "
     "min.insync.replicas -> 2, segment.bytes -> 1073741824, leader.replication.throttled.replicas -> }.",
     dict(kind="log_created", topic="orders", partition=0,
          properties={"compression.type": "producer", "min.insync.replicas": "2", "segment.bytes": "1073741824",
                      "leader.replication.throttled.replicas": ""})),
    # 2.x: "[Partition t-0 broker=1] " log ident, zkVersion in brackets
    ("[Partition my-topic-12 broker=1] Shrinking ISR from 1,2,3 to 1,2. Leader: (highWatermark: 5, endOffset: 9). "
     "Out of sync replicas: (brokerId: 3, endOffset: 5).",
     dict(kind="isr_shrink", node_id=1, topic="my-topic", partition=12, leader=1, isr=[1, 2], isr_before=[1, 2, 3])),
    ("[Partition my-topic-12 broker=1] ISR updated to [1,2] and zkVersion updated to [5]",
     dict(kind="isr_updated", node_id=1, topic="my-topic", partition=12, leader=1, isr=[1, 2], partition_epoch=5)),
    ("[Partition my-topic-12 broker=1] my-topic-12 starts at leader epoch 4 from offset 120 with high watermark 118 "
     "ISR [1,2] addingReplicas [] removingReplicas [].Previous leader epoch was 3.",
     dict(kind="leader_start", node_id=1, topic="my-topic", partition=12, leader=1, isr=[1, 2], leader_epoch=4)),
    ("[Controller id=1 epoch=3] Changed partition orders-0 from OnlinePartition to OnlinePartition with state "
     "LeaderAndIsr(leader=2, leaderEpoch=5, isr=List(2, 3), zkVersion=7)",
     dict(kind="partition_state", node_id=1, topic="orders", partition=0, leader=2, isr=[2, 3], leader_epoch=5,
          partition_epoch=7, controller_epoch=3, state_from="OnlinePartition", state_to="OnlinePartition")),
    ("[Controller id=1] 1 successfully elected as the controller. Epoch incremented to 7 and epoch zk version is "
     "now 7", dict(kind="controller", node_id=1, controller_epoch=7)),
    ("[KafkaServer id=2] shutting down", dict(kind="server", node_id=2, state_to="stopping")),
    # 2.7+: AlterIsr, "version updated to"
    ("[Partition orders-0 broker=0] ISR updated to 0,1 and version updated to [6]",
     dict(kind="isr_updated", node_id=0, topic="orders", partition=0, leader=0, isr=[0, 1], partition_epoch=6)),
    # 3.5+ ZooKeeper controller: broker epochs in the ISR
    ("[Controller id=1 epoch=1] Changed partition orders-1 from NewPartition to OnlinePartition with state "
     "LeaderAndIsr(leader=1, leaderEpoch=0, isrWithBrokerEpoch=List(BrokerState(brokerId=1, brokerEpoch=-1), "
     "BrokerState(brokerId=3, brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=0)",
     dict(kind="partition_state", node_id=1, topic="orders", partition=1, leader=1, isr=[1, 3], leader_epoch=0,
          partition_epoch=0, controller_epoch=1, state_from="NewPartition", state_to="OnlinePartition")),
    ("[Controller id=1 epoch=1] Changed partition orders-2 state from NonExistentPartition to NewPartition with "
     "assigned replicas 3,1,2", dict(kind="partition_state", node_id=1, topic="orders", partition=2, replicas=[3, 1, 2],
                                     controller_epoch=1, state_from="NonExistentPartition", state_to="NewPartition")),
    ("[Controller id=1 epoch=1] Partition orders-0 state changed to (Leader:1,ISR:1,2,LeaderRecoveryState:RECOVERED,"
     "LeaderEpoch:0,ZkVersion:2,ControllerEpoch:1) after removing replica 3 from the ISR as part of transition to "
     "OfflineReplica", dict(kind="replica_offline", node_id=1, topic="orders", partition=0, leader=1, isr=[1, 2],
                            leader_epoch=0, partition_epoch=2, controller_epoch=1)),
    ("Created log for partition payments-0 in /var/lib/kafka/payments-0 with properties {min.insync.replicas=3}",
     dict(kind="log_created", topic="payments", partition=0, properties={"min.insync.replicas": "3"})),
    # 4.x KRaft brokers
    ("[Partition payments-1 broker=4] ISR updated to 4,6 (under-min-isr) and version updated to 5",
     dict(kind="isr_updated", node_id=4, topic="payments", partition=1, leader=4, isr=[4, 6], partition_epoch=5)),
    ("[Broker id=4] Leader orders-2 with topic id Some(nPiLVUknRRWUsblAnNcnpw) starts at leader epoch 0 from offset 0 "
     "with partition epoch 0, high watermark 0, ISR [4,5,6], adding replicas [] and removing replicas [] . Previous "
     "leader None and previous leader epoch was -1.",
     dict(kind="leader_start", node_id=4, topic="orders", partition=2, leader=4, isr=[4, 5, 6], leader_epoch=0,
          partition_epoch=0)),
    ("[Broker id=5] Follower payments-0 starts at leader epoch 4 from offset 295 with partition epoch 9 and high "
     "watermark 295. Current leader is -1. Previous leader Some(4) and previous leader epoch was 3.",
     dict(kind="follower_start", node_id=5, topic="payments", partition=0, leader=-1, leader_epoch=4,
          partition_epoch=9)),
    ("[Broker id=4] Skipped the become-leader state change for payments-0 with topic id Some(MUarIbJ8SiWrLDgWT0ejTw), "
     "partition registration PartitionRegistration(replicas=[5, 4, 6], directories=[a, b, c], isr=[4, 6], "
     "removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], leader=4, leaderRecoveryState=RECOVERED, "
     "leaderEpoch=1, partitionEpoch=5) and isNew=false since it is already the leader with leader epoch 1.",
     dict(kind="leader_kept", node_id=4, topic="payments", partition=0, leader=4, isr=[4, 6], replicas=[5, 4, 6],
          leader_epoch=1,
          partition_epoch=5)),
    ("[BrokerServer id=4] Transition from STARTING to STARTED", dict(kind="server", node_id=4, state_to="started")),
]


@pytest.mark.parametrize(("message", "want"), CASES, ids=[c[1]["kind"] + f"-{i}" for i, c in enumerate(CASES)])
def test_each_release_line_gives_its_event(message, want):
    event = parse_line(message)
    assert event is not None
    assert {k: event.get(k) for k in FIELDS} == {k: want.get(k) for k in FIELDS}


#: A log's load (its end then) and truncation (where it ends after), as each release prints them
#: (``kafka.log.Log``/``LogManager``, ``UnifiedLog``); the real lines of 2.8.2 to 4.3.1 are judged in
#: ``tests/analysis/test_unclean_real_kafka.py`` and ``tests/analysis/test_events_real_kafka.py``.
LOG_CASES = [
    ("Completed load of log orders-0 with 1 log segments and log end offset 800 in 12 ms",         # 0.10
     ("log_loaded", "orders", 0, 800)),
    ("Completed load of log orders-0 with 2 log segments, log start offset 0 and log end offset 800 in 9 ms",  # 1.0
     ("log_loaded", "orders", 0, 800)),
    ("[Log partition=my-topic-12, dir=/tmp/kafka-logs] Completed load of log with 1 segments, log start offset 0 "
     "and log end offset 800 in 157 ms", ("log_loaded", "my-topic", 12, 800)),                        # 2.0-2.7
    ("Completed load of Log(dir=/d/orders-2, topic=orders, partition=2, highWatermark=0, lastStableOffset=0, "
     "logStartOffset=0, logEndOffset=522) with 1 segments in 263ms (1/3 loaded in /d)",             # 2.8-3.5
     ("log_loaded", "orders", 2, 522)),
    ("Completed load of Log(dir=/d/events-0, topicId=oNrjBQP-STiVhY4Obi9kaQ, topic=events, partition=0, "
     "highWatermark=0, lastStableOffset=0, logStartOffset=0, logEndOffset=120) with 1 segments, "
     "local-log-start-offset 0 and log-end-offset 120 in 13ms (1/2 completed in /d)",               # 3.6+
     ("log_loaded", "events", 0, 120)),
    ("Truncating log orders-0 to offset 500.", ("truncated", "orders", 0, 500)),                      # 0.10-0.11
    ("[Log partition=orders-0, dir=/d] Truncating to offset 500", ("truncated", "orders", 0, 500)),    # 1.0-2.8
    ("[UnifiedLog partition=a-b-3, dir=/d] Truncating to offset 0", ("truncated", "a-b", 3, 0)),       # 3.0+
]


@pytest.mark.parametrize(("message", "want"), LOG_CASES, ids=[f"{c[1][0]}-{i}" for i, c in enumerate(LOG_CASES)])
def test_a_logs_load_and_truncation_give_its_end(message, want):
    event = parse_line(message)
    assert event is not None
    assert (event["kind"], event["topic"], event["partition"], event["offset"]) == want


@pytest.mark.parametrize("message", [
    "[BrokerServer id=4] shutting down",              # KRaft: the transition line says it
    "[Partition orders-0 broker=1] Log loaded for partition orders-0 with initial high watermark 0",
    "[ReplicaFetcher replicaId=5, leaderId=4, fetcherId=0] Truncating partition orders-0 with TruncationState",
    "[UnifiedLog partition=orders-0, dir=/d] Truncating to 500 has no effect as the largest offset in the log is 499",
    "[Log partition=orders-0, dir=/d] Loading producer state till offset 800 with message format version 2",
    "Shrinking the producer pool",                   # not a partition's ISR
])
def test_other_lines_are_no_events(message):
    assert parse_line(message) is None


def test_read_events_keeps_line_numbers_times_and_skips_continuations():
    text = [
        "[2024-05-01 13:00:00,123] INFO [Partition t-0 broker=1] ISR updated to 1 and version updated to 3 "
        "(kafka.cluster.Partition)\n",
        "java.io.IOException: [Partition t-0 broker=1] ISR updated to 9 and version updated to 9\n",
        "\tat kafka.cluster.Partition.run(Partition.scala:1)\n",
        "[2024-05-01 13:00:01,5] WARN [KafkaServer id=1] shutting down (kafka.server.KafkaServer)\n",
    ]
    berlin = timezone(timedelta(hours=2))
    events = list(read_events(text, zone=berlin))
    assert [(e["line_no"], e["kind"], e["level"], e["logger"], e["time"]) for e in events] == [
        (1, "isr_updated", "INFO", "kafka.cluster.Partition", datetime(2024, 5, 1, 11, 0, 0, 123000, tzinfo=UTC)),
        (4, "server", "WARN", "kafka.server.KafkaServer", datetime(2024, 5, 1, 11, 0, 1, 500000, tzinfo=UTC)),
    ]


def test_a_record_whose_time_is_no_date_is_reported():
    log = ProblemLog("server.log")
    text = ["[2024-13-45 13:00:00,123] INFO [Partition t-0 broker=1] ISR updated to 1 and version updated to 3\n"]
    assert list(read_events(text, "server.log", log)) == []
    assert [(p.kind, "line 1" in p.detail) for p in log.problems] == [("bad_value", True)]
