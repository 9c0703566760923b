"""MirrorMaker 2 partial outage: two topics replicated, one paused by a topic filter change.

The set-up of the ``mm2`` scenario (two single-node clusters ``source`` (node 1) and ``target``
(node 2), MirrorMaker 2 in dedicated mode, group ``app`` synced, source offsets committed every
2 s), with two topics, ``orders`` and ``payments`` (2 partitions each), produced at ``RATE``
records/s each for ``PRODUCE_S`` s (the scenario stops the producer then, or once the widened
filter replicates when MirrorMaker 2's restarts took longer). This module repeats that set-up
rather than importing it, so that its bundle's hash covers everything it runs.

Timeline: MM2 replicates both topics (``mm2_start`` run 1, ``mm2_replicating``); an operator then
narrows its topic filter to ``orders`` alone and restarts it (``mm2_stopping``/``mm2_stop`` run 1,
``topic_filter_change`` with ``topics`` and ``paused``, ``mm2_start`` run 2): ``orders`` goes on
being replicated after the short restart while ``payments`` falls behind for ``PAUSE_S`` s; the
filter is then widened again (run 3, ``topic_filter_change`` with ``resumed``) and ``payments``
catches up. The bundle's ``mm2.properties`` is the final (widened) configuration; the filter of
each run is in the manifest's events.

Captures every ``CAPTURE_EVERY_S`` s: the source's end offsets of both topics
(``kafka-get-offsets``), then ``kafka-consumer-groups --describe --group app`` on the target and
on the source.
"""

from __future__ import annotations

import time

from peer.process import Managed
from peer.scenario import ScenarioContext

#: How long a restarted MirrorMaker 2 may take to replicate again. When the previous
#: worker could not leave its Connect group cleanly (a loaded machine), incremental
#: cooperative rebalancing holds its tasks for scheduled.rebalance.max.delay.ms (300 s).
RESTART_WAIT_S = 360.0
#: How long a first MirrorMaker 2 may take to replicate (a JVM and a Connect group started on a
#: loaded machine).
START_WAIT_S = 240.0

NAME = "mm2_partial"
RATE = 20
PRODUCE_S = 100
PAUSE_S = 30
CAPTURE_EVERY_S = 5
TOPICS = ("orders", "payments")
PAUSED = "payments"
GROUP = "app"
#: The producer and the application's consumer run until the scenario stops them, at ``PRODUCE_S``
#: s or once the widened filter replicates, whichever is later: a restarted MirrorMaker 2 may take
#: minutes on a loaded machine, and the narrowed filter shows that it replicates only while
#: ``orders`` still gets records (a producer on a timer of its own had ended by then: the build
#: timed out waiting for them). This bounds their run should the scenario fail.
CLIENT_LIMIT_S = int(PRODUCE_S + START_WAIT_S + 3 * RESTART_WAIT_S)


def mm2_properties(source: str, target: str, topics: tuple[str, ...]) -> str:
    """The ``mm2.properties`` of a run replicating ``topics`` (otherwise as the ``mm2`` scenario's)."""
    return "\n".join([
        "clusters = source, target",
        f"source.bootstrap.servers = {source}",
        f"target.bootstrap.servers = {target}",
        "source->target.enabled = true",
        f"source->target.topics = {', '.join(topics)}",
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
        "target.offset.flush.interval.ms = 2000",
        "tasks.max = 1",
        "dedicated.mode.enable.internal.rest = false",
        "",
    ])


def run(ctx: ScenarioContext) -> None:
    """Run the partial-outage scenario (see the module docstring)."""
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
    for topic in TOPICS:
        ctx.tool("topics", ["--bootstrap-server", src, "--create", "--topic", topic,
                            "--partitions", "2", "--replication-factor", "1"])
        ctx.event("topic_created", cluster="source", topic=topic, partitions=2, replication_factor=1)

    producer = ctx.background("producer", ctx.kafka.client(
        ["produce", src, str(CLIENT_LIMIT_S), str(RATE), *[f"{t}:none" for t in TOPICS]]))
    ctx.event("producer_start", cluster="source", topics=list(TOPICS), rate=RATE, seconds=PRODUCE_S,
              until="stopped")
    consumer = ctx.background("consumer-app", ctx.kafka.client(
        ["consume", src, GROUP, ",".join(TOPICS), str(CLIENT_LIMIT_S + 5), "0"]))
    ctx.event("consumer_start", cluster="source", group=GROUP, topics=list(TOPICS))

    config = ctx.work / "mm2.properties"

    def start_mm2(n: int, topics: tuple[str, ...]) -> Managed:
        config.write_text(mm2_properties(src, dst, topics), encoding="utf-8")
        argv = ctx.kafka.java(ctx.kafka.tool_class("mirror-maker"), [str(config)], heap="256m")
        child = ctx.background(f"mirror-maker-{n}", argv)
        ctx.event("mm2_start", run=n, config="mm2.properties", topics=list(topics))
        return child

    def stop_mm2(child: Managed, n: int) -> None:
        ctx.event("mm2_stopping", run=n, signal="SIGTERM")
        child.stop(30.0)
        ctx.event("mm2_stop", run=n, signal="SIGTERM")

    def capture() -> None:
        ctx.tool("get-offsets", ["--bootstrap-server", src, "--topic", "|".join(TOPICS), "--time", "-1"])
        ctx.tool("consumer-groups", ["--bootstrap-server", dst, "--describe", "--group", GROUP],
                 check=False)
        ctx.tool("consumer-groups", ["--bootstrap-server", src, "--describe", "--group", GROUP],
                 check=False)

    def replicated(topic: str) -> int:
        out = ctx.tool("get-offsets", ["--bootstrap-server", dst, "--topic", f"source[.]{topic}",
                                       "--time", "-1"], check=False)
        return sum(int(line.rsplit(":", 1)[-1]) for line in out.splitlines()
                   if line.startswith("source.") and line.rsplit(":", 1)[-1].strip().isdigit())

    started = time.monotonic()
    mm2 = start_mm2(1, TOPICS)
    ctx.wait_until(lambda: all(replicated(t) > 0 for t in TOPICS), timeout=START_WAIT_S, interval=3.0,
                   what="MM2 replicating both topics")
    ctx.event("mm2_replicating", run=1)
    ctx.sleep(CAPTURE_EVERY_S)
    capture()
    ctx.sleep(CAPTURE_EVERY_S)
    capture()

    kept = tuple(t for t in TOPICS if t != PAUSED)
    stop_mm2(mm2, 1)
    ctx.event("topic_filter_change", topics=list(kept), paused=[PAUSED])
    before = replicated(kept[0])
    mm2 = start_mm2(2, kept)
    ctx.wait_until(lambda: replicated(kept[0]) > before, timeout=RESTART_WAIT_S, interval=0.5,
                   what="MM2 replicating the narrowed filter")
    ctx.event("mm2_replicating", run=2)
    pause_end = time.monotonic() + PAUSE_S
    while time.monotonic() < pause_end:
        capture()
        ctx.sleep(CAPTURE_EVERY_S)

    stop_mm2(mm2, 2)
    ctx.event("topic_filter_change", topics=list(TOPICS), resumed=[PAUSED])
    (ctx.bundle.root / "mm2.properties").write_text(mm2_properties(src, dst, TOPICS), "utf-8")
    before = replicated(PAUSED)
    mm2 = start_mm2(3, TOPICS)
    ctx.wait_until(lambda: replicated(PAUSED) > before, timeout=RESTART_WAIT_S, interval=0.5,
                   what="MM2 replicating the widened filter")
    ctx.event("mm2_replicating", run=3)
    while time.monotonic() - started < PRODUCE_S:
        capture()
        ctx.sleep(CAPTURE_EVERY_S)
    producer.stop(30.0)
    ctx.event("producer_stop", cluster="source", signal="SIGTERM")
    quiet_end = time.monotonic() + 20
    while time.monotonic() < quiet_end:  # MM2 and the group catch up with the last records
        capture()
        ctx.sleep(CAPTURE_EVERY_S)
    capture()
    consumer.stop(30.0)
    ctx.event("consumer_stop", cluster="source", group=GROUP, signal="SIGTERM")
    stop_mm2(mm2, 3)
    ctx.event("cluster_stop", cluster="source,target", clean=True)
