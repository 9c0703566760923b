"""Consumer lag: producers at known rates, consumer groups at different positions.

Cluster: 1 controller (1) + 1 broker (2); lag needs no replication, and two JVMs leave the
cores to the clients.

* Five topics, one per codec (``lag-none``, ``lag-gzip``, ``lag-snappy``, ``lag-lz4``,
  ``lag-zstd``), 2 partitions each. One producer JVM (``peer/java/PeerClient.java``) sends
  ``RATE`` records/s to each topic for ``PRODUCE_S`` s with acks=all, that topic's codec and
  two record headers (``trace-id``, ``source``).
* Consumer groups over all five topics, committing once a second:
  ``caught-up`` (as fast as it can, the whole time), ``slow`` (``SLOW_RATE`` records/s in
  total, below the production rate) and ``stopped`` (as fast as it can for ``STOPPED_S`` s,
  then gone, so its committed offsets freeze).
* ``kafka-consumer-groups --describe --all-groups`` every ``CAPTURE_EVERY_S`` s; the file
  name and the manifest carry the wall-clock ms of each capture.
"""

from __future__ import annotations

import time

from peer.scenario import ScenarioContext

NAME = "consumer_lag"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RATE = 20
PRODUCE_S = 60
SLOW_RATE = 40
STOPPED_S = 15
CAPTURE_EVERY_S = 10


def run(ctx: ScenarioContext) -> None:
    """Run the consumer-lag scenario (see the module docstring)."""
    cluster = ctx.cluster("consumer_lag", controllers=1, brokers=1, jmx=False)
    cluster.format()
    ctx.event("cluster_format", cluster="consumer_lag", controllers=1, brokers=1)
    cluster.start()
    ctx.event("cluster_started", cluster="consumer_lag")
    bs = cluster.bootstrap
    topics = [f"lag-{codec}" for codec in CODECS]
    for topic in topics:
        ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", topic,
                            "--partitions", "2", "--replication-factor", "1"])
        ctx.event("topic_created", topic=topic, partitions=2, replication_factor=1)

    specs = [f"{topic}:{codec}:headers" for topic, codec in zip(topics, CODECS, strict=True)]
    ctx.background("producer", ctx.kafka.client(["produce", bs, str(PRODUCE_S), str(RATE),
                                                   *specs]))
    ctx.event("producer_start", topics=topics, codecs=list(CODECS), rate_per_topic=RATE,
              seconds=PRODUCE_S, headers=["trace-id", "source"], acks="all")
    all_topics = ",".join(topics)
    groups = {
        "caught-up": (PRODUCE_S + 8, 0),
        "slow": (PRODUCE_S + 8, SLOW_RATE),
        "stopped": (STOPPED_S, 0),
    }
    consumers = {}
    for group, (seconds, rate) in groups.items():
        consumers[group] = ctx.background(
            f"consumer-{group}",
            ctx.kafka.client(["consume", bs, group, all_topics, str(seconds), str(rate)]),
        )
        ctx.event("consumer_start", group=group, topics=topics, seconds=seconds,
                  rate=rate or "unlimited", commit_interval_ms=1000)

    started = time.monotonic()
    stopped_seen = False
    capture = 0
    while time.monotonic() - started < PRODUCE_S + 10:
        capture += 1
        ctx.sleep(max(0.0, started + capture * CAPTURE_EVERY_S - time.monotonic()))
        if not stopped_seen and not consumers["stopped"].alive():
            stopped_seen = True
            ctx.event("consumer_stopped", group="stopped")
        ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups"],
                 check=False)
    for group, child in consumers.items():
        code = child.wait(30.0)
        ctx.event("consumer_end", group=group, exit_code=code, summary=child.tail(1))
    ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups"],
             check=False)
    ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups",
                                 "--state"], check=False)
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--time", "-1"])
    ctx.event("cluster_stop", cluster="consumer_lag", clean=True)
