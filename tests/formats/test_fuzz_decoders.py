"""Fuzz targets, one per decoder, seeded with real Kafka bytes.

Each target draws a seed (bytes Kafka wrote, taken from the bundles of the pinned scenario
definitions, which ``make test`` builds before pytest starts, and bytes our encoders write)
and mutates it (bit flips, byte sets, insertions, deletions, duplicated slices, truncation), or
draws plain random bytes, and checks what every
decoder promises for bad input:

* record batches (:func:`read_batches` + :meth:`Batch.records` + the record decoders): no
  exception in lenient mode, only ``CorruptDataError`` in strict mode and for the same (position,
  kind) as the first lenient problem; problems inside the input; batches in order, inside the
  file and not overlapping;
* KRaft metadata, control, coordinator (offsets, transaction, share state, ConsumerProtocol
  blobs), remote log metadata and MirrorMaker 2 decoders: never raise (the ConsumerProtocol
  decoders raise ``CorruptDataError`` only); what decodes cleanly renders as dump text/JSON, and
  metadata records re-encode to values that decode to the same fields;
* index and producer-snapshot readers: no exception, problems inside the file, strict mode
  raises ``CorruptDataError`` only;
* the dump-tool text parser and writer: no exception (strict: ``CorruptDataError`` only), problem
  line numbers inside the text.

``WORKBENCH_FUZZ_EXAMPLES`` sets the examples per target (default 60, a fast suite run); e.g.
``WORKBENCH_FUZZ_EXAMPLES=20000 pytest tests/formats/test_fuzz_decoders.py`` for a long run.
No example database is written.
"""

from __future__ import annotations

import io
import os
import struct
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import CorruptDataError
from workbench.formats import coordinator, mirror
from workbench.formats.batch import Batch, Record, encode_batch, read_batches
from workbench.formats.control import (
    CONTROL_TYPES,
    control_json,
    decode_control_record,
    dump_control_text,
    encode_control_record,
)
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
from workbench.formats.metadata import (
    METADATA_SCHEMAS,
    decode_metadata_record,
    dump_payload,
    encode_metadata_record,
    metadata_json,
)
from workbench.formats.problems import ProblemLog
from workbench.formats.remote import (
    REMOTE_SCHEMAS,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
    remote_dump_text,
    remote_event,
)
from workbench.formats.segment import read_segment

EXAMPLES = int(os.environ.get("WORKBENCH_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much, HealthCheck.large_base_example])
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


# --------------------------------------------------------------------------------------------
# seeds: real Kafka bytes when a bundle is cached, else the encoders' bytes


def _pinned_bundles() -> list[Path]:
    """The complete bundles of the pinned scenario definitions (``make test`` builds them all
    before pytest starts; under ``KAFKA_WORKBENCH_CACHE``)."""
    from peer.scenario import bundle_dir, is_complete
    from tests.kafka_bundles import BUNDLES

    return [d for d in (bundle_dir(name, version) for version, name in BUNDLES) if is_complete(d)]


BUNDLE_DIRS = _pinned_bundles()
# seeded from the bundles: make test runs this module once they are built (the "kafka" part)
pytestmark = pytest.mark.kafka


def bundle_files(pattern: str, limit: int = 6) -> list[Path]:
    """Non-empty files matching ``pattern`` in the pinned bundles (smallest first)."""
    found = [p for d in BUNDLE_DIRS for p in d.glob(pattern) if p.is_file() and p.stat().st_size > 0]
    return sorted(found, key=lambda p: (p.stat().st_size, str(p)))[:limit]  # one cache root: a stable order


def head_batches(path: Path, max_bytes: int = 6000) -> bytes:
    """The first whole batches of a segment, at most ``max_bytes`` (at least one batch)."""
    data = path.read_bytes()
    end = 0
    for b in read_segment(io.BytesIO(data)):
        if end and b.position + b.size > max_bytes:
            break
        end = b.position + b.size
    return data[:end]


def real_records(pattern: str, limit: int = 400) -> list[tuple[bool, bytes | None, bytes | None]]:
    """(is_control, key, value) of records in Kafka-written segments matching ``pattern``."""
    out: list[tuple[bool, bytes | None, bytes | None]] = []
    for path in bundle_files(pattern, limit=3):
        for b in read_segment(path):
            for r in b.records():
                out.append((b.is_control, r.key, r.value))
    seen, unique = set(), []
    for item in out:
        if item not in seen:
            seen.add(item)
            unique.append(item)
    return unique[:limit]


def encoded_segments() -> list[bytes]:
    recs = [Record(i, 1000 + i, b"k%d" % i if i % 2 else None, b"v" * (i * 7) if i % 3 else None,
                   [("h", b"x")] if i % 2 else []) for i in range(6)]
    out = [encode_batch(recs, base_offset=0, compression=c, producer_id=5, producer_epoch=0, base_sequence=0)
           + encode_batch(recs, base_offset=6, compression=c, timestamp_type="LogAppendTime", max_timestamp=9)
           for c in CODECS]
    k, v = encode_control_record("COMMIT", {"coordinatorEpoch": 3})
    out.append(encode_batch([Record(0, 5, k, v, [])], base_offset=0, is_control=True, is_transactional=True,
                            producer_id=5, producer_epoch=0))
    plain = [Record(r.offset, r.timestamp, r.key, r.value, []) for r in recs[:3]]
    out.append(b"".join(encode_batch(plain, base_offset=0, magic=m, compression=c)
                        for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")))
    return out


Pair = tuple[bytes | None, bytes | None]


def encodable(make: Callable[[Any], Any], args: Iterable[Any]) -> list[Any]:
    """``make(a)`` for every ``a`` whose defaults encode (the others are just not seeds)."""
    out = []
    for a in args:
        try:
            out.append(make(a))
        except Exception:  # noqa: BLE001
            continue
    return out


def versions(schema: Any) -> range:
    return range(schema.valid_versions[0], schema.valid_versions[1] + 1)


SEGMENT_SEEDS: list[bytes] = [head_batches(p) for p in bundle_files("nodes/*/logs/*/*.log", limit=40)]
SEGMENT_SEEDS = [s for s in SEGMENT_SEEDS if s][:12] + encoded_segments()

_META = real_records("nodes/*/logs/__cluster_metadata-0/*.log")
METADATA_SEEDS: list[bytes] = [v for c, _, v in _META if not c and v] + encodable(
    lambda kv: encode_metadata_record(kv[0], kv[1], {}),
    [(k, v) for k, sc in METADATA_SCHEMAS.items() for v in versions(sc)])
_MARKER = {"coordinatorEpoch": 1}
CONTROL_SEEDS: list[Pair] = [(k, v) for c, k, v in _META if c] + encodable(
    lambda t: encode_control_record(t, _MARKER if t in ("ABORT", "COMMIT") else {}), CONTROL_TYPES.values())
_OFFSETS = real_records("nodes/*/logs/__consumer_offsets-*/*.log")
OFFSETS_SEEDS: list[Pair] = [(k, v) for c, k, v in _OFFSETS if not c and k] + encodable(
    lambda tv: coordinator.encode_offsets_record(tv[0], {}, {}, tv[1]),
    [(rt.record_type, v) for rt in coordinator.OFFSETS_RECORD_TYPES.values() for v in versions(rt.value)])
TXN_SEEDS: list[Pair] = encodable(lambda v: coordinator.encode_transaction_record({}, {}, v), range(2))
SHARE_SEEDS: list[Pair] = encodable(lambda t: coordinator.encode_share_state_record(t, {}, {}),
                                    [rt.record_type for rt in coordinator.SHARE_STATE_RECORD_TYPES.values()])
REMOTE_SEEDS: list[bytes] = [v for c, _, v in real_records("nodes/*/logs/__remote_log_metadata-*/*.log")
                             if not c and v] + encodable(
    lambda kv: encode_remote_log_metadata(kv[0], kv[1], {}),
    [(k, v) for k, sc in REMOTE_SCHEMAS.items() for v in versions(sc)])
MIRROR_SEEDS: list[Pair] = [
    mirror.encode_offset_sync("orders", 3, 1500, 1498),
    mirror.encode_checkpoint("g1", "A.orders", 0, 100, 97, "meta"),
    mirror.encode_heartbeat("A", "B", 1718000000000),
    mirror.encode_connect_offset("MirrorSourceConnector", {"cluster": "A", "partition": 0, "topic": "orders"}, 7),
]
INDEX_SEEDS = {
    kind: [p.read_bytes()[:4096] for p in bundle_files(f"nodes/*/logs/*/*.{kind}", limit=4)]
    for kind in ("index", "timeindex", "snapshot", "txnindex")
}
INDEX_SEEDS["index"] += [encode_offset_index([(100, 0), (140, 4096), (141, 5000)], 100) + bytes(16)]
INDEX_SEEDS["timeindex"] += [encode_time_index([(1700, 105), (1800, 140)], 100) + bytes(24)]
INDEX_SEEDS["txnindex"] += [encode_txn_index([AbortedTxn(7, 10, 15, 10), AbortedTxn(8, 20, 30, 16)])]
INDEX_SEEDS["snapshot"] += [encode_producer_snapshot([ProducerEntry(5, 0, 9, 120, 4, 1700000000000, -1, -1),
                                                      ProducerEntry(6, 1, 3, 130, 0, 1700000000001, 2, 125)])]
DUMP_SEEDS = ["\n".join(p.read_text(encoding="utf-8", errors="replace").splitlines()[:60])
              for p in bundle_files("dumps/**/*.txt", limit=8)]


def test_seeds_are_there():
    """Every target has seeds (real ones when a bundle is cached)."""
    for name, seeds in [("segments", SEGMENT_SEEDS), ("batches", BATCH_SEEDS), ("metadata", METADATA_SEEDS),
                        ("control", CONTROL_SEEDS),
                        ("offsets", OFFSETS_SEEDS), ("transaction", TXN_SEEDS), ("share", SHARE_SEEDS),
                        ("remote", REMOTE_SEEDS), *((k, v) for k, v in INDEX_SEEDS.items())]:
        assert seeds, name
    assert len(METADATA_SEEDS) >= len(METADATA_SCHEMAS)


# --------------------------------------------------------------------------------------------
# mutation


OPS = st.lists(st.tuples(st.sampled_from(["flip", "set", "insert", "delete", "dup", "truncate", "zero"]),
                         st.integers(0, 1 << 20), st.integers(0, 255), st.binary(max_size=24)),
               min_size=1, max_size=6)


def mutate(data: bytes, ops: list[tuple[str, int, int, bytes]]) -> bytes:
    """Apply mutations; positions are taken modulo the current length."""
    buf = bytearray(data)
    for op, where, value, chunk in ops:
        n = len(buf)
        pos = where % (n + 1)
        if op == "flip" and n:
            buf[pos % n] ^= 1 << (value & 7)
        elif op == "set" and n:
            buf[pos % n] = value
        elif op == "insert":
            buf[pos:pos] = chunk
        elif op == "delete":
            del buf[pos : pos + value + 1]
        elif op == "dup" and n:
            buf[pos:pos] = buf[pos : pos + value + 1]
        elif op == "truncate":
            del buf[pos:]
        elif op == "zero":
            buf[pos : pos + value + 1] = bytes(len(buf[pos : pos + value + 1]))
    return bytes(buf)


def mutated(seeds: list[bytes], raw_size: int = 300) -> st.SearchStrategy[bytes]:
    """A mutated seed, or (one time in five) plain random bytes."""
    return st.one_of(
        st.tuples(st.sampled_from(seeds), OPS).map(lambda t: mutate(*t)),
        st.tuples(st.sampled_from(seeds), OPS).map(lambda t: mutate(*t)),
        st.tuples(st.sampled_from(seeds), OPS).map(lambda t: mutate(*t)),
        st.tuples(st.sampled_from(seeds), OPS).map(lambda t: mutate(*t)),
        st.binary(max_size=raw_size),
    )


def mutated_pair(seeds: Sequence[Pair]) -> st.SearchStrategy:
    """(key, value) with either side mutated, nulled or random."""
    def side(value: bytes | None, ops: list, how: int) -> bytes | None:
        if how == 0 or value is None:
            return value
        if how == 1:
            return mutate(value, ops)
        return None if how == 2 else bytes(ops[0][3])

    return st.tuples(st.sampled_from(seeds), OPS, OPS, st.integers(0, 3), st.integers(0, 3)).map(
        lambda t: (side(t[0][0], t[1], t[3]), side(t[0][1], t[2], t[4] if t[3] else max(t[4], 1))))


# --------------------------------------------------------------------------------------------
# record batches


def read_like_the_loaders(data: bytes, strict: bool) -> tuple[list[Batch], ProblemLog]:
    log = ProblemLog("fuzz.log", strict=strict)
    batches = []
    for b in read_batches(io.BytesIO(data), "fuzz.log", problems=log, strict=strict):
        batches.append(b)
        for r in b.records(log):
            if b.is_control:
                control_json(decode_control_record(r.key, r.value))
            elif r.value is not None and r.value[:1] == b"\x01":
                dump_payload(decode_metadata_record(r.value))
            if r.key is not None and len(r.key) >= 2 and r.key[:1] == b"\x00":
                coordinator.offsets_dump_payload(coordinator.decode_offsets_record(r.key, r.value))
    return batches, log


@FUZZ
@given(mutated(SEGMENT_SEEDS, raw_size=2000))
def test_fuzz_read_batches_and_records(data):
    batches, log = read_like_the_loaders(data, strict=False)
    end = 0
    for b in batches:
        assert b.position >= end and b.position + b.size <= len(data), (b.position, b.size, len(data))
        end = b.position + b.size
    for p in log.problems:
        assert p.path == "fuzz.log" and 0 <= p.position <= len(data), p
    try:
        read_like_the_loaders(data, strict=True)
    except CorruptDataError as exc:
        first = log.problems[0] if log.problems else None
        assert first is not None and (exc.position, exc.kind) == (first.position, first.kind), (exc, first)
    else:
        assert not log.problems


def v2_batches(seeds: list[bytes]) -> list[Batch]:
    """Every v2 batch in the segment seeds (real Kafka batches first)."""
    out: list[Batch] = []
    for seed in seeds:
        out.extend(b for b in read_batches(io.BytesIO(seed)) if b.magic == 2 and b.crc_valid)
    return out


BATCH_SEEDS = v2_batches(SEGMENT_SEEDS)


def rebuilt(batch: Batch, ops: list[tuple[str, int, int, bytes]], count_delta: int) -> bytes:
    """``batch`` with its decompressed records mutated, recompressed with its codec, CRC valid."""
    from workbench.formats.compression import compress, decompress

    raw = bytes(batch.data or b"")
    payload = raw[61:]
    plain = decompress(batch.compression, payload) if batch.compression != "none" else payload
    plain = mutate(plain, ops)
    payload = compress(batch.compression, plain) if batch.compression != "none" else plain
    head = bytearray(raw[:61])
    struct.pack_into(">i", head, 57, max(-1, batch.record_count + count_delta))
    tail = bytes(head[21:]) + payload
    return struct.pack(">qiibI", batch.base_offset, len(tail) + 9, batch.partition_leader_epoch, 2,
                       crc32c.crc32c(tail)) + tail


@FUZZ
@given(st.sampled_from(BATCH_SEEDS), OPS, st.sampled_from([0, 0, 0, 1, -1, 5]))
def test_fuzz_records_behind_a_valid_crc(batch, ops, count_delta):
    """Real batches whose decompressed records are mutated and recompressed (CRC valid): the
    damage reaches the record parser, not only the CRC check."""
    data = rebuilt(batch, ops, count_delta)
    [b] = list(read_batches(io.BytesIO(data), "fuzz.log", strict=True))
    assert b.crc_valid and b.size == len(data)
    log = ProblemLog("fuzz.log")
    records = b.records(log)
    for p in log.problems:
        # "declares N records but its data ends after M" points at the end of an uncompressed
        # batch's data, i.e. one past its last byte: accepted (the end is where data is missing)
        assert p.path == "fuzz.log" and 0 <= p.position <= len(data), p
    for r in records:
        assert b.base_offset - (1 << 31) <= r.offset <= b.base_offset + (1 << 31), r.offset
        if b.is_control:
            control_json(decode_control_record(r.key, r.value))
        elif r.value is not None and r.value[:1] == b"\x01":
            dump_payload(decode_metadata_record(r.value))
        if r.key is not None and len(r.key) >= 2 and r.key[:1] == b"\x00":
            coordinator.offsets_dump_payload(coordinator.decode_offsets_record(r.key, r.value))
    try:
        b.records(ProblemLog("fuzz.log", strict=True))
    except CorruptDataError as exc:
        assert log.problems and (exc.position, exc.kind) == (log.problems[0].position, log.problems[0].kind)
    else:
        assert not log.problems


# --------------------------------------------------------------------------------------------
# record decoders


@FUZZ
@given(mutated(METADATA_SEEDS))
def test_fuzz_metadata_records(value):
    rec = decode_metadata_record(value)
    assert rec.raw == value
    metadata_json(rec)
    text = dump_payload(rec)
    if rec.error is None:
        assert text is not None
        again = decode_metadata_record(encode_metadata_record(rec.api_key, rec.version, rec.fields,
                                                              rec.unknown_tags))
        assert again.error is None and again.fields == rec.fields, (value.hex(), again.error)


@FUZZ
@given(mutated_pair(CONTROL_SEEDS))
def test_fuzz_control_records(pair):
    rec = decode_control_record(*pair)
    control_json(rec)
    dump_control_text(rec)
    dump_control_text(rec, leader_change_json=True)


@FUZZ
@given(mutated_pair(OFFSETS_SEEDS))
def test_fuzz_offsets_records(pair):
    rec = coordinator.decode_offsets_record(*pair)
    coordinator.offsets_dump_key(rec)
    coordinator.offsets_dump_payload(rec)
    coordinator.offsets_dump_payload(rec, expand_consumer_protocol=False)
    if rec.error is None and rec.name == "GroupMetadata" and rec.value is not None:
        coordinator.expand_group_metadata(rec.value)


@FUZZ
@given(mutated_pair(TXN_SEEDS + SHARE_SEEDS))
def test_fuzz_transaction_and_share_state_records(pair):
    for decode in (coordinator.decode_transaction_record, coordinator.decode_share_state_record):
        rec = decode(*pair)
        coordinator.offsets_dump_key(rec)
        coordinator.offsets_dump_payload(rec)


PROTOCOL_SEEDS = [coordinator.encode_consumer_subscription({"topics": ["orders", "t"], "ownedPartitions": [
    {"topic": "orders", "partitions": [0, 2]}], "generationId": 4, "rackId": "r1"}, version=v) for v in range(4)] + [
    coordinator.encode_consumer_assignment({"assignedPartitions": [{"topic": "t", "partitions": [0, 1]}]}, version=v)
    for v in range(4)]


@FUZZ
@given(mutated(PROTOCOL_SEEDS, raw_size=80))
def test_fuzz_consumer_protocol_blobs(blob):
    for decode in (coordinator.decode_consumer_subscription, coordinator.decode_consumer_assignment):
        try:
            decode(blob)
        except CorruptDataError:
            pass


@FUZZ
@given(mutated(REMOTE_SEEDS))
def test_fuzz_remote_log_metadata(value):
    rec = decode_remote_log_metadata(value)
    assert rec.raw == value
    remote_event(rec)
    remote_dump_text(rec)
    remote_dump_text(rec, with_txn_idx_empty=False)


@FUZZ
@given(mutated_pair(MIRROR_SEEDS))
def test_fuzz_mirror_records(pair):
    for decode in (mirror.decode_offset_sync, mirror.decode_checkpoint, mirror.decode_heartbeat,
                   mirror.decode_connect_offset):
        mirror.mirror_text(decode(*pair))


# --------------------------------------------------------------------------------------------
# index files


def index_readers() -> dict[str, Callable[..., object]]:
    return {
        "index": lambda data, log: read_offset_index(data, 100, "00000000000000000100.index", problems=log),
        "timeindex": lambda data, log: read_time_index(data, "00000000000000000100.timeindex", problems=log),
        "txnindex": lambda data, log: read_txn_index(data, "00000000000000000100.txnindex", problems=log),
        "snapshot": lambda data, log: read_producer_snapshot(data, "00000000000000000100.snapshot", problems=log),
    }


@FUZZ
@given(st.sampled_from(sorted(INDEX_SEEDS)).flatmap(lambda kind: st.tuples(st.just(kind),
                                                                           mutated(INDEX_SEEDS[kind]))))
def test_fuzz_index_readers(kind_data):
    kind, data = kind_data
    read = index_readers()[kind]
    log = ProblemLog(f"x.{kind}")
    read(data, log)
    for p in log.problems:
        assert 0 <= p.position <= len(data), p
    try:
        read(data, ProblemLog(f"x.{kind}", strict=True))
    except CorruptDataError as exc:
        assert log.problems and (exc.position, exc.kind) == (log.problems[0].position, log.problems[0].kind)
    else:
        assert not log.problems


# --------------------------------------------------------------------------------------------
# dump-tool text


def _dump_seeds() -> list[str]:
    from workbench.formats.dumptext import DumpOptions, dump_text

    out = list(DUMP_SEEDS)
    with tempfile.TemporaryDirectory() as d:
        for i, seg in enumerate(encoded_segments()[:3]):
            path = Path(d) / "00000000000000000000.log"
            path.write_bytes(seg)
            out.append(dump_text(str(path), DumpOptions(print_data_log=True), shown_path=f"seg{i}.log"))
    return out


TEXT_SEEDS = _dump_seeds()


def mutate_text(text: str, ops: list[tuple[str, int, int, bytes]]) -> str:
    return mutate(text.encode("utf-8"), ops).decode("utf-8", "replace")


@FUZZ
@given(st.one_of(st.tuples(st.sampled_from(TEXT_SEEDS), OPS).map(lambda t: mutate_text(*t)), st.text(max_size=300)))
def test_fuzz_dump_text_parser(text):
    from workbench.formats.dumptext import parse_kafka_dump

    log = ProblemLog("dump.txt")
    rows = list(parse_kafka_dump(text, path="dump.txt", problems=log))
    lines = max(1, text.count("\n") + 1)
    assert all("kind" in row for row in rows)
    for p in log.problems:
        assert 1 <= p.position <= lines, p
    try:
        list(parse_kafka_dump(text, path="dump.txt", strict=True))
    except CorruptDataError as exc:
        assert log.problems and exc.position == log.problems[0].position
    else:
        assert not log.problems


@FUZZ
@given(mutated(SEGMENT_SEEDS, raw_size=1000), st.sampled_from(["00000000000000000000.log", "bootstrap.checkpoint",
                                                              "00000000000000000010-0000000001.checkpoint"]),
       st.booleans())
def test_fuzz_dump_text_writer(data, name, deep):
    from workbench.formats.dumptext import DumpOptions, dump_lines

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        opts = DumpOptions(print_data_log=deep)
        lines = list(dump_lines(str(path), opts, problems=ProblemLog(str(path))))
        assert lines and lines[0].startswith("Dumping ")
        try:
            list(dump_lines(str(path), opts, strict=True))
        except CorruptDataError:
            pass


def test_struct_sanity():
    """The mutation helper itself: positions wrap, truncation and insertion work."""
    assert mutate(b"abcdef", [("truncate", 3, 0, b"")]) == b"abc"
    assert mutate(b"abc", [("insert", 1, 0, b"XY")]) == b"aXYbc"
    assert mutate(b"\x00", [("flip", 0, 7, b"")]) == b"\x80"
    assert struct.unpack(">h", mutate(b"\x00\x01", [("set", 1, 2, b"")]))[0] == 2
