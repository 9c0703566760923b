"""Record batch v2 and legacy message set: decoding known bytes and encode/decode round trips.

Known-good literals are assembled here from the layout tables of the format reference (§1.1,
§1.2, §1.3) with ``struct`` and literal varint bytes; checksums come from the ``crc32c`` and
``zlib`` libraries. They are never produced by the encoder under test.
"""

from __future__ import annotations

import io
import pickle
import struct
import zlib

import crc32c
import pytest

from workbench.errors import ConfigError
from workbench.formats.batch import (
    BATCH_COLUMNS,
    Batch,
    Record,
    batch_columns,
    encode_batch,
    read_batches,
)
from workbench.formats.compression import decompress
from workbench.formats.problems import ProblemLog

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def read_all(data: bytes, **kw) -> tuple[list[Batch], ProblemLog]:
    log = ProblemLog("mem.log")
    return list(read_batches(io.BytesIO(data), "mem.log", problems=log, **kw)), log


# --------------------------------------------------------------------------------------------
# a v2 batch assembled by hand from the spec table

# record 0: attrs 0, tsDelta 0, offsetDelta 0, key "k0", value "hello", one header trace=x
REC0_BODY = (
    b"\x00" + b"\x00" + b"\x00"            # attributes, timestampDelta 0, offsetDelta 0
    + b"\x04" + b"k0"                      # key length 2 (zig-zag 4)
    + b"\x0a" + b"hello"                   # value length 5 (zig-zag 10)
    + b"\x02"                              # 1 header
    + b"\x0a" + b"trace" + b"\x02" + b"x"  # header key length 5, key, value length 1, value
)
REC0 = b"\x2a" + REC0_BODY  # body length 21 (zig-zag 42)
# record 1: tsDelta 5, offsetDelta 1, null key, null value (tombstone), no headers
REC1_BODY = b"\x00" + b"\x0a" + b"\x02" + b"\x01" + b"\x01" + b"\x00"
REC1 = b"\x0c" + REC1_BODY  # body length 6


def hand_batch(attributes: int = 0x10, records: bytes = REC0 + REC1, count: int = 2) -> bytes:
    after_crc = struct.pack(
        ">hiqqqhii",
        attributes,        # attributes: transactional
        1,                 # lastOffsetDelta
        1700000000000,     # baseTimestamp
        1700000000005,     # maxTimestamp
        1000,              # producerId
        3,                 # producerEpoch
        7,                 # baseSequence
        count,             # recordsCount
    ) + records
    crc = crc32c.crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", 42, length, 5, 2, crc) + after_crc


def test_hand_assembled_v2_batch_decodes_field_by_field():
    data = hand_batch()
    assert len(REC0) == 22 and len(REC1) == 7
    [b], log = read_all(data)
    assert log.problems == []
    assert b == Batch(
        path="mem.log", position=0, base_offset=42, last_offset=43, size=len(data),
        partition_leader_epoch=5, magic=2, crc=crc32c.crc32c(data[21:]), crc_valid=True,
        attributes=0x10, compression="none", timestamp_type="CreateTime", is_transactional=True,
        is_control=False, has_delete_horizon=False, base_timestamp=1700000000000,
        max_timestamp=1700000000005, producer_id=1000, producer_epoch=3, base_sequence=7,
        record_count=2,
    )
    assert b.size == 61 + 22 + 7
    assert b.last_sequence == 8
    assert b.records() == [
        Record(42, 1700000000000, b"k0", b"hello", [("trace", b"x")], 0, 22),
        Record(43, 1700000000005, None, None, [], 0, 7),
    ]


def test_encoder_reproduces_the_hand_assembled_bytes():
    recs = [
        Record(42, 1700000000000, b"k0", b"hello", [("trace", b"x")]),
        Record(43, 1700000000005, None, None, []),
    ]
    data = encode_batch(recs, base_offset=42, partition_leader_epoch=5, producer_id=1000,
                        producer_epoch=3, base_sequence=7, is_transactional=True)
    assert data == hand_batch()


def test_hand_assembled_batch_with_log_append_time_uses_max_timestamp():
    data = hand_batch(attributes=0x08)
    [b] = read_all(data)[0]
    assert b.timestamp_type == "LogAppendTime" and not b.is_transactional
    assert [r.timestamp for r in b.records()] == [1700000000005, 1700000000005]


def test_multi_byte_varints_and_negative_deltas():
    recs = [
        Record(1000, 5_000_000, b"k" * 300, b"v" * 70000, [("h" * 200, b"x" * 129), ("n", None)]),
        Record(1001, 4_000_000, b"", b"", []),  # negative timestamp delta, empty (not null) key/value
        Record(1300, 2**40, None, b"z", []),  # sparse offsets (compacted), 6-byte varlong delta
    ]
    for codec in CODECS:
        data = encode_batch(recs, base_offset=1000, compression=codec)
        [b], log = read_all(data)
        assert log.problems == []
        assert (b.last_offset, b.record_count, b.compression) == (1300, 3, codec)
        assert b.base_timestamp == 5_000_000 and b.max_timestamp == 2**40
        got = b.records()
        assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
            (r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs
        ]
        if codec == "none":
            assert sum(r.size for r in got) == b.size - 61


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_all_codecs(codec):
    recs = [Record(100 + i, 1_700_000_000_000 + i * 7, f"key-{i}".encode(), f"value-{i}".encode() * (i % 50),
                   [("i", str(i).encode())] if i % 3 else []) for i in range(500)]
    data = encode_batch(recs, base_offset=100, compression=codec, producer_id=9, producer_epoch=1,
                        base_sequence=0, partition_leader_epoch=12)
    [b], log = read_all(data)
    assert log.problems == []
    assert (b.base_offset, b.last_offset, b.record_count, b.compression, b.crc_valid) == (100, 599, 500, codec, True)
    assert b.last_sequence == 499
    decoded = b.records(ProblemLog(strict=True))
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs
    ]
    if codec != "none":
        assert decompress(codec, data[61:]).startswith(b"\x16")  # first record: 11-byte body


def test_control_batch_commit_marker():
    key = struct.pack(">hh", 0, 1)  # version 0, COMMIT
    value = struct.pack(">hi", 0, 17)  # EndTxnMarker v0, coordinator epoch 17
    data = encode_batch([(55, 1234, key, value)], base_offset=55, is_control=True, is_transactional=True,
                        producer_id=77, producer_epoch=2)
    [b] = read_all(data)[0]
    assert (b.is_control, b.is_transactional, b.attributes, b.producer_id) == (True, True, 0x30, 77)
    assert b.records() == [Record(55, 1234, key, value, [], 0, b.size - 61)]


def test_empty_batch_and_delete_horizon():
    data = encode_batch([], base_offset=10, last_offset=14, producer_id=5, producer_epoch=0, base_sequence=3)
    [b] = read_all(data)[0]
    assert (b.base_offset, b.last_offset, b.record_count, b.base_timestamp, b.max_timestamp) == (10, 14, 0, -1, -1)
    assert b.size == 61 and b.records() == [] and b.last_sequence == 7
    data = encode_batch([(3, 500, b"k", None)], base_offset=0, delete_horizon_ms=86_400_000, last_offset=4)
    [b] = read_all(data)[0]
    assert b.has_delete_horizon and b.attributes == 0x40 and b.delete_horizon_ms == 86_400_000
    assert b.base_timestamp == 86_400_000 and b.last_offset == 4
    assert b.records() == [Record(3, 500, b"k", None, [], 0, b.size - 61)]


def test_sequence_wraps():
    data = encode_batch([(0, 1, None, b"a"), (1, 1, None, b"b")], base_offset=0, producer_id=1,
                        producer_epoch=0, base_sequence=2**31 - 1)
    [b] = read_all(data)[0]
    assert b.last_sequence == 0


def test_several_batches_positions_and_columns():
    parts = [encode_batch([(i * 2, i, b"k", b"v"), (i * 2 + 1, i, None, b"w")], base_offset=i * 2,
                          compression=CODECS[i % 5]) for i in range(10)]
    data = b"".join(parts)
    batches, log = read_all(data)
    assert log.problems == []
    positions = [sum(len(p) for p in parts[:i]) for i in range(10)]
    assert [b.position for b in batches] == positions
    assert [b.size for b in batches] == [len(p) for p in parts]
    assert [r.offset for b in batches for r in b.records()] == list(range(20))
    cols = batch_columns(batches)
    assert list(cols) == list(BATCH_COLUMNS)
    assert cols["base_offset"] == list(range(0, 20, 2))
    assert cols["compression"] == CODECS * 2


def test_start_and_end_select_a_byte_range():
    parts = [encode_batch([(i, i, None, b"x" * i)], base_offset=i) for i in range(6)]
    data = b"".join(parts)
    pos = [sum(len(p) for p in parts[:i]) for i in range(7)]
    got, log = read_all(data, start=pos[2], end=pos[4] + 1)
    assert [b.base_offset for b in got] == [2, 3, 4] and log.problems == []
    got, _ = read_all(data, start=pos[2], end=pos[4])
    assert [b.base_offset for b in got] == [2, 3]


def test_small_chunks_and_pickle(monkeypatch):
    import workbench.formats.batch as mod

    monkeypatch.setattr(mod, "CHUNK_SIZE", 7)
    parts = [encode_batch([(i, i, b"k", b"v" * 100)], base_offset=i, compression="gzip") for i in range(5)]
    batches, log = read_all(b"".join(parts))
    assert [b.base_offset for b in batches] == list(range(5)) and log.problems == []
    clone = pickle.loads(pickle.dumps(batches[3]))
    assert clone == batches[3] and clone.records() == batches[3].records()


def test_encoder_rejects_bad_arguments():
    with pytest.raises(ConfigError):
        encode_batch([], base_offset=0, compression="brotli")
    with pytest.raises(ConfigError):
        encode_batch([], base_offset=0, magic=3)
    with pytest.raises(ConfigError):
        encode_batch([(0, 0, None, b"x")], base_offset=0, magic=1, compression="zstd")
    with pytest.raises(ConfigError):
        encode_batch([(0, 0, None, b"x", [("h", b"v")])], base_offset=0, magic=1)
    with pytest.raises(ConfigError):
        encode_batch([(0, 0)], base_offset=0)


# --------------------------------------------------------------------------------------------
# legacy messages assembled by hand (§1.3)


def legacy_entry(offset: int, magic: int, attrs: int, ts: int | None, key: bytes | None, value: bytes | None) -> bytes:
    body = bytes([magic, attrs])
    if magic == 1:
        body += struct.pack(">q", ts)
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def test_hand_assembled_legacy_v0_and_v1_messages():
    data = (legacy_entry(0, 0, 0, None, b"a", b"one") + legacy_entry(1, 0, 0, None, None, b"two")
            + legacy_entry(2, 1, 0, 1_600_000_000_000, b"c", None)
            + legacy_entry(3, 1, 0x08, 1_600_000_000_009, None, b"four"))
    batches, log = read_all(data)
    assert log.problems == []
    assert [(b.magic, b.base_offset, b.last_offset, b.record_count, b.timestamp_type, b.max_timestamp,
             b.compression, b.crc_valid) for b in batches] == [
        (0, 0, 0, 1, "NoTimestampType", -1, "none", True),
        (0, 1, 1, 1, "NoTimestampType", -1, "none", True),
        (1, 2, 2, 1, "CreateTime", 1_600_000_000_000, "none", True),
        (1, 3, 3, 1, "LogAppendTime", 1_600_000_000_009, "none", True),
    ]
    assert [b.size for b in batches] == [12 + 14 + 1 + 3, 12 + 14 + 3, 12 + 22 + 1, 12 + 22 + 4]
    assert batches[0].crc == zlib.crc32(data[16:30])
    assert [r for b in batches for r in b.records()] == [
        Record(0, -1, b"a", b"one", [], 0, 30),
        Record(1, -1, None, b"two", [], 0, 29),
        Record(2, 1_600_000_000_000, b"c", None, [], 0, 35),
        Record(3, 1_600_000_000_009, None, b"four", [], 8, 38),
    ]


def test_hand_assembled_v1_gzip_wrapper_with_relative_offsets():
    inner = (legacy_entry(0, 1, 0, 100, b"k0", b"v0") + legacy_entry(1, 1, 0, 300, b"k1", b"v1")
             + legacy_entry(2, 1, 0, 200, None, b"v2"))
    co = zlib.compressobj(6, zlib.DEFLATED, 31)
    value = co.compress(inner) + co.flush()
    data = legacy_entry(500, 1, 0x01, 300, None, value)  # wrapper offset = absolute last offset
    [b], log = read_all(data)
    assert log.problems == []
    assert (b.base_offset, b.last_offset, b.record_count, b.compression, b.max_timestamp) == (498, 500, 3, "gzip", 300)
    assert b.records() == [
        Record(498, 100, b"k0", b"v0", [], 0, 12 + 22 + 4),
        Record(499, 300, b"k1", b"v1", [], 0, 12 + 22 + 4),
        Record(500, 200, None, b"v2", [], 0, 12 + 22 + 2),
    ]
    # LogAppendTime wrapper: every inner message takes the wrapper timestamp
    data = legacy_entry(500, 1, 0x09, 999, None, value)
    [b] = read_all(data)[0]
    assert [r.timestamp for r in b.records()] == [999, 999, 999]
    # wrapper offset 0 (old librdkafka): offsets stay relative
    data = legacy_entry(0, 1, 0x01, 300, None, value)
    [b] = read_all(data)[0]
    assert [r.offset for r in b.records()] == [0, 1, 2]


def test_v0_wrapper_keeps_absolute_inner_offsets():
    inner = legacy_entry(70, 0, 0, None, None, b"x") + legacy_entry(71, 0, 0, None, None, b"y")
    co = zlib.compressobj(6, zlib.DEFLATED, 31)
    data = legacy_entry(71, 0, 0x01, None, None, co.compress(inner) + co.flush())
    [b] = read_all(data)[0]
    assert (b.base_offset, b.last_offset, b.record_count) == (70, 71, 2)
    assert [(r.offset, r.value) for r in b.records()] == [(70, b"x"), (71, b"y")]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_legacy_round_trip(magic, codec):
    recs = [Record(200 + i, 1000 + i if magic else -1, b"k%d" % i if i % 2 else None, b"v" * i, []) for i in range(20)]
    data = encode_batch(recs, base_offset=200, magic=magic, compression=codec)
    batches, log = read_all(data)
    assert log.problems == []
    assert all(b.magic == magic and b.crc_valid for b in batches)
    if codec == "none":
        assert len(batches) == 20
    else:
        assert len(batches) == 1
        b = batches[0]
        assert (b.base_offset, b.last_offset, b.record_count, b.compression) == (200, 219, 20, codec)
        if magic == 1:
            assert b.max_timestamp == 1019
    got = [r for b in batches for r in b.records(ProblemLog(strict=True))]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
        (r.offset, r.timestamp, r.key, r.value) for r in recs
    ]


def test_legacy_v1_wrapper_bytes_match_hand_assembly():
    recs = [Record(10, 5, b"a", b"b", []), Record(11, 6, None, b"c", [])]
    data = encode_batch(recs, base_offset=10, magic=1, compression="gzip")
    inner = legacy_entry(0, 1, 0, 5, b"a", b"b") + legacy_entry(1, 1, 0, 6, None, b"c")
    wrapper_value = data[12 + 22:]  # after the value length (key is null)
    assert decompress("gzip", wrapper_value) == inner
    assert data == legacy_entry(11, 1, 0x01, 6, None, wrapper_value)
    assert wrapper_value[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # GZIPOutputStream header


def test_magic0_lz4_wrapper_with_the_broken_header_checksum_reads():
    data = encode_batch([Record(0, -1, None, b"x" * 100, []), Record(1, -1, None, b"y", [])], base_offset=0,
                        magic=0, compression="lz4")
    value = data[12 + 14:]
    assert value[:7] == bytes.fromhex("04224d1860401a")  # HC over magic+FLG+BD, as Kafka < 0.10 wrote it
    [b], log = read_all(data)
    assert log.problems == [] and [r.value for r in b.records()] == [b"x" * 100, b"y"]


class _Pipe:
    """A stream with nothing but ``read`` (no seek, tell, fileno or readinto), returning short reads."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def read(self, n: int = -1) -> bytes:
        n = min(n if n >= 0 else len(self.data), 1000)
        out = self.data[self.pos : self.pos + n]
        self.pos += len(out)
        return out


def test_non_seekable_stream_with_short_reads():
    parts = [encode_batch([(i, i, None, b"x" * 3000)], base_offset=i, compression="snappy") for i in range(8)]
    data = b"".join(parts)
    log = ProblemLog()
    got = list(read_batches(_Pipe(data + b"\x01\x02"), problems=log))
    assert [b.base_offset for b in got] == list(range(8))
    assert [(p.position, p.kind) for p in log.problems] == [(len(data), "truncated")]
    got = list(read_batches(_Pipe(data), start=len(parts[0]) * 3))
    assert [b.base_offset for b in got] == [3, 4, 5, 6, 7]


def test_byte_ranges_at_batch_boundaries_partition_the_file():
    import random

    rnd = random.Random(11)
    parts = [encode_batch([(i, i, None, rnd.randbytes(rnd.randrange(1, 400)))], base_offset=i,
                          compression=CODECS[i % 5]) for i in range(40)]
    data = b"".join(parts)
    bounds = [sum(len(p) for p in parts[:i]) for i in range(41)]
    for _ in range(20):
        cuts = sorted(rnd.sample(bounds[1:-1], 4))
        ranges = list(zip([0, *cuts], [*cuts, None], strict=True))
        offsets = [b.base_offset for s, e in ranges for b in read_all(data, start=s, end=e)[0]]
        assert offsets == list(range(40))
