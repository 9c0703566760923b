"""ISR analysis at cluster scale: millions of KRaft metadata records on 2 cores, against Kafka's own replay.

Usage::

    python benchmarks/bench_metadata_scale.py                    # 1, 2, 5 and 10 million records
    python benchmarks/bench_metadata_scale.py --sizes 1,2 --seed 0
    python benchmarks/bench_metadata_scale.py --sizes 10 --skip-dump

For each size, the synthetic ISR-churn log of ``benchmarks/synthetic_metadata.py`` (1,000 topics x
10 partitions, replicas [1, 2, 3], ``min.insync.replicas=2``, then batches of 100 records: 70 %
``PartitionChangeRecord``, 30 % ``NoOpRecord``) is written once under
``<cache>/bench/metadata-<millions>M-seed<seed>/`` (``<cache>`` as in :func:`peer.kafka.cache_root`)
as a one-node bundle, and Kafka's dump tool (``kafka-dump-log --cluster-metadata-decoder``) is run
over it once to check that Kafka reads every record. Then, per size:

``decode``
    the formats layer alone, in this process on one core: :func:`workbench.formats.fastmetadata.
    metadata_batches` over the file (records/s per core);
``spark``
    in a fresh child process (its own JVM, ``local[2]``; the session start is not timed), the public
    API as the incident report notebook calls it: ``workbench.load`` and the ``metadata`` table built
    (the registry's Parquet copy of a large log: the whole decode), ``isr.partition_states`` (from 1 M
    partition records it replays at once and keeps the intervals as Parquet: ``states_plan``), the
    intervals counted (``states``), ``isr.under_min_isr_counts`` and ``isr.partition_summary`` (both
    ``toPandas()``). Wall and CPU seconds (the whole process tree:
    Python driver, driver JVM, Python workers) per stage; peak resident memory of the driver JVM,
    of the Python driver and of the Python workers, sampled every 0.2 s from ``/proc``;
``shell``
    Kafka 4.3.1's ``kafka-metadata-shell --snapshot FILE ls /image`` (MetadataShell replays the whole
    file before it runs a command), with ``kafka-run-class.sh``'s JVM options but a 2 GiB heap
    (``--shell-heap``: its default 256 MiB runs out at 10 M records), JVM start included; then the
    shell's image (``tree /image/topics``) against the final state of every
    partition in our timeline: leader, ISR, replicas, ELR.

Results: a table on stdout and ``benchmarks/results/bench_metadata_scale-<UTC>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_vs_kafka import machine  # noqa: E402
from synthetic_metadata import write_synthetic_metadata_log  # noqa: E402

TARGET_SECONDS_10M = 60.0
TARGET_SCALING = 2.2
TARGET_VS_SHELL = 5.0
#: Seconds given to each kafka-metadata-shell run (a shell out of heap hangs rather than exits).
SHELL_TIMEOUT = 600.0
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def log(msg: str) -> None:
    """Progress line on stderr."""
    print(f"[{datetime.now(UTC):%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------
# the process tree: CPU seconds and resident memory, from /proc


def _proc(pid: int) -> tuple[int, list[str]]:
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[1]), rest


def tree(root: int) -> list[int]:
    """``root`` and all its descendants."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                children.setdefault(_proc(int(name))[0], []).append(int(name))
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root``'s process tree (live processes and their reaped children)."""
    total = 0.0
    for pid in tree(root):
        try:
            f = _proc(pid)[1]
            total += sum(int(x) for x in f[11:15]) / _TICK
        except OSError:
            pass
    return total


def _kind(pid: int, root: int) -> str:
    if pid == root:
        return "python_driver"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return "other"
    if "java" in cmd.split(" ")[0]:
        return "jvm"
    if "python" in cmd:
        return "python_workers"
    return "other"


class MemorySampler:
    """Peak resident memory of a process tree by kind (driver JVM, Python driver, Python workers)."""

    def __init__(self, root: int, every: float = 0.2) -> None:
        self.root, self.every = root, every
        self.peak: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            now: dict[str, int] = {}
            for pid in tree(self.root):
                try:
                    with open(f"/proc/{pid}/statm") as f:
                        rss = int(f.read().split()[1]) * _PAGE
                except OSError:
                    continue
                kind = _kind(pid, self.root)
                now[kind] = now.get(kind, 0) + rss
            now["total"] = sum(now.values())
            for k, v in now.items():
                self.peak[k] = max(self.peak.get(k, 0), v)
            self._stop.wait(self.every)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ------------------------------------------------------------------------------------------------
# the log


def bundle_dir(millions: float, seed: int) -> Path:
    """The cached one-node bundle of a size."""
    from peer.kafka import cache_root

    return cache_root() / "bench" / f"metadata-{millions:g}M-seed{seed}"


def segment_of(bundle: Path) -> Path:
    return bundle / "nodes" / "1" / "logs" / "__cluster_metadata-0" / "00000000000000000000.log"


def ensure_log(millions: float, seed: int) -> tuple[Path, dict[str, Any]]:
    """Write the synthetic bundle once (reused while ``.complete`` is there)."""
    bundle = bundle_dir(millions, seed)
    if (bundle / ".complete").exists():
        return bundle, json.loads((bundle / "written.json").read_text())
    records = int(round(millions * 1_000_000))
    log(f"writing {records:,} records to {bundle}")
    summary = write_synthetic_metadata_log(segment_of(bundle), records, seed)
    (bundle / "nodes" / "1" / "logs" / "meta.properties").write_text("#\nnode.id=1\nversion=1\ncluster.id=bench\n")
    (bundle / "written.json").write_text(json.dumps(summary, indent=1) + "\n")
    (bundle / ".complete").write_text("done\n")
    return bundle, summary


def dump_check(bundle: Path, kafka: Any) -> dict[str, Any]:
    """Kafka's dump tool over the log, once: its record lines counted, and whether it exited 0."""
    stamp = bundle / "dump.json"
    if stamp.exists():
        return json.loads(stamp.read_text())
    from bench_vs_kafka import kafka_tool_argv

    log(f"kafka-dump-log --cluster-metadata-decoder over {segment_of(bundle)}")
    argv = kafka_tool_argv(kafka, ["--cluster-metadata-decoder", "--files", str(segment_of(bundle))])
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    records = payloads = 0
    for line in proc.stdout:
        if line.startswith(b"| offset:"):
            records += 1
            payloads += b" payload: {" in line
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    code = proc.wait()
    result = {"exit_code": code, "record_lines": records, "decoded_payloads": payloads,
              "seconds": round(time.perf_counter() - t0, 1), "stderr_tail": err[-500:]}
    stamp.write_text(json.dumps(result, indent=1) + "\n")
    return result


# ------------------------------------------------------------------------------------------------
# the passes


def decode_pass(segment: Path) -> dict[str, Any]:
    """The formats layer on one core: every record into typed Arrow columns."""
    from workbench.formats.batch import read_batches
    from workbench.formats.fastmetadata import metadata_batches
    from workbench.formats.problems import ProblemLog

    with open(segment, "rb") as f:  # kernels loaded (numba cache) before timing
        first = next(read_batches(f, str(segment)))
    list(metadata_batches([first]))
    c0, t0 = time.process_time(), time.perf_counter()
    rows = 0
    log_ = ProblemLog(str(segment))
    with open(segment, "rb") as f:
        for b in metadata_batches(read_batches(f, str(segment), problems=log_), log_):
            rows += b.num_rows
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"rows": rows, "seconds": wall, "cpu_seconds": cpu, "records_per_s": rows / wall,
            "records_per_cpu_s": rows / cpu, "problems": len(log_.problems)}


def child(bundle: Path, out: Path) -> None:
    """The Spark run (in its own process, so that its memory is its own)."""
    from pyspark.sql import functions as F

    import workbench
    from workbench import classarchive
    from workbench.analysis import isr

    me = os.getpid()
    _options, archive = classarchive.session_options()  # the driver's class archive, if compile recorded one
    t0 = time.perf_counter()
    spark = workbench.session("local[2]")
    session_seconds = time.perf_counter() - t0
    stages: dict[str, dict[str, float]] = {}
    results: dict[str, Any] = {}

    def stage(name: str, fn: Any) -> Any:
        c, t = tree_cpu(me), time.perf_counter()
        value = fn()
        stages[name] = {"seconds": time.perf_counter() - t, "cpu_seconds": tree_cpu(me) - c}
        log(f"  {name}: {stages[name]['seconds']:.1f} s wall, {stages[name]['cpu_seconds']:.1f} s cpu")
        return value

    with MemorySampler(me) as memory:
        tables = stage("load", lambda: workbench.load(workbench.open_bundle(bundle), spark))
        metadata = stage("decode", lambda: tables.metadata)  # the log decoded once (a Parquet copy at this size)
        results["records"] = metadata.count()
        states = stage("states_plan", lambda: isr.partition_states(metadata))
        results["intervals"] = stage("states", states.count)
        results["count_rows"] = len(stage("counts", lambda: isr.under_min_isr_counts(states).toPandas()))
        results["summary_rows"] = len(stage("summary", lambda: isr.partition_summary(states).toPandas()))
    final = states.where(F.col("end_reason") == "log_end").select("topic", "topic_id", "partition", "leader", "isr",
                                                                   "replicas", "elr").collect()
    results["final"] = {f"{r.topic_id}/{r.partition}": [r.topic, r.leader, list(r.isr), list(r.replicas),
                                                         list(r.elr or [])] for r in final}
    results["problems"] = tables.problems.count()
    spark.stop()
    out.write_text(json.dumps({"session_seconds": session_seconds, "class_archive": archive and str(archive),
                               "stages": stages, "memory": memory.peak,
                               **results}) + "\n")


def spark_pass(bundle: Path) -> dict[str, Any]:
    """Run :func:`child` in a fresh Python process; its measurements."""
    out = bundle / f"spark-{os.getpid()}.json"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    subprocess.run([sys.executable, __file__, "--child", str(bundle), "--child-out", str(out)], check=True, env=env)
    data = json.loads(out.read_text())
    out.unlink()
    stages = data["stages"]
    data["total_seconds"] = sum(s["seconds"] for s in stages.values())
    data["total_cpu_seconds"] = sum(s["cpu_seconds"] for s in stages.values())
    return data


def shell_jvm(heap: str | None) -> tuple[str, ...]:
    """``kafka-run-class.sh``'s JVM options, with ``-Xmx`` set to ``heap`` (None: its default, 256 MiB)."""
    from peer.metadata_shell import KAFKA_RUN_CLASS_JVM

    if not heap:
        return KAFKA_RUN_CLASS_JVM
    return tuple(f"-Xmx{heap}" if o.startswith("-Xmx") else o for o in KAFKA_RUN_CLASS_JVM)


def shell_pass(segment: Path, kafka: Any, ours: dict[str, list], heap: str | None = None) -> dict[str, Any]:
    """Kafka's replay timed, and its image compared with our final states."""
    from peer.errors import ToolError
    from peer.metadata_shell import image_partitions, timed_replay

    try:
        seconds, cpu = timed_replay(kafka, segment, timeout=SHELL_TIMEOUT, jvm=shell_jvm(heap))
        image = image_partitions(kafka, segment, timeout=SHELL_TIMEOUT, jvm=shell_jvm(heap))
    except ToolError as exc:  # the shell's default heap (-Xmx256M) runs out at 10 M records
        log(f"kafka-metadata-shell failed: {str(exc)[-400:]}")
        return {"failed": str(exc)[-2000:]}
    theirs = {f"{t}/{p}": [v["name"], v["leader"], v["isr"], v["replicas"], v["elr"]]
              for (t, p), v in image.partitions.items()}
    differ = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
    return {"seconds": seconds, "cpu_seconds": cpu, "image_seconds": image.seconds, "partitions": len(theirs),
            "equal": not differ, "differing_partitions": len(differ), "first_differences": differ[:5]}


# ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Write (or reuse) the logs, run every pass, print the table and write JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,2,5,10", help="millions of records, comma-separated (default 1,2,5,10)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-dump", action="store_true", help="do not run Kafka's dump tool over new logs")
    ap.add_argument("--skip-shell", action="store_true", help="do not run kafka-metadata-shell")
    ap.add_argument("--shell-heap", default="2G",
                    help="kafka-metadata-shell's -Xmx (default 2G: its own default, 256M, runs out at 10 M records; "
                         "'' keeps it)")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="directory for the JSON result")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        child(args.child, args.child_out)
        return 0

    from peer.kafka import fetch

    kafka = fetch("4.3.1")
    sizes = [float(x) for x in args.sizes.split(",") if x.strip()]
    load_before = os.getloadavg()
    runs = []
    for millions in sizes:
        bundle, written = ensure_log(millions, args.seed)
        segment = segment_of(bundle)
        dump = None if args.skip_dump else dump_check(bundle, kafka)
        log(f"{millions:g} M: decode pass")
        decode = decode_pass(segment)
        log(f"{millions:g} M: spark pass ({decode['records_per_s'] / 1e6:.2f} M records/s decode)")
        spark = spark_pass(bundle)
        final = spark.pop("final")
        shell = None
        if not args.skip_shell:
            log(f"{millions:g} M: kafka-metadata-shell")
            shell = shell_pass(segment, kafka, final, args.shell_heap)
        runs.append({"millions": millions, "records": written["records"], "bytes": written["bytes"],
                     "load_average": os.getloadavg(), "dump": dump, "decode": decode, "spark": spark,
                     "shell": shell})
    load_after = os.getloadavg()

    print(f"{'records':>11} {'decode M/s':>10} {'load s':>7} {'states s':>8} {'counts s':>8} {'summary s':>9} "
          f"{'total s':>8} {'cpu s':>7} {'JVM MiB':>8} {'py MiB':>7} {'workers MiB':>11} {'shell s':>8} "
          f"{'ratio':>6} {'equal':>6}")
    for r in runs:
        s, st = r["spark"], r["spark"]["stages"]
        mem = s["memory"]
        shell = r["shell"] if r["shell"] and "failed" not in r["shell"] else None
        ratio = s["total_seconds"] / shell["seconds"] if shell else float("nan")
        print(f"{r['records']:>11,} {r['decode']['records_per_s'] / 1e6:>10.2f} "
              f"{st['load']['seconds'] + st['decode']['seconds']:>7.1f} "
              f"{st['states_plan']['seconds'] + st['states']['seconds']:>8.1f} {st['counts']['seconds']:>8.1f} "
              f"{st['summary']['seconds']:>9.1f} {s['total_seconds']:>8.1f} {s['total_cpu_seconds']:>7.1f} "
              f"{mem.get('jvm', 0) / 2**20:>8.0f} {mem.get('python_driver', 0) / 2**20:>7.0f} "
              f"{mem.get('python_workers', 0) / 2**20:>11.0f} "
              f"{shell['seconds'] if shell else float('nan'):>8.1f} {ratio:>6.1f} "
              f"{str(shell['equal']) if shell else '-':>6}")
    archives = {r["spark"].get("class_archive") for r in runs}
    print(f"driver class archive (workbench compile; WORKBENCH_CLASS_ARCHIVE=0: none): "
          f"{', '.join(sorted(str(a) for a in archives))}")
    print(f"load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
          f"after {' '.join(f'{x:.2f}' for x in load_after)} on {os.cpu_count()} cores")
    stamp = datetime.now(UTC)
    report = {"date": stamp.isoformat(timespec="seconds"), "seed": args.seed, "machine": machine(),
              "load_average_before": load_before, "load_average_after": load_after, "runs": runs,
              "shell_heap": args.shell_heap or "256M",
              "targets": {"seconds_10M": TARGET_SECONDS_10M, "scaling_2x": TARGET_SCALING,
                          "vs_shell": TARGET_VS_SHELL}}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"bench_metadata_scale-{stamp:%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
