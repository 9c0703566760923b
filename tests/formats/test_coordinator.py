"""Tests of coordinator records (workbench.formats.coordinator), reference §6."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.errors import ConfigError, CorruptDataError
from workbench.formats.coordinator import (
    OFFSETS_RECORD_TYPES,
    SHARE_STATE_RECORD_TYPES,
    TRANSACTION_RECORD_TYPES,
    decode_consumer_assignment,
    decode_consumer_subscription,
    decode_offsets_record,
    decode_share_state_record,
    decode_transaction_record,
    encode_consumer_assignment,
    encode_consumer_subscription,
    encode_offsets_record,
    encode_share_state_record,
    encode_transaction_record,
    expand_group_metadata,
    offsets_dump_key,
    offsets_dump_payload,
)
from workbench.formats.messages import Field, VersionRange, field_default

U1 = bytes(range(16))
U1_TEXT = "AAECAwQFBgcICQoLDA0ODw"


def s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


OFFSET_KEY = i16(1) + s16("g1") + s16("orders") + i32(0)


def test_offset_commit_v3_known_bytes_and_dump_json():
    value = i16(3) + i64(42) + i32(0) + s16("") + i64(1718000000000)
    rec = decode_offsets_record(OFFSET_KEY, value)
    assert rec.error is None
    assert (rec.record_type, rec.name, rec.key_name, rec.value_name) == (
        1,
        "OffsetCommit",
        "OffsetCommitKey",
        "OffsetCommitValue",
    )
    assert rec.key == {"group": "g1", "topic": "orders", "partition": 0}
    assert rec.value_version == 3 and not rec.tombstone
    assert rec.value == {
        "offset": 42,
        "leaderEpoch": 0,
        "metadata": "",
        "commitTimestamp": 1718000000000,
        "expireTimestamp": -1,
        "topicId": "AAAAAAAAAAAAAAAAAAAAAA",
    }
    assert offsets_dump_key(rec) == '{"type":"1","data":{"group":"g1","topic":"orders","partition":0}}'
    assert (
        offsets_dump_payload(rec)
        == '{"version":"3","data":{"offset":42,"leaderEpoch":0,"metadata":"","commitTimestamp":1718000000000}}'
    )
    assert encode_offsets_record(1, rec.key, rec.value) == (OFFSET_KEY, value)


def test_offset_commit_v0_v1_v2_v4():
    v0 = i16(0) + i64(5) + s16("m") + i64(100)
    rec = decode_offsets_record(OFFSET_KEY, v0)
    assert rec.value == {
        "offset": 5,
        "leaderEpoch": -1,
        "metadata": "m",
        "commitTimestamp": 100,
        "expireTimestamp": -1,
        "topicId": "AAAAAAAAAAAAAAAAAAAAAA",
    }
    v1 = i16(1) + i64(5) + s16("m") + i64(100) + i64(200)
    assert decode_offsets_record(OFFSET_KEY, v1).value["expireTimestamp"] == 200
    assert offsets_dump_payload(decode_offsets_record(OFFSET_KEY, v1)) == (
        '{"version":"1","data":{"offset":5,"metadata":"m","commitTimestamp":100,"expireTimestamp":200}}'
    )
    v2 = i16(2) + i64(5) + s16("m") + i64(100)
    assert decode_offsets_record(OFFSET_KEY, v2).error is None
    v4 = i16(4) + i64(5) + i32(3) + b"\x02m" + i64(100) + b"\x01\x09\x01\x00"  # flexible, unknown tag 9
    rec = decode_offsets_record(OFFSET_KEY, v4)
    assert rec.error is None and rec.value["leaderEpoch"] == 3 and rec.unknown_tags == {9: b"\x00"}
    assert encode_offsets_record("OffsetCommit", rec.key, rec.value, 4, rec.unknown_tags)[1] == v4


def test_legacy_key_type_0():
    rec = decode_offsets_record(i16(0) + s16("g") + s16("t") + i32(2), i16(0) + i64(1) + s16("") + i64(2))
    assert rec.name == "LegacyOffsetCommit" and rec.key == {"group": "g", "topic": "t", "partition": 2}
    assert (
        rec.value == {"offset": 1, "metadata": "", "commitTimestamp": 2} and rec.value_name == "LegacyOffsetCommitValue"
    )
    assert (
        "unsupported version 1" in decode_offsets_record(i16(0) + s16("g") + s16("t") + i32(2), i16(1) + i64(1)).error
    )


def test_tombstones():
    rec = decode_offsets_record(OFFSET_KEY, None)
    assert rec.tombstone and rec.value is None and rec.error is None and rec.value_name is None
    assert offsets_dump_payload(rec) == "<DELETE>"
    assert encode_offsets_record("OffsetCommit", rec.key, None) == (OFFSET_KEY, None)
    grp = decode_offsets_record(i16(2) + s16("g1"), None)
    assert grp.name == "GroupMetadata" and grp.key == {"group": "g1"} and grp.tombstone


def test_group_metadata_v3_with_consumer_protocol():
    subscription = i16(1) + i32(1) + s16("orders") + i32(-1) + i32(1) + s16("orders") + i32(1) + i32(0)
    assignment = i16(0) + i32(1) + s16("orders") + i32(2) + i32(0) + i32(1) + i32(-1)
    value = (
        i16(3)
        + s16("consumer")
        + i32(5)
        + s16("range")
        + s16("m1")
        + i64(1718000000000)
        + i32(1)
        + s16("m1")
        + i16(-1)
        + s16("client-1")
        + s16("/127.0.0.1")
        + i32(300000)
        + i32(45000)
        + i32(len(subscription))
        + subscription
        + i32(len(assignment))
        + assignment
    )
    rec = decode_offsets_record(i16(2) + s16("g1"), value)
    assert rec.error is None and rec.value_version == 3
    v = rec.value
    assert (v["protocolType"], v["generation"], v["protocol"], v["leader"], v["currentStateTimestamp"]) == (
        "consumer",
        5,
        "range",
        "m1",
        1718000000000,
    )
    member = v["members"][0]
    assert member["memberId"] == "m1" and member["groupInstanceId"] is None
    assert (member["clientId"], member["clientHost"], member["rebalanceTimeout"], member["sessionTimeout"]) == (
        "client-1",
        "/127.0.0.1",
        300000,
        45000,
    )
    assert decode_consumer_subscription(member["subscription"]) == (
        1,
        {
            "topics": ["orders"],
            "userData": None,
            "ownedPartitions": [{"topic": "orders", "partitions": [0]}],
            "generationId": -1,
            "rackId": None,
        },
    )
    assert decode_consumer_assignment(member["assignment"]) == (
        0,
        {"assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}], "userData": None},
    )
    expanded = expand_group_metadata(v)
    assert expanded["members"][0]["assignment"]["assignedPartitions"][0]["partitions"] == [0, 1]
    assert v["members"][0]["assignment"] == assignment  # the original is not modified
    assert encode_offsets_record("GroupMetadata", rec.key, v)[1] == value
    payload = json.loads(offsets_dump_payload(rec))
    assert list(payload["data"]) == [
        "protocolType",
        "generation",
        "protocol",
        "leader",
        "currentStateTimestamp",
        "members",
    ]


def test_group_metadata_v0_empty_group():
    value = i16(0) + s16("consumer") + i32(0) + i16(-1) + i16(-1) + i32(0)
    rec = decode_offsets_record(i16(2) + s16("g"), value)
    assert rec.error is None
    assert rec.value == {
        "protocolType": "consumer",
        "generation": 0,
        "protocol": None,
        "leader": None,
        "currentStateTimestamp": -1,
        "members": [],
    }


@pytest.mark.parametrize("version", [0, 1, 2, 3, 7])
def test_consumer_subscription_versions(version):
    fields = {
        "topics": ["a", "b"],
        "userData": b"\x01",
        "ownedPartitions": [{"topic": "a", "partitions": [3]}],
        "generationId": 9,
        "rackId": "r1",
    }
    known = min(version, 3)
    blob = encode_consumer_subscription(fields, known)
    if version > 3:  # a newer version is read with the newest known layout
        blob = i16(version) + blob[2:] + b"\x00\x00"
    got_version, got = decode_consumer_subscription(blob)
    assert got_version == version
    assert got["topics"] == ["a", "b"] and got["userData"] == b"\x01"
    assert got["ownedPartitions"] == (fields["ownedPartitions"] if known >= 1 else [])
    assert got["generationId"] == (9 if known >= 2 else -1)
    assert got["rackId"] == ("r1" if known >= 3 else None)


def test_consumer_protocol_errors():
    with pytest.raises(CorruptDataError):
        decode_consumer_subscription(b"\x00")
    with pytest.raises(CorruptDataError):
        decode_consumer_assignment(i16(0) + i32(5))
    with pytest.raises(CorruptDataError):
        decode_consumer_assignment(encode_consumer_assignment({}, 0) + b"x")
    # undecodable blobs stay bytes in the expansion
    v = {"protocolType": "consumer", "members": [{"subscription": b"\x00", "assignment": b""}]}
    assert expand_group_metadata(v)["members"][0]["subscription"] == b"\x00"
    assert (
        expand_group_metadata({"protocolType": "connect", "members": [{"subscription": b"\x00\x01"}]})["members"][0][
            "subscription"
        ]
        == b"\x00\x01"
    )


def test_consumer_group_metadata_known_bytes_with_newer_tags():
    key = i16(3) + s16("cg")
    value = i16(0) + i32(4) + b"\x02" + b"\x00\x08" + i64(77) + b"\x05\x01\x00"  # MetadataHash tag + unknown tag 5
    rec = decode_offsets_record(key, value)
    assert rec.error is None and rec.name == "ConsumerGroupMetadata"
    assert rec.key == {"groupId": "cg"}
    assert rec.value == {"epoch": 4, "metadataHash": 77}
    assert rec.unknown_tags == {5: b"\x00"}
    assert offsets_dump_payload(rec) == '{"version":"0","data":{"epoch":4,"metadataHash":77}}'
    assert encode_offsets_record(3, rec.key, rec.value, 0, rec.unknown_tags) == (key, value)


def test_consumer_group_member_metadata_with_classic_tag():
    value_fields = {
        "instanceId": None,
        "rackId": "r",
        "clientId": "c",
        "clientHost": "/h",
        "subscribedTopicNames": ["t"],
        "subscribedTopicRegex": None,
        "rebalanceTimeoutMs": 1000,
        "serverAssignor": "uniform",
        "classicMemberMetadata": {
            "sessionTimeoutMs": 45000,
            "supportedProtocols": [{"name": "range", "metadata": b"\x00\x01"}],
        },
    }
    k, v = encode_offsets_record("ConsumerGroupMemberMetadata", {"groupId": "g", "memberId": "m"}, value_fields)
    assert k == i16(5) + s16("g") + s16("m")
    classic = i32(45000) + b"\x02" + b"\x06range" + b"\x03\x00\x01" + b"\x00" + b"\x00"
    expected = (
        i16(0)
        + b"\x00"
        + b"\x02r"
        + b"\x02c"
        + b"\x03/h"
        + b"\x02\x02t"
        + b"\x00"
        + i32(1000)
        + b"\x08uniform"
        + b"\x01\x00"
        + bytes([1 + len(classic)])
        + b"\x01"
        + classic
    )
    assert v == expected
    assert decode_offsets_record(k, v).value == value_fields


def test_transaction_log_v0_and_v1():
    key = i16(0) + s16("tx-1")
    v0 = (
        i16(0)
        + i64(1000)
        + i16(2)
        + i32(60000)
        + b"\x01"
        + i32(1)
        + s16("orders")
        + i32(2)
        + i32(0)
        + i32(1)
        + i64(1718000000100)
        + i64(1718000000000)
    )
    rec = decode_transaction_record(key, v0)
    assert rec.error is None and rec.key == {"transactionalId": "tx-1"}
    assert rec.value == {
        "producerId": 1000,
        "previousProducerId": -1,
        "nextProducerId": -1,
        "producerEpoch": 2,
        "transactionTimeoutMs": 60000,
        "transactionStatus": 1,
        "transactionPartitions": [{"topic": "orders", "partitionIds": [0, 1]}],
        "transactionLastUpdateTimestampMs": 1718000000100,
        "transactionStartTimestampMs": 1718000000000,
        "clientTransactionVersion": 0,
        "nextProducerEpoch": -1,
    }
    assert encode_transaction_record(rec.key, rec.value, 0) == (key, v0)
    assert offsets_dump_key(rec) == '{"type":"0","data":{"transactionalId":"tx-1"}}'
    v1 = (
        i16(1)
        + i64(1000)
        + i16(2)
        + i32(60000)
        + b"\x04"
        + b"\x00"
        + i64(5)
        + i64(6)
        + b"\x02"
        + b"\x00\x08"
        + i64(999)
        + b"\x02\x02"
        + i16(2)
    )
    rec = decode_transaction_record(key, v1)
    assert rec.error is None
    assert rec.value["transactionPartitions"] is None and rec.value["previousProducerId"] == 999
    assert rec.value["nextProducerId"] == -1 and rec.value["clientTransactionVersion"] == 2
    assert encode_transaction_record(rec.key, rec.value, 1) == (key, v1)
    assert offsets_dump_payload(rec) == (
        '{"version":"1","data":{"producerId":1000,"previousProducerId":999,"producerEpoch":2,"transactionTimeoutMs":60000,'
        '"transactionStatus":4,"transactionPartitions":null,"transactionLastUpdateTimestampMs":5,'
        '"transactionStartTimestampMs":6,"clientTransactionVersion":2}}'
    )


def test_share_state_records():
    k, v = encode_share_state_record(
        "ShareSnapshot",
        {"groupId": "sg", "topicId": U1_TEXT, "partition": 1},
        {
            "snapshotEpoch": 1,
            "stateEpoch": 2,
            "leaderEpoch": 3,
            "startOffset": 4,
            "createTimestamp": 5,
            "writeTimestamp": 6,
            "stateBatches": [{"firstOffset": 4, "lastOffset": 9, "deliveryState": 2, "deliveryCount": 1}],
        },
    )
    assert k == i16(0) + s16("sg") + U1 + i32(1)
    assert v == (
        i16(0)
        + i32(1)
        + i32(2)
        + i32(3)
        + i64(4)
        + i64(5)
        + i64(6)
        + b"\x02"
        + i64(4)
        + i64(9)
        + b"\x02"
        + i16(1)
        + b"\x00"
        + b"\x00"
    )
    rec = decode_share_state_record(k, v)
    assert rec.error is None and rec.value["stateBatches"][0]["lastOffset"] == 9
    assert rec.value["deliveryCompleteCount"] == -1
    upd_key = i16(1) + s16("sg") + U1 + i32(1)
    upd = i16(0) + i32(1) + i32(3) + i64(10) + b"\x01" + b"\x01\x00\x04" + i32(7)  # DeliveryCompleteCount tag
    rec = decode_share_state_record(upd_key, upd)
    assert rec.error is None and rec.name == "ShareUpdate" and rec.value["startOffset"] == 10
    assert rec.value["deliveryCompleteCount"] == 7


@pytest.mark.parametrize(
    "key, value, message",
    [
        (None, b"", "without a key"),
        (b"\x00", None, "no record type"),
        (i16(99) + s16("g"), None, "unknown record type 99"),
        (i16(1) + s16("g"), None, "key at byte"),
        (OFFSET_KEY, b"\x00", "no version"),
        (OFFSET_KEY, i16(9) + i64(1), "unsupported version 9"),
        (OFFSET_KEY, i16(3) + i64(1), "value at byte"),
        (OFFSET_KEY + b"zz", None, "garbage after OffsetCommitKey"),
        (OFFSET_KEY, i16(0) + i64(5) + s16("m") + i64(100) + b"!", "garbage after OffsetCommitValue v0"),
    ],
)
def test_bad_records(key, value, message):
    rec = decode_offsets_record(key, value)
    assert rec.error is not None and message in rec.error


def test_encode_errors():
    with pytest.raises(ConfigError):
        encode_offsets_record("Nope", {}, None)
    with pytest.raises(ConfigError):
        encode_transaction_record({"transactionalId": "t"}, {"previousProducerId": 5}, 0)  # tagged from v1 only
    # ignorable fields absent in the version are dropped silently, as Kafka does
    k, v = encode_offsets_record(
        1, {"group": "g", "topic": "t", "partition": 0}, {"offset": 1, "expireTimestamp": 5}, 3
    )
    assert decode_offsets_record(k, v).value["expireTimestamp"] == -1


# ---------------------------------------------------------------------------------------------
# round trips for every record type and value version


def _sample(f: Field, version: int, seed: int) -> object:
    if f.is_array:
        elem = Field(f.name, f.element_type, fields=f.fields)
        return [_sample(elem, version, seed + i) for i in range(2)]
    t, default = f.type, field_default(f)
    if t == "bool":
        return not default
    if t in ("int8", "int16", "int32", "int64"):
        v = {"int8": 0x55, "int16": 0x1234, "int32": 0x12345678, "int64": 0x123456789ABCDEF}[t] - seed
        return -v if v == default else v
    if t in ("uint16", "uint32"):
        return 9092 + seed
    if t == "string":
        return f"{f.name}-{seed}"
    if t == "bytes":
        return bytes([seed % 256, 0xFF])
    if t == "uuid":
        return U1_TEXT
    return {
        s.json_name: _sample(s, version, seed + 1) for s in f.fields if VersionRange.parse(s.versions).contains(version)
    }


def _with_defaults(fields, values: dict, version: int) -> dict:
    out = {}
    for f in fields:
        if f.json_name not in values or not VersionRange.parse(f.versions).contains(version):
            out[f.json_name] = field_default(f)
            continue
        v = values[f.json_name]
        if f.is_struct and isinstance(v, list):
            v = [_with_defaults(f.fields, e, version) for e in v]
        elif f.is_struct and isinstance(v, dict):
            v = _with_defaults(f.fields, v, version)
        out[f.json_name] = v
    return out


def _cases():
    for label, registry in (
        ("offsets", OFFSETS_RECORD_TYPES),
        ("txn", TRANSACTION_RECORD_TYPES),
        ("share", SHARE_STATE_RECORD_TYPES),
    ):
        for rt in registry.values():
            lo, hi = rt.value.valid_versions
            for version in range(lo, hi + 1):
                yield pytest.param(label, rt, version, id=f"{rt.name}-v{version}")


_DECODERS = {"offsets": decode_offsets_record, "txn": decode_transaction_record, "share": decode_share_state_record}


@pytest.mark.parametrize("label, rt, version", list(_cases()))
def test_round_trip_every_record_type(label, rt, version):
    from workbench.formats.coordinator import _encode_coordinator

    registry = {"offsets": OFFSETS_RECORD_TYPES, "txn": TRANSACTION_RECORD_TYPES, "share": SHARE_STATE_RECORD_TYPES}[
        label
    ]
    kv = rt.key.valid_versions[0]
    key = {f.json_name: _sample(f, kv, i) for i, f in enumerate(rt.key.fields)}
    value = {
        f.json_name: _sample(f, version, i)
        for i, f in enumerate(rt.value.fields)
        if VersionRange.parse(f.versions).contains(version)
    }
    k, v = _encode_coordinator(registry, rt.record_type, key, value, version, None)
    rec = _DECODERS[label](k, v)
    assert rec.error is None, rec.error
    assert rec.key == key and rec.value_version == version
    assert rec.value == _with_defaults(rt.value.fields, value, version)
    assert _encode_coordinator(registry, rt.record_type, rec.key, rec.value, version, None) == (k, v)
    if label != "share":
        assert json.loads(offsets_dump_payload(rec))["version"] == str(version)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(OFFSETS_RECORD_TYPES)), st.binary(max_size=40), st.one_of(st.none(), st.binary(max_size=80))
)
def test_random_bytes_never_raise(record_type, key_body, value):
    rec = decode_offsets_record(i16(record_type) + key_body, value)
    offsets_dump_key(rec)
    offsets_dump_payload(rec)
    decode_transaction_record(key_body, value)


# ---------------------------------------------------------------------------------------------
# Kafka's own dump tool decodes what the encoder writes (needs fetched Kafka 4.x jars)

import re  # noqa: E402
from pathlib import Path  # noqa: E402

from peer.kafka import VERSIONS  # noqa: E402
from tests.kafka_bundles import bundle_params, dump_entries  # noqa: E402

_RECORD_LINE = re.compile(r"^\| offset: (\d+) .*? headerKeys: \[[^\]]*\] (.*)$")


def _release_schemas(lib: Path | str) -> dict:
    from tests.kafka_schemas import schema_files
    from workbench.formats.messages import schema_from_kafka_json

    found = {}
    for name, (where, text) in schema_files(sorted(Path(lib).glob("*.jar"))).items():
        if "!common/message/" not in where:
            continue
        try:
            found[name] = schema_from_kafka_json(text)
        except ConfigError:
            continue
    return found


def _prune(values: dict, ours, theirs) -> dict:
    """Keep only the fields (recursively) that the other layout also has."""
    names = {f.name: f for f in theirs}
    out = {}
    for f in ours:
        if f.name not in names or f.json_name not in values:
            continue
        v = values[f.json_name]
        if f.is_struct and isinstance(v, list):
            v = [_prune(e, f.fields, names[f.name].fields) for e in v]
        elif f.is_struct and isinstance(v, dict):
            v = _prune(v, f.fields, names[f.name].fields)
        out[f.json_name] = v
    return out


def _dump_lines(kafka, records, decoder: str, tmp_path, name: str) -> dict[int, str]:
    from workbench.formats.batch import Record, encode_batch

    directory = tmp_path / name
    directory.mkdir()
    seg = directory / "00000000000000000000.log"
    seg.write_bytes(
        encode_batch([Record(i, 1_700_000_000_000, k, v, []) for i, (k, v) in enumerate(records)], base_offset=0)
    )
    result = kafka.run_tool("dump-log", [decoder, "--files", str(seg)], timeout=180, heap="256m")
    lines = {}
    for line in result.stdout.splitlines():
        match = _RECORD_LINE.match(line)
        if match:
            lines[int(match.group(1))] = match.group(2)
    assert len(lines) == len(records), result.stdout[-2000:]
    return lines


@pytest.mark.kafka
@pytest.mark.parametrize("kafka_version", [v for v in VERSIONS if int(v.split(".")[0]) >= 4])
def test_kafka_dump_tool_decodes_every_encoded_record(tmp_path, kafka_version, kafka_dist):
    from workbench.formats.coordinator import _encode_coordinator

    kafka = kafka_dist(kafka_version)
    known = _release_schemas(kafka.lib)
    cases = {
        "--offsets-decoder": (OFFSETS_RECORD_TYPES, decode_offsets_record),
        "--transaction-log-decoder": (TRANSACTION_RECORD_TYPES, decode_transaction_record),
        "--share-group-state-decoder": (SHARE_STATE_RECORD_TYPES, decode_share_state_record),
    }
    checked = 0
    for decoder, (registry, decode_fn) in cases.items():
        records = []
        for rt in registry.values():
            if rt.key.name not in known or rt.value.name not in known:
                continue
            kv = rt.key.valid_versions[0]
            key = {f.json_name: _sample(f, kv, i) for i, f in enumerate(rt.key.fields)}
            lo, hi = rt.value.valid_versions
            theirs = known[rt.value.name]
            for version in range(lo, min(hi, theirs.valid_versions[1]) + 1):
                value = {
                    f.json_name: _sample(f, version, i)
                    for i, f in enumerate(rt.value.fields)
                    if VersionRange.parse(f.versions).contains(version)
                }
                value = _prune(value, rt.value.fields, theirs.fields)
                records.append(_encode_coordinator(registry, rt.record_type, key, value, version, None))
            records.append(_encode_coordinator(registry, rt.record_type, key, None, None, None))  # tombstone
        if decoder == "--offsets-decoder":
            member = {
                "memberId": "m1",
                "groupInstanceId": "i1",
                "clientId": "c",
                "clientHost": "/h",
                "rebalanceTimeout": 300,
                "sessionTimeout": 45,
                "subscription": encode_consumer_subscription(
                    {
                        "topics": ["t"],
                        "ownedPartitions": [{"topic": "t", "partitions": [0]}],
                        "generationId": 4,
                        "rackId": "r",
                    },
                    3,
                ),
                "assignment": encode_consumer_assignment(
                    {"assignedPartitions": [{"topic": "t", "partitions": [0, 1]}]}, 1
                ),
            }
            records.append(
                encode_offsets_record(
                    2,
                    {"group": "g"},
                    {
                        "protocolType": "consumer",
                        "generation": 5,
                        "protocol": "range",
                        "leader": "m1",
                        "members": [member],
                    },
                )
            )
            # an empty assignment stays "", an undecodable blob stays base64
            records.append(
                encode_offsets_record(
                    2,
                    {"group": "g"},
                    {
                        "protocolType": "consumer",
                        "members": [
                            {
                                "memberId": "m",
                                "subscription": encode_consumer_subscription({"topics": ["t"]}, 0),
                                "assignment": b"",
                            },
                            {"memberId": "n", "subscription": b"\x00\x07junk", "assignment": b"\x00"},
                        ],
                    },
                )
            )
        lines = _dump_lines(kafka, records, decoder, tmp_path, decoder.strip("-"))
        mismatches = []
        for offset, (k, v) in enumerate(records):
            rec = decode_fn(k, v)
            assert rec.error is None, rec.error
            ours = f"key: {offsets_dump_key(rec)} payload: {offsets_dump_payload(rec)}"
            if lines[offset] != ours:
                mismatches.append(f"offset {offset}:\n  kafka: {lines[offset]}\n  ours:  {ours}")
            checked += 1
        assert not mismatches, "\n".join(mismatches[:8])
    assert checked >= 40


# ---------------------------------------------------------------------------------------------
# real __consumer_offsets / __transaction_state segments against kafka-dump-log output
# (every scenario bundle of every pinned release; consumer_lag runs a transactional producer)

_COORDINATOR_TOPICS = {"__consumer_offsets": decode_offsets_record, "__transaction_state": decode_transaction_record}
#: Kafka's TransactionState ids (org.apache.kafka.coordinator.transaction.TransactionState)
_KAFKA_TXN_STATES = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
                     "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7}
#: The Scala text of the transaction-log decoder (Kafka <= 4.0)
_TXN_TEXT = re.compile(
    r"^key: transaction_metadata::transactionalId=(?P<id>.*?) payload: (?:<DELETE>|producerId:(?P<pid>-?\d+),"
    r"producerEpoch:(?P<epoch>-?\d+),state=(?P<state>\w+),partitions=\[(?P<parts>[^\]]*)\],"
    r"txnLastUpdateTimestamp=(?P<updated>-?\d+),txnTimeoutMs=(?P<timeout>-?\d+))$"
)
_MARKER = re.compile(r"^endTxnMarker: (COMMIT|ABORT) coordinatorEpoch: (\d+)$")


def _txn_text_fields(line: str) -> dict:
    """The fields of one line of Kafka's Scala transaction-log text."""
    m = _TXN_TEXT.match(line)
    assert m is not None, f"not a transaction-log text line: {line[:200]}"
    if m["pid"] is None:
        return {"transactionalId": m["id"], "tombstone": True}
    parts = {tuple(p.rsplit("-", 1)) for p in m["parts"].split(",") if p}
    return {"transactionalId": m["id"], "producerId": int(m["pid"]), "producerEpoch": int(m["epoch"]),
            "status": _KAFKA_TXN_STATES[m["state"]], "partitions": {(t, int(p)) for t, p in parts},
            "updated": int(m["updated"]), "timeout": int(m["timeout"])}


def _our_txn_fields(rec) -> dict:
    if rec.tombstone:
        return {"transactionalId": rec.key["transactionalId"], "tombstone": True}
    v = rec.value
    parts = {(tp["topic"], p) for tp in v["transactionPartitions"] or [] for p in tp["partitionIds"]}
    if v["transactionStatus"] == 0:
        parts = set()  # Kafka's text lists no partitions for an Empty transaction
    return {"transactionalId": rec.key["transactionalId"], "producerId": v["producerId"],
            "producerEpoch": v["producerEpoch"], "status": v["transactionStatus"], "partitions": parts,
            "updated": v["transactionLastUpdateTimestampMs"], "timeout": v["transactionTimeoutMs"]}


def _compare_coordinator_dump(binary: Path, dump: Path, counts: dict) -> None:
    """Every record line of Kafka's dump against our decoding of the same record."""
    from workbench.formats.batch import read_batches
    from workbench.formats.control import decode_control_record, dump_control_text
    from workbench.formats.problems import ProblemLog

    expected: dict[int, str] = {}
    for line in dump.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _RECORD_LINE.match(line)
        if match:
            expected[int(match.group(1))] = match.group(2)
    topic = binary.parent.name.rsplit("-", 1)[0]
    decode_fn = _COORDINATOR_TOPICS[topic]
    log = ProblemLog(str(binary))
    mismatches, seen = [], 0
    with open(binary, "rb") as fh:
        for batch in read_batches(fh, str(binary), problems=log):
            for rec in batch.records(log):
                want = expected[rec.offset]
                seen += 1
                if batch.is_control:
                    got = dump_control_text(decode_control_record(rec.key, rec.value))
                    marker = _MARKER.match(want)
                    counts[f"{marker[1] if marker else 'control'} markers"] += 1
                    if got != want:
                        mismatches.append(f"offset {rec.offset}:\n  kafka: {want}\n  ours:  {got}")
                    continue
                decoded = decode_fn(rec.key, rec.value)
                assert decoded.error is None, f"offset {rec.offset}: {decoded.error}"
                counts[topic] += 1
                if want.startswith("key: {"):  # the JSON form (offsets 3.8+, transaction log 4.1+)
                    got = f"key: {offsets_dump_key(decoded)} payload: {offsets_dump_payload(decoded)}"
                    if got != want:
                        mismatches.append(f"offset {rec.offset}:\n  kafka: {want}\n  ours:  {got}")
                else:  # the Scala text of the transaction log, compared field by field
                    theirs, ours = _txn_text_fields(want), _our_txn_fields(decoded)
                    if theirs != ours:
                        mismatches.append(f"offset {rec.offset}:\n  kafka: {theirs}\n  ours:  {ours}")
    assert log.problems == [], log.problems[:3]
    assert not mismatches, "\n".join(mismatches[:6])
    assert seen == len(expected), f"compared {seen} of {len(expected)} dumped records"


@pytest.mark.kafka
@pytest.mark.parametrize("version, name", bundle_params())
def test_real_coordinator_segments_match_kafka_dump(kafka_bundle, version, name):
    from collections import Counter

    bundle = Path(kafka_bundle(name, version))
    entries = [e for e in dump_entries(bundle)
               if Path(e["file"]).parent.name.rsplit("-", 1)[0] in _COORDINATOR_TOPICS and e["file"].endswith(".log")]
    counts: Counter = Counter()
    failures = []
    for e in entries:
        try:
            _compare_coordinator_dump(bundle / e["file"], bundle / e["dump"], counts)
        except AssertionError as exc:
            failures.append(f"{e['file']}: {str(exc)[:800]}")
    assert not failures, f"{len(failures)} of {len(entries)} files:\n" + "\n".join(failures[:6])
    print(f"{version} {name}: {dict(counts)}")
    if name == "consumer_lag":
        # groups commit offsets; the transactional producer commits and aborts, offsets included
        assert counts["__consumer_offsets"] > 100 and counts["__transaction_state"] >= 12 * 3, counts
        assert counts["COMMIT markers"] > 0 and counts["ABORT markers"] > 0, counts
