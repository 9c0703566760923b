"""Throughput of the segment reader: batch headers only, and full record decoding, vs. ``cat``.

Usage::

    python benchmarks/bench_segments.py                      # writes a ~1 GiB segment to a temp dir
    python benchmarks/bench_segments.py --size-mb 256 --compression lz4 --record-bytes 200
    python benchmarks/bench_segments.py --path /data/t-0/00000000000000000000.log

The generated segment repeats a few distinct encoded batches with rewritten base offsets (the
base offset is outside the CRC), so writing it is fast and every batch stays valid. Each pass
is timed after a warm-up ``cat`` so that all passes read from the page cache; results are
printed as a small table and, with ``--json``, as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.compute as pc  # noqa: E402

from workbench.formats.batch import Record, encode_batch, read_batches  # noqa: E402
from workbench.formats.fastrecords import records_table_from_file  # noqa: E402
from workbench.formats.fastscan import scan_batch_columns  # noqa: E402
from workbench.formats.problems import ProblemLog  # noqa: E402


def write_segment(path: Path, size_bytes: int, compression: str, records_per_batch: int, record_bytes: int) -> None:
    rnd = random.Random(42)
    templates = []
    for t in range(16):
        recs = []
        for j in range(records_per_batch):
            value = bytes(rnd.getrandbits(8) for _ in range(record_bytes // 4)) * 4  # compressible-ish
            recs.append(Record(j, 1_700_000_000_000 + t * 1000 + j, b"key-%06d" % rnd.randrange(10**6), value,
                               [("trace", b"%016x" % rnd.getrandbits(64))] if j % 5 == 0 else []))
        templates.append(encode_batch(recs, base_offset=0, compression=compression, producer_id=1000,
                                      producer_epoch=0, base_sequence=0, partition_leader_epoch=3))
    written = 0
    offset = 0
    with open(path, "wb", buffering=8 << 20) as f:
        i = 0
        while written < size_bytes:
            t = templates[i % len(templates)]
            f.write(struct.pack(">q", offset))
            f.write(t[8:])
            written += len(t)
            offset += records_per_batch
            i += 1


CPU: dict[str, float] = {}


def timed(fn, name: str = ""):
    """Wall seconds and result of ``fn()``; its process CPU seconds go to ``CPU[name]``.

    On a shared machine CPU seconds are the steadier measure: wall time includes waiting for a
    core, CPU time does not (``cat`` runs in a child process, so it has none).
    """
    c0 = time.process_time()
    t0 = time.perf_counter()
    result = fn()
    CPU[name] = time.process_time() - c0
    return time.perf_counter() - t0, result


def raw_read(path: Path) -> int:
    total = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            chunk = f.read(4 << 20)
            if not chunk:
                return total
            total += len(chunk)


def cat_pass(path: Path) -> int:
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
    return path.stat().st_size


def scan_pass(path: Path, verify: bool = True) -> tuple[int, int, int]:
    """The ``batches`` table the way the workbench builds it: the fast scan (CRC checked unless ``verify=False``)."""
    log = ProblemLog(str(path))
    batches = records = 0
    for piece in scan_batch_columns(path, problems=log, verify=verify):
        batches += len(piece["position"])
        records += int(piece["record_count"].sum())
    return batches, records, len(log)


def fast_record_pass(path: Path) -> tuple[int, int, int]:
    """Every record decoded into an Arrow table (offset, timestamp, key, value, headers): the compiled decoder."""
    log = ProblemLog(str(path))
    table = records_table_from_file(path, problems=log)
    return pc.count_distinct(table["batch_position"]).as_py(), table.num_rows, len(log)


def header_pass(path: Path) -> tuple[int, int, int]:
    """The careful reader alone: one :class:`Batch` per batch, CRC checked."""
    log = ProblemLog(str(path))
    batches = records = 0
    with open(path, "rb") as f:
        for b in read_batches(f, str(path), problems=log):
            batches += 1
            records += b.record_count
    return batches, records, len(log)


def record_pass(path: Path) -> tuple[int, int, int]:
    """The pure-Python record loop: :meth:`Batch.records` on every batch (Record objects)."""
    log = ProblemLog(str(path))
    batches = records = 0
    with open(path, "rb") as f:
        for b in read_batches(f, str(path), problems=log):
            batches += 1
            records += len(b.records(log))
    return batches, records, len(log)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--path", type=Path, help="an existing .log segment (otherwise one is generated)")
    ap.add_argument("--size-mb", type=int, default=1024, help="size of the generated segment (default 1024)")
    ap.add_argument("--compression", default="none", help="codec of the generated batches (default none)")
    ap.add_argument("--records-per-batch", type=int, default=100)
    ap.add_argument("--record-bytes", type=int, default=160, help="value bytes per generated record")
    ap.add_argument("--skip-records", action="store_true", help="skip the full record decode pass")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    args = ap.parse_args(argv)

    tmp = None
    if args.path is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench-seg-")
        path = Path(tmp.name) / "00000000000000000000.log"
        secs, _ = timed(lambda: write_segment(path, args.size_mb << 20, args.compression, args.records_per_batch,
                                              args.record_bytes))
        print(f"wrote {path} ({path.stat().st_size / 2**20:.0f} MiB) in {secs:.1f} s", file=sys.stderr)
    else:
        path = args.path
    try:
        size = path.stat().st_size
        cat_pass(path)  # warm the page cache
        results: dict[str, dict[str, float]] = {}
        secs, _ = timed(lambda: cat_pass(path))
        results["cat"] = {"seconds": secs, "MiB/s": size / 2**20 / secs}
        secs, _ = timed(lambda: raw_read(path), "python read")
        results["python read"] = {"seconds": secs, "MiB/s": size / 2**20 / secs}
        secs, (nb, nr, np_) = timed(lambda: header_pass(path), "batch headers")
        results["batch headers"] = {"seconds": secs, "MiB/s": size / 2**20 / secs, "batches/s": nb / secs,
                                    "records/s": nr / secs, "batches": nb, "records": nr, "problems": np_}
        if not args.skip_records:
            secs, (nb, nr, np_) = timed(lambda: record_pass(path), "full records")
            results["full records"] = {"seconds": secs, "MiB/s": size / 2**20 / secs, "batches/s": nb / secs,
                                       "records/s": nr / secs, "batches": nb, "records": nr, "problems": np_}
        print(f"segment: {path} ({size / 2**20:.0f} MiB, codec of generated batches: "
              f"{args.compression if args.path is None else 'as found'})")
        for name, r in results.items():
            if name in CPU:
                r["cpu_seconds"] = CPU[name]
        print(f"{'pass':<15}{'seconds':>9}{'cpu s':>8}{'MiB/s':>10}{'batches/s':>13}{'records/s':>13}"
              f"{'records/cpu-s':>15}")
        for name, r in results.items():
            cpu = r.get("cpu_seconds", float("nan"))
            per_cpu = r["records"] / cpu if "records" in r and cpu == cpu and cpu > 0 else float("nan")
            print(f"{name:<15}{r['seconds']:>9.2f}{cpu:>8.2f}{r['MiB/s']:>10.0f}"
                  f"{r.get('batches/s', float('nan')):>13,.0f}{r.get('records/s', float('nan')):>13,.0f}"
                  f"{per_cpu:>15,.0f}")
        print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
        if args.json:
            print(json.dumps({"path": str(path), "bytes": size, "results": results}))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
