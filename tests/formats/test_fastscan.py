"""The fast batch-table scan: the rows and problems of real and generated files, damaged or not.

:func:`workbench.formats.fastscan.scan_batch_columns` hops over clean headers and checks CRCs in
bulk, handing over to :func:`read_batches` (the careful reader) wherever anything is not clean.
On intact files (every segment and snapshot of the real Kafka bundles, generated files that
exercise both hopping modes) the two readers give the same whole tables. On damaged files the
expected table comes from the damage itself, never from the careful reader the fast scan hands
over to: the clean file's rows, less the batches the damage destroyed, with ``crc_valid`` false
where a batch's bytes changed, and one problem at the damaged batch's position; both readers
must give exactly that. The corruption corpus (``test_corruption_corpus.py``) checks the same
on thousands of damaged copies of real Kafka segments.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from peer.scenario import built_on
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
    for name, version in [(n, v) for n in ("isr", "consumer_lag", "quorum", "tiered", "mm2") for v in built_on(n)]:
        bundle = Path(kafka_bundle(name, version))
        files += sorted(p for p in bundle.glob("nodes/*/logs/**/*")
                        if p.suffix in (".log", ".checkpoint") and p.is_file())
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


def clean_rows(path: Path, positions: list[int]) -> dict:
    """The rows of an intact generated file (anchored on the positions the generator wrote)."""
    want, problems = careful(path)
    assert problems == [] and want["position"] == positions
    assert all(want["crc_valid"])
    return want


def damaged_rows(clean: dict, path: Path, *, lost: tuple[int, ...] = (), invalid: tuple[int, ...] = (),
                 changed: dict[int, dict] | None = None) -> dict:
    """The clean file's rows as the damage leaves them: batches ``lost`` gone, ``crc_valid``
    false for ``invalid``, fields ``changed`` per batch index, the damaged file's path."""
    changed = changed or {}
    keep = [i for i in range(len(clean["position"])) if i not in lost]
    out = {}
    for name, values in clean.items():
        col = []
        for i in keep:
            v = values[i]
            if name == "path":
                v = str(path)
            elif name == "crc_valid" and i in invalid:
                v = False
            if name in changed.get(i, {}):
                v = changed[i][name]
            col.append(v)
        out[name] = col
    return out


def assert_reads_as(path: Path, want: dict, want_problems: list[tuple[int, str]], **kw) -> None:
    """Both readers give exactly ``want`` and problems at ``want_problems`` (position, kind);
    strict mode stops at the first of them."""
    got_careful, problems_careful = careful(path, **{k: v for k, v in kw.items() if k != "chunk"})
    got_fast, problems_fast, _ = fast(path, **kw)
    for reader, got, problems in (("careful", got_careful, problems_careful), ("fast", got_fast, problems_fast)):
        for name in BATCH_COLUMNS:
            assert got[name] == want[name], (reader, name)
        assert [(p[0], p[1]) for p in problems] == want_problems, reader
        assert all(p[2] for p in problems), reader  # every problem says what it saw
    for reader in (careful, fast):
        with pytest.raises(CorruptDataError) as info:
            reader(path, strict=True, **{k: v for k, v in kw.items() if k != "chunk" or reader is fast})
        assert (info.value.path, info.value.position, info.value.kind) == (str(path), *want_problems[0])


def test_every_kind_of_damage_in_the_middle_of_a_clean_run(tmp_path):
    """One damage at a time in batch 10 of 30 (or at the end): only what it touched is lost."""
    data, positions = segment([(5, 120, "none")] * 30)
    size = len(data)
    clean_path = tmp_path / "clean.log"
    clean_path.write_bytes(data)
    clean = clean_rows(clean_path, positions)
    at = positions[10]
    junk = random.Random(3).randbytes(positions[11] - at)
    assert junk[16] > 2  # the garbage's magic byte is not a known magic
    # name: (damage, batches lost, batches with a bad CRC, fields changed, problems)
    damages = {
        "crc_mismatch": (lambda d: flip(d, at + 100), (), (10,), {}, [(at, "crc_mismatch")]),
        "bad_length": (lambda d: d.__setitem__(slice(at + 8, at + 12), struct.pack(">i", 7)),
                       (10,), (), {}, [(at, "bad_length")]),
        "huge_length": (lambda d: d.__setitem__(slice(at + 8, at + 12), struct.pack(">i", 2**30)),
                        (10,), (), {}, [(at, "bad_length")]),
        "negative_length": (lambda d: d.__setitem__(slice(at + 8, at + 12), struct.pack(">i", -5)),
                            (10,), (), {}, [(at, "bad_length")]),
        "unknown_magic": (lambda d: d.__setitem__(at + 16, 9), (10,), (), {}, [(at, "unknown_magic")]),
        "zero_fill": (lambda d: d.__setitem__(slice(at, positions[13]), bytes(positions[13] - at)),
                      (10, 11, 12), (), {}, [(at, "zero_fill")]),
        "garbage": (lambda d: d.__setitem__(slice(at, positions[11]), junk), (10,), (), {}, [(at, "unknown_magic")]),
        # a valid CRC over codec id 6: the batch is read, its records cannot be
        "unknown_codec": (lambda d: _recode(d, at, 6), (), (),
                          {10: {"compression": "unknown", "attributes": 6}}, [(at, "unknown_codec")]),
        "truncated": (lambda d: d.__delitem__(slice(positions[29] + 70, size)), (29,), (), {},
                      [(positions[29], "truncated")]),
        "zero_tail": (lambda d: d.extend(bytes(5000)), (), (), {}, [(size, "zero_fill")]),
    }
    for name, (damage, lost, invalid, changed, problems) in damages.items():
        d = bytearray(data)
        damage(d)
        path = tmp_path / f"{name}.log"
        path.write_bytes(bytes(d))
        if name == "unknown_codec":
            changed = {10: {**changed[10], "crc": struct.unpack_from(">I", d, at + 17)[0]}}
        want = damaged_rows(clean, path, lost=lost, invalid=invalid, changed=changed)
        assert_reads_as(path, want, problems)
        assert_reads_as(path, want, problems, chunk=4)


def _recode(d: bytearray, pos: int, codec: int) -> None:
    """Set the codec bits of the v2 batch at ``pos`` and fix its CRC (a valid batch, unknown codec)."""
    attrs = struct.unpack_from(">h", d, pos + 21)[0]
    struct.pack_into(">h", d, pos + 21, (attrs & ~7) | codec)
    length = struct.unpack_from(">i", d, pos + 8)[0]
    struct.pack_into(">I", d, pos + 17, crc32c.crc32c(bytes(d[pos + 21 : pos + 12 + length])))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_damage_loses_only_damaged_batches(tmp_path, data):
    """Random flips, zeroed runs, cuts and insertions: every batch before the first changed byte
    reads as in the clean file, every batch read with a valid CRC is one of the clean file's
    batches (in the bytes its CRC covers), and no problem lies before the batch the damage starts
    in; the fast scan agrees with the careful reader."""
    base, positions = segment([(data.draw(st.integers(1, 4)), data.draw(st.integers(0, 600)), "none")
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
    damaged = bytes(d)
    first = next((i for i, (a, b) in enumerate(zip(base, damaged, strict=False)) if a != b),
                 min(len(base), len(damaged)))
    if damaged == base:
        return
    clean_path = tmp_path / "clean.log"
    clean_path.write_bytes(base)
    clean = clean_rows(clean_path, positions)
    path = tmp_path / "fuzz.log"
    path.write_bytes(damaged)
    chunk = data.draw(st.sampled_from([2, 7, 1 << 16]))
    got, problems, _ = fast(path, chunk=chunk)
    sizes = dict(zip(positions, clean["size"], strict=True))
    intact = [i for i, p in enumerate(positions) if p + sizes[p] <= first]
    start = positions[len(intact)] if len(intact) < len(positions) else len(base)
    for name in BATCH_COLUMNS:
        if name != "path":
            assert got[name][: len(intact)] == [clean[name][i] for i in intact], name
    # the CRC covers a batch from its attributes on: base offset, length and leader epoch may
    # differ from the clean batch's without the CRC seeing it
    uncovered = ("path", "position", "base_offset", "last_offset", "partition_leader_epoch")
    clean_batches = {base[p + 16 : p + sizes[p]]: i for i, p in enumerate(positions)}
    for j, (pos, size, valid) in enumerate(zip(got["position"], got["size"], got["crc_valid"], strict=True)):
        if valid and got["magic"][j] == 2:
            i = clean_batches.get(damaged[pos + 16 : pos + size])
            assert i is not None, f"batch at {pos} has a valid CRC but is none of the clean batches"
            for name in BATCH_COLUMNS:
                if name not in uncovered:
                    assert got[name][j] == clean[name][i], (pos, name)
    assert all(p[0] >= start for p in problems), (start, problems)
    want_careful, careful_problems = careful(path)
    assert [(p[0], p[1]) for p in problems] == [(p[0], p[1]) for p in careful_problems]
    assert got == want_careful


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
    clean_path = tmp_path / "clean.log"
    clean_path.write_bytes(data)
    clean = clean_rows(clean_path, positions)
    d = bytearray(data)
    flip(d, positions[7] + 70)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(d) + bytes(300))
    want = damaged_rows(clean, path, invalid=(7,))
    problems = [(positions[7], "crc_mismatch"), (len(data), "zero_fill")]
    assert_reads_as(path, want, problems, chunk=4)
    with_preadv = fast(path, chunk=4)[2]
    monkeypatch.delattr(os, "preadv")
    assert_reads_as(path, want, problems, chunk=4)
    without = fast(path, chunk=4)[2]
    assert all(np.array_equal(with_preadv[name], without[name]) for name in SCAN_COLUMNS)
    assert max(len(p["position"]) for p in scan_batch_columns(path, chunk=4)) == 4
