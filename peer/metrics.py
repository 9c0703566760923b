"""JMX sampling with Kafka's JmxTool into CSV files.

:class:`JmxSampler` runs ``JmxTool --reporting-interval 1000`` against one node and copies
its CSV lines into a file. When the node goes away (hard stop, restart) JmxTool exits; the
sampler starts it again once a second until stopped, and keeps a single header line, so the
file stays one CSV whose gaps are the times the node could not be read.

The first header fixes the columns. When a restarted JmxTool reports another set (MBeans
registered later, or gone), its rows are mapped onto the first columns by name: a column it
lacks is left empty, a column the first header lacked is dropped. So that the first header is not
one taken before the MBeans that matter were registered (JmxTool resolves its patterns when it
starts, and a slow start of the sampled process registers some MBeans seconds after others),
``required`` names what it must hold: until it does, JmxTool is started again every few seconds.
"""

from __future__ import annotations

import csv
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

from peer.errors import PeerError
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
    attributes
        ``--attributes`` (all of them when empty).
    required
        Parts of MBean names the first header must hold (e.g. ``type=MirrorSourceConnector``);
        a JmxTool whose header lacks one is stopped and started again a few seconds later.
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
        required: Sequence[str] = (),
    ) -> None:
        self.kafka = kafka
        self.jmx_url = jmx_url
        self.object_names = list(object_names)
        self.out = out
        self.interval_ms = interval_ms
        self.attributes = list(attributes)
        self.required = list(required)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._child: Managed | None = None
        self._columns: list[str] | None = None
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
                stdout = child.popen.stdout
                if stdout is None:  # cannot happen: spawn was asked for a pipe
                    raise PeerError("JmxTool started without a stdout pipe")
                mapping: list[int | None] | None = None
                width = 0
                rows_before = self.rows
                for raw in stdout:
                    line = raw.decode("utf-8", "replace").rstrip("\n")
                    if line.startswith('"time"'):
                        columns = next(csv.reader([line]))
                        if self._columns is None and not self._complete(columns):
                            break  # not every required MBean registered yet: start JmxTool again
                        if self._columns is None:
                            self._columns = columns
                            sink.write(line + "\n")
                        mapping = _column_mapping(self._columns, columns)
                        width = len(columns)
                        continue
                    if mapping is None or not line[:1].isdigit():
                        continue
                    values = line.split(",")
                    if len(values) != width:
                        continue
                    out = [values[i] if i is not None else "" for i in mapping]
                    sink.write(",".join(out) + "\n")
                    sink.flush()
                    self.rows += 1
                    if self._stop.is_set():
                        break
                child.stop(5.0)
                # Node down: do not churn JVMs; retry every few seconds.
                self._stop.wait(1.0 if self.rows > rows_before else 3.0)

    def _complete(self, columns: Sequence[str]) -> bool:
        """Whether a header names an MBean matching each of :attr:`required`."""
        return all(any(part in column for column in columns) for part in self.required)

    def stop(self) -> None:
        """Stop sampling and JmxTool (bounded)."""
        self._stop.set()
        if self._child is not None:
            self._child.stop(5.0)
        if self._thread is not None:
            self._thread.join(15.0)


def _column_mapping(first: list[str], current: list[str]) -> list[int | None]:
    """For each column of ``first``, its index in ``current`` (None if absent).

    Examples
    --------
    >>> _column_mapping(["time", "a", "b"], ["time", "b", "c"])
    [0, None, 1]
    """
    where = {name: i for i, name in enumerate(current)}
    return [where.get(name) for name in first]
