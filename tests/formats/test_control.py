"""Tests of control record keys and values (workbench.formats.control), reference §2."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.scenario import built_on
from workbench.errors import ConfigError
from workbench.formats.control import (
    CONTROL_TYPES,
    ControlRecord,
    control_json,
    decode_control_record,
    dump_control_text,
    encode_control_record,
)

U1 = bytes(range(16))
U1_TEXT = "AAECAwQFBgcICQoLDA0ODw"


def key(type_id: int, version: int = 0) -> bytes:
    return struct.pack(">hh", version, type_id)


def test_commit_and_abort_markers():
    rec = decode_control_record(key(1), b"\x00\x00\x00\x00\x00\x2a")
    assert (rec.type, rec.type_name, rec.key_version, rec.error) == (1, "COMMIT", 0, None)
    assert rec.fields == {"version": 0, "coordinatorEpoch": 42}
    assert dump_control_text(rec) == "endTxnMarker: COMMIT coordinatorEpoch: 42"
    rec = decode_control_record(key(0), b"\x00\x00\xff\xff\xff\xff")
    assert rec.type_name == "ABORT" and rec.fields["coordinatorEpoch"] == -1
    assert encode_control_record("ABORT", {"coordinatorEpoch": -1}) == (key(0), b"\x00\x00\xff\xff\xff\xff")


def test_end_txn_marker_higher_version_read_as_v0():
    rec = decode_control_record(key(1), b"\x00\x01\x00\x00\x00\x05\x99\x99")
    assert rec.error is None and rec.fields == {"version": 1, "coordinatorEpoch": 5}


def test_higher_key_version_is_read_as_v0():
    rec = decode_control_record(key(3, version=2) + b"\x00", b"\x00\x00" + struct.pack(">q", 5) + b"\x00")
    assert rec.key_version == 2 and rec.type_name == "SNAPSHOT_HEADER" and rec.error is None


def test_leader_change_known_bytes():
    # 19 bytes as in the reference example: version, leader, 1 voter, 1 granting voter, no tags
    value = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x01\x00" + b"\x02\x00\x00\x00\x01\x00" + b"\x00"
    assert len(value) == 19
    rec = decode_control_record(key(2), value)
    assert rec.error is None and rec.type_name == "LEADER_CHANGE"
    assert rec.fields == {
        "version": 0,
        "leaderId": 1,
        "voters": [{"voterId": 1, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA"}],
        "grantingVoters": [{"voterId": 1, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA"}],
    }
    assert control_json(rec) == '{"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[{"voterId":1}]}'
    assert dump_control_text(rec) == "controlType: LEADER_CHANGE(2)"
    assert dump_control_text(rec, leader_change_json=True) == (
        'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[{"voterId":1}]}'
    )
    assert encode_control_record("LEADER_CHANGE", rec.fields) == (key(2), value)


def test_snapshot_header_and_footer():
    value = b"\x00\x00" + struct.pack(">q", 1747299887693) + b"\x00"
    rec = decode_control_record(key(3), value)
    assert rec.fields == {"version": 0, "lastContainedLogTimestamp": 1747299887693}
    assert dump_control_text(rec) == 'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1747299887693}'
    footer = decode_control_record(key(4), b"\x00\x00\x00")
    assert footer.fields == {"version": 0} and dump_control_text(footer) == 'SnapshotFooter {"version":0}'


def test_kraft_version():
    rec = decode_control_record(key(5), b"\x00\x00\x00\x01\x00")
    assert rec.fields == {"version": 0, "kRaftVersion": 1}
    assert dump_control_text(rec) == 'KRaftVersion {"version":0,"kRaftVersion":1}'


def test_voters_known_bytes():
    value = (
        b"\x00\x00"  # version
        + b"\x02"  # one voter
        + b"\x00\x00\x00\x01"
        + U1  # voterId, voterDirectoryId
        + b"\x02"
        + b"\x0bCONTROLLER"
        + b"\x0alocalhost"
        + b"\x23\x85"
        + b"\x00"  # one endpoint
        + b"\x00\x00"
        + b"\x00\x01"
        + b"\x00"  # kRaftVersionFeature struct + its tags
        + b"\x00"  # voter tags
        + b"\x00"  # top-level tags
    )
    rec = decode_control_record(key(6), value)
    assert rec.error is None and rec.type_name == "KRAFT_VOTERS"
    assert rec.fields == {
        "version": 0,
        "voters": [
            {
                "voterId": 1,
                "voterDirectoryId": U1_TEXT,
                "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
            }
        ],
    }
    assert dump_control_text(rec) == (
        'KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"' + U1_TEXT + '",'
        '"endpoints":[{"name":"CONTROLLER","host":"localhost","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )
    assert encode_control_record("KRAFT_VOTERS", rec.fields) == (key(6), value)


SAMPLES = {
    "ABORT": {"version": 0, "coordinatorEpoch": 9},
    "COMMIT": {"version": 0, "coordinatorEpoch": 2147483647},
    "LEADER_CHANGE": {
        "version": 0,
        "leaderId": 3,
        "voters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
        "grantingVoters": [{"voterId": 3}, {"voterId": 1}],
    },
    "SNAPSHOT_HEADER": {"version": 0, "lastContainedLogTimestamp": 1},
    "SNAPSHOT_FOOTER": {"version": 0},
    "KRAFT_VERSION": {"version": 0, "kRaftVersion": 1},
    "KRAFT_VOTERS": {
        "version": 0,
        "voters": [
            {
                "voterId": i,
                "voterDirectoryId": U1_TEXT,
                "endpoints": [{"name": "C", "host": f"h{i}", "port": 9000 + i}],
                "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
            }
            for i in range(3)
        ],
    },
}


@pytest.mark.parametrize("type_name", list(CONTROL_TYPES.values()))
def test_round_trip_every_type(type_name):
    k, v = encode_control_record(type_name, SAMPLES[type_name])
    rec = decode_control_record(k, v)
    assert rec.error is None and rec.type_name == type_name
    for name, expected in SAMPLES[type_name].items():
        if name in ("voters", "grantingVoters") and type_name == "LEADER_CHANGE":
            expected = [{**voter, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA"} for voter in expected]
        assert rec.fields[name] == expected
    assert encode_control_record(type_name, rec.fields) == (k, v)


def test_unknown_tags_in_control_value_are_kept():
    rec = decode_control_record(key(4), b"\x00\x00\x01\x07\x02ab")
    assert rec.error is None and rec.unknown_tags == {7: b"ab"}


@pytest.mark.parametrize(
    "k, v, message",
    [
        (None, b"", "without a key"),
        (b"\x00\x00\x00", b"", "3 bytes"),
        (b"\xff\xff\x00\x01", b"\x00\x00\x00\x00\x00\x00", "negative"),
        (key(9), b"", "unknown control record type 9"),
        (key(1), None, "without a value"),
        (key(1), b"\x00\x00\x00", "EndTxnMarker"),
        (key(5), b"\x00\x00\x00\x01\x00\xee", "garbage"),
    ],
)
def test_bad_control_records(k, v, message):
    rec = decode_control_record(k, v)
    assert isinstance(rec, ControlRecord) and rec.error is not None and message in rec.error


def test_unknown_type_name_and_dump_text():
    assert decode_control_record(key(9), b"").type_name == "UNKNOWN"
    assert dump_control_text(decode_control_record(key(9), b"")) == "controlType: UNKNOWN(9)"
    with pytest.raises(ConfigError):
        encode_control_record("NOPE", {})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([key(i) for i in range(-1, 8)]), st.binary(max_size=80))
def test_random_values_never_raise(k, v):
    rec = decode_control_record(k, v)
    control_json(rec)
    dump_control_text(rec)


# ---------------------------------------------------------------------------------------------
# transaction markers written by real Kafka (the consumer_lag bundle's transactional producer
# commits and aborts) against Kafka's own dump of the same segments


@pytest.mark.kafka
@pytest.mark.parametrize("version", built_on("consumer_lag"))
def test_real_transaction_markers_match_kafka_dump(kafka_bundle, version):
    import re
    from pathlib import Path

    from tests.kafka_bundles import dump_entries
    from workbench.formats.batch import read_batches
    from workbench.formats.problems import ProblemLog

    bundle = Path(kafka_bundle("consumer_lag", version))
    line = re.compile(r"^\| offset: (\d+) .*? headerKeys: \[\] (endTxnMarker: .*)$")
    seen = {"COMMIT": 0, "ABORT": 0}
    for entry in dump_entries(bundle):
        if "/txn-orders-" not in entry["file"]:
            continue
        kafka = {int(m[1]): m[2] for m in map(line.match, (bundle / entry["dump"]).read_text("utf-8").splitlines())
                 if m}
        path = bundle / entry["file"]
        log = ProblemLog(str(path))
        ours = {}
        with open(path, "rb") as fh:
            for batch in read_batches(fh, str(path), problems=log):
                if batch.is_control:
                    assert batch.is_transactional, (path, batch.position)
                    for r in batch.records(log):
                        rec = decode_control_record(r.key, r.value)
                        assert rec.error is None, (path, r.offset, rec.error)
                        seen[rec.type_name] += 1
                        ours[r.offset] = dump_control_text(rec)
        assert log.problems == []
        assert ours == kafka, path
    # 12 transactions on 2 partitions, every third aborted
    assert seen == {"COMMIT": 16, "ABORT": 8}, seen
