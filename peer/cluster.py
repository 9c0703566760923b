"""KRaft clusters on loopback: format, start, stop, kill, pause and collect real Kafka nodes.

Each node is a separate JVM (``kafka.Kafka server.properties``) in its own process group, with
a small heap, listeners on 127.0.0.1 at free ports and, optionally, JMX on a free port. A
:class:`Cluster` is a context manager; leaving it stops every node, also on error.
"""

from __future__ import annotations

import base64
import hashlib
import random
import shutil
import signal
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from peer.errors import ClusterError
from peer.kafka import Kafka
from peer.process import Managed, install_handlers, spawn, tail_file

BROKER = "broker"
CONTROLLER = "controller"

#: Settings every node gets; sized for a 2-core machine and a handful of partitions.
COMMON_SETTINGS: dict[str, str] = {
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "log.cleaner.threads": "1",
    "log.cleaner.dedupe.buffer.size": "4194304",
    "log.flush.offset.checkpoint.interval.ms": "5000",
    "log.flush.start.offset.checkpoint.interval.ms": "5000",
    "replica.high.watermark.checkpoint.interval.ms": "2000",
}

BROKER_SETTINGS: dict[str, str] = {
    "inter.broker.listener.name": "PLAINTEXT",
    "num.replica.fetchers": "1",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "broker.heartbeat.interval.ms": "1000",
    "broker.session.timeout.ms": "6000",
    "auto.create.topics.enable": "false",
}


#: log4j files each node writes, as Kafka's shipped logging configuration names them: logger
#: (None = root) -> file. The loggers of the named files do not also write to server.log.
LOG4J_FILES: dict[str | None, str] = {
    None: "server.log",
    "kafka.controller": "controller.log",
    "org.apache.kafka.controller": "controller.log",
    "state.change.logger": "state-change.log",
}


def write_node_log_config(directory: Path) -> Path:
    """log4j 1 (reload4j, Kafka 3.x) and log4j2 (Kafka 4.x) configurations for a node.

    Everything goes to stdout (the node's ``server.out``, read for readiness) and, as with
    the configuration Kafka ships, to ``server.log``, ``controller.log`` and
    ``state-change.log`` in the directory named by the ``kafka.logs.dir`` system property.
    """
    directory.mkdir(parents=True, exist_ok=True)
    layout = "[%d] %p %m (%c)%n"
    files = sorted(set(LOG4J_FILES.values()))
    appender = {f: f.split(".")[0].replace("-", "") for f in files}
    props = ["log4j.rootLogger=INFO, stdout, server",
             "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
             "log4j.appender.stdout.Target=System.out",
             "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
             f"log4j.appender.stdout.layout.ConversionPattern={layout}"]
    for f in files:
        a = appender[f]
        props += [f"log4j.appender.{a}=org.apache.log4j.FileAppender",
                  f"log4j.appender.{a}.File=${{kafka.logs.dir}}/{f}",
                  f"log4j.appender.{a}.layout=org.apache.log4j.PatternLayout",
                  f"log4j.appender.{a}.layout.ConversionPattern={layout}"]
    for logger, f in LOG4J_FILES.items():
        if logger is not None:
            props += [f"log4j.logger.{logger}=INFO, stdout, {appender[f]}", f"log4j.additivity.{logger}=false"]
    props += ["log4j.logger.org.apache.kafka.clients=WARN", "log4j.logger.kafka.request.logger=WARN"]
    yaml = ["Configuration:", "  Appenders:", "    Console:", "      name: STDOUT", "      target: SYSTEM_OUT",
            "      PatternLayout:", f'        pattern: "{layout}"', "    File:"]
    for f in files:
        yaml += [f"      - name: {appender[f]}", f'        fileName: "${{sys:kafka.logs.dir}}/{f}"',
                 "        PatternLayout:", f'          pattern: "{layout}"']
    yaml += ["  Loggers:", "    Root:", "      level: INFO", "      AppenderRef:", "        - ref: STDOUT",
             "        - ref: server", "    Logger:"]
    for logger, f in LOG4J_FILES.items():
        if logger is not None:
            yaml += [f"      - name: {logger}", "        level: INFO", "        additivity: false",
                     "        AppenderRef:", "          - ref: STDOUT", f"          - ref: {appender[f]}"]
    yaml += ["      - name: org.apache.kafka.clients", "        level: WARN",
             "      - name: kafka.request.logger", "        level: WARN"]
    (directory / "log4j.properties").write_text("\n".join(props) + "\n", "utf-8")
    (directory / "log4j2.yaml").write_text("\n".join(yaml) + "\n", "utf-8")
    return directory


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports that are free on 127.0.0.1 right now.

    They are drawn at random from below the kernel's ephemeral range: a port the kernel handed
    out (``bind(0)``) is one it may hand out again, seconds later, as the local end of some client's
    connection (a JmxTool, a producer, another build's broker), and the server given it then fails
    to start with "Address already in use".
    """
    low = _ephemeral_low()
    first = max(1024, low - 20000)
    rng = random.SystemRandom()
    ports: list[int] = []
    for _ in range(count * 50):
        if len(ports) == count:
            return ports
        port = rng.randrange(first, low)
        if port not in ports and _bindable(port):
            ports.append(port)
    raise ClusterError(f"no {count} free ports on 127.0.0.1 between {first} and {low - 1}")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (32768 when it cannot be read)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return 32768
    return low if low > 2048 else 32768


def _bindable(port: int) -> bool:
    """Whether a listener could bind 127.0.0.1:``port`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cluster_id_for(name: str) -> str:
    """A fixed, valid KRaft cluster id (base64url of 16 bytes) derived from ``name``.

    Examples
    --------
    >>> len(cluster_id_for("isr"))
    22
    """
    digest = hashlib.sha256(f"kafka-workbench-peer:{name}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


@dataclass
class Node:
    """One Kafka process of a cluster.

    Attributes
    ----------
    id
        ``node.id``.
    roles
        ``["controller"]``, ``["broker"]`` or both.
    cluster
        Name of the cluster the node belongs to.
    home
        Working directory: ``server.properties``, ``server.out`` and ``logs/``.
    """

    id: int
    roles: list[str]
    cluster: str
    home: Path
    broker_port: int | None = None
    controller_port: int | None = None
    jmx_port: int | None = None
    prometheus_port: int | None = None
    settings: dict[str, str] = field(default_factory=dict)
    process: Managed | None = None
    starts: int = 0
    output_mark: int = 0

    @property
    def log_dir(self) -> Path:
        """The node's single log directory (also its metadata log directory)."""
        return self.home / "logs"

    @property
    def log4j_dir(self) -> Path:
        """Where the node's log4j files (``server.log``, ...) are written."""
        return self.home / "log4j"

    @property
    def output(self) -> Path:
        """File holding the node's stdout/stderr (INFO logging)."""
        return self.home / "server.out"

    @property
    def is_broker(self) -> bool:
        """Whether the node has the broker role."""
        return BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        """Whether the node has the controller role."""
        return CONTROLLER in self.roles

    def alive(self) -> bool:
        """Whether the node's JVM is running."""
        return self.process is not None and self.process.alive()

    @property
    def jmx_url(self) -> str:
        """JMX service URL of the node."""
        if self.jmx_port is None:
            raise ClusterError(f"node {self.id} was started without JMX")
        return f"service:jmx:rmi:///jndi/rmi://127.0.0.1:{self.jmx_port}/jmxrmi"


class Cluster:
    """A KRaft cluster of separate JVMs on 127.0.0.1.

    Parameters
    ----------
    kafka
        The release to run.
    home
        Working directory (one sub-directory per node).
    name
        Cluster name; also seeds the fixed cluster id.
    controllers, brokers
        Number of dedicated controllers and brokers. With ``combined=True`` the first
        ``controllers`` nodes have both roles and ``brokers`` counts only extra brokers.
    settings, broker_settings, controller_settings
        ``server.properties`` overrides for all nodes, brokers only, controllers only.
    jmx
        Open a JMX port on every node.
    heap
        ``-Xmx`` of each node.
    prometheus
        MBean names or patterns to export in Prometheus text through the JMX exporter
        javaagent on each node (see :mod:`peer.prometheus`); None: no agent.
    dynamic
        A KIP-853 dynamic quorum (Kafka 3.9+): ``controller.quorum.bootstrap.servers`` instead of
        ``controller.quorum.voters``; the first controller is formatted ``--standalone`` (the only
        voter), the others ``--no-initial-controllers`` (observers until :meth:`add_controller`).

    Examples
    --------
    >>> with Cluster(fetch(), Path("/tmp/c"), "demo", controllers=1, brokers=1) as c:  # doctest: +SKIP
    ...     c.start()
    ...     c.bootstrap
    '127.0.0.1:40123'
    """

    def __init__(
        self,
        kafka: Kafka,
        home: Path,
        name: str,
        *,
        controllers: int = 3,
        brokers: int = 3,
        combined: bool = False,
        settings: Mapping[str, str] | None = None,
        broker_settings: Mapping[str, str] | None = None,
        controller_settings: Mapping[str, str] | None = None,
        jmx: bool = True,
        heap: str = "256m",
        first_id: int = 1,
        prometheus: Sequence[str] | None = None,
        dynamic: bool = False,
    ) -> None:
        if controllers < 1:
            raise ClusterError(f"a KRaft cluster needs at least one controller, got {controllers}")
        install_handlers()
        self.kafka = kafka
        self.home = home
        self.name = name
        self.cluster_id = cluster_id_for(name)
        self.heap = heap
        self.jmx = jmx
        self.prometheus = list(prometheus) if prometheus is not None else None
        self.dynamic = dynamic
        total_brokers = brokers + (controllers if combined else 0)
        base = dict(COMMON_SETTINGS)
        rf = str(min(3, max(1, total_brokers)))
        base.update(
            {
                "offsets.topic.replication.factor": rf,
                "transaction.state.log.replication.factor": rf,
                "default.replication.factor": rf,
            }
        )
        base.update(settings or {})
        self.nodes: list[Node] = []
        ids = list(range(first_id, first_id + controllers + brokers))
        ports = free_ports(3 * len(ids))
        for i, node_id in enumerate(ids):
            if i < controllers:
                roles = [BROKER, CONTROLLER] if combined else [CONTROLLER]
            else:
                roles = [BROKER]
            node = Node(node_id, roles, name, home / f"node-{node_id}")
            node.controller_port = ports[3 * i] if CONTROLLER in roles else None
            node.broker_port = ports[3 * i + 1] if BROKER in roles else None
            node.jmx_port = ports[3 * i + 2] if jmx else None
            if self.prometheus is not None:
                node.prometheus_port = free_ports(1)[0]
            node.settings = dict(base)
            if BROKER in roles:
                node.settings = {**BROKER_SETTINGS, **node.settings, **(broker_settings or {})}
            if CONTROLLER in roles:
                node.settings.update(controller_settings or {})
            self.nodes.append(node)
        voters = ",".join(
            f"{n.id}@127.0.0.1:{n.controller_port}" for n in self.nodes if n.is_controller
        )
        for node in self.nodes:
            listeners = []
            if node.broker_port is not None:
                listeners.append(f"PLAINTEXT://127.0.0.1:{node.broker_port}")
            if node.controller_port is not None:
                listeners.append(f"CONTROLLER://127.0.0.1:{node.controller_port}")
            node.settings.update(
                {
                    "process.roles": ",".join(node.roles),
                    "node.id": str(node.id),
                    **({"controller.quorum.bootstrap.servers": self.controller_bootstrap} if dynamic
                       else {"controller.quorum.voters": voters}),
                    "listeners": ",".join(listeners),
                    "log.dirs": str(node.log_dir),
                }
            )
            if node.broker_port is not None:
                node.settings["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{node.broker_port}"
        self._formatted = False

    # -- lookup ---------------------------------------------------------------------------

    def node(self, node_id: int) -> Node:
        """The node with ``node.id`` ``node_id``."""
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise ClusterError(f"cluster {self.name} has no node {node_id}")

    @property
    def brokers(self) -> list[Node]:
        """Nodes with the broker role."""
        return [n for n in self.nodes if n.is_broker]

    @property
    def controllers(self) -> list[Node]:
        """Nodes with the controller role."""
        return [n for n in self.nodes if n.is_controller]

    @property
    def bootstrap(self) -> str:
        """``bootstrap.servers`` value listing every broker."""
        return ",".join(f"127.0.0.1:{n.broker_port}" for n in self.brokers)

    @property
    def controller_bootstrap(self) -> str:
        """``--bootstrap-controller`` value listing every controller."""
        return ",".join(f"127.0.0.1:{n.controller_port}" for n in self.controllers)

    # -- lifecycle ------------------------------------------------------------------------

    def format(self) -> None:
        """Write each node's ``server.properties`` and run ``kafka-storage format``."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._log_config = write_node_log_config(self.home / "log-config")
        self._agent: list[str] = []
        if self.prometheus is not None:
            from peer.prometheus import agent_config, fetch_agent

            config = self.home / "prometheus.yaml"
            config.write_text(agent_config(self.prometheus), "utf-8")
            self._agent = [str(fetch_agent()), str(config)]
        for node in self.nodes:
            node.home.mkdir(parents=True, exist_ok=True)
            lines = [f"{k}={v}" for k, v in sorted(node.settings.items())]
            (node.home / "server.properties").write_text("\n".join(lines) + "\n", "utf-8")

        def fmt(node: Node) -> None:
            quorum: list[str] = []
            if self.dynamic and node.is_controller:  # KIP-853: the first controller alone, the others observers
                quorum = ["--standalone"] if node is self.controllers[0] else ["--no-initial-controllers"]
            self.kafka.run_tool(
                "storage",
                ["format", "-t", self.cluster_id, "-c", str(node.home / "server.properties"), *quorum],
                timeout=120.0,
            )

        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(fmt, self.nodes))
        self._formatted = True

    def start(self, nodes: Iterable[Node] | None = None, *, timeout: float = 120.0) -> None:
        """Start nodes (default: all, controllers first) and wait until each is ready."""
        if not self._formatted:
            self.format()
        chosen = list(nodes) if nodes is not None else self.nodes
        for node in sorted(chosen, key=lambda n: not n.is_controller):
            self.launch(node)
        self.wait_ready(chosen, timeout=timeout)

    def launch(self, node: Node) -> None:
        """Start ``node``'s JVM without waiting."""
        if node.alive():
            raise ClusterError(f"node {node.id} of {self.name} is already running")
        jvm = ["-Xms64m", f"-Dkafka.logs.dir={node.log4j_dir}"]
        if node.prometheus_port is not None:
            from peer.prometheus import agent_flag

            jvm.append(agent_flag(Path(self._agent[0]), node.prometheus_port, Path(self._agent[1])))
        if node.jmx_port is not None:
            jvm += [
                "-Dcom.sun.management.jmxremote",
                f"-Dcom.sun.management.jmxremote.port={node.jmx_port}",
                f"-Dcom.sun.management.jmxremote.rmi.port={node.jmx_port}",
                "-Dcom.sun.management.jmxremote.host=127.0.0.1",
                "-Dcom.sun.management.jmxremote.authenticate=false",
                "-Dcom.sun.management.jmxremote.ssl=false",
                "-Djava.rmi.server.hostname=127.0.0.1",
            ]
        argv = self.kafka.java(
            self.kafka.tool_class("kafka"),
            [str(node.home / "server.properties")],
            heap=self.heap,
            extra_jvm=jvm,
            log4j_dir=self._log_config,
        )
        node.starts += 1
        with open(node.output, "a", encoding="utf-8") as fh:
            fh.write(f"===== peer: start #{node.starts} at {int(time.time() * 1000)}\n")
        node.output_mark = node.output.stat().st_size
        node.process = spawn(f"{self.name}-node-{node.id}", argv, output=node.output)

    def add_controller(self, node: Node, *, timeout: float = 60.0) -> None:
        """Make ``node`` (a dynamic quorum's observer) a voter: ``kafka-metadata-quorum add-controller``
        with its own ``server.properties``, retried until the leader accepts it (it refuses a
        controller that has not caught up yet)."""
        self._quorum_change(["--command-config", str(node.home / "server.properties"), "add-controller"],
                            timeout=timeout)

    def remove_controller(self, node: Node, *, timeout: float = 60.0) -> None:
        """Remove ``node`` from a dynamic quorum's voters (``remove-controller`` with its id and the
        directory id ``kafka-storage format`` wrote in its ``meta.properties``)."""
        meta = (node.log_dir / "meta.properties").read_text("utf-8")
        directory = next(line.split("=", 1)[1].strip() for line in meta.splitlines()
                         if line.startswith("directory.id="))
        self._quorum_change(["remove-controller", "--controller-id", str(node.id),
                             "--controller-directory-id", directory], timeout=timeout)

    def _quorum_change(self, args: list[str], *, timeout: float) -> None:
        """Run ``kafka-metadata-quorum`` against the controllers until it succeeds or ``timeout`` s pass."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.kafka.run_tool("metadata-quorum", ["--bootstrap-controller", self.controller_bootstrap,
                                                             *args], timeout=60.0, check=False)
            if result.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"kafka-metadata-quorum {' '.join(args)} failed: {result.stderr[-1500:]}")
            time.sleep(2.0)

    def wait_ready(self, nodes: Iterable[Node], *, timeout: float = 120.0) -> None:
        """Wait (bounded) until each node logged that its server started.

        Raises
        ------
        ClusterError
            If a node exits or is not ready within ``timeout`` seconds; carries its log tail.
        """
        deadline = time.monotonic() + timeout
        pending = list(nodes)
        while pending:
            for node in list(pending):
                if node.process is None or not node.process.alive():
                    raise ClusterError(
                        f"node {node.id} of {self.name} exited while starting:\n"
                        + tail_file(node.output, 60)
                    )
                if self._started_marker(node):
                    pending.remove(node)
            if not pending:
                return
            if time.monotonic() > deadline:
                ids = [n.id for n in pending]
                raise ClusterError(
                    f"nodes {ids} of {self.name} not ready after {timeout:.0f} s:\n"
                    + tail_file(pending[0].output, 60)
                )
            time.sleep(0.2)

    @staticmethod
    def _started_marker(node: Node) -> bool:
        with open(node.output, "rb") as fh:
            fh.seek(node.output_mark)
            text = fh.read()
        return b"Kafka Server started" in text

    def kill(self, node: Node) -> None:
        """Hard stop (SIGKILL) of one node."""
        if node.process is not None:
            node.process.kill()

    def stop_node(self, node: Node, timeout: float = 60.0) -> None:
        """Clean stop (SIGTERM, SIGKILL after ``timeout`` s) of one node."""
        if node.process is not None:
            node.process.stop(timeout)

    def stop(self, timeout: float = 60.0) -> None:
        """Clean stop of every node: brokers first, then controllers."""
        brokers = [n for n in self.nodes if not n.is_controller]
        controllers = [n for n in self.nodes if n.is_controller]
        for group in (brokers, controllers):
            for node in group:
                if node.alive():
                    node.process.signal_group(signal.SIGTERM)  # type: ignore[union-attr]
            for node in group:
                if node.process is not None:
                    node.process.stop(timeout)

    def collect(self, dest: Path) -> list[dict[str, object]]:
        """Copy every node's log dir to ``dest/nodes/<id>/logs`` (nodes must be stopped), its
        ``server.properties`` to ``nodes/<id>/config/`` and its log4j files to ``nodes/<id>/log4j/``.

        Returns
        -------
        list of dict
            The manifest ``nodes`` entries.
        """
        entries: list[dict[str, object]] = []
        for node in self.nodes:
            if node.alive():
                raise ClusterError(f"node {node.id} is still running; stop it before collecting")
            target = dest / "nodes" / str(node.id) / "logs"
            if node.log_dir.exists():
                shutil.copytree(
                    node.log_dir, target, ignore=shutil.ignore_patterns(".lock"), dirs_exist_ok=True
                )
            config = dest / "nodes" / str(node.id) / "config"
            if (node.home / "server.properties").exists():
                config.mkdir(parents=True, exist_ok=True)
                shutil.copy2(node.home / "server.properties", config / "server.properties")
            if node.log4j_dir.exists():
                shutil.copytree(node.log4j_dir, dest / "nodes" / str(node.id) / "log4j", dirs_exist_ok=True)
            entries.append(
                {
                    "id": node.id,
                    "roles": sorted(node.roles),
                    "log_dirs": [f"nodes/{node.id}/logs"],
                    "cluster": self.name,
                    "cluster_id": self.cluster_id,
                    "config": f"nodes/{node.id}/config/server.properties",
                    "log4j": sorted(f"nodes/{node.id}/log4j/{p.name}" for p in node.log4j_dir.glob("*")
                                    if p.is_file()),
                }
            )
        return entries

    def tails(self, lines: int = 30) -> str:
        """The last lines of every node's output, for error messages."""
        parts = []
        for node in self.nodes:
            parts.append(f"--- {self.name} node {node.id} ({','.join(node.roles)}) ---")
            parts.append(tail_file(node.output, lines))
        return "\n".join(parts)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(20.0)
