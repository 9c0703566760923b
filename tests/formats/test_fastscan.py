"""The fast batch-table scan gives exactly what the careful reader gives: rows and problems.

:func:`workbench.formats.fastscan.scan_batch_columns` hops over clean headers and checks CRCs in
bulk, handing over to :func:`read_batches` wherever anything is not clean. These tests compare
the two readers as whole tables (every column of every row) and as problem lists, on every
segment and snapshot of real Kafka bundles, on generated files that exercise both hopping modes
and every hand-over, and on randomly damaged files. The corruption corpus
(``test_corruption_corpus.py``) runs the same comparison on its thousands of damaged files.
"""

from __future__ import annotations

import itertools
import random
import struct
from pathlib import Path

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import CorruptDataError
from workbench.formats.batch import BATCH_COLUMNS, Record, batch_columns, encode_batch, read_batches
from workbench.formats.fastscan import SCAN_COLUMNS, as_lists, concat_columns, scan_batch_columns
from workbench.formats.problems import ProblemLog

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def careful(path: Path, **kw) -> tuple[dict, list[tuple[int, str, str]]]:
    log = ProblemLog(str(path))
    with open(path, "rb") as f:
        cols = batch_columns(read_batches(f, str(path), problems=log, **kw))
    return cols, [(p.position, p.kind, p.detail) for p in log.problems]


def fast(path: Path, **kw) -> tuple[dict, list[tuple[int, str, str]], dict]:
    log = ProblemLog(str(path))
    cols = concat_columns(list(scan_batch_columns(path, problems=log, **kw)))
    return as_lists(cols, str(path)), [(p.position, p.kind, p.detail) for p in log.problems], cols


def assert_same(path: Path, **kw) -> dict:
    """The fast scan equals the careful reader on ``path`` (lenient and strict); returns the table."""
    want, want_problems = careful(path, **{k: v for k, v in kw.items() if k != "chunk"})
    got, got_problems, raw = fast(path, **kw)
    assert got_problems == want_problems
    for name in BATCH_COLUMNS:
        assert got[name] == want[name], name
    strict_errors = []
    for reader in (careful, fast):
        try:
            reader(path, strict=True, **{k: v for k, v in kw.items() if k != "chunk" or reader is fast})
        except CorruptDataError as exc:
            strict_errors.append((exc.path, exc.position, exc.kind))
        else:
            strict_errors.append(None)
    assert strict_errors[0] == strict_errors[1]
    assert (strict_errors[0] is None) == (not want_problems)
    return raw


def segment(specs: list[tuple[int, int, str]], seed: int = 7) -> tuple[bytes, list[int]]:
    """Batches of (records, value bytes, codec); returns the bytes and the batch positions."""
    rnd = random.Random(seed)
    parts, positions, offset, at = [], [], 0, 0
    for i, (n, value_bytes, codec) in enumerate(specs):
        recs = [Record(offset + j, 1_700_000_000_000 + i * 7 + j, b"k%d" % j if j % 3 else None,
                       rnd.randbytes(value_bytes), [("h", b"v")] if j % 4 == 1 else []) for j in range(n)]
        data = encode_batch(recs, base_offset=offset, compression=codec, producer_id=5 if i % 2 else -1,
                            producer_epoch=1 if i % 2 else -1, base_sequence=offset if i % 2 else -1,
                            partition_leader_epoch=i % 3, is_transactional=i % 5 == 3,
                            timestamp_type="LogAppendTime" if i % 6 == 5 else "CreateTime")
        parts.append(data)
        positions.append(at)
        at += len(data)
        offset += n
    return b"".join(parts), positions


def test_real_kafka_segments_and_snapshots(kafka_bundle):
    """Every .log and .checkpoint of real bundles, both Kafka versions: identical tables."""
    files = []
    for name, version in itertools.product(("isr", "consumer_lag", "quorum", "tiered", "mm2"), ("4.3.1", "3.9.2")):
        bundle = Path(kafka_bundle(name, version))
        files += sorted(p for p in bundle.glob("nodes/*/**/*") if p.suffix in (".log", ".checkpoint") and p.is_file())
    assert len(files) > 100
    rows = 0
    for path in files:
        raw = assert_same(path)
        rows += len(raw["position"])
        assert raw["crc_checked"].all() and raw["crc_valid"].all(), path
    assert rows > 1000


def test_large_and_small_batches_switch_hopping_modes(tmp_path):
    """Runs of tiny batches (compiled windows) between large ones (one read per header)."""
    specs = ([(50, 300, "none")] * 3 + [(1, 10, "none")] * 700 + [(80, 400, "lz4")] * 2
             + [(2, 5, "zstd")] * 300 + [(30, 2000, "none")])
    data, positions = segment(specs)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    raw = assert_same(path)
    assert raw["position"].tolist() == positions
    for chunk in (1, 3, 64, 1000):  # pieces end mid-run and resume
        raw = assert_same(path, chunk=chunk)
        assert raw["position"].tolist() == positions


def test_ranges_and_header_only_mode(tmp_path):
    data, positions = segment([(3, 100, CODECS[i % 5]) for i in range(40)])
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    for start, end in ((0, None), (positions[5], None), (positions[5], positions[20]), (0, positions[20] + 1),
                       (positions[39], positions[39])):
        raw = assert_same(path, start=start, end=end)
        assert raw["position"].tolist() == [p for p in positions if p >= start and (end is None or p < end)]
    checked = concat_columns(list(scan_batch_columns(path)))
    headers_only = concat_columns(list(scan_batch_columns(path, verify=False)))
    for name in SCAN_COLUMNS:
        if name not in ("crc_valid", "crc_checked"):
            assert np.array_equal(checked[name], headers_only[name]), name
    assert not headers_only["crc_checked"].any() and checked["crc_checked"].all()


def test_legacy_and_control_batches_go_through_the_careful_reader(tmp_path):
    v0 = encode_batch([(0, -1, b"a", b"1"), (1, -1, b"b", b"2")], base_offset=0, magic=0, compression="gzip")
    v1 = encode_batch([(2, 5, None, b"3")], base_offset=2, magic=1)
    v2, _ = segment([(4, 50, "none")] * 5)
    marker = encode_batch([Record(100, 9, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 0), [])], base_offset=100,
                          is_control=True, is_transactional=True, producer_id=3, producer_epoch=0)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(v0 + v1 + v2 + marker + v1 + v2)
    raw = assert_same(path)
    assert raw["magic"].tolist().count(2) == 11 and raw["is_control"].sum() == 1


def flip(data: bytearray, pos: int) -> None:
    data[pos] ^= 0x40


def test_every_kind_of_damage_in_the_middle_of_a_clean_run(tmp_path):
    data, positions = segment([(5, 120, "none")] * 30)
    size = len(data)
    damages = {
        "crc_mismatch": lambda d: flip(d, positions[10] + 100),
        "bad_length": lambda d: d.__setitem__(slice(positions[10] + 8, positions[10] + 12), struct.pack(">i", 7)),
        "huge_length": lambda d: d.__setitem__(slice(positions[10] + 8, positions[10] + 12), struct.pack(">i", 2**30)),
        "unknown_magic": lambda d: d.__setitem__(positions[10] + 16, 9),
        "zero_fill": lambda d: d.__setitem__(slice(positions[10], positions[13]), bytes(positions[13] - positions[10])),
        "garbage": lambda d: d.__setitem__(slice(positions[10], positions[11]),
                                           random.Random(3).randbytes(positions[11] - positions[10])),
        "unknown_codec": lambda d: _recode(d, positions[10], 6),
        "truncated": lambda d: d.__delitem__(slice(positions[29] + 70, size)),
        "zero_tail": lambda d: d.extend(bytes(5000)),
        "negative_length": lambda d: d.__setitem__(slice(positions[10] + 8, positions[10] + 12),
                                                   struct.pack(">i", -5)),
    }
    for name, damage in damages.items():
        d = bytearray(data)
        damage(d)
        path = tmp_path / f"{name}.log"
        path.write_bytes(bytes(d))
        want, want_problems = careful(path)
        assert want_problems, name
        assert_same(path)
        assert_same(path, chunk=4)


def _recode(d: bytearray, pos: int, codec: int) -> None:
    """Set the codec bits of the v2 batch at ``pos`` and fix its CRC (a valid batch, unknown codec)."""
    attrs = struct.unpack_from(">h", d, pos + 21)[0]
    struct.pack_into(">h", d, pos + 21, (attrs & ~7) | codec)
    length = struct.unpack_from(">i", d, pos + 8)[0]
    struct.pack_into(">I", d, pos + 17, crc32c.crc32c(bytes(d[pos + 21 : pos + 12 + length])))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_damage_matches_the_careful_reader(tmp_path, data):
    base, _ = segment([(data.draw(st.integers(1, 4)), data.draw(st.integers(0, 600)), "none")
                       for _ in range(12)], seed=data.draw(st.integers(0, 5)))
    d = bytearray(base)
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "zero", "cut", "junk"]))
        pos = data.draw(st.integers(0, max(0, len(d) - 1)))
        if action == "flip" and d:
            d[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif action == "zero":
            n = data.draw(st.integers(1, 300))
            d[pos : pos + n] = bytes(len(d[pos : pos + n]))
        elif action == "cut":
            del d[pos:]
        else:
            d[pos:pos] = data.draw(st.binary(min_size=1, max_size=80))
    path = tmp_path / "fuzz.log"
    path.write_bytes(bytes(d))
    assert_same(path, chunk=data.draw(st.sampled_from([2, 7, 1 << 16])))


def test_empty_and_tiny_files(tmp_path):
    for content in (b"", b"\x00", bytes(60), b"\x01" * 61):
        path = tmp_path / "tiny.log"
        path.write_bytes(content)
        assert_same(path)


@pytest.mark.parametrize("verify", [True, False])
def test_pieces_bound_memory(tmp_path, verify):
    data, positions = segment([(1, 0, "none")] * 2000)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    pieces = list(scan_batch_columns(path, chunk=256, verify=verify))
    assert max(len(p["position"]) for p in pieces) <= 256
    assert concat_columns(pieces)["position"].tolist() == positions


def test_clean_files_never_need_the_careful_reader(tmp_path, monkeypatch, kafka_bundle):
    """On intact files every row comes from hopping; damage hands over to the careful reader."""
    import workbench.formats.fastscan as fastscan

    calls = []
    real = fastscan.read_batches

    def counting(*args, **kw):
        calls.append(kw.get("start"))
        return real(*args, **kw)

    monkeypatch.setattr(fastscan, "read_batches", counting)
    data, positions = segment([(2, 100, CODECS[i % 5]) for i in range(50)] + [(1, 3, "none")] * 500)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    for verify in (True, False):
        assert concat_columns(list(scan_batch_columns(path, verify=verify)))["position"].tolist() == positions
    real_segment = next(p for p in sorted(Path(kafka_bundle("consumer_lag")).glob("nodes/*/logs/lag-zstd-0/*.log"))
                        if p.stat().st_size)
    list(scan_batch_columns(real_segment))
    assert calls == []
    d = bytearray(data)
    flip(d, positions[20] + 70)
    path.write_bytes(bytes(d))
    assert concat_columns(list(scan_batch_columns(path)))["position"].tolist() == positions
    assert calls == [positions[20]]


def test_without_positioned_reads_the_careful_reader_serves(tmp_path, monkeypatch):
    """Where ``os.preadv`` is missing (Windows) the scan is the careful reader's, still in pieces."""
    import os

    data, positions = segment([(2, 50, "none")] * 30)
    d = bytearray(data)
    flip(d, positions[7] + 70)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(d) + bytes(300))
    with_preadv = assert_same(path, chunk=4)
    monkeypatch.delattr(os, "preadv")
    without = assert_same(path, chunk=4)
    assert all(np.array_equal(with_preadv[name], without[name]) for name in SCAN_COLUMNS)
    assert max(len(p["position"]) for p in scan_batch_columns(path, chunk=4)) == 4
