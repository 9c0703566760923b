"""Tests of KRaft metadata record decoding and encoding (workbench.formats.metadata).

Known-bytes tests assemble record values by hand from reference §3.1/§3.2; JSON tests compare
with literal strings written from the §3.3 rules.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.kafka import VERSIONS
from workbench.errors import ConfigError
from workbench.formats.messages import Field, Schema, VersionRange, field_default
from workbench.formats.metadata import (
    METADATA_SCHEMAS,
    MetadataRecord,
    decode_metadata_record,
    dump_payload,
    encode_metadata_record,
    metadata_json,
    schema_for,
)

U1 = bytes(range(16))
U1_TEXT = "AAECAwQFBgcICQoLDA0ODw"
U2 = bytes(range(16, 32))
U2_TEXT = "EBESExQVFhcYGRobHB0eHw"
U3 = bytes([0xFF] * 16)
U3_TEXT = "_____________________w"


def i32(*values: int) -> bytes:
    return b"".join(struct.pack(">i", v) for v in values)


def cstr(text: str) -> bytes:
    raw = text.encode()
    return bytes([len(raw) + 1]) + raw


# ---------------------------------------------------------------------------------------------
# registry


def _kafka_metadata_files() -> dict[str, tuple[str, str]]:
    """Schema file of every metadata record: the newest pinned release's, else the release
    tests/kafka_schemas.py names for it."""
    from tests.kafka_schemas import FOLLOWS, NEWEST_PIN, pinned_schema_files, release_schema_files

    files = dict(pinned_schema_files(NEWEST_PIN))
    for name, ref in FOLLOWS.items():
        if name not in files and ref.artifact == "kafka-metadata":
            files[name] = release_schema_files(ref.artifact, ref.release)[name]
    return files


@pytest.fixture(scope="module")
def kafka_metadata_files() -> dict[str, tuple[str, str]]:
    return _kafka_metadata_files()


@pytest.mark.kafka
def test_registry_matches_kafka_schema_files(kafka_metadata_files):
    """apiKey, name, MetadataRecordType constant and valid versions of every metadata record type,
    as Kafka's own schema files (``"type": "metadata"``) define them."""
    import json

    from tests.kafka_schemas import snake_upper, strip_comments, versions_of

    expected = {}
    for name, (where, text) in kafka_metadata_files.items():
        data = json.loads(strip_comments(text))
        if "!common/metadata/" in where and data.get("type") == "metadata":
            expected[data["apiKey"]] = (name, snake_upper(name), versions_of(text))
    got = {k: (s.name, s.type_name, s.valid_versions) for k, s in METADATA_SCHEMAS.items()}
    assert got == expected
    assert all(s.is_flexible(0) for s in METADATA_SCHEMAS.values())


def test_schema_lookup():
    assert schema_for(5) is schema_for("PartitionChangeRecord") is schema_for("PARTITION_CHANGE_RECORD")
    with pytest.raises(ConfigError):
        schema_for("NopeRecord")
    with pytest.raises(ConfigError):
        schema_for(13)


# ---------------------------------------------------------------------------------------------
# known bytes


def test_partition_change_v0_with_isr_and_leader_tags():
    value = (
        b"\x01\x05\x00"  # frame version 1, apiKey 5, version 0
        + i32(3)  # PartitionId
        + U1  # TopicId
        + b"\x02"  # two tagged fields
        + b"\x00\x09\x03"
        + i32(1, 2)  # tag 0 Isr, 9 bytes, compact array of 2
        + b"\x01\x04"
        + i32(2)  # tag 1 Leader = 2
    )
    rec = decode_metadata_record(value)
    assert rec.error is None
    assert (rec.api_key, rec.version, rec.name, rec.type_name) == (
        5,
        0,
        "PartitionChangeRecord",
        "PARTITION_CHANGE_RECORD",
    )
    assert list(rec.fields) == [
        "partitionId",
        "topicId",
        "isr",
        "leader",
        "replicas",
        "removingReplicas",
        "addingReplicas",
        "leaderRecoveryState",
        "directories",
        "eligibleLeaderReplicas",
        "lastKnownElr",
    ]
    assert rec.fields["partitionId"] == 3
    assert rec.fields["topicId"] == U1_TEXT
    assert rec.fields["isr"] == [1, 2]
    assert rec.fields["leader"] == 2
    assert (
        rec.fields["replicas"] is None
        and rec.fields["removingReplicas"] is None
        and rec.fields["addingReplicas"] is None
    )
    assert rec.fields["leaderRecoveryState"] == -1
    assert rec.fields["directories"] is None and rec.fields["eligibleLeaderReplicas"] is None
    assert rec.unknown_tags == {} and rec.raw == value
    assert encode_metadata_record(5, 0, rec.fields) == value
    assert metadata_json(rec) == f'{{"partitionId":3,"topicId":"{U1_TEXT}","isr":[1,2],"leader":2}}'
    assert dump_payload(rec) == (
        f'{{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{{"partitionId":3,"topicId":"{U1_TEXT}","isr":[1,2],"leader":2}}}}'
    )


def test_partition_record_v2_with_elr_tags():
    value = (
        b"\x01\x03\x02"
        + i32(0)
        + U1
        + b"\x04"
        + i32(1, 2, 3)  # Replicas
        + b"\x02"
        + i32(1)  # Isr
        + b"\x01"
        + b"\x01"  # RemovingReplicas, AddingReplicas: empty
        + i32(1)  # Leader
        + i32(5)
        + i32(7)  # LeaderEpoch, PartitionEpoch
        + b"\x04"
        + U1
        + U2
        + U3  # Directories
        + b"\x02"
        + b"\x01\x05\x02"
        + i32(2)  # tag 1 EligibleLeaderReplicas [2]
        + b"\x02\x05\x02"
        + i32(3)  # tag 2 LastKnownElr [3]
    )
    rec = decode_metadata_record(value)
    assert rec.error is None
    f = rec.fields
    assert (f["partitionId"], f["topicId"], f["replicas"], f["isr"]) == (0, U1_TEXT, [1, 2, 3], [1])
    assert (f["removingReplicas"], f["addingReplicas"], f["leader"]) == ([], [], 1)
    assert (f["leaderRecoveryState"], f["leaderEpoch"], f["partitionEpoch"]) == (0, 5, 7)
    assert f["directories"] == [U1_TEXT, U2_TEXT, U3_TEXT]
    assert f["eligibleLeaderReplicas"] == [2] and f["lastKnownElr"] == [3]
    assert encode_metadata_record("PartitionRecord", 2, f) == value
    assert metadata_json(rec) == (
        f'{{"partitionId":0,"topicId":"{U1_TEXT}","replicas":[1,2,3],"isr":[1],"removingReplicas":[],'
        f'"addingReplicas":[],"leader":1,"leaderEpoch":5,"partitionEpoch":7,'
        f'"directories":["{U1_TEXT}","{U2_TEXT}","{U3_TEXT}"],"eligibleLeaderReplicas":[2],"lastKnownElr":[3]}}'
    )


def test_partition_record_v0_recovering_tag_in_schema_order():
    fields = {
        "partitionId": 1,
        "topicId": U1_TEXT,
        "replicas": [1],
        "isr": [1],
        "leader": 1,
        "leaderRecoveryState": 1,
        "leaderEpoch": 0,
        "partitionEpoch": 0,
    }
    value = encode_metadata_record("PartitionRecord", 0, fields)
    assert value.endswith(i32(0) + i32(0) + b"\x01\x00\x01\x01")  # tag 0, 1 byte, RECOVERING
    # the tagged field is rendered at its schema position, between leader and leaderEpoch
    assert metadata_json(decode_metadata_record(value)) == (
        f'{{"partitionId":1,"topicId":"{U1_TEXT}","replicas":[1],"isr":[1],"removingReplicas":[],'
        f'"addingReplicas":[],"leader":1,"leaderRecoveryState":1,"leaderEpoch":0,"partitionEpoch":0}}'
    )


def test_register_broker_v3_with_log_dirs_tag():
    value = (
        b"\x01\x00\x03"
        + i32(1)  # BrokerId
        + b"\x00"  # IsMigratingZkBroker (v2+)
        + U1  # IncarnationId
        + struct.pack(">q", 10)  # BrokerEpoch
        + b"\x02"
        + cstr("PLAINTEXT")
        + cstr("localhost")
        + b"\x23\x84"
        + b"\x00\x00"
        + b"\x00"
        + b"\x02"
        + cstr("metadata.version")
        + b"\x00\x01"
        + b"\x00\x15"
        + b"\x00"
        + b"\x00"  # Rack null
        + b"\x01"  # Fenced
        + b"\x00"  # InControlledShutdown (v1+)
        + b"\x01"
        + b"\x00\x21\x03"
        + U2
        + U3  # tag 0 LogDirs: 33 bytes
    )
    rec = decode_metadata_record(value)
    assert rec.error is None and rec.name == "RegisterBrokerRecord"
    f = rec.fields
    assert (f["brokerId"], f["isMigratingZkBroker"], f["incarnationId"], f["brokerEpoch"]) == (1, False, U1_TEXT, 10)
    assert f["endPoints"] == [{"name": "PLAINTEXT", "host": "localhost", "port": 9092, "securityProtocol": 0}]
    assert f["features"] == [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}]
    assert f["rack"] is None and f["fenced"] is True and f["inControlledShutdown"] is False
    assert f["logDirs"] == [U2_TEXT, U3_TEXT]
    assert f["cordonedLogDirs"] is None  # v4 field, absent in v3
    assert encode_metadata_record(0, 3, f) == value
    assert metadata_json(rec) == (
        f'{{"brokerId":1,"isMigratingZkBroker":false,"incarnationId":"{U1_TEXT}","brokerEpoch":10,'
        '"endPoints":[{"name":"PLAINTEXT","host":"localhost","port":9092,"securityProtocol":0}],'
        '"features":[{"name":"metadata.version","minSupportedVersion":1,"maxSupportedVersion":21}],'
        f'"rack":null,"fenced":true,"inControlledShutdown":false,"logDirs":["{U2_TEXT}","{U3_TEXT}"]}}'
    )


def test_register_broker_v0_lacks_later_fields():
    fields = {"brokerId": 2, "incarnationId": U1_TEXT, "brokerEpoch": 3, "rack": "r1", "fenced": False}
    rec = decode_metadata_record(encode_metadata_record(0, 0, fields))
    assert rec.error is None
    assert rec.fields["isMigratingZkBroker"] is False and rec.fields["inControlledShutdown"] is False
    assert rec.fields["logDirs"] == []
    assert metadata_json(rec) == (
        f'{{"brokerId":2,"incarnationId":"{U1_TEXT}","brokerEpoch":3,"endPoints":[],"features":[],'
        '"rack":"r1","fenced":false}'
    )


def test_config_record_with_null_value():
    value = b"\x01\x04\x00" + b"\x02" + cstr("orders") + cstr("retention.ms") + b"\x00" + b"\x00"
    rec = decode_metadata_record(value)
    assert rec.error is None
    assert rec.fields == {"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": None}
    assert encode_metadata_record("CONFIG_RECORD", 0, rec.fields) == value
    assert metadata_json(rec) == '{"resourceType":2,"resourceName":"orders","name":"retention.ms","value":null}'


def test_noop_record():
    rec = decode_metadata_record(b"\x01\x14\x00\x00")
    assert (rec.name, rec.type_name, rec.fields, rec.error) == ("NoOpRecord", "NO_OP_RECORD", {}, None)
    assert metadata_json(rec) == "{}"
    assert dump_payload(rec) == '{"type":"NO_OP_RECORD","version":0,"data":{}}'


def test_feature_level_known_bytes_and_json():
    value = b"\x01\x0c\x00" + cstr("metadata.version") + b"\x00\x15" + b"\x00"
    rec = decode_metadata_record(value)
    assert rec.fields == {"name": "metadata.version", "featureLevel": 21}
    assert encode_metadata_record("FeatureLevelRecord", 0, rec.fields) == value
    assert (
        dump_payload(rec)
        == '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":21}}'
    )


def test_unknown_tag_is_kept_and_written_back():
    value = b"\x01\x0c\x00" + cstr("metadata.version") + b"\x00\x15" + b"\x01\x05\x01\xab"
    rec = decode_metadata_record(value)
    assert rec.error is None
    assert rec.unknown_tags == {5: b"\xab"}
    assert rec.fields == {"name": "metadata.version", "featureLevel": 21}
    assert encode_metadata_record(12, 0, rec.fields, rec.unknown_tags) == value
    assert metadata_json(rec) == '{"name":"metadata.version","featureLevel":21}'


def test_unknown_tag_between_known_tags_keeps_order():
    fields = {"partitionId": 0, "topicId": U1_TEXT, "isr": [1], "leader": 1}
    value = encode_metadata_record(5, 0, fields, {0x0C: b"\x01\x02"})
    rec = decode_metadata_record(value)
    assert rec.unknown_tags == {12: b"\x01\x02"} and rec.fields["isr"] == [1]
    # tags 0, 1 and then 12, ascending
    assert value.endswith(b"\x03\x00\x05\x02" + i32(1) + b"\x01\x04" + i32(1) + b"\x0c\x02\x01\x02")


def test_unknown_api_key():
    value = b"\x01\x63\x00\x01\x02"
    rec = decode_metadata_record(value)
    assert (rec.api_key, rec.version, rec.name, rec.type_name) == (99, 0, "Unknown", "UNKNOWN")
    assert rec.error == "unknown apiKey 99"
    assert rec.raw == value and rec.fields == {}
    assert metadata_json(rec) is None and dump_payload(rec) is None


def test_unsupported_version_keeps_name():
    rec = decode_metadata_record(b"\x01\x05\x09" + i32(0) + U1 + b"\x00")
    assert rec.name == "PartitionChangeRecord" and rec.version == 9
    assert "unsupported version 9" in rec.error
    assert rec.fields == {} and metadata_json(rec) is None


@pytest.mark.parametrize(
    "value, message",
    [
        (b"", "unreadable frame"),
        (b"\x00\x0c\x00", "unsupported frame version 0"),
        (b"\x01", "unreadable frame"),
        (b"\x01\xff\xff\x03\x00", "out of range"),
        (b"\x01\x0c\x00" + cstr("metadata.version") + b"\x00", "FeatureLevelRecord v0"),
        (b"\x01\x0c\x00\x00\x00\x15\x00", "non-nullable string field Name"),
    ],
)
def test_bad_frames_and_bodies(value, message):
    rec = decode_metadata_record(value)
    assert rec.error is not None and message in rec.error
    assert rec.raw == value
    assert metadata_json(rec) is None


def test_null_value():
    rec = decode_metadata_record(None)
    assert rec.error == "null metadata record value" and rec.raw == b""


def test_garbage_after_body_keeps_fields():
    value = b"\x01\x0c\x00" + cstr("metadata.version") + b"\x00\x15" + b"\x00" + b"\xde\xad"
    rec = decode_metadata_record(value)
    assert rec.error == "found 2 byte(s) of garbage after FeatureLevelRecord v0"
    assert rec.fields == {"name": "metadata.version", "featureLevel": 21}
    assert metadata_json(rec) == '{"name":"metadata.version","featureLevel":21}'


def test_encode_errors():
    with pytest.raises(ConfigError):
        encode_metadata_record("PartitionRecord", 3, {})
    with pytest.raises(ConfigError):
        encode_metadata_record("PartitionRecord", 0, {"directories": [U1_TEXT]})  # v1+ only
    with pytest.raises(ConfigError):
        encode_metadata_record("TopicRecord", 0, {"name": "t", "topicId": "not-a-uuid"})


def test_tagged_defaults_are_not_written():
    minimal = encode_metadata_record("PartitionChangeRecord", 2, {"partitionId": 0, "topicId": U1_TEXT})
    assert minimal == b"\x01\x05\x02" + i32(0) + U1 + b"\x00"
    # Fenced = 0 (no change) is the default, so not written; -1 (unfenced) is
    brc = encode_metadata_record("BrokerRegistrationChangeRecord", 0, {"brokerId": 1, "brokerEpoch": 5, "fenced": -1})
    assert brc == b"\x01\x11\x00" + i32(1) + struct.pack(">q", 5) + b"\x01\x00\x01\xff"


def test_client_quota_double_and_null_entity():
    fields = {
        "entity": [{"entityType": "user", "entityName": None}],
        "key": "producer_byte_rate",
        "value": 1048576.0,
        "remove": False,
    }
    value = encode_metadata_record("ClientQuotaRecord", 0, fields)
    assert value == (
        b"\x01\x0e\x00"
        + b"\x02"
        + cstr("user")
        + b"\x00"
        + b"\x00"
        + cstr("producer_byte_rate")
        + struct.pack(">d", 1048576.0)
        + b"\x00"
        + b"\x00"
    )
    rec = decode_metadata_record(value)
    assert rec.fields == fields
    assert (
        metadata_json(rec) == '{"entity":[{"entityType":"user","entityName":null}],"key":"producer_byte_rate",'
        '"value":1048576.0,"remove":false}'
    )


def test_scram_bytes_render_as_base64():
    fields = {
        "name": "alice",
        "mechanism": 1,
        "salt": b"\x01\x02\x03",
        "storedKey": b"\xff",
        "serverKey": b"",
        "iterations": 4096,
    }
    rec = decode_metadata_record(encode_metadata_record("UserScramCredentialRecord", 0, fields))
    assert rec.fields == fields
    assert (
        metadata_json(rec)
        == '{"name":"alice","mechanism":1,"salt":"AQID","storedKey":"/w==","serverKey":"","iterations":4096}'
    )


def test_transaction_records_json():
    begin = decode_metadata_record(encode_metadata_record("BeginTransactionRecord", 0, {"name": "Creating topics"}))
    assert begin.raw == b"\x01\x17\x00" + b"\x01\x00\x10\x10Creating topics"
    assert metadata_json(begin) == '{"name":"Creating topics"}'
    assert metadata_json(decode_metadata_record(encode_metadata_record("BeginTransactionRecord", 0, {}))) == "{}"
    assert metadata_json(decode_metadata_record(encode_metadata_record("EndTransactionRecord", 0, {}))) == "{}"


# ---------------------------------------------------------------------------------------------
# round trips: every record type and version, every field at a non-default value


def _sample(f: Field, version: int, seed: int, ascii_only: bool = False) -> object:
    """A value for ``f`` that differs from its default."""
    if f.is_array:
        elem = Field(f.name, f.element_type, fields=f.fields)
        return [_sample(elem, version, seed + i, ascii_only) for i in range(2)]
    t = f.type
    default = field_default(f)
    if t == "bool":
        return not default
    if t in ("int8", "int16", "int32", "int64"):
        v = {"int8": 0x55, "int16": 0x1234, "int32": 0x12345678, "int64": 0x123456789ABCDEF}[t] - seed
        return -v if v == default else v
    if t in ("uint16", "uint32"):
        return 9092 + seed
    if t == "float64":
        return 2.5 + seed
    if t == "string":
        return f"{f.name}-{seed}" + ("" if ascii_only else "-é")
    if t == "bytes":
        return bytes([seed, 0xFF, 0x00])
    if t == "uuid":
        return [U1_TEXT, U2_TEXT, U3_TEXT][seed % 3]
    return {
        sub.json_name: _sample(sub, version, seed + 1, ascii_only)
        for sub in f.fields
        if VersionRange.parse(sub.versions).contains(version)
    }


def _cases():
    for _api_key, schema in sorted(METADATA_SCHEMAS.items()):
        lo, hi = schema.valid_versions
        for version in range(lo, hi + 1):
            yield pytest.param(schema, version, id=f"{schema.name}-v{version}")


@pytest.mark.kafka
@pytest.mark.parametrize("schema, version", list(_cases()))
def test_round_trip_every_record_and_version(schema: Schema, version: int, kafka_metadata_files):
    from tests.kafka_schemas import kafka_defaults

    defaults = kafka_defaults(kafka_metadata_files[schema.name][1])
    fields = {
        f.json_name: _sample(f, version, i)
        for i, f in enumerate(schema.fields)
        if VersionRange.parse(f.versions).contains(version)
    }
    value = encode_metadata_record(schema.name, version, fields)
    rec = decode_metadata_record(value)
    assert rec.error is None, rec.error
    assert (rec.api_key, rec.version, rec.name) == (schema.api_key, version, schema.name)
    for f in schema.fields:
        expected = fields.get(f.json_name, defaults[f.json_name])
        assert rec.fields[f.json_name] == expected, f.name
    assert list(rec.fields) == [f.json_name for f in schema.fields]
    assert encode_metadata_record(schema.api_key, version, rec.fields) == value
    # every present field is rendered (all differ from their defaults), in schema order
    rendered = metadata_json(rec)
    assert rendered is not None
    import json

    assert list(json.loads(rendered)) == list(fields)


@pytest.mark.kafka
@pytest.mark.parametrize("schema, version", list(_cases()))
def test_defaults_round_trip(schema: Schema, version: int, kafka_metadata_files):
    """An empty record decodes to the defaults Kafka's schema file gives (not our registry's)."""
    from tests.kafka_schemas import kafka_defaults

    value = encode_metadata_record(schema.name, version, {})
    rec = decode_metadata_record(value)
    assert rec.error is None
    assert rec.fields == kafka_defaults(kafka_metadata_files[schema.name][1])
    assert encode_metadata_record(schema.name, version, rec.fields) == value


# ---------------------------------------------------------------------------------------------
# robustness


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_never_raise(data: bytes):
    rec = decode_metadata_record(data)
    assert isinstance(rec, MetadataRecord)
    assert rec.raw == data
    metadata_json(rec)


_HEADERS = [
    bytes([1, k, v]) for k, s in METADATA_SCHEMAS.items() for v in range(s.valid_versions[0], s.valid_versions[1] + 1)
]


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(_HEADERS), st.binary(max_size=120))
def test_random_bodies_after_valid_frames_never_raise(header: bytes, body: bytes):
    rec = decode_metadata_record(header + body)
    assert rec.name != "Unknown"
    if rec.error is None:
        # whatever decodes cleanly re-encodes to the same bytes, unless it used a non-canonical
        # form (e.g. a tagged field written at its default value, or bool bytes other than 0/1)
        metadata_json(rec)


# ---------------------------------------------------------------------------------------------
# real Kafka-written metadata logs against kafka-dump-log --cluster-metadata-decoder output
# (every scenario bundle of every pinned release, built when missing)

import re  # noqa: E402
from pathlib import Path  # noqa: E402

from tests.kafka_bundles import bundle_params, dump_entries  # noqa: E402

_RECORD_LINE = re.compile(r"^\| offset: (\d+) .*? headerKeys: \[[^\]]*\] (.*)$")


def _parse_dump(path: Path) -> tuple[str | None, dict[int, str]]:
    source, lines = None, {}
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if line.startswith("Dumping ") and source is None:
                source = line[len("Dumping ") :]
            match = _RECORD_LINE.match(line)
            if match:
                lines[int(match.group(1))] = match.group(2)
    return source, lines


def _compare_metadata_dump(version: str, bundle: Path, binary: Path, dump: Path) -> int:
    """Compare every record of ``binary`` with its line in Kafka's dump; return the number compared."""
    from workbench.formats.batch import read_batches
    from workbench.formats.control import decode_control_record, dump_control_text
    from workbench.formats.problems import ProblemLog

    source, expected = _parse_dump(dump)
    assert source is not None, f"{dump}: no 'Dumping' line"
    if not expected:
        return 0
    leader_change_json = tuple(int(p) for p in version.split(".")[:2]) >= (4, 1)
    log = ProblemLog(str(binary))
    seen = 0
    mismatches = []
    with open(binary, "rb") as fh:
        for batch in read_batches(fh, str(binary), problems=log):
            for rec in batch.records(log):
                want = expected.get(rec.offset)
                if want is None:
                    continue
                if batch.is_control:
                    got = dump_control_text(
                        decode_control_record(rec.key, rec.value), leader_change_json=leader_change_json
                    )
                else:
                    decoded = decode_metadata_record(rec.value)
                    assert decoded.error is None, f"offset {rec.offset}: {decoded.error}"
                    got = "payload: " + (dump_payload(decoded) or "")
                    # every record re-encodes to the bytes Kafka wrote
                    assert (
                        encode_metadata_record(decoded.api_key, decoded.version, decoded.fields, decoded.unknown_tags)
                        == rec.value
                    ), f"offset {rec.offset}: re-encoded bytes differ"
                if got != want:
                    mismatches.append(f"offset {rec.offset}:\n  kafka: {want}\n  ours:  {got}")
                seen += 1
    assert log.problems == [], log.problems[:3]
    assert not mismatches, "\n".join(mismatches[:10])
    assert seen == len(expected), f"compared {seen} of {len(expected)} dumped records"
    return seen


@pytest.mark.kafka
@pytest.mark.parametrize("version, name", bundle_params())
def test_real_metadata_log_matches_kafka_dump(kafka_bundle, version: str, name: str):
    """Every ``__cluster_metadata`` segment and snapshot and every ``bootstrap.checkpoint``."""
    bundle = Path(kafka_bundle(name, version))
    entries = [
        e for e in dump_entries(bundle)
        if "/__cluster_metadata-0/" in e["file"] or e["file"].endswith("/bootstrap.checkpoint")
    ]
    assert entries, f"{bundle}: no metadata log or snapshot dumped"
    failures, compared = [], 0
    for e in entries:
        try:
            compared += _compare_metadata_dump(version, bundle, bundle / e["file"], bundle / e["dump"])
        except AssertionError as exc:
            failures.append(f"{e['file']}: {str(exc)[:800]}")
    assert not failures, f"{len(failures)} of {len(entries)} files:\n" + "\n".join(failures[:6])
    assert compared > 0, f"{bundle}: no metadata record compared"


# ---------------------------------------------------------------------------------------------
# Kafka's own dump tool decodes what the encoder writes (needs fetched Kafka jars)


def _release_schemas(lib: Path) -> dict[str, Schema]:
    from tests.kafka_schemas import schema_files
    from workbench.formats.messages import schema_from_kafka_json

    return {
        name: schema_from_kafka_json(text)
        for name, (_, text) in schema_files(sorted(lib.glob("*.jar"))).items()
        if name in METADATA_SCHEMAS_BY_NAME
    }


METADATA_SCHEMAS_BY_NAME = {s.name: s for s in METADATA_SCHEMAS.values()}


@pytest.mark.kafka
@pytest.mark.parametrize("kafka_version", list(VERSIONS))
def test_kafka_dump_tool_decodes_every_encoded_record(tmp_path, kafka_version, kafka_dist):
    from workbench.formats.control import decode_control_record, dump_control_text
    from workbench.formats.kraft_log import MetadataLogWriter

    kafka = kafka_dist(kafka_version)
    known = _release_schemas(kafka.lib)
    writer = MetadataLogWriter()
    expected: dict[int, str] = {}
    ts = 1_700_000_000_000
    writer.append_control(
        "LEADER_CHANGE",
        {"leaderId": 1, "voters": [{"voterId": 1}, {"voterId": 2}], "grantingVoters": [{"voterId": 1}]},
        timestamp=ts,
        epoch=3,
    )
    writer.append_control("KRAFT_VERSION", {"kRaftVersion": 1}, timestamp=ts, epoch=3)
    writer.append_control(
        "KRAFT_VOTERS",
        {
            "voters": [
                {
                    "voterId": 1,
                    "voterDirectoryId": U1_TEXT,
                    "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                    "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
                }
            ]
        },
        timestamp=ts,
        epoch=3,
    )
    for schema in METADATA_SCHEMAS.values():
        theirs = known.get(schema.name)
        if theirs is None:
            continue
        for version in range(schema.valid_versions[0], min(schema.valid_versions[1], theirs.valid_versions[1]) + 1):
            fields = {
                f.json_name: _sample(f, version, i, ascii_only=True)
                for i, f in enumerate(schema.fields)
                if VersionRange.parse(f.versions).contains(version)
            }
            offset = writer.next_offset
            writer.append([(schema.name, version, fields)], timestamp=ts, epoch=3)
            expected[offset] = "payload: " + dump_payload(
                decode_metadata_record(encode_metadata_record(schema.name, version, fields))
            )
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(writer.to_bytes())
    result = kafka.run_tool("dump-log", ["--cluster-metadata-decoder", "--files", str(seg)], timeout=180, heap="256m")
    lines = {}
    for line in result.stdout.splitlines():
        match = _RECORD_LINE.match(line)
        if match:
            lines[int(match.group(1))] = match.group(2)
    assert len(lines) == writer.next_offset, result.stdout[-2000:]
    leader_change_json = kafka.major >= 4 and tuple(int(p) for p in kafka_version.split(".")[:2]) >= (4, 1)
    from workbench.formats.batch import read_batches

    with open(seg, "rb") as fh:
        for batch in read_batches(fh, str(seg)):
            if batch.is_control:
                for rec in batch.records():
                    expected[rec.offset] = dump_control_text(
                        decode_control_record(rec.key, rec.value), leader_change_json=leader_change_json
                    )
    mismatches = [
        f"offset {o}:\n  kafka: {lines.get(o)}\n  ours:  {want}"
        for o, want in sorted(expected.items())
        if lines.get(o) != want
    ]
    assert not mismatches, "\n".join(mismatches[:10])
    assert len(expected) >= 30


def test_newer_layout_registered_at_run_time(monkeypatch):
    from workbench.formats.messages import schema_from_kafka_json

    newer = schema_from_kafka_json(
        {
            "apiKey": 20,
            "type": "metadata",
            "name": "NoOpRecord",
            "validVersions": "0-1",
            "flexibleVersions": "0+",
            "fields": [{"name": "Note", "type": "string", "versions": "1+", "taggedVersions": "1+", "tag": 0}],
        }
    )
    value = b"\x01\x14\x01" + b"\x01\x00\x03\x03hi"  # tag 0, 3 bytes: compact string "hi"
    assert "unsupported version 1" in decode_metadata_record(value).error
    monkeypatch.setitem(METADATA_SCHEMAS, 20, newer)
    rec = decode_metadata_record(value)
    assert rec.error is None and rec.fields == {"note": "hi"}
    assert encode_metadata_record("NO_OP_RECORD", 1, {"note": "hi"}) == value
    assert metadata_json(rec) == '{"note":"hi"}'
