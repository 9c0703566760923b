"""Codec stream framings as Kafka writes and reads them (reference §1.4)."""

from __future__ import annotations

import gzip
import os
import random
import struct
import zlib

import cramjam
import lz4.block
import lz4.frame
import pytest
import zstandard

from workbench.formats.compression import CODEC_NAMES, CodecError, compress, decompress

DATA = os.urandom(50_000) + b"kafka " * 30_000  # > one 32 KiB snappy block and > one 64 KiB lz4 block


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_round_trip(codec):
    for data in (b"", b"x", DATA):
        assert decompress(codec, compress(codec, data)) == data


def test_gzip_is_a_java_gzipoutputstream_stream():
    out = compress("gzip", DATA)
    assert out[:10] == bytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])  # no mtime, XFL 0, OS 255 like JDK 16+
    assert struct.unpack("<II", out[-8:]) == (zlib.crc32(DATA), len(DATA))
    assert gzip.decompress(out) == DATA


def test_gzip_reader_accepts_concatenated_members_and_python_gzip():
    stream = gzip.compress(b"one") + gzip.compress(b"two", mtime=0)
    assert decompress("gzip", stream) == b"onetwo"
    with pytest.raises(CodecError):
        decompress("gzip", gzip.compress(DATA)[:-20])


def test_snappy_xerial_framing():
    out = compress("snappy", DATA)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(out[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    assert [len(b) for b in blocks[:-1]] == [32 * 1024] * (len(blocks) - 1)
    assert b"".join(blocks) == DATA


def test_snappy_reader_accepts_raw_blocks_and_concatenated_streams():
    assert decompress("snappy", bytes(cramjam.snappy.compress_raw(b"raw snappy"))) == b"raw snappy"
    assert decompress("snappy", compress("snappy", b"ab") + compress("snappy", b"cd")) == b"abcd"
    with pytest.raises(CodecError):
        decompress("snappy", compress("snappy", DATA)[:-5])


def test_lz4_frame_as_kafka_writes_it():
    out = compress("lz4", DATA)
    # magic, FLG 0x60 (v01, independent blocks, no checksums, no size), BD 0x40 (64 KiB), HC 0x82
    assert out[:7] == bytes.fromhex("04224d18604082")
    assert out[-4:] == b"\x00\x00\x00\x00"
    assert lz4.frame.decompress(out) == DATA  # a standard frame decoder checks the header checksum
    # magic 0: the pre-0.10 header checksum over magic+FLG+BD; lz4.frame would reject it
    out0 = compress("lz4", DATA, magic=0)
    assert out0[:7] == bytes.fromhex("04224d1860401a") and out0[7:] == out[7:]
    assert decompress("lz4", out0, magic=0) == DATA


def test_lz4_reader_accepts_frames_from_other_writers():
    for kw in ({"content_checksum": True}, {"block_size": lz4.frame.BLOCKSIZE_MAX1MB}, {"store_size": True},
               {"block_checksum": True}):
        frame = lz4.frame.compress(DATA, block_linked=False, **kw)
        assert decompress("lz4", frame) == DATA, kw
    with pytest.raises(CodecError):  # dependent blocks are rejected, as in Kafka
        decompress("lz4", lz4.frame.compress(DATA, block_linked=True))


def test_lz4_incompressible_blocks_are_stored():
    noise = os.urandom(70_000)
    out = compress("lz4", noise)
    (word,) = struct.unpack_from("<I", out, 7)
    assert word == 0x80000000 | 65536 and out[11 : 11 + 65536] == noise[:65536]
    assert decompress("lz4", out) == noise
    assert lz4.block.decompress(lz4.block.compress(b"abc"), return_bytearray=False) == b"abc"


def test_zstd_frame_header_as_zstd_jni_streams_it():
    out = compress("zstd", DATA)
    # magic, frame header descriptor 0 (no content size, no checksum, not single-segment), window
    assert out[:5] == bytes.fromhex("28b52ffd00")
    assert zstandard.ZstdDecompressor().decompressobj().decompress(out) == DATA


def test_zstd_without_content_size_and_concatenated_frames():
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(DATA)
    assert decompress("zstd", frame + frame) == DATA + DATA
    with pytest.raises(CodecError):
        decompress("zstd", frame[:-7])
    with pytest.raises(CodecError):
        compress("zstd", b"x", magic=1)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_output_limit_and_garbage(codec):
    big = compress(codec, bytes(2_000_000))
    with pytest.raises(CodecError):
        decompress(codec, big, limit=1_000_000)
    assert decompress(codec, big, limit=2_000_000) == bytes(2_000_000)
    noise = random.Random(codec).randbytes(100)
    for junk in (b"\x07", noise, compress(codec, DATA)[:40]):
        with pytest.raises(CodecError):
            decompress(codec, junk)


def test_unknown_codec():
    with pytest.raises(CodecError):
        compress("brotli", b"")
    with pytest.raises(CodecError):
        decompress("brotli", b"")
