"""The ``records`` table (``kafka_records`` source, compiled decoder) against ``Batch.records()``.

The expected DataFrame is built row by row from the pure-Python record loop on the same files of
a real Kafka bundle (every codec, headers, transactions); the two are compared whole. For a
damaged file the expected rows and problems are derived from the damage applied to the intact
copy, never from the careful reader the compiled decoder hands damaged batches to.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from workbench.formats.batch import read_batches
from workbench.formats.problems import ProblemLog
from workbench.spark.records import RECORDS_SCHEMA
from workbench.spark.source import MAX_TIMESTAMP_MS, PROBLEMS_SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def stamp(ms: int):
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms) if 0 <= ms <= MAX_TIMESTAMP_MS else None


def expected(spark, bundle, topics, payloads, damage=None):
    """The records table and its problems; a damaged file (``damage``: path -> (intact copy,
    positions of the batches whose records are lost, the problems the damage makes)) gets the
    intact copy's records less those of the lost batches."""
    rows, problems = [], []
    for a in bundle.of_kind("segment"):
        if a.topic not in topics or not a.path.endswith(".log"):
            continue
        path = str(bundle.root / a.path)
        log = ProblemLog(path)
        source, lost = path, ()
        if damage and path in damage:
            source, lost, made = damage[path]
            log = ProblemLog(path, strict=True)  # the intact copy reads without a problem
            problems += [(a.node_id, path, pos, kind, None) for pos, kind in made]
        with open(source, "rb") as f:
            for b in read_batches(f, path, problems=log):
                if b.position in lost:
                    continue
                for r in b.records(log):
                    attrs = r.attributes - 256 if r.attributes > 127 else r.attributes
                    rows.append((a.node_id, path, a.topic, a.partition, b.position, r.offset, stamp(r.timestamp),
                                 attrs, r.size, -1 if r.key is None else len(r.key),
                                 -1 if r.value is None else len(r.value),
                                 bytearray(r.key) if payloads and r.key is not None else None,
                                 bytearray(r.value) if payloads and r.value is not None else None,
                                 [(k, bytearray(v) if payloads and v is not None else None) for k, v in r.headers]))
        problems += [(a.node_id, p.path, p.position, p.kind, p.detail) for p in log.problems]
    return spark.createDataFrame(rows, RECORDS_SCHEMA), spark.createDataFrame(problems, PROBLEMS_SCHEMA)


def lag_topics(bundle) -> list[str]:
    return sorted({a.topic for a in bundle.of_kind("segment") if a.topic and a.topic.startswith("lag-")})


def test_records_equal_the_python_loop_with_and_without_payloads(spark, kafka_bundle):
    bundle = workbench.open_bundle(kafka_bundle("consumer_lag"))
    topics = lag_topics(bundle)
    assert len(topics) >= 5
    for payloads in (True, False):
        records, problems = workbench.load_records(bundle, spark, topics=topics, payloads=payloads)
        want, want_problems = expected(spark, bundle, topics, payloads)
        assert want.count() > 1000
        assertDataFrameEqual(records, want)
        assert problems.count() == 0 and want_problems.count() == 0
    redacted, _ = workbench.load_records(bundle, spark, topics=topics)
    assert redacted.filter("key is not null or value is not null").count() == 0
    assert redacted.filter("value_size > 0").count() > 0 and redacted.filter("size(headers) > 0").count() > 0


def test_damaged_records_keep_every_readable_record(spark, kafka_bundle, tmp_path):
    """A record length far past its batch, and the last batch cut short: every record of every
    other batch is there, as in the intact file, and the problems are where the damage is."""
    src = Path(kafka_bundle("consumer_lag"))
    root = tmp_path / "bundle"
    shutil.copytree(src / "nodes", root / "nodes")
    seg = max(root.glob("nodes/*/logs/lag-none-*/00000000000000000000.log"), key=lambda p: p.stat().st_size)
    intact = tmp_path / "intact.log"
    shutil.copyfile(seg, intact)
    data = bytearray(seg.read_bytes())
    batches = list(read_batches(open(seg, "rb"), str(seg), problems=ProblemLog(str(seg), strict=True)))
    victim, last = batches[len(batches) // 2], batches[-1]
    data[victim.position + 61] = 0x7F  # the first record's length varint: -64
    del data[last.position + 70 :]  # and the last batch cut short
    seg.write_bytes(bytes(data))
    made = [(victim.position, "crc_mismatch"),  # the changed byte is inside the CRC's coverage
            (victim.position + 61, "record_error"),  # where the record starts
            (last.position, "truncated")]
    bundle = workbench.open_bundle(root)
    topic = [a.topic for a in bundle.of_kind("segment") if str(bundle.root / a.path) == str(seg)]
    records, problems = workbench.load_records(bundle, spark, topics=topic, payloads=True)
    want, want_problems = expected(spark, bundle, topic, True,
                                   damage={str(seg): (intact, {victim.position, last.position}, made)})
    assert want.filter(want.path == str(seg)).count() == (
        sum(b.record_count for b in batches) - victim.record_count - last.record_count)
    assertDataFrameEqual(records, want)
    assertDataFrameEqual(problems.drop("detail"), want_problems.drop("detail"))
    assert problems.filter("detail is null or detail = ''").count() == 0
