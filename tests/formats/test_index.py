"""Offset, time and transaction indexes and producer snapshots (reference §5.2-§5.5)."""

from __future__ import annotations

import io
import pathlib
import struct

import crc32c

from workbench.formats.index import (
    AbortedTxn,
    ProducerEntry,
    encode_offset_index,
    encode_producer_snapshot,
    encode_time_index,
    encode_txn_index,
    read_offset_index,
    read_producer_snapshot,
    read_time_index,
    read_txn_index,
)
from workbench.formats.problems import ProblemLog

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "batch"
T0 = 1_700_000_000_000


def kinds(log):
    return [(p.position, p.kind) for p in log.problems]


def test_offset_index_fixture_with_zero_tail():
    log = ProblemLog()
    path = FIXTURES / "00000000000000000000.index"
    with open(path, "rb") as f:
        assert read_offset_index(f, 0, problems=log) == [(0, 0), (3, 200)]
    assert log.problems == []


def test_offset_index_hand_bytes_and_problems():
    data = (struct.pack(">iiii", 0, 0, 17, 4096) + struct.pack(">ii", 9, 5000)  # 3 entries, one out of order
            + bytes(8) + b"\x01" + bytes(7)  # end marker, then a stray non-zero byte
            + b"\x07")  # and a partial entry
    log = ProblemLog("x.index")
    assert read_offset_index(io.BytesIO(data), 1000, "x.index", log) == [(1000, 0), (1017, 4096), (1009, 5000)]
    assert kinds(log) == [(40, "bad_length"), (16, "out_of_order"), (32, "garbage")]
    assert encode_offset_index([(1000, 0), (1017, 4096)], 1000) == data[:16]
    assert read_offset_index(b"", 5) == [] and read_offset_index(bytes(80), 5) == [(5, 0)]


def test_time_index_fixture_and_base_offset_from_name():
    path = FIXTURES / "00000000000000000000.timeindex"
    log = ProblemLog()
    assert read_time_index(str(path), problems=log) == [(T0, 0), (T0 + 3, 3), (T0 + 50, 5)]
    data = struct.pack(">qi", T0, 2) + struct.pack(">qi", T0 - 1, 4) + bytes(12)
    log = ProblemLog()
    assert read_time_index(io.BytesIO(data), "00000000000000000100.timeindex", log) == [(T0, 102), (T0 - 1, 104)]
    assert kinds(log) == [(12, "out_of_order")]
    assert read_time_index(data, base_offset=7)[0] == (T0, 9)
    assert encode_time_index([(T0, 102)], 100) == data[:12]
    log = ProblemLog()
    read_time_index(data, problems=log)
    assert [p.kind for p in log.problems] == ["decode_error", "out_of_order"]


def test_txn_index():
    data = struct.pack(">hqqqq", 0, 9, 3, 4, 3) + struct.pack(">hqqqq", 0, 11, 20, 31, 20)
    assert read_txn_index(io.BytesIO(data)) == [AbortedTxn(9, 3, 4, 3), AbortedTxn(11, 20, 31, 20)]
    assert encode_txn_index(read_txn_index(data)) == data
    assert read_txn_index(FIXTURES / "00000000000000000000.txnindex") == [AbortedTxn(9, 3, 4, 3)]
    log = ProblemLog()
    assert len(read_txn_index(data + b"\x00" * 5, problems=log)) == 2 and kinds(log) == [(68, "bad_length")]


def test_producer_snapshot_hand_bytes():
    entry = struct.pack(">qhiqiqiq", 9, 0, 0, 3, 0, T0 + 3, 5, -1)
    body = struct.pack(">i", 1) + entry
    data = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert len(data) == 10 + 46
    assert (FIXTURES / "00000000000000000006.snapshot").read_bytes() == data
    expected = [ProducerEntry(9, 0, 0, 3, 0, T0 + 3, 5, -1)]
    assert read_producer_snapshot(io.BytesIO(data)) == expected
    assert encode_producer_snapshot(expected) == data
    bad = bytearray(data)
    bad[-1] ^= 1
    log = ProblemLog()
    assert read_producer_snapshot(bytes(bad), problems=log)[0].current_txn_first_offset == -2
    assert kinds(log) == [(2, "crc_mismatch")]
    log = ProblemLog()
    assert read_producer_snapshot(data[:30], problems=log) == []
    assert [p.kind for p in log.problems] == ["crc_mismatch", "bad_length"]
    log = ProblemLog()
    assert read_producer_snapshot(b"\x00\x02" + data[2:], problems=log) == [] and kinds(log) == [(0, "unknown_version")]
