"""The demo incident: one chain across all five areas, on one production cluster and its DR copy.

Clusters: ``prod``, 3 dedicated controllers (1-3) + 3 brokers (4-6), tiered storage on (Kafka's
``LocalTieredStorage`` behind the ``tiered`` scenario's ``FlakyTieredStorage`` wrapper, which
refuses uploads while a flag file exists); ``dr``, one combined node (7), the target of
MirrorMaker 2 (dedicated mode, aliases ``prod`` -> ``dr``, topic ``orders``, group offsets of
``billing`` synced).

Topics on ``prod``, each with a topic ``min.insync.replicas`` (MirrorMaker 2's own topics keep
the default 1: it creates them with one replica): ``orders`` (3 partitions, RF 3, min ISR 2),
``payments`` (2 partitions, RF 3, min ISR 3), ``audit`` (1 partition, RF 3, min ISR 2,
``remote.storage.enable``, 1 MiB segments, ``local.retention.ms`` 10 s, records of one repeated
1000-byte payload so the bundle compresses well).

Clients: a producer writes ``orders`` at ``RATE`` records/s with acks=all for the whole run;
groups ``fulfilment`` (as fast as it can), ``billing`` (``BILLING_RATE`` records/s, below the
production rate: its time lag grows past a minute) and ``reports`` (reads ``REPORTS_S`` s, then
leaves: its offsets freeze while the log grows).

Timeline (manifest ``phase`` events, ``name`` and ``state``), about three minutes:

1. ``baseline``: MirrorMaker 2 replicating; ``audit`` gets ~1.5 MiB that uploads;
2. ``remote_down``: uploads refused (flag file) while ~3 MiB more arrive on ``audit``;
3. ``controller_pause``: the leader controller is frozen (SIGSTOP) for ``LEADER_PAUSE_S`` s:
   the quorum commits nothing and another controller leads the next epoch;
4. ``broker_down``: broker 6 is killed (SIGKILL): its replicas leave the ISR, ``payments`` is
   under min ISR;
5. ``mirror_down``: MirrorMaker 2 stopped for ``MIRROR_OUTAGE_S`` s while ``orders`` grows;
6. ``recovery``: uploads allowed again, MirrorMaker 2 and broker 6 restarted; the ISR expands,
   the uploads and the mirror catch up.

``kafka-topics --describe`` (with the under-replicated and under-min-ISR views),
``kafka-consumer-groups --describe --all-groups`` and ``kafka-metadata-quorum describe`` are
captured along the way; JmxTool samples, each second, each broker's ReplicaManager,
remote-storage and metadata-loading gauges, each controller's KIP-835 gauges (the ``quorum``
scenario's: applied and committed offsets, ``LastAppliedRecordLagMs``, ``raft-metrics``) and
MirrorMaker 2's metrics (node 0).
"""

from __future__ import annotations

import shutil
import time

from peer.cluster import free_ports
from peer.process import Managed
from peer.scenario import ScenarioContext
from peer.scenarios import isr, mm2, quorum, tiered

NAME = "demo"
#: Scenario modules whose code this one runs: their source is part of this bundle's hash.
USES = ("isr", "mm2", "quorum", "tiered")
RATE = 20
BILLING_RATE = 8
REPORTS_S = 25
RUN_S = 190
#: Bounds the producer's run should the scenario fail: the scenario stops it itself once MirrorMaker
#: 2's restart replicates and ``RUN_S`` has passed (``producer_stop``). On a loaded machine the
#: phases before the restart can outlast ``RUN_S``: a producer on its own timer had ended by then and
#: the restarted MirrorMaker 2 found nothing to replicate (a build timed out so).
CLIENT_LIMIT_S = RUN_S + 600
LEADER_PAUSE_S = 8
MIRROR_OUTAGE_S = 25
TASK_INTERVAL_MS = 5000
COPY_QUOTA = 1048576
TIER_TOPIC = "audit"
TOPIC = "orders"
GROUP = "billing"

SETTINGS = {
    "replica.lag.time.max.ms": "3000",
    "remote.log.storage.system.enable": "true",
    "metadata.log.max.snapshot.interval.ms": "30000",
}


def mm2_properties(source: str, target: str) -> str:
    """``mm2.properties``: the ``mm2`` scenario's settings, with the clusters' own names as
    MirrorMaker 2's aliases (``prod->dr``), for ``orders`` and the group ``billing``."""
    text = mm2.mm2_properties(source, target).replace(f"->target.groups = {mm2.GROUP}", f"->target.groups = {GROUP}")
    for old, new in (("source", "prod"), ("target", "dr")):
        for suffix in (".bootstrap.servers", ".offset."):
            text = text.replace(f"{old}{suffix}", f"{new}{suffix}")
        text = text.replace(f"{old}->", f"{new}->").replace(f"->{old}", f"->{new}")
    return text.replace("clusters = source, target", "clusters = prod, dr")


def run(ctx: ScenarioContext) -> None:
    """Run the demo incident (see the module docstring)."""
    remote_dir = ctx.work / "remote"
    remote_dir.mkdir(parents=True, exist_ok=True)
    flag = ctx.work / "remote-storage-down.flag"
    flag.unlink(missing_ok=True)
    broker_settings = tiered.flaky_broker_settings(ctx, remote_dir, flag, metadata_replicas=3,
                                                   task_interval_ms=TASK_INTERVAL_MS, copy_quota=COPY_QUOTA)
    prod = ctx.cluster("prod", controllers=3, brokers=3, settings=SETTINGS, broker_settings=broker_settings)
    dr = ctx.cluster("dr", controllers=1, brokers=0, combined=True, jmx=False, first_id=7,
                     broker_settings={"auto.create.topics.enable": "true"})
    for c in (prod, dr):
        c.format()
        ctx.event("cluster_format", cluster=c.name, controllers=len(c.controllers), brokers=len(c.brokers))
    for c in (prod, dr):
        c.start()
        ctx.event("cluster_started", cluster=c.name, cluster_id=c.cluster_id)
    bs, dst = prod.bootstrap, dr.bootstrap

    def phase(name: str, state: str) -> None:
        ctx.event("phase", name=name, state=state)

    def create(topic: str, partitions: int, config: dict[str, str]) -> None:
        args = ["--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", str(partitions),
                "--replication-factor", "3"]
        for key, value in config.items():
            args += ["--config", f"{key}={value}"]
        ctx.tool("topics", args)
        ctx.event("topic_created", cluster="prod", topic=topic, partitions=partitions, replication_factor=3,
                  config=config)

    create(TOPIC, 3, {"min.insync.replicas": "2"})
    create("payments", 2, {"min.insync.replicas": "3"})
    create(TIER_TOPIC, 1, {"min.insync.replicas": "2", "remote.storage.enable": "true", "segment.bytes": "1048576",
                           "local.retention.ms": "10000", "retention.ms": "3600000"})
    payload = ctx.work / "audit-payload.txt"
    payload.write_text("a" * 1000 + "\n", "utf-8")

    def audit(records: int) -> None:
        ctx.event("produce_start", topic=TIER_TOPIC, records=records, record_size=1000)
        ctx.tool("producer-perf", ["--topic", TIER_TOPIC, "--num-records", str(records), "--payload-file",
                                   str(payload), "--throughput", "4000", "--producer-props",
                                   f"bootstrap.servers={bs}", "acks=all", "batch.size=65536", "linger.ms=10"],
                 timeout=120.0)
        ctx.event("produce_end", topic=TIER_TOPIC, records=records)

    started = time.monotonic()
    producer = ctx.background("producer", ctx.kafka.client(
        ["produce", bs, str(CLIENT_LIMIT_S), str(RATE), f"{TOPIC}:lz4:headers"]))
    ctx.event("producer_start", cluster="prod", topic=TOPIC, rate=RATE, seconds=RUN_S, acks="all")
    for group, seconds, rate in (("fulfilment", RUN_S, 0), (GROUP, RUN_S, BILLING_RATE), ("reports", REPORTS_S, 0)):
        ctx.background(f"consumer-{group}", ctx.kafka.client(["consume", bs, group, TOPIC, str(seconds), str(rate)]))
        ctx.event("consumer_start", cluster="prod", group=group, topics=[TOPIC], seconds=seconds,
                  rate=rate or "unlimited", commit_interval_ms=1000)
    isr.produce(ctx, bs, "payments", 600, 600)

    config = ctx.work / "mm2.properties"
    config.write_text(mm2_properties(bs, dst), encoding="utf-8")
    (ctx.bundle.root / "mm2.properties").write_text(config.read_text("utf-8"), "utf-8")
    jmx_port = free_ports(1)[0]
    mm2_argv = ctx.kafka.java(ctx.kafka.tool_class("mirror-maker"), [str(config)], heap="256m",
                              extra_jvm=mm2.jmx_flags(jmx_port))

    def start_mm2(n: int) -> Managed:
        child = ctx.background(f"mirror-maker-{n}", mm2_argv)
        ctx.event("mm2_start", run=n, config="mm2.properties")
        return child

    def replicated_total() -> int:
        return mm2.target_records(ctx, dst, f"prod.{TOPIC}", capture=False)

    def groups() -> None:
        ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups"], check=False)

    # 1. baseline
    phase("baseline", "start")
    mirror = start_mm2(1)
    ctx.wait_until(lambda: replicated_total() > 0, timeout=90.0, interval=2.0, what="MM2 replicating")
    ctx.event("mm2_replicating", run=1)
    audit(1500)  # JmxTool resolves its MBean names when it starts: after the topic's gauges exist
    for broker in prod.brokers:
        ctx.sample(broker.id, "demo", broker.jmx_url,
                   isr.ISR_MBEANS + tiered.mbeans(TIER_TOPIC) + quorum.BROKER_MBEANS)
    for controller in prod.controllers:
        ctx.sample(controller.id, "quorum", controller.jmx_url, quorum.CONTROLLER_MBEANS)
    ctx.sample(0, "mm2", f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{jmx_port}/jmxrmi", mm2.MM2_MBEANS,
               required=["type=MirrorSourceConnector"])
    isr.describe(ctx, bs, "baseline")
    ctx.tool("metadata-quorum", ["--bootstrap-server", bs, "describe", "--status"])
    groups()
    ctx.sleep(2 * TASK_INTERVAL_MS / 1000 + 3)
    phase("baseline", "end")

    # 2. remote storage refuses uploads
    phase("remote_down", "start")
    flag.write_text("remote storage down\n", "utf-8")
    ctx.event("remote_storage_down", flag=str(flag))
    audit(3000)

    # 3. the leader controller freezes: a commit stall and a new leader
    phase("controller_pause", "start")
    status = ctx.tool("metadata-quorum", ["--bootstrap-server", bs, "describe", "--status"])
    leader = prod.node(quorum.leader_id(status))
    process = leader.process
    assert process is not None
    process.pause()
    ctx.cleanups.append(process.resume)
    ctx.event("node_pause", node=leader.id, role="leader controller", signal="SIGSTOP", planned_s=LEADER_PAUSE_S)
    ctx.sleep(LEADER_PAUSE_S)
    process.resume()
    ctx.event("node_resume", node=leader.id, role="leader controller", signal="SIGCONT")
    ctx.sleep(4)
    ctx.tool("metadata-quorum", ["--bootstrap-server", bs, "describe", "--status"])
    phase("controller_pause", "end")

    # 4. a broker dies: ISR shrinks, payments under min ISR
    phase("broker_down", "start")
    victim = prod.node(6)
    prod.kill(victim)
    ctx.event("broker_hard_stop", node=victim.id, signal="SIGKILL")
    ctx.sleep(4)
    waited = isr.wait_listed(ctx, bs, "--under-min-isr-partitions", "Topic: payments")
    ctx.event("observed", what="payments under min ISR", waited_s=waited)
    isr.describe(ctx, bs, f"after broker {victim.id} stopped")
    groups()

    # 5. MirrorMaker 2 stops while orders grows
    phase("mirror_down", "start")
    ctx.event("mm2_stopping", run=1, signal="SIGTERM")
    mirror.stop(30.0)
    ctx.event("mm2_stop", run=1, signal="SIGTERM")
    ctx.sleep(MIRROR_OUTAGE_S)

    # 6. recovery
    phase("recovery", "start")
    flag.unlink()
    ctx.event("remote_storage_up", flag=str(flag))
    phase("remote_down", "end")
    before = replicated_total()
    mirror = start_mm2(2)
    phase("mirror_down", "end")
    prod.launch(victim)
    ctx.event("broker_restart", node=victim.id)
    phase("broker_down", "end")
    prod.wait_ready([victim], timeout=120.0)
    ctx.wait_until(lambda: replicated_total() > before, timeout=mm2.RESTART_WAIT_S, interval=1.0,
                   what="MM2 replicating again")
    ctx.event("mm2_replicating", run=2)

    def healed() -> bool:
        out = ctx.kafka.run_tool("topics", ["--bootstrap-server", bs, "--describe", "--exclude-internal",
                                            "--under-replicated-partitions"], check=False).stdout
        return not out.strip()

    waited = ctx.wait_until(healed, timeout=90.0, interval=2.0, what="ISR expansion")
    ctx.event("isr_expanded", waited_s=round(waited, 1))
    isr.describe(ctx, bs, "after restart")
    ctx.sleep(max(0.0, started + RUN_S - 5 - time.monotonic()))
    groups()
    ctx.tool("metadata-quorum", ["--bootstrap-server", bs, "describe", "--replication"])
    phase("recovery", "end")
    ctx.sleep(max(0.0, started + RUN_S - time.monotonic()))
    producer.stop(30.0)
    ctx.event("producer_stop", cluster="prod", topic=TOPIC, signal="SIGTERM")
    ctx.sleep(3.0)  # the consumers finish and commit
    ctx.event("mm2_stopping", run=2, signal="SIGTERM")
    mirror.stop(30.0)
    ctx.event("mm2_stop", run=2, signal="SIGTERM")
    ctx.event("cluster_stop", cluster="prod,dr", clean=True)

    def copy_remote() -> None:
        shutil.copytree(remote_dir, ctx.bundle.root / "remote", dirs_exist_ok=True)

    ctx.after_stop.append(copy_remote)
