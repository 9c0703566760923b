"""MirrorMaker 2 backlog (KIP-971): MM2 stopped while production goes on, then resumed.

Two single-node clusters, each one combined broker+controller JVM: ``source`` (node 1) and
``target`` (node 2). MirrorMaker 2 runs in dedicated mode
(``org.apache.kafka.connect.mirror.MirrorMaker mm2.properties``) replicating topic
``orders`` (2 partitions) source -> target, with heartbeats, checkpoints and group offset
sync for the consumer group ``app`` that reads ``orders`` on the source (committing each second).
The Connect worker commits MirrorMaker 2's source offsets every 2 s
(``target.offset.flush.interval.ms``: a dedicated MirrorMaker takes worker settings from the
target cluster's prefix; the Connect default is 60 s).

Timeline: producer at ``RATE`` records/s (the scenario stops it, ``producer_stop``, at ``PRODUCE_S``
s or once the restarted MM2 replicates, whichever is later: a producer on a timer of its own had
ended before a slow first run was stopped, so the restarted MM2 found nothing to replicate and
the build timed out); MM2 started (``mm2_start``); once
records arrive on the target, ``mm2_replicating``; after it has replicated for a while it is
stopped: ``mm2_stopping`` when SIGTERM is sent, ``mm2_stop`` once the process has exited (it
commits its source offsets on the way out); ``OUTAGE_S`` s later it is started again
(``mm2_start`` run 2), polled until records arrive again (``mm2_replicating`` run 2), and catches
up; it runs until 20 s after ``producer_stop`` and three captures from two capture
intervals after ``mm2_replicating`` run 2 (a loaded machine's slow restart leaves it that long to
catch up), and its metrics have been sampled ``SAMPLES_AFTER_RESTART`` times.

Captures (every ``CAPTURE_EVERY_S`` s, and one right after MM2 exited): the source's end offsets
(``kafka-get-offsets --time -1``), then ``kafka-consumer-groups --describe --group app`` on the
target (the offsets MirrorMaker 2 synced to the target group) and on the source (the group's own
committed offsets). MM2's JMX metrics (``kafka.connect.mirror`` MirrorSourceConnector and
MirrorCheckpointConnector MBeans) are sampled each second into ``metrics/0-mm2.csv`` (node 0
stands for the MirrorMaker process, which is not a Kafka node), and scraped every 5 s as
Prometheus text from the JMX exporter javaagent MirrorMaker runs with (``metrics/0-<t_ms>.prom``).
"""

from __future__ import annotations

import time

from peer.cluster import free_ports
from peer.process import Managed
from peer.prometheus import PrometheusScraper, agent_config, agent_flag, fetch_agent
from peer.scenario import ScenarioContext

#: How long a restarted MirrorMaker 2 may take to replicate again. When the previous
#: worker could not leave its Connect group cleanly (a loaded machine), incremental
#: cooperative rebalancing holds its tasks for scheduled.rebalance.max.delay.ms (300 s).
RESTART_WAIT_S = 360.0

NAME = "mm2"
RATE = 20
PRODUCE_S = 100
OUTAGE_S = 25
CAPTURE_EVERY_S = 5
#: Samples of the restarted MirrorMaker's metrics taken before it is stopped for good (its JVM,
#: connectors and MBeans come back slowly on a loaded machine: the scenario waits for them)
SAMPLES_AFTER_RESTART = 15
#: Bounds the producer's and the application consumer's runs should the scenario fail (the
#: scenario stops them itself: ``producer_stop``, ``consumer_stop``).
CLIENT_LIMIT_S = int(PRODUCE_S + 240 + 120 + RESTART_WAIT_S + 60)
TOPIC = "orders"
GROUP = "app"

MM2_MBEANS = [
    "kafka.connect.mirror:type=MirrorSourceConnector,*",
    "kafka.connect.mirror:type=MirrorCheckpointConnector,*",
]
#: What the sampler's first JmxTool must see registered (both connectors' per-partition metrics).
MM2_REQUIRED = ["type=MirrorSourceConnector", "type=MirrorCheckpointConnector"]
#: JmxTool rows of the first run read before it is stopped.
SAMPLES_BEFORE_STOP = 5


def mm2_properties(source: str, target: str) -> str:
    """The ``mm2.properties`` used (small topics, quick heartbeats, checkpoints, syncs and commits)."""
    return "\n".join([
        "clusters = source, target",
        f"source.bootstrap.servers = {source}",
        f"target.bootstrap.servers = {target}",
        "source->target.enabled = true",
        f"source->target.topics = {TOPIC}",
        f"source->target.groups = {GROUP}",
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
        # the worker of the source->target flow reads worker settings under the target's prefix
        "target.offset.flush.interval.ms = 2000",
        "tasks.max = 1",
        "dedicated.mode.enable.internal.rest = false",
        "",
    ])


def jmx_flags(port: int) -> list[str]:
    """JVM flags opening MirrorMaker 2's JMX on 127.0.0.1:``port``, for JmxTool (no auth, no SSL)."""
    return ["-Dcom.sun.management.jmxremote", f"-Dcom.sun.management.jmxremote.port={port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={port}", "-Dcom.sun.management.jmxremote.host=127.0.0.1",
            "-Dcom.sun.management.jmxremote.authenticate=false", "-Dcom.sun.management.jmxremote.ssl=false",
            "-Djava.rmi.server.hostname=127.0.0.1"]


def target_records(ctx: ScenarioContext, bootstrap: str, topic: str, *, capture: bool = True) -> int:
    """Records on the target's replica ``topic`` (the sum of its partitions' end offsets, from
    ``kafka-get-offsets``; the output is kept in the bundle unless ``capture`` is false)."""
    args = ["--bootstrap-server", bootstrap, "--topic", topic, "--time", "-1"]
    out = (ctx.tool("get-offsets", args, check=False) if capture
           else ctx.kafka.run_tool("get-offsets", args, check=False).stdout)
    prefix = f"{topic}:"
    return sum(int(line.rsplit(":", 1)[-1]) for line in out.splitlines()
               if line.startswith(prefix) and line.rsplit(":", 1)[-1].strip().isdigit())


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

    producer = ctx.background("producer", ctx.kafka.client(
        ["produce", src, str(CLIENT_LIMIT_S), str(RATE), f"{TOPIC}:none:headers"]))
    ctx.event("producer_start", cluster="source", topic=TOPIC, rate=RATE, seconds=PRODUCE_S)
    consumer = ctx.background("consumer-app", ctx.kafka.client(
        ["consume", src, GROUP, TOPIC, str(CLIENT_LIMIT_S + 5), "0"]))
    ctx.event("consumer_start", cluster="source", group=GROUP, topic=TOPIC)

    config = ctx.work / "mm2.properties"
    config.write_text(mm2_properties(src, dst), encoding="utf-8")
    (ctx.bundle.root / "mm2.properties").write_text(config.read_text("utf-8"), "utf-8")
    jmx_port = free_ports(1)[0]
    jvm = jmx_flags(jmx_port)
    # the same MBeans in Prometheus text, from the JMX exporter javaagent (peer/prometheus.py)
    prom_port = free_ports(1)[0]
    prom_config = ctx.work / "mm2-prometheus.yaml"
    prom_config.write_text(agent_config(MM2_MBEANS), encoding="utf-8")
    jvm.append(agent_flag(fetch_agent(), prom_port, prom_config))
    mm2_argv = ctx.kafka.java(ctx.kafka.tool_class("mirror-maker"), [str(config)],
                              heap="256m", extra_jvm=jvm)

    def start_mm2(n: int) -> Managed:
        child = ctx.background(f"mirror-maker-{n}", mm2_argv)
        ctx.event("mm2_start", run=n, config="mm2.properties")
        return child

    def capture() -> None:
        """The source's end offsets, then the group's committed offsets on the target and the source."""
        ctx.tool("get-offsets", ["--bootstrap-server", src, "--topic", TOPIC, "--time", "-1"])
        ctx.tool("consumer-groups", ["--bootstrap-server", dst, "--describe", "--group", GROUP],
                 check=False)
        ctx.tool("consumer-groups", ["--bootstrap-server", src, "--describe", "--group", GROUP],
                 check=False)

    def replicated_total() -> int:
        """Records on the target's replica of the topic (kafka-get-offsets, captured too)."""
        return target_records(ctx, dst, f"source.{TOPIC}")

    started = time.monotonic()
    mm2 = start_mm2(1)
    # a JVM and a Connect group started on a loaded machine: 90 s was seen to run out
    ctx.wait_until(lambda: replicated_total() > 0, timeout=240.0, interval=3.0, what="MM2 replicating")
    ctx.event("mm2_replicating", run=1)
    # Sampling starts once the checkpoint connector has registered its MBeans too (JmxTool
    # resolves the patterns when it starts).
    ctx.sleep(CAPTURE_EVERY_S)
    capture()
    sampler = ctx.sample(0, "mm2", f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{jmx_port}/jmxrmi", MM2_MBEANS,
                         required=MM2_REQUIRED)
    ctx.samplers.append(PrometheusScraper(ctx.bundle, 0, "mm2", prom_port).start())
    # the first run's metrics are read before it is stopped (a loaded machine starts JmxTool slowly)
    ctx.wait_until(lambda: sampler.rows >= SAMPLES_BEFORE_STOP, timeout=120.0, interval=1.0,
                   what="the metrics sampler reading MirrorMaker 2")
    while time.monotonic() - started < 45:
        ctx.sleep(CAPTURE_EVERY_S)
        capture()

    ctx.event("mm2_stopping", run=1, signal="SIGTERM")
    mm2.stop(30.0)
    ctx.event("mm2_stop", run=1, signal="SIGTERM")
    outage_end = time.monotonic() + OUTAGE_S
    capture()  # the moment MM2 stopped
    while time.monotonic() < outage_end - CAPTURE_EVERY_S:
        ctx.sleep(CAPTURE_EVERY_S)
        capture()
    ctx.sleep(max(0.0, outage_end - time.monotonic()))
    before = replicated_total()
    mm2 = start_mm2(2)
    rows_at_restart = sampler.rows
    ctx.wait_until(lambda: replicated_total() > before, timeout=RESTART_WAIT_S, interval=0.5,
                   what="MM2 replicating again")
    ctx.event("mm2_replicating", run=2)
    replicating_at = time.monotonic()
    settled = 0  # captures from two capture intervals after the restart on (caught up by then)
    producing, quiet_end = True, 0.0
    while producing or time.monotonic() < quiet_end or settled < 3:
        if producing and time.monotonic() - started >= PRODUCE_S:
            producer.stop(30.0)
            ctx.event("producer_stop", cluster="source", signal="SIGTERM")
            producing, quiet_end = False, time.monotonic() + 20  # MM2 and the group catch up with the last records
        settled += time.monotonic() - replicating_at >= 2 * CAPTURE_EVERY_S
        capture()
        ctx.sleep(CAPTURE_EVERY_S)
    capture()
    consumer.stop(30.0)
    ctx.event("consumer_stop", cluster="source", group=GROUP, signal="SIGTERM")
    ctx.wait_until(lambda: sampler.rows >= rows_at_restart + SAMPLES_AFTER_RESTART, timeout=240.0,
                   interval=2.0, what="the metrics sampler following the restarted MirrorMaker")
    ctx.event("mm2_stopping", run=2, signal="SIGTERM")
    mm2.stop(30.0)
    ctx.event("mm2_stop", run=2, signal="SIGTERM")
    ctx.event("cluster_stop", cluster="source,target", clean=True)
