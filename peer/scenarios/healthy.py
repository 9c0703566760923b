"""A healthy cluster under load, stopped cleanly: the replicas question's null case (issue 41).

Cluster: 1 controller (1) + 3 brokers (2-4), ``min.insync.replicas=2``; topics ``orders``
(6 partitions, RF 3) and ``payments`` (2 partitions, RF 3). Nothing is killed, paused or
elected: every replica of every partition should hold its leader's batches.

Timeline (about 40 s of Kafka time after start-up):

1. 20,000 records of 200 bytes to ``orders`` at 4,000/s and 4,000 to ``payments`` at 1,000/s, both
   with ``acks=all`` and at once; group ``readers`` reads both topics to their end and commits.
2. Kafka's own live replica check, ``kafka-replica-verification`` of 3.9.2 (the ``isr``
   scenario's :func:`~peer.scenarios.isr.verify_replicas`), over both topics for
   ``VERIFY_S`` s while ``orders`` takes 1,000 more records; its output kept as
   ``oracle/replica-verification.txt``.
3. ``kafka-topics --describe`` and ``kafka-get-offsets`` captured; a clean stop.
"""

from __future__ import annotations

from peer.errors import ScenarioError
from peer.scenario import ScenarioContext
from peer.scenarios.isr import describe, verify_replicas

NAME = "healthy"
#: Scenario modules whose code this one runs (their source is part of its bundle's hash).
USES = ("isr",)
GROUP = "readers"
#: topic -> (partitions, records, records per second)
TOPICS = {"orders": (6, 20_000, 4_000), "payments": (2, 4_000, 1_000)}

SETTINGS = {
    "min.insync.replicas": "2",
}


def run(ctx: ScenarioContext) -> None:
    """Run the scenario (see the module docstring)."""
    cluster = ctx.cluster("healthy", controllers=1, brokers=3, settings=SETTINGS)
    cluster.format()
    ctx.event("cluster_format", cluster="healthy", controllers=1, brokers=3, settings=SETTINGS)
    cluster.start()
    ctx.event("cluster_started", cluster="healthy")
    bs = cluster.bootstrap
    for topic, (partitions, _records, _rate) in TOPICS.items():
        ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", topic,
                            "--partitions", str(partitions), "--replication-factor", "3"])
        ctx.event("topic_created", topic=topic, partitions=partitions, replication_factor=3)

    producers = []
    for topic, (_partitions, records, rate) in TOPICS.items():
        ctx.event("produce_start", topic=topic, records=records, rate=rate, acks="all")
        producers.append((topic, records, ctx.background(f"produce-{topic}", ctx.kafka.java(
            ctx.kafka.tool_class("producer-perf"),
            ["--topic", topic, "--num-records", str(records), "--record-size", "200", "--throughput", str(rate),
             "--producer-props", f"bootstrap.servers={bs}", "acks=all", "linger.ms=5",
             f"client.id=healthy-{topic}"]))))
    for topic, records, child in producers:
        code = child.wait(120.0)
        ctx.event("produce_end", topic=topic, records=records, exit_code=code)
        if code != 0:
            raise ScenarioError(f"producer of {topic} exited with {code}: {child.tail(5)}")
    ctx.event("consumer_start", group=GROUP, topics=list(TOPICS))
    reader = ctx.background("consumer", ctx.kafka.client(["consume", bs, GROUP, ",".join(TOPICS), "6", "0"]))
    code = reader.wait(90.0)
    ctx.event("consumer_end", group=GROUP, exit_code=code, summary=reader.tail(1))
    if code != 0:
        raise ScenarioError(f"consumer {GROUP} exited with {code}: {reader.tail(5)}")

    verify_replicas(ctx, bs)
    describe(ctx, bs, "at the end")
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", "orders|payments", "--time", "-1"])
    ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--group", GROUP], check=False)
    ctx.sleep(2)
    ctx.event("cluster_stop", cluster="healthy", clean=True)
