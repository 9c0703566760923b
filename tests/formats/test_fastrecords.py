"""The compiled columnar record decoder against the careful (pure-Python) record reader.

Every test compares whole tables (``Table.equals``) and the full problem lists (position, kind,
detail) of :func:`records_table` with ``[b.records(log) for b in batches]`` turned into the same
Arrow table by a small independent helper, on real Kafka segments, on generated batches of every
codec and layout, and on damaged batches (hypothesis). Strict logs must raise the same
``CorruptDataError``.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import crc32c
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from peer.scenario import built_on
from workbench.errors import CorruptDataError
from workbench.formats import fastrecords
from workbench.formats.batch import Batch, Record, encode_batch, read_batches
from workbench.formats.compression import CODEC_IDS, compress
from workbench.formats.fastrecords import RECORDS_ARROW_SCHEMA, records_table, records_table_from_file
from workbench.formats.problems import ProblemLog

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PATH = "seg.log"


# --------------------------------------------------------------------------------------------
# helpers


def _i64(v: int) -> int:
    return ((v + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


def python_table(batches: Iterable[Batch], log: ProblemLog | None) -> pa.Table:
    """The careful reader's records as a :data:`RECORDS_ARROW_SCHEMA` table."""
    rows = []
    for b in batches:
        for r in b.records(log):
            rows.append({
                "batch_position": b.position,
                "offset": _i64(r.offset),
                "timestamp": _i64(r.timestamp),
                "attributes": np.int8(np.uint8(r.attributes)).item(),
                "size": r.size,
                "key": r.key,
                "value": r.value,
                "headers": [{"key": k, "value": v} for k, v in r.headers],
            })
    return pa.Table.from_pylist(rows, schema=RECORDS_ARROW_SCHEMA)


def problems_of(log: ProblemLog) -> list[tuple[int, str, str]]:
    return [(p.position, p.kind, p.detail) for p in log.problems]


class Fallbacks:
    """Counts the batches :func:`records_table` hands to the careful reader."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.v2 = 0
        self.legacy = 0
        original = Batch.records

        def counting(batch: Batch, problems: ProblemLog | None = None) -> list[Record]:
            if batch.magic == 2:
                self.v2 += 1
            else:
                self.legacy += 1
            return original(batch, problems)

        monkeypatch.setattr(fastrecords.Batch, "records", counting)
        self.original = original


def both(data: bytes, fallbacks: Fallbacks | None = None) -> tuple[pa.Table, list[tuple[int, str, str]]]:
    """Decode ``data`` both ways with one shared log per way (batches and records); assert they agree."""
    ref_log = ProblemLog(PATH)
    original = fallbacks.original if fallbacks is not None else Batch.records
    rows = [(b, original(b, ref_log)) for b in read_batches(io.BytesIO(data), PATH, problems=ref_log)]
    ref = python_table([_Cached(b, recs) for b, recs in rows], None)
    fast_log = ProblemLog(PATH)
    got = records_table(read_batches(io.BytesIO(data), PATH, problems=fast_log), fast_log)
    assert got.schema == RECORDS_ARROW_SCHEMA
    assert got.num_rows == ref.num_rows
    assert got.equals(ref), _first_difference(got, ref)
    assert problems_of(fast_log) == problems_of(ref_log)
    counts = (fallbacks.v2, fallbacks.legacy) if fallbacks is not None else None
    assert records_table(read_batches(io.BytesIO(data), PATH)).equals(got)  # without a log: same rows
    if fallbacks is not None and counts is not None:
        fallbacks.v2, fallbacks.legacy = counts
    return got, problems_of(fast_log)


class _Cached:
    """A batch whose records were already decoded (keeps the reference's problem order intact)."""

    def __init__(self, batch: Batch, recs: list[Record]) -> None:
        self.position = batch.position
        self._recs = recs

    def records(self, log: Any) -> list[Record]:
        return self._recs


def _first_difference(a: pa.Table, b: pa.Table) -> str:
    la, lb = a.to_pylist(), b.to_pylist()
    for i, (x, y) in enumerate(zip(la, lb, strict=False)):
        if x != y:
            return f"row {i}: fast {x!r} != python {y!r}"
    return f"{len(la)} rows != {len(lb)} rows"


def strict_outcome(data: bytes, fast: bool) -> tuple[str, int, str, str] | None:
    """``(path, position, kind, detail)`` of the strict error, or None when nothing is raised."""
    try:
        if fast:
            log = ProblemLog(PATH, strict=True)
            records_table(read_batches(io.BytesIO(data), PATH, problems=log), log)
        else:
            log = ProblemLog(PATH, strict=True)
            for b in read_batches(io.BytesIO(data), PATH, problems=log):
                b.records(log)
    except CorruptDataError as exc:
        return (exc.path, exc.position, exc.kind, exc.detail)
    return None


def payload(n: int, seed: int) -> bytes:
    return bytes((seed * 31 + i * 7) & 0xFF for i in range(n))


SIZES = (None, 0, 1, 200, 20_000)


def varied_records(base: int = 0, ts: int = 1_700_000_000_000) -> list[tuple[Any, ...]]:
    """Keys and values absent/empty/1/200/20,000 bytes, headers (null values, UTF-8), ts going back."""
    recs: list[tuple[Any, ...]] = []
    i = 0
    for ks in SIZES:
        for vs in SIZES:
            key = None if ks is None else payload(ks, i)
            value = None if vs is None else payload(vs, i + 1)
            headers: list[tuple[str, bytes | None]] = []
            if i % 3 == 1:
                headers = [("h", b"1"), ("null-value", None), ("", b"")]
            elif i % 3 == 2:
                headers = [("ünïcødé-☃-𝄞", payload(300, i)), ("x" * 150, None)]
            recs.append((base + i * (1 if i % 4 else 70_000), ts - 5_000_000_000 * (i % 5) + i, key, value, headers))
            i += 1
    return recs


def generated_segment() -> bytes:
    """Batches of every codec and layout, back to back."""
    parts = []
    offset = 0
    for codec in CODECS:
        recs = varied_records(offset)
        parts.append(encode_batch(recs, base_offset=offset, compression=codec))
        offset = recs[-1][0] + 1
        parts.append(encode_batch([(offset, 5, b"k", b"v")], base_offset=offset, compression=codec,
                                  timestamp_type="LogAppendTime", max_timestamp=1_234_567_890_123))
        offset += 1
        parts.append(encode_batch([(offset + j, -100 + j, None, None) for j in range(3)], base_offset=offset,
                                  compression=codec, producer_id=7, producer_epoch=1, base_sequence=0,
                                  is_transactional=True))
        offset += 3
    # control batch (commit marker), an empty batch, a delete-horizon batch, one-record batches
    parts.append(encode_batch([(offset, 42, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")], base_offset=offset,
                              is_control=True, is_transactional=True, producer_id=7, producer_epoch=1))
    offset += 1
    parts.append(encode_batch([], base_offset=offset, last_offset=offset + 3))
    offset += 4
    parts.append(encode_batch([(offset, 9, b"gone", None)], base_offset=offset, delete_horizon_ms=77))
    offset += 1
    for j in range(300):
        parts.append(encode_batch([(offset + j, 1000 + j, str(j).encode(), payload(j % 50, j))],
                                  base_offset=offset + j))
    return b"".join(parts)


def legacy_segment() -> bytes:
    """Magic 0/1 messages and wrappers (these go to the careful reader)."""
    parts = []
    offset = 0
    for magic in (0, 1):
        for codec in ("none", "gzip", "snappy", "lz4"):
            recs = [(offset + j, 1000 + j, None if j == 0 else payload(j, j), payload(3 * j, j)) for j in range(4)]
            parts.append(encode_batch(recs, base_offset=offset, magic=magic, compression=codec))
            offset += 4
    parts.append(encode_batch([(offset, 5, b"k", b"v")], base_offset=offset, magic=1,
                              timestamp_type="LogAppendTime", max_timestamp=99))
    return b"".join(parts)


# --------------------------------------------------------------------------------------------
# real Kafka files


BUNDLES = tuple((name, version) for version in ("4.3.1", "3.9.2")
                for name in ("consumer_lag", "isr", "mm2", "tiered", "quorum") if version in built_on(name))


def test_real_kafka_segments(kafka_bundle, monkeypatch):
    """Every .log and .checkpoint of real bundles: same table and problems; no clean batch falls back."""
    files: list[Path] = []
    for name, version in BUNDLES:
        bundle = Path(kafka_bundle(name, version))
        files += sorted(p for p in [*bundle.glob("nodes/*/logs/**/*"), *bundle.glob("remote/**/*")]
                        if p.suffix in (".log", ".checkpoint") and p.is_file())
    assert len(files) > 100
    fb = Fallbacks(monkeypatch)
    rows = headers = 0
    codecs: set[str] = set()
    for path in files:
        data = path.read_bytes()
        got, problems = both(data, fb)
        assert problems == [], path
        rows += got.num_rows
        headers += sum(len(h) for h in got.column("headers").to_pylist())
        codecs |= {b.compression for b in read_batches(io.BytesIO(data))}
        # the file reader gives the same table
        assert records_table_from_file(path).equals(got)
    assert fb.v2 == 0 and fb.legacy == 0
    assert rows > 10_000 and headers > 100
    assert codecs == set(CODECS)


# --------------------------------------------------------------------------------------------
# generated batches


def test_generated_batches_of_every_codec(monkeypatch):
    fb = Fallbacks(monkeypatch)
    data = generated_segment()
    got, problems = both(data, fb)
    assert problems == []
    assert fb.v2 == 0  # every batch went through the compiled passes
    assert got.num_rows == 5 * (25 + 1 + 3) + 1 + 1 + 300
    rows = got.to_pylist()
    assert rows[0]["key"] is None and rows[0]["value"] is None
    assert {len(r["value"]) for r in rows if r["value"] is not None} >= {0, 1, 200, 20_000}
    assert any(h["value"] is None for r in rows for h in r["headers"])
    assert any(h["key"] == "ünïcødé-☃-𝄞" for r in rows for h in r["headers"])
    assert {r["timestamp"] for r in rows if r["key"] == b"k"} == {1_234_567_890_123}  # LogAppendTime


def test_legacy_batches_go_to_the_careful_reader(monkeypatch):
    fb = Fallbacks(monkeypatch)
    got, problems = both(legacy_segment())
    assert problems == []
    assert got.num_rows == 8 * 4 + 1
    got, _ = both(legacy_segment() + generated_segment() + legacy_segment(), fb)
    assert fb.legacy > 0 and fb.v2 == 0


def test_many_groups_and_empty_input(monkeypatch):
    """Small gathering limits: many compiled runs, slices around fallbacks, same result."""
    monkeypatch.setattr(fastrecords, "_GROUP_BYTES", 3000)
    monkeypatch.setattr(fastrecords, "_GROUP_BATCHES", 7)
    both(generated_segment() + legacy_segment() + generated_segment())
    assert records_table([]).num_rows == 0
    assert records_table([]).schema == RECORDS_ARROW_SCHEMA


def test_invalid_utf8_header_key_falls_back(monkeypatch):
    """Header keys are decoded with replacement characters, as the careful reader does."""
    body = b"\x00\x00\x00\x01\x01\x02" + b"\x08\xff\xfeab" + b"\x02v"  # attrs ts od key=null val=null 1 header
    rec = bytes([len(body) * 2]) + body
    base = encode_batch([(0, 5, None, None, [("ab", b"v")])], base_offset=0)
    data = _frame(base, rec, "none", None, True)  # the header key is now bytes ff fe 'a' 'b'
    fb = Fallbacks(monkeypatch)
    got, problems = both(data, fb)
    assert problems == [] and fb.v2 == 1
    assert got.column("headers").to_pylist() == [[{"key": "\ufffd\ufffdab", "value": b"v"}]]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=12))
def test_utf8_check_matches_python(raw):
    arr = np.frombuffer(raw, dtype=np.uint8) if raw else np.zeros(0, np.uint8)
    try:
        raw.decode("utf-8")
        ok = True
    except UnicodeDecodeError:
        ok = False
    assert fastrecords._utf8_ok(arr, 0, len(raw)) == ok


def test_utf8_check_edges():
    for s in ["\x7f", "\u0080", "\u07ff", "\u0800", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0010ffff"]:
        b = s.encode()
        assert fastrecords._utf8_ok(np.frombuffer(b, np.uint8), 0, len(b)), s
    for b in [b"\xc0\x80", b"\xc1\xbf", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
              b"\xf5\x80\x80\x80", b"\x80", b"\xe2\x82"]:
        assert not fastrecords._utf8_ok(np.frombuffer(b, np.uint8), 0, len(b)), b


# --------------------------------------------------------------------------------------------
# damaged batches


def _seed_records(kind: int) -> list[tuple[Any, ...]]:
    if kind == 0:
        return [(j, 1000 - 3 * j, payload(j % 3, j) if j % 2 else None, payload(7 * j, j),
                 [("h", b"x")] if j % 3 == 0 else []) for j in range(6)]
    if kind == 1:
        return [(0, -5, b"k" * 130, b"v" * 300, [("key-\u00e9", None), ("k2", b"y" * 140)])]
    return [(j, j, None, b"", []) for j in range(12)]


def _frame(batch: bytes, body: bytes, codec: str, count: int | None, fix_crc: bool) -> bytes:
    """``batch``'s header over ``body`` (codec bits, length, optionally count and CRC set)."""
    out = bytearray(batch[:61] + body)
    out[8:12] = struct.pack(">i", len(out) - 12)
    out[21:23] = struct.pack(">h", (struct.unpack(">h", batch[21:23])[0] & ~7) | CODEC_IDS[codec])
    if count is not None:
        out[57:61] = struct.pack(">i", count)
    if fix_crc:
        out[17:21] = struct.pack(">I", crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def _set_records(batch: bytes, records: bytes, codec: str, count: int | None, fix_crc: bool) -> bytes:
    """``batch`` with its records region replaced (compressed with ``codec``)."""
    return _frame(batch, compress(codec, records, magic=2) if codec != "none" else records, codec, count, fix_crc)


def _mutate(data: bytes, ops: list[tuple[int, int, int]]) -> bytes:
    buf = bytearray(data)
    for op, at, val in ops:
        if op == 2:
            i = at % (len(buf) + 1)
        elif not buf:
            continue
        else:
            i = at % len(buf)
        if op == 0:
            buf[i] = val & 0xFF
        elif op == 1:
            buf[i] ^= 1 << (val & 7)
        elif op == 2:
            buf[i:i] = bytes([val & 0xFF]) * (1 + (val >> 8) % 3)
        elif op == 3:
            del buf[i : i + 1 + (val % 4)]
        else:
            del buf[i:]
    return bytes(buf)


OPS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 1 << 16), st.integers(0, 1 << 11)), min_size=1, max_size=4)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.integers(0, 2),
    codec=st.sampled_from(CODECS),
    victim=st.integers(0, 2),
    ops=OPS,
    count=st.one_of(st.none(), st.integers(-2, 20)),
    fix_crc=st.booleans(),
    log_append=st.booleans(),
    mutate_stream=st.booleans(),
)
def test_damaged_records_agree(kind, codec, victim, ops, count, fix_crc, log_append, mutate_stream):
    """Bytes of one batch's records changed, inserted, deleted or cut: same rows and problems, same strict error."""
    parts = []
    for j in range(3):
        recs = [(r[0] + 100 * j, *r[1:]) for r in _seed_records(kind if j == victim else (kind + j) % 3)]
        batch = encode_batch(recs, base_offset=100 * j, compression=codec,
                             timestamp_type="LogAppendTime" if log_append else "CreateTime",
                             max_timestamp=5_000 if log_append else None)
        if j == victim:
            plain = encode_batch(recs, base_offset=100 * j)[61:]
            if mutate_stream and codec != "none":  # damage the compressed stream itself
                batch = _frame(batch, _mutate(batch[61:], ops), codec, count, fix_crc)
            else:
                batch = _set_records(batch, _mutate(plain, ops), codec, count, fix_crc)
        parts.append(batch)
    data = b"".join(parts)
    _, problems = both(data)
    event(f"problem kinds: {sorted({k for _, k, _ in problems})}")
    assert strict_outcome(data, fast=True) == strict_outcome(data, fast=False)


def test_extreme_varints(monkeypatch):
    """10-byte timestamp deltas: within 64 bits (compiled) and beyond (careful reader, stored modulo 2**64)."""
    tail = b"\x00\x01\x01\x00"  # offset delta 0, key null, value null, no headers
    beyond = b"\x00" + b"\xff" * 9 + b"\x7f" + tail
    within = b"\x00" + b"\xff" * 9 + b"\x01" + tail
    base = encode_batch([(0, 5, None, None)], base_offset=0)
    data = (_frame(base, bytes([2 * len(beyond)]) + beyond, "none", None, True)
            + _frame(base, bytes([2 * len(within)]) + within, "none", None, True))
    fb = Fallbacks(monkeypatch)
    got, problems = both(data, fb)
    assert problems == [] and fb.v2 == 1
    assert got.column("timestamp").to_pylist() == [_i64(5 - (1 << 69)), 5 - (1 << 63)]


def test_damage_kinds_are_reported_like_the_careful_reader():
    """A few hand-made irregularities, each checked for identical problems (and that there are some)."""
    good = encode_batch(_seed_records(0), base_offset=0)
    plain = good[61:]
    cases = {
        "fewer records than declared": _set_records(good, plain, "none", 9, True),
        "more records than declared": _set_records(good, plain, "none", 2, True),
        "trailing bytes": _set_records(good, plain + b"\x00\x01", "none", None, True),
        "varint never ends": _set_records(good, plain + b"\xff" * 12, "none", 7, True),
        "negative key length": _set_records(good, bytes([18, 0, 0, 0, 5]) + bytes(5), "none", 1, True),
        "truncated": _set_records(good, plain[:-3], "none", None, True),
        "negative count": _set_records(good, plain, "none", -1, True),
        "zstd truncated records": _set_records(good, plain[:-3], "zstd", None, True),
        "gzip garbage": _frame(good, b"\x1f\x8b\x08garbage", "gzip", None, True),
        "unknown codec": good[:21] + struct.pack(">h", 5) + good[23:],
    }
    for name, data in cases.items():
        data = data[:8] + struct.pack(">i", len(data) - 12) + data[12:]
        _, problems = both(data + good)
        assert problems, name
        assert strict_outcome(data + good, fast=True) == strict_outcome(data + good, fast=False), name


def test_problem_order_with_a_shared_log():
    """Record problems of an earlier batch precede header problems met while reading later ones."""
    good = encode_batch(_seed_records(0), base_offset=0)
    bad = _set_records(good, good[61:] + b"\x07", "none", None, True)  # trailing byte: record_error
    damaged_crc = bytearray(encode_batch(_seed_records(2), base_offset=50))
    damaged_crc[45] ^= 0xFF  # a producer id byte: crc_mismatch (reported by read_batches for the third batch)
    data = good + bad + bytes(damaged_crc) + good + bytes(40)  # then a zero tail (zero_fill)
    _, problems = both(data)
    assert [k for _, k, _ in problems] == ["record_error", "crc_mismatch", "zero_fill"]
    assert strict_outcome(data, fast=True) == strict_outcome(data, fast=False)
    assert strict_outcome(data, fast=True)[2] == "record_error"


def test_strict_file_reader(tmp_path):
    good = encode_batch(_seed_records(1), base_offset=0)
    bad = _set_records(good, good[61:-1], "none", None, True)
    path = tmp_path / "x.log"
    path.write_bytes(good + bad)
    with pytest.raises(CorruptDataError) as exc:
        records_table_from_file(path, strict=True)
    assert (exc.value.path, exc.value.kind) == (str(path), "record_error")
    log = ProblemLog(str(path))
    table = records_table_from_file(path, problems=log)
    assert table.num_rows == 1 and [p.kind for p in log.problems] == ["record_error"]

