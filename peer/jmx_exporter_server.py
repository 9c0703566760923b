"""The Prometheus JMX exporter as a process of its own (``jmx_prometheus_httpserver`` from Maven
Central, the release :mod:`peer.prometheus` attaches as an agent), reading a running node's MBeans
over remote JMX with any rule file: how the suite scrapes one node with other published rule sets.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path

from peer.errors import FetchError
from peer.kafka import fetch_jar
from peer.prometheus import AGENT_VERSION


class StandaloneExporter:
    """The JMX exporter as its own JVM on 127.0.0.1, reading one node's MBeans over remote JMX with
    the rules of ``config`` (YAML without ``jmxUrl``: it is added); stopped on leaving the block.

    Examples
    --------
    >>> with StandaloneExporter(node.jmx_url, Path("strimzi.yaml"), home) as exporter:  # doctest: +SKIP
    ...     text = exporter.scrape()
    """

    def __init__(self, jmx_url: str, config: Path, home: Path, *, timeout_s: float = 60.0) -> None:
        from peer.cluster import free_ports

        self.port = free_ports(1)[0]
        self.config = home / f"exporter-{config.stem}.yaml"
        self.config.parent.mkdir(parents=True, exist_ok=True)
        self.config.write_text(f"jmxUrl: {jmx_url}\n" + config.read_text("utf-8"), "utf-8")
        self.log = home / f"exporter-{config.stem}.log"
        self.timeout_s = timeout_s
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> StandaloneExporter:
        jar = fetch_jar("jmx_prometheus_httpserver", AGENT_VERSION, group="io.prometheus.jmx")
        with self.log.open("wb") as out:
            self._process = subprocess.Popen(["java", "-Xmx64m", "-jar", str(jar), f"127.0.0.1:{self.port}",
                                              str(self.config)], stdout=out, stderr=subprocess.STDOUT)
        return self

    def scrape(self) -> str:
        """One ``/metrics`` text, waiting (bounded) for the exporter to listen."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics",  # noqa: S310 (loopback)
                                            timeout=10) as response:
                    return response.read().decode("utf-8")
            except OSError as exc:
                if self._process is not None and self._process.poll() is not None or time.monotonic() > deadline:
                    raise FetchError(f"the JMX exporter on port {self.port} did not answer: {exc}; its log: "
                                     f"{self.log.read_text('utf-8', 'replace')[-2000:]}") from exc
                time.sleep(0.3)

    def __exit__(self, *exc: object) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
