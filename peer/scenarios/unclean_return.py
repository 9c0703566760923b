"""An unclean leader election whose old leader returns and truncates (the replicas question, issue 41).

Cluster: 1 controller (1) + 2 brokers (2, 3); topic ``orders``, 1 partition, replicas ``2,3``
(broker 2 leads), topic configs ``unclean.leader.election.enable=true`` and ``min.insync.replicas=1``.
Every record is written by ``PeerClient acked`` (``peer/java/PeerClient.java``), whose callback log
— each record's id and the offset the leader acknowledged — is kept as ``oracle/acked.jsonl``.

Timeline:

1. 500 records ``first-*`` with ``acks=all``: both replicas hold offsets 0-499; group ``readers``
   reads them all and commits 500.
2. broker 3 (the follower) hard-stopped; once it has left the ISR, 300 records ``alone-*`` with
   ``acks=1``: broker 2 alone holds offsets 500-799, each acknowledged; ``readers`` reads on and
   commits 800.
3. broker 2 hard-stopped: the partition is offline.
4. broker 3 restarted and elected from outside the ISR (the topic allows it; ``kafka-leader-election
   --election-type unclean`` asks for it, as in ``unclean``): it leads from offset
   500 under a new epoch; 100 records ``after-*`` (``acks=1``) take offsets 500-599.
5. broker 2 restarted: it loads its log (log end 800), follows broker 3 and truncates to 500 — the
   300 acknowledged ``alone-*`` records are gone from both replicas — then copies 500-599 and
   rejoins the ISR.
6. ``kafka-consumer-groups --describe --group readers`` (its committed 800 is past the log end 600),
   ``kafka-get-offsets`` and ``kafka-topics --describe``; a clean stop.
"""

from __future__ import annotations

import json
import re

from peer.errors import ScenarioError
from peer.scenario import ScenarioContext
from peer.scenarios.unclean import TOPIC, elect_follower

NAME = "unclean_return"
#: Scenario modules whose code this one runs (their source is part of its bundle's hash).
USES = ("unclean",)
GROUP = "readers"
#: The three writes: label, records, acks.
WRITES = (("first", 500, "all"), ("alone", 300, "1"), ("after", 100, "1"))

SETTINGS = {
    "min.insync.replicas": "1",
    "replica.lag.time.max.ms": "3000",
    "auto.leader.rebalance.enable": "false",
}


def write(ctx: ScenarioContext, bootstrap: str, label: str, records: int, acks: str) -> list[dict]:
    """``records`` records through ``PeerClient acked``; its callback lines (one per record)."""
    ctx.event("produce_start", topic=TOPIC, records=records, acks=acks, label=label)
    child = ctx.background(f"acked-{label}", ctx.kafka.client(["acked", bootstrap, TOPIC, str(records), acks, label]))
    code = child.wait(120.0)
    lines = [json.loads(x) for x in (ctx.work / f"acked-{label}.out").read_text().splitlines() if x.startswith("{")]
    acked = sum(1 for x in lines if "offset" in x)
    ctx.event("produce_end", topic=TOPIC, records=records, acks=acks, label=label, acknowledged=acked,
              exit_code=code)
    if code != 0 or acked != records:
        raise ScenarioError(f"producer {label}: exit {code}, {acked} of {records} acknowledged: {child.tail(5)}")
    return lines


def read(ctx: ScenarioContext, bootstrap: str, label: str) -> None:
    """Group ``readers`` reads ``orders`` to its end for 5 s and commits where it stopped."""
    ctx.event("consumer_start", group=GROUP, topics=[TOPIC], label=label)
    child = ctx.background(f"consumer-{label}", ctx.kafka.client(["consume", bootstrap, GROUP, TOPIC, "5", "0"]))
    code = child.wait(90.0)
    ctx.event("consumer_end", group=GROUP, exit_code=code, summary=child.tail(1))
    if code != 0:
        raise ScenarioError(f"consumer {GROUP} exited with {code}: {child.tail(5)}")


def capture(ctx: ScenarioContext, bootstrap: str, label: str, *, group: bool = False) -> str:
    """The partition's state and log end (and the group's offsets) as Kafka's tools print them."""
    ctx.event("capture", what=label)
    out = ctx.tool("topics", ["--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC])
    ctx.tool("get-offsets", ["--bootstrap-server", bootstrap, "--topic", TOPIC, "--time", "-1"])
    if group:
        ctx.tool("consumer-groups", ["--bootstrap-server", bootstrap, "--describe", "--group", GROUP], check=False)
    return out


def run(ctx: ScenarioContext) -> None:
    """Run the scenario (see the module docstring)."""
    cluster = ctx.cluster("unclean_return", controllers=1, brokers=2, settings=SETTINGS)
    cluster.format()
    ctx.event("cluster_format", cluster="unclean_return", controllers=1, brokers=2, settings=SETTINGS)
    cluster.start()
    ctx.event("cluster_started", cluster="unclean_return")
    leader, follower = cluster.node(2), cluster.node(3)
    bs = f"127.0.0.1:{leader.broker_port}"
    config = {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", TOPIC,
                        "--replica-assignment", f"{leader.id}:{follower.id}",
                        *(a for k, v in config.items() for a in ("--config", f"{k}={v}"))])
    ctx.event("topic_created", topic=TOPIC, partitions=1, replication_factor=2, replicas=[leader.id, follower.id],
              config=config)

    def isr(bootstrap: str) -> str | None:
        out = ctx.kafka.run_tool("topics", ["--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC],
                                 check=False).stdout
        found = re.search(r"Isr: (\S*)", out)
        return None if found is None else found[1]

    acked: list[dict] = []
    label, records, acks = WRITES[0]
    acked += write(ctx, bs, label, records, acks)
    read(ctx, bs, "before")
    capture(ctx, bs, "baseline")

    cluster.kill(follower)
    ctx.event("broker_hard_stop", node=follower.id, signal="SIGKILL")
    ctx.event("observed", what="follower out of the ISR", waited_s=round(ctx.wait_until(
        lambda: isr(bs) == str(leader.id), timeout=45.0, interval=1.0, what="ISR shrink"), 1))
    label, records, acks = WRITES[1]
    acked += write(ctx, bs, label, records, acks)
    read(ctx, bs, "alone")
    capture(ctx, bs, f"before broker {leader.id} stopped")

    bs = elect_follower(ctx, cluster, leader, follower)
    label, records, acks = WRITES[2]
    acked += write(ctx, bs, label, records, acks)
    capture(ctx, bs, "after the unclean election")

    cluster.launch(leader)
    ctx.event("broker_restart", node=leader.id)
    cluster.wait_ready([leader], timeout=120.0)
    ctx.event("brokers_ready", nodes=[leader.id])
    both = f"{follower.id},{leader.id}"
    ctx.event("observed", what="the old leader back in the ISR", waited_s=round(ctx.wait_until(
        lambda: isr(bs) in (both, f"{leader.id},{follower.id}"), timeout=60.0, interval=1.0, what="ISR expand"), 1))
    capture(ctx, bs, f"after broker {leader.id} returned", group=True)

    out = ctx.bundle.root / "oracle" / "acked.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(x, sort_keys=True) + "\n" for x in acked), encoding="utf-8")
    ctx.sleep(2)
    ctx.event("cluster_stop", cluster="unclean_return", clean=True)
