"""Time of the replica comparison on many partitions' batch headers (the replicas area, issue 41).

Usage::

    python benchmarks/bench_replicas.py                               # 10,000 partitions x 3 replicas x 10 batches
    python benchmarks/bench_replicas.py --partitions 10000 --batches 100

The batch headers (``replica_batches`` rows) are made in Spark (``spark.range``) and kept as a local
checkpoint before the clock starts: what is timed is the comparison, not a read. Every replica holds
``--batches`` batches of 100 records per partition; one partition in a thousand has one batch with
another CRC on its second replica, and one in a thousand lacks a batch inside its range on its
third replica. Timed on ``local[2]``: :func:`replicas.replica_ranges` and
:func:`replicas.compare_replicas` (kept, as the area keeps them), the findings and the view frames
(collected). The injected differences must all be found, and nothing else.

Prints one JSON line: ``partitions, replicas, batches, rows, seconds`` (all steps), ``per_step``,
``divergent, missing, findings``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def headers(spark, partitions: int, replicas: int, batches: int):
    """``replica_batches`` rows: every partition on ``replicas`` nodes, with the injected differences."""
    from pyspark.sql import functions as F

    from workbench.spark.replica_batches import REPLICA_BATCHES_SCHEMA

    n = partitions * replicas * batches
    i = F.col("id")
    part = (i / (replicas * batches)).cast("long")
    node = ((i / batches) % replicas + 1).cast("int")
    b = (i % batches).cast("long")
    base = b * 100
    divergent = (part % 1000 == 7) & (node == 2) & (b == batches // 2)
    missing = (part % 1000 == 11) & (node == 3) & (b == batches // 2)
    crc = F.when(divergent, F.lit(1)).otherwise(F.abs(F.hash(part, b))).cast("long")
    rows = spark.range(n).where(~missing).select(
        F.lit("bench").alias("cluster_id"), node.alias("node_id"),
        F.concat(F.lit("topic-"), (part / 100).cast("long").cast("string")).alias("topic"),
        (part % 100).cast("int").alias("partition"), F.lit("/bench.log").alias("path"), (b * 7000).alias("position"),
        base.alias("base_offset"), (base + 99).alias("last_offset"), F.lit(100).alias("record_count"),
        F.lit(7000).alias("size"), F.lit(3).alias("partition_leader_epoch"), crc.alias("crc"),
        F.lit(False).alias("is_control"),
        F.timestamp_seconds(F.lit(1_790_000_000) + base).alias("max_timestamp"))
    return spark.createDataFrame(rows.rdd, REPLICA_BATCHES_SCHEMA).localCheckpoint(eager=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--partitions", type=int, default=10_000)
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--batches", type=int, default=10)
    args = p.parse_args(argv)

    from workbench.analysis import replicas
    from workbench.session import session
    from workbench.spark.events import EVENTS_SCHEMA
    from workbench.spark.leader_epochs import LEADER_EPOCHS_SCHEMA
    from workbench.spark.metadata import METADATA_SCHEMA
    from workbench.spark.offsets import OFFSETS_SCHEMA

    spark = session()
    frame = headers(spark, args.partitions, args.replicas, args.batches)
    rows = frame.count()
    steps: dict[str, float] = {}

    def timed(name, fn):
        t0 = time.perf_counter()
        out = fn()
        steps[name] = round(time.perf_counter() - t0, 2)
        return out

    ranges = timed("ranges", lambda: replicas.replica_ranges(frame).localCheckpoint(eager=True))
    comparison = timed("compare", lambda: replicas.compare_replicas(frame, ranges).localCheckpoint(eager=True))
    found = timed("findings", lambda: replicas.findings(comparison).collect())
    # no metadata log and no checkpoint in this synthetic bundle: the epoch frames are empty
    history = replicas.leader_history(spark.createDataFrame([], METADATA_SCHEMA))
    epochs = replicas.replica_epochs(spark.createDataFrame([], LEADER_EPOCHS_SCHEMA), history, ranges)
    losses = replicas.election_losses(history, epochs, frame)
    cuts = replicas.truncations(spark.createDataFrame([], EVENTS_SCHEMA))
    groups = replicas.groups_beyond(spark.createDataFrame([], OFFSETS_SCHEMA), losses)
    analysis = replicas.ReplicasAnalysis(None, {}, ranges, comparison, history, epochs, losses, cuts, groups)
    timed("view_frames", lambda: {k: v.toPandas() for k, v in replicas.view_frames(analysis).items()})
    counts = {r["status"]: r["count"] for r in comparison.groupBy("status").count().collect()}
    divergent, missing = len(range(7, args.partitions, 1000)), len(range(11, args.partitions, 1000))
    ok = (counts.get("divergent", 0) == divergent and counts.get("missing", 0) == missing
          and len(found) == divergent + missing)
    print(json.dumps({"partitions": args.partitions, "replicas": args.replicas, "batches": args.batches,
                      "rows": rows, "seconds": round(sum(steps.values()), 2), "per_step": steps,
                      "divergent": counts.get("divergent", 0), "missing": counts.get("missing", 0),
                      "findings": len(found), "as_injected": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
