"""``workbench dump`` run as a person runs it: a subprocess of the command line.

Kafka's flags reach the writers with their meaning (the writers' text is Kafka's, checked in
``test_dump_kafka_flags.py``); what cannot be honoured is one line on stderr and exit code 2;
problems are lines on stderr and exit code 1; a reader that goes away ends the dump quietly.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.formats.batch import encode_batch
from workbench.formats.dumptext_write import options_from_args, write_kafka_dump
from workbench.formats.metadata import encode_metadata_record


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", "dump", *args], capture_output=True, timeout=300, text=True, input=stdin
    )


@pytest.fixture
def logs(tmp_path) -> dict[str, Path]:
    meta = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    meta.parent.mkdir()
    meta.write_bytes(
        encode_batch(
            [(0, 5, None, encode_metadata_record("NoOpRecord", 0, {}))], base_offset=0, partition_leader_epoch=1
        )
    )
    data = tmp_path / "orders-0" / "00000000000000000000.log"
    data.parent.mkdir()
    data.write_bytes(b"".join(encode_batch([(i, 5, b"k%d" % i, b"v%d" % i)], base_offset=i) for i in range(3)))
    return {"meta": meta, "data": data}


def _kafka_text(files: list[Path], flags: list[str], version: str = "4.3.1") -> str:
    buf = io.StringIO()
    write_kafka_dump([str(f) for f in files], out=buf, options=options_from_args(flags, version), kafka_version=version)
    return buf.getvalue()


def test_shallow_by_default_and_kafkas_flags(logs):
    res = run("--format", "kafka", str(logs["data"]))
    assert res.returncode == 0, res.stderr
    assert res.stdout == _kafka_text([logs["data"]], [])
    assert [line.split(" ", 1)[0] for line in res.stdout.splitlines()] == [
        "Dumping",
        "Log",
        "baseOffset:",
        "baseOffset:",
        "baseOffset:",
    ]
    for flags in (
        ["--deep-iteration"],
        ["--print-data-log"],
        ["--print-data-log", "--skip-record-metadata"],
        ["--max-bytes", "150"],
        ["--value-decoder-class"],
    ):
        res = run("--format", "kafka", *flags, str(logs["data"]))
        assert res.returncode == 0 and res.stdout == _kafka_text([logs["data"]], flags), flags


def test_files_as_kafka_takes_them_and_as_arguments(logs):
    both = _kafka_text([logs["meta"], logs["data"]], ["--cluster-metadata-decoder"])
    res = run("--format", "kafka", "--cluster-metadata-decoder", "--files", f"{logs['meta']},{logs['data']}")
    assert res.stdout == both
    res = run("--format", "kafka", "--cluster-metadata-decoder", str(logs["meta"]), "--files", str(logs["data"]))
    assert res.stdout == both
    assert '{"type":"NO_OP_RECORD","version":0,"data":{}}' in both


def test_decoder_shorthand_and_auto(logs):
    res = run("--format", "kafka", "--decoder", "cluster-metadata", str(logs["meta"]))
    assert res.stdout == _kafka_text([logs["meta"]], ["--cluster-metadata-decoder"])
    res = run("--format", "kafka", "--decoder", "auto", str(logs["meta"]), str(logs["data"]))
    # each file as if given its own topic's decoder flag: the plain topic keeps Kafka's default, batch lines
    want = _kafka_text([logs["meta"]], ["--cluster-metadata-decoder"]) + _kafka_text([logs["data"]], [])
    assert res.stdout == want


def test_what_cannot_be_honoured_is_one_line_and_exit_2(logs):
    for args, words in (
        (["--value-decoder-class", "com.example.AvroDecoder"], "cannot run here"),
        (["--key-decoder-class", "kafka.serializer.StringDecoder"], "cannot run here"),
        (["--kafka-version", "3.9.2", "--share-group-state-decoder"], "has no --share-group-state-decoder"),
        (["--max-bytes", "lots"], "not a 32-bit integer"),
    ):
        res = run("--format", "kafka", *args, str(logs["data"]))
        assert res.returncode == 2 and res.stdout == "", args
        assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith("workbench: ") and words in res.stderr
    res = run("--skip-record-metadata", str(logs["data"]))  # jsonl
    assert res.returncode == 2 and "use it with --format kafka" in res.stderr
    res = run("--format", "kafka")
    assert res.returncode == 2 and "no file to dump" in res.stderr
    res = run("--format", "kafka", "--deep", str(logs["data"]))  # Kafka's parser does not abbreviate either
    assert res.returncode == 2


def test_problems_go_to_stderr_and_exit_1(logs, tmp_path):
    damaged = tmp_path / "t-0" / "00000000000000000000.log"
    damaged.parent.mkdir()
    whole = logs["data"].read_bytes()
    damaged.write_bytes(whole[:-20])
    last = 2 * len(whole) // 3  # three batches of one size: the last one is cut
    res = run("--format", "kafka", str(damaged))
    assert res.returncode == 1
    assert res.stdout.splitlines()[-1] == f"Found {len(whole) - 20 - last} invalid bytes at the end of {damaged.name}"
    assert res.stderr.splitlines() == [
        f"workbench: {damaged} @ {last}: stopped: Kafka's dump stops at byte {last} of "
        f"{len(whole) - 20}: the batch runs past the end of the file"
    ]


def test_jsonl_takes_the_decoder_flags(logs):
    res = run("--cluster-metadata-decoder", str(logs["data"]))  # a decoder forced on a plain topic
    assert res.returncode == 0
    records = [json.loads(line) for line in res.stdout.splitlines() if '"record"' in line]
    assert [r["payload"]["error"] is not None for r in records] == [True, True, True]
    res = run("--print-data-log", str(logs["data"]))
    assert [json.loads(line).get("value") for line in res.stdout.splitlines()][1] == "djA="


def test_a_reader_that_goes_away_ends_the_dump_quietly(tmp_path):
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    seg.write_bytes(b"".join(encode_batch([(i, 5, None, b"x" * 100)], base_offset=i) for i in range(20000)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "dump", "--format", "kafka", "--deep-iteration", str(seg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    first = proc.stdout.read(100)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert first.startswith(b"Dumping ") and proc.returncode == 0 and err == b""
