"""Tiered storage backlog (KIP-405 / KIP-963): uploads that keep pace, fall behind and fail, then deletions.

Cluster: 1 controller (1) + 1 broker (2) with ``remote.log.storage.system.enable=true``, the
topic-based remote log metadata manager (``__remote_log_metadata``, 1 partition) and, as remote
storage, Kafka's ``LocalTieredStorage`` (from the kafka-storage test jar) behind a thin wrapper
(``FlakyTieredStorage``, compiled here against the release and loaded through
``remote.log.storage.manager.class.path``) that refuses every upload while a flag file exists.
The storage directory is copied to ``<bundle>/remote/``.

Topic ``tiered``: 1 partition, ``remote.storage.enable=true``, 1 MiB segments (the smallest
Kafka 4.x accepts), ``local.retention.ms`` 10 s. The RLM tasks run every ``TASK_INTERVAL_MS``
and uploads are throttled to ``COPY_QUOTA`` bytes/s (KIP-956). Phases, each marked in the
manifest by a ``phase`` event (``name``, ``state`` ``start``/``end``):

1. ``healthy`` — records trickle in (a segment rolls every ~20 s, well under the quota): every
   rolled segment is uploaded by the next task run (at most one task interval plus ~4 s of
   throttled upload, under the two intervals a backlog must last, even on a loaded machine), so
   uploads keep pace;
2. ``burst`` — ~10 MiB at once: ten segments roll within seconds and the throttled uploads fall
   behind for tens of seconds (RemoteCopyLag*);
3. ``failing`` — the flag file exists while ~3 MiB arrive: every copy attempt fails
   (COPY_SEGMENT_STARTED without FINISHED; Kafka 4.x also writes the clean-up's
   DELETE_SEGMENT_STARTED/FINISHED), then the flag is removed and the retries upload them;
4. ``retention`` — ``retention.bytes`` is lowered to 4 MiB (``kafka-configs --alter``), so the
   expiration task deletes the older remote segments (RemoteDeleteLag*, DELETE_SEGMENT_* events).

JmxTool samples the broker's remote-storage BrokerTopicMetrics (broker-wide and for the topic)
each second, starting once the topic's gauges exist; the same MBeans are scraped as Prometheus
text every 5 s from the JMX exporter javaagent the broker runs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from peer.errors import ToolError
from peer.scenario import ScenarioContext

NAME = "tiered"
TASK_INTERVAL_MS = 10000
#: Upload quota (KIP-956, bytes/s): a 10 MiB burst takes well over two task intervals to upload,
#: while the healthy phase's ~0.1 MiB/s never reaches it.
COPY_QUOTA = 262144
TOPIC = "tiered"
#: How long uploads fail in the ``failing`` phase (a few task runs).
FAILING_S = 25.0

REMOTE_METRICS = [
    "RemoteCopyLagBytes", "RemoteCopyLagSegments", "RemoteDeleteLagBytes",
    "RemoteDeleteLagSegments", "RemoteLogSizeBytes", "RemoteLogMetadataCount",
    "RemoteCopyBytesPerSec", "RemoteCopyRequestsPerSec", "RemoteCopyErrorsPerSec",
    "RemoteDeleteRequestsPerSec",
]

#: The remote storage manager of the scenario: Kafka's LocalTieredStorage (a final class, so
#: wrapped, not extended) that throws while the file named by ``rsm.config.fail.flag`` exists.
FLAKY_CLASS = "FlakyTieredStorage"
FLAKY_SOURCE = """\
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.server.log.remote.storage.LocalTieredStorage;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/** LocalTieredStorage that refuses uploads while the file named by fail.flag exists. */
public class FlakyTieredStorage implements RemoteStorageManager {
    private final LocalTieredStorage delegate = new LocalTieredStorage();
    private volatile Path flag;

    @Override
    public void configure(Map<String, ?> configs) {
        Object value = configs.get("fail.flag");
        flag = value == null ? null : Paths.get(value.toString());
        delegate.configure(configs);
    }

    @Override
    public Optional<RemoteLogSegmentMetadata.CustomMetadata> copyLogSegmentData(
            RemoteLogSegmentMetadata metadata, LogSegmentData data) throws RemoteStorageException {
        if (flag != null && Files.exists(flag)) {
            throw new RemoteStorageException("remote storage unavailable (staged while " + flag + " exists)");
        }
        return delegate.copyLogSegmentData(metadata, data);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int start) throws RemoteStorageException {
        return delegate.fetchLogSegment(metadata, start);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int start, int end)
            throws RemoteStorageException {
        return delegate.fetchLogSegment(metadata, start, end);
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata metadata, IndexType type) throws RemoteStorageException {
        return delegate.fetchIndex(metadata, type);
    }

    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata metadata) throws RemoteStorageException {
        delegate.deleteLogSegmentData(metadata);
    }

    @Override
    public void close() throws IOException {
        delegate.close();
    }
}
"""


def mbeans(topic: str) -> list[str]:
    """Broker-wide and per-topic remote-storage MBeans."""
    names = []
    for metric in REMOTE_METRICS:
        names.append(f"kafka.server:type=BrokerTopicMetrics,name={metric}")
        names.append(f"kafka.server:type=BrokerTopicMetrics,name={metric},topic={topic}")
    names.append("kafka.log.remote:type=RemoteLogManager,name=RemoteLogManagerTasksAvgIdlePercent")
    return names


def flaky_broker_settings(ctx: ScenarioContext, remote_dir: Path, flag: Path, *, metadata_replicas: int = 1,
                          task_interval_ms: int = TASK_INTERVAL_MS, copy_quota: int = COPY_QUOTA) -> dict[str, str]:
    """A broker's tiered-storage settings: :data:`FLAKY_SOURCE` (compiled here) over Kafka's
    ``LocalTieredStorage`` in ``remote_dir``, refusing uploads while ``flag`` exists; quick remote
    log manager tasks, a copy quota and quick local retention, so a short run shows a backlog."""
    return {
        "remote.log.storage.manager.class.name": FLAKY_CLASS,
        "remote.log.storage.manager.class.path": compile_flaky_storage(ctx),
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "remote.log.manager.task.interval.ms": str(task_interval_ms),
        "remote.log.manager.copy.max.bytes.per.second": str(copy_quota),
        "rlmm.config.remote.log.metadata.topic.num.partitions": "1",
        "rlmm.config.remote.log.metadata.topic.replication.factor": str(metadata_replicas),
        "rsm.config.dir": str(remote_dir),
        "rsm.config.delete.on.close": "false",
        "rsm.config.fail.flag": str(flag),
        "log.retention.check.interval.ms": "3000",
        "log.segment.delete.delay.ms": "1000",
    }


def compile_flaky_storage(ctx: ScenarioContext) -> str:
    """Compile :data:`FLAKY_SOURCE` against the release; returns the class directory."""
    src = ctx.work / "rsm-src"
    out = ctx.work / "rsm-classes"
    src.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    source = src / f"{FLAKY_CLASS}.java"
    source.write_text(FLAKY_SOURCE, "utf-8")
    try:
        done = subprocess.run(["javac", "-nowarn", "-cp", ctx.kafka.classpath, "-d", str(out), str(source)],
                              capture_output=True, text=True, timeout=180, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"javac did not compile {FLAKY_CLASS} in 180 s") from exc
    if done.returncode != 0:
        raise ToolError(f"javac {FLAKY_CLASS} failed:\n{done.stdout}{done.stderr}")
    return str(out)


def run(ctx: ScenarioContext) -> None:
    """Run the tiered-storage scenario (see the module docstring)."""
    remote_dir = ctx.work / "remote"
    remote_dir.mkdir(parents=True, exist_ok=True)
    flag = ctx.work / "remote-storage-down.flag"
    flag.unlink(missing_ok=True)
    broker_settings = flaky_broker_settings(ctx, remote_dir, flag)
    # Controllers validate topic configs, so they must know tiered storage is enabled too.
    settings = {"remote.log.storage.system.enable": "true"}
    cluster = ctx.cluster("tiered", controllers=1, brokers=1, settings=settings,
                          broker_settings=broker_settings, prometheus=mbeans(TOPIC))
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

    def produce(records: int, rate: int) -> None:
        ctx.event("produce_start", topic=TOPIC, records=records, record_size=1000, throughput=rate)
        ctx.tool("producer-perf", ["--topic", TOPIC, "--num-records", str(records),
                                   "--record-size", "1000", "--throughput", str(rate),
                                   "--producer-props", f"bootstrap.servers={bs}", "acks=all",
                                   "batch.size=65536", "linger.ms=10"], timeout=120.0)
        ctx.event("produce_end", topic=TOPIC, records=records)

    def phase(name: str, state: str) -> None:
        ctx.event("phase", name=name, state=state)

    produce(200, 4000)
    ctx.sample(broker.id, "tiered", broker.jmx_url, mbeans(TOPIC))

    # 1. healthy: ~50 records/s of 1000 bytes, a segment every ~20 s, uploaded by the next run
    # (at ~125/s two segments could roll within one task interval and, uploaded one after the
    # other at the quota, wait longer than two intervals on a loaded machine)
    phase("healthy", "start")
    produce(2200, 50)
    ctx.sleep(2 * TASK_INTERVAL_MS / 1000 + 5)  # the last, idle segment rolls by retention and uploads
    phase("healthy", "end")

    # 2. burst: ten segments at once, uploads throttled by the quota
    phase("burst", "start")
    produce(10000, 4000)
    ctx.sleep(4 * TASK_INTERVAL_MS / 1000 + 10)
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", TOPIC, "--time", "-1"])
    phase("burst", "end")

    # 3. failing: remote storage refuses uploads for a while, then recovers
    phase("failing", "start")
    flag.write_text("remote storage down\n", "utf-8")
    ctx.event("remote_storage_down", flag=str(flag))
    produce(3000, 4000)
    ctx.sleep(FAILING_S)
    flag.unlink()
    ctx.event("remote_storage_up", flag=str(flag))
    ctx.sleep(2 * TASK_INTERVAL_MS / 1000 + 10)
    phase("failing", "end")

    # 4. retention: the older remote segments are deleted
    ctx.tool("topics", ["--bootstrap-server", bs, "--describe", "--topic", TOPIC])
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", TOPIC, "--time", "-2"])
    phase("retention", "start")
    ctx.tool("configs", ["--bootstrap-server", bs, "--alter", "--entity-type", "topics",
                         "--entity-name", TOPIC, "--add-config",
                         "retention.bytes=4194304,local.retention.ms=2000"])
    ctx.event("config_set", scope="topic", topic=TOPIC,
              config={"retention.bytes": "4194304", "local.retention.ms": "2000"})
    ctx.sleep(2 * TASK_INTERVAL_MS / 1000 + 5)
    phase("retention", "end")
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", TOPIC, "--time", "-2"])
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", TOPIC, "--time", "-1"])
    ctx.event("cluster_stop", cluster="tiered", clean=True)

    def copy_remote() -> None:
        shutil.copytree(remote_dir, ctx.bundle.root / "remote", dirs_exist_ok=True)

    ctx.after_stop.append(copy_remote)
