"""Out-of-range values in the ``metadata`` and ``metrics`` tables: null plus a problem, and the tables convert."""

from __future__ import annotations

import pytest

import workbench
from tests.spark.test_metadata_source import ms
from workbench.formats.kraft_log import MetadataLogWriter

pytestmark = pytest.mark.spark

YEAR_3000_MS = 32_503_680_000_000


def test_metadata_timestamps_beyond_range_are_null_with_a_problem(spark, tmp_path):
    seg_dir = tmp_path / "nodes" / "1" / "__cluster_metadata-0"
    seg_dir.mkdir(parents=True)
    w = MetadataLogWriter()
    for stamp in (ms(0), 2**62, YEAR_3000_MS, ms(3)):
        w.append([("NoOpRecord", 0, {})], timestamp=stamp, epoch=1)
    path = seg_dir / "00000000000000000000.log"
    path.write_bytes(w.to_bytes())
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    rows = tables.metadata.select("offset", "timestamp").orderBy("offset").toPandas()  # converts: no overflow
    assert list(rows["offset"]) == [0, 1, 2, 3]
    assert [t is None or t != t for t in rows["timestamp"]] == [False, True, True, False]
    # the metadata table's (the batches table reports the batches' max timestamps besides)
    problems = tables.problems_of("metadata").select("path", "position", "kind", "detail").orderBy("position").collect()
    assert [(p["path"], p["position"], p["kind"]) for p in problems] == [
        (str(path), w.positions[1], "out_of_range"), (str(path), w.positions[2], "out_of_range")]
    assert f"timestamp {2**62} ms is outside" in problems[0]["detail"]


def test_jmx_csv_out_of_range_rows_load_and_convert(spark, tmp_path):
    (tmp_path / "metrics").mkdir()
    mbean = "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"
    (tmp_path / "metrics" / "1-isr.csv").write_text(
        f'"time","{mbean}:Value"\n1795290596161,1\ninf,2\n1e25,3\n1795290597161,1e300\n')
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    got = tables.metrics.select("timestamp", "value").toPandas()
    assert len(got) == 4
    assert got["timestamp"].isna().tolist() == [False, True, True, False]
    assert got["value"].isna().tolist() == [False, False, False, True]
    assert sorted(tables.problems.select("position", "kind").collect()) == [
        (3, "out_of_range"), (4, "out_of_range"), (5, "out_of_range")]


def _problems(tables, table=None):
    """Every problem of the bundle, or one table's."""
    frame = tables.problems if table is None else tables.problems_of(table)
    return sorted((p["path"], p["position"], p["kind"], p["detail"])
                  for p in frame.select("path", "position", "kind", "detail").collect())


def test_metadata_ids_and_epochs_beyond_what_kafka_writes_are_null_with_a_problem(spark, tmp_path):
    seg_dir = tmp_path / "nodes" / "1" / "__cluster_metadata-0"
    seg_dir.mkdir(parents=True)
    topic = "AAAAAAAAAAAAAAAAAAAAAQ"
    w = MetadataLogWriter()
    w.append([("PartitionRecord", 0, {"partitionId": 0, "topicId": topic, "replicas": [1], "isr": [1], "leader": 1,
                                      "leaderEpoch": 0, "partitionEpoch": 0})], timestamp=ms(0), epoch=1)
    w.append([("PartitionChangeRecord", 0, {"partitionId": -3, "topicId": topic, "leader": -7})],
             timestamp=ms(1), epoch=-5)
    w.append([("PartitionChangeRecord", 0, {"partitionId": 0, "topicId": topic, "leader": -2})],
             timestamp=ms(2), epoch=1)
    path = seg_dir / "00000000000000000000.log"
    path.write_bytes(w.to_bytes())
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    got = [tuple(r) for r in tables.metadata.orderBy("offset").select(
        "offset", "leader_epoch", "partition", "leader").collect()]
    assert got == [(0, 1, 0, 1), (1, None, None, None), (2, 1, 0, -2)]  # -2: the leader did not change
    assert [(p[1], p[2]) for p in _problems(tables, "metadata")] == [(w.positions[1], "out_of_range")] * 3
    assert {p[3].split(": ", 1)[1].split(" is ")[0] for p in _problems(tables, "metadata")} == {
        "PartitionChangeRecord leader_epoch -5", "PartitionChangeRecord partition -3",
        "PartitionChangeRecord leader -7"}


def test_batch_headers_out_of_range_are_null_with_a_problem(spark, tmp_path):
    from tests.spark.internal_topics import write_segment
    from workbench.formats.batch import encode_batch

    good = encode_batch([(0, ms(0), b"k", b"v")], base_offset=0, producer_id=7, producer_epoch=0, base_sequence=0)
    bad = encode_batch([(1, 2**62, b"k", b"v")], base_offset=1, producer_id=-9, producer_epoch=-7, base_sequence=-5,
                       partition_leader_epoch=-3)
    seg = write_segment(tmp_path, 1, "orders-0", [good, bad])
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    got = [tuple(r) for r in tables.batches.orderBy("position").select(
        "base_offset", "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
        "partition_leader_epoch").collect()]
    assert got[0][2:] == (7, 0, 0, -1) and got[0][1] is not None
    assert got[1] == (1, None, None, None, None, None)
    problems = _problems(tables)
    assert [(p[0], p[1], p[2]) for p in problems] == [(str(seg), len(good), "out_of_range")] * 6
    assert any(f"max_timestamp {2**62} ms" in p[3] for p in problems)
    assert any("producer_id -9 is outside" in p[3] for p in problems)


def test_offset_commits_out_of_range_are_null_with_a_problem(spark, tmp_path):
    from tests.spark.internal_topics import write_segment
    from workbench.formats.batch import encode_batch
    from workbench.formats.coordinator import encode_offsets_record

    key, value = encode_offsets_record("OffsetCommit", {"group": "g", "topic": "t", "partition": 0},
                                       {"offset": -9, "leaderEpoch": -5, "metadata": "", "commitTimestamp": -5})
    seg = write_segment(tmp_path, 1, "__consumer_offsets-0", [encode_batch([(0, ms(0), key, value)], base_offset=0)])
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    row = tables.offsets.select("group", "committed_offset", "leader_epoch", "commit_timestamp").collect()
    assert [tuple(r) for r in row] == [("g", None, None, None)]
    problems = _problems(tables)
    assert [(p[0], p[1], p[2]) for p in problems] == [(str(seg), 0, "out_of_range")] * 3
    assert sorted(p[3].split(": ")[1].split(" ")[0:2] for p in problems) == [
        ["commit_timestamp", "-5"], ["committed_offset", "-9"], ["leader_epoch", "-5"]]


def test_text_values_beyond_their_column_are_null_with_a_problem(spark, tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "1795290596161-kafka-get-offsets.txt").write_text(f"t:0:5\nt:1:{2**70}\nt:2:-5\n")
    qs = tmp_path / "nodes" / "1" / "logs" / "__cluster_metadata-0" / "quorum-state"
    qs.parent.mkdir(parents=True)
    qs.write_text('{"clusterId":"","leaderId":-5,"leaderEpoch":1180591620717411303424,"votedId":-1,'
                  '"appliedOffset":0,"currentVoters":[{"voterId":1}],"data_version":0}')
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    assert [tuple(r) for r in tables.tool_get_offsets.orderBy("partition").select("partition", "offset").collect()] \
        == [(0, 5), (1, None), (2, None)]
    assert [tuple(r) for r in tables.quorum.select("leader_id", "leader_epoch").collect()] == [(None, None)]
    details = [p[3] for p in _problems(tables)]
    assert len(details) == 4 and all(p[2] == "out_of_range" for p in _problems(tables))
    assert any(str(2**70) in d for d in details) and any("offset -5 is outside" in d for d in details)
    assert any("leader_id -5 is outside" in d for d in details)
    assert any("leader_epoch 1180591620717411303424 is outside" in d for d in details)
    assert any(f"offset {2**70} is outside" in d for d in details)
