"""The ``offsets`` table against Kafka's own ``kafka-dump-log.sh --offsets-decoder``.

Expected rows come from the dump text Kafka printed (the scenario bundles' ``dumps/``, or a dump
run here on a segment of every commit form and transaction outcome), parsed line by line; the
table is compared with them whole. Transaction outcomes are worked out here from the dump's
marker lines: the first marker of the same producer after a commit settles it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import workbench
from tests.spark.internal_topics import (
    coordinator_batches,
    copy_nodes,
    dump_of,
    dumped_records,
    first_value_position,
    kafka_default,
    kafka_dump,
    node_of,
    scenario_params,
    segments,
    stamp,
    topic_partition,
    write_segment,
)
from workbench.formats.batch import read_batches
from workbench.spark.offsets import OFFSETS_SCHEMA
from workbench.spark.source import column_names

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

COLUMNS = column_names(OFFSETS_SCHEMA)
COMMIT_KINDS = {"0": "LegacyOffsetCommit", "1": "OffsetCommit"}  # the key schemas' names, by key type


def is_offsets(topic: str) -> bool:
    return topic == "__consumer_offsets"


def rows_from_dump(records: list[tuple[dict, dict]], node: int, path: str, partition: int) -> list[dict]:
    """The offsets rows of one file, from the dump's batch and record lines."""
    rows = []
    for batch, rec in records:
        row = {"node_id": node, "path": path, "offsets_partition": partition, "batch_position": batch["position"],
               "offset": rec["offset"], "timestamp": stamp(rec["timestamp"]), "producer_id": batch["producer_id"],
               "producer_epoch": batch["producer_epoch"], "is_transactional": batch["is_transactional"]}
        if batch["is_control"]:
            rows.append({**row, "record_kind": "TxnMarker", "deleted": False, "marker": rec["control_type"],
                         "txn_outcome": rec["control_type"]})
            continue
        key = json.loads(rec["key"])
        if key["type"] not in COMMIT_KINDS:
            continue
        row.update(record_kind=COMMIT_KINDS[key["type"]], deleted=rec["payload"] == "<DELETE>",
                   group=key["data"]["group"], topic=key["data"]["topic"], partition=key["data"]["partition"])
        if not row["deleted"]:
            value = json.loads(rec["payload"])
            data = value["data"]
            row.update(value_version=int(value["version"]), committed_offset=data["offset"],
                       leader_epoch=data.get("leaderEpoch", -1), metadata=data["metadata"],
                       commit_timestamp=stamp(data["commitTimestamp"]),
                       expire_timestamp=stamp(data.get("expireTimestamp")), topic_id=data.get("topicId"))
        rows.append(row)
    markers = [r for r in rows if r["record_kind"] == "TxnMarker"]
    for r in rows:
        if r["record_kind"] != "TxnMarker" and r["is_transactional"]:
            later = [m for m in markers if m["producer_id"] == r["producer_id"] and m["offset"] > r["offset"]]
            r["txn_outcome"] = min(later, key=lambda m: m["offset"])["marker"] if later else None
    return rows


def frame(spark, rows: list[dict]):
    return spark.createDataFrame([tuple(r.get(c) for c in COLUMNS) for r in rows], OFFSETS_SCHEMA)


def bundle_rows(root: Path) -> list[dict]:
    rows = []
    for seg in segments(root, is_offsets):
        rows += rows_from_dump(list(dumped_records(dump_of(root, seg))), node_of(seg), str(seg),
                               topic_partition(seg)[1])
    return rows


BUNDLES = scenario_params("consumer_lag", "mm2", without="isr")


@pytest.fixture(scope="module", params=BUNDLES, ids=[f"{s}-{v}" for s, v in BUNDLES])
def real(request, spark, kafka_bundle):
    root = Path(kafka_bundle(*request.param)).resolve()
    return root, workbench.load(workbench.open_bundle(root), spark)


def test_offsets_equal_the_dump_tool_on_every_scenario_bundle_holding_it(spark, real):
    root, tables = real
    want = bundle_rows(root)
    assertDataFrameEqual(tables.offsets, frame(spark, want))
    assert tables.problems_of("offsets").count() == 0
    if segments(root, is_offsets):
        assert sum(r["record_kind"] == "OffsetCommit" for r in want) > 100


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A segment of every commit form, tombstones and transactions, and Kafka's dump of it."""
    kafka = kafka_default()
    root = tmp_path_factory.mktemp("offsets").resolve()
    seg = write_segment(root, 1, "__consumer_offsets-7", coordinator_batches(str(kafka.lib)))
    return root, seg, kafka_dump(kafka, seg, "--offsets-decoder")


def test_every_commit_form_and_transaction_outcome_against_kafka(spark, synthetic):
    root, seg, text = synthetic
    want = rows_from_dump(list(dumped_records(text)), 1, str(seg), 7)
    kinds = {r["record_kind"] for r in want}
    assert kinds == {"OffsetCommit", "LegacyOffsetCommit", "TxnMarker"}
    assert {r.get("value_version") for r in want if r["record_kind"] == "OffsetCommit"} >= {0, 1, 2, 3, 4, None}
    offsets = workbench.load(workbench.open_bundle(root), spark).offsets
    assertDataFrameEqual(offsets, frame(spark, want))

    # the documented recipe keeps the committed transaction's offsets and drops the aborted and open ones
    effective = offsets.where("record_kind != 'TxnMarker' and (not is_transactional or txn_outcome = 'COMMIT')")
    groups = {r.group for r in effective.select("group").distinct().collect()}
    assert groups == {"g0", "g1", "eos", "zipped"}


def test_damaged_copy_keeps_every_readable_commit(spark, kafka_bundle, tmp_path):
    src = Path(kafka_bundle("consumer_lag")).resolve()
    root = copy_nodes(src, tmp_path / "bundle").resolve()
    seg = max(segments(root, is_offsets), key=lambda p: p.stat().st_size)
    node, partition = node_of(seg), topic_partition(seg)[1]
    intact = rows_from_dump(list(dumped_records(dump_of(src, src / seg.relative_to(root)))), node, str(seg), partition)
    data = bytearray(seg.read_bytes())
    batches = list(read_batches(open(seg, "rb"), str(seg)))
    commit_batches = sorted({r["batch_position"] for r in intact if r["record_kind"] == "OffsetCommit"})
    victim = commit_batches[len(commit_batches) // 2]
    first = min(r["offset"] for r in intact if r["batch_position"] == victim)
    at = first_value_position(data, victim)
    data[at:at + 2] = b"\x7f\x7f"                    # the first record's value version: unknown
    last = batches[-1].position
    del data[last + 30:]                             # the last batch cut short
    seg.write_bytes(bytes(data))

    want = []
    for other in segments(root, is_offsets):
        if other != seg:
            want += rows_from_dump(list(dumped_records(dump_of(src, src / other.relative_to(root)))),
                                   node_of(other), str(other), topic_partition(other)[1])
    for r in intact:
        if r["batch_position"] == last:
            continue
        if r["offset"] == first:
            r = {**r, "committed_offset": None, "leader_epoch": None, "metadata": None, "commit_timestamp": None,
                 "expire_timestamp": None, "topic_id": None, "value_version": 0x7F7F}
        want.append(r)
    tables = workbench.load(workbench.open_bundle(root), spark)
    got = tables.offsets
    assertDataFrameEqual(got.drop("error"), frame(spark, want).drop("error"))
    assert [r.offset for r in got.where("error is not null").collect()] == [first]
    problems = tables.problems.select("node_id", "path", "position", "kind")
    assertDataFrameEqual(problems, spark.createDataFrame(
        [(node, str(seg), victim, "crc_mismatch"), (node, str(seg), victim, "decode_error"),
         (node, str(seg), last, "truncated")], "node_id int, path string, position long, kind string"))


def test_strict_mode_raises_at_the_damage(spark, synthetic, tmp_path):
    _, seg, _ = synthetic
    data = bytearray(seg.read_bytes())
    at = first_value_position(data, 0)
    data[at:at + 2] = b"\x7f\x7f"
    copy = write_segment(tmp_path, 1, "__consumer_offsets-7", [bytes(data)])
    assert copy.exists()
    with pytest.raises(Exception, match="crc_mismatch"):
        workbench.load(workbench.open_bundle(tmp_path), spark, strict=True).offsets.collect()


def test_latest_commit_per_partition_example(spark, synthetic):
    """The module docstring's example runs and picks the last commit of each partition."""
    root, _, _ = synthetic
    offsets = workbench.load(workbench.open_bundle(root), spark).offsets
    last = (offsets.where("record_kind = 'OffsetCommit' and not deleted")
            .groupBy("group", "topic", "partition").agg(F.max_by("committed_offset", "offset").alias("committed")))
    got = {(r.group, r.partition): r.committed for r in last.where("group = 'g1'").collect()}
    assert got == {("g1", 0): 100, ("g1", 1): 101, ("g1", 2): 102, ("g1", 3): 103, ("g1", 4): 104}
