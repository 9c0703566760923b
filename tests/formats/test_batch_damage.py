"""Damaged segments: problems with byte positions, resynchronisation, strict mode, fuzzing."""

from __future__ import annotations

import io
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from peer.damage import crafted
from workbench.errors import CorruptDataError
from workbench.formats.batch import Batch, Record, encode_batch, read_batches
from workbench.formats.problems import Problem, ProblemLog

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def make_segment(n: int = 12, seed: int = 1) -> tuple[bytes, list[int], list[list[Record]]]:
    """A real-looking segment: data batches in every codec, a transaction and its marker."""
    rnd = random.Random(seed)
    parts: list[bytes] = []
    expected: list[list[Record]] = []
    offset = 0
    for i in range(n):
        if i == 5:  # a COMMIT marker for the producer 42 transaction
            recs = [Record(offset, 1_700_000_000_000 + i, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 3), [])]
            parts.append(encode_batch(recs, base_offset=offset, is_control=True, is_transactional=True,
                                      producer_id=42, producer_epoch=0, partition_leader_epoch=1))
        else:
            recs = [Record(offset + j, 1_700_000_000_000 + i * 10 + j, b"key-%d" % rnd.randrange(100),
                           rnd.randbytes(rnd.randrange(0, 300)) if j % 4 else None,
                           [("trace", rnd.randbytes(8))] if j % 2 else []) for j in range(rnd.randrange(1, 9))]
            parts.append(encode_batch(recs, base_offset=offset, compression=CODECS[i % 5], partition_leader_epoch=1,
                                      producer_id=42 if i in (3, 4) else -1, producer_epoch=0 if i in (3, 4) else -1,
                                      base_sequence=offset if i in (3, 4) else -1, is_transactional=i in (3, 4)))
        expected.append(recs)
        offset += len(recs)
    positions = [sum(len(p) for p in parts[:i]) for i in range(n)]
    return b"".join(parts), positions, expected


def read(data: bytes, **kw) -> tuple[list[Batch], list[Problem]]:
    log = ProblemLog("seg.log")
    return list(read_batches(io.BytesIO(data), "seg.log", problems=log, **kw)), log.problems


def kinds(problems: list[Problem]) -> list[tuple[int, str]]:
    return [(p.position, p.kind) for p in problems]


def test_clean_segment_has_no_problems():
    data, positions, expected = make_segment()
    batches, problems = read(data)
    assert problems == []
    assert [b.position for b in batches] == positions
    assert [[(r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes) for r in b.records()]
            for b in batches] == [[(r.offset, r.timestamp, r.key, r.value, r.headers, 0) for r in exp]
                                  for exp in expected]


def test_truncated_tail_and_crc_corruption_give_exactly_two_problems():
    data, positions, expected = make_segment()
    damaged = bytearray(data[:-17])  # cut the last batch short
    k = 10  # an uncompressed data batch: flip a byte of its records
    assert damaged[positions[k] + 22] & 7 == 0
    damaged[positions[k] + 70] ^= 0xFF
    batches, problems = read(bytes(damaged))
    assert kinds(problems) == [(positions[k], "crc_mismatch"), (positions[-1], "truncated")]
    assert all(p.path == "seg.log" for p in problems)
    assert [b.position for b in batches] == positions[:-1]
    assert [b.crc_valid for b in batches] == [i != k for i in range(len(positions) - 1)]
    for i, b in enumerate(batches):
        if i != k:
            assert [(r.offset, r.key, r.value, r.headers) for r in b.records()] == [
                (r.offset, r.key, r.value, r.headers) for r in expected[i]
            ]
    # the damaged batch is still readable: same offsets, one changed byte
    assert [r.offset for r in batches[k].records()] == [r.offset for r in expected[k]]


def test_strict_mode_raises_at_the_first_problem():
    data, positions, _ = make_segment()
    damaged = bytearray(data)
    damaged[positions[6] + 70] ^= 0xFF
    with pytest.raises(CorruptDataError) as exc:
        list(read_batches(io.BytesIO(bytes(damaged)), "seg.log", strict=True))
    assert (exc.value.path, exc.value.position, exc.value.kind) == ("seg.log", positions[6], "crc_mismatch")
    with pytest.raises(CorruptDataError):
        list(read_batches(io.BytesIO(data[:-3]), "seg.log", problems=ProblemLog("seg.log"), strict=True))
    assert len(list(read_batches(io.BytesIO(data), strict=True))) == len(positions)


def test_zero_filled_tail_is_one_problem():
    data, positions, _ = make_segment()
    batches, problems = read(data + bytes(3 * 1024 * 1024 + 5))
    assert len(batches) == len(positions)
    assert kinds(problems) == [(len(data), "zero_fill")]
    assert str(3 * 1024 * 1024 + 5) in problems[0].detail
    batches, problems = read(data + bytes(9))  # shorter than a header
    assert len(batches) == len(positions) and kinds(problems) == [(len(data), "zero_fill")]


def test_zero_run_in_the_middle():
    data, positions, _ = make_segment()
    k = 4
    damaged = data[: positions[k]] + bytes(5000) + data[positions[k]:]
    batches, problems = read(damaged)
    assert kinds(problems) == [(positions[k], "zero_fill")]
    assert len(batches) == len(positions)
    assert [b.position for b in batches][k:] == [p + 5000 for p in positions[k:]]


def test_zero_run_followed_by_a_batch_with_offset_zero():
    batch = encode_batch([Record(0, 0, None, b"x", [])], base_offset=0, partition_leader_epoch=0)
    assert batch[:11] == bytes(11)
    batches, problems = read(bytes(100) + batch)
    assert [b.position for b in batches] == [100] and kinds(problems) == [(0, "zero_fill")]


def test_garbage_in_the_middle_is_skipped():
    data, positions, _ = make_segment()
    rnd = random.Random(7)
    garbage = rnd.randbytes(10_000)
    k = 7
    damaged = data[: positions[k]] + garbage + data[positions[k]:]
    batches, problems = read(damaged)
    assert len(problems) == 1 and problems[0].position == positions[k]
    assert f"byte {positions[k] + 10_000}" in problems[0].detail
    assert [b.position for b in batches] == positions[:k] + [p + 10_000 for p in positions[k:]]
    assert all(b.crc_valid for b in batches)


def test_absurd_length():
    data, positions, _ = make_segment()
    damaged = bytearray(data)
    struct.pack_into(">i", damaged, positions[3] + 8, 0x7FFFFFF0)
    batches, problems = read(bytes(damaged))
    assert kinds(problems) == [(positions[3], "bad_length")]
    assert [b.position for b in batches] == positions[:3] + positions[4:]
    struct.pack_into(">i", damaged, positions[3] + 8, 3)
    batches, problems = read(bytes(damaged))
    assert kinds(problems) == [(positions[3], "bad_length")]
    assert [b.position for b in batches] == positions[:3] + positions[4:]


def test_length_past_the_end_of_the_file_with_batches_behind_it():
    data, positions, _ = make_segment()
    damaged = bytearray(data)
    struct.pack_into(">i", damaged, positions[2] + 8, len(data))  # plausible but runs past EOF
    batches, problems = read(bytes(damaged))
    assert kinds(problems) == [(positions[2], "bad_length")]
    assert [b.position for b in batches] == positions[:2] + positions[3:]


def test_length_too_long_inside_the_file():
    data, positions, _ = make_segment()
    damaged = bytearray(data)
    struct.pack_into(">i", damaged, positions[2] + 8, positions[5] - positions[2])  # swallows 3 batches
    batches, problems = read(bytes(damaged))
    assert kinds(problems) == [(positions[2], "garbage")]
    assert [b.position for b in batches] == positions[:2] + positions[3:]


def test_unknown_magic_and_unknown_codec():
    data, positions, _ = make_segment()
    damaged = bytearray(data)
    damaged[positions[4] + 16] = 7
    batches, problems = read(bytes(damaged))
    assert kinds(problems) == [(positions[4], "unknown_magic")]
    assert [b.position for b in batches] == positions[:4] + positions[5:]
    # codec 6 with a valid CRC: the batch is real, yielded, its records are not decodable
    good = encode_batch([Record(0, 0, None, b"x", [])], base_offset=0)
    weird = bytearray(good)
    weird[22] |= 6
    import crc32c

    struct.pack_into(">I", weird, 17, crc32c.crc32c(bytes(weird[21:])))
    batches, problems = read(bytes(weird) + good)
    assert kinds(problems) == [(0, "unknown_codec")]
    assert [b.compression for b in batches] == ["unknown", "none"]
    log = ProblemLog("seg.log")
    assert batches[0].records(log) == [] and kinds(log.problems) == [(0, "unknown_codec")]


def test_decompress_and_record_errors_are_reported_by_records():
    recs = [Record(i, i, None, b"v" * 50, []) for i in range(5)]
    good = encode_batch(recs, base_offset=0, compression="gzip")
    bad = bytearray(good)
    bad[-12] ^= 0x55  # inside the deflate data
    import crc32c

    struct.pack_into(">I", bad, 17, crc32c.crc32c(bytes(bad[21:])))
    [b], problems = read(bytes(bad))
    assert problems == []
    log = ProblemLog("seg.log")
    b.records(log)
    assert kinds(log.problems) == [(0, "decompress_error")]
    # an uncompressed batch whose record count says more than it holds
    raw = bytearray(encode_batch(recs, base_offset=0))
    struct.pack_into(">i", raw, 57, 7)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    [b] = read(bytes(raw))[0]
    log = ProblemLog("seg.log")
    assert [r.offset for r in b.records(log)] == [0, 1, 2, 3, 4]
    assert [p.kind for p in log.problems] == ["record_error"]
    with pytest.raises(CorruptDataError):
        b.records(ProblemLog("seg.log", strict=True))


def test_legacy_segment_damage():
    msgs = [encode_batch([Record(i, 1000 + i, None, b"m%d" % i, [])], base_offset=i, magic=1) for i in range(6)]
    positions = [sum(len(m) for m in msgs[:i]) for i in range(6)]
    damaged = bytearray(b"".join(msgs))
    damaged[positions[2] + 30] ^= 1  # value byte
    damaged = bytes(damaged[: positions[4]]) + b"\x99" * 33 + bytes(damaged[positions[4]:])
    batches, problems = read(damaged)
    assert kinds(problems) == [(positions[2], "crc_mismatch"), (positions[4], "unknown_magic")]
    assert [b.base_offset for b in batches] == [0, 1, 2, 3, 4, 5]


@pytest.fixture()
def crc_work(monkeypatch):
    """Bytes the careful reader runs a checksum over (CRC-32C of v2 batches, CRC-32 of legacy
    messages), counted: the reader's work, measured without a clock. Time is measured in
    ``benchmarks/bench_damage.py``."""
    import workbench.formats.batch as batch_module

    counted = [0]
    crc32c_real, crc32_real = batch_module._crc32c, batch_module._crc32

    def crc32c_counting(data, *args):
        counted[0] += len(data)
        return crc32c_real(data, *args)

    def crc32_counting(data, *args):
        counted[0] += len(data)
        return crc32_real(data, *args)

    monkeypatch.setattr(batch_module, "_crc32c", crc32c_counting)
    monkeypatch.setattr(batch_module, "_crc32", crc32_counting)
    return counted


def test_huge_garbage_is_scanned_with_linear_work(crc_work):
    """8 MiB of random bytes inside a segment: resynchronising checksums each byte at most twice
    (the batches after it are checked once while resynchronising, once when read)."""
    data, positions, _ = make_segment()
    rnd = random.Random(3)
    garbage = rnd.randbytes(8 * 1024 * 1024)
    damaged = data[: positions[6]] + garbage + data[positions[6]:]
    batches, problems = read(damaged)
    assert len(batches) == len(positions) and len(problems) == 1
    assert crc_work[0] >= len(data)  # every intact batch was checked
    assert crc_work[0] <= 2 * len(damaged), crc_work[0]


def test_mostly_zero_garbage_with_sparse_magic_bytes(crc_work):
    # a pathological pattern: many plausible-looking headers with a bad checksum
    data, positions, _ = make_segment()
    bogus = encode_batch([Record(0, 0, None, b"q" * 30, [])], base_offset=0)
    bogus = bogus[:70] + b"\xff" + bogus[71:]  # checksum wrong
    junk = bogus[:40] * 3000  # truncated bogus headers with sane lengths
    damaged = data[: positions[3]] + junk + data[positions[3]:]
    batches, problems = read(damaged)
    assert len(batches) == len(positions) and len(problems) == 1
    assert len(data) <= crc_work[0] <= 2 * len(damaged), crc_work[0]


def test_a_long_run_of_crafted_headers_loses_no_batch_after_it(crc_work):
    """3000 crafted cycles hold thousands of misaligned plausible candidates whose lengths fit in
    the file (about 100 kB each, 600 MB in all): each is checked, from the running CRC, and the
    batches after them are found with each byte checksummed a few times at most."""
    data, positions, _ = make_segment()
    damaged = crafted(3000, data, positions[4])
    batches, problems = read(damaged)
    assert [b.base_offset for b in batches] == [b.base_offset for b in read(data)[0]]
    assert kinds(problems) == [(positions[4], "unknown_magic")]
    assert crc_work[0] <= 4 * len(damaged), crc_work[0]


@pytest.mark.parametrize("cycles", [6000])
def test_a_run_of_crafted_headers_too_long_for_any_work_budget_loses_no_batch(crc_work, tmp_path, cycles):
    """6000 cycles: their candidates claim 1.2 GB of checksum between them. The reader that
    checked each candidate's bytes gave up after two pools of 256 MiB and lost the 8 batches after
    the run (one ``unknown_magic`` saying "no further batch found"); the running CRC checks every
    candidate in work proportional to the file, and the compiled scan of the ``batches`` table,
    which hands damage to this reader, finds them too."""
    from workbench.formats.fastscan import scan_batch_columns

    data, positions, _ = make_segment()
    damaged = crafted(cycles, data, positions[4])
    batches, problems = read(damaged)
    clean = read(data)[0]
    assert [b.base_offset for b in batches] == [b.base_offset for b in clean]
    assert [b.position for b in batches[4:]] == [p + len(damaged) - len(data) for p in positions[4:]]
    assert kinds(problems) == [(positions[4], "unknown_magic")]
    assert "skipped to the next batch at byte" in problems[0].detail
    assert crc_work[0] <= 4 * len(damaged), crc_work[0]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(damaged)
    log = ProblemLog(str(path))
    scanned = [int(x) for piece in scan_batch_columns(path, str(path), problems=log) for x in piece["position"]]
    assert scanned == [b.position for b in batches]
    assert [(p.position, p.kind) for p in log.problems] == kinds(problems)


# --------------------------------------------------------------------------------------------
# fuzzing

SEGMENT, POSITIONS, _ = make_segment(8, seed=5)
BOUNDS = list(zip(POSITIONS, POSITIONS[1:] + [len(SEGMENT)], strict=True))


def run_both_modes(data: bytes) -> list[Batch]:
    log = ProblemLog("fuzz.log")
    batches = list(read_batches(io.BytesIO(data), "fuzz.log", problems=log))
    for b in batches:
        b.records(log)
    try:
        for b in read_batches(io.BytesIO(data), "fuzz.log", strict=True):
            b.records(ProblemLog("fuzz.log", strict=True))
    except CorruptDataError:
        pass
    return batches


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000))
def test_fuzz_random_bytes(data):
    run_both_modes(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(SEGMENT) - 1), st.integers(0, 255)), min_size=1, max_size=6))
def test_fuzz_byte_flips_keep_untouched_batches(flips):
    data = bytearray(SEGMENT)
    for pos, value in flips:
        data[pos] = value
    batches = run_both_modes(bytes(data))
    touched = {i for pos, _ in flips for i, (s, e) in enumerate(BOUNDS) if s <= pos < e}
    got = {(b.position, bytes(b.data)) for b in batches if b.crc_valid}
    for i, (s, e) in enumerate(BOUNDS):
        if i not in touched:
            assert (s, SEGMENT[s:e]) in got


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(POSITIONS)), st.binary(min_size=1, max_size=500), st.integers(0, len(SEGMENT)))
def test_fuzz_inserted_garbage_and_truncation(where, garbage, cut):
    at = POSITIONS[where] if where < len(POSITIONS) else len(SEGMENT)
    data = SEGMENT[:at] + garbage + SEGMENT[at:]
    data = data[: max(cut, at + len(garbage))]
    batches = run_both_modes(data)
    got = {bytes(b.data) for b in batches if b.crc_valid}
    for s, e in BOUNDS:
        shifted_end = e if s < at else e + len(garbage)
        if shifted_end <= len(data):
            assert SEGMENT[s:e] in got


@pytest.fixture
def tiny_windows(monkeypatch):
    import workbench.formats.batch as mod

    monkeypatch.setattr(mod, "CHUNK_SIZE", 37)
    monkeypatch.setattr(mod, "_SCAN_WINDOW", 29)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, len(SEGMENT) - 1), st.binary(min_size=1, max_size=64)), max_size=4),
       st.integers(0, 200))
def test_fuzz_with_tiny_read_windows(tiny_windows, edits, zeros):
    data = bytearray(SEGMENT)
    for pos, chunk in edits:
        data[pos : pos + len(chunk)] = chunk
    data = bytes(data) + bytes(zeros)
    batches = run_both_modes(data)
    touched = {i for pos, chunk in edits for i, (s, e) in enumerate(BOUNDS) if pos < e and pos + len(chunk) > s}
    got = {(b.position, bytes(b.data)) for b in batches if b.crc_valid}
    for i, (s, e) in enumerate(BOUNDS):
        if i not in touched:
            assert (s, SEGMENT[s:e]) in got


def test_zero_run_across_read_windows(tiny_windows):
    data, positions, _ = make_segment()
    k = 4
    damaged = data[: positions[k]] + bytes(5000) + data[positions[k]:] + bytes(3000)
    batches, problems = read(damaged)
    assert kinds(problems) == [(positions[k], "zero_fill"), (len(damaged) - 3000, "zero_fill")]
    assert [b.position for b in batches] == positions[:k] + [p + 5000 for p in positions[k:]]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 7), st.integers(-1, 50), st.binary(max_size=400), st.booleans())
def test_fuzz_record_payloads_behind_a_valid_crc(codec, count, payload, encode_valid_stream):
    """Random record bytes (or a valid stream of random bytes) in a batch whose CRC is right."""
    import crc32c

    from workbench.formats.compression import compress

    if encode_valid_stream and 0 < codec < 5:
        payload = compress(["none", "gzip", "snappy", "lz4", "zstd"][codec], payload)
    tail = struct.pack(">hiqqqhii", codec | 0x08 * (count % 2), max(count, 0), 1000, 2000, -1, -1, -1, count) + payload
    data = struct.pack(">qiibI", 0, len(tail) + 9, 0, 2, crc32c.crc32c(tail)) + tail
    [b] = read(data)[0]
    assert b.crc_valid
    b.records(ProblemLog("fuzz.log"))
    try:
        b.records(ProblemLog("fuzz.log", strict=True))
    except CorruptDataError:
        pass
