"""Tiered storage backlog (KIP-405 / KIP-963): uploads that fall behind, deletions after retention.

Cluster: 1 controller (1) + 1 broker (2) with ``remote.log.storage.system.enable=true``,
``LocalTieredStorage`` (from the kafka-storage test jar) writing to a directory that is copied
to ``<bundle>/remote/``, and the topic-based remote log metadata manager
(``__remote_log_metadata``, 1 partition).

* Topic ``tiered`` (1 partition, ``remote.storage.enable=true``, 1 MiB segments — the
  smallest Kafka 4.x accepts — and ``local.retention.ms`` 10 s).
* The RLM task runs every ``TASK_INTERVAL_MS`` and uploads are throttled to ``COPY_QUOTA``
  bytes/s; two bursts of ~6 MiB each roll several segments at once, so uploads fall behind
  (RemoteCopyLag*) for a while after each burst.
* Retention is then lowered to ``retention.bytes`` 4 MiB (``kafka-configs --alter``), so the
  expiration task deletes the older remote segments (RemoteDeleteLag*, DELETE_SEGMENT_*
  events) and the newer ones stay in ``remote/``.

JmxTool samples the broker's remote-storage BrokerTopicMetrics (broker-wide and for the topic)
each second, starting once the topic's gauges exist.
"""

from __future__ import annotations

import shutil

from peer.scenario import ScenarioContext

NAME = "tiered"
TASK_INTERVAL_MS = 10000
#: Upload quota (KIP-956, bytes/s): 6 MiB bursts take ~12 s to upload, so the copy lag is
#: visible in the once-a-second samples instead of vanishing inside one task run.
COPY_QUOTA = 524288
TOPIC = "tiered"

REMOTE_METRICS = [
    "RemoteCopyLagBytes", "RemoteCopyLagSegments", "RemoteDeleteLagBytes",
    "RemoteDeleteLagSegments", "RemoteLogSizeBytes", "RemoteLogMetadataCount",
    "RemoteCopyBytesPerSec", "RemoteCopyRequestsPerSec", "RemoteDeleteRequestsPerSec",
]


def mbeans(topic: str) -> list[str]:
    """Broker-wide and per-topic remote-storage MBeans."""
    names = []
    for metric in REMOTE_METRICS:
        names.append(f"kafka.server:type=BrokerTopicMetrics,name={metric}")
        names.append(f"kafka.server:type=BrokerTopicMetrics,name={metric},topic={topic}")
    names.append("kafka.log.remote:type=RemoteLogManager,name=RemoteLogManagerTasksAvgIdlePercent")
    return names


def run(ctx: ScenarioContext) -> None:
    """Run the tiered-storage scenario (see the module docstring)."""
    remote_dir = ctx.work / "remote"
    remote_dir.mkdir(parents=True, exist_ok=True)
    broker_settings = {
        "remote.log.storage.manager.class.name": ctx.kafka.tool_class("local-tiered-storage"),
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "remote.log.manager.task.interval.ms": str(TASK_INTERVAL_MS),
        "remote.log.manager.copy.max.bytes.per.second": str(COPY_QUOTA),
        "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "rsm.config.dir": str(remote_dir),
        "rsm.config.delete.on.close": "false",
        "log.retention.check.interval.ms": "3000",
        "log.segment.delete.delay.ms": "1000",
    }
    # Controllers validate topic configs, so they must know tiered storage is enabled too.
    settings = {"remote.log.storage.system.enable": "true"}
    cluster = ctx.cluster("tiered", controllers=1, brokers=1, settings=settings,
                          broker_settings=broker_settings)
    cluster.format()
    ctx.event("cluster_format", cluster="tiered", controllers=1, brokers=1,
              settings=broker_settings)
    cluster.start()
    ctx.event("cluster_started", cluster="tiered")
    bs = cluster.bootstrap
    broker = cluster.brokers[0]
    topic_config = {
        "remote.storage.enable": "true",
        "segment.bytes": "1048576",
        "local.retention.ms": "10000",
        "retention.ms": "600000",
    }
    args = ["--bootstrap-server", bs, "--create", "--topic", TOPIC, "--partitions", "1",
            "--replication-factor", "1"]
    for key, value in topic_config.items():
        args += ["--config", f"{key}={value}"]
    ctx.tool("topics", args)
    ctx.event("topic_created", topic=TOPIC, partitions=1, replication_factor=1,
              config=topic_config)

    def burst(records: int) -> None:
        ctx.event("produce_start", topic=TOPIC, records=records, record_size=1000)
        ctx.tool("producer-perf", ["--topic", TOPIC, "--num-records", str(records),
                                   "--record-size", "1000", "--throughput", "4000",
                                   "--producer-props", f"bootstrap.servers={bs}", "acks=all",
                                   "batch.size=65536", "linger.ms=10"], timeout=120.0)
        ctx.event("produce_end", topic=TOPIC, records=records)

    burst(200)
    ctx.sample(broker.id, "tiered", broker.jmx_url, mbeans(TOPIC))
    burst(6000)
    ctx.sleep(TASK_INTERVAL_MS / 1000 + 4)
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", TOPIC, "--time", "-1"])
    burst(6000)
    ctx.sleep(2 * TASK_INTERVAL_MS / 1000 + 10)
    ctx.tool("topics", ["--bootstrap-server", bs, "--describe", "--topic", TOPIC])
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", TOPIC, "--time", "-2"])
    ctx.tool("configs", ["--bootstrap-server", bs, "--alter", "--entity-type", "topics",
                         "--entity-name", TOPIC, "--add-config",
                         "retention.bytes=4194304,local.retention.ms=2000"])
    ctx.event("config_set", scope="topic", topic=TOPIC,
              config={"retention.bytes": "4194304", "local.retention.ms": "2000"})
    ctx.sleep(2 * TASK_INTERVAL_MS / 1000 + 5)
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", TOPIC, "--time", "-2"])
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", TOPIC, "--time", "-1"])
    ctx.event("cluster_stop", cluster="tiered", clean=True)

    def copy_remote() -> None:
        shutil.copytree(remote_dir, ctx.bundle.root / "remote", dirs_exist_ok=True)

    ctx.after_stop.append(copy_remote)
