"""Headers-only extracts of log segments (``<base offset>.log.headers``): the batches without their records.

A large data partition's payloads are the data, not the evidence, and often too large (or too
private) to leave the node; its batch headers are small and carry what the ``batches`` table,
the replica comparison and the partition's offsets and times need. ``workbench collect`` writes,
in place of such a segment, the 61-byte v2 header of each of its batches in file order, from
position 0 as long as the headers are clean (magic 2, a length Kafka accepts, the batch within
the file); the first position that is not is where the extract ends, and the collector says
so. The records' bytes are never read: each header is read with one positioned read.

A batch's position in the segment is the sum of the sizes (``12 + length``) of the batches
before it, so the extract gives every column of the ``batches`` table but ``crc_valid`` (the
records are not there to check it: null), and the batch's ``crc`` as Kafka wrote it (replicas
still compare by it).

The writer uses the standard library only (it runs on production nodes); the reader uses numpy.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> from workbench.formats.batch import encode_batch
>>> seg = encode_batch([(0, 1, b"a", b"1")], base_offset=0) + encode_batch([(1, 2, b"b", b"2")], base_offset=1)
>>> with tempfile.TemporaryDirectory() as d:
...     p = Path(d, "00000000000000000000.log")
...     _ = p.write_bytes(seg)
...     extract, stop, why = extract_headers(p, len(seg))
...     cols = next(header_extract_columns(extract))
>>> len(extract), stop, why, [int(x) for x in cols["position"]], [int(x) for x in cols["base_offset"]]
(122, 140, None, [0, 70], [0, 1])
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Any

#: What the file name of a segment's extract ends with (after ``<base offset>.log``).
SUFFIX = ".headers"
# Kafka's v2 batch framing (as workbench.formats.batch reads it; repeated so that this module needs
# nothing beyond the standard library): offset + length, the whole v2 header, the largest batch
_LOG_OVERHEAD = 12
_HEADER = 61
_MAX_BATCH_BYTES = 128 << 20
_LENGTH_AND_MAGIC = struct.Struct(">qiib")


def extract_headers(path: str | os.PathLike[str], size: int) -> tuple[bytes, int, str | None]:
    """The headers-only extract of the first ``size`` bytes of a segment, read-only.

    Returns the extract, the position where it ends, and why it ends there before ``size``
    (None when every batch up to ``size`` is in it).
    """
    out = bytearray()
    fd = os.open(path, os.O_RDONLY)
    try:
        pos = 0
        while pos < size:
            if pos + _HEADER > size:
                return bytes(out), pos, f"a batch header cut at the end of the file (position {pos})"
            header = os.pread(fd, _HEADER, pos)
            if len(header) < _HEADER:
                return bytes(out), pos, f"the file ended at position {pos + len(header)} while being read"
            _base, length, _epoch, magic = _LENGTH_AND_MAGIC.unpack_from(header)
            if magic != 2:
                what = "zeros (preallocated, never written)" if not any(header) else f"magic {magic}"
                return bytes(out), pos, f"position {pos}: {what}, not a v2 batch header"
            if length < _HEADER - _LOG_OVERHEAD or length > _MAX_BATCH_BYTES or pos + _LOG_OVERHEAD + length > size:
                return bytes(out), pos, f"position {pos}: batch length {length} does not fit the file"
            out += header
            pos += _LOG_OVERHEAD + length
        return bytes(out), pos, None
    finally:
        os.close(fd)


def header_extract_columns(data: bytes, display_path: str = "", *, problems: Any = None,
                           chunk: int = 1 << 16) -> Iterator[dict[str, Any]]:
    """The ``batches`` columns of an extract's bytes (as :func:`workbench.formats.fastscan.scan_batch_columns`
    gives them for a segment), ``crc_checked`` false; a trailing partial header is a ``truncated`` problem."""
    import numpy as np

    from workbench.formats.fastscan import HEADER_DTYPE, _fast_columns

    whole = len(data) // _HEADER
    if len(data) % _HEADER and problems is not None:
        problems.report(whole * _HEADER, "truncated", f"{display_path}: {len(data) % _HEADER} bytes after the "
                                                      f"last whole batch header of the extract; not read")
    hdr = np.frombuffer(data, HEADER_DTYPE, count=whole)
    sizes = hdr["length"].astype(np.int64) + _LOG_OVERHEAD
    positions = np.concatenate([np.zeros(1, np.int64), np.cumsum(sizes)[:-1]]) if whole else np.zeros(0, np.int64)
    for start in range(0, whole, max(1, chunk)):
        cut = slice(start, start + chunk)
        yield _fast_columns(positions[cut], hdr[cut], np.zeros(len(positions[cut]), np.bool_), False)
