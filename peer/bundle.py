"""Writing a scenario bundle: manifest, tool captures, node log dirs, segment dumps, metrics.

The layout is a contract read by the rest of the project::

    <bundle>/manifest.json
    <bundle>/nodes/<node_id>/logs/...        each node's log dir, copied after it stopped
    <bundle>/dumps/<relative path>.txt       kafka-dump-log output per .log / .checkpoint file
    <bundle>/tools/<t_ms>-<tool>.txt         captured tool output
    <bundle>/metrics/<node>-<what>.csv       JmxTool CSV samples
    <bundle>/metrics/<node>-<t_ms>.prom      Prometheus text scraped from the JMX exporter
    <bundle>/nodes/<node_id>/config/server.properties   the node's configuration
    <bundle>/nodes/<node_id>/log4j/*.log     the node's server.log, controller.log, state-change.log
    <bundle>/remote/...                      LocalTieredStorage directory (tiered scenario)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from peer.errors import ToolError
from peer.kafka import Kafka

#: Tool keys of :data:`peer.kafka.TOOL_CLASSES` and the script names used in the manifest.
TOOL_NAMES = {
    "topics": "kafka-topics",
    "consumer-groups": "kafka-consumer-groups",
    "metadata-quorum": "kafka-metadata-quorum",
    "get-offsets": "kafka-get-offsets",
    "transactions": "kafka-transactions",
    "configs": "kafka-configs",
    "dump-log": "kafka-dump-log",
    "producer-perf": "kafka-producer-perf-test",
    "console-producer": "kafka-console-producer",
    "console-consumer": "kafka-console-consumer",
}

#: Decoder flag of kafka-dump-log per internal topic directory prefix.
DUMP_DECODERS = {
    "__cluster_metadata-": ["--cluster-metadata-decoder"],
    "__consumer_offsets-": ["--offsets-decoder"],
    "__remote_log_metadata-": ["--remote-log-metadata-decoder"],
    "__transaction_state-": ["--transaction-log-decoder"],
    "__share_group_state-": ["--share-group-state-decoder"],
}
PLAIN_DUMP = ["--deep-iteration"]


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds."""
    return int(time.time() * 1000)


def dump_flags(relative: str) -> list[str]:
    """kafka-dump-log flags for a bundle file, chosen by the directory it is in.

    Examples
    --------
    >>> dump_flags("nodes/1/logs/__cluster_metadata-0/00000000000000000000.log")
    ['--cluster-metadata-decoder']
    >>> dump_flags("nodes/4/logs/orders-0/00000000000000000000.log")
    ['--deep-iteration']
    """
    parts = Path(relative).parts
    if parts and parts[-1] == "bootstrap.checkpoint":
        return list(DUMP_DECODERS["__cluster_metadata-"])
    parent = parts[-2] if len(parts) >= 2 else ""
    for prefix, flags in DUMP_DECODERS.items():
        if parent.startswith(prefix):
            return list(flags)
    return list(PLAIN_DUMP)


class BundleWriter:
    """Accumulates a bundle directory and its manifest while a scenario runs.

    Parameters
    ----------
    root
        The bundle directory (created).
    scenario
        Scenario name.
    kafka
        The release used.
    cluster_id
        The (main) cluster id.
    """

    def __init__(self, root: Path, scenario: str, kafka: Kafka, cluster_id: str) -> None:
        self.root = root
        self.kafka = kafka
        self._lock = threading.RLock()
        root.mkdir(parents=True, exist_ok=True)
        self.manifest: dict[str, Any] = {
            "scenario": scenario,
            "kafka_version": kafka.version,
            "cluster_id": cluster_id,
            "created_ms": now_ms(),
            "nodes": [],
            "events": [],
            "tools": [],
            "dumps": [],
            "metrics": [],
        }

    # -- recording ------------------------------------------------------------------------

    def event(self, event: str, **details: Any) -> int:
        """Record that ``event`` happened now; returns its wall-clock ms."""
        t_ms = now_ms()
        self.manifest["events"].append({"t_ms": t_ms, "event": event, **details})
        self.save()
        return t_ms

    def tool(
        self, tool: str, args: Sequence[str], *, timeout: float = 90.0, check: bool = True
    ) -> str:
        """Run a Kafka tool, keep its stdout under ``tools/`` and record it.

        Parameters
        ----------
        tool
            Key of :data:`peer.kafka.TOOL_CLASSES` (e.g. ``"topics"``).
        args
            Tool arguments.
        timeout
            Seconds before the tool is killed.
        check
            Raise on a non-zero exit (the output is kept either way).

        Returns
        -------
        str
            The tool's stdout.
        """
        name = TOOL_NAMES.get(tool, f"kafka-{tool}")
        t_ms = now_ms()
        result = self.kafka.run_tool(tool, args, timeout=timeout, check=False)
        t_end_ms = now_ms()
        rel = f"tools/{t_ms}-{name}.txt"
        n = 1
        while (self.root / rel).exists():
            n += 1
            rel = f"tools/{t_ms}-{name}-{n}.txt"
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.root / rel).write_text(result.stdout, encoding="utf-8")
        # the tool's answer reflects some instant between t_ms and t_end_ms (JVM start, then requests)
        entry: dict[str, Any] = {"t_ms": t_ms, "t_end_ms": t_end_ms, "tool": name, "args": list(args), "file": rel}
        if result.returncode != 0:
            entry["exit_code"] = result.returncode
            entry["stderr_tail"] = result.stderr[-2000:]
        self.manifest["tools"].append(entry)
        self.save()
        if check and result.returncode != 0:
            raise ToolError(f"{name} {' '.join(args)} exited {result.returncode}:\n"
                            f"{result.stderr[-3000:]}")
        return result.stdout

    def metric(self, rel: str, node: int, what: str, **extra: Any) -> Path:
        """Register a metrics file ``rel`` (under ``metrics/``) and return its absolute path.

        ``extra`` goes into the manifest entry (``format``, ``t_ms`` of a Prometheus scrape).
        Safe to call from sampler threads; the manifest is written by the next :meth:`save`.
        """
        with self._lock:
            self.manifest["metrics"].append({"file": rel, "node": node, "what": what, **extra})
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def add_nodes(self, entries: list[dict[str, Any]]) -> None:
        """Add manifest ``nodes`` entries (from :meth:`peer.cluster.Cluster.collect`)."""
        self.manifest["nodes"].extend(entries)
        self.save()

    # -- dumps ----------------------------------------------------------------------------

    def dump_files(self) -> list[str]:
        """Relative paths of every ``.log`` and ``.checkpoint`` file under ``nodes/<id>/logs/``
        and ``remote/``."""
        found = []
        for top in ("nodes", "remote"):
            for path in sorted((self.root / top).rglob("*")):
                rel = path.relative_to(self.root)
                if top == "nodes" and (len(rel.parts) < 3 or rel.parts[2] != "logs"):
                    continue  # nodes/<id>/log4j/server.log is a log4j file, not a segment
                if path.is_file() and path.suffix in (".log", ".checkpoint"):
                    found.append(rel.as_posix())
        return found

    def dump_all(self, files: Sequence[str] | None = None, *, chunk: int = 40) -> None:
        """Run kafka-dump-log on every segment and snapshot and write ``dumps/<path>.txt``.

        Files that share flags are dumped by one tool run (``--files a,b,...``) and the
        output is split at the ``Dumping <file>`` header lines. The tool runs in the bundle
        directory with relative paths, so the headers name bundle-relative paths.

        Remote segments (``remote/``, named ``<offset>-<segment id>.log`` by
        LocalTieredStorage) are dumped through a hard link named ``<offset>.log`` in a scratch
        directory, because kafka-dump-log reads the base offset from the file name; the
        manifest entry then names the link in ``dumped_as``.
        """
        todo = list(files if files is not None else self.dump_files())
        scratch = self.root / ".dump-scratch"
        aliases: dict[str, str] = {}
        for rel in todo:
            name = Path(rel).name
            stem = name.split(".", 1)[0]
            if rel.startswith("remote/") and "-" in stem:
                offset = stem.split("-", 1)[0]
                alias = (Path(".dump-scratch") / Path(rel).parent / f"{offset}.log").as_posix()
                (self.root / alias).parent.mkdir(parents=True, exist_ok=True)
                if not (self.root / alias).exists():
                    (self.root / alias).hardlink_to(self.root / rel)
                aliases[rel] = alias
        groups: dict[tuple[str, ...], list[str]] = {}
        for rel in todo:
            groups.setdefault(tuple(dump_flags(rel)), []).append(rel)
        try:
            for flags, rels in groups.items():
                for start in range(0, len(rels), chunk):
                    self._dump_group(list(flags), rels[start:start + chunk], aliases)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self.save()

    def _dump_group(self, flags: list[str], rels: list[str], aliases: dict[str, str]) -> None:
        from peer.process import spawn

        names = [aliases.get(rel, rel) for rel in rels]
        args = [*flags, "--files", ",".join(names)]
        argv = self.kafka.java(self.kafka.tool_class("dump-log"), args, heap="256m")
        child = spawn("dump-log", argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                      cwd=self.root)
        try:
            out, err = child.popen.communicate(timeout=300)
        except subprocess.TimeoutExpired as exc:
            child.kill()
            raise ToolError(f"kafka-dump-log did not finish for {rels[:3]}...") from exc
        finally:
            child.stop(5.0)
        if child.popen.returncode != 0:
            raise ToolError(
                f"kafka-dump-log {' '.join(flags)} exited {child.popen.returncode}:\n"
                + err.decode("utf-8", "replace")[-3000:]
            )
        text = out.decode("utf-8", "replace")
        chunks: dict[str, list[str]] = {}
        current: str | None = None
        for line in text.splitlines(keepends=True):
            if line.startswith("Dumping "):
                name = line[len("Dumping "):].rstrip("\n")
                if name in names:
                    current = name
                    chunks.setdefault(current, [])
            if current is not None:
                chunks[current].append(line)
        for rel, name in zip(rels, names, strict=True):
            dump_rel = f"dumps/{rel}.txt"
            target = self.root / dump_rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(chunks.get(name, [])), encoding="utf-8")
            entry: dict[str, Any] = {"file": rel, "dump": dump_rel, "args": list(flags)}
            if name != rel:
                entry["dumped_as"] = name
            self.manifest["dumps"].append(entry)

    # -- output ---------------------------------------------------------------------------

    def save(self) -> None:
        """Write ``manifest.json`` (atomically)."""
        with self._lock:
            tmp = self.root / "manifest.json.tmp"
            tmp.write_text(json.dumps(self.manifest, indent=1) + "\n", encoding="utf-8")
            tmp.replace(self.root / "manifest.json")
