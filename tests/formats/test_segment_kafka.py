"""Segments and snapshots written by real Kafka brokers, checked against ``kafka-dump-log`` output.

Every scenario bundle of every pinned release (``tests/kafka_bundles.py``): node log dirs under
``nodes/`` and, per ``.log``/``.checkpoint`` file, Kafka's own dump tool's text under ``dumps/``
(listed in ``manifest.json``). Every file must read with zero problems, and every batch line and
record line of the dump must match what we decode. Bundles are built when missing, never skipped.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from tests.kafka_bundles import bundle_params, dump_entries
from workbench.formats.batch import Batch, Record, encode_batch
from workbench.formats.problems import ProblemLog
from workbench.formats.segment import read_segment

BATCH_LINE = re.compile(
    r"^baseOffset: (?P<base>-?\d+) lastOffset: (?P<last>-?\d+) count: (?P<count>-?\d+) "
    r"baseSequence: (?P<bseq>-?\d+) lastSequence: (?P<lseq>-?\d+) producerId: (?P<pid>-?\d+) "
    r"producerEpoch: (?P<pep>-?\d+) partitionLeaderEpoch: (?P<ple>-?\d+) isTransactional: (?P<txn>\w+) "
    r"isControl: (?P<ctl>\w+)(?: deleteHorizonMs: (?P<dh>\S+))? position: (?P<pos>\d+) "
    r"(?P<tstype>\w+): (?P<maxts>-?\d+) size: (?P<size>\d+) magic: (?P<magic>\d+) "
    r"compresscodec: (?P<codec>\w+) crc: (?P<crc>\d+) isvalid: (?P<valid>\w+)"
)
LEGACY_LINE = re.compile(
    r"^offset: (?P<last>-?\d+) position: (?P<pos>\d+) (?P<tstype>\w+): (?P<maxts>-?\d+) size: (?P<size>\d+) "
    r"magic: (?P<magic>\d+) compresscodec: (?P<codec>\w+) crc: (?P<crc>\d+) isvalid: (?P<valid>\w+)"
)
RECORD_LINE = re.compile(
    r"^\| offset: (?P<offset>-?\d+) (?P<tstype>\w+): (?P<ts>-?\d+) keySize: (?P<ks>-?\d+) "
    r"valueSize: (?P<vs>-?\d+)(?: sequence: (?P<seq>-?\d+) headerKeys: \[(?P<hk>[^\]]*)\])?"
)


def parse_dump(text: str) -> list[tuple[dict[str, str], list[dict[str, str]]]]:
    out: list[tuple[dict[str, str], list[dict[str, str]]]] = []
    for line in text.splitlines():
        m = BATCH_LINE.match(line) or LEGACY_LINE.match(line)
        if m:
            out.append((m.groupdict(), []))
            continue
        m = RECORD_LINE.match(line)
        if m and out:
            out[-1][1].append(m.groupdict())
    return out


def batch_view(b: Batch) -> dict[str, object]:
    view: dict[str, object] = {
        "last": b.last_offset, "pos": b.position, "tstype": b.timestamp_type, "maxts": b.max_timestamp,
        "size": b.size, "magic": b.magic, "codec": b.compression, "crc": b.crc, "valid": b.crc_valid,
    }
    if b.magic == 2:
        view.update(base=b.base_offset, count=b.record_count, bseq=b.base_sequence, lseq=b.last_sequence,
                    pid=b.producer_id, pep=b.producer_epoch, ple=b.partition_leader_epoch,
                    txn=b.is_transactional, ctl=b.is_control,
                    dh=f"OptionalLong[{b.base_timestamp}]" if b.has_delete_horizon else "OptionalLong.empty")
    return view


def dump_view(d: dict[str, str]) -> dict[str, object]:
    ints = ("base", "last", "count", "bseq", "lseq", "pid", "pep", "ple", "pos", "maxts", "size", "magic", "crc")
    view: dict[str, object] = {k: int(d[k]) for k in ints if k in d}
    view.update(valid=d["valid"] == "true", tstype=d["tstype"], codec=d["codec"].lower())
    if "txn" in d:
        view.update(txn=d["txn"] == "true", ctl=d["ctl"] == "true")
        view["dh"] = d["dh"] or "OptionalLong.empty"  # before 3.2 the field was not printed
    return view


def compare_with_dump(data: Path, text: str) -> int:
    """Assert that ``data`` decodes to what the dump text shows; return the number of batches."""
    expected = parse_dump(text)
    log = ProblemLog(str(data))
    batches = list(read_segment(data, problems=log))
    if "invalid bytes at the end" in text:  # the dump tool also saw a torn tail
        assert [p.kind for p in log.problems] in (["truncated"], ["zero_fill"])
    else:
        assert log.problems == []
    assert [batch_view(b) for b in batches] == [dump_view(d) for d, _ in expected]
    for b, (_, recs) in zip(batches, expected, strict=True):
        if not recs:
            continue
        got = b.records(ProblemLog(str(data), strict=True))
        assert [(r.offset, r.timestamp, -1 if r.key is None else len(r.key),
                 -1 if r.value is None else len(r.value)) for r in got] == [
            (int(d["offset"]), int(d["ts"]), int(d["ks"]), int(d["vs"])) for d in recs
        ]
        if b.magic == 2:
            assert [",".join(k for k, _ in r.headers) for r in got] == [d["hk"] for d in recs]
            seqs = [-1 if b.base_sequence < 0 else (b.base_sequence + r.offset - b.base_offset) % 2**31 for r in got]
            assert seqs == [int(d["seq"]) for d in recs]
    return len(batches)


def check_each(files: list[Path], check) -> int:
    """Run ``check(path)`` on every file; fail once, naming every file that failed and why."""
    failures = []
    for path in files:
        try:
            check(path)
        except AssertionError as exc:
            failures.append(f"{path}: {str(exc)[:600]}")
    assert not failures, f"{len(failures)} of {len(files)} files:\n" + "\n".join(failures[:10])
    return len(files)


@pytest.mark.kafka
@pytest.mark.parametrize("version, name", bundle_params())
def test_kafka_written_file_matches_dump(kafka_bundle, version, name):
    bundle = Path(kafka_bundle(name, version))
    pairs = {bundle / e["file"]: bundle / e["dump"] for e in dump_entries(bundle)}
    batches = []

    def check(data: Path) -> None:
        batches.append(compare_with_dump(data, pairs[data].read_text(encoding="utf-8", errors="replace")))

    check_each(sorted(pairs), check)
    assert sum(batches) > 0, f"{bundle}: no batch in any dumped file"


def encoder_segment() -> bytes:
    """Every batch kind the encoder writes: v2 in all codecs, control, LogAppendTime, delete
    horizon, an empty batch with a wrapping sequence, legacy v0/v1 in every legacy codec."""
    def recs(first: int, n: int, magic: int = 2) -> list[Record]:
        return [Record(first + i, (1000 + i) if magic else -1, b"k%d" % i if i % 2 else None,
                       b"v" * i if i % 3 else None, [("h1", b"x"), ("h2", None)] if i % 2 and magic == 2 else [])
                for i in range(n)]

    parts, off = [], 0
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        parts.append(encode_batch(recs(off, 5), base_offset=off, compression=codec, partition_leader_epoch=2,
                                  producer_id=7, producer_epoch=1, base_sequence=off, is_transactional=True))
        off += 5
    parts.append(encode_batch([Record(off, 5000, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 3), [])],
                              base_offset=off, is_control=True, is_transactional=True, producer_id=7, producer_epoch=1))
    off += 1
    parts.append(encode_batch(recs(off, 3), base_offset=off, timestamp_type="LogAppendTime", max_timestamp=99999))
    off += 3
    parts.append(encode_batch(recs(off, 3), base_offset=off, delete_horizon_ms=123456, compression="gzip"))
    off += 3
    parts.append(encode_batch([], base_offset=off, last_offset=off + 2, producer_id=8, producer_epoch=0,
                              base_sequence=2**31 - 1))
    off += 3
    for magic in (0, 1):
        for codec in ("none", "gzip", "snappy", "lz4"):
            parts.append(encode_batch(recs(off, 3, magic), base_offset=off, magic=magic, compression=codec))
            off += 3
    parts.append(encode_batch(recs(off, 2, 1), base_offset=off, magic=1, compression="gzip",
                              timestamp_type="LogAppendTime", max_timestamp=77777))
    return b"".join(parts)


@pytest.mark.kafka
def test_kafka_dump_tool_accepts_encoder_output(tmp_path, kafka_dist):
    kafka = kafka_dist()
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(encoder_segment())
    result = kafka.run_tool("dump-log", ["--deep-iteration", "--files", str(seg)], timeout=120, heap="256m")
    assert "isvalid: false" not in result.stdout and "invalid bytes" not in result.stdout
    assert compare_with_dump(seg, result.stdout) == 22


def partition_dirs(bundle: Path) -> list[Path]:
    """Every partition directory of every node of the bundle that holds a segment."""
    return sorted({p.parent for p in bundle.glob("nodes/*/logs/*/*.log")})


@pytest.mark.kafka
@pytest.mark.parametrize("version, name", bundle_params())
def test_kafka_written_indexes_and_snapshots(kafka_bundle, version, name):
    bundle = Path(kafka_bundle(name, version))
    dirs = partition_dirs(bundle)
    assert dirs, f"{bundle}: no partition directory"
    check_each(dirs, check_indexes_and_snapshots)
    if name == "consumer_lag":  # the transactional producer aborts every third transaction
        assert list(bundle.glob("nodes/*/logs/txn-orders-*/*.txnindex")), "no aborted-transaction index"


def check_indexes_and_snapshots(directory: Path) -> None:
    from workbench.formats.index import read_offset_index, read_producer_snapshot, read_time_index, read_txn_index
    from workbench.formats.segment import parse_segment_name

    all_batches: list[Batch] = []
    for seg in sorted(directory.glob("*.log")):
        parsed = parse_segment_name(seg.name)
        assert parsed is not None and parsed[1] == "log"
        base = parsed[0]
        batches = list(read_segment(seg, strict=True))
        start = len(all_batches)
        all_batches.extend(batches)
        by_pos = {b.position: b for b in batches}
        last_offsets = {b.last_offset: b for b in batches}
        index = seg.with_suffix(".index")
        if index.exists():
            log = ProblemLog(str(index))
            entries = read_offset_index(str(index), base, problems=log)
            assert log.problems == []
            for offset, position in entries:
                assert position in by_pos, (offset, position)
                assert by_pos[position].last_offset <= offset <= batches[-1].last_offset
        timeindex = seg.with_suffix(".timeindex")
        if timeindex.exists():
            log = ProblemLog(str(timeindex))
            entries = read_time_index(str(timeindex), problems=log)
            assert log.problems == []
            for ts, offset in entries:
                assert offset in last_offsets and last_offsets[offset].max_timestamp == ts, (ts, offset)
        txnindex = seg.with_suffix(".txnindex")
        if txnindex.exists():
            log = ProblemLog(str(txnindex))
            got = [(t.producer_id, t.first_offset, t.last_offset) for t in read_txn_index(str(txnindex), problems=log)]
            assert log.problems == []
            assert got == aborted_transactions(all_batches, start), txnindex
    for snap in sorted(directory.glob("*.snapshot")):
        log = ProblemLog(str(snap))
        producers = read_producer_snapshot(str(snap), problems=log)
        assert log.problems == []
        taken_at = parse_segment_name(snap.name)[0]
        for p in producers:
            assert p.last_offset < taken_at
            mine = [b for b in all_batches if b.producer_id == p.producer_id and b.last_offset == p.last_offset]
            if mine:  # the batch may have been deleted by retention
                assert mine[0].producer_epoch == p.producer_epoch and mine[0].last_sequence == p.last_sequence


def aborted_transactions(history: list[Batch], start: int) -> list[tuple[int, int, int]]:
    """(producer id, first offset, marker offset) of every transaction aborted by a marker in
    ``history[start:]`` (one segment), read from the log itself: the first offset is that of
    the producer's first transactional batch after its previous marker. ``history`` holds the
    partition's batches in offset order up to the end of that segment."""
    from workbench.formats.control import decode_control_record

    first: dict[int, int] = {}
    out = []
    for i, b in enumerate(history):
        if b.is_control:
            for r in b.records():
                if decode_control_record(r.key, r.value).type == 0 and i >= start and b.producer_id in first:
                    out.append((b.producer_id, first[b.producer_id], r.offset))
            first.pop(b.producer_id, None)
        elif b.is_transactional:
            first.setdefault(b.producer_id, b.base_offset)
    return out


FRAMING_PREFIX = {"snappy": 16, "lz4": 7, "zstd": 5}  # Xerial header; LZ4 magic+FLG+BD+HC; zstd magic+FHD


@pytest.mark.kafka
@pytest.mark.parametrize("version, name", bundle_params())
def test_encoder_reproduces_kafka_written_batches(kafka_bundle, version, name):
    bundle = Path(kafka_bundle(name, version))
    segments = sorted(bundle / e["file"] for e in dump_entries(bundle))
    check_each(segments, reencode)


def reencode(data: Path) -> None:
    """Re-encode every v2 batch from its decoded records and header fields.

    Uncompressed and gzip batches come out byte-identical. For snappy, lz4 and zstd the
    compressed blocks depend on the codec library build, so the header fields, the stream
    framing and the decompressed records must be identical.
    """
    from workbench.formats.compression import decompress

    for b in read_segment(data, strict=True):
        if b.magic != 2:
            continue
        out = encode_batch(
            b.records(), base_offset=b.base_offset, compression=b.compression, timestamp_type=b.timestamp_type,
            partition_leader_epoch=b.partition_leader_epoch, producer_id=b.producer_id,
            producer_epoch=b.producer_epoch, base_sequence=b.base_sequence, is_transactional=b.is_transactional,
            is_control=b.is_control, max_timestamp=b.max_timestamp, last_offset=b.last_offset,
            delete_horizon_ms=b.base_timestamp if b.has_delete_horizon else None,
        )
        orig = bytes(b.data)
        if b.compression in ("none", "gzip"):
            assert out == orig, (b.position, b.compression)
            continue
        assert out[:8] == orig[:8] and out[12:17] == orig[12:17] and out[21:61] == orig[21:61]
        n = FRAMING_PREFIX[b.compression]
        assert out[61 : 61 + n] == orig[61 : 61 + n], b.position
        assert decompress(b.compression, out[61:]) == decompress(b.compression, orig[61:])
