"""ZooKeeper-mode clusters on loopback: one ZooKeeper server and Kafka 2.8 or 3.x brokers.

The ZooKeeper server runs from the release's own lib (Kafka 2.8 and 3.x ship the ``zookeeper`` jars)
as ``QuorumPeerMain zookeeper.properties``, as ``zookeeper-server-start.sh`` does. Brokers get
``broker.id`` and ``zookeeper.connect`` instead of ``process.roles``; there is no format step
(a ZooKeeper-mode broker writes its ``meta.properties``, version 0, itself). The cluster id is
fixed before the first broker starts (the ``/cluster/id`` znode), so it is the same
:func:`peer.cluster.cluster_id_for` value a KRaft cluster of that name would have.

Every JVM logs as Kafka 3.x's shipped ``config/log4j.properties`` (:data:`SHIPPED_LOG4J`)
directs: ``server.log``, ``controller.log`` (``kafka.controller`` at TRACE),
``state-change.log`` (``state.change.logger`` at INFO), ``kafka-request.log``,
``log-cleaner.log`` and ``kafka-authorizer.log``, plus stdout (the node's ``server.out``).

:class:`ZkCluster` reuses :class:`peer.cluster.Cluster`'s nodes, launch, kill and collect; its
:meth:`ZkCluster.stop` stops the brokers one at a time (each a controlled shutdown) and then
ZooKeeper. Kafka 2.8 and 3.x run here (4.0 removed ZooKeeper mode).
"""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from peer.cluster import BROKER, BROKER_SETTINGS, COMMON_SETTINGS, Cluster, Node, cluster_id_for, free_ports
from peer.errors import ClusterError
from peer.kafka import Kafka
from peer.process import install_handlers, spawn, tail_file

ZOOKEEPER = "zookeeper"

#: KRaft-only keys of :data:`peer.cluster.COMMON_SETTINGS` and ``BROKER_SETTINGS`` a ZooKeeper-mode
#: broker does not get.
KRAFT_ONLY = frozenset({"controller.listener.names", "broker.heartbeat.interval.ms", "broker.session.timeout.ms"})

#: Broker settings of ZooKeeper mode: a ZooKeeper session as short as KRaft's broker session
#: (6 s), so a killed broker leaves the cluster as quickly as in the KRaft scenarios.
ZK_BROKER_SETTINGS: dict[str, str] = {
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT",
    "zookeeper.session.timeout.ms": "6000",
    "zookeeper.connection.timeout.ms": "18000",
}

#: Kafka 3.x's shipped ``config/log4j.properties`` (3.3-3.9; reload4j), with plain
#: ``FileAppender``s for its hourly ``DailyRollingFileAppender``s, so a run that crosses an hour
#: keeps one file per logger. ``${kafka.logs.dir}`` is each JVM's ``log4j`` directory.
SHIPPED_LOG4J = """\
# Kafka 3.x config/log4j.properties (FileAppender for DailyRollingFileAppender)
log4j.rootLogger=INFO, stdout, kafkaAppender

log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
{appenders}
# Change the two lines below to adjust ZK client logging
log4j.logger.org.apache.zookeeper=INFO

# Change the two lines below to adjust the general broker logging level (output to server.log and stdout)
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO

# Change to DEBUG or TRACE to enable request logging
log4j.logger.kafka.request.logger=WARN, requestAppender
log4j.additivity.kafka.request.logger=false

log4j.logger.kafka.network.RequestChannel$=WARN, requestAppender
log4j.additivity.kafka.network.RequestChannel$=false

# Change the line below to adjust KRaft mode controller logging
log4j.logger.org.apache.kafka.controller=INFO, controllerAppender
log4j.additivity.org.apache.kafka.controller=false

# Change the line below to adjust ZK mode controller logging
log4j.logger.kafka.controller=TRACE, controllerAppender
log4j.additivity.kafka.controller=false

log4j.logger.kafka.log.LogCleaner=INFO, cleanerAppender
log4j.additivity.kafka.log.LogCleaner=false

log4j.logger.state.change.logger=INFO, stateChangeAppender
log4j.additivity.state.change.logger=false

# Access denials are logged at INFO level, change to DEBUG to also log allowed accesses
log4j.logger.kafka.authorizer.logger=INFO, authorizerAppender
log4j.additivity.kafka.authorizer.logger=false
"""

#: Appender name -> file, as the shipped file names them.
SHIPPED_APPENDERS: dict[str, str] = {
    "kafkaAppender": "server.log",
    "stateChangeAppender": "state-change.log",
    "requestAppender": "kafka-request.log",
    "cleanerAppender": "log-cleaner.log",
    "controllerAppender": "controller.log",
    "authorizerAppender": "kafka-authorizer.log",
}


def write_shipped_log_config(directory: Path) -> Path:
    """Write :data:`SHIPPED_LOG4J` as ``directory/log4j.properties`` (Kafka 3.x, reload4j)."""
    directory.mkdir(parents=True, exist_ok=True)
    appenders = []
    for name, file in SHIPPED_APPENDERS.items():
        appenders += ["",
                      f"log4j.appender.{name}=org.apache.log4j.FileAppender",
                      f"log4j.appender.{name}.File=${{kafka.logs.dir}}/{file}",
                      f"log4j.appender.{name}.layout=org.apache.log4j.PatternLayout",
                      f"log4j.appender.{name}.layout.ConversionPattern=[%d] %p %m (%c)%n"]
    text = SHIPPED_LOG4J.format(appenders="\n".join(appenders) + "\n")
    (directory / "log4j.properties").write_text(text, "utf-8")
    return directory


class ZkCluster(Cluster):
    """One ZooKeeper server and ``brokers`` ZooKeeper-mode brokers on 127.0.0.1 (Kafka 2.8 or 3.x).

    Parameters
    ----------
    kafka
        The release to run (2.8 or 3.x: its lib holds the ZooKeeper server).
    home
        Working directory: ``zookeeper/`` and one ``node-<id>/`` per broker.
    name
        Cluster name; also seeds the fixed cluster id.
    brokers
        Number of brokers, ids ``first_id`` upwards.
    settings, broker_settings
        ``server.properties`` overrides (both apply to every broker).
    jmx, heap, prometheus
        As for :class:`peer.cluster.Cluster`.
    zookeeper_heap
        ``-Xmx`` of the ZooKeeper server.
    """

    def __init__(
        self,
        kafka: Kafka,
        home: Path,
        name: str,
        *,
        brokers: int = 3,
        settings: Mapping[str, str] | None = None,
        broker_settings: Mapping[str, str] | None = None,
        jmx: bool = True,
        heap: str = "256m",
        first_id: int = 1,
        prometheus: Sequence[str] | None = None,
        zookeeper_heap: str = "128m",
    ) -> None:
        if kafka.major >= 4:
            raise ClusterError(f"Kafka {kafka.version} has no ZooKeeper mode (removed in 4.0)")
        if brokers < 1:
            raise ClusterError(f"a ZooKeeper-mode cluster needs at least one broker, got {brokers}")
        install_handlers()
        self.kafka = kafka
        self.home = home
        self.name = name
        self.cluster_id = cluster_id_for(name)
        self.heap = heap
        self.zookeeper_heap = zookeeper_heap
        self.jmx = jmx
        self.prometheus = list(prometheus) if prometheus is not None else None
        ports = free_ports(2 * brokers + 1)
        self.zookeeper = Node(0, [ZOOKEEPER], name, home / "zookeeper", broker_port=ports[-1])
        rf = str(min(3, brokers))
        base = {k: v for k, v in {**COMMON_SETTINGS, **BROKER_SETTINGS}.items() if k not in KRAFT_ONLY}
        base.update(ZK_BROKER_SETTINGS)
        base.update({"offsets.topic.replication.factor": rf, "transaction.state.log.replication.factor": rf,
                     "default.replication.factor": rf})
        base.update(settings or {})
        base.update(broker_settings or {})
        self.nodes: list[Node] = []
        for i, node_id in enumerate(range(first_id, first_id + brokers)):
            node = Node(node_id, [BROKER], name, home / f"node-{node_id}")
            node.broker_port = ports[2 * i]
            node.jmx_port = ports[2 * i + 1] if jmx else None
            if self.prometheus is not None:
                node.prometheus_port = free_ports(1)[0]
            listener = f"PLAINTEXT://127.0.0.1:{node.broker_port}"
            node.settings = {**base, "broker.id": str(node_id), "zookeeper.connect": self.zookeeper_connect,
                             "listeners": listener, "advertised.listeners": listener,
                             "log.dirs": str(node.log_dir)}
            self.nodes.append(node)
        self._formatted = False
        self._cluster_id_written = False

    @property
    def zookeeper_connect(self) -> str:
        """``zookeeper.connect`` of the brokers."""
        return f"127.0.0.1:{self.zookeeper.broker_port}"

    @property
    def zookeeper_config(self) -> Path:
        """The ZooKeeper server's ``zookeeper.properties``."""
        return self.zookeeper.home / "zookeeper.properties"

    # -- lifecycle ------------------------------------------------------------------------

    def format(self) -> None:
        """Write ``zookeeper.properties``, each broker's ``server.properties`` and the logging
        configuration; ZooKeeper mode has no storage format step."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._log_config = write_shipped_log_config(self.home / "log-config")
        self._agent: list[str] = []
        if self.prometheus is not None:
            from peer.prometheus import agent_config, fetch_agent

            config = self.home / "prometheus.yaml"
            config.write_text(agent_config(self.prometheus), "utf-8")
            self._agent = [str(fetch_agent()), str(config)]
        zk = self.zookeeper
        zk.home.mkdir(parents=True, exist_ok=True)
        zk.settings = {"dataDir": str(zk.home / "data"), "clientPort": str(zk.broker_port),
                       "clientPortAddress": "127.0.0.1", "maxClientCnxns": "0", "admin.enableServer": "false",
                       "tickTime": "2000", "initLimit": "5", "syncLimit": "2"}
        lines = [f"{k}={v}" for k, v in sorted(zk.settings.items())]
        self.zookeeper_config.write_text("\n".join(lines) + "\n", "utf-8")
        for node in self.nodes:
            node.home.mkdir(parents=True, exist_ok=True)
            lines = [f"{k}={v}" for k, v in sorted(node.settings.items())]
            (node.home / "server.properties").write_text("\n".join(lines) + "\n", "utf-8")
        self._formatted = True

    def start(self, nodes: Iterable[Node] | None = None, *, timeout: float = 120.0) -> None:
        """Start ZooKeeper (when it is not running), then the brokers (default: all), and wait
        until each is ready."""
        if not self._formatted:
            self.format()
        if not self.zookeeper.alive():
            self.start_zookeeper(timeout=timeout)
        super().start(nodes, timeout=timeout)

    def start_zookeeper(self, *, timeout: float = 60.0) -> None:
        """Start the ZooKeeper server, wait until it answers and write the ``/cluster/id`` znode
        (first start only)."""
        if not self._formatted:
            self.format()
        zk = self.zookeeper
        argv = self.kafka.java(
            self.kafka.tool_class("zookeeper"), [str(self.zookeeper_config)], heap=self.zookeeper_heap,
            extra_jvm=[f"-Dkafka.logs.dir={zk.log4j_dir}", "-Dzookeeper.admin.enableServer=false"],
            log4j_dir=self._log_config,
        )
        zk.starts += 1
        with open(zk.output, "a", encoding="utf-8") as fh:
            fh.write(f"===== peer: start #{zk.starts} at {int(time.time() * 1000)}\n")
        zk.output_mark = zk.output.stat().st_size
        zk.process = spawn(f"{self.name}-zookeeper", argv, output=zk.output)
        deadline = time.monotonic() + timeout
        while not _answers(zk.broker_port):
            if not zk.alive():
                raise ClusterError(f"ZooKeeper of {self.name} exited while starting:\n" + tail_file(zk.output, 60))
            if time.monotonic() > deadline:
                raise ClusterError(f"ZooKeeper of {self.name} not ready after {timeout:.0f} s:\n"
                                   + tail_file(zk.output, 60))
            time.sleep(0.2)
        if not self._cluster_id_written:
            self._write_cluster_id(deadline)
            self._cluster_id_written = True

    def _write_cluster_id(self, deadline: float) -> None:
        """Create ``/cluster/id`` as a broker would (``{"version":"1","id":...}``) with the fixed id."""
        value = json.dumps({"version": "1", "id": self.cluster_id}, separators=(",", ":"))
        for path, data in (("/cluster", ""), ("/cluster/id", value)):
            while True:
                done = self.kafka.run_tool("zookeeper-shell", ["-server", self.zookeeper_connect, "create", path,
                                                               data], check=False, timeout=60.0)
                text = done.stdout + done.stderr
                if f"Created {path}" in text or "already exists" in text:
                    break
                if time.monotonic() > deadline:
                    raise ClusterError(f"could not create {path} in ZooKeeper of {self.name}:\n{text[-3000:]}")
                time.sleep(1.0)

    @staticmethod
    def _started_marker(node: Node) -> bool:
        with open(node.output, "rb") as fh:
            fh.seek(node.output_mark)
            text = fh.read()
        return b"] started (kafka.server.KafkaServer)" in text

    def stop(self, timeout: float = 60.0) -> None:
        """Clean stop: the brokers one at a time (each a controlled shutdown through the
        controller), then ZooKeeper."""
        try:
            for node in self.nodes:
                if node.process is not None:
                    node.process.stop(timeout)  # SIGTERM to its group, SIGKILL after timeout
        finally:
            if self.zookeeper.process is not None:
                self.zookeeper.process.stop(timeout)

    def collect(self, dest: Path) -> list[dict[str, object]]:
        """As :meth:`peer.cluster.Cluster.collect` for the brokers; the ZooKeeper server's
        ``zookeeper.properties`` goes to ``zookeeper/config/`` and its log4j files to
        ``zookeeper/log4j/`` (its data directory is not copied)."""
        if self.zookeeper.alive():
            raise ClusterError("ZooKeeper is still running; stop it before collecting")
        entries = super().collect(dest)
        for entry in entries:
            entry["zookeeper_connect"] = self.zookeeper_connect
        target = dest / "zookeeper"
        if self.zookeeper_config.exists():
            (target / "config").mkdir(parents=True, exist_ok=True)
            shutil.copy2(self.zookeeper_config, target / "config" / "zookeeper.properties")
        if self.zookeeper.log4j_dir.exists():
            shutil.copytree(self.zookeeper.log4j_dir, target / "log4j", dirs_exist_ok=True)
        return entries

    def zookeeper_entry(self) -> dict[str, object]:
        """The manifest ``zookeeper`` entry (paths in the bundle)."""
        return {"connect": self.zookeeper_connect, "config": "zookeeper/config/zookeeper.properties",
                "log4j": [f"zookeeper/log4j/{f}" for f in sorted(set(SHIPPED_APPENDERS.values()))]}

    def tails(self, lines: int = 30) -> str:
        """The last lines of ZooKeeper's and every broker's output, for error messages."""
        head = f"--- {self.name} zookeeper ---\n{tail_file(self.zookeeper.output, lines)}"
        return head + "\n" + super().tails(lines)


def _answers(port: int) -> bool:
    """Whether a ZooKeeper server answers ``srvr`` (the one four-letter word enabled by default)
    on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2.0) as s:
            s.sendall(b"srvr")
            return b"Zookeeper version" in s.recv(4096)
    except OSError:
        return False
