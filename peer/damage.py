"""Damaged segment bytes for the reader's hang checks (``tests/formats/test_batch_damage.py``) and
the timing of the same reads (``benchmarks/bench_damage.py``)."""

from __future__ import annotations

import struct

from workbench.formats.batch import Record, encode_batch

__all__ = ["crafted"]


def crafted(cycles: int, data: bytes, at: int) -> bytes:
    """``cycles`` cycles of (unknown-magic header, plausible 128 MiB header, filler) inside ``data`` at ``at``."""
    real = encode_batch([Record(0, 1_700_000_000_000, b"k", b"v" * 40, [])], base_offset=0)
    unknown = real[:16] + b"\x07" + real[17:61]  # magic 7: no such format
    claims = real[:8] + struct.pack(">i", (128 << 20) - 12) + real[12:61]  # 128 MiB that is not there
    cycle = unknown + claims
    cycle += bytes(150 - len(cycle))
    return data[:at] + cycle * cycles + data[at:]
