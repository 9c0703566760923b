"""Scenario bundles built by real Kafka: layout, dumps and the incidents they must hold.

Every scenario of ``peer.scenario.DEFAULT_SETS`` is built on its pinned release; a bundle that
is missing is built, never skipped, so these tests run the same on an empty cache.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from peer.bundle import dump_flags
from peer.scenario import DEFAULT_SETS, built_on

pytestmark = pytest.mark.kafka

ALL = [(version, name) for version, names in DEFAULT_SETS.items() for name in names]


@pytest.fixture()
def bundle_for(scenario_bundle):
    """``bundle_for(name, version)``: the bundle, built when missing."""

    def get(name: str, version: str) -> Path:
        return scenario_bundle(name, version)

    return get


def manifest(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / "manifest.json").read_text("utf-8"))


def metadata_records(bundle: Path, node: int) -> Iterator[dict[str, Any]]:
    """Decoded payloads of a node's __cluster_metadata .log dumps, in offset order."""
    dumps = sorted((bundle / "dumps" / "nodes" / str(node) / "logs" / "__cluster_metadata-0")
                   .glob("*.log.txt"))
    for dump in dumps:
        for line in dump.read_text("utf-8").splitlines():
            if " payload: " in line:
                yield json.loads(line.split(" payload: ", 1)[1])


def dump_text(bundle: Path, pattern: str) -> str:
    return "".join(p.read_text("utf-8") for p in sorted((bundle / "dumps").glob(pattern)))


@pytest.mark.parametrize(("version", "name"), ALL, ids=[f"{v}-{n}" for v, n in ALL])
def test_bundle_layout(bundle_for, version: str, name: str) -> None:
    bundle = bundle_for(name, version)
    m = manifest(bundle)
    assert m["scenario"] == name
    assert m["kafka_version"] == version
    assert isinstance(m["created_ms"], int)
    assert m["events"] and all(isinstance(e["t_ms"], int) for e in m["events"])
    times = [e["t_ms"] for e in m["events"]]
    assert times == sorted(times)
    for node in m["nodes"]:
        assert set(node["roles"]) <= {"broker", "controller"} and node["roles"]
        assert node["log_dirs"] == [f"nodes/{node['id']}/logs"]
        assert (bundle / node["log_dirs"][0] / "meta.properties").exists()
        props = (bundle / node["log_dirs"][0] / "meta.properties").read_text("utf-8")
        assert f"node.id={node['id']}" in props
        config = (bundle / node["config"]).read_text("utf-8")  # what an incident bundle carries too
        assert f"node.id={node['id']}\n" in config and "process.roles=" in config
        assert f"nodes/{node['id']}/log4j/server.log" in node["log4j"]
        assert (bundle / "nodes" / str(node["id"]) / "log4j" / "server.log").stat().st_size > 0
    for tool in m["tools"]:
        assert (bundle / tool["file"]).is_file()
        assert tool["file"].startswith(f"tools/{tool['t_ms']}-")
    for metric in m["metrics"]:
        path = bundle / metric["file"]
        if metric.get("format") == "prometheus":
            assert path.suffix == ".prom" and path.read_text("utf-8").startswith("# HELP"), metric
            assert metric["file"] == f"metrics/{metric['node']}-{metric['t_ms']}.prom"
            continue
        if metric.get("format") == "prometheus_api":  # a Prometheus server's answer: every node's series
            assert json.loads(path.read_text("utf-8"))["status"] == "success" and "node" not in metric, metric
            continue
        rows = list(csv.reader(path.open(encoding="utf-8")))
        assert rows[0][0] == "time", metric
        assert len(rows) > 5, metric
        assert all(len(r) == len(rows[0]) for r in rows), metric


@pytest.mark.parametrize(("version", "name"), ALL, ids=[f"{v}-{n}" for v, n in ALL])
def test_every_segment_and_snapshot_dumped(bundle_for, version: str, name: str) -> None:
    bundle = bundle_for(name, version)
    m = manifest(bundle)
    files = {
        p.relative_to(bundle).as_posix()
        for top in ("nodes", "remote")
        for p in (bundle / top).rglob("*")
        if p.is_file() and p.suffix in (".log", ".checkpoint")
        and (top == "remote" or p.relative_to(bundle / top).parts[1] == "logs")
    }
    dumped = {d["file"]: d for d in m["dumps"]}
    assert files and files == set(dumped)
    for rel, entry in dumped.items():
        assert entry["args"] == dump_flags(rel)
        text = (bundle / entry["dump"]).read_text("utf-8")
        assert text.startswith(f"Dumping {entry.get('dumped_as', rel)}\n"), rel


@pytest.mark.parametrize("version", built_on("isr"))
def test_isr_shrink_and_expand_in_metadata_log(scenario_bundle, version: str) -> None:
    bundle = scenario_bundle("isr", version)
    records = list(metadata_records(bundle, 1))
    topics = {r["data"]["name"]: r["data"]["topicId"]
              for r in records if r["type"] == "TOPIC_RECORD"}
    assert {"orders", "payments"} <= set(topics)
    orders_isr = [r["data"]["isr"] for r in records
                  if r["type"] == "PARTITION_CHANGE_RECORD"
                  and r["data"]["topicId"] == topics["orders"] and "isr" in r["data"]]
    # Shrink to two replicas, then to one (under min ISR 2), then expansion back to three.
    assert any(len(isr) == 2 for isr in orders_isr)
    assert any(len(isr) == 1 for isr in orders_isr)
    first_single = next(i for i, isr in enumerate(orders_isr) if len(isr) == 1)
    assert any(len(isr) == 3 for isr in orders_isr[first_single:])
    assert sum(r["type"] == "NO_OP_RECORD" for r in records) > 20
    configs = [r["data"] for r in records if r["type"] == "CONFIG_RECORD"]
    assert {"name": "min.insync.replicas", "value": "3"}.items() <= next(
        c for c in configs if c.get("resourceName") == "payments").items()
    events = [e["event"] for e in manifest(bundle)["events"]]
    assert events.count("broker_hard_stop") == 2 and events.count("broker_restart") == 2


@pytest.mark.parametrize("version", built_on("isr"))
def test_isr_tools_and_metrics(scenario_bundle, version: str) -> None:
    bundle = scenario_bundle("isr", version)
    m = manifest(bundle)
    under_min = [t for t in m["tools"] if "--under-min-isr-partitions" in t["args"]]
    texts = [(bundle / t["file"]).read_text("utf-8") for t in under_min]
    assert any("Topic: orders" in t for t in texts)
    assert any("Topic: payments" in t for t in texts)
    peaks: dict[str, int] = {}
    keys = {"isr": "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount:Value",
            "partitions": "kafka.cluster:type=Partition,name=UnderMinIsr,topic=payments,partition=0:Value",
            "controller": "kafka.controller:type=KafkaController,name=OfflinePartitionsCount:Value"}
    for metric in (x for x in m["metrics"] if x["file"].endswith(".csv")):
        rows = list(csv.DictReader((bundle / metric["file"]).open(encoding="utf-8")))
        key = keys[metric["what"]]
        # JmxTool leaves a cell empty when the MBean did not answer (the scenario stops brokers)
        peaks[metric["what"]] = max([peaks.get(metric["what"], 0), *(int(r[key]) for r in rows if r[key].strip())])
    # payments under min ISR on its leaders, the RF 1 topic offline while its broker was down
    assert peaks == {"isr": peaks["isr"], "partitions": 1, "controller": 1} and peaks["isr"] >= 1, peaks


@pytest.mark.parametrize("version", built_on("consumer_lag"))
def test_consumer_lag_offsets_codecs_headers(scenario_bundle, version: str) -> None:
    bundle = scenario_bundle("consumer_lag", version)
    offsets = dump_text(bundle, "nodes/*/logs/__consumer_offsets-*/*.log.txt")
    for group in ("caught-up", "slow", "stopped"):
        assert re.search(rf'"group":"{group}","topic":"lag-', offsets), group
    assert '"commitTimestamp":' in offsets
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        text = dump_text(bundle, f"nodes/*/logs/lag-{codec}-*/*.log.txt")
        assert f"compresscodec: {codec} " in text
        assert "headerKeys: [trace-id,source]" in text
    # the transactional producer: 12 transactions, every third aborted, offsets committed in them
    txn = dump_text(bundle, "nodes/*/logs/txn-orders-*/*.log.txt")
    assert txn.count("endTxnMarker: COMMIT") == 16 and txn.count("endTxnMarker: ABORT") == 8
    assert "isTransactional: true" in txn
    assert dump_text(bundle, "nodes/*/logs/__transaction_state-*/*.log.txt").count("| offset: ") >= 36
    assert '"group":"txn-app","topic":"txn-orders"' in offsets
    events = {e["event"]: e for e in manifest(bundle)["events"]}
    assert events["txn_producer_end"]["exit_code"] == 0
    assert "committed 8 aborted 4" in events["txn_producer_end"]["summary"]
    describes = [t for t in manifest(bundle)["tools"] if t["tool"] == "kafka-consumer-groups"]
    assert len(describes) >= 5
    texts = [(bundle / d["file"]).read_text("utf-8") for d in describes]
    assert any("stopped" in t and "slow" in t for t in texts[:-1])
    # the offsets of the group that left expire before the end (offsets.retention.minutes=1): the last
    # capture, which ran, no longer lists it (the other groups' offsets expire a minute after their own
    # last commit: on a loaded machine every group had ended long enough before it to be gone too)
    assert "exit_code" not in describes[-1] or describes[-1]["exit_code"] == 0, describes[-1]
    listed = [line.split()[0] for line in texts[-1].splitlines()[1:] if line.strip() and not line.startswith("GROUP ")]
    assert "stopped" not in listed, texts[-1]



@pytest.mark.parametrize("version", built_on("quorum"))
def test_quorum_bundle(bundle_for, version: str) -> None:
    quorum = bundle_for("quorum", version)
    m = manifest(quorum)
    pauses = [e for e in m["events"] if e["event"] == "node_pause"]
    assert [p["role"] for p in pauses] == ["follower controller", "broker", "leader controller"]
    snapshots = [d for d in m["dumps"] if re.search(r"/\d{20}-\d{10}\.checkpoint$", d["file"])]
    assert snapshots
    assert "Snapshot end offset:" in (quorum / snapshots[0]["dump"]).read_text("utf-8")
    records = list(metadata_records(quorum, 1))
    assert any(r["type"] == "FENCE_BROKER_RECORD" or (
        r["type"] == "BROKER_REGISTRATION_CHANGE_RECORD" and r["data"].get("fenced") == 1)
        for r in records)
    status = [t for t in m["tools"] if t["args"][-1] == "--status" and "exit_code" not in t]
    leaders = {re.search(r"LeaderId:\s+(\d+)", (quorum / t["file"]).read_text("utf-8")).group(1)
               for t in status}
    assert len(leaders) >= 2, "the leader pause should have moved leadership"
    controllers = [x for x in m["metrics"] if x["node"] in (1, 2, 3)]
    header = (quorum / controllers[0]["file"]).read_text("utf-8").splitlines()[0]
    assert "LastAppliedRecordLagMs" in header and "raft-metrics:high-watermark" in header


@pytest.mark.parametrize("version", built_on("tiered"))
def test_tiered_remote_segment_events(bundle_for, version: str) -> None:
    bundle = bundle_for("tiered", version)
    rlmm = dump_text(bundle, "nodes/*/logs/__remote_log_metadata-*/*.log.txt")
    for state in ("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED",
                  "DELETE_SEGMENT_FINISHED"):
        assert state in rlmm, state
    assert list((bundle / "remote").rglob("*.log")) or "DELETE_SEGMENT_FINISHED" in rlmm
    m = manifest(bundle)
    header = (bundle / m["metrics"][0]["file"]).read_text("utf-8").splitlines()[0]
    assert "RemoteCopyLagSegments" in header and "RemoteDeleteLagSegments" in header


@pytest.mark.parametrize("version", built_on("mm2"))
def test_mm2_offset_syncs_and_outage(bundle_for, version: str) -> None:
    bundle = bundle_for("mm2", version)
    m = manifest(bundle)
    clusters = {n["cluster"] for n in m["nodes"]}
    assert clusters == {"source", "target"}
    syncs = dump_text(bundle, "nodes/*/logs/mm2-offset-syncs.target.internal-*/*.log.txt")
    assert syncs.count("| offset: ") >= 2
    assert dump_text(bundle, "nodes/*/logs/source.checkpoints.internal-*/*.log.txt")
    assert dump_text(bundle, "nodes/*/logs/heartbeats-*/*.log.txt")
    events = [e["event"] for e in m["events"]]
    assert events.count("mm2_stop") == 2 and events.count("mm2_start") == 2
    offsets = [t for t in m["tools"] if t["tool"] == "kafka-get-offsets"]
    assert len(offsets) >= 6
    # The sampler follows MM2 across its restart: samples exist after the second start.
    restart = next(e["t_ms"] for e in m["events"] if e["event"] == "mm2_start" and e["run"] == 2)
    rows = list(csv.DictReader((bundle / "metrics" / "0-mm2.csv").open(encoding="utf-8")))
    assert any(int(r["time"]) > restart + 10000 for r in rows)
    assert any("MirrorCheckpointConnector" in column for column in rows[0])


def test_dump_log_fixture_accepts_a_segment(kafka_dump_log, scenario_bundle, tmp_path) -> None:
    bundle = scenario_bundle("isr")
    # the first partition of orders that holds records (which ones the producer filled varies by run)
    segment = next(s for s in sorted(bundle.glob("nodes/4/logs/orders-*/00000000000000000000.log")) if s.stat().st_size)
    copy = tmp_path / segment.parent.name / segment.name
    copy.parent.mkdir()
    copy.write_bytes(segment.read_bytes())
    done = kafka_dump_log([copy])
    assert done.stdout.startswith(f"Dumping {copy}\n")
    assert "baseOffset: 0 " in done.stdout


def test_demo_bundle_holds_an_incident_in_every_area(bundle_for, tmp_path) -> None:
    """The ``demo`` scenario staged each of its five incidents, as Kafka's own files and tools show."""
    import tarfile

    bundle = bundle_for("demo", "4.3.1")
    m = manifest(bundle)
    events = [e["event"] for e in m["events"]]
    assert {n["cluster"] for n in m["nodes"]} == {"prod", "dr"}
    # quorum: the leader controller's pause moved leadership (LeaderChange records, status captures)
    assert events.count("node_pause") == 1 and events.count("node_resume") == 1
    leader_changes = dump_text(bundle, "nodes/1/logs/__cluster_metadata-0/*.log.txt").count("LeaderChange: ")
    assert leader_changes >= 2
    status = [t for t in m["tools"] if t["args"][-1] == "--status" and "exit_code" not in t]
    leaders = {re.search(r"LeaderId:\s+(\d+)", (bundle / t["file"]).read_text("utf-8")).group(1) for t in status}
    assert len(leaders) >= 2
    # isr: broker 6 left the ISR of payments, which kafka-topics listed under min ISR
    assert "broker_hard_stop" in events and "isr_expanded" in events
    shrunk = [r for r in metadata_records(bundle, 1) if r["type"] == "PARTITION_CHANGE_RECORD"
              and r["data"].get("isr") is not None and 6 not in r["data"]["isr"]]
    assert shrunk
    under = [t for t in m["tools"] if "--under-min-isr-partitions" in t["args"]]
    assert any("Topic: payments" in (bundle / t["file"]).read_text("utf-8") for t in under)
    # consumer lag: every group committed; billing is far behind at the last capture
    commits = dump_text(bundle, "nodes/*/logs/__consumer_offsets-*/*.log.txt")
    for group in ("billing", "fulfilment", "reports"):  # offset commits (key type 1) of each group
        assert f'key: {{"type":"1","data":{{"group":"{group}"' in commits, group
    described = [t for t in m["tools"] if t["tool"] == "kafka-consumer-groups"]
    last = (bundle / described[-1]["file"]).read_text("utf-8")
    billing_lag = sum(int(line.split()[5]) for line in last.splitlines()
                      if line.startswith("billing ") and line.split()[5].isdigit())
    assert billing_lag > 500
    # mirror: MirrorMaker 2 (aliases prod -> dr) replicated orders and was stopped once
    assert events.count("mm2_stop") == 2 and events.count("mm2_start") == 2
    assert dump_text(bundle, "nodes/7/logs/prod.orders-*/*.log.txt").count("| offset: ") > 100
    assert dump_text(bundle, "nodes/7/logs/prod.checkpoints.internal-*/*.log.txt")
    assert dump_text(bundle, "nodes/*/logs/mm2-offset-syncs.dr.internal-*/*.log.txt").count("| offset: ") >= 2
    # tier: copies failed while remote storage refused them, then uploaded
    rlmm = dump_text(bundle, "nodes/4/logs/__remote_log_metadata-*/*.log.txt")
    assert rlmm.count("COPY_SEGMENT_STARTED") > rlmm.count("COPY_SEGMENT_FINISHED") > 0
    assert list((bundle / "remote").rglob("*.log"))
    # `python -m peer demo` writes it as workbench/data ships it: small, every file at the root,
    # owner 0:0 and one modification time (the archive changes only when the files do)
    from peer.__main__ import write_demo

    archive = write_demo(tmp_path / "demo.tar.gz")
    assert archive.stat().st_size < 3 * 1000 * 1000
    with tarfile.open(archive) as tar:
        members = tar.getmembers()
    files = [p.relative_to(bundle).as_posix() for p in sorted(bundle.rglob("*")) if p.name != ".complete"]
    assert [m.name for m in members] == files
    assert {(m.uid, m.gid, m.mtime) for m in members} == {(0, 0, members[0].mtime)}
