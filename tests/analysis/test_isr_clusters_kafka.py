"""Two clusters in one bundle (the ``mm2`` scenario: MirrorMaker 2's source and target) stay apart.

Each cluster's single node keeps its own ``__cluster_metadata`` log; the offsets of the two logs
overlap, so a replay that read them as one log would take one cluster's record for the other's.
The oracle is Kafka's own decode of each node's log (``kafka-dump-log --cluster-metadata-decoder``,
in the bundle's ``dumps/``) and the cluster id of each node in the manifest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from peer.scenario import built_on
from workbench.analysis import isr

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: The releases building the two-cluster (mm2) scenario.
VERSIONS = built_on("mm2")


def dumped_partitions(path: Path, manifest: dict) -> list[tuple]:
    """Per cluster and partition, the last leader, ISR and replicas in Kafka's dump of its node's log."""
    cluster_of = {n["id"]: n["cluster_id"] for n in manifest["nodes"]}
    out: list[tuple] = []
    for dump in manifest["dumps"]:
        if "__cluster_metadata-0" not in dump["file"]:
            continue
        node = int(dump["file"].split("/")[1])
        names: dict[str, str] = {}
        parts: dict[tuple[str, int], dict] = {}
        for line in (path / dump["dump"]).read_text().splitlines():
            if "payload: " not in line:
                continue
            record = json.loads(line.split("payload: ", 1)[1])
            data = record.get("data", {})
            if record["type"] == "TOPIC_RECORD":
                names[data["topicId"]] = data["name"]
            elif record["type"] == "PARTITION_RECORD":
                parts[(data["topicId"], data["partitionId"])] = {
                    k: data[k] for k in ("leader", "isr", "replicas")}
            elif record["type"] == "PARTITION_CHANGE_RECORD":
                state = parts[(data["topicId"], data["partitionId"])]
                for k in ("isr", "replicas"):
                    if data.get(k) is not None:
                        state[k] = data[k]
                if data.get("leader", -2) != -2:
                    state["leader"] = data["leader"]
        for (topic_id, p), state in parts.items():
            out.append((cluster_of[node], names[topic_id], topic_id, p, state["leader"], state["isr"],
                        state["replicas"]))
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_two_clusters_are_replayed_apart(spark, kafka_bundle, version):
    path = Path(kafka_bundle("mm2", version))
    manifest = json.loads((path / "manifest.json").read_text())
    clusters = {n["cluster_id"] for n in manifest["nodes"]}
    assert len(clusters) == 2
    tables = workbench.load(workbench.open_bundle(path), spark)

    nodes = tables.metadata.select("node_id", "cluster_id").distinct()
    assertDataFrameEqual(nodes, spark.createDataFrame([(n["id"], n["cluster_id"]) for n in manifest["nodes"]],
                                                      "node_id int, cluster_id string"))

    want_rows = dumped_partitions(path, manifest)
    assert {r[0] for r in want_rows} == clusters
    # the same topic exists in both clusters (MirrorMaker 2's internal topics, consumer offsets)
    names = {}
    for r in want_rows:
        names.setdefault(r[1], set()).add(r[0])
    assert any(len(c) == 2 for c in names.values())
    want = spark.createDataFrame(
        want_rows, "cluster_id string, topic string, topic_id string, partition int, leader int, isr array<int>, "
                   "replicas array<int>")
    for compiled in (True, False):
        states = isr.partition_states(tables.metadata, compiled=compiled)
        last = (states.where("end_reason = 'log_end'")
                .select("cluster_id", "topic", "topic_id", "partition", "leader", "isr", "replicas"))
        assertDataFrameEqual(last, want)
        # every interval belongs to one cluster, and each cluster's partitions only to it
        assert states.select("topic_id", "partition", "cluster_id").distinct().count() == len(want_rows)
