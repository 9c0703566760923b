"""``workbench collect``: one node's evidence in one archive, gathered on the node, read-only.

Pure Python (the standard library; tqdm for the progress bar when installed): no Spark, no JVM,
safe beside a running broker or controller. From the node's ``server.properties`` (or
``broker.properties``/``controller.properties``) it finds the log directories (``log.dirs``, else
``log.dir``, and ``metadata.log.dir``) and writes a ``.tar.gz`` that :func:`workbench.open_bundle`
reads as a bundle:

* ``nodes/<id>/config/<the properties file>``;
* ``nodes/<id>/logs/<n>-<dir name>/`` per log dir: ``meta.properties``, ``bootstrap.checkpoint``,
  the offset checkpoints, the whole metadata log (segments, indexes, snapshots, ``quorum-state``),
  the whole internal topics (``__consumer_offsets``, ``__transaction_state``,
  ``__remote_log_metadata``, ``__share_group_state``, MirrorMaker 2's ``*.internal`` and
  ``heartbeats``), and of every other partition its indexes, epoch and producer-state files and,
  while the partition's segments are at most ``full_partition_bytes``, its segments; of a larger
  partition's segments only a headers-only extract each (``<base>.log.headers``: their batch
  headers, :mod:`workbench.formats.header_extract`; the payloads are the data, not the evidence,
  and are never read);
* ``nodes/<id>/log4j/``: the log4j files (``server.log`` and its rotations, ``controller.log``,
  ``state-change.log``...) of the directories given, else of ``$LOG_DIR``, ``$KAFKA_HOME/logs``
  and the ``logs`` directory beside the configuration's ``config`` directory;
* ``tools/<t_ms>-<tool>.txt``: with a bootstrap server and Kafka's ``bin`` directory, the outputs
  of ``kafka-topics --describe``, ``kafka-consumer-groups --describe --all-groups`` and
  ``kafka-metadata-quorum describe --status``/``--replication`` (each bounded in time);
* ``nodes/<id>/collect-manifest.json``: what was taken from where, and every file left out with its reason
  (``max_bytes`` reached, a large partition's payloads, gone or shrunk while collecting).

Files are taken in that order of importance, newest segments first within a partition, until
``max_bytes`` is reached. Each node's archive holds only its ``nodes/<id>/`` and ``tools/`` files
(tool outputs named by the time they ran), so several nodes' archives unpacked into one directory
are one bundle. Nothing is written, renamed, locked or opened for writing in a log
directory (the archive may not be written inside one): files are opened read-only, their size
fixed when the plan is made (a segment Kafka appends to meanwhile is taken up to that size; one
that shrinks is padded and said so; an active segment's preallocated index up to its first hole).
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.errors import ConfigError
from workbench.formats.header_extract import SUFFIX as EXTRACT_SUFFIX
from workbench.formats.header_extract import extract_headers
from workbench.formats.kraft_files import parse_java_properties

#: A partition's segments are taken whole up to this many bytes (the default of ``--full-partition-bytes``).
FULL_PARTITION_BYTES = 64 * 1024 * 1024
#: What a planned headers-only extract is (:mod:`workbench.formats.header_extract`).
EXTRACT = "batch headers"
#: Seconds each Kafka tool may run.
TOOL_TIMEOUT_S = 60.0
_LOG_DIR_FILES = ("meta.properties", "bootstrap.checkpoint", "replication-offset-checkpoint",
                  "recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "cleaner-offset-checkpoint",
                  ".kafka_cleanshutdown")
# a partition's directory, also while Kafka deletes it or moves it between log dirs
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.[0-9a-f]{32}-(?:delete|future|stray))?$")
_SEGMENT = re.compile(r"^(\d{20})\.log$")
# a segment's payload under any name: being deleted, swapped in by the cleaner, cleaned
_PAYLOAD = re.compile(r"^(\d{20})\.log(?:\.(?:deleted|swap|cleaned))?$")
_INDEX = re.compile(r"^(\d{20})\.(?:index|timeindex)$")
_LOG4J = re.compile(r"^(?:(?:server|controller|state-change|log-cleaner|kafka-request|kafka-authorizer)\.log"
                    r"(?:\.[\w.-]+)?|kafkaServer\.out|server\.out)$")
#: Kafka's tools run with a bootstrap server: (file name, script, arguments).
TOOLS = (
    ("kafka-topics", "kafka-topics.sh", ["--describe"]),
    ("kafka-consumer-groups", "kafka-consumer-groups.sh", ["--describe", "--all-groups"]),
    ("kafka-metadata-quorum", "kafka-metadata-quorum.sh", ["describe", "--status"]),
    ("kafka-metadata-quorum", "kafka-metadata-quorum.sh", ["describe", "--replication"]),
)


@dataclass(frozen=True)
class Planned:
    """One file to take: where from, where in the archive, how many bytes, and why it matters."""

    source: str
    arcname: str
    bytes: int
    what: str


@dataclass(frozen=True)
class LeftOut:
    """One file not taken, and why."""

    source: str
    bytes: int
    reason: str


@dataclass
class Collected:
    """What :func:`collect` wrote."""

    archive: Path
    node_id: int | None
    log_dirs: list[str]
    taken: list[Planned] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    tools: list[dict] = field(default_factory=list)


def log_dirs(props: dict[str, str]) -> list[Path]:
    """The node's log directories: ``metadata.log.dir`` (when set) and ``log.dirs`` (else
    ``log.dir``, else Kafka's default ``/tmp/kafka-logs``), each once.

    >>> log_dirs({"log.dirs": "/d1, /d2", "metadata.log.dir": "/m"})
    [PosixPath('/m'), PosixPath('/d1'), PosixPath('/d2')]
    """
    dirs = [props["metadata.log.dir"]] if props.get("metadata.log.dir") else []
    dirs += (props.get("log.dirs") or props.get("log.dir") or "/tmp/kafka-logs").split(",")
    out: list[Path] = []
    for d in dirs:
        path = Path(d.strip())
        if str(path) and path not in out:
            out.append(path)
    return out


def _internal(topic: str) -> bool:
    return topic.startswith("__") or topic.endswith(".internal") or topic == "heartbeats"


def _files(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.is_file() and not p.is_symlink())
    except OSError:
        return []


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _written(path: Path, size: int) -> int:
    """The bytes of an index worth taking: up to its first hole. Kafka preallocates an active
    segment's indexes (10 MiB, sparse where the filesystem allows) and fills them in place."""
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_hole is None:
        return size
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return size
    try:
        return min(size, os.lseek(fd, 0, seek_hole))
    except OSError:
        return size
    finally:
        os.close(fd)


def plan(config: Path, *, log4j_dirs: Sequence[Path] = (), full_partition_bytes: int = FULL_PARTITION_BYTES,
         ) -> tuple[int | None, list[Path], list[Planned], list[LeftOut]]:
    """What to take, in order of importance, and what is left out whatever the budget.

    Returns the node id (``node.id``, else ``broker.id``), the log dirs, the files to take and
    the large partitions' segments left out.
    """
    props = parse_java_properties(config.read_text("utf-8", "replace"))
    node_text = props.get("node.id") or props.get("broker.id")
    node = int(node_text) if node_text and node_text.lstrip("-").isdigit() and int(node_text) >= 0 else None
    base = f"nodes/{node if node is not None else 'unknown'}"
    dirs = log_dirs(props)
    # config, log-dir files, metadata log, internal topics, partitions' small files, log4j, partitions' segments
    tiers: list[list[Planned]] = [[] for _ in range(7)]
    left: list[LeftOut] = []
    tiers[0].append(Planned(str(config), f"{base}/config/{config.name}", _size(config) or 0, "configuration"))
    for i, log_dir in enumerate(dirs):
        target = f"{base}/logs/{i}-{log_dir.name or 'root'}"
        for name in _LOG_DIR_FILES:
            size = _size(log_dir / name)
            if size is not None:
                tiers[1].append(Planned(str(log_dir / name), f"{target}/{name}", size, "log dir file"))
        try:
            partitions = sorted(p for p in log_dir.iterdir() if p.is_dir() and _PARTITION_DIR.match(p.name))
        except OSError:
            continue
        for pdir in partitions:
            topic = _PARTITION_DIR.match(pdir.name).group("topic")  # type: ignore[union-attr]
            files = [(f, _size(f)) for f in _files(pdir)]
            files = [(f, _written(f, s) if _INDEX.match(f.name) else s) for f, s in files if s is not None]
            # newest segments first: an incident is at the end of the log
            files.sort(key=lambda fs: (not _PAYLOAD.match(fs[0].name), fs[0].name), reverse=True)
            segments = sum(s for f, s in files if _PAYLOAD.match(f.name))
            metadata = topic == "__cluster_metadata"
            whole = metadata or _internal(topic) or segments <= full_partition_bytes
            kept = 2 if metadata else 3 if _internal(topic) else 4
            for f, size in files:
                tier = 6 if kept == 4 and _PAYLOAD.match(f.name) else kept
                planned = Planned(str(f), f"{target}/{pdir.name}/{f.name}", size,
                                  "metadata log" if metadata else "internal topic" if kept == 3 else "partition")
                if _PAYLOAD.match(f.name) and not whole:
                    headers = _SEGMENT.match(f.name) is not None  # not of a segment being deleted or cleaned
                    if headers:  # its batch headers instead (their size is known once they are read, at writing)
                        tiers[4].append(Planned(str(f), planned.arcname + EXTRACT_SUFFIX, size, EXTRACT))
                    left.append(LeftOut(str(f), size, f"payloads of a large partition ({segments} bytes of segments, "
                                                      f"over --full-partition-bytes {full_partition_bytes}); its "
                                                      f"{'batch headers, ' if headers else ''}indexes and "
                                                      "checkpoints are taken"))
                else:
                    tiers[tier].append(planned)
    for directory in _log4j_dirs(config, log4j_dirs):
        for f in _files(directory):
            if _LOG4J.match(f.name):
                tiers[5].append(Planned(str(f), f"{base}/log4j/{f.name}", _size(f) or 0, "log4j"))
    return node, dirs, [p for tier in tiers for p in tier], left


def _log4j_dirs(config: Path, given: Sequence[Path]) -> list[Path]:
    if given:
        return list(given)
    candidates = [os.environ.get("LOG_DIR"), os.environ.get("KAFKA_HOME") and f"{os.environ['KAFKA_HOME']}/logs",
                  str(config.resolve().parent.parent / "logs")]
    out: list[Path] = []
    for c in candidates:
        if c and Path(c).is_dir() and Path(c).resolve() not in out:
            out.append(Path(c).resolve())
    return out


def _inside(path: Path, directories: Iterable[Path]) -> Path | None:
    resolved = path.resolve()
    for d in directories:
        try:
            resolved.relative_to(d.resolve())
            return d
        except ValueError:
            continue
    return None


def _run_tools(bootstrap: str, kafka_bin: Path) -> list[tuple[str, bytes, dict]]:
    out = []
    for name, script, args in TOOLS:
        argv = [str(kafka_bin / script), "--bootstrap-server", bootstrap, *args]
        t_ms = int(time.time() * 1000)
        try:
            done = subprocess.run(argv, capture_output=True, timeout=TOOL_TIMEOUT_S, check=False)
            text, status = done.stdout + done.stderr, f"exit {done.returncode}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            text, status = b"", f"not run: {exc}"
        out.append((f"tools/{t_ms}-{name}.txt", text, {"argv": argv[1:], "t_ms": t_ms, "status": status}))
    return out


def _add_bytes(tar: tarfile.TarFile, arcname: str, data: bytes) -> None:
    """Add ``data`` as a file of the archive."""
    info = tarfile.TarInfo(arcname)
    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
    tar.addfile(info, io.BytesIO(data))


def _add_file(tar: tarfile.TarFile, item: Planned) -> str | None:
    """Add ``item.bytes`` bytes of the file, read-only; why it differs from the plan, or None."""
    try:
        fd = os.open(item.source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        return f"gone while collecting: {exc.strerror}"
    with os.fdopen(fd, "rb") as src:
        info = tarfile.TarInfo(item.arcname)
        info.size, info.mode = item.bytes, 0o644
        try:
            info.mtime = int(os.fstat(src.fileno()).st_mtime)
        except OSError:
            info.mtime = int(time.time())
        reader = _Exactly(src, item.bytes)
        tar.addfile(info, reader)
        if reader.padded:
            return f"shrank while collecting: {reader.padded} bytes at its end are zeros"
    return None


class _Exactly(io.RawIOBase):
    """``n`` bytes of a file: cut where it grew since the plan, zero-padded where it shrank."""

    def __init__(self, src: io.BufferedReader, n: int) -> None:
        self.src, self.left, self.padded = src, n, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = self.left if size < 0 else min(size, self.left)
        data = self.src.read(want) if want else b""
        if len(data) < want:
            self.padded += want - len(data)
            data += b"\0" * (want - len(data))
        self.left -= len(data)
        return data


def collect(config: str | os.PathLike[str], out: str | os.PathLike[str], *, max_bytes: int | None = None,
            full_partition_bytes: int = FULL_PARTITION_BYTES, log4j_dirs: Sequence[str | os.PathLike[str]] = (),
            bootstrap_server: str | None = None, kafka_bin: str | os.PathLike[str] | None = None,
            progress: Callable[[int, int], None] | None = None) -> Collected:
    """Write one node's archive (the module docstring); ``progress(done_bytes, total_bytes)`` as it goes.

    Raises
    ------
    ConfigError
        The configuration cannot be read, the archive would be written inside a log dir, or a
        bootstrap server is given without Kafka's ``bin`` directory.
    """
    config_path = Path(config)
    if not config_path.is_file():
        raise ConfigError(f"collect: no configuration file {config_path}")
    if bootstrap_server and not kafka_bin:
        raise ConfigError("collect: --bootstrap-server needs --kafka-bin (the directory of kafka-topics.sh...)")
    node, dirs, planned, left = plan(config_path, log4j_dirs=[Path(d) for d in log4j_dirs],
                                     full_partition_bytes=full_partition_bytes)
    out_path = Path(out)
    inside = _inside(out_path.parent, dirs)
    if inside is not None:
        raise ConfigError(f"collect: the archive would be written inside the log dir {inside}; write it elsewhere")
    budget = max_bytes if max_bytes is not None else float("inf")
    result = Collected(out_path, node, [str(d) for d in dirs], left_out=left)
    total = sum(t.bytes for t in planned if t.what != EXTRACT)
    done = used = 0
    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_name(out_path.name + ".partial")
    with tarfile.open(partial, "w:gz", compresslevel=6) as tar:
        for item in planned:
            extract = None
            if item.what == EXTRACT:
                try:
                    extract, stop, short = extract_headers(item.source, item.bytes)
                except OSError as exc:
                    left.append(LeftOut(item.source, 0, f"batch headers not read: {exc.strerror}"))
                    continue
                if short is not None:
                    left.append(LeftOut(item.source, item.bytes - stop, f"batch headers past position {stop} not "
                                                                        f"extracted: {short}"))
                item = Planned(item.source, item.arcname, len(extract), item.what)
            if used + item.bytes > budget:
                left.append(LeftOut(item.source, item.bytes, f"over --max-bytes {max_bytes} ({item.what})"))
                continue
            used += item.bytes
            why = None
            if extract is not None:
                _add_bytes(tar, item.arcname, extract)
            else:
                why = _add_file(tar, item)
            if why is not None and why.startswith("gone"):
                result.left_out.append(LeftOut(item.source, item.bytes, why))
            else:
                result.taken.append(item)
                if why is not None:
                    result.left_out.append(LeftOut(item.source, 0, why))
            if extract is None:
                done += item.bytes
            if progress is not None:
                progress(done, total)
        if bootstrap_server and kafka_bin:
            for arcname, text, facts in _run_tools(bootstrap_server, Path(kafka_bin)):
                _add_bytes(tar, arcname, text)
                result.tools.append({"path": arcname, **facts})
        manifest = {
            "collected_by": "workbench collect", "host": socket.gethostname(), "created_ms": int(time.time() * 1000),
            "config": str(config_path.resolve()), "node_id": node, "log_dirs": result.log_dirs,
            "max_bytes": max_bytes, "full_partition_bytes": full_partition_bytes,
            "taken": [asdict(t) for t in result.taken], "left_out": [asdict(x) for x in result.left_out],
            "tools": result.tools,
        }
        node_dir = f"nodes/{node if node is not None else 'unknown'}"
        _add_bytes(tar, f"{node_dir}/collect-manifest.json", json.dumps(manifest, indent=1).encode())
    partial.replace(out_path)
    return result
