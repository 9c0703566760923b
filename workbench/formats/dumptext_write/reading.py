"""Kafka's reading of a log: how its reader frames batches, Java's gzip, where record iteration fails."""

from __future__ import annotations

import io
import os
import re
import struct
import zlib
from typing import TYPE_CHECKING, BinaryIO, TypeGuard

from crc32c import crc32c as _crc32c

from workbench.formats.problems import ProblemLog

if TYPE_CHECKING:
    from workbench.formats.batch import Batch, Record


# The batch reader and the codecs are imported where records are read: batch lines alone (the
# default dump) need neither, and a command line that only prints them starts faster without.
_CODEC_TEXT = ("none", "gzip", "snappy", "lz4", "zstd")  # Kafka's CompressionType names, ids 0-4

_BASE_NAME = re.compile(r"^[+-]?\d+$")
_LOG_HDR = struct.Struct(">qi")

_HEADER_SIZE_UP_TO_MAGIC = 17
_RECORD_OVERHEAD_V0 = 14


def _is_batch(x: object) -> TypeGuard[Batch]:
    """Whether a frame's first item is a batch (else the trailing byte count, or ``None``)."""
    return x is not None and not isinstance(x, int)


TOOL_FAILURE = "tool_failure"
"""Problem kind: Kafka's dump tool itself fails at this point (its output ends, and a
multi-file run dumps no further file)."""

_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_BYTE_AT = re.compile(r"byte (\d+)")


class Unterminated(str):
    """The last output of a tool that failed mid-line (no line break follows it)."""


def _next_frame(
    f: BinaryIO, path: str | os.PathLike[str], pos: int, size: int, log: ProblemLog
) -> tuple[Batch, int] | tuple[int | None, str]:
    """The batch Kafka's ``FileLogInputStream`` frames at ``pos`` (and its magic), or where it
    stops: ``(trailing bytes it reports, why)``, with ``None`` when the tool fails there.

    Kafka frames by the declared length alone: a bad CRC, an inner batch or a magic above 2
    do not stop it (magic >= 2 is read as a v2 batch).
    """
    if pos + _HEADER_SIZE_UP_TO_MAGIC >= size:
        return size - pos, "fewer than 18 bytes left"
    f.seek(pos)
    head = f.read(_HEADER_SIZE_UP_TO_MAGIC)
    _, length = _LOG_HDR.unpack_from(head, 0)
    if length < _RECORD_OVERHEAD_V0:
        return None, (
            f"record size {length} is smaller than the minimum record overhead (14) (Kafka: CorruptRecordException)"
        )
    if pos + 12 + length > size:
        return size - pos, "the batch runs past the end of the file"
    magic = struct.unpack_from(">b", head, 16)[0]
    f.seek(pos)
    data = f.read(12 + length)
    if magic >= 2:
        if length < 49:
            return None, f"a batch of magic {magic} with {length} bytes, fewer than its 49-byte header"
        (base, _, ple, _, stored, attrs, lod, base_ts, max_ts, pid, pep, bseq, count) = _V2_HEADER.unpack_from(data)
        codec = attrs & 7
        from workbench.formats.batch import Batch

        batch = Batch(
            str(path),
            pos,
            base,
            base + lod,
            12 + length,
            ple,
            2,
            stored,
            _crc32c(memoryview(data)[21:]) == stored,
            attrs,
            _CODEC_TEXT[codec] if codec < 5 else "unknown",
            ("CreateTime", "LogAppendTime")[(attrs >> 3) & 1],
            bool(attrs & 0x10),
            bool(attrs & 0x20),
            bool(attrs & 0x40),
            base_ts,
            max_ts,
            pid,
            pep,
            bseq,
            count,
            data,
        )
        return batch, magic
    if magic < 0:
        return None, f"magic {magic} (a negative magic byte is not dumped here)"
    quiet = ProblemLog(str(path))
    from workbench.formats.batch import read_batches

    for batch in read_batches(io.BytesIO(data), str(path), problems=quiet):
        if batch.position == 0 and batch.size == len(data):
            batch.position = pos
            return batch, magic
        break
    return None, f"a magic {magic} entry this reader cannot frame"


def _java_gzip(payload: bytes) -> bytes | None:
    """Decompress like ``java.util.zip.GZIPInputStream``: members follow each other while the
    next bytes start a gzip header; anything else after a member is ignored."""
    out = []
    data = payload
    while True:
        d = zlib.decompressobj(31)
        try:
            out.append(d.decompress(data))
            out.append(d.flush())
        except zlib.error:
            return None
        if not d.eof:
            return None
        data = d.unused_data
        if data[:3] != b"\x1f\x8b\x08":
            return b"".join(out)


def _java_gzip_records(batch: Batch, local: ProblemLog) -> tuple[list[Record], ProblemLog]:
    """Records of a gzip batch whose stream has bytes after its end, read as Kafka reads them."""
    raw = bytes(batch.data or b"")
    inner = _java_gzip(raw[61:])
    if inner is None:
        return [], local
    attrs = batch.attributes & ~7
    header = bytearray(raw[:61])
    struct.pack_into(">h", header, 21, attrs)
    from workbench.formats.batch import Batch

    plain = Batch(
        batch.path,
        batch.position,
        batch.base_offset,
        batch.last_offset,
        61 + len(inner),
        batch.partition_leader_epoch,
        2,
        batch.crc,
        batch.crc_valid,
        attrs,
        "none",
        batch.timestamp_type,
        batch.is_transactional,
        batch.is_control,
        batch.has_delete_horizon,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.record_count,
        bytes(header) + inner,
    )
    again = ProblemLog(batch.path)
    again.report(batch.position, "garbage", "bytes after the end of the gzip stream (Kafka ignores them)")
    records = plain.records(again)
    return records, again


def _kafka_record_failure(records: list[Record], local: ProblemLog, batch: Batch) -> tuple[list[Record], str | None]:
    """The records Kafka prints before its record iterator fails, and why it fails (or None).

    Kafka reads records lazily and dies at the first it cannot read: a stream that does not
    decompress fails before the first record; a malformed record after the ones before it;
    bytes left after the declared count ("Incorrect declared batch size") while the last
    record is read, so that one is not printed.
    """
    problems = [p for p in local.problems if p.kind != "garbage"]
    if batch.magic < 2 or not problems:
        return records, None
    first = problems[0]
    if first.kind in ("decompress_error", "unknown_codec"):
        return [], first.detail
    if first.kind != "record_error":
        return records, None
    if " bytes after the last of " in first.detail:
        return records[:-1], f"{first.detail} (Kafka: Incorrect declared batch size)"
    if "data ends after" in first.detail:
        return records, first.detail
    m = _BYTE_AT.search(first.detail)
    if m is None:
        return records, first.detail
    stop = int(m[1])
    kept: list[Record] = []
    start = 0
    for r in records:
        if start >= stop:
            break
        kept.append(r)
        start += r.size
    return kept, first.detail
