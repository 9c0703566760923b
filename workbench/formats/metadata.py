"""KRaft metadata records (``__cluster_metadata``): layouts as data, framed decode and encode.

A metadata record value is a frame (reference §3.1)::

    uvarint frameVersion (= 1) | uvarint apiKey | uvarint version | body

where the body is the generated-message encoding (:mod:`workbench.formats.messages`) of the
schema registered under ``apiKey`` (§3.4, §3.5, §3.6). The same frame carries
``__remote_log_metadata`` values with their own registry (:mod:`workbench.formats.remote`).

Decoding never raises for bad input: an unknown apiKey, an unsupported version, a wrong frame
version, truncated or trailing bytes all give a :class:`MetadataRecord` with ``error`` set and
the raw bytes kept.

Examples
--------
>>> value = encode_metadata_record("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 21})
>>> rec = decode_metadata_record(value)
>>> rec.type_name, rec.fields
('FEATURE_LEVEL_RECORD', {'name': 'metadata.version', 'featureLevel': 21})
>>> metadata_json(rec)
'{"name":"metadata.version","featureLevel":21}'
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.errors import ConfigError, CorruptDataError
from workbench.formats.messages import Field as F
from workbench.formats.messages import Schema, decode, dumps_json, encode, to_json
from workbench.formats.primitives import encode_uvarint, read_uvarint

__all__ = [
    "FRAME_VERSION",
    "METADATA_SCHEMAS",
    "MetadataRecord",
    "decode_framed",
    "decode_metadata_record",
    "dump_payload",
    "encode_framed",
    "encode_metadata_record",
    "metadata_json",
    "schema_for",
]

FRAME_VERSION = 1

# ---------------------------------------------------------------------------------------------
# Layouts (reference §3.5, Dec-2024 trunk, plus the §3.6 additions)

_BROKER_ENDPOINT = (
    F("Name", "string"),
    F("Host", "string"),
    F("Port", "uint16"),
    F("SecurityProtocol", "int16"),
)
_FEATURE = (
    F("Name", "string"),
    F("MinSupportedVersion", "int16"),
    F("MaxSupportedVersion", "int16"),
)

_SCHEMAS = [
    Schema(
        "RegisterBrokerRecord",
        0,
        (0, 4),
        "0+",
        [
            F("BrokerId", "int32"),
            F("IsMigratingZkBroker", "bool", versions="2+", default=False),
            F("IncarnationId", "uuid"),
            F("BrokerEpoch", "int64"),
            F("EndPoints", "[]BrokerEndpoint", fields=_BROKER_ENDPOINT),
            F("Features", "[]BrokerFeature", fields=_FEATURE),
            F("Rack", "string", nullable="0+"),
            F("Fenced", "bool", default=True),
            F("InControlledShutdown", "bool", versions="1+", default=False),
            F("LogDirs", "[]uuid", versions="3+", tag=0, tagged_versions="3+"),
            # v4 (Kafka 4.3, KIP-1066); tag number unverified in source (reference §3.6)
            F("CordonedLogDirs", "[]uuid", versions="4+", nullable="4+", tag=1, tagged_versions="4+", default=None),
        ],
    ),
    Schema(
        "UnregisterBrokerRecord",
        1,
        (0, 0),
        "0+",
        [
            F("BrokerId", "int32"),
            F("BrokerEpoch", "int64"),
        ],
    ),
    Schema(
        "TopicRecord",
        2,
        (0, 0),
        "0+",
        [
            F("Name", "string"),
            F("TopicId", "uuid"),
        ],
    ),
    Schema(
        "PartitionRecord",
        3,
        (0, 2),
        "0+",
        [
            F("PartitionId", "int32", default=-1),
            F("TopicId", "uuid"),
            F("Replicas", "[]int32"),
            F("Isr", "[]int32"),
            F("RemovingReplicas", "[]int32"),
            F("AddingReplicas", "[]int32"),
            F("Leader", "int32", default=-1),
            F("LeaderRecoveryState", "int8", tag=0, tagged_versions="0+", default=0),
            F("LeaderEpoch", "int32", default=-1),
            F("PartitionEpoch", "int32", default=-1),
            F("Directories", "[]uuid", versions="1+"),
            F(
                "EligibleLeaderReplicas",
                "[]int32",
                versions="2+",
                nullable="2+",
                tag=1,
                tagged_versions="2+",
                default=None,
            ),
            F("LastKnownElr", "[]int32", versions="2+", nullable="2+", tag=2, tagged_versions="2+", default=None),
        ],
    ),
    Schema(
        "ConfigRecord",
        4,
        (0, 0),
        "0+",
        [
            F("ResourceType", "int8"),
            F("ResourceName", "string"),
            F("Name", "string"),
            F("Value", "string", nullable="0+"),
        ],
    ),
    Schema(
        "PartitionChangeRecord",
        5,
        (0, 2),
        "0+",
        [
            F("PartitionId", "int32", default=-1),
            F("TopicId", "uuid"),
            F("Isr", "[]int32", nullable="0+", tag=0, tagged_versions="0+", default=None),
            F("Leader", "int32", tag=1, tagged_versions="0+", default=-2),
            F("Replicas", "[]int32", nullable="0+", tag=2, tagged_versions="0+", default=None),
            F("RemovingReplicas", "[]int32", nullable="0+", tag=3, tagged_versions="0+", default=None),
            F("AddingReplicas", "[]int32", nullable="0+", tag=4, tagged_versions="0+", default=None),
            F("LeaderRecoveryState", "int8", tag=5, tagged_versions="0+", default=-1),
            F("Directories", "[]uuid", versions="1+", nullable="1+", tag=8, tagged_versions="1+", default=None),
            F(
                "EligibleLeaderReplicas",
                "[]int32",
                versions="2+",
                nullable="2+",
                tag=6,
                tagged_versions="2+",
                default=None,
            ),
            F("LastKnownElr", "[]int32", versions="2+", nullable="2+", tag=7, tagged_versions="2+", default=None),
        ],
    ),
    Schema(
        "FenceBrokerRecord",
        7,
        (0, 0),
        "0+",
        [
            F("Id", "int32"),
            F("Epoch", "int64"),
        ],
    ),
    Schema(
        "UnfenceBrokerRecord",
        8,
        (0, 0),
        "0+",
        [
            F("Id", "int32"),
            F("Epoch", "int64"),
        ],
    ),
    Schema(
        "RemoveTopicRecord",
        9,
        (0, 0),
        "0+",
        [
            F("TopicId", "uuid"),
        ],
    ),
    Schema(
        "DelegationTokenRecord",
        10,
        (0, 0),
        "0+",
        [
            F("Owner", "string"),
            F("Requester", "string"),
            F("Renewers", "[]string"),
            F("IssueTimestamp", "int64"),
            F("MaxTimestamp", "int64"),
            F("ExpirationTimestamp", "int64"),
            F("TokenId", "string"),
        ],
    ),
    Schema(
        "UserScramCredentialRecord",
        11,
        (0, 0),
        "0+",
        [
            F("Name", "string"),
            F("Mechanism", "int8"),
            F("Salt", "bytes"),
            F("StoredKey", "bytes"),
            F("ServerKey", "bytes"),
            F("Iterations", "int32"),
        ],
    ),
    Schema(
        "FeatureLevelRecord",
        12,
        (0, 0),
        "0+",
        [
            F("Name", "string"),
            F("FeatureLevel", "int16"),
        ],
    ),
    Schema(
        "ClientQuotaRecord",
        14,
        (0, 0),
        "0+",
        [
            F(
                "Entity",
                "[]EntityData",
                fields=(
                    F("EntityType", "string"),
                    F("EntityName", "string", nullable="0+"),
                ),
            ),
            F("Key", "string"),
            F("Value", "float64"),
            F("Remove", "bool"),
        ],
    ),
    Schema(
        "ProducerIdsRecord",
        15,
        (0, 0),
        "0+",
        [
            F("BrokerId", "int32"),
            F("BrokerEpoch", "int64", default=-1),
            F("NextProducerId", "int64"),
        ],
    ),
    Schema(
        "BrokerRegistrationChangeRecord",
        17,
        (0, 3),
        "0+",
        [
            F("BrokerId", "int32"),
            F("BrokerEpoch", "int64"),
            F("Fenced", "int8", tag=0, tagged_versions="0+"),
            F("InControlledShutdown", "int8", versions="1+", tag=1, tagged_versions="1+"),
            F("LogDirs", "[]uuid", versions="2+", tag=2, tagged_versions="2+"),
            # v3 (Kafka 4.3, KIP-1066); tag number unverified in source (reference §3.6)
            F("CordonedLogDirs", "[]uuid", versions="3+", nullable="3+", tag=3, tagged_versions="3+", default=None),
        ],
    ),
    Schema(
        "AccessControlEntryRecord",
        18,
        (0, 0),
        "0+",
        [
            F("Id", "uuid"),
            F("ResourceType", "int8"),
            F("ResourceName", "string"),
            F("PatternType", "int8"),
            F("Principal", "string"),
            F("Host", "string"),
            F("Operation", "int8"),
            F("PermissionType", "int8"),
        ],
    ),
    Schema(
        "RemoveAccessControlEntryRecord",
        19,
        (0, 0),
        "0+",
        [
            F("Id", "uuid"),
        ],
    ),
    Schema("NoOpRecord", 20, (0, 0), "0+", []),
    Schema(
        "ZkMigrationStateRecord",
        21,
        (0, 0),
        "0+",
        [
            F("ZkMigrationState", "int8"),
        ],
    ),
    Schema(
        "RemoveUserScramCredentialRecord",
        22,
        (0, 0),
        "0+",
        [
            F("Name", "string"),
            F("Mechanism", "int8"),
        ],
    ),
    Schema(
        "BeginTransactionRecord",
        23,
        (0, 0),
        "0+",
        [
            F("Name", "string", nullable="0+", tag=0, tagged_versions="0+", default=None),
        ],
    ),
    Schema("EndTransactionRecord", 24, (0, 0), "0+", []),
    Schema(
        "AbortTransactionRecord",
        25,
        (0, 0),
        "0+",
        [
            F("Reason", "string", nullable="0+", tag=0, tagged_versions="0+", default=None),
        ],
    ),
    Schema(
        "RemoveDelegationTokenRecord",
        26,
        (0, 0),
        "0+",
        [
            F("TokenId", "string"),
        ],
    ),
    Schema(
        "RegisterControllerRecord",
        27,
        (0, 0),
        "0+",
        [
            F("ControllerId", "int32"),
            F("IncarnationId", "uuid"),
            F("ZkMigrationReady", "bool"),
            F("EndPoints", "[]ControllerEndpoint", fields=_BROKER_ENDPOINT),
            F("Features", "[]ControllerFeature", fields=_FEATURE),
        ],
    ),
    Schema(
        "ClearElrRecord",
        28,
        (0, 0),
        "0+",
        [
            F("TopicName", "string"),
        ],
    ),
    Schema(
        "UnregisterControllerRecord",
        29,
        (0, 0),
        "0+",
        [
            F("ControllerId", "int32"),
        ],
    ),
]

METADATA_SCHEMAS: dict[int, Schema] = {s.api_key: s for s in _SCHEMAS if s.api_key is not None}
"""KRaft metadata record schemas by apiKey.

A newer layout can be registered at run time, e.g. from a Kafka jar's JSON file with
:func:`~workbench.formats.messages.schema_from_kafka_json`; decoding and encoding use it.
"""


def schema_for(name_or_api_key: str | int, registry: dict[int, Schema] | None = None) -> Schema:
    """The schema registered under an apiKey, record name or UPPER_SNAKE type name.

    Examples
    --------
    >>> schema_for("PARTITION_CHANGE_RECORD").api_key
    5
    """
    reg = METADATA_SCHEMAS if registry is None else registry
    if isinstance(name_or_api_key, int) and not isinstance(name_or_api_key, bool):
        found = reg.get(name_or_api_key)
    else:
        wanted = str(name_or_api_key)
        found = next((s for s in reg.values() if wanted in (s.name, s.type_name)), None)
    if found is None:
        raise ConfigError(f"unknown record {name_or_api_key!r}; known: {', '.join(s.name for s in reg.values())}")
    return found


# ---------------------------------------------------------------------------------------------
# Framed records


@dataclass(slots=True)
class MetadataRecord:
    """One decoded framed record (KRaft metadata or remote-log metadata).

    Attributes
    ----------
    api_key, version : int
        From the frame (-1 when the frame itself could not be read).
    name : str
        Schema name (``"PartitionChangeRecord"``) or ``"Unknown"`` for an unknown apiKey.
    type_name : str
        ``"PARTITION_CHANGE_RECORD"`` as Kafka's dump tool prints it, or ``"UNKNOWN"``.
    fields : dict
        Values by Kafka JSON name in schema order (every field of the schema; fields absent
        in the version and tagged fields not written hold their default). Empty when the
        body could not be decoded.
    unknown_tags : dict of int to bytes
        Unknown tagged fields of the top-level struct, kept verbatim.
    raw : bytes
        The full framed value.
    error : str or None
        Why the record could not be (fully) decoded. Records with trailing garbage keep their
        decoded ``fields``.
    """

    api_key: int
    version: int
    name: str
    type_name: str
    fields: dict
    unknown_tags: dict[int, bytes]
    raw: bytes
    error: str | None = None
    frame_version: int = field(default=FRAME_VERSION)


def decode_framed(
    value: bytes | memoryview | None, registry: dict[int, Schema], what: str = "metadata record"
) -> MetadataRecord:
    """Decode a frame ``uvarint frameVersion | uvarint apiKey | uvarint version | body``.

    Never raises for bad bytes; see :class:`MetadataRecord` ``error``.

    Examples
    --------
    >>> decode_framed(b"\\x01\\x63\\x00\\x00", METADATA_SCHEMAS).error
    'unknown apiKey 99'
    """
    raw = b"" if value is None else bytes(value)
    rec = MetadataRecord(-1, -1, "Unknown", "UNKNOWN", {}, {}, raw, None, -1)
    if value is None:
        rec.error = f"null {what} value"
        return rec
    try:
        frame, pos = read_uvarint(raw, 0)
        rec.frame_version = frame
        if frame != FRAME_VERSION:
            rec.error = f"unsupported frame version {frame} (expected {FRAME_VERSION})"
            return rec
        api_key, pos = read_uvarint(raw, pos)
        version, pos = read_uvarint(raw, pos)
    except ValueError as exc:
        rec.error = f"unreadable frame: {exc}"
        return rec
    rec.api_key, rec.version = api_key, version
    if api_key > 0x7FFF or version > 0x7FFF:
        rec.error = f"apiKey {api_key} / version {version} out of range (max 32767)"
        return rec
    schema = registry.get(api_key)
    if schema is None:
        rec.error = f"unknown apiKey {api_key}"
        return rec
    rec.name, rec.type_name = schema.name, schema.type_name
    if not schema.supports(version):
        lo, hi = schema.valid_versions
        rec.error = f"unsupported version {version} of {schema.name} (known {lo}-{hi})"
        return rec
    try:
        values, unknown, end = decode(schema, version, raw, pos)
    except CorruptDataError as exc:
        rec.error = f"at byte {exc.position}: {exc.detail}"
        return rec
    rec.fields, rec.unknown_tags = values, unknown
    if end != len(raw):
        rec.error = f"found {len(raw) - end} byte(s) of garbage after {schema.name} v{version}"
    return rec


def encode_framed(schema: Schema, version: int, fields: dict, unknown_tags: dict[int, bytes] | None = None) -> bytes:
    """Frame and encode a record body (frame version 1)."""
    body = encode(schema, version, fields, unknown_tags)
    return encode_uvarint(FRAME_VERSION) + encode_uvarint(schema.api_key or 0) + encode_uvarint(version) + body


def decode_metadata_record(value: bytes | memoryview | None) -> MetadataRecord:
    """Decode one ``__cluster_metadata`` record value (never raises for bad bytes).

    ``error`` is set for an unknown apiKey (name "Unknown"), an unsupported version (``fields`` empty),
    a bad frame, truncation or trailing bytes.

    >>> rec = decode_metadata_record(bytes([1, 20, 0, 0]))
    >>> rec.name, rec.fields, rec.error
    ('NoOpRecord', {}, None)
    """
    return decode_framed(value, METADATA_SCHEMAS)


def encode_metadata_record(
    name_or_api_key: str | int, version: int, fields: dict, unknown_tags: dict[int, bytes] | None = None
) -> bytes:
    """Encode a metadata record value exactly as Kafka writes it.

    ``name_or_api_key``: ``"PartitionChangeRecord"``, ``"PARTITION_CHANGE_RECORD"`` or ``5``; missing
    ``fields`` take their default. Raises :class:`ConfigError` for an unknown record or version or a
    value that does not fit.

    >>> encode_metadata_record("NoOpRecord", 0, {})
    b'\\x01\\x14\\x00\\x00'
    """
    return encode_framed(schema_for(name_or_api_key), version, fields, unknown_tags)


def metadata_json(record: MetadataRecord, registry: dict[int, Schema] | None = None) -> str | None:
    """The JSON Kafka's tools print for the record body (the ``"data"`` object), or ``None`` if undecoded.

    >>> metadata_json(decode_metadata_record(encode_metadata_record(
    ...     "PartitionChangeRecord", 0, {"partitionId": 0, "topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "leader": 2})))
    '{"partitionId":0,"topicId":"AAAAAAAAAAAAAAAAAAAAAQ","leader":2}'
    """
    reg = METADATA_SCHEMAS if registry is None else registry
    schema = reg.get(record.api_key)
    if schema is None or schema.name != record.name or not schema.supports(record.version):
        return None
    if record.error is not None and not record.error.startswith("found "):
        return None
    if set(record.fields) != {f.json_name for f in schema.fields}:
        return None
    return dumps_json(to_json(schema, record.fields, record.version))


def dump_payload(record: MetadataRecord) -> str | None:
    """The whole ``payload:`` JSON of ``kafka-dump-log --cluster-metadata-decoder``.

    >>> dump_payload(decode_metadata_record(bytes([1, 20, 0, 0])))
    '{"type":"NO_OP_RECORD","version":0,"data":{}}'
    """
    data = metadata_json(record)
    if data is None:
        return None
    return f'{{"type":"{record.type_name}","version":{record.version},"data":{data}}}'
