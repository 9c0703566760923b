"""The compiled dump writers give the Python writers' output, byte for byte, and the same problems.

``write_kafka_dump`` and ``write_jsonl`` write runs of clean batches with compiled code and
hand everything else to the Python writer; ``compiled=False`` writes every batch in Python. Both
are run here on the same files, clean and damaged, under every flag set: texts and problem lists
must be equal. (Kafka's own tool judges the texts in ``tests/test_dump_kafka_flags.py`` and
``test_corruption_corpus.py``.)
"""

from __future__ import annotations

import io
import json
import os
import random
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from workbench.errors import CorruptDataError
from workbench.formats.batch import encode_batch
from workbench.formats.control import encode_control_record
from workbench.formats.coordinator import encode_offsets_record
from workbench.formats.dumpjson import write_jsonl
from workbench.formats.dumptext_write import options_from_args, write_kafka_dump
from workbench.formats.metadata import encode_metadata_record

FIXTURES = Path(__file__).parent / "fixtures" / "dumptext"

TEXT_FLAGS = (
    (),
    ("--deep-iteration",),
    ("--print-data-log",),
    ("--print-data-log", "--skip-record-metadata"),
    ("--deep-iteration", "--skip-record-metadata"),
    ("--deep-iteration", "--max-bytes", "700"),
    ("--cluster-metadata-decoder",),
    ("--offsets-decoder",),
    ("--transaction-log-decoder",),
    ("--remote-log-metadata-decoder",),
    ("--share-group-state-decoder",),
)
ERAS = ("4.3.1", "3.9.2", "3.1.0", "2.8.2")


def _run_text(files: list[Path], flags: tuple[str, ...], version: str, compiled: bool) -> tuple[str, list]:
    opts = options_from_args(flags, version)
    buf = io.BytesIO()
    logs: list = []
    write_kafka_dump(
        [str(f) for f in files], out=buf, options=opts, kafka_version=version, problems=logs, compiled=compiled
    )
    return buf.getvalue().decode("utf-8", "surrogateescape"), [
        (p.position, p.kind, p.detail) for lg in logs for p in lg.problems
    ]


def _run_jsonl(files: list[Path], decoder: str, payloads: bool, compiled: bool) -> tuple[str, list]:
    buf = io.BytesIO()
    logs: list = []
    write_jsonl([str(f) for f in files], out=buf, decoder=decoder, payloads=payloads, problems=logs, compiled=compiled)
    return buf.getvalue().decode("utf-8"), [(p.position, p.kind, p.detail) for lg in logs for p in lg.problems]


def _same(a: tuple[str, list], b: tuple[str, list], what: str) -> None:
    if a[0] != b[0]:
        wl, gl = a[0].split("\n"), b[0].split("\n")
        for i, (x, y) in enumerate(zip(wl, gl, strict=False)):
            if x != y:
                pytest.fail(f"{what}: line {i + 1}\n  python:   {x[:300]!r}\n  compiled: {y[:300]!r}")
        pytest.fail(f"{what}: {len(wl)} lines in Python, {len(gl)} compiled")
    assert a[1] == b[1], what


# ---------------------------------------------------------------------------------------------
# files


def _tricky_segment(rng: random.Random, with_controls: bool = True) -> bytes:
    """Batches of every codec, keys/values/header keys with line breaks, separators and bytes that
    are not UTF-8, transactional and control batches, LogAppendTime, idempotent sequences."""
    pieces = [
        b"a",
        b"\xc3\xbc",
        b"\xe2\x98\x83",
        b" payload: ",
        b"\n",
        b"\r",
        b"\xff",
        b"\xed\xa0\x80",
        b"]",
        b'"',
        b"\\",
        b"\x00",
        b"\x1f",
        b"\xf0\x9f\x98\x80",
    ]
    data, offset = b"", 0
    for _ in range(40):
        records = []
        for _ in range(rng.randint(1, 5)):
            key = None if rng.random() < 0.2 else b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
            value = None if rng.random() < 0.1 else b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
            headers = [
                (rng.choice(["h", "x]y", "ü", 'q"uote', "t\tab"]), None if rng.random() < 0.3 else b"v")
                for _ in range(rng.randint(0, 2))
            ]
            records.append((offset, 1_700_000_000_000 + offset, key, value, headers))
            offset += 1
        kw = {}
        if rng.random() < 0.3:
            kw = {"producer_id": 7, "producer_epoch": 1, "base_sequence": rng.choice([0, 2**31 - 3])}
        data += encode_batch(
            records,
            base_offset=records[0][0],
            compression=rng.choice(["none", "gzip", "snappy", "lz4", "zstd"]),
            timestamp_type=rng.choice(["CreateTime", "CreateTime", "LogAppendTime"]),
            **kw,
        )
        if with_controls and rng.random() < 0.15:
            key, value = encode_control_record("COMMIT", {"version": 0, "coordinatorEpoch": 3})
            data += encode_batch(
                [(offset, 1, key, value)],
                base_offset=offset,
                is_control=True,
                is_transactional=True,
                producer_id=7,
                producer_epoch=1,
            )
            offset += 1
    return data


def _metadata_segment(rng: random.Random) -> bytes:
    tid = "AAAAAAAAAAAAAAAAAAAAAQ"
    data, offset = b"", 0
    for _ in range(30):
        values = []
        for _ in range(rng.randint(1, 30)):
            r = rng.random()
            if r < 0.5:
                values.append(
                    encode_metadata_record(
                        "PartitionChangeRecord",
                        0,
                        {
                            "partitionId": rng.randrange(4),
                            "topicId": tid,
                            "isr": sorted(rng.sample([1, 2, 3], rng.randint(1, 3))),
                        },
                    )
                )
            elif r < 0.8:
                values.append(encode_metadata_record("NoOpRecord", 0, {}))
            elif r < 0.9:
                values.append(bytes([1, 99, 0]))  # unknown apiKey: "Error at <offset>", a problem each time
            else:
                values.append(encode_metadata_record("NoOpRecord", 0, {}) + b"\x00")  # trailing garbage
        data += encode_batch(
            [(offset + i, 5, None, v) for i, v in enumerate(values)], base_offset=offset, partition_leader_epoch=1
        )
        offset += len(values)
    return data


def _offsets_segment(rng: random.Random) -> bytes:
    data, offset = b"", 0
    for _ in range(20):
        recs = []
        for _ in range(rng.randint(1, 10)):
            if rng.random() < 0.8:
                k, v = encode_offsets_record(
                    "OffsetCommit",
                    {"group": "g", "topic": "t", "partition": rng.randrange(3)},
                    {"offset": rng.randrange(5), "leaderEpoch": 0, "metadata": "", "commitTimestamp": 9},
                    value_version=3,
                )
            else:
                k, v = b"\x00\x63\x00", b"\x00\x00"  # unknown record type
            recs.append((offset, 1, k, v))
            offset += 1
        data += encode_batch(recs, base_offset=recs[0][0])
    return data


def _damaged(data: bytes, rng: random.Random) -> list[bytes]:
    """Damage of every kind Kafka's reader and the careful reader treat differently."""
    out = [data[: len(data) // 2], data + bytes(100), data + b"\x01" * 17]
    starts, pos = [], 0
    while pos + 12 <= len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    for _ in range(6):
        i = rng.randrange(len(starts))
        d = bytearray(data)
        kind = rng.randrange(6)
        at = starts[i]
        if kind == 0:
            d[at + 17] ^= 0x10  # CRC
        elif kind == 1:
            d[at + 70 + rng.randrange(20) if at + 90 < len(d) else at + 30] ^= 0x55  # payload, CRC then fixed
            end = at + 12 + struct.unpack_from(">i", data, at + 8)[0]
            struct.pack_into(">I", d, at + 17, crc32c(bytes(d[at + 21 : end])))
        elif kind == 2:
            struct.pack_into(">i", d, at + 8, 13)  # below the smallest record: Kafka's tool dies
        elif kind == 3:
            d[at + 16] = 7  # magic 7, read as v2 by Kafka
        elif kind == 4:
            end = at + 12 + struct.unpack_from(">i", data, at + 8)[0]
            d[at + 22] = (d[at + 22] & ~7) | 6  # codec id 6, CRC fixed
            struct.pack_into(">I", d, at + 17, crc32c(bytes(d[at + 21 : end])))
        else:
            struct.pack_into(">i", d, at + 57, 1000)  # record count, CRC fixed
            end = at + 12 + struct.unpack_from(">i", data, at + 8)[0]
            struct.pack_into(">I", d, at + 17, crc32c(bytes(d[at + 21 : end])))
        out.append(bytes(d))
    return out


def _write(tmp: Path, topic_dir: str, data: bytes, n: int = 0) -> Path:
    d = tmp / f"{n:02d}" / topic_dir
    d.mkdir(parents=True, exist_ok=True)
    p = d / "00000000000000000000.log"
    p.write_bytes(data)
    return p


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, list[Path]]:
    tmp = tmp_path_factory.mktemp("fastdump")
    rng = random.Random(20261123)
    files: dict[str, list[Path]] = {}
    for kind, topic, make in (
        ("plain", "t-0", _tricky_segment),
        ("metadata", "__cluster_metadata-0", _metadata_segment),
        ("offsets", "__consumer_offsets-0", _offsets_segment),
    ):
        clean = make(rng)
        files[kind] = [_write(tmp / kind, topic, x, n) for n, x in enumerate([clean, *_damaged(clean, rng)])]
    files["fixtures"] = sorted(FIXTURES.glob("*/*.log"))
    return files


# ---------------------------------------------------------------------------------------------
# kafka-dump-log text


def _era_flags() -> list:
    """(flags, version) for every flag set the era's ``kafka-dump-log`` accepts."""
    out = []
    for version in ERAS:
        for flags in TEXT_FLAGS:
            try:
                options_from_args(flags, version)
            except Exception:  # that release's tool has no such flag: nothing to compare
                continue
            out.append(pytest.param(flags, version, id=f"{' '.join(flags) or 'shallow'}-{version}"))
    return out


@pytest.mark.parametrize(("flags", "version"), _era_flags())
def test_compiled_text_is_the_python_text(corpus, flags, version):
    for kind, paths in corpus.items():
        for path in paths:  # one file per run: a tool failure ends a run
            _same(
                _run_text([path], flags, version, False),
                _run_text([path], flags, version, True),
                f"{kind} {path.parent.parent.name} [{' '.join(flags)}] {version}",
            )


def test_compiled_text_of_many_files_in_one_run(corpus):
    files = [p for paths in corpus.values() for p in paths]
    for flags in (("--deep-iteration",), ("--print-data-log",)):
        _same(_run_text(files, flags, "4.3.1", False), _run_text(files, flags, "4.3.1", True), str(flags))


def test_compiled_text_writes_big_batches_and_streams(tmp_path):
    """A batch whose text is larger than the output buffer, and a file larger than the window."""
    big = encode_batch([(i, 5, None, b"x" * 70_000) for i in range(200)], base_offset=0)  # 14 MB of text
    many = b"".join(encode_batch([(i, 5, b"k", b"v" * 4000)], base_offset=i) for i in range(200, 5200))
    path = _write(tmp_path, "t-0", big + many)
    for flags in (("--print-data-log",), ()):
        _same(_run_text([path], flags, "4.3.1", False), _run_text([path], flags, "4.3.1", True), str(flags))


def test_strict_raises_at_the_first_problem(corpus):
    damaged = corpus["metadata"][1]
    for compiled in (False, True):
        with pytest.raises(CorruptDataError):
            write_kafka_dump(
                [str(damaged)],
                out=io.BytesIO(),
                options=options_from_args(["--cluster-metadata-decoder"]),
                strict=True,
                compiled=compiled,
            )


# ---------------------------------------------------------------------------------------------
# JSON lines


@pytest.mark.parametrize("payloads", [False, True])
def test_compiled_jsonl_is_the_python_jsonl(corpus, payloads):
    for kind, paths in corpus.items():
        for path in paths:
            _same(
                _run_jsonl([path], "auto", payloads, False),
                _run_jsonl([path], "auto", payloads, True),
                f"{kind} {path.parent.parent.name} payloads={payloads}",
            )


def test_jsonl_decodes_internal_topics(corpus):
    text, problems = _run_jsonl([corpus["offsets"][0], corpus["metadata"][0]], "auto", False, True)
    objs = [json.loads(line) for line in text.splitlines()]
    records = [o for o in objs if o["kind"] == "record"]
    commits = [r["payload"] for r in records if r.get("payload", {}).get("type") == "OffsetCommit"]
    assert commits and all(c["key"]["group"] == "g" and c["value"]["commitTimestamp"] == 9 for c in commits)
    assert any(
        r["payload"]["type"] == "Unknown" and r["payload"]["error"]
        for r in records
        if r["payload"].get("recordType") == 99
    )
    kinds = {r["payload"]["type"] for r in records if "version" in r["payload"]}
    assert {"PARTITION_CHANGE_RECORD", "NO_OP_RECORD", "UNKNOWN"} <= kinds
    assert problems == []


def test_jsonl_of_index_files(tmp_path):
    from workbench.formats.index import encode_offset_index, encode_time_index

    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000100.index").write_bytes(encode_offset_index([(105, 0), (110, 4096)], 100))
    (d / "00000000000000000100.timeindex").write_bytes(encode_time_index([(1700, 105)], 100))
    text, problems = _run_jsonl(
        [d / "00000000000000000100.index", d / "00000000000000000100.timeindex"], "auto", False, True
    )
    assert [json.loads(line) for line in text.splitlines()] == [
        {"kind": "offset_index", "offset": 105, "position": 0},
        {"kind": "offset_index", "offset": 110, "position": 4096},
        {"kind": "time_index", "timestamp": 1700, "offset": 105},
    ]
    assert problems == []


@pytest.mark.kafka
def test_compiled_jsonl_on_every_bundle_file(kafka_bundle):
    """Every segment and snapshot of every bundle built, decoders chosen by topic."""
    from tests.test_dump_kafka_flags import BUNDLE_VERSIONS, SCENARIOS, _bundles, _files

    n = 0
    for version in BUNDLE_VERSIONS:   # the releases whose bundles are built (not every pinned one)
        for bundle in _bundles(kafka_bundle, version):
            files = [Path(f) for f in _files(bundle) if f.endswith((".log", ".checkpoint"))]
            _same(_run_jsonl(files, "auto", True, False), _run_jsonl(files, "auto", True, True), str(bundle))
            n += len(files)
    assert n > 100, (n, SCENARIOS)
    print(f"\n{n} bundle files: compiled JSON lines = Python JSON lines")


def test_the_python_writer_is_used_where_kafka_forms_are_older(corpus):
    """Eras before 3.0 print other record forms: the compiled kernel is not used for them."""
    path = corpus["plain"][0]
    text, _ = _run_text([path], ("--deep-iteration",), "2.8.2", True)
    assert "isValid: true crc: null" in text  # the 2.8 record form
    assert os.path.exists(path)


def test_compiled_jsonl_of_a_batch_larger_than_the_output_buffer(tmp_path):
    """Header keys that JSON escapes to six times their size, printed twice with payloads."""
    key = "\u00fc\u0001" * 300
    records = [(i, 5, b"k", b"v" * 2000, [(key, b"x" * 100), (key, None)]) for i in range(1500)]
    path = _write(tmp_path, "t-0", encode_batch(records, base_offset=0, compression="zstd"))
    for payloads in (False, True):
        _same(_run_jsonl([path], "auto", payloads, False), _run_jsonl([path], "auto", payloads, True), str(payloads))
