"""Record batches: Kafka's v2 record batch (magic 2) and legacy message sets (magic 0/1).

A ``.log`` segment or a KRaft ``.checkpoint`` snapshot is a series of batches written back to
back. :func:`read_batches` walks such a file in chunks and yields one :class:`Batch` per batch
(or per legacy shallow entry) with only its header decoded; :meth:`Batch.records` decompresses
and decodes the records on request. :func:`encode_batch` writes the bytes Kafka writes.

Damaged input is expected. Every unreadable stretch becomes one problem (file, byte position,
kind, detail) in a :class:`~workbench.formats.problems.ProblemLog`, and the reader
resynchronises at the next verifiable batch header and carries on. Problem kinds used here:
``truncated``, ``crc_mismatch``, ``zero_fill``, ``bad_length``, ``unknown_magic``,
``unknown_codec``, ``garbage``, ``decompress_error``, ``record_error``.

Layouts (byte offsets within a batch; reference §1):

======  ====  ==============================  ==========================================
offset  size  v2 batch                        v0/v1 message (log entry)
======  ====  ==============================  ==========================================
0       8     base offset                     offset (wrapper: last inner offset)
8       4     length (bytes after this)       message size
12      4     partition leader epoch          CRC-32 of bytes 16..end
16      1     magic = 2                       magic = 0 / 1
17      4     CRC-32C of bytes 21..end        attributes (1 byte) at 17
21      2     attributes                      v1: timestamp int64 at 18
23      4     last offset delta               key length int32, key, value length, value
27      8     base timestamp
35      8     max timestamp
43      8     producer id
51      2     producer epoch
53      4     base sequence
57      4     record count
61      ...   records (one compressed stream)
======  ====  ==============================  ==========================================
"""

from __future__ import annotations

import io
import os
import re
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, BinaryIO

import crc32c as _crc32c_lib

from workbench.errors import ConfigError
from workbench.formats.compression import CODEC_IDS, CODEC_NAMES, CodecError, compress, decompress
from workbench.formats.crcrange import CRC32, CRC32C, CrcRange
from workbench.formats.problems import ProblemLog

__all__ = [
    "Batch",
    "Record",
    "batch_columns",
    "encode_batch",
    "read_batches",
    "BATCH_COLUMNS",
    "MAX_BATCH_BYTES",
]

LOG_OVERHEAD = 12
V2_HEADER_SIZE = 61
MAX_BATCH_BYTES = 128 << 20
"""Largest batch the reader believes in (a declared size above it is reported as ``bad_length``)."""

CHUNK_SIZE = 4 << 20  # bytes read from the file at a time
_SCAN_WINDOW = 1 << 20  # bytes examined per step while resynchronising

_V2 = struct.Struct(">qiibIhiqqqhii")  # the 61-byte v2 header
_LOG_HDR = struct.Struct(">qi")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

_crc32c = _crc32c_lib.crc32c
_crc32 = zlib.crc32

_TS_TYPES = ("CreateTime", "LogAppendTime")
_ZERO17 = bytes(17)

# A plausible header: base offset >= 0, 14 <= length < 0x09000000, then either magic 2 with
# attributes < 0x80, or magic 0/1 with attributes < 0x10. Zero runs never match.
_CANDIDATE = re.compile(
    rb"[\x00-\x7f][\x00-\xff]{7}"
    rb"(?:[\x01-\x08][\x00-\xff]{3}|\x00[\x01-\xff][\x00-\xff]{2}|\x00\x00[\x01-\xff][\x00-\xff]|\x00\x00\x00[\x0e-\xff])"
    rb"[\x00-\xff]{4}"
    rb"(?:\x02[\x00-\xff]{4}\x00[\x00-\x7f]|[\x00\x01][\x00-\x0f])"
)
_CANDIDATE_LEN = 23
_NONZERO = re.compile(rb"[^\x00]")


# --------------------------------------------------------------------------------------------
# data classes


@dataclass(slots=True)
class Record:
    """One record of a v2 batch, or one legacy message (inner messages of a wrapper).

    Attributes
    ----------
    offset : int
        Absolute offset.
    timestamp : int
        Epoch milliseconds (-1 for magic 0; the batch's max timestamp under LogAppendTime).
    key, value : bytes or None
        Payloads; ``None`` is a null key or value (a tombstone).
    headers : list of (str, bytes or None)
        Record headers (v2 only).
    attributes : int
        Record attributes (v2: always 0; legacy: the message attributes).
    size : int
        Encoded bytes of the record including its length varint (legacy: the log entry,
        12 + message size).

    Examples
    --------
    >>> Record(5, 1700000000000, b"k", None, [])
    Record(offset=5, timestamp=1700000000000, key=b'k', value=None, headers=[], attributes=0, size=0)
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    attributes: int = 0
    size: int = 0


@dataclass(slots=True)
class Batch:
    """One v2 record batch, or one legacy (magic 0/1) shallow entry, with its header decoded.

    ``position`` is the byte position of the batch in its file and ``size`` its total length
    (``12 + length``). For a legacy compressed wrapper ``base_offset``/``record_count`` come
    from the inner messages and ``last_offset`` is the wrapper offset; if the inner messages
    cannot be decoded, ``base_offset == last_offset`` and ``record_count == 0`` (the problem
    is reported by :meth:`records`). Legacy entries have ``producer_id``/``producer_epoch``/
    ``base_sequence``/``partition_leader_epoch`` -1, and ``base_timestamp == max_timestamp ==``
    the message timestamp (-1 for magic 0).

    ``compression`` is ``"unknown"`` when the codec bits name no codec.

    Examples
    --------
    >>> data = encode_batch([(0, 1000, b"k", b"v")], base_offset=0)
    >>> b = next(read_batches(io.BytesIO(data)))
    >>> (b.base_offset, b.last_offset, b.record_count, b.crc_valid, b.compression)
    (0, 0, 1, True, 'none')
    >>> b.records()[0].value
    b'v'
    """

    path: str
    position: int
    base_offset: int
    last_offset: int
    size: int
    partition_leader_epoch: int
    magic: int
    crc: int
    crc_valid: bool
    attributes: int
    compression: str
    timestamp_type: str
    is_transactional: bool
    is_control: bool
    has_delete_horizon: bool
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    data: bytes | memoryview | None = field(default=None, repr=False, compare=False)
    """The batch's bytes (``size`` of them), kept for :meth:`records`."""
    _cache: list[Record] | None = field(default=None, repr=False, compare=False)

    @property
    def last_sequence(self) -> int:
        """``base_sequence + last offset delta`` wrapping past 2**31-1 to 0, or -1."""
        if self.base_sequence < 0:
            return -1
        s = self.base_sequence + (self.last_offset - self.base_offset)
        return s - 0x80000000 if s > 0x7FFFFFFF else s

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon (the base timestamp field) when the batch carries one."""
        return self.base_timestamp if self.has_delete_horizon else None

    def records(self, problems: ProblemLog | None = None) -> list[Record]:
        """Decompress and decode the records (legacy wrappers: the inner messages), with absolute offsets.

        Record-level problems go to ``problems`` (a strict log raises); without one they are dropped.

        >>> data = encode_batch([(7, 5, None, b"x", [("h", b"1")])], base_offset=7, compression="zstd")
        >>> next(read_batches(io.BytesIO(data))).records()
        [Record(offset=7, timestamp=5, key=None, value=b'x', headers=[('h', b'1')], attributes=0, size=12)]
        """
        if self._cache is not None:
            return list(self._cache)
        log = problems if problems is not None else ProblemLog(self.path)
        if self.data is None:
            return []
        if self.magic == 2:
            return _records_v2(self, log)
        return _records_legacy(self, log)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        values = [getattr(self, f.name) for f in fields(self) if f.name not in ("data", "_cache")]
        data = None if self.data is None else bytes(self.data)
        return (_rebuild_batch, (values, data))


def _rebuild_batch(values: list[Any], data: bytes | None) -> Batch:
    batch = Batch(*values)
    batch.data = data
    return batch


BATCH_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Batch) if f.name not in ("data", "_cache"))
"""Names of the header fields of :class:`Batch`, in order (the ``batches`` table columns)."""


def batch_columns(batches: Iterable[Batch]) -> dict[str, list[Any]]:
    """Turn batches into columns (one list per :data:`BATCH_COLUMNS` name).

    >>> cols = batch_columns(read_batches(io.BytesIO(encode_batch([(0, 1, None, b"v")], base_offset=0))))
    >>> cols["base_offset"], cols["record_count"]
    ([0], [1])
    """
    cols: dict[str, list[Any]] = {name: [] for name in BATCH_COLUMNS}
    appenders = [(cols[name].append, name) for name in BATCH_COLUMNS]
    for b in batches:
        for append, name in appenders:
            append(getattr(b, name))
    return cols


# --------------------------------------------------------------------------------------------
# chunked file access


class _Reader:
    """Forward-only window over a binary file: ``view(pos, n)`` makes ``[pos, pos+n)`` available."""

    __slots__ = ("f", "base", "buf", "mv", "eof", "size", "ranges")

    def __init__(self, f: BinaryIO, start: int) -> None:
        self.f = f
        #: Running CRC-32C and CRC-32 of the bytes resynchronisation checks (see _verify).
        self.ranges = (CrcRange(CRC32C), CrcRange(CRC32))
        self.buf = bytearray()
        self.mv = memoryview(self.buf)
        self.eof = False
        self.size: int | None = None
        try:
            self.size = os.fstat(f.fileno()).st_size
        except (AttributeError, OSError, ValueError):
            try:
                here = f.tell()
                self.size = f.seek(0, io.SEEK_END)
                f.seek(here)
            except (AttributeError, OSError, ValueError):
                self.size = None
        try:
            f.seek(start)
        except (AttributeError, OSError, ValueError):
            if start:
                self._discard(start)
        self.base = start

    def _discard(self, n: int) -> None:
        while n > 0:
            piece = self.f.read(min(n, CHUNK_SIZE))
            if not piece:
                self.eof = True
                return
            n -= len(piece)

    def view(self, pos: int, n: int) -> tuple[bytearray, memoryview, int]:
        buf = self.buf
        off = pos - self.base
        if off < 0:  # the reader only moves forward; this is a bug, not bad input
            raise RuntimeError(f"internal error: view of byte {pos} before the window at {self.base}")
        if off + n <= len(buf) or (self.eof and off <= len(buf)):
            return buf, self.mv, off
        if off > len(buf):  # jump beyond the window: skip the bytes in between
            self._discard(off - len(buf))
            keep = 0
        else:
            keep = len(buf) - off
        need = n - keep
        want = max(need, CHUNK_SIZE)
        # a fresh buffer per refill: batches handed out keep views of the old one
        new = bytearray(keep + want)
        if keep:
            new[:keep] = self.mv[off:]
        filled = keep
        readinto = getattr(self.f, "readinto", None)
        while filled - keep < need and not self.eof:
            if readinto is not None:
                got = readinto(memoryview(new)[filled:])
            else:
                piece = self.f.read(len(new) - filled)
                got = len(piece)
                new[filled : filled + got] = piece
            if not got:
                self.eof = True
                break
            filled += got
        if filled < len(new):
            del new[filled:]
        self.buf = new
        self.mv = memoryview(new)
        self.base = pos
        return new, self.mv, 0


# --------------------------------------------------------------------------------------------
# resynchronisation


def _verify(r: _Reader, cand: int) -> bool:
    """Is there a complete batch at ``cand`` whose structure and checksum are valid?

    The checksum comes from the reader's running CRC (:class:`~workbench.formats.crcrange.CrcRange`):
    a run of plausible headers, crafted or unlucky, each claiming megabytes that the file holds,
    costs each byte of the run one checksum, not one per candidate covering it, so every candidate
    is checked and the batches after such a run are found.
    """
    buf, mv, off = r.view(cand, V2_HEADER_SIZE)
    avail = len(buf) - off
    if avail < _CANDIDATE_LEN:
        return False
    length = _I32.unpack_from(buf, off + 8)[0]
    size = LOG_OVERHEAD + length
    if length > MAX_BATCH_BYTES or (r.size is not None and cand + size > r.size):
        return False
    magic = buf[off + 16]
    if magic == 2:
        if length < V2_HEADER_SIZE - LOG_OVERHEAD or avail < V2_HEADER_SIZE:
            return False
        (_, _, _, _, stored, attrs, lod, _, _, _, pep, bseq, count) = _V2.unpack_from(buf, off)
        if attrs & 7 > 4 or lod < 0 or count < 0 or count > lod + 1 or pep < -1 or bseq < -1:
            return False
    else:
        attrs = buf[off + 17]
        hdr = 18 if magic == 0 else 26
        if attrs & 7 > 3 or (magic == 0 and attrs & 0xF8) or length < hdr - 4:
            return False
        stored = _U32.unpack_from(buf, off + 12)[0]
    buf, mv, off = r.view(cand, size)
    if len(buf) - off < size:
        return False
    base = r.base
    if magic == 2:
        return r.ranges[0].crc(mv, base, cand + 21, cand + size, _crc32c) == stored
    if r.ranges[1].crc(mv, base, cand + 16, cand + size, _crc32) != stored:
        return False
    return _legacy_layout_ok(buf, off, size, hdr)


def _legacy_layout_ok(buf: bytes | bytearray, off: int, size: int, hdr: int) -> bool:
    p = off + hdr
    end = off + size
    if p + 4 > end:
        return False
    kl = _I32.unpack_from(buf, p)[0]
    p += 4 + max(kl, 0)
    if kl < -1 or p + 4 > end:
        return False
    vl = _I32.unpack_from(buf, p)[0]
    return vl >= -1 and p + 4 + max(vl, 0) == end


def _scan(r: _Reader, frm: int, limit: int | None) -> int | None:
    """Position of the first verifiable batch at or after ``frm`` and before ``limit``."""
    q = frm
    while limit is None or q < limit:
        buf, _, off = r.view(q, _SCAN_WINDOW)
        n = len(buf)
        stop = n if limit is None else min(n, off + (limit - q) + _CANDIDATE_LEN - 1)
        m = _CANDIDATE.search(buf, off, stop)
        if m is None:
            if stop < n or r.eof:
                return None
            nxt = r.base + n - _CANDIDATE_LEN + 1
            if nxt <= q:  # fewer than a candidate's bytes are buffered and more may come
                buf, _, off = r.view(q, _CANDIDATE_LEN + _SCAN_WINDOW)
                if len(buf) - off < _CANDIDATE_LEN:
                    return None
                continue
            q = nxt
            continue
        cand = r.base + m.start()
        if limit is not None and cand >= limit:
            return None
        if _verify(r, cand):
            return cand
        q = cand + 1
    return None


def _followed_by_header(r: _Reader, nxt: int, end: int | None) -> bool:
    """Does ``nxt`` hold the end of the data, a zero run or a plausible batch header?"""
    if end is not None and nxt >= end:
        return True
    buf, _, off = r.view(nxt, _CANDIDATE_LEN)
    rest = buf[off : off + _CANDIDATE_LEN]
    if len(rest) < 17:
        return True  # the end of the file (a short tail is reported when reached)
    if rest[:17] == _ZERO17:
        return True
    return _CANDIDATE.match(buf, off) is not None or (len(rest) < _CANDIDATE_LEN and rest[16] <= 2)


def _skip_zeros(r: _Reader, pos: int) -> int:
    """Position of the first non-zero byte at or after ``pos`` (the file end if none)."""
    q = pos
    while True:
        buf, _, off = r.view(q, _SCAN_WINDOW)
        if off >= len(buf):
            return q
        m = _NONZERO.search(buf, off)
        if m is not None:
            return r.base + m.start()
        if r.eof:
            return r.base + len(buf)
        q = max(q + 1, r.base + len(buf) - 16)  # keep 16 zero bytes in view for the caller's rescan


def _resolve_log(problems: ProblemLog | None, path: str, strict: bool) -> ProblemLog:
    if problems is None:
        return ProblemLog(path, strict)
    if strict and not problems.strict:
        return ProblemLog(problems.path or path, True, problems.problems)
    return problems


def _after(q: int | None, what: str = "the next batch") -> str:
    return f"skipped to {what} at byte {q}" if q is not None else "no further batch found"


# --------------------------------------------------------------------------------------------
# reading


def unknown_codec_detail(codec: int, magic: int) -> str:
    """The one wording of an unknown codec, so the header and record readers report it once."""
    return f"compression codec id {codec} is not defined for magic {magic}; records not decoded"


def read_batches(
    f: BinaryIO,
    path: str = "",
    *,
    problems: ProblemLog | None = None,
    strict: bool = False,
    start: int = 0,
    end: int | None = None,
) -> Iterator[Batch]:
    """Walk a file of record batches and yield every readable batch, header decoded.

    Reading starts at byte ``start`` (a batch boundary) and yields the batches that start
    before ``end`` (a batch that starts before ``end`` is read to its end). The file is read in
    chunks of a few MiB; each :class:`Batch` keeps a view of its own bytes for
    :meth:`Batch.records`.

    Damage is reported to ``problems`` with its byte position, and the reader carries on:

    * a CRC mismatch is reported and the batch still yielded with ``crc_valid=False``, unless
      a verifiable batch starts inside it (then its header was garbage: ``garbage``);
    * a declared length below the minimum or above :data:`MAX_BATCH_BYTES` (``bad_length``),
      an unknown magic (``unknown_magic``) or a zero run (``zero_fill``: one problem per run,
      e.g. a preallocated tail) is skipped by resynchronising: the reader scans forward for the
      next header whose magic, length and fields are plausible and whose checksum is valid;
    * a batch running past the end of the file is ``truncated`` (or ``bad_length`` when a
      verifiable batch starts inside the declared extent, reading resumes there);
    * unknown codec bits are reported (``unknown_codec``) and the batch yielded.

    Resynchronisation scans at C speed (a compiled pattern), checksums each byte it examines
    once however many candidate headers claim it (a running CRC gives any candidate's checksum
    from two kept values: :mod:`workbench.formats.crcrange`), and reads at most one batch beyond
    the scan window, so its work grows with the file, not with the candidates, and no readable
    batch after a run of plausible headers is lost.

    Parameters
    ----------
    f : binary file object
        Opened for reading; seeked to ``start`` when seekable.
    path : str
        File name used in problems and batches.
    problems : ProblemLog, optional
        Receives problems; a new (discarded) log when omitted.
    strict : bool
        Raise :class:`~workbench.errors.CorruptDataError` at the first problem.
    start, end : int
        Byte range of batch start positions to read.

    Yields
    ------
    Batch

    Examples
    --------
    >>> seg = encode_batch([(0, 1, b"a", b"1")], base_offset=0) + encode_batch([(1, 2, b"b", b"2")], base_offset=1)
    >>> log = ProblemLog("x.log")
    >>> [(b.position, b.base_offset) for b in read_batches(io.BytesIO(seg + b"\\0" * 100), "x.log", problems=log)]
    [(0, 0), (70, 1)]
    >>> [(p.position, p.kind) for p in log.problems]
    [(140, 'zero_fill')]
    """
    log = _resolve_log(problems, path, strict)
    r = _Reader(f, start)
    pos = start
    unpack_v2 = _V2.unpack_from
    unpack_log = _LOG_HDR.unpack_from
    crc32c = _crc32c
    codecs = CODEC_NAMES
    ts_types = _TS_TYPES
    report = log.report
    while end is None or pos < end:
        buf, mv, off = r.view(pos, V2_HEADER_SIZE)
        avail = len(buf) - off
        if avail < 17:
            if avail <= 0:
                return
            if buf[off : off + avail] == bytes(avail):
                report(pos, "zero_fill", f"{avail} zero bytes at the end of the file (preallocated, never written)")
            else:
                report(pos, "truncated", f"{avail} bytes at the end of the file, fewer than a batch header (17)")
            return
        base_offset, length = unpack_log(buf, off)
        magic = buf[off + 16]
        if magic == 0 and length == 0 and buf[off : off + 17] == _ZERO17:
            z = _skip_zeros(r, pos)
            if r.size is not None and z >= r.size or z == pos:
                report(pos, "zero_fill", f"{z - pos} zero bytes to the end of the file (preallocated, never written)")
                return
            buf, _, zoff = r.view(z, 1)
            if zoff >= len(buf):
                report(pos, "zero_fill", f"{z - pos} zero bytes to the end of the file (preallocated, never written)")
                return
            if end is not None and z >= end:
                report(pos, "zero_fill", f"{z - pos} zero bytes where a batch header was expected")
                return
            q = _scan(r, max(pos + 1, z - 16), end)
            zend = z if q is None or q > z else q
            report(pos, "zero_fill", f"{zend - pos} zero bytes where a batch header was expected")
            if q is None:
                report(z, "garbage", f"non-zero bytes after a zero run; {_after(q)}")
                return
            if q > z:
                report(z, "garbage", f"{q - z} unreadable bytes after a zero run; {_after(q)}")
            pos = q
            continue
        bad = None
        if magic > 2:
            bad = ("unknown_magic", f"magic byte {magic}, expected 0, 1 or 2")
        elif length < (49 if magic == 2 else 14 if magic == 0 else 22) or length > MAX_BATCH_BYTES:
            bad = ("bad_length", f"declared batch length {length} outside "
                   f"[{49 if magic == 2 else 14 if magic == 0 else 22}, {MAX_BATCH_BYTES}] for magic {magic}")
        if bad is not None:
            q = _scan(r, pos + 1, end)
            report(pos, bad[0], f"{bad[1]}; {_after(q)}")
            if q is None:
                return
            pos = q
            continue
        size = LOG_OVERHEAD + length
        if r.size is None or pos + size <= r.size:
            buf, mv, off = r.view(pos, size)
        if (r.size is not None and pos + size > r.size) or len(buf) - off < size:
            remaining = (r.size - pos) if r.size is not None else len(buf) - off
            q = _scan(r, pos + 1, end)
            if q is None:
                report(pos, "truncated",
                       f"batch declares {size} bytes but only {remaining} remain in the file; tail not read")
                return
            report(pos, "bad_length", f"batch declares {size} bytes, past the end of the file "
                   f"({remaining} bytes remain); {_after(q)}")
            pos = q
            continue
        if magic == 2:
            (_, _, ple, _, stored, attrs, lod, base_ts, max_ts, pid, pep, bseq, count) = unpack_v2(buf, off)
            ok = crc32c(mv[off + 21 : off + size]) == stored
        else:
            stored = _U32.unpack_from(buf, off + 12)[0]
            ok = _crc32(mv[off + 16 : off + size]) == stored
        if magic == 2:
            codec = attrs & 7
            batch = Batch(
                path, pos, base_offset, base_offset + lod, size, ple, 2, stored, ok, attrs,
                codecs[codec] if codec < 5 else "unknown", ts_types[(attrs >> 3) & 1],
                bool(attrs & 0x10), bool(attrs & 0x20), bool(attrs & 0x40),
                base_ts, max_ts, pid, pep, bseq, count, mv[off : off + size],
            )
        else:
            batch = _legacy_batch(path, pos, base_offset, size, magic, stored, ok, buf, mv, off)
            codec = batch.attributes & 7
        if not ok:
            computed = crc32c(mv[off + 21 : off + size]) if magic == 2 else _crc32(mv[off + 16 : off + size])
            # a real batch with damaged content, or garbage that looks like a header? Believe the
            # header only if no verifiable batch starts inside it and a header (or the end) follows.
            q = _scan(r, pos + 1, pos + size)
            if q is None and not _followed_by_header(r, pos + size, end):
                q = _scan(r, pos + size, end)
                skipped = f"{q - pos} unreadable bytes" if q is not None else "unreadable bytes"
                report(pos, "garbage", f"{skipped} (a header with a bad checksum and no batch after it); "
                       f"{_after(q)}")
                if q is None:
                    return
                pos = q
                continue
            if q is not None:
                report(pos, "garbage", f"{q - pos} unreadable bytes (a header with a bad checksum); {_after(q)}")
                pos = q
                continue
        if not ok:
            report(pos, "crc_mismatch", f"stored {'CRC-32C' if magic == 2 else 'CRC-32'} {stored} "
                   f"but computed {computed} over the batch's {size} bytes; batch kept (crc_valid=False)")
        if codec > (4 if magic == 2 else 3):
            report(pos, "unknown_codec", unknown_codec_detail(codec, magic))
        yield batch
        pos += size


def _legacy_batch(path: str, pos: int, offset: int, size: int, magic: int, stored: int, ok: bool,
                  buf: bytes | bytearray, mv: memoryview, off: int) -> Batch:
    attrs = buf[off + 17]
    if magic == 1:
        ts = _I64.unpack_from(buf, off + 18)[0]
        ts_type = _TS_TYPES[(attrs >> 3) & 1]
    else:
        ts = -1
        ts_type = "NoTimestampType"
    codec = attrs & 7
    batch = Batch(
        path, pos, offset, offset, size, -1, magic, stored, ok, attrs,
        CODEC_NAMES[codec] if codec < 4 else "unknown", ts_type, False, False, False,
        ts, ts, -1, -1, -1, 1, mv[off : off + size],
    )
    if codec:
        silent = ProblemLog(path)
        inner = _records_legacy(batch, silent) if codec < 4 else []
        if inner and not silent.problems:
            batch.base_offset = inner[0].offset
            batch.record_count = len(inner)
            batch._cache = inner
        else:
            batch.record_count = len(inner)
            if inner:
                batch.base_offset = inner[0].offset
    return batch


# --------------------------------------------------------------------------------------------
# record decoding


class _Bad(Exception):
    """A malformed record field (turned into a ``record_error`` problem)."""


def _uvarint_slow(data: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    result = 0
    shift = 0
    for _ in range(max_bytes):
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise _Bad(f"varint longer than {max_bytes} bytes")


def _records_v2(batch: Batch, log: ProblemLog) -> list[Record]:
    raw = batch.data
    if raw is None:
        return []
    count = batch.record_count
    if count < 0:
        log.report(batch.position, "record_error", f"negative record count {count}")
        return []
    codec = batch.attributes & 7
    payload = raw[V2_HEADER_SIZE:]
    compressed = codec != 0
    if codec > 4:
        log.report(batch.position, "unknown_codec", unknown_codec_detail(codec, batch.magic))
        return []
    if compressed:
        try:
            data = decompress(CODEC_NAMES[codec], payload, magic=2)
        except CodecError as exc:
            log.report(batch.position, "decompress_error", f"{CODEC_NAMES[codec]} records: {exc}")
            return []
        where = f"byte {{}} of the decompressed {CODEC_NAMES[codec]} records"
        origin = batch.position
    else:
        data = bytes(payload)
        where = "record at byte {}"
        origin = batch.position + V2_HEADER_SIZE
    lat = batch.max_timestamp if batch.attributes & 0x08 else None
    return _decode_v2(data, count, batch.base_offset, batch.base_timestamp, lat, log, origin, where, compressed)


def _decode_v2(data: bytes, count: int, base_offset: int, base_ts: int, lat: int | None,
               log: ProblemLog, origin: int, where: str, compressed: bool) -> list[Record]:
    """Decode ``count`` v2 records from ``data`` (the hot loop: varints inlined)."""
    out: list[Record] = []
    append = out.append
    n = len(data)
    pos = 0
    slow = _uvarint_slow
    decoded = 0
    while decoded < count:
        if pos >= n:
            log.report(origin if compressed else origin + pos, "record_error",
                       f"batch declares {count} records but its data ends after {decoded} ({where.format(pos)})")
            return out
        start = pos
        b = data[pos]
        if b < 0x80:
            u = b
            pos += 1
        elif pos + 1 < n and data[pos + 1] < 0x80:
            u = (b & 0x7F) | (data[pos + 1] << 7)
            pos += 2
        else:
            try:
                u, pos = slow(data, pos, 5)
            except (IndexError, _Bad) as exc:
                log.report(origin if compressed else origin + start, "record_error",
                           f"unreadable record length ({where.format(start)}): {exc}")
                return out
        length = (u >> 1) ^ -(u & 1)
        rend = pos + length
        if length < 1 or rend > n:
            log.report(origin if compressed else origin + start, "record_error",
                       f"record length {length} does not fit the {n - pos} bytes left ({where.format(start)})")
            return out
        decoded += 1
        try:
            attrs = data[pos]
            pos += 1
            b = data[pos]
            if b < 0x80:
                u = b
                pos += 1
            else:
                u, pos = slow(data, pos, 10)
            tsd = (u >> 1) ^ -(u & 1)
            b = data[pos]
            if b < 0x80:
                u = b
                pos += 1
            else:
                u, pos = slow(data, pos, 5)
            od = (u >> 1) ^ -(u & 1)
            b = data[pos]
            if b < 0x80:
                u = b
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | (data[pos + 1] << 7)
                pos += 2
            else:
                u, pos = slow(data, pos, 5)
            kl = (u >> 1) ^ -(u & 1)
            if kl >= 0:
                key = data[pos : pos + kl]
                pos += kl
            elif kl == -1:
                key = None
            else:
                raise _Bad(f"key length {kl}")
            b = data[pos]
            if b < 0x80:
                u = b
                pos += 1
            elif data[pos + 1] < 0x80:
                u = (b & 0x7F) | (data[pos + 1] << 7)
                pos += 2
            else:
                u, pos = slow(data, pos, 5)
            vl = (u >> 1) ^ -(u & 1)
            if vl >= 0:
                value = data[pos : pos + vl]
                pos += vl
            elif vl == -1:
                value = None
            else:
                raise _Bad(f"value length {vl}")
            b = data[pos]
            if b < 0x80:
                u = b
                pos += 1
            else:
                u, pos = slow(data, pos, 5)
            hc = (u >> 1) ^ -(u & 1)
            headers: list[tuple[str, bytes | None]] = []
            if hc:
                if hc < 0 or hc > rend - pos:
                    raise _Bad(f"header count {hc}")
                for _ in range(hc):
                    u, pos = slow(data, pos, 5)
                    hkl = (u >> 1) ^ -(u & 1)
                    if hkl < 0 or pos + hkl > rend:
                        raise _Bad(f"header key length {hkl}")
                    hkey = data[pos : pos + hkl].decode("utf-8", "replace")
                    pos += hkl
                    u, pos = slow(data, pos, 5)
                    hvl = (u >> 1) ^ -(u & 1)
                    if hvl >= 0:
                        hval: bytes | None = data[pos : pos + hvl]
                        pos += hvl
                    elif hvl == -1:
                        hval = None
                    else:
                        raise _Bad(f"header value length {hvl}")
                    headers.append((hkey, hval))
            if pos != rend:
                raise _Bad(f"record fields end at {pos - start} bytes but its length says {rend - start}")
        except (IndexError, _Bad) as exc:
            log.report(origin if compressed else origin + start, "record_error",
                       f"malformed record ({where.format(start)}): {exc}; record skipped")
            pos = rend
            continue
        append(Record(base_offset + od, base_ts + tsd if lat is None else lat, key, value, headers,
                      attrs, rend - start))
    if pos != n:
        log.report(origin if compressed else origin + pos, "record_error",
                   f"{n - pos} bytes after the last of {count} records ({where.format(pos)})")
    return out


def _parse_message(buf: bytes, p: int, end: int) -> tuple[int, int, int, int, bytes | None, bytes | None]:
    """Parse a legacy message ``buf[p:end]`` (from its CRC): (crc, magic, attrs, ts, key, value)."""
    if end - p < 14:
        raise _Bad(f"message of {end - p} bytes is shorter than the minimum 14")
    crc = _U32.unpack_from(buf, p)[0]
    magic = buf[p + 4]
    attrs = buf[p + 5]
    q = p + 6
    if magic == 1:
        if end - p < 22:
            raise _Bad(f"v1 message of {end - p} bytes is shorter than the minimum 22")
        ts = _I64.unpack_from(buf, q)[0]
        q += 8
    elif magic == 0:
        ts = -1
    else:
        raise _Bad(f"inner message magic {magic}")
    kl = _I32.unpack_from(buf, q)[0]
    q += 4
    if kl < -1 or q + max(kl, 0) + 4 > end:
        raise _Bad(f"key length {kl} does not fit the message")
    key = None if kl < 0 else bytes(buf[q : q + kl])
    q += max(kl, 0)
    vl = _I32.unpack_from(buf, q)[0]
    q += 4
    if vl < -1 or q + max(vl, 0) != end:
        raise _Bad(f"value length {vl} does not match the message size")
    value = None if vl < 0 else bytes(buf[q : q + vl])
    return crc, magic, attrs, ts, key, value


def _records_legacy(batch: Batch, log: ProblemLog) -> list[Record]:
    raw = bytes(batch.data or b"")
    pos = batch.position
    try:
        _, magic, attrs, ts, key, value = _parse_message(raw, LOG_OVERHEAD, len(raw))
    except (_Bad, struct.error, IndexError) as exc:
        log.report(pos, "record_error", f"malformed legacy message: {exc}")
        return []
    codec = attrs & 7
    ts_type_bit = attrs & 0x08 if magic == 1 else 0
    if codec == 0:
        return [Record(batch.last_offset, ts, key, value, [], attrs, len(raw))]
    if codec > 3:
        log.report(pos, "unknown_codec", f"legacy wrapper codec id {codec}; inner messages not decoded")
        return []
    name = CODEC_NAMES[codec]
    if value is None:
        log.report(pos, "record_error", f"{name} wrapper message has a null value")
        return []
    try:
        inner = decompress(name, value, magic=magic)
    except CodecError as exc:
        log.report(pos, "decompress_error", f"{name} wrapper message: {exc}")
        return []
    entries: list[tuple[int, int, int, int, bytes | None, bytes | None, int]] = []
    p = 0
    n = len(inner)
    while p < n:
        if n - p < LOG_OVERHEAD:
            log.report(pos, "record_error", f"{n - p} stray bytes at the end of the decompressed message set")
            break
        ioff, isize = _LOG_HDR.unpack_from(inner, p)
        if isize < 14 or p + LOG_OVERHEAD + isize > n:
            log.report(pos, "record_error",
                       f"inner message at byte {p} of the decompressed set declares {isize} bytes; rest dropped")
            break
        try:
            icrc, imagic, iattrs, its, ikey, ivalue = _parse_message(inner, p + LOG_OVERHEAD, p + LOG_OVERHEAD + isize)
        except (_Bad, struct.error, IndexError) as exc:
            log.report(pos, "record_error", f"inner message at byte {p} of the decompressed set: {exc}")
            p += LOG_OVERHEAD + isize
            continue
        if _crc32(memoryview(inner)[p + 16 : p + LOG_OVERHEAD + isize]) != icrc:
            log.report(pos, "crc_mismatch", f"inner message at byte {p} of the decompressed set has a bad CRC-32")
        if imagic != magic:
            log.report(pos, "record_error", f"inner message magic {imagic} differs from the wrapper magic {magic}")
        if iattrs & 7:
            log.report(pos, "record_error", f"inner message at byte {p} is itself compressed; not decoded")
            p += LOG_OVERHEAD + isize
            continue
        entries.append((ioff, icrc, iattrs, its, ikey, ivalue, LOG_OVERHEAD + isize))
        p += LOG_OVERHEAD + isize
    if not entries:
        return []
    wrapper_offset = batch.last_offset
    if magic > 0:
        last_inner = entries[-1][0]
        if wrapper_offset == 0:
            abs_base = 0
        elif wrapper_offset < last_inner:
            log.report(pos, "record_error", f"wrapper offset {wrapper_offset} is less than the last inner "
                       f"relative offset {last_inner}; inner offsets kept relative")
            abs_base = 0
        else:
            abs_base = wrapper_offset - last_inner
    else:
        abs_base = 0
    out = []
    for ioff, _, iattrs, its, ikey, ivalue, isz in entries:
        out.append(Record(abs_base + ioff, ts if ts_type_bit else its, ikey, ivalue, [], iattrs, isz))
    return out


# --------------------------------------------------------------------------------------------
# encoding


def _uvarint(u: int) -> bytes:
    if u < 0x80:
        return bytes((u,))
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _varint(v: int) -> bytes:
    return _uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)


def _varlong(v: int) -> bytes:
    return _uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _as_record(r: Record | tuple[Any, ...]) -> Record:
    if isinstance(r, Record):
        return r
    if not isinstance(r, tuple) or not 4 <= len(r) <= 5:
        raise ConfigError(f"a record must be a Record or a tuple (offset, timestamp, key, value[, headers]), got {r!r}")
    return Record(r[0], r[1], r[2], r[3], list(r[4]) if len(r) == 5 else [])


def encode_batch(
    records: Sequence[Record] | Sequence[tuple[Any, ...]],
    *,
    base_offset: int,
    magic: int = 2,
    compression: str = "none",
    timestamp_type: str = "CreateTime",
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    max_timestamp: int | None = None,
    last_offset: int | None = None,
    delete_horizon_ms: int | None = None,
    compression_level: int | None = None,
) -> bytes:
    """Encode records as one batch exactly as Kafka lays it out.

    Magic 2 writes a v2 record batch (CRC-32C over attributes..end; base timestamp = first
    record's; record offsets relative to ``base_offset``). Magic 0/1 writes a legacy message
    set: one message per record when uncompressed, otherwise one wrapper message whose value
    is the compressed inner message set (v0: absolute inner offsets; v1: relative 0..n-1 and
    the wrapper carries the last absolute offset).

    Parameters
    ----------
    records : sequence of Record or tuple
        Tuples are ``(offset, timestamp, key, value[, headers])`` with absolute offsets.
    base_offset : int
        First offset of the batch (v2 base offset; legacy: used for v1 relative offsets).
    magic : int
        0, 1 or 2.
    compression : str
        ``"none"``, ``"gzip"``, ``"snappy"``, ``"lz4"`` or ``"zstd"`` (magic 2 only).
    timestamp_type : str
        ``"CreateTime"`` or ``"LogAppendTime"`` (magic >= 1).
    max_timestamp : int, optional
        Max timestamp field; defaults to the largest record timestamp (-1 when empty). For
        LogAppendTime it is the broker's append time.
    last_offset : int, optional
        Last offset of the batch (defaults to the last record's; set it for empty or
        compacted batches).
    delete_horizon_ms : int, optional
        Sets the delete-horizon attribute and stores the horizon as base timestamp.
    compression_level : int, optional
        Codec level (Kafka's default when omitted).
    partition_leader_epoch, producer_id, producer_epoch, base_sequence, is_transactional, is_control
        Batch header fields (magic 2).

    Returns
    -------
    bytes

    Raises
    ------
    ConfigError
        Invalid arguments (unknown codec or magic, headers or zstd with legacy magic, ...).

    Examples
    --------
    >>> data = encode_batch([(10, 1000, b"k", b"v", [("h", None)])], base_offset=10)
    >>> len(data), data[16]
    (73, 2)
    """
    recs = [_as_record(r) for r in records]
    if compression not in CODEC_IDS:
        raise ConfigError(f"unknown compression {compression!r}; expected one of {', '.join(CODEC_NAMES)}")
    if timestamp_type not in _TS_TYPES:
        raise ConfigError(f"timestamp_type must be CreateTime or LogAppendTime, got {timestamp_type!r}")
    if magic in (0, 1):
        return _encode_legacy(recs, base_offset, magic, compression, timestamp_type, max_timestamp,
                              compression_level)
    if magic != 2:
        raise ConfigError(f"magic must be 0, 1 or 2, got {magic!r}")
    if recs:
        first_ts = recs[0].timestamp
        base_ts = first_ts if delete_horizon_ms is None else delete_horizon_ms
        max_ts = max(r.timestamp for r in recs) if max_timestamp is None else max_timestamp
        lod = (recs[-1].offset - base_offset) if last_offset is None else last_offset - base_offset
    else:
        base_ts = -1 if delete_horizon_ms is None else delete_horizon_ms
        max_ts = -1 if max_timestamp is None else max_timestamp
        lod = 0 if last_offset is None else last_offset - base_offset
    parts = []
    for r in recs:
        body = [b"\x00", _varlong(r.timestamp - base_ts), _varint(r.offset - base_offset)]
        if r.key is None:
            body.append(b"\x01")
        else:
            body.append(_varint(len(r.key)))
            body.append(bytes(r.key))
        if r.value is None:
            body.append(b"\x01")
        else:
            body.append(_varint(len(r.value)))
            body.append(bytes(r.value))
        body.append(_varint(len(r.headers)))
        for hk, hv in r.headers:
            hkb = hk.encode("utf-8")
            body.append(_varint(len(hkb)))
            body.append(hkb)
            if hv is None:
                body.append(b"\x01")
            else:
                body.append(_varint(len(hv)))
                body.append(bytes(hv))
        rb = b"".join(body)
        parts.append(_varint(len(rb)))
        parts.append(rb)
    payload = b"".join(parts)
    if compression != "none":
        payload = compress(compression, payload, magic=2, level=compression_level)
    attrs = (CODEC_IDS[compression] | (0x08 if timestamp_type == "LogAppendTime" else 0)
             | (0x10 if is_transactional else 0) | (0x20 if is_control else 0)
             | (0x40 if delete_horizon_ms is not None else 0))
    tail = struct.pack(">hiqqqhii", attrs, lod, base_ts, max_ts, producer_id, producer_epoch,
                       base_sequence, len(recs)) + payload
    length = len(tail) + 9  # partition leader epoch + magic + crc
    return struct.pack(">qiibI", base_offset, length, partition_leader_epoch, 2, _crc32c(tail)) + tail


def _legacy_message(offset: int, magic: int, attrs: int, ts: int, key: bytes | None, value: bytes | None) -> bytes:
    body = [bytes((magic, attrs))]
    if magic == 1:
        body.append(_I64.pack(ts))
    body.append(_I32.pack(-1) if key is None else _I32.pack(len(key)) + bytes(key))
    body.append(_I32.pack(-1) if value is None else _I32.pack(len(value)) + bytes(value))
    msg = b"".join(body)
    return _LOG_HDR.pack(offset, len(msg) + 4) + _U32.pack(_crc32(msg)) + msg


def _encode_legacy(recs: list[Record], base_offset: int, magic: int, codec: str, ts_type: str,
                   max_timestamp: int | None, level: int | None) -> bytes:
    if codec == "zstd":
        raise ConfigError("zstd compression needs magic 2 (KIP-110)")
    if any(r.headers for r in recs):
        raise ConfigError("legacy messages (magic 0/1) have no headers")
    lat = ts_type == "LogAppendTime" and magic == 1
    if codec == "none":
        out = []
        for r in recs:
            ts = (max_timestamp if lat and max_timestamp is not None else r.timestamp)
            out.append(_legacy_message(r.offset, magic, 0x08 if lat else 0, ts, r.key, r.value))
        return b"".join(out)
    if not recs:
        raise ConfigError("a compressed legacy wrapper needs at least one record")
    inner = b"".join(
        _legacy_message(r.offset if magic == 0 else r.offset - base_offset, magic, 0, r.timestamp, r.key, r.value)
        for r in recs
    )
    value = compress(codec, inner, magic=magic, level=level)
    wrapper_ts = max(r.timestamp for r in recs) if max_timestamp is None else max_timestamp
    attrs = CODEC_IDS[codec] | (0x08 if lat else 0)
    return _legacy_message(recs[-1].offset, magic, attrs, wrapper_ts, None, value)
