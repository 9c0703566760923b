"""Control records: transaction markers and KRaft control values (reference §2).

A control record lives in a control batch. Its key is 4 bytes (int16 key version, int16
type); its value depends on the type:

====  ================  ===========================================================
type  name              value
====  ================  ===========================================================
0/1   ABORT / COMMIT    EndTxnMarker (non-flexible: int16 version, int32 epoch)
2     LEADER_CHANGE     LeaderChangeMessage (flexible, read at message version 0)
3     SNAPSHOT_HEADER   SnapshotHeaderRecord
4     SNAPSHOT_FOOTER   SnapshotFooterRecord
5     KRAFT_VERSION     KRaftVersionRecord
6     KRAFT_VOTERS      VotersRecord
====  ================  ===========================================================

Examples
--------
>>> key, value = encode_control_record("KRAFT_VERSION", {"kRaftVersion": 1})
>>> key, value
(b'\\x00\\x00\\x00\\x05', b'\\x00\\x00\\x00\\x01\\x00')
>>> rec = decode_control_record(key, value)
>>> rec.type_name, rec.fields
('KRAFT_VERSION', {'version': 0, 'kRaftVersion': 1})
>>> control_json(rec)
'{"version":0,"kRaftVersion":1}'
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from workbench.errors import ConfigError, CorruptDataError
from workbench.formats.messages import Field as F
from workbench.formats.messages import Schema, decode, dumps_json, encode, to_json

__all__ = [
    "CONTROL_SCHEMAS",
    "CONTROL_TYPES",
    "ControlRecord",
    "control_json",
    "decode_control_record",
    "dump_control_text",
    "encode_control_record",
]

# ---------------------------------------------------------------------------------------------
# Layouts (reference §2.2)

_VOTER = (
    F("VoterId", "int32"),
    F("VoterDirectoryId", "uuid", versions="1+"),
)

_END_TXN_MARKER = Schema(
    "EndTxnMarker",
    None,
    (0, 0),
    "none",
    [
        F("Version", "int16"),
        F("CoordinatorEpoch", "int32"),
    ],
    type="data",
)

CONTROL_SCHEMAS: dict[int, Schema] = {
    0: _END_TXN_MARKER,
    1: _END_TXN_MARKER,
    2: Schema(
        "LeaderChangeMessage",
        None,
        (0, 1),
        "0+",
        [
            F("Version", "int16"),
            F("LeaderId", "int32"),
            F("Voters", "[]Voter", fields=_VOTER),
            F("GrantingVoters", "[]Voter", fields=_VOTER),
        ],
        type="data",
    ),
    3: Schema(
        "SnapshotHeaderRecord",
        None,
        (0, 0),
        "0+",
        [
            F("Version", "int16"),
            F("LastContainedLogTimestamp", "int64"),
        ],
        type="data",
    ),
    4: Schema(
        "SnapshotFooterRecord",
        None,
        (0, 0),
        "0+",
        [
            F("Version", "int16"),
        ],
        type="data",
    ),
    5: Schema(
        "KRaftVersionRecord",
        None,
        (0, 0),
        "0+",
        [
            F("Version", "int16"),
            F("KRaftVersion", "int16"),
        ],
        type="data",
    ),
    6: Schema(
        "VotersRecord",
        None,
        (0, 0),
        "0+",
        [
            F("Version", "int16"),
            F(
                "Voters",
                "[]Voter",
                fields=(
                    F("VoterId", "int32"),
                    F("VoterDirectoryId", "uuid"),
                    F(
                        "Endpoints",
                        "[]Endpoint",
                        fields=(
                            F("Name", "string"),
                            F("Host", "string"),
                            F("Port", "uint16"),
                        ),
                    ),
                    F(
                        "KRaftVersionFeature",
                        "KRaftVersionFeature",
                        fields=(
                            F("MinSupportedVersion", "int16"),
                            F("MaxSupportedVersion", "int16"),
                        ),
                    ),
                ),
            ),
        ],
        type="data",
    ),
}
"""Value schemas by control type. Every value is read and written at message version 0."""

CONTROL_TYPES: dict[int, str] = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
_TYPE_IDS = {name: type_id for type_id, name in CONTROL_TYPES.items()}
_VALUE_VERSION = 0  # ControlRecordUtils.*_CURRENT_VERSION

# labels kafka-dump-log prints before the value JSON (reference §10.4)
_DUMP_LABELS = {2: "LeaderChange:", 3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}

_KEY = struct.Struct(">hh")


@dataclass(slots=True)
class ControlRecord:
    """One decoded control record.

    Attributes
    ----------
    type : int
        Control type from the key (-1 when the key is unreadable).
    type_name : str
        ``ABORT``, ``COMMIT``, ``LEADER_CHANGE``, ``SNAPSHOT_HEADER``, ``SNAPSHOT_FOOTER``,
        ``KRAFT_VERSION``, ``KRAFT_VOTERS`` or ``UNKNOWN``.
    key_version : int
        Version from the key (-1 when unreadable).
    fields : dict
        Value fields by Kafka JSON name (``{"version": 0, "coordinatorEpoch": 5}``,
        ``{"version": 0, "leaderId": 1, "voters": [...], "grantingVoters": [...]}``).
    error : str or None
        Why the record could not be (fully) decoded.
    unknown_tags : dict of int to bytes
        Unknown tagged fields of the value's top-level struct.
    """

    type: int
    type_name: str
    key_version: int
    fields: dict
    error: str | None = None
    unknown_tags: dict[int, bytes] = field(default_factory=dict)


def decode_control_record(key: bytes | memoryview | None, value: bytes | memoryview | None) -> ControlRecord:
    """Decode a control record's key and value (never raises for bad bytes).

    Examples
    --------
    >>> rec = decode_control_record(b"\\x00\\x00\\x00\\x01", b"\\x00\\x00\\x00\\x00\\x00\\x07")
    >>> rec.type_name, rec.fields
    ('COMMIT', {'version': 0, 'coordinatorEpoch': 7})
    """
    rec = ControlRecord(-1, "UNKNOWN", -1, {})
    if key is None:
        rec.error = "control record without a key"
        return rec
    key = bytes(key)
    if len(key) < 4:
        rec.error = f"control record key of {len(key)} bytes (expected 4)"
        return rec
    key_version, type_id = _KEY.unpack_from(key, 0)
    rec.key_version, rec.type = key_version, type_id
    if key_version < 0:
        rec.error = f"negative control record key version {key_version}"
        return rec
    schema = CONTROL_SCHEMAS.get(type_id)
    if schema is None:
        rec.error = f"unknown control record type {type_id}"
        return rec
    rec.type_name = CONTROL_TYPES[type_id]
    if value is None:
        rec.error = f"{rec.type_name} control record without a value"
        return rec
    raw = bytes(value)
    try:
        values, unknown, end = decode(schema, _VALUE_VERSION, raw)
    except CorruptDataError as exc:
        rec.error = f"at byte {exc.position}: {exc.detail}"
        return rec
    rec.fields, rec.unknown_tags = values, unknown
    # EndTxnMarker values of a higher version are read as version 0 (extra bytes ignored)
    if end != len(raw) and not (schema is _END_TXN_MARKER and values["version"] > 0):
        rec.error = f"found {len(raw) - end} byte(s) of garbage after {schema.name}"
    return rec


def encode_control_record(type_name: str, fields: dict, key_version: int = 0) -> tuple[bytes, bytes]:
    """Encode a control record as ``(key, value)``, the bytes Kafka writes.

    ``type_name`` is a :data:`CONTROL_TYPES` value; ``fields`` are by Kafka JSON name. Raises
    :class:`ConfigError` for an unknown type or values that do not fit the schema.

    >>> encode_control_record("ABORT", {"coordinatorEpoch": 3})
    (b'\\x00\\x00\\x00\\x00', b'\\x00\\x00\\x00\\x00\\x00\\x03')
    """
    type_id = _TYPE_IDS.get(type_name)
    if type_id is None:
        raise ConfigError(f"unknown control record type {type_name!r}; expected one of {', '.join(_TYPE_IDS)}")
    return _KEY.pack(key_version, type_id), encode(CONTROL_SCHEMAS[type_id], _VALUE_VERSION, fields)


def control_json(record: ControlRecord) -> str | None:
    """Kafka's JSON rendering of the control value (``None`` if it was not decoded).

    >>> control_json(decode_control_record(*encode_control_record("SNAPSHOT_FOOTER", {})))
    '{"version":0}'
    """
    schema = CONTROL_SCHEMAS.get(record.type)
    if schema is None or not record.fields:
        return None
    return dumps_json(to_json(schema, record.fields, _VALUE_VERSION))


def dump_control_text(record: ControlRecord, leader_change_json: bool = False) -> str:
    """The text ``kafka-dump-log`` appends to a control record line (after ``headerKeys: []``).
    ``leader_change_json``: the 4.1+ JSON rendering of LEADER_CHANGE.

    >>> dump_control_text(decode_control_record(*encode_control_record("COMMIT", {"coordinatorEpoch": 0})))
    'endTxnMarker: COMMIT coordinatorEpoch: 0'
    """
    if record.type in (0, 1) and record.fields:
        return f"endTxnMarker: {record.type_name} coordinatorEpoch: {record.fields['coordinatorEpoch']}"
    text = control_json(record)
    if text is not None and record.type in _DUMP_LABELS and (record.type != 2 or leader_change_json):
        return f"{_DUMP_LABELS[record.type]} {text}"
    return f"controlType: {record.type_name}({record.type})"
