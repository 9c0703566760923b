"""Time and peak memory of the consumer-lag analysis on a large synthetic bundle, at 1x and 2x.

Usage::

    python benchmarks/bench_consumer_lag.py                      # 1 M commits and 10 GiB, then 2 M and 20 GiB
    python benchmarks/bench_consumer_lag.py --commits 20000 --gib 0.2 --scales 1 2   # a quick look

For each scale a one-broker bundle is written once into
``$KAFKA_WORKBENCH_CACHE/bench/consumer-lag-c<commits>-g<gib>-p<partitions>-s<seed>/``:

* ``--partitions`` data partitions (topics ``lag-000``.. of 10 partitions each) holding ``--gib`` GiB
  together, uncompressed batches of 64 records of 1 KiB, segments rolled every 64 MiB, one batch per
  partition every ``SPAN_S / batches`` seconds over one hour of CreateTime;
* ``--commits`` offset commits in ``__consumer_offsets`` (value version 3, as Kafka 3.x/4.x write),
  spread evenly over the partitions: groups ``group-000``.. each own one topic and commit its 10
  partitions in one batch (one commit request) at a time inside the hour, at a seeded random distance
  behind the log end of that moment, so lag is anything from 0 to the whole partition.

The batches come from one encoded template per size (our encoder, ``encode_batch``) whose base offset
and timestamps are patched and whose CRC-32C is recomputed; the commits are encoded one by one.
Before timing, Kafka's own ``kafka-dump-log`` (the default pinned release) must accept a sample: every
segment of the first and last data partition and the first offsets segment, with every batch valid and
the same batch count and last offset as ours.

Timed, on a local Spark session (``local[2]``), after the tables are opened: :func:`consumer_lag.lags_for`
(lag in records, bytes and time at every commit: the commits from the ``offsets`` table, the log growth
from the ``batches`` table's headers), forced by counting it, then :func:`consumer_lag.lag_histogram` for
bytes and for time, and :func:`consumer_lag.lag_summary`. Peak memory: the largest resident set of the
Spark JVM (sampled every 0.2 s) and of this Python process.

Prints one JSON line per scale (``commits, bytes, seconds, per_step, jvm_peak_mib, python_peak_mib``)
and the ratio of the times to the ratio of the data.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import crc32c  # noqa: E402
from bench_quorum import Steps, spark_with_peak_rss  # noqa: E402

from workbench.formats import coordinator  # noqa: E402
from workbench.formats.batch import Record, encode_batch  # noqa: E402

T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
SPAN_S = 3600
RECORDS_PER_BATCH = 64
RECORD_BYTES = 1024
SEGMENT_BYTES = 64 << 20
OFFSETS_PARTITIONS = 10
OFFSETS_SEGMENT_BYTES = 100 << 20


def _template(seed: int) -> bytes:
    rng = random.Random(seed)
    value = rng.randbytes(RECORD_BYTES)
    recs = [Record(i, T0_MS + i, None, value, []) for i in range(RECORDS_PER_BATCH)]
    return encode_batch(recs, base_offset=0, partition_leader_epoch=0)


def _patched(template: bytes, base_offset: int, ts: int) -> bytes:
    """The template batch at ``base_offset`` with its first timestamp ``ts`` (CRC-32C recomputed)."""
    buf = bytearray(template)
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">qq", buf, 27, ts, ts + RECORDS_PER_BATCH - 1)
    struct.pack_into(">I", buf, 17, crc32c.crc32c(memoryview(buf)[21:]))
    return bytes(buf)


def _segment_name(offset: int) -> str:
    return f"{offset:020d}.log"


def write_bundle(root: Path, commits: int, gib: float, partitions: int, seed: int) -> dict:
    """Write the bundle (see the module's docstring); returns what was written."""
    logs = root / "nodes" / "1" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=benchbenchbenchbench00\n", "utf-8")
    template = _template(seed)
    batches = max(1, int(gib * 2**30 / partitions / len(template)))
    step_ms = SPAN_S * 1000 // batches
    topics = [f"lag-{t:03d}" for t in range((partitions + 9) // 10)]
    written = 0
    for p in range(partitions):
        part = logs / f"{topics[p // 10]}-{p % 10}"
        part.mkdir(exist_ok=True)
        f, size = None, SEGMENT_BYTES
        for b in range(batches):
            if size >= SEGMENT_BYTES:
                if f:
                    f.close()
                f, size = open(part / _segment_name(b * RECORDS_PER_BATCH), "wb", buffering=8 << 20), 0
            data = _patched(template, b * RECORDS_PER_BATCH, T0_MS + b * step_ms + p)
            f.write(data)
            size += len(data)
            written += len(data)
        f.close()

    # commits: group g owns topic g and commits its 10 partitions in one batch at a time
    rng = random.Random(seed)
    per_partition = max(1, commits // partitions)
    end_records = batches * RECORDS_PER_BATCH
    files = [None] * OFFSETS_PARTITIONS
    sizes = [OFFSETS_SEGMENT_BYTES] * OFFSETS_PARTITIONS
    next_offset = [0] * OFFSETS_PARTITIONS
    made = commit_batches = 0
    for t, topic in enumerate(topics):
        group = f"group-{t:03d}"
        slot = t % OFFSETS_PARTITIONS
        n_parts = min(10, partitions - t * 10)
        for c in range(per_partition):
            at = T0_MS + (c + 1) * SPAN_S * 1000 // (per_partition + 1) + rng.randrange(1000)
            recs = []
            for p in range(n_parts):
                # batch b of data partition q was stamped T0 + b * step + q
                log_end = min(end_records, max(0, (at - T0_MS - t * 10 - p) // step_ms + 1) * RECORDS_PER_BATCH)
                committed = max(0, log_end - rng.randrange(log_end + 1))
                key, value = coordinator.encode_offsets_record(
                    1, {"group": group, "topic": topic, "partition": p},
                    {"offset": committed, "leaderEpoch": 0, "metadata": "", "commitTimestamp": at})
                recs.append(Record(next_offset[slot] + p, at, key, value, []))
            if sizes[slot] >= OFFSETS_SEGMENT_BYTES:
                if files[slot]:
                    files[slot].close()
                part = logs / f"__consumer_offsets-{slot}"
                part.mkdir(exist_ok=True)
                files[slot] = open(part / _segment_name(next_offset[slot]), "wb", buffering=8 << 20)
                sizes[slot] = 0
            data = encode_batch(recs, base_offset=next_offset[slot], partition_leader_epoch=0)
            files[slot].write(data)
            sizes[slot] += len(data)
            next_offset[slot] += n_parts
            made += n_parts
            commit_batches += 1
    for f in files:
        if f:
            f.close()
    return {"partitions": partitions, "topics": len(topics), "batches_per_partition": batches,
            "records": batches * RECORDS_PER_BATCH * partitions, "bytes": written, "commits": made,
            "commit_batches": commit_batches}


def bundle_for(commits: int, gib: float, partitions: int, seed: int) -> tuple[Path, dict]:
    from peer.kafka import cache_root

    root = cache_root() / "bench" / f"consumer-lag-c{commits}-g{gib:g}-p{partitions}-s{seed}"
    done = root / ".complete"
    if not done.exists():
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        summary = write_bundle(root, commits, gib, partitions, seed)
        summary["write_seconds"] = round(time.perf_counter() - t, 1)
        (root / "written.json").write_text(json.dumps(summary, indent=1), "utf-8")
        done.write_text("", "utf-8")
    return root, json.loads((root / "written.json").read_text("utf-8"))


def kafka_accepts(root: Path) -> dict:
    """Kafka's dump tool (fetched when missing) on a sample of the bundle's segments: every batch valid, the
    same batch count and last offset as ours."""
    from bench_vs_kafka import kafka_tool_argv

    from peer.kafka import DEFAULT_VERSION, fetch
    from workbench.formats.batch import read_batches

    kafka = fetch(DEFAULT_VERSION)
    logs = root / "nodes" / "1" / "logs"
    parts = sorted(p for p in logs.iterdir() if p.is_dir() and not p.name.startswith("__"))
    sample = [*sorted(parts[0].glob("*.log")), *sorted(parts[-1].glob("*.log")),
              sorted((logs / "__consumer_offsets-0").glob("*.log"))[0]]
    checked = {"segments": 0, "batches": 0}
    for seg in sample:
        flags = ["--offsets-decoder"] if seg.parent.name.startswith("__consumer_offsets") else []
        out = subprocess.run(kafka_tool_argv(kafka, [*flags, "--files", str(seg)]), capture_output=True,
                             text=True, check=True).stdout
        lines = [ln for ln in out.splitlines() if ln.startswith("baseOffset:")]
        with open(seg, "rb") as fh:
            ours = list(read_batches(fh, str(seg), strict=True))
        valid = all(" isvalid: true" in ln for ln in lines)
        last = int(lines[-1].split("lastOffset: ")[1].split()[0]) if lines else None
        if not valid or len(lines) != len(ours) or last != ours[-1].last_offset:
            raise SystemExit(f"Kafka's dump tool disagrees on {seg}: {len(lines)} batches (valid: {valid}, "
                             f"last offset {last}) against our {len(ours)} (last offset {ours[-1].last_offset})")
        checked["segments"] += 1
        checked["batches"] += len(lines)
    return checked


def measure(spark, path: Path) -> dict:
    import workbench
    from workbench.analysis import consumer_lag as cl

    tables = workbench.load(workbench.open_bundle(path), spark)
    steps = Steps()
    step = steps.run
    started = time.perf_counter()

    rows = step("lags_for", lambda: cl.lags_for(tables).count())
    lags = cl.lags_for(tables)  # computed once per bundle: the step above paid for it
    step("histogram_bytes", lambda: cl.lag_histogram(lags, metric="bytes").toPandas())
    step("histogram_time", lambda: cl.lag_histogram(lags, metric="time").toPandas())
    summary = step("summary", lambda: cl.lag_summary(lags, metric="records").toPandas())
    return {"seconds": round(time.perf_counter() - started, 2), "per_step": steps, "lag_rows": rows,
            "summary_rows": len(summary)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--gib", type=float, default=10.0)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import workbench

    results = []
    for scale in args.scales:
        path, written = bundle_for(args.commits * scale, args.gib * scale, args.partitions, args.seed)
        accepted = kafka_accepts(path)
        spark, jvm = spark_with_peak_rss(workbench)
        result = measure(spark, path)
        result.update(scale=scale, commits=written["commits"], bytes=written["bytes"],
                      kafka_checked=accepted, jvm_peak_mib=round(jvm.stop() / 2**20),
                      python_peak_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      load_average=os.getloadavg()[0])
        spark.stop()
        print(json.dumps(result), flush=True)
        results.append(result)
    for r in results[1:]:
        base = results[0]
        print(json.dumps({"data_ratio": round(r["bytes"] / base["bytes"], 2),
                          "commit_ratio": round(r["commits"] / base["commits"], 2),
                          "time_ratio": round(r["seconds"] / base["seconds"], 2),
                          "jvm_memory_ratio": round(r["jvm_peak_mib"] / base["jvm_peak_mib"], 2)}), flush=True)


if __name__ == "__main__":
    main()
