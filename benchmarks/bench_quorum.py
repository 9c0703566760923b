"""Time and peak memory of the quorum analysis on a large synthetic KRaft metadata log, at 1x and 2x.

Usage::

    python benchmarks/bench_quorum.py                          # 10,000,000 records, then 20,000,000
    python benchmarks/bench_quorum.py --records 1000000 --scales 1 2

For each scale the log is written once by ``synthetic_metadata.write_synthetic_metadata_log``
(our encoder; Kafka's dump tool reads it, see ``bench_dump.py``: 70 % ``PartitionChangeRecord``,
30 % ``NoOpRecord``, batches of 100 records, one every 50 ms) into a one-node bundle under
``~/.cache/kafka-workbench/bench/quorum-r<records>-s<seed>/`` and then read by a local Spark
session (``local[2]``). Timed, after the tables are opened: :func:`quorum.log_appends` (the
batches and the NoOpRecords of the metadata table), :func:`quorum.noop_writing`,
:func:`quorum.stalls`, :func:`quorum.leader_timeline` and :func:`quorum.cadence`, each forced by
collecting its (small) result. Peak memory: the largest resident set of the Spark JVM (sampled
every 0.2 s from ``/proc``) and of this Python process.

Prints one JSON line per scale: ``records, seconds`` (all steps), ``per_step`` seconds,
``jvm_peak_mib, python_peak_mib``, ``stalls, epochs, batches``; and the ratio of the times
(time must grow no faster than the data).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def bundle_for(records: int, seed: int) -> Path:
    """A one-node bundle holding the synthetic metadata log of ``records`` records (written once)."""
    from synthetic_metadata import write_synthetic_metadata_log

    from peer.kafka import cache_root

    root = cache_root() / "bench" / f"quorum-r{records}-s{seed}"
    done = root / ".complete"
    if done.exists():
        return root
    logs = root / "nodes" / "1" / "logs"
    part = logs / "__cluster_metadata-0"
    part.mkdir(parents=True, exist_ok=True)
    (logs / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=benchbenchbenchbench00\n", "utf-8")
    summary = write_synthetic_metadata_log(str(part / "00000000000000000000.log"), records, seed=seed)
    (root / "written.json").write_text(json.dumps(summary, indent=1), "utf-8")
    done.write_text("", "utf-8")
    return root


class Steps(dict):
    """Seconds per named step of a benchmark."""

    def run(self, name: str, fn):
        """Run ``fn()``, keep its wall seconds under ``name`` and return its result."""
        t = time.perf_counter()
        out = fn()
        self[name] = round(time.perf_counter() - t, 2)
        return out


def spark_with_peak_rss(workbench, driver_memory: str | None = None):
    """A ``local[2]`` session (UTC, 8 shuffle partitions; ``driver_memory``, else the workbench's default)
    and a started :class:`PeakRss` of its JVM."""
    spark = workbench.session("local[2]", driver_memory=driver_memory,
                              conf={"spark.sql.shuffle.partitions": "8",
                                    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC"})
    gateway = spark.sparkContext._gateway
    jvm = PeakRss(int(gateway.proc.pid) if hasattr(gateway, "proc") else os.getpid())
    jvm.start()
    return spark, jvm


class PeakRss(threading.Thread):
    """Samples a process's resident set size until stopped; ``peak`` in bytes."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self._halt = pid, 0, threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        self.peak = max(self.peak, int(line.split()[1]) * 1024)
            except OSError:
                return
            time.sleep(0.2)

    def stop(self) -> int:
        self._halt.set()
        self.join()
        return self.peak


def measure(spark, path: Path) -> dict:
    import workbench
    from workbench.analysis import quorum

    tables = workbench.load(workbench.open_bundle(path), spark)
    steps = Steps()
    step = steps.run
    started = time.perf_counter()

    appends = step("log_appends", lambda: tables.derive("bench.appends", lambda: quorum.log_appends(
        tables.batches, tables.metadata)))
    batches = step("log_appends_count", appends.count)
    writing = step("noop_writing", lambda: quorum.noop_writing(tables.metadata))
    timeline = step("leader_timeline", lambda: quorum.leader_timeline(tables.metadata, appends).toPandas())
    stalls = step("stalls", lambda: quorum.stalls(appends, writing).toPandas())
    step("cadence", lambda: quorum.cadence(appends).toPandas())
    return {"seconds": round(time.perf_counter() - started, 2), "per_step": steps, "batches": batches,
            "epochs": len(timeline), "stalls": len(stalls), "noop_records": writing.noop_records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--driver-memory", default=None, help="spark.driver.memory (default: the workbench's, 1g)")
    args = parser.parse_args()

    import workbench

    results = []
    for scale in args.scales:
        records = args.records * scale
        path = bundle_for(records, args.seed)
        spark, jvm = spark_with_peak_rss(workbench, args.driver_memory)
        result = measure(spark, path)
        result.update(records=records, jvm_peak_mib=round(jvm.stop() / 2**20),
                      python_peak_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      load_average=os.getloadavg()[0])
        spark.stop()
        print(json.dumps(result), flush=True)
        results.append(result)
    if len(results) > 1:
        base = results[0]
        for r in results[1:]:
            print(json.dumps({"data_ratio": r["records"] / base["records"],
                              "time_ratio": round(r["seconds"] / base["seconds"], 2)}), flush=True)


if __name__ == "__main__":
    main()
