"""Discovery of what a bundle of Kafka artifacts holds.

A bundle is a directory (or a ``.tar``, ``.tar.gz``, ``.tgz`` or ``.zip`` archive of one) that
holds whatever an SRE collected: log directories of controllers and brokers, kafka-dump-log
text, tool output and metric exports. :func:`open_bundle` walks it once and classifies every
file into an :class:`Artifact` (node, kind, topic, partition, base offset, size) without
reading file contents beyond the small text files that name a node (``meta.properties``).
"""

from __future__ import annotations

import json
import re
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.errors import BundleError
from workbench.formats.problems import Problem

METADATA_TOPIC = "__cluster_metadata"

# <endOffset>-<epoch>.checkpoint (KRaft snapshot)
_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_OFFSET_FILE_RE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex|snapshot)$")
_PARTITION_DIR_RE = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.(?P<uuid>[0-9a-f]{32})-(?P<state>delete|future|stray))?$"
)
_TEXT_CHECKPOINTS = {
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
}
_ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")

#: Kinds of artifact, as they appear in the ``kind`` column of the inventory.
KINDS = (
    "segment", "snapshot", "bootstrap", "offset_index", "time_index", "txn_index",
    "producer_snapshot", "quorum_state", "meta_properties", "partition_metadata",
    "leader_epoch_checkpoint", "text_checkpoint", "clean_shutdown", "dump_text",
    "tool_output", "metrics", "manifest", "other",
)


@dataclass(frozen=True)
class Artifact:
    """One file of a bundle: a row of the ``inventory`` table."""

    path: str
    node_id: int
    kind: str
    topic: str | None
    partition: int | None
    base_offset: int | None
    bytes: int
    dir_state: str | None = None  # "delete", "future" or "stray" for such partition dirs


@dataclass
class Bundle:
    """What a bundle holds.

    Attributes
    ----------
    root : pathlib.Path
        Directory the artifacts were found in (the extraction directory for an archive).
    artifacts : list of Artifact
        Every file, classified.
    manifest : dict or None
        The bundle's ``manifest.json`` when it has one (bundles captured by the project's
        real-Kafka scenarios do).
    problems : list of Problem
        Files that could not be classified or read during discovery.
    """

    root: Path
    artifacts: list[Artifact]
    manifest: dict | None = None
    problems: list[Problem] = field(default_factory=list)

    def of_kind(self, *kinds: str) -> list[Artifact]:
        """Artifacts of the given kinds, in path order."""
        return [a for a in self.artifacts if a.kind in kinds]

    @property
    def metadata_files(self) -> list[Artifact]:
        """KRaft metadata log segments, snapshots and bootstrap checkpoints."""
        return [
            a for a in self.artifacts
            if a.kind == "bootstrap" or (a.topic == METADATA_TOPIC and a.kind in ("segment", "snapshot"))
        ]

    @property
    def node_ids(self) -> list[int]:
        """Distinct node ids found (``-1`` stands for files outside any node's log dir)."""
        return sorted({a.node_id for a in self.artifacts})

    def inventory_rows(self) -> list[dict]:
        """The inventory as a list of dicts (one per artifact)."""
        return [asdict(a) for a in self.artifacts]


def open_bundle(path: str | Path, *, extract_to: str | Path | None = None) -> Bundle:
    """Discover the artifacts of a bundle directory or archive.

    Parameters
    ----------
    path : str or Path
        A directory, or a ``.tar``/``.tar.gz``/``.tgz``/``.zip`` archive of one.
    extract_to : str or Path, optional
        Where an archive is extracted (a new temporary directory by default). Members that
        would land outside this directory (absolute paths, ``..``, links) are refused.

    Returns
    -------
    Bundle

    Examples
    --------
    >>> b = open_bundle("tests/fixtures/bundle")           # doctest: +SKIP
    >>> sorted({a.kind for a in b.artifacts})               # doctest: +SKIP
    ['meta_properties', 'segment', ...]
    """
    src = Path(path)
    if not src.exists():
        raise BundleError(f"bundle path does not exist: {src}")
    if src.is_file():
        if not src.name.endswith(_ARCHIVE_SUFFIXES):
            raise BundleError(f"expected a directory or a .tar/.tar.gz/.tgz/.zip archive, got file {src}")
        target = Path(extract_to) if extract_to else Path(tempfile.mkdtemp(prefix="workbench-bundle-"))
        extract_archive(src, target)
        root = target
    else:
        root = src
    root = root.resolve()
    artifacts: list[Artifact] = []
    problems: list[Problem] = []
    node_cache: dict[Path, int] = {}
    for file in _walk(root):
        try:
            artifacts.append(_classify(root, file, node_cache))
        except OSError as exc:
            problems.append(Problem(str(file), 0, "unreadable", str(exc)))
    manifest = None
    manifest_path = root / "manifest.json"
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(Problem(str(manifest_path), 0, "decode_error", f"manifest.json is not JSON: {exc}"))
    return Bundle(root=root, artifacts=artifacts, manifest=manifest, problems=problems)


def extract_archive(archive: Path, target: Path) -> None:
    """Extract ``archive`` into ``target``, refusing members that would escape it.

    Raises
    ------
    BundleError
        When a member has an absolute path, climbs out with ``..``, or is a link or device.
    """
    target.mkdir(parents=True, exist_ok=True)
    dest = target.resolve()
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    out = (dest / info.filename).resolve()
                    if not out.is_relative_to(dest):
                        raise BundleError(f"archive member escapes the target directory: {info.filename!r}")
                    mode = (info.external_attr >> 16) & 0o170000
                    if mode in (0o120000,):  # symlink
                        raise BundleError(f"archive member is a link: {info.filename!r}")
                zf.extractall(dest)
        else:
            with tarfile.open(archive) as tf:
                for member in tf.getmembers():
                    out = (dest / member.name).resolve()
                    if not out.is_relative_to(dest) or member.issym() or member.islnk() or member.isdev():
                        raise BundleError(f"archive member escapes the target directory or is a link: {member.name!r}")
                # the "data" filter refuses the same again, and strips set-uid bits
                tf.extractall(dest, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
        raise BundleError(f"cannot extract {archive}: {exc}") from exc


def _walk(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield path


def read_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (``key=value`` lines, ``#``/``!`` comments).

    Examples
    --------
    >>> read_properties("#c\\nnode.id=3\\nversion=1\\n")
    {'node.id': '3', 'version': '1'}
    """
    props: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, _, value = _split_prop(line)
        props[key] = value
    return props


def _split_prop(line: str) -> tuple[str, str, str]:
    m = re.match(r"^((?:\\.|[^=:\s])+)\s*[=:\s]\s*(.*)$", line)
    if not m:
        return line, "", ""
    return m.group(1).replace("\\", ""), "=", m.group(2)


def _node_of(root: Path, file: Path, cache: dict[Path, int]) -> int:
    """Node id of the nearest ancestor log dir with a ``meta.properties``, or a ``nodes/<id>`` dir."""
    for parent in file.parents:
        if parent == root.parent:
            break
        if parent in cache:
            return cache[parent]
        props = parent / "meta.properties"
        if props.is_file():
            values = read_properties(props.read_text(encoding="utf-8", errors="replace"))
            node = values.get("node.id", values.get("broker.id", "-1"))
            cache[parent] = int(node) if node.lstrip("-").isdigit() else -1
            return cache[parent]
        if parent.parent.name == "nodes" and parent.name.isdigit():
            cache[parent] = int(parent.name)
            return cache[parent]
        if parent == root:
            break
    return -1


def _classify(root: Path, file: Path, cache: dict[Path, int]) -> Artifact:
    name = file.name
    rel = file.relative_to(root)
    size = file.stat().st_size
    node = _node_of(root, file, cache)
    topic: str | None = None
    partition: int | None = None
    base: int | None = None
    state: str | None = None
    kind = "other"
    pm = _PARTITION_DIR_RE.match(file.parent.name)
    in_dumps = rel.parts and rel.parts[0] == "dumps"
    if in_dumps or (name.endswith(".txt") and "dump" in name):
        kind = "dump_text"
    elif rel.parts and rel.parts[0] == "tools":
        kind = "tool_output"
    elif rel.parts and rel.parts[0] == "metrics" or name.endswith((".csv", ".prom")):
        kind = "metrics"
    elif rel == Path("manifest.json"):
        kind = "manifest"
    elif name == "bootstrap.checkpoint":
        kind = "bootstrap"
    elif name == "meta.properties":
        kind = "meta_properties"
    elif name == "quorum-state":
        kind = "quorum_state"
    elif name in _TEXT_CHECKPOINTS:
        kind = "text_checkpoint"
    elif name == ".kafka_cleanshutdown":
        kind = "clean_shutdown"
    elif pm is not None:
        topic, partition, state = pm.group("topic"), int(pm.group("partition")), pm.group("state")
        m = _OFFSET_FILE_RE.match(name)
        s = _SNAPSHOT_RE.match(name)
        if m:
            base = int(m.group(1))
            kind = {"log": "segment", "index": "offset_index", "timeindex": "time_index",
                    "txnindex": "txn_index", "snapshot": "producer_snapshot"}[m.group(2)]
        elif s:
            base = int(s.group(1))
            kind = "snapshot"
        elif name == "partition.metadata":
            kind = "partition_metadata"
        elif name == "leader-epoch-checkpoint":
            kind = "leader_epoch_checkpoint"
    return Artifact(str(rel), node, kind, topic, partition, base, size, state)
