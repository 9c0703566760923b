"""Helpers of the internal-topic table tests: Kafka's dump text as rows, scenario bundles, damaged copies.

Expected rows are built from what Kafka's own tools printed (``dumps/<file>.txt`` of a scenario
bundle, written by ``kafka-dump-log.sh`` with the topic's decoder), parsed by
:func:`workbench.formats.dumptext_parse.parse_kafka_dump`, never from the table's own reader.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from workbench.formats.dumptext_parse import parse_kafka_dump

#: Both pinned Kafka versions.
VERSIONS = ("4.3.1", "3.9.2")


def scenario_params(*holding: str, without: str) -> list[tuple[str, str]]:
    """The scenario bundles whose clusters write a topic (``holding``), of both versions, and one
    bundle of the default version without it (its table must be empty).

    Only bundles that hold the topic are asked for of both versions: a cold cache builds each
    missing bundle (1.5-2.5 min), so the others are not built for an empty table.
    """
    from peer.scenario import built_on

    return [(s, v) for v in VERSIONS for s in holding if v in built_on(s)] + [(without, VERSIONS[0])]

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def stamp(ms: int | None) -> datetime | None:
    """Epoch milliseconds as the UTC datetime Spark gives back for a timestamp column (None stays None)."""
    if ms is None or ms < 0:
        return None
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


def segments(root: Path, topic_matches: Any) -> list[Path]:
    """The ``.log`` segments under ``root/nodes`` whose directory's topic satisfies ``topic_matches``."""
    out = []
    for seg in sorted(root.glob("nodes/*/logs/*/*.log")):
        m = _PARTITION_DIR.match(seg.parent.name)
        if m and topic_matches(m["topic"]):
            out.append(seg)
    return out


def node_of(seg: Path) -> int:
    """The node id of a segment under ``nodes/<id>/logs/``."""
    return int(seg.parents[2].name)


def topic_partition(seg: Path) -> tuple[str, int]:
    m = _PARTITION_DIR.match(seg.parent.name)
    assert m is not None, seg
    return m["topic"], int(m["partition"])


def dump_of(root: Path, seg: Path) -> Path:
    """The dump text the scenario wrote for ``seg`` (from the manifest's ``dumps`` list)."""
    manifest = json.loads((root / "manifest.json").read_text())
    rel = str(seg.relative_to(root))
    for d in manifest["dumps"]:
        if d["file"] == rel:
            return root / d["dump"]
    raise AssertionError(f"no dump of {rel} in the manifest")


def dumped_records(text_or_path: str | Path) -> Iterator[tuple[dict, dict]]:
    """``(batch row, record row)`` of every record line of a dump, from Kafka's own text."""
    batch: dict = {}
    source = Path(text_or_path) if isinstance(text_or_path, Path) else text_or_path
    for row in parse_kafka_dump(source):
        assert row["kind"] != "problem", row
        if row["kind"] == "batch":
            batch = row
        elif row["kind"] == "record":
            assert row["batch_position"] == batch["position"]
            yield batch, row


def copy_nodes(src: Path, dst: Path) -> Path:
    """A copy of a bundle's ``nodes/`` (and its manifest and MirrorMaker 2 configuration) to damage."""
    shutil.copytree(src / "nodes", dst / "nodes")
    for name in ("manifest.json", "mm2.properties"):
        if (src / name).exists():
            shutil.copy(src / name, dst / name)
    return dst


def _uvarint(data: bytes | bytearray, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def first_value_position(data: bytes | bytearray, batch_position: int) -> int:
    """Byte position of the value of the first record of an uncompressed v2 batch (reference §1.2)."""
    pos = batch_position + 61
    _, pos = _uvarint(data, pos)        # record length
    pos += 1                            # attributes
    _, pos = _uvarint(data, pos)        # timestamp delta
    _, pos = _uvarint(data, pos)        # offset delta
    key_len, pos = _uvarint(data, pos)
    key_len = (key_len >> 1) ^ -(key_len & 1)
    pos += max(key_len, 0)
    value_len, pos = _uvarint(data, pos)
    assert (value_len >> 1) ^ -(value_len & 1) > 2, "the first record has no value to damage"
    return pos


# ---------------------------------------------------------------------------------------------
# A __consumer_offsets segment of every kind of record, for Kafka's dump tool to judge

TS = 1_700_000_000_000
TOPIC_ID = "hvI-ZSuAQk2SaChUz3LKEQ"


def kafka_default():
    """The default pinned Kafka release (its jars fetched), or a skip."""
    import pytest

    from peer.kafka import DEFAULT_VERSION, STAMP, fetch, lib_dir

    if not (lib_dir(DEFAULT_VERSION) / STAMP).exists():
        pytest.skip(f"Kafka {DEFAULT_VERSION} jars not fetched (make kafka)")
    return fetch(DEFAULT_VERSION)


def group_record_samples(kafka_lib: str) -> list[tuple[bytes, bytes | None]]:
    """One record of every non-commit ``__consumer_offsets`` type this Kafka release knows, every
    field set, and a tombstone of each; classic group metadata of consumer and connect groups."""
    from tests.formats.test_coordinator import _prune, _release_schemas
    from tests.formats.test_metadata import _sample
    from workbench.formats.coordinator import (
        OFFSETS_RECORD_TYPES,
        _encode_coordinator,
        encode_consumer_assignment,
        encode_consumer_subscription,
        encode_offsets_record,
    )
    from workbench.formats.messages import VersionRange

    known = _release_schemas(kafka_lib)
    out: list[tuple[bytes, bytes | None]] = []
    for rt in OFFSETS_RECORD_TYPES.values():
        if rt.record_type in (0, 1, 2) or rt.key.name not in known or rt.value.name not in known:
            continue
        theirs = known[rt.value.name]
        kv = rt.key.valid_versions[0]
        key = {f.json_name: _sample(f, kv, i, ascii_only=True) for i, f in enumerate(rt.key.fields)}
        version = min(rt.value.valid_versions[1], theirs.valid_versions[1])
        value = {f.json_name: _sample(f, version, i, ascii_only=True) for i, f in enumerate(rt.value.fields)
                 if VersionRange.parse(f.versions).contains(version)}
        if "state" in value:
            value["state"] = 1
        out.append(_encode_coordinator(OFFSETS_RECORD_TYPES, rt.record_type, key,
                                       _prune(value, rt.value.fields, theirs.fields), version, None))
        out.append(_encode_coordinator(OFFSETS_RECORD_TYPES, rt.record_type, key, None, None, None))
    member = {
        "memberId": "m1", "groupInstanceId": "i1", "clientId": "c1", "clientHost": "/10.0.0.1",
        "rebalanceTimeout": 300000, "sessionTimeout": 45000,
        "subscription": encode_consumer_subscription({"topics": ["orders", "payments"]}, 1),
        "assignment": encode_consumer_assignment(
            {"assignedPartitions": [{"topic": "orders", "partitions": [0, 2]}]}, 1),
    }
    empty = {"memberId": "m2", "groupInstanceId": None, "clientId": "c2", "clientHost": "/10.0.0.2",
             "rebalanceTimeout": 1000, "sessionTimeout": 10000,
             "subscription": encode_consumer_subscription({"topics": ["orders"]}, 0), "assignment": b""}
    out.append(encode_offsets_record(2, {"group": "classic"}, {
        "protocolType": "consumer", "generation": 7, "protocol": "range", "leader": "m1",
        "currentStateTimestamp": TS, "members": [member, empty]}))
    out.append(encode_offsets_record(2, {"group": "connect-cluster"}, {
        "protocolType": "connect", "generation": 2, "protocol": "sessioned", "leader": "w1",
        "members": [{"memberId": "w1", "clientId": "worker", "clientHost": "/h", "sessionTimeout": 10000,
                     "subscription": b"\x00\x01opaque", "assignment": b"\x00\x01x"}]}, value_version=1))
    out.append(encode_offsets_record(2, {"group": "junk"}, {"protocolType": "consumer", "generation": 1, "members": [
        {"memberId": "m3", "clientId": "c3", "clientHost": "/h", "sessionTimeout": 10000,
         "subscription": b"\x00\x07junk", "assignment": b""}]}))  # a subscription that does not decode
    out.append(encode_offsets_record(2, {"group": "empty"}, {"protocolType": "consumer", "generation": 8,
                                                             "protocol": None, "leader": None, "members": []}))
    out.append(encode_offsets_record(2, {"group": "empty"}, None))
    return out


def coordinator_batches(kafka_lib: str) -> list[bytes]:
    """Batches of a ``__consumer_offsets`` segment: commits of every value version, tombstones,
    committed, aborted and open transactions, a compressed batch, and every group record."""
    from workbench.formats.batch import Record, encode_batch
    from workbench.formats.control import encode_control_record
    from workbench.formats.coordinator import encode_offsets_record

    def commit(group: str, partition: int, offset: int, version: int = 3, **extra: Any) -> tuple[bytes, bytes]:
        value = {"offset": offset, "leaderEpoch": 4, "metadata": f"m{offset}", "commitTimestamp": TS + offset,
                 **extra}
        return encode_offsets_record(1, {"group": group, "topic": "orders", "partition": partition}, value,
                                     value_version=version)

    plan: list[tuple[dict, list[tuple[bytes, bytes | None]]]] = [
        ({}, [commit("g1", 0, 100), commit("g1", 1, 101, 0), commit("g1", 2, 102, 1, expireTimestamp=TS + 9999),
              commit("g1", 3, 103, 2), commit("g1", 4, 104, 4, topicId=TOPIC_ID),
              encode_offsets_record(0, {"group": "g0", "topic": "orders", "partition": 0},
                                    {"offset": 5, "metadata": "", "commitTimestamp": TS})]),
        ({}, [encode_offsets_record(1, {"group": "g1", "topic": "orders", "partition": 1}, None)]),
        ({"producer_id": 1000, "producer_epoch": 1, "is_transactional": True, "base_sequence": 0},
         [commit("eos", 0, 10), commit("eos", 1, 11)]),
        ({"producer_id": 2000, "producer_epoch": 0, "is_transactional": True, "base_sequence": 0},
         [commit("eos-aborted", 0, 20)]),
        ({"producer_id": 1000, "producer_epoch": 1, "is_transactional": True, "is_control": True},
         [encode_control_record("COMMIT", {"coordinatorEpoch": 3})]),
        ({"producer_id": 2000, "producer_epoch": 0, "is_transactional": True, "is_control": True},
         [encode_control_record("ABORT", {"coordinatorEpoch": 3})]),
        ({"producer_id": 3000, "producer_epoch": 0, "is_transactional": True, "base_sequence": 0},
         [commit("eos-open", 0, 30)]),
        ({"compression": "zstd"}, [commit("zipped", p, 200 + p) for p in range(5)]),
        ({}, group_record_samples(kafka_lib)),
    ]
    out, offset = [], 0
    for kwargs, records in plan:
        recs = [Record(offset + i, TS + offset + i, k, v, []) for i, (k, v) in enumerate(records)]
        out.append(encode_batch(recs, base_offset=offset, partition_leader_epoch=0, **kwargs))
        offset += len(recs)
    return out


def write_segment(root: Path, node: int, topic_dir: str, batches: list[bytes]) -> Path:
    """``root/nodes/<node>/logs/<topic_dir>/00000000000000000000.log`` holding ``batches``."""
    seg = root / "nodes" / str(node) / "logs" / topic_dir / "00000000000000000000.log"
    seg.parent.mkdir(parents=True, exist_ok=True)
    seg.write_bytes(b"".join(batches))
    return seg


def kafka_dump(kafka: Any, seg: Path, *args: str) -> str:
    """Kafka's ``kafka-dump-log.sh`` text of ``seg`` (with ``args``: the decoder)."""
    result = kafka.run_tool("dump-log", [*args, "--files", str(seg)], timeout=180, heap="256m")
    assert "Exception" not in result.stderr, result.stderr[-3000:]
    return result.stdout
