"""Small KRaft and log-directory files (reference §4.2, §4.4, §4.5, §4.6).

* ``meta.properties`` — Java properties (``version``, ``node.id``/``broker.id``,
  ``cluster.id``, ``directory.id``);
* ``quorum-state`` — one-line JSON rendering of ``QuorumStateData`` plus ``data_version``;
* text checkpoints (``replication-offset-checkpoint``, ``recovery-point-offset-checkpoint``,
  ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``, ``leader-epoch-checkpoint``):
  version line, entry-count line, one entry per line;
* ``partition.metadata`` — ``version: 0`` and ``topic_id: <uuid>``;
* ``.kafka_cleanshutdown`` — empty, or ``{"version":0,"brokerEpoch":N}``;
* KRaft snapshot file names ``<endOffset:020d>-<epoch:010d>.checkpoint``.

Parsers are lenient: damaged lines become :class:`~workbench.formats.problems.Problem` rows
(``strict`` raises instead), everything readable is kept. Writers produce the bytes Kafka writes.

Examples
--------
>>> cp = parse_checkpoint("0\\n1\\norders 0 1532\\n")
>>> cp.entries, cp.problems
([('orders', 0, 1532)], [])
>>> format_checkpoint(0, [("orders", 0, 1532)])
'0\\n1\\norders 0 1532\\n'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from workbench.errors import ConfigError
from workbench.formats.messages import ZERO_UUID, Schema, dumps_json, to_json, uuid_from_str
from workbench.formats.messages import Field as F
from workbench.formats.problems import Problem, ProblemLog

__all__ = [
    "Checkpoint",
    "MetaProperties",
    "QuorumState",
    "SnapshotName",
    "format_checkpoint",
    "format_meta_properties",
    "format_partition_metadata",
    "format_quorum_state",
    "parse_checkpoint",
    "parse_clean_shutdown",
    "parse_java_properties",
    "parse_meta_properties",
    "parse_partition_metadata",
    "parse_quorum_state",
    "parse_snapshot_name",
    "read_properties_file",
    "snapshot_file_name",
]

# ---------------------------------------------------------------------------------------------
# meta.properties (§4.2)

_KNOWN_META_KEYS = ("version", "node.id", "broker.id", "cluster.id", "directory.id")


@dataclass(slots=True)
class MetaProperties:
    """Contents of ``meta.properties``.

    ``node_id`` comes from ``node.id`` (v1) or ``broker.id`` (v0); ``extra`` holds any other
    keys. ``problems`` lists values that could not be read.
    """

    version: int | None
    node_id: int | None
    cluster_id: str | None
    directory_id: str | None
    extra: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6] or ""):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        i += 2
    return "".join(out)


def parse_java_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (comments, ``=``/``:``/space separators, escapes,
    continuation lines), as ``java.util.Properties.load`` does.

    Examples
    --------
    >>> parse_java_properties("#c\\nnode.id=1\\ncluster.id : abc\\\\=\\n")
    {'node.id': '1', 'cluster.id': 'abc='}
    """
    logical: list[str] = []
    pending = ""
    for raw_line in text.splitlines():
        line = raw_line.lstrip(" \t\f") if not pending else raw_line.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    props: dict[str, str] = {}
    for line in logical:
        i, n = 0, len(line)
        while i < n:
            ch = line[i]
            if ch == "\\":
                i += 2
                continue
            if ch in "=: \t\f":
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":") and (i >= n or line[i] in " \t\f" or line[i] in "=:"):
            rest = rest[1:].lstrip(" \t\f")
        props[_unescape(key)] = _unescape(rest)
    return props


def read_properties_file(data: bytes, path: str = "", problems: ProblemLog | None = None) -> dict[str, str]:
    """The properties of a Java ``.properties`` file (``server.properties``), damage reported.

    Text is read as UTF-8; bytes that are not UTF-8 are a ``decode_error`` problem and the file is
    read as ISO-8859-1 instead (what ``java.util.Properties.load(InputStream)`` does). A line
    holding control characters (NUL and the like: a binary or overwritten file) is ``garbage``:
    reported and left out. A file that does not end with a newline may have been cut: its last
    line is kept and reported (``truncated``). Problem positions are line numbers.

    Examples
    --------
    >>> log = ProblemLog("server.properties")
    >>> read_properties_file(b"node.id=4\\nbad\\x00line=1\\nlog.dirs=/data", "server.properties", log)
    {'node.id': '4', 'log.dirs': '/data'}
    >>> [(p.position, p.kind) for p in log.problems]
    [(2, 'garbage'), (3, 'truncated')]
    """
    log = problems if problems is not None else ProblemLog(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        log.report(0, "decode_error", f"byte {exc.start}: not UTF-8 ({exc.reason}); read as ISO-8859-1")
        text = data.decode("latin-1")
    lines = text.split("\n")
    cut = lines[-1] != ""
    if not cut:
        lines.pop()
    kept = []
    for number, line in enumerate(lines, start=1):
        if _CONTROL_CHARS.search(line.rstrip("\r")):
            log.report(number, "garbage", f"line {number}: control characters in a properties file: {line[:120]!r}")
            continue
        kept.append(line)
    if cut and lines and not _CONTROL_CHARS.search(lines[-1]):
        log.report(len(lines), "truncated", f"line {len(lines)}: the file ends without a newline; "
                                             f"its last line may be cut: {lines[-1][:120]!r}")
    return parse_java_properties("\n".join(kept))


_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def parse_meta_properties(text: str, path: str = "", strict: bool = False) -> MetaProperties:
    """Parse ``meta.properties`` (v0 ZK-era or v1 KRaft).

    Examples
    --------
    >>> text = "#\\n#Mon Jan 01 00:00:00 UTC 2024\\nnode.id=1\\nversion=1\\ncluster.id=q1w2e3r4t5y6u7i8o9p0\\n"
    >>> m = parse_meta_properties(text)
    >>> m.version, m.node_id, m.cluster_id, m.directory_id
    (1, 1, 'q1w2e3r4t5y6u7i8o9p0', None)
    """
    log = ProblemLog(path, strict)
    props = parse_java_properties(text)

    def as_int(name: str) -> int | None:
        if name not in props:
            return None
        try:
            return int(props[name].strip())
        except ValueError:
            log.report(0, "bad_value", f"{name}={props[name]!r} is not an integer")
            return None

    version = as_int("version")
    if version is None and "version" not in props:
        log.report(0, "missing_key", "meta.properties has no version")
    elif version is not None and version not in (0, 1):
        log.report(0, "unknown_version", f"meta.properties version {version} (expected 0 or 1)")
    node_id = as_int("node.id")
    if node_id is None:
        node_id = as_int("broker.id")
    return MetaProperties(
        version=version,
        node_id=node_id,
        cluster_id=props.get("cluster.id"),
        directory_id=props.get("directory.id"),
        extra={k: v for k, v in props.items() if k not in _KNOWN_META_KEYS},
        problems=log.problems,
    )


def _escape_property(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == " " and (is_key or i == 0):
            out.append("\\ ")
        elif ch in "\\=:#!":
            out.append("\\" + ch)
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\f":
            out.append("\\f")
        else:
            out.append(ch)
    return "".join(out)


def format_meta_properties(props: dict[str, object], written_at: datetime | None = None) -> str:
    """``meta.properties`` text as Kafka writes it (``Properties.store`` with an empty comment).

    >>> print(format_meta_properties({"node.id": 1, "version": 1}, datetime(2024, 1, 1, tzinfo=UTC)), end="")
    #
    #Mon Jan 01 00:00:00 UTC 2024
    node.id=1
    version=1
    """
    when = written_at or datetime.now(UTC)
    lines = ["#", "#" + when.strftime("%a %b %d %H:%M:%S ") + (when.tzname() or "UTC") + when.strftime(" %Y")]
    for key, value in props.items():
        lines.append(f"{_escape_property(str(key), True)}={_escape_property(str(value), False)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# quorum-state (§4.4)

QUORUM_STATE_SCHEMA = Schema(
    "QuorumStateData",
    None,
    (0, 1),
    "0+",
    [
        F("ClusterId", "string", versions="0"),
        F("LeaderId", "int32", default=-1),
        F("LeaderEpoch", "int32", default=-1),
        F("VotedId", "int32", default=-1),
        F("VotedDirectoryId", "uuid", versions="1+"),
        F("AppliedOffset", "int64", versions="0"),
        F("CurrentVoters", "[]Voter", versions="0", nullable="0", fields=(F("VoterId", "int32", versions="0"),)),
    ],
    type="data",
)
"""The ``QuorumStateData`` layout whose JSON rendering is the ``quorum-state`` file."""


@dataclass(slots=True)
class QuorumState:
    """Contents of a ``quorum-state`` file.

    ``current_voters`` is the static voter list of ``data_version`` 0 (``None`` if absent);
    ``raw`` keeps the parsed JSON object.
    """

    data_version: int
    leader_id: int = -1
    leader_epoch: int = -1
    voted_id: int = -1
    voted_directory_id: str = ZERO_UUID
    applied_offset: int = 0
    current_voters: list[int] | None = None
    cluster_id: str = ""
    raw: dict = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def parse_quorum_state(text: str, path: str = "", strict: bool = False) -> QuorumState:
    """Parse a ``quorum-state`` file (either data version).

    Examples
    --------
    >>> text = '{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ",'
    >>> text += '"data_version":1}'
    >>> q = parse_quorum_state(text)
    >>> q.data_version, q.leader_epoch, q.voted_id, q.voted_directory_id
    (1, 2, 1, 'J8aAPcfLQt2bqs1JT_rMgQ')
    """
    log = ProblemLog(path, strict)
    try:
        obj = json.loads(text)
    except ValueError as exc:
        log.report(0, "decode_error", f"quorum-state is not JSON: {exc}")
        return QuorumState(-1, problems=log.problems)
    if not isinstance(obj, dict):
        log.report(0, "decode_error", "quorum-state is not a JSON object")
        return QuorumState(-1, problems=log.problems)
    state = QuorumState(-1, raw=obj, problems=log.problems)

    def get_int(key: str, default: int) -> int:
        value = obj.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            log.report(0, "bad_value", f"{key}={value!r} is not an integer")
            return default
        return value

    state.data_version = get_int("data_version", -1)
    if "data_version" not in obj:
        log.report(0, "missing_key", "quorum-state has no data_version")
    elif state.data_version not in (0, 1):
        log.report(0, "unknown_version", f"quorum-state data_version {state.data_version} (expected 0 or 1)")
    state.leader_id = get_int("leaderId", -1)
    state.leader_epoch = get_int("leaderEpoch", -1)
    state.voted_id = get_int("votedId", -1)
    state.applied_offset = get_int("appliedOffset", 0)
    voted_dir = obj.get("votedDirectoryId", ZERO_UUID)
    state.voted_directory_id = voted_dir if isinstance(voted_dir, str) else ZERO_UUID
    state.cluster_id = obj.get("clusterId", "") if isinstance(obj.get("clusterId", ""), str) else ""
    voters = obj.get("currentVoters")
    if isinstance(voters, list):
        state.current_voters = [
            v["voterId"] for v in voters if isinstance(v, dict) and isinstance(v.get("voterId"), int)
        ]
        if len(state.current_voters) != len(voters):
            log.report(0, "bad_value", f"currentVoters has malformed entries: {voters!r}")
    return state


def format_quorum_state(state: QuorumState) -> str:
    """The ``quorum-state`` JSON Kafka writes for ``state.data_version`` (0 or 1).

    Examples
    --------
    >>> format_quorum_state(QuorumState(0, leader_id=1, leader_epoch=2, current_voters=[1, 2, 3]))
    '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}'
    """
    if state.data_version not in (0, 1):
        raise ConfigError(f"quorum-state data_version must be 0 or 1, got {state.data_version}")
    values = {
        "clusterId": state.cluster_id,
        "leaderId": state.leader_id,
        "leaderEpoch": state.leader_epoch,
        "votedId": state.voted_id,
        "votedDirectoryId": state.voted_directory_id,
        "appliedOffset": state.applied_offset,
        "currentVoters": None if state.current_voters is None else [{"voterId": v} for v in state.current_voters],
    }
    rendered = to_json(QUORUM_STATE_SCHEMA, values, state.data_version)
    rendered["data_version"] = state.data_version
    return dumps_json(rendered)


# ---------------------------------------------------------------------------------------------
# text checkpoints (§4.6)


@dataclass(slots=True)
class Checkpoint:
    """A parsed text checkpoint file.

    ``entries`` are ``(topic, partition, offset)`` for offset checkpoints and
    ``(epoch, start_offset)`` for ``leader-epoch-checkpoint``.
    """

    version: int | None
    expected_count: int | None
    entries: list[tuple]
    problems: list[Problem] = field(default_factory=list)


def parse_checkpoint(text: str, path: str = "", strict: bool = False, expected_version: int = 0) -> Checkpoint:
    """Parse a text checkpoint file; the entry shape (3 or 2 columns) is detected per line.

    An empty file (as Kafka leaves ``cleaner-offset-checkpoint`` before any compaction) has
    no entries and no version.

    Examples
    --------
    >>> parse_checkpoint("0\\n2\\n0 0\\n3 1200\\n").entries
    [(0, 0), (3, 1200)]
    """
    log = ProblemLog(path, strict)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    result = Checkpoint(None, None, [], log.problems)
    if not lines:  # Kafka creates some checkpoints empty (e.g. cleaner-offset-checkpoint) and reads them as no entries
        return result
    try:
        result.version = int(lines[0].strip())
    except ValueError:
        log.report(0, "decode_error", f"line 1: version {lines[0]!r} is not an integer")
    if result.version is not None and result.version != expected_version:
        log.report(0, "unknown_version", f"line 1: version {result.version} (expected {expected_version})")
    if len(lines) < 2:
        log.report(0, "truncated", "no entry-count line")
        return result
    try:
        result.expected_count = int(lines[1].strip())
    except ValueError:
        log.report(1, "decode_error", f"line 2: entry count {lines[1]!r} is not an integer")
    for number, line in enumerate(lines[2:], start=3):
        parts = line.split()
        try:
            if len(parts) == 3:
                result.entries.append((parts[0], int(parts[1]), int(parts[2])))
                continue
            if len(parts) == 2:
                result.entries.append((int(parts[0]), int(parts[1])))
                continue
        except ValueError:
            pass
        log.report(number - 1, "decode_error", f"line {number}: malformed entry {line!r}")
    if result.expected_count is not None and result.expected_count != len(lines) - 2:
        log.report(len(lines), "bad_length", f"entry count {result.expected_count} but {len(lines) - 2} entry line(s)")
    return result


def format_checkpoint(version: int, entries: list[tuple]) -> str:
    """Checkpoint text as Kafka's ``CheckpointFile`` writes it (one ``\\n`` after every line).

    >>> format_checkpoint(0, [(0, 0), (3, 1200)])
    '0\\n2\\n0 0\\n3 1200\\n'
    """
    lines = [str(version), str(len(entries))] + [" ".join(str(part) for part in entry) for entry in entries]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# partition.metadata, .kafka_cleanshutdown, snapshot names


def parse_partition_metadata(
    text: str, path: str = "", strict: bool = False
) -> tuple[int | None, str | None, list[Problem]]:
    """Parse ``partition.metadata``: ``(version, topic_id, problems)``.

    Examples
    --------
    >>> parse_partition_metadata("version: 0\\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")[:2]
    (0, 'AAAAAAAAAAAAAAAAAAAAAQ')
    """
    log = ProblemLog(path, strict)
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = re.split(r":\s+", line, maxsplit=1)
        if len(parts) != 2:
            log.report(number - 1, "decode_error", f"line {number}: {line!r} is not 'key: value'")
            continue
        values[parts[0].strip()] = parts[1].strip()
    version: int | None = None
    try:
        version = int(values["version"])
        if version != 0:
            log.report(0, "unknown_version", f"partition.metadata version {version} (expected 0)")
    except KeyError:
        log.report(0, "missing_key", "partition.metadata has no version")
    except ValueError:
        log.report(0, "decode_error", f"version {values['version']!r} is not an integer")
    topic_id = values.get("topic_id")
    if topic_id is None:
        log.report(0, "missing_key", "partition.metadata has no topic_id")
    else:
        try:
            if uuid_from_str(topic_id) == bytes(16):
                log.report(0, "bad_value", "topic_id is the zero uuid")
        except ValueError as exc:
            log.report(0, "bad_value", f"topic_id: {exc}")
    return version, topic_id, log.problems


def format_partition_metadata(topic_id: str) -> str:
    """``partition.metadata`` text as Kafka writes it (no trailing newline)."""
    uuid_from_str(topic_id)
    return f"version: 0\ntopic_id: {topic_id}"


def parse_clean_shutdown(text: str) -> dict | None:
    """Parse ``.kafka_cleanshutdown``: ``{}`` for the empty (≤ 3.6) marker, the JSON object
    (``{"version": 0, "brokerEpoch": N}``) from 3.7, ``None`` when unreadable.

    >>> parse_clean_shutdown(""), parse_clean_shutdown('{"version":0,"brokerEpoch":234}')
    ({}, {'version': 0, 'brokerEpoch': 234})
    """
    if not text.strip():
        return {}
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


@dataclass(frozen=True, slots=True)
class SnapshotName:
    """A KRaft snapshot file name: exclusive end offset, epoch and state
    (``complete``, ``partial`` for ``.checkpoint.part``, ``deleted`` for ``.checkpoint.deleted``)."""

    end_offset: int
    epoch: int
    state: str


_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})(?:-[^/]*)?\.checkpoint(\.part|\.deleted)?$")


def parse_snapshot_name(name: str) -> SnapshotName | None:
    """Parse ``<endOffset:020d>-<epoch:010d>.checkpoint[.part|.deleted]``; ``None`` otherwise.

    Examples
    --------
    >>> parse_snapshot_name("00000000000000012345-0000000007.checkpoint")
    SnapshotName(end_offset=12345, epoch=7, state='complete')
    """
    match = _SNAPSHOT_RE.match(name)
    if match is None:
        return None
    suffix = match.group(3)
    if suffix is None and name.count("-") > 1:
        return None
    state = {None: "complete", ".part": "partial", ".deleted": "deleted"}[suffix]
    return SnapshotName(int(match.group(1)), int(match.group(2)), state)


def snapshot_file_name(end_offset: int, epoch: int) -> str:
    """The file name of a complete snapshot.

    >>> snapshot_file_name(12345, 7)
    '00000000000000012345-0000000007.checkpoint'
    """
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"
