"""ISR shrink and expand, under min ISR (KIP-164).

Cluster: 3 dedicated controllers (1-3) + 3 brokers (4-6). Measured on the 2-core CI machine,
six JVMs of 256 MiB heap format in ~6 s and start in ~10 s, so the full topology is kept
(a single controller would hide the quorum).

Timeline (about 70 s of Kafka time after start-up):

1. ``min.insync.replicas=2`` as static default and as dynamic cluster default; topics
   ``orders`` (3 partitions, RF 3) and ``payments`` (2 partitions, RF 3, topic override
   ``min.insync.replicas=3``) and ``audit`` (1 partition, its one replica on broker 6, topic
   override ``min.insync.replicas=1``); 2000 + 600 + 50 records produced with ``acks=all``.
2. broker 6 hard-stopped (SIGKILL) -> its replicas leave the ISR (``replica.lag.time.max.ms``
   3000, broker session timeout 6000); ``payments`` is under min ISR (polled, then captured) and
   ``audit`` offline.
3. more records to ``orders``; broker 5 hard-stopped -> ``orders`` under min ISR too.
4. brokers 5 and 6 restarted -> ISR expands back to 3.
5. Kafka's own live replica check, ``kafka-replica-verification`` (``ReplicaVerificationTool``
   of :data:`VERIFIER_RELEASE`; gone from 4.0), runs for :data:`VERIFY_S` s over ``orders`` and
   ``payments`` while 1000 more records go to ``orders``; its output is kept as
   ``oracle/replica-verification.txt`` (a report line per second; it exits 1 on a mismatch).

``kafka-topics --describe`` (all, ``--under-replicated-partitions``,
``--under-min-isr-partitions``) and ``kafka-metadata-quorum describe`` are captured at each
step; every broker's ReplicaManager gauges are sampled over JMX each second (and, once the topics
exist, its per-partition gauges), every controller's KafkaController gauges too, and the same
MBeans are scraped as Prometheus text every 5 s from the JMX exporter javaagent each node runs.
A real Prometheus server (:mod:`peer.prometheus_server`) scrapes the same exporters every second for
the whole run; its ``query_range`` answer for every node is kept as
``metrics/prometheus-query_range.json``, with ``metrics/instances.json`` naming each target's node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from peer.errors import ScenarioError
from peer.scenario import ScenarioContext

if TYPE_CHECKING:
    from peer.cluster import Cluster

NAME = "isr"
#: Peer files beside the shared ones that shape this bundle (the server's export).
SHAPED_BY = ("prometheus_server.py",)
#: The release whose ``ReplicaVerificationTool`` checks the replicas live (3.9.2, the last that has it).
VERIFIER_RELEASE = "3.9.2"
VERIFY_S = 8

ISR_MBEANS = [
    "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount",
    "kafka.server:type=ReplicaManager,name=AtMinIsrPartitionCount",
    "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions",
    "kafka.server:type=ReplicaManager,name=PartitionCount",
    "kafka.server:type=ReplicaManager,name=LeaderCount",
    "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec",
    "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec",
]

#: Kafka's per-partition gauges (``kafka.cluster:type=Partition``), one MBean per partition a broker hosts.
PARTITION_MBEANS = [f"kafka.cluster:type=Partition,name={name},*" for name in
                    ("UnderMinIsr", "AtMinIsr", "UnderReplicated", "InSyncReplicasCount", "ReplicasCount")]

#: The controllers' gauges of the cluster's partitions (KRaft: every controller computes them from its image).
CONTROLLER_MBEANS = [f"kafka.controller:type=KafkaController,name={name}" for name in
                     ("OfflinePartitionsCount", "GlobalPartitionCount", "ActiveControllerCount")]

SETTINGS = {
    "min.insync.replicas": "2",
    "replica.lag.time.max.ms": "3000",
}


def describe(ctx: ScenarioContext, bootstrap: str, label: str) -> None:
    """Capture the three kafka-topics views used by the ISR analysis."""
    ctx.event("capture", what=label)
    base = ["--bootstrap-server", bootstrap, "--describe", "--exclude-internal"]
    ctx.tool("topics", base)
    ctx.tool("topics", [*base, "--under-replicated-partitions"])
    ctx.tool("topics", [*base, "--under-min-isr-partitions"])


def wait_listed(ctx: ScenarioContext, bootstrap: str, flag: str, needle: str) -> float:
    """Poll ``kafka-topics --describe <flag>`` (not captured) until ``needle`` shows up.

    Returns the seconds waited; a busy machine may need longer than the nominal timeouts.
    """
    args = ["--bootstrap-server", bootstrap, "--describe", "--exclude-internal", flag]

    def listed() -> bool:
        return needle in ctx.kafka.run_tool("topics", args, check=False).stdout

    return round(ctx.wait_until(listed, timeout=45.0, interval=1.0, what=f"{needle} {flag}"), 1)


def produce(ctx: ScenarioContext, bootstrap: str, topic: str, records: int, rate: int) -> None:
    """Produce ``records`` records of 100 bytes at ``rate`` records/s with acks=all."""
    ctx.event("produce_start", topic=topic, records=records, rate=rate, acks="all")
    ctx.tool(
        "producer-perf",
        [
            "--topic", topic, "--num-records", str(records), "--record-size", "100",
            "--throughput", str(rate), "--producer-props", f"bootstrap.servers={bootstrap}",
            "acks=all", "linger.ms=5", "client.id=isr-producer",
        ],
        timeout=120.0,
    )
    ctx.event("produce_end", topic=topic, records=records)


def run(ctx: ScenarioContext) -> None:
    """Run the ISR scenario (see the module docstring)."""
    cluster = ctx.cluster("isr", controllers=3, brokers=3, settings=SETTINGS,
                          prometheus=ISR_MBEANS + PARTITION_MBEANS + CONTROLLER_MBEANS)
    start_prometheus_server(ctx, cluster)
    cluster.format()
    ctx.event("cluster_format", cluster="isr", controllers=3, brokers=3, settings=SETTINGS)
    cluster.start()
    ctx.event("cluster_started", cluster="isr")
    bs = cluster.bootstrap
    for broker in cluster.brokers:
        ctx.sample(broker.id, "isr", broker.jmx_url, ISR_MBEANS)
    for controller in cluster.controllers:
        ctx.sample(controller.id, "controller", controller.jmx_url, CONTROLLER_MBEANS)

    ctx.tool("configs", ["--bootstrap-server", bs, "--alter", "--entity-type", "brokers",
                         "--entity-default", "--add-config", "min.insync.replicas=2"])
    ctx.event("config_set", scope="cluster_default", name="min.insync.replicas", value="2")
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", "orders",
                        "--partitions", "3", "--replication-factor", "3"])
    ctx.event("topic_created", topic="orders", partitions=3, replication_factor=3)
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", "payments",
                        "--partitions", "2", "--replication-factor", "3",
                        "--config", "min.insync.replicas=3"])
    ctx.event("topic_created", topic="payments", partitions=2, replication_factor=3,
              config={"min.insync.replicas": "3"})
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", "audit", "--replica-assignment", "6",
                        "--config", "min.insync.replicas=1"])
    ctx.event("topic_created", topic="audit", partitions=1, replication_factor=1, replicas=[6],
              config={"min.insync.replicas": "1"})
    for broker in cluster.brokers:  # every partition's MBeans are registered now
        ctx.sample(broker.id, "partitions", broker.jmx_url, PARTITION_MBEANS, scrape=False,
                   required=["type=Partition"])
    produce(ctx, bs, "orders", 2000, 1000)
    produce(ctx, bs, "payments", 600, 600)
    produce(ctx, bs, "audit", 50, 50)
    describe(ctx, bs, "baseline")
    ctx.tool("metadata-quorum", ["--bootstrap-server", bs, "describe", "--status"])

    first, second = cluster.node(6), cluster.node(5)
    cluster.kill(first)
    ctx.event("broker_hard_stop", node=first.id, signal="SIGKILL")
    ctx.sleep(4)
    shown = wait_listed(ctx, bs, "--under-min-isr-partitions", "Topic: payments")
    ctx.event("observed", what="payments under min ISR", waited_s=shown)
    ctx.sleep(2)
    describe(ctx, bs, f"after broker {first.id} stopped")

    produce(ctx, bs, "orders", 500, 500)
    cluster.kill(second)
    ctx.event("broker_hard_stop", node=second.id, signal="SIGKILL")
    ctx.sleep(4)
    shown = wait_listed(ctx, bs, "--under-min-isr-partitions", "Topic: orders")
    ctx.event("observed", what="orders under min ISR", waited_s=shown)
    ctx.sleep(2)
    describe(ctx, bs, f"after broker {second.id} stopped")
    ctx.tool("metadata-quorum", ["--bootstrap-server", bs, "describe", "--replication"])

    for node in (second, first):
        cluster.launch(node)
        ctx.event("broker_restart", node=node.id)
    cluster.wait_ready([second, first], timeout=120.0)
    ctx.event("brokers_ready", nodes=[second.id, first.id])

    def healed() -> bool:
        out = ctx.tool("topics", ["--bootstrap-server", bs, "--describe", "--exclude-internal",
                                  "--under-replicated-partitions"])
        return not out.strip()

    waited = ctx.wait_until(healed, timeout=60.0, interval=2.0, what="ISR expansion")
    ctx.event("isr_expanded", waited_s=round(waited, 1))
    describe(ctx, bs, "after restart")
    ctx.tool("metadata-quorum", ["--bootstrap-server", bs, "describe", "--status"])
    ctx.tool("metadata-quorum", ["--bootstrap-server", bs, "describe", "--replication"])
    verify_replicas(ctx, bs)
    ctx.sleep(3)
    ctx.event("cluster_stop", cluster="isr", clean=True)


def start_prometheus_server(ctx: ScenarioContext, cluster: Cluster) -> None:
    """Run a Prometheus server scraping every node's exporter until the cluster has stopped, then
    keep its export in the bundle (:meth:`peer.prometheus_server.PrometheusServer.export`) up to the
    ``cluster_stop`` event, when the other samplers stop: the nodes' shutdown is in no export. The
    server is stopped on every path (``cleanups`` after an error)."""
    from peer.prometheus_server import PrometheusServer

    server = PrometheusServer({node.id: node.prometheus_port for node in cluster.nodes
                               if node.prometheus_port is not None}).start()
    ctx.cleanups.append(server.stop)

    def export_and_stop() -> None:
        stops = [e["t_ms"] for e in ctx.bundle.manifest["events"] if e["event"] == "cluster_stop"]
        try:
            server.export(ctx.bundle, end_ms=stops[-1] if stops else None)
        finally:
            server.stop()

    ctx.after_stop.append(export_and_stop)


def verify_replicas(ctx: ScenarioContext, bootstrap: str) -> None:
    """``kafka-replica-verification`` over ``orders`` and ``payments`` for :data:`VERIFY_S` s while
    ``orders`` takes 1000 records; its output kept as ``oracle/replica-verification.txt``."""
    from peer.kafka import fetch

    tool = fetch(VERIFIER_RELEASE)
    args = ["--broker-list", bootstrap, "--topics-include", "orders|payments", "--report-interval-ms", "1000",
            "--time", "-2"]
    ctx.event("replica_verification_start", release=VERIFIER_RELEASE, args=args)
    verifier = ctx.background("replica-verification", tool.java(tool.tool_class("replica-verification"), args))
    ctx.sleep(2)
    produce(ctx, bootstrap, "orders", 1000, 500)
    ctx.sleep(max(0.0, VERIFY_S - 4))
    code = verifier.wait(0.1)
    if code is None:
        verifier.stop(5.0)
    out = ctx.bundle.root / "oracle" / "replica-verification.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = (ctx.work / "replica-verification.out").read_text(encoding="utf-8", errors="replace")
    out.write_text(text, encoding="utf-8")
    reports = text.count("max lag is")
    ctx.event("replica_verification_end", exit_code=code, reports=reports)
    if not reports:
        raise ScenarioError(f"kafka-replica-verification reported nothing (exit {code}): {verifier.tail(5)}")
