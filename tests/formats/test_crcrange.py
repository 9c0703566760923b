"""The CRC of any stretch from a running CRC (``workbench.formats.crcrange``): equal to the direct one."""

from __future__ import annotations

import zlib

import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.formats.crcrange import CRC32, CRC32C, STRIDE, CrcRange, shift

FUNCTIONS = {CRC32C: crc32c.crc32c, CRC32: zlib.crc32}


@settings(max_examples=60, deadline=None)
@given(data=st.binary(min_size=0, max_size=3000), poly=st.sampled_from([CRC32C, CRC32]),
       steps=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 3000)), max_size=30),
       window=st.integers(0, 400))
def test_every_range_crc_equals_the_direct_one(data, poly, steps, window):
    """Ranges asked in increasing start order, through a window that moves forward (the reader's):
    each equals the checksum run over its bytes, whether the window kept the values or not."""
    crc = FUNCTIONS[poly]
    ranges = CrcRange(poly)
    a = 0
    for gap, length in steps:
        a = min(a + gap, len(data))
        b = min(a + length, len(data))
        base = max(0, a - window)  # the window starts at or before a and holds [a, b)
        got = ranges.crc(memoryview(data)[base:], base, a, b, crc)
        assert got == crc(data[a:b]), (a, b, base)


def test_each_byte_is_checksummed_once_however_many_ranges_cover_it():
    data = bytes(range(256)) * 400
    seen = [0]

    def counting(chunk, *args):
        seen[0] += len(chunk)
        return crc32c.crc32c(chunk, *args)

    ranges = CrcRange(CRC32C)
    for a in range(0, 5000, 7):  # 715 ranges, each about 100 kB
        b = len(data) - a // 3
        assert ranges.crc(memoryview(data), 0, a, b, counting) == crc32c.crc32c(data[a:b])
    assert seen[0] <= len(data) + 715 * 2 * STRIDE


def test_shift_moves_a_crc_past_zero_bytes():
    for poly, crc in FUNCTIONS.items():
        for n in (0, 1, 15, 16, 17, 255, 4096, 65537, 1 << 20):
            head = crc(b"some head bytes")
            assert shift(head, n, poly) ^ crc(bytes(n)) == crc(b"some head bytes" + bytes(n))
