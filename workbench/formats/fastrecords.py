"""The records of a segment as one Arrow table, decoded by a compiled (numba) columnar loop.

:meth:`Batch.records <workbench.formats.batch.Batch.records>` is the careful record reader: one
:class:`~workbench.formats.batch.Record` per record, built by a Python loop.
:func:`records_table` gives the same rows as Arrow columns, many times faster, because on clean
v2 batches none of the per-record Python objects are needed:

1. consecutive v2 batches are gathered into one buffer (uncompressed payloads copied, compressed
   ones decompressed by :func:`~workbench.formats.compression.decompress` exactly as the careful
   reader does), up to 16 MiB or 1024 batches at a time (one compiled call per run, so files of
   one-record batches are not dominated by call overhead, and few Batch objects stay alive);
2. a compiled pass walks every record of every gathered batch, checks it as strictly as the
   careful reader does, and counts records, payload bytes and headers per batch;
3. a second compiled pass writes offsets, timestamps, sizes and the key, value and header bytes
   into exactly-sized arrays, which become Arrow arrays without another copy.

Whatever the compiled pass finds irregular (a varint that does not end or is too long, a length
that does not fit, a negative length other than -1, an impossible header count, fields that do
not end at the record's length, fewer or more records than the header declares, bytes after the
last record, a header key that is not valid UTF-8), and every batch it does not handle (legacy
magic 0/1 entries, unknown codecs, negative record counts, streams that do not decompress), is
decoded by the careful reader instead: its rows and its problems are therefore the careful
reader's, word for word, and a strict :class:`~workbench.formats.problems.ProblemLog` raises at
the same first problem. Problems are reported in the order the careful reader would report them
when one log is shared by :func:`~workbench.formats.batch.read_batches` and the record decoder.

Column types (:data:`RECORDS_ARROW_SCHEMA`): ``attributes`` is the record attributes byte as a
signed int8 (Java's ``byte``); an offset or timestamp outside the int64 range, which the careful
reader can produce only from a malformed 10-byte varint or an absurd base offset, is stored
modulo 2**64 (two's complement), as Java's long arithmetic would wrap it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic

from workbench.formats.batch import V2_HEADER_SIZE, Batch, Record, _resolve_log, read_batches
from workbench.formats.compression import CODEC_NAMES, CodecError, decompress
from workbench.formats.problems import ProblemLog

#: How the workbench reaches this module's kernels (:func:`workbench.kernels.compiled_paths`).
COMPILED_PATH = {"name": "record decoder", "tables": ("records",)}

__all__ = ["RECORDS_ARROW_SCHEMA", "HEADERS_TYPE", "records_table", "records_table_from_file"]

HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.large_binary())]))
"""Arrow type of the ``headers`` column: a list of (key, value) structs, empty when none."""

RECORDS_ARROW_SCHEMA = pa.schema([
    pa.field("batch_position", pa.int64()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.int64()),
    pa.field("attributes", pa.int8()),
    pa.field("size", pa.int32()),
    pa.field("key", pa.large_binary()),
    pa.field("value", pa.large_binary()),
    pa.field("headers", HEADERS_TYPE),
])
"""Schema of :func:`records_table`: one row per record, in file order.

``batch_position`` is the byte position of the record's batch, ``offset``/``timestamp``/
``attributes``/``size``/``key``/``value``/``headers`` are the :class:`~workbench.formats.batch.Record`
fields (``key``/``value`` null when absent, header values null when absent).
"""

_GROUP_BYTES = 16 << 20  # payload bytes gathered before the compiled passes run
_GROUP_BATCHES = 1024  # batches gathered at most (more live Batch objects make Python's GC costly)
_SMALL_CHUNK = 4 << 20  # chunks smaller than this on average are combined at the end
_MIN_RECORD = 7  # length, attributes, timestamp delta, offset delta, key, value, header count
_STATS = 6  # per batch: records, key bytes, value bytes, headers, header key bytes, header value bytes
# columns of the per-batch metadata handed to the compiled passes
_M_START, _M_END, _M_POSITION, _M_BASE_OFFSET, _M_BASE_TS, _M_MAX_TS, _M_ATTRS, _M_COUNT = range(8)
_TWO63 = 1 << 63
_MASK64 = (1 << 64) - 1


# --------------------------------------------------------------------------------------------
# compiled kernels


@njit(cache=True, nogil=True)
def _uvarint(buf: np.ndarray, pos: int, end: int, max_bytes: int) -> tuple[np.uint64, int]:
    """Unsigned LEB128 varint at ``buf[pos]`` ending before ``end``: ``(value, next position)``.

    The position is -1 when the varint runs past ``end``, is longer than ``max_bytes``, or (a
    10-byte varlong) carries bits beyond 64 that only Python's unbounded integers would keep.
    """
    result = np.uint64(0)
    shift = np.uint64(0)
    for i in range(max_bytes):
        if pos >= end:
            return result, -1
        b = buf[pos]
        pos += 1
        if i == 9 and (b & 0x7E) != 0:
            return result, -1
        result |= np.uint64(b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += np.uint64(7)
    return result, -1


@njit(cache=True, nogil=True)
def _zigzag(u: np.uint64) -> int:
    return np.int64(u >> np.uint64(1)) ^ -np.int64(u & np.uint64(1))


@njit(cache=True, nogil=True)
def _utf8_ok(buf: np.ndarray, i: int, end: int) -> bool:
    """Is ``buf[i:end]`` well-formed UTF-8 (exactly what Python's strict decoder accepts)?"""
    while i < end:
        c = buf[i]
        if c < 0x80:
            i += 1
        elif c < 0xC2:
            return False
        elif c < 0xE0:
            if i + 1 >= end or (buf[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
        elif c < 0xF0:
            if i + 2 >= end:
                return False
            c1 = buf[i + 1]
            lo = 0xA0 if c == 0xE0 else 0x80
            hi = 0x9F if c == 0xED else 0xBF
            if c1 < lo or c1 > hi or (buf[i + 2] & 0xC0) != 0x80:
                return False
            i += 3
        elif c < 0xF5:
            if i + 3 >= end:
                return False
            c1 = buf[i + 1]
            lo = 0x90 if c == 0xF0 else 0x80
            hi = 0x8F if c == 0xF4 else 0xBF
            if c1 < lo or c1 > hi or (buf[i + 2] & 0xC0) != 0x80 or (buf[i + 3] & 0xC0) != 0x80:
                return False
            i += 4
        else:
            return False
    return True


@njit(cache=True, nogil=True)
def _scan_batch(buf: np.ndarray, start: int, end: int, count: int, stats: np.ndarray) -> bool:
    """Check the records of one batch (``buf[start:end]``, ``count`` declared); fill ``stats``.

    Returns False at the first thing the careful reader would report (or a header key that is
    not valid UTF-8, which it would decode with replacement characters).
    """
    if count < 0 or count * _MIN_RECORD > end - start:
        return False
    pos = start
    nk = 0
    nv = 0
    nh = 0
    nhk = 0
    nhv = 0
    for _ in range(count):
        u, pos = _uvarint(buf, pos, end, 5)
        if pos < 0:
            return False
        length = _zigzag(u)
        if length < 1 or length > end - pos:
            return False
        rend = pos + length
        pos += 1  # attributes
        u, pos = _uvarint(buf, pos, rend, 10)  # timestamp delta
        if pos < 0:
            return False
        u, pos = _uvarint(buf, pos, rend, 5)  # offset delta
        if pos < 0:
            return False
        u, pos = _uvarint(buf, pos, rend, 5)  # key length
        if pos < 0:
            return False
        kl = _zigzag(u)
        if kl >= 0:
            if kl > rend - pos:
                return False
            pos += kl
            nk += kl
        elif kl != -1:
            return False
        u, pos = _uvarint(buf, pos, rend, 5)  # value length
        if pos < 0:
            return False
        vl = _zigzag(u)
        if vl >= 0:
            if vl > rend - pos:
                return False
            pos += vl
            nv += vl
        elif vl != -1:
            return False
        u, pos = _uvarint(buf, pos, rend, 5)  # header count
        if pos < 0:
            return False
        hc = _zigzag(u)
        if hc < 0 or hc > rend - pos:
            return False
        for _h in range(hc):
            u, pos = _uvarint(buf, pos, rend, 5)
            if pos < 0:
                return False
            hkl = _zigzag(u)
            if hkl < 0 or hkl > rend - pos or not _utf8_ok(buf, pos, pos + hkl):
                return False
            pos += hkl
            nhk += hkl
            u, pos = _uvarint(buf, pos, rend, 5)
            if pos < 0:
                return False
            hvl = _zigzag(u)
            if hvl >= 0:
                if hvl > rend - pos:
                    return False
                pos += hvl
                nhv += hvl
            elif hvl != -1:
                return False
        nh += hc
        if pos != rend:
            return False
    if pos != end:
        return False
    stats[0] = count
    stats[1] = nk
    stats[2] = nv
    stats[3] = nh
    stats[4] = nhk
    stats[5] = nhv
    return True


@njit(cache=True, nogil=True)
def _scan(buf: np.ndarray, meta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First pass over many batches (``meta``: one ``_M_*`` row each): ``(ok, stats)`` per batch.

    Stats are zero where not ok.
    """
    nb = meta.shape[0]
    ok = np.zeros(nb, np.bool_)
    stats = np.zeros((nb, _STATS), np.int64)
    for j in range(nb):
        ok[j] = _scan_batch(buf, meta[j, _M_START], meta[j, _M_END], meta[j, _M_COUNT], stats[j])
        if not ok[j]:
            stats[j, :] = 0
    return ok, stats


@intrinsic
def _copy(typingctx: Any, src: Any, src_pos: Any, n: Any, dst: Any, dst_pos: Any) -> Any:
    """``dst[dst_pos:dst_pos + n] = src[src_pos:src_pos + n]`` as one ``memcpy`` (uint8 arrays, no checks)."""
    sig = types.void(src, types.int64, types.int64, dst, types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        s, spos, cnt, d, dpos = args
        sary = context.make_array(signature.args[0])(context, builder, s)
        dary = context.make_array(signature.args[3])(context, builder, d)
        cgutils.raw_memcpy(builder, builder.gep(dary.data, [dpos]), builder.gep(sary.data, [spos]), cnt, 1)
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def _fill(buf: np.ndarray, meta: np.ndarray, ok: np.ndarray,
          bpos: np.ndarray, offsets: np.ndarray, timestamps: np.ndarray, attrs: np.ndarray, sizes: np.ndarray,
          koff: np.ndarray, kvalid: np.ndarray, kdata: np.ndarray,
          voff: np.ndarray, vvalid: np.ndarray, vdata: np.ndarray,
          hoff: np.ndarray, hkoff: np.ndarray, hkdata: np.ndarray,
          hvoff: np.ndarray, hvvalid: np.ndarray, hvdata: np.ndarray) -> None:
    """Second pass: decode the records of the ``ok`` batches (already checked) into the arrays."""
    r = 0
    h = 0
    koff[0] = 0
    voff[0] = 0
    hoff[0] = 0
    hkoff[0] = 0
    hvoff[0] = 0
    kc = 0
    vc = 0
    hkc = 0
    hvc = 0
    for j in range(meta.shape[0]):
        if not ok[j]:
            continue
        pos = meta[j, _M_START]
        end = meta[j, _M_END]
        base_offset = meta[j, _M_BASE_OFFSET]
        base_ts = meta[j, _M_BASE_TS]
        lat = (meta[j, _M_ATTRS] & 0x08) != 0
        lat_ts = meta[j, _M_MAX_TS]
        bp = meta[j, _M_POSITION]
        while pos < end:
            rstart = pos
            u, pos = _uvarint(buf, pos, end, 5)
            rend = pos + _zigzag(u)
            attrs[r] = np.int8(buf[pos])
            pos += 1
            u, pos = _uvarint(buf, pos, rend, 10)
            timestamps[r] = lat_ts if lat else base_ts + _zigzag(u)
            u, pos = _uvarint(buf, pos, rend, 5)
            offsets[r] = base_offset + _zigzag(u)
            bpos[r] = bp
            sizes[r] = rend - rstart
            u, pos = _uvarint(buf, pos, rend, 5)
            kl = _zigzag(u)
            if kl >= 0:
                _copy(buf, pos, kl, kdata, kc)
                kc += kl
                pos += kl
                kvalid[r] = 1
            else:
                kvalid[r] = 0
            koff[r + 1] = kc
            u, pos = _uvarint(buf, pos, rend, 5)
            vl = _zigzag(u)
            if vl >= 0:
                _copy(buf, pos, vl, vdata, vc)
                vc += vl
                pos += vl
                vvalid[r] = 1
            else:
                vvalid[r] = 0
            voff[r + 1] = vc
            u, pos = _uvarint(buf, pos, rend, 5)
            hc = _zigzag(u)
            for _h in range(hc):
                u, pos = _uvarint(buf, pos, rend, 5)
                hkl = _zigzag(u)
                _copy(buf, pos, hkl, hkdata, hkc)
                hkc += hkl
                pos += hkl
                hkoff[h + 1] = hkc
                u, pos = _uvarint(buf, pos, rend, 5)
                hvl = _zigzag(u)
                if hvl >= 0:
                    _copy(buf, pos, hvl, hvdata, hvc)
                    hvc += hvl
                    pos += hvl
                    hvvalid[h] = 1
                else:
                    hvvalid[h] = 0
                hvoff[h + 1] = hvc
                h += 1
            r += 1
            hoff[r] = h


# --------------------------------------------------------------------------------------------
# Arrow assembly


def _validity(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    nulls = int(valid.size - np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def _binary(offsets: np.ndarray, valid: np.ndarray, data: np.ndarray) -> pa.Array:
    bitmap, nulls = _validity(valid)
    return pa.Array.from_buffers(pa.large_binary(), valid.size,
                                 [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)


def _wrap64(v: int) -> int:
    return v if -_TWO63 <= v < _TWO63 else ((v + _TWO63) & _MASK64) - _TWO63


def _python_chunk(positions: list[int], records: list[Record]) -> pa.RecordBatch:
    """Rows of records decoded by the careful reader (``positions``: each record's batch)."""
    wrap = _wrap64
    columns = [
        pa.array(positions, pa.int64()),
        pa.array([wrap(r.offset) for r in records], pa.int64()),
        pa.array([wrap(r.timestamp) for r in records], pa.int64()),
        pa.array([a - 256 if a > 127 else a for a in (r.attributes & 0xFF for r in records)], pa.int8()),
        pa.array([r.size for r in records], pa.int32()),
        pa.array([r.key for r in records], pa.large_binary()),
        pa.array([r.value for r in records], pa.large_binary()),
        pa.array([r.headers for r in records], HEADERS_TYPE),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=RECORDS_ARROW_SCHEMA)


class _Group:
    """Batches gathered for one run of the compiled passes, in file order.

    Records bytes of the batches the compiled passes take are copied back to back into one
    staging buffer that is reused from run to run; their header fields go to one row of ``meta``
    each. Decoded rows go to ``out`` and the careful reader's problems to ``problems``.
    """

    def __init__(self, problems: ProblemLog | None, out: list[pa.RecordBatch]) -> None:
        self.problems = problems
        self.out = out
        self.stage = np.empty(0, np.uint8)
        self.stage_mv = memoryview(self.stage)
        self._reset()

    def _reset(self) -> None:
        self.used = 0
        self.order: list[Batch] = []
        self.meta = array("q")  # per compiled batch, the 8 _M_* columns
        self.fallback: list[int] = []  # indices in ``order`` of the batches left to the careful reader

    def __len__(self) -> int:
        return len(self.order)

    def add(self, b: Batch) -> None:
        """Gather ``b``: its (decompressed) records bytes for the compiled passes, or mark it for Python.

        Runs the compiled passes when the group is full.
        """
        data = b.data
        attrs = b.attributes
        codec = attrs & 7
        if b.magic != 2 or b._cache is not None or data is None or b.record_count < 0 or codec > 4:
            self._later(b)
            return
        if codec == 0:
            payload: Any = data[V2_HEADER_SIZE:]
        else:
            try:
                payload = decompress(CODEC_NAMES[codec], data[V2_HEADER_SIZE:], magic=2)
            except CodecError:  # the careful reader reports it
                self._later(b)
                return
        start = self.used
        end = start + len(payload)
        if end > len(self.stage):
            if self.order:
                self.flush()
            start, end = 0, len(payload)
            if end > len(self.stage):  # lazily allocated: pages cost only once written
                self.stage = np.empty(max(end, _GROUP_BYTES), np.uint8)
                self.stage_mv = memoryview(self.stage)
        self.stage_mv[start:end] = payload
        self.used = end
        self.order.append(b)
        self.meta.extend((start, end, b.position, b.base_offset, b.base_timestamp, b.max_timestamp, attrs,
                          b.record_count))
        if end >= _GROUP_BYTES or len(self.order) >= _GROUP_BATCHES:
            self.flush()

    def _later(self, b: Batch) -> None:
        self.fallback.append(len(self.order))
        self.order.append(b)
        if len(self.order) >= _GROUP_BATCHES:
            self.flush()

    def _kernel_chunk(self) -> tuple[pa.RecordBatch | None, np.ndarray, np.ndarray]:
        """Run both compiled passes: (rows of the clean batches, ok per meta row, first row per meta row)."""
        nb = len(self.meta) // 8
        if nb == 0:
            return None, np.zeros(0, np.bool_), np.zeros(1, np.int64)
        buf = self.stage[: self.used]
        meta = np.array(self.meta, dtype=np.int64).reshape(nb, 8)
        ok, stats = _scan(buf, meta)
        n, nk, nv, nh, nhk, nhv = (int(x) for x in stats.sum(axis=0))
        first = np.zeros(nb + 1, np.int64)
        np.cumsum(stats[:, 0], out=first[1:])
        bpos = np.empty(n, np.int64)
        offsets = np.empty(n, np.int64)
        timestamps = np.empty(n, np.int64)
        attrs = np.empty(n, np.int8)
        sizes = np.empty(n, np.int32)
        koff = np.empty(n + 1, np.int64)
        kvalid = np.empty(n, np.uint8)
        kdata = np.empty(nk, np.uint8)
        voff = np.empty(n + 1, np.int64)
        vvalid = np.empty(n, np.uint8)
        vdata = np.empty(nv, np.uint8)
        hoff = np.empty(n + 1, np.int32)
        hkoff = np.empty(nh + 1, np.int32)
        hkdata = np.empty(nhk, np.uint8)
        hvoff = np.empty(nh + 1, np.int64)
        hvvalid = np.empty(nh, np.uint8)
        hvdata = np.empty(nhv, np.uint8)
        _fill(buf, meta, ok, bpos, offsets, timestamps, attrs, sizes, koff, kvalid, kdata, voff, vvalid, vdata,
              hoff, hkoff, hkdata, hvoff, hvvalid, hvdata)
        hkeys = pa.Array.from_buffers(pa.string(), nh, [None, pa.py_buffer(hkoff), pa.py_buffer(hkdata)])
        structs = pa.StructArray.from_arrays([hkeys, _binary(hvoff, hvvalid, hvdata)],
                                             fields=list(HEADERS_TYPE.value_type))
        headers = pa.Array.from_buffers(HEADERS_TYPE, n, [None, pa.py_buffer(hoff)], children=[structs])
        columns = [pa.array(bpos), pa.array(offsets), pa.array(timestamps), pa.array(attrs), pa.array(sizes),
                   _binary(koff, kvalid, kdata), _binary(voff, vvalid, vdata), headers]
        return pa.RecordBatch.from_arrays(columns, schema=RECORDS_ARROW_SCHEMA), ok, first

    def flush(self) -> None:
        """Decode the gathered batches into ``out`` (in order); irregular ones by the careful reader."""
        if not self.order:
            return
        chunk, ok, first = self._kernel_chunk()
        out = self.out
        if not self.fallback and ok.all():
            if chunk is not None and chunk.num_rows:
                out.append(chunk)
            self._reset()
            return
        problems = self.problems
        okl = ok.tolist()
        firstl = first.tolist()
        fallback = set(self.fallback)
        k = 0  # next meta row
        lo = hi = 0  # pending slice of ``chunk``
        py_pos: list[int] = []
        py_recs: list[Record] = []
        for i, b in enumerate(self.order):
            if i not in fallback:
                k += 1
                if okl[k - 1]:
                    if py_recs:
                        out.append(_python_chunk(py_pos, py_recs))
                        py_pos, py_recs = [], []
                    hi = firstl[k]
                    continue
            if hi > lo and chunk is not None:
                out.append(chunk.slice(lo, hi - lo))
            lo = hi
            recs = b.records(problems)
            if recs:
                py_pos.extend([b.position] * len(recs))
                py_recs.extend(recs)
        if py_recs:
            out.append(_python_chunk(py_pos, py_recs))
        if hi > lo and chunk is not None:
            out.append(chunk.slice(lo, hi - lo))
        self._reset()


# --------------------------------------------------------------------------------------------
# public API


def records_table(batches: Iterable[Batch], problems: ProblemLog | None = None) -> pa.Table:
    """Decode the records of ``batches`` into one table (:data:`RECORDS_ARROW_SCHEMA`), in file order.

    Equals ``[b.records(problems) for b in batches]`` as rows, with the same problems in the same order
    (a strict log raises at the same first problem); clean v2 batches go through compiled loops.
    ``batches`` is consumed lazily, a bounded amount at a time.

    >>> import io
    >>> from workbench.formats.batch import encode_batch, read_batches
    >>> data = encode_batch([(7, 5, None, b"x", [("h", b"1")])], base_offset=7, compression="zstd")
    >>> t = records_table(read_batches(io.BytesIO(data)))
    >>> t.select(["offset", "timestamp", "key", "value", "headers"]).to_pylist()
    [{'offset': 7, 'timestamp': 5, 'key': None, 'value': b'x', 'headers': [{'key': 'h', 'value': b'1'}]}]
    """
    chunks: list[pa.RecordBatch] = []
    group = _Group(problems, chunks)
    it: Iterator[Batch] = iter(batches)
    plist = problems.problems if problems is not None else None
    while True:
        before = len(plist) if plist is not None else 0
        done = False
        try:
            b = next(it)
        except StopIteration:
            done = True
        except Exception:
            group.flush()  # an earlier batch's problem comes first (strict logs)
            raise
        if plist is not None and len(plist) > before and len(group):
            # problems met while reading the next batch come after the records of the earlier ones
            added = problems.take_since(before)  # type: ignore[union-attr]
            group.flush()
            for p in added:
                problems.report(p.position, p.kind, p.detail)  # type: ignore[union-attr]
        if done:
            break
        group.add(b)
    group.flush()
    table = pa.Table.from_batches(chunks, schema=RECORDS_ARROW_SCHEMA)
    if len(chunks) > 1 and table.nbytes < _SMALL_CHUNK * len(chunks):
        table = table.combine_chunks()  # e.g. a file of one-record batches: not thousands of tiny chunks
    return table


def records_table_from_file(path: str | Path, problems: ProblemLog | None = None, strict: bool = False) -> pa.Table:
    """Read a ``.log`` segment (or snapshot) with :func:`read_batches` and decode all its records.
    Batch and record problems go to ``problems`` in the careful reader's order.
    """
    name = str(path)
    log = _resolve_log(problems, name, strict)
    with open(path, "rb") as f:
        return records_table(read_batches(f, name, problems=log), log)
