"""Segment names and reading the fixture segments (clean and damaged) from disk."""

from __future__ import annotations

import io
import pathlib
import struct

import crc32c
import pytest

from workbench.errors import CorruptDataError
from workbench.formats.problems import ProblemLog
from workbench.formats.segment import parse_checkpoint_name, parse_segment_name, read_segment, segment_name

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "batch"
T0 = 1_700_000_000_000
CLEAN = FIXTURES / "00000000000000000000.log"
CLEAN_SIZE = CLEAN.stat().st_size

# (position, base offset, last offset, count, codec, timestamp type, transactional, control, producer id)
EXPECTED_BATCHES = [
    (0, 0, 0, 1, "none", "CreateTime", False, False, -1),
    (None, 1, 2, 2, "gzip", "CreateTime", False, False, -1),
    (None, 3, 3, 1, "lz4", "CreateTime", True, False, 9),
    (None, 4, 4, 1, "none", "CreateTime", True, True, 9),
    (None, 5, 5, 1, "zstd", "LogAppendTime", False, False, -1),
]
EXPECTED_RECORDS = [
    [(0, T0, b"a", b"alpha", [])],
    [(1, T0 + 1, b"b", b"beta", [("h", b"1")]), (2, T0 + 2, b"c", None, [])],
    [(3, T0 + 3, None, b"gamma" * 20, [])],
    [(4, T0 + 4, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 5), [])],
    [(5, T0 + 50, b"e", b"epsilon", [])],  # LogAppendTime: the batch max timestamp
]


def summary(b):
    return (b.base_offset, b.last_offset, b.record_count, b.compression, b.timestamp_type,
            b.is_transactional, b.is_control, b.producer_id)


def records(b):
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records(ProblemLog(strict=True))]


@pytest.mark.parametrize("name", ["00000000000000000000.log", "damaged.log"])
def test_fixture_segments(name):
    log = ProblemLog(str(FIXTURES / name))
    batches = list(read_segment(FIXTURES / name, problems=log))
    assert [summary(b) for b in batches] == [e[1:] for e in EXPECTED_BATCHES]
    assert batches[0].position == 0 and all(b.path == str(FIXTURES / name) for b in batches)
    assert [b.position for b in batches[1:]] == [a.position + a.size for a in batches[:-1]]
    assert batches[-1].position + batches[-1].size == CLEAN_SIZE
    if name == "damaged.log":
        assert [(p.position, p.kind) for p in log.problems] == [
            (0, "crc_mismatch"), (CLEAN_SIZE, "zero_fill"), (CLEAN_SIZE + 40, "garbage")]
        assert [b.crc_valid for b in batches] == [False, True, True, True, True]
        assert records(batches[0]) == [(0, T0, b"a", b"aLpha", [])]
        assert [records(b) for b in batches[1:]] == EXPECTED_RECORDS[1:]
    else:
        assert log.problems == [] and all(b.crc_valid for b in batches)
        assert [records(b) for b in batches] == EXPECTED_RECORDS


def test_damaged_fixture_in_strict_mode():
    with pytest.raises(CorruptDataError) as exc:
        list(read_segment(FIXTURES / "damaged.log", strict=True))
    assert exc.value.position == 0 and exc.value.kind == "crc_mismatch"


def test_legacy_fixture():
    batches = list(read_segment(FIXTURES / "legacy-v1-snappy.log", strict=True))
    assert [(b.magic, b.base_offset, b.last_offset, b.record_count, b.compression) for b in batches] == [
        (1, 0, 1, 2, "snappy"), (1, 2, 2, 1, "none")]
    assert [records(b) for b in batches] == [
        [(0, T0, b"k", b"v0", []), (1, T0 + 1, None, b"v1", [])], [(2, T0 + 2, b"k", b"v2", [])]]


def test_read_segment_from_a_file_object_and_byte_range():
    with open(CLEAN, "rb") as f:
        all_batches = list(read_segment(f))
    with open(CLEAN, "rb") as f:
        part = list(read_segment(f, start=all_batches[2].position, end=all_batches[4].position))
    assert [b.base_offset for b in part] == [3, 4] and part[0].path == str(CLEAN)
    data = CLEAN.read_bytes()
    assert [b.base_offset for b in read_segment(io.BytesIO(data))] == [0, 1, 3, 4, 5]


def test_hand_assembled_fixture_batch_bytes():
    data = CLEAN.read_bytes()
    # base offset 0, length 62, leader epoch 0, magic 2; one record: length 12, attributes 0,
    # deltas 0, key "a", value "alpha", no headers
    assert data[:17] == bytes.fromhex("0000000000000000" "0000003e" "00000000" "02")
    assert data[61:74] == b"\x18\x00\x00\x00\x02a\x0aalpha\x00"
    assert data[17:21] == struct.pack(">I", crc32c.crc32c(data[21:74]))


@pytest.mark.parametrize("name, expected", [
    ("00000000000000000042.log", (42, "log")),
    ("00000000000000000042.index", (42, "index")),
    ("00000000000000000042.timeindex", (42, "timeindex")),
    ("00000000000000000042.txnindex", (42, "txnindex")),
    ("00000000000000001234.snapshot", (1234, "snapshot")),
    ("00000000000000368769.log.deleted", (368769, "log.deleted")),
    ("00000000000000000000.index.swap", (0, "index.swap")),
    ("00000000000000000000.log.cleaned", (0, "log.cleaned")),
    ("/var/lib/kafka/t-0/00000000000000000007.log", (7, "log")),
    ("00000000000000012345-0000000007.checkpoint", (12345, "checkpoint")),
    ("00000000000000012345-0000000007.checkpoint.deleted", (12345, "checkpoint.deleted")),
    ("00000000000000012345-0000000007-3344556677.checkpoint.part", (12345, "checkpoint.part")),
    ("00000000000000000011-oAtiIQ95REujbuzNd_lkLQ.log", (11, "log")),
    ("bootstrap.checkpoint", None),
    ("leader-epoch-checkpoint", None),
    ("42.log", None),
    ("00000000000000000042.log.tmp", None),
    ("00000000000000000042-0000000001.log", None),
])
def test_parse_segment_name(name, expected):
    assert parse_segment_name(name) == expected


def test_checkpoint_names():
    assert parse_checkpoint_name("00000000000000012345-0000000007.checkpoint") == (12345, 7)
    assert parse_checkpoint_name("00000000000000012345.log") is None
    assert segment_name(12345, "checkpoint", epoch=7) == "00000000000000012345-0000000007.checkpoint"
    assert parse_segment_name(segment_name(99, "timeindex")) == (99, "timeindex")
