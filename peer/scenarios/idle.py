"""A quiet single-node KRaft cluster: the metadata log an older release writes when idle.

Run on the releases of :data:`peer.scenario.ERA_SETS` (3.1.2 and 3.2.3, before NoOpRecords; 3.3.2
and 3.5.2, after)
so that the quorum analysis meets the metadata log of each era as Kafka itself wrote it.

Cluster: one node (id 1) with both roles, default ``metadata.max.idle.interval.ms`` (500 ms).

Timeline (about 20 s after start-up):

1. ``IDLE_S`` s with nothing to do (a release with NoOpRecords appends one per idle interval;
   one without them appends nothing once the broker is registered and unfenced);
2. a topic ``era`` with 3 partitions is created (TopicRecord and PartitionRecords);
3. another ``IDLE_S`` s, then a clean stop.
"""

from __future__ import annotations

from peer.scenario import ScenarioContext

NAME = "idle"
IDLE_S = 8
TOPIC = "era"
PARTITIONS = 3


def run(ctx: ScenarioContext) -> None:
    """Start one combined node, idle, create a topic, idle, stop."""
    cluster = ctx.cluster("idle", controllers=1, brokers=0, combined=True, jmx=False)
    cluster.start()
    ctx.event("started", node=1)
    ctx.sleep(IDLE_S)
    ctx.tool("topics", ["--bootstrap-server", cluster.bootstrap, "--create", "--topic", TOPIC,
                        "--partitions", str(PARTITIONS), "--replication-factor", "1"])
    ctx.event("topic_created", topic=TOPIC, partitions=PARTITIONS)
    ctx.sleep(IDLE_S)
    ctx.tool("topics", ["--bootstrap-server", cluster.bootstrap, "--describe", "--topic", TOPIC])
    ctx.event("stopping")
