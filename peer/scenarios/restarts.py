"""Whole-cluster restarts: a cluster stopped cleanly and started again, then killed and started again.

What a dev or test cluster's metadata log looks like after its hosts were shut down or lost power:
every node down at once, for a while, then every node back. An analysis should tell each such
stop once, with its downtime, rather than as a commit stall and an outage of every partition.

Cluster: 1 controller (1) + 2 brokers (2-3), ``min.insync.replicas=1``; topic ``events``
(2 partitions, RF 2).

Timeline (about 60 s of Kafka time after start-up):

1. ``events`` created, 400 records produced with ``acks=all``;
2. ``whole_cluster_stop`` (clean): every node stopped by SIGTERM (brokers first, then the
   controller), down ``DOWN_S`` s, then ``whole_cluster_start`` and ``whole_cluster_ready``;
   400 more records;
3. ``whole_cluster_stop`` (not clean): every node killed at once (SIGKILL), down ``DOWN_S`` s,
   started again the same way; 400 more records;
4. ``broker_hard_stop``: broker 3 alone killed for ``DOWN_S`` s and restarted (an outage of some
   brokers only, which stays an outage);
5. a clean stop at the end (``cluster_stop``).

``kafka-topics --describe`` is captured after each start.
"""

from __future__ import annotations

from peer.scenario import ScenarioContext

NAME = "restarts"
DOWN_S = 10
TOPIC = "events"
SETTINGS = {"min.insync.replicas": "1"}


def produce(ctx: ScenarioContext, bootstrap: str, records: int) -> None:
    """Produce ``records`` records of 100 bytes with acks=all."""
    ctx.event("produce_start", topic=TOPIC, records=records)
    ctx.tool("producer-perf", [
        "--topic", TOPIC, "--num-records", str(records), "--record-size", "100", "--throughput", "400",
        "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "client.id=restarts-producer",
    ], timeout=120.0)
    ctx.event("produce_end", topic=TOPIC, records=records)


def run(ctx: ScenarioContext) -> None:
    """Run the restarts scenario (see the module docstring)."""
    cluster = ctx.cluster("restarts", controllers=1, brokers=2, settings=SETTINGS, jmx=False)
    cluster.format()
    cluster.start()
    ctx.event("cluster_started", cluster="restarts")
    bs = cluster.bootstrap
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", TOPIC, "--partitions", "2",
                        "--replication-factor", "2"])
    ctx.event("topic_created", topic=TOPIC, partitions=2, replication_factor=2)
    produce(ctx, bs, 400)
    ctx.sleep(2)

    for clean in (True, False):
        ctx.event("whole_cluster_stop", clean=clean)
        if clean:
            cluster.stop()
        else:
            for node in cluster.nodes:
                cluster.kill(node)
        ctx.event("whole_cluster_down", clean=clean)
        ctx.sleep(DOWN_S)
        ctx.event("whole_cluster_start")
        cluster.start()
        ctx.event("whole_cluster_ready")
        ctx.tool("topics", ["--bootstrap-server", bs, "--describe", "--topic", TOPIC])
        produce(ctx, bs, 400)
        ctx.sleep(2)

    broker = cluster.node(3)
    cluster.kill(broker)
    ctx.event("broker_hard_stop", node=broker.id, signal="SIGKILL")
    ctx.sleep(DOWN_S)
    cluster.launch(broker)
    ctx.event("broker_restart", node=broker.id)
    cluster.wait_ready([broker], timeout=120.0)
    ctx.event("brokers_ready", nodes=[broker.id])
    ctx.sleep(4)
    ctx.tool("topics", ["--bootstrap-server", bs, "--describe", "--topic", TOPIC])
    ctx.sleep(2)
    ctx.event("cluster_stop", cluster="restarts", clean=True)
