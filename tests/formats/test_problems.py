"""A problem met by both the header reader and the record reader is one row, not two."""

from __future__ import annotations

import io

import crc32c

from workbench.formats.batch import encode_batch, read_batches
from workbench.formats.problems import ProblemLog


def test_unknown_codec_is_reported_once_per_batch():
    good = encode_batch([(0, 1000, b"k", b"v")], base_offset=0)
    bad = bytearray(encode_batch([(1, 1001, b"k", b"v")], base_offset=1))
    bad[22] = (bad[22] & 0xF8) | 6                   # codec id 6, CRC recomputed: a valid batch
    bad[17:21] = crc32c.crc32c(bytes(bad[21:])).to_bytes(4, "big")
    log = ProblemLog("seg.log")
    batches = list(read_batches(io.BytesIO(good + bytes(bad)), "seg.log", problems=log))
    records = [[r.offset for r in b.records(log)] for b in batches]
    assert records == [[0], []]
    assert [(p.position, p.kind) for p in log.problems] == [(len(good), "unknown_codec")]
