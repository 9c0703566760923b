"""Batch and record lines of every era, with the legacy (magic 0/1) record checksums they print."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from workbench.formats.dumptext_write.options import DumpOptions, KafkaEra
from workbench.formats.dumptext_write.payloads import _control_text, _Payloads
from workbench.formats.dumptext_write.reading import _LOG_HDR

if TYPE_CHECKING:
    from workbench.formats.batch import Batch, Record


def _codec_error() -> type[Exception]:
    from workbench.formats.compression import CodecError

    return CodecError


# --------------------------------------------------------------------------------------------
# legacy (magic 0/1) record checksums, which Batch.records() does not keep


def _legacy_checks(batch: Batch) -> list[tuple[int, bool]]:
    """(stored CRC, valid) of each message a legacy entry yields on deep iteration."""
    raw = bytes(batch.data or b"")
    if not batch.attributes & 7:
        return [(batch.crc, batch.crc_valid)]
    codec = batch.attributes & 7
    try:
        key_at = 12 + (14 if batch.magic == 1 else 6)  # crc, magic, attributes[, timestamp]
        key_len = struct.unpack_from(">i", raw, key_at)[0]
        value_at = key_at + 4 + max(key_len, 0)
        value_len = struct.unpack_from(">i", raw, value_at)[0]
        from workbench.formats.compression import CODEC_NAMES, decompress

        inner = decompress(CODEC_NAMES[codec], raw[value_at + 4 : value_at + 4 + value_len], magic=batch.magic)
    except (struct.error, IndexError, KeyError, _codec_error()):
        return []
    out = []
    p = 0
    while p + 12 <= len(inner):
        _, size = _LOG_HDR.unpack_from(inner, p)
        end = p + 12 + size
        if size < 4 or end > len(inner):
            break
        stored = struct.unpack_from(">I", inner, p + 12)[0]
        out.append((stored, zlib.crc32(inner[p + 16 : end]) == stored))
        p = end
    return out


# --------------------------------------------------------------------------------------------
# batch and record lines


def _bool(v: bool) -> str:
    return "true" if v else "false"


def _batch_line(b: Batch, position: int, era: KafkaEra) -> str:
    codec = b.compression.upper() if era.codec_upper else b.compression
    if era.record_form == "2.1":
        tail = (
            f" position: {position} {b.timestamp_type}: {b.max_timestamp} isvalid: {_bool(b.crc_valid)}"
            f" size: {b.size} magic: {b.magic} compresscodec: {codec} crc: {b.crc}"
        )
    else:
        tail = (
            f" position: {position} {b.timestamp_type}: {b.max_timestamp} size: {b.size} magic: {b.magic}"
            f" compresscodec: {codec} crc: {b.crc} isvalid: {_bool(b.crc_valid)}"
        )
    if b.magic < 2:
        return f"offset: {b.last_offset}{tail}"
    head = (
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count}"
        f" baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id}"
        f" producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch}"
        f" isTransactional: {_bool(b.is_transactional)} isControl: {_bool(b.is_control)}"
    )
    if era.delete_horizon:
        dh = f"OptionalLong[{b.base_timestamp}]" if b.has_delete_horizon else "OptionalLong.empty"
        head = f"{head} deleteHorizonMs: {dh}"
    return head + tail


def _sequence(b: Batch, offset: int) -> int:
    if b.base_sequence < 0:
        return -1
    s = b.base_sequence + (offset - b.base_offset)
    return s - 0x80000000 if s > 0x7FFFFFFF else s


def _record_lines(
    b: Batch, position: int, records: list[Record], era: KafkaEra, opts: DumpOptions, payloads: _Payloads | None
) -> Iterator[str]:
    """The lines of one batch's records (the 3.0+ form and, from the reference, older forms)."""
    tst = b.timestamp_type
    v2 = b.magic >= 2
    control = b.is_control
    checks = _legacy_checks(b) if not v2 else None
    contents = payloads is not None and opts.prints_contents and not control
    skip = opts.skip_record_metadata
    form = era.record_form
    scala = era.scala
    brace = "}" if scala else ""
    if form == "3.0" and v2 and not control and not skip:
        # the common case, one f-string per line
        bseq, boff = b.base_sequence, b.base_offset
        parse = payloads.parse if contents and payloads is not None else None
        for r in records:
            k, v, off = r.key, r.value, r.offset
            if bseq < 0:
                seq = -1
            else:
                seq = bseq + off - boff
                if seq > 0x7FFFFFFF:
                    seq -= 0x80000000
            hk = ",".join([h[0] for h in r.headers]) if r.headers else ""
            line = (
                f"| offset: {off} {tst}: {r.timestamp} keySize: {-1 if k is None else len(k)} "
                f"valueSize: {-1 if v is None else len(v)} sequence: {seq} headerKeys: [{hk}]"
            )
            if parse is not None:
                key, payload = parse(r)
                if key is not None:
                    line = f"{line} key: {key}"
                if payload is not None:
                    line = f"{line} payload: {payload}"
            yield line
        return
    if form == "2.8":
        codec = b.compression.upper()
        batch_part = (
            f" baseOffset: {b.base_offset} lastOffset: {b.last_offset} baseSequence: {b.base_sequence}"
            f" lastSequence: {b.last_sequence} producerEpoch: {b.producer_epoch}"
            f" partitionLeaderEpoch: {b.partition_leader_epoch} batchSize: {b.size} magic: {b.magic}"
            f" compressType: {codec} position: {position}"
        )
    for i, r in enumerate(records):
        ks = -1 if r.key is None else len(r.key)
        vs = -1 if r.value is None else len(r.value)
        if form == "2.1":
            yield _record_line_21(b, position, r, ks, vs, era, checks, i, contents, payloads)
            continue
        parts: list[str] = []
        prefix = "| "
        if not skip:
            if form == "3.0":
                parts.append(f"| offset: {r.offset} {tst}: {r.timestamp} keySize: {ks} valueSize: {vs}")
            elif form == "2.8":
                # v2 records have no checksum of their own: crc null, isValid true
                crc, valid = (checks[i] if checks and i < len(checks) else (None, False)) if not v2 else (None, True)
                parts.append(
                    f"| offset: {r.offset} isValid: {_bool(valid)} crc: {'null' if crc is None else crc}"
                    f" keySize: {ks} valueSize: {vs} {tst}: {r.timestamp}{batch_part}"
                )
            else:
                parts.append(f"| offset: {r.offset} {tst}: {r.timestamp} keysize: {ks} valuesize: {vs}")
            if v2:
                keys = ",".join(k for k, _ in r.headers)
                parts.append(f" sequence: {_sequence(b, r.offset)} headerKeys: [{keys}]")
            elif form == "3.0":
                crc, valid = checks[i] if checks and i < len(checks) else (0, False)
                parts.append(f" isValid: {_bool(valid)} crc: {crc}{brace}")
            elif form in ("2.2", "2.8"):
                crc, valid = checks[i] if checks and i < len(checks) else (0, False)
                parts.append(f" crc: {crc} isvalid: {_bool(valid)}")
            if control:
                parts.append(" " + _control_text(r, era))
            prefix = " "
        if contents and not (r.value is None and era.version[:2] < (2, 4)
                             and payloads.parse == payloads._string):  # type: ignore[union-attr]
            key, payload = payloads.parse(r)  # type: ignore[union-attr]
            if key is not None:
                parts.append(f"{prefix}key: {key}")
                prefix = " "
            if payload is not None:
                parts.append(f" payload: {payload}" if scala else f"{prefix}payload: {payload}")
        yield "".join(parts)


def _record_line_21(
    b: Batch,
    position: int,
    r: Record,
    ks: int,
    vs: int,
    era: KafkaEra,
    checks: list[tuple[int, bool]] | None,
    i: int,
    contents: bool,
    payloads: _Payloads | None,
) -> str:
    """The <= 2.1 record line (no batch lines in deep mode; checked against Kafka 2.1.1's tool).

    ``isvalid`` is the record's own check: a v2 record has no checksum of its own, so it is
    ``true`` even in a batch whose CRC does not match. The string decoder of Kafka 2.3 and older
    prints neither key nor payload for a record without a value.
    """
    codec = b.compression.upper()
    valid = True if checks is None else (checks[i][1] if i < len(checks) else False)
    text = (
        f"offset: {r.offset} position: {position} {b.timestamp_type}: {r.timestamp} isvalid: {_bool(valid)}"
        f" keysize: {ks} valuesize: {vs} magic: {b.magic} compresscodec: {codec}"
    )
    if b.magic >= 2:
        keys = ",".join(k for k, _ in r.headers)
        text += (
            f" producerId: {b.producer_id} producerEpoch: {b.producer_epoch} sequence: {_sequence(b, r.offset)}"
            f" isTransactional: {_bool(b.is_transactional)} headerKeys: [{keys}]"
        )
    else:
        text += f" crc: {checks[i][0] if checks and i < len(checks) else 0}"
    if b.is_control:
        text += " " + _control_text(r, era)
    elif contents and payloads is not None and not (r.value is None and payloads.parse == payloads._string):
        key, payload = payloads.parse(r)
        if key is not None:
            text += f" key: {key}"
        if payload is not None:
            text += f" payload: {payload}"
    return text
