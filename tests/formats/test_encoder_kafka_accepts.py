"""Kafka's ``kafka-dump-log`` accepts what our encoder writes: every codec x every record kind.

``test_segment_kafka.py`` already has Kafka's dump tool read one segment of our batches (all
codecs for transactional data, one uncompressed marker, LogAppendTime, legacy formats). This
module fills in the whole matrix. For each codec (none, gzip, snappy, lz4, zstd) we write:

* in a data segment: a plain batch, one with headers, null keys, null values, null keys and
  values, a transactional batch, a COMMIT marker, another transactional batch, an ABORT marker
  and a LogAppendTime batch;
* in a ``__cluster_metadata`` segment: a KRaft control batch (LeaderChange, KRaftVersion,
  KRaftVoters) and a batch of KRaft metadata records, one of every record type at the newest
  version that both we and this Kafka release know, every field set.

Kafka 4.3.1's dump tool reads the two files (``--deep-iteration --print-data-log`` and
``--cluster-metadata-decoder``) in one run each. For every cell: the batch line says
``isvalid: true`` with our position, offsets, codec, flags, timestamp type and CRC; the record
lines carry our offsets, timestamps, key/value sizes, header keys and payloads; markers print
our marker type and coordinator epoch; metadata payloads are the JSON our dump renders.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.formats.test_metadata import U1_TEXT, _release_schemas, _sample
from tests.formats.test_segment_kafka import BATCH_LINE, compare_with_dump
from workbench.formats.batch import Record, encode_batch, read_batches
from workbench.formats.control import control_json, decode_control_record, encode_control_record
from workbench.formats.messages import VersionRange
from workbench.formats.metadata import METADATA_SCHEMAS, decode_metadata_record, dump_payload

pytestmark = pytest.mark.kafka

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DATA_KINDS = ("plain", "headers", "null_key", "null_value", "null_key_and_value", "transactional",
              "control_commit", "transactional_aborted", "control_abort", "log_append_time")
METADATA_KINDS = ("kraft_control", "kraft_metadata")
PID, EPOCH, COORDINATOR_EPOCH = 4242, 3, 17
TS = 1_700_000_000_000
RECORD_LINE = re.compile(r"^\| offset: (?P<offset>\d+) (?P<tstype>\w+): (?P<ts>-?\d+) keySize: (?P<ks>-?\d+) "
                         r"valueSize: (?P<vs>-?\d+) sequence: (?P<seq>-?\d+) "
                         r"headerKeys: \[(?P<hk>[^\]]*)\](?P<rest>.*)$")


@dataclass
class Cell:
    """One batch we wrote: its codec, kind, position and records."""

    codec: str
    kind: str
    position: int
    data: bytes
    records: list[Record]
    expected_text: dict[int, str] = field(default_factory=dict)  # offset -> text after headerKeys


def data_records(kind: str, first: int, n: int = 4) -> list[Record]:
    out = []
    for i in range(n):
        key = None if kind in ("null_key", "null_key_and_value") else b"key-%d" % (first + i)
        value = None if kind in ("null_value", "null_key_and_value") else b"value %d of %s" % (first + i, kind.encode())
        headers = [("trace-id", b"%016x" % (first + i)), ("empty", b""), ("null", None)] if kind == "headers" else []
        out.append(Record(first + i, TS + first + i, key, value, headers))
    return out


def build_data_segment() -> tuple[bytes, list[Cell]]:
    cells, parts, offset, pos = [], [], 0, 0
    seq = 0
    for codec in CODECS:
        for kind in DATA_KINDS:
            kw: dict = {"compression": codec, "partition_leader_epoch": 5}
            if kind.startswith("control_"):
                marker = "COMMIT" if kind == "control_commit" else "ABORT"
                k, v = encode_control_record(marker, {"coordinatorEpoch": COORDINATOR_EPOCH})
                recs = [Record(offset, TS + offset, k, v, [])]
                kw.update(is_control=True, is_transactional=True, producer_id=PID, producer_epoch=EPOCH)
            else:
                recs = data_records(kind, offset)
                if kind.startswith("transactional"):
                    kw.update(is_transactional=True, producer_id=PID, producer_epoch=EPOCH, base_sequence=seq)
                    seq += len(recs)
                if kind == "log_append_time":
                    kw.update(timestamp_type="LogAppendTime", max_timestamp=TS + 999_999)
            data = encode_batch(recs, base_offset=offset, **kw)
            cell = Cell(codec, kind, pos, data, recs)
            for r in recs:
                if kind.startswith("control_"):
                    cell.expected_text[r.offset] = f" endTxnMarker: {marker} coordinatorEpoch: {COORDINATOR_EPOCH}"
                else:
                    cell.expected_text[r.offset] = (("" if r.key is None else f" key: {r.key.decode()}")
                                                    + ("" if r.value is None else f" payload: {r.value.decode()}"))
            cells.append(cell)
            parts.append(data)
            offset += len(recs)
            pos += len(data)
    return b"".join(parts), cells


def metadata_fields(kafka_lib: Path) -> list[tuple[str, int, dict]]:
    """Every record type at the newest version both sides know, every field set."""
    known = _release_schemas(kafka_lib)
    out = []
    for schema in METADATA_SCHEMAS.values():
        theirs = known.get(schema.name)
        if theirs is None:
            continue
        version = min(schema.valid_versions[1], theirs.valid_versions[1])
        fields = {f.json_name: _sample(f, version, i, ascii_only=True) for i, f in enumerate(schema.fields)
                  if VersionRange.parse(f.versions).contains(version)}
        out.append((schema.name, version, fields))
    return out


def build_metadata_segment(records: list[tuple[str, int, dict]]) -> tuple[bytes, list[Cell]]:
    from workbench.formats.metadata import encode_metadata_record

    controls: list[tuple[str, dict]] = [
        ("LEADER_CHANGE", {"leaderId": 1, "voters": [{"voterId": 1}, {"voterId": 2}],
                           "grantingVoters": [{"voterId": 1}]}),
        ("KRAFT_VERSION", {"kRaftVersion": 1}),
        ("KRAFT_VOTERS", {"voters": [{"voterId": 1, "voterDirectoryId": U1_TEXT,
                                      "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                                      "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}),
    ]
    cells, parts, offset, pos = [], [], 0, 0
    for codec in CODECS:
        recs = [Record(offset + i, TS + offset, *encode_control_record(t, f), []) for i, (t, f) in enumerate(controls)]
        data = encode_batch(recs, base_offset=offset, compression=codec, partition_leader_epoch=2, is_control=True)
        cell = Cell(codec, "kraft_control", pos, data, recs)
        for r in recs:
            rec = decode_control_record(r.key, r.value)
            name = {"LEADER_CHANGE": "LeaderChange:", "KRAFT_VERSION": "KRaftVersion",
                    "KRAFT_VOTERS": "KRaftVoters"}[rec.type_name]
            cell.expected_text[r.offset] = f" {name} {control_json(rec)}"
        cells.append(cell)
        parts.append(data)
        offset += len(recs)
        pos += len(data)
        recs = [Record(offset + i, TS + offset, None, encode_metadata_record(n, v, f), [])
                for i, (n, v, f) in enumerate(records)]
        data = encode_batch(recs, base_offset=offset, compression=codec, partition_leader_epoch=2)
        cell = Cell(codec, "kraft_metadata", pos, data, recs)
        for r in recs:
            md = decode_metadata_record(r.value)
            assert md.error is None, (md.name, md.error)
            cell.expected_text[r.offset] = " payload: " + (dump_payload(md) or "")
        cells.append(cell)
        parts.append(data)
        offset += len(recs)
        pos += len(data)
    return b"".join(parts), cells


def parse(text: str) -> dict[int, tuple[dict[str, str], dict[int, dict[str, str]]]]:
    """Batch lines by position, each with its record lines by offset."""
    out: dict[int, tuple[dict[str, str], dict[int, dict[str, str]]]] = {}
    current = None
    for line in text.splitlines():
        m = BATCH_LINE.match(line)
        if m:
            current = int(m["pos"])
            out[current] = (m.groupdict(), {})
            continue
        m = RECORD_LINE.match(line)
        if m and current is not None:
            out[current][1][int(m["offset"])] = m.groupdict()
    return out


@pytest.fixture(scope="module")
def dumps(tmp_path_factory, kafka_dist):
    kafka = kafka_dist()
    root = tmp_path_factory.mktemp("encoded")
    data, data_cells = build_data_segment()
    (root / "enc-0").mkdir()
    seg = root / "enc-0" / "00000000000000000000.log"
    seg.write_bytes(data)
    meta, meta_cells = build_metadata_segment(metadata_fields(kafka.lib))
    (root / "__cluster_metadata-0").mkdir()
    mseg = root / "__cluster_metadata-0" / "00000000000000000000.log"
    mseg.write_bytes(meta)
    out = {}
    for path, args, cells in ((seg, ["--deep-iteration", "--print-data-log"], data_cells),
                              (mseg, ["--cluster-metadata-decoder"], meta_cells)):
        result = kafka.run_tool("dump-log", [*args, "--files", str(path)], timeout=180, heap="256m")
        assert "Exception" not in result.stderr, result.stderr[-3000:]
        assert "invalid bytes" not in result.stdout
        out[path.parent.name] = (path, result.stdout, parse(result.stdout), cells)
    return out


def test_whole_files_match_kafka_dump(dumps):
    """Our reading of both files equals Kafka's dump, batch line for batch line."""
    for path, text, parsed, cells in dumps.values():
        assert compare_with_dump(path, text) == len(cells)
        assert sorted(parsed) == [c.position for c in cells]


CELLS = [(c, k) for c in CODECS for k in DATA_KINDS] + [(c, k) for c in CODECS for k in METADATA_KINDS]


@pytest.mark.parametrize("codec, kind", CELLS, ids=[f"{c}-{k}" for c, k in CELLS])
def test_kafka_reads_cell_as_valid(dumps, codec, kind):
    path, _, parsed, cells = dumps["__cluster_metadata-0" if kind in METADATA_KINDS else "enc-0"]
    [cell] = [c for c in cells if (c.codec, c.kind) == (codec, kind)]
    [ours] = list(read_batches(open(path, "rb"), str(path), start=cell.position, end=cell.position + 1))
    assert bytes(ours.data) == cell.data
    line, records = parsed[cell.position]
    assert line["valid"] == "true", line
    assert (line["codec"], int(line["crc"]), int(line["size"])) == (codec, ours.crc, len(cell.data))
    assert (int(line["base"]), int(line["last"]), int(line["count"])) == (
        cell.records[0].offset, cell.records[-1].offset, len(cell.records))
    assert line["ctl"] == str(kind.startswith("control_") or kind == "kraft_control").lower()
    assert line["txn"] == str(kind.startswith(("control_", "transactional"))).lower()
    assert line["tstype"] == ("LogAppendTime" if kind == "log_append_time" else "CreateTime")
    assert sorted(records) == [r.offset for r in cell.records]
    for r in cell.records:
        got = records[r.offset]
        ts = ours.max_timestamp if kind == "log_append_time" else r.timestamp
        assert (int(got["ts"]), int(got["ks"]), int(got["vs"])) == (
            ts, -1 if r.key is None else len(r.key), -1 if r.value is None else len(r.value))
        assert got["hk"] == ",".join(k for k, _ in r.headers)
        if kind == "kraft_metadata":
            assert got["rest"].startswith(" payload: {"), got["rest"]
            assert json.loads(got["rest"][len(" payload: "):]) == json.loads(cell.expected_text[r.offset][10:])
        assert got["rest"] == cell.expected_text[r.offset], (r.offset, got["rest"], cell.expected_text[r.offset])


def test_every_metadata_record_type_is_in_the_matrix(dumps):
    _, _, _, cells = dumps["__cluster_metadata-0"]
    [cell] = [c for c in cells if (c.codec, c.kind) == ("zstd", "kraft_metadata")]
    names = {decode_metadata_record(r.value).name for r in cell.records}
    assert len(names) == len(cell.records) >= 20
