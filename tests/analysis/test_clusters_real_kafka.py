"""Two real clusters in one bundle whose nodes share ids, kept apart by ``cluster.id``.

The bundle is the ``restarts`` scenario's nodes 1-3 and the ``consumer_lag`` scenario's nodes 1-2
(two real KRaft clusters, each with its own ``cluster.id``) copied side by side, as an archive of
two clusters' data directories holds them. Each cluster's ISR timeline must be the one its own
bundle gives, and its final state what Kafka's own dump of its metadata log leaves.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from tests.kafka_bundles import dumped_final_states, manifest
from workbench.analysis import isr

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

SCENARIOS = ("restarts", "consumer_lag")


@pytest.fixture(scope="module")
def two_clusters(spark, kafka_bundle, tmp_path_factory):
    root = tmp_path_factory.mktemp("two-clusters")
    alone = {}
    for name in SCENARIOS:
        path = Path(kafka_bundle(name))
        shutil.copytree(path / "nodes", root / name / "nodes")
        alone[manifest(path)["cluster_id"]] = path
    assert len(alone) == 2
    bundle = workbench.open_bundle(root)
    return bundle, workbench.load(bundle, spark), alone


def test_the_clusters_and_their_nodes_are_named(two_clusters):
    bundle, _tables, alone = two_clusters
    want = {cid: sorted(n["id"] for n in manifest(path)["nodes"]) for cid, path in alone.items()}
    (a, a_nodes), (b, b_nodes) = sorted(want.items())
    assert set(a_nodes) & set(b_nodes), "the scenarios share no node id"
    assert bundle.clusters() == {a: a_nodes, b: b_nodes}
    # a node id naming a node of each cluster is no key: each file carries its own cluster
    assert bundle.node_clusters() == {**{n: a for n in a_nodes if n not in b_nodes},
                                      **{n: b for n in b_nodes if n not in a_nodes}}


def test_each_clusters_isr_timeline_is_its_own(spark, two_clusters):
    """Both clusters' partition states equal those of each cluster's bundle alone, and each
    cluster's final states what its own metadata-log dump leaves."""
    _bundle, tables, alone = two_clusters
    states = isr.partition_states(tables.metadata)
    finals = isr.final_states(states).toPandas()
    for cluster, path in alone.items():
        own = isr.partition_states(workbench.load(workbench.open_bundle(path), spark).metadata)
        assertDataFrameEqual(states.where(states.cluster_id == cluster), own)
        final = dumped_final_states(path)
        got = finals[finals.cluster_id == cluster]
        assert {(r.topic_id, r.partition): (r.leader, sorted(r.isr)) for r in got.itertuples()} == final
        assert len(final) > 0
    assert set(finals.cluster_id) == set(alone)
