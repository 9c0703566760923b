"""kafka-dump-log text: our writer against Kafka's own output, and the parser against the binary.

* Fixtures (``fixtures/dumptext/``, see its README): tiny segments written by our encoder and
  dumped by Kafka 4.3.1 and 3.9.2 with four flag sets; always run.
* Scenario bundles captured from real Kafka (``@pytest.mark.kafka``): every segment and
  snapshot of every bundle, both versions.
* Inline texts of older eras (2.x/3.x) written from reference §10.
"""

from __future__ import annotations

import io
import json
import re
import struct
from pathlib import Path

import pytest

from tests.kafka_bundles import bundle_params
from workbench.errors import ConfigError, CorruptDataError
from workbench.formats.batch import Batch, encode_batch, read_batches
from workbench.formats.dumptext import (
    TOOL_FAILURE,
    DumpOptions,
    KafkaEra,
    dump_lines,
    dump_text,
    java_file_path,
    options_from_args,
    parse_kafka_dump,
    write_kafka_dump,
)
from workbench.formats.problems import ProblemLog

FIXTURES = Path(__file__).parent / "fixtures" / "dumptext"
FLAG_SETS = {
    "shallow": DumpOptions(deep_iteration=False),
    "deep": DumpOptions(),
    "data": DumpOptions(print_data_log=True),
    "data-skip": DumpOptions(print_data_log=True, skip_record_metadata=True),
}
BATCH_KEYS = (
    "position",
    "base_offset",
    "last_offset",
    "record_count",
    "size",
    "magic",
    "compression",
    "timestamp_type",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "last_sequence",
    "is_transactional",
    "is_control",
    "partition_leader_epoch",
    "has_delete_horizon",
    "delete_horizon_ms",
    "crc",
    "crc_valid",
)
RECORD_KEYS = (
    "offset",
    "timestamp_type",
    "timestamp",
    "key_size",
    "value_size",
    "sequence",
    "header_keys",
    "batch_position",
)


# ---------------------------------------------------------------------------------------------
# helpers: the rows the parser should give, computed from the binary file


def _sequence(b: Batch, offset: int) -> int:
    if b.base_sequence < 0:
        return -1
    s = b.base_sequence + offset - b.base_offset
    return s - 0x80000000 if s > 0x7FFFFFFF else s


def _binary_rows(path: Path, *, stop_at_gap: bool = True) -> tuple[list[dict], list[dict], list]:
    """Batch rows, record rows and the records themselves, read from the binary file."""
    batches, records, raw = [], [], []
    expected = 0
    with open(path, "rb") as f:
        for b in read_batches(f, str(path)):
            if stop_at_gap and b.position != expected:
                break
            expected += b.size
            legacy = b.magic < 2
            batches.append(
                {
                    "position": b.position,
                    "base_offset": None if legacy else b.base_offset,
                    "last_offset": b.last_offset,
                    "record_count": None if legacy else b.record_count,
                    "size": b.size,
                    "magic": b.magic,
                    "compression": b.compression,
                    "timestamp_type": b.timestamp_type,
                    "max_timestamp": b.max_timestamp,
                    "producer_id": None if legacy else b.producer_id,
                    "producer_epoch": None if legacy else b.producer_epoch,
                    "base_sequence": None if legacy else b.base_sequence,
                    "last_sequence": None if legacy else b.last_sequence,
                    "is_transactional": None if legacy else b.is_transactional,
                    "is_control": None if legacy else b.is_control,
                    "partition_leader_epoch": None if legacy else b.partition_leader_epoch,
                    "has_delete_horizon": None if legacy else b.has_delete_horizon,
                    "delete_horizon_ms": None if legacy else b.delete_horizon_ms,
                    "crc": b.crc,
                    "crc_valid": b.crc_valid,
                }
            )
            for r in b.records():
                records.append(
                    {
                        "offset": r.offset,
                        "timestamp_type": b.timestamp_type,
                        "timestamp": r.timestamp,
                        "key_size": -1 if r.key is None else len(r.key),
                        "value_size": -1 if r.value is None else len(r.value),
                        "sequence": _sequence(b, r.offset) if not legacy else None,
                        "header_keys": [k for k, _ in r.headers] if not legacy else None,
                        "batch_position": b.position,
                    }
                )
                raw.append((b, r))
    return batches, records, raw


def _parsed(text: str, **kwargs) -> tuple[list[dict], list[dict], list[dict], list[dict]]:
    rows = list(parse_kafka_dump(text, **kwargs))
    by = {k: [r for r in rows if r["kind"] == k] for k in ("file", "batch", "record", "problem")}
    return by["file"], by["batch"], by["record"], by["problem"]


def _printed_batch_keys(version: str) -> list[str]:
    """The batch fields the release's dump tool prints (before 3.2 no delete horizon)."""
    before_horizon = KafkaEra.of(version).version < (3, 2, 0)
    return [k for k in BATCH_KEYS if not (before_horizon and k in ("has_delete_horizon", "delete_horizon_ms"))]


def _first_difference(want: str, got: str) -> str:
    wl, gl = want.split("\n"), got.split("\n")
    for i, (a, b) in enumerate(zip(wl, gl, strict=False)):
        if a != b:
            return f"line {i + 1}:\n  kafka: {a[:300]!r}\n  ours:  {b[:300]!r}"
    return f"line counts differ: kafka {len(wl)}, ours {len(gl)}"


# ---------------------------------------------------------------------------------------------
# fixtures dumped by real Kafka (always run; regenerate with make_fixtures.py)


def _fixture_dumps() -> list[tuple[str, str, str]]:
    out = []
    for txt in sorted(t for t in FIXTURES.glob("*/*.log.*.txt") if not t.name.endswith(".decoder.txt")):
        rel = txt.relative_to(FIXTURES).as_posix()
        segment = rel[: rel.index(".log") + 4]
        version, slug = rel[len(segment) + 1 : -4].rsplit(".", 1)
        out.append((segment, version, slug))
    return out


FIXTURE_DUMPS = _fixture_dumps()


def test_fixture_set_is_complete():
    assert len(FIXTURE_DUMPS) == 3 * 2 * 4  # three segments, two versions, four flag sets


@pytest.mark.parametrize(
    "segment, version, slug", FIXTURE_DUMPS, ids=[f"{s.split('/')[0]}-{v}-{f}" for s, v, f in FIXTURE_DUMPS]
)
def test_fixture_text_is_byte_identical(segment, version, slug):
    want = (FIXTURES / f"{segment}.{version}.{slug}.txt").read_bytes().decode("utf-8")
    log = ProblemLog()
    got = dump_text(FIXTURES / segment, FLAG_SETS[slug], kafka_version=version, shown_path=segment, problems=log)
    assert got == want, _first_difference(want, got)
    if segment.startswith("damaged"):
        assert [p.kind for p in log.problems] == ["crc_mismatch", "stopped"]
    else:
        assert log.problems == []


@pytest.mark.parametrize(
    "segment, version, slug", FIXTURE_DUMPS, ids=[f"{s.split('/')[0]}-{v}-{f}" for s, v, f in FIXTURE_DUMPS]
)
def test_fixture_text_parses_to_the_binary(segment, version, slug):
    text = (FIXTURES / f"{segment}.{version}.{slug}.txt").read_bytes().decode("utf-8")
    files, batches, records, problems = _parsed(text)
    want_batches, want_records, raw = _binary_rows(FIXTURES / segment)
    assert problems == []
    assert [(f["path"], f["file_kind"], f["base_offset"]) for f in files] == [
        (segment, "log", int(Path(segment).name.split(".")[0]))
    ]
    assert [{k: b[k] for k in BATCH_KEYS} for b in batches] == want_batches
    if slug == "shallow":
        assert records == []
        return
    if slug == "data-skip":
        # no metadata: one row per record, contents only (control records: empty lines)
        assert len(records) == len(want_records)
        assert all(r["offset"] is None for r in records)
    else:
        assert [{k: r[k] for k in RECORD_KEYS} for r in records] == want_records
    if slug in ("data", "data-skip"):
        want_contents = [
            (None, None)
            if b.is_control
            else (
                None if r.key is None else r.key.decode("utf-8", "replace"),
                None if r.value is None else r.value.decode("utf-8", "replace"),
            )
            for b, r in raw
        ]
        assert [(r["key"], r["payload"]) for r in records] == want_contents
    controls = [r["control"] for r in records]
    if slug == "deep" and segment.startswith("mixed"):
        assert controls[12] == "endTxnMarker: COMMIT coordinatorEpoch: 3"
        assert controls[14] == "endTxnMarker: ABORT coordinatorEpoch: 4"
        assert controls[17] == (
            'LeaderChange: {"version":0,"leaderId":2,"voters":[{"voterId":1},'
            '{"voterId":2}],"grantingVoters":[{"voterId":2}]}'
            if version.startswith("4")
            else "controlType: LEADER_CHANGE(2)"
        )
        assert controls[22] == "controlType: UNKNOWN(9)"
        assert [r["control_type"] for r in records if r["control"] is not None] == [
            "COMMIT",
            "ABORT",
            "LEADER_CHANGE",
            "KRAFT_VERSION",
            "KRAFT_VOTERS",
            "SNAPSHOT_HEADER",
            "SNAPSHOT_FOOTER",
            "UNKNOWN",
        ]
    if segment.startswith("legacy") and slug != "data-skip":
        assert all(r["crc_valid"] is True and r["crc"] > 0 for r in records)
    trailers = [r for r in parse_kafka_dump(text) if r["kind"] == "trailer"]
    assert [(t["invalid_bytes"], t["name"]) for t in trailers] == (
        [(71, "00000000000000000000.log")] if segment.startswith("damaged") else []
    )


DECODER_FLAGS = {
    "__consumer_offsets": "--offsets-decoder",
    "__transaction_state": "--transaction-log-decoder",
    "__cluster_metadata": "--cluster-metadata-decoder",
}
DECODER_DUMPS = sorted(
    (t.parent.name + "/" + t.name[: t.name.index(".log") + 4], t.name[t.name.index(".log") + 5 : -len(".decoder.txt")])
    for t in FIXTURES.glob("*/*.decoder.txt")
)


def test_decoder_fixture_set_is_complete():
    assert len(DECODER_DUMPS) == 3 * 2


@pytest.mark.parametrize("segment, version", DECODER_DUMPS, ids=[f"{s.split('/')[0]}-{v}" for s, v in DECODER_DUMPS])
def test_decoder_fixture_text_is_byte_identical(segment, version):
    """Decoded payloads and Kafka's error texts (unknown types, truncation, bad frames), the
    3.9 transaction-log text with its HashSet partition order, the 4.3 JSON forms."""
    want = (FIXTURES / f"{segment}.{version}.decoder.txt").read_bytes().decode("utf-8")
    opts = options_from_args([DECODER_FLAGS[segment.split("-")[0]]])
    log = ProblemLog()
    got = dump_text(FIXTURES / segment, opts, kafka_version=version, shown_path=segment, problems=log)
    assert got == want, _first_difference(want, got)
    # every record Kafka could not decode (and the offsets value with trailing bytes) is a problem
    errors = [line for line in want.split("\n") if "skipping." in line]
    assert len(log.problems) == len(errors) + (1 if segment.startswith("__consumer_offsets") else 0)
    assert {p.kind for p in log.problems} <= {"decode_error"}
    files, batches, records, problems = _parsed(want)
    want_batches, want_records, _ = _binary_rows(FIXTURES / segment)
    assert problems == []
    assert [{k: b[k] for k in BATCH_KEYS} for b in batches] == want_batches
    assert [{k: r[k] for k in RECORD_KEYS} for r in records] == want_records
    assert [r["key"] is not None or r["payload"] is not None for r in records] == [True] * len(records)


_SIDECAR_NAME = re.compile(r"^(.*\.(?:index|timeindex|txnindex|snapshot))\.(\d+\.\d+\.\d+)\.txt$")
SIDECAR_DUMPS = sorted(
    (f"{t.parent.name}/{m[1]}", m[2])
    for t in FIXTURES.glob("*/*.txt")
    if (m := _SIDECAR_NAME.match(t.name)) is not None
)


@pytest.mark.parametrize("name, version", SIDECAR_DUMPS, ids=[f"{n}-{v}" for n, v in SIDECAR_DUMPS])
def test_sidecar_text_is_byte_identical_and_parses_back(name, version):
    """Offset/time/transaction indexes and producer snapshots (reference §10.6)."""
    from workbench.formats.index import read_offset_index, read_producer_snapshot, read_time_index, read_txn_index

    want = (FIXTURES / f"{name}.{version}.txt").read_bytes().decode("utf-8")
    log = ProblemLog()
    got = dump_text(FIXTURES / name, kafka_version=version, shown_path=name, problems=log)
    assert got == want, _first_difference(want, got)
    rows = [r for r in parse_kafka_dump(want) if r["kind"] != "file"]
    assert all(r["kind"] != "problem" for r in rows)
    path = FIXTURES / name
    base = int(path.name.split(".")[0])
    if name.endswith(".index"):
        entries = read_offset_index(path.read_bytes(), base)
        if not entries:
            assert [r["kind"] for r in rows] == ["note"]
        else:
            assert [(r["offset"], r["position"]) for r in rows] == [tuple(e) for e in entries]
    elif name.endswith(".timeindex"):
        assert [(r["timestamp"], r["offset"]) for r in rows] == [
            tuple(e) for e in read_time_index(path.read_bytes(), base_offset=base)
        ]
    elif name.endswith(".txnindex"):
        assert [(r["producer_id"], r["first_offset"], r["last_offset"], r["last_stable_offset"]) for r in rows] == [
            (t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
            for t in read_txn_index(path.read_bytes())
        ]
    else:
        entries = [] if log.problems else read_producer_snapshot(path.read_bytes())
        assert [
            (
                r["producer_id"],
                r["producer_epoch"],
                r["coordinator_epoch"],
                r["last_offset"] if r["last_offset"] is not None else -1,
                r["last_timestamp"],
            )
            for r in rows
        ] == [(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_offset, e.timestamp) for e in entries]
        assert [p.kind for p in log.problems] == (["crc_mismatch"] if "108" in name else [])


def test_sidecar_fixture_set_is_complete():
    assert len(SIDECAR_DUMPS) == 7 * 2


# ---------------------------------------------------------------------------------------------
# real scenario bundles (every segment and snapshot; the pinned releases and the older ones)

def _bundle(kafka_bundle, name: str, version: str) -> Path:
    """The bundle (built when missing)."""
    return Path(kafka_bundle(name, version))


@pytest.mark.kafka
@pytest.mark.parametrize("version, name", bundle_params(older=True))
def test_bundle_dumps_are_byte_identical_and_parse_to_the_binary(kafka_bundle, name, version):
    bundle = _bundle(kafka_bundle, name, version)
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["kafka_version"] == version
    entries = manifest["dumps"]
    assert entries, "the bundle has no dumps"
    text_mismatches, parse_mismatches, decoders = [], [], {}
    for entry in entries:
        want = (bundle / entry["dump"]).read_bytes().decode("utf-8")
        opts = options_from_args(entry["args"])
        decoders[opts.decoder] = decoders.get(opts.decoder, 0) + 1
        log = ProblemLog()
        # the tool ran in the bundle directory on the relative path (or on a link, "dumped_as")
        got = dump_text(
            bundle / entry["file"],
            opts,
            kafka_version=version,
            shown_path=entry.get("dumped_as", entry["file"]),
            problems=log,
        )
        if got != want:
            text_mismatches.append(f"{entry['file']} {entry['args']}: {_first_difference(want, got)}")
        assert log.problems == [], f"{entry['file']}: {log.problems[:3]}"
        files, batches, records, problems = _parsed(want)
        want_batches, want_records, _ = _binary_rows(bundle / entry["file"])
        keep = _printed_batch_keys(version)
        got_batches = [{k: b[k] for k in keep} for b in batches]
        want_batches = [{k: b[k] for k in keep} for b in want_batches]
        got_records = [{k: r[k] for k in RECORD_KEYS} for r in records]
        if problems or got_batches != want_batches or got_records != want_records:
            parse_mismatches.append(
                f"{entry['file']}: problems {problems[:2]}, batches equal "
                f"{got_batches == want_batches}, records equal {got_records == want_records}"
            )
        assert len(files) == 1
    assert not text_mismatches, f"{len(text_mismatches)} of {len(entries)} differ:\n" + "\n".join(text_mismatches[:5])
    assert not parse_mismatches, "\n".join(parse_mismatches[:5])
    print(f"{name} {version}: {len(entries)} files byte-identical and parsed back ({decoders})")


# ---------------------------------------------------------------------------------------------
# write_kafka_dump and options


def _segment(tmp_path: Path, topic_dir: str, data: bytes, name: str = "00000000000000000000.log") -> Path:
    d = tmp_path / topic_dir
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_bytes(data)
    return p


def test_write_kafka_dump_auto_decoder_and_status(tmp_path):
    from workbench.formats.metadata import encode_metadata_record

    meta = _segment(
        tmp_path,
        "__cluster_metadata-0",
        encode_batch(
            [(0, 5, None, encode_metadata_record("NoOpRecord", 0, {}))], base_offset=0, partition_leader_epoch=1
        ),
    )
    plain = _segment(tmp_path, "orders-0", encode_batch([(0, 5, b"k", b"v")], base_offset=0))
    out = io.StringIO()
    assert (
        write_kafka_dump(
            [str(meta), str(plain)], out=out, kafka_version=None, decoder="auto", payloads=False, strict=False
        )
        == 0
    )
    lines = out.getvalue().split("\n")
    assert lines[0] == f"Dumping {meta}"
    assert lines[3].endswith('headerKeys: [] payload: {"type":"NO_OP_RECORD","version":0,"data":{}}')
    assert lines[4] == f"Dumping {plain}"
    assert lines[7].endswith("headerKeys: []")  # no payloads without --print-data-log
    assert out.getvalue().endswith("\n") and lines[-1] == ""
    out = io.StringIO()
    assert (
        write_kafka_dump([str(plain)], out=out, kafka_version="4.3", decoder="none", payloads=True, strict=False) == 0
    )
    assert out.getvalue().split("\n")[3].endswith("key: k payload: v")


def test_write_kafka_dump_reports_damage_and_strict_raises(tmp_path):
    good = encode_batch([(0, 5, b"k", b"v")], base_offset=0)
    seg = _segment(tmp_path, "t-0", good + good[:30])
    out = io.StringIO()
    assert write_kafka_dump([str(seg)], out=out, kafka_version=None, decoder="none", payloads=False, strict=False) == 1
    assert out.getvalue().split("\n")[-2] == "Found 30 invalid bytes at the end of 00000000000000000000.log"
    with pytest.raises(CorruptDataError):
        write_kafka_dump([str(seg)], out=io.StringIO(), kafka_version=None, decoder="none", payloads=False, strict=True)


def test_where_kafka_stops(tmp_path):
    good = encode_batch([(0, 5, b"k", b"v")], base_offset=0)
    # a declared size below 14: Kafka's tool fails there, nothing more is printed
    bad = _segment(tmp_path, "a-0", good + bytes(8) + (3).to_bytes(4, "big") + bytes(40))
    log = ProblemLog()
    lines = list(dump_lines(bad, problems=log))
    assert lines[-1].startswith("| offset: 0 ")
    assert log.problems[-1].kind == "tool_failure" and "CorruptRecordException" in log.problems[-1].detail
    # 17 bytes or fewer left: reported as invalid bytes
    short = _segment(tmp_path, "b-0", good + b"\x01" * 17)
    assert list(dump_lines(short))[-1] == "Found 17 invalid bytes at the end of 00000000000000000000.log"


def test_file_kinds_and_names(tmp_path):
    snap = _segment(tmp_path, "__cluster_metadata-0", b"", "00000000000000000042-0000000003.checkpoint")
    assert list(dump_lines(snap, kafka_version="3.9.2")) == [f"Dumping {snap}", "Snapshot end offset: 42, epoch: 3"]
    boot = _segment(tmp_path, "n", b"", "bootstrap.checkpoint")
    assert list(dump_lines(boot))[1] == "KRaft bootstrap snapshot"
    log = ProblemLog()
    assert list(dump_lines(snap, kafka_version="3.2.0", problems=log)) == [f"Dumping {snap}"]
    assert log.problems[0].kind == "unsupported"
    old = _segment(tmp_path, "t-0", encode_batch([(7, 1, None, b"v")], base_offset=7), "00000000000000000007.log")
    assert list(dump_lines(old, kafka_version="3.2.3"))[1] == "Starting offset: 7"
    log = ProblemLog()
    odd = _segment(tmp_path, "t-0", b"", "segment.log")
    assert list(dump_lines(odd, problems=log)) == [f"Dumping {odd}"]
    assert log.problems[0].kind == "tool_failure"
    assert java_file_path("a//b///c.log") == "a/b/c.log"
    assert java_file_path("/") == "/"


def test_options_and_eras():
    assert options_from_args(["--deep-iteration"]) == DumpOptions(deep_iteration=True)
    assert options_from_args(["--offsets-decoder", "--files", "x.log"]).decoder == "offsets"
    assert options_from_args(["--remote-log-metadata-decoder"]).prints_contents
    assert not options_from_args([]).deep
    assert options_from_args(["--index-sanity-check"]).index_sanity_check
    assert options_from_args(["--max-bytes", "100"]).max_bytes == 100
    with pytest.raises(ConfigError, match="no --max-bytes"):
        options_from_args(["--max-bytes", "100"], "3.2.0")  # --max-bytes came in 3.3
    with pytest.raises(ConfigError, match="cannot run here"):
        options_from_args(["--value-decoder-class", "com.example.AvroDecoder"])
    with pytest.raises(ConfigError, match="not a recognized option"):
        options_from_args(["--deep"])
    assert options_from_args(["--value-decoder-class"]).prints_contents
    assert options_from_args(["--transaction-log-decoder", "--offsets-decoder"]).decoder == "offsets"
    with pytest.raises(ConfigError):
        KafkaEra.of("latest")
    e = KafkaEra.of("2.8.1")
    assert (e.record_form, e.codec_upper, e.delete_horizon, e.scala) == ("2.8", True, False, True)
    assert KafkaEra.of("4.1.0").leader_change_json and not KafkaEra.of("4.0.0").leader_change_json
    assert KafkaEra.of(None).version == (4, 3, 1)


# ---------------------------------------------------------------------------------------------
# older eras: our writer's forms (from the reference) parse back to the binary


OLD_VERSIONS = ("2.0.1", "2.4.1", "2.8.2", "3.1.2", "3.9.2", "4.0.0", "4.3.1")


@pytest.mark.parametrize("version", OLD_VERSIONS)
@pytest.mark.parametrize("segment", ["mixed-0/00000000000000000000.log", "legacy-0/00000000000000000100.log"])
def test_every_era_written_parses_back(version, segment):
    text = dump_text(FIXTURES / segment, DumpOptions(print_data_log=True), kafka_version=version, shown_path=segment)
    files, batches, records, problems = _parsed(text)
    assert problems == []
    want_batches, want_records, raw = _binary_rows(FIXTURES / segment)
    if version == "2.0.1":
        assert batches == []  # <= 2.1: deep iteration prints record lines only
        got = [
            {
                "offset": r["offset"],
                "timestamp": r["timestamp"],
                "key_size": r["key_size"],
                "value_size": r["value_size"],
                "batch_position": r["batch_position"],
            }
            for r in records
        ]
        assert got == [
            {k: w[k] for k in ("offset", "timestamp", "key_size", "value_size", "batch_position")} for w in want_records
        ]
        return
    keep = _printed_batch_keys(version)
    assert [{k: b[k] for k in keep} for b in batches] == [{k: w[k] for k in keep} for w in want_batches]
    assert [{k: r[k] for k in RECORD_KEYS} for r in records] == want_records
    assert [r["payload"] for (b, _), r in zip(raw, records, strict=True) if not b.is_control] == [
        None if r.value is None else r.value.decode("utf-8", "replace") for b, r in raw if not b.is_control
    ]


# ---------------------------------------------------------------------------------------------
# older eras against those releases' own dump tools (kafka.tools.DumpLogSegments of one release
# per era, fetched from Maven Central by peer.kafka.fetch_dump_tool; no cluster)

FLAG_ARGS = {
    "shallow": [],
    "deep": ["--deep-iteration"],
    "data": ["--print-data-log"],
    "data-skip": ["--print-data-log", "--skip-record-metadata"],
}
OLD_SEGMENTS = ("mixed-0/00000000000000000000.log", "legacy-0/00000000000000000100.log",
                "damaged-0/00000000000000000000.log")


def _release_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def _old_tool_cases() -> list:
    from peer.kafka import DUMP_TOOL_RELEASES

    return [
        pytest.param(version, slug, id=f"{version}-{slug}")
        for version in sorted(DUMP_TOOL_RELEASES, key=_release_key)
        for slug in FLAG_ARGS
        # --skip-record-metadata came with 2.8: older tools reject the flag
        if slug != "data-skip" or _release_key(version) >= (2, 8)
    ]


def _split_dumps(stdout: str) -> dict[str, str]:
    """Kafka's output of one run over several files, by the path after ``Dumping``."""
    chunks = ("\n" + stdout).split("\nDumping ")[1:]
    return {chunk.split("\n", 1)[0]: "Dumping " + chunk for chunk in chunks}


@pytest.mark.kafka
@pytest.mark.parametrize("version, slug", _old_tool_cases())
def test_older_release_tool_prints_our_text(version, slug):
    """The record and batch lines of every era, on segments with every batch kind, damage
    included: byte-identical with what that release's own tool prints."""
    from peer.kafka import fetch_dump_tool

    kafka = fetch_dump_tool(version)
    paths = [str(FIXTURES / seg) for seg in OLD_SEGMENTS]
    result = kafka.dump_log(paths, FLAG_ARGS[slug], check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    theirs = _split_dumps(result.stdout)
    mismatches = []
    for path in paths:
        want = theirs.get(path)
        assert want is not None, f"Kafka {version} printed nothing for {path}: {result.stderr[-500:]}"
        got = dump_text(path, FLAG_SETS[slug], kafka_version=version, shown_path=path)
        if not want.endswith("\n"):
            want += "\n"
        if got != want:
            mismatches.append(f"{path}: {_first_difference(want, got)}")
    assert not mismatches, "\n".join(mismatches)


#: Decoder texts our writer reproduces for releases before the pinned ones (before 3.5 the
#: decoders' texts differ, see dumptext_write's module docstring; before 3.8 the offsets one)
OLD_DECODER_CASES = [
    (version, segment)
    for version in ("3.5.2", "4.0.0", "4.2.0")
    for segment in sorted({s for s, _ in DECODER_DUMPS})
    if not (segment.startswith("__consumer_offsets") and _release_key(version) < (3, 8))
]


@pytest.mark.kafka
@pytest.mark.parametrize("version, segment", OLD_DECODER_CASES,
                         ids=[f"{v}-{s.split('-')[0]}" for v, s in OLD_DECODER_CASES])
def test_older_release_decoder_text(version, segment):
    from peer.kafka import fetch_dump_tool

    path = str(FIXTURES / segment)
    flag = DECODER_FLAGS[segment.split("-")[0]]
    result = fetch_dump_tool(version).dump_log([path], [flag], check=False)
    want = result.stdout
    got = dump_text(path, options_from_args([flag]), kafka_version=version, shown_path=path, problems=ProblemLog())
    assert got == want, _first_difference(want, got)


# ---------------------------------------------------------------------------------------------
# parser: inline texts of each era (reference §10), shapes and problems

ERA_22 = (
    "Dumping /data/t-0/00000000000000000000.log\n"
    "Starting offset: 0\n"
    "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 0 lastSequence: 1 producerId: 7 producerEpoch: 0 "
    "partitionLeaderEpoch: 3 isTransactional: false isControl: false position: 0 CreateTime: "
    "1600000000001 size: 90 magic: 2 compresscodec: GZIP crc: 12345 isvalid: true\n"
    "| offset: 0 CreateTime: 1600000000000 keysize: 1 valuesize: 3 sequence: 0 headerKeys: [a,b] key: k "
    "payload: one\n"
    "| offset: 1 CreateTime: 1600000000001 keysize: -1 valuesize: -1 sequence: 1 headerKeys: []\n"
    "offset: 5 position: 90 LogAppendTime: 1600000000009 size: 40 magic: 1 compresscodec: NONE crc: 99 "
    "isvalid: true\n"
    "| offset: 5 LogAppendTime: 1600000000009 keysize: -1 valuesize: 3 crc: 99 isvalid: true payload: "
    "old\n"
    "baseOffset: 6 lastOffset: 6 count: 1 baseSequence: -1 lastSequence: -1 producerId: 7 producerEpoch: "
    "0 partitionLeaderEpoch: 3 isTransactional: true isControl: true position: 130 CreateTime: "
    "1600000000010 size: 78 magic: 2 compresscodec: NONE crc: 5 isvalid: true\n"
    "| offset: 6 CreateTime: 1600000000010 keysize: 4 valuesize: 6 sequence: -1 headerKeys: [] "
    "endTxnMarker: COMMIT coordinatorEpoch: 2\n"
    "Found 12 invalid bytes at the end of 00000000000000000000.log\n"
)


def test_parse_era_2_2_to_2_7():
    files, batches, records, problems = _parsed(ERA_22)
    assert problems == []
    assert files == [
        {
            "kind": "file",
            "line": 1,
            "path": "/data/t-0/00000000000000000000.log",
            "file_kind": "log",
            "base_offset": 0,
            "snapshot_end_offset": None,
            "snapshot_epoch": None,
        }
    ]
    assert [
        (
            b["base_offset"],
            b["last_offset"],
            b["compression"],
            b["timestamp_type"],
            b["has_delete_horizon"],
            b["magic"],
            b["is_control"],
        )
        for b in batches
    ] == [
        (0, 1, "gzip", "CreateTime", None, 2, False),
        (None, 5, "none", "LogAppendTime", None, 1, None),
        (6, 6, "none", "CreateTime", None, 2, True),
    ]
    assert [
        (
            r["offset"],
            r["key_size"],
            r["value_size"],
            r["sequence"],
            r["header_keys"],
            r["key"],
            r["payload"],
            r["crc"],
            r["control"],
            r["batch_position"],
        )
        for r in records
    ] == [
        (0, 1, 3, 0, ["a", "b"], "k", "one", None, None, 0),
        (1, -1, -1, 1, [], None, None, None, None, 0),
        (5, -1, 3, None, None, None, "old", 99, None, 90),
        (6, 4, 6, -1, [], None, None, None, "endTxnMarker: COMMIT coordinatorEpoch: 2", 130),
    ]
    trailer = [r for r in parse_kafka_dump(ERA_22) if r["kind"] == "trailer"]
    assert trailer == [
        {
            "kind": "trailer",
            "invalid_bytes": 12,
            "name": "00000000000000000000.log",
            "line": 10,
            "path": "/data/t-0/00000000000000000000.log",
        }
    ]


ERA_28 = (
    "Dumping 00000000000000000000.log\n"
    "Starting offset: 0\n"
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
    "partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: 1620000000000 "
    "size: 80 magic: 2 compresscodec: NONE crc: 77 isvalid: true\n"
    "| offset: 0 isValid: true crc: null keySize: -1 valueSize: 23 CreateTime: 1620000000000 baseOffset: 0 "
    "lastOffset: 0 baseSequence: -1 lastSequence: -1 producerEpoch: -1 partitionLeaderEpoch: 0 batchSize: 80 "
    "magic: 2 compressType: NONE position: 0 sequence: -1 headerKeys: [] "
    'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"x","featureLevel":1}}\n'
)


def test_parse_era_2_8_verbose_record_line():
    files, batches, records, problems = _parsed(ERA_28)
    assert problems == [] and len(batches) == 1
    (r,) = records
    assert (
        r["offset"],
        r["crc_valid"],
        r["crc"],
        r["key_size"],
        r["value_size"],
        r["timestamp"],
        r["sequence"],
        r["batch_position"],
    ) == (0, True, None, -1, 23, 1620000000000, -1, 0)
    assert r["payload"].startswith('{"type":"FEATURE_LEVEL_RECORD"')


ERA_21 = (
    "Dumping 00000000000000000000.log\n"
    "Starting offset: 0\n"
    "offset: 0 position: 0 CreateTime: 1500000000000 isvalid: true keysize: 1 valuesize: 2 magic: 2 "
    "compresscodec: NONE producerId: -1 producerEpoch: -1 sequence: -1 isTransactional: false headerKeys: [] "
    "key: a payload: bb\n"
    "offset: 1 position: 70 CreateTime: 1500000000001 isvalid: true keysize: -1 valuesize: 1 magic: 1 "
    "compresscodec: NONE crc: 314 payload: c\n"
    "offset: 1 position: 70 CreateTime: 1500000000001 isvalid: true size: 35 magic: 1 compresscodec: NONE "
    "crc: 314\n"
)


def test_parse_era_2_1_and_older():
    files, batches, records, problems = _parsed(ERA_21)
    assert problems == []
    assert [
        (
            r["offset"],
            r["batch_position"],
            r["key_size"],
            r["value_size"],
            r["key"],
            r["payload"],
            r["crc"],
            r["header_keys"],
        )
        for r in records
    ] == [(0, 0, 1, 2, "a", "bb", None, []), (1, 70, -1, 1, None, "c", 314, None)]
    # a shallow line of that era: the tail order differs, the fields are the same
    assert [(b["last_offset"], b["size"], b["crc"], b["crc_valid"]) for b in batches] == [(1, 35, 314, True)]


ERA_3X = (
    "Dumping 00000000000000000000.log\n"
    "Starting offset: 0\n"
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
    "partitionLeaderEpoch: 0 isTransactional: false isControl: false position: 0 CreateTime: 1 size: 70 "
    "magic: 2 compresscodec: none crc: 3 isvalid: false\n"
    "| offset: 0 CreateTime: 1 keySize: 3 valueSize: 11 sequence: -1 headerKeys: [x]y,z] "
    "key: a b payload: c payload: d\n"
    "offset: 1 position: 70 CreateTime: 2 size: 40 magic: 1 compresscodec: none crc: 9 isvalid: true\n"
    "| offset: 1 CreateTime: 2 keySize: -1 valueSize: 2 isValid: true crc: 9} payload: hi\n"
)


def test_parse_era_3_0_to_3_1_and_ambiguous_text():
    files, batches, records, problems = _parsed(ERA_3X)
    assert problems == []
    assert [b["has_delete_horizon"] for b in batches] == [None, None]
    assert batches[0]["crc_valid"] is False
    first, second = records
    # header keys may contain "]", keys may contain " payload: ": keySize decides
    assert first["header_keys"] == ["x]y", "z"]
    assert (first["key"], first["payload"]) == ("a b", "c payload: d")
    assert (second["crc"], second["crc_valid"], second["payload"]) == (9, True, "hi")


SNAPSHOT_43 = (
    "Dumping nodes/1/logs/__cluster_metadata-0/00000000000000000080-0000000001.checkpoint\n"
    "Snapshot end offset: 80, epoch: 1\n"
    "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
    "partitionLeaderEpoch: 1 isTransactional: false isControl: true deleteHorizonMs: OptionalLong.empty "
    "position: 0 CreateTime: 17 size: 83 magic: 2 compresscodec: none crc: 18 isvalid: true\n"
    "| offset: 0 CreateTime: 17 keySize: 4 valueSize: 11 sequence: -1 headerKeys: [] "
    'SnapshotHeader {"version":0,"lastContainedLogTimestamp":16}\n'
    "Dumping nodes/1/logs/bootstrap.checkpoint\n"
    "KRaft bootstrap snapshot\n"
)


def test_parse_snapshot_headers():
    files, batches, records, problems = _parsed(SNAPSHOT_43)
    assert problems == []
    assert [(f["file_kind"], f["snapshot_end_offset"], f["snapshot_epoch"]) for f in files] == [
        ("snapshot", 80, 1),
        ("bootstrap", None, None),
    ]
    assert records[0]["control"] == 'SnapshotHeader {"version":0,"lastContainedLogTimestamp":16}'
    assert batches[0]["delete_horizon_ms"] is None and batches[0]["has_delete_horizon"] is False


def test_parse_skip_record_metadata_forms():
    text = "\n| key: k payload: v\n payload: scala-keyless\n| payload: java-keyless\n| key: only\n"
    rows = list(parse_kafka_dump(text))
    assert [(r["kind"], r["key"], r["payload"], r["offset"]) for r in rows] == [
        ("record", None, None, None),  # a control record (or a record without key and value)
        ("record", "k", "v", None),
        ("record", None, "scala-keyless", None),
        ("record", None, "java-keyless", None),
        ("record", "only", None, None),
    ]
    # without sizes, an empty or unshaped line after a payload continues it
    rows = list(parse_kafka_dump("| payload: a\n\nb\n| key: k\nc\n"))
    assert [(r["key"], r["payload"]) for r in rows] == [(None, "a\n\nb"), ("k\nc", None)]


def test_parse_index_and_producer_snapshot_lines():
    text = (
        "Dumping 00000000000000000000.index\n"
        "offset: 10 position: 4096\n"
        "Dumping 00000000000000000000.timeindex\n"
        "timestamp: 1700000000000 offset: 10\n"
        "Dumping 00000000000000000000.txnindex\n"
        "version: 0 producerId: 5 firstOffset: 1 lastOffset: 4 lastStableOffset: 1\n"
        "Dumping 00000000000000000600.snapshot\n"
        "producerId: 5 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 17 firstSequence: 0 lastSequence: 9 lastOffset: 599 offsetDelta: 9 timestamp: 17\n"
        "producerId: 6 producerEpoch: 1 coordinatorEpoch: 2 currentTxnFirstOffset: OptionalLong[40] "
        "lastTimestamp: 18 \n"
        "producerId: 7 producerEpoch: 1 coordinatorEpoch: 2 currentTxnFirstOffset: Some(41)\n"
        "Dumping 00000000000000000001.index\n"
        "00000000000000000001.index is empty.\n"
        "Non-consecutive offsets in /x/00000000000000000000.log\n"
        "  22 is followed by 26\n"
    )
    rows = [r for r in parse_kafka_dump(text) if r["kind"] != "file"]
    assert [r["kind"] for r in rows] == [
        "offset_index",
        "time_index",
        "txn_index",
        "producer_state",
        "producer_state",
        "producer_state",
        "note",
        "note",
        "note",
    ]
    assert (rows[0]["offset"], rows[0]["position"]) == (10, 4096)
    assert rows[2]["last_stable_offset"] == 1
    assert (rows[3]["last_offset"], rows[3]["current_txn_first_offset"]) == (599, None)
    assert (rows[4]["current_txn_first_offset"], rows[4]["last_timestamp"], rows[4]["first_sequence"]) == (40, 18, None)
    assert rows[5]["current_txn_first_offset"] == 41


def test_parse_payload_with_line_breaks_and_problem_lines():
    text = (
        "| offset: 5 CreateTime: 1 keySize: 2 valueSize: 23 sequence: -1 headerKeys: [] key: nl payload: line one\n"
        "line two\n"
        "three\n"
        "| offset: 6 CreateTime: 1 keySize: -1 valueSize: 1 sequence: -1 headerKeys: [] payload: x\n"
        "garbage that is no dump line\n"
        "baseOffset: 1 lastOffset: zero count: 1\n"
    )
    log = ProblemLog("d.txt")
    rows = list(parse_kafka_dump(text, path="d.txt", problems=log))
    assert rows[0]["payload"] == "line one\nline two\nthree"
    assert [(r["kind"], r["line"]) for r in rows] == [("record", 1), ("record", 4), ("problem", 5), ("problem", 6)]
    assert [(p.position, p.kind) for p in log.problems] == [(5, "unparsed_line"), (6, "unparsed_line")]
    assert rows[2]["path"] == "d.txt"
    with pytest.raises(CorruptDataError):
        list(parse_kafka_dump(text, strict=True))


def test_parse_sources(tmp_path):
    text = (FIXTURES / "mixed-0/00000000000000000000.log.4.3.1.data.txt").read_bytes()
    p = tmp_path / "d.txt"
    p.write_bytes(text)
    from_str = list(parse_kafka_dump(text.decode("utf-8")))
    assert list(parse_kafka_dump(p)) == from_str
    assert list(parse_kafka_dump(io.BytesIO(text))) == from_str
    assert list(parse_kafka_dump(io.StringIO(text.decode("utf-8"), newline=""))) == from_str
    assert list(parse_kafka_dump(text)) == from_str
    # a carriage return inside a payload is not a line break
    assert [
        r["payload"]
        for r in parse_kafka_dump(
            "| offset: 0 CreateTime: 1 keySize: -1 valueSize: 3 sequence: -1 headerKeys: [] payload: a\rb\n"
        )
    ] == ["a\rb"]


# ---------------------------------------------------------------------------------------------
# round trip on random tricky contents: writer -> parser -> the binary's fields and text

_PIECES = [
    "a",
    "b",
    "ü",
    "☃",
    " ",
    "\n",
    "\r",
    " payload: ",
    " key: ",
    "]",
    "[",
    "|",
    "{",
    "}",
    ": ",
    " endTxnMarker: ",
    "offset: 1 position: 2",
    "\t",
    "0",
]


def _random_text(rng, max_pieces: int = 6, pieces: list[str] = _PIECES) -> bytes:
    text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, max_pieces))).encode("utf-8")
    if rng.random() < 0.15:
        text += bytes([rng.choice((0xFF, 0xC3, 0x80, 0x00))])
    return text


@pytest.mark.parametrize("version", ["4.3.1", "3.9.2", "3.0.0", "2.8.2", "2.4.1"])
@pytest.mark.parametrize("skip", [False, True])
def test_random_contents_round_trip(tmp_path, version, skip):
    import random

    rng = random.Random(f"{version}-{skip}")
    # --skip-record-metadata prints no sizes: line breaks and " payload: " in a key are ambiguous
    pieces = [p for p in _PIECES if p not in ("\n", " payload: ", " key: ")] if skip else _PIECES
    data, offset = b"", 0
    for _ in range(40):
        records = []
        for _ in range(rng.randint(1, 4)):
            key = None if rng.random() < 0.2 else _random_text(rng, pieces=pieces)
            null_value = rng.random() < 0.1 and not (skip and key is None)  # skip: no empty lines
            value = None if null_value else _random_text(rng, pieces=pieces)
            headers = [(rng.choice(["h", "x]y", "h h", "ü"]), b"v") for _ in range(rng.randint(0, 2))]
            records.append((offset, 1_700_000_000_000 + offset, key, value, headers))
            offset += 1
        data += encode_batch(records, base_offset=records[0][0], compression=rng.choice(["none", "gzip", "zstd"]))
    seg = _segment(tmp_path, "t-0", data)
    text = dump_text(seg, DumpOptions(print_data_log=True, skip_record_metadata=skip), kafka_version=version)
    log = ProblemLog()
    files, batches, records, problems = _parsed(text, problems=log)
    assert problems == [] and log.problems == []
    want_batches, want_records, raw = _binary_rows(seg)
    assert [(b["base_offset"], b["crc"]) for b in batches] == [(w["base_offset"], w["crc"]) for w in want_batches]
    want_text = [
        (
            None if r.key is None else r.key.decode("utf-8", "replace"),
            None if r.value is None else r.value.decode("utf-8", "replace"),
        )
        for _, r in raw
    ]
    assert [(r["key"], r["payload"]) for r in records] == want_text
    if not skip:
        assert [{k: r[k] for k in RECORD_KEYS} for r in records] == want_records


def test_workbench_dump_format_kafka_matches_the_tool(monkeypatch):
    """``workbench dump --format kafka`` (the lead's dump_files) on the path the tool was given."""
    from workbench.dump import dump_files

    monkeypatch.chdir(FIXTURES)
    out = io.StringIO()
    status = dump_files(
        ["mixed-0/00000000000000000000.log", "legacy-0/00000000000000000100.log"],
        fmt="kafka",
        out=out,
        kafka_version="3.9.2",
        decoder="auto",
        payloads=True,
    )
    want = "".join(
        (FIXTURES / f"{seg}.3.9.2.data.txt").read_bytes().decode("utf-8")
        for seg in ("mixed-0/00000000000000000000.log", "legacy-0/00000000000000000100.log")
    )
    assert status == 0
    assert out.getvalue() == want, _first_difference(want, out.getvalue())


# ---------------------------------------------------------------------------------------------
# where Kafka's tool itself fails or reads damage its own way (checked against Kafka 4.3.1 by
# tests/formats/test_corruption_corpus.py on Kafka-written segments)


def _with_crc(batch: bytearray) -> bytes:
    from crc32c import crc32c

    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def _batches(n: int, compression: str = "none") -> list[bytes]:
    return [
        encode_batch([(i, 1000 + i, b"k%d" % i, b"v%d" % i)], base_offset=i, compression=compression) for i in range(n)
    ]


def test_kafka_damage_semantics(tmp_path):
    # a length that swallows the next batches, gzip: Kafka ignores what follows the gzip stream
    b = _batches(5, "gzip")
    first = bytearray(b[1])
    struct.pack_into(">i", first, 8, len(b[1]) + len(b[2]) + len(b[3]) - 12)
    seg = _segment(tmp_path, "g-0", b[0] + bytes(first) + b[2] + b[3] + b[4])
    log = ProblemLog()
    lines = list(dump_lines(seg, problems=log))
    assert [re.search(r"ffset: (\d+)", line)[1] for line in lines[2:]] == ["0", "0", "1", "1", "4", "4"]
    assert "isvalid: false" in lines[4] and TOOL_FAILURE not in {p.kind for p in log.problems}
    # the same, uncompressed: "Incorrect declared batch size" while reading the last record
    b = _batches(4)
    merged = bytearray(encode_batch([(1, 5, b"a", b"1"), (2, 6, b"b", b"2")], base_offset=1))
    struct.pack_into(">i", merged, 8, len(merged) + len(b[3]) - 12)
    seg = _segment(tmp_path, "u-0", b[0] + bytes(merged) + b[3])
    log = ProblemLog()
    lines = list(dump_lines(seg, problems=log))
    assert [re.search(r"ffset: (\d+)", line)[1] for line in lines[2:]] == ["0", "0", "1", "1"]
    assert log.problems[-1].kind == TOOL_FAILURE
    # magic 7: read as a v2 batch (the CRC does not cover the magic byte)
    b = _batches(3)
    odd = bytearray(b[1])
    odd[16] = 7
    seg = _segment(tmp_path, "m-0", b[0] + bytes(odd) + b[2])
    lines = list(dump_lines(seg))
    assert " magic: 7 " in lines[4] and lines[4].endswith("isvalid: true") and len(lines) == 8
    # codec id 6: the batch line breaks off at compresscodec, no line break, nothing more
    bad = bytearray(b[1])
    bad[22] = (bad[22] & ~7) | 6
    seg = _segment(tmp_path, "c-0", b[0] + _with_crc(bad) + b[2])
    log = ProblemLog()
    text = dump_text(seg, problems=log)
    assert text.endswith("isControl: false deleteHorizonMs: OptionalLong.empty")
    assert log.problems[-1].kind == TOOL_FAILURE
    # a compressed stream that does not decompress: the batch line, then the tool fails
    z = _batches(3, "zstd")
    broken = bytearray(z[1])
    broken[61:65] = b"\x00\x00\x00\x00"
    seg = _segment(tmp_path, "z-0", z[0] + _with_crc(broken) + z[2])
    log = ProblemLog()
    lines = list(dump_lines(seg, problems=log))
    assert lines[-1].startswith("baseOffset: 1 ") and log.problems[-1].kind == TOOL_FAILURE
    # a multi-file run ends where the tool fails
    good = _segment(tmp_path, "ok-0", b[0])
    out = io.StringIO()
    assert (
        write_kafka_dump(
            [str(seg), str(good)], out=out, kafka_version=None, decoder="none", payloads=False, strict=False
        )
        == 1
    )
    assert f"Dumping {good}" not in out.getvalue()


def test_max_bytes_and_index_flags(tmp_path):
    """The flags that shape what is read (checked against Kafka's tool in tests/test_dump_kafka_flags.py)."""
    from workbench.formats.index import encode_offset_index, encode_time_index

    b = _batches(3)
    seg = _segment(tmp_path, "t-0", b"".join(b))
    # --max-bytes: only the batches wholly inside the first N bytes, and no trailer line
    log = ProblemLog()
    lines = list(dump_lines(seg, options_from_args(["--max-bytes", str(len(b[0]) + 10)]), problems=log))
    assert [line.split(" ")[0] for line in lines] == ["Dumping", "Log", "baseOffset:"] and log.problems == []
    log = ProblemLog()
    assert list(dump_lines(seg, options_from_args(["--max-bytes", "-1"]), problems=log))[-1] == "Log starting offset: 0"
    assert log.problems[-1].kind == TOOL_FAILURE
    # an index entry: checked against the log's batch at its position
    idx = seg.with_suffix(".index")
    idx.write_bytes(encode_offset_index([(0, 0), (2, len(b[0]))], 0))  # batch 1 holds offset 1, not 2
    log = ProblemLog()
    assert list(dump_lines(idx, problems=log))[1:] == ["offset: 0 position: 0", f"offset: 2 position: {len(b[0])}"]
    assert [p.kind for p in log.problems] == ["index_mismatch"]
    assert list(dump_lines(idx, options_from_args(["--verify-index-only"])))[1:] == []
    assert list(dump_lines(idx, options_from_args(["--index-sanity-check"])))[1:] == [f"{idx} passed sanity check."]
    idx.write_bytes(encode_offset_index([(0, 0), (1, 10_000)], 0))  # past the end of the log
    log = ProblemLog()
    assert list(dump_lines(idx, problems=log))[1:] == ["offset: 0 position: 0"]
    assert log.problems[-1].kind == TOOL_FAILURE and "exceeds end position" in log.problems[-1].detail
    # a time index with a zero tail (a segment still open): the sanity check fails, the dump stops at the tail
    tidx = seg.with_suffix(".timeindex")
    tidx.write_bytes(encode_time_index([(1001, 1)], 0) + bytes(24))
    idx.write_bytes(encode_offset_index([(1, len(b[0]))], 0))
    log = ProblemLog()
    assert list(dump_lines(tidx, options_from_args(["--index-sanity-check"]), problems=log)) == [f"Dumping {tidx}"]
    assert "CorruptIndexException" in log.problems[-1].detail
    log = ProblemLog()
    assert list(dump_lines(tidx, problems=log))[1:] == ["timestamp: 1001 offset: 1"] and log.problems == []
