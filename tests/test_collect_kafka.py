"""``workbench collect`` beside a running Kafka node: what it takes, what it leaves out and why, and
that it writes, renames and locks nothing in the log dirs while Kafka runs on them.

One real node (broker and controller, 4.3.1) with a large topic (``big``: several segments, over
``--full-partition-bytes``), a small one and a consumer group's commits. The command runs in a
child Python whose audit hook (:func:`sys.addaudithook`) records every file it opens for writing,
every path it removes, renames, truncates or changes, and every lock or memory map it takes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest

import workbench
from peer.cluster import Cluster
from peer.kafka import fetch
from workbench.collect import EXTRACT, collect
from workbench.errors import ConfigError

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parent.parent
FULL_PARTITION_BYTES = 1_000_000

AUDITED = textwrap.dedent("""
    import os, runpy, sys
    out = open(sys.argv[1], "w")
    dirs = [os.path.realpath(d) + os.sep for d in sys.argv[2].split(",")]
    WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    CHANGES = {"os.remove", "os.rename", "os.truncate", "os.chmod", "os.chown", "os.utime", "os.mkdir",
               "os.rmdir", "os.link", "os.symlink", "shutil.move", "shutil.rmtree"}
    def inside(path):
        try:
            path = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return any(path.startswith(d) for d in dirs)
    def hook(event, args):
        if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)) and inside(args[0]):
            mode, flags = args[1] or "", args[2] or 0
            kind = "write" if any(c in mode for c in "wax+") or flags & WRITE else "read"
            out.write(f"{kind}\\t{os.fsdecode(args[0])}\\n")
        elif event in CHANGES and any(isinstance(a, (str, bytes, os.PathLike)) and inside(a) for a in args):
            out.write(f"change\\t{event} {args!r}\\n")
        elif event in ("fcntl.flock", "fcntl.lockf", "mmap.__new__") or (
                event == "fcntl.fcntl" and args[1] in (5, 6, 7, 36, 37, 38)):  # F_GETLK/SETLK(W), OFD locks
            out.write(f"lock\\t{event} {args!r}\\n")
        out.flush()
    sys.addaudithook(hook)
    sys.argv = ["workbench", *sys.argv[3:]]
    runpy.run_module("workbench", run_name="__main__")
""")


def _bin_scripts(kafka, directory: Path) -> Path:
    """``kafka-topics.sh`` and the other tools collect runs, as Kafka's ``bin`` scripts are: a JVM on the
    release's classpath running the tool's main class."""
    directory.mkdir()
    for script, tool in (("kafka-topics.sh", "topics"), ("kafka-consumer-groups.sh", "consumer-groups"),
                         ("kafka-metadata-quorum.sh", "metadata-quorum")):
        argv = " ".join(f"'{a}'" for a in kafka.java(kafka.tool_class(tool)))
        path = directory / script
        path.write_text(f"#!/bin/sh\nexec {argv} \"$@\"\n")
        path.chmod(0o755)
    return directory


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """A running node with ``big`` (about 3 MB in 1 MB segments), ``small`` and a group's commits."""
    home = tmp_path_factory.mktemp("collect")
    kafka = fetch()
    with Cluster(kafka, home / "cluster", "collect", controllers=1, brokers=0, combined=True,
                 settings={"log.segment.bytes": "1048576"}) as cluster:
        cluster.format()
        cluster.start()
        bs = cluster.bootstrap
        for topic in ("big", "small"):
            kafka.run_tool("topics", ["--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", "1",
                                      "--replication-factor", "1"], timeout=60)
        for topic, records in (("big", 30_000), ("small", 200)):
            kafka.run_tool("producer-perf", ["--topic", topic, "--num-records", str(records), "--record-size", "100",
                                             "--throughput", "-1", "--producer-props", f"bootstrap.servers={bs}"],
                           timeout=120)
        kafka.run_tool("console-consumer", ["--bootstrap-server", bs, "--topic", "small", "--group", "readers",
                                            "--from-beginning", "--max-messages", "200"], timeout=120)
        yield cluster.nodes[0], _bin_scripts(kafka, home / "bin"), home


@pytest.fixture(scope="module")
def collected(node):
    """``workbench collect`` run under the audit hook while the node runs: (archive, audit lines, start)."""
    kafka_node, kafka_bin, home = node
    start = time.time()
    archive, audit = home / "out" / "node.tar.gz", home / "audit.tsv"
    argv = [sys.executable, "-c", AUDITED, str(audit), str(kafka_node.log_dir), "collect",
            "--config", str(kafka_node.home / "server.properties"), "--out", str(archive),
            "--full-partition-bytes", str(FULL_PARTITION_BYTES), "--log4j-dir", str(kafka_node.log4j_dir),
            "--bootstrap-server", f"127.0.0.1:{kafka_node.broker_port}", "--kafka-bin", str(kafka_bin)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    return archive, audit.read_text().splitlines(), start


def test_collect_writes_renames_and_locks_nothing_in_the_log_dirs(collected):
    _, audit, _ = collected
    reads = [line for line in audit if line.startswith("read\t")]
    assert len(reads) > 20, "the audit hook saw too few reads of the log dir to be trusted"
    assert [line for line in audit if not line.startswith("read\t")] == []


def _manifest(archive: Path) -> dict:
    with tarfile.open(archive) as tar:
        return json.loads(tar.extractfile("nodes/1/collect-manifest.json").read())


def test_each_file_taken_is_the_live_files_bytes_and_the_large_partitions_payloads_are_left_out(collected, node):
    archive, _, start = collected
    kafka_node = node[0]
    manifest = _manifest(archive)
    taken = {Path(t["source"]).relative_to(kafka_node.log_dir).as_posix(): t for t in manifest["taken"]
             if t["source"].startswith(str(kafka_node.log_dir)) and t["what"] != EXTRACT}
    extracts = {t["arcname"].rsplit("/", 2)[-2] + "/" + Path(t["source"]).name for t in manifest["taken"]
                if t["what"] == EXTRACT}
    left = {Path(x["source"]).relative_to(kafka_node.log_dir).as_posix(): x["reason"] for x in manifest["left_out"]}
    big_segments = sorted(f"big-0/{p.name}" for p in (kafka_node.log_dir / "big-0").glob("*.log"))
    assert len(big_segments) >= 3
    assert sorted(k for k in left if k.startswith("big-0/")) == big_segments
    assert all("payloads of a large partition" in left[k] for k in big_segments)
    assert {k for k in taken if k.startswith("big-0/") and k.endswith(".log")} == set()
    assert sorted(extracts) == big_segments
    on_disk = {p.relative_to(kafka_node.log_dir).as_posix(): p.stat().st_mtime
               for p in kafka_node.log_dir.rglob("*") if p.is_file() and p.name != ".lock"}
    missed = sorted(p for p, mtime in on_disk.items() if p not in taken and p not in left and mtime < start)
    assert missed == [], "files that were there before collect ran, neither taken nor left out"
    assert {k for k in taken if k.startswith("big-0/")} >= {s.replace(".log", ".index") for s in big_segments}
    newest = {}
    for rel in on_disk:
        if rel.endswith(".log"):
            newest[rel.split("/")[0]] = max(newest.get(rel.split("/")[0], ""), rel)
    # an active segment's preallocated index (10 MiB) is taken up to its first hole
    active = newest["small-0"].replace(".log", ".index")
    assert taken[active]["bytes"] < (kafka_node.log_dir / active).stat().st_size
    # segments are appended to, never rewritten; a rolled segment's indexes no longer change (the active
    # segment's are preallocated and filled in place)
    with tarfile.open(archive) as tar:
        for rel, t in taken.items():
            rolled_index = rel.endswith((".index", ".timeindex")) and \
                rel.rsplit(".", 1)[0] + ".log" != newest.get(rel.split("/")[0])
            if rel.endswith(".log") or rolled_index:
                got = tar.extractfile(t["arcname"]).read()
                assert got == (kafka_node.log_dir / rel).read_bytes()[: t["bytes"]], rel


def test_the_archive_is_a_bundle_of_the_node_with_the_tools_outputs(collected):
    archive, _, _ = collected
    with workbench.open_bundle(archive) as bundle:
        kinds = {(a.kind, a.topic) for a in bundle.artifacts if a.node_id == 1}
        tools = [a for a in bundle.artifacts if a.kind == "tool_output"]
        texts = {Path(a.path).name.split("-", 1)[1]: (bundle.root / a.path).read_text() for a in tools}
    assert {("segment", "__cluster_metadata"), ("quorum_state", None), ("meta_properties", None),
            ("segment", "__consumer_offsets"), ("segment", "small"), ("offset_index", "big"),
            ("server_properties", None), ("server_log", None)} <= kinds
    assert ("segment", "big") in kinds
    with workbench.open_bundle(archive) as bundle:
        big = {Path(a.path).name for a in bundle.artifacts if a.topic == "big" and a.kind == "segment"}
    assert big and all(name.endswith(".log.headers") for name in big)
    assert "Topic: big" in texts["kafka-topics.txt"]
    assert "readers" in texts["kafka-consumer-groups.txt"]


@pytest.mark.spark
def test_the_large_partitions_batches_from_its_headers_extract_are_the_live_segments(collected, node, spark):
    """Every column of the ``batches`` table but ``path`` and ``crc_valid`` (null: no records to check)."""
    from pyspark.sql import functions as F
    from pyspark.testing import assertDataFrameEqual

    archive, _, _ = collected
    kafka_node = node[0]
    columns = [c for c in workbench.load(workbench.open_bundle(archive), spark).batches.columns
               if c not in ("path", "crc_valid")]
    with workbench.open_bundle(archive) as bundle:
        from_extract = workbench.load(bundle, spark).batches.where(F.col("topic") == "big")
        assert from_extract.where(F.col("crc_valid").isNotNull()).count() == 0
        got = from_extract.select(*columns).localCheckpoint()
    live = workbench.load(workbench.open_bundle(kafka_node.log_dir), spark).batches.where(F.col("topic") == "big")
    assert live.count() > 100
    assertDataFrameEqual(got, live.select(*columns), checkRowOrder=False)


def test_max_bytes_takes_the_most_telling_files_first(node, tmp_path):
    kafka_node = node[0]
    config = kafka_node.home / "server.properties"
    full = collect(config, tmp_path / "all.tar.gz", full_partition_bytes=FULL_PARTITION_BYTES)
    metadata = [t for t in full.taken if t.what == "metadata log"]
    budget = sum(t.bytes for t in full.taken if t.what in ("configuration", "log dir file")) + metadata[0].bytes
    cut = collect(config, tmp_path / "cut.tar.gz", max_bytes=budget, full_partition_bytes=FULL_PARTITION_BYTES)
    assert sum(t.bytes for t in cut.taken) <= budget
    assert [t.what for t in cut.taken][:2] == ["configuration", "log dir file"]
    assert {x.reason.split(" (")[0] for x in cut.left_out} >= {f"over --max-bytes {budget}"}
    assert {t.source for t in cut.taken} | {x.source for x in cut.left_out} == \
           {t.source for t in full.taken} | {x.source for x in full.left_out}


def test_an_archive_inside_a_log_dir_is_refused(node):
    kafka_node = node[0]
    out = kafka_node.log_dir / "evidence.tar.gz"
    with pytest.raises(ConfigError, match="inside the log dir"):
        collect(kafka_node.home / "server.properties", out)
    assert not out.exists() and not out.with_name(out.name + ".partial").exists()

