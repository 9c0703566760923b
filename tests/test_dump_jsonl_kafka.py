"""``workbench dump --format jsonl`` agrees field by field with kafka-dump-log on real Kafka files.

For every segment and snapshot of every scenario bundle, the batches and records of our JSON
lines are compared with those parsed from the dump text Kafka's own tool printed for the same
file: whole lists of every field both outputs carry.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from peer.scenario import built_on
from workbench.dump import dump_files
from workbench.formats.dumptext import parse_kafka_dump

pytestmark = pytest.mark.kafka

SCENARIOS = ("isr", "consumer_lag", "quorum", "tiered", "mm2")
#: (scenario, release) of every bundle the default sets build.
PAIRS = [(name, version) for name in SCENARIOS for version in built_on(name)]

BATCH_FIELDS = {  # jsonl name -> parsed dump-text name
    "position": "position", "baseOffset": "base_offset", "lastOffset": "last_offset", "count": "record_count",
    "size": "size", "magic": "magic", "compression": "compression", "timestampType": "timestamp_type",
    "maxTimestamp": "max_timestamp", "producerId": "producer_id", "producerEpoch": "producer_epoch",
    "baseSequence": "base_sequence", "isTransactional": "is_transactional", "isControl": "is_control",
    "partitionLeaderEpoch": "partition_leader_epoch", "crc": "crc", "isValid": "crc_valid",
}
RECORD_FIELDS = {"offset": "offset", "timestamp": "timestamp", "keySize": "key_size", "valueSize": "value_size",
                 "headerKeys": "header_keys"}


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=[f"{n}-{v}" for n, v in PAIRS])
def test_jsonl_agrees_with_kafka_dump_log(kafka_bundle, name, version):
    bundle = Path(kafka_bundle(name, version))
    manifest = json.loads((bundle / "manifest.json").read_text())
    compared = 0
    for entry in manifest["dumps"]:
        binary = bundle / entry["file"]
        text = (bundle / entry["dump"]).read_text(encoding="utf-8", errors="surrogateescape")
        rows = list(parse_kafka_dump(text))
        if not any(r["kind"] == "batch" for r in rows):
            continue  # index or producer-snapshot dumps
        out = io.StringIO()
        assert dump_files([str(binary)], out=out) == 0, entry["file"]
        ours = [json.loads(line) for line in out.getvalue().splitlines()]
        want_batches = [tuple(r[k] for k in BATCH_FIELDS.values()) for r in rows if r["kind"] == "batch"]
        got_batches = [tuple(o[k] for k in BATCH_FIELDS) for o in ours if o["kind"] == "batch"]
        assert got_batches == want_batches, entry["file"]
        if "--deep-iteration" in entry["args"] or "--print-data-log" in entry["args"] or any(
                a.endswith("-decoder") for a in entry["args"]):
            want_records = [tuple(r[k] for k in RECORD_FIELDS.values()) for r in rows if r["kind"] == "record"]
            got_records = [tuple(o[k] for k in RECORD_FIELDS) for o in ours if o["kind"] == "record"]
            assert got_records == want_records, entry["file"]
        compared += 1
    assert compared > 0


def test_jsonl_decodes_every_internal_topic_of_the_bundles(kafka_bundle):
    """Records of the internal topics the bundles hold carry their decoded payload, none in error:
    KRaft metadata, consumer offsets, remote log metadata, MirrorMaker 2 offset syncs,
    checkpoints, heartbeats and Connect offsets."""
    import os

    from workbench.formats.topics import decoder_for

    seen: dict[str, int] = {}
    errors = []
    for name, version in PAIRS:
        if os.environ.get("KAFKA_WORKBENCH_NO_BUILD") == "1":
            from peer.scenario import bundle_dir, is_complete

            if not is_complete(bundle_dir(name, version)):
                continue
        bundle = Path(kafka_bundle(name, version))
        for path in sorted((bundle / "nodes").glob("*/logs/**/*.log")):
            decoder = decoder_for(path)
            if decoder == "none":
                continue
            out = io.StringIO()
            assert dump_files([str(path)], out=out) == 0, path
            for obj in map(json.loads, out.getvalue().splitlines()):
                if obj["kind"] != "record" or "control" in obj:
                    continue
                payload = obj.get("payload")
                if payload is None:  # metadata tombstones do not exist; coordinator ones carry "tombstone"
                    errors.append(f"{path}: offset {obj['offset']} has no payload")
                    continue
                seen[decoder] = seen.get(decoder, 0) + 1
                if payload.get("error"):
                    errors.append(f"{path}: offset {obj['offset']}: {payload['error']}")
    assert not errors, "\n".join(errors[:10])
    if os.environ.get("KAFKA_WORKBENCH_NO_BUILD") != "1":
        assert {"cluster-metadata", "offsets", "remote-log-metadata", "mm2-offset-syncs", "mm2-checkpoints",
                "mm2-heartbeats", "mm2-connect-offsets"} <= set(seen), seen
    print(f"\ndecoded records by decoder: {seen}")
