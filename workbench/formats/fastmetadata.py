"""KRaft metadata records as typed Arrow columns, decoded by compiled (numba) loops.

The ``metadata`` table has one row per record of a ``__cluster_metadata`` segment, snapshot or
bootstrap checkpoint. Besides the record's place (batch, offset, time, Raft epoch) and type, the
fields the analyses read are typed columns (:data:`TYPED_COLUMNS`): topic id and name, partition,
leader, ISR, replicas, ELR, adding and removing replicas, partition and leader epochs, config
resource and value, broker id, epoch and fencing, feature levels. Kafka's full field set stays
available as JSON text (``fields``), built when asked for, and always for the rows the typed
columns cannot describe: control records, record types without typed columns
(:data:`TYPED_RECORD_TYPES` lists the others) and records that did not decode cleanly.

Two implementations give the same rows and problems:

* :func:`metadata_batches` with ``compiled=False``: the careful reader. Each batch's records come
  from :meth:`Batch.records <workbench.formats.batch.Batch.records>`, each value is decoded by
  :func:`~workbench.formats.metadata.decode_metadata_record` (the schema-driven decoder) and the
  typed columns are read off its field dictionary (:func:`typed_values`);
* the default, compiled path, for the many clean records. Batches are gathered into runs (as in
  :mod:`workbench.formats.fastrecords`); their records are decoded by
  :func:`~workbench.formats.fastrecords.records_table`, then one compiled pass reads the frame
  and body of every record of the hot types (NoOp, Topic, Partition, PartitionChange, Config,
  RemoveTopic, Fence/Unfence, UnregisterBroker, BrokerRegistrationChange, FeatureLevel) straight
  from the value bytes into column arrays, and a second one gathers strings, topic ids and replica
  lists into Arrow buffers. Anything else (another record type, a version or layout it does not
  know, bytes that do not parse exactly as the schema says, text that is not valid UTF-8, control
  records) is decoded by the careful code for that record; a run in which the record reader meets
  any problem is decoded by the careful reader as a whole. Rows, problems (same order) and strict
  errors are therefore the careful reader's.

Column conventions: ``timestamp`` is the record's epoch milliseconds; ``topic_id`` is Kafka's
text form of a uuid (22 base64url characters, as in ``fields``); for a ``PartitionChangeRecord``
a field the record does not carry (unchanged) is null, except ``leader``, which keeps Kafka's
``-2`` (no change); ``leader_recovery_state`` is null when it is ``-1`` (no change).
``fenced`` is the flag of ``RegisterBrokerRecord``, true for ``FenceBrokerRecord``, false for
``UnfenceBrokerRecord``, true/false for a ``BrokerRegistrationChangeRecord`` that fences (1) or
unfences (-1) and null when it leaves fencing alone (0); ``in_controlled_shutdown`` likewise
(its flag, or true when a change record sets it, else null). ``broker_id`` is the node id of
Register/Unregister/Fence/Unfence/BrokerRegistrationChange and ``RegisterControllerRecord``.

Examples
--------
>>> import io
>>> from workbench.formats.batch import read_batches
>>> from workbench.formats.kraft_log import MetadataLogWriter
>>> w = MetadataLogWriter()
>>> _ = w.append([("PartitionChangeRecord", 0, {"partitionId": 3, "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
...                                               "isr": [1, 2]})], timestamp=1_700_000_000_000, epoch=4)
>>> t = metadata_table(read_batches(io.BytesIO(w.to_bytes())))
>>> t.select(["offset", "record_type", "topic_id", "partition", "leader", "isr", "replicas", "fields"]).to_pylist()
[{'offset': 0, 'record_type': 'PartitionChangeRecord', 'topic_id': 'AAAAAAAAAAAAAAAAAAAAAQ', 'partition': 3, \
'leader': -2, 'isr': [1, 2], 'replicas': None, 'fields': None}]
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
from numba import njit

from workbench.formats.batch import Batch, _resolve_log
from workbench.formats.control import decode_control_record
from workbench.formats.fastrecords import (
    _utf8_ok,  # one UTF-8 check for every compiled decoder
    records_table,
)
from workbench.formats.messages import uuid_from_str
from workbench.formats.metadata import METADATA_SCHEMAS, decode_metadata_record
from workbench.formats.problems import ProblemLog

#: How the workbench reaches this module's kernels (:func:`workbench.kernels.compiled_paths`).
COMPILED_PATH = {"name": "metadata record decoder", "tables": ("metadata",)}

__all__ = [
    "METADATA_ARROW_SCHEMA",
    "TYPED_COLUMNS",
    "TYPED_RECORD_TYPES",
    "fields_json",
    "metadata_batches",
    "metadata_table",
    "typed_values",
]

_INT_LIST = pa.list_(pa.int32())

#: The typed columns, in table order, with their Arrow types.
TYPED_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("topic_id", pa.string()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("leader", pa.int32()),
    ("isr", _INT_LIST),
    ("replicas", _INT_LIST),
    ("elr", _INT_LIST),
    ("last_known_elr", _INT_LIST),
    ("adding", _INT_LIST),
    ("removing", _INT_LIST),
    ("partition_epoch", pa.int32()),
    ("record_leader_epoch", pa.int32()),
    ("leader_recovery_state", pa.int32()),
    ("config_resource_type", pa.int32()),
    ("config_resource_name", pa.string()),
    ("config_name", pa.string()),
    ("config_value", pa.string()),
    ("broker_id", pa.int32()),
    ("broker_epoch", pa.int64()),
    ("fenced", pa.bool_()),
    ("in_controlled_shutdown", pa.bool_()),
    ("feature_name", pa.string()),
    ("feature_level", pa.int32()),
)

METADATA_ARROW_SCHEMA = pa.schema(
    [
        pa.field("batch_position", pa.int64()),
        pa.field("batch_base_offset", pa.int64()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.int64()),
        pa.field("leader_epoch", pa.int32()),
        pa.field("is_control", pa.bool_()),
        pa.field("record_type", pa.string()),
        pa.field("api_key", pa.int32()),
        pa.field("version", pa.int32()),
    ]
    + [pa.field(name, typ) for name, typ in TYPED_COLUMNS]
    + [
        pa.field("fields", pa.string()),
        pa.field("crc_valid", pa.bool_()),
        pa.field("error", pa.string()),
    ]
)
"""Schema of :func:`metadata_table`: one row per metadata or control record, in file order.

``timestamp`` is in epoch milliseconds; ``leader_epoch`` is the Raft epoch of the record's batch
(``record_leader_epoch`` is a partition's leader epoch from its record).
"""

TYPED_RECORD_TYPES: frozenset[str] = frozenset({
    "RegisterBrokerRecord", "UnregisterBrokerRecord", "TopicRecord", "PartitionRecord", "ConfigRecord",
    "PartitionChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord", "RemoveTopicRecord",
    "FeatureLevelRecord", "BrokerRegistrationChangeRecord", "RegisterControllerRecord", "NoOpRecord",
})
"""Record types described by the typed columns: their ``fields`` is null unless asked for."""

# ---------------------------------------------------------------------------------------------
# the careful mapping: decoded fields -> typed values


def _fence_change(value: Any) -> bool | None:
    return True if value == 1 else False if value == -1 else None


def _set(value: Any) -> bool | None:
    return True if value == 1 else None


def _unchanged(value: Any, default: Any) -> Any:
    return None if value == default else value


_TYPED_FROM_FIELDS: dict[str, dict[str, Any]] = {
    "TopicRecord": {"topic": "name", "topic_id": "topicId"},
    "PartitionRecord": {
        "topic_id": "topicId", "partition": "partitionId", "leader": "leader", "isr": "isr",
        "replicas": "replicas", "elr": "eligibleLeaderReplicas", "last_known_elr": "lastKnownElr",
        "adding": "addingReplicas", "removing": "removingReplicas", "partition_epoch": "partitionEpoch",
        "record_leader_epoch": "leaderEpoch", "leader_recovery_state": "leaderRecoveryState",
    },
    "PartitionChangeRecord": {
        "topic_id": "topicId", "partition": "partitionId", "leader": "leader", "isr": "isr",
        "replicas": "replicas", "elr": "eligibleLeaderReplicas", "last_known_elr": "lastKnownElr",
        "adding": "addingReplicas", "removing": "removingReplicas",
        "leader_recovery_state": ("leaderRecoveryState", lambda v: _unchanged(v, -1)),
    },
    "RemoveTopicRecord": {"topic_id": "topicId"},
    "ConfigRecord": {"config_resource_type": "resourceType", "config_resource_name": "resourceName",
                     "config_name": "name", "config_value": "value"},
    "RegisterBrokerRecord": {"broker_id": "brokerId", "broker_epoch": "brokerEpoch", "fenced": "fenced",
                             "in_controlled_shutdown": "inControlledShutdown"},
    "UnregisterBrokerRecord": {"broker_id": "brokerId", "broker_epoch": "brokerEpoch"},
    "BrokerRegistrationChangeRecord": {
        "broker_id": "brokerId", "broker_epoch": "brokerEpoch", "fenced": ("fenced", _fence_change),
        "in_controlled_shutdown": ("inControlledShutdown", _set),
    },
    "FenceBrokerRecord": {"broker_id": "id", "broker_epoch": "epoch", "fenced": (None, lambda _v: True)},
    "UnfenceBrokerRecord": {"broker_id": "id", "broker_epoch": "epoch", "fenced": (None, lambda _v: False)},
    "RegisterControllerRecord": {"broker_id": "controllerId"},
    "FeatureLevelRecord": {"feature_name": "name", "feature_level": "featureLevel"},
}


def typed_values(record_type: str, fields: dict) -> dict[str, Any]:
    """The typed columns of one decoded metadata record (only the non-null ones).

    ``fields`` as :func:`~workbench.formats.metadata.decode_metadata_record` gives them (empty: nothing typed).

    >>> typed_values("FenceBrokerRecord", {"id": 2, "epoch": 7})
    {'broker_id': 2, 'broker_epoch': 7, 'fenced': True}
    >>> typed_values("PartitionChangeRecord", {"partitionId": 0, "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
    ...     "isr": None, "leader": -2, "leaderRecoveryState": -1})
    {'topic_id': 'AAAAAAAAAAAAAAAAAAAAAQ', 'partition': 0, 'leader': -2}
    """
    plan = _TYPED_FROM_FIELDS.get(record_type)
    if plan is None or not fields:
        return {}
    out: dict[str, Any] = {}
    for column, source in plan.items():
        if isinstance(source, tuple):
            key, convert = source
            value = convert(None if key is None else fields.get(key))
        else:
            value = fields.get(source)
        if value is not None:
            out[column] = value
    return out


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def fields_json(fields: dict) -> str:
    """JSON text of decoded record fields (bytes as base64, like Kafka's tools print them).

    >>> fields_json({"name": "metadata.version", "featureLevel": 21, "raw": b"\\x01"})
    '{"name":"metadata.version","featureLevel":21,"raw":"AQ=="}'
    """
    return json.dumps(fields, default=_json_default, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# rows of the careful reader


class _Rows:
    """Column lists for rows decoded by Python, in order; turned into one Arrow batch."""

    names = METADATA_ARROW_SCHEMA.names

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = {name: [] for name in self.names}
        self.n = 0

    def add(self, b: Batch, offset: int, timestamp: int, rtype: str, api_key: int, version: int,
            typed: dict[str, Any], fields: str | None, error: str | None) -> None:
        c = self.cols
        c["batch_position"].append(b.position)
        c["batch_base_offset"].append(b.base_offset)
        c["offset"].append(_wrap64(offset))
        c["timestamp"].append(_wrap64(timestamp))
        c["leader_epoch"].append(b.partition_leader_epoch)
        c["is_control"].append(b.is_control)
        c["record_type"].append(rtype)
        c["api_key"].append(api_key)
        c["version"].append(version)
        for name, _t in TYPED_COLUMNS:
            c[name].append(typed.get(name))
        c["fields"].append(fields)
        c["crc_valid"].append(b.crc_valid)
        c["error"].append(error)
        self.n += 1

    def batch(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict(self.cols, schema=METADATA_ARROW_SCHEMA)


_TWO63 = 1 << 63
_MASK64 = (1 << 64) - 1


def _wrap64(v: int) -> int:
    return v if -_TWO63 <= v < _TWO63 else ((v + _TWO63) & _MASK64) - _TWO63


def _careful_record(rows: _Rows, b: Batch, offset: int, timestamp: int, key: Any, value: Any,
                    log: ProblemLog, want_fields: bool) -> None:
    """Decode one record the careful way and add its row (or report a null value and skip it)."""
    if b.is_control:
        ctl = decode_control_record(key, value)
        rows.add(b, offset, timestamp, ctl.type_name, ctl.type, ctl.key_version, {},
                 fields_json(ctl.fields) if ctl.fields is not None else None, ctl.error)
        return
    if value is None:
        log.report(b.position, "record_error", f"metadata record at offset {offset} has a null value")
        return
    md = decode_metadata_record(value)
    if md.error:
        log.report(b.position, "decode_error", f"offset {offset}: {md.error}")
    typed = typed_values(md.name, md.fields)
    keep = want_fields or md.error is not None or md.name not in TYPED_RECORD_TYPES
    rows.add(b, offset, timestamp, md.name, md.api_key, md.version, typed,
             fields_json(md.fields) if keep else None, md.error)


def _careful_batches(batches: Iterable[Batch], log: ProblemLog, want_fields: bool) -> Iterator[pa.RecordBatch]:
    rows = _Rows()
    for b in batches:
        for r in b.records(log):
            _careful_record(rows, b, r.offset, r.timestamp, r.key, r.value, log, want_fields)
        if rows.n >= _ROWS_PER_BATCH:
            yield rows.batch()
            rows = _Rows()
    if rows.n:
        yield rows.batch()


# ---------------------------------------------------------------------------------------------
# compiled kernels

# ival / ivalid rows
(_I_PARTITION, _I_LEADER, _I_PEPOCH, _I_LEPOCH, _I_LRS, _I_CRTYPE, _I_BROKER, _I_FLEVEL, _I_BEPOCH, _I_FENCED,
 _I_ICS) = range(11)
_N_INTS = 11
_INT_COLUMNS = ("partition", "leader", "partition_epoch", "record_leader_epoch", "leader_recovery_state",
                "config_resource_type", "broker_id", "feature_level")
# spos / slen rows
_S_TOPIC, _S_CRNAME, _S_CNAME, _S_CVALUE, _S_FEATURE = range(5)
_N_STRS = 5
_STR_COLUMNS = ("topic", "config_resource_name", "config_name", "config_value", "feature_name")
# lpos / lcnt rows
_L_ISR, _L_REPLICAS, _L_ELR, _L_LKE, _L_ADDING, _L_REMOVING = range(6)
_N_LISTS = 6
_LIST_COLUMNS = ("isr", "replicas", "elr", "last_known_elr", "adding", "removing")

_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", np.uint8).copy()


@njit(cache=True, nogil=True)
def _uv(buf: np.ndarray, pos: int, end: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (as ``read_uvarint``): ``(value, next)``, next -1 if bad."""
    result = 0
    shift = 0
    for _ in range(5):
        if pos >= end:
            return 0, -1
        b = np.int64(buf[pos])
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    return 0, -1


@njit(cache=True, nogil=True)
def _i32(buf: np.ndarray, p: int) -> int:
    v = (np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8) | np.int64(buf[p + 3])
    return v - (1 << 32) if v >= (1 << 31) else v


@njit(cache=True, nogil=True)
def _i64(buf: np.ndarray, p: int) -> int:
    v = np.uint64(0)
    for i in range(8):
        v = (v << np.uint64(8)) | np.uint64(buf[p + i])
    return np.int64(v)


@njit(cache=True, nogil=True)
def _i16(buf: np.ndarray, p: int) -> int:
    v = (np.int64(buf[p]) << 8) | np.int64(buf[p + 1])
    return v - (1 << 16) if v >= (1 << 15) else v


@njit(cache=True, nogil=True)
def _i8(buf: np.ndarray, p: int) -> int:
    v = np.int64(buf[p])
    return v - 256 if v >= 128 else v


@njit(cache=True, nogil=True)
def _string(buf: np.ndarray, p: int, end: int, nullable: bool, spos: np.ndarray, slen: np.ndarray,
            k: int, r: int) -> int:
    """A compact string into ``spos/slen[k, r]`` (pos -1 = null); the next position, or -1."""
    n, p = _uv(buf, p, end)
    if p < 0:
        return -1
    n -= 1
    if n < 0:
        if n == -1 and nullable:
            spos[k, r] = -1
            return p
        return -1
    if n > end - p or not _utf8_ok(buf, p, p + n):
        return -1
    spos[k, r] = p
    slen[k, r] = n
    return p + n


@njit(cache=True, nogil=True)
def _array(buf: np.ndarray, p: int, end: int, width: int, nullable: bool, lpos: np.ndarray, lcnt: np.ndarray,
           k: int, r: int) -> int:
    """A compact array of ``width``-byte elements; int32 ones (``k >= 0``) into ``lpos/lcnt[k, r]``."""
    n, p = _uv(buf, p, end)
    if p < 0:
        return -1
    n -= 1
    if n < 0:
        if n == -1 and nullable:
            if k >= 0:
                lpos[k, r] = -1
            return p
        return -1
    if n > end - p or p + n * width > end:
        return -1
    if k >= 0:
        lpos[k, r] = p
        lcnt[k, r] = n
    return p + n * width


@njit(cache=True, nogil=True)
def _set_int(ival: np.ndarray, ivalid: np.ndarray, k: int, r: int, v: int) -> None:
    ival[k, r] = v
    ivalid[k, r] = 1


@njit(cache=True, nogil=True)
def _tag_header(buf: np.ndarray, p: int, end: int) -> tuple[int, int, int]:
    """``(tag, value start, value end)`` of a tagged field, start -1 when it does not fit."""
    tag, p = _uv(buf, p, end)
    if p < 0:
        return 0, -1, 0
    size, p = _uv(buf, p, end)
    if p < 0 or size > end - p:
        return 0, -1, 0
    return tag, p, p + size


@njit(cache=True, nogil=True)
def _partition(buf: np.ndarray, p: int, end: int, v: int, r: int, tid: np.ndarray, ival: np.ndarray,
               ivalid: np.ndarray, lpos: np.ndarray, lcnt: np.ndarray) -> int:
    """PartitionRecord v0-2 body (after the frame)."""
    if p + 20 > end:
        return -1
    _set_int(ival, ivalid, _I_PARTITION, r, _i32(buf, p))
    tid[r] = p + 4
    p += 20
    for k in (_L_REPLICAS, _L_ISR, _L_REMOVING, _L_ADDING):
        p = _array(buf, p, end, 4, False, lpos, lcnt, k, r)
        if p < 0:
            return -1
    if p + 12 > end:
        return -1
    _set_int(ival, ivalid, _I_LEADER, r, _i32(buf, p))
    _set_int(ival, ivalid, _I_LEPOCH, r, _i32(buf, p + 4))
    _set_int(ival, ivalid, _I_PEPOCH, r, _i32(buf, p + 8))
    _set_int(ival, ivalid, _I_LRS, r, 0)
    p += 12
    if v >= 1:  # Directories
        p = _array(buf, p, end, 16, False, lpos, lcnt, -1, r)
        if p < 0:
            return -1
    count, p = _uv(buf, p, end)
    if p < 0:
        return -1
    for _ in range(count):
        tag, s, e = _tag_header(buf, p, end)
        if s < 0:
            return -1
        if tag == 0:
            if e - s != 1:
                return -1
            _set_int(ival, ivalid, _I_LRS, r, _i8(buf, s))
        elif v >= 2 and (tag == 1 or tag == 2):
            if _array(buf, s, e, 4, True, lpos, lcnt, _L_ELR if tag == 1 else _L_LKE, r) != e:
                return -1
        p = e
    return p


@njit(cache=True, nogil=True)
def _partition_change(buf: np.ndarray, p: int, end: int, v: int, r: int, tid: np.ndarray, ival: np.ndarray,
                      ivalid: np.ndarray, lpos: np.ndarray, lcnt: np.ndarray) -> int:
    """PartitionChangeRecord v0-2 body (after the frame)."""
    if p + 20 > end:
        return -1
    _set_int(ival, ivalid, _I_PARTITION, r, _i32(buf, p))
    tid[r] = p + 4
    p += 20
    _set_int(ival, ivalid, _I_LEADER, r, -2)
    lrs = -1
    count, p = _uv(buf, p, end)
    if p < 0:
        return -1
    for _ in range(count):
        tag, s, e = _tag_header(buf, p, end)
        if s < 0:
            return -1
        k = -2
        if tag == 0:
            k = _L_ISR
        elif tag == 2:
            k = _L_REPLICAS
        elif tag == 3:
            k = _L_REMOVING
        elif tag == 4:
            k = _L_ADDING
        elif tag == 6 and v >= 2:
            k = _L_ELR
        elif tag == 7 and v >= 2:
            k = _L_LKE
        if k >= 0:
            if _array(buf, s, e, 4, True, lpos, lcnt, k, r) != e:
                return -1
        elif tag == 1:
            if e - s != 4:
                return -1
            ival[_I_LEADER, r] = _i32(buf, s)
        elif tag == 5:
            if e - s != 1:
                return -1
            lrs = _i8(buf, s)
        elif tag == 8 and v >= 1:
            if _array(buf, s, e, 16, True, lpos, lcnt, -1, r) != e:
                return -1
        p = e
    if lrs != -1:
        _set_int(ival, ivalid, _I_LRS, r, lrs)
    return p


@njit(cache=True, nogil=True)
def _skip_tags(buf: np.ndarray, p: int, end: int) -> int:
    """A tagged-field section none of whose tags is known in this version."""
    count, p = _uv(buf, p, end)
    if p < 0:
        return -1
    for _ in range(count):
        _tag, s, e = _tag_header(buf, p, end)
        if s < 0:
            return -1
        p = e
    return p


@njit(cache=True, nogil=True)
def _registration_change(buf: np.ndarray, p: int, end: int, v: int, r: int, ival: np.ndarray,
                         ivalid: np.ndarray, lpos: np.ndarray, lcnt: np.ndarray) -> int:
    """BrokerRegistrationChangeRecord v0-3 body (after the frame)."""
    if p + 12 > end:
        return -1
    _set_int(ival, ivalid, _I_BROKER, r, _i32(buf, p))
    _set_int(ival, ivalid, _I_BEPOCH, r, _i64(buf, p + 4))
    p += 12
    fenced = 0
    ics = 0
    count, p = _uv(buf, p, end)
    if p < 0:
        return -1
    for _ in range(count):
        tag, s, e = _tag_header(buf, p, end)
        if s < 0:
            return -1
        if tag == 0 or (tag == 1 and v >= 1):
            if e - s != 1:
                return -1
            if tag == 0:
                fenced = _i8(buf, s)
            else:
                ics = _i8(buf, s)
        elif tag == 2 and v >= 2:
            if _array(buf, s, e, 16, False, lpos, lcnt, -1, r) != e:
                return -1
        elif tag == 3 and v >= 3:
            if _array(buf, s, e, 16, True, lpos, lcnt, -1, r) != e:
                return -1
        p = e
    if fenced == 1 or fenced == -1:
        _set_int(ival, ivalid, _I_FENCED, r, 1 if fenced == 1 else 0)
    if ics == 1:
        _set_int(ival, ivalid, _I_ICS, r, 1)
    return p


@njit(cache=True, nogil=True)
def _decode(buf: np.ndarray, voff: np.ndarray, todo: np.ndarray, ok: np.ndarray, api: np.ndarray,
            ver: np.ndarray, tid: np.ndarray, ival: np.ndarray, ivalid: np.ndarray, spos: np.ndarray,
            slen: np.ndarray, lpos: np.ndarray, lcnt: np.ndarray) -> None:
    """Decode the framed metadata values of the ``todo`` rows; ``ok`` marks those fully decoded.

    A row left not ok (a type, version or layout this pass does not take, or any byte that does
    not parse exactly as the schema says) is for the careful decoder. Outputs of a not-ok row
    are meaningless (the caller clears them).
    """
    for r in range(todo.shape[0]):
        ok[r] = 0
        api[r] = -1
        ver[r] = -1
        tid[r] = -1
        for k in range(_N_INTS):
            ivalid[k, r] = 0
        for k in range(_N_STRS):
            spos[k, r] = -1
        for k in range(_N_LISTS):
            lpos[k, r] = -1
        if not todo[r]:
            continue
        p = voff[r]
        end = voff[r + 1]
        frame, p = _uv(buf, p, end)
        if p < 0 or frame != 1:
            continue
        a, p = _uv(buf, p, end)
        if p < 0:
            continue
        v, p = _uv(buf, p, end)
        if p < 0:
            continue
        api[r] = a
        ver[r] = v
        if a == 20 and v == 0:  # NoOpRecord
            p = _skip_tags(buf, p, end)
        elif a == 5 and v <= 2:  # PartitionChangeRecord
            p = _partition_change(buf, p, end, v, r, tid, ival, ivalid, lpos, lcnt)
        elif a == 3 and v <= 2:  # PartitionRecord
            p = _partition(buf, p, end, v, r, tid, ival, ivalid, lpos, lcnt)
        elif a == 2 and v == 0:  # TopicRecord
            p = _string(buf, p, end, False, spos, slen, _S_TOPIC, r)
            if p < 0 or p + 16 > end:
                continue
            tid[r] = p
            p = _skip_tags(buf, p + 16, end)
        elif a == 4 and v == 0:  # ConfigRecord
            if p + 1 > end:
                continue
            _set_int(ival, ivalid, _I_CRTYPE, r, _i8(buf, p))
            p = _string(buf, p + 1, end, False, spos, slen, _S_CRNAME, r)
            if p < 0:
                continue
            p = _string(buf, p, end, False, spos, slen, _S_CNAME, r)
            if p < 0:
                continue
            p = _string(buf, p, end, True, spos, slen, _S_CVALUE, r)
            if p < 0:
                continue
            p = _skip_tags(buf, p, end)
        elif a == 9 and v == 0:  # RemoveTopicRecord
            if p + 16 > end:
                continue
            tid[r] = p
            p = _skip_tags(buf, p + 16, end)
        elif (a == 7 or a == 8 or a == 1) and v == 0:  # Fence, Unfence, UnregisterBroker
            if p + 12 > end:
                continue
            _set_int(ival, ivalid, _I_BROKER, r, _i32(buf, p))
            _set_int(ival, ivalid, _I_BEPOCH, r, _i64(buf, p + 4))
            if a != 1:
                _set_int(ival, ivalid, _I_FENCED, r, 1 if a == 7 else 0)
            p = _skip_tags(buf, p + 12, end)
        elif a == 17 and v <= 3:  # BrokerRegistrationChangeRecord
            p = _registration_change(buf, p, end, v, r, ival, ivalid, lpos, lcnt)
        elif a == 12 and v == 0:  # FeatureLevelRecord
            p = _string(buf, p, end, False, spos, slen, _S_FEATURE, r)
            if p < 0 or p + 2 > end:
                continue
            _set_int(ival, ivalid, _I_FLEVEL, r, _i16(buf, p))
            p = _skip_tags(buf, p + 2, end)
        else:
            continue
        if p == end:
            ok[r] = 1


@njit(cache=True, nogil=True)
def _gather_strings(buf: np.ndarray, pos: np.ndarray, ln: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arrow string offsets and bytes of slices ``buf[pos:pos+ln]`` (pos -1: null, empty)."""
    n = pos.shape[0]
    offsets = np.empty(n + 1, np.int32)
    offsets[0] = 0
    total = 0
    for r in range(n):
        if pos[r] >= 0:
            total += ln[r]
        offsets[r + 1] = total
    data = np.empty(total, np.uint8)
    for r in range(n):
        if pos[r] >= 0:
            o = offsets[r]
            p = pos[r]
            for i in range(ln[r]):
                data[o + i] = buf[p + i]
    return offsets, data


@njit(cache=True, nogil=True)
def _gather_lists(buf: np.ndarray, pos: np.ndarray, cnt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arrow list offsets and int32 values of big-endian int32 runs (pos -1: null, empty)."""
    n = pos.shape[0]
    offsets = np.empty(n + 1, np.int32)
    offsets[0] = 0
    total = 0
    for r in range(n):
        if pos[r] >= 0:
            total += cnt[r]
        offsets[r + 1] = total
    values = np.empty(total, np.int32)
    for r in range(n):
        if pos[r] >= 0:
            o = offsets[r]
            p = pos[r]
            for i in range(cnt[r]):
                values[o + i] = _i32(buf, p + 4 * i)
    return offsets, values


@njit(cache=True, nogil=True)
def _gather_uuids(buf: np.ndarray, pos: np.ndarray, alphabet: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kafka's uuid text (base64url of 16 bytes, 22 characters) of ``buf[pos:pos+16]`` (pos -1: null)."""
    n = pos.shape[0]
    offsets = np.empty(n + 1, np.int32)
    offsets[0] = 0
    total = 0
    for r in range(n):
        if pos[r] >= 0:
            total += 22
        offsets[r + 1] = total
    out = np.empty(total, np.uint8)
    for r in range(n):
        p = pos[r]
        if p < 0:
            continue
        o = offsets[r]
        for g in range(6):  # 5 groups of 3 bytes, then the 16th byte
            if g < 5:
                b0 = np.int64(buf[p + 3 * g])
                b1 = np.int64(buf[p + 3 * g + 1])
                b2 = np.int64(buf[p + 3 * g + 2])
                out[o + 4 * g] = alphabet[b0 >> 2]
                out[o + 4 * g + 1] = alphabet[((b0 & 3) << 4) | (b1 >> 4)]
                out[o + 4 * g + 2] = alphabet[((b1 & 15) << 2) | (b2 >> 6)]
                out[o + 4 * g + 3] = alphabet[b2 & 63]
            else:
                b0 = np.int64(buf[p + 15])
                out[o + 20] = alphabet[b0 >> 2]
                out[o + 21] = alphabet[(b0 & 3) << 4]
    return offsets, out


# ---------------------------------------------------------------------------------------------
# Arrow assembly of one run

_ROWS_PER_BATCH = 1 << 16  # rows of the careful reader gathered before a batch is emitted
_GROUP_BYTES = 16 << 20  # batch bytes gathered before the compiled passes run
_GROUP_BATCHES = 1024
_KERNEL_TYPES = {20: "NoOpRecord", 5: "PartitionChangeRecord", 3: "PartitionRecord", 2: "TopicRecord",
                 4: "ConfigRecord", 9: "RemoveTopicRecord", 7: "FenceBrokerRecord", 8: "UnfenceBrokerRecord",
                 1: "UnregisterBrokerRecord", 17: "BrokerRegistrationChangeRecord", 12: "FeatureLevelRecord"}
assert all(METADATA_SCHEMAS[k].name == v for k, v in _KERNEL_TYPES.items())  # noqa: S101 - layout sanity


def _mask(valid: np.ndarray) -> tuple[pa.Buffer | None, int]:
    nulls = int(valid.size - np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid.astype(np.bool_), bitorder="little")), nulls


def _strings(buf: np.ndarray, pos: np.ndarray, ln: np.ndarray) -> pa.Array:
    offsets, data = _gather_strings(buf, pos, ln)
    bitmap, nulls = _mask(pos >= 0)
    return pa.Array.from_buffers(pa.string(), pos.size, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=nulls)


def _lists(buf: np.ndarray, pos: np.ndarray, cnt: np.ndarray) -> pa.Array:
    offsets, values = _gather_lists(buf, pos, cnt)
    bitmap, nulls = _mask(pos >= 0)
    return pa.Array.from_buffers(_INT_LIST, pos.size, [bitmap, pa.py_buffer(offsets)],
                                 null_count=nulls, children=[pa.array(values)])


def _vocabulary(names: list[str], codes: np.ndarray) -> pa.Array:
    """The string column ``names[codes[i]]`` (a few distinct values), built without a Python loop."""
    raw = [name.encode("utf-8") for name in names]
    vocab = np.frombuffer(b"".join(raw), np.uint8)
    lengths = np.array([len(x) for x in raw], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    offsets, data = _gather_strings(vocab, starts[codes], lengths[codes])
    return pa.Array.from_buffers(pa.string(), codes.size, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


class _Extra:
    """Bytes appended after a run's value bytes: typed values of the rows decoded in Python."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.data = bytearray()

    def put(self, raw: bytes) -> int:
        at = self.base + len(self.data)
        self.data += raw
        return at


def _put_python_row(extra: _Extra, r: int, typed: dict[str, Any], tid: np.ndarray, ival: np.ndarray,
                    ivalid: np.ndarray, spos: np.ndarray, slen: np.ndarray, lpos: np.ndarray,
                    lcnt: np.ndarray) -> None:
    """Write the typed values of a row decoded in Python into the run's column arrays."""
    for k, name in enumerate(_INT_COLUMNS):
        value = typed.get(name)
        if value is not None:
            ival[k, r] = value
            ivalid[k, r] = 1
    if typed.get("broker_epoch") is not None:
        ival[_I_BEPOCH, r] = typed["broker_epoch"]
        ivalid[_I_BEPOCH, r] = 1
    for k, name in ((_I_FENCED, "fenced"), (_I_ICS, "in_controlled_shutdown")):
        if typed.get(name) is not None:
            ival[k, r] = 1 if typed[name] else 0
            ivalid[k, r] = 1
    if typed.get("topic_id") is not None:
        tid[r] = extra.put(uuid_from_str(typed["topic_id"]))
    for k, name in enumerate(_STR_COLUMNS):
        value = typed.get(name)
        if value is not None:
            raw = value.encode("utf-8")
            spos[k, r] = extra.put(raw)
            slen[k, r] = len(raw)
    for k, name in enumerate(_LIST_COLUMNS):
        value = typed.get(name)
        if value is not None:
            lpos[k, r] = extra.put(np.asarray(value, dtype=">i4").tobytes())
            lcnt[k, r] = len(value)


def _compiled_run(batches: list[Batch], log: ProblemLog, want_fields: bool) -> list[pa.RecordBatch]:
    """Rows of a run of batches whose records decoded without any problem, compiled where possible."""
    private = ProblemLog(log.path)
    table = records_table(batches, private)
    if private.problems:  # the record reader met damage: the careful reader does the whole run
        return list(_careful_batches(batches, log, want_fields))
    n = table.num_rows
    if n == 0:
        return []
    table = table.combine_chunks()
    value = table.column("value").chunk(0)
    bufs = value.buffers()
    voff = np.frombuffer(bufs[1], np.int64)[value.offset : value.offset + n + 1]
    vdata = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    vvalid = value.is_valid().to_numpy(zero_copy_only=False)

    positions = np.fromiter((b.position for b in batches), np.int64, len(batches))
    bpos = table.column("batch_position").chunk(0).to_numpy()
    which = np.searchsorted(positions, bpos)
    is_control = np.fromiter((b.is_control for b in batches), np.bool_, len(batches))[which]
    todo = (vvalid & ~is_control).astype(np.uint8)

    ok = np.empty(n, np.uint8)
    api = np.empty(n, np.int32)
    ver = np.empty(n, np.int32)
    tid = np.empty(n, np.int64)
    ival = np.empty((_N_INTS, n), np.int64)
    ivalid = np.empty((_N_INTS, n), np.uint8)
    spos = np.empty((_N_STRS, n), np.int32)
    slen = np.empty((_N_STRS, n), np.int32)
    lpos = np.empty((_N_LISTS, n), np.int32)
    lcnt = np.empty((_N_LISTS, n), np.int32)
    _decode(vdata, voff, todo, ok, api, ver, tid, ival, ivalid, spos, slen, lpos, lcnt)

    names = list(_KERNEL_TYPES.values())
    code = {name: i for i, name in enumerate(names)}
    lut = np.zeros(64, np.int32)
    for a, name in _KERNEL_TYPES.items():
        lut[a] = code[name]
    type_code = lut[np.clip(api, 0, 63)]
    fields_col: list[str | None] | None = None
    error_col: list[str | None] | None = None
    careful = np.flatnonzero(ok == 0)
    if want_fields:
        careful = np.arange(n)
    keys = table.column("key").chunk(0)
    values = table.column("value").chunk(0)
    offsets = table.column("offset").chunk(0).to_numpy()
    stamps = table.column("timestamp").chunk(0).to_numpy()
    drop: list[int] = []
    extra = _Extra(len(vdata))
    if careful.size:
        fields_col = [None] * n
        error_col = [None] * n
        sink = _Rows()
        for r in careful.tolist():
            b = batches[which[r]]
            before = sink.n
            _careful_record(sink, b, int(offsets[r]), int(stamps[r]), keys[r].as_py(), values[r].as_py(), log,
                            want_fields)
            for arr in (ival, ivalid):
                arr[:, r] = 0
            tid[r] = -1
            spos[:, r] = -1
            lpos[:, r] = -1
            if sink.n == before:  # a null value: no row
                drop.append(r)
                continue
            c = sink.cols
            rtype = c["record_type"][-1]
            if rtype not in code:
                code[rtype] = len(names)
                names.append(rtype)
            type_code[r] = code[rtype]
            api[r] = c["api_key"][-1]
            ver[r] = c["version"][-1]
            fields_col[r] = c["fields"][-1]
            error_col[r] = c["error"][-1]
            typed = {name: c[name][-1] for name, _t in TYPED_COLUMNS if c[name][-1] is not None}
            _put_python_row(extra, r, typed, tid, ival, ivalid, spos, slen, lpos, lcnt)
    buf = np.concatenate([vdata, np.frombuffer(bytes(extra.data), np.uint8)]) if extra.data else vdata

    cols: dict[str, pa.Array] = {
        "batch_position": pa.array(bpos),
        "batch_base_offset": pa.array(np.fromiter((b.base_offset for b in batches), np.int64, len(batches))[which]),
        "offset": pa.array(offsets),
        "timestamp": pa.array(stamps),
        "leader_epoch": pa.array(
            np.fromiter((b.partition_leader_epoch for b in batches), np.int32, len(batches))[which]),
        "is_control": pa.array(is_control),
        "record_type": _vocabulary(names, type_code),
        "api_key": pa.array(api),
        "version": pa.array(ver),
        "crc_valid": pa.array(np.fromiter((b.crc_valid for b in batches), np.bool_, len(batches))[which]),
    }
    tid_offsets, tid_data = _gather_uuids(buf, tid, _B64)
    bitmap, nulls = _mask(tid >= 0)
    cols["topic_id"] = pa.Array.from_buffers(pa.string(), n, [bitmap, pa.py_buffer(tid_offsets),
                                                              pa.py_buffer(tid_data)], null_count=nulls)
    for k, name in enumerate(_INT_COLUMNS):
        cols[name] = pa.array(ival[k].astype(np.int32), pa.int32(), mask=ivalid[k] == 0)
    cols["broker_epoch"] = pa.array(ival[_I_BEPOCH], pa.int64(), mask=ivalid[_I_BEPOCH] == 0)
    cols["fenced"] = pa.array(ival[_I_FENCED] != 0, pa.bool_(), mask=ivalid[_I_FENCED] == 0)
    cols["in_controlled_shutdown"] = pa.array(ival[_I_ICS] != 0, pa.bool_(), mask=ivalid[_I_ICS] == 0)
    for k, name in enumerate(_STR_COLUMNS):
        cols[name] = _strings(buf, spos[k], slen[k])
    for k, name in enumerate(_LIST_COLUMNS):
        cols[name] = _lists(buf, lpos[k], lcnt[k])
    cols["fields"] = pa.nulls(n, pa.string()) if fields_col is None else pa.array(fields_col, pa.string())
    cols["error"] = pa.nulls(n, pa.string()) if error_col is None else pa.array(error_col, pa.string())
    out = pa.RecordBatch.from_arrays([cols[name] for name in METADATA_ARROW_SCHEMA.names],
                                     schema=METADATA_ARROW_SCHEMA)
    if drop:
        keep = np.ones(n, np.bool_)
        keep[drop] = False
        out = out.filter(pa.array(keep))
    return [out] if out.num_rows else []


class _Run:
    """Batches gathered for one compiled run (as in :mod:`workbench.formats.fastrecords`)."""

    def __init__(self, log: ProblemLog, want_fields: bool) -> None:
        self.log = log
        self.want_fields = want_fields
        self.batches: list[Batch] = []
        self.bytes = 0

    def __len__(self) -> int:
        return len(self.batches)

    def add(self, b: Batch) -> bool:
        """Gather ``b``; True when the run is full."""
        self.batches.append(b)
        self.bytes += b.size
        return self.bytes >= _GROUP_BYTES or len(self.batches) >= _GROUP_BATCHES

    def flush(self) -> list[pa.RecordBatch]:
        batches, self.batches, self.bytes = self.batches, [], 0
        if not batches:
            return []
        return _compiled_run(batches, self.log, self.want_fields)


def _compiled_batches(batches: Iterable[Batch], log: ProblemLog, want_fields: bool) -> Iterator[pa.RecordBatch]:
    run = _Run(log, want_fields)
    it = iter(batches)
    plist = log.problems
    while True:
        before = len(plist)
        done = False
        try:
            b = next(it)
        except StopIteration:
            done = True
        except Exception:
            yield from run.flush()  # an earlier batch's problem comes first (strict logs)
            raise
        if len(plist) > before and len(run):
            # problems met while reading the next batch come after the rows of the earlier ones
            added = log.take_since(before)
            yield from run.flush()
            for p in added:
                log.report(p.position, p.kind, p.detail)
        if done:
            break
        if run.add(b):
            yield from run.flush()
    yield from run.flush()


# ---------------------------------------------------------------------------------------------
# public API


def metadata_batches(batches: Iterable[Batch], problems: ProblemLog | None = None, *, fields: bool = False,
                     compiled: bool = True) -> Iterator[pa.RecordBatch]:
    """Decode the metadata and control records of ``batches`` into :data:`METADATA_ARROW_SCHEMA` rows.

    Rows come in file order, a few tens of thousands at a time (bounded memory on a file of any size).
    Problems go to ``problems`` in the careful reader's order (share it with :func:`read_batches` to keep
    batch-level ones in order too; a strict log raises at the same first problem). ``fields=True`` builds
    the JSON ``fields`` of every row with the careful decoder (slower); by default only rows the typed
    columns cannot describe carry it. ``compiled=False`` runs the careful reader alone.

    >>> import io
    >>> from workbench.formats.batch import read_batches
    >>> from workbench.formats.kraft_log import MetadataLogWriter
    >>> w = MetadataLogWriter()
    >>> _ = w.append([("FenceBrokerRecord", 0, {"id": 2, "epoch": 9})], timestamp=5, epoch=1)
    >>> [b.select(["record_type", "broker_id", "broker_epoch", "fenced"]).to_pylist()
    ...  for b in metadata_batches(read_batches(io.BytesIO(w.to_bytes())))]
    [[{'record_type': 'FenceBrokerRecord', 'broker_id': 2, 'broker_epoch': 9, 'fenced': True}]]
    """
    log = problems if problems is not None else ProblemLog("")
    if compiled:
        return _compiled_batches(batches, log, fields)
    return _careful_batches(batches, log, fields)


def metadata_table(batches: Iterable[Batch], problems: ProblemLog | None = None, *, fields: bool = False,
                   compiled: bool = True) -> pa.Table:
    """All rows of :func:`metadata_batches` as one table (:data:`METADATA_ARROW_SCHEMA`)."""
    return pa.Table.from_batches(list(metadata_batches(batches, problems, fields=fields, compiled=compiled)),
                                 schema=METADATA_ARROW_SCHEMA)


def metadata_table_from_file(path: str, problems: ProblemLog | None = None, *, strict: bool = False,
                             fields: bool = False, compiled: bool = True) -> pa.Table:
    """Read a metadata segment or snapshot with :func:`read_batches` and decode all its records."""
    from workbench.formats.batch import read_batches

    name = str(path)
    log = _resolve_log(problems, name, strict)
    with open(path, "rb") as f:
        return metadata_table(read_batches(f, name, problems=log), log, fields=fields, compiled=compiled)
