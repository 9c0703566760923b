"""Throughput of the ``offsets`` table's reader on a ``__consumer_offsets`` segment, vs Kafka's dump tool.

Usage::

    python benchmarks/bench_offsets.py                       # 1,000,000 commits, batches of 10
    python benchmarks/bench_offsets.py --commits 200000 --repeat 3 --version 4

The segment is written with the project's encoders: offset commits of 50 groups over 10 topics,
value version 3 (what Kafka 3.x writes) or 4 (4.x, with the topic id), ten commits per batch as a
consumer's commit request of ten partitions gives them. Passes, each the fastest of ``--repeat``,
after a warm-up read (page cache):

``walk``
    ``records_with_batches``: batches and records, no payload decoded (the careful reader).
``walk compiled``
    ``fastrecords.records_table`` plus the columns back as Python values: what the walk would
    cost through the compiled decoder (the table's readers decode payloads in Python).
``offsets``
    ``OffsetsReader.decode``: the table's Arrow batches, as a Spark task gets them (struct fast
    path for commits, rows built as lists, columns converted in bulk).
``offsets generic``
    the same with every commit decoded by the schema-driven ``decode_offsets_record``.
``dump-log``
    Kafka's ``kafka-dump-log --offsets-decoder --files`` (the default pinned release; JVM start
    included, output read and dropped), when its jars are fetched.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.formats import coordinator  # noqa: E402
from workbench.formats.batch import Record, encode_batch, read_batches  # noqa: E402
from workbench.formats.problems import ProblemLog  # noqa: E402
from workbench.formats.topicrecords import records_with_batches  # noqa: E402
from workbench.spark.offsets import OffsetsReader  # noqa: E402
from workbench.spark.source import FilePartition  # noqa: E402


def write_segment(path: Path, commits: int, version: int) -> None:
    offset = 0
    with open(path, "wb", buffering=8 << 20) as f:
        while offset < commits:
            recs = []
            for i in range(10):
                value = {"offset": offset * 7, "leaderEpoch": 3, "metadata": "",
                         "commitTimestamp": 1_700_000_000_000 + offset}
                if version == 4:
                    value["topicId"] = bytes([i + 1]) * 16
                key = {"group": f"consumer-group-{offset // 10 % 50}", "topic": f"orders-{i}", "partition": offset % 12}
                key, val = coordinator.encode_offsets_record(1, key, value, value_version=version)
                recs.append(Record(offset, 1_700_000_000_000 + offset, key, val, []))
                offset += 1
            f.write(encode_batch(recs, base_offset=offset - 10, partition_leader_epoch=0))


def best(fn, repeat: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        n = fn()
        times.append(time.perf_counter() - t)
    return min(times), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=1_000_000)
    ap.add_argument("--version", type=int, default=3, choices=(3, 4))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-kafka", action="store_true", help="skip Kafka's dump tool")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-offsets-"))
    seg = work / "__consumer_offsets-3" / "00000000000000000000.log"
    seg.parent.mkdir()
    write_segment(seg, args.commits, args.version)
    size = seg.stat().st_size
    seg.read_bytes()  # warm the page cache
    part = FilePartition(str(seg), 1, "segment", 0, "__consumer_offsets", 3)
    reader = OffsetsReader.__new__(OffsetsReader)
    reader.strict = False

    def walk() -> int:
        with open(seg, "rb") as f:
            return sum(1 for _ in records_with_batches(f, str(seg)))

    def walk_compiled() -> int:
        from workbench.formats.fastrecords import records_table

        with open(seg, "rb") as f:
            table = records_table(read_batches(f, str(seg)))
        columns = [table.column(c).to_pylist() for c in ("batch_position", "offset", "timestamp", "key", "value")]
        return len(columns[0])

    def offsets() -> int:
        return sum(batch.num_rows for batch in reader.decode(part, ProblemLog(str(seg))))

    def offsets_generic() -> int:
        with mock.patch.object(coordinator, "decode_offset_commit_fast", lambda k, v: None):
            return offsets()

    passes = [("walk", walk), ("walk compiled", walk_compiled), ("offsets", offsets),
              ("offsets generic", offsets_generic)]
    results = [(name, *best(fn, args.repeat)) for name, fn in passes]
    if not args.no_kafka:
        from peer.kafka import DEFAULT_VERSION, STAMP, fetch, lib_dir

        if (lib_dir(DEFAULT_VERSION) / STAMP).exists():
            kafka = fetch(DEFAULT_VERSION)
            cmd = kafka.java(kafka.tool_class("dump-log"), ["--offsets-decoder", "--files", str(seg)], heap="256m")

            def dump() -> int:
                with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as p:
                    lines = sum(1 for line in p.stdout if line.startswith(b"| offset"))  # type: ignore[union-attr]
                return lines

            results.append(("dump-log", *best(dump, args.repeat)))
    print(f"segment: {size:,} bytes, {args.commits:,} commits (value v{args.version}), batches of 10; "
          f"load average {os.getloadavg()[0]:.2f}")
    print("| pass | s | records/s | MB/s |\n|---|---:|---:|---:|")
    for name, seconds, n in results:
        print(f"| `{name}` | {seconds:.2f} | {n / seconds:,.0f} | {size / seconds / 1e6:.1f} |")


if __name__ == "__main__":
    main()
