"""``__remote_log_metadata`` records (tiered storage, KIP-405; reference §8).

Values use the metadata frame (``uvarint frameVersion=1 | uvarint apiKey | uvarint version |
flexible body``, see :mod:`workbench.formats.metadata`) with the storage module's own apiKey
namespace:

====== ======================================= ===========================================
apiKey record                                  meaning
====== ======================================= ===========================================
0      RemoteLogSegmentMetadataRecord          a segment copy starts (COPY_SEGMENT_STARTED)
1      RemoteLogSegmentMetadataUpdateRecord    a segment changes state
2      RemotePartitionDeleteMetadataRecord     partition-level deletion state
3      RemoteLogSegmentMetadataSnapshotRecord  snapshot form of segment metadata
====== ======================================= ===========================================

Examples
--------
>>> value = encode_remote_log_metadata("RemotePartitionDeleteMetadataRecord", 0, {
...     "topicIdPartition": {"name": "orders", "id": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 0},
...     "brokerId": 1, "eventTimestampMs": 5, "remotePartitionDeleteState": 0})
>>> rec = decode_remote_log_metadata(value)
>>> rec.type_name, remote_event(rec)["state"]
('REMOTE_PARTITION_DELETE_METADATA_RECORD', 'DELETE_PARTITION_MARKED')
"""

from __future__ import annotations

from workbench.formats.messages import Field as F
from workbench.formats.messages import Schema
from workbench.formats.metadata import MetadataRecord, decode_framed, encode_framed, schema_for

__all__ = [
    "REMOTE_PARTITION_DELETE_STATES",
    "REMOTE_SCHEMAS",
    "REMOTE_SEGMENT_STATES",
    "decode_remote_log_metadata",
    "encode_remote_log_metadata",
    "remote_dump_text",
    "remote_event",
]

REMOTE_SEGMENT_STATES = {
    0: "COPY_SEGMENT_STARTED",
    1: "COPY_SEGMENT_FINISHED",
    2: "DELETE_SEGMENT_STARTED",
    3: "DELETE_SEGMENT_FINISHED",
}
REMOTE_PARTITION_DELETE_STATES = {
    0: "DELETE_PARTITION_MARKED",
    1: "DELETE_PARTITION_STARTED",
    2: "DELETE_PARTITION_FINISHED",
}

# ---------------------------------------------------------------------------------------------
# Layouts (reference §8.2)

_TOPIC_ID_PARTITION = (F("Name", "string"), F("Id", "uuid"), F("Partition", "int32"))
_SEGMENT_ID = (
    F("TopicIdPartition", "TopicIdPartitionEntry", fields=_TOPIC_ID_PARTITION),
    F("Id", "uuid"),
)
_LEADER_EPOCHS = (F("LeaderEpoch", "int32"), F("Offset", "int64"))

_SCHEMAS = [
    Schema(
        "RemoteLogSegmentMetadataRecord",
        0,
        (0, 0),
        "0+",
        [
            F("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", fields=_SEGMENT_ID),
            F("StartOffset", "int64"),
            F("EndOffset", "int64"),
            F("BrokerId", "int32"),
            F("MaxTimestampMs", "int64"),
            F("EventTimestampMs", "int64"),
            F("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", fields=_LEADER_EPOCHS),
            F("SegmentSizeInBytes", "int32"),
            F("CustomMetadata", "bytes", nullable="0+", default=None),
            F("RemoteLogSegmentState", "int8"),
            F("TxnIndexEmpty", "bool", tag=0, tagged_versions="0+"),
        ],
    ),
    Schema(
        "RemoteLogSegmentMetadataUpdateRecord",
        1,
        (0, 0),
        "0+",
        [
            F("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", fields=_SEGMENT_ID),
            F("BrokerId", "int32"),
            F("EventTimestampMs", "int64"),
            F("CustomMetadata", "bytes", nullable="0+", default=None),
            F("RemoteLogSegmentState", "int8"),
        ],
    ),
    Schema(
        "RemotePartitionDeleteMetadataRecord",
        2,
        (0, 0),
        "0+",
        [
            F("TopicIdPartition", "TopicIdPartitionEntry", fields=_TOPIC_ID_PARTITION),
            F("BrokerId", "int32"),
            F("EventTimestampMs", "int64"),
            F("RemotePartitionDeleteState", "int8"),
        ],
    ),
    Schema(
        "RemoteLogSegmentMetadataSnapshotRecord",
        3,
        (0, 0),
        "0+",
        [
            F("SegmentId", "uuid"),
            F("StartOffset", "int64"),
            F("EndOffset", "int64"),
            F("BrokerId", "int32"),
            F("MaxTimestampMs", "int64"),
            F("EventTimestampMs", "int64"),
            F("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", fields=_LEADER_EPOCHS),
            F("SegmentSizeInBytes", "int32"),
            F("CustomMetadata", "bytes", nullable="0+", default=None),
            F("RemoteLogSegmentState", "int8"),
            F("TxnIndexEmpty", "bool", tag=0, tagged_versions="0+"),
        ],
    ),
]

REMOTE_SCHEMAS: dict[int, Schema] = {s.api_key: s for s in _SCHEMAS if s.api_key is not None}
"""``__remote_log_metadata`` schemas by apiKey (a namespace of their own)."""


def decode_remote_log_metadata(value: bytes | memoryview | None) -> MetadataRecord:
    """Decode one ``__remote_log_metadata`` value (never raises for bad bytes).

    >>> decode_remote_log_metadata(b"\\x01\\x07\\x00").error
    'unknown apiKey 7'
    """
    return decode_framed(value, REMOTE_SCHEMAS, "remote log metadata")


def encode_remote_log_metadata(
    name_or_api_key: str | int, version: int, fields: dict, unknown_tags: dict[int, bytes] | None = None
) -> bytes:
    """Encode a ``__remote_log_metadata`` value as the topic-based RLMM writes it (ConfigError if it does not fit)."""
    return encode_framed(schema_for(name_or_api_key, REMOTE_SCHEMAS), version, fields, unknown_tags)


def remote_event(record: MetadataRecord) -> dict | None:
    """A flat lifecycle event of a decoded record (``None`` if it was not decoded).

    Keys: ``kind`` (segment, segment_update, partition_delete, segment_snapshot), ``topic``,
    ``topic_id``, ``partition``, ``segment_id``, ``state`` (name), ``state_id``, ``broker_id``,
    ``event_timestamp_ms``, ``start_offset``, ``end_offset``, ``max_timestamp_ms``,
    ``size_bytes``, ``leader_epochs`` (``{epoch: start offset}``), ``txn_index_empty``.

    Examples
    --------
    >>> remote_event(decode_remote_log_metadata(b"\\x01\\x07\\x00")) is None
    True
    """
    f = record.fields
    if not f or record.api_key not in REMOTE_SCHEMAS or record.name != REMOTE_SCHEMAS[record.api_key].name:
        return None
    event: dict = dict.fromkeys(
        (
            "topic",
            "topic_id",
            "partition",
            "segment_id",
            "start_offset",
            "end_offset",
            "max_timestamp_ms",
            "size_bytes",
            "leader_epochs",
            "txn_index_empty",
        )
    )
    event.update(broker_id=f["brokerId"], event_timestamp_ms=f["eventTimestampMs"])
    if record.api_key == 2:
        tip = f["topicIdPartition"]
        state = f["remotePartitionDeleteState"]
        event.update(
            kind="partition_delete",
            topic=tip["name"],
            topic_id=tip["id"],
            partition=tip["partition"],
            state_id=state,
            state=REMOTE_PARTITION_DELETE_STATES.get(state, f"UNKNOWN({state})"),
        )
        return event
    state = f["remoteLogSegmentState"]
    event.update(state_id=state, state=REMOTE_SEGMENT_STATES.get(state, f"UNKNOWN({state})"))
    if record.api_key == 3:
        event.update(kind="segment_snapshot", segment_id=f["segmentId"])
    else:
        seg = f["remoteLogSegmentId"]
        tip = seg["topicIdPartition"]
        event.update(
            kind="segment" if record.api_key == 0 else "segment_update",
            topic=tip["name"],
            topic_id=tip["id"],
            partition=tip["partition"],
            segment_id=seg["id"],
        )
    if record.api_key in (0, 3):
        event.update(
            start_offset=f["startOffset"],
            end_offset=f["endOffset"],
            max_timestamp_ms=f["maxTimestampMs"],
            size_bytes=f["segmentSizeInBytes"],
            txn_index_empty=f["txnIndexEmpty"],
            leader_epochs={e["leaderEpoch"]: e["offset"] for e in f["segmentLeaderEpochs"]},
        )
    return event


def _custom(value: bytes | None) -> str:
    return "Optional.empty" if value is None else f"Optional[CustomMetadata{{{len(value)} bytes}}]"


def _tip(tip: dict) -> str:
    return f"{tip['id']}:{tip['name']}-{tip['partition']}"


def remote_dump_text(record: MetadataRecord, with_txn_idx_empty: bool = True) -> str | None:
    """The Java ``toString()`` that ``kafka-dump-log --remote-log-metadata-decoder`` prints.

    ``with_txn_idx_empty`` adds the ``txnIdxEmpty`` part printed from Kafka 4.0. Returns
    ``None`` for records that were not decoded and for snapshot records.

    Examples
    --------
    >>> rec = decode_remote_log_metadata(encode_remote_log_metadata(2, 0, {
    ...     "topicIdPartition": {"name": "t", "id": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 3},
    ...     "brokerId": 1, "eventTimestampMs": 9, "remotePartitionDeleteState": 2}))
    >>> print(remote_dump_text(rec).replace(", ", ",\\n "))
    RemotePartitionDeleteMetadata{topicPartition=AAAAAAAAAAAAAAAAAAAAAQ:t-3,
     state=DELETE_PARTITION_FINISHED,
     eventTimestampMs=9,
     brokerId=1}
    """
    event = remote_event(record)
    if event is None:
        return None
    f = record.fields
    if record.api_key == 2:
        return (
            f"RemotePartitionDeleteMetadata{{topicPartition={_tip(f['topicIdPartition'])}, state={event['state']}, "
            f"eventTimestampMs={f['eventTimestampMs']}, brokerId={f['brokerId']}}}"
        )
    if record.api_key == 3:
        return None
    seg = f["remoteLogSegmentId"]
    seg_text = f"RemoteLogSegmentId{{topicIdPartition={_tip(seg['topicIdPartition'])}, id={seg['id']}}}"
    if record.api_key == 1:
        return (
            f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={seg_text}, "
            f"customMetadata={_custom(f['customMetadata'])}, "
            f"state={event['state']}, eventTimestampMs={f['eventTimestampMs']}, brokerId={f['brokerId']}}}"
        )
    epochs = ", ".join(f"{e}={o}" for e, o in sorted(event["leader_epochs"].items()))
    text = (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={seg_text}, startOffset={f['startOffset']}, "
        f"endOffset={f['endOffset']}, brokerId={f['brokerId']}, maxTimestampMs={f['maxTimestampMs']}, "
        f"eventTimestampMs={f['eventTimestampMs']}, segmentLeaderEpochs={{{epochs}}}, "
        f"segmentSizeInBytes={f['segmentSizeInBytes']}, customMetadata={_custom(f['customMetadata'])}, "
        f"state={event['state']}"
    )
    if with_txn_idx_empty:
        text += f", txnIdxEmpty={'true' if f['txnIndexEmpty'] else 'false'}"
    return text + "}"
