"""Parsers of Kafka tool text and JmxTool CSV, on text shaped exactly as Kafka 4.3 prints it."""

from __future__ import annotations

from workbench.formats.jmx import MetricSample, read_jmx_csv
from workbench.formats.problems import ProblemLog
from workbench.formats.tooltext import parse_quorum_replication, parse_topics_describe

DESCRIBE = (
    "Topic: orders\tTopicId: V3YQ8-8bQ0ykE8zbbKei0A\tPartitionCount: 2\tReplicationFactor: 3\t"
    "Configs: min.insync.replicas=2,segment.bytes=1048576\n"
    "\tTopic: orders\tPartition: 0\tLeader: 4\tReplicas: 5,6,4\tIsr: 4\tElr: 5\tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 6,4,5\tIsr: \tElr: \tLastKnownElr: 4,5\n"
    "this line is not describe output\n"
)


def test_topics_describe():
    got = parse_topics_describe(DESCRIBE, "t.txt")
    assert got.topics == [{"topic": "orders", "topic_id": "V3YQ8-8bQ0ykE8zbbKei0A", "partition_count": 2,
                           "replication_factor": 3,
                           "configs": {"min.insync.replicas": "2", "segment.bytes": "1048576"}}]
    assert got.partitions == [
        {"topic": "orders", "partition": 0, "leader": 4, "replicas": [5, 6, 4], "isr": [4], "elr": [5],
         "last_known_elr": []},
        {"topic": "orders", "partition": 1, "leader": -1, "replicas": [6, 4, 5], "isr": [], "elr": [],
         "last_known_elr": [4, 5]},
    ]
    assert [(p.position, p.kind) for p in got.problems] == [(4, "unparsed_line")]


def test_quorum_replication():
    text = ("NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n"
            "2     \tAAAAAAAAAAAAAAAAAAAAAA\t149         \t0  \t1795290643075     \t1795290643075        \tLeader  \t\n"
            "6     \t4k03mEJD2TrASQT3SzN7bw\t70          \t79 \t1795290609539     \t1795290609038        \tObserver\t\n")  # noqa: E501
    rows, problems = parse_quorum_replication(text)
    assert rows == [
        {"node_id": 2, "directory_id": "AAAAAAAAAAAAAAAAAAAAAA", "log_end_offset": 149, "lag": 0,
         "last_fetch_ms": 1795290643075, "last_caught_up_ms": 1795290643075, "status": "Leader"},
        {"node_id": 6, "directory_id": "4k03mEJD2TrASQT3SzN7bw", "log_end_offset": 70, "lag": 79,
         "last_fetch_ms": 1795290609539, "last_caught_up_ms": 1795290609038, "status": "Observer"},
    ]
    assert problems == []


def test_jmx_csv_long_format_and_bad_lines():
    text = ('"time","kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount:Value",'
            '"kafka.server:type=ReplicaManager,name=IsrShrinksPerSec:RateUnit"\n'
            "1795290596161,0,SECONDS\n"
            "yesterday,3,SECONDS\n"
            "1795290597161,2,SECONDS\n")
    log = ProblemLog("m.csv")
    got = list(read_jmx_csv(text, "m.csv", log))
    mbean = "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"
    assert got == [MetricSample(1795290596161, mbean, "Value", 0.0), MetricSample(1795290597161, mbean, "Value", 2.0)]
    assert [(p.position, p.kind) for p in log.problems] == [(3, "unparsed_line")]
