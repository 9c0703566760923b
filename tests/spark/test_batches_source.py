"""The ``kafka_batches`` source (fast scan) on real Kafka bundles, intact and damaged.

The expected DataFrame is built row by row from :func:`read_batches` on intact files (whose
batch lines ``tests/formats/test_segment_kafka.py`` checks against Kafka's own dump),
independently of the source's column-wise Arrow path; the two are compared whole. For damaged
files the expected rows and problems are derived from the damage applied to the intact copy,
never from the careful reader the fast scan hands damaged batches to.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from workbench.formats.batch import read_batches
from workbench.formats.problems import ProblemLog
from workbench.spark.batches import BATCHES_SCHEMA
from workbench.spark.registry import read_table, table_spec
from workbench.spark.source import MAX_TIMESTAMP_MS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def stamp(ms: int):
    from datetime import UTC, datetime, timedelta

    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms) if 0 <= ms <= MAX_TIMESTAMP_MS else None


def expected(spark, bundle, *, verify: bool = True, damage=None):
    """The batches table and its problems, row by row: the careful reader on intact files; for a
    damaged file (``damage``: path -> (intact copy, function of the intact rows and problems)),
    the intact copy's rows changed as the damage changes them."""
    rows, problems = [], []
    for a in bundle.of_kind("segment", "snapshot", "bootstrap"):
        path = str(bundle.root / a.path)
        if damage and path in damage:
            intact, change = damage[path]
            file_rows = []
            with open(intact, "rb") as f:
                for b in read_batches(f, path, problems=ProblemLog(path, strict=True)):
                    file_rows.append((a.node_id, path, a.topic, a.partition, a.base_offset, b.position,
                                      b.base_offset, b.last_offset, b.record_count, b.size, b.magic, b.compression,
                                      b.timestamp_type, stamp(b.base_timestamp), stamp(b.max_timestamp),
                                      b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional,
                                      b.is_control, b.partition_leader_epoch, b.crc, b.crc_valid if verify else None))
            file_rows, file_problems = change(file_rows)
            rows += file_rows
            problems += [(a.node_id, path, pos, kind) for pos, kind in file_problems]
            continue
        log = ProblemLog(path)
        with open(path, "rb") as f:
            for b in read_batches(f, path, problems=log):
                rows.append((a.node_id, path, a.topic, a.partition, a.base_offset, b.position, b.base_offset,
                             b.last_offset, b.record_count, b.size, b.magic, b.compression, b.timestamp_type,
                             stamp(b.base_timestamp), stamp(b.max_timestamp), b.producer_id, b.producer_epoch,
                             b.base_sequence, b.is_transactional, b.is_control, b.partition_leader_epoch,
                             b.crc, b.crc_valid if verify else None))
        problems += [(a.node_id, p.path, p.position, p.kind) for p in log.problems]
    return (spark.createDataFrame(rows, BATCHES_SCHEMA),
            spark.createDataFrame(problems, "node_id int, path string, position long, kind string"))


def test_batches_table_equals_the_careful_reader_on_real_kafka(spark, kafka_bundle):
    bundle = workbench.open_bundle(kafka_bundle("consumer_lag"))
    want, want_problems = expected(spark, bundle)
    tables = workbench.load(bundle, spark)
    assert want.count() > 500
    assertDataFrameEqual(tables.batches, want)
    assert want_problems.count() == 0
    headers_only = workbench.load(bundle, spark, verify_crc=False).batches
    assertDataFrameEqual(headers_only, expected(spark, bundle, verify=False)[0])


def test_small_files_are_packed_into_few_tasks_and_read_the_same(spark, kafka_bundle):
    """Consecutive files share an input partition up to ``pack_bytes``/``pack_files``; the rows
    are those of one partition per file, whole."""
    bundle = workbench.open_bundle(kafka_bundle("consumer_lag"))
    files = bundle.of_kind("segment", "snapshot", "bootstrap")
    spec = table_spec("batches")
    one_each = read_table(spark, bundle, spec, files, pack_files=1)
    limit = 256 << 10
    packed = read_table(spark, bundle, spec, files, pack_bytes=limit)
    by_default = read_table(spark, bundle, spec, files)
    sizes = [(bundle.root / a.path).stat().st_size for a in files]
    packs, room = 0, 0  # greedy, in file order: a file that does not fit starts a pack
    for size in sizes:
        if size >= limit or size > room:
            packs += 1
            room = 0 if size >= limit else limit - size
        else:
            room -= size
    assert len(files) > 50 and max(sizes) < 128 << 20
    assert one_each.rows.rdd.getNumPartitions() == len(files)
    assert 1 < packed.rows.rdd.getNumPartitions() == packs < len(files)
    assert by_default.rows.rdd.getNumPartitions() == -(-len(files) // 256)  # all small: 256 files a task
    assertDataFrameEqual(packed.rows, one_each.rows)
    assertDataFrameEqual(by_default.rows, one_each.rows)


def test_damaged_segments_and_split_reading(spark, kafka_bundle, tmp_path):
    """A damaged copy of a real bundle, read in 64 KiB splits: the intact rows, less what the
    damage destroyed, and one problem per damaged stretch, where the damage is."""
    src = Path(kafka_bundle("consumer_lag"))
    root = tmp_path / "bundle"
    shutil.copytree(src / "nodes", root / "nodes")
    intact_dir = tmp_path / "intact"
    intact_dir.mkdir()
    # three segments of three partitions, each holding several batches (how many segments a partition
    # rolled, and how large each is, depends on how fast the scenario's producers ran)
    smallest: dict[Path, Path] = {}
    for p in sorted(root.glob("nodes/*/logs/lag-*/*.log"), key=lambda p: p.stat().st_size):
        if p.stat().st_size > 4096:
            smallest.setdefault(p.parent, p)
    segs = sorted(smallest.values(), key=lambda p: p.stat().st_size)
    assert len(segs) >= 3, sorted(root.glob("nodes/*/logs/lag-*/*.log"))
    damage = {}
    for n, seg in enumerate(segs[:3]):
        intact = intact_dir / f"{n}.log"
        shutil.copyfile(seg, intact)
        data = bytearray(seg.read_bytes())
        batches = list(read_batches(open(seg, "rb"), str(seg), problems=ProblemLog(str(seg), strict=True)))
        k = len(batches) // 2
        mid = batches[k]
        if n == 0:
            data[mid.position + 70] ^= 0x10  # a flipped bit inside the CRC's coverage

            def change(rows, k=k, at=mid.position):
                rows = list(rows)
                rows[k] = (*rows[k][:-1], False)  # the batch is kept, its CRC does not match
                return rows, [(at, "crc_mismatch")]
        elif n == 1:
            data[mid.position : mid.position + 61] = bytes(61)  # a zeroed header

            def change(rows, k=k, at=mid.position):
                # 61 zero bytes, then the rest of that batch unreadable; the next batch reads
                return rows[:k] + rows[k + 1 :], [(at, "zero_fill"), (at + 61, "garbage")]
        else:
            del data[mid.position + 40 :]  # truncated inside a batch header

            def change(rows, k=k, at=mid.position):
                return rows[:k], [(at, "truncated")]
        seg.write_bytes(bytes(data))
        damage[str(seg)] = (intact, change)
    bundle = workbench.open_bundle(root)
    want, want_problems = expected(spark, bundle, damage=damage)
    got = read_table(spark, bundle, table_spec("batches"), bundle.of_kind("segment", "snapshot", "bootstrap"),
                     split_bytes=64 << 10)
    assertDataFrameEqual(got.rows, want)
    assertDataFrameEqual(got.problems.select("node_id", "path", "position", "kind"), want_problems)
    assert got.problems.filter("detail is null or detail = ''").count() == 0
    assert want_problems.count() == 4
