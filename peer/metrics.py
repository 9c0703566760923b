"""JMX sampling with Kafka's JmxTool into CSV files.

:class:`JmxSampler` runs ``JmxTool --reporting-interval 1000`` against one node and copies
its CSV lines into a file. When the node goes away (hard stop, restart) JmxTool exits; the
sampler starts it again once a second until stopped, and keeps a single header line, so the
file stays one CSV whose gaps are the times the node could not be read.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from peer.kafka import Kafka
from peer.process import Managed, spawn


class JmxSampler:
    """Sample MBeans of one node every second into ``out`` (JmxTool CSV).

    Parameters
    ----------
    kafka
        The release whose JmxTool is used.
    jmx_url
        ``service:jmx:rmi:///jndi/rmi://127.0.0.1:<port>/jmxrmi``.
    object_names
        MBean names or patterns (``--object-name``), resolved when JmxTool starts.
    out
        CSV file to write.
    interval_ms
        ``--reporting-interval``.
    """

    def __init__(
        self,
        kafka: Kafka,
        jmx_url: str,
        object_names: Sequence[str],
        out: Path,
        *,
        interval_ms: int = 1000,
        attributes: Sequence[str] = (),
    ) -> None:
        self.kafka = kafka
        self.jmx_url = jmx_url
        self.object_names = list(object_names)
        self.out = out
        self.interval_ms = interval_ms
        self.attributes = list(attributes)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._child: Managed | None = None
        self._header: str | None = None
        self.rows = 0
        self.starts = 0

    def argv(self) -> list[str]:
        """JmxTool command line."""
        args = ["--jmx-url", self.jmx_url, "--reporting-interval", str(self.interval_ms)]
        for name in self.object_names:
            args += ["--object-name", name]
        if self.attributes:
            args += ["--attributes", ",".join(self.attributes)]
        return self.kafka.java(self.kafka.tool_class("jmx"), args, heap="64m")

    def start(self) -> JmxSampler:
        """Start sampling in a background thread."""
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._run, name=f"jmx-{self.out.name}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        with open(self.out, "a", encoding="utf-8") as sink:
            while not self._stop.is_set():
                self.starts += 1
                child = spawn(f"jmxtool-{self.out.name}", self.argv(), stdout=subprocess.PIPE)
                self._child = child
                assert child.popen.stdout is not None  # for type checkers; Popen made a pipe
                accept = False
                rows_before = self.rows
                for raw in child.popen.stdout:
                    line = raw.decode("utf-8", "replace").rstrip("\n")
                    if line.startswith('"time"'):
                        if self._header is None:
                            self._header = line
                            sink.write(line + "\n")
                        # A different column set (lazily registered gauges) is dropped: the
                        # file keeps the first schema.
                        accept = line == self._header
                        continue
                    if not accept or not line[:1].isdigit():
                        continue
                    sink.write(line + "\n")
                    sink.flush()
                    self.rows += 1
                    if self._stop.is_set():
                        break
                child.stop(5.0)
                # Node down: do not churn JVMs; retry every few seconds.
                self._stop.wait(1.0 if self.rows > rows_before else 3.0)

    def stop(self) -> None:
        """Stop sampling and JmxTool (bounded)."""
        self._stop.set()
        if self._child is not None:
            self._child.stop(5.0)
        if self._thread is not None:
            self._thread.join(15.0)
