"""Wire primitives shared by every Kafka binary format.

Fixed-width integers are big-endian. ``varint``/``varlong`` are zig-zag signed LEB128 (record
fields of v2 batches); ``uvarint`` is unsigned LEB128 (flexible-version message fields and the
metadata record frame). Readers take a ``bytes``/``memoryview`` and a position and return
``(value, new_position)``; they raise :class:`ValueError` on truncated or over-long input so a
caller can turn it into a recorded problem.
"""

from __future__ import annotations

MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


def read_uvarint(buf: bytes | memoryview, pos: int, max_bytes: int = MAX_VARINT_BYTES) -> tuple[int, int]:
    """Read an unsigned LEB128 varint at ``pos``.

    Examples
    --------
    >>> read_uvarint(b"\\x96\\x01", 0)
    (150, 2)
    """
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(max_bytes):
        if pos >= end:
            raise ValueError(f"truncated varint at byte {pos}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise ValueError(f"varint longer than {max_bytes} bytes")


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read a zig-zag signed varint (at most 5 bytes).

    >>> read_varint(b"\\x01", 0)
    (-1, 1)
    """
    u, pos = read_uvarint(buf, pos, MAX_VARINT_BYTES)
    return (u >> 1) ^ -(u & 1), pos


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read a zig-zag signed varlong (at most 10 bytes)."""
    u, pos = read_uvarint(buf, pos, MAX_VARLONG_BYTES)
    return (u >> 1) ^ -(u & 1), pos


def encode_uvarint(value: int) -> bytes:
    """Encode a non-negative integer as unsigned LEB128.

    Examples
    --------
    >>> encode_uvarint(150)
    b'\\x96\\x01'
    """
    if value < 0:
        raise ValueError(f"uvarint must be non-negative, got {value}")
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode a signed 32-bit integer as a zig-zag varint."""
    return encode_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def encode_varlong(value: int) -> bytes:
    """Encode a signed 64-bit integer as a zig-zag varlong."""
    return encode_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)
