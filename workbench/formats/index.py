"""Sidecar files of a segment: offset, time and transaction indexes and producer snapshots.

Layouts (reference §5.2-§5.5; all integers big-endian):

==============  =====  ================================================================
file            entry  fields
==============  =====  ================================================================
``.index``      8      relative offset int32, position int32
``.timeindex``  12     timestamp int64, relative offset int32
``.txnindex``   34     version int16, producer id int64, first offset int64, last offset
                       int64, last stable offset int64
``.snapshot``   46     after a header (version int16 = 1, CRC-32C uint32 of the rest,
                       count int32): producer id int64, epoch int16, last sequence int32,
                       last offset int64, offset delta int32, timestamp int64,
                       coordinator epoch int32, current txn first offset int64
==============  =====  ================================================================

Offset and time indexes of an active segment are preallocated and zero-filled: reading stops
at the first entry after the first whose relative offset is 0, as Kafka's dump tool does.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import BinaryIO

import crc32c

from workbench.formats.problems import ProblemLog
from workbench.formats.segment import parse_segment_name

__all__ = [
    "AbortedTxn",
    "ProducerEntry",
    "encode_offset_index",
    "encode_producer_snapshot",
    "encode_time_index",
    "encode_txn_index",
    "read_offset_index",
    "read_producer_snapshot",
    "read_time_index",
    "read_txn_index",
]

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_TXN_ENTRY = struct.Struct(">hqqqq")
_SNAPSHOT_HEADER = struct.Struct(">hIi")
_PRODUCER_ENTRY = struct.Struct(">qhiqiqiq")

Source = BinaryIO | bytes | bytearray | memoryview | str | os.PathLike[str]


@dataclass(slots=True)
class AbortedTxn:
    """One ``.txnindex`` entry: an aborted transaction of one producer.

    Examples
    --------
    >>> AbortedTxn(producer_id=7, first_offset=10, last_offset=15, last_stable_offset=10)
    AbortedTxn(producer_id=7, first_offset=10, last_offset=15, last_stable_offset=10, version=0)
    """

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0


@dataclass(slots=True)
class ProducerEntry:
    """One producer of a producer-state ``.snapshot`` file.

    ``last_offset`` is -1 when the producer has no batch metadata; ``current_txn_first_offset``
    is -1 when no transaction is open. The first sequence of the last batch is
    ``last_sequence - offset_delta``.
    """

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def _read_all(src: Source) -> tuple[bytes, str]:
    if isinstance(src, (bytes, bytearray, memoryview)):
        return bytes(src), ""
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        with open(path, "rb") as f:
            return f.read(), path
    name = getattr(src, "name", "")
    return src.read(), name if isinstance(name, str) else ""


def _log(problems: ProblemLog | None, path: str) -> ProblemLog:
    return problems if problems is not None else ProblemLog(path)


def _entries(data: bytes, width: int, log: ProblemLog, what: str) -> int:
    n, rest = divmod(len(data), width)
    if rest:
        log.report(n * width, "bad_length", f"{what} of {len(data)} bytes is not a multiple of {width}; "
                   f"the last {rest} bytes are ignored")
    return n


def _check_tail(data: bytes, stop: int, log: ProblemLog, what: str) -> None:
    tail = data[stop:]
    if tail.strip(b"\x00"):
        first = stop + (len(tail) - len(tail.lstrip(b"\x00")))
        log.report(first, "garbage", f"non-zero bytes after the last {what} entry (byte {stop}); ignored")


def read_offset_index(f: Source, base_offset: int, path: str = "",
                      problems: ProblemLog | None = None) -> list[tuple[int, int]]:
    """Read a ``.index`` file as ``(absolute offset, log position)`` pairs.

    Problems: ``bad_length`` (size not a multiple of 8), ``garbage`` (non-zero bytes after the entries),
    ``out_of_order``.

    >>> read_offset_index(encode_offset_index([(100, 0), (140, 4096)], 100) + bytes(16), 100)
    [(100, 0), (140, 4096)]
    """
    data, name = _read_all(f)
    log = _log(problems, path or name)
    n = _entries(data, 8, log, "offset index")
    out: list[tuple[int, int]] = []
    stop = n * 8
    prev = (-1, -1)
    for i, (rel, position) in enumerate(_OFFSET_ENTRY.iter_unpack(data[: n * 8])):
        if rel == 0 and i > 0:
            stop = i * 8
            break
        if rel <= prev[0] or position < prev[1]:
            log.report(i * 8, "out_of_order", f"entry {i} (relative offset {rel}, position {position}) "
                       f"does not follow ({prev[0]}, {prev[1]})")
        prev = (rel, position)
        out.append((base_offset + rel, position))
    _check_tail(data[: n * 8], stop, log, "offset index")
    return out


def read_time_index(f: Source, path: str = "", problems: ProblemLog | None = None, *,
                    base_offset: int | None = None) -> list[tuple[int, int]]:
    """Read a ``.timeindex`` file as ``(timestamp, absolute offset)`` pairs.

    The base offset comes from ``base_offset`` or else from the file name (``path`` or the
    file object's name); without either, offsets stay relative and a problem is reported.

    Examples
    --------
    >>> read_time_index(encode_time_index([(1700, 105)], 100), base_offset=100)
    [(1700, 105)]
    """
    data, name = _read_all(f)
    path = path or name
    log = _log(problems, path)
    if base_offset is None:
        parsed = parse_segment_name(path) if path else None
        if parsed is None:
            log.report(0, "decode_error", "time index base offset unknown (no base_offset and no segment "
                       "file name); offsets are relative")
            base_offset = 0
        else:
            base_offset = parsed[0]
    n = _entries(data, 12, log, "time index")
    out: list[tuple[int, int]] = []
    stop = n * 12
    prev_ts = None
    for i, (ts, rel) in enumerate(_TIME_ENTRY.iter_unpack(data[: n * 12])):
        if rel == 0 and i > 0:
            stop = i * 12
            break
        if prev_ts is not None and ts < prev_ts:
            log.report(i * 12, "out_of_order", f"entry {i} timestamp {ts} is before the previous {prev_ts}")
        prev_ts = ts
        out.append((ts, base_offset + rel))
    _check_tail(data[: n * 12], stop, log, "time index")
    return out


def read_txn_index(f: Source, path: str = "", problems: ProblemLog | None = None) -> list[AbortedTxn]:
    """Read a ``.txnindex`` file (aborted transactions, in order of abort completion).

    Examples
    --------
    >>> read_txn_index(encode_txn_index([AbortedTxn(7, 10, 15, 10)]))
    [AbortedTxn(producer_id=7, first_offset=10, last_offset=15, last_stable_offset=10, version=0)]
    """
    data, name = _read_all(f)
    log = _log(problems, path or name)
    n = _entries(data, 34, log, "transaction index")
    out = []
    for i, (version, pid, first, last, lso) in enumerate(_TXN_ENTRY.iter_unpack(data[: n * 34])):
        if version != 0:
            log.report(i * 34, "unknown_version", f"aborted-transaction entry {i} has version {version}, expected 0")
        out.append(AbortedTxn(pid, first, last, lso, version))
    return out


def read_producer_snapshot(f: Source, path: str = "", problems: ProblemLog | None = None) -> list[ProducerEntry]:
    """Read a producer-state ``.snapshot`` file (version 1, CRC-32C checked).

    A CRC mismatch is reported (``crc_mismatch``) and the entries are still returned.

    Examples
    --------
    >>> e = ProducerEntry(5, 0, 9, 120, 4, 1700000000000, -1, -1)
    >>> read_producer_snapshot(encode_producer_snapshot([e])) == [e]
    True
    """
    data, name = _read_all(f)
    log = _log(problems, path or name)
    if len(data) < _SNAPSHOT_HEADER.size:
        log.report(0, "truncated", f"producer snapshot of {len(data)} bytes is shorter than its 10-byte header")
        return []
    version, stored, count = _SNAPSHOT_HEADER.unpack_from(data, 0)
    if version != 1:
        log.report(0, "unknown_version", f"producer snapshot version {version}, expected 1")
        return []
    computed = crc32c.crc32c(data[6:])
    if computed != stored:
        log.report(2, "crc_mismatch", f"stored CRC-32C {stored} but computed {computed}; entries kept")
    room = (len(data) - 10) // 46
    if count < 0 or count != room or (len(data) - 10) % 46:
        log.report(6, "bad_length", f"producer snapshot declares {count} entries but holds room for {room} "
                   f"({len(data)} bytes); reading {min(max(count, 0), room)}")
    n = min(max(count, 0), room)
    return [ProducerEntry(*e) for e in _PRODUCER_ENTRY.iter_unpack(data[10 : 10 + n * 46])]


# --------------------------------------------------------------------------------------------
# writers


def encode_offset_index(entries: Iterable[tuple[int, int]], base_offset: int) -> bytes:
    """Bytes of a trimmed ``.index`` file for ``(absolute offset, position)`` pairs.

    >>> encode_offset_index([(105, 4096)], 100).hex()
    '0000000500001000'
    """
    return b"".join(_OFFSET_ENTRY.pack(off - base_offset, pos) for off, pos in entries)


def encode_time_index(entries: Iterable[tuple[int, int]], base_offset: int) -> bytes:
    """Bytes of a trimmed ``.timeindex`` file for ``(timestamp, absolute offset)`` pairs.

    >>> len(encode_time_index([(1, 100), (2, 101)], 100))
    24
    """
    return b"".join(_TIME_ENTRY.pack(ts, off - base_offset) for ts, off in entries)


def encode_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    """Bytes of a ``.txnindex`` file.

    >>> len(encode_txn_index([AbortedTxn(1, 2, 3, 2)]))
    34
    """
    return b"".join(_TXN_ENTRY.pack(e.version, e.producer_id, e.first_offset, e.last_offset,
                                    e.last_stable_offset) for e in entries)


def encode_producer_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    """Bytes of a producer-state ``.snapshot`` file (version 1).

    >>> encode_producer_snapshot([])[:2]
    b'\\x00\\x01'
    """
    items = list(entries)
    body = struct.pack(">i", len(items)) + b"".join(
        _PRODUCER_ENTRY.pack(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
                             e.timestamp, e.coordinator_epoch, e.current_txn_first_offset) for e in items
    )
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body
