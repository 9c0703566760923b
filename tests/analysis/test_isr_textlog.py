"""A ZooKeeper-era partition history from text-log events, as the metadata rows the ISR replay reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pyspark.testing import assertDataFrameEqual

from workbench.analysis import isr
from workbench.spark.events import EVENTS_SCHEMA

pytestmark = pytest.mark.spark

T0 = datetime(2024, 5, 1, 13, 0, tzinfo=UTC)
CLUSTER = "zk-cluster"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def event(seconds, kind, node, *, topic="orders", partition=0, leader=None, isr=None, replicas=None, epoch=None,
          properties=None, cluster=CLUSTER):
    columns = [c.split()[0] for c in EVENTS_SCHEMA.split(", ")]
    row = dict.fromkeys(columns)
    row.update(path=f"nodes/{node}/log4j/x.log", line_no=int(seconds * 10), time=at(seconds), level="INFO",
               node_id=node, cluster_id=cluster, kind=kind, topic=topic, partition=partition, leader=leader,
               isr=isr, replicas=replicas, partition_epoch=epoch, properties=properties, line=kind)
    return tuple(row[c] for c in columns)


EVENTS = [
    event(0.0, "log_created", 2, properties={"min.insync.replicas": "2"}),
    event(0.1, "partition_state", 1, replicas=[2, 1, 3]),                       # NewPartition, assigned replicas
    event(0.2, "partition_state", 1, leader=2, isr=[2, 1, 3], epoch=0),         # the controller's first state
    event(0.3, "leader_start", 2, leader=2, isr=[2, 1, 3], epoch=0),            # the same version, from the leader
    event(5.0, "isr_updated", 2, leader=2, isr=[2, 1], epoch=1),                # the leader shrinks the ISR
    event(9.0, "replica_offline", 1, leader=2, isr=[2], epoch=3),               # version 2 logged by no one
    event(8.5, "isr_updated", 2, leader=2, isr=[2, 1, 3], epoch=4),             # a skewed clock: never earlier
    event(12.0, "server", 2, topic=None, partition=None),                      # the last line: the log's end
    event(1.0, "isr_updated", 7, leader=7, isr=[7], epoch=0, cluster="kraft"),  # another cluster: not asked for
]


def test_one_state_per_version_in_version_order(spark):
    events = spark.createDataFrame(EVENTS, EVENTS_SCHEMA)
    rows = isr.text_log_records(events, [CLUSTER]).select(
        "cluster_id", "offset", "timestamp", "record_type", "topic_id", "topic", "partition", "leader", "isr",
        "replicas", "partition_epoch", "config_resource_name", "config_value")
    want = spark.createDataFrame([
        (CLUSTER, 0, at(0.2), "TopicRecord", "orders", "orders", None, None, None, None, None, None, None),
        (CLUSTER, 1, at(0.2), "ConfigRecord", None, None, None, None, None, None, None, "orders", "2"),
        (CLUSTER, 2, at(0.2), "PartitionRecord", "orders", "orders", 0, 2, [2, 1, 3], [2, 1, 3], 0, None, None),
        (CLUSTER, 3, at(5.0), "PartitionChangeRecord", "orders", "orders", 0, 2, [2, 1], [2, 1, 3], 1, None, None),
        (CLUSTER, 4, at(9.0), "PartitionChangeRecord", "orders", "orders", 0, 2, [2], [2, 1, 3], 3, None, None),
        (CLUSTER, 5, at(9.0), "PartitionChangeRecord", "orders", "orders", 0, 2, [2, 1, 3], [2, 1, 3], 4, None,
         None),
        (CLUSTER, 6, at(12.0), "NoOpRecord", None, None, None, None, None, None, None, None, None),
    ], rows.schema)
    assertDataFrameEqual(rows, want)


def test_the_replay_reads_them_as_a_kraft_log(spark):
    events = spark.createDataFrame(EVENTS, EVENTS_SCHEMA)
    metadata = isr.text_log_records(events, [CLUSTER])
    states = isr.partition_states(metadata, static_min_isr=1).select("start", "end", "isr", "min_isr", "state")
    want = spark.createDataFrame([
        (at(0.2), at(5.0), [2, 1, 3], 2, "healthy"),
        (at(5.0), at(9.0), [2, 1], 2, "at_min_isr"),      # the topic's min.insync.replicas from its log's creation
        (at(9.0), at(9.0), [2], 2, "under_min_isr"),
        (at(9.0), at(12.0), [2, 1, 3], 2, "healthy"),
    ], states.schema)
    assertDataFrameEqual(states, want)


def server(seconds, node, state):
    columns = [c.split()[0] for c in EVENTS_SCHEMA.split(", ")]
    row = dict(zip(columns, event(seconds, "server", node, topic=None, partition=None), strict=True))
    row["state_to"] = state
    return tuple(row[c] for c in columns)


def test_a_cluster_whose_brokers_all_shut_down_at_the_end_was_stopped(spark):
    life = [server(0.0, 1, "starting"), server(0.5, 1, "started"), server(0.1, 2, "starting"),
            server(0.6, 2, "started"), server(10.0, 1, "stopping"), server(10.4, 1, "stopped"),
            server(11.0, 2, "stopping"), server(11.5, 2, "stopped")]
    metadata = isr.text_log_records(spark.createDataFrame(EVENTS + life, EVENTS_SCHEMA), [CLUSTER])
    want = spark.createDataFrame([(CLUSTER, at(10.0), at(12.0), [1, 2])],
                                 "cluster_id string, start timestamp, end timestamp, brokers array<int>")
    assertDataFrameEqual(isr.cluster_stops(metadata), want)
    # one broker killed (no lines) and one stopped: the cluster did not stop
    alive = isr.text_log_records(spark.createDataFrame(EVENTS + life[:6], EVENTS_SCHEMA), [CLUSTER])
    assert isr.cluster_stops(alive).count() == 0
