"""Prometheus text exposition and HTTP API JSON, and the exporter rules the scenarios attach.

Real scrapes of the JMX exporter javaagent are compared with JmxTool in
``tests/spark/test_metrics_prometheus_kafka.py``.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from peer.prometheus import MAX_LABELS, RULES, agent_config
from workbench.formats.jmx import exporter_name, mbean_properties, safe_metric_name
from workbench.formats.problems import ProblemLog
from workbench.formats.prometheus import (
    PromSample,
    looks_like_prometheus_json,
    looks_like_prometheus_text,
    read_prometheus_json,
    read_prometheus_text,
)

TEXT = """# HELP kafka_server_replicamanager_underminisrpartitioncount Attribute exposed for management
# TYPE kafka_server_replicamanager_underminisrpartitioncount gauge
kafka_server_replicamanager_underminisrpartitioncount 2.0
# TYPE kafka_server_brokertopicmetrics_bytesin_total counter
kafka_server_brokertopicmetrics_bytesin_total{topic="orders",} 1.5E7
kafka_server_brokertopicmetrics_bytesin_total{topic="pay\\"ments"} 7 1700000000123
kafka_network_requestmetrics_totaltimems{request="Fetch",quantile="0.99",} NaN
"""


def test_text_samples_timestamps_and_default_time():
    got = list(read_prometheus_text(TEXT, "a.prom", default_ms=1700000009000))
    assert got[:3] == [
        PromSample("kafka_server_replicamanager_underminisrpartitioncount", {}, 1700000009000, 2.0),
        PromSample("kafka_server_brokertopicmetrics_bytesin_total", {"topic": "orders"}, 1700000009000, 1.5e7),
        PromSample("kafka_server_brokertopicmetrics_bytesin_total", {"topic": 'pay"ments'}, 1700000000123, 7.0),
    ]
    assert got[3].labels == {"request": "Fetch", "quantile": "0.99"} and math.isnan(got[3].value)
    assert [s.timestamp_ms for s in read_prometheus_text(TEXT)][:2] == [None, None]


def test_text_damage_keeps_every_readable_line():
    lines = TEXT.splitlines(keepends=True)
    damaged = "".join(lines[:3]) + 'kafka_server_x{topic="unterminated 1\n' + "\x00\x01garbage\n" + "".join(lines[3:])
    log = ProblemLog("d.prom")
    got = list(read_prometheus_text(damaged, "d.prom", log))
    assert [(s.name, s.labels, s.timestamp_ms) for s in got] == [
        (s.name, s.labels, s.timestamp_ms) for s in read_prometheus_text(TEXT)]
    assert [(p.position, p.kind) for p in log.problems] == [(4, "unparsed_line"), (5, "unparsed_line")]


def test_text_cut_without_newline():
    cut = TEXT[:TEXT.index("1.5E7") + 3]  # "...} 1.5" : the value is cut
    log = ProblemLog("c.prom")
    got = list(read_prometheus_text(cut, "c.prom", log))
    assert [s.name for s in got] == ["kafka_server_replicamanager_underminisrpartitioncount"]
    assert [(p.position, p.kind) for p in log.problems] == [(5, "truncated")]


def test_openmetrics_text():
    text = ("# TYPE up gauge\nup{job=\"kafka\"} 1 1700000000.250\n"
            "# TYPE req counter\nreq_total 3\n# EOF\n")
    got = list(read_prometheus_text(text, default_ms=5))
    assert [(s.name, s.labels, s.timestamp_ms, s.value) for s in got] == [
        ("up", {"job": "kafka"}, 1700000000250, 1.0), ("req_total", {}, 5, 3.0)]


MATRIX = {"status": "success", "data": {"resultType": "matrix", "result": [
    {"metric": {"__name__": "kafka_server_replicamanager_underminisrpartitioncount", "instance": "b4:7071",
                "job": "kafka"}, "values": [[1700000000, "0"], [1700000015.5, "2"]]},
    {"metric": {"__name__": "kafka_server_replicamanager_underminisrpartitioncount", "instance": "b5:7071",
                "job": "kafka"}, "values": [[1700000000, "1"], [1700000015.5, "+Inf"]]},
]}}


def test_json_matrix_vector_scalar_error():
    got = list(read_prometheus_json(json.dumps(MATRIX)))
    assert [(s.labels["instance"], s.timestamp_ms, s.value) for s in got] == [
        ("b4:7071", 1700000000000, 0.0), ("b4:7071", 1700000015500, 2.0),
        ("b5:7071", 1700000000000, 1.0), ("b5:7071", 1700000015500, math.inf)]
    assert {s.name for s in got} == {"kafka_server_replicamanager_underminisrpartitioncount"}
    assert all("__name__" not in s.labels for s in got)
    vector = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "up"}, "value": [1700000000.001, "1"]}, {"metric": {}, "value": [1700000000, "3"]}]}}
    assert [(s.name, s.timestamp_ms, s.value) for s in read_prometheus_json(json.dumps(vector))] == [
        ("up", 1700000000001, 1.0), ("", 1700000000000, 3.0)]
    scalar = {"status": "success", "data": {"resultType": "scalar", "result": [1700000000, "4"]}}
    assert [s.value for s in read_prometheus_json(json.dumps(scalar))] == [4.0]
    log = ProblemLog("e.json")
    assert list(read_prometheus_json('{"status":"error","errorType":"bad_data","error":"parse error"}',
                                     "e.json", log)) == []
    assert [p.kind for p in log.problems] == ["tool_message"]


def test_json_cut_keeps_complete_series_and_bad_points():
    text = json.dumps(MATRIX)
    cut = text[:text.index('"b5:7071"') + 20]
    log = ProblemLog("cut.json")
    got = list(read_prometheus_json(cut, "cut.json", log))
    assert [(s.labels["instance"], s.value) for s in got] == [("b4:7071", 0.0), ("b4:7071", 2.0)]
    assert [p.kind for p in log.problems] == ["truncated"]
    bad = json.loads(text)
    bad["data"]["result"][0]["values"][1] = [1700000015.5, "two"]
    log = ProblemLog("bad.json")
    got = list(read_prometheus_json(json.dumps(bad), "bad.json", log))
    assert len(got) == 3 and [p.kind for p in log.problems] == ["decode_error"]


def test_format_sniffing():
    assert looks_like_prometheus_text(TEXT) and looks_like_prometheus_text("up 1\n")
    assert not looks_like_prometheus_text('"time","a"\n1,2\n') and not looks_like_prometheus_text("hello world\n")
    assert looks_like_prometheus_json(json.dumps(MATRIX)) and not looks_like_prometheus_json("[1, 2]")


# -- the exporter rules the scenarios attach give the names exporter_name computes ----------------

def _apply_rules(mbean: str, attribute: str) -> tuple[str, dict[str, str]] | None:
    """What the JMX exporter makes of one attribute with :data:`peer.prometheus.RULES` (Java and
    Python regular expressions agree on these patterns; ``$n`` are group references)."""
    domain, props = mbean_properties(mbean)
    subject = f"{domain}<{', '.join(f'{k}={v}' for k, v in props)}><>{attribute}"
    config = agent_config([])
    for pattern, *_ in RULES:
        m = re.fullmatch(pattern, subject)
        if m is None:
            continue
        block = config[config.index(f"- pattern: '{pattern}'"):].split("\n- pattern:")[0]
        name = re.search(r"^  name: (.+)$", block, re.M).group(1)  # type: ignore[union-attr]
        labels = dict(re.findall(r'^    "([^"]+)": "([^"]*)"$', block, re.M))

        def sub(text: str, m: re.Match = m) -> str:
            return re.sub(r"\$(\d+)", lambda g: m.group(int(g.group(1))), text)

        return safe_metric_name(sub(name)), {sub(k): sub(v) for k, v in labels.items()}
    return None


@pytest.mark.parametrize(("mbean", "attribute"), [
    ("kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount", "Value"),
    ("kafka.server:type=ReplicaManager,name=IsrShrinksPerSec", "Count"),
    ("kafka.server:type=ReplicaManager,name=IsrShrinksPerSec", "FiveMinuteRate"),
    ("kafka.server:type=raft-metrics", "commit-latency-avg"),
    ("kafka.server:type=raft-metrics", "append-records-total"),
    ("kafka.server:type=broker-metadata-metrics", "last-applied-record-offset"),
    ("kafka.controller:type=KafkaController,name=LastAppliedRecordLagMs", "Value"),
    ("kafka.server:type=BrokerTopicMetrics,name=RemoteCopyLagBytes,topic=tiered", "Value"),
    ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=tiered", "Count"),
    ("kafka.log.remote:type=RemoteLogManager,name=RemoteLogManagerTasksAvgIdlePercent", "Value"),
    ("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile"),
    ("kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,version=13", "Count"),
    ("kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent", "MeanRate"),
    ("kafka.connect.mirror:type=MirrorSourceConnector,target=backup,topic=source.orders,partition=2",
     "replication-latency-ms"),
    ("kafka.connect.mirror:type=MirrorCheckpointConnector,source=a,target=b,group=g,topic=t,partition=0",
     "checkpoint-latency-ms"),
    ("kafka.test:type=T,a=1,b=2,c=3,d=4,e=5,f=6", "x"),
])
def test_agent_rules_and_exporter_name_agree(mbean, attribute):
    extra = len(mbean_properties(mbean)[1]) - (2 if ",name=" in mbean else 1)
    if extra > MAX_LABELS:
        assert _apply_rules(mbean, attribute) is None  # the rules cover MAX_LABELS further key properties
        return
    assert _apply_rules(mbean, attribute) == exporter_name(mbean, attribute)
