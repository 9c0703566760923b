"""Tests of the generic generated-message codec (workbench.formats.messages).

Expected bytes are written by hand from the encoding rules of reference §3.2.
"""

from __future__ import annotations

import uuid

import pytest

from workbench.errors import ConfigError, CorruptDataError
from workbench.formats.messages import (
    TYPE_DEFAULT,
    UNKNOWN_TAGS_KEY,
    ZERO_UUID,
    Field,
    Schema,
    VersionRange,
    decode,
    dumps_json,
    encode,
    field_default,
    json_name,
    snake_upper,
    to_json,
    uuid_from_str,
    uuid_to_str,
)

U1 = bytes(range(16))
U1_TEXT = "AAECAwQFBgcICQoLDA0ODw"

# A schema with flexible versions 1+, a field added in v1, a nullable struct, a struct array
# and tagged fields at two levels.
NESTED = Schema(
    "NestedTest",
    0,
    (0, 2),
    "1+",
    [
        Field("Id", "int32", default=-1),
        Field("Name", "string", nullable="1+"),
        Field("Added", "int64", versions="1+", default=7),
        Field(
            "Items",
            "[]Item",
            fields=(
                Field("Key", "string"),
                Field("Weight", "int16"),
                Field("Note", "string", versions="1+", nullable="1+", tag=0, tagged_versions="1+", default=None),
            ),
        ),
        Field(
            "Owner",
            "Owner",
            versions="1+",
            nullable="1+",
            default=None,
            fields=(Field("Host", "string"), Field("Port", "uint16")),
        ),
        Field("Flag", "bool", versions="2+", tag=1, tagged_versions="2+"),
    ],
)


def test_version_ranges():
    assert VersionRange.parse("0+").contains(0) and VersionRange.parse("0+").contains(999)
    assert VersionRange.parse("1-3").contains(3) and not VersionRange.parse("1-3").contains(4)
    assert VersionRange.parse("2").contains(2) and not VersionRange.parse("2").contains(1)
    assert VersionRange.parse("none").empty and VersionRange.parse("").empty
    with pytest.raises(ConfigError):
        VersionRange.parse("x+")


def test_names():
    assert json_name("IsMigratingZkBroker") == "isMigratingZkBroker"
    assert json_name("KRaftVersion") == "kRaftVersion"
    assert snake_upper("PartitionChangeRecord") == "PARTITION_CHANGE_RECORD"
    assert snake_upper("NoOpRecord") == "NO_OP_RECORD"
    assert snake_upper("UserScramCredentialRecord") == "USER_SCRAM_CREDENTIAL_RECORD"


def test_uuid_text():
    assert uuid_to_str(U1) == U1_TEXT
    assert uuid_from_str(U1_TEXT) == U1
    assert uuid_from_str(uuid.UUID(bytes=U1)) == U1
    assert uuid_to_str(bytes(16)) == ZERO_UUID
    with pytest.raises(ValueError):
        uuid_from_str("short")


def test_defaults():
    assert field_default(Field("A", "int32")) == 0
    assert field_default(Field("A", "string")) == ""
    assert field_default(Field("A", "string", nullable="0+")) == ""  # nullable, no default: ""
    assert field_default(Field("A", "string", nullable="0+", default=None)) is None
    assert field_default(Field("A", "[]int32")) == []
    assert field_default(Field("A", "uuid")) == ZERO_UUID
    assert field_default(Field("A", "bytes")) == b""
    assert field_default(Field("A", "bool", default=True)) is True
    assert field_default(Field("S", "S", fields=(Field("X", "int8", default=3),))) == {"x": 3}
    assert Field("A", "int8").default is TYPE_DEFAULT


def test_non_flexible_known_bytes():
    values = {"id": 5, "name": "ab", "items": [{"key": "k", "weight": -2}]}
    data = encode(NESTED, 0, values)
    expected = (
        b"\x00\x00\x00\x05"  # Id int32
        b"\x00\x02ab"  # Name: int16 length + bytes
        b"\x00\x00\x00\x01"  # Items: int32 count
        b"\x00\x01k\xff\xfe"  # Key, Weight
    )
    assert data == expected
    decoded, unknown, end = decode(NESTED, 0, data)
    assert end == len(data) and unknown == {}
    # fields absent in v0 hold their defaults
    assert decoded == {
        "id": 5,
        "name": "ab",
        "added": 7,
        "items": [{"key": "k", "weight": -2, "note": None}],
        "owner": None,
        "flag": False,
    }


def test_non_flexible_null_array_and_string():
    data = b"\x00\x00\x00\x05\x00\x01a\xff\xff\xff\xff"
    with pytest.raises(CorruptDataError) as err:
        decode(NESTED, 0, data)  # Items is not nullable
    assert err.value.kind == "decode_error" and "Items" in err.value.detail


def test_flexible_known_bytes_with_nested_tags_and_nullable_struct():
    values = {
        "id": 1,
        "name": None,
        "added": 2,
        "items": [{"key": "k", "weight": 3, "note": "hi"}, {"key": "", "weight": 0}],
        "owner": {"host": "h", "port": 9092},
        "flag": True,
    }
    data = encode(NESTED, 2, values)
    expected = (
        b"\x00\x00\x00\x01"  # Id
        b"\x00"  # Name null (compact)
        b"\x00\x00\x00\x00\x00\x00\x00\x02"  # Added
        b"\x03"  # Items: 2 elements
        b"\x02k\x00\x03"
        b"\x01\x00\x03\x03hi"  # item 1 + tagged Note (tag 0, 3 bytes)
        b"\x01\x00\x00"
        b"\x00"  # item 2, no tags
        b"\x01\x02h\x23\x84\x00"  # Owner present marker, Host, Port, empty tag section
        b"\x01\x01\x01\x01"  # top-level: one tag (1) of 1 byte = true
    )
    assert data == expected
    decoded, unknown, end = decode(NESTED, 2, data)
    assert end == len(data)
    assert decoded["items"][0] == {"key": "k", "weight": 3, "note": "hi"}
    assert decoded["items"][1] == {"key": "", "weight": 0, "note": None}
    assert decoded["owner"] == {"host": "h", "port": 9092}
    assert decoded["flag"] is True and decoded["name"] is None
    assert encode(NESTED, 2, decoded) == data


def test_null_struct_marker():
    data = encode(NESTED, 1, {"items": [], "owner": None})
    assert data == b"\xff\xff\xff\xff" + b"\x01" + b"\x00" * 7 + b"\x07" + b"\x01" + b"\xff" + b"\x00"
    decoded, _, _ = decode(NESTED, 1, data)
    assert decoded["owner"] is None and decoded["name"] == ""


def test_unknown_tags_preserved_at_every_level():
    base = encode(NESTED, 2, {"items": [{"key": "a"}], "owner": {"host": "x"}})
    # rebuild by hand with unknown tags in an element, the nested struct and the top level
    data = (
        b"\xff\xff\xff\xff"
        b"\x01"
        b"\x00\x00\x00\x00\x00\x00\x00\x07"
        b"\x02"
        b"\x02a\x00\x00"
        b"\x01\x09\x02\xaa\xbb"  # element: unknown tag 9
        b"\x01\x02x\x00\x00"
        b"\x01\x04\x00"  # owner: unknown tag 4, empty value
        b"\x02\x01\x01\x01\x07\x01\xcc"  # top level: flag tag 1 + unknown tag 7
    )
    assert base != data
    decoded, unknown, end = decode(NESTED, 2, data)
    assert end == len(data)
    assert unknown == {7: b"\xcc"}
    assert decoded["items"][0][UNKNOWN_TAGS_KEY] == {9: b"\xaa\xbb"}
    assert decoded["owner"][UNKNOWN_TAGS_KEY] == {4: b""}
    assert decoded["flag"] is True
    assert encode(NESTED, 2, decoded, unknown) == data
    # unknown tags are never rendered as JSON
    assert "_unknown" not in dumps_json(to_json(NESTED, decoded, 2))


def test_tagged_field_size_mismatch_and_truncation_are_errors():
    with pytest.raises(CorruptDataError):
        decode(NESTED, 2, b"\xff\xff\xff\xff\x01" + b"\x00" * 7 + b"\x07\x01\xff\x01\x01\x02\x01")
    good = encode(NESTED, 2, {"items": [{"key": "abc"}]})
    for cut in range(len(good)):
        with pytest.raises(CorruptDataError):
            decode(NESTED, 2, good[:cut])


def test_array_count_larger_than_input_is_an_error():
    with pytest.raises(CorruptDataError) as err:
        decode(NESTED, 0, b"\x00\x00\x00\x01\x00\x00\x7f\xff\xff\xff")
    assert "claims" in err.value.detail


def test_encode_rejects_bad_values():
    with pytest.raises(ConfigError):
        encode(NESTED, 0, {"id": 1 << 40})
    with pytest.raises(ConfigError):
        encode(NESTED, 0, {"name": None})  # nullable only from v1
    with pytest.raises(ConfigError):
        encode(NESTED, 0, {"added": 8})  # field absent in v0 with a non-default value
    with pytest.raises(ConfigError):
        encode(NESTED, 0, {"nope": 1})
    with pytest.raises(ConfigError):
        encode(NESTED, 3, {})
    with pytest.raises(ConfigError):
        encode(NESTED, 0, {"items": "abc"})
    # a default value for an absent field is fine
    assert encode(NESTED, 0, {"added": 7, "items": []}) == encode(NESTED, 0, {})


def test_json_rendering_rules():
    values, _, _ = decode(NESTED, 2, encode(NESTED, 2, {"id": 4, "items": [{"key": "k", "note": "n"}]}))
    assert dumps_json(to_json(NESTED, values, 2)) == (
        '{"id":4,"name":"","added":7,"items":[{"key":"k","weight":0,"note":"n"}],"owner":null}'
    )
    # v0 leaves out fields absent in v0
    assert dumps_json(to_json(NESTED, values, 0)) == '{"id":4,"name":"","items":[{"key":"k","weight":0}]}'


def test_json_text_like_jackson():
    assert (
        dumps_json({"d": 1048576.0, "e": 1.0e7, "f": 0.5, "g": 1.0e-4})
        == '{"d":1048576.0,"e":1.0E7,"f":0.5,"g":1.0E-4}'
    )
    assert dumps_json(['a"b\\c\n\u0001', "é"]) == '["a\\"b\\\\c\\n\\u0001","é"]'
    assert (
        dumps_json({"t": True, "n": None, "l": [], "i": -(1 << 63)})
        == '{"t":true,"n":null,"l":[],"i":-9223372036854775808}'
    )


def test_bytes_and_float_json():
    schema = Schema("B", 0, (0, 0), "0+", [Field("Blob", "bytes", nullable="0+"), Field("Value", "float64")])
    values, _, _ = decode(schema, 0, encode(schema, 0, {"blob": b"\x00\xff\x10", "value": 2.0}))
    assert values == {"blob": b"\x00\xff\x10", "value": 2.0}
    assert dumps_json(to_json(schema, values, 0)) == '{"blob":"AP8Q","value":2.0}'
    assert dumps_json(to_json(schema, {"blob": None, "value": 0.0}, 0)) == '{"blob":null,"value":0.0}'


def test_invalid_utf8_is_replaced_not_fatal():
    schema = Schema("S", 0, (0, 0), "0+", [Field("Name", "string")])
    values, _, _ = decode(schema, 0, b"\x03\xff\xfe\x00")
    assert values["name"] == "\ufffd\ufffd"


# ---------------------------------------------------------------------------------------------
# the built-in layouts against Kafka's own schema files: the newest pinned release's jars
# (fetched by the suite), and for the records it lacks, the one release named in
# tests/kafka_schemas.py (its jar fetched from Maven Central)

import dataclasses  # noqa: E402

from tests.kafka_schemas import (  # noqa: E402
    FOLLOWS,
    MODELLED_WITH_EXTRA_FIELDS,
    NEVER_RELEASED,
    NEVER_RELEASED_CHECKED_IN,
    NEWER_TAGGED_FIELDS,
    NEWEST_PIN,
    pinned_schema_files,
    release_schema_files,
)
from workbench.formats.messages import layout_differences, schema_from_kafka_json  # noqa: E402


def _our_layouts() -> list[Schema]:
    from workbench.formats import coordinator
    from workbench.formats.control import CONTROL_SCHEMAS
    from workbench.formats.kraft_files import QUORUM_STATE_SCHEMA
    from workbench.formats.metadata import METADATA_SCHEMAS
    from workbench.formats.remote import REMOTE_SCHEMAS

    layouts = [
        *METADATA_SCHEMAS.values(),
        *CONTROL_SCHEMAS.values(),
        *REMOTE_SCHEMAS.values(),
        QUORUM_STATE_SCHEMA,
        coordinator.CONSUMER_SUBSCRIPTION,
        coordinator.CONSUMER_ASSIGNMENT,
    ]
    for registry in (
        coordinator.OFFSETS_RECORD_TYPES,
        coordinator.TRANSACTION_RECORD_TYPES,
        coordinator.SHARE_STATE_RECORD_TYPES,
    ):
        for rt in registry.values():
            layouts += [rt.key, rt.value]
    unique: dict[str, Schema] = {}
    for s in layouts:
        unique.setdefault(s.name, s)
    return list(unique.values())


def _without(schema: Schema, names: tuple[str, ...]) -> Schema:
    """``schema`` without the top-level fields ``names`` (each must be there)."""
    have = {f.name for f in schema.fields}
    assert set(names) <= have, (schema.name, sorted(set(names) - have))
    return dataclasses.replace(schema, fields=tuple(f for f in schema.fields if f.name not in names))


def layout_problems(layouts: list[Schema]) -> tuple[list[str], int]:
    """Every difference between ``layouts`` and Kafka's schema files; and how many were compared.

    The reference of a layout is the newest pinned release's file; a record that release lacks
    must be in FOLLOWS (compared with that release's file) or NEVER_RELEASED.
    """
    pinned = pinned_schema_files(NEWEST_PIN)
    problems: list[str] = []
    checked = 0
    for ours in layouts:
        name = ours.name
        if name in NEVER_RELEASED:
            if name in pinned:
                problems.append(f"{name}: listed as never released, but Kafka {NEWEST_PIN} has it")
            continue
        if name in FOLLOWS:
            if name in pinned:
                problems.append(f"{name}: listed as missing from Kafka {NEWEST_PIN}, which has it: compare with it")
                continue
            ref = FOLLOWS[name]
            files = release_schema_files(ref.artifact, ref.release)
            if name not in files:
                problems.append(f"{name}: not in {ref.artifact} {ref.release}, the release FOLLOWS names")
                continue
            release, (jar, text) = ref.release, files[name]
            theirs = schema_from_kafka_json(text)
            if theirs.api_key is None and ours.api_key is not None:
                # before 4.1 coordinator records were "data" files without an apiKey, and a key
                # file's only version was the record type: read it as version 0 of that type
                if name.endswith("Key"):
                    text = text.replace(f'"{ours.api_key}"', '"0"')
                theirs = dataclasses.replace(schema_from_kafka_json(text), api_key=ours.api_key)
        else:
            if name not in pinned:
                problems.append(f"{name}: not in Kafka {NEWEST_PIN}'s jars, and not listed in tests/kafka_schemas.py "
                                "with the release that has it")
                continue
            release, (jar, text) = NEWEST_PIN, pinned[name]
            theirs = schema_from_kafka_json(text)
        mine = ours
        if name in MODELLED_WITH_EXTRA_FIELDS:
            mine = _without(ours, MODELLED_WITH_EXTRA_FIELDS[name])
        if name in NEWER_TAGGED_FIELDS:
            ref, extra = NEWER_TAGGED_FIELDS[name]
            tagged = {f.name for f in ours.fields if f.tag is not None}
            if not set(extra) <= tagged:
                problems.append(f"{name}: {sorted(set(extra) - tagged)} newer than Kafka {NEWEST_PIN} but not tagged")
            mine = _without(ours, extra)
            newer_files = release_schema_files(ref.artifact, ref.release)
            if name not in newer_files:
                problems.append(f"{name}: not in {ref.artifact} {ref.release}")
            else:
                newer_jar, newer_text = newer_files[name]
                newer = layout_differences(ours, schema_from_kafka_json(newer_text))
                problems += [f"[{ref.release} {newer_jar}] {d}" for d in newer]
                checked += 1
        problems += [f"[{release} {jar}] {d}" for d in layout_differences(mine, theirs)]
        checked += 1
    return problems, checked


def test_schema_from_kafka_json_resolves_common_structs():
    s = schema_from_kafka_json(
        {
            "name": "X",
            "validVersions": "0-1",
            "flexibleVersions": "1+",
            "type": "data",
            "fields": [
                {"name": "Items", "type": "[]Item", "versions": "0+"},
                {
                    "name": "Flag",
                    "type": "bool",
                    "versions": "1+",
                    "default": "true",
                    "taggedVersions": "1+",
                    "tag": "2",
                },
            ],
            "commonStructs": [
                {
                    "name": "Item",
                    "versions": "0+",
                    "fields": [{"name": "Id", "type": "int32", "versions": "0+", "default": "-1"}],
                }
            ],
        }
    )
    assert s.valid_versions == (0, 1) and s.fields[0].fields[0].default == -1
    assert s.fields[1].tag == 2 and s.fields[1].default is True
    with pytest.raises(ConfigError):
        schema_from_kafka_json("{not json")


@pytest.mark.kafka
def test_layouts_match_kafka_schema_files():
    problems, checked = layout_problems(_our_layouts())
    assert not problems, "\n".join(problems)
    assert checked >= 90


@pytest.mark.kafka
def test_tables_of_unpinned_records_are_honest():
    """Every record the tables name is really absent from both pinned releases, or (FOLLOWS)
    really absent from the newest one; never-released ones are absent from the newest release."""
    ours = {s.name for s in _our_layouts()}
    from peer.kafka import VERSIONS

    pins = {v: pinned_schema_files(v) for v in VERSIONS}
    listed = set(FOLLOWS) | set(NEVER_RELEASED) | set(NEWER_TAGGED_FIELDS) | set(MODELLED_WITH_EXTRA_FIELDS)
    assert listed <= ours, sorted(listed - ours)
    for name in FOLLOWS:
        assert name not in pins[NEWEST_PIN], name
    newest = release_schema_files(NEVER_RELEASED_CHECKED_IN.artifact, NEVER_RELEASED_CHECKED_IN.release)
    for name in NEVER_RELEASED:
        assert all(name not in files for files in pins.values()), name
        assert name not in newest, name
    for name in (*NEWER_TAGGED_FIELDS, *MODELLED_WITH_EXTRA_FIELDS):
        assert name in pins[NEWEST_PIN], name


def test_one_changed_field_is_caught():
    """The comparison sees a layout that differs from Kafka's by one field."""
    layouts = _our_layouts()
    victim = next(s for s in layouts if s.name == "PartitionChangeRecord")
    f = victim.fields[-1]
    changed = dataclasses.replace(victim, fields=(*victim.fields[:-1], dataclasses.replace(f, type="int64")))
    problems, _ = layout_problems([changed])
    assert problems and all("PartitionChangeRecord" in p for p in problems), problems
    dropped = dataclasses.replace(victim, fields=victim.fields[:-1])
    assert layout_problems([dropped])[0]
