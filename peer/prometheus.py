"""Prometheus text exports of Kafka nodes: the JMX exporter javaagent, scraped into the bundle.

A cluster created with ``prometheus=[object names]`` starts each node with the Prometheus JMX
exporter (``io.prometheus.jmx:jmx_prometheus_javaagent`` from Maven Central) listening on
127.0.0.1, exporting those MBeans with :data:`RULES`: the usual Kafka naming
(``kafka_server_replicamanager_underminisrpartitioncount``; ``_total`` for ``...PerSec``
counts, ``_count`` for other counts, a ``quantile`` label for percentiles; the other key
properties of the MBean as labels). :class:`PrometheusScraper` fetches ``/metrics`` every few
seconds into ``metrics/<node>-<t_ms>.prom`` (``t_ms`` = when the request was sent), the way an
operator's ``curl`` would, so the same MBeans reach the bundle both as JmxTool CSV and as
Prometheus text.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from peer.errors import FetchError
from peer.kafka import POM, cache_root

if TYPE_CHECKING:
    from peer.bundle import BundleWriter

#: The JMX exporter release attached to nodes (Maven Central).
AGENT_VERSION = "1.0.1"
AGENT_ARTIFACT = f"io.prometheus.jmx:jmx_prometheus_javaagent:{AGENT_VERSION}"

_KV = r"([^=,<>]+)=([^,<>]*)"
#: Key properties beyond ``type`` and ``name`` the rules turn into labels (MirrorMaker 2's
#: MirrorCheckpointConnector has five: source, target, group, topic, partition).
MAX_LABELS = 5

#: Exporter rules (first match wins), written for this project: Kafka's Yammer metrics
#: (``type`` and ``name`` key properties) and its KafkaMetrics-style MBeans (``type`` and an
#: attribute per metric), any further key properties becoming labels.
RULES = [
    # Yammer metrics: kafka.<domain><type=T, name=N[, k=v]*><>Attribute
    *(rule for extra in range(MAX_LABELS, -1, -1) for rule in (
        (rf"kafka\.([\w.]+)<type=([^,<>]+), name=([^,<>]+)PerSec\w*{', ' * bool(extra)}"
         rf"{', '.join([_KV] * extra)}><>Count", "kafka_$1_$2_$3_total", "COUNTER", extra, None),
        (rf"kafka\.([\w.]+)<type=([^,<>]+), name=([^,<>]+){', ' * bool(extra)}"
         rf"{', '.join([_KV] * extra)}><>Count", "kafka_$1_$2_$3_count", "COUNTER", extra, None),
        (rf"kafka\.([\w.]+)<type=([^,<>]+), name=([^,<>]+){', ' * bool(extra)}"
         rf"{', '.join([_KV] * extra)}><>Value", "kafka_$1_$2_$3", "GAUGE", extra, None),
        (rf"kafka\.([\w.]+)<type=([^,<>]+), name=([^,<>]+){', ' * bool(extra)}"
         rf"{', '.join([_KV] * extra)}><>(\d+)thPercentile", "kafka_$1_$2_$3", "GAUGE", extra, "quantile"),
        (rf"kafka\.([\w.]+)<type=([^,<>]+), name=([^,<>]+)Percent\w*{', ' * bool(extra)}"
         rf"{', '.join([_KV] * extra)}><>MeanRate", "kafka_$1_$2_$3_percent", "GAUGE", extra, None),
        (rf"kafka\.([\w.]+)<type=([^,<>]+), name=([^,<>]+){', ' * bool(extra)}"
         rf"{', '.join([_KV] * extra)}><>(\w+)", "kafka_$1_$2_$3_$ATTR", "GAUGE", extra, "attribute"),
    )),
    # KafkaMetrics MBeans: kafka.<domain><type=T[, k=v]*><>attribute-name
    *((rf"kafka\.([\w.]+)<type=([^,<>]+){', ' * bool(extra)}{', '.join([_KV] * extra)}><>([\w-]+)",
       "kafka_$1_$2_$ATTR", "GAUGE", extra, "attribute") for extra in range(MAX_LABELS, -1, -1)),
]


def _rule_yaml(pattern: str, name: str, typ: str, extra: int, tail: str | None) -> list[str]:
    first = 4 if name.startswith("kafka_$1_$2_$3") else 3  # groups used by the name
    labels = [(f"${first + 2 * i}", f"${first + 1 + 2 * i}") for i in range(extra)]
    last = first + 2 * extra
    name = name.replace("$ATTR", f"${last}")
    out = [f"- pattern: '{pattern}'", f"  name: {name}", f"  type: {typ}"]
    if tail == "quantile":
        labels.append(("quantile", f"0.${last}"))
    if labels:
        out.append("  labels:")
        out += [f'    "{k}": "{v}"' for k, v in labels]
    return out


def agent_config(object_names: Sequence[str]) -> str:
    """The exporter's YAML configuration: the MBeans to export and :data:`RULES`.

    Examples
    --------
    >>> print(agent_config(["kafka.server:type=ReplicaManager,*"]).splitlines()[:3])
    ['lowercaseOutputName: true', 'includeObjectNames:', '- "kafka.server:type=ReplicaManager,*"']
    """
    lines = ["lowercaseOutputName: true", "includeObjectNames:"]
    lines += [f'- "{name}"' for name in object_names]
    lines.append("rules:")
    for pattern, name, typ, extra, tail in RULES:
        lines += _rule_yaml(pattern, name, typ, extra, tail)
    return "\n".join(lines) + "\n"


def fetch_agent(timeout: float = 300.0) -> Path:
    """The javaagent jar, downloaded once into ``<cache>/jars/`` through Maven.

    Raises
    ------
    FetchError
        When Maven is missing or cannot resolve the artifact.
    """
    target = cache_root() / "jars" / f"jmx_prometheus_javaagent-{AGENT_VERSION}.jar"
    if target.exists():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FetchError("mvn (Apache Maven) is not on PATH; it is needed to fetch the JMX exporter")
    staging = target.parent / f"agent.{time.monotonic_ns()}.tmp"
    argv = [mvn, "-B", "-q", "-f", str(POM), f"-Dmaven.repo.local={cache_root() / 'm2'}",
            "dependency:copy", f"-Dartifact={AGENT_ARTIFACT}", f"-DoutputDirectory={staging}"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        jar = staging / target.name
        if done.returncode != 0 or not jar.exists():
            raise FetchError(f"Maven could not resolve {AGENT_ARTIFACT}:\n{(done.stdout + done.stderr)[-3000:]}")
        target.parent.mkdir(parents=True, exist_ok=True)
        jar.replace(target)
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"Maven did not resolve {AGENT_ARTIFACT} in {timeout:.0f} s") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def agent_flag(jar: Path, port: int, config: Path) -> str:
    """The ``-javaagent`` JVM flag serving ``/metrics`` on 127.0.0.1:``port``."""
    return f"-javaagent:{jar}=127.0.0.1:{port}:{config}"


class PrometheusScraper:
    """Fetch a node's ``/metrics`` every ``interval_s`` seconds into the bundle.

    Each successful scrape becomes ``metrics/<node>-<t_ms>.prom`` and a manifest ``metrics``
    entry with ``format: "prometheus"``, ``t_ms`` (request sent) and ``t_end_ms`` (response
    read). A scrape that fails (node stopped, paused or restarting) leaves no file.
    """

    def __init__(self, bundle: BundleWriter, node: int, what: str, port: int, *,
                 interval_s: float = 5.0, timeout_s: float = 3.0) -> None:
        self.bundle = bundle
        self.node = node
        self.what = what
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.scrapes = 0
        self.failures = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> PrometheusScraper:
        """Start scraping in a background thread."""
        self._thread = threading.Thread(target=self._run, name=f"prom-{self.node}", daemon=True)
        self._thread.start()
        return self

    def scrape_once(self) -> Path | None:
        """One scrape; the file written, or None when the node did not answer."""
        t_ms = int(time.time() * 1000)
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout_s) as response:  # noqa: S310 (loopback)
                body = response.read()
        except OSError:
            self.failures += 1
            return None
        t_end_ms = int(time.time() * 1000)
        rel = f"metrics/{self.node}-{t_ms}.prom"
        path = self.bundle.metric(rel, self.node, self.what, format="prometheus", t_ms=t_ms,
                                  t_end_ms=t_end_ms)
        path.write_bytes(body)
        self.scrapes += 1
        return path

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.scrape_once()

    def stop(self) -> None:
        """Stop scraping (bounded)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout_s + 5)
