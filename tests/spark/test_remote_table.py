"""The ``remote`` table against Kafka's own ``kafka-dump-log.sh --remote-log-metadata-decoder``.

The dump prints each event's Java ``toString()`` (``RemoteLogSegmentMetadata{...}``,
``RemoteLogSegmentMetadataUpdate{...}``, ``RemotePartitionDeleteMetadata{...}``,
``RemoteLogSegmentMetadataSnapshot{...}``); those are parsed here field by field into the
expected rows. Kafka 3.9 prints no ``txnIdxEmpty`` (the tag came in 4.0): there it is false, as
Kafka 4 reads a record without the tag.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from tests.spark.internal_topics import (
    TS,
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
from workbench.spark.remote import REMOTE_SCHEMA
from workbench.spark.source import column_names

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

COLUMNS = column_names(REMOTE_SCHEMA)
_TIP = r"(?P<topic_id>[\w-]+):(?P<tp>[\w.-]+)"
_SEG_ID = rf"RemoteLogSegmentId\{{topicIdPartition={_TIP}, id=(?P<segment_id>[\w-]+)\}}"
_CUSTOM = r"(?P<custom>Optional\.empty|Optional\[CustomMetadata\{\d+ bytes\}\])"
_EPOCHS = r"segmentLeaderEpochs=\{(?P<epochs>[^}]*)\}"
_TXN = r"(?:, txnIdxEmpty=(?P<txn>true|false))?"
SHAPES = {
    "segment": ("RemoteLogSegmentMetadataRecord", 0, re.compile(
        rf"^RemoteLogSegmentMetadata\{{remoteLogSegmentId={_SEG_ID}, startOffset=(?P<start>-?\d+), "
        rf"endOffset=(?P<end>-?\d+), brokerId=(?P<broker>-?\d+), maxTimestampMs=(?P<max>-?\d+), "
        rf"eventTimestampMs=(?P<event>-?\d+), {_EPOCHS}, segmentSizeInBytes=(?P<size>-?\d+), "
        rf"customMetadata={_CUSTOM}, state=(?P<state>\w+){_TXN}\}}$")),
    "segment_update": ("RemoteLogSegmentMetadataUpdateRecord", 1, re.compile(
        rf"^RemoteLogSegmentMetadataUpdate\{{remoteLogSegmentId={_SEG_ID}, customMetadata={_CUSTOM}, "
        rf"state=(?P<state>\w+), eventTimestampMs=(?P<event>-?\d+), brokerId=(?P<broker>-?\d+)\}}$")),
    "partition_delete": ("RemotePartitionDeleteMetadataRecord", 2, re.compile(
        rf"^RemotePartitionDeleteMetadata\{{topicPartition={_TIP}, state=(?P<state>\w+), "
        rf"eventTimestampMs=(?P<event>-?\d+), brokerId=(?P<broker>-?\d+)\}}$")),
    "segment_snapshot": ("RemoteLogSegmentMetadataSnapshotRecord", 3, re.compile(
        rf"^RemoteLogSegmentMetadataSnapshot\{{segmentId=(?P<segment_id>[\w-]+), startOffset=(?P<start>-?\d+), "
        rf"endOffset=(?P<end>-?\d+), maxTimestampMs=(?P<max>-?\d+), {_EPOCHS}, "
        rf"segmentSizeInBytes=(?P<size>-?\d+), customMetadata={_CUSTOM}, state=(?P<state>\w+){_TXN}\}}$")),
}


def event_from_text(text: str) -> dict:
    """The columns of one event, from the ``toString()`` Kafka printed."""
    for event, (record_type, api_key, shape) in SHAPES.items():
        m = shape.match(text)
        if m is None:
            continue
        g = m.groupdict()
        row = {"record_type": record_type, "api_key": api_key, "version": 0, "event": event, "state": g["state"],
               "segment_id": g.get("segment_id"), "event_timestamp": stamp(int(g["event"])) if g.get("event") else None,
               "broker_id": int(g["broker"]) if g.get("broker") else None}
        if g.get("tp"):
            topic, _, partition = g["tp"].rpartition("-")
            row.update(topic=topic, topic_id=g["topic_id"], partition=int(partition))
        if g.get("start"):
            epochs = [e.split("=") for e in g["epochs"].split(", ")] if g["epochs"] else []
            row.update(start_offset=int(g["start"]), end_offset=int(g["end"]), max_timestamp=stamp(int(g["max"])),
                       segment_size_bytes=int(g["size"]), txn_index_empty=g["txn"] == "true",
                       segment_leader_epochs=[(int(e), int(o)) for e, o in epochs])
        custom = g["custom"] if "custom" in g else None
        if custom and custom != "Optional.empty":
            row["custom_metadata_size"] = int(re.search(r"\{(\d+) bytes", custom).group(1))
        return row
    raise AssertionError(f"not a remote log metadata event: {text}")


def rows_from_dump(records, node: int, path: str, partition: int) -> list[dict]:
    rows = []
    for batch, rec in records:
        assert not batch["is_control"]
        rows.append({"node_id": node, "path": path, "metadata_partition": partition,
                     "batch_position": batch["position"], "offset": rec["offset"], "timestamp": stamp(rec["timestamp"]),
                     **event_from_text(rec["payload"])})
    return rows


def frame(spark, rows: list[dict]):
    return spark.createDataFrame([tuple(r.get(c) for c in COLUMNS) for r in rows], REMOTE_SCHEMA)


def is_remote(topic: str) -> bool:
    return topic == "__remote_log_metadata"


def bundle_rows(root: Path, src: Path | None = None) -> list[dict]:
    rows = []
    for seg in segments(root, is_remote):
        dump = dump_of(src or root, (src or root) / seg.relative_to(root))
        rows += rows_from_dump(list(dumped_records(dump)), node_of(seg), str(seg), topic_partition(seg)[1])
    return rows


BUNDLES = scenario_params("tiered", without="consumer_lag")


@pytest.fixture(scope="module", params=BUNDLES, ids=[f"{s}-{v}" for s, v in BUNDLES])
def real(request, spark, kafka_bundle):
    root = Path(kafka_bundle(*request.param)).resolve()
    return root, workbench.load(workbench.open_bundle(root), spark)


def test_remote_equals_the_dump_tool_on_every_scenario_bundle_holding_it(spark, real):
    root, tables = real
    want = bundle_rows(root)
    assertDataFrameEqual(tables.remote, frame(spark, want))
    assert tables.problems_of("remote").count() == 0
    if segments(root, is_remote):
        states = {r["state"] for r in want}
        assert {"COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED"} <= states, states


def test_every_event_kind_against_kafka(spark, tmp_path):
    """Partition deletes, custom metadata, several leader epochs and a snapshot record, which the
    scenarios do not produce, judged by Kafka's dump tool."""
    from workbench.formats.remote import encode_remote_log_metadata

    kafka = kafka_default()
    tip = {"name": "orders.v2-x", "id": "sudG-Pp3QoCEeOL5TU1fcA", "partition": 3}
    sid = {"topicIdPartition": tip, "id": "7uv3LGU0TVycbGgpIoeCvQ"}
    epochs = [{"leaderEpoch": 0, "offset": 0}, {"leaderEpoch": 3, "offset": 50}]
    values = [encode_remote_log_metadata(0, 0, {
        "remoteLogSegmentId": sid, "startOffset": 0, "endOffset": 99, "brokerId": 2, "maxTimestampMs": TS,
        "eventTimestampMs": TS + 1, "segmentLeaderEpochs": epochs, "segmentSizeInBytes": 1000,
        "customMetadata": b"abc", "remoteLogSegmentState": 0, "txnIndexEmpty": False})]
    values += [encode_remote_log_metadata(1, 0, {
        "remoteLogSegmentId": sid, "brokerId": 2, "eventTimestampMs": TS + 2 + s,
        "customMetadata": b"abcd" if s == 1 else None, "remoteLogSegmentState": s}) for s in (1, 2, 3)]
    values += [encode_remote_log_metadata(2, 0, {
        "topicIdPartition": tip, "brokerId": 1, "eventTimestampMs": TS + 10 + s, "remotePartitionDeleteState": s})
        for s in (0, 1, 2)]
    values.append(encode_remote_log_metadata(3, 0, {
        "segmentId": "7uv3LGU0TVycbGgpIoeCvQ", "startOffset": 0, "endOffset": 99, "brokerId": 2,
        "maxTimestampMs": TS, "eventTimestampMs": TS + 20, "segmentLeaderEpochs": epochs[1:],
        "segmentSizeInBytes": 1000, "customMetadata": None, "remoteLogSegmentState": 1, "txnIndexEmpty": True}))
    batches = [encode_batch([Record(i, TS + i, None, v, [])], base_offset=i, producer_id=0, base_sequence=i)
               for i, v in enumerate(values)]
    seg = write_segment(tmp_path.resolve(), 2, "__remote_log_metadata-4", batches)
    want = rows_from_dump(list(dumped_records(kafka_dump(kafka, seg, "--remote-log-metadata-decoder"))), 2, str(seg), 4)
    snapshot = want[-1]
    assert snapshot["event"] == "segment_snapshot"
    snapshot.update(broker_id=2, event_timestamp=stamp(TS + 20))  # as written: the snapshot's text omits them
    assert {r["state"] for r in want} == {"COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED",
                                          "DELETE_SEGMENT_FINISHED", "DELETE_PARTITION_MARKED",
                                          "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED"}
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    assertDataFrameEqual(tables.remote, frame(spark, want))
    assert tables.problems_of("remote").count() == 0


def test_damaged_copy_keeps_every_readable_event(spark, kafka_bundle, tmp_path):
    src = Path(kafka_bundle("tiered")).resolve()
    root = copy_nodes(src, tmp_path / "bundle").resolve()
    [seg] = segments(root, is_remote)
    intact = bundle_rows(root, src)
    batches = list(read_batches(open(seg, "rb"), str(seg)))
    victim, last = batches[len(batches) // 2], batches[-1]
    data = bytearray(seg.read_bytes())
    at = first_value_position(data, victim.position)
    data[at + 1] = 0x07                              # the frame's apiKey: unknown
    del data[last.position + 50:]                    # the last batch cut short
    seg.write_bytes(bytes(data))
    want = []
    for r in intact:
        if r["batch_position"] == last.position:
            continue
        if r["batch_position"] == victim.position:
            r = {k: r[k] for k in ("node_id", "path", "metadata_partition", "batch_position", "offset", "timestamp")}
            r.update(record_type="Unknown", api_key=7, version=0)
        want.append(r)
    tables = workbench.load(workbench.open_bundle(root), spark)
    assertDataFrameEqual(tables.remote.drop("error"), frame(spark, want).drop("error"))
    assert [r.batch_position for r in tables.remote.where("error is not null").collect()] == [victim.position]
    assertDataFrameEqual(tables.problems.select("path", "position", "kind"), spark.createDataFrame(
        [(str(seg), victim.position, "crc_mismatch"), (str(seg), victim.position, "decode_error"),
         (str(seg), last.position, "truncated")], "path string, position long, kind string"))
