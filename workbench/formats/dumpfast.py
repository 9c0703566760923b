"""Compiled text for dumps: batch and record lines of ``kafka-dump-log`` and JSON lines, written
straight from the file's bytes into an output buffer (numba).

The Python writers (:func:`workbench.formats.dumptext_write.dump_lines`,
:func:`workbench.formats.dumpjson.record_object`) build one string per line: about a
microsecond or more per record. Here one compiled call per run of clean v2 batches walks every
record once and writes its text, so a segment of ten million records is formatted in seconds
and the output streams through one reused buffer (memory flat in the file's size).

A run is described by a ``meta`` table (one row per batch, columns ``M_*``) over two byte
buffers: the window of the file the batches were read into, and a staging buffer holding the
decompressed records of compressed batches. Every batch is first checked record by record by
:func:`workbench.formats.fastrecords._scan_batch`, exactly as strictly as the careful reader
(:meth:`Batch.records <workbench.formats.batch.Batch.records>`) decodes it; a batch that fails
the check (or holds a key, value or header key that is not valid UTF-8, or a text that does not
fit the output buffer) is handed back to the caller, who writes it with the Python writer. So
the text is the Python writer's, byte for byte (the tests compare both on every real and
damaged file).

Payload texts that need a decoder (KRaft metadata JSON, coordinator records, ...) are computed
by Python once per distinct key and value (:func:`locate_run` gives each record's position and
a hash of its bytes; equal hashes are checked byte for byte by :func:`same_as_first`), and the
kernels copy the text of each record from a text table.

Numbers are printed as Java prints ``long``/``int`` values; ``OptionalLong`` and booleans as
Java's ``toString``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from workbench.formats.fastrecords import _copy, _scan_batch, _utf8_ok, _uvarint, _zigzag

#: How the workbench reaches this module's kernels (:func:`workbench.kernels.compiled_paths`).
COMPILED_PATH = {"name": "dump writers",
                 "unreached": "only `workbench dump` writes dump text; the dump tests compare it with Kafka's"}

__all__ = [
    "M_COLUMNS",
    "kafka_text_run",
    "jsonl_run",
    "locate_run",
    "same_as_first",
]

# meta columns (one row per batch of a run)
M_REC_START, M_REC_END, M_SRC, M_POSITION, M_BASE_OFFSET, M_LOD, M_BASE_TS, M_MAX_TS, M_ATTRS, M_COUNT = range(10)
M_PID, M_PEPOCH, M_BSEQ, M_PLE, M_SIZE, M_CRC, M_CRC_VALID, M_FIRST_RECORD, M_MAGIC = range(10, 19)
M_COLUMNS = 19

# status of a run
DONE, FLUSH, FALLBACK = 0, 1, 2

# text modes
TEXT_NONE, TEXT_TABLE = 0, 1

_LIT_LIST = [
    b"baseOffset: ",  # 0
    b" lastOffset: ",  # 1
    b" count: ",  # 2
    b" baseSequence: ",  # 3
    b" lastSequence: ",  # 4
    b" producerId: ",  # 5
    b" producerEpoch: ",  # 6
    b" partitionLeaderEpoch: ",  # 7
    b" isTransactional: ",  # 8
    b" isControl: ",  # 9
    b" deleteHorizonMs: OptionalLong[",  # 10
    b" deleteHorizonMs: OptionalLong.empty",  # 11
    b" position: ",  # 12
    b" CreateTime: ",  # 13
    b" LogAppendTime: ",  # 14
    b" size: ",  # 15
    b" magic: ",  # 16
    b" compresscodec: ",  # 17
    b" crc: ",  # 18
    b" isvalid: ",  # 19
    b"true",  # 20
    b"false",  # 21
    b"none",  # 22
    b"gzip",  # 23
    b"snappy",  # 24
    b"lz4",  # 25
    b"zstd",  # 26
    b"| offset: ",  # 27
    b" keySize: ",  # 28
    b" valueSize: ",  # 29
    b" sequence: ",  # 30
    b" headerKeys: [",  # 31
    b" key: ",  # 32
    b" payload: ",  # 33
    b"| key: ",  # 34
    b"| payload: ",  # 35
    b'{"kind": "batch", "path": ',  # 36
    b', "position": ',  # 37
    b', "baseOffset": ',  # 38
    b', "lastOffset": ',  # 39
    b', "count": ',  # 40
    b', "size": ',  # 41
    b', "magic": ',  # 42
    b', "crc": ',  # 43
    b', "isValid": ',  # 44
    b', "compression": "',  # 45
    b'", "timestampType": "',  # 46
    b"CreateTime",  # 47
    b"LogAppendTime",  # 48
    b'", "baseTimestamp": ',  # 49
    b', "maxTimestamp": ',  # 50
    b', "partitionLeaderEpoch": ',  # 51
    b', "producerId": ',  # 52
    b', "producerEpoch": ',  # 53
    b', "baseSequence": ',  # 54
    b', "isTransactional": ',  # 55
    b', "isControl": ',  # 56
    b', "deleteHorizon": ',  # 57
    b'{"kind": "record", "offset": ',  # 58
    b', "timestamp": ',  # 59
    b', "keySize": ',  # 60
    b', "valueSize": ',  # 61
    b', "headerKeys": [',  # 62
    b', "payload": ',  # 63
    b', "key": ',  # 64
    b', "value": ',  # 65
    b', "headers": [',  # 66
    b"null",  # 67
]
_LITS = np.frombuffer(b"".join(_LIT_LIST), dtype=np.uint8).copy()
_LOFF = np.zeros(len(_LIT_LIST) + 1, dtype=np.int64)
np.cumsum([len(x) for x in _LIT_LIST], out=_LOFF[1:])
_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8).copy()
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8).copy()


# --------------------------------------------------------------------------------------------
# primitives


@njit(cache=True, nogil=True, inline="always")
def _lit(out: np.ndarray, o: int, k: int) -> int:
    a = _LOFF[k]
    n = _LOFF[k + 1] - a
    _copy(_LITS, a, n, out, o)
    return o + n


@njit(cache=True, nogil=True)
def _int(out: np.ndarray, o: int, v: int) -> int:
    """Decimal ``v`` (a signed 64-bit value) at ``out[o]``; returns the position after it."""
    if v < 0:
        out[o] = 45  # "-"
        o += 1
        u = np.uint64(-(v + 1)) + np.uint64(1)
    else:
        u = np.uint64(v)
    n = 1
    t = u
    while t >= np.uint64(10):
        t //= np.uint64(10)
        n += 1
    i = o + n - 1
    while True:
        out[i] = np.uint8(48 + (u % np.uint64(10)))
        u //= np.uint64(10)
        if u == np.uint64(0):
            break
        i -= 1
    return o + n


@njit(cache=True, nogil=True, inline="always")
def _bool(out: np.ndarray, o: int, v: bool) -> int:
    return _lit(out, o, 20 if v else 21)


@njit(cache=True, nogil=True)
def _i32(v: int) -> int:
    """``v`` wrapped to a signed 32-bit value (Java ``int`` arithmetic)."""
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v >= 0x80000000 else v


@njit(cache=True, nogil=True)
def _increment_sequence(seq: int, inc: int) -> int:
    """``DefaultRecordBatch.incrementSequence`` in Java ``int`` arithmetic."""
    if seq > _i32(0x7FFFFFFF - inc):
        return _i32(inc - _i32(0x7FFFFFFF - seq) - 1)
    return _i32(seq + inc)


@njit(cache=True, nogil=True)
def _b64(out: np.ndarray, o: int, src: np.ndarray, a: int, n: int) -> int:
    """Standard base64 (with padding) of ``src[a:a + n]``."""
    end = a + n
    while a + 3 <= end:
        x = (np.int64(src[a]) << 16) | (np.int64(src[a + 1]) << 8) | np.int64(src[a + 2])
        out[o] = _B64[(x >> 18) & 63]
        out[o + 1] = _B64[(x >> 12) & 63]
        out[o + 2] = _B64[(x >> 6) & 63]
        out[o + 3] = _B64[x & 63]
        o += 4
        a += 3
    rest = end - a
    if rest == 1:
        x = np.int64(src[a]) << 16
        out[o] = _B64[(x >> 18) & 63]
        out[o + 1] = _B64[(x >> 12) & 63]
        out[o + 2] = 61
        out[o + 3] = 61
        o += 4
    elif rest == 2:
        x = (np.int64(src[a]) << 16) | (np.int64(src[a + 1]) << 8)
        out[o] = _B64[(x >> 18) & 63]
        out[o + 1] = _B64[(x >> 12) & 63]
        out[o + 2] = _B64[(x >> 6) & 63]
        out[o + 3] = 61
        o += 4
    return o


@njit(cache=True, nogil=True)
def _u4(out: np.ndarray, o: int, cp: int) -> int:
    out[o] = 92  # "\"
    out[o + 1] = 117  # "u"
    out[o + 2] = _HEX[(cp >> 12) & 15]
    out[o + 3] = _HEX[(cp >> 8) & 15]
    out[o + 4] = _HEX[(cp >> 4) & 15]
    out[o + 5] = _HEX[cp & 15]
    return o + 6


@njit(cache=True, nogil=True)
def _json_str(out: np.ndarray, o: int, src: np.ndarray, a: int, n: int) -> int:
    """``json.dumps`` of the (valid UTF-8) text ``src[a:a + n]``, ``ensure_ascii`` as Python's default.

    Needs up to ``12 * n + 2`` bytes of room.
    """
    out[o] = 34
    o += 1
    end = a + n
    while a < end:
        c = np.int64(src[a])
        if c < 0x80:
            a += 1
            if c == 34 or c == 92:
                out[o] = 92
                out[o + 1] = c
                o += 2
            elif c >= 0x20:
                out[o] = c
                o += 1
            elif c == 8:
                out[o] = 92
                out[o + 1] = 98
                o += 2
            elif c == 12:
                out[o] = 92
                out[o + 1] = 102
                o += 2
            elif c == 10:
                out[o] = 92
                out[o + 1] = 110
                o += 2
            elif c == 13:
                out[o] = 92
                out[o + 1] = 114
                o += 2
            elif c == 9:
                out[o] = 92
                out[o + 1] = 116
                o += 2
            else:
                o = _u4(out, o, c)
            continue
        if c < 0xE0:
            cp = ((c & 0x1F) << 6) | (np.int64(src[a + 1]) & 0x3F)
            a += 2
        elif c < 0xF0:
            cp = ((c & 0x0F) << 12) | ((np.int64(src[a + 1]) & 0x3F) << 6) | (np.int64(src[a + 2]) & 0x3F)
            a += 3
        else:
            cp = (
                ((c & 0x07) << 18)
                | ((np.int64(src[a + 1]) & 0x3F) << 12)
                | ((np.int64(src[a + 2]) & 0x3F) << 6)
                | (np.int64(src[a + 3]) & 0x3F)
            )
            a += 4
        if cp >= 0x10000:
            v = cp - 0x10000
            o = _u4(out, o, 0xD800 | (v >> 10))
            o = _u4(out, o, 0xDC00 | (v & 0x3FF))
        else:
            o = _u4(out, o, cp)
    out[o] = 34
    return o + 1


# --------------------------------------------------------------------------------------------
# kafka-dump-log text


@njit(cache=True, nogil=True)
def _kafka_batch_line(out: np.ndarray, o: int, meta: np.ndarray, j: int, delete_horizon: bool) -> int:
    """The 3.2+ (``delete_horizon``) or 3.0/3.1 batch line of a v2 batch, with its line break."""
    base = meta[j, M_BASE_OFFSET]
    lod = meta[j, M_LOD]
    attrs = meta[j, M_ATTRS]
    bseq = meta[j, M_BSEQ]
    o = _lit(out, o, 0)
    o = _int(out, o, base)
    o = _lit(out, o, 1)
    o = _int(out, o, base + lod)
    o = _lit(out, o, 2)
    o = _int(out, o, meta[j, M_COUNT])
    o = _lit(out, o, 3)
    o = _int(out, o, bseq)
    o = _lit(out, o, 4)
    o = _int(out, o, -1 if bseq == -1 else _increment_sequence(bseq, lod))
    o = _lit(out, o, 5)
    o = _int(out, o, meta[j, M_PID])
    o = _lit(out, o, 6)
    o = _int(out, o, meta[j, M_PEPOCH])
    o = _lit(out, o, 7)
    o = _int(out, o, meta[j, M_PLE])
    o = _lit(out, o, 8)
    o = _bool(out, o, (attrs & 0x10) != 0)
    o = _lit(out, o, 9)
    o = _bool(out, o, (attrs & 0x20) != 0)
    if delete_horizon:
        if attrs & 0x40:
            o = _lit(out, o, 10)
            o = _int(out, o, meta[j, M_BASE_TS])
            out[o] = 93  # "]"
            o += 1
        else:
            o = _lit(out, o, 11)
    o = _lit(out, o, 12)
    o = _int(out, o, meta[j, M_POSITION])
    o = _lit(out, o, 14 if attrs & 0x08 else 13)
    o = _int(out, o, meta[j, M_MAX_TS])
    o = _lit(out, o, 15)
    o = _int(out, o, meta[j, M_SIZE])
    o = _lit(out, o, 16)
    o = _int(out, o, meta[j, M_MAGIC])
    o = _lit(out, o, 17)
    o = _lit(out, o, 22 + (attrs & 7))
    o = _lit(out, o, 18)
    o = _int(out, o, meta[j, M_CRC])
    o = _lit(out, o, 19)
    o = _bool(out, o, meta[j, M_CRC_VALID] != 0)
    out[o] = 10
    return o + 1


@njit(cache=True, nogil=True)
def _text(out: np.ndarray, o: int, text_data: np.ndarray, text_off: np.ndarray, k: int) -> int:
    a = text_off[k]
    n = text_off[k + 1] - a
    _copy(text_data, a, n, out, o)
    return o + n


@njit(cache=True, nogil=True)
def kafka_text_run(
    win: np.ndarray,
    stage: np.ndarray,
    meta: np.ndarray,
    j: int,
    out: np.ndarray,
    o: int,
    deep: bool,
    contents: bool,
    skip: bool,
    scala: bool,
    delete_horizon: bool,
    text_mode: int,
    key_text: np.ndarray,
    pay_text: np.ndarray,
    text_data: np.ndarray,
    text_off: np.ndarray,
) -> tuple[int, int, int]:
    """Write the ``kafka-dump-log`` lines of batches ``j, j + 1, ...`` of a run (3.0+ text forms).

    ``deep``: record lines too; ``contents``: ``key:``/``payload:`` parts (``--print-data-log``
    or a decoder); ``skip``: ``--skip-record-metadata``; ``scala``: the Scala tool's (<= 4.2)
    payload prefix; ``delete_horizon``: the 3.2+ batch line. With ``text_mode`` TEXT_TABLE, the key
    and payload texts of record ``r`` (numbered through the run, ``meta[j, M_FIRST_RECORD]``
    being the first of batch ``j``) are entries ``key_text[r]`` / ``pay_text[r]`` (-1: none) of
    the table ``text_data``/``text_off``; otherwise keys and values are printed as UTF-8 text.

    Returns ``(j, o, status)``: the first batch not written, the output position, and DONE (all
    written), FLUSH (``out`` is full: write ``out[:o]`` out and call again from ``j``) or FALLBACK
    (batch ``j`` is for the Python writer).
    """
    nb = meta.shape[0]
    stats = np.zeros(6, np.int64)
    cap = out.shape[0]
    while j < nb:
        count = meta[j, M_COUNT]
        src = win if meta[j, M_SRC] == 0 else stage
        start = meta[j, M_REC_START]
        end = meta[j, M_REC_END]
        if deep:
            if not _scan_batch(src, start, end, count, stats):
                return j, o, FALLBACK
            need = 400 + count * 220 + stats[1] + stats[2] + stats[3] + stats[4]
            if text_mode == TEXT_TABLE:
                first = meta[j, M_FIRST_RECORD]
                for r in range(first, first + count):
                    if key_text[r] >= 0:
                        need += text_off[key_text[r] + 1] - text_off[key_text[r]]
                    if pay_text[r] >= 0:
                        need += text_off[pay_text[r] + 1] - text_off[pay_text[r]]
        else:
            need = 400
        if o + need > cap:
            return j, o, FLUSH  # (with o == 0: the caller needs a larger buffer)
        o0 = o
        o = _kafka_batch_line(out, o, meta, j, delete_horizon)
        if not deep:
            j += 1
            continue
        attrs = meta[j, M_ATTRS]
        lat = (attrs & 0x08) != 0
        tst = 14 if lat else 13
        base_offset = meta[j, M_BASE_OFFSET]
        base_ts = meta[j, M_BASE_TS]
        max_ts = meta[j, M_MAX_TS]
        bseq = meta[j, M_BSEQ]
        r = meta[j, M_FIRST_RECORD]
        pos = start
        while pos < end:
            u, pos = _uvarint(src, pos, end, 5)
            rend = pos + _zigzag(u)
            pos += 1  # attributes
            u, pos = _uvarint(src, pos, rend, 10)
            ts = max_ts if lat else base_ts + _zigzag(u)
            u, pos = _uvarint(src, pos, rend, 5)
            delta = _zigzag(u)
            u, pos = _uvarint(src, pos, rend, 5)
            kl = _zigzag(u)
            kpos = pos
            if kl > 0:
                pos += kl
            u, pos = _uvarint(src, pos, rend, 5)
            vl = _zigzag(u)
            vpos = pos
            if vl > 0:
                pos += vl
            u, pos = _uvarint(src, pos, rend, 5)
            hc = _zigzag(u)
            prefix = False  # whether something was printed (the "| " of the next part)
            if not skip:
                o = _lit(out, o, 27)
                o = _int(out, o, base_offset + delta)
                o = _lit(out, o, tst)
                o = _int(out, o, ts)
                o = _lit(out, o, 28)
                o = _int(out, o, kl)
                o = _lit(out, o, 29)
                o = _int(out, o, vl)
                o = _lit(out, o, 30)
                o = _int(out, o, -1 if bseq < 0 else _increment_sequence(bseq, delta))
                o = _lit(out, o, 31)
                for h in range(hc):
                    u, pos = _uvarint(src, pos, rend, 5)
                    hkl = _zigzag(u)
                    if h:
                        out[o] = 44  # ","
                        o += 1
                    _copy(src, pos, hkl, out, o)
                    o += hkl
                    pos += hkl
                    u, pos = _uvarint(src, pos, rend, 5)
                    hvl = _zigzag(u)
                    if hvl > 0:
                        pos += hvl
                out[o] = 93  # "]"
                o += 1
                prefix = True
            pos = rend
            if contents:
                if text_mode == TEXT_TABLE:
                    kt = key_text[r]
                    pt = pay_text[r]
                    if kt >= 0:
                        o = _lit(out, o, 32 if prefix else 34)
                        o = _text(out, o, text_data, text_off, kt)
                        prefix = True
                    if pt >= 0:
                        o = _lit(out, o, 33 if prefix or scala else 35)
                        o = _text(out, o, text_data, text_off, pt)
                else:
                    if kl >= 0:
                        if not _utf8_ok(src, kpos, kpos + kl):
                            return j, o0, FALLBACK
                        o = _lit(out, o, 32 if prefix else 34)
                        _copy(src, kpos, kl, out, o)
                        o += kl
                        prefix = True
                    if vl >= 0:
                        if not _utf8_ok(src, vpos, vpos + vl):
                            return j, o0, FALLBACK
                        o = _lit(out, o, 33 if prefix or scala else 35)
                        _copy(src, vpos, vl, out, o)
                        o += vl
            out[o] = 10
            o += 1
            r += 1
        j += 1
    return j, o, DONE


# --------------------------------------------------------------------------------------------
# decoder texts: where each record's key and value are, and which are equal


@njit(cache=True, nogil=True)
def _fnv(src: np.ndarray, a: int, n: int, h: np.uint64) -> np.uint64:
    prime = np.uint64(1099511628211)
    for i in range(a, a + n):
        h = (h ^ np.uint64(src[i])) * prime
    return h


@njit(cache=True, nogil=True)
def locate_run(
    win: np.ndarray, stage: np.ndarray, meta: np.ndarray, use_key: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every record of a run's clean batches: ``(ok per batch, batch, offset, key position,
    key length, value position, value length, hash)`` (lengths -1 for null; positions in the
    batch's buffer). Batches that fail the check get ``ok`` false and no records; ``meta``'s
    ``M_FIRST_RECORD`` column is filled. The hash covers the value (and the key when ``use_key``).
    """
    nb = meta.shape[0]
    stats = np.zeros(6, np.int64)
    ok = np.zeros(nb, np.bool_)
    total = 0
    for j in range(nb):
        src = win if meta[j, M_SRC] == 0 else stage
        if _scan_batch(src, meta[j, M_REC_START], meta[j, M_REC_END], meta[j, M_COUNT], stats):
            ok[j] = True
            total += meta[j, M_COUNT]
    batch = np.empty(total, np.int64)
    offset = np.empty(total, np.int64)
    kpos = np.empty(total, np.int64)
    klen = np.empty(total, np.int64)
    vpos = np.empty(total, np.int64)
    vlen = np.empty(total, np.int64)
    hashes = np.empty(total, np.uint64)
    r = 0
    for j in range(nb):
        meta[j, M_FIRST_RECORD] = r
        if not ok[j]:
            continue
        src = win if meta[j, M_SRC] == 0 else stage
        pos = meta[j, M_REC_START]
        end = meta[j, M_REC_END]
        base_offset = meta[j, M_BASE_OFFSET]
        while pos < end:
            u, pos = _uvarint(src, pos, end, 5)
            rend = pos + _zigzag(u)
            pos += 1
            u, pos = _uvarint(src, pos, rend, 10)
            u, pos = _uvarint(src, pos, rend, 5)
            offset[r] = base_offset + _zigzag(u)
            batch[r] = j
            u, pos = _uvarint(src, pos, rend, 5)
            kl = _zigzag(u)
            kpos[r] = pos
            klen[r] = kl
            if kl > 0:
                pos += kl
            u, pos = _uvarint(src, pos, rend, 5)
            vl = _zigzag(u)
            vpos[r] = pos
            vlen[r] = vl
            h = np.uint64(14695981039346656037)
            if use_key:
                h = _fnv(src, kpos[r], max(kl, 0), (h ^ np.uint64(kl + 2)) * np.uint64(1099511628211))
            h = (h ^ np.uint64(vl + 2)) * np.uint64(1099511628211)
            hashes[r] = _fnv(src, pos, max(vl, 0), h)
            pos = rend
            r += 1
    return ok, batch, offset, kpos, klen, vpos, vlen, hashes


@njit(cache=True, nogil=True)
def same_as_first(
    win: np.ndarray,
    stage: np.ndarray,
    meta: np.ndarray,
    batch: np.ndarray,
    kpos: np.ndarray,
    klen: np.ndarray,
    vpos: np.ndarray,
    vlen: np.ndarray,
    group: np.ndarray,
    first: np.ndarray,
    use_key: bool,
) -> np.ndarray:
    """Whether each record's value (and key, with ``use_key``) equals that of its group's first record
    (records ``0 .. len(batch) - 1``; ``group`` has one entry per record)."""
    n = min(batch.shape[0], group.shape[0])
    same = np.ones(n, np.bool_)
    for r in range(n):
        f = first[group[r]]
        if f == r:
            continue
        a = win if meta[batch[r], M_SRC] == 0 else stage
        b = win if meta[batch[f], M_SRC] == 0 else stage
        if vlen[r] != vlen[f] or (use_key and klen[r] != klen[f]):
            same[r] = False
            continue
        for i in range(max(vlen[r], 0)):
            if a[vpos[r] + i] != b[vpos[f] + i]:
                same[r] = False
                break
        if same[r] and use_key:
            for i in range(max(klen[r], 0)):
                if a[kpos[r] + i] != b[kpos[f] + i]:
                    same[r] = False
                    break
    return same


# --------------------------------------------------------------------------------------------
# JSON lines


@njit(cache=True, nogil=True)
def _jsonl_batch(out: np.ndarray, o: int, meta: np.ndarray, j: int, path_json: np.ndarray) -> int:
    attrs = meta[j, M_ATTRS]
    base = meta[j, M_BASE_OFFSET]
    o = _lit(out, o, 36)
    _copy(path_json, 0, path_json.shape[0], out, o)
    o += path_json.shape[0]
    o = _lit(out, o, 37)
    o = _int(out, o, meta[j, M_POSITION])
    o = _lit(out, o, 38)
    o = _int(out, o, base)
    o = _lit(out, o, 39)
    o = _int(out, o, base + meta[j, M_LOD])
    o = _lit(out, o, 40)
    o = _int(out, o, meta[j, M_COUNT])
    o = _lit(out, o, 41)
    o = _int(out, o, meta[j, M_SIZE])
    o = _lit(out, o, 42)
    o = _int(out, o, meta[j, M_MAGIC])
    o = _lit(out, o, 43)
    o = _int(out, o, meta[j, M_CRC])
    o = _lit(out, o, 44)
    o = _bool(out, o, meta[j, M_CRC_VALID] != 0)
    o = _lit(out, o, 45)
    o = _lit(out, o, 22 + (attrs & 7))
    o = _lit(out, o, 46)
    o = _lit(out, o, 48 if attrs & 0x08 else 47)
    o = _lit(out, o, 49)
    o = _int(out, o, meta[j, M_BASE_TS])
    o = _lit(out, o, 50)
    o = _int(out, o, meta[j, M_MAX_TS])
    o = _lit(out, o, 51)
    o = _int(out, o, meta[j, M_PLE])
    o = _lit(out, o, 52)
    o = _int(out, o, meta[j, M_PID])
    o = _lit(out, o, 53)
    o = _int(out, o, meta[j, M_PEPOCH])
    o = _lit(out, o, 54)
    o = _int(out, o, meta[j, M_BSEQ])
    o = _lit(out, o, 55)
    o = _bool(out, o, (attrs & 0x10) != 0)
    o = _lit(out, o, 56)
    o = _bool(out, o, (attrs & 0x20) != 0)
    o = _lit(out, o, 57)
    o = _bool(out, o, (attrs & 0x40) != 0)
    out[o] = 125  # "}"
    out[o + 1] = 10
    return o + 2


@njit(cache=True, nogil=True)
def jsonl_run(
    win: np.ndarray,
    stage: np.ndarray,
    meta: np.ndarray,
    j: int,
    out: np.ndarray,
    o: int,
    path_json: np.ndarray,
    payloads: bool,
    text_mode: int,
    pay_text: np.ndarray,
    text_data: np.ndarray,
    text_off: np.ndarray,
) -> tuple[int, int, int]:
    """Write the JSON lines of batches ``j, j + 1, ...`` of a run: one batch object, then one object
    per record (``payloads``: key, value and header values in base64; TEXT_TABLE: the decoded
    ``"payload"`` JSON of record ``r`` is entry ``pay_text[r]`` of the text table, -1 for none).

    Returns ``(j, o, status)`` as :func:`kafka_text_run`. Control batches are never passed here.
    """
    nb = meta.shape[0]
    stats = np.zeros(6, np.int64)
    cap = out.shape[0]
    while j < nb:
        count = meta[j, M_COUNT]
        src = win if meta[j, M_SRC] == 0 else stage
        start = meta[j, M_REC_START]
        end = meta[j, M_REC_END]
        if not _scan_batch(src, start, end, count, stats):
            return j, o, FALLBACK
        need = 1000 + path_json.shape[0] + count * 200 + 12 * stats[4] + 8 * stats[3]
        if payloads:  # base64 of keys, values and header values; the header keys a second time
            need += 2 * (stats[1] + stats[2] + stats[5]) + count * 40 + stats[3] * 20 + 12 * stats[4]
        first = meta[j, M_FIRST_RECORD]
        if text_mode == TEXT_TABLE:
            for r in range(first, first + count):
                if pay_text[r] >= 0:
                    need += text_off[pay_text[r] + 1] - text_off[pay_text[r]]
        if o + need > cap:
            return j, o, FLUSH
        o = _jsonl_batch(out, o, meta, j, path_json)
        lat = (meta[j, M_ATTRS] & 0x08) != 0
        base_offset = meta[j, M_BASE_OFFSET]
        base_ts = meta[j, M_BASE_TS]
        max_ts = meta[j, M_MAX_TS]
        r = first
        pos = start
        while pos < end:
            u, pos = _uvarint(src, pos, end, 5)
            rend = pos + _zigzag(u)
            pos += 1
            u, pos = _uvarint(src, pos, rend, 10)
            ts = max_ts if lat else base_ts + _zigzag(u)
            u, pos = _uvarint(src, pos, rend, 5)
            off = base_offset + _zigzag(u)
            u, pos = _uvarint(src, pos, rend, 5)
            kl = _zigzag(u)
            kpos = pos
            if kl > 0:
                pos += kl
            u, pos = _uvarint(src, pos, rend, 5)
            vl = _zigzag(u)
            vpos = pos
            if vl > 0:
                pos += vl
            u, pos = _uvarint(src, pos, rend, 5)
            hc = _zigzag(u)
            hstart = pos
            o = _lit(out, o, 58)
            o = _int(out, o, off)
            o = _lit(out, o, 59)
            o = _int(out, o, ts)
            o = _lit(out, o, 60)
            o = _int(out, o, kl)
            o = _lit(out, o, 61)
            o = _int(out, o, vl)
            o = _lit(out, o, 62)
            for h in range(hc):
                u, pos = _uvarint(src, pos, rend, 5)
                hkl = _zigzag(u)
                if h:
                    out[o] = 44
                    out[o + 1] = 32
                    o += 2
                o = _json_str(out, o, src, pos, hkl)
                pos += hkl
                u, pos = _uvarint(src, pos, rend, 5)
                hvl = _zigzag(u)
                if hvl > 0:
                    pos += hvl
            out[o] = 93
            o += 1
            if text_mode == TEXT_TABLE and pay_text[r] >= 0:
                o = _lit(out, o, 63)
                o = _text(out, o, text_data, text_off, pay_text[r])
            if payloads:
                o = _lit(out, o, 64)
                if kl >= 0:
                    out[o] = 34
                    o = _b64(out, o + 1, src, kpos, kl)
                    out[o] = 34
                    o += 1
                else:
                    o = _lit(out, o, 67)
                o = _lit(out, o, 65)
                if vl >= 0:
                    out[o] = 34
                    o = _b64(out, o + 1, src, vpos, vl)
                    out[o] = 34
                    o += 1
                else:
                    o = _lit(out, o, 67)
                o = _lit(out, o, 66)
                pos = hstart
                for h in range(hc):
                    u, pos = _uvarint(src, pos, rend, 5)
                    hkl = _zigzag(u)
                    if h:
                        out[o] = 44
                        out[o + 1] = 32
                        o += 2
                    out[o] = 91  # "["
                    o = _json_str(out, o + 1, src, pos, hkl)
                    pos += hkl
                    out[o] = 44
                    out[o + 1] = 32
                    o += 2
                    u, pos = _uvarint(src, pos, rend, 5)
                    hvl = _zigzag(u)
                    if hvl >= 0:
                        out[o] = 34
                        o = _b64(out, o + 1, src, pos, hvl)
                        out[o] = 34
                        o += 1
                        pos += hvl
                    else:
                        o = _lit(out, o, 67)
                    out[o] = 93
                    o += 1
                out[o] = 93
                o += 1
            out[o] = 125
            out[o + 1] = 10
            o += 2
            pos = rend
            r += 1
        j += 1
    return j, o, DONE


# --------------------------------------------------------------------------------------------
# hopping over clean batches of a window

#: why a hop stopped
HOP_END, HOP_WINDOW, HOP_IRREGULAR, HOP_FULL = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _be(win: np.ndarray, i: int, n: int) -> int:
    v = 0
    for k in range(n):
        v = (v << 8) | np.int64(win[i + k])
    return v


@njit(cache=True, nogil=True)
def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >= (1 << (bits - 1)) else v


@njit(cache=True, nogil=True)
def hop(
    win: np.ndarray, base: int, pos: int, end: int, meta: np.ndarray, n: int, max_batch: int, no_control: bool
) -> tuple[int, int, int]:
    """Fill ``meta`` rows from ``n`` on with the clean v2 batches from file position ``pos``.

    ``win`` holds the file bytes ``[base, base + len(win))``; batches are framed within
    ``[0, end)``. A batch is clean when ``pos + 17 < end``, its length is in ``[49, max_batch]``,
    it ends within ``end``, its magic is 2 and its codec id at most 4 (and, with ``no_control``,
    it is not a control batch): then Kafka's reader and the careful reader frame it alike.
    Fills every column but ``M_CRC_VALID`` and ``M_FIRST_RECORD``; records start after the
    61-byte header in ``win`` (``M_SRC`` 0). Returns ``(rows filled, position, why it stopped)``.
    """
    cap = meta.shape[0]
    top = base + win.shape[0]
    why = HOP_FULL
    while n < cap:
        if pos + 17 >= end:
            why = HOP_END
            break
        if pos + 61 > top:
            why = HOP_WINDOW
            break
        i = pos - base
        length = _signed(_be(win, i + 8, 4), 32)
        if length < 49 or length > max_batch or pos + 12 + length > end or win[i + 16] != 2:
            why = HOP_IRREGULAR
            break
        attrs = _signed(_be(win, i + 21, 2), 16)
        if (attrs & 7) > 4 or (no_control and (attrs & 0x20) != 0):
            why = HOP_IRREGULAR
            break
        if pos + 12 + length > top:
            why = HOP_WINDOW
            break
        meta[n, M_REC_START] = i + 61
        meta[n, M_REC_END] = i + 12 + length
        meta[n, M_SRC] = 0
        meta[n, M_POSITION] = pos
        meta[n, M_BASE_OFFSET] = _be(win, i, 8)
        meta[n, M_PLE] = _signed(_be(win, i + 12, 4), 32)
        meta[n, M_MAGIC] = 2
        meta[n, M_CRC] = _be(win, i + 17, 4)
        meta[n, M_ATTRS] = attrs
        meta[n, M_LOD] = _signed(_be(win, i + 23, 4), 32)
        meta[n, M_BASE_TS] = _be(win, i + 27, 8)
        meta[n, M_MAX_TS] = _be(win, i + 35, 8)
        meta[n, M_PID] = _be(win, i + 43, 8)
        meta[n, M_PEPOCH] = _signed(_be(win, i + 51, 2), 16)
        meta[n, M_BSEQ] = _signed(_be(win, i + 53, 4), 32)
        meta[n, M_COUNT] = _signed(_be(win, i + 57, 4), 32)
        meta[n, M_SIZE] = 12 + length
        meta[n, M_CRC_VALID] = 0
        meta[n, M_FIRST_RECORD] = 0
        n += 1
        pos += 12 + length
    return n, pos, why


@njit(cache=True, nogil=True)
def equal_to_store(
    win: np.ndarray,
    stage: np.ndarray,
    meta: np.ndarray,
    batch: np.ndarray,
    kpos: np.ndarray,
    klen: np.ndarray,
    vpos: np.ndarray,
    vlen: np.ndarray,
    reps: np.ndarray,
    store: np.ndarray,
    e_off: np.ndarray,
    e_klen: np.ndarray,
    e_vlen: np.ndarray,
    ents: np.ndarray,
    use_key: bool,
) -> np.ndarray:
    """Whether record ``reps[i]``'s value (and key) equals entry ``ents[i]`` of the store (key bytes,
    then value bytes, from ``e_off``)."""
    n = reps.shape[0]
    out = np.zeros(n, np.bool_)
    for i in range(n):
        r = reps[i]
        e = ents[i]
        src = win if meta[batch[r], M_SRC] == 0 else stage
        kl = klen[r] if use_key else -1
        if vlen[r] != e_vlen[e] or kl != e_klen[e]:
            continue
        at = e_off[e]
        same = True
        for k in range(max(kl, 0)):
            if src[kpos[r] + k] != store[at + k]:
                same = False
                break
        at += max(kl, 0)
        if same:
            for k in range(max(vlen[r], 0)):
                if src[vpos[r] + k] != store[at + k]:
                    same = False
                    break
        out[i] = same
    return out


class TextMemo:
    """The texts of records computed once per distinct value (and key) over a whole file.

    ``table`` gives, for the records of a run, indices into a text table of ``parts`` texts per
    record (a key text and a payload text, or one JSON payload). A value seen before (its 64-bit
    hash known, its bytes equal to the ones kept) reuses its texts; a new one is computed once by
    ``compute(key, value, offset) -> (texts, cacheable)``; records whose texts cannot be kept
    (``cacheable`` false, e.g. an error text naming the offset) and hash collisions are computed
    one by one, in order, by ``alone(key, value, offset, batch_position) -> texts``.
    """

    def __init__(self, use_key: bool, parts: int, max_entries: int = 1 << 21, max_bytes: int = 256 << 20) -> None:
        self.use_key = use_key
        self.parts = parts
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._reset()

    def _reset(self) -> None:
        from array import array

        self.entry_of: dict[int, int] = {}
        self.store = bytearray()
        self.e_off = array("q")
        self.e_klen = array("q")
        self.e_vlen = array("q")
        self.e_text: list[array] = [array("q") for _ in range(self.parts)]
        self.texts: list[bytes] = []

    def table(self, win, stage, run, compute, alone, stop_at_bad: bool = True):  # type: ignore[no-untyped-def]
        """``(batches kept, text index per part and record (parts, records), text bytes, text offsets)``.

        With ``stop_at_bad``, batches from the first one whose records fail the check on are not
        kept (the caller's Python writer takes that batch, and the run resumes after it);
        otherwise every batch is kept (those that fail have no records).
        """
        ok, batch, offset, kpos, klen, vpos, vlen, hashes = locate_run(win, stage, run, self.use_key)
        keep = len(run)
        bad = np.flatnonzero(~ok)
        if len(bad) and stop_at_bad:
            keep = int(bad[0])
        nrec = int(run[keep, M_FIRST_RECORD]) if keep < len(run) else len(batch)
        idx = np.full((self.parts, nrec), -1, dtype=np.int64)
        if nrec == 0:
            return keep, idx, np.zeros(0, np.uint8), np.zeros(1, np.int64)
        if len(self.entry_of) > self.max_entries or len(self.store) > self.max_bytes:
            self._reset()
        uniq, first, group = np.unique(hashes[:nrec], return_index=True, return_inverse=True)
        same = same_as_first(win, stage, run, batch[:nrec], kpos, klen, vpos, vlen, group, first, self.use_key)
        bufs = (win, stage)
        src_of = run[:, M_SRC]
        use_key = self.use_key

        def raw(r: int, at: np.ndarray, ln: np.ndarray) -> bytes | None:
            n = int(ln[r])
            if n < 0:
                return None
            a = int(at[r])
            return bufs[int(src_of[batch[r]])][a : a + n].tobytes()

        get = self.entry_of.get
        ents = np.fromiter((get(h, -1) for h in uniq.tolist()), dtype=np.int64, count=len(uniq))
        known = np.flatnonzero(ents >= 0)
        single = np.zeros(len(uniq), dtype=np.bool_)
        if len(known):
            store = np.frombuffer(self.store, dtype=np.uint8)
            equal = equal_to_store(
                win, stage, run, batch, kpos, klen, vpos, vlen, first[known], store,
                np.frombuffer(self.e_off, dtype=np.int64), np.frombuffer(self.e_klen, dtype=np.int64),
                np.frombuffer(self.e_vlen, dtype=np.int64), ents[known], use_key,
            )  # fmt: skip
            del store
            collided = known[~equal]
            single[collided] = True  # another value under a known hash: one by one
            ents[collided] = -1
        for g in np.flatnonzero((ents < 0) & ~single).tolist():
            r = int(first[g])
            k = raw(r, kpos, klen) if use_key else None
            v = raw(r, vpos, vlen)
            texts, cacheable = compute(k, v, int(offset[r]))
            if not cacheable:
                single[g] = True
                continue
            e = len(self.e_off)
            self.entry_of[int(uniq[g])] = e
            self.e_off.append(len(self.store))
            self.e_klen.append(-1 if k is None else len(k))
            self.e_vlen.append(-1 if v is None else len(v))
            if k:
                self.store += k
            if v:
                self.store += v
            for p in range(self.parts):
                t = texts[p]
                if t is None:
                    self.e_text[p].append(-1)
                else:
                    self.e_text[p].append(len(self.texts))
                    self.texts.append(t)
            ents[g] = e
        # a compact table of the texts this run uses
        used = ents >= 0
        gid = np.full((self.parts, len(uniq)), -1, dtype=np.int64)
        for p in range(self.parts):
            gid[p, used] = np.frombuffer(self.e_text[p], dtype=np.int64)[ents[used]]
        ids = np.unique(gid[gid >= 0])
        texts_all = self.texts
        table = [texts_all[t] for t in ids.tolist()]
        for p in range(self.parts):
            mapped = np.full(len(uniq), -1, dtype=np.int64)
            have = gid[p] >= 0
            mapped[have] = np.searchsorted(ids, gid[p][have])
            idx[p] = mapped[group]
        for r in np.flatnonzero(single[group] | ~same[:nrec]).tolist():
            texts = alone(raw(r, kpos, klen), raw(r, vpos, vlen), int(offset[r]), int(run[batch[r], M_POSITION]))
            for p in range(self.parts):
                t = texts[p]
                if t is None:
                    idx[p, r] = -1
                else:
                    idx[p, r] = len(table)
                    table.append(t)
        off = np.zeros(len(table) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in table], out=off[1:])
        return keep, idx, np.frombuffer(b"".join(table), dtype=np.uint8), off


def stage_run(mv: memoryview, meta: np.ndarray, n: int, no_data: np.ndarray) -> tuple[int, np.ndarray]:
    """Check the CRC of the first ``n`` batches of ``meta`` (read off the window ``mv``) and
    decompress their records into one staging buffer, rewriting their record ranges into it.

    Returns ``(keep, stage)``: the run ends at the first batch the kernel cannot take (a CRC
    mismatch or a codec failure: the careful writer takes it), and ``stage`` holds the
    decompressed records (``no_data`` when none was compressed).
    """
    from crc32c import crc32c

    from workbench.formats.compression import CODEC_NAMES, CodecError, decompress

    parts: list[bytes] = []
    staged = 0
    for k in range(n):
        row = meta[k]
        a, b = int(row[M_REC_START]), int(row[M_REC_END])
        if crc32c(mv[a - 40 : b]) != int(row[M_CRC]):
            return k, _joined(parts, no_data)
        row[M_CRC_VALID] = 1
        codec = int(row[M_ATTRS]) & 7
        if codec:
            try:
                plain = decompress(CODEC_NAMES[codec], mv[a:b], magic=2)
            except CodecError:
                return k, _joined(parts, no_data)
            row[M_SRC] = 1
            row[M_REC_START] = staged
            staged += len(plain)
            row[M_REC_END] = staged
            parts.append(plain)
    return n, _joined(parts, no_data)


def _joined(parts: list[bytes], no_data: np.ndarray) -> np.ndarray:
    return np.frombuffer(b"".join(parts), dtype=np.uint8) if parts else no_data
