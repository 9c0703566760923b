"""``workbench dump`` against Kafka's ``kafka-dump-log.sh``: the commands a person types, timed.

Usage::

    python benchmarks/bench_dump.py                     # the 1 GiB segment and a 10 M-record metadata log
    python benchmarks/bench_dump.py --repeat 3          # keep the fastest of three runs per row
    python benchmarks/bench_dump.py --metadata-records 1000000 --size-mb 256

Each row runs one command of ours and the matching command of Kafka's tool on the same file, one
after the other, as child processes whose stdout is read through a pipe, hashed and dropped:

==========================  =========================================  ==========================================
row                         ours                                       Kafka's
==========================  =========================================  ==========================================
``shallow``                 ``workbench dump --format kafka F``        ``kafka-dump-log --files F``
``deep``                    ``... --format kafka --deep-iteration F``  ``... --deep-iteration --files F``
``print-data-log``          ``... --format kafka --print-data-log F``  ``... --print-data-log --files F``
``jsonl``                   ``workbench dump F`` (JSON lines)          ``... --deep-iteration --files F``
``cluster-metadata``        ``... --cluster-metadata-decoder M``       ``... --cluster-metadata-decoder --files M``
==========================  =========================================  ==========================================

``F`` is the 1 GiB segment real Kafka wrote for ``bench_vs_kafka.py`` (built once by its
:func:`write_segment_with_kafka`, then reused from ``<cache>/bench/``); ``M`` is a KRaft metadata log
of ``--metadata-records`` records written by our encoder (``synthetic_metadata.py``, reused from
``<cache>/bench/synthetic-metadata-r<N>-s<seed>/``). For every Kafka-text row the two outputs must be
byte-identical (same SHA-256), which also shows that Kafka's tool reads the synthetic log; ``jsonl``
has no Kafka counterpart and is set against the deep dump, the closest (one line per record).

Timed runs of ours only count the output bytes (hashing a gigabyte would slow the reader more
than our writer); one more, untimed run of ours gives the hash compared with Kafka's.
Reported per command: wall seconds, CPU seconds (user + system of the child and its threads) and
peak resident memory (of the command itself, from GNU ``time``); per row the ratio Kafka / ours
of wall seconds. Targets: every row >= 1, ``shallow`` and ``deep`` >= 3. Kafka's tool runs with
``kafka-run-class.sh``'s default JVM options (as in ``bench_vs_kafka.py``). Before the timed runs
each of our commands runs once on a one-batch copy, so that the compiled kernels are in numba's
cache (a first compile takes a few seconds, once per installation) and the byte code of the
workbench's modules is written, as an installed package has it (``PYTHONDONTWRITEBYTECODE`` is
dropped from the children's environment). Results go to stdout and to
``benchmarks/results/bench_dump-<UTC>.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_vs_kafka import TOPIC, bench_dir, kafka_tool_argv, machine, write_segment_with_kafka  # noqa: E402
from synthetic_metadata import write_synthetic_metadata_log  # noqa: E402

from peer.kafka import DEFAULT_VERSION, Kafka, cache_root, fetch  # noqa: E402

#: Children may write Python byte code (an installed package has it; PYTHONDONTWRITEBYTECODE, set in
#: some development shells, would make every start compile the workbench's sources again).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TARGETS = {"shallow": 3.0, "deep": 3.0, "print-data-log": 1.0, "jsonl": 1.0, "cluster-metadata": 1.0}


def log(msg: str) -> None:
    """Progress line on stderr."""
    print(f"[{datetime.now(UTC):%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


def workbench_argv(args: list[str]) -> list[str]:
    """``workbench`` as installed beside this interpreter (the console script), else ``-m workbench``."""
    script = Path(sys.executable).with_name("workbench")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "workbench", *args]


def run_child(argv: list[str], digest_output: bool = True) -> dict[str, Any]:
    """Run ``argv``; stdout read through a pipe, counted (and hashed). Wall and CPU seconds, peak RSS.

    Hashing a gigabyte costs the reader (this process) seconds: runs that time a fast writer only
    count the bytes (``digest_output=False``), and a separate run gives the hash.

    The peak RSS is the one GNU ``time`` reports for its child (``/usr/bin/time``, when present):
    the ``ru_maxrss`` this process would see for a child it forked itself includes pages of this
    process's own memory, copied at the fork.
    """
    gnu_time = shutil.which("time") if Path("/usr/bin/time").exists() else None
    with tempfile.NamedTemporaryFile("r", suffix=".time") as rss_file:
        cmd = [gnu_time, "-f", "%M", "-o", rss_file.name, *argv] if gnu_time else argv
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=CHILD_ENV)
        digest = hashlib.sha256()
        total = 0
        assert proc.stdout is not None
        while True:
            chunk = proc.stdout.read(1 << 20)
            if not chunk:
                break
            if digest_output:
                digest.update(chunk)
            total += len(chunk)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        secs = time.perf_counter() - t0
        text = Path(rss_file.name).read_text().strip().splitlines() if gnu_time else []
    rss_kib = int(text[-1]) if text and text[-1].isdigit() else usage.ru_maxrss
    return {
        "seconds": secs,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": rss_kib / 1024,
        "stdout_bytes": total,
        "sha256": digest.hexdigest() if digest_output else None,
        "exit": proc.returncode,
    }


def kafka_segment(kafka: Kafka, size_mb: int, record_bytes: int) -> Path:
    """The Kafka-written segment of ``bench_vs_kafka.py`` (written there once, reused here)."""
    target = bench_dir(size_mb, record_bytes, kafka.version)
    found = sorted((target / f"{TOPIC}-0").glob("*.log")) if (target / ".complete").exists() else []
    if found:
        return found[0]
    log(f"writing the {size_mb} MiB segment with Kafka {kafka.version} (a few minutes)")
    return write_segment_with_kafka(kafka, target, size_mb, record_bytes)


def metadata_log(records: int, seed: int) -> tuple[Path, dict[str, Any]]:
    """The synthetic metadata log (written once, reused)."""
    target = cache_root() / "bench" / f"synthetic-metadata-r{records}-s{seed}"
    path = target / "__cluster_metadata-0" / "00000000000000000000.log"
    done = target / "written.json"
    if done.exists() and path.exists():
        return path, json.loads(done.read_text(encoding="utf-8"))
    log(f"writing a {records:,}-record metadata log with our encoder")
    summary = write_synthetic_metadata_log(path, records, seed)
    done.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return path, summary


def first_batch_copy(path: Path, into: Path) -> Path:
    """A copy of ``path``'s first batch (same directory and file name), for warm-up runs."""
    import struct

    with open(path, "rb") as f:
        head = f.read(12)
        length = struct.unpack(">i", head[8:12])[0]
        data = head + f.read(length)
    target = into / path.parent.name / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def rows(segment: Path, meta: Path) -> list[tuple[str, Path, list[str], list[str]]]:
    """``(row, file, our arguments, Kafka's arguments)`` (the file goes last)."""
    return [
        ("shallow", segment, ["dump", "--format", "kafka"], []),
        ("deep", segment, ["dump", "--format", "kafka", "--deep-iteration"], ["--deep-iteration"]),
        ("print-data-log", segment, ["dump", "--format", "kafka", "--print-data-log"], ["--print-data-log"]),
        ("jsonl", segment, ["dump"], ["--deep-iteration"]),
        (
            "cluster-metadata",
            meta,
            ["dump", "--format", "kafka", "--cluster-metadata-decoder"],
            ["--cluster-metadata-decoder"],
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    """Build or reuse the inputs, time every row, print the table and write JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="size of the Kafka-written segment (default 1024)")
    ap.add_argument("--record-bytes", type=int, default=100, help="its record size (default 100)")
    ap.add_argument("--metadata-records", type=int, default=10_000_000, help="records of the metadata log")
    ap.add_argument("--seed", type=int, default=0, help="seed of the metadata log")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each command; the fastest is kept")
    ap.add_argument("--only", action="append", help="run only these rows (repeatable)")
    ap.add_argument("--version", default=DEFAULT_VERSION, help=f"Kafka version (default {DEFAULT_VERSION})")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="directory for the JSON result")
    args = ap.parse_args(argv)

    kafka = fetch(args.version)
    segment = kafka_segment(kafka, args.size_mb, args.record_bytes)
    meta, meta_summary = metadata_log(args.metadata_records, args.seed)
    chosen = [r for r in rows(segment, meta) if not args.only or r[0] in args.only]
    for path in {r[1] for r in chosen}:  # page cache
        with open(path, "rb") as f:
            while f.read(16 << 20):
                pass
    warm = Path(tempfile.mkdtemp(prefix="bench-dump-warm-"))
    try:
        for name, path, ours, _ in chosen:  # numba's cache, so that no timed run compiles
            t = run_child(workbench_argv([*ours, str(first_batch_copy(path, warm))]))
            log(f"warm-up {name}: {t['seconds']:.2f} s")
    finally:
        shutil.rmtree(warm, ignore_errors=True)

    load_before = os.getloadavg()
    results: dict[str, dict[str, Any]] = {}
    for name, path, ours, theirs in chosen:
        best: dict[str, dict[str, Any]] = {}
        ours_cmd = workbench_argv([*ours, str(path)])
        for _ in range(args.repeat):
            for who, cmd in (("ours", ours_cmd), ("kafka", kafka_tool_argv(kafka, [*theirs, "--files", str(path)]))):
                r = run_child(cmd, digest_output=who == "kafka")
                log(
                    f"{name} {who}: {r['seconds']:.2f} s wall, {r['cpu_seconds']:.2f} s cpu, "
                    f"{r['peak_rss_mib']:.0f} MiB, {r['stdout_bytes']:,} bytes, exit {r['exit']}"
                )
                if who not in best or r["seconds"] < best[who]["seconds"]:
                    best[who] = r
        check = run_child(ours_cmd)  # the same command again, its output hashed (not timed)
        best["ours"]["sha256"] = check["sha256"]
        row = {
            "file": str(path),
            "bytes": path.stat().st_size,
            "ours": best["ours"],
            "kafka": best["kafka"],
            "ratio_wall": best["kafka"]["seconds"] / best["ours"]["seconds"],
            "ratio_cpu": best["kafka"]["cpu_seconds"] / best["ours"]["cpu_seconds"],
            "identical": None if name == "jsonl" else best["ours"]["sha256"] == best["kafka"]["sha256"],
            "target": TARGETS[name],
        }
        row["met"] = row["ratio_wall"] >= row["target"] and row["identical"] is not False
        results[name] = row
    load_after = os.getloadavg()

    print(
        f"segment: {segment} ({segment.stat().st_size / 2**20:.0f} MiB, written by Kafka {kafka.version}); "
        f"metadata log: {meta} ({meta_summary['records']:,} records, {meta.stat().st_size / 2**20:.0f} MiB)"
    )
    print(
        f"{'row':<18}{'ours s':>8}{'cpu':>7}{'MiB':>6}{'kafka s':>9}{'cpu':>7}{'MiB':>6}"
        f"{'ratio':>8}{'target':>8}  identical"
    )
    for name, r in results.items():
        o, k = r["ours"], r["kafka"]
        same = "n/a" if r["identical"] is None else ("yes" if r["identical"] else "NO")
        print(
            f"{name:<18}{o['seconds']:>8.2f}{o['cpu_seconds']:>7.2f}{o['peak_rss_mib']:>6.0f}"
            f"{k['seconds']:>9.2f}{k['cpu_seconds']:>7.2f}{k['peak_rss_mib']:>6.0f}"
            f"{r['ratio_wall']:>7.1f}x{r['target']:>7.0f}x  {same}"
        )
    print(
        f"load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
        f"after {' '.join(f'{x:.2f}' for x in load_after)} on {os.cpu_count()} cores"
    )
    stamp = datetime.now(UTC)
    report = {
        "date": stamp.isoformat(timespec="seconds"),
        "kafka_version": kafka.version,
        "machine": machine(),
        "segment": str(segment),
        "metadata_log": meta_summary,
        "repeat": args.repeat,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "rows": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"bench_dump-{stamp:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0 if all(r["identical"] is not False for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
