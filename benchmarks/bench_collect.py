"""``workbench collect`` on a node holding GiBs of segments while Kafka runs: how long, how large the
archive, and whether the ISR, quorum and consumer-lag results from the archive equal those from the
node's whole directory.

One real node (broker and controller, 4.3.1) takes ``--gib`` GiB of 1,000-byte records on a
4-partition topic (in 1 GiB segments), a small topic, and the commits of a group that read part of
the big topic and all of the small one. No metadata no-op records are written (the metadata log
stays still between the collect and the reads of the whole directory). Then, Kafka still running:
``collect`` (timed), and in one Spark session the findings and key figures of the three areas from
the archive and from the node's whole directory (hard links of its log dir, beside its configuration
and log4j files, in the archive's layout), compared. Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_collect.py [--gib 10] [--dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

AREAS = ("isr", "quorum", "consumer_lag")
RECORD_BYTES = 1000


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _whole_directory(node, root: Path) -> Path:
    """The node's whole log dir (hard links: nothing copied), its configuration and its log4j files, laid
    out as the archive lays them out (``nodes/<id>/``), so that only what collect leaves out differs."""
    import os

    base = root / "nodes" / str(node.id)
    shutil.copytree(node.log_dir, base / "logs", copy_function=os.link, ignore=shutil.ignore_patterns(".lock"))
    (base / "config").mkdir(parents=True)
    shutil.copy(node.home / "server.properties", base / "config")
    shutil.copytree(node.log4j_dir, base / "log4j")
    shutil.copy(node.output, base / "log4j")
    return root


def _results(bundle: str, spark) -> dict:
    """Findings rows and key figures of :data:`AREAS` for one bundle."""
    from workbench.analysis.findings import areas, check_findings
    from workbench.investigation import open_investigation

    inv = open_investigation(bundle, params={"bundle": bundle, "report": True}, spark=spark)
    out = {}
    for name in AREAS:
        area = areas()[name]
        rows = check_findings(area.findings_for(inv.tables, inv.params), name).collect()
        out[name] = {"findings": sorted((r.asDict(recursive=True) for r in rows), key=repr),
                     "key_figures": area.key_figures_for(inv.tables, inv.params)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=10.0, help="GiB of records to produce (default: %(default)s)")
    parser.add_argument("--dir", default="/tmp/bench-collect", help="working directory (removed at the end)")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)

    import workbench
    from peer.cluster import Cluster
    from peer.kafka import fetch
    from workbench.collect import collect

    home = Path(args.dir)
    shutil.rmtree(home, ignore_errors=True)
    records = int(args.gib * 2**30 // RECORD_BYTES)
    figures: dict = {"gib": args.gib, "records": records}
    kafka = fetch()
    try:
        with Cluster(kafka, home / "cluster", "collect-bench", controllers=1, brokers=0, combined=True, heap="1g",
                     settings={"metadata.max.idle.interval.ms": "3600000", "log.segment.bytes": str(2**30)}) as c:
            c.format()
            c.start()
            bs, node = c.bootstrap, c.nodes[0]
            for topic, partitions in (("data", 4), ("orders", 1)):
                kafka.run_tool("topics", ["--bootstrap-server", bs, "--create", "--topic", topic, "--partitions",
                                          str(partitions), "--replication-factor", "1"], timeout=60)
            t0 = time.monotonic()
            kafka.run_tool("producer-perf", [
                "--topic", "data", "--num-records", str(records), "--record-size", str(RECORD_BYTES),
                "--throughput", "-1", "--producer-props", f"bootstrap.servers={bs}", "acks=1",
                "batch.size=1048576", "linger.ms=20", "buffer.memory=268435456"], timeout=3600, heap="1g")
            figures["produce_s"] = round(time.monotonic() - t0, 1)
            kafka.run_tool("producer-perf", ["--topic", "orders", "--num-records", "1000", "--record-size", "100",
                                             "--throughput", "-1", "--producer-props", f"bootstrap.servers={bs}"],
                           timeout=120)
            for topic, n in (("data", min(200_000, records // 2)), ("orders", 1000)):
                kafka.run_tool("console-consumer", ["--bootstrap-server", bs, "--topic", topic, "--group", "readers",
                                                    "--from-beginning", "--max-messages", str(n)], timeout=600,
                               heap="512m")
            figures["log_dir_bytes"] = _du(node.log_dir)
            print(f"produced {records:,} records in {figures['produce_s']} s; log dir {figures['log_dir_bytes']:,} "
                  f"bytes", flush=True)

            archive = home / "node.tar.gz"
            t0 = time.monotonic()
            result = collect(node.home / "server.properties", archive, log4j_dirs=[node.log4j_dir, node.home])
            figures["collect_s"] = round(time.monotonic() - t0, 1)
            figures["archive_bytes"] = archive.stat().st_size
            figures["taken_bytes"] = sum(t.bytes for t in result.taken)
            figures["left_out_files"] = len(result.left_out)
            print(f"collect: {figures['collect_s']} s, archive {figures['archive_bytes']:,} bytes "
                  f"({figures['taken_bytes']:,} bytes of files taken, {len(result.left_out)} left out)", flush=True)

            spark = workbench.session()
            t0 = time.monotonic()
            from_archive = _results(str(archive), spark)
            figures["archive_analysis_s"] = round(time.monotonic() - t0, 1)
            full = _whole_directory(node, home / "full")
            t0 = time.monotonic()
            from_dir = _results(str(full), spark)
            figures["directory_analysis_s"] = round(time.monotonic() - t0, 1)
            spark.stop()
            figures["same"] = {name: from_archive[name] == from_dir[name] for name in AREAS}
            figures["findings"] = {name: len(from_dir[name]["findings"]) for name in AREAS}
            figures["key_figures"] = {name: from_dir[name]["key_figures"] for name in AREAS}
            for name in AREAS:
                print(f"{name}: {figures['findings'][name]} findings, key figures {from_dir[name]['key_figures']}; "
                      f"from the archive {'the same' if figures['same'][name] else 'DIFFERENT'}", flush=True)
                if not figures["same"][name]:
                    print(f"  archive: {from_archive[name]}\n  directory: {from_dir[name]}", flush=True)
            print(f"analysis: archive {figures['archive_analysis_s']} s, directory {figures['directory_analysis_s']} s")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str), "utf-8")
    return 0 if all(figures.get("same", {}).values()) and figures.get("same") else 1


if __name__ == "__main__":
    raise SystemExit(main())
