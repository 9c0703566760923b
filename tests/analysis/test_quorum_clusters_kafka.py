"""The quorum of one cluster is judged alone when a bundle holds several clusters' metadata logs.

The ``mm2`` scenario's bundle holds two real KRaft clusters (MirrorMaker 2's source and target, one
combined node each), whose metadata logs have overlapping offsets and epochs. The quorum analysis
of the whole bundle must equal that of the bundle holding only the judged cluster's node, and say
which cluster it judged and which it did not.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from tests.kafka_bundles import manifest
from workbench.analysis.quorum import area

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: The outputs compared whole (each a DataFrame of :class:`~workbench.analysis.quorum.area.QuorumAnalysis`).
FRAMES = ("appends", "timeline", "cadence", "stalls", "offsets", "episodes", "fences", "voters", "batch_sizes")


def test_the_quorum_of_one_cluster_is_judged_as_if_it_were_alone(spark, kafka_bundle, tmp_path):
    path = Path(kafka_bundle("mm2"))
    nodes = {n["id"]: n["cluster_id"] for n in manifest(path)["nodes"]}
    assert len(set(nodes.values())) == 2
    both = workbench.load(workbench.open_bundle(path), spark)
    scope = area.quorum_scope(both)
    kept = [n for n, c in nodes.items() if c == scope.cluster]
    dropped = sorted(n for n, c in nodes.items() if c != scope.cluster)
    assert kept and dropped
    # the other cluster's node directories, Kafka's dumps of its files and its metric exports left out
    foreign_metrics = {m["file"] for m in manifest(path)["metrics"] if m["node"] in dropped}
    alone_path = tmp_path / "alone"
    shutil.copytree(path, alone_path, ignore=lambda d, names: [
        n for n in names
        if (Path(d) in (path / "nodes", path / "dumps" / "nodes") and n.isdigit() and int(n) in dropped)
        or str((Path(d) / n).relative_to(path)) in foreign_metrics])
    alone = workbench.load(workbench.open_bundle(alone_path), spark)
    assert area.quorum_scope(alone).note == ""

    judged, single = area.analyse(both), area.analyse(alone)
    for name in FRAMES:
        assertDataFrameEqual(getattr(judged, name).drop("path"), getattr(single, name).drop("path"))
    other = nodes[dropped[0]]
    assert judged.missing == (
        f"the bundle holds the metadata logs of 2 clusters: this section judges the quorum of cluster "
        f"{scope.cluster} (node {kept[0]}), whose log the most nodes hold; not judged: cluster {other} "
        f"(node {dropped[0]})", *single.missing)
    assert judged.timeline.count() > 0
