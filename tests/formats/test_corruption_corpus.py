"""Corruption corpus made from segments that real Kafka wrote.

Sources (from the ``consumer_lag`` bundle of Kafka 4.3.1, see ``peer/scenarios``): the KRaft
metadata log of the controller, one data segment per codec (``lag-<codec>-0``, records with
headers) and the smallest ``__consumer_offsets`` segment. Each source is damaged in the ways a
disk, a crash or a bad copy damages files, one damaged file per case, all seeded:

* truncation at every byte of the last three batches (and at their boundaries);
* single bit flips at every header byte of the first and last batch plus sampled header and
  payload positions, and a few multi-batch flip sets;
* zero-filled tails (preallocated, never written), zeros replacing the tail from a cut, and a
  zeroed 4 KiB page inside the file;
* oversize and undersize length fields, unknown (and wrong legacy) magic bytes, unknown codec
  bits with and without a recomputed CRC;
* for the metadata log and ``__consumer_offsets``: a record whose version is beyond the schema,
  in a batch re-encoded with a valid CRC (detected only by the record decoders).

Every damaged file is read the way the workbench reads it (batches, records, and the metadata,
control or offsets record decoders) in lenient and in strict mode. For each one:

* no exception in lenient mode, and only :class:`~workbench.errors.CorruptDataError` in strict
  mode, raised for the same (path, position, kind) as the first lenient problem;
* bounded work, a hang detector that needs no clock: the bytes the reader runs a checksum over
  stay below the clean read's plus 16 times the damaged file's size (candidate headers met while
  resynchronising are verified over their declared length: at most 8.3 times the file on this
  corpus; a reader rescanning a file quadratically exceeds the bound a thousandfold). Wall-clock
  time is measured in ``benchmarks/bench_damage.py``;
* the list of ``(position, base_offset, last_offset, crc)`` of the batches outside the damaged
  region equals that of the clean read, whole;
* every problem names the damaged file and a byte position inside the damaged region, and a
  damage inside the CRC's coverage is reported at all.

Batches outside the damaged region have the bytes of the clean file (their CRC says so), so
their records are decoded in the clean read only; the damaged batches are decoded every time.
``WORKBENCH_CORPUS_SCALE`` (default 1) multiplies the number of sampled positions.
"""

from __future__ import annotations

import os
import random
import struct
import traceback
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import crc32c
import pytest

from workbench.errors import CorruptDataError
from workbench.formats.batch import MAX_BATCH_BYTES, Batch, Record, batch_columns, encode_batch
from workbench.formats.control import decode_control_record
from workbench.formats.coordinator import OFFSETS_RECORD_TYPES, decode_offsets_record, offsets_dump_payload
from workbench.formats.fastscan import as_lists, concat_columns, scan_batch_columns
from workbench.formats.metadata import METADATA_SCHEMAS, decode_metadata_record, dump_payload
from workbench.formats.problems import Problem, ProblemLog
from workbench.formats.segment import read_segment

pytestmark = pytest.mark.kafka

SCALE = max(1, int(os.environ.get("WORKBENCH_CORPUS_SCALE", "1")))
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SOURCES = ("metadata", *CODECS, "offsets")
DAMAGES = ("truncation", "bit_flip", "zero_fill", "length", "magic", "codec", "record_version")
STATS: dict[str, Counter] = {"cases": Counter(), "problems": Counter(), "kinds": Counter()}
CRC_BYTES: defaultdict[str, int] = defaultdict(int)

Key = tuple[int, int, int, int]  # position, base offset, last offset, crc


# --------------------------------------------------------------------------------------------
# reading the way the workbench reads


def walk(path: Path, kind: str, *, strict: bool = False, known: frozenset[tuple[int, int, int]] = frozenset(),
         ) -> tuple[list[Batch], list[Problem]]:
    """Read ``path`` like the loaders do: batches, records, and the record decoders of ``kind``.

    Batches whose (position, crc, size) is in ``known`` and whose CRC is valid hold the clean
    file's bytes; their records are not decoded again.
    """
    log = ProblemLog(str(path), strict=strict)
    batches = []
    for b in read_segment(path, problems=log, strict=strict):
        batches.append(b)
        if b.crc_valid and (b.position, b.crc, b.size) in known:
            continue
        decode_records(b, kind, log)
    return batches, log.problems


def decode_records(b: Batch, kind: str, log: ProblemLog) -> None:
    """Decode the records of ``b`` and, by topic kind, their keys and values."""
    for r in b.records(log):
        if b.is_control:
            c = decode_control_record(r.key, r.value)
            if c.error:
                log.report(b.position, "decode_error", f"control record at offset {r.offset}: {c.error}")
        elif kind == "metadata":
            md = decode_metadata_record(r.value)
            if md.error:
                log.report(b.position, "decode_error", f"metadata record at offset {r.offset}: {md.error}")
            else:
                dump_payload(md)
        elif kind == "offsets":
            o = decode_offsets_record(r.key, r.value)
            if o.error:
                log.report(b.position, "decode_error", f"offsets record at offset {r.offset}: {o.error}")
            else:
                offsets_dump_payload(o)


class CrcWork:
    """Counts the bytes the careful reader runs a checksum over (CRC-32C of v2 batches, CRC-32 of
    legacy messages) while in a ``with`` block: its work, measured without a clock."""

    def __init__(self) -> None:
        self.bytes = 0

    def __enter__(self) -> CrcWork:
        import workbench.formats.batch as batch_module

        self._module = batch_module
        self._real = (batch_module._crc32c, batch_module._crc32)
        crc32c_real, crc32_real = self._real

        def crc32c_counting(data, *args):
            self.bytes += len(data)
            return crc32c_real(data, *args)

        def crc32_counting(data, *args):
            self.bytes += len(data)
            return crc32_real(data, *args)

        batch_module._crc32c, batch_module._crc32 = crc32c_counting, crc32_counting
        return self

    def __exit__(self, *exc: object) -> None:
        self._module._crc32c, self._module._crc32 = self._real


def work_limit(src: Source, size: int) -> int:
    """The most checksum work a read of a damaged copy of ``src`` of ``size`` bytes may take."""
    return src.clean_crc_bytes + 16 * size


def key(b: Batch) -> Key:
    return (b.position, b.base_offset, b.last_offset, b.crc)


# --------------------------------------------------------------------------------------------
# sources


@dataclass
class Source:
    """One Kafka-written segment and its clean reading."""

    name: str
    kind: str  # metadata, data or offsets
    path: Path
    data: bytes
    batches: list[Batch]
    clean_crc_bytes: int
    known: frozenset[tuple[int, int, int]] = field(default_factory=frozenset)

    @property
    def keys(self) -> list[Key]:
        return [key(b) for b in self.batches]

    @property
    def bounds(self) -> list[tuple[int, int]]:
        return [(b.position, b.position + b.size) for b in self.batches]

    def batch_at(self, pos: int) -> int:
        """Index of the batch holding byte ``pos``."""
        for i, (lo, hi) in enumerate(self.bounds):
            if lo <= pos < hi:
                return i
        raise IndexError(pos)


def find_sources(bundle: Path) -> dict[str, tuple[str, Path]]:
    def first(pattern: str) -> Path:
        found = sorted(p for p in bundle.glob(pattern) if p.stat().st_size > 0)
        if not found:
            pytest.fail(f"no non-empty {pattern} in {bundle}")
        return found[0]

    def largest(pattern: str) -> Path:
        """The largest segment: the most batches to damage (how many a segment holds before it rolls
        depends on how the producer batched, which a loaded machine changes: 3 once in CI)."""
        found = sorted(bundle.glob(pattern), key=lambda p: (-p.stat().st_size, str(p)))
        if not found or found[0].stat().st_size == 0:
            pytest.fail(f"no non-empty {pattern} in {bundle}")
        return found[0]

    out = {"metadata": ("metadata", first("nodes/*/logs/__cluster_metadata-0/00000000000000000000.log"))}
    for codec in CODECS:
        out[codec] = ("data", largest(f"nodes/*/logs/lag-{codec}-*/*.log"))
    offsets = sorted((p for p in bundle.glob("nodes/*/logs/__consumer_offsets-*/*.log") if p.stat().st_size > 0),
                     key=lambda p: p.stat().st_size)
    if not offsets:
        pytest.fail(f"no non-empty __consumer_offsets segment in {bundle}")
    out["offsets"] = ("offsets", offsets[0])
    return out


@pytest.fixture(scope="module")
def sources(kafka_bundle) -> dict[str, Source]:
    bundle = kafka_bundle("consumer_lag")
    out = {}
    for name, (kind, path) in find_sources(bundle).items():
        batches, problems = walk(path, kind, strict=True)
        assert problems == [] and len(batches) >= 4, (path, problems)
        assert all(b.crc_valid for b in batches)
        with CrcWork() as work:
            walk(path, kind)
        assert work.bytes >= path.stat().st_size - 61 * len(batches), (path, work.bytes)
        out[name] = Source(name, kind, path, path.read_bytes(), batches, work.bytes,
                           frozenset((b.position, b.crc, b.size) for b in batches))
    return out


# --------------------------------------------------------------------------------------------
# cases and their checks


@dataclass
class Case:
    """One damaged file: what was done, where, and what must still be read."""

    label: str
    data: bytes
    regions: list[tuple[int, int]]  # damaged byte ranges [lo, hi) in the damaged file
    expect_problem: bool = True
    expect_kind: str | None = None


def overlapping(src: Source, regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Widen damaged byte ranges to the extents of the clean batches they touch."""
    out = []
    for lo, hi in regions:
        lo2, hi2 = lo, hi
        for blo, bhi in src.bounds:
            if blo < max(hi, lo + 1) and bhi > lo:
                lo2, hi2 = min(lo2, blo), max(hi2, bhi)
        out.append((lo2, hi2))
    return out


def inside(pos: int, regions: list[tuple[int, int]], *, inclusive_end: bool = False) -> bool:
    return any(lo <= pos < hi or (inclusive_end and pos == hi) for lo, hi in regions)


def check(src: Source, case: Case, path: Path, failures: list[str]) -> None:
    """Read the damaged file at ``path`` leniently and strictly; append what is wrong."""
    where = f"{src.name} [{src.path}] {case.label} -> {path}"
    STATS["cases"][src.name] += 1
    limit = work_limit(src, len(case.data))
    try:
        with CrcWork() as work:
            batches, problems = walk(path, src.kind, known=src.known)
    except Exception:  # noqa: BLE001 - any exception is the finding
        failures.append(f"{where}: lenient read raised\n{traceback.format_exc(limit=-4)}")
        return
    CRC_BYTES[src.name] += work.bytes
    if work.bytes > limit:
        failures.append(f"{where}: lenient read checksummed {work.bytes} bytes (limit {limit})")
    STATS["problems"][src.name] += len(problems)
    STATS["kinds"].update(p.kind for p in problems)

    size = len(case.data)
    expected = [k for k, (lo, hi) in zip(src.keys, src.bounds, strict=True)
                if hi <= size and not any(lo < rhi and hi > rlo for rlo, rhi in case.regions)]
    got = [key(b) for b in batches if not inside(b.position, case.regions)]
    if got != expected:
        missing = [k for k in expected if k not in got]
        extra = [k for k in got if k not in expected]
        failures.append(f"{where}: intact batches differ from the clean read; missing {missing[:5]} "
                        f"extra {extra[:5]} ({len(got)} vs {len(expected)})")
    starts = {lo for lo, _ in src.bounds}
    stray = [b.position for b in batches if inside(b.position, case.regions) and b.position not in starts]
    if stray:
        failures.append(f"{where}: batches yielded at {stray[:5]}, inside the damage but not at a batch start")
    for p in problems:
        if p.path != str(path) or not inside(p.position, case.regions, inclusive_end=True):
            failures.append(f"{where}: problem {p.kind} at {p.position} in {p.path!r} is outside the damaged "
                            f"region {case.regions} of {str(path)!r}: {p.detail}")
    if case.expect_problem and not problems:
        failures.append(f"{where}: damage not reported")
    if not case.expect_problem and problems:
        failures.append(f"{where}: no damage expected, got {[(p.position, p.kind) for p in problems]}")
    if case.expect_kind and case.expect_kind not in {p.kind for p in problems}:
        failures.append(f"{where}: expected a {case.expect_kind} problem, got {[p.kind for p in problems]}")

    fast_scan_agrees(path, batches, problems, where, failures)

    work = CrcWork()
    try:
        with work:
            walk(path, src.kind, strict=True, known=src.known)
    except CorruptDataError as exc:
        first = (problems[0].path, problems[0].position, problems[0].kind) if problems else None
        if (exc.path, exc.position, exc.kind) != first:
            failures.append(f"{where}: strict mode raised {(exc.path, exc.position, exc.kind)}, "
                            f"the first lenient problem is {first}")
    except Exception:  # noqa: BLE001
        failures.append(f"{where}: strict read raised a non-CorruptDataError\n{traceback.format_exc(limit=-4)}")
    else:
        if problems:
            failures.append(f"{where}: strict mode did not raise; lenient found {len(problems)} problems")
    CRC_BYTES[src.name] += work.bytes
    if work.bytes > limit:
        failures.append(f"{where}: strict read checksummed {work.bytes} bytes (limit {limit})")


BATCH_KINDS = {"zero_fill", "truncated", "garbage", "unknown_magic", "bad_length", "crc_mismatch", "unknown_codec"}


def fast_scan_agrees(path: Path, batches: list[Batch], problems: list[Problem], where: str,
                     failures: list[str]) -> None:
    """The fast batch-table scan gives the careful reader's rows and batch-level problems."""
    log = ProblemLog(str(path))
    try:
        got = as_lists(concat_columns(list(scan_batch_columns(path, problems=log))), str(path))
    except Exception:  # noqa: BLE001
        failures.append(f"{where}: fast scan raised\n{traceback.format_exc(limit=-4)}")
        return
    want = batch_columns(batches)
    if got != want:
        diff = [name for name in want if got[name] != want[name]]
        failures.append(f"{where}: fast scan rows differ from the careful reader in {diff}")
    batch_level = [(p.position, p.kind, p.detail) for p in problems if p.kind in BATCH_KINDS]
    if [(p.position, p.kind, p.detail) for p in log.problems] != batch_level:
        failures.append(f"{where}: fast scan problems {[(p.position, p.kind) for p in log.problems]} differ from "
                        f"the careful reader's {[(p.position, p.kind) for p in problems]}")


def run_cases(src: Source, cases: list[Case], tmp_path: Path) -> None:
    failures: list[str] = []
    for i, case in enumerate(cases):
        path = tmp_path / f"{src.name}-{i:04d}.log"
        path.write_bytes(case.data)
        check(src, case, path, failures)
    report(failures, len(cases))


def report(failures: list[str], n: int) -> None:
    if failures:
        pytest.fail(f"{len(failures)} failures in {n} damaged files; first ones:\n" + "\n".join(failures[:12]),
                    pytrace=False)


def rng(src: Source, damage: str) -> random.Random:
    return random.Random(zlib.crc32(f"{src.name}/{damage}".encode()))


def with_crc(batch: bytearray) -> bytearray:
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return batch


# --------------------------------------------------------------------------------------------
# the corpus


@pytest.mark.parametrize("name", SOURCES)
def test_truncation_at_every_byte_of_the_last_batches(sources, name, tmp_path):
    """A copy cut short anywhere in its last three batches (a crash, a partial copy)."""
    src = sources[name]
    first = src.bounds[-3][0]
    path = tmp_path / f"{src.name}-truncated.log"
    path.write_bytes(src.data)
    failures: list[str] = []
    sample = rng(src, "truncation")
    strict_every = 1 if SCALE > 1 else 3
    cuts = range(len(src.data) - 1, first - 1, -1)
    for cut in cuts:  # shrink one file in place: every read sees a real file of that length
        os.truncate(path, cut)
        i = src.batch_at(cut) if cut < len(src.data) else len(src.batches)
        lo = src.bounds[i][0]
        boundary = cut == lo
        case = Case(f"truncated at byte {cut}", src.data[:cut], [(lo, cut)] if not boundary else [(cut, cut)],
                    expect_problem=not boundary)
        if strict_every == 1 or sample.randrange(strict_every) == 0 or boundary:
            check(src, case, path, failures)
        else:  # lenient read only (the strict run of every third cut is enough)
            lenient_only(src, case, path, failures)
    report(failures, len(cuts))


def lenient_only(src: Source, case: Case, path: Path, failures: list[str]) -> None:
    """The lenient half of :func:`check` (used for most truncation cuts)."""
    STATS["cases"][src.name] += 1
    limit = work_limit(src, len(case.data))
    try:
        with CrcWork() as work:
            batches, problems = walk(path, src.kind, known=src.known)
    except Exception:  # noqa: BLE001
        failures.append(f"{src.name} {case.label}: lenient read raised\n{traceback.format_exc(limit=-4)}")
        return
    CRC_BYTES[src.name] += work.bytes
    STATS["problems"][src.name] += len(problems)
    STATS["kinds"].update(p.kind for p in problems)
    if work.bytes > limit:
        failures.append(f"{src.name} {case.label}: lenient read checksummed {work.bytes} bytes (limit {limit})")
    size = len(case.data)
    expected = [k for k, (_, hi) in zip(src.keys, src.bounds, strict=True) if hi <= size]
    if [key(b) for b in batches] != expected:
        failures.append(f"{src.name} {case.label}: batches differ from the clean prefix")
    # a torn header whose bytes so far are all zero (the high bytes of a base offset) cannot be
    # told from a preallocated tail: either kind is right
    lo = case.regions[0][0]
    kinds = {"truncated", "zero_fill"} if not any(case.data[lo:]) else {"truncated"}
    if len(problems) != 1 or problems[0].path != str(path) or problems[0].kind not in kinds or not inside(
            problems[0].position, case.regions, inclusive_end=True):
        failures.append(f"{src.name} {case.label}: expected one truncated problem in {case.regions}, got "
                        f"{[(p.position, p.kind) for p in problems]}")


@pytest.mark.parametrize("name", SOURCES)
def test_bit_flips(sources, name, tmp_path):
    """Single bit flips at every header byte of two batches, sampled header and payload flips,
    and sets of flips spread over several batches."""
    src = sources[name]
    r = rng(src, "bit_flip")
    cases = []

    def flip(positions: list[tuple[int, int]], label: str) -> None:
        data = bytearray(src.data)
        for pos, bit in positions:
            data[pos] ^= 1 << bit
        regions = overlapping(src, [(pos, pos + 1) for pos, _ in positions])
        # bytes 0-7 (base offset) and 12-15 (partition leader epoch) are outside the CRC
        detectable = any(not (0 <= pos - src.bounds[src.batch_at(pos)][0] < 8
                              or 12 <= pos - src.bounds[src.batch_at(pos)][0] < 16) for pos, _ in positions)
        cases.append(Case(label, bytes(data), regions, expect_problem=detectable))

    for i in (0, len(src.batches) - 1):
        lo = src.bounds[i][0]
        for off in range(61):
            flip([(lo + off, r.randrange(8))], f"header byte {off} of batch {i}")
    for _ in range(20 * SCALE):
        i = r.randrange(len(src.batches))
        lo = src.bounds[i][0]
        pos = lo + r.randrange(61)
        flip([(pos, r.randrange(8))], f"header byte {pos - lo} of batch {i}")
    for _ in range(30 * SCALE):
        i = r.randrange(len(src.batches))
        lo, hi = src.bounds[i]
        pos = r.randrange(lo + 61, hi)
        flip([(pos, r.randrange(8))], f"payload byte {pos - lo} of batch {i}")
    for _ in range(5 * SCALE):
        picks = r.sample(range(len(src.batches)), min(5, len(src.batches)))
        positions = [(r.randrange(*src.bounds[i]), r.randrange(8)) for i in picks]
        flip(positions, f"flips at {positions}")
    for case in cases:
        case.label += f" ({[c for c in case.regions]})"
    run_cases(src, cases, tmp_path)


@pytest.mark.parametrize("name", SOURCES)
def test_zero_fill(sources, name, tmp_path):
    """Preallocated tails, zeros replacing the tail from a cut, and a zeroed 4 KiB page."""
    src = sources[name]
    r = rng(src, "zero_fill")
    size = len(src.data)
    cases = [Case(f"{n} zero bytes appended", src.data + bytes(n), [(size, size + n)], expect_kind="zero_fill")
             for n in (1, 16, 17, 60, 61, 4096, (1 << 20) + 3)]
    first = src.bounds[-3][0]
    for cut in sorted({first, *(r.randrange(first, size) for _ in range(15 * SCALE))}):
        lo = src.bounds[src.batch_at(cut)][0]
        cases.append(Case(f"zeros from byte {cut} to the end + 64 KiB", src.data[:cut] + bytes(size - cut + 65536),
                          [(lo, size + 65536)]))
    for _ in range(5 * SCALE):
        page = r.randrange(size // 4096 + 1) * 4096
        end = min(page + 4096, size)
        if end <= page:
            continue
        data = src.data[:page] + bytes(end - page) + src.data[end:]
        cases.append(Case(f"zeroed page [{page}, {end})", data, overlapping(src, [(page, end)])))
    run_cases(src, cases, tmp_path)


@pytest.mark.parametrize("name", SOURCES)
def test_bad_length_fields(sources, name, tmp_path):
    """Length fields far too large, past the end, swallowing later batches, or too small."""
    src = sources[name]
    r = rng(src, "length")
    n = len(src.batches)
    cases = []
    picks = sorted({0, n - 1, *r.sample(range(n), min(n, 4 * SCALE))})
    for i in picks:
        lo, hi = src.bounds[i]
        values = [0x7FFFFFFF, MAX_BATCH_BYTES + 1, len(src.data), -1, 0, 48, r.randrange(1 << 31)]
        if i + 3 < n:
            values.append(src.bounds[i + 3][0] - lo - 12)
        for value in values:
            data = bytearray(src.data)
            struct.pack_into(">i", data, lo + 8, value)
            cases.append(Case(f"batch {i} at {lo}: length {value}", bytes(data), [(lo, hi)]))
    run_cases(src, cases, tmp_path)


@pytest.mark.parametrize("name", SOURCES)
def test_unknown_and_wrong_magic(sources, name, tmp_path):
    """Magic bytes 3..255 (unknown) and 0/1 (a legacy message where a v2 batch is)."""
    src = sources[name]
    r = rng(src, "magic")
    n = len(src.batches)
    cases = []
    for i in sorted({0, n - 1, *r.sample(range(n), min(n, 4 * SCALE))}):
        lo, hi = src.bounds[i]
        for magic in (0, 1, 3, 0x7F, 0xFF, r.randrange(3, 256)):
            data = bytearray(src.data)
            data[lo + 16] = magic
            cases.append(Case(f"batch {i} at {lo}: magic {magic}", bytes(data), [(lo, hi)],
                              expect_kind="unknown_magic" if magic > 2 else None))
    run_cases(src, cases, tmp_path)


@pytest.mark.parametrize("name", SOURCES)
def test_unknown_codec_bits(sources, name, tmp_path):
    """Codec ids 5-7 in the attributes, with the CRC recomputed (a writer bug) and without."""
    src = sources[name]
    r = rng(src, "codec")
    n = len(src.batches)
    cases = []
    for i in sorted({0, n - 1, *r.sample(range(n), min(n, 4 * SCALE))}):
        lo, hi = src.bounds[i]
        for codec in (5, 6, 7):
            for fix_crc in (True, False):
                data = bytearray(src.data)
                batch = bytearray(data[lo:hi])
                batch[22] = (batch[22] & ~7) | codec
                if fix_crc:
                    with_crc(batch)
                data[lo:hi] = batch
                cases.append(Case(f"batch {i} at {lo}: codec {codec}{' (CRC recomputed)' if fix_crc else ''}",
                                  bytes(data), [(lo, hi)], expect_kind="unknown_codec" if fix_crc else None))
    run_cases(src, cases, tmp_path)


def bump_version(kind: str, rec: Record) -> bytes | None:
    """The record value with its version set one past the newest its schema knows (same length)."""
    value = rec.value
    if value is None or len(value) < 3:
        return None
    if kind == "metadata":  # frame version, apiKey, version: one byte each while below 0x80
        frame, api_key = value[0], value[1]
        schema = METADATA_SCHEMAS.get(api_key)
        if frame != 1 or api_key > 0x7F or schema is None or value[2] > 0x7F:
            return None
        new = schema.valid_versions[1] + 1
        return bytes([frame, api_key, new]) + value[3:] if new < 0x80 else None
    if rec.key is None or len(rec.key) < 2:  # offsets: int16 record type in the key, int16 value version
        return None
    rt = OFFSETS_RECORD_TYPES.get(struct.unpack_from(">h", rec.key)[0])
    return None if rt is None else struct.pack(">h", rt.value.valid_versions[1] + 1) + value[2:]


@pytest.mark.parametrize("name", ["metadata", "offsets"])
def test_record_version_beyond_the_schema(sources, name, tmp_path):
    """A record whose version is one past the newest the schema knows, in a batch re-encoded
    with a valid CRC: only the record decoder sees it, and says so (``decode_error``)."""
    src = sources[name]
    r = rng(src, "record_version")
    cases = []
    eligible = [i for i, b in enumerate(src.batches) if not b.is_control and b.compression == "none"
                and b.record_count > 0]
    for i in sorted(r.sample(eligible, min(len(eligible), 8 * SCALE))):
        b = src.batches[i]
        recs = b.records()
        j = r.randrange(len(recs))
        rec = recs[j]
        new_value = bump_version(src.kind, rec)
        if new_value is None:
            continue
        recs[j] = Record(rec.offset, rec.timestamp, rec.key, new_value, rec.headers)
        batch = encode_batch(recs, base_offset=b.base_offset, compression=b.compression,
                             timestamp_type=b.timestamp_type, partition_leader_epoch=b.partition_leader_epoch,
                             producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                             base_sequence=b.base_sequence, is_transactional=b.is_transactional,
                             max_timestamp=b.max_timestamp, last_offset=b.last_offset,
                             delete_horizon_ms=b.base_timestamp if b.has_delete_horizon else None)
        assert len(batch) == b.size, (src.path, b.position)
        lo, hi = src.bounds[i]
        data = src.data[:lo] + batch + src.data[hi:]
        cases.append(Case(f"batch {i} at {lo}: record {rec.offset} version beyond the schema", data, [(lo, hi)],
                          expect_kind="decode_error"))
        decoded = (decode_metadata_record(new_value) if src.kind == "metadata"
                   else decode_offsets_record(rec.key, new_value))
        assert decoded.error and "unsupported version" in decoded.error, decoded
        assert decoded.name not in ("Unknown", ""), decoded
    assert len(cases) >= 3
    run_cases(src, cases, tmp_path)


@pytest.fixture(scope="module", autouse=True)
def corpus_summary():
    """Print the corpus figures after the module's tests (run with ``-s`` to see them)."""
    yield
    total = sum(STATS["cases"].values())
    if not total:
        return
    lines = [f"corruption corpus: {total} damaged files, {sum(STATS['problems'].values())} problems, "
             f"{sum(CRC_BYTES.values())} bytes checksummed"]
    for name in SOURCES:
        lines.append(f"  {name:<9} {STATS['cases'][name]} damaged files, {STATS['problems'][name]} problems, "
                     f"{CRC_BYTES[name]} bytes checksummed")
    lines.append("  problem kinds: " + ", ".join(f"{k} {v}" for k, v in STATS["kinds"].most_common()))
    print("\n" + "\n".join(lines))


# --------------------------------------------------------------------------------------------
# Kafka's own dump tool on the same damage: `workbench dump --format kafka` must print its text


def dump_cases(src: Source) -> list[tuple[str, bytes, bool]]:
    """Damage on which Kafka 4.3.1's dump tool and our dump writer are expected to agree:
    (label, bytes, whether Kafka's tool stops with an exception on it)."""
    r = rng(src, "dump")
    n = len(src.batches)
    data = src.data
    out = []
    lo, hi = src.bounds[-2]
    out.append((f"truncated at {lo + (hi - lo) // 2}", data[: lo + (hi - lo) // 2], False))
    out.append((f"truncated at {lo + 5}", data[: lo + 5], False))
    for label, value, i, stops in (("0x7fffffff", 0x7FFFFFFF, r.randrange(n), False),
                                   ("past the end", len(data), r.randrange(n), False),
                                   ("13", 13, r.randrange(n), True)):
        d = bytearray(data)
        struct.pack_into(">i", d, src.bounds[i][0] + 8, value)
        out.append((f"batch {i}: length {label}", bytes(d), stops))
    for _ in range(2):
        i = r.randrange(n)
        d = bytearray(data)
        d[src.bounds[i][0] + 17 + r.randrange(4)] ^= 1 << r.randrange(8)
        out.append((f"batch {i}: CRC field flip", bytes(d), False))
    out.append(("4096 zero bytes appended", data + bytes(4096), True))
    return out


DUMP_ARGS = {"metadata": (["--cluster-metadata-decoder"], "cluster-metadata"),
             "offsets": (["--offsets-decoder"], "offsets")}


def compare_dumps(runs: dict[tuple[str, ...], list[tuple[str, Path]]]) -> tuple[list[str], int]:
    """Run ``kafka-dump-log`` once per group (decoder args + files) and diff each file with ours."""
    import difflib

    from peer.kafka import fetch
    from workbench.formats.dumptext import DumpOptions, dump_text

    kafka = fetch()
    failures = []
    total = 0
    for group, files in runs.items():
        args = [a for a in group if a.startswith("--")]
        decoder = {"--cluster-metadata-decoder": "cluster-metadata", "--offsets-decoder": "offsets"}.get(
            args[0], "none")
        result = kafka.run_tool("dump-log", [*args, "--files", ",".join(str(p) for _, p in files)], timeout=180,
                                check=False, heap="256m")
        chunks = ("\n" + result.stdout).split("\nDumping ")[1:]
        theirs = {chunk.split("\n", 1)[0]: "Dumping " + chunk for chunk in chunks}
        for label, path in files:
            total += 1
            ours = dump_text(str(path), DumpOptions(decoder=decoder, deep_iteration=True))
            kafka_text = theirs.get(str(path))
            if kafka_text is None:
                failures.append(f"{label} ({path}): Kafka printed nothing; stderr {result.stderr[-300:]}")
            elif kafka_text.rstrip("\n") != ours.rstrip("\n"):
                diff = difflib.unified_diff(kafka_text.splitlines(), ours.splitlines(), "kafka", "ours", n=0,
                                            lineterm="")
                failures.append(f"{label} ({path}):\n" + "\n".join(line[:300] for line in list(diff)[:6]))
    return failures, total


def test_kafka_dump_tool_prints_what_we_print_on_damaged_files(sources, tmp_path):
    """``kafka-dump-log`` on damaged copies of every source prints, file by file, our dump text.

    One run per source: the files on which Kafka's tool runs to the end, then one file on which
    it stops with an exception (a length below 14 or a zero-filled tail, by turns), last.
    """
    runs: dict[tuple[str, ...], list[tuple[str, Path]]] = {}
    for k, name in enumerate(SOURCES):
        src = sources[name]
        args, _ = DUMP_ARGS.get(name, (["--deep-iteration"], "none"))
        cases = dump_cases(src)
        stopping = [c for c in cases if c[2]]
        chosen = [c for c in cases if not c[2]] + [stopping[k % len(stopping)]]
        files = runs.setdefault((*args, name), [])
        for i, (label, data, _) in enumerate(chosen):
            d = tmp_path / f"{name}-{i:02d}"
            d.mkdir()
            path = d / src.path.name
            path.write_bytes(data)
            files.append((f"{name}: {label}", path))
    failures, total = compare_dumps(runs)
    print(f"\nkafka-dump-log vs our dump text: {total} damaged files, {len(runs)} Kafka runs")
    report(failures, total)


def test_kafka_dump_tool_divergences(sources, tmp_path):
    """Damage on which our dump text once differed from Kafka's; it now follows Kafka's reader.

    * a length field that swallows the next batches: Kafka prints the swallowing batch
      (``isvalid: false``) and its records, then stops with "Incorrect declared batch size"
      (uncompressed) or carries on after the declared end (compressed); we print no line for it
      and resume at the next real batch;
    * magic 7 in a v2 batch: Kafka reads it as v2 (the CRC does not cover the magic byte,
      ``isvalid: true``) and dumps the rest of the file; our text stops there;
    * codec id 6 with a valid CRC: Kafka prints the batch line up to ``deleteHorizonMs`` and dies
      ("Unknown compression type id: 6"); we print ``compresscodec: unknown`` and carry on;
    * a compressed payload that does not decompress, CRC valid: Kafka prints the batch line and
      dies ("Failed to decompress record stream"); we carry on.
    """
    name = "gzip"
    src = sources[name]
    r = rng(src, "divergence")
    n = len(src.batches)
    cases = []
    i = r.randrange(n - 3)
    d = bytearray(src.data)
    struct.pack_into(">i", d, src.bounds[i][0] + 8, src.bounds[i + 3][0] - src.bounds[i][0] - 12)
    cases.append((f"batch {i}: length swallowing three batches", bytes(d)))
    i = r.randrange(n)
    d = bytearray(src.data)
    d[src.bounds[i][0] + 16] = 7
    cases.append((f"batch {i}: magic 7", bytes(d)))
    i = r.randrange(n)
    lo, hi = src.bounds[i]
    d = bytearray(src.data)
    d[lo + 22] = (d[lo + 22] & ~7) | 6
    d[lo:hi] = with_crc(bytearray(d[lo:hi]))
    cases.append((f"batch {i}: codec 6, CRC recomputed", bytes(d)))
    d = bytearray(src.data)
    d[hi - 12] ^= 0x55
    d[lo:hi] = with_crc(bytearray(d[lo:hi]))
    cases.append((f"batch {i}: compressed payload byte {hi - 12 - lo} changed, CRC recomputed", bytes(d)))
    runs: dict[tuple[str, ...], list[tuple[str, Path]]] = {}
    for j, (label, data) in enumerate(cases):
        (tmp_path / f"{j}").mkdir()
        path = tmp_path / f"{j}" / src.path.name
        path.write_bytes(data)
        runs[("--deep-iteration", str(path))] = [(f"{name}: {label}", path)]
    failures, total = compare_dumps(runs)
    report(failures, total)
