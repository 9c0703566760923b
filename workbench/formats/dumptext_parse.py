"""Parsing the text of Kafka's dump tool (``kafka-dump-log.sh``) back into rows.

:func:`parse_kafka_dump` reads dump text of every era in reference §10 (2.x to 4.3) and yields
one dict per line of meaning, with a ``kind``:

``file``
    A ``Dumping <path>`` block: ``path``, ``file_kind`` (``log``, ``snapshot``,
    ``bootstrap``, ``other``), ``base_offset`` (segments), ``snapshot_end_offset`` and
    ``snapshot_epoch`` (KRaft snapshots).
``batch``
    A batch line. Keys are named like the ``batches`` table: ``position``, ``base_offset``,
    ``last_offset``, ``record_count``, ``size`` (the tool's ``size``, i.e. batchSize),
    ``magic``, ``compression`` (lower case), ``timestamp_type``, ``max_timestamp``,
    ``producer_id``, ``producer_epoch``, ``base_sequence``, ``last_sequence``,
    ``is_transactional``, ``is_control``, ``partition_leader_epoch``, ``has_delete_horizon``,
    ``delete_horizon_ms``, ``crc``, ``crc_valid``. Legacy (magic 0/1) lines only carry the
    last offset: ``base_offset``, ``record_count`` and the v2-only fields are ``None``.
``record``
    A record line: ``offset``, ``timestamp_type``, ``timestamp``, ``key_size``,
    ``value_size``, ``sequence``, ``header_keys`` (list; the tool never prints header values),
    ``crc``/``crc_valid`` (legacy records and the 2.8 form), ``control`` (the text after the
    metadata of a control record, e.g. ``endTxnMarker: COMMIT coordinatorEpoch: 0``) and
    ``control_type`` (``COMMIT``, ``LEADER_CHANGE``, ``SNAPSHOT_HEADER``, ...), ``key``
    and ``payload`` (text as printed, ``None`` when absent), ``batch_position``. With
    ``--skip-record-metadata`` the metadata keys are ``None``.
``trailer``
    ``Found N invalid bytes at the end of <name>``: ``invalid_bytes``, ``name``.
``offset_index``, ``time_index``, ``txn_index``, ``producer_state``, ``note``
    Index and producer-snapshot dumps (reference §10.6) and their one-line messages.
``problem``
    A line that fits no known shape: ``line`` and ``text``, also reported to ``problems``
    (position = line number). Nothing is dropped silently.

Every row has ``line`` (1-based) and ``path`` (from the last ``Dumping`` line).

A key or payload printed by the default StringDecoder may contain line breaks (binary
values): while the text of a record's key or payload is shorter (in UTF-8) than its
``keySize``/``valueSize`` (or, under ``--skip-record-metadata``, has no size), the next line
is taken as its continuation unless it is a ``Dumping``, batch, record or trailer line.

Examples
--------
>>> text = ("Dumping t-0/00000000000000000000.log\\n"
...         "Log starting offset: 0\\n"
...         "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
...         "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
...         "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 5 size: 70 magic: 2 "
...         "compresscodec: none crc: 1 isvalid: true\\n"
...         "| offset: 0 CreateTime: 5 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [h] key: k payload: v\\n")
>>> rows = list(parse_kafka_dump(text))
>>> [r["kind"] for r in rows], rows[0]["base_offset"], rows[1]["record_count"]
(['file', 'batch', 'record'], 0, 1)
>>> rows[2]["header_keys"], rows[2]["key"], rows[2]["payload"]
(['h'], 'k', 'v')
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Iterator
from typing import IO, Any

from workbench.formats.problems import ProblemLog

__all__ = ["parse_kafka_dump"]

_TS = frozenset(("CreateTime", "LogAppendTime", "NoTimestampType"))
_BATCH_LABELS = frozenset(
    (
        "baseOffset",
        "lastOffset",
        "count",
        "baseSequence",
        "lastSequence",
        "producerId",
        "producerEpoch",
        "partitionLeaderEpoch",
        "isTransactional",
        "isControl",
        "deleteHorizonMs",
        "offset",
        "position",
        "TS",
        "size",
        "magic",
        "compresscodec",
        "crc",
        "isvalid",
    )
)
_BATCH_CORE = frozenset(("position", "TS", "size", "magic", "compresscodec", "crc", "isvalid"))
_V2_CORE = frozenset(
    (
        "baseOffset",
        "lastOffset",
        "baseSequence",
        "lastSequence",
        "producerId",
        "producerEpoch",
        "partitionLeaderEpoch",
        "isTransactional",
        "isControl",
    )
)
_PRODUCER_LABELS = ("producerId", "producerEpoch", "coordinatorEpoch", "currentTxnFirstOffset")
_PRODUCER_OPTIONAL = frozenset(
    ("lastTimestamp", "firstSequence", "lastSequence", "lastOffset", "offsetDelta", "timestamp")
)

_INT = r"(-?\d+)"
_TSR = r"(CreateTime|LogAppendTime|NoTimestampType)"
_R30 = re.compile(rf"\| offset: {_INT} {_TSR}: {_INT} keySize: {_INT} valueSize: {_INT}")
_R22 = re.compile(rf"\| offset: {_INT} {_TSR}: {_INT} keysize: {_INT} valuesize: {_INT}")
_R28 = re.compile(
    rf"\| offset: {_INT} isValid: (true|false) crc: (\d+|null) keySize: {_INT} valueSize: {_INT} {_TSR}: {_INT}"
    rf" baseOffset: {_INT} lastOffset: {_INT} baseSequence: {_INT} lastSequence: {_INT} producerEpoch: {_INT}"
    rf" partitionLeaderEpoch: {_INT} batchSize: {_INT} magic: {_INT} compressType: (\w+) position: {_INT}"
)
_R21 = re.compile(
    rf"offset: {_INT} position: {_INT} {_TSR}: {_INT} isvalid: (true|false) keysize: {_INT} valuesize: {_INT}"
    rf" magic: {_INT} compresscodec: (\w+)"
)
_R21_V2 = re.compile(
    rf" producerId: {_INT} producerEpoch: {_INT} sequence: {_INT} isTransactional: (true|false)"
    r" headerKeys: \["
)
_R21_LEGACY = re.compile(r" crc: (\d+)")
_FAST = re.compile(
    rf"\| offset: {_INT} {_TSR}: {_INT} keySize: {_INT} valueSize: {_INT} sequence: {_INT}"
    r" headerKeys: \[([^\]]*)\](.*)$",
    re.DOTALL,
)
_SEQ = re.compile(rf" sequence: {_INT} headerKeys: \[")
_LEGACY_30 = re.compile(r" isValid: (true|false) crc: (\d+)\}?")
_LEGACY_22 = re.compile(r" crc: (\d+|null) isvalid: (true|false)")
_CONTROL_STARTS = (
    " endTxnMarker: ",
    " controlType: ",
    " SnapshotHeader ",
    " SnapshotFooter ",
    " KRaftVersion ",
    " KRaftVoters ",
    " LeaderChange: ",
)
_CONTROL_LABELS = {
    "SnapshotHeader": "SNAPSHOT_HEADER",
    "SnapshotFooter": "SNAPSHOT_FOOTER",
    "KRaftVersion": "KRAFT_VERSION",
    "KRaftVoters": "KRAFT_VOTERS",
    "LeaderChange:": "LEADER_CHANGE",
}
_CONTENT_STARTS = (" key: ", " payload: ")
_AFTER_HEADERS = _CONTROL_STARTS + _CONTENT_STARTS
_END_TXN = re.compile(r"endTxnMarker: (ABORT|COMMIT) coordinatorEpoch: (-?\d+)$")
_CONTROL_TYPE = re.compile(r"controlType: (\w+)\((-?\d+)\)$")

_DUMPING = "Dumping "
_LOG_START = re.compile(r"(?:Log starting|Starting) offset: (-?\d+)$")
_SNAPSHOT = re.compile(r"Snapshot end offset: (-?\d+), epoch: (-?\d+)$")
_TRAILER = re.compile(r"Found (\d+) invalid bytes at the end of (.*)$")
_NOTE = re.compile(r"(.*) (is empty\.|passed sanity check\.)$")
_STDERR = re.compile(
    r"(?:Non-consecutive offsets in .*|  -?\d+ is followed by -?\d+|Mismatches in :.*"
    r"|  Index offset: -?\d+, log offset: -?\d+|Ignoring unknown file .*)$"
)


def _lines(source: str | bytes | os.PathLike[str] | IO[Any] | Iterable[str]) -> Iterator[str]:
    """Lines split at ``\\n`` only (Java ``println``), without the line break."""
    if isinstance(source, bytes | bytearray):
        source = bytes(source).decode("utf-8", "replace")
    if isinstance(source, str):
        parts = source.split("\n")
        if parts and parts[-1] == "":
            parts.pop()
        yield from parts
        return
    if isinstance(source, os.PathLike):
        with open(source, "rb") as f:
            yield from _lines(f)
        return
    if isinstance(source, io.TextIOBase) or hasattr(source, "read"):
        tail = ""
        while True:
            chunk = source.read(1 << 20)
            if not chunk:
                break
            if isinstance(chunk, bytes | bytearray):
                # bytes: split first, then decode (a line never splits a UTF-8 sequence at \n)
                data = tail.encode("utf-8", "surrogateescape") + bytes(chunk) if tail else bytes(chunk)
                pieces = data.split(b"\n")
                tail = pieces.pop().decode("utf-8", "surrogateescape")
                for p in pieces:
                    yield p.decode("utf-8", "replace")
            else:
                pieces = (tail + chunk).split("\n")
                tail = pieces.pop()
                yield from pieces
        if tail:
            yield tail.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return
    for line in source:  # an iterable of lines
        yield line[:-1] if line.endswith("\n") else line


def _pairs(line: str) -> tuple[list[str], list[str], str | None] | None:
    """Labels (``CreateTime``-like ones as ``TS``), values and the timestamp label of a
    ``label: value ...`` line."""
    toks = line.rstrip("\r").rstrip(" ").split(" ")
    if len(toks) % 2:
        return None
    labels = []
    ts_name = None
    for t in toks[0::2]:
        if len(t) < 2 or t[-1] != ":":
            return None
        name = t[:-1]
        if name in _TS:
            ts_name = name
            name = "TS"
        labels.append(name)
    return labels, toks[1::2], ts_name


def _opt_long(text: str) -> int | None:
    if text in ("OptionalLong.empty", "None"):
        return None
    for prefix, suffix in (("OptionalLong[", "]"), ("Some(", ")")):
        if text.startswith(prefix) and text.endswith(suffix):
            return int(text[len(prefix) : -len(suffix)])
    return int(text)


_BOOL = {"true": True, "false": False}


def _batch_row(labels: list[str], values: list[str], ts_name: str | None) -> dict | None:
    names = set(labels)
    if len(names) != len(labels) or not names <= _BATCH_LABELS or not _BATCH_CORE <= names:
        return None
    v = dict(zip(labels, values, strict=True))
    legacy = "offset" in names
    if legacy == ("baseOffset" in names) or (not legacy and not _V2_CORE <= names):
        return None
    row: dict[str, Any] = {"kind": "batch"}
    try:
        row["position"] = int(v["position"])
        if legacy:
            row.update(base_offset=None, last_offset=int(v["offset"]), record_count=None)
        else:
            count = v.get("count")
            row.update(
                base_offset=int(v["baseOffset"]),
                last_offset=int(v["lastOffset"]),
                record_count=None if count in (None, "null") else int(count),
            )
        row["size"] = int(v["size"])
        row["magic"] = int(v["magic"])
        row["compression"] = v["compresscodec"].lower()
        row["timestamp_type"] = ts_name
        row["max_timestamp"] = int(v["TS"])
        if legacy:
            row.update(
                producer_id=None,
                producer_epoch=None,
                base_sequence=None,
                last_sequence=None,
                is_transactional=None,
                is_control=None,
                partition_leader_epoch=None,
                has_delete_horizon=None,
                delete_horizon_ms=None,
            )
        else:
            dh = _opt_long(v["deleteHorizonMs"]) if "deleteHorizonMs" in v else None
            row.update(
                producer_id=int(v["producerId"]),
                producer_epoch=int(v["producerEpoch"]),
                base_sequence=int(v["baseSequence"]),
                last_sequence=int(v["lastSequence"]),
                is_transactional=_BOOL[v["isTransactional"]],
                is_control=_BOOL[v["isControl"]],
                partition_leader_epoch=int(v["partitionLeaderEpoch"]),
                has_delete_horizon=(dh is not None) if "deleteHorizonMs" in v else None,
                delete_horizon_ms=dh,
            )
        row["crc"] = int(v["crc"])
        row["crc_valid"] = _BOOL[v["isvalid"]]
    except (KeyError, ValueError):
        return None
    return row


def _split_header_keys(rest: str) -> tuple[list[str], str] | None:
    """``k1,k2]<tail>`` -> keys and tail, taking the first ``]`` after which a known part follows."""
    start = 0
    while True:
        end = rest.find("]", start)
        if end < 0:
            return None
        tail = rest[end + 1 :]
        if not tail or tail.startswith(_AFTER_HEADERS):
            inner = rest[:end]
            return ([] if inner == "" else inner.split(",")), tail
        start = end + 1


def _contents(rest: str, row: dict) -> bool:
    """Fill ``key``/``payload``/``control`` from the part after the record metadata."""
    if not rest:
        return True
    row["_tail"] = rest
    if rest.startswith(_CONTROL_STARTS):
        text = rest[1:]
        row["control"] = text
        m = _END_TXN.match(text) or _CONTROL_TYPE.match(text)
        row["control_type"] = m[1] if m is not None else _CONTROL_LABELS[text.split(" ", 1)[0]]
        return True
    if rest.startswith(" payload: "):
        row["payload"] = rest[10:]
        return True
    if not rest.startswith(" key: "):
        return False
    body = rest[6:]
    first = body.find(" payload: ")
    if first < 0:
        row["key"] = body
        return True
    chosen = first
    ks = row.get("key_size")
    if isinstance(ks, int) and ks >= 0 and not _fits(body[:first], ks):
        # the key itself holds " payload: ": the key size decides where it ends
        # no split fits: the whole line is the key if it fits, or is still short of it (a
        # line break in the key: the next line continues it)
        chosen = -1 if _fits(body, ks) or _utf8_len(body) < ks else first
        c = body.find(" payload: ", first + 1)
        while c >= 0:
            if _fits(body[:c], ks):
                chosen = c
                break
            c = body.find(" payload: ", c + 1)
    if chosen < 0:
        row["key"] = body
        return True
    row["key"] = body[:chosen]
    row["payload"] = body[chosen + 10 :]
    return True


def _fits(text: str, size: int) -> bool:
    """Whether ``text`` can be the String decoding of ``size`` bytes (U+FFFD stands for 1–3)."""
    n = _utf8_len(text)
    bad = text.count("\ufffd")
    return n - 2 * bad <= size <= n


def _record_row(line: str) -> dict | None:
    """A record line of any era, or ``None``."""
    m = _FAST.match(line)
    if m is not None:  # the common 3.0+ v2 line, header keys without "]"
        tail = m[8]
        if not tail or tail.startswith(_AFTER_HEADERS):
            keys = m[7]
            row = {
                "kind": "record",
                "offset": int(m[1]),
                "timestamp_type": m[2],
                "timestamp": int(m[3]),
                "key_size": int(m[4]),
                "value_size": int(m[5]),
                "sequence": int(m[6]),
                "header_keys": keys.split(",") if keys else [],
                "crc": None,
                "crc_valid": None,
                "control": None,
                "control_type": None,
                "key": None,
                "payload": None,
            }
            if not tail or _contents(tail, row):
                return row
    return _record_row_slow(line)


def _record_row_slow(line: str) -> dict | None:
    row: dict[str, Any] = {
        "kind": "record",
        "offset": None,
        "timestamp_type": None,
        "timestamp": None,
        "key_size": None,
        "value_size": None,
        "sequence": None,
        "header_keys": None,
        "crc": None,
        "crc_valid": None,
        "control": None,
        "control_type": None,
        "key": None,
        "payload": None,
    }
    m = _R30.match(line) or _R22.match(line)
    form = "3.0"
    if m is not None:
        row.update(offset=int(m[1]), timestamp_type=m[2], timestamp=int(m[3]), key_size=int(m[4]), value_size=int(m[5]))
        if m.re is _R22:
            form = "2.2"
    else:
        m = _R28.match(line)
        if m is not None:
            form = "2.8"
            row.update(
                offset=int(m[1]),
                crc_valid=_BOOL[m[2]],
                crc=None if m[3] == "null" else int(m[3]),
                key_size=int(m[4]),
                value_size=int(m[5]),
                timestamp_type=m[6],
                timestamp=int(m[7]),
                batch_position=int(m[17]),
            )
        else:
            m = _R21.match(line)
            if m is None:
                return _bare_contents(line, row)
            form = "2.1"
            row.update(
                offset=int(m[1]),
                batch_position=int(m[2]),
                timestamp_type=m[3],
                timestamp=int(m[4]),
                crc_valid=_BOOL[m[5]],
                key_size=int(m[6]),
                value_size=int(m[7]),
            )
    rest = line[m.end() :]
    if form == "2.1":
        v2 = _R21_V2.match(rest)
        if v2 is not None:
            row["sequence"] = int(v2[3])
            split = _split_header_keys(rest[v2.end() :])
            if split is None:
                return None
            row["header_keys"], rest = split
        else:
            lg = _R21_LEGACY.match(rest)
            if lg is None:
                return None
            row["crc"] = int(lg[1])
            rest = rest[lg.end() :]
        return row if _contents(rest, row) else None
    s = _SEQ.match(rest)
    if s is not None:
        row["sequence"] = int(s[1])
        split = _split_header_keys(rest[s.end() :])
        if split is None:
            return None
        row["header_keys"], rest = split
    else:
        # 2.8 repeats a legacy record's crc and isvalid after the batch part, in the 2.2 form
        lg = _LEGACY_30.match(rest) if form == "3.0" else _LEGACY_22.match(rest) if form in ("2.2", "2.8") else None
        if lg is not None:
            if form == "3.0":
                row["crc_valid"], row["crc"] = _BOOL[lg[1]], int(lg[2])
            else:
                row["crc"], row["crc_valid"] = (None if lg[1] == "null" else int(lg[1])), _BOOL[lg[2]]
            rest = rest[lg.end() :]
    return row if _contents(rest, row) else None


def _bare_contents(line: str, row: dict) -> dict | None:
    """Record lines of ``--skip-record-metadata``: ``| key: …``, ``| payload: …``, `` payload: …``."""
    if line.startswith("| key: ") or line.startswith("| payload: "):
        return row if _contents(line[1:], row) else None
    if line.startswith(" payload: "):
        row["payload"] = line[10:]
        row["_tail"] = line
        return row
    if line == "":
        return row  # a control record (or a record without contents) under --skip-record-metadata
    return None


def _other_row(line: str) -> dict | None:
    """Index, time-index, txn-index and producer-snapshot lines (reference §10.6)."""
    pairs = _pairs(line)
    if pairs is None:
        return None
    labels, values, _ = pairs
    try:
        if labels == ["offset", "position"]:
            return {"kind": "offset_index", "offset": int(values[0]), "position": int(values[1])}
        if labels == ["timestamp", "offset"]:
            return {"kind": "time_index", "timestamp": int(values[0]), "offset": int(values[1])}
        if labels == ["version", "producerId", "firstOffset", "lastOffset", "lastStableOffset"]:
            return {
                "kind": "txn_index",
                "version": int(values[0]),
                "producer_id": int(values[1]),
                "first_offset": int(values[2]),
                "last_offset": int(values[3]),
                "last_stable_offset": int(values[4]),
            }
        if tuple(labels[:4]) == _PRODUCER_LABELS and set(labels[4:]) <= _PRODUCER_OPTIONAL:
            v = dict(zip(labels, values, strict=True))
            out: dict[str, Any] = {
                "kind": "producer_state",
                "producer_id": int(v["producerId"]),
                "producer_epoch": int(v["producerEpoch"]),
                "coordinator_epoch": int(v["coordinatorEpoch"]),
                "current_txn_first_offset": _opt_long(v["currentTxnFirstOffset"]),
            }
            for label, key in (
                ("lastTimestamp", "last_timestamp"),
                ("firstSequence", "first_sequence"),
                ("lastSequence", "last_sequence"),
                ("lastOffset", "last_offset"),
                ("offsetDelta", "offset_delta"),
                ("timestamp", "timestamp"),
            ):
                out[key] = int(v[label]) if label in v else None
            return out
    except (ValueError, KeyError):
        return None
    return None


def parse_kafka_dump(
    source: str | bytes | os.PathLike[str] | IO[Any] | Iterable[str],
    *,
    path: str = "",
    problems: ProblemLog | None = None,
    strict: bool = False,
) -> Iterator[dict]:
    """Parse ``kafka-dump-log.sh`` output into file, batch, record and problem rows.

    Parameters
    ----------
    source : str, bytes, path-like, file object or iterable of lines
        The dump text (a ``str`` is the text itself; pass a ``pathlib.Path`` to read a file).
    path : str
        Name used for rows before the first ``Dumping`` line and in problems.
    problems : ProblemLog, optional
        Receives one problem per line that fits no known shape (position = line number).
    strict : bool
        Raise :class:`~workbench.errors.CorruptDataError` at the first such line.

    Yields
    ------
    dict
        One row per meaningful line (see the module docstring for the kinds and keys).

    Examples
    --------
    >>> rows = list(parse_kafka_dump("Dumping x.log\\nStarting offset: 0\\nnot a dump line\\n"))
    >>> [(r["kind"], r["line"]) for r in rows]
    [('file', 1), ('problem', 3)]
    """
    log = problems if problems is not None else ProblemLog(path, strict=strict)
    current = path
    pending_file: dict | None = None
    pending_record: dict | None = None
    batch_position: int | None = None
    for number, line in enumerate(_lines(source), start=1):
        # a key or payload with line breaks: glue the next line to the record before it
        if pending_record is not None:
            if _incomplete(pending_record) and _glueable(line, pending_record["offset"] is not None):
                tail = pending_record["_tail"] + "\n" + line
                pending_record["key"] = pending_record["payload"] = None
                _contents(tail, pending_record)
                continue
            pending_record.pop("_tail", None)
            yield pending_record
            pending_record = None
        if pending_file is not None:
            m = _LOG_START.match(line)
            if m is not None:
                pending_file.update(file_kind="log", base_offset=int(m[1]))
                continue
            m = _SNAPSHOT.match(line)
            if m is not None:
                pending_file.update(file_kind="snapshot", snapshot_end_offset=int(m[1]), snapshot_epoch=int(m[2]))
                continue
            if line == "KRaft bootstrap snapshot":
                pending_file["file_kind"] = "bootstrap"
                continue
            yield pending_file
            pending_file = None
        if line.startswith(_DUMPING):
            current = line[len(_DUMPING) :]
            batch_position = None
            pending_file = {
                "kind": "file",
                "line": number,
                "path": current,
                "file_kind": "other",
                "base_offset": None,
                "snapshot_end_offset": None,
                "snapshot_epoch": None,
            }
            continue
        row = _classify(line)
        if row is None:
            detail = f"line {number} fits no known kafka-dump-log shape: {line[:200]!r}"
            log.report(number, "unparsed_line", detail)
            yield {"kind": "problem", "line": number, "path": current, "text": line, "detail": detail}
            continue
        row["line"] = number
        row["path"] = current
        kind = row["kind"]
        if kind == "batch":
            batch_position = row["position"]
        elif kind == "record":
            row.setdefault("batch_position", batch_position)
            pending_record = row
            continue
        yield row
    if pending_record is not None:
        pending_record.pop("_tail", None)
        yield pending_record
    if pending_file is not None:
        yield pending_file


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _incomplete(row: dict) -> bool:
    """Whether the key or payload printed so far is shorter than its size (a line break in it).

    Text decoded from bytes is never shorter than the bytes (U+FFFD takes 3), so a shorter
    text means the rest is on the next line. Without sizes (``--skip-record-metadata``) a
    payload may go on.
    """
    if "_tail" not in row or row.get("control") is not None:
        return False
    key, payload = row.get("key"), row.get("payload")
    ks, vs = row.get("key_size"), row.get("value_size")
    if key is not None and payload is None and (ks is None or (isinstance(ks, int) and _utf8_len(key) < ks)):
        return True
    return payload is not None and (vs is None or _utf8_len(payload) < vs)


_NOT_GLUED = frozenset(("batch", "record", "trailer"))


def _glueable(line: str, with_metadata: bool) -> bool:
    """A line that may continue a key or payload: not a ``Dumping``, batch, record or trailer
    line (after a record line with metadata, only a record line with metadata counts)."""
    if line.startswith(_DUMPING):
        return False
    if line == "":
        return True
    row = _classify(line)
    if row is None or row["kind"] not in _NOT_GLUED:
        return True
    return with_metadata and row["kind"] == "record" and row["offset"] is None


def _classify(line: str) -> dict | None:
    """The row of one line (without ``line``/``path``), or ``None`` when it fits no shape."""
    if line.startswith("baseOffset: ") or (line.startswith("offset: ") and " keysize: " not in line):
        pairs = _pairs(line)
        if pairs is not None:
            row = _batch_row(*pairs)
            if row is not None:
                return row
            other = _other_row(line)
            if other is not None:
                return other
        return _record_row(line)
    if line.startswith("|") or line.startswith(" payload: ") or line == "" or line.startswith("offset: "):
        return _record_row(line)
    m = _TRAILER.match(line)
    if m is not None:
        return {"kind": "trailer", "invalid_bytes": int(m[1]), "name": m[2]}
    other = _other_row(line)
    if other is not None:
        return other
    m = _NOTE.match(line)
    if m is not None:
        return {"kind": "note", "text": line}
    if _STDERR.match(line):
        return {"kind": "note", "text": line}
    return None
