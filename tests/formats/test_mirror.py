"""Tests of MirrorMaker 2 internal records (workbench.formats.mirror), reference §7."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peer.scenario import built_on
from workbench.errors import ConfigError
from workbench.formats.mirror import (
    classify_mirror_topic,
    decode_checkpoint,
    decode_connect_offset,
    decode_heartbeat,
    decode_offset_sync,
    encode_checkpoint,
    encode_connect_offset,
    encode_heartbeat,
    encode_offset_sync,
    mirror_text,
)


def s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def test_offset_sync_known_bytes():
    key = s16("orders") + struct.pack(">i", 3)
    value = struct.pack(">qq", 1500, 1498)
    rec = decode_offset_sync(key, value)
    assert rec.error is None and rec.kind == "offset_sync"
    assert rec.key == {"topic": "orders", "partition": 3} and rec.value == {"upstreamOffset": 1500, "offset": 1498}
    assert encode_offset_sync("orders", 3, 1500, 1498) == (key, value)
    assert mirror_text(rec) == "OffsetSync{topicPartition=orders-3, upstreamOffset=1500, downstreamOffset=1498}"


def test_checkpoint_known_bytes():
    key = s16("g1") + s16("A.orders") + struct.pack(">i", 0)
    value = struct.pack(">hqq", 0, 100, 97) + s16("meta")
    rec = decode_checkpoint(key, value)
    assert rec.error is None
    assert rec.key == {"group": "g1", "topic": "A.orders", "partition": 0}
    assert rec.value == {"version": 0, "upstreamOffset": 100, "offset": 97, "metadata": "meta"}
    assert encode_checkpoint("g1", "A.orders", 0, 100, 97, "meta") == (key, value)
    assert (
        mirror_text(rec)
        == "Checkpoint{consumerGroupId=g1, topicPartition=A.orders-0, upstreamOffset=100, downstreamOffset=97, "
        "metadata=meta}"
    )


def test_heartbeat_known_bytes():
    key = s16("A") + s16("B")
    value = struct.pack(">hq", 0, 1718000000000)
    rec = decode_heartbeat(key, value)
    assert rec.key == {"sourceClusterAlias": "A", "targetClusterAlias": "B"}
    assert rec.value == {"version": 0, "timestamp": 1718000000000}
    assert encode_heartbeat("A", "B", 1718000000000) == (key, value)


def test_higher_value_version_read_as_v0():
    rec = decode_heartbeat(s16("A") + s16("B"), struct.pack(">hq", 1, 5) + b"extra")
    assert rec.error is None and rec.value == {"version": 1, "timestamp": 5}


def test_tombstone_and_errors():
    rec = decode_offset_sync(s16("t") + struct.pack(">i", 0), None)
    assert rec.error is None and rec.value is None and mirror_text(rec) is None
    assert "without a key" in decode_checkpoint(None, b"").error
    assert "garbage" in decode_offset_sync(s16("t") + struct.pack(">i", 0) + b"x", None).error
    assert "value at byte" in decode_offset_sync(s16("t") + struct.pack(">i", 0), b"\x00").error
    assert "no version" in decode_heartbeat(s16("A") + s16("B"), b"\x00").error
    assert "negative" in decode_heartbeat(s16("A") + s16("B"), struct.pack(">hq", -1, 0)).error
    assert "garbage" in decode_heartbeat(s16("A") + s16("B"), struct.pack(">hq", 0, 0) + b"x").error
    assert "key at byte" in decode_heartbeat(b"\x00\x05ab", None).error


@pytest.mark.parametrize(
    "key, kind, fields",
    [
        (
            b'["MirrorSourceConnector",{"partition":2,"topic":"orders","cluster":"A"}]',
            "source_offset",
            {"connector": "MirrorSourceConnector", "partition": 2, "topic": "orders", "cluster": "A"},
        ),
        (
            b'["MirrorCheckpointConnector",{"group":"g","partition":0,"topic":"A.orders"}]',
            "checkpoint_offset",
            {"connector": "MirrorCheckpointConnector", "group": "g", "partition": 0, "topic": "A.orders"},
        ),
        (
            b'["MirrorHeartbeatConnector",{"sourceClusterAlias":"A","targetClusterAlias":"B"}]',
            "heartbeat_offset",
            {"connector": "MirrorHeartbeatConnector", "sourceClusterAlias": "A", "targetClusterAlias": "B"},
        ),
        (b'["jdbc-source",{"table":"t"}]', "connect_offset", {"connector": "jdbc-source", "table": "t"}),
    ],
)
def test_connect_offsets(key, kind, fields):
    rec = decode_connect_offset(key, b'{"offset":41}')
    assert rec.error is None and rec.kind == kind and rec.key == fields and rec.value == {"offset": 41}
    assert decode_connect_offset(key, None).value is None


def test_connect_offset_round_trip_and_errors():
    k, v = encode_connect_offset("MirrorSourceConnector", {"cluster": "A", "partition": 0, "topic": "é"}, 7)
    rec = decode_connect_offset(k, v)
    assert rec.key["topic"] == "é" and rec.value == {"offset": 7}
    assert encode_connect_offset("c", {"x": 1}, None)[1] is None
    assert "not JSON" in decode_connect_offset(b"[", None).error
    assert "not [connectorName" in decode_connect_offset(b'{"a":1}', None).error
    assert "not JSON" in decode_connect_offset(b'["c",{}]', b"\xff").error
    assert "not a JSON object" in decode_connect_offset(b'["c",{}]', b"5").error
    with pytest.raises(ConfigError):
        encode_connect_offset("c", ["x"], 1)


@pytest.mark.parametrize(
    "topic, expected",
    [
        ("mm2-offset-syncs.B.internal", ("offset_syncs", "B")),
        ("A.checkpoints.internal", ("checkpoints", "A")),
        ("heartbeats", ("heartbeats", None)),
        ("A.heartbeats", ("heartbeats", "A")),
        ("C.A.heartbeats", ("heartbeats", "C.A")),
        ("mm2-offsets.A.internal", ("connect_offsets", "A")),
        ("orders", None),
        ("checkpoints.internal", None),
    ],
)
def test_classify_topics(topic, expected):
    assert classify_mirror_topic(topic) == expected


def test_classify_custom_separator():
    assert classify_mirror_topic("A_heartbeats", separator="_") == ("heartbeats", "A")
    assert classify_mirror_topic("A_checkpoints_internal", separator="_") == ("checkpoints", "A")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=40)))
def test_random_bytes_never_raise(key, value):
    for decoder in (decode_offset_sync, decode_checkpoint, decode_heartbeat, decode_connect_offset):
        mirror_text(decoder(key, value))


# ---------------------------------------------------------------------------------------------
# MM2's own classes (connect-mirror jar) serialize the same bytes and read ours back

_JAVA = r"""package org.apache.kafka.connect.mirror;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/** Prints MM2's own serialization of a few records and decodes records given as hex. */
public class WorkbenchMirrorCheck {
    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    static byte[] unhex(String s) {
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return out;
    }

    public static void main(String[] args) {
        if (args.length == 0) {
            OffsetSync o = new OffsetSync(new TopicPartition("orders", 3), 1500, 1498);
            System.out.println("offset_sync " + hex(o.recordKey()) + " " + hex(o.recordValue()));
            Checkpoint c = new Checkpoint("g1", new TopicPartition("A.orders", 0), 100, 97, "meta");
            System.out.println("checkpoint " + hex(c.recordKey()) + " " + hex(c.recordValue()));
            Heartbeat h = new Heartbeat("A", "B", 1718000000000L);
            System.out.println("heartbeat " + hex(h.recordKey()) + " " + hex(h.recordValue()));
            return;
        }
        ConsumerRecord<byte[], byte[]> r = new ConsumerRecord<>("t", 0, 0L, unhex(args[1]), unhex(args[2]));
        switch (args[0]) {
            case "offset_sync": System.out.println(OffsetSync.deserializeRecord(r)); break;
            case "checkpoint": System.out.println(Checkpoint.deserializeRecord(r)); break;
            default: System.out.println(Heartbeat.deserializeRecord(r));
        }
    }
}
"""


@pytest.mark.kafka
def test_mm2_classes_agree(tmp_path, kafka_dist):
    import shutil
    import subprocess

    lib = kafka_dist().lib
    assert shutil.which("javac"), "javac (a JDK) is needed, as for the peer's scenarios"
    assert list(lib.glob("connect-mirror-*.jar")), f"no connect-mirror jar in {lib}"
    src = tmp_path / "org/apache/kafka/connect/mirror/WorkbenchMirrorCheck.java"
    src.parent.mkdir(parents=True)
    src.write_text(_JAVA)
    classpath = f"{lib}/*"
    subprocess.run(
        ["javac", "-d", str(tmp_path / "out"), "-cp", classpath, str(src)], check=True, capture_output=True, timeout=120
    )
    run_cp = f"{classpath}:{tmp_path / 'out'}"

    def java(*args: str) -> str:
        return subprocess.run(
            ["java", "-cp", run_cp, "org.apache.kafka.connect.mirror.WorkbenchMirrorCheck", *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout.strip()

    ours = {
        "offset_sync": encode_offset_sync("orders", 3, 1500, 1498),
        "checkpoint": encode_checkpoint("g1", "A.orders", 0, 100, 97, "meta"),
        "heartbeat": encode_heartbeat("A", "B", 1718000000000),
    }
    for line in java().splitlines():
        kind, key_hex, value_hex = line.split()
        assert (bytes.fromhex(key_hex), bytes.fromhex(value_hex)) == ours[kind], kind
    decoders = {"offset_sync": decode_offset_sync, "checkpoint": decode_checkpoint, "heartbeat": decode_heartbeat}
    for kind, (k, v) in ours.items():
        assert java(kind, k.hex(), v.hex()) == mirror_text(decoders[kind](k, v))


# ---------------------------------------------------------------------------------------------
# real MirrorMaker 2 topics (the mm2 bundle of every pinned release)

from pathlib import Path  # noqa: E402

_DECODERS = {
    "offset_syncs": decode_offset_sync,
    "checkpoints": decode_checkpoint,
    "heartbeats": decode_heartbeat,
    "connect_offsets": decode_connect_offset,
}


def _check_mirror_segment(kind: str, segment: str) -> int:
    from workbench.formats.batch import read_batches
    from workbench.formats.problems import ProblemLog

    log = ProblemLog(segment)
    n = 0
    with open(segment, "rb") as fh:
        for batch in read_batches(fh, segment, problems=log):
            if batch.is_control:
                continue
            for rec in batch.records(log):
                decoded = _DECODERS[kind](rec.key, rec.value)
                assert decoded.error is None, f"offset {rec.offset}: {decoded.error}"
                if rec.value is not None and kind != "connect_offsets":
                    assert mirror_text(decoded) is not None
                n += 1
    assert log.problems == []
    return n


@pytest.mark.kafka
@pytest.mark.parametrize("version", built_on("mm2"))
def test_real_mirror_topics_decode(kafka_bundle, version):
    from collections import Counter

    bundle = Path(kafka_bundle("mm2", version))
    counts: Counter = Counter()
    failures = []
    for seg in sorted(bundle.glob("nodes/*/logs/*/*.log")):
        kind = classify_mirror_topic(seg.parent.name.rsplit("-", 1)[0])
        if kind is None:
            continue
        try:
            counts[kind[0]] += _check_mirror_segment(kind[0], str(seg))
        except AssertionError as exc:
            failures.append(f"{seg}: {str(exc)[:600]}")
    assert not failures, "\n".join(failures[:6])
    # MirrorMaker 2 wrote offset syncs, checkpoints, heartbeats and its connector offsets
    assert all(counts[k] > 0 for k in _DECODERS), counts
