"""Our segment reader against Kafka's own ``kafka-dump-log`` on a segment that real Kafka wrote.

Usage::

    python benchmarks/bench_vs_kafka.py                 # writes the segment once, then times
    python benchmarks/bench_vs_kafka.py --size-mb 256   # a smaller segment (its own cache entry)
    python benchmarks/bench_vs_kafka.py --path X.log    # time an existing segment instead

The segment is written by a single-node KRaft cluster (combined controller+broker, started
through :mod:`peer.cluster` on 127.0.0.1) with Kafka's producer performance tool: records of
``--record-bytes`` bytes, ``batch.size`` 64 KiB, ``linger.ms`` 50, no compression, one
partition whose ``segment.bytes`` (2 GiB - 1) keeps everything in one segment. The partition
directory is kept under ``<cache>/bench/`` (``<cache>`` as in :func:`peer.kafka.cache_root`) and
reused by later runs.

Passes, timed one after the other on the same file after a warm-up ``cat`` (so every pass
reads from the page cache):

``cat``
    one ``cat FILE > /dev/null``;
``batches``
    :func:`workbench.formats.batch.read_batches` over the file: the header table, CRC checked;
``records``
    the same plus :meth:`Batch.records` on every batch (full record decode);
``dump-log``
    ``kafka-dump-log --files FILE`` (one line per batch; no deep iteration), stdout to /dev/null;
``dump-log deep``
    ``kafka-dump-log --deep-iteration --files FILE`` (one line per record), stdout to /dev/null.

Kafka's tool runs with the JVM options of ``kafka-run-class.sh`` (``-Xmx256M -server
-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
-XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15``), i.e. as an operator would run it,
not with the peer's quick-start flags. Wall seconds and CPU seconds (own process, or children
for ``cat`` and the JVM) are both reported; on a shared machine CPU seconds are the steadier
figure. Results go to stdout as a table and to ``benchmarks/results/bench_vs_kafka-<UTC>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_segments import cat_pass, fast_record_pass, header_pass, record_pass, scan_pass  # noqa: E402

from peer.cluster import Cluster  # noqa: E402
from peer.kafka import DEFAULT_VERSION, Kafka, cache_root, fetch, write_log_config  # noqa: E402
from workbench.formats.batch import read_batches  # noqa: E402

TOPIC = "bench"
SEGMENT_BYTES = 2**31 - 1
#: JVM options of Kafka's ``bin/kafka-run-class.sh`` when nothing overrides them.
KAFKA_RUN_CLASS_JVM = (
    "-Xmx256M",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
TARGETS = {
    "batches_vs_dump_shallow": 20.0,  # dump-log seconds / batches seconds, at least
    "batches_vs_cat": 2.0,  # batches seconds / cat seconds, at most
    "headers_only_vs_dump_shallow": 20.0,
    "headers_only_vs_cat": 2.0,
    "records_vs_dump_deep": 2.0,  # our records/s / dump-log --deep-iteration records/s, at least
}


def log(msg: str) -> None:
    """Progress line on stderr."""
    print(f"[{datetime.now(UTC):%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


def bench_dir(size_mb: int, record_bytes: int, version: str) -> Path:
    """Directory of the cached Kafka-written segment for these parameters."""
    return cache_root() / "bench" / f"kafka-{version}-{size_mb}MiB-r{record_bytes}-none"


def write_segment_with_kafka(kafka: Kafka, target: Path, size_mb: int, record_bytes: int) -> Path:
    """Have real Kafka write one segment of about ``size_mb`` MiB; return the ``.log`` path.

    A single combined KRaft node is started under ``target/work``, the producer performance
    tool sends ``size_mb`` MiB worth of records, the node is stopped cleanly and the partition
    directory is moved to ``target/bench-0``. A ``.complete`` marker written last makes the
    result reusable.
    """
    work = target / "work"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    per_record = record_bytes + 9  # v2 record framing of a null-key record, headers none (approx.)
    records = (size_mb << 20) // per_record
    started = time.monotonic()
    with Cluster(kafka, work, "bench", controllers=1, brokers=0, combined=True, jmx=False, heap="768m",
                 settings={"log.segment.bytes": str(SEGMENT_BYTES), "log.retention.ms": "-1",
                           "log.retention.bytes": "-1", "num.io.threads": "2"}) as cluster:
        cluster.start()
        bs = cluster.bootstrap
        kafka.run_tool("topics", ["--bootstrap-server", bs, "--create", "--topic", TOPIC, "--partitions", "1",
                                  "--replication-factor", "1", "--config", f"segment.bytes={SEGMENT_BYTES}",
                                  "--config", "retention.ms=-1", "--config", "retention.bytes=-1"], timeout=120)
        log(f"producing {records:,} records of {record_bytes} bytes to {TOPIC} on {bs}")
        result = kafka.run_tool(
            "producer-perf",
            ["--topic", TOPIC, "--num-records", str(records), "--record-size", str(record_bytes),
             "--throughput", "-1", "--producer-props", f"bootstrap.servers={bs}", "acks=1",
             "batch.size=65536", "linger.ms=50", "compression.type=none", "buffer.memory=67108864"],
            timeout=1800, heap="512m",
        )
        producer_summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
        log(f"producer: {producer_summary}")
        cluster.stop()
    part = work / "node-1" / "logs" / f"{TOPIC}-0"
    segs = sorted(part.glob("*.log"))
    if len(segs) != 1:
        raise RuntimeError(f"expected one segment in {part}, found {[s.name for s in segs]}")
    (target / f"{TOPIC}-0").parent.mkdir(parents=True, exist_ok=True)
    part.rename(target / f"{TOPIC}-0")
    shutil.rmtree(work, ignore_errors=True)
    info = {"kafka_version": kafka.version, "records": records, "record_bytes": record_bytes,
            "producer": producer_summary, "seconds": round(time.monotonic() - started, 1)}
    (target / "written.json").write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    (target / ".complete").write_text("done\n", encoding="utf-8")
    return target / f"{TOPIC}-0" / segs[0].name


def kafka_tool_argv(kafka: Kafka, args: list[str]) -> list[str]:
    """``kafka-dump-log`` as ``kafka-run-class.sh`` would start it (default JVM options)."""
    logs = write_log_config(cache_root() / "log-config", "tool")
    return ["java", *KAFKA_RUN_CLASS_JVM, f"-Dlog4j2.configurationFile={logs / 'log4j2.yaml'}",
            f"-Dlog4j.configuration=file:{logs / 'log4j.properties'}", "-cp", kafka.classpath,
            kafka.tool_class("dump-log"), *args]


def timed_child(argv: list[str]) -> tuple[float, float, int]:
    """Run ``argv`` with stdout to /dev/null; wall seconds, child CPU seconds and stdout bytes.

    Stdout is counted through a pipe (not kept) so that the size of the tool's output is known.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=devnull)
        total = 0
        assert proc.stdout is not None
        while True:
            chunk = proc.stdout.read(1 << 20)
            if not chunk:
                break
            total += len(chunk)
        code = proc.wait()
    secs = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise RuntimeError(f"{' '.join(argv[-4:])} exited {code}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return secs, cpu, total


def timed_self(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall seconds, own process CPU seconds and the result of ``fn()``."""
    c0 = time.process_time()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def run_passes(path: Path, kafka: Kafka, repeat: int, python_records: bool = True) -> dict[str, dict[str, Any]]:
    """Time every pass ``repeat`` times on ``path``; keep the fastest run of each (by wall time).

    The compiled kernels are loaded (from numba's on-disk cache, or compiled on a first run) by a
    warm-up on the segment's first batch; that one-off cost is reported as ``kernel load``.
    """
    size = path.stat().st_size
    cat_pass(path)  # warm the page cache
    results: dict[str, dict[str, Any]] = {}

    def keep(name: str, secs: float, cpu: float, extra: dict[str, Any]) -> None:
        row = {"seconds": secs, "cpu_seconds": cpu, "MiB/s": size / 2**20 / secs, **extra}
        if name not in results or secs < results[name]["seconds"]:
            results[name] = row
        log(f"{name}: {secs:.2f} s wall, {cpu:.2f} s cpu")

    with open(path, "rb") as f:  # the JVM's fixed cost: the same tool on the first batch only
        first = next(read_batches(f, str(path)))
    tiny_dir = Path(tempfile.mkdtemp(prefix="bench-first-batch-"))
    tiny = tiny_dir / path.name
    tiny.write_bytes(bytes(first.data or b""))
    secs, cpu, _ = timed_self(lambda: (scan_pass(tiny), scan_pass(tiny, verify=False), fast_record_pass(tiny)))
    results["kernel load"] = {"seconds": secs, "cpu_seconds": cpu, "MiB/s": 0.0}
    log(f"kernel load (numba cache or compile): {secs:.2f} s")
    for _ in range(repeat):
        secs, cpu, out = timed_child(kafka_tool_argv(kafka, ["--files", str(tiny)]))
        keep("dump-log 1 batch", secs, cpu, {"stdout_bytes": out})
        secs, cpu, _out = timed_child(["cat", str(path)])
        keep("cat", secs, cpu, {})
        secs, cpu, (nb, nr, npr) = timed_self(lambda: scan_pass(path))
        keep("batches", secs, cpu, {"batches": nb, "records": nr, "problems": npr, "batches/s": nb / secs})
        secs, cpu, (nb, nr, npr) = timed_self(lambda: scan_pass(path, verify=False))
        keep("batches headers only", secs, cpu, {"batches": nb, "records": nr, "problems": npr,
                                                 "batches/s": nb / secs})
        secs, cpu, (nb, nr, npr) = timed_self(lambda: header_pass(path))
        keep("batches careful", secs, cpu, {"batches": nb, "records": nr, "problems": npr, "batches/s": nb / secs})
        secs, cpu, (nb, nr, npr) = timed_self(lambda: fast_record_pass(path))
        keep("records", secs, cpu, {"batches": nb, "records": nr, "problems": npr, "records/s": nr / secs})
        if python_records:
            secs, cpu, (nb, nr, npr) = timed_self(lambda: record_pass(path))
            keep("records python", secs, cpu, {"batches": nb, "records": nr, "problems": npr, "records/s": nr / secs})
        secs, cpu, out = timed_child(kafka_tool_argv(kafka, ["--files", str(path)]))
        keep("dump-log", secs, cpu, {"stdout_bytes": out, "batches/s": nb / secs})
        secs, cpu, out = timed_child(kafka_tool_argv(kafka, ["--deep-iteration", "--files", str(path)]))
        keep("dump-log deep", secs, cpu, {"stdout_bytes": out, "records/s": nr / secs})
    shutil.rmtree(tiny_dir, ignore_errors=True)
    return results


def ratios(results: dict[str, dict[str, Any]], key: str) -> dict[str, float]:
    """The three target ratios, on wall seconds (``key='seconds'``) or CPU seconds."""
    nr = results["records"]["records"]
    return {
        "batches_vs_dump_shallow": results["dump-log"][key] / results["batches"][key],
        "batches_vs_cat": results["batches"][key] / results["cat"][key],
        "records_vs_dump_deep": (nr / results["records"][key]) / (nr / results["dump-log deep"][key]),
        "headers_only_vs_dump_shallow": results["dump-log"][key] / results["batches headers only"][key],
        "headers_only_vs_cat": results["batches headers only"][key] / results["cat"][key],
    }


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    return {"cores": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "platform": platform.platform(), "java": java[0] if java else "",
            "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}


def main(argv: list[str] | None = None) -> int:
    """Write (or reuse) the Kafka segment, time every pass, print the table and write JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--path", type=Path, help="an existing .log segment (skips writing one with Kafka)")
    ap.add_argument("--size-mb", type=int, default=1024, help="size of the Kafka-written segment (default 1024)")
    ap.add_argument("--record-bytes", type=int, default=100, help="producer record size (default 100)")
    ap.add_argument("--skip-python-records", action="store_true",
                    help="leave out the pure-Python record loop (Batch.records), the slowest pass")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each pass; the fastest is kept (default 1)")
    ap.add_argument("--version", default=DEFAULT_VERSION, help=f"Kafka version (default {DEFAULT_VERSION})")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="directory for the JSON result")
    args = ap.parse_args(argv)

    kafka = fetch(args.version)
    if args.path is not None:
        path = args.path
    else:
        target = bench_dir(args.size_mb, args.record_bytes, args.version)
        found = sorted((target / f"{TOPIC}-0").glob("*.log")) if (target / ".complete").exists() else []
        if found:
            path = found[0]
            log(f"reusing {path}")
        else:
            path = write_segment_with_kafka(kafka, target, args.size_mb, args.record_bytes)
    size = path.stat().st_size
    load_before = os.getloadavg()
    results = run_passes(path, kafka, args.repeat, python_records=not args.skip_python_records)
    load_after = os.getloadavg()
    wall, cpu = ratios(results, "seconds"), ratios(results, "cpu_seconds")

    print(f"segment: {path} ({size / 2**20:.0f} MiB, {results['records']['batches']:,} batches, "
          f"{results['records']['records']:,} records, written by Kafka {kafka.version})")
    print(f"{'pass':<22}{'wall s':>9}{'cpu s':>9}{'MiB/s':>9}{'batches/s':>13}{'records/s':>13}")
    nb, nr = results["records"]["batches"], results["records"]["records"]
    for name, r in results.items():
        if name == "kernel load":
            print(f"{name:<24}{r['seconds']:>7.2f}{r['cpu_seconds']:>9.2f}   (numba kernels: cache load or compile)")
            continue
        if name == "dump-log 1 batch":
            print(f"{name:<24}{r['seconds']:>7.2f}{r['cpu_seconds']:>9.2f}   (JVM start-up and one batch)")
            continue
        print(f"{name:<22}{r['seconds']:>9.2f}{r['cpu_seconds']:>9.2f}{r['MiB/s']:>9.0f}"
              f"{nb / r['seconds']:>13,.0f}{nr / r['seconds']:>13,.0f}")
    print(f"{'ratio':<26}{'target':>10}{'wall':>9}{'cpu':>9}")
    names = {"batches_vs_dump_shallow": "dump-log / batches", "batches_vs_cat": "batches / cat",
             "headers_only_vs_dump_shallow": "dump-log / headers only", "headers_only_vs_cat": "headers only / cat",
             "records_vs_dump_deep": "records/s vs deep dump"}
    for key, label in names.items():
        target_text = f"<= {TARGETS[key]:g}" if key.endswith("_vs_cat") else f">= {TARGETS[key]:g}"
        print(f"{label:<26}{target_text:>10}{wall[key]:>8.1f}x{cpu[key]:>8.1f}x")
    print(f"load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
          f"after {' '.join(f'{x:.2f}' for x in load_after)} on {os.cpu_count()} cores")

    stamp = datetime.now(UTC)
    report = {
        "date": stamp.isoformat(timespec="seconds"), "path": str(path), "bytes": size, "batches": nb,
        "records": nr, "kafka_version": kafka.version, "machine": machine(),
        "load_average_before": load_before, "load_average_after": load_after,
        "results": results, "ratios_wall": wall, "ratios_cpu": cpu, "targets": TARGETS,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"bench_vs_kafka-{stamp:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
