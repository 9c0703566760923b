"""Coordinator records: ``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``.

Every record of these topics has a non-null key and a version-prefixed value (reference §6.1)::

    key   = int16 recordType || key body     (non-flexible key schema)
    value = int16 version    || value body   (value schema of recordType, at that version)
    value = null                             -> tombstone

Values are dictionaries keyed by Kafka's JSON names (``offset``, ``leaderEpoch``,
``metadata``, ``commitTimestamp``; ``protocolType``, ``generation``, ``members``, ...).
ConsumerProtocol subscription and assignment blobs inside classic group metadata are
decoded by :func:`decode_consumer_subscription` / :func:`decode_consumer_assignment`.

Decoding never raises for bad bytes: the :class:`CoordinatorRecord` carries ``error``.

Examples
--------
>>> k, v = encode_offsets_record("OffsetCommit", {"group": "g1", "topic": "orders", "partition": 0},
...                              {"offset": 42, "metadata": "", "commitTimestamp": 1718000000000})
>>> rec = decode_offsets_record(k, v)
>>> rec.key_name, rec.value_version, rec.value["offset"], rec.value["leaderEpoch"]
('OffsetCommitKey', 3, 42, -1)
>>> offsets_dump_payload(rec)
'{"version":"3","data":{"offset":42,"leaderEpoch":-1,"metadata":"","commitTimestamp":1718000000000}}'
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field

from workbench.errors import ConfigError, CorruptDataError
from workbench.formats.messages import Field as F
from workbench.formats.messages import Schema, decode, dumps_json, encode, to_json

__all__ = [
    "MEMBER_STATES",
    "OFFSETS_RECORD_TYPES",
    "SHARE_STATE_RECORD_TYPES",
    "STREAMS_MEMBER_STATES",
    "TRANSACTION_RECORD_TYPES",
    "CoordinatorRecord",
    "RecordType",
    "decode_consumer_assignment",
    "decode_consumer_subscription",
    "decode_offset_commit_fast",
    "decode_offsets_record",
    "decode_share_state_record",
    "decode_transaction_record",
    "encode_consumer_assignment",
    "encode_consumer_subscription",
    "encode_offsets_record",
    "encode_share_state_record",
    "encode_transaction_record",
    "expand_group_metadata",
    "member_state_name",
    "offsets_dump_key",
    "offsets_dump_payload",
]


@dataclass(frozen=True, slots=True)
class RecordType:
    """One coordinator record type: its key and value schemas and the value version Kafka writes."""

    record_type: int
    name: str
    key: Schema
    value: Schema
    written_version: int


def _key(name: str, api_key: int, fields: list[F], versions: tuple[int, int] = (0, 0)) -> Schema:
    return Schema(name, api_key, versions, "none", fields, type="coordinator-key")


def _value(
    name: str, api_key: int, fields: list[F], versions: tuple[int, int] = (0, 0), flexible: str = "0+"
) -> Schema:
    return Schema(name, api_key, versions, flexible, fields, type="coordinator-value")


# ---------------------------------------------------------------------------------------------
# Layouts: group coordinator (reference §6.5, Dec-2024 trunk + noted newer tags)

_GROUP = [F("GroupId", "string", versions="0")]
_GROUP_MEMBER = [F("GroupId", "string", versions="0"), F("MemberId", "string", versions="0")]
_OFFSET_KEY = [
    F("group", "string", versions="0"),
    F("topic", "string", versions="0"),
    F("partition", "int32", versions="0"),
]

_OFFSET_VALUE = _value(
    "OffsetCommitValue",
    1,
    [
        F("offset", "int64"),
        F("leaderEpoch", "int32", versions="3+", default=-1, ignorable=True),
        F("metadata", "string"),
        F("commitTimestamp", "int64"),
        F("expireTimestamp", "int64", versions="1", default=-1, ignorable=True),
        F("topicId", "uuid", versions="4+", tag=0, tagged_versions="4+", ignorable=True),
    ],
    versions=(0, 4),
    flexible="4+",
)

_MEMBER_METADATA = (
    F("memberId", "string"),
    F("groupInstanceId", "string", versions="3+", nullable="3+", default=None, ignorable=True),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("rebalanceTimeout", "int32", versions="1+", default=-1, ignorable=True),
    F("sessionTimeout", "int32"),
    F("subscription", "bytes"),
    F("assignment", "bytes"),
)

_GROUP_VALUE = _value(
    "GroupMetadataValue",
    2,
    [
        F("protocolType", "string"),
        F("generation", "int32"),
        F("protocol", "string", nullable="0+"),
        F("leader", "string", nullable="0+"),
        F("currentStateTimestamp", "int64", versions="2+", default=-1, ignorable=True),
        F("members", "[]MemberMetadata", fields=_MEMBER_METADATA),
    ],
    versions=(0, 4),
    flexible="4+",
)

_TOPIC_PARTITION_METADATA = (
    F("TopicId", "uuid"),
    F("TopicName", "string"),
    F("NumPartitions", "int32"),
    F(
        "PartitionMetadata",
        "[]PartitionMetadata",
        fields=(
            F("Partition", "int32"),
            F("Racks", "[]string"),
        ),
    ),
)
_TOPIC_PARTITIONS = (F("TopicId", "uuid"), F("Partitions", "[]int32"))
_ASSIGNMENT_EPOCHS = F("AssignmentEpochs", "[]int32", nullable="0+", tag=0, tagged_versions="0+")
_TOPIC_PARTITIONS_EPOCHS = (*_TOPIC_PARTITIONS, _ASSIGNMENT_EPOCHS)
_TASK_IDS = (F("SubtopologyId", "string"), F("Partitions", "[]int32"))
_TASK_IDS_EPOCHS = (*_TASK_IDS, _ASSIGNMENT_EPOCHS)
_ASSIGNMENT_TIMESTAMP = F("AssignmentTimestamp", "int64", tag=0, tagged_versions="0+", default=0, ignorable=True)
_STREAMS_TOPIC_INFO = (
    F("Name", "string"),
    F("Partitions", "int32"),
    F("ReplicationFactor", "int16"),
    F("TopicConfigs", "[]TopicConfig", fields=(F("key", "string"), F("value", "string"))),
)


def _rt(
    record_type: int, name: str, key_fields: list[F], value_fields: list[F], written: int = 0, **value_kw
) -> RecordType:
    return RecordType(
        record_type,
        name,
        _key(f"{name}Key", record_type, key_fields),
        _value(f"{name}Value", record_type, value_fields, **value_kw),
        written,
    )


_OFFSETS_TYPES = [
    # key type 0 (0.8.2) is only ever followed by a version 0 value
    RecordType(
        0,
        "LegacyOffsetCommit",
        _key("LegacyOffsetCommitKey", 0, _OFFSET_KEY),
        _value(
            "LegacyOffsetCommitValue",
            0,
            [
                F("offset", "int64", versions="0"),
                F("metadata", "string", versions="0"),
                F("commitTimestamp", "int64", versions="0"),
            ],
            flexible="none",
        ),
        0,
    ),
    RecordType(1, "OffsetCommit", _key("OffsetCommitKey", 1, _OFFSET_KEY), _OFFSET_VALUE, 3),
    RecordType(2, "GroupMetadata", _key("GroupMetadataKey", 2, [F("group", "string", versions="0")]), _GROUP_VALUE, 3),
    _rt(
        3,
        "ConsumerGroupMetadata",
        _GROUP,
        [
            F("Epoch", "int32"),
            F("MetadataHash", "int64", tag=0, tagged_versions="0+", default=0),  # 4.1+, KIP-1101
        ],
    ),
    _rt(
        4,
        "ConsumerGroupPartitionMetadata",
        _GROUP,
        [
            F("Topics", "[]TopicMetadata", fields=_TOPIC_PARTITION_METADATA),
        ],
    ),
    _rt(
        5,
        "ConsumerGroupMemberMetadata",
        _GROUP_MEMBER,
        [
            F("InstanceId", "string", nullable="0+"),
            F("RackId", "string", nullable="0+"),
            F("ClientId", "string"),
            F("ClientHost", "string"),
            F("SubscribedTopicNames", "[]string"),
            F("SubscribedTopicRegex", "string", nullable="0+"),
            F("RebalanceTimeoutMs", "int32", default=-1),
            F("ServerAssignor", "string", nullable="0+"),
            F(
                "ClassicMemberMetadata",
                "ClassicMemberMetadata",
                nullable="0+",
                tag=0,
                tagged_versions="0+",
                fields=(
                    F("SessionTimeoutMs", "int32"),
                    F("SupportedProtocols", "[]ClassicProtocol", fields=(F("Name", "string"), F("Metadata", "bytes"))),
                ),
            ),
        ],
    ),
    _rt(6, "ConsumerGroupTargetAssignmentMetadata", _GROUP, [F("AssignmentEpoch", "int32"), _ASSIGNMENT_TIMESTAMP]),
    _rt(
        7,
        "ConsumerGroupTargetAssignmentMember",
        _GROUP_MEMBER,
        [
            F("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
        ],
    ),
    _rt(
        8,
        "ConsumerGroupCurrentMemberAssignment",
        _GROUP_MEMBER,
        [
            F("MemberEpoch", "int32"),
            F("PreviousMemberEpoch", "int32"),
            F("State", "int8"),
            F("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS_EPOCHS),
            F("PartitionsPendingRevocation", "[]TopicPartitions", fields=_TOPIC_PARTITIONS_EPOCHS),
        ],
    ),
    # KIP-932 share groups: layouts of Kafka 4.3/4.4 (the 4.0 preview differed; type 9 is the
    # 4.0 preview record, removed later)
    _rt(9, "ShareGroupPartitionMetadata", _GROUP, [F("Topics", "[]TopicMetadata", fields=_TOPIC_PARTITION_METADATA)]),
    _rt(
        10,
        "ShareGroupMemberMetadata",
        _GROUP_MEMBER,
        [
            F("RackId", "string", nullable="0+"),
            F("ClientId", "string"),
            F("ClientHost", "string"),
            F("SubscribedTopicNames", "[]string"),
        ],
    ),
    _rt(11, "ShareGroupMetadata", _GROUP, [F("Epoch", "int32"), F("MetadataHash", "int64")]),
    _rt(12, "ShareGroupTargetAssignmentMetadata", _GROUP, [F("AssignmentEpoch", "int32"), _ASSIGNMENT_TIMESTAMP]),
    _rt(
        13,
        "ShareGroupTargetAssignmentMember",
        _GROUP_MEMBER,
        [
            F("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
        ],
    ),
    _rt(
        14,
        "ShareGroupCurrentMemberAssignment",
        _GROUP_MEMBER,
        [
            F("MemberEpoch", "int32"),
            F("PreviousMemberEpoch", "int32"),
            F("State", "int8"),
            F("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
        ],
    ),
    _rt(
        15,
        "ShareGroupStatePartitionMetadata",
        _GROUP,
        [
            F(
                "InitializingTopics",
                "[]TopicPartitionsInfo",
                fields=(
                    F("TopicId", "uuid"),
                    F("TopicName", "string"),
                    F("Partitions", "[]int32"),
                ),
            ),
            F(
                "InitializedTopics",
                "[]TopicPartitionsInfo",
                fields=(
                    F("TopicId", "uuid"),
                    F("TopicName", "string"),
                    F("Partitions", "[]int32"),
                ),
            ),
            F("DeletingTopics", "[]TopicInfo", fields=(F("TopicId", "uuid"), F("TopicName", "string"))),
        ],
    ),
    _rt(
        16,
        "ConsumerGroupRegularExpression",
        [
            F("GroupId", "string", versions="0"),
            F("RegularExpression", "string", versions="0"),
        ],
        [
            F("Topics", "[]string"),
            F("Version", "int64"),
            F("Timestamp", "int64"),
        ],
    ),
    # KIP-1071 streams groups: layouts of Kafka 4.3/4.4 (type 18 is from an early-access
    # schema, removed later)
    _rt(
        17,
        "StreamsGroupMetadata",
        _GROUP,
        [
            F("Epoch", "int32"),
            F("MetadataHash", "int64"),
            F("ValidatedTopologyEpoch", "int32", tag=0, tagged_versions="0+", default=-1),
            F(
                "LastAssignmentConfigs",
                "[]LastAssignmentConfig",
                nullable="0+",
                tag=1,
                tagged_versions="0+",
                fields=(F("Key", "string"), F("Value", "string")),
            ),
            F("StoredDescriptionTopologyEpoch", "int32", tag=2, tagged_versions="0+", default=-1),
            F("FailedDescriptionTopologyEpoch", "int32", tag=3, tagged_versions="0+", default=-1),
        ],
    ),
    _rt(
        18, "StreamsGroupPartitionMetadata", _GROUP, [F("Topics", "[]TopicMetadata", fields=_TOPIC_PARTITION_METADATA)]
    ),
    _rt(
        19,
        "StreamsGroupMemberMetadata",
        _GROUP_MEMBER,
        [
            F("InstanceId", "string", nullable="0+"),
            F("RackId", "string", nullable="0+"),
            F("ClientId", "string"),
            F("ClientHost", "string"),
            F("RebalanceTimeoutMs", "int32", default=-1),
            F("TopologyEpoch", "int32"),
            F("ProcessId", "string"),
            F(
                "UserEndpoint",
                "Endpoint",
                nullable="0+",
                default=None,
                fields=(F("Host", "string"), F("Port", "uint16")),
            ),
            F("ClientTags", "[]KeyValue", fields=(F("Key", "string"), F("Value", "string"))),
        ],
    ),
    _rt(20, "StreamsGroupTargetAssignmentMetadata", _GROUP, [F("AssignmentEpoch", "int32"), _ASSIGNMENT_TIMESTAMP]),
    _rt(
        21,
        "StreamsGroupTargetAssignmentMember",
        _GROUP_MEMBER,
        [
            F("ActiveTasks", "[]TaskIds", fields=_TASK_IDS),
            F("StandbyTasks", "[]TaskIds", fields=_TASK_IDS),
            F("WarmupTasks", "[]TaskIds", fields=_TASK_IDS),
        ],
    ),
    _rt(
        22,
        "StreamsGroupCurrentMemberAssignment",
        _GROUP_MEMBER,
        [
            F("MemberEpoch", "int32"),
            F("PreviousMemberEpoch", "int32"),
            F("State", "int8"),
            F("ActiveTasks", "[]TaskIds", fields=_TASK_IDS_EPOCHS),
            F("StandbyTasks", "[]TaskIds", fields=_TASK_IDS_EPOCHS),
            F("WarmupTasks", "[]TaskIds", fields=_TASK_IDS_EPOCHS),
            F("ActiveTasksPendingRevocation", "[]TaskIds", fields=_TASK_IDS_EPOCHS),
            F("StandbyTasksPendingRevocation", "[]TaskIds", fields=_TASK_IDS_EPOCHS),
            F("WarmupTasksPendingRevocation", "[]TaskIds", fields=_TASK_IDS_EPOCHS),
        ],
    ),
    _rt(
        23,
        "StreamsGroupTopology",
        _GROUP,
        [
            F("Epoch", "int32"),
            F(
                "Subtopologies",
                "[]Subtopology",
                fields=(
                    F("SubtopologyId", "string"),
                    F("SourceTopics", "[]string"),
                    F("SourceTopicRegex", "[]string"),
                    F("StateChangelogTopics", "[]TopicInfo", fields=_STREAMS_TOPIC_INFO),
                    F("RepartitionSinkTopics", "[]string"),
                    F("RepartitionSourceTopics", "[]TopicInfo", fields=_STREAMS_TOPIC_INFO),
                    F(
                        "CopartitionGroups",
                        "[]CopartitionGroup",
                        fields=(
                            F("SourceTopics", "[]int16"),
                            F("SourceTopicRegex", "[]int16"),
                            F("RepartitionSourceTopics", "[]int16"),
                        ),
                    ),
                ),
            ),
        ],
    ),
]

OFFSETS_RECORD_TYPES: dict[int, RecordType] = {rt.record_type: rt for rt in _OFFSETS_TYPES}
"""``__consumer_offsets`` record types by key recordType."""

# ---------------------------------------------------------------------------------------------
# Layouts: transaction log and share-group state (reference §6.3, §6.4, §6.6)

TRANSACTION_RECORD_TYPES: dict[int, RecordType] = {
    0: RecordType(
        0,
        "TransactionLog",
        _key("TransactionLogKey", 0, [F("TransactionalId", "string", versions="0")]),
        _value(
            "TransactionLogValue",
            0,
            [
                F("ProducerId", "int64"),
                F("PreviousProducerId", "int64", versions="1+", tag=0, tagged_versions="1+", default=-1),
                F("NextProducerId", "int64", versions="1+", tag=1, tagged_versions="1+", default=-1),
                F("ProducerEpoch", "int16"),
                F("NextProducerEpoch", "int16", versions="1+", tag=3, tagged_versions="1+", default=-1),
                F("TransactionTimeoutMs", "int32"),
                F("TransactionStatus", "int8"),
                F(
                    "TransactionPartitions",
                    "[]PartitionsSchema",
                    nullable="0+",
                    fields=(
                        F("Topic", "string"),
                        F("PartitionIds", "[]int32"),
                    ),
                ),
                F("TransactionLastUpdateTimestampMs", "int64"),
                F("TransactionStartTimestampMs", "int64"),
                F("ClientTransactionVersion", "int16", versions="1+", tag=2, tagged_versions="1+", default=0),
            ],
            versions=(0, 1),
            flexible="1+",
        ),
        0,
    ),
}
"""``__transaction_state`` record types."""

TRANSACTION_STATUS = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}

#: ``State`` of the consumer and share groups' ``*CurrentMemberAssignment`` records (Kafka's
#: ``org.apache.kafka.coordinator.group.modern.MemberState``).
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}

#: ``State`` of ``StreamsGroupCurrentMemberAssignment`` (Kafka's
#: ``org.apache.kafka.coordinator.group.streams.MemberState``: its values start at 1).
STREAMS_MEMBER_STATES = {1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS", 127: "UNKNOWN"}


def member_state_name(record_name: str, state: int) -> str:
    """The name of a current-member-assignment record's ``State`` byte (``UNKNOWN(n)`` if unknown).

    >>> member_state_name("ConsumerGroupCurrentMemberAssignment", 1)
    'UNREVOKED_PARTITIONS'
    >>> member_state_name("StreamsGroupCurrentMemberAssignment", 1)
    'STABLE'
    """
    states = STREAMS_MEMBER_STATES if record_name.startswith("Streams") else MEMBER_STATES
    return states.get(state, f"UNKNOWN({state})")


_STATE_BATCH = (
    F("FirstOffset", "int64"),
    F("LastOffset", "int64"),
    F("DeliveryState", "int8"),
    F("DeliveryCount", "int16"),
)
_SHARE_KEY = [
    F("GroupId", "string", versions="0"),
    F("TopicId", "uuid", versions="0"),
    F("Partition", "int32", versions="0"),
]
_DELIVERY_COMPLETE_COUNT = F("DeliveryCompleteCount", "int32", tag=0, tagged_versions="0+", default=-1)

# Layouts of Kafka 4.3/4.4. The 4.0 preview used other layouts (uint16 SnapshotEpoch, no
# timestamps) that are not decoded here.
SHARE_STATE_RECORD_TYPES: dict[int, RecordType] = {
    0: RecordType(
        0,
        "ShareSnapshot",
        _key("ShareSnapshotKey", 0, _SHARE_KEY),
        _value(
            "ShareSnapshotValue",
            0,
            [
                F("SnapshotEpoch", "int32"),
                F("StateEpoch", "int32"),
                F("LeaderEpoch", "int32"),
                F("StartOffset", "int64"),
                _DELIVERY_COMPLETE_COUNT,
                F("CreateTimestamp", "int64"),
                F("WriteTimestamp", "int64"),
                F("StateBatches", "[]StateBatch", fields=_STATE_BATCH),
            ],
        ),
        0,
    ),
    1: RecordType(
        1,
        "ShareUpdate",
        _key("ShareUpdateKey", 1, _SHARE_KEY),
        _value(
            "ShareUpdateValue",
            1,
            [
                F("SnapshotEpoch", "int32"),
                F("LeaderEpoch", "int32"),
                F("StartOffset", "int64"),
                _DELIVERY_COMPLETE_COUNT,
                F("StateBatches", "[]StateBatch", fields=_STATE_BATCH),
            ],
        ),
        0,
    ),
}
"""``__share_group_state`` record types."""

# ---------------------------------------------------------------------------------------------
# ConsumerProtocol blobs (reference §6.6)

_TOPIC_PARTITION = (F("Topic", "string"), F("Partitions", "[]int32"))
CONSUMER_SUBSCRIPTION = Schema(
    "ConsumerProtocolSubscription",
    None,
    (0, 3),
    "none",
    [
        F("Topics", "[]string"),
        F("UserData", "bytes", nullable="0+", default=None),
        F(
            "OwnedPartitions",
            "[]TopicPartition",
            versions="1+",
            ignorable=True,
            fields=(F("Topic", "string", versions="1+"), F("Partitions", "[]int32", versions="1+")),
        ),
        F("GenerationId", "int32", versions="2+", default=-1, ignorable=True),
        F("RackId", "string", versions="3+", nullable="3+", default=None, ignorable=True),
    ],
    type="data",
)
CONSUMER_ASSIGNMENT = Schema(
    "ConsumerProtocolAssignment",
    None,
    (0, 3),
    "none",
    [
        F("AssignedPartitions", "[]TopicPartition", fields=_TOPIC_PARTITION),
        F("UserData", "bytes", nullable="0+", default=None),
    ],
    type="data",
)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I64_I32 = struct.Struct(">qi")


def _decode_protocol(schema: Schema, data: bytes | bytearray | memoryview) -> tuple[int, dict]:
    raw = bytes(data)
    if len(raw) < 2:
        raise CorruptDataError("", 0, "decode_error", f"{schema.name}: {len(raw)} bytes, no version prefix")
    (version,) = _I16.unpack_from(raw, 0)
    if version < 0:
        raise CorruptDataError("", 0, "decode_error", f"{schema.name}: negative version {version}")
    read_at = min(version, schema.valid_versions[1])  # newer versions only append fields
    values, _unknown, end = decode(schema, read_at, raw, 2)
    if end != len(raw) and version <= schema.valid_versions[1]:
        raise CorruptDataError(
            "", end, "decode_error", f"{schema.name} v{version}: {len(raw) - end} byte(s) of garbage"
        )
    return version, values


def decode_consumer_subscription(data: bytes | bytearray | memoryview) -> tuple[int, dict]:
    """Decode a ConsumerProtocol subscription blob: ``(version, fields)``; CorruptDataError if malformed.

    >>> decode_consumer_subscription(encode_consumer_subscription({"topics": ["orders"]}, version=0))
    (0, {'topics': ['orders'], 'userData': None, 'ownedPartitions': [], 'generationId': -1, 'rackId': None})
    """
    return _decode_protocol(CONSUMER_SUBSCRIPTION, data)


def decode_consumer_assignment(data: bytes | bytearray | memoryview) -> tuple[int, dict]:
    """Decode a ConsumerProtocol assignment blob: ``(version, fields)``.

    >>> blob = encode_consumer_assignment({"assignedPartitions": [{"topic": "t", "partitions": [0]}]})
    >>> decode_consumer_assignment(blob)
    (3, {'assignedPartitions': [{'topic': 't', 'partitions': [0]}], 'userData': None})
    """
    return _decode_protocol(CONSUMER_ASSIGNMENT, data)


def encode_consumer_subscription(fields: dict, version: int = 3) -> bytes:
    """Encode a ConsumerProtocol subscription blob (int16 version prefix + body)."""
    return _I16.pack(version) + encode(CONSUMER_SUBSCRIPTION, version, fields)


def encode_consumer_assignment(fields: dict, version: int = 3) -> bytes:
    """Encode a ConsumerProtocol assignment blob (int16 version prefix + body)."""
    return _I16.pack(version) + encode(CONSUMER_ASSIGNMENT, version, fields)


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(slots=True)
class CoordinatorRecord:
    """One decoded coordinator record.

    Attributes
    ----------
    record_type : int
        The key's int16 prefix (-1 when the key is unreadable).
    name : str
        Record type name (``"OffsetCommit"``, ``"GroupMetadata"``, ...) or ``"Unknown"``.
    key : dict
        Key fields by JSON name (``{"group": ..., "topic": ..., "partition": ...}``).
    value_version : int or None
        The value's int16 prefix; ``None`` for a tombstone or an unreadable value.
    value : dict or None
        Value fields by JSON name; ``None`` for a tombstone or when not decoded.
    tombstone : bool
        The value is null (the key is deleted).
    unknown_tags : dict of int to bytes
        Unknown tagged fields of the value's top-level struct.
    error : str or None
        Why the key or value could not be decoded.
    """

    record_type: int
    name: str
    key: dict
    value_version: int | None
    value: dict | None
    tombstone: bool
    unknown_tags: dict[int, bytes] = field(default_factory=dict)
    error: str | None = None

    @property
    def key_name(self) -> str:
        """Key schema name (``"OffsetCommitKey"``)."""
        return f"{self.name}Key" if self.name != "Unknown" else "Unknown"

    @property
    def value_name(self) -> str | None:
        """Value schema name (``"OffsetCommitValue"``), ``None`` for a tombstone."""
        if self.tombstone:
            return None
        return f"{self.name}Value" if self.name != "Unknown" else "Unknown"


def _decode_coordinator(
    key: bytes | memoryview | None, value: bytes | memoryview | None, registry: dict[int, RecordType]
) -> CoordinatorRecord:
    rec = CoordinatorRecord(-1, "Unknown", {}, None, None, value is None)
    if key is None:
        rec.error = "coordinator record without a key"
        return rec
    raw_key = bytes(key)
    if len(raw_key) < 2:
        rec.error = f"key of {len(raw_key)} bytes has no record type"
        return rec
    (rec.record_type,) = _I16.unpack_from(raw_key, 0)
    rt = registry.get(rec.record_type)
    if rt is None:
        rec.error = f"unknown record type {rec.record_type}"
        return rec
    rec.name = rt.name
    try:
        rec.key, _unknown, end = decode(rt.key, rt.key.valid_versions[0], raw_key, 2)
    except CorruptDataError as exc:
        rec.error = f"key at byte {exc.position}: {exc.detail}"
        return rec
    if end != len(raw_key):
        rec.error = f"found {len(raw_key) - end} byte(s) of garbage after {rt.key.name}"
    if value is None:
        return rec
    raw_value = bytes(value)
    if len(raw_value) < 2:
        rec.error = f"value of {len(raw_value)} bytes has no version"
        return rec
    (version,) = _I16.unpack_from(raw_value, 0)
    rec.value_version = version
    if not rt.value.supports(version):
        lo, hi = rt.value.valid_versions
        rec.error = f"unsupported version {version} of {rt.value.name} (known {lo}-{hi})"
        return rec
    try:
        rec.value, rec.unknown_tags, end = decode(rt.value, version, raw_value, 2)
    except CorruptDataError as exc:
        rec.error = f"value at byte {exc.position}: {exc.detail}"
        return rec
    if end != len(raw_value) and rec.error is None:
        rec.error = f"found {len(raw_value) - end} byte(s) of garbage after {rt.value.name} v{version}"
    return rec


def _lookup(registry: dict[int, RecordType], record_type: int | str) -> RecordType:
    for rt in registry.values():
        if record_type in (rt.record_type, rt.name, rt.key.name, rt.value.name) and not isinstance(record_type, bool):
            return rt
    raise ConfigError(f"unknown record type {record_type!r}; known: {', '.join(rt.name for rt in registry.values())}")


def _encode_coordinator(
    registry: dict[int, RecordType],
    record_type: int | str,
    key: dict,
    value: dict | None,
    value_version: int | None,
    unknown_tags: dict[int, bytes] | None,
) -> tuple[bytes, bytes | None]:
    rt = _lookup(registry, record_type)
    key_bytes = _I16.pack(rt.record_type) + encode(rt.key, rt.key.valid_versions[0], key)
    if value is None:
        return key_bytes, None
    version = rt.written_version if value_version is None else value_version
    return key_bytes, _I16.pack(version) + encode(rt.value, version, value, unknown_tags)


def decode_offsets_record(key: bytes | memoryview | None, value: bytes | memoryview | None) -> CoordinatorRecord:
    """Decode a ``__consumer_offsets`` record (never raises for bad bytes).

    >>> rec = decode_offsets_record(b"\\x00\\x02\\x00\\x02g1", None)
    >>> rec.name, rec.key, rec.tombstone
    ('GroupMetadata', {'group': 'g1'}, True)
    """
    return _decode_coordinator(key, value, OFFSETS_RECORD_TYPES)


_OFFSET_KEY_PREFIX = b"\x00\x01"
_ZERO_UUID_TEXT = "A" * 22


@functools.lru_cache(maxsize=4096)
def _uuid_text(raw: bytes) -> str:
    """A topic id's text (a commit's topic ids repeat: cached)."""
    from workbench.formats.messages import uuid_to_str

    return uuid_to_str(raw)


def _fast_string(raw: bytes, pos: int) -> tuple[str, int]:
    n = (raw[pos] << 8) | raw[pos + 1]
    if n & 0x8000 or pos + 2 + n > len(raw):  # null (-1) or short: the careful decoder decides
        raise IndexError
    return raw[pos + 2 : pos + 2 + n].decode("utf-8", "replace"), pos + 2 + n


def decode_offset_commit_fast(key: bytes | None, value: bytes | None) -> CoordinatorRecord | None:
    """An ``OffsetCommit`` record (key type 1, value versions 0-4) decoded by hand, or ``None``.

    The offset commits are nearly all of ``__consumer_offsets``; this reads their fixed layouts
    with :mod:`struct`, faster than the schema-driven :func:`decode_offsets_record`,
    and gives exactly what it gives. Anything else (another record type, a null string, a
    version 4 value with tags other than ``topicId``, bytes that do not fit) gives ``None``:
    decode it with :func:`decode_offsets_record`.

    Examples
    --------
    >>> k, v = encode_offsets_record(1, {"group": "g", "topic": "t", "partition": 2},
    ...                              {"offset": 9, "metadata": "", "commitTimestamp": 5})
    >>> decode_offset_commit_fast(k, v) == decode_offsets_record(k, v)
    True
    >>> decode_offset_commit_fast(*encode_offsets_record(2, {"group": "g"}, None)) is None
    True
    """
    if key is None or key[:2] != _OFFSET_KEY_PREFIX:
        return None
    try:
        group, pos = _fast_string(key, 2)
        topic, pos = _fast_string(key, pos)
        (partition,) = _I32.unpack_from(key, pos)
        if pos + 4 != len(key):
            return None
        record_key = {"group": group, "topic": topic, "partition": partition}
        if value is None:
            return CoordinatorRecord(1, "OffsetCommit", record_key, None, None, True)
        (version,) = _I16.unpack_from(value, 0)
        leader_epoch, expire, topic_id = -1, -1, _ZERO_UUID_TEXT
        if version == 4:
            offset, leader_epoch = _I64_I32.unpack_from(value, 2)
            n, pos, shift = 0, 14, 0
            while True:  # compact string: uvarint length + 1
                b = value[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
                if shift > 28:
                    return None
            n -= 1
            if n < 0 or pos + n > len(value):  # null: the careful decoder decides
                return None
            metadata = value[pos : pos + n].decode("utf-8", "replace")
            (commit,) = _I64.unpack_from(value, pos + n)
            pos += n + 8
            tags = value[pos:]
            if len(tags) == 19 and tags[:3] == b"\x01\x00\x10":  # one tag: 0 (topicId), 16 bytes
                topic_id = _uuid_text(tags[3:])
            elif tags != b"\x00":
                return None
        elif 0 <= version <= 3:
            (offset,) = _I64.unpack_from(value, 2)
            pos = 10
            if version == 3:
                (leader_epoch,) = _I32.unpack_from(value, pos)
                pos += 4
            metadata, pos = _fast_string(value, pos)
            (commit,) = _I64.unpack_from(value, pos)
            pos += 8
            if version == 1:
                (expire,) = _I64.unpack_from(value, pos)
                pos += 8
            if pos != len(value):
                return None
        else:
            return None
    except (IndexError, struct.error):
        return None
    return CoordinatorRecord(1, "OffsetCommit", record_key, version, {
        "offset": offset, "leaderEpoch": leader_epoch, "metadata": metadata, "commitTimestamp": commit,
        "expireTimestamp": expire, "topicId": topic_id}, False)


def encode_offsets_record(
    record_type: int | str,
    key: dict,
    value: dict | None,
    value_version: int | None = None,
    unknown_tags: dict[int, bytes] | None = None,
) -> tuple[bytes, bytes | None]:
    """Encode a ``__consumer_offsets`` record as ``(key, value)``; ``value=None`` = tombstone.

    ``record_type``: number, type name (``"OffsetCommit"``) or schema name. The value version defaults to
    what Kafka 3.x/4.x write. Raises :class:`ConfigError` for an unknown type or version or a misfit value.

    >>> encode_offsets_record(2, {"group": "g"}, None)
    (b'\\x00\\x02\\x00\\x01g', None)
    """
    return _encode_coordinator(OFFSETS_RECORD_TYPES, record_type, key, value, value_version, unknown_tags)


def decode_transaction_record(key: bytes | memoryview | None, value: bytes | memoryview | None) -> CoordinatorRecord:
    """Decode a ``__transaction_state`` record (never raises for bad bytes).

    >>> k, v = encode_transaction_record({"transactionalId": "tx"}, {"producerId": 7, "transactionStatus": 4})
    >>> rec = decode_transaction_record(k, v)
    >>> rec.key, rec.value["producerId"], rec.value["transactionPartitions"]
    ({'transactionalId': 'tx'}, 7, [])
    """
    return _decode_coordinator(key, value, TRANSACTION_RECORD_TYPES)


def encode_transaction_record(
    key: dict, value: dict | None, value_version: int = 0, unknown_tags: dict[int, bytes] | None = None
) -> tuple[bytes, bytes | None]:
    """Encode a ``__transaction_state`` record (``value_version`` 0, or 1 = flexible)."""
    return _encode_coordinator(TRANSACTION_RECORD_TYPES, 0, key, value, value_version, unknown_tags)


def decode_share_state_record(key: bytes | memoryview | None, value: bytes | memoryview | None) -> CoordinatorRecord:
    """Decode a ``__share_group_state`` record (never raises for bad bytes)."""
    return _decode_coordinator(key, value, SHARE_STATE_RECORD_TYPES)


def encode_share_state_record(
    record_type: int | str, key: dict, value: dict | None, value_version: int = 0
) -> tuple[bytes, bytes | None]:
    """Encode a ``__share_group_state`` record."""
    return _encode_coordinator(SHARE_STATE_RECORD_TYPES, record_type, key, value, value_version, None)


def expand_group_metadata(value: dict) -> dict:
    """Group metadata with consumer subscription/assignment blobs decoded.

    For ``protocolType == "consumer"`` each member's ``subscription`` and ``assignment``
    become the decoded ConsumerProtocol dictionaries (as the offsets decoder of
    ``kafka-dump-log`` shows them); other protocol types and undecodable blobs are kept as
    bytes.

    Examples
    --------
    >>> blob = encode_consumer_subscription({"topics": ["t"]}, 0)
    >>> v = {"protocolType": "consumer", "members": [{"subscription": blob, "assignment": b""}]}
    >>> expand_group_metadata(v)["members"][0]["subscription"]["topics"]
    ['t']
    """
    out = dict(value)
    if value.get("protocolType") != "consumer":
        return out
    members = []
    for member in value.get("members") or []:
        m = dict(member)
        for name, decoder in (
            ("subscription", decode_consumer_subscription),
            ("assignment", decode_consumer_assignment),
        ):
            blob = m.get(name)
            if isinstance(blob, (bytes, bytearray)) and blob:
                try:
                    m[name] = decoder(blob)[1]
                except CorruptDataError:
                    pass
        members.append(m)
    out["members"] = members
    return out


def _record_type_of(record: CoordinatorRecord) -> RecordType | None:
    for registry in (OFFSETS_RECORD_TYPES, TRANSACTION_RECORD_TYPES, SHARE_STATE_RECORD_TYPES):
        rt = registry.get(record.record_type)
        if rt is not None and rt.name == record.name:
            return rt
    return None


def offsets_dump_key(record: CoordinatorRecord) -> str | None:
    """The ``key:`` JSON of ``kafka-dump-log --offsets-decoder`` (3.8+), e.g.
    ``{"type":"1","data":{"group":"g1","topic":"orders","partition":0}}``."""
    rt = _record_type_of(record)
    if rt is None or not record.key:
        return None
    data = dumps_json(to_json(rt.key, record.key, rt.key.valid_versions[0]))
    return f'{{"type":"{record.record_type}","data":{data}}}'


def _protocol_json(schema: Schema, blob: object) -> object:
    """Kafka's JSON of a ConsumerProtocol blob, or ``None`` when it does not decode."""
    if not isinstance(blob, (bytes, bytearray)):
        return None
    try:
        version, values = _decode_protocol(schema, blob)
    except CorruptDataError:
        return None
    return to_json(schema, values, min(version, schema.valid_versions[1]))


def offsets_dump_payload(record: CoordinatorRecord, expand_consumer_protocol: bool = True) -> str | None:
    """The ``payload:`` of ``kafka-dump-log --offsets-decoder`` (3.8+): JSON or ``<DELETE>``.

    Also the payload of ``--transaction-log-decoder`` and ``--share-group-state-decoder``
    in 4.x. With ``expand_consumer_protocol`` the ``subscription``/``assignment`` blobs of
    a ``consumer`` group's members are rendered as the decoded ConsumerProtocol JSON, as the
    tool does; otherwise (and when a blob does not decode) they stay base64.

    Examples
    --------
    >>> rec = decode_offsets_record(*encode_offsets_record(2, {"group": "g"}, {"protocolType": "consumer", "members": [
    ...     {"memberId": "m", "subscription": encode_consumer_subscription({"topics": ["t"]}, 0), "assignment": b""}]}))
    >>> offsets_dump_payload(rec)
    '{"version":"3","data":{"protocolType":"consumer","generation":0,"protocol":"","leader":"","currentStateTimestamp":-1,"members":[{"memberId":"m","groupInstanceId":null,"clientId":"","clientHost":"","rebalanceTimeout":-1,"sessionTimeout":0,"subscription":{"topics":["t"],"userData":null},"assignment":""}]}}'
    """
    if record.tombstone:
        return "<DELETE>"
    rt = _record_type_of(record)
    if rt is None or record.value is None or record.value_version is None:
        return None
    rendered = to_json(rt.value, record.value, record.value_version)
    if (
        expand_consumer_protocol
        and rt.record_type == 2
        and rt.name == "GroupMetadata"
        and record.value.get("protocolType") == "consumer"
    ):
        for member_json, member in zip(rendered.get("members") or [], record.value.get("members") or [], strict=False):
            for key, schema in (("subscription", CONSUMER_SUBSCRIPTION), ("assignment", CONSUMER_ASSIGNMENT)):
                expanded = _protocol_json(schema, member.get(key))
                if expanded is not None:
                    member_json[key] = expanded
    return f'{{"version":"{record.value_version}","data":{dumps_json(rendered)}}}'
