"""KRaft quorum health (KIP-835): paused controllers and a paused broker.

Cluster: 3 dedicated controllers (1-3) + 2 brokers (4, 5); metadata snapshots every 20 s
(``metadata.log.max.snapshot.interval.ms``) so the bundle holds ``.checkpoint`` files.

Timeline (about 80 s after start-up):

1. baseline: a topic, a little data, ``kafka-metadata-quorum describe --status`` and
   ``--replication``;
2. a *follower* controller frozen with SIGSTOP for ``PAUSE_S`` s, then SIGCONT (its log end
   falls behind, then catches up);
3. broker 5 frozen for ``PAUSE_S`` s (missed heartbeats: fenced, then unfenced);
4. the *leader* controller frozen for ``LEADER_PAUSE_S`` s (a new leader is elected; the old
   one rejoins as follower).

Quorum tool output is captured before, during and after each pause. JmxTool samples every
node each second: controller ``KafkaController`` gauges, ``raft-metrics`` and the
metadata-loader metrics (``broker-metadata-metrics``, ``MetadataLoader``, and the loader's
``BrokerMetadataListener`` histograms ``MetadataBatchSizes`` and ``MetadataBatchProcessingTimeUs``
on the brokers, whose loader updates them for every batch it applies); the same MBeans
are scraped as Prometheus text every 5 s from the JMX exporter javaagent each node runs.
"""

from __future__ import annotations

import re
import threading

from peer.cluster import Cluster, Node
from peer.errors import ScenarioError
from peer.scenario import ScenarioContext

NAME = "quorum"
#: Built with the machine to itself (every scenario build slot): its tests judge episodes, stalls
#: and gauge times against the pause times to within a second or two. Built three at a time on
#: 2 cores (load 7-11), JmxTool answered a resumed leader late (an 8 s pause read as a 12.8 s
#: episode), and on 3.9.2 a resumed follower's election outlasted the stall threshold (2.1 s).
EXCLUSIVE = True
PAUSE_S = 12
LEADER_PAUSE_S = 8

CONTROLLER_MBEANS = [
    "kafka.controller:type=KafkaController,name=ActiveControllerCount",
    "kafka.controller:type=KafkaController,name=LastAppliedRecordOffset",
    "kafka.controller:type=KafkaController,name=LastCommittedRecordOffset",
    "kafka.controller:type=KafkaController,name=LastAppliedRecordTimestamp",
    "kafka.controller:type=KafkaController,name=LastAppliedRecordLagMs",
    "kafka.controller:type=KafkaController,name=Metadata*",
    "kafka.controller:type=KafkaController,name=FencedBrokerCount",
    "kafka.controller:type=KafkaController,name=ActiveBrokerCount",
    "kafka.controller:type=KafkaController,name=NewActiveControllersCount",
    "kafka.controller:type=KafkaController,name=TimedOutBrokerHeartbeatCount",
    "kafka.server:type=raft-metrics",
]
BROKER_MBEANS = [
    "kafka.server:type=broker-metadata-metrics",
    "kafka.server:type=MetadataLoader,name=*",
    "kafka.server:type=raft-metrics",
    "kafka.server:type=BrokerMetadataListener,name=*",
]

SETTINGS = {
    "metadata.log.max.snapshot.interval.ms": "20000",
}


def leader_id(status: str) -> int:
    """``LeaderId`` from ``kafka-metadata-quorum describe --status`` output.

    Examples
    --------
    >>> leader_id("ClusterId:              x\\nLeaderId:               2\\n")
    2
    """
    match = re.search(r"^LeaderId:\s+(-?\d+)", status, re.MULTILINE)
    if match is None:
        raise ValueError(f"no LeaderId in quorum status: {status[:200]!r}")
    return int(match.group(1))


def capture(ctx: ScenarioContext, cluster: Cluster, label: str, paused: Node | None) -> str:
    """Capture quorum status and replication through a broker that is not paused.

    While a node is paused the admin client gets short timeouts, so a capture cannot stretch
    the pause; a failed capture is kept with its exit code.
    """
    broker = next(b for b in cluster.brokers if b is not paused)
    bs = f"127.0.0.1:{broker.broker_port}"
    ctx.event("capture", what=label)
    extra: list[str] = []
    if paused is not None:
        config = cluster.home / "short-timeouts.properties"
        config.write_text("request.timeout.ms=4000\ndefault.api.timeout.ms=5000\n", "utf-8")
        extra = ["--command-config", str(config)]
    strict = paused is None
    status = ctx.tool("metadata-quorum",
                      ["--bootstrap-server", bs, *extra, "describe", "--status"], check=strict)
    ctx.tool("metadata-quorum", ["--bootstrap-server", bs, *extra, "describe", "--replication"],
             check=strict)
    return status


def pause(ctx: ScenarioContext, cluster: Cluster, node: Node, seconds: float, role: str) -> None:
    """Freeze ``node`` for exactly ``seconds`` s (a timer resumes it), capturing halfway."""
    process = node.process
    if process is None:
        raise ScenarioError(f"node {node.id} is not running")

    def resume() -> None:
        process.resume()
        ctx.event("node_resume", node=node.id, role=role, signal="SIGCONT")

    timer = threading.Timer(seconds, resume)
    process.pause()
    ctx.event("node_pause", node=node.id, role=role, signal="SIGSTOP", planned_s=seconds)
    timer.start()
    ctx.cleanups.append(process.resume)
    try:
        ctx.sleep(seconds / 2)
        capture(ctx, cluster, f"during pause of node {node.id}", node)
    finally:
        timer.join(seconds + 5)
    ctx.sleep(6)
    capture(ctx, cluster, f"after pause of node {node.id}", None)


def run(ctx: ScenarioContext) -> None:
    """Run the quorum scenario (see the module docstring)."""
    cluster = ctx.cluster("quorum", controllers=3, brokers=2, settings=SETTINGS,
                          prometheus=CONTROLLER_MBEANS + BROKER_MBEANS)
    cluster.format()
    ctx.event("cluster_format", cluster="quorum", controllers=3, brokers=2, settings=SETTINGS)
    cluster.start()
    ctx.event("cluster_started", cluster="quorum")
    for node in cluster.nodes:
        mbeans = CONTROLLER_MBEANS if node.is_controller else BROKER_MBEANS
        ctx.sample(node.id, "quorum", node.jmx_url, mbeans)
    bs = cluster.bootstrap
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", "q-events",
                        "--partitions", "2", "--replication-factor", "2"])
    ctx.event("topic_created", topic="q-events", partitions=2, replication_factor=2)
    ctx.tool("producer-perf", ["--topic", "q-events", "--num-records", "500", "--record-size",
                               "100", "--throughput", "500", "--producer-props",
                               f"bootstrap.servers={bs}", "acks=all"], timeout=120.0)
    ctx.sleep(3)
    status = capture(ctx, cluster, "baseline", None)

    leader = cluster.node(leader_id(status))
    follower = next(n for n in cluster.controllers if n is not leader)
    pause(ctx, cluster, follower, PAUSE_S, "follower controller")
    pause(ctx, cluster, cluster.node(5), PAUSE_S, "broker")
    status = capture(ctx, cluster, "before leader pause", None)
    leader = cluster.node(leader_id(status))
    pause(ctx, cluster, leader, LEADER_PAUSE_S, "leader controller")
    ctx.sleep(4)
    capture(ctx, cluster, "end", None)
    ctx.event("cluster_stop", cluster="quorum", clean=True)
