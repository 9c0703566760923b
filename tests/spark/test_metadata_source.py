"""The ``kafka_metadata`` data source on logs written by the project's writer, damaged and intact."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from tests.analysis.metadata_rows import at
from workbench.errors import CorruptDataError
from workbench.formats.kraft_log import MetadataLogWriter

pytestmark = pytest.mark.spark

TOPIC_ID = "dJmQ0ZqiSm2vl8Vc8m3mTw"


def ms(seconds: float) -> int:
    return int(at(seconds).timestamp() * 1000)


def write_node(root: Path, node: int, cluster: str = "c") -> tuple[Path, MetadataLogWriter]:
    logs = root / "nodes" / str(node) / "logs"
    seg_dir = logs / "__cluster_metadata-0"
    seg_dir.mkdir(parents=True)
    (logs / "meta.properties").write_text(f"#\nnode.id={node}\nversion=1\ncluster.id={cluster}\n")
    w = MetadataLogWriter()
    w.append_control("LEADER_CHANGE", {"leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": []},
                     timestamp=ms(0), epoch=1)
    w.append([("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 25})], timestamp=ms(0), epoch=1)
    w.append([("TopicRecord", 0, {"name": "orders", "topicId": TOPIC_ID}),
              ("PartitionRecord", 0, {"partitionId": 0, "topicId": TOPIC_ID, "replicas": [1, 2, 3],
                                      "isr": [1, 2, 3], "removingReplicas": [], "addingReplicas": [], "leader": 1,
                                      "leaderEpoch": 0, "partitionEpoch": 0})], timestamp=ms(1), epoch=1)
    for i in range(2, 8):
        w.append([("NoOpRecord", 0, {})], timestamp=ms(i), epoch=1)
    w.append([("PartitionChangeRecord", 0, {"partitionId": 0, "topicId": TOPIC_ID, "isr": [1, 3]})],
             timestamp=ms(8), epoch=1)
    w.append([("NoOpRecord", 0, {})], timestamp=ms(9), epoch=1)
    path = seg_dir / "00000000000000000000.log"
    path.write_bytes(w.to_bytes())
    return path, w


def test_reads_every_record_of_every_replica(spark, tmp_path):
    write_node(tmp_path, 1)
    write_node(tmp_path, 2)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    got = tables.metadata.select("node_id", "offset", "timestamp", "leader_epoch", "is_control", "record_type",
                                 "crc_valid")
    per_node = [(0, 0, True, "LEADER_CHANGE"), (1, 0, False, "FeatureLevelRecord"), (2, 1, False, "TopicRecord"),
                (3, 1, False, "PartitionRecord")]
    per_node += [(2 + i, i, False, "NoOpRecord") for i in range(2, 8)]
    per_node += [(10, 8, False, "PartitionChangeRecord"), (11, 9, False, "NoOpRecord")]
    want = spark.createDataFrame(
        [(node, off, at(s), 1, ctl, rtype, True) for node in (1, 2) for off, s, ctl, rtype in per_node],
        "node_id int, offset long, timestamp timestamp, leader_epoch int, is_control boolean, record_type string, "
        "crc_valid boolean")
    assertDataFrameEqual(got, want)
    typed = tables.metadata.where("node_id = 1 and record_type in ('TopicRecord', 'PartitionRecord', "
                                  "'PartitionChangeRecord', 'FeatureLevelRecord')").select(
        "offset", "topic_id", "topic", "partition", "leader", "isr", "replicas", "adding", "removing", "elr",
        "partition_epoch", "record_leader_epoch", "leader_recovery_state", "feature_name", "feature_level", "fields")
    assertDataFrameEqual(typed, spark.createDataFrame(
        [(1, None, None, None, None, None, None, None, None, None, None, None, None, "metadata.version", 25, None),
         (2, TOPIC_ID, "orders", None, None, None, None, None, None, None, None, None, None, None, None, None),
         (3, TOPIC_ID, None, 0, 1, [1, 2, 3], [1, 2, 3], [], [], None, 0, 0, 0, None, None, None),
         (10, TOPIC_ID, None, 0, -2, [1, 3], None, None, None, None, None, None, None, None, None, None)],
        "offset long, topic_id string, topic string, partition int, leader int, isr array<int>, "
        "replicas array<int>, adding array<int>, removing array<int>, elr array<int>, partition_epoch int, "
        "record_leader_epoch int, leader_recovery_state int, feature_name string, feature_level int, "
        "fields string"))
    assert tables.problems.count() == 0


def test_fields_json_when_asked_for(spark, tmp_path):
    write_node(tmp_path, 1)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark, fields=True)
    change = tables.metadata.where("record_type = 'PartitionChangeRecord'").first()
    assert change.fields == ('{"partitionId":0,"topicId":"dJmQ0ZqiSm2vl8Vc8m3mTw","isr":[1,3],"leader":-2,'
                             '"replicas":null,"removingReplicas":null,"addingReplicas":null,"leaderRecoveryState":-1,'
                             '"directories":null,"eligibleLeaderReplicas":null,"lastKnownElr":null}')
    assert change.isr == [1, 3] and change.replicas is None
    noop = tables.metadata.where("record_type = 'NoOpRecord'").first()
    assert noop.fields == "{}"
    leader_change = tables.metadata.where("is_control").first()
    assert leader_change.fields.startswith('{"version":0,"leaderId":1,')


def test_damaged_segment_loses_only_the_damaged_bytes(spark, tmp_path):
    path, w = write_node(tmp_path, 1)
    data = bytearray(path.read_bytes())
    corrupt = w.positions[5]                        # the NoOp batch of offset 6: flip a bit in its record
    data[corrupt + 61 + 2] ^= 0x40                  # its timestamp delta varint: 0 -> 0x40, i.e. +32 ms
    last = w.positions[-1]
    del data[last + 30:]                            # the last batch is cut short
    path.write_bytes(bytes(data))

    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    got = tables.metadata.select("offset", "record_type", "crc_valid", "timestamp")
    # what the damage leaves: every record but the cut-off last one; the flipped one still
    # decodes (a NoOp record), 32 ms later, in a batch whose CRC no longer matches
    want = [(0, "LEADER_CHANGE", True, at(0)), (1, "FeatureLevelRecord", True, at(0)),
            (2, "TopicRecord", True, at(1)), (3, "PartitionRecord", True, at(1))]
    want += [(offset, "NoOpRecord", offset != 6, at(offset - 2 + (0.032 if offset == 6 else 0)))
             for offset in range(4, 10)]
    want += [(10, "PartitionChangeRecord", True, at(8))]
    assertDataFrameEqual(got, spark.createDataFrame(
        want, "offset long, record_type string, crc_valid boolean, timestamp timestamp"))
    problems = tables.problems.select("path", "position", "kind").orderBy("position")
    assertDataFrameEqual(problems, spark.createDataFrame(
        [(str(path), corrupt, "crc_mismatch"), (str(path), last, "truncated")],
        "path string, position long, kind string"))


def test_strict_mode_raises(spark, tmp_path):
    path, w = write_node(tmp_path, 1)
    data = bytearray(path.read_bytes())
    data[w.positions[3] + 61 + 2] ^= 0x40
    path.write_bytes(bytes(data))
    tables = workbench.load(workbench.open_bundle(tmp_path), spark, strict=True)
    with pytest.raises(Exception, match="crc_mismatch"):
        tables.metadata.collect()
    written = workbench.load(workbench.open_bundle(tmp_path), spark, strict=True, materialize_bytes=0)
    with pytest.raises(Exception, match="crc_mismatch"):  # decoded into Parquet by Spark tasks: the same error
        written.metadata.collect()
    # the same condition, outside Spark, raises the library's own error
    from workbench.formats.batch import read_batches

    with open(path, "rb") as f, pytest.raises(CorruptDataError):
        for batch in read_batches(f, str(path), strict=True):
            batch.records()


def test_cluster_id_of_each_node_and_one_ordered_log_per_cluster(spark, tmp_path):
    """Nodes of two clusters: each row names its node's cluster; each cluster's log is read on its own."""
    from workbench.analysis.metadata_log import ordered_records

    write_node(tmp_path, 1, "east")
    write_node(tmp_path, 2, "west")
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    assertDataFrameEqual(tables.metadata.select("node_id", "cluster_id").distinct(),
                         spark.createDataFrame([(1, "east"), (2, "west")], "node_id int, cluster_id string"))
    got = ordered_records(tables.metadata).groupBy("cluster_id", "node_id").count()
    # each cluster keeps all 12 positions of its own log (one replica each: none taken from the other)
    assertDataFrameEqual(got, spark.createDataFrame([("east", 1, 12), ("west", 2, 12)],
                                                    "cluster_id string, node_id int, count long"))


def test_batches_table_matches_the_writer(spark, tmp_path):
    path, w = write_node(tmp_path, 3)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    got = tables.batches.select("node_id", "topic", "partition", "segment_base_offset", "position", "base_offset",
                                "last_offset", "record_count", "magic", "compression", "is_control",
                                "partition_leader_epoch", "crc_valid", "max_timestamp")
    offsets = [(0, 0), (1, 1), (2, 3)] + [(o, o) for o in range(4, 10)] + [(10, 10), (11, 11)]
    stamps = [0, 0, 1] + list(range(2, 8)) + [8, 9]
    want = spark.createDataFrame(
        [(3, "__cluster_metadata", 0, 0, pos, base, last, last - base + 1, 2, "none", i == 0, 1, True, at(ts))
         for i, (pos, (base, last), ts) in enumerate(zip(w.positions, offsets, stamps, strict=True))],
        "node_id int, topic string, partition int, segment_base_offset long, position long, base_offset long, "
        "last_offset long, record_count int, magic int, compression string, is_control boolean, "
        "partition_leader_epoch int, crc_valid boolean, max_timestamp timestamp")
    assertDataFrameEqual(got, want)


def test_a_large_log_is_split_into_pieces_of_about_equal_size(tmp_path):
    """A log a little over ``split_bytes`` becomes two halves at batch boundaries, not a full piece and a sliver."""
    import json
    import os

    from workbench.formats.batch import read_batches
    from workbench.spark.metadata import MetadataReader

    path, w = write_node(tmp_path, 1)
    for i in range(400):
        w.append([("NoOpRecord", 0, {})], timestamp=ms(10 + i), epoch=1)
    path.write_bytes(w.to_bytes())
    size = os.path.getsize(path)
    positions = [b.position for b in read_batches(open(path, "rb"), str(path))]
    files = json.dumps([{"path": str(path), "node_id": 1, "kind": "segment", "base_offset": 0}])
    for split in (size * 6 // 10, size // 3, size // 7):
        pieces = MetadataReader(None, {"files": files, "split_bytes": str(split)}).pieces()
        starts = [p.start for p in pieces]
        ends = [p.end if p.end is not None else size for p in pieces]
        lengths = [e - s for s, e in zip(starts, ends, strict=True)]
        assert len(pieces) == -(-size // split)                    # as few pieces as split_bytes allows
        assert starts[0] == 0 and ends[-1] == size and starts[1:] == ends[:-1]
        assert set(starts) <= set(positions)                       # each piece begins at a batch
        assert max(lengths) - min(lengths) <= 2 * max(b - a for a, b in zip(positions, positions[1:], strict=False))
    whole = MetadataReader(None, {"files": files, "split_bytes": str(size)}).pieces()
    assert [(p.start, p.end) for p in whole] == [(0, None)]
