"""An unclean leader election that loses acknowledged records (the replicas question, issue 41).

Cluster: 1 controller (1) + 2 brokers (2, 3); topic ``orders``, 1 partition, replicas ``2,3``
(broker 2 leads), ``min.insync.replicas=1``.

Timeline:

1. 500 records with ``acks=all``: both replicas hold offsets 0-499.
2. broker 3 (the follower) hard-stopped; once it has left the ISR, 300 records with ``acks=1``:
   broker 2 alone holds offsets 500-799, each acknowledged to the producer.
3. broker 2 hard-stopped: the partition is offline (its only in-sync replica is down).
4. broker 3 restarted; the operator restores availability with
   ``kafka-leader-election --election-type unclean``: broker 3 leads from offset 500 under a new
   epoch, and 100 more records (``acks=1``) take offsets 500-599 there.
5. the cluster is stopped with broker 2 still down: its copy of offsets 500-799, never truncated,
   is in the bundle — the 300 acknowledged records the election lost.

``kafka-get-offsets --time -1`` is captured after each step that moves the log end (500, 800
on broker 2, 600 on broker 3), ``kafka-topics --describe`` at each step.
"""

from __future__ import annotations

import re
from typing import Any

from peer.scenario import ScenarioContext

NAME = "unclean"
TOPIC = "orders"

SETTINGS = {
    "min.insync.replicas": "1",
    "replica.lag.time.max.ms": "3000",
    "auto.leader.rebalance.enable": "false",
}


def produce(ctx: ScenarioContext, bootstrap: str, records: int, acks: str) -> None:
    """``records`` records of 100 bytes at 500 records/s with ``acks``."""
    ctx.event("produce_start", topic=TOPIC, records=records, acks=acks)
    ctx.tool("producer-perf", [
        "--topic", TOPIC, "--num-records", str(records), "--record-size", "100", "--throughput", "500",
        "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}", "linger.ms=5",
        "client.id=unclean-producer",
    ], timeout=120.0)
    ctx.event("produce_end", topic=TOPIC, records=records)


def capture(ctx: ScenarioContext, bootstrap: str, label: str) -> None:
    """The partition's state and its log end, as Kafka's tools print them."""
    ctx.event("capture", what=label)
    ctx.tool("topics", ["--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC])
    ctx.tool("get-offsets", ["--bootstrap-server", bootstrap, "--topic", TOPIC, "--time", "-1"])


def elect_follower(ctx: ScenarioContext, cluster: Any, leader: Any, follower: Any) -> str:
    """Kill ``leader``, restart ``follower`` and elect it with ``kafka-leader-election --election-type
    unclean`` (asked again until it leads ``orders-0``); its bootstrap address."""
    cluster.kill(leader)
    ctx.event("broker_hard_stop", node=leader.id, signal="SIGKILL")
    cluster.launch(follower)
    ctx.event("broker_restart", node=follower.id)
    cluster.wait_ready([follower], timeout=120.0)
    ctx.event("brokers_ready", nodes=[follower.id])
    bs = f"127.0.0.1:{follower.broker_port}"

    def led() -> bool:
        ctx.kafka.run_tool("leader-election", ["--bootstrap-server", bs, "--election-type", "unclean",
                                               "--topic", TOPIC, "--partition", "0"], check=False)
        out = ctx.kafka.run_tool("topics", ["--bootstrap-server", bs, "--describe", "--topic", TOPIC],
                                 check=False).stdout
        return f"Leader: {follower.id}" in out

    waited = ctx.wait_until(led, timeout=60.0, interval=2.0, what="unclean election")
    ctx.event("unclean_election", node=follower.id, waited_s=round(waited, 1))
    return bs


def run(ctx: ScenarioContext) -> None:
    """Run the unclean-election scenario (see the module docstring)."""
    cluster = ctx.cluster("unclean", controllers=1, brokers=2, settings=SETTINGS)
    cluster.format()
    ctx.event("cluster_format", cluster="unclean", controllers=1, brokers=2, settings=SETTINGS)
    cluster.start()
    ctx.event("cluster_started", cluster="unclean")
    leader, follower = cluster.node(2), cluster.node(3)
    bs = f"127.0.0.1:{leader.broker_port}"
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", TOPIC,
                        "--replica-assignment", f"{leader.id}:{follower.id}"])
    ctx.event("topic_created", topic=TOPIC, partitions=1, replication_factor=2,
              replicas=[leader.id, follower.id])
    produce(ctx, bs, 500, "all")
    capture(ctx, bs, "baseline")

    cluster.kill(follower)
    ctx.event("broker_hard_stop", node=follower.id, signal="SIGKILL")

    def shrunk() -> bool:
        out = ctx.kafka.run_tool("topics", ["--bootstrap-server", bs, "--describe", "--topic", TOPIC],
                                 check=False).stdout
        isr = re.search(r"Isr: (\S*)", out)
        return isr is not None and isr[1] == str(leader.id)

    ctx.event("observed", what="follower out of the ISR",
              waited_s=round(ctx.wait_until(shrunk, timeout=45.0, interval=1.0, what="ISR shrink"), 1))
    produce(ctx, bs, 300, "1")
    capture(ctx, bs, f"before broker {leader.id} stopped")

    bs = elect_follower(ctx, cluster, leader, follower)
    produce(ctx, bs, 100, "1")
    capture(ctx, bs, "after the unclean election")
    ctx.sleep(2)
    ctx.event("cluster_stop", cluster="unclean", clean=True)
