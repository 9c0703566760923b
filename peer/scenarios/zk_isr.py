"""ZooKeeper-era ISR shrink and expand, under min ISR: the broker text logs of a ZooKeeper cluster.

Built on each release of :data:`peer.scenario.ZK_SETS`: its bundle is the source of real
ZooKeeper-era ``server.log``, ``controller.log`` (the controller's partition and replica state machines at TRACE) and
``state-change.log`` (``LeaderAndIsr`` requests sent and received, leader elections).

Cluster: one ZooKeeper server + 3 ZooKeeper-mode brokers (1-3) of the release
(:class:`peer.zookeeper.ZkCluster`); ``min.insync.replicas=2``, ``replica.lag.time.max.ms``
3000, ZooKeeper session timeout 6000, preferred-leader checks every 10 s; on the releases of
:data:`LEGACY_FORMAT`, inter-broker protocol and message format 0.10.2 (a cluster upgraded from
0.10 and never bumped: magic 1 batches, offset commits of value version 1).

Timeline (about 90 s of Kafka time after start-up):

1. broker 1 started first (the controller, never stopped), then 2 and 3; topic ``orders``
   (3 partitions, RF 3, topic config ``min.insync.replicas=2``); a producer (``acks=all``,
   ``PRODUCE_RATE`` records/s, ``kafka-producer-perf-test``) runs through every step below,
   stalling while ``orders`` is under min ISR;
2. broker 3 hard-stopped (SIGKILL) -> leaders shrink the ISR, its ZooKeeper session expires, the
   controller moves the leadership of its partitions (polled until no ISR holds 3);
3. broker 2 hard-stopped -> every partition's ISR is ``1``: under min ISR (polled); 8 s down;
4. broker 2 restarted -> ISR expands to ``1,2`` (polled); then broker 3 -> ``1,2,3`` (polled);
5. the preferred-leader check moves leaderships back; the producer ends;
6. consumer group ``zk-reader`` reads ``orders`` for ``CONSUME_S`` s at ``CONSUME_RATE`` records/s,
   twice, ``kafka-consumer-groups --describe --group zk-reader`` captured after each read (nothing
   produces or commits meanwhile);
7. a clean stop (each broker a controlled shutdown, then ZooKeeper).

``kafka-topics --describe`` is captured after each step (all partitions,
``--under-replicated-partitions``, ``--under-min-isr-partitions``), the polls too; every
broker's ReplicaManager and KafkaController gauges are sampled over JMX each second. On a
release whose lib has no ``producer-perf`` (the 3.2.3 era server) the producer runs from the
3.9.2 release's classpath (a 3.9 client against 3.2 brokers).
"""

from __future__ import annotations

import re
import threading
from typing import Any

from peer.errors import ScenarioError
from peer.kafka import fetch
from peer.process import live
from peer.scenario import ScenarioContext
from peer.scenarios.isr import ISR_MBEANS

NAME = "zk_isr"
#: Scenario modules whose code this one runs (their source is part of its bundle's hash).
USES = ("isr",)
#: Peer files besides :data:`peer.scenario.BUNDLE_SHAPING` that shape this bundle.
SHAPED_BY = ("zookeeper.py",)
TOPIC = "orders"
PRODUCE_RATE = 100
PRODUCE_RECORDS = 7000
#: The consumer group that reads ``orders`` after the incident, at this rate, for this long each time.
GROUP = "zk-reader"
CONSUME_RATE = 200
CONSUME_S = 6
#: The release whose client tools run when the cluster's lib lacks them.
CLIENT_RELEASE = "3.9.2"

MBEANS = [
    *ISR_MBEANS,
    "kafka.controller:type=KafkaController,name=ActiveControllerCount",
    "kafka.controller:type=KafkaController,name=OfflinePartitionsCount",
]

SETTINGS = {
    "min.insync.replicas": "2",
    "replica.lag.time.max.ms": "3000",
    "leader.imbalance.check.interval.seconds": "10",
}
#: Releases whose cluster runs as one upgraded from Kafka 0.10.2 and never bumped, as many old
#: clusters in the field do: inter-broker protocol and message format 0.10.2, so the brokers write
#: magic 1 batches (no producer ids, no partition leader epoch), ISR changes straight to ZooKeeper
#: (no AlterIsr), offset commits as value version 1 and group metadata as version 1.
LEGACY_FORMAT: dict[str, str] = {"2.8.2": "0.10.2"}


def settings(version: str) -> dict[str, str]:
    """The brokers' settings on ``version``: :data:`SETTINGS`, and the legacy protocol and message
    format of :data:`LEGACY_FORMAT` where it names the release.

    >>> settings("2.8.2")["log.message.format.version"], "inter.broker.protocol.version" in settings("3.9.2")
    ('0.10.2', False)
    """
    legacy = LEGACY_FORMAT.get(version)
    extra = {"inter.broker.protocol.version": legacy, "log.message.format.version": legacy} if legacy else {}
    return {**SETTINGS, **extra}

_ISR = re.compile(r"Partition:\s*(\d+)\s.*?\bIsr:\s*([\d,]*)")


def isr(out: str) -> dict[int, set[int]]:
    """Partition -> ISR from ``kafka-topics --describe`` text.

    >>> isr("Topic: orders\\tPartition: 0\\tLeader: 1\\tReplicas: 1,2,3\\tIsr: 1,2")
    {0: {1, 2}}
    """
    return {int(m.group(1)): {int(b) for b in m.group(2).split(",") if b} for m in _ISR.finditer(out)}


def describe(ctx: ScenarioContext, bootstrap: str, label: str) -> str:
    """Capture the three kafka-topics views of the ISR analysis; returns the full describe."""
    ctx.event("capture", what=label)
    base = ["--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC]
    out = ctx.tool("topics", base)
    ctx.tool("topics", [*base, "--under-replicated-partitions"])
    ctx.tool("topics", [*base, "--under-min-isr-partitions"])
    return out


def wait_isr(ctx: ScenarioContext, bootstrap: str, want: set[int], what: str) -> float:
    """Poll (captured) ``kafka-topics --describe`` until every partition's ISR is ``want``."""

    def reached() -> bool:
        out = ctx.tool("topics", ["--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC], check=False)
        got = isr(out)
        return len(got) == 3 and all(v == want for v in got.values())

    waited = round(ctx.wait_until(reached, timeout=90.0, interval=1.0, what=what), 1)
    ctx.event("observed", what=what, isr=sorted(want), waited_s=waited)
    return waited


def consume(ctx: ScenarioContext, bootstrap: str, client: Any) -> None:
    """Group ``GROUP`` reads part of ``orders`` twice, committing each second; after each read, with
    nothing producing or committing, ``kafka-consumer-groups --describe`` is captured."""
    kafka = client or ctx.kafka
    for run_no in (1, 2):
        ctx.event("consumer_start", group=GROUP, topics=[TOPIC], seconds=CONSUME_S, rate=CONSUME_RATE)
        reader = ctx.background(f"consumer-{GROUP}-{run_no}", kafka.client(
            ["consume", bootstrap, GROUP, TOPIC, str(CONSUME_S), str(CONSUME_RATE)]))
        code = reader.wait(CONSUME_S + 60.0)
        ctx.event("consumer_end", group=GROUP, exit_code=code, summary=reader.tail(1))
        if code != 0:
            raise ScenarioError(f"consumer {GROUP} exited with {code}: {reader.tail(5)}")
        ctx.tool("consumer-groups", ["--bootstrap-server", bootstrap, "--describe", "--group", GROUP],
                 check=False, client=client)


def run(ctx: ScenarioContext) -> None:
    """Run the ZooKeeper-era ISR scenario (see the module docstring)."""
    chosen = settings(ctx.kafka.version)
    cluster = ctx.cluster("zk_isr", zookeeper=True, brokers=3, settings=chosen)
    cluster.format()
    ctx.event("cluster_format", cluster="zk_isr", mode="zookeeper", brokers=3, settings=chosen)
    ctx.bundle.manifest["zookeeper"] = cluster.zookeeper_entry()  # type: ignore[attr-defined]
    cluster.start_zookeeper()  # type: ignore[attr-defined]
    ctx.event("zookeeper_started", connect=cluster.zookeeper_connect)  # type: ignore[attr-defined]
    first, *others = cluster.brokers
    cluster.start([first])  # broker 1 registers first: the controller, which is never stopped
    cluster.start(others)
    ctx.event("cluster_started", cluster="zk_isr")
    bs = cluster.bootstrap
    for broker in cluster.brokers:
        ctx.sample(broker.id, "isr", broker.jmx_url, MBEANS)

    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", TOPIC, "--partitions", "3",
                        "--replication-factor", "3", "--config", "min.insync.replicas=2"])
    ctx.event("topic_created", topic=TOPIC, partitions=3, replication_factor=3,
              config={"min.insync.replicas": "2"})
    wait_isr(ctx, bs, {1, 2, 3}, "orders fully replicated")

    client = None if ctx.kafka.has_class("org.apache.kafka.tools.ProducerPerformance") else fetch(CLIENT_RELEASE)
    failure: list[BaseException] = []
    ctx.cleanups.append(lambda: [p.stop(5.0) for p in live() if p.name == "producer-perf"])

    def produce() -> None:
        try:
            ctx.tool("producer-perf", [
                "--topic", TOPIC, "--num-records", str(PRODUCE_RECORDS), "--record-size", "100",
                "--throughput", str(PRODUCE_RATE), "--producer-props", f"bootstrap.servers={bs}", "acks=all",
                "linger.ms=5", "delivery.timeout.ms=180000", "request.timeout.ms=10000",
                "client.id=zk-isr-producer",
                # a 3.x producer is idempotent by default; magic 1 batches carry no producer id
                *(["enable.idempotence=false"] if "log.message.format.version" in chosen else []),
            ], client=client, timeout=300.0)
        except BaseException as exc:  # reported by the main thread
            failure.append(exc)

    ctx.event("produce_start", topic=TOPIC, records=PRODUCE_RECORDS, rate=PRODUCE_RATE, acks="all",
              client_version=(client or ctx.kafka).version)
    producer = threading.Thread(target=produce, name="zk-isr-producer", daemon=True)
    producer.start()
    ctx.sleep(8)
    describe(ctx, bs, "baseline")

    third, second = cluster.node(3), cluster.node(2)
    cluster.kill(third)
    ctx.event("broker_hard_stop", node=third.id, signal="SIGKILL")
    wait_isr(ctx, bs, {1, 2}, "broker 3 out of every ISR")
    ctx.sleep(2)
    describe(ctx, bs, f"after broker {third.id} stopped")

    cluster.kill(second)
    ctx.event("broker_hard_stop", node=second.id, signal="SIGKILL")
    wait_isr(ctx, bs, {1}, "orders under min ISR")
    ctx.sleep(8)
    describe(ctx, bs, f"after broker {second.id} stopped")

    for node, want in ((second, {1, 2}), (third, {1, 2, 3})):
        cluster.launch(node)
        ctx.event("broker_restart", node=node.id)
        cluster.wait_ready([node], timeout=120.0)
        ctx.event("brokers_ready", nodes=[node.id])
        wait_isr(ctx, bs, want, f"ISR expanded to {','.join(map(str, sorted(want)))}")
        ctx.sleep(2)
        describe(ctx, bs, f"after broker {node.id} restarted")

    ctx.sleep(12)  # the preferred-leader check (every 10 s) moves leaderships back
    producer.join(timeout=240.0)
    if producer.is_alive():
        raise ScenarioError("the producer did not finish within 240 s of the recovery")
    if failure:
        raise failure[0]
    ctx.event("produce_end", topic=TOPIC, records=PRODUCE_RECORDS)
    describe(ctx, bs, "final")
    consume(ctx, bs, client)
    ctx.sleep(2)
    ctx.event("cluster_stop", cluster="zk_isr", clean=True)
