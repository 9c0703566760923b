"""MirrorMaker 2 backlog (KIP-971): MM2 stopped while production goes on, then resumed.

Two single-node clusters, each one combined broker+controller JVM: ``source`` (node 1) and
``target`` (node 2). MirrorMaker 2 runs in dedicated mode
(``org.apache.kafka.connect.mirror.MirrorMaker mm2.properties``) replicating topic
``orders`` (2 partitions) source -> target, with heartbeats, checkpoints and group offset
sync for the consumer group ``app`` that reads ``orders`` on the source.

Timeline: producer at ``RATE`` records/s for ``PRODUCE_S`` s; MM2 started; after it has
replicated for a while it is stopped (SIGTERM) for ``OUTAGE_S`` s and started again; it
catches up. Source (and target) end offsets are captured with kafka-get-offsets every
``CAPTURE_EVERY_S`` s; MM2's JMX metrics (``kafka.connect.mirror`` MirrorSourceConnector and
MirrorCheckpointConnector MBeans) are sampled each second into ``metrics/0-mm2.csv`` (node 0
stands for the MirrorMaker process, which is not a Kafka node).
"""

from __future__ import annotations

import time

from peer.cluster import free_ports
from peer.process import Managed
from peer.scenario import ScenarioContext

NAME = "mm2"
RATE = 20
PRODUCE_S = 100
OUTAGE_S = 25
CAPTURE_EVERY_S = 8
TOPIC = "orders"

MM2_MBEANS = [
    "kafka.connect.mirror:type=MirrorSourceConnector,*",
    "kafka.connect.mirror:type=MirrorCheckpointConnector,*",
]


def mm2_properties(source: str, target: str) -> str:
    """The ``mm2.properties`` used (small topics, quick heartbeats, checkpoints, syncs)."""
    return "\n".join([
        "clusters = source, target",
        f"source.bootstrap.servers = {source}",
        f"target.bootstrap.servers = {target}",
        "source->target.enabled = true",
        f"source->target.topics = {TOPIC}",
        "source->target.groups = app",
        "target->source.enabled = false",
        "replication.factor = 1",
        "offset-syncs.topic.replication.factor = 1",
        "checkpoints.topic.replication.factor = 1",
        "heartbeats.topic.replication.factor = 1",
        "offset.storage.replication.factor = 1",
        "status.storage.replication.factor = 1",
        "config.storage.replication.factor = 1",
        "offset.storage.partitions = 1",
        "status.storage.partitions = 1",
        "refresh.topics.interval.seconds = 5",
        "refresh.groups.interval.seconds = 5",
        "emit.heartbeats.interval.seconds = 1",
        "emit.checkpoints.interval.seconds = 2",
        "sync.group.offsets.enabled = true",
        "sync.group.offsets.interval.seconds = 5",
        "offset.lag.max = 10",
        "offset.flush.interval.ms = 2000",
        "tasks.max = 1",
        "dedicated.mode.enable.internal.rest = false",
        "",
    ])


def run(ctx: ScenarioContext) -> None:
    """Run the MirrorMaker 2 scenario (see the module docstring)."""
    source = ctx.cluster("source", controllers=1, brokers=0, combined=True, jmx=False,
                         first_id=1, broker_settings={"auto.create.topics.enable": "true"})
    target = ctx.cluster("target", controllers=1, brokers=0, combined=True, jmx=False,
                         first_id=2, broker_settings={"auto.create.topics.enable": "true"})
    for c in (source, target):
        c.format()
        ctx.event("cluster_format", cluster=c.name, controllers=1, brokers=0, combined=True)
    for c in (source, target):
        c.start()
        ctx.event("cluster_started", cluster=c.name, cluster_id=c.cluster_id)
    src, dst = source.bootstrap, target.bootstrap
    ctx.tool("topics", ["--bootstrap-server", src, "--create", "--topic", TOPIC,
                        "--partitions", "2", "--replication-factor", "1"])
    ctx.event("topic_created", cluster="source", topic=TOPIC, partitions=2, replication_factor=1)

    ctx.background("producer", ctx.kafka.client(
        ["produce", src, str(PRODUCE_S), str(RATE), f"{TOPIC}:none:headers"]))
    ctx.event("producer_start", cluster="source", topic=TOPIC, rate=RATE, seconds=PRODUCE_S)
    ctx.background("consumer-app", ctx.kafka.client(
        ["consume", src, "app", TOPIC, str(PRODUCE_S + 5), "0"]))
    ctx.event("consumer_start", cluster="source", group="app", topic=TOPIC)

    config = ctx.work / "mm2.properties"
    config.write_text(mm2_properties(src, dst), encoding="utf-8")
    (ctx.bundle.root / "mm2.properties").write_text(config.read_text("utf-8"), "utf-8")
    jmx_port = free_ports(1)[0]
    jvm = [
        "-Dcom.sun.management.jmxremote",
        f"-Dcom.sun.management.jmxremote.port={jmx_port}",
        f"-Dcom.sun.management.jmxremote.rmi.port={jmx_port}",
        "-Dcom.sun.management.jmxremote.host=127.0.0.1",
        "-Dcom.sun.management.jmxremote.authenticate=false",
        "-Dcom.sun.management.jmxremote.ssl=false",
        "-Djava.rmi.server.hostname=127.0.0.1",
    ]
    mm2_argv = ctx.kafka.java(ctx.kafka.tool_class("mirror-maker"), [str(config)],
                              heap="256m", extra_jvm=jvm)

    def start_mm2(n: int) -> Managed:
        child = ctx.background(f"mirror-maker-{n}", mm2_argv)
        ctx.event("mm2_start", run=n, config="mm2.properties")
        return child

    def offsets() -> None:
        ctx.tool("get-offsets", ["--bootstrap-server", src, "--topic", TOPIC, "--time", "-1"])
        ctx.tool("get-offsets", ["--bootstrap-server", dst, "--topic", f"source.{TOPIC}",
                                 "--time", "-1"], check=False)

    started = time.monotonic()
    mm2 = start_mm2(1)

    def replicated() -> bool:
        out = ctx.tool("get-offsets", ["--bootstrap-server", dst, "--topic", f"source.{TOPIC}",
                                       "--time", "-1"], check=False)
        return any(line.rsplit(":", 1)[-1].strip() not in ("", "0")
                   for line in out.splitlines() if line.startswith("source."))

    ctx.wait_until(replicated, timeout=90.0, interval=3.0, what="MM2 replicating")
    ctx.event("mm2_replicating")
    # Sampling starts once the checkpoint connector has registered its MBeans too (JmxTool
    # resolves the patterns when it starts).
    ctx.sleep(CAPTURE_EVERY_S)
    offsets()
    ctx.sample(0, "mm2", f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{jmx_port}/jmxrmi", MM2_MBEANS)
    ctx.sleep(CAPTURE_EVERY_S)
    offsets()

    mm2.stop(30.0)
    ctx.event("mm2_stop", run=1, signal="SIGTERM")
    outage_end = time.monotonic() + OUTAGE_S
    while time.monotonic() < outage_end - CAPTURE_EVERY_S:
        ctx.sleep(CAPTURE_EVERY_S)
        offsets()
    ctx.sleep(max(0.0, outage_end - time.monotonic()))
    mm2 = start_mm2(2)
    while time.monotonic() - started < PRODUCE_S + 15:
        ctx.sleep(CAPTURE_EVERY_S)
        offsets()
    ctx.tool("consumer-groups", ["--bootstrap-server", src, "--describe", "--group", "app"],
             check=False)
    ctx.tool("consumer-groups", ["--bootstrap-server", dst, "--describe", "--group", "app"],
             check=False)
    mm2.stop(30.0)
    ctx.event("mm2_stop", run=2, signal="SIGTERM")
    ctx.event("cluster_stop", cluster="source,target", clean=True)
