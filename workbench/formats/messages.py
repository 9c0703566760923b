"""Kafka's generated-message encoding, driven by schema tables.

Kafka describes its internal records (KRaft metadata records, KRaft control values,
coordinator records, remote-log metadata) as JSON message schemas and generates Java
serializers from them. This module holds the same information as data — :class:`Field` and
:class:`Schema` mirror the JSON schema files — plus one generic loop that reads and writes any
schema at any version:

* fixed-width integers big-endian; ``uuid`` as 16 bytes;
* non-flexible versions: int16-length strings, int32-length bytes and arrays, -1 = null;
* flexible versions: compact strings/bytes/arrays (``uvarint(length + 1)``, 0 = null) and a
  tagged-field section at the end of every struct (top level, array elements, nested structs);
* tagged fields written only when they differ from their default, unknown tags skipped on read
  and kept (so they are written back unchanged);
* fields absent in a version take their default.

Decoded values use Kafka's JSON names (``BrokerId`` -> ``brokerId``) as dictionary keys, in
schema order. ``uuid`` values are Kafka's base64url text (22 characters), ``bytes`` are
``bytes``. Unknown tagged fields of a nested struct are kept under the key
``"_unknownTaggedFields"`` (only when there are some); those of the top-level struct are
returned separately.

Examples
--------
>>> schema = Schema("Example", 0, (0, 0), "0+", [Field("Name", "string"), Field("Level", "int16")])
>>> data = encode(schema, 0, {"name": "a", "level": 3})
>>> data
b'\\x02a\\x00\\x03\\x00'
>>> decode(schema, 0, data)
({'name': 'a', 'level': 3}, {}, 5)
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from typing import Any

from workbench.errors import ConfigError, CorruptDataError
from workbench.formats.primitives import encode_uvarint, read_uvarint

__all__ = [
    "Field",
    "Schema",
    "TYPE_DEFAULT",
    "ZERO_UUID",
    "UNKNOWN_TAGS_KEY",
    "VersionRange",
    "json_name",
    "snake_upper",
    "uuid_to_str",
    "uuid_from_str",
    "decode",
    "encode",
    "field_default",
    "to_json",
    "to_json_value",
    "dumps_json",
    "layout_differences",
    "schema_from_kafka_json",
]

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
UNKNOWN_TAGS_KEY = "_unknownTaggedFields"
PRIMITIVE_TYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "uuid", "string", "bytes", "records"}
)


class _TypeDefault:
    """Marker: the field has no explicit default, so the default of its type applies."""

    _instance: _TypeDefault | None = None

    def __new__(cls) -> _TypeDefault:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "TYPE_DEFAULT"


TYPE_DEFAULT: Any = _TypeDefault()


# ---------------------------------------------------------------------------------------------
# Version ranges


@dataclass(frozen=True, slots=True)
class VersionRange:
    """A Kafka version range such as ``"0+"``, ``"1-3"``, ``"2"`` or ``"none"``.

    Examples
    --------
    >>> VersionRange.parse("1+").contains(3)
    True
    >>> VersionRange.parse("none").contains(0)
    False
    """

    low: int
    high: int  # inclusive; -1 for an empty range

    @staticmethod
    def parse(text: str | None) -> VersionRange:
        """Parse Kafka's version-range syntax (``None``/``""``/``"none"`` = empty)."""
        return _parse_range(text or "none")

    def contains(self, version: int) -> bool:
        """Whether ``version`` lies in the range."""
        return self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        """Whether the range holds no version."""
        return self.high < self.low


@cache
def _parse_range(text: str) -> VersionRange:
    text = text.strip()
    if text == "none":
        return VersionRange(0, -1)
    try:
        if text.endswith("+"):
            return VersionRange(int(text[:-1]), 0x7FFF)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return VersionRange(int(lo), int(hi))
        v = int(text)
    except ValueError as exc:
        raise ConfigError(f"invalid version range {text!r}: expected 'N', 'N+', 'N-M' or 'none'") from exc
    return VersionRange(v, v)


# ---------------------------------------------------------------------------------------------
# Schema tables


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message schema (the data of one entry of Kafka's ``fields`` list).

    Parameters
    ----------
    name : str
        Kafka's field name (``"BrokerId"``); its JSON name is derived (``"brokerId"``).
    type : str
        ``bool``, ``int8``, ``int16``, ``int32``, ``int64``, ``uint16``, ``uint32``,
        ``float64``, ``uuid``, ``string``, ``bytes``, ``records``, ``[]<type>``, or a struct
        name (then ``fields`` gives its layout).
    versions : str
        Versions in which the field exists (``"0+"``, ``"1-3"``, ``"2"``). Empty: same as
        ``tagged_versions``.
    nullable : str
        Versions in which it may be null.
    tag, tagged_versions : int, str
        Tag number and the versions in which the field is tagged.
    default : Any
        Schema default (``None`` = null). :data:`TYPE_DEFAULT` = 0/false/""/empty/zero uuid.
    fields : tuple of Field
        Layout of a struct (or struct array element) type.
    ignorable : bool
        Writing a non-default value in a version that lacks the field is silently ignored
        instead of being an error.

    Examples
    --------
    >>> Field("Isr", "[]int32", nullable="0+", tag=0, tagged_versions="0+", default=None).json_name
    'isr'
    """

    name: str
    type: str
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    tagged_versions: str = "none"
    default: Any = TYPE_DEFAULT
    fields: Sequence[Field] = ()
    ignorable: bool = False
    json_name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))
        if not self.json_name:
            object.__setattr__(self, "json_name", json_name(self.name))
        if (not self.versions or self.versions == "none") and self.tagged_versions not in ("", "none"):
            object.__setattr__(self, "versions", self.tagged_versions)
        base = self.element_type if self.is_array else self.type
        if base not in PRIMITIVE_TYPES and not self.fields:
            raise ConfigError(f"field {self.name}: struct type {base!r} needs a fields layout")

    @property
    def is_array(self) -> bool:
        """Whether the field is an array (``[]T``)."""
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        """Element type of an array field (the type itself otherwise)."""
        return self.type[2:] if self.type.startswith("[]") else self.type

    @property
    def is_struct(self) -> bool:
        """Whether the field (or its array element) is a struct."""
        return self.element_type not in PRIMITIVE_TYPES


@dataclass(frozen=True, slots=True)
class Schema:
    """A message schema: the data of one of Kafka's JSON message definition files.

    Examples
    --------
    >>> s = Schema("NoOpRecord", 20, (0, 0), "0+", [])
    >>> s.type_name
    'NO_OP_RECORD'
    """

    name: str
    api_key: int | None
    valid_versions: tuple[int, int]
    flexible: str
    fields: Sequence[Field]
    type: str = "metadata"

    def __post_init__(self) -> None:
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))

    @property
    def type_name(self) -> str:
        """The UPPER_SNAKE name Kafka's ``MetadataRecordType`` enum and dump tool print."""
        return snake_upper(self.name)

    def supports(self, version: int) -> bool:
        """Whether ``version`` lies in ``valid_versions``."""
        return self.valid_versions[0] <= version <= self.valid_versions[1]

    def is_flexible(self, version: int) -> bool:
        """Whether ``version`` uses the flexible (compact, tagged) encoding."""
        return VersionRange.parse(self.flexible).contains(version)

    def field(self, json_key: str) -> Field:
        """The top-level field with JSON name ``json_key``."""
        for f in self.fields:
            if f.json_name == json_key:
                return f
        raise KeyError(json_key)


def json_name(name: str) -> str:
    """Kafka's JSON key for a field name: the first letter lower-cased.

    >>> json_name("KRaftVersion")
    'kRaftVersion'
    """
    return name[:1].lower() + name[1:]


def snake_upper(name: str) -> str:
    """UPPER_SNAKE form of a record name, as Kafka's ``MetadataRecordType`` enum spells it.

    >>> snake_upper("ZkMigrationStateRecord")
    'ZK_MIGRATION_STATE_RECORD'
    """
    out = []
    prev = ""
    for ch in name:
        if ch.isupper() and prev and (prev.islower() or prev.isdigit()):
            out.append("_")
        out.append(ch.upper())
        prev = ch
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Uuid


def uuid_to_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: base64url of the 16 bytes, without padding.

    >>> uuid_to_str(bytes(15) + b"\\x01")
    'AAAAAAAAAAAAAAAAAAAAAQ'
    """
    return base64.urlsafe_b64encode(bytes(raw)).decode("ascii")[:22]


def uuid_from_str(value: Any) -> bytes:
    """16 bytes of a uuid given as Kafka text, ``uuid.UUID`` or 16 raw bytes.

    Examples
    --------
    >>> uuid_from_str("AAAAAAAAAAAAAAAAAAAAAQ")[-1]
    1
    """
    if isinstance(value, str):
        if len(value) != 22:
            raise ValueError(f"uuid text must be 22 base64url characters, got {value!r}")
        try:
            raw = base64.urlsafe_b64decode(value + "==")
        except (ValueError, TypeError) as exc:
            raise ValueError(f"invalid uuid text {value!r}") from exc
        if len(raw) != 16:
            raise ValueError(f"invalid uuid text {value!r}")
        return raw
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return bytes(value)
    raw_bytes = getattr(value, "bytes", None)
    if isinstance(raw_bytes, bytes) and len(raw_bytes) == 16:
        return raw_bytes
    raise ValueError(f"expected a uuid (22-char text, uuid.UUID or 16 bytes), got {value!r}")


def _norm_uuid(value: Any) -> str:
    return (
        value
        if isinstance(value, str) and len(value) == 22 and _is_b64url(value)
        else uuid_to_str(uuid_from_str(value))
    )


def _is_b64url(text: str) -> bool:
    try:
        return len(base64.urlsafe_b64decode(text + "==")) == 16
    except (ValueError, TypeError):
        return False


# ---------------------------------------------------------------------------------------------
# Defaults


def field_default(f: Field) -> Any:
    """The value a field takes when it is absent (schema default, else the type default).

    Examples
    --------
    >>> field_default(Field("Leader", "int32", default=-2))
    -2
    >>> field_default(Field("Replicas", "[]int32"))
    []
    """
    d = f.default
    if d is not TYPE_DEFAULT:
        if d is None:
            return None
        if isinstance(d, list):
            return list(d)
        if f.type == "uuid":
            return _norm_uuid(d)
        return d
    if f.is_array:
        return []
    t = f.type
    if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return 0
    if t == "bool":
        return False
    if t == "float64":
        return 0.0
    if t == "string":
        return ""
    if t in ("bytes", "records"):
        return b""
    if t == "uuid":
        return ZERO_UUID
    # struct: a struct with every field at its default
    return {sub.json_name: field_default(sub) for sub in f.fields}


def _equals_default(f: Field, value: Any) -> bool:
    d = field_default(f)
    if f.type == "float64" and isinstance(value, float) and isinstance(d, float):
        return value == d or (math.isnan(value) and math.isnan(d))
    if f.is_struct and not f.is_array and isinstance(value, dict) and isinstance(d, dict):
        return {k: v for k, v in value.items() if k != UNKNOWN_TAGS_KEY} == d and not value.get(UNKNOWN_TAGS_KEY)
    return value == d


# ---------------------------------------------------------------------------------------------
# Reading

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")

Reader = Callable[[Any, int], tuple[Any, int]]


class _Fail(Exception):
    """Internal: a decode failure with its byte position (turned into CorruptDataError)."""

    def __init__(self, pos: int, detail: str) -> None:
        super().__init__(detail)
        self.pos = pos
        self.detail = detail


def _fixed(st: struct.Struct) -> Reader:
    size = st.size
    unpack = st.unpack_from

    def read(buf: Any, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise _Fail(pos, f"need {size} bytes, {len(buf) - pos} left")
        return unpack(buf, pos)[0], pos + size

    return read


def _read_bool(buf: Any, pos: int) -> tuple[Any, int]:
    if pos >= len(buf):
        raise _Fail(pos, "need 1 byte for a bool, none left")
    return buf[pos] != 0, pos + 1


def _read_uuid(buf: Any, pos: int) -> tuple[Any, int]:
    if pos + 16 > len(buf):
        raise _Fail(pos, f"need 16 bytes for a uuid, {len(buf) - pos} left")
    return uuid_to_str(buf[pos : pos + 16]), pos + 16


def _uvarint(buf: Any, pos: int) -> tuple[int, int]:
    try:
        return read_uvarint(buf, pos)
    except ValueError as exc:
        raise _Fail(pos, str(exc)) from None


def _length_reader(flexible: bool, wide: bool) -> Reader:
    """Reads a length prefix; returns -1 for null."""
    if flexible:

        def read(buf: Any, pos: int) -> tuple[int, int]:
            n, pos = _uvarint(buf, pos)
            return n - 1, pos

        return read
    return _fixed(_I32 if wide else _I16)


def _blob_reader(flexible: bool, may_be_null: bool, name: str, text: bool) -> Reader:
    """Reader of a length-prefixed string (``text``) or bytes value; -1 length = null."""
    length = _length_reader(flexible, not text)
    what = "string" if text else "bytes"

    def read(buf: Any, pos: int) -> tuple[Any, int]:
        start = pos
        n, pos = length(buf, pos)
        if n < 0:
            if n == -1 and may_be_null:
                return None, pos
            detail = "was serialized as null" if n == -1 else f"has negative length {n}"
            raise _Fail(start, f"non-nullable {what} field {name} {detail}")
        if pos + n > len(buf):
            raise _Fail(start, f"{what} {name} of {n} bytes runs past the end ({len(buf) - pos} left)")
        raw = bytes(buf[pos : pos + n])
        return (raw.decode("utf-8", errors="replace") if text else raw), pos + n

    return read


_FIXED_READERS: dict[str, Reader] = {
    "int8": _fixed(_I8),
    "int16": _fixed(_I16),
    "int32": _fixed(_I32),
    "int64": _fixed(_I64),
    "uint16": _fixed(_U16),
    "uint32": _fixed(_U32),
    "float64": _fixed(_F64),
    "bool": _read_bool,
    "uuid": _read_uuid,
}


def _value_reader(f: Field, version: int, flexible: bool, element: bool = False, tagged: bool = False) -> Reader:
    """Reader of one value of field ``f`` (of its element when ``element``).

    A nullable struct starts with a presence marker: an int8 (-1 null, 1 present) in the
    body, a uvarint (0 null, 1 present) when the struct is a tagged field's value.
    """
    t = f.element_type if element else f.type
    nullable = VersionRange.parse(f.nullable)
    if not element and f.is_array:
        return _array_reader(f, version, flexible, nullable)
    if t in _FIXED_READERS:
        return _FIXED_READERS[t]
    if t in ("string", "bytes", "records"):
        return _blob_reader(flexible, nullable.contains(version) and not element, f.name, t == "string")
    struct_read = _struct_reader(f.fields, version, flexible)
    if element or not nullable.contains(version):
        return struct_read

    if tagged:

        def read_tagged_nullable_struct(buf: Any, pos: int) -> tuple[Any, int]:
            marker, p = _uvarint(buf, pos)
            if marker == 0:
                return None, p
            return struct_read(buf, p)

        return read_tagged_nullable_struct

    def read_nullable_struct(buf: Any, pos: int) -> tuple[Any, int]:
        marker, p = _FIXED_READERS["int8"](buf, pos)
        if marker < 0:
            return None, p
        return struct_read(buf, p)

    return read_nullable_struct


def _array_reader(f: Field, version: int, flexible: bool, nullable: VersionRange) -> Reader:
    length = _length_reader(flexible, True)
    elem = _value_reader(f, version, flexible, element=True)
    may_be_null = nullable.contains(version)
    name = f.name

    def read(buf: Any, pos: int) -> tuple[Any, int]:
        start = pos
        n, pos = length(buf, pos)
        if n < 0:
            if n == -1 and may_be_null:
                return None, pos
            raise _Fail(
                start,
                f"non-nullable field {name} was serialized as null"
                if n == -1
                else f"negative array length {n} in {name}",
            )
        if n > len(buf) - pos:
            raise _Fail(start, f"array {name} claims {n} elements but only {len(buf) - pos} bytes remain")
        out: list[Any] = []
        append = out.append
        for _ in range(n):
            v, pos = elem(buf, pos)
            append(v)
        return out, pos

    return read


@dataclass(slots=True)
class _StructPlan:
    """Compiled reading/writing plan of one struct layout at one version."""

    fields: Sequence[Field]
    flexible: bool
    present: list[tuple[Field, Reader]]  # non-tagged fields in wire order
    tagged: dict[int, tuple[Field, Reader]]  # tag -> field
    defaults: list[tuple[str, Any, Field]]  # every field's json name, default (copied per record)


_PLANS: dict[tuple[int, int, bool], tuple[Sequence[Field], _StructPlan]] = {}


def _plan(fields: Sequence[Field], version: int, flexible: bool) -> _StructPlan:
    key = (id(fields), version, flexible)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is fields:
        return hit[1]
    present: list[tuple[Field, Reader]] = []
    tagged: dict[int, tuple[Field, Reader]] = {}
    plan = _StructPlan(fields, flexible, present, tagged, [])
    _PLANS[key] = (fields, plan)  # before recursing: tolerate self-referencing layouts
    for f in fields:
        plan.defaults.append((f.json_name, field_default(f), f))
        if not VersionRange.parse(f.versions).contains(version):
            continue
        if flexible and f.tag is not None and VersionRange.parse(f.tagged_versions).contains(version):
            tagged[f.tag] = (f, _value_reader(f, version, True, tagged=True))
        else:
            present.append((f, _value_reader(f, version, flexible)))
    return plan


def _fresh(value: Any) -> Any:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    return value


def _read_struct_body(plan: _StructPlan, buf: Any, pos: int) -> tuple[dict, dict[int, bytes], int]:
    out: dict[str, Any] = {}
    for key, default, _f in plan.defaults:
        out[key] = _fresh(default) if isinstance(default, (list, dict)) else default
    for f, read in plan.present:
        out[f.json_name], pos = read(buf, pos)
    unknown: dict[int, bytes] = {}
    if plan.flexible:
        count, pos = _uvarint(buf, pos)
        for _ in range(count):
            tag_pos = pos
            tag, pos = _uvarint(buf, pos)
            size, pos = _uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise _Fail(tag_pos, f"tagged field {tag} of {size} bytes runs past the end ({len(buf) - pos} left)")
            known = plan.tagged.get(tag)
            if known is None:
                unknown[tag] = bytes(buf[pos:end])
            else:
                f, read = known
                value, p = read(buf[:end] if end < len(buf) else buf, pos)
                if p != end:
                    raise _Fail(
                        tag_pos, f"tagged field {f.name} (tag {tag}) declared {size} bytes but its value used {p - pos}"
                    )
                out[f.json_name] = value
            pos = end
    return out, unknown, pos


def _struct_reader(fields: Sequence[Field], version: int, flexible: bool) -> Reader:
    holder: list[_StructPlan] = []

    def read(buf: Any, pos: int) -> tuple[Any, int]:
        if not holder:
            holder.append(_plan(fields, version, flexible))
        value, unknown, pos = _read_struct_body(holder[0], buf, pos)
        if unknown:
            value[UNKNOWN_TAGS_KEY] = unknown
        return value, pos

    return read


def decode(schema: Schema, version: int, data: bytes | memoryview, pos: int = 0) -> tuple[dict, dict[int, bytes], int]:
    """Decode one message of ``schema`` at ``version`` starting at ``pos``: ``(values, unknown_tags, end)``.

    ``values`` has every field of the schema by JSON name (absent ones at their default); trailing bytes
    after ``end`` are left to the caller. Raises :class:`CorruptDataError` (``decode_error``) where the
    bytes do not follow the schema; unknown versions are decoded by their fields' version ranges.

    >>> s = Schema("T", 0, (0, 0), "0+", [Field("Leader", "int32", tag=1, tagged_versions="0+", default=-2)])
    >>> decode(s, 0, b"\\x01\\x01\\x04\\x00\\x00\\x00\\x07")
    ({'leader': 7}, {}, 7)
    """
    plan = _plan(schema.fields, version, schema.is_flexible(version))
    try:
        return _read_struct_body(plan, data, pos)
    except _Fail as exc:
        raise CorruptDataError("", exc.pos, "decode_error", f"{schema.name} v{version}: {exc.detail}") from None
    except (struct.error, IndexError, ValueError) as exc:  # defensive: should not happen
        raise CorruptDataError("", pos, "decode_error", f"{schema.name} v{version}: {exc}") from exc


# ---------------------------------------------------------------------------------------------
# Writing


def _check_int(value: Any, lo: int, hi: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"field {name}: expected an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ConfigError(f"field {name}: {value} out of range [{lo}, {hi}]")
    return value


_INT_RANGES = {
    "int8": (_I8, -(1 << 7), (1 << 7) - 1),
    "int16": (_I16, -(1 << 15), (1 << 15) - 1),
    "int32": (_I32, -(1 << 31), (1 << 31) - 1),
    "int64": (_I64, -(1 << 63), (1 << 63) - 1),
    "uint16": (_U16, 0, (1 << 16) - 1),
    "uint32": (_U32, 0, (1 << 32) - 1),
}


def _write_length(out: bytearray, n: int, flexible: bool, wide: bool) -> None:
    if flexible:
        out += encode_uvarint(n + 1)
    elif wide:
        out += _I32.pack(n)
    else:
        out += _I16.pack(n)


def _write_value(
    out: bytearray, f: Field, value: Any, version: int, flexible: bool, element: bool = False, tagged: bool = False
) -> None:
    t = f.element_type if element else f.type
    nullable = VersionRange.parse(f.nullable).contains(version) and not element
    if not element and f.is_array:
        if value is None:
            if not nullable:
                raise ConfigError(f"field {f.name} is not nullable in version {version}")
            _write_length(out, -1, flexible, True)
            return
        if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
            raise ConfigError(f"field {f.name}: expected a list, got {value!r}")
        items = list(value)
        _write_length(out, len(items), flexible, True)
        for item in items:
            _write_value(out, f, item, version, flexible, element=True)
        return
    if t in _INT_RANGES:
        st, lo, hi = _INT_RANGES[t]
        out += st.pack(_check_int(value, lo, hi, f.name))
    elif t == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"field {f.name}: expected a bool, got {value!r}")
        out.append(1 if value else 0)
    elif t == "float64":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"field {f.name}: expected a number, got {value!r}")
        out += _F64.pack(float(value))
    elif t == "uuid":
        try:
            out += uuid_from_str(value)
        except ValueError as exc:
            raise ConfigError(f"field {f.name}: {exc}") from exc
    elif t == "string":
        if value is None:
            if not nullable:
                raise ConfigError(f"field {f.name} is not nullable in version {version}")
            _write_length(out, -1, flexible, False)
            return
        if not isinstance(value, str):
            raise ConfigError(f"field {f.name}: expected a str, got {value!r}")
        raw = value.encode("utf-8")
        if not flexible and len(raw) > 0x7FFF:
            raise ConfigError(f"field {f.name}: string of {len(raw)} bytes is too long")
        _write_length(out, len(raw), flexible, False)
        out += raw
    elif t in ("bytes", "records"):
        if value is None:
            if not nullable:
                raise ConfigError(f"field {f.name} is not nullable in version {version}")
            _write_length(out, -1, flexible, True)
            return
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise ConfigError(f"field {f.name}: expected bytes, got {value!r}")
        raw = bytes(value)
        _write_length(out, len(raw), flexible, True)
        out += raw
    else:
        if value is None:
            if not nullable:
                raise ConfigError(f"field {f.name} is not nullable in version {version}")
            out += b"\x00" if tagged else _I8.pack(-1)
            return
        if not isinstance(value, dict):
            raise ConfigError(f"field {f.name}: expected a dict for struct {t}, got {value!r}")
        if nullable:
            out += b"\x01" if tagged else _I8.pack(1)
        _write_struct(out, f.fields, value, value.get(UNKNOWN_TAGS_KEY) or {}, version, flexible, f.name)


def _write_struct(
    out: bytearray,
    fields: Sequence[Field],
    values: dict,
    unknown_tags: dict[int, bytes],
    version: int,
    flexible: bool,
    where: str,
) -> None:
    known_keys = {f.json_name for f in fields}
    extra = [k for k in values if k not in known_keys and k != UNKNOWN_TAGS_KEY]
    if extra:
        raise ConfigError(
            f"{where}: unknown field(s) {', '.join(sorted(extra))}; expected {', '.join(f.json_name for f in fields)}"
        )
    tagged: dict[int, bytes] = {}
    for f in fields:
        present = f.json_name in values
        value = values[f.json_name] if present else field_default(f)
        if f.type == "uuid" and value is not None and not f.is_array:
            try:
                value = _norm_uuid(value)
            except ValueError as exc:
                raise ConfigError(f"field {f.name}: {exc}") from exc
        if not VersionRange.parse(f.versions).contains(version):
            if present and not f.ignorable and not _equals_default(f, value):
                raise ConfigError(
                    f"field {f.name} does not exist in version {version} of {where} "
                    f"and its value {value!r} is not the default"
                )
            continue
        if flexible and f.tag is not None and VersionRange.parse(f.tagged_versions).contains(version):
            if _equals_default(f, value):
                continue
            buf = bytearray()
            _write_value(buf, f, value, version, True, tagged=True)
            tagged[f.tag] = bytes(buf)
            continue
        _write_value(out, f, value, version, flexible)
    if not flexible:
        if unknown_tags:
            raise ConfigError(f"{where}: tagged fields cannot be written in non-flexible version {version}")
        return
    for tag, raw in unknown_tags.items():
        if tag in tagged:
            raise ConfigError(f"{where}: unknown tag {tag} collides with a known tagged field")
        tagged[tag] = bytes(raw)
    out += encode_uvarint(len(tagged))
    for tag in sorted(tagged):
        raw = tagged[tag]
        out += encode_uvarint(tag)
        out += encode_uvarint(len(raw))
        out += raw


def encode(schema: Schema, version: int, values: dict, unknown_tags: dict[int, bytes] | None = None) -> bytes:
    """Encode ``values`` (keyed by JSON name) as ``schema`` at ``version``; missing keys take their default.

    Raises :class:`ConfigError` for an unsupported version or a value that does not fit the schema.

    >>> s = Schema("T", 0, (0, 0), "0+", [Field("Leader", "int32", tag=1, tagged_versions="0+", default=-2)])
    >>> encode(s, 0, {"leader": -2}), encode(s, 0, {"leader": 7})
    (b'\\x00', b'\\x01\\x01\\x04\\x00\\x00\\x00\\x07')
    """
    if not schema.supports(version):
        lo, hi = schema.valid_versions
        raise ConfigError(f"{schema.name} has no version {version} (valid {lo}-{hi})")
    out = bytearray()
    _write_struct(out, schema.fields, values, unknown_tags or {}, version, schema.is_flexible(version), schema.name)
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# JSON rendering (Kafka's generated *JsonConverter)


def to_json_value(f: Field, value: Any, version: int, element: bool = False) -> Any:
    """JSON-ready form of one field value (uuid text, base64 bytes, nested structs)."""
    if value is None:
        return None
    if not element and f.is_array:
        return [to_json_value(f, v, version, element=True) for v in value]
    t = f.element_type if element else f.type
    if t in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode("ascii")
    if t == "float64":
        return _JavaDouble(float(value))
    if t in PRIMITIVE_TYPES:
        return value
    return to_json(f.fields, value, version)


_JSON_PLANS: dict[tuple[int, int], tuple[Sequence[Field], list[tuple[Field, bool, Any, bool]]]] = {}


def _json_plan(fields: Sequence[Field], version: int) -> list[tuple[Field, bool, Any, bool]]:
    """(field, tagged, default, plain) of the fields present in ``version``, schema order."""
    hit = _JSON_PLANS.get((id(fields), version))
    if hit is not None and hit[0] is fields:
        return hit[1]
    plan = []
    for f in fields:
        if not VersionRange.parse(f.versions).contains(version):
            continue
        tagged = f.tag is not None and VersionRange.parse(f.tagged_versions).contains(version)
        base = f.element_type
        plain = base in PRIMITIVE_TYPES and base not in ("bytes", "records", "float64")
        plan.append((f, tagged, field_default(f), plain))
    _JSON_PLANS[(id(fields), version)] = (fields, plan)
    return plan


def to_json(fields: Iterable[Field] | Schema, values: dict, version: int) -> dict:
    """Kafka's JSON rendering of a struct: schema order, tagged fields only when not default.

    Fields absent in ``version`` are left out; unknown tagged fields are never rendered.

    Examples
    --------
    >>> leader = Field("Leader", "int32", tag=1, tagged_versions="0+", default=-2)
    >>> s = Schema("T", 0, (0, 0), "0+", [Field("Id", "int32"), leader])
    >>> to_json(s, {"id": 1, "leader": -2}, 0)
    {'id': 1}
    """
    if isinstance(fields, Schema):
        fields = fields.fields
    if not isinstance(fields, tuple):
        fields = tuple(fields)
    if not isinstance(values, dict):
        values = {}
    out: dict[str, Any] = {}
    for f, tagged, default, plain in _json_plan(fields, version):
        key = f.json_name
        value = values[key] if key in values else _fresh(default)
        if tagged and (value == default if plain else _equals_default(f, value)):
            continue
        out[key] = value if plain else to_json_value(f, value, version)
    return out


class _JavaDouble(float):
    """A float that :func:`dumps_json` prints like Java's ``Double.toString``."""


def _java_double(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    a = abs(value)
    if 1e-3 <= a < 1e7:
        text = repr(value)
        return text if ("." in text or "e" in text) else text + ".0"
    # shortest round-trip digits, written in Java's scientific form d.dddE<n>
    sign, digits, exponent = Decimal(repr(a)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    exp10 = len(digits) + int(exponent) - 1
    head, tail = text[0], text[1:] or "0"
    return f"{'-' if value < 0 else ''}{head}.{tail}E{exp10}"


_SAFE_JSON_TEXT = re.compile(r'[^"\\\x00-\x1f]*')


def _dump(value: Any, parts: list[str]) -> None:
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, _JavaDouble):
        parts.append(_java_double(float(value)))
    elif isinstance(value, int):
        parts.append(str(value))
    elif isinstance(value, float):
        parts.append(_java_double(value))
    elif isinstance(value, str):
        parts.append(f'"{value}"' if _SAFE_JSON_TEXT.fullmatch(value) else json.dumps(value, ensure_ascii=False))
    elif isinstance(value, dict):
        parts.append("{")
        first = True
        for k, v in value.items():
            if not first:
                parts.append(",")
            first = False
            key = str(k)
            parts.append(f'"{key}"' if _SAFE_JSON_TEXT.fullmatch(key) else json.dumps(key, ensure_ascii=False))
            parts.append(":")
            _dump(v, parts)
        parts.append("}")
    elif isinstance(value, (list, tuple)):
        parts.append("[")
        for i, v in enumerate(value):
            if i:
                parts.append(",")
            _dump(v, parts)
        parts.append("]")
    else:
        raise TypeError(f"cannot render {type(value).__name__} as JSON")


def dumps_json(value: Any) -> str:
    """Compact JSON text as Jackson prints it (no spaces, Java double format, raw UTF-8).

    >>> dumps_json({"a": [1, None], "b": 1e7, "c": "é"})
    '{"a":[1,null],"b":1.0E7,"c":"é"}'
    """
    parts: list[str] = []
    _dump(value, parts)
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Kafka's own JSON schema files


def _kafka_default(type_name: str, value: Any) -> Any:
    if value is None or value == "":
        return TYPE_DEFAULT
    if value == "null":
        return None
    if type_name == "bool":
        return value in (True, "true")
    if type_name in _INT_RANGES:
        return int(value, 0) if isinstance(value, str) else int(value)
    if type_name == "float64":
        return float(value)
    return value


def _kafka_fields(items: list[dict], common: dict[str, list[dict]]) -> Sequence[Field]:
    out = []
    for item in items:
        type_name = item["type"]
        sub = item.get("fields")
        base = type_name[2:] if type_name.startswith("[]") else type_name
        if sub is None and base in common:
            sub = common[base]
        out.append(
            Field(
                name=item["name"],
                type=type_name,
                versions=item.get("versions") or item.get("taggedVersions") or "none",
                nullable=item.get("nullableVersions", "none"),
                tag=None if item.get("tag") is None else int(item["tag"]),
                tagged_versions=item.get("taggedVersions", "none"),
                default=_kafka_default(type_name, item.get("default")),
                fields=_kafka_fields(sub, common) if sub else (),
                ignorable=bool(item.get("ignorable", False)),
            )
        )
    return tuple(out)


def schema_from_kafka_json(source: str | dict) -> Schema:
    """Build a :class:`Schema` from one of Kafka's JSON message definitions.

    Kafka ships them in its jars (``common/metadata/*.json``, ``common/message/*.json``);
    ``//`` comment lines are allowed. This lets a newer record layout be loaded at run time
    and lets the built-in tables be checked against a given Kafka release.

    Examples
    --------
    >>> s = schema_from_kafka_json('''// comment
    ... {"apiKey": 12, "type": "metadata", "name": "FeatureLevelRecord", "validVersions": "0",
    ...  "flexibleVersions": "0+", "fields": [
    ...   {"name": "Name", "type": "string", "versions": "0+"},
    ...   {"name": "FeatureLevel", "type": "int16", "versions": "0+"}]}''')
    >>> s.name, s.valid_versions, [f.json_name for f in s.fields]
    ('FeatureLevelRecord', (0, 0), ['name', 'featureLevel'])
    """
    if isinstance(source, str):
        text = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("//"))
        try:
            source = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"not a Kafka message schema: {exc}") from exc
    if not isinstance(source, dict) or "name" not in source or "fields" not in source:
        raise ConfigError("not a Kafka message schema: expected an object with name and fields")
    valid = VersionRange.parse(str(source.get("validVersions", "0")))
    common = {c["name"]: c["fields"] for c in source.get("commonStructs", [])}
    return Schema(
        name=source["name"],
        api_key=source.get("apiKey"),
        valid_versions=(valid.low, valid.high),
        flexible=source.get("flexibleVersions", "none"),
        fields=_kafka_fields(source["fields"], common),
        type=source.get("type", "data"),
    )


def _range_text(text: str) -> str:
    r = VersionRange.parse(text)
    return "none" if r.empty else f"{r.low}-{r.high}"


def _field_differences(mine: Sequence[Field], theirs: Sequence[Field], path: str) -> list[str]:
    out: list[str] = []
    if [f.name for f in mine] != [f.name for f in theirs]:
        out.append(f"{path}: fields {[f.name for f in mine]} != {[f.name for f in theirs]}")
    by_name = {f.name: f for f in theirs}
    for a in mine:
        b = by_name.get(a.name)
        if b is None:
            continue
        where = f"{path}.{a.name}"
        pairs = [
            ("type", a.type, b.type),
            ("versions", _range_text(a.versions), _range_text(b.versions)),
            ("nullable", _range_text(a.nullable), _range_text(b.nullable)),
            ("tag", a.tag, b.tag),
            ("tagged_versions", _range_text(a.tagged_versions), _range_text(b.tagged_versions)),
            ("default", a.default, b.default),
            ("ignorable", a.ignorable, b.ignorable),
        ]
        out.extend(f"{where}: {what} {x!r} != {y!r}" for what, x, y in pairs if x != y)
        out.extend(_field_differences(a.fields, b.fields, where))
    return out


def layout_differences(mine: Schema, theirs: Schema) -> list[str]:
    """Human-readable differences between two layouts (empty when they encode alike).

    Examples
    --------
    >>> a = Schema("T", 1, (0, 1), "0+", [Field("A", "int32")])
    >>> layout_differences(a, Schema("T", 1, (0, 2), "0+", [Field("A", "int64")]))
    ['T: valid_versions (0, 1) != (0, 2)', "T.A: type 'int32' != 'int64'"]
    """
    out: list[str] = []
    if mine.api_key != theirs.api_key:
        out.append(f"{mine.name}: api_key {mine.api_key} != {theirs.api_key}")
    if tuple(mine.valid_versions) != tuple(theirs.valid_versions):
        out.append(f"{mine.name}: valid_versions {tuple(mine.valid_versions)} != {tuple(theirs.valid_versions)}")
    if _range_text(mine.flexible) != _range_text(theirs.flexible):
        out.append(f"{mine.name}: flexible {mine.flexible!r} != {theirs.flexible!r}")
    out.extend(_field_differences(mine.fields, theirs.fields, mine.name))
    return out
