"""MirrorMaker 2 internal records: offset syncs, checkpoints, heartbeats, Connect offsets (§7).

MM2 writes its binary records in the legacy ``Schema``/``Struct`` encoding: a plain
concatenation of int16-length UTF-8 strings (never null) and big-endian integers, which is the
non-flexible generated-message encoding at version 0. Layouts:

============  ==========================================  =============================================
record        key                                         value
============  ==========================================  =============================================
OffsetSync    topic STRING, partition INT32               upstreamOffset INT64, offset INT64 (no version)
Checkpoint    group STRING, topic STRING, partition INT32  INT16 version, upstreamOffset, offset, metadata
Heartbeat     sourceClusterAlias, targetClusterAlias      INT16 version, timestamp INT64
============  ==========================================  =============================================

MM2 source positions live in the Connect offsets topic as JSON
(``["<connector>", {"cluster": .., "partition": .., "topic": ..}]`` -> ``{"offset": N}``).

Examples
--------
>>> k, v = encode_offset_sync("orders", 0, 1500, 1498)
>>> rec = decode_offset_sync(k, v)
>>> rec.key, rec.value
({'topic': 'orders', 'partition': 0}, {'upstreamOffset': 1500, 'offset': 1498})
>>> mirror_text(rec)
'OffsetSync{topicPartition=orders-0, upstreamOffset=1500, downstreamOffset=1498}'
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Collection
from dataclasses import dataclass, field

from workbench.errors import ConfigError, CorruptDataError
from workbench.formats.messages import Field as F
from workbench.formats.messages import Schema, decode, encode

__all__ = [
    "CONNECT_OFFSETS_TOPICS",
    "MirrorRecord",
    "MirrorTopology",
    "classify_mirror_topic",
    "decode_checkpoint",
    "decode_connect_offset",
    "decode_heartbeat",
    "decode_offset_sync",
    "encode_checkpoint",
    "encode_connect_offset",
    "encode_heartbeat",
    "encode_offset_sync",
    "mirror_text",
    "mirror_topology",
]

# ---------------------------------------------------------------------------------------------
# Layouts (reference §7.2–§7.4)


def _legacy(name: str, fields: list[F]) -> Schema:
    return Schema(name, None, (0, 0), "none", fields, type="data")


OFFSET_SYNC_KEY = _legacy("OffsetSyncKey", [F("topic", "string"), F("partition", "int32")])
OFFSET_SYNC_VALUE = _legacy("OffsetSyncValue", [F("upstreamOffset", "int64"), F("offset", "int64")])
CHECKPOINT_KEY = _legacy("CheckpointKey", [F("group", "string"), F("topic", "string"), F("partition", "int32")])
CHECKPOINT_VALUE = _legacy(
    "CheckpointValue", [F("upstreamOffset", "int64"), F("offset", "int64"), F("metadata", "string")]
)
HEARTBEAT_KEY = _legacy("HeartbeatKey", [F("sourceClusterAlias", "string"), F("targetClusterAlias", "string")])
HEARTBEAT_VALUE = _legacy("HeartbeatValue", [F("timestamp", "int64")])

_I16 = struct.Struct(">h")


@dataclass(slots=True)
class MirrorRecord:
    """One decoded MM2 record.

    Attributes
    ----------
    kind : str
        ``offset_sync``, ``checkpoint``, ``heartbeat``; for Connect offsets ``source_offset``
        (MirrorSourceConnector), ``checkpoint_offset``, ``heartbeat_offset`` or
        ``connect_offset`` (any other connector).
    key : dict
        Key fields (``topic``/``partition``, ``group``/``topic``/``partition``,
        ``sourceClusterAlias``/``targetClusterAlias``; for Connect offsets ``connector`` plus
        the source partition's own keys).
    value : dict or None
        Value fields (``version`` included for versioned values); ``None`` for a tombstone or
        when not decoded.
    error : str or None
        Why the record could not be decoded.
    """

    kind: str
    key: dict
    value: dict | None
    error: str | None = None


def _decode(
    kind: str,
    key_schema: Schema,
    value_schema: Schema,
    versioned: bool,
    key: bytes | memoryview | None,
    value: bytes | memoryview | None,
) -> MirrorRecord:
    rec = MirrorRecord(kind, {}, None)
    if key is None:
        rec.error = f"{kind} record without a key"
        return rec
    raw_key = bytes(key)
    try:
        rec.key, _, end = decode(key_schema, 0, raw_key)
    except CorruptDataError as exc:
        rec.error = f"key at byte {exc.position}: {exc.detail}"
        return rec
    if end != len(raw_key):
        rec.error = f"found {len(raw_key) - end} byte(s) of garbage after the {kind} key"
        return rec
    if value is None:
        return rec
    raw = bytes(value)
    pos = 0
    version = None
    if versioned:
        if len(raw) < 2:
            rec.error = f"{kind} value of {len(raw)} bytes has no version"
            return rec
        (version,) = _I16.unpack_from(raw, 0)
        if version < 0:
            rec.error = f"negative {kind} value version {version}"
            return rec
        pos = 2
    try:
        fields, _, end = decode(value_schema, 0, raw, pos)
    except CorruptDataError as exc:
        rec.error = f"value at byte {exc.position}: {exc.detail}"
        return rec
    rec.value = {"version": version, **fields} if versioned else fields
    # a higher value version is read with the version 0 layout, like MM2 itself does
    if end != len(raw) and not (version or 0) > 0:
        rec.error = f"found {len(raw) - end} byte(s) of garbage after the {kind} value"
    return rec


def decode_offset_sync(key: bytes | memoryview | None, value: bytes | memoryview | None) -> MirrorRecord:
    """Decode an ``mm2-offset-syncs.<alias>.internal`` record (never raises for bad bytes)."""
    return _decode("offset_sync", OFFSET_SYNC_KEY, OFFSET_SYNC_VALUE, False, key, value)


def decode_checkpoint(key: bytes | memoryview | None, value: bytes | memoryview | None) -> MirrorRecord:
    """Decode a ``<source>.checkpoints.internal`` record (never raises for bad bytes).

    >>> rec = decode_checkpoint(*encode_checkpoint("g", "A.orders", 1, 100, 98, ""))
    >>> rec.value
    {'version': 0, 'upstreamOffset': 100, 'offset': 98, 'metadata': ''}
    """
    return _decode("checkpoint", CHECKPOINT_KEY, CHECKPOINT_VALUE, True, key, value)


def decode_heartbeat(key: bytes | memoryview | None, value: bytes | memoryview | None) -> MirrorRecord:
    """Decode a ``heartbeats`` record (never raises for bad bytes)."""
    return _decode("heartbeat", HEARTBEAT_KEY, HEARTBEAT_VALUE, True, key, value)


def encode_offset_sync(topic: str, partition: int, upstream_offset: int, offset: int) -> tuple[bytes, bytes]:
    """Encode an offset sync as MM2 writes it: ``(key, value)``."""
    return (
        encode(OFFSET_SYNC_KEY, 0, {"topic": topic, "partition": partition}),
        encode(OFFSET_SYNC_VALUE, 0, {"upstreamOffset": upstream_offset, "offset": offset}),
    )


def encode_checkpoint(
    group: str, topic: str, partition: int, upstream_offset: int, offset: int, metadata: str = "", version: int = 0
) -> tuple[bytes, bytes]:
    """Encode a checkpoint as MM2 writes it (``topic`` is the downstream topic name)."""
    return (
        encode(CHECKPOINT_KEY, 0, {"group": group, "topic": topic, "partition": partition}),
        _I16.pack(version)
        + encode(CHECKPOINT_VALUE, 0, {"upstreamOffset": upstream_offset, "offset": offset, "metadata": metadata}),
    )


def encode_heartbeat(source_alias: str, target_alias: str, timestamp: int, version: int = 0) -> tuple[bytes, bytes]:
    """Encode a heartbeat as MM2 writes it."""
    return (
        encode(HEARTBEAT_KEY, 0, {"sourceClusterAlias": source_alias, "targetClusterAlias": target_alias}),
        _I16.pack(version) + encode(HEARTBEAT_VALUE, 0, {"timestamp": timestamp}),
    )


# ---------------------------------------------------------------------------------------------
# Connect offsets (reference §7.5)


def _partition_kind(partition: dict) -> str:
    if {"cluster", "topic", "partition"} <= partition.keys():
        return "source_offset"
    if {"group", "topic", "partition"} <= partition.keys():
        return "checkpoint_offset"
    if {"sourceClusterAlias", "targetClusterAlias"} <= partition.keys():
        return "heartbeat_offset"
    return "connect_offset"


def decode_connect_offset(key: bytes | memoryview | None, value: bytes | memoryview | None) -> MirrorRecord:
    """Decode a Connect offsets topic record (JSON key and value; never raises for bad bytes).

    The key order inside the partition object is arbitrary (a Java ``HashMap``), so it is
    parsed, not compared as text.

    Examples
    --------
    >>> key = b'["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"orders"}]'
    >>> rec = decode_connect_offset(key, b'{"offset":41}')
    >>> rec.kind, rec.key["topic"], rec.value
    ('source_offset', 'orders', {'offset': 41})
    """
    rec = MirrorRecord("connect_offset", {}, None)
    if key is None:
        rec.error = "Connect offset record without a key"
        return rec
    try:
        parsed = json.loads(bytes(key).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        rec.error = f"key is not JSON: {exc}"
        return rec
    if not (
        isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], str) and isinstance(parsed[1], dict)
    ):
        rec.error = "key is not [connectorName, {partition}]"
        return rec
    rec.kind = _partition_kind(parsed[1])
    rec.key = {"connector": parsed[0], **parsed[1]}
    if value is None:
        return rec
    try:
        parsed_value = json.loads(bytes(value).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        rec.error = f"value is not JSON: {exc}"
        return rec
    if not isinstance(parsed_value, dict):
        rec.error = "value is not a JSON object"
        return rec
    rec.value = parsed_value
    return rec


def encode_connect_offset(connector: str, partition: dict, offset: int | None) -> tuple[bytes, bytes | None]:
    """Encode a Connect offsets record as Connect's JsonConverter writes it (``None`` = tombstone).

    >>> encode_connect_offset("MirrorSourceConnector", {"cluster": "A", "partition": 0, "topic": "t"}, 5)
    (b'["MirrorSourceConnector",{"cluster":"A","partition":0,"topic":"t"}]', b'{"offset":5}')
    """
    if not isinstance(partition, dict):
        raise ConfigError(f"partition must be a dict, got {partition!r}")
    key = json.dumps([connector, partition], separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if offset is None:
        return key, None
    return key, json.dumps({"offset": offset}, separators=(",", ":")).encode("utf-8")


# ---------------------------------------------------------------------------------------------
# Text forms and topic names


def mirror_text(record: MirrorRecord) -> str | None:
    """The ``toString()`` MM2's console formatters print (``None`` if not decoded).

    Examples
    --------
    >>> mirror_text(decode_heartbeat(*encode_heartbeat("A", "B", 1718000000000)))
    'Heartbeat{sourceClusterAlias=A, targetClusterAlias=B, timestamp=1718000000000}'
    """
    k, v = record.key, record.value
    if v is None or record.error is not None:
        return None
    if record.kind == "offset_sync":
        return (
            f"OffsetSync{{topicPartition={k['topic']}-{k['partition']}, "
            f"upstreamOffset={v['upstreamOffset']}, downstreamOffset={v['offset']}}}"
        )
    if record.kind == "checkpoint":
        return (
            f"Checkpoint{{consumerGroupId={k['group']}, topicPartition={k['topic']}-{k['partition']}, "
            f"upstreamOffset={v['upstreamOffset']}, downstreamOffset={v['offset']}, metadata={v['metadata']}}}"
        )
    if record.kind == "heartbeat":
        return (
            f"Heartbeat{{sourceClusterAlias={k['sourceClusterAlias']}, "
            f"targetClusterAlias={k['targetClusterAlias']}, timestamp={v['timestamp']}}}"
        )
    return None


#: The offsets topics of Kafka Connect clusters by their usual names, where MirrorMaker 2's connectors
#: keep their positions when they run on a Connect cluster instead of a dedicated MirrorMaker 2:
#: Apache Kafka's ``config/connect-distributed.properties`` (``offset.storage.topic``), and the
#: Strimzi operator's defaults for a ``KafkaConnect`` and a ``KafkaMirrorMaker2``. Any other name
#: comes from the configuration (:attr:`MirrorTopology.offsets_topics`).
CONNECT_OFFSETS_TOPICS: tuple[str, ...] = ("connect-offsets", "connect-cluster-offsets", "mirrormaker2-cluster-offsets")


def classify_mirror_topic(topic: str, separator: str = ".",
                          offsets_topics: Collection[str] = ()) -> tuple[str, str | None] | None:
    """What an MM2-related topic holds: ``(kind, alias)`` or ``None``.

    Kinds: ``offset_syncs`` (alias = the other cluster), ``checkpoints`` (alias = source),
    ``heartbeats`` (alias = the upstream path of a replicated copy, ``None`` for the local
    topic), ``connect_offsets`` (``mm2-offsets.<source>.internal``, alias = source; a Connect
    cluster's offsets topic, named in :data:`CONNECT_OFFSETS_TOPICS` or in ``offsets_topics``,
    alias ``None``: each record's key names its source cluster).

    Examples
    --------
    >>> classify_mirror_topic("mm2-offset-syncs.B.internal")
    ('offset_syncs', 'B')
    >>> classify_mirror_topic("C.A.heartbeats")
    ('heartbeats', 'C.A')
    >>> classify_mirror_topic("connect-offsets"), classify_mirror_topic("dr-offsets", offsets_topics=["dr-offsets"])
    (('connect_offsets', None), ('connect_offsets', None))
    """
    if topic.startswith("mm2-offset-syncs.") and topic.endswith(".internal"):
        return "offset_syncs", topic[len("mm2-offset-syncs.") : -len(".internal")]
    if topic.startswith("mm2-offsets.") and topic.endswith(".internal"):
        return "connect_offsets", topic[len("mm2-offsets.") : -len(".internal")]
    if topic in offsets_topics or topic in CONNECT_OFFSETS_TOPICS:
        return "connect_offsets", None
    for sep in {separator, "."}:
        suffix = f"{sep}checkpoints{sep}internal"
        if topic.endswith(suffix) and len(topic) > len(suffix):
            return "checkpoints", topic[: -len(suffix)]
    if topic == "heartbeats":
        return "heartbeats", None
    if topic.endswith(f"{separator}heartbeats"):
        return "heartbeats", topic[: -len(separator) - len("heartbeats")]
    return None


# ---------------------------------------------------------------------------------------------
# The replication flows of a MirrorMaker 2 configuration


@dataclass(frozen=True)
class MirrorTopology:
    """What a MirrorMaker 2 configuration (``mm2.properties``) says about clusters and flows.

    Attributes
    ----------
    clusters : tuple of str
        The aliases of ``clusters``.
    flows : tuple of (str, str)
        The enabled replication flows ``(source, target)`` (``A->B.enabled = true``).
    separator : str
        ``replication.policy.separator`` (default ``.``).
    offset_syncs_location : dict of str to str
        ``offset-syncs.topic.location`` (``source``, the default, or ``target``): under ``""``
        the global value, under ``"A->B"`` a flow's own.
    offsets_topics : tuple of str
        Connect offsets topics the configuration names (``offset.storage.topic``, also per
        cluster as ``<alias>.offset.storage.topic``), beside MirrorMaker 2's default names.
    """

    clusters: tuple[str, ...] = ()
    flows: tuple[tuple[str, str], ...] = ()
    separator: str = "."
    offset_syncs_location: dict[str, str] = field(default_factory=dict)
    offsets_topics: tuple[str, ...] = ()

    def location(self, source: str, target: str) -> str:
        """Where the offset syncs of flow ``source->target`` live: ``source`` or ``target``."""
        loc = self.offset_syncs_location
        return loc.get(f"{source}->{target}", loc.get("", "source"))

    def other(self, alias: str, *, alias_is_source: bool) -> str | None:
        """The other end of the one flow ``alias`` is the source (or target) of, if one can tell.

        Without exactly one enabled flow, a configuration of exactly two clusters names the other one
        (MirrorMaker 2 runs a heartbeat flow between every pair).

        >>> t = mirror_topology({"clusters": "A, B, C", "A->B.enabled": "true", "A->C.enabled": "true"})
        >>> t.other("B", alias_is_source=False), t.other("A", alias_is_source=True)
        ('A', None)
        """
        ends = [t if alias_is_source else s for s, t in self.flows if (s if alias_is_source else t) == alias]
        if len(set(ends)) == 1:
            return ends[0]
        if len(self.clusters) == 2 and alias in self.clusters and not ends:
            return self.clusters[1] if self.clusters[0] == alias else self.clusters[0]
        return None


_FLOW_KEY = re.compile(r"^(?P<source>[^>]+)->(?P<target>.+?)\.(?P<name>enabled|offset-syncs\.topic\.location)$")


def mirror_topology(properties: dict[str, str]) -> MirrorTopology:
    """The clusters and flows of a parsed ``mm2.properties``.

    ``properties`` comes from :func:`~workbench.formats.kraft_files.parse_java_properties`.

    Examples
    --------
    >>> t = mirror_topology({"clusters": "source, target", "source->target.enabled": "true",
    ...                      "target->source.enabled": "false"})
    >>> t.clusters, t.flows, t.location("source", "target")
    (('source', 'target'), (('source', 'target'),), 'source')
    """
    clusters = tuple(c.strip() for c in properties.get("clusters", "").split(",") if c.strip())
    flows: list[tuple[str, str]] = []
    locations: dict[str, str] = {}
    if "offset-syncs.topic.location" in properties:
        locations[""] = properties["offset-syncs.topic.location"].strip().lower()
    for key, value in properties.items():
        m = _FLOW_KEY.match(key)
        if m is None:
            continue
        source, target = m["source"].strip(), m["target"].strip()
        if m["name"] == "enabled":
            if value.strip().lower() == "true":
                flows.append((source, target))
        else:
            locations[f"{source}->{target}"] = value.strip().lower()
    stored = sorted({v.strip() for k, v in properties.items()
                     if v.strip() and (k == "offset.storage.topic"
                                       or (k.endswith(".offset.storage.topic")
                                           and k[: -len(".offset.storage.topic")].strip() in clusters))})
    return MirrorTopology(clusters, tuple(flows), properties.get("replication.policy.separator", ".") or ".",
                          locations, tuple(stored))
