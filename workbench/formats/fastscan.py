"""The batch table of a segment at memory speed: compiled header hopping over a memory map.

:func:`read_batches` is the careful reader: it copies the file through a window, builds one
:class:`~workbench.formats.batch.Batch` per batch and knows how to resynchronise after damage.
:func:`scan_batch_columns` gives the same table (the :data:`~workbench.formats.batch.BATCH_COLUMNS`)
much faster, because on an undamaged stretch of a file none of that is needed:

1. the file is memory-mapped;
2. a compiled loop (numba) hops from header to header while each one is a clean v2 header (magic
   2, a length within bounds, the batch inside the file, a known codec), touching only the
   pages that hold headers;
3. the 61 header bytes of every batch found are gathered into one array and decoded in a single
   vectorised step (a packed big-endian NumPy dtype);
4. the CRC-32C of every batch is computed by the ``crc32c`` library (hardware-accelerated; it
   releases the GIL, so two threads check two halves at once) and compared with the stored one.

Wherever the fast path stops (a header that is not a clean v2 header, a CRC mismatch, a legacy
magic 0/1 entry, the tail of the file), the careful reader takes over from that byte, reports
the problems it finds exactly as it always does, and hands back after the next clean v2 batch.
The result is therefore the careful reader's, row for row and problem for problem; the test suite
checks this on every real segment and on the corruption corpus.

``verify=False`` leaves the CRCs unchecked (``crc_checked`` false, so ``crc_valid`` is unknown):
the scan then reads only the headers, a few pages per MiB, for triage of very large files.
Damage inside a payload is not detected in that mode; damage to headers still is.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import crc32c as _crc32c_lib
import numpy as np
from numba import njit

from workbench.formats.batch import (
    BATCH_COLUMNS,
    LOG_OVERHEAD,
    MAX_BATCH_BYTES,
    V2_HEADER_SIZE,
    Batch,
    _resolve_log,
    batch_columns,
    read_batches,
)
from workbench.formats.compression import CODEC_NAMES
from workbench.formats.problems import ProblemLog

#: How the workbench reaches this module's kernels (:func:`workbench.kernels.compiled_paths`).
COMPILED_PATH = {"name": "batch header scan", "tables": ("batches", "metadata")}

__all__ = ["HEADER_DTYPE", "SCAN_COLUMNS", "scan_batch_columns"]

#: The 61-byte v2 batch header as a packed big-endian NumPy record.
HEADER_DTYPE = np.dtype([
    ("base_offset", ">i8"), ("length", ">i4"), ("partition_leader_epoch", ">i4"), ("magic", "i1"),
    ("crc", ">u4"), ("attributes", ">i2"), ("last_offset_delta", ">i4"), ("base_timestamp", ">i8"),
    ("max_timestamp", ">i8"), ("producer_id", ">i8"), ("producer_epoch", ">i2"), ("base_sequence", ">i4"),
    ("record_count", ">i4"),
])
assert HEADER_DTYPE.itemsize == V2_HEADER_SIZE

#: Columns returned by :func:`scan_batch_columns`: the batch table without ``path``, plus
#: ``crc_checked`` (false where ``verify=False`` left the CRC unchecked).
SCAN_COLUMNS: tuple[str, ...] = tuple(c for c in BATCH_COLUMNS if c != "path") + ("crc_checked",)

_DTYPES = {
    "position": np.int64, "base_offset": np.int64, "last_offset": np.int64, "size": np.int64,
    "partition_leader_epoch": np.int32, "magic": np.int8, "crc": np.uint32, "crc_valid": np.bool_,
    "attributes": np.int16, "compression": object, "timestamp_type": object, "is_transactional": np.bool_,
    "is_control": np.bool_, "has_delete_horizon": np.bool_, "base_timestamp": np.int64,
    "max_timestamp": np.int64, "producer_id": np.int64, "producer_epoch": np.int16, "base_sequence": np.int32,
    "record_count": np.int32, "crc_checked": np.bool_,
}
_CODEC_NAMES = np.array([*CODEC_NAMES[:5], "unknown", "unknown", "unknown"], dtype=object)
_TS_NAMES = np.array(["CreateTime", "LogAppendTime"], dtype=object)
#: Threads checking CRCs (both ``os.preadv`` and ``crc32c`` release the GIL).
_CRC_THREADS = 2
#: Bytes read at a time while checking CRCs (fits in a core's L2 cache).
_CRC_CHUNK = 512 << 10
_LEN = struct.Struct(">i")


@njit(cache=True, nogil=True)
def _hop(buf: np.ndarray, base: int, pos: int, end: int, size: int, out_pos: np.ndarray, out_hdr: np.ndarray,
         n: int) -> tuple[int, int]:
    """Hop over clean v2 headers from file position ``pos``; record them from row ``n`` on.

    ``buf`` holds the file's bytes ``[base, base + len(buf))`` and ``size`` is the file's size.
    Each clean header's position goes to ``out_pos`` and its 61 bytes to ``out_hdr``. Stops at
    ``end`` (``-1``: none), when the outputs are full, at a header not wholly inside ``buf``, or at
    the first header that is not clean: magic other than 2, a length outside
    ``[49, MAX_BATCH_BYTES]``, a batch running past ``size``, or unknown codec bits.
    Returns ``(rows filled, stop position)``.
    """
    cap = out_pos.shape[0]
    top = base + buf.shape[0]
    while n < cap:
        if end >= 0 and pos >= end:
            break
        if pos + 61 > top:
            break
        i = pos - base
        if buf[i + 16] != 2:
            break
        length = (np.int64(buf[i + 8]) << 24) | (np.int64(buf[i + 9]) << 16) \
            | (np.int64(buf[i + 10]) << 8) | np.int64(buf[i + 11])
        if length >= 0x80000000 or length < 49 or length > MAX_BATCH_BYTES:
            break
        if pos + 12 + length > size or (buf[i + 22] & 7) > 4:
            break
        out_pos[n] = pos
        for k in range(61):
            out_hdr[n, k] = buf[i + k]
        n += 1
        pos += 12 + length
    return n, pos


def _crc_range(fd: int, size: int, starts: np.ndarray, ends: np.ndarray, chunk: int) -> np.ndarray:
    """CRC-32C of the file bytes ``[starts[i], ends[i])`` (ascending, disjoint), read in ``chunk``-byte pieces."""
    crc = _crc32c_lib.crc32c
    out = np.empty(len(starts), dtype=np.uint32)
    buf = bytearray(chunk)
    mv = memoryview(buf)
    lo = top = 0
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        if e - s > chunk:  # a batch larger than the buffer: read it alone
            whole = bytearray(e - s)
            os.preadv(fd, [whole], s)
            out[i] = crc(whole)
            continue
        if e > top or s < lo:
            lo = s
            top = s + os.preadv(fd, [mv[: min(chunk, size - s)]], s)
        out[i] = crc(mv[s - lo : e - lo])
    return out


def _check_crcs(fd: int, size: int, starts: np.ndarray, ends: np.ndarray,
                pool: ThreadPoolExecutor | None) -> np.ndarray:
    """CRC-32C of every batch; the file is read in 512 KiB pieces, two halves in two threads.

    Both ``os.preadv`` and ``crc32c`` release the GIL, so the halves run in parallel.
    """
    if pool is None or len(starts) < 64:
        return _crc_range(fd, size, starts, ends, _CRC_CHUNK)
    cut = int(np.searchsorted(ends, (int(starts[0]) + int(ends[-1])) // 2))
    cut = min(max(cut, 1), len(starts) - 1)
    first = pool.submit(_crc_range, fd, size, starts[:cut], ends[:cut], _CRC_CHUNK)
    second = _crc_range(fd, size, starts[cut:], ends[cut:], _CRC_CHUNK)
    return np.concatenate([first.result(), second])


def _fast_columns(positions: np.ndarray, hdr: np.ndarray, crc_valid: np.ndarray,
                  crc_checked: bool) -> dict[str, np.ndarray]:
    attrs = hdr["attributes"].astype(np.int16)
    base = hdr["base_offset"].astype(np.int64)
    return {
        "position": positions.astype(np.int64),
        "base_offset": base,
        "last_offset": base + hdr["last_offset_delta"].astype(np.int64),
        "size": hdr["length"].astype(np.int64) + LOG_OVERHEAD,
        "partition_leader_epoch": hdr["partition_leader_epoch"].astype(np.int32),
        "magic": hdr["magic"].astype(np.int8),
        "crc": hdr["crc"].astype(np.uint32),
        "crc_valid": crc_valid,
        "attributes": attrs,
        "compression": _CODEC_NAMES[attrs & 7],
        "timestamp_type": _TS_NAMES[(attrs >> 3) & 1],
        "is_transactional": (attrs & 0x10) != 0,
        "is_control": (attrs & 0x20) != 0,
        "has_delete_horizon": (attrs & 0x40) != 0,
        "base_timestamp": hdr["base_timestamp"].astype(np.int64),
        "max_timestamp": hdr["max_timestamp"].astype(np.int64),
        "producer_id": hdr["producer_id"].astype(np.int64),
        "producer_epoch": hdr["producer_epoch"].astype(np.int16),
        "base_sequence": hdr["base_sequence"].astype(np.int32),
        "record_count": hdr["record_count"].astype(np.int32),
        "crc_checked": np.full(len(positions), crc_checked, dtype=np.bool_),
    }


def _careful_columns(batches: list[Batch]) -> dict[str, np.ndarray]:
    cols = batch_columns(batches)
    out = {name: np.array(cols[name], dtype=_DTYPES[name]) for name in SCAN_COLUMNS if name != "crc_checked"}
    out["crc_checked"] = np.ones(len(batches), dtype=np.bool_)
    return out


def _is_clean(b: Batch) -> bool:
    return b.magic == 2 and b.crc_valid and (b.attributes & 7) <= 4


class _Hopper:
    """Finds clean v2 headers with positioned reads, touching only the bytes of the headers.

    Where batches are large, a Python loop reads each 61-byte header with ``os.pread`` (about a
    microsecond per batch). Where they are small (under 4 KiB), windows of up to 1 MiB are read
    and the compiled :func:`_hop` walks them.
    """

    WINDOW = 1 << 20
    SMALL_BATCH = 4096

    def __init__(self, fd: int, size: int) -> None:
        self.fd = fd
        self.size = size
        self.win = bytearray(self.WINDOW)
        self.arr = np.frombuffer(self.win, dtype=np.uint8)

    def hop(self, pos: int, end: int, cap: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Up to ``cap`` clean headers from ``pos``: (positions, header bytes (n, 61), stop position)."""
        fd, size, pread, unpack = self.fd, self.size, os.pread, _LEN.unpack_from
        pieces: list[tuple[np.ndarray, np.ndarray]] = []
        heads: list[bytes] = []
        where: list[int] = []
        count = 0
        small = False
        while count < cap and not 0 <= end <= pos:
            if small:
                want = min(self.WINDOW, size - pos)
                got = os.preadv(fd, [memoryview(self.win)[:want]], pos)
                room = min(cap - count, got // 49 + 1)
                out_pos = np.empty(room, dtype=np.int64)
                out_hdr = np.empty((room, V2_HEADER_SIZE), dtype=np.uint8)
                m, stop = _hop(self.arr[:got], pos, pos, end, size, out_pos, out_hdr, 0)
                if m:
                    pieces.append((out_pos[:m], out_hdr[:m]))
                    count += m
                    small = stop - pos < m * self.SMALL_BATCH  # still small batches on average
                if m == 0 or stop + V2_HEADER_SIZE <= pos + got or pos + got >= size:
                    pos = stop
                    break  # an unclean header (or the end): the caller takes over
                pos = stop
                continue
            if pos + V2_HEADER_SIZE > size:
                break
            h = pread(fd, V2_HEADER_SIZE, pos)
            length = unpack(h, 8)[0]
            if (len(h) < V2_HEADER_SIZE or h[16] != 2 or length < 49 or length > MAX_BATCH_BYTES
                    or pos + LOG_OVERHEAD + length > size or h[22] & 7 > 4):
                break
            heads.append(h)
            where.append(pos)
            count += 1
            pos += LOG_OVERHEAD + length
            if length < self.SMALL_BATCH:
                small = True
                if heads:
                    pieces.append(self._flush(where, heads))
                    heads, where = [], []
        if heads:
            pieces.append(self._flush(where, heads))
        if not pieces:
            return np.empty(0, dtype=np.int64), np.empty((0, V2_HEADER_SIZE), dtype=np.uint8), pos
        if len(pieces) == 1:
            return pieces[0][0], pieces[0][1], pos
        return np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]), pos

    @staticmethod
    def _flush(where: list[int], heads: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        raw = np.frombuffer(b"".join(heads), dtype=np.uint8).reshape(len(heads), V2_HEADER_SIZE)
        return np.array(where, dtype=np.int64), raw


def _pieces(path: Path, display: str, log: ProblemLog, strict: bool, start: int, end: int | None,
            verify: bool, chunk: int) -> Iterator[dict[str, np.ndarray]]:
    size = path.stat().st_size
    if size == 0:
        return
    with open(path, "rb") as f:
        fd = f.fileno()
        src = _Hopper(fd, size)
        pool = ThreadPoolExecutor(_CRC_THREADS - 1) if verify and (os.cpu_count() or 1) > 1 else None
        try:
            pos = start
            stop_at = -1 if end is None else end
            while pos < size and (end is None or pos < end):
                positions, raw, stop = src.hop(pos, stop_at, chunk)
                n = len(positions)
                if n:
                    hdr = raw.view(HEADER_DTYPE)[:, 0]
                    sizes = hdr["length"].astype(np.int64) + LOG_OVERHEAD
                    if verify:
                        computed = _check_crcs(fd, size, positions + 21, positions + sizes, pool)
                        ok = computed == hdr["crc"]
                        bad = np.flatnonzero(~ok)
                        if len(bad):  # the careful reader judges the batch from here
                            k = int(bad[0])
                            if k:
                                yield _fast_columns(positions[:k], hdr[:k], ok[:k], True)
                            pos = int(positions[k])
                            stop = -1
                        else:
                            yield _fast_columns(positions, hdr, ok, True)
                    else:
                        yield _fast_columns(positions, hdr, np.zeros(n, dtype=np.bool_), False)
                    if stop >= 0:
                        pos = stop
                        if n == chunk:  # a full piece: hop on
                            continue
                if end is not None and pos >= end or pos >= size:
                    break
                # the careful reader, from the byte where hopping stopped, to the next clean batch
                careful: list[Batch] = []
                f.seek(pos)
                resume = None
                for b in read_batches(f, display, problems=log, strict=strict, start=pos, end=end):
                    careful.append(b)
                    if _is_clean(b):
                        resume = b.position + b.size
                        break
                if careful:
                    yield _careful_columns(careful)
                if resume is None:
                    break
                pos = resume
        finally:
            if pool is not None:
                pool.shutdown()


def scan_batch_columns(
    path: str | os.PathLike[str],
    display_path: str | None = None,
    *,
    problems: ProblemLog | None = None,
    strict: bool = False,
    start: int = 0,
    end: int | None = None,
    verify: bool = True,
    chunk: int = 1 << 16,
) -> Iterator[dict[str, np.ndarray]]:
    """The batch table of a local segment file, as column arrays, in pieces of at most ``chunk`` rows.

    As ``batch_columns(read_batches(open(path, "rb"), display_path, ...))`` without the ``path`` column
    and with the same problems, but compiled where the file is intact (see the module docstring).
    ``verify=False`` skips the CRC-32C check (``crc_checked`` and ``crc_valid`` false for hopped
    batches). Each piece holds one array per :data:`SCAN_COLUMNS` name.

    >>> import tempfile
    >>> from workbench.formats.batch import encode_batch
    >>> seg = encode_batch([(0, 1, b"a", b"1")], base_offset=0) + encode_batch([(1, 2, b"b", b"2")], base_offset=1)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = Path(d, "00000000000000000000.log")
    ...     _ = p.write_bytes(seg + bytes(100))
    ...     log = ProblemLog(str(p))
    ...     pieces = list(scan_batch_columns(p, problems=log))
    >>> [int(x) for piece in pieces for x in piece["position"]], [(q.position, q.kind) for q in log.problems]
    ([0, 70], [(140, 'zero_fill')])
    """
    p = Path(path)
    display = str(path) if display_path is None else display_path
    log = _resolve_log(problems, display, strict)
    if not hasattr(os, "preadv"):  # no positioned reads here (Windows): the careful reader, in pieces
        with open(p, "rb") as f:
            piece: list[Batch] = []
            for b in read_batches(f, display, problems=log, strict=strict, start=start, end=end):
                piece.append(b)
                if len(piece) == chunk:
                    yield _careful_columns(piece)
                    piece = []
            if piece:
                yield _careful_columns(piece)
        return
    yield from _pieces(p, display, log, strict, start, end, verify, max(1, int(chunk)))


def concat_columns(pieces: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Join pieces from :func:`scan_batch_columns` into one array per column."""
    if not pieces:
        return {name: np.array([], dtype=_DTYPES[name]) for name in SCAN_COLUMNS}
    return {name: np.concatenate([p[name] for p in pieces]) for name in SCAN_COLUMNS}


def as_lists(cols: dict[str, np.ndarray], display_path: str) -> dict[str, list[Any]]:
    """Turn scanned columns into :func:`~workbench.formats.batch.batch_columns` form (lists, ``path`` included)."""
    n = len(cols["position"])
    out: dict[str, list[Any]] = {}
    for name in BATCH_COLUMNS:
        out[name] = [display_path] * n if name == "path" else cols[name].tolist()
    return out
