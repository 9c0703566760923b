"""``quorum``, ``snapshots`` and ``configs`` on every real-Kafka scenario bundle of both versions.

Judged by Kafka's own output on the same files: ``kafka-dump-log`` of every snapshot and
metadata segment (the bundles' ``dumps/``), the ``quorum-state`` JSON Kafka wrote, and the
properties files each node ran with (read here by splitting ``key=value`` lines).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from pyspark.testing import assertDataFrameEqual

from workbench.spark.configs import CONFIGS_SCHEMA
from workbench.spark.quorum import QUORUM_SCHEMA, SNAPSHOTS_SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint$")


def _when(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def test_quorum_equals_the_quorum_state_files(spark, real_bundles):
    want, got = [], None
    for *_, path, manifest, tables in real_bundles:
        for node in manifest["nodes"]:
            for qs in sorted((path / node["log_dirs"][0]).rglob("quorum-state")):
                raw = json.loads(qs.read_text("utf-8"))
                voters = [v["voterId"] for v in raw["currentVoters"]] if raw.get("currentVoters") else None
                want.append((node["id"], str(qs), raw["data_version"], raw["leaderId"], raw["leaderEpoch"],
                             raw["votedId"], raw.get("votedDirectoryId"), raw.get("appliedOffset"), voters,
                             raw.get("clusterId")))
        got = tables.quorum if got is None else got.unionByName(tables.quorum)
    assert len(want) >= 20
    assertDataFrameEqual(got, spark.createDataFrame(want, QUORUM_SCHEMA))


def _dumped_snapshot(text: str) -> dict:
    """What kafka-dump-log printed about one snapshot or bootstrap checkpoint."""
    batches = [line for line in text.splitlines() if line.startswith("baseOffset:")]
    records = [line for line in text.splitlines() if line.startswith("| offset:")]
    header = next(line for line in records if " SnapshotHeader " in line)
    return {
        "batches": len(batches),
        "records": sum(int(re.search(r" count: (\d+)", b).group(1)) for b in batches),
        "header_version": json.loads(header.split(" SnapshotHeader ", 1)[1])["version"],
        "last_contained_ms": json.loads(header.split(" SnapshotHeader ", 1)[1])["lastContainedLogTimestamp"],
        "header_ms": int(re.search(r" CreateTime: (\d+)", batches[0]).group(1)),
        "footer": " SnapshotFooter " in records[-1],
        "crc_valid": all("isvalid: true" in b for b in batches),
    }


def test_snapshots_equal_kafka_dump_log(spark, real_bundles):
    want, got = [], None
    for *_, path, manifest, tables in real_bundles:
        nodes = {n["id"] for n in manifest["nodes"]}
        for dump in manifest["dumps"]:
            rel = dump["file"]
            if not rel.endswith(".checkpoint"):
                continue
            node = int(rel.split("/")[1])
            assert node in nodes
            d = _dumped_snapshot((path / dump["dump"]).read_text("utf-8"))
            m = _SNAPSHOT_NAME.search(rel)
            bootstrap = rel.endswith("bootstrap.checkpoint")
            want.append((node, str(path / rel), "bootstrap" if bootstrap else "snapshot",
                         None if bootstrap else "complete", int(m.group(1)) if m else None,
                         int(m.group(2)) if m else None, (path / rel).stat().st_size, d["batches"], d["records"],
                         d["header_version"], _when(d["last_contained_ms"]), _when(d["header_ms"]), d["footer"],
                         d["crc_valid"]))
        got = tables.snapshots if got is None else got.unionByName(tables.snapshots)
    assert sum(1 for w in want if w[2] == "snapshot") >= 10 and sum(1 for w in want if w[2] == "bootstrap") >= 10
    assertDataFrameEqual(got, spark.createDataFrame(want, SNAPSHOTS_SCHEMA))
    for *_, tables in real_bundles:
        assert tables.problems_of("snapshots").count() == 0


def _clusters(path, manifest) -> dict[int, str]:
    out = {}
    for node in manifest["nodes"]:
        props = (path / node["log_dirs"][0] / "meta.properties").read_text("utf-8")
        out[node["id"]] = re.search(r"^cluster\.id=(.+)$", props, re.M).group(1)
    return out


_SCOPES = {2: "topic", 8: "broker_logger", 16: "client_metrics", 32: "group"}


def test_configs_equal_properties_files_and_dumped_config_records(spark, real_bundles):
    want, got = [], None
    for *_, path, manifest, tables in real_bundles:
        clusters = _clusters(path, manifest)
        for node in manifest["nodes"]:
            conf = path / node["config"]
            for line in conf.read_text("utf-8").splitlines():
                key, value = line.split("=", 1)
                want.append(("static", "node", str(node["id"]), key, value, False, None, None, "properties",
                             node["id"], 1, clusters[node["id"]], str(conf)))
        records: dict[tuple, list] = {}
        for dump in manifest["dumps"]:
            rel = dump["file"]
            if "/__cluster_metadata-0/" not in rel and not rel.endswith("bootstrap.checkpoint"):
                continue
            node = int(rel.split("/")[1])
            snap = _SNAPSHOT_NAME.search(rel)
            source = "bootstrap" if rel.endswith("bootstrap.checkpoint") else "snapshot" if snap else "log"
            for line in (path / dump["dump"]).read_text("utf-8").splitlines():
                if " payload: " not in line:
                    continue
                payload = json.loads(line.split(" payload: ", 1)[1])
                if payload["type"] != "CONFIG_RECORD":
                    continue
                data = payload["data"]
                offset = {"log": int(re.search(r"\| offset: (\d+)", line).group(1)),
                          "snapshot": int(snap.group(1)) if snap else None, "bootstrap": None}[source]
                rtype = data["resourceType"]
                scope = (("dynamic_cluster_default" if data["resourceName"] == "" else "dynamic_broker")
                         if rtype == 4 else _SCOPES.get(rtype, "unknown"))
                key = (clusters[node], scope, "broker" if rtype == 4 else _SCOPES[rtype], data["resourceName"],
                       data["name"], data["value"], source, offset)
                records.setdefault(key, []).append(
                    (int(re.search(r" CreateTime: (\d+)", line).group(1)), node, str(path / rel)))
        for (cluster, scope, rtype, rname, name, value, source, offset), seen in records.items():
            want.append((scope, rtype, rname, name, value, False, _when(min(s[0] for s in seen)), offset, source,
                         min(s[1] for s in seen), len({s[1] for s in seen}), cluster,
                         min(seen, key=lambda s: s[1:])[2]))
        got = tables.configs if got is None else got.unionByName(tables.configs)
    scopes = {w[0] for w in want}
    assert {"static", "topic", "dynamic_cluster_default"} <= scopes, scopes
    assertDataFrameEqual(got, spark.createDataFrame(want, CONFIGS_SCHEMA))


def test_static_min_insync_replicas_for_the_isr_analysis(real_bundles):
    from workbench.spark.configs import static_config

    for _version, name, _path, manifest, tables in real_bundles:
        if name != "isr":
            continue
        got = [(r.node_id, r.value) for r in static_config(tables, "min.insync.replicas").collect()]
        assert got == [(n["id"], "2") for n in sorted(manifest["nodes"], key=lambda n: n["id"])]
