"""Parsers of Kafka tool text and JmxTool CSV, on text shaped exactly as Kafka 3.9 and 4.3 print it.

The real captures of every scenario bundle are compared with an independent reading in
``tests/spark/test_tool_output_kafka.py``; here: every layout's corner (empty cells, values wider
than their column, old formats) and damaged text.
"""

from __future__ import annotations

import pytest

from workbench.formats.jmx import MetricSample, exporter_name, read_jmx_csv, safe_metric_name
from workbench.formats.problems import ProblemLog
from workbench.formats.tooltext import (
    capture_time_from_name,
    parse_get_offsets,
    parse_group_members,
    parse_group_offsets,
    parse_group_states,
    parse_quorum_replication,
    parse_quorum_status,
    parse_topics_describe,
    recognise_view,
    tool_view,
    topics_describe_rows,
)

DESCRIBE = (
    "Topic: orders\tTopicId: V3YQ8-8bQ0ykE8zbbKei0A\tPartitionCount: 2\tReplicationFactor: 3\t"
    "Configs: min.insync.replicas=2,leader.replication.throttled.replicas=0:4,1:5\n"
    "\tTopic: orders\tPartition: 0\tLeader: 4\tReplicas: 5,6,4\tIsr: 4\tElr: 5\tLastKnownElr: \n"
    "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 6,4,5\tIsr: \tElr: \tLastKnownElr: 4,5\n"
    "this line is not describe output\n"
)


def test_topics_describe():
    log = ProblemLog("t.txt")
    got = parse_topics_describe(DESCRIBE, "t.txt", log)
    assert got.topics == [{"topic": "orders", "topic_id": "V3YQ8-8bQ0ykE8zbbKei0A", "partition_count": 2,
                           "replication_factor": 3,
                           "configs": {"min.insync.replicas": "2",
                                       "leader.replication.throttled.replicas": "0:4,1:5"}}]
    assert got.partitions == [
        {"topic": "orders", "partition": 0, "leader": 4, "replicas": [5, 6, 4], "isr": [4], "elr": [5],
         "last_known_elr": []},
        {"topic": "orders", "partition": 1, "leader": -1, "replicas": [6, 4, 5], "isr": [], "elr": [],
         "last_known_elr": [4, 5]},
    ]
    assert [(p.position, p.kind) for p in log.problems] == [(4, "unparsed_line")]


def test_topics_describe_old_format_and_filtered_output():
    old = ("Topic:orders\tPartitionCount:1\tReplicationFactor:2\tConfigs:\n"
           "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n")
    rows = topics_describe_rows(old)
    assert rows == [{"topic": "orders", "partition": 0, "leader": 1, "replicas": [1, 2], "isr": [1, 2], "elr": None,
                     "last_known_elr": None, "topic_id": None, "partition_count": 1, "replication_factor": 2,
                     "configs": {}}]
    filtered = topics_describe_rows("\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\n")
    assert filtered[0]["partition_count"] is None and filtered[0]["configs"] is None


def test_topics_describe_of_a_zookeeper_mode_cluster():
    """3.9's tool prints ``N/A`` for the ELR fields a ZooKeeper-mode cluster does not have."""
    line = "\tTopic: orders\tPartition: 2\tLeader: 3\tReplicas: 3,2,1\tIsr: 3,2,1\tElr: N/A\tLastKnownElr: N/A\n"
    log = ProblemLog("t.txt")
    rows = topics_describe_rows(line, "t.txt", log)
    assert [(r["leader"], r["isr"], r["elr"], r["last_known_elr"]) for r in rows] == [(3, [3, 2, 1], None, None)]
    assert log.problems == []


def test_topics_describe_cut_line():
    log = ProblemLog("t.txt")
    rows = topics_describe_rows("\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\n"
                                "\tTopic: orders\tPartition: 1\tLeader: 2\tRepl", "t.txt", log)
    assert [r["partition"] for r in rows] == [0]
    assert [(p.position, p.kind) for p in log.problems] == [(2, "unparsed_line")]


OFFSETS_39 = """
GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID
slow            lag-lz4         1          242             675             433             -               -               -
"""  # noqa: E501

OFFSETS_VERBOSE = """
GROUP           TOPIC           PARTITION  LEADER-EPOCH    CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID  HOST            CLIENT-ID
caught-up       lag-gzip        0          0               170             175             5               c-1          /127.0.0.1      my client
caught-up       lag-gzip        1          -               12345678901234567890 12345678901234567899 9               c-1          /127.0.0.1      c
"""  # noqa: E501


def test_group_offsets_layouts():
    row = parse_group_offsets(OFFSETS_39)[0]
    assert row == {"group": "slow", "topic": "lag-lz4", "partition": 1, "leader_epoch": None, "current_offset": 242,
                   "log_end_offset": 675, "lag": 433, "consumer_id": None, "host": None, "client_id": None}
    log = ProblemLog("v.txt")
    rows = parse_group_offsets(OFFSETS_VERBOSE, "v.txt", log)
    assert log.problems == []
    assert rows[0]["leader_epoch"] == 0 and rows[0]["client_id"] == "my client"  # the last column keeps its spaces
    # offsets wider than their 15-character column push the line right: read by whitespace
    assert (rows[1]["leader_epoch"], rows[1]["current_offset"], rows[1]["log_end_offset"], rows[1]["lag"]) == (
        None, 12345678901234567890, 12345678901234567899, 9)


MEMBERS_VERBOSE_4 = """
GROUP           CONSUMER-ID                                                  HOST            CLIENT-ID               #PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT                                                TARGET-EPOCH    TARGET-ASSIGNMENT
caught-up       peer-consumer-caught-up-2f517d87-3245-459e-848f-d4f3bd52dcc2 /127.0.0.1      peer-consumer-caught-up 10              7               lag-gzip:0,1;lag-lz4:0,1                                          7               lag-gzip:0,1
"""  # noqa: E501

MEMBERS_INSTANCE = """
GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT
g               c-1             instance-1        /10.0.0.1       c               2               t(0,1)
"""


def test_group_members_layouts():
    row = parse_group_members(MEMBERS_VERBOSE_4)[0]
    assert (row["partitions"], row["current_epoch"], row["current_assignment"], row["target_epoch"],
            row["target_assignment"], row["assignment"], row["group_instance_id"]) == (
        10, 7, "lag-gzip:0,1;lag-lz4:0,1", 7, "lag-gzip:0,1", None, None)
    row = parse_group_members(MEMBERS_INSTANCE)[0]
    assert (row["group_instance_id"], row["host"], row["partitions"], row["assignment"]) == (
        "instance-1", "/10.0.0.1", 2, "t(0,1)")


STATES_39 = """
GROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE           #MEMBERS
caught-up                 127.0.0.1:47779  (2)                           Empty           0
"""
STATES_VERBOSE = """
GROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                GROUP-EPOCH     TARGET-ASSIGNMENT-EPOCH   #MEMBERS
slow            a-very-long-host-name.example.com:9092  (2) uniform              Stable               12              12                        3
"""  # noqa: E501


def test_group_states_layouts():
    row = parse_group_states(STATES_39)[0]
    assert row == {"group": "caught-up", "coordinator_host": "127.0.0.1", "coordinator_port": 47779,
                   "coordinator_id": 2, "assignment_strategy": None, "state": "Empty", "members": 0,
                   "group_epoch": None, "target_assignment_epoch": None}
    log = ProblemLog("s.txt")
    row = parse_group_states(STATES_VERBOSE, "s.txt", log)[0]
    assert log.problems == []
    assert (row["coordinator_host"], row["assignment_strategy"], row["group_epoch"], row["members"]) == (
        "a-very-long-host-name.example.com", "uniform", 12, 3)


def test_groups_damage_and_messages():
    text = OFFSETS_39 + "slow            lag-lz4         0          19\n\nError: Consumer group 'x' does not exist.\n"
    log = ProblemLog("g.txt")
    rows = parse_group_offsets(text, "g.txt", log)
    assert [r["partition"] for r in rows] == [1]
    assert [(p.position, p.kind) for p in log.problems] == [(4, "unparsed_line"), (6, "tool_message")]
    log = ProblemLog("g.txt")
    assert parse_group_offsets("slow lag 0 1 2 1 - - -\n", "g.txt", log) == []
    assert [p.kind for p in log.problems] == ["unparsed_line"]


def test_quorum_status_both_eras_and_truncation():
    new = ("ClusterId:              oGg3awa-fPfecF4oEVWapg\nLeaderId:               1\nLeaderEpoch:            1\n"
           "HighWatermark:          47\nMaxFollowerLag:         13\nMaxFollowerLagTimeMs:   6744\n"
           'CurrentVoters:          [{"id": 1, "directoryId": null, "endpoints": ["CONTROLLER://127.0.0.1:55971"]}, '
           '{"id": 2, "directoryId": null, "endpoints": []}]\n'
           'CurrentObservers:       [{"id": 5, "directoryId": "eutxszsBnFARU4MBEes5xQ"}]\n')
    row = parse_quorum_status(new)[0]
    assert (row["leader_id"], row["high_watermark"], row["max_follower_lag_time_ms"], row["voters"],
            row["observers"]) == (1, 47, 6744, [1, 2], [5])
    old = new.split("CurrentVoters")[0] + "CurrentVoters:          [1,2,3]\nCurrentObservers:       [4]\n"
    assert parse_quorum_status(old)[0]["voters"] == [1, 2, 3]
    log = ProblemLog("q.txt")
    cut = parse_quorum_status(new[:new.index("MaxFollowerLag:") + 20], "q.txt", log)[0]
    assert cut["high_watermark"] == 47 and cut["voters"] is None
    assert {p.kind for p in log.problems} == {"unparsed_line", "missing_key"}
    assert parse_quorum_status("") == []


def test_quorum_replication_plain_human_readable_and_old():
    text = ("NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t\n"
            "2     \tAAAAAAAAAAAAAAAAAAAAAA\t149         \t0  \t1795290643075     \t1795290643075        \tLeader  \t\n"
            "6     \t4k03mEJD2TrASQT3SzN7bw\t70          \t79 \t1795290609539     \t1795290609038        \tObserver\t\n")  # noqa: E501
    rows = parse_quorum_replication(text)
    assert rows == [
        {"node_id": 2, "directory_id": "AAAAAAAAAAAAAAAAAAAAAA", "log_end_offset": 149, "lag": 0,
         "last_fetch_timestamp": 1795290643075, "last_caught_up_timestamp": 1795290643075,
         "last_fetch_ms_ago": None, "last_caught_up_ms_ago": None, "status": "Leader"},
        {"node_id": 6, "directory_id": "4k03mEJD2TrASQT3SzN7bw", "log_end_offset": 70, "lag": 79,
         "last_fetch_timestamp": 1795290609539, "last_caught_up_timestamp": 1795290609038,
         "last_fetch_ms_ago": None, "last_caught_up_ms_ago": None, "status": "Observer"},
    ]
    human = ("NodeId\tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus\n"
             "1\t10\t0\t5 ms ago\t7 ms ago\tLeader\n")
    row = parse_quorum_replication(human)[0]
    assert (row["directory_id"], row["last_fetch_timestamp"], row["last_fetch_ms_ago"],
            row["last_caught_up_ms_ago"]) == (
        None, None, 5, 7)
    log = ProblemLog("r.txt")
    assert parse_quorum_replication(text + "3\tAAAA\t1", "r.txt", log) == rows
    assert [(p.position, p.kind) for p in log.problems] == [(4, "unparsed_line")]


def test_get_offsets():
    log = ProblemLog("o.txt")
    rows = parse_get_offsets("orders:0:1532\nmy.topic-x:11:\ngarbage\norders:1:", "o.txt", log)
    assert rows == [{"topic": "orders", "partition": 0, "offset": 1532},
                    {"topic": "my.topic-x", "partition": 11, "offset": None},
                    {"topic": "orders", "partition": 1, "offset": None}]
    assert [(p.position, p.kind) for p in log.problems] == [(3, "unparsed_line")]


@pytest.mark.parametrize(("tool", "args", "view"), [
    ("kafka-topics", ["--describe", "--under-min-isr-partitions"], "topics_describe"),
    ("kafka-topics.sh", ["--create", "--topic", "t"], None),
    ("kafka-consumer-groups", ["--describe", "--all-groups"], "group_offsets"),
    ("kafka-consumer-groups", ["--describe", "--group", "g", "--offsets", "--verbose"], "group_offsets"),
    ("kafka-consumer-groups", ["--describe", "--group", "g", "--members", "--verbose"], "group_members"),
    ("kafka-consumer-groups", ["--describe", "--all-groups", "--state"], "group_states"),
    ("kafka-consumer-groups", ["--list"], None),
    ("kafka-metadata-quorum", ["--bootstrap-server", "b", "describe", "--status"], "quorum_status"),
    ("kafka-metadata-quorum", ["--bootstrap-server", "b", "describe", "--replication"], "quorum_replication"),
    ("kafka-get-offsets", ["--time", "-1"], "get_offsets"),
    ("kafka-producer-perf-test", ["--topic", "t"], None),
])
def test_tool_view(tool, args, view):
    assert tool_view(tool, args) == view


@pytest.mark.parametrize(("text", "view"), [
    (DESCRIBE, "topics_describe"), (OFFSETS_39, "group_offsets"), (MEMBERS_INSTANCE, "group_members"),
    (STATES_39, "group_states"), ("ClusterId: x\nLeaderId: 1\n", "quorum_status"),
    ("NodeId\tLogEndOffset\tLag\n", "quorum_replication"), ("t:0:5\n", "get_offsets"),
    ("Created topic orders.\n", None), ("", None),
    ("1000 records sent, 999.0 records/sec (0.10 MB/sec)\n", None),
])
def test_recognise_view(text, view):
    assert recognise_view(text) == view


def test_capture_time_from_name():
    assert capture_time_from_name("1795408283358-kafka-consumer-groups.txt") == 1795408283358
    assert capture_time_from_name("kafka-consumer-groups-1795408283358.txt") is None


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


@pytest.mark.parametrize(("mbean", "attribute", "name", "labels"), [
    ("kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount", "Value",
     "kafka_server_replicamanager_underminisrpartitioncount", {}),
    ("kafka.server:type=raft-metrics", "commit-latency-avg", "kafka_server_raft_metrics_commit_latency_avg", {}),
    ("kafka.server:type=broker-metadata-metrics", "last-applied-record-offset",
     "kafka_server_broker_metadata_metrics_last_applied_record_offset", {}),
    ("kafka.controller:type=KafkaController,name=ActiveControllerCount", "Value",
     "kafka_controller_kafkacontroller_activecontrollercount", {}),
    ("kafka.server:type=BrokerTopicMetrics,name=RemoteCopyLagBytes,topic=tiered", "Value",
     "kafka_server_brokertopicmetrics_remotecopylagbytes", {"topic": "tiered"}),
    ("kafka.log.remote:type=RemoteLogManager,name=RemoteLogManagerTasksAvgIdlePercent", "Value",
     "kafka_log_remote_remotelogmanager_remotelogmanagertasksavgidlepercent", {}),
    ("kafka.server:type=ReplicaManager,name=IsrShrinksPerSec", "Count", "kafka_server_replicamanager_isrshrinks_total",
     {}),
    ("kafka.server:type=ReplicaManager,name=IsrShrinksPerSec", "OneMinuteRate",
     "kafka_server_replicamanager_isrshrinkspersec_oneminuterate", {}),
    ("kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,version=13", "Count",
     "kafka_network_requestmetrics_requests_total", {"request": "Fetch", "version": "13"}),
    ("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "Count",
     "kafka_network_requestmetrics_totaltimems_count", {"request": "Produce"}),
    ("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "999thPercentile",
     "kafka_network_requestmetrics_totaltimems", {"request": "Produce", "quantile": "0.999"}),
    ("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "MeanRate",
     "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent", {}),
    ("kafka.connect.mirror:type=MirrorSourceConnector,target=backup,topic=source.orders,partition=2",
     "replication-latency-ms", "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms",
     {"target": "backup", "topic": "source.orders", "partition": "2"}),
])
def test_exporter_name(mbean, attribute, name, labels):
    assert exporter_name(mbean, attribute) == (name, labels)


def test_safe_metric_name_is_the_exporters():
    assert safe_metric_name("9lives__a--b.c") == "_9lives_a_b_c"
