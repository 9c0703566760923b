"""Time the careful reader on damaged segments: the wall-clock side of the tests' hang checks.

Usage::

    python benchmarks/bench_damage.py                  # 8 MiB of random bytes, sparse bogus headers
    python benchmarks/bench_damage.py --garbage-mb 64 --repeat 3

The tests (``tests/formats/test_batch_damage.py``, ``tests/formats/test_corruption_corpus.py``)
bound the reader's *work* on damaged input without a clock, by counting the bytes it runs a
checksum over; this script measures the *time* of the same reads, which depends on the machine
and its load and so is no test. Two cases, each inside a 12-batch segment written by the encoder:

* ``garbage``: ``--garbage-mb`` MiB of random bytes between batch 6 and batch 7 (the reader
  scans for the next verifiable header; the old test's bound was 20 s for 8 MiB);
* ``sparse headers``: 3000 copies of the first 40 bytes of a batch whose checksum is wrong,
  i.e. plausible headers with sane lengths (every one is a resynchronisation candidate);
* ``crafted cycles``: ``--cycles`` (300) times, then 10 and 100 times as many: a header with an
  unknown magic byte, then a plausible header (magic 2, sane fields) whose length claims 128 MiB
  that the file does not hold, then filler, 150 bytes a cycle. Before the careful reader checked
  only bytes that exist, once, each cycle cost a 128 MiB checksum (300 cycles: 7.8 s to inspect).
  The case is read by the careful reader and by the compiled scan of the ``batches`` table
  (:func:`~workbench.formats.fastscan.scan_batch_columns`, from a file): the time should grow as
  the input does.

Each case is read ``--repeat`` times; the fastest wall time and the bytes checksummed are printed.
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import workbench.formats.batch as batch_module  # noqa: E402
from peer.damage import crafted  # noqa: E402
from workbench.formats.batch import Record, encode_batch, read_batches  # noqa: E402
from workbench.formats.problems import ProblemLog  # noqa: E402

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def segment(n: int = 12, seed: int = 1) -> tuple[bytes, list[int]]:
    """``n`` batches in every codec; returns the bytes and the batch positions."""
    rnd = random.Random(seed)
    parts, positions, offset, at = [], [], 0, 0
    for i in range(n):
        recs = [Record(offset + j, 1_700_000_000_000 + i * 10 + j, b"key-%d" % rnd.randrange(100),
                       rnd.randbytes(rnd.randrange(0, 300)), []) for j in range(rnd.randrange(1, 9))]
        data = encode_batch(recs, base_offset=offset, compression=CODECS[i % 5])
        parts.append(data)
        positions.append(at)
        at += len(data)
        offset += len(recs)
    return b"".join(parts), positions


def timed_read(data: bytes, repeat: int) -> tuple[float, int, int, int]:
    """(fastest seconds, batches, problems, bytes checksummed) of reading ``data``."""
    counted = [0]
    crc32c_real, crc32_real = batch_module._crc32c, batch_module._crc32

    def crc32c_counting(b, *args):
        counted[0] += len(b)
        return crc32c_real(b, *args)

    def crc32_counting(b, *args):
        counted[0] += len(b)
        return crc32_real(b, *args)

    best = float("inf")
    for _ in range(repeat):
        counted[0] = 0
        batch_module._crc32c, batch_module._crc32 = crc32c_counting, crc32_counting
        try:
            log = ProblemLog("bench.log")
            t0 = time.perf_counter()
            batches = list(read_batches(io.BytesIO(data), "bench.log", problems=log))
            best = min(best, time.perf_counter() - t0)
        finally:
            batch_module._crc32c, batch_module._crc32 = crc32c_real, crc32_real
    return best, len(batches), len(log.problems), counted[0]


def timed_scan(data: bytes, repeat: int) -> tuple[float, int, int]:
    """(fastest seconds, batches, problems) of the compiled batch scan of ``data`` written to a file."""
    import tempfile

    from workbench.formats.fastscan import scan_batch_columns

    best = float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000.log"
        path.write_bytes(data)
        for _ in range(repeat):
            log = ProblemLog(str(path))
            t0 = time.perf_counter()
            batches = sum(len(piece["position"]) for piece in scan_batch_columns(path, str(path), problems=log))
            best = min(best, time.perf_counter() - t0)
    return best, batches, len(log.problems)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--garbage-mb", type=float, default=8.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cycles", type=int, default=300, help="crafted cycles at 1x (then 10x and 100x)")
    args = ap.parse_args(argv)
    data, positions = segment()
    garbage = random.Random(3).randbytes(int(args.garbage_mb * (1 << 20)))
    bogus = encode_batch([Record(0, 0, None, b"q" * 30, [])], base_offset=0)
    bogus = bogus[:70] + b"\xff" + bogus[71:]
    cases = {
        f"garbage ({args.garbage_mb:g} MiB)": data[: positions[6]] + garbage + data[positions[6]:],
        "sparse headers (3000)": data[: positions[3]] + bogus[:40] * 3000 + data[positions[3]:],
    }
    for scale in (1, 10, 100):
        cases[f"crafted cycles ({args.cycles * scale})"] = crafted(args.cycles * scale, data, positions[4])
    print(f"{'case':<26} {'bytes':>11} {'wall s':>8} {'batches':>8} {'problems':>9} {'checksummed':>12}"
          f" {'scan s':>8} {'scan batches':>12}")
    for label, damaged in cases.items():
        seconds, n, problems, crc_bytes = timed_read(damaged, args.repeat)
        scan_seconds, scanned, _ = timed_scan(damaged, args.repeat)
        print(f"{label:<26} {len(damaged):>11} {seconds:>8.3f} {n:>8} {problems:>9} {crc_bytes:>12}"
              f" {scan_seconds:>8.3f} {scanned:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
