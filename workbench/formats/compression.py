"""Compression codecs of Kafka record batches, with Kafka's exact stream framings.

Kafka compresses the records of a v2 batch (bytes 61 to the end) or the value of a legacy
(magic 0/1) wrapper message as one stream:

========  ==========================================================================
codec     stream format as the Java client and broker write it
========  ==========================================================================
gzip      GZIP stream as ``java.util.zip.GZIPOutputStream`` writes it (mtime 0, OS 255)
snappy    Xerial snappy-java framing: 16-byte header, then ``int32 BE length`` + raw
          Snappy block, each block at most 32 KiB uncompressed
lz4       LZ4 frame as Kafka's ``Lz4BlockOutputStream`` writes it: independent 64 KiB
          blocks, no block or content checksum, no content size. For magic 0 the
          header checksum byte is computed over the magic as well (a pre-0.10 bug that
          Kafka keeps for v0 and skips when reading v0)
zstd      a Zstandard frame as zstd-jni's streaming writer makes it (no content size,
          no checksum; magic 2 only)
========  ==========================================================================

Checked against batches a Kafka 4.3 Java producer wrote: uncompressed and gzip batches are
byte-identical (same zlib deflate at level 6); snappy blocks mostly are; lz4 and zstd blocks
depend on the codec library version, so only their framing (frame headers, block layout, end
mark) is byte-exact. Decoders accept everything Kafka's readers accept (raw
snappy without the Xerial header, concatenated gzip members, lz4 frames with a content
checksum, zstd frames without a content size) and never produce more than ``limit`` bytes.
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.block
import lz4.frame
import zstandard

CODEC_NAMES: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")
"""Codec names by attribute id (bits 0-2 of the batch attributes)."""

CODEC_IDS: dict[str, int] = {name: i for i, name in enumerate(CODEC_NAMES)}

MAX_DECOMPRESSED_BYTES = 1 << 30
"""Default ceiling of one decompressed stream (a defence against decompression bombs)."""

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024

LZ4_MAGIC = b"\x04\x22\x4d\x18"
LZ4_BLOCK_SIZE = 64 * 1024
_LZ4_FLG = 0x60  # version 01, independent blocks, no checksums, no content size
_LZ4_BD = 0x40  # 64 KiB max block

# as java.util.zip.GZIPOutputStream writes it since JDK 16 (OS byte 255 "unknown"; JDK 8/11 wrote 0)
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


class CodecError(ValueError):
    """A compressed stream that cannot be decoded (readers turn it into a problem)."""


def _xxh32(data: bytes) -> int:
    """XXH32 (seed 0) of ``data``, taken from the lz4 library's frame content checksum."""
    frame = lz4.frame.compress(data, content_checksum=True, store_size=False)
    return int.from_bytes(frame[-4:], "little")


_LZ4_HC_GOOD = (_xxh32(bytes((_LZ4_FLG, _LZ4_BD))) >> 8) & 0xFF
_LZ4_HC_BROKEN = (_xxh32(LZ4_MAGIC + bytes((_LZ4_FLG, _LZ4_BD))) >> 8) & 0xFF


# --------------------------------------------------------------------------------------------
# compression


def compress(codec: str, data: bytes, *, magic: int = 2, level: int | None = None) -> bytes:
    """Compress ``data`` into the stream Kafka writes for ``codec``.

    ``magic`` 0 selects the legacy lz4 header checksum; ``level`` defaults to Kafka's (gzip 6, lz4 9,
    zstd 3).

    >>> decompress("gzip", compress("gzip", b"abc"))
    b'abc'
    """
    if codec == "none":
        return bytes(data)
    if codec == "gzip":
        co = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, -15)
        body = co.compress(data) + co.flush()
        return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    if codec == "snappy":
        out = [XERIAL_HEADER]
        for i in range(0, len(data), XERIAL_BLOCK_SIZE):
            block = bytes(cramjam.snappy.compress_raw(data[i : i + XERIAL_BLOCK_SIZE]))
            out.append(struct.pack(">i", len(block)))
            out.append(block)
        return b"".join(out)
    if codec == "lz4":
        return _lz4_compress(data, magic, 9 if level is None else level)
    if codec == "zstd":
        if magic < 2:
            raise CodecError("zstd is not allowed for magic 0/1 (KIP-110)")
        cobj = zstandard.ZstdCompressor(level=3 if level is None else level, write_content_size=False).compressobj()
        return cobj.compress(data) + cobj.flush()
    raise CodecError(f"unknown codec {codec!r}; expected one of {', '.join(CODEC_NAMES)}")


def _lz4_compress(data: bytes, magic: int, level: int) -> bytes:
    out = [LZ4_MAGIC, bytes((_LZ4_FLG, _LZ4_BD, _LZ4_HC_BROKEN if magic == 0 else _LZ4_HC_GOOD))]
    mode = "high_compression" if level > 1 else "default"
    for i in range(0, len(data), LZ4_BLOCK_SIZE):
        chunk = bytes(data[i : i + LZ4_BLOCK_SIZE])
        block = lz4.block.compress(chunk, mode=mode, compression=level, store_size=False)
        if len(block) >= len(chunk):  # stored uncompressed, high bit set
            out.append(struct.pack("<I", len(chunk) | 0x80000000))
            out.append(chunk)
        else:
            out.append(struct.pack("<I", len(block)))
            out.append(block)
    out.append(b"\x00\x00\x00\x00")
    return b"".join(out)


# --------------------------------------------------------------------------------------------
# decompression


def decompress(codec: str, data: bytes | memoryview, *, magic: int = 2,
               limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress one Kafka compressed stream.

    For ``magic`` 0 the lz4 header checksum is not checked (as in Kafka). Raises :class:`CodecError`
    for an unknown codec, a corrupt or truncated stream, or output above ``limit`` bytes.

    >>> decompress("snappy", compress("snappy", b"x" * 5))
    b'xxxxx'
    """
    try:
        if codec == "none":
            return bytes(data)
        if codec == "gzip":
            return _gzip_decompress(data, limit)
        if codec == "snappy":
            return _snappy_decompress(bytes(data), limit)
        if codec == "lz4":
            return _lz4_decompress(bytes(data), limit)
        if codec == "zstd":
            return _zstd_decompress(data, limit)
    except CodecError:
        raise
    except Exception as exc:  # the codec libraries raise assorted types on corrupt input
        raise CodecError(f"{codec} stream is corrupt: {exc}") from exc
    raise CodecError(f"unknown codec {codec!r}")


def _gzip_decompress(data: bytes | memoryview, limit: int) -> bytes:
    out: list[bytes] = []
    total = 0
    buf = bytes(data)
    while True:
        d = zlib.decompressobj(31)
        chunk = d.decompress(buf, limit - total + 1)
        total += len(chunk)
        out.append(chunk)
        if total > limit:
            raise CodecError(f"gzip stream decompresses to more than {limit} bytes")
        if not d.eof:
            if d.unconsumed_tail:
                raise CodecError(f"gzip stream decompresses to more than {limit} bytes")
            raise CodecError("gzip stream is truncated")
        buf = d.unused_data
        if not buf.strip(b"\x00"):  # concatenated members may follow; trailing zero padding is tolerated
            return b"".join(out)


def _snappy_decompress(data: bytes, limit: int) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return _snappy_raw(data, limit)
    out: list[bytes] = []
    total = 0
    pos = 0
    n = len(data)
    while pos < n:
        if data.startswith(XERIAL_MAGIC, pos):  # a header (also of a concatenated stream)
            if pos + 16 > n:
                raise CodecError("xerial snappy header is truncated")
            pos += 16
            continue
        if pos + 4 > n:
            raise CodecError(f"xerial snappy block length truncated at {pos}")
        (blen,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if blen < 0 or pos + blen > n:
            raise CodecError(f"xerial snappy block of {blen} bytes at {pos - 4} runs past the stream end ({n})")
        block = _snappy_raw(data[pos : pos + blen], limit - total)
        pos += blen
        total += len(block)
        out.append(block)
    return b"".join(out)


def _snappy_raw(block: bytes, limit: int) -> bytes:
    # the raw format starts with the uncompressed length as an unsigned varint: check it first
    size = 0
    shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        size |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    if size > limit:
        raise CodecError(f"snappy block declares {size} bytes, more than the limit {limit}")
    return bytes(cramjam.snappy.decompress_raw(block))


def _lz4_decompress(data: bytes, limit: int) -> bytes:
    """Decode an LZ4 frame the way Kafka's ``Lz4BlockInputStream`` does.

    The header checksum byte is not checked (magic-0 writers computed it wrongly; newer
    writers compute it correctly, and Kafka itself only checks it for magic >= 1), block
    checksums are skipped, and a content checksum trailer is read but not verified.
    """
    n = len(data)
    if n < 7 or not data.startswith(LZ4_MAGIC):
        raise CodecError("lz4 stream does not start with the LZ4 frame magic 04 22 4D 18")
    flg = data[4]
    bd = data[5]
    if flg >> 6 != 1:
        raise CodecError(f"lz4 frame version {flg >> 6} is not supported (FLG 0x{flg:02x})")
    if not flg & 0x20:
        raise CodecError("lz4 frame uses dependent blocks, which Kafka rejects")
    block_checksum = bool(flg & 0x10)
    pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    pos += 1  # header checksum (HC)
    max_block = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}.get((bd >> 4) & 7)
    if max_block is None:
        raise CodecError(f"lz4 frame block size code {(bd >> 4) & 7} is invalid")
    out: list[bytes] = []
    total = 0
    while True:
        if pos + 4 > n:
            raise CodecError("lz4 frame is truncated (no end mark)")
        (word,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if word == 0:
            return b"".join(out)
        size = word & 0x7FFFFFFF
        if size > max_block or pos + size > n:
            raise CodecError(f"lz4 block of {size} bytes at {pos - 4} is larger than the block size or the stream")
        chunk = data[pos : pos + size]
        pos += size + (4 if block_checksum else 0)
        if word & 0x80000000:
            block = chunk
        else:
            block = lz4.block.decompress(chunk, uncompressed_size=max_block)
        total += len(block)
        if total > limit:
            raise CodecError(f"lz4 stream decompresses to more than {limit} bytes")
        out.append(block)


def _zstd_decompress(data: bytes | memoryview, limit: int) -> bytes:
    # decompressobj has no output bound: feed small input pieces and check the total as we go
    buf = bytes(data)
    dctx = zstandard.ZstdDecompressor()
    out: list[bytes] = []
    total = 0
    while True:
        dobj = dctx.decompressobj()
        pos = 0
        n = len(buf)
        while not dobj.eof:
            if pos >= n:
                raise CodecError("zstd stream is truncated (frame not finished)")
            chunk = dobj.decompress(buf[pos : pos + 16384])
            pos += 16384
            total += len(chunk)
            if total > limit:
                raise CodecError(f"zstd stream decompresses to more than {limit} bytes")
            out.append(chunk)
        buf = dobj.unused_data + buf[pos:]
        if not buf.strip(b"\x00"):  # further frames may follow (concatenated streams)
            return b"".join(out)
