"""Tests of ``__remote_log_metadata`` records (workbench.formats.remote), reference §8."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.scenario import built_on
from workbench.errors import ConfigError
from workbench.formats.metadata import metadata_json
from workbench.formats.remote import (
    REMOTE_SCHEMAS,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
    remote_dump_text,
    remote_event,
)

T = bytes(range(16))
T_TEXT = "AAECAwQFBgcICQoLDA0ODw"
S = bytes(range(16, 32))
S_TEXT = "EBESExQVFhcYGRobHB0eHw"


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


SEGMENT_ID = b"\x07orders" + T + i32(2) + b"\x00" + S + b"\x00"  # TopicIdPartition struct + tags, Id, tags

SEGMENT_VALUE = (
    b"\x01\x00\x00"
    + SEGMENT_ID
    + i64(0)
    + i64(1199)
    + i32(1)
    + i64(1718000000500)
    + i64(1718000001000)
    + b"\x03"
    + i32(0)
    + i64(0)
    + b"\x00"
    + i32(3)
    + i64(1200)
    + b"\x00"  # leader epochs {0: 0, 3: 1200}
    + i32(1048576)
    + b"\x00"  # CustomMetadata null
    + b"\x00"  # COPY_SEGMENT_STARTED
    + b"\x01\x00\x01\x01"  # tag 0 TxnIndexEmpty = true
)


def test_segment_metadata_known_bytes():
    rec = decode_remote_log_metadata(SEGMENT_VALUE)
    assert rec.error is None and rec.name == "RemoteLogSegmentMetadataRecord"
    assert rec.type_name == "REMOTE_LOG_SEGMENT_METADATA_RECORD"
    f = rec.fields
    assert f["remoteLogSegmentId"] == {
        "topicIdPartition": {"name": "orders", "id": T_TEXT, "partition": 2},
        "id": S_TEXT,
    }
    assert (f["startOffset"], f["endOffset"], f["brokerId"]) == (0, 1199, 1)
    assert (f["maxTimestampMs"], f["eventTimestampMs"]) == (1718000000500, 1718000001000)
    assert f["segmentLeaderEpochs"] == [{"leaderEpoch": 0, "offset": 0}, {"leaderEpoch": 3, "offset": 1200}]
    assert (f["segmentSizeInBytes"], f["customMetadata"], f["remoteLogSegmentState"], f["txnIndexEmpty"]) == (
        1048576,
        None,
        0,
        True,
    )
    assert encode_remote_log_metadata(0, 0, f) == SEGMENT_VALUE
    assert remote_dump_text(rec) == (
        "RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{"
        f"topicIdPartition={T_TEXT}:orders-2, id={S_TEXT}}}, "
        "startOffset=0, endOffset=1199, brokerId=1, maxTimestampMs=1718000000500, eventTimestampMs=1718000001000, "
        "segmentLeaderEpochs={0=0, 3=1200}, segmentSizeInBytes=1048576, customMetadata=Optional.empty, "
        "state=COPY_SEGMENT_STARTED, txnIdxEmpty=true}"
    )
    event = remote_event(rec)
    assert event["kind"] == "segment" and event["segment_id"] == S_TEXT and event["topic"] == "orders"
    assert event["leader_epochs"] == {0: 0, 3: 1200} and event["state"] == "COPY_SEGMENT_STARTED"
    assert metadata_json(rec, REMOTE_SCHEMAS).startswith('{"remoteLogSegmentId":{"topicIdPartition":{"name":"orders"')


def test_segment_update_known_bytes():
    value = b"\x01\x01\x00" + SEGMENT_ID + i32(2) + i64(1718000002000) + b"\x04abc" + b"\x01" + b"\x00"
    rec = decode_remote_log_metadata(value)
    assert rec.error is None
    assert rec.fields["customMetadata"] == b"abc" and rec.fields["remoteLogSegmentState"] == 1
    assert remote_dump_text(rec) == (
        "RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=RemoteLogSegmentId{"
        f"topicIdPartition={T_TEXT}:orders-2, id={S_TEXT}}}, "
        "customMetadata=Optional[CustomMetadata{3 bytes}], state=COPY_SEGMENT_FINISHED, "
        "eventTimestampMs=1718000002000, brokerId=2}"
    )
    assert remote_event(rec)["state"] == "COPY_SEGMENT_FINISHED"
    assert encode_remote_log_metadata("RemoteLogSegmentMetadataUpdateRecord", 0, rec.fields) == value


def test_partition_delete_and_snapshot():
    rec = decode_remote_log_metadata(
        b"\x01\x02\x00" + b"\x07orders" + T + i32(2) + b"\x00" + i32(1) + i64(5) + b"\x01" + b"\x00"
    )
    assert rec.error is None and remote_event(rec)["state"] == "DELETE_PARTITION_STARTED"
    snap = encode_remote_log_metadata(
        3, 0, {"segmentId": S_TEXT, "startOffset": 1, "endOffset": 2, "remoteLogSegmentState": 3}
    )
    rec = decode_remote_log_metadata(snap)
    assert rec.error is None
    event = remote_event(rec)
    assert (event["kind"], event["segment_id"], event["state"], event["topic"]) == (
        "segment_snapshot",
        S_TEXT,
        "DELETE_SEGMENT_FINISHED",
        None,
    )
    assert remote_dump_text(rec) is None


def test_without_txn_index_tag_and_older_dump_text():
    fields = decode_remote_log_metadata(SEGMENT_VALUE).fields
    fields["txnIndexEmpty"] = False
    value = encode_remote_log_metadata(0, 0, fields)
    assert value.endswith(b"\x00\x00")  # state, then an empty tag section
    rec = decode_remote_log_metadata(value)
    assert remote_dump_text(rec, with_txn_idx_empty=False).endswith("state=COPY_SEGMENT_STARTED}")


@pytest.mark.parametrize("api_key", sorted(REMOTE_SCHEMAS))
def test_round_trip_defaults_each_type(api_key):
    value = encode_remote_log_metadata(api_key, 0, {})
    rec = decode_remote_log_metadata(value)
    assert rec.error is None and encode_remote_log_metadata(api_key, 0, rec.fields) == value


def test_errors():
    assert decode_remote_log_metadata(b"\x01\x04\x00").error == "unknown apiKey 4"
    assert decode_remote_log_metadata(SEGMENT_VALUE[:-3]).error is not None
    assert remote_event(decode_remote_log_metadata(SEGMENT_VALUE[:-3])) is None
    with pytest.raises(ConfigError):
        encode_remote_log_metadata("PartitionRecord", 0, {})


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([b"\x01\x00\x00", b"\x01\x01\x00", b"\x01\x02\x00", b"\x01\x03\x00"]), st.binary(max_size=120))
def test_random_bodies_never_raise(header, body):
    rec = decode_remote_log_metadata(header + body)
    remote_event(rec)
    remote_dump_text(rec)


# ---------------------------------------------------------------------------------------------
# Kafka's --remote-log-metadata-decoder prints the same text for what the encoder writes


@pytest.mark.kafka
@pytest.mark.parametrize("kafka_version", ["4.3.1", "3.9.2"])
def test_kafka_dump_tool_prints_the_same_text(tmp_path, kafka_version, kafka_dist):
    import re

    from workbench.formats.batch import Record, encode_batch

    seg_id = {"topicIdPartition": {"name": "orders", "id": T_TEXT, "partition": 2}, "id": S_TEXT}
    values = [
        SEGMENT_VALUE,
        encode_remote_log_metadata(
            0,
            0,
            {
                "remoteLogSegmentId": seg_id,
                "startOffset": 5,
                "endOffset": 9,
                "brokerId": 3,
                "segmentLeaderEpochs": [{"leaderEpoch": 7, "offset": 5}],
                "customMetadata": b"xy",
                "remoteLogSegmentState": 0,
            },
        ),
        encode_remote_log_metadata(
            1,
            0,
            {
                "remoteLogSegmentId": seg_id,
                "brokerId": 2,
                "eventTimestampMs": 7,
                "customMetadata": b"abc",
                "remoteLogSegmentState": 1,
            },
        ),
        encode_remote_log_metadata(
            1, 0, {"remoteLogSegmentId": seg_id, "brokerId": 2, "eventTimestampMs": 8, "remoteLogSegmentState": 3}
        ),
        encode_remote_log_metadata(
            2,
            0,
            {
                "topicIdPartition": {"name": "orders", "id": T_TEXT, "partition": 2},
                "brokerId": 1,
                "eventTimestampMs": 9,
                "remotePartitionDeleteState": 2,
            },
        ),
    ]
    kafka = kafka_dist(kafka_version)
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(encode_batch([Record(i, 1, None, v, []) for i, v in enumerate(values)], base_offset=0))
    out = kafka.run_tool(
        "dump-log", ["--remote-log-metadata-decoder", "--files", str(seg)], timeout=180, heap="256m"
    ).stdout
    printed = re.findall(r"^\| offset: \d+ .*? payload: (.*)$", out, flags=re.M)
    with_txn = kafka.major >= 4
    assert printed == [remote_dump_text(decode_remote_log_metadata(v), with_txn_idx_empty=with_txn) for v in values]


# ---------------------------------------------------------------------------------------------
# real __remote_log_metadata segments (the tiered bundle of every pinned release) against the
# dump Kafka's --remote-log-metadata-decoder made of each


def _check_remote_segment(segment, dump, kafka_4: bool) -> tuple[int, int]:
    import re

    from workbench.formats.batch import read_batches
    from workbench.formats.problems import ProblemLog

    printed: dict[int, str] = {}
    for line in dump.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("| offset: "):
            m = re.match(r"^\| offset: (\d+) .*? payload: (Remote\w+\{.*)$", line)
            assert m is not None, f"record line without a decoded payload: {line[:200]}"
            printed[int(m.group(1))] = m.group(2)
    log = ProblemLog(str(segment))
    decoded = compared = 0
    with open(segment, "rb") as fh:
        for batch in read_batches(fh, str(segment), problems=log):
            if batch.is_control:
                continue
            for rec in batch.records(log):
                md = decode_remote_log_metadata(rec.value)
                assert md.error is None, f"offset {rec.offset}: {md.error}"
                assert remote_event(md) is not None
                assert remote_dump_text(md, with_txn_idx_empty=kafka_4) == printed[rec.offset], rec.offset
                compared += 1
                decoded += 1
    assert log.problems == []
    assert compared == len(printed), f"compared {compared} of {len(printed)} dumped records"
    return decoded, compared


@pytest.mark.kafka
@pytest.mark.parametrize("version", built_on("tiered"))
def test_real_remote_log_metadata(kafka_bundle, version):
    from pathlib import Path

    from tests.kafka_bundles import dump_entries

    bundle = Path(kafka_bundle("tiered", version))
    entries = [e for e in dump_entries(bundle) if "/__remote_log_metadata-" in e["file"]]
    assert entries, f"{bundle}: no __remote_log_metadata segment dumped"
    assert all("--remote-log-metadata-decoder" in e["args"] for e in entries)
    total = 0
    failures = []
    for e in entries:
        try:
            total += _check_remote_segment(bundle / e["file"], bundle / e["dump"], version.startswith("4"))[1]
        except (AssertionError, KeyError) as exc:
            failures.append(f"{e['file']}: {exc!r}"[:800])
    assert not failures, "\n".join(failures[:6])
    assert total > 0, f"{bundle}: no remote log metadata record compared"
