"""The ``kafka_batches`` source (fast scan) against the careful reader, on real Kafka bundles.

The expected DataFrame is built row by row from :func:`read_batches`, independently of the
source's column-wise Arrow path; the two are compared whole.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from workbench.formats.batch import read_batches
from workbench.formats.problems import ProblemLog
from workbench.spark.sources import BATCHES_SCHEMA, MAX_TIMESTAMP_MS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def stamp(ms: int):
    from datetime import UTC, datetime, timedelta

    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms) if 0 <= ms <= MAX_TIMESTAMP_MS else None


def expected(spark, bundle, *, verify: bool = True):
    """The batches table and its problems, built with the careful reader, row by row."""
    rows, problems = [], []
    for a in bundle.of_kind("segment", "snapshot", "bootstrap"):
        path = str(bundle.root / a.path)
        log = ProblemLog(path)
        with open(path, "rb") as f:
            for b in read_batches(f, path, problems=log):
                rows.append((a.node_id, path, a.topic, a.partition, a.base_offset, b.position, b.base_offset,
                             b.last_offset, b.record_count, b.size, b.magic, b.compression, b.timestamp_type,
                             stamp(b.base_timestamp), stamp(b.max_timestamp), b.producer_id, b.producer_epoch,
                             b.base_sequence, b.is_transactional, b.is_control, b.partition_leader_epoch,
                             b.crc_valid if verify else None))
        problems += [(a.node_id, p.path, p.position, p.kind, p.detail) for p in log.problems]
    return (spark.createDataFrame(rows, BATCHES_SCHEMA),
            spark.createDataFrame(problems, "node_id int, path string, position long, kind string, detail string"))


def test_batches_table_equals_the_careful_reader_on_real_kafka(spark, kafka_bundle):
    bundle = workbench.open_bundle(kafka_bundle("consumer_lag"))
    want, want_problems = expected(spark, bundle)
    tables = workbench.load(bundle, spark)
    assert want.count() > 500
    assertDataFrameEqual(tables.batches, want)
    assert want_problems.count() == 0
    headers_only = workbench.load(bundle, spark, verify_crc=False).batches
    assertDataFrameEqual(headers_only, expected(spark, bundle, verify=False)[0])


def test_damaged_segments_and_split_reading(spark, kafka_bundle, tmp_path):
    """A damaged copy of a real bundle, read in 64 KiB splits: same rows, same problems."""
    src = Path(kafka_bundle("consumer_lag"))
    root = tmp_path / "bundle"
    shutil.copytree(src / "nodes", root / "nodes")
    segs = sorted((p for p in root.glob("nodes/*/logs/lag-*-0/00000000000000000000.log") if p.stat().st_size > 4096),
                  key=lambda p: p.stat().st_size)
    assert len(segs) >= 3
    for n, seg in enumerate(segs[:3]):
        data = bytearray(seg.read_bytes())
        batches = list(read_batches(open(seg, "rb"), str(seg)))
        mid = batches[len(batches) // 2]
        if n == 0:
            data[mid.position + 70] ^= 0x10  # a CRC mismatch
        elif n == 1:
            data[mid.position : mid.position + 61] = bytes(61)  # a zeroed header
        else:
            del data[mid.position + 40 :]  # truncated
        seg.write_bytes(bytes(data))
    bundle = workbench.open_bundle(root)
    want, want_problems = expected(spark, bundle)
    files = json.dumps([{"path": str(bundle.root / a.path), "node_id": a.node_id, "kind": a.kind,
                         "base_offset": a.base_offset, "topic": a.topic, "partition": a.partition}
                        for a in bundle.of_kind("segment", "snapshot", "bootstrap")])
    reader = spark.read.format("kafka_batches").option("files", files).option("split_bytes", str(64 << 10))
    assertDataFrameEqual(reader.load(), want)
    assertDataFrameEqual(reader.option("emit", "problems").load(), want_problems)
    assert want_problems.count() >= 3
