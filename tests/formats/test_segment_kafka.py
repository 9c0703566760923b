"""Segments and snapshots written by real Kafka brokers, checked against ``kafka-dump-log`` output.

The peer harness leaves scenario bundles under ``~/.cache/kafka-workbench/scenarios/<version>/
<scenario>/``: node log dirs under ``nodes/`` and, per ``.log``/``.checkpoint`` file, the dump
tool's text under ``dumps/`` (listed in ``manifest.json``). Every file must read with zero
problems, and every batch line and record line of the dump must match what we decode. The test
is skipped when no bundle has been produced on this machine.
"""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path

import pytest

from workbench.formats.batch import Batch, Record, encode_batch
from workbench.formats.problems import ProblemLog
from workbench.formats.segment import read_segment

ROOT = Path(os.environ.get("WORKBENCH_SCENARIOS", Path.home() / ".cache" / "kafka-workbench" / "scenarios"))
MAX_FILES = 400

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


def dumped_files() -> list[tuple[Path, Path]]:
    pairs: list[tuple[Path, Path]] = []
    if not ROOT.is_dir():
        return pairs
    for manifest in sorted(ROOT.glob("*/*/manifest.json")):
        try:
            entries = json.loads(manifest.read_text(encoding="utf-8")).get("dumps", [])
        except (OSError, ValueError):
            continue
        for entry in entries:
            data, dump = manifest.parent / entry["file"], manifest.parent / entry["dump"]
            if data.is_file() and dump.is_file() and dump.stat().st_size > 0:
                pairs.append((data, dump))
    return pairs[:MAX_FILES]


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


FILES = dumped_files()


@pytest.mark.skipif(not FILES, reason=f"no Kafka-written segments with dumps under {ROOT}")
@pytest.mark.parametrize("data, dump", FILES, ids=[str(d.relative_to(ROOT)) for d, _ in FILES] or None)
def test_kafka_written_file_matches_dump(data, dump):
    compare_with_dump(data, dump.read_text(encoding="utf-8", errors="replace"))


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
def test_kafka_dump_tool_accepts_encoder_output(tmp_path):
    from peer.kafka import DEFAULT_VERSION, STAMP, fetch, lib_dir

    if not (lib_dir(DEFAULT_VERSION) / STAMP).exists():
        pytest.skip(f"Kafka {DEFAULT_VERSION} jars not fetched (make kafka)")
    kafka = fetch(DEFAULT_VERSION)
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(encoder_segment())
    result = kafka.run_tool("dump-log", ["--deep-iteration", "--files", str(seg)], timeout=120, heap="256m")
    assert "isvalid: false" not in result.stdout and "invalid bytes" not in result.stdout
    assert compare_with_dump(seg, result.stdout) == 22


def partition_dirs() -> list[Path]:
    if not ROOT.is_dir():
        return []
    dirs = sorted({p.parent for p in ROOT.glob("*/*/nodes/*/logs/*/*.log")})
    return dirs[:MAX_FILES]


DIRS = partition_dirs()


@pytest.mark.skipif(not DIRS, reason=f"no Kafka-written log directories under {ROOT}")
@pytest.mark.parametrize("directory", DIRS, ids=[str(d.relative_to(ROOT)) for d in DIRS] or None)
def test_kafka_written_indexes_and_snapshots(directory):
    from workbench.formats.index import read_offset_index, read_producer_snapshot, read_time_index
    from workbench.formats.segment import parse_segment_name

    all_batches: list[Batch] = []
    for seg in sorted(directory.glob("*.log")):
        parsed = parse_segment_name(seg.name)
        assert parsed is not None and parsed[1] == "log"
        base = parsed[0]
        batches = list(read_segment(seg, strict=True))
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


FRAMING_PREFIX = {"snappy": 16, "lz4": 7, "zstd": 5}  # Xerial header; LZ4 magic+FLG+BD+HC; zstd magic+FHD


@pytest.mark.skipif(not FILES, reason=f"no Kafka-written segments under {ROOT}")
@pytest.mark.parametrize("data", [d for d, _ in FILES], ids=[str(d.relative_to(ROOT)) for d, _ in FILES] or None)
def test_encoder_reproduces_kafka_written_batches(data):
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
