"""The CRC of any stretch of a stream from a running CRC kept every few bytes: each byte checksummed once.

Resynchronising after damage (:func:`workbench.formats.batch.read_batches`) checks candidate
batches: a plausible header at some byte, claiming a length that fits in the file, is believed
only if the CRC of its bytes matches the one it stores. Checking each candidate by running the
checksum over its bytes costs the sum of their lengths, and crafted input (or unlucky bytes)
can put a plausible header every few bytes, each claiming megabytes: thousands of times the
file. Both checksums Kafka uses (CRC-32C for v2 batches, CRC-32 for legacy messages) are linear
over GF(2), so

``crc(a..b) = P(b) xor shift(P(a), b - a)``

where ``P(p)`` is the CRC of the stream from a fixed origin to ``p`` and ``shift(c, n)``
multiplies ``c`` by ``x^(8n)`` modulo the polynomial (zlib's ``crc32_combine``). :class:`CrcRange`
keeps ``P`` every :data:`STRIDE` bytes as the reader moves forward, so a candidate's CRC costs at
most two strides of checksum and one shift (four table look-ups per hexadecimal digit of ``n``), and every
byte of a damaged stretch is checksummed once however many candidates cover it.

Examples
--------
>>> import crc32c, os
>>> data = os.urandom(5000)
>>> ranges = CrcRange(CRC32C)
>>> ranges.crc(memoryview(data), 0, 100, 4321, crc32c.crc32c) == crc32c.crc32c(data[100:4321])
True
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

#: Bytes between two kept values of the running CRC (a candidate's CRC checksums fewer than
#: two of these, plus the bytes not yet covered).
STRIDE = 64

#: Reflected polynomials: CRC-32C (Castagnoli, v2 batches) and CRC-32 (zlib, legacy messages).
CRC32C = 0x82F63B78
CRC32 = 0xEDB88320

#: Per polynomial: the tables of :func:`_tables`, at index ``16 * j + d`` (None until first used).
_OPS: dict[int, list[tuple[list[int], list[int], list[int], list[int]] | None]] = {}


def _multmodp(a: int, b: int, poly: int) -> int:
    """``a * b`` modulo the polynomial, both reflected (bit 31 is ``x^0``), as zlib's ``multmodp``."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                return p
        m >>= 1
        b = (b >> 1) ^ poly if b & 1 else b >> 1


def _tables(poly: int, j: int, d: int) -> tuple[list[int], list[int], list[int], list[int]]:
    """Multiplication by ``x^(8 * d * 16^j)`` as four byte-indexed tables (built once per polynomial, j and d)."""
    ops = _OPS.setdefault(poly, [None] * (16 * 16))
    found = ops[16 * j + d]
    if found is not None:
        return found
    power = 1 << 30  # x^1
    for _ in range(4 * j + 3):  # x^(8 * 16^j)
        power = _multmodp(power, power, poly)
    step, power = power, 1 << 31
    for _ in range(d):
        power = _multmodp(power, step, poly)
    images = [_multmodp(power, 1 << i, poly) for i in range(32)]
    out = []
    for byte in range(4):
        table = [0] * 256
        for v in range(1, 256):
            low = v & -v
            table[v] = table[v ^ low] ^ images[8 * byte + low.bit_length() - 1]
        out.append(table)
    made = (out[0], out[1], out[2], out[3])
    ops[16 * j + d] = made
    return made


def shift(c: int, n: int, poly: int) -> int:
    """``c`` multiplied by ``x^(8n)`` modulo the polynomial: the CRC ``c`` of some bytes, moved past
    ``n`` further bytes (zlib's ``crc32_combine(c, 0, n)`` without the conditioning); one table
    step per hexadecimal digit of ``n``.

    Examples
    --------
    >>> import zlib
    >>> a, b = b"head", b"and the tail"
    >>> shift(zlib.crc32(a), len(b), CRC32) ^ zlib.crc32(b) == zlib.crc32(a + b)
    True
    """
    ops = _OPS.get(poly) or _OPS.setdefault(poly, [None] * (16 * 16))
    j = 0
    while n:
        d = n & 15
        if d:
            t = ops[j + d]
            t0, t1, t2, t3 = t if t is not None else _tables(poly, j >> 4, d)
            c = t0[c & 255] ^ t1[(c >> 8) & 255] ^ t2[(c >> 16) & 255] ^ t3[c >> 24]
        n >>= 4
        j += 16
    return c


class CrcRange:
    """The running CRC of a forward-only stream, kept every :data:`STRIDE` bytes from an origin.

    :meth:`crc` takes the bytes through a window (a memoryview and the stream position of its
    first byte) that must hold ``[a, b)``; values are added as far as ``b`` reaches, from the
    bytes of that window. When the window has moved past every kept value (the bytes needed to
    go on are gone), the origin moves to ``a``.
    """

    __slots__ = ("poly", "first", "values")

    def __init__(self, poly: int) -> None:
        self.poly = poly
        self.first = -1  # stream position of values[0]; -1: no origin yet
        self.values = array("I")

    def crc(self, mv: memoryview, base: int, a: int, b: int, crc: Callable[..., int]) -> int:
        """The CRC of stream bytes ``[a, b)``, held by ``mv`` (stream position ``base`` at index 0).

        ``crc(data)`` / ``crc(data, value)`` is the checksum function (the library's, looked up by
        the caller, so a test can count the bytes it sees).
        """
        step = STRIDE
        if b - a <= 2 * step:
            return crc(mv[a - base : b - base])
        values = self.values
        last = self.first + (len(values) - 1) * step
        if self.first < 0 or a < self.first or last < base:
            self.first, last = a, a
            values = self.values = array("I", [0])
        first = self.first
        value = values[-1]
        while last + step <= b:
            value = crc(mv[last - base : last - base + step], value)
            values.append(value)
            last += step
        ia = -((first - a) // step)  # the first kept value at or after a
        pa = first + ia * step
        head = crc(mv[a - base : pa - base]) if pa > a else 0
        ib = (b - first) // step
        pb = first + ib * step
        tail = crc(mv[pb - base : b - base], values[ib]) if b > pb else values[ib]
        out = shift(head ^ values[ia], b - pa, self.poly) ^ tail
        if ia > 1 << 16 and 2 * ia > len(values):  # forget values behind the window for good
            del values[: ia - 1]
            self.first = first + (ia - 1) * step
        return out
