"""Discovery of what a bundle of Kafka artifacts holds.

A bundle is a directory (or a ``.tar``, ``.tar.gz``, ``.tgz`` or ``.zip`` archive of one) that
holds whatever an SRE collected: log directories of controllers and brokers, kafka-dump-log
text, tool output and metric exports. :func:`open_bundle` walks it once and classifies every
file into an :class:`Artifact` (node, kind, topic, partition, base offset, size) without
reading file contents beyond the small text files that name a node (``meta.properties``).
"""

from __future__ import annotations

import atexit
import json
import lzma
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from workbench.errors import BundleError, ConfigError, UnsupportedError
from workbench.formats.kraft_files import MetaProperties, parse_meta_properties, parse_snapshot_name
from workbench.formats.problems import Problem
from workbench.formats.topics import METADATA_TOPIC

_OFFSET_FILE_RE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex|snapshot|log\.headers)$")
_PARTITION_DIR_RE = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.(?P<uuid>[0-9a-f]{32})-(?P<state>delete|future|stray))?$"
)
#: Kafka's partition ids are 32-bit signed integers.
_MAX_PARTITION = 2**31 - 1
_TEXT_CHECKPOINTS = {
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
}
_ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
#: A node's configuration file, as Kafka's distribution names them (``config/server.properties``,
#: ``config/kraft/broker.properties``, ``controller.properties``).
_SERVER_PROPERTIES = {"server.properties", "broker.properties", "controller.properties"}
#: The operator's mapping of Prometheus ``instance`` labels to node ids (read by the ``metrics``
#: table, in this order); it sits beside the exports but is none.
INSTANCE_MAPS = ("metrics/instances.json", "metrics/instances.yaml", "metrics/instances.yml")
#: A node's log4j output, as Kafka's shipped logging configuration names it, rotated copies
#: (``server.log.2024-05-01-13``, ``server.log.1``) included, and its captured stdout.
_SERVER_LOG_RE = re.compile(
    r"^(?:(?:server|controller|state-change|log-cleaner|kafka-request|kafka-authorizer)\.log(?:\.[\w.-]+)?"
    r"|kafkaServer\.out|server\.out)$"
)

#: Kinds of artifact, as they appear in the ``kind`` column of the inventory.
KINDS = (
    "segment", "snapshot", "bootstrap", "offset_index", "time_index", "txn_index",
    "producer_snapshot", "quorum_state", "meta_properties", "partition_metadata",
    "leader_epoch_checkpoint", "text_checkpoint", "clean_shutdown", "dump_text",
    "tool_output", "metrics", "manifest", "server_properties", "server_log", "other",
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
    #: the ``cluster.id`` of the node directory holding the file (:func:`_assign_clusters`)
    cluster_id: str | None = None


@dataclass
class Bundle:
    """What a bundle holds.

    Attributes
    ----------
    root : pathlib.Path or upath.UPath
        Directory the artifacts were found in (the extraction directory for an archive; for a
        directory at a URL, a ``UPath`` of it: ``root / artifact.path`` opens either way).
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
    _clusters: dict[int, str] | None = field(default=None, repr=False, compare=False)
    #: every ``meta.properties`` read, by path: discovery reads each once, :meth:`node_clusters` reuses them
    _metas: dict[Path, MetaProperties | None] = field(default_factory=dict, repr=False, compare=False)
    #: the extraction directory this bundle owns (an archive opened without ``extract_to``)
    owned_dir: Path | None = field(default=None, repr=False, compare=False)
    #: log dirs without ``meta.properties`` (very old releases, a copy that left it out), each with
    #: the node id discovery gave it from its path (:func:`_number_unnamed_log_dirs`)
    path_nodes: dict[str, int] = field(default_factory=dict)

    def close(self) -> None:
        """Remove the directory an archive was extracted into, if the bundle owns one; idempotent.
        Tables read lazily from the bundle's files must be computed first.
        """
        if self.owned_dir is not None:
            _remove_owned(self.owned_dir)
            self.owned_dir = None

    def __enter__(self) -> Bundle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def of_kind(self, *kinds: str) -> list[Artifact]:
        """Artifacts of the given kinds, in path order."""
        return [a for a in self.artifacts if a.kind in kinds]

    @property
    def metadata_files(self) -> list[Artifact]:
        """KRaft metadata log segments, snapshots and bootstrap checkpoints."""
        return [
            a for a in self.artifacts
            if a.kind == "bootstrap" or (a.topic == METADATA_TOPIC and (
                a.kind == "snapshot" or (a.kind == "segment" and a.path.endswith(".log"))))  # not an extract
        ]

    @property
    def node_ids(self) -> list[int]:
        """Distinct node ids found (``-1`` stands for files outside any node's log dir)."""
        return sorted({a.node_id for a in self.artifacts})

    def node_clusters(self) -> dict[int, str]:
        """The cluster id of each node id, from the ``meta.properties`` of its log dirs.

        A bundle may hold several clusters (MirrorMaker 2's source and target, say). A node id
        that names nodes of several clusters (two clusters both numbering from 1) is absent: such
        nodes' files are told apart by :attr:`Artifact.cluster_id`, never by their id. Nodes whose
        ``meta.properties`` is missing or unreadable are absent.
        """
        if self._clusters is None:
            found: dict[int, set[str]] = {}
            for a in self.of_kind("meta_properties"):
                meta = read_meta(self.root / a.path, self._metas)
                if meta is None:
                    continue
                node = meta.node_id if meta.node_id is not None else a.node_id
                for p in meta.problems:
                    self.problems.append(Problem(str(self.root / a.path), p.position, p.kind, p.detail))
                if meta.node_id is not None and not 0 <= meta.node_id < 2**31:
                    self.problems.append(Problem(str(self.root / a.path), 0, "out_of_range",
                                                 f"node.id {meta.node_id} is outside 0..{2**31 - 1}; "
                                                 f"the node is taken from its directory ({a.node_id})"))
                    node = a.node_id
                cluster = cluster_of_meta(meta)
                if cluster and node is not None and node >= 0:
                    found.setdefault(node, set()).add(cluster)
            self._clusters = {node: next(iter(ids)) for node, ids in found.items() if len(ids) == 1}
        return dict(self._clusters)

    def cluster_of(self, artifact: Artifact) -> str | None:
        """The cluster id of ``artifact``: its node directory's, else its node id's when only one
        cluster has that id (:meth:`node_clusters`), else ``None``."""
        if artifact.cluster_id is not None:
            return artifact.cluster_id
        return self.node_clusters().get(artifact.node_id)

    def clusters(self) -> dict[str | None, list[int]]:
        """The node ids of each cluster id (``None``: nodes of no known cluster), sorted."""
        out: dict[str | None, set[int]] = {}
        for a in self.artifacts:
            if a.node_id >= 0:
                out.setdefault(self.cluster_of(a), set()).add(a.node_id)
        return {c: sorted(out[c]) for c in sorted(out, key=lambda c: (c is None, c or ""))}

    def text_log_clusters(self) -> list[str | None]:
        """The clusters with text logs (``server_log``) and no metadata log: ZooKeeper-era clusters, whose
        partition history is their brokers' and controller's text logs. In cluster id order."""
        with_log = {self.cluster_of(a) for a in self.metadata_files}
        logged = {self.cluster_of(a) for a in self.of_kind("server_log")}
        return sorted(logged - with_log, key=lambda c: (c is None, c or ""))

    def inventory_rows(self) -> list[dict]:
        """The inventory as a list of dicts (one per artifact)."""
        return [asdict(a) for a in self.artifacts]


#: Extraction directories owned by open bundles, removed at exit if nobody closed them.
_OWNED: set[Path] = set()


def _remove_owned(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    _OWNED.discard(directory)


@atexit.register
def _remove_all_owned() -> None:
    for directory in list(_OWNED):
        _remove_owned(directory)


def open_bundle(path: str | Path, *, extract_to: str | Path | None = None,
                limits: ArchiveLimits | None = None) -> Bundle:
    """Discover the artifacts of a bundle directory or archive (``.tar``, ``.tar.gz``, ``.tgz``, ``.zip``).

    A directory or archive whose only entry is a bundle directory opens as that directory. An archive
    is extracted to ``extract_to`` (the caller's, kept) or to a new ``$TMPDIR/workbench-bundle-*`` the
    bundle owns and removes on :meth:`Bundle.close`, at the end of a ``with`` block or at exit.
    ``limits`` default to :meth:`ArchiveLimits.from_env`; see :func:`extract_archive` for what is refused.

    >>> b = open_bundle("tests/fixtures/bundle")           # doctest: +SKIP
    >>> sorted({a.kind for a in b.artifacts})               # doctest: +SKIP
    ['meta_properties', 'segment', ...]
    >>> with open_bundle("incident.tar.gz") as b:           # doctest: +SKIP
    ...     print(len(b.artifacts))                         # the extraction is removed after the block
    """
    if is_url(path):
        return _open_url(str(path), extract_to=extract_to, limits=limits)
    src = Path(path)
    if not src.exists():
        raise BundleError(f"bundle path does not exist: {src}")
    if src.is_file():
        if not src.name.endswith(_ARCHIVE_SUFFIXES):
            raise BundleError(f"expected a directory or a .tar/.tar.gz/.tgz/.zip archive, got file {src}")
        return _open_archive(src.name, extract_to, limits, local=src)
    return _discover(src)


def _open_archive(name: str, extract_to: str | Path | None, limits: ArchiveLimits | None, *,
                  local: Path | None = None, download: Any = None) -> Bundle:
    """An archive extracted to ``extract_to`` or to a directory the bundle owns, and discovered there:
    the ``local`` file, or the one ``download(path)`` writes to a staging directory removed after."""
    owned = None
    if extract_to:
        target = Path(extract_to)
    else:
        target = owned = Path(tempfile.mkdtemp(prefix="workbench-bundle-")).resolve()
        _OWNED.add(owned)
    staging = None
    try:
        if local is None:
            staging = Path(tempfile.mkdtemp(prefix="workbench-download-"))
            local = staging / name
            download(local)
        extract_archive(local, target, limits)
        bundle = _discover(target)
    except BaseException:
        if owned is not None:
            _remove_owned(owned)
        raise
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    bundle.owned_dir = owned
    return bundle


def is_url(path: str | Path) -> bool:
    """Whether ``path`` names a bundle by URL (``s3://bucket/incident``, any fsspec protocol) rather than
    a local path; ``file://`` URLs are local paths."""
    text = str(path) if isinstance(path, str) else ""
    scheme, sep, _rest = text.partition("://")
    return bool(sep) and scheme.isidentifier() and scheme.lower() != "file"


def _store_url(url: str) -> str:
    """``url`` as fsspec names its store: ``s3a://`` (Hadoop's name for S3) is ``s3://``."""
    return "s3://" + url[len("s3a://"):] if url.startswith("s3a://") else url


def _url_info(url: str) -> tuple[Any, str, str]:
    """The filesystem, path and ``"directory"`` or ``"file"`` of a URL; a clear error when it cannot be read."""
    import fsspec

    try:
        fs, remote = fsspec.core.url_to_fs(url)
        info = fs.info(remote)
    except FileNotFoundError:
        raise BundleError(f"bundle path does not exist: {url}") from None
    except (OSError, ValueError, ImportError) as exc:
        raise BundleError(f"cannot open bundle {url}: {type(exc).__name__}: {exc}") from None
    return fs, remote, "directory" if info.get("type") == "directory" else "file"


def url_kind(url: str) -> str:
    """``"directory"`` or ``"file"``: what a bundle URL names (:class:`BundleError` when it names nothing)."""
    return _url_info(_store_url(url))[2]


def _open_url(url: str, *, extract_to: str | Path | None, limits: ArchiveLimits | None) -> Bundle:
    """A bundle in object storage (``s3://``, ``s3a://`` or any fsspec URL): a directory is read where it
    lies, each reader opening the files it reads in the store; an archive, which has to be read whole to be
    extracted, is copied beside its extraction first and removed after it. Credentials and endpoint
    come from the filesystem's usual environment (for S3: ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ``AWS_PROFILE``)."""
    try:
        from upath import UPath
    except ImportError:
        raise BundleError(f"cannot open bundle {url}: a bundle at a URL needs universal_pathlib and the store's "
                          "filesystem (s3fs for s3://): pip install 'kafka-workbench[s3]'") from None
    url = _store_url(url)
    fs, remote, kind = _url_info(url)
    if kind != "directory":
        if not url.endswith(_ARCHIVE_SUFFIXES):
            raise BundleError(f"expected a directory or a .tar/.tar.gz/.tgz/.zip archive, got file {url}")
        return _open_archive(url.rstrip("/").rsplit("/", 1)[-1], extract_to, limits,
                             download=lambda local: fs.get_file(remote, str(local)))
    return _discover(UPath(url))


#: Entries beside a wrapping directory that do not make it a bundle's top (archivers' by-products).
_WRAPPER_NOISE = frozenset({".DS_Store", "__MACOSX"})
#: What only a bundle's top holds: files and directories recognised relative to it.
_TOP_MARKERS = ("manifest.json", "nodes", "tools", "dumps", "metrics")


def _bundle_top(root: Path) -> Path:
    """``root``, or the bundle it wraps: down a chain of directories whose only entry is one
    directory, the first that holds a bundle's top (``manifest.json``, ``nodes/``, ``tools/``,
    ``dumps/`` or ``metrics/``); ``root`` itself when it holds one, or when no such directory is
    found.

    An archive of ``incident/`` extracts to a directory holding ``incident/``; an operator copies a
    bundle into ``case-123/bundle/`` and names ``case-123``. Those top entries are recognised
    relative to the bundle's top only, so from the wrapper they would read as unrecognised files.
    Any other lone directory (``nodes/``, a log directory) is part of the bundle and is not entered.
    Links are not followed.
    """
    here = root
    for _ in range(32):
        if isinstance(here, Path):
            if any(os.path.lexists(here / marker) for marker in _TOP_MARKERS):
                return here
            try:
                with os.scandir(here) as it:
                    entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it if e.name not in _WRAPPER_NOISE]
            except OSError:
                return root
        else:   # a URL: one listing of the directory
            try:
                listed = here.fs.ls(here.path, detail=True)
            except OSError:
                return root
            entries = [(name, info.get("type") == "directory") for info in listed
                       if (name := info["name"].rstrip("/").rsplit("/", 1)[-1]) and name not in _WRAPPER_NOISE]
            if any(name in _TOP_MARKERS for name, _is_dir in entries):
                return here
        if len(entries) != 1 or not entries[0][1]:
            return root
        here = here / entries[0][0]
    return root


def _discover(root: Path) -> Bundle:
    """Walk a local directory (a :class:`~pathlib.Path`) or a URL's (a ``UPath``) once and classify it."""
    root = _bundle_top(root.resolve() if isinstance(root, Path) else root)
    artifacts: list[Artifact] = []
    problems: list[Problem] = []
    node_cache: dict[Path, int] = {}
    metas: dict[Path, MetaProperties | None] = {}
    if isinstance(root, Path):
        files = [(file, None) for file in _walk(root)]
        is_file = Path.is_file
    else:
        files = _walk_url(root)
        listed = {str(file) for file, _size in files}

        def is_file(path: Any) -> bool:
            return str(path) in listed
    for file, size in files:
        try:
            artifacts.append(_classify(root, file, node_cache, metas, size=size, is_file=is_file))
        except OSError as exc:
            problems.append(Problem(str(file), 0, "unreadable", str(exc)))
    artifacts, path_nodes = _number_unnamed_log_dirs(root, artifacts)
    artifacts = _assign_clusters(root, artifacts, metas)
    manifest = None
    manifest_path = root / "manifest.json"
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(Problem(str(manifest_path), 0, "decode_error", f"manifest.json is not JSON: {exc}"))
        if manifest is not None and not isinstance(manifest, dict):
            problems.append(Problem(str(manifest_path), 0, "decode_error",
                                    f"manifest.json holds a JSON {type(manifest).__name__}, expected an object; "
                                    "ignored"))
            manifest = None
    return Bundle(root=root, artifacts=artifacts, manifest=manifest, problems=problems, path_nodes=path_nodes,
                  _metas=metas)


#: ``zipfile`` compression methods Python can read (stored, deflate, bzip2, lzma).
_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
                zipfile.ZIP_LZMA: "lzma"}
#: Names of the zip methods met in the wild that Python cannot read, for the error message.
_ZIP_UNKNOWN = {9: "Deflate64", 10: "PKWARE DCL implode", 6: "implode", 93: "zstd", 95: "xz", 98: "PPMd", 99: "AES"}
_GiB = 1 << 30
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str | int, name: str = "size") -> int:
    """A byte count given by a person: ``20G``, ``512MiB``, ``1.5g``, ``1048576`` (units are powers of 1024).

    Examples
    --------
    >>> parse_size("20G"), parse_size("512MiB"), parse_size("1024")
    (21474836480, 536870912, 1024)
    """
    if isinstance(text, int) and not isinstance(text, bool):
        number, unit = float(text), ""
    else:
        m = _SIZE_RE.match(str(text))
        if not m:
            raise ConfigError(f"{name}: expected a size such as 20G, 512M or 1048576, got {text!r}")
        number, unit = float(m.group(1)), m.group(2).lower()
    value = int(number * (1 << (10 * " kmgt".index(unit or " "))))
    if value <= 0:
        raise ConfigError(f"{name}: expected a positive size, got {text!r}")
    return value


@dataclass(frozen=True)
class ArchiveLimits:
    """How much an archive may expand to before extraction is refused.

    The defaults take a real incident bundle of a few GB (log dirs of a handful of brokers,
    preallocated index files that compress a thousandfold included) and refuse an archive bomb
    long before it fills a disk. Raise them with :meth:`from_env` variables or the command line's
    ``--archive-max-*`` options.

    Attributes
    ----------
    max_bytes : int
        Total size of the extracted files (default 32 GiB; ``WORKBENCH_ARCHIVE_MAX_BYTES``).
    max_members : int
        Number of members, directories included (default 200,000; ``WORKBENCH_ARCHIVE_MAX_MEMBERS``).
    max_ratio : float
        Extracted bytes per byte of archive (default 200; ``WORKBENCH_ARCHIVE_MAX_RATIO``), applied
        once the extracted size passes ``ratio_floor`` (so small archives of zeros stay welcome).
    ratio_floor : int
        Extracted size below which the ratio is not checked (default 1 GiB).

    Examples
    --------
    >>> ArchiveLimits().allowed(archive_bytes=2 << 20)   # a 2 MiB archive may expand to 1 GiB
    1073741824
    """

    max_bytes: int = 32 * _GiB
    max_members: int = 200_000
    max_ratio: float = 200.0
    ratio_floor: int = _GiB

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_members", "max_ratio", "ratio_floor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or value != value:
                raise ConfigError(f"archive limit {name}: expected a positive number, got {value!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ArchiveLimits:
        """The limits from ``WORKBENCH_ARCHIVE_MAX_BYTES`` / ``_MAX_MEMBERS`` / ``_MAX_RATIO``, then ``overrides``.

        ``None`` overrides are ignored (an option not given).

        Examples
        --------
        >>> ArchiveLimits.from_env({"WORKBENCH_ARCHIVE_MAX_BYTES": "100G"}, max_members=10).max_bytes
        107374182400
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, var, convert in (("max_bytes", "WORKBENCH_ARCHIVE_MAX_BYTES", parse_size),
                                   ("max_members", "WORKBENCH_ARCHIVE_MAX_MEMBERS", _positive_int),
                                   ("max_ratio", "WORKBENCH_ARCHIVE_MAX_RATIO", _positive_float)):
            raw = overrides.get(name)
            if raw is None and env.get(var, "").strip():
                raw, label = env[var], var
            else:
                label = "--archive-" + name.replace("_", "-")
            if raw is not None:
                values[name] = convert(raw, label)
        return cls(**values)

    def allowed(self, archive_bytes: int) -> int:
        """The most an archive of ``archive_bytes`` may expand to."""
        return int(min(self.max_bytes, max(self.ratio_floor, self.max_ratio * max(archive_bytes, 1))))


def _positive_int(text: Any, name: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ConfigError(f"{name}: expected a positive whole number, got {text!r}") from None
    if value <= 0:
        raise ConfigError(f"{name}: expected a positive whole number, got {text!r}")
    return value


def _positive_float(text: Any, name: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ConfigError(f"{name}: expected a positive number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise ConfigError(f"{name}: expected a positive number, got {text!r}")
    return value


class _Budget:
    """Counts members and bytes written during one extraction and refuses what goes past the limits."""

    def __init__(self, archive: Path, limits: ArchiveLimits) -> None:
        self.archive = archive
        self.limits = limits
        self.archive_bytes = archive.stat().st_size
        self.allowed = limits.allowed(self.archive_bytes)
        self.members = 0
        self.written = 0
        self.names: set[Path] = set()

    def member(self, out: Path, name: str, *, is_dir: bool = False) -> None:
        self.members += 1
        if self.members > self.limits.max_members:
            raise BundleError(f"{self.archive}: more than {self.limits.max_members:,} members; refused "
                              "(raise the limit with --archive-max-members or WORKBENCH_ARCHIVE_MAX_MEMBERS)")
        if is_dir:
            return  # a directory named twice is harmless
        if out in self.names:
            raise BundleError(f"{self.archive}: member {name!r} appears twice; refused (which copy is the bundle's?)")
        self.names.add(out)

    def expect(self, size: int, name: str) -> None:
        """Refuse before writing when ``size`` more bytes would pass the limit."""
        if self.written + size > self.allowed:
            self._refuse(self.written + size, name)

    def wrote(self, size: int, name: str) -> None:
        self.written += size
        if self.written > self.allowed:
            self._refuse(self.written, name)

    def _refuse(self, total: int, name: str) -> None:
        if self.allowed < self.limits.max_bytes:
            why = (f"more than the {self.allowed:,} allowed for an archive of {self.archive_bytes:,} bytes "
                   f"({self.limits.max_ratio:g} times its size, at least {self.limits.ratio_floor:,}: a compression "
                   "bomb?); raise the limit with --archive-max-ratio or WORKBENCH_ARCHIVE_MAX_RATIO")
        else:
            why = (f"more than {self.limits.max_bytes:,} bytes; raise the limit with --archive-max-bytes or "
                   "WORKBENCH_ARCHIVE_MAX_BYTES")
        raise BundleError(f"{self.archive}: extracting {name!r} would bring the bundle to {total:,} bytes, {why}")


def _target_of(dest: Path, name: str, archive: Path) -> Path:
    """Where member ``name`` lands under ``dest``; refuses absolute names, ``..`` and anything leaving ``dest``."""
    pure = PurePosixPath(name.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts or re.match(r"^[A-Za-z]:", name):
        raise BundleError(f"{archive}: archive member escapes the target directory: {name!r}")
    out = (dest / pure).resolve()
    if not out.is_relative_to(dest):
        raise BundleError(f"{archive}: archive member escapes the target directory: {name!r}")
    return out


def _copy(source: BinaryIO, out: Path, budget: _Budget, name: str, declared: int) -> None:
    budget.expect(declared, name)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "xb") as sink:
        while True:
            chunk = source.read(1 << 20)
            if not chunk:
                break
            budget.wrote(len(chunk), name)
            sink.write(chunk)


def extract_archive(archive: str | Path, target: str | Path, limits: ArchiveLimits | None = None) -> None:
    """Extract ``archive`` into ``target``, refusing anything that would escape it or exceed ``limits``.

    Members are streamed and counted as written, so a compression bomb stops at the limit; what was
    written before a refusal stays in ``target``. Raises :class:`BundleError` for an absolute path,
    ``..``, a link or device, a name given twice, limits exceeded or a damaged archive, and
    :class:`UnsupportedError` for an encrypted zip or a compression Python cannot read.

    >>> extract_archive("bundle.tar.gz", "/tmp/bundle")      # doctest: +SKIP
    """
    archive = Path(archive)
    limits = limits if limits is not None else ArchiveLimits.from_env()
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    dest = target.resolve()
    budget = _Budget(archive, limits)
    try:
        if archive.name.endswith(".zip"):
            _extract_zip(archive, dest, budget)
        else:
            _extract_tar(archive, dest, budget)
    except (BundleError, UnsupportedError):
        raise
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError, OSError) as exc:
        what = str(exc) or type(exc).__name__
        if isinstance(exc, EOFError | tarfile.ReadError) or "end-of-stream" in what:
            what = f"truncated or damaged archive ({what})"
        raise BundleError(f"cannot extract {archive}: {what}") from None


def _extract_zip(archive: Path, dest: Path, budget: _Budget) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        # everything that can be refused from the central directory is refused before writing
        seen: set[Path] = set()
        declared = 0
        for info in infos:
            out = _target_of(dest, info.filename, archive)
            if out in seen and not info.is_dir():
                raise BundleError(f"{archive}: member {info.filename!r} appears twice; refused "
                                  "(which copy is the bundle's?)")
            seen.add(out)
            if info.flag_bits & 0x1:
                raise UnsupportedError(f"{archive}: member {info.filename!r} is encrypted; "
                                       "give the workbench an unencrypted archive or a directory")
            if info.compress_type not in _ZIP_METHODS:
                method = _ZIP_UNKNOWN.get(info.compress_type, f"method {info.compress_type}")
                raise UnsupportedError(f"{archive}: member {info.filename!r} uses {method} compression, which "
                                       "Python cannot read; re-create the archive with deflate (zip -Z deflate) "
                                       "or as .tar.gz")
            mode = (info.external_attr >> 16) & 0o170000
            if mode not in (0, 0o100000, 0o040000):
                raise BundleError(f"{archive}: archive member is a link or special file: {info.filename!r}")
            declared += info.file_size
        if len(infos) > budget.limits.max_members:
            budget.members = len(infos) - 1
            budget.member(dest, "", is_dir=True)  # raises with the usual message
        budget.expect(declared, infos[-1].filename if infos else "")
        for info in infos:
            out = _target_of(dest, info.filename, archive)
            budget.member(out, info.filename, is_dir=info.is_dir())
            if info.is_dir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            with zf.open(info) as source:
                _copy(source, out, budget, info.filename, info.file_size)


def _extract_tar(archive: Path, dest: Path, budget: _Budget) -> None:
    # streamed ("r|*"): members are checked and written as the decompressor reaches them, so a
    # bomb is never decompressed further than the limit, and a truncated file fails where it ends
    with tarfile.open(archive, mode="r|*") as tf:
        for member in tf:
            out = _target_of(dest, member.name, archive)
            if member.issym() or member.islnk():
                raise BundleError(f"{archive}: archive member is a link (refused, it could point outside the "
                                  f"bundle): {member.name!r}")
            if not (member.isfile() or member.isdir()):
                raise BundleError(f"{archive}: archive member is a device, pipe or other special file: "
                                  f"{member.name!r}")
            if out == dest:
                continue  # "." itself
            budget.member(out, member.name, is_dir=member.isdir())
            if member.isdir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            source = tf.extractfile(member)
            if source is None:
                raise BundleError(f"{archive}: cannot read member {member.name!r}")
            _copy(source, out, budget, member.name, member.size)


def _walk(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield path


def _walk_url(root: Any) -> list[tuple[Any, int]]:
    """Every file under a URL directory with its size, from one recursive listing (no request per file)."""
    base = root.path.rstrip("/")
    found = root.fs.find(base, detail=True)
    out = []
    for name, info in sorted(found.items()):
        rel = name[len(base):].strip("/") if name.startswith(base) else ""
        if info.get("type") == "file" and rel and not name.endswith("/"):
            out.append((root.joinpath(*rel.split("/")), int(info.get("size") or 0)))
    return out


def read_meta(path: Path, cache: dict[Path, MetaProperties | None]) -> MetaProperties | None:
    """The ``meta.properties`` at ``path`` (v0 or v1), read once per ``cache``; None when unreadable.
    The one reader of these files: a node's id, its cluster and their problems all come from it."""
    if path not in cache:
        try:
            cache[path] = parse_meta_properties(path.read_text("utf-8", errors="replace"), str(path))
        except (OSError, ValueError):
            cache[path] = None
    return cache[path]


def node_of_meta(meta: MetaProperties | None) -> int | None:
    """The node id a ``meta.properties`` gives (``node.id``, else ZooKeeper era's ``broker.id``), when it is
    one Kafka accepts (0 to 2^31 - 1); else None."""
    if meta is None or meta.node_id is None or not 0 <= meta.node_id < 2**31:
        return None
    return meta.node_id


def cluster_of_meta(meta: MetaProperties | None) -> str | None:
    """The ``cluster.id`` a ``meta.properties`` gives (surrounding blanks dropped), or None."""
    cluster = (meta.cluster_id or "").strip() if meta is not None else ""
    return cluster or None


def _assign_clusters(root: Path, artifacts: list[Artifact],
                     metas: dict[Path, MetaProperties | None] | None = None) -> list[Artifact]:
    """Each artifact with the ``cluster.id`` of the node directory holding it.

    The nearest directory above the file (the bundle's top excluded) that holds ``meta.properties``
    files, itself or below it, names the cluster when they all give one ``cluster.id``: a log dir's
    files take its own, ``nodes/1/config/server.properties`` or ``kafka1/config/server.properties``
    take ``kafka1/data/meta.properties``'s. Two clusters whose nodes share ids stay apart this way.
    A directory whose files disagree, or a file above every node directory, names none.
    """
    below: dict[Path, set[str]] = {}
    cache = metas if metas is not None else {}
    for a in artifacts:
        if a.kind != "meta_properties":
            continue
        meta = read_meta(root / a.path, cache)
        if meta is None:
            continue
        cluster = cluster_of_meta(meta) or ""
        for parent in PurePosixPath(a.path).parents:
            if parent == PurePosixPath("."):
                break
            below.setdefault(Path(parent), set()).add(cluster)
    if not below:
        return artifacts
    out = []
    for a in artifacts:
        cluster = None
        for parent in PurePosixPath(a.path).parents:
            ids = below.get(Path(parent))
            if ids is not None:
                cluster = next(iter(ids)) if len(ids) == 1 else None
                break
        out.append(replace(a, cluster_id=cluster or None) if cluster else a)
    return out


_TRAILING_NUMBER_RE = re.compile(r"(\d+)$")
#: Files only a partition directory holds: their grandparent is a log dir.
_PARTITION_FILE_KINDS = frozenset({"segment", "offset_index", "time_index", "txn_index", "producer_snapshot",
                                   "snapshot", "partition_metadata", "leader_epoch_checkpoint"})
#: Files a bundle holds beside its nodes, never a node's own.
_NOT_IN_LOG_DIRS = frozenset({"dump_text", "tool_output", "metrics", "manifest", "server_log",
                              "server_properties"})


def path_number(bundle_name: str, log_dir: str) -> int | None:
    """The number a log dir's path ends a name with, nearest first (``bundle_name`` last).

    Examples
    --------
    >>> path_number("incident", "kafka3/data"), path_number("kafka-logs-2", "."), path_number("b", "data")
    (3, 2, None)
    """
    names = [*reversed(PurePosixPath(log_dir).parts), bundle_name]
    return next((int(m.group(1)) for n in names if (m := _TRAILING_NUMBER_RE.search(n))), None)


def _number_unnamed_log_dirs(root: Path, artifacts: list[Artifact]) -> tuple[list[Artifact], dict[str, int]]:
    """Node ids for log dirs that no ``meta.properties`` or ``nodes/<id>`` directory names.

    A log dir is the directory holding partition directories (``orders-0/``) or the log dir's own
    checkpoint files. Its node is the number its path ends a name with, nearest first
    (``kafka-logs-2`` -> 2, ``kafka3/data`` -> 3, the bundle's own name when the bundle is the log
    dir); a number another node's log dir already has, or none at all, gives the smallest id no
    node has.
    Returns the artifacts, those under such a log dir renumbered, and ``{log dir: node id}``.
    """
    unnamed: set[PurePosixPath] = set()
    for a in artifacts:
        if a.node_id >= 0:
            continue
        path = PurePosixPath(a.path)
        if a.kind in _PARTITION_FILE_KINDS:
            unnamed.add(path.parent.parent)
        elif a.kind == "text_checkpoint":
            unnamed.add(path.parent)
    if not unnamed:
        return artifacts, {}
    # ids of nodes with a log dir of their own (a nodes/<id>/config beside kafka-logs-<id> is that node)
    taken = {a.node_id for a in artifacts if a.node_id >= 0 and a.kind in (*_PARTITION_FILE_KINDS, "meta_properties")}
    numbered: dict[PurePosixPath, int] = {}
    in_order = sorted(unnamed, key=lambda d: (len(d.parts), str(d)))
    for log_dir in in_order:   # first the numbers paths give, then the free ids for the others
        wanted = path_number(root.name, str(log_dir))
        if wanted is not None and wanted not in taken and wanted < 2**31:
            taken.add(wanted)
            numbered[log_dir] = wanted
    for log_dir in in_order:
        if log_dir not in numbered:
            numbered[log_dir] = min(set(range(len(taken) + 1)) - taken)
            taken.add(numbered[log_dir])
    out = []
    for a in artifacts:
        if a.node_id < 0 and a.kind not in _NOT_IN_LOG_DIRS:
            here = next((numbered[d] for d in PurePosixPath(a.path).parents if d in numbered), None)
            if here is not None:
                a = replace(a, node_id=here)
        out.append(a)
    return out, {str(d): n for d, n in numbered.items()}


def _node_of(root: Path, file: Path, cache: dict[Path, int], metas: dict[Path, MetaProperties | None],
             is_file: Any = Path.is_file) -> int:
    """Node id of the nearest ancestor log dir with a ``meta.properties``, or a ``nodes/<id>`` dir."""
    for parent in file.parents:
        if parent == root.parent:
            break
        if parent in cache:
            return cache[parent]
        props = parent / "meta.properties"
        if is_file(props):
            node = node_of_meta(read_meta(props, metas))
            if node is not None:
                cache[parent] = node
                return node
            # a node id that is no node id (Bundle.node_clusters reports it): a nodes/<id> directory's, else none
        if parent.parent.name == "nodes" and parent.name.isdigit():
            cache[parent] = int(parent.name)
            return cache[parent]
        if parent == root:
            break
    return -1


def _classify(root: Path, file: Path, cache: dict[Path, int], metas: dict[Path, MetaProperties | None], *,
              size: int | None = None, is_file: Any = Path.is_file) -> Artifact:
    name = file.name
    rel = Path(str(file.relative_to(root)))
    size = file.stat().st_size if size is None else size
    node = _node_of(root, file, cache, metas, is_file)
    topic: str | None = None
    partition: int | None = None
    base: int | None = None
    state: str | None = None
    kind = "other"
    pm = _PARTITION_DIR_RE.match(file.parent.name)
    if pm is not None and int(pm.group("partition")) > _MAX_PARTITION:
        pm = None   # a partition id is an int32: "run-5991282310" (a hash-named bundle folder) is no partition
    in_dumps = rel.parts and rel.parts[0] == "dumps"
    if in_dumps or (name.endswith(".txt") and "dump" in name):
        kind = "dump_text"
    elif rel.parts and rel.parts[0] == "tools":
        kind = "tool_output"
    elif rel.as_posix() in INSTANCE_MAPS:
        kind = "other"  # the operator's Prometheus instance -> node mapping (workbench.spark.metrics), no export
    elif rel.parts and rel.parts[0] == "metrics" or name.endswith((".csv", ".prom")):
        kind = "metrics"
    elif name in _SERVER_PROPERTIES:
        kind = "server_properties"
    elif _SERVER_LOG_RE.match(name):
        kind = "server_log"
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
        s = parse_snapshot_name(name)
        if m:
            base = int(m.group(1))
            kind = {"log": "segment", "log.headers": "segment", "index": "offset_index", "timeindex": "time_index",
                    "txnindex": "txn_index", "snapshot": "producer_snapshot"}[m.group(2)]
        elif s is not None and s.state == "complete":
            base = s.end_offset
            kind = "snapshot"
        elif name == "partition.metadata":
            kind = "partition_metadata"
        elif name == "leader-epoch-checkpoint":
            kind = "leader_epoch_checkpoint"
    return Artifact(str(rel), node, kind, topic, partition, base, size, state)
