"""A flapping ISR: one broker paused again and again, now long enough to be fenced, now only to fall behind.

Cluster: 1 controller (1) + 3 brokers (2-4), ``replica.lag.time.max.ms`` 2000 (a leader checks its
followers each second) and a broker session timeout of 9000 ms (heartbeats each second), so that
the two kinds of pause stay seconds apart from each limit on a loaded machine.

Timeline (about 90 s of Kafka time after start-up):

1. topic ``events`` (3 partitions, RF 3, ``min.insync.replicas=2``); a producer writes to it
   with ``acks=all`` at a steady rate until the last pause is over, so a follower that stops
   fetching falls behind the leader's log end;
2. broker 4 frozen (SIGSTOP) for ``LONG_PAUSE_S`` s, past its session timeout: the controller
   fences it and takes it out of every ISR in the same batch; thawed (SIGCONT), it registers
   again, is unfenced and rejoins the ISRs once caught up;
3. broker 4 frozen for ``SHORT_PAUSE_S`` s, past ``replica.lag.time.max.ms`` but well inside its
   session: each leader shrinks its ISR on its own (AlterPartition), and no fence is written;
4. steps 2 and 3 once more, then a clean stop.

Each pause and thaw is in the manifest (``broker_paused``/``broker_resumed``), and ``kafka-topics
--describe`` is captured after each re-expansion; every broker's ReplicaManager gauges are sampled
over JMX each second.
"""

from __future__ import annotations

from peer.scenario import ScenarioContext
from peer.scenarios.isr import ISR_MBEANS

NAME = "flap"
USES = ("isr",)
TOPIC = "events"
SETTINGS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "2000", "broker.session.timeout.ms": "9000"}
#: Past the broker session timeout (9 s): fenced. Past replica.lag.time.max.ms (2 s) only: falls behind.
LONG_PAUSE_S = 14.0
SHORT_PAUSE_S = 4.0
PAUSES = (LONG_PAUSE_S, SHORT_PAUSE_S, LONG_PAUSE_S, SHORT_PAUSE_S)
RATE = 50


def run(ctx: ScenarioContext) -> None:
    """Run the flapping scenario (see the module docstring)."""
    cluster = ctx.cluster("flap", controllers=1, brokers=3, settings=SETTINGS)
    cluster.format()
    cluster.start()
    ctx.event("cluster_started", cluster="flap", controllers=1, brokers=3, settings=SETTINGS)
    bs = cluster.bootstrap
    for broker in cluster.brokers:
        ctx.sample(broker.id, "isr", broker.jmx_url, ISR_MBEANS)
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", TOPIC, "--partitions", "3",
                        "--replication-factor", "3"])
    ctx.event("topic_created", topic=TOPIC, partitions=3, replication_factor=3)

    seconds = int(sum(PAUSES) + 30 * len(PAUSES))  # longer than the pauses take: stopped after them
    producer = ctx.background("producer", ctx.kafka.java(ctx.kafka.tool_class("producer-perf"), [
        "--topic", TOPIC, "--num-records", str(RATE * seconds), "--record-size", "100", "--throughput", str(RATE),
        "--producer-props", f"bootstrap.servers={bs}", "acks=all", "linger.ms=5", "client.id=flap-producer",
        "delivery.timeout.ms=120000"], heap="128m"))
    ctx.event("produce_start", topic=TOPIC, rate=RATE, seconds=seconds, acks="all")
    ctx.sleep(5)

    victim = cluster.node(4)
    args = ["--bootstrap-server", bs, "--describe", "--topic", TOPIC, "--under-replicated-partitions"]
    for pause in PAUSES:
        assert victim.process is not None
        victim.process.pause()
        ctx.event("broker_paused", node=victim.id, seconds=pause)
        ctx.sleep(pause)
        victim.process.resume()
        ctx.event("broker_resumed", node=victim.id)
        waited = ctx.wait_until(lambda: not ctx.kafka.run_tool("topics", args, check=False).stdout.strip(),
                                timeout=60.0, interval=1.0, what="ISR re-expansion")
        ctx.event("isr_expanded", waited_s=round(waited, 1))
        ctx.tool("topics", ["--bootstrap-server", bs, "--describe", "--topic", TOPIC])
        ctx.sleep(2)
    code = producer.stop(10.0)
    ctx.event("produce_end", exit_code=code, stopped=True)
    ctx.event("cluster_stop", cluster="flap", clean=True)
