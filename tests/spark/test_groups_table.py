"""The ``groups`` table against Kafka's own ``kafka-dump-log.sh --offsets-decoder``.

Every typed column is read here from the JSON Kafka printed (its own decoder's view of the key
and value, consumer-protocol blobs expanded), and ``fields`` must be that JSON exactly. Record
kinds are named after the key schemas of Kafka's jar (``ConsumerGroupMetadataKey`` ->
``ConsumerGroupMetadata``); member states after Kafka's ``MemberState`` enums.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from tests.spark.internal_topics import (
    TS,
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
from workbench.formats.batch import Record, encode_batch, read_batches
from workbench.spark.groups import GROUPS_SCHEMA
from workbench.spark.source import column_names

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

COLUMNS = column_names(GROUPS_SCHEMA)
#: org.apache.kafka.coordinator.group.modern.MemberState and ...streams.MemberState (byte values)
CONSUMER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}
STREAMS_STATES = {1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS", 127: "UNKNOWN"}
EPOCHS = {"GroupMetadata": "epoch", "TargetAssignmentMetadata": "assignmentEpoch",
          "CurrentMemberAssignment": "memberEpoch", "Topology": "epoch"}


@pytest.fixture(scope="module")
def kafka():
    return kafka_default()


@pytest.fixture(scope="module")
def names(kafka) -> dict[int, str]:
    """Record kind by key type, from the coordinator key schemas in Kafka's jar."""
    from tests.formats.test_coordinator import _release_schemas

    other = {"TransactionLogKey", "ShareSnapshotKey", "ShareUpdateKey"}
    return {s.api_key: s.name[:-len("Key")] for s in _release_schemas(kafka.lib).values()
            if s.type == "coordinator-key" and s.name not in other}


def is_offsets(topic: str) -> bool:
    return topic == "__consumer_offsets"


def by_id(items):
    return None if items is None else [(p["topicId"], None, p["partitions"]) for p in items]


def member(m: dict) -> tuple:
    sub, assignment = m["subscription"], m["assignment"]
    return (m["memberId"], m.get("groupInstanceId"), m["clientId"], m["clientHost"], m.get("rebalanceTimeout", -1),
            m["sessionTimeout"], sub["topics"] if isinstance(sub, dict) else None,
            [(None, p["topic"], p["partitions"]) for p in assignment["assignedPartitions"]]
            if isinstance(assignment, dict) else None)


def rows_from_dump(records, node: int, path: str, partition: int, names: dict[int, str]) -> list[dict]:
    rows = []
    for batch, rec in records:
        if batch["is_control"]:
            continue
        key = json.loads(rec["key"])
        kind, k = int(key["type"]), key["data"]
        if kind in (0, 1):
            continue
        name = names[kind]
        row = {"node_id": node, "path": path, "offsets_partition": partition, "batch_position": batch["position"],
               "offset": rec["offset"], "timestamp": stamp(rec["timestamp"]), "record_kind": name,
               "record_type": kind, "deleted": rec["payload"] == "<DELETE>", "group": k.get("group", k.get("groupId")),
               "member_id": k.get("memberId"), "regular_expression": k.get("regularExpression")}
        rows.append(row)
        if row["deleted"]:
            continue
        value = json.loads(rec["payload"])
        v = value["data"]
        prefix = f'{{"version":"{value["version"]}","data":'
        row.update(value_version=int(value["version"]), fields=rec["payload"][len(prefix):-1])
        if name == "GroupMetadata":
            row.update(protocol_type=v["protocolType"], generation=v["generation"], protocol=v["protocol"],
                       leader=v["leader"], current_state_timestamp=stamp(v.get("currentStateTimestamp")),
                       members=[member(m) for m in v["members"]])
            continue
        for suffix, field in EPOCHS.items():
            if name.endswith(suffix):
                row["epoch"] = v.get(field)
        row["previous_epoch"] = v.get("previousMemberEpoch")
        if name.endswith("CurrentMemberAssignment"):
            row["member_state"] = (STREAMS_STATES if name.startswith("Streams") else CONSUMER_STATES)[v["state"]]
            row["assigned_partitions"] = by_id(v.get("assignedPartitions"))
            row["partitions_pending_revocation"] = by_id(v.get("partitionsPendingRevocation"))
        if name.endswith("TargetAssignmentMember"):
            row["assigned_partitions"] = by_id(v.get("topicPartitions"))
        if name.endswith("MemberMetadata"):
            classic = v.get("classicMemberMetadata")
            row.update(instance_id=v.get("instanceId"), rack_id=v.get("rackId"), client_id=v.get("clientId"),
                       client_host=v.get("clientHost"), rebalance_timeout_ms=v.get("rebalanceTimeoutMs"),
                       subscribed_topics=v.get("subscribedTopicNames"),
                       subscribed_topic_regex=v.get("subscribedTopicRegex"), server_assignor=v.get("serverAssignor"),
                       session_timeout_ms=classic["sessionTimeoutMs"] if classic else None)
    return rows


def frame(spark, rows: list[dict]):
    return spark.createDataFrame([tuple(r.get(c) for c in COLUMNS) for r in rows], GROUPS_SCHEMA)


def bundle_rows(root: Path, names, src: Path | None = None) -> list[dict]:
    rows = []
    for seg in segments(root, is_offsets):
        dump = dump_of(src or root, (src or root) / seg.relative_to(root))
        rows += rows_from_dump(list(dumped_records(dump)), node_of(seg), str(seg), topic_partition(seg)[1], names)
    return rows


BUNDLES = scenario_params("consumer_lag", "mm2", without="isr")


@pytest.fixture(scope="module", params=BUNDLES, ids=[f"{s}-{v}" for s, v in BUNDLES])
def real(request, spark, kafka_bundle):
    root = Path(kafka_bundle(*request.param)).resolve()
    return root, workbench.load(workbench.open_bundle(root), spark)


def test_groups_equal_the_dump_tool_on_every_scenario_bundle_holding_it(spark, real, names):
    root, tables = real
    want = bundle_rows(root, names)
    assertDataFrameEqual(tables.groups, frame(spark, want))
    assert tables.problems_of("groups").count() == 0
    if segments(root, is_offsets):
        assert any(r.get("members") for r in want if r["record_kind"] == "GroupMetadata")


def test_every_group_record_type_against_kafka(spark, kafka, names, tmp_path):
    seg = write_segment(tmp_path.resolve(), 1, "__consumer_offsets-7", coordinator_batches(str(kafka.lib)))
    want = rows_from_dump(list(dumped_records(kafka_dump(kafka, seg, "--offsets-decoder"))), 1, str(seg), 7, names)
    assert {r["record_kind"] for r in want} == set(names.values()) - {"OffsetCommit", "LegacyOffsetCommit"}
    assert {r["deleted"] for r in want} == {True, False}
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    assertDataFrameEqual(tables.groups, frame(spark, want))
    classic = tables.groups.where("`group` = 'classic' and not deleted").first()
    assert [m.assigned_partitions for m in classic.members] == [[(None, "orders", [0, 2])], None]
    # the connect group's opaque blobs are kept in `fields` only and are no problem; the consumer
    # group's subscription that does not decode (Kafka prints it as base64) is one
    [junk] = [r for r in want if r["group"] == "junk"]
    assert junk["members"][0][6] is None and '"subscription":"AAdqdW5r"' in junk["fields"]
    assertDataFrameEqual(tables.problems_of("groups").select("path", "position", "kind"), spark.createDataFrame(
        [(str(seg), junk["batch_position"], "decode_error")], "path string, position long, kind string"))


def test_unknown_record_types_and_unreadable_keys(spark, tmp_path):
    """A record type of a newer Kafka is a row of its own; a key naming no type is a problem of both tables."""
    from workbench.formats.coordinator import encode_offsets_record

    good = encode_offsets_record(2, {"group": "g"}, None)
    records = [good, (b"\x00\x63\x00\x01g", b"\x00\x00\x01"), (b"\x07", None), good]
    seg = write_segment(tmp_path.resolve(), 3, "__consumer_offsets-0", [
        encode_batch([Record(i, TS + i, k, v, [])], base_offset=i) for i, (k, v) in enumerate(records)])
    positions = [b.position for b in read_batches(open(seg, "rb"), str(seg))]
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    got = tables.groups.select("offset", "record_kind", "record_type", "deleted", "group", "error")
    assertDataFrameEqual(got.drop("error"), spark.createDataFrame(
        [(0, "GroupMetadata", 2, True, "g"), (1, "Unknown", 99, False, None), (3, "GroupMetadata", 2, True, "g")],
        "offset long, record_kind string, record_type int, deleted boolean, group string"))
    assert [r.offset for r in got.where("error is not null").collect()] == [1]
    assert tables.offsets.count() == 0
    want = spark.createDataFrame([(positions[1], "decode_error"), (positions[2], "decode_error")],
                                 "position long, kind string")
    assertDataFrameEqual(tables.problems_of("groups").select("position", "kind"), want)
    assertDataFrameEqual(tables.problems_of("offsets").select("position", "kind"), want.where("position != "
                                                                                              f"{positions[1]}"))
    assertDataFrameEqual(tables.problems.select("position", "kind"), want)  # the shared one once


def test_damaged_copy_keeps_every_readable_group_record(spark, kafka_bundle, names, tmp_path):
    src = Path(kafka_bundle("consumer_lag")).resolve()
    root = copy_nodes(src, tmp_path / "bundle").resolve()
    intact = bundle_rows(root, names, src)
    rich = [r for r in intact if r["record_kind"] == "GroupMetadata" and r.get("members")]
    victim, cut = rich[0], rich[-1]
    assert (victim["path"], victim["offset"]) != (cut["path"], cut["offset"])
    for target, how in ((victim, "value"), (cut, "truncate")):
        seg = Path(target["path"])
        data = bytearray(seg.read_bytes())
        if how == "value":
            at = first_value_position(data, target["batch_position"])
            data[at:at + 2] = b"\x7f\x7f"  # the value version: unknown
        else:
            del data[target["batch_position"] + 100:]
        seg.write_bytes(bytes(data))
    cut_path = cut["path"]
    readable = {b.position for b in read_batches(open(cut_path, "rb"), cut_path)}
    want = []
    for r in intact:
        if r["path"] == cut_path and r["batch_position"] >= cut["batch_position"]:
            continue
        if (r["path"], r["offset"]) == (victim["path"], victim["offset"]):
            r = {k: r[k] for k in ("node_id", "path", "offsets_partition", "batch_position", "offset", "timestamp",
                                   "record_kind", "record_type", "deleted", "group", "member_id")}
            r["value_version"] = 0x7F7F
        want.append(r)
    assert cut["batch_position"] not in readable
    tables = workbench.load(workbench.open_bundle(root), spark)
    assertDataFrameEqual(tables.groups.drop("error"), frame(spark, want).drop("error"))
    assert [r.offset for r in tables.groups.where("error is not null").collect()] == [victim["offset"]]
    problems = tables.problems_of("groups").select("path", "position", "kind")
    assertDataFrameEqual(problems, spark.createDataFrame(
        [(victim["path"], victim["batch_position"], "crc_mismatch"),
         (victim["path"], victim["batch_position"], "decode_error"),
         (cut_path, cut["batch_position"], "truncated")], "path string, position long, kind string"))
