"""The replicas question's null case, judged by real Kafka: a healthy RF 3 cluster under load, stopped cleanly.

The ``healthy`` scenario (``peer/scenarios/healthy.py``): 3 brokers, ``orders`` (6 partitions) and
``payments`` (2), RF 3, 24,000 records with ``acks=all``; nothing killed, paused or elected.
Kafka's dump of every replica's segments judges the comparison (as for the ``isr`` incident), and
Kafka's own live check, ``kafka-replica-verification`` (3.9.2), ran over both topics while
``orders`` took more records.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.analysis.test_replicas_real_kafka import check_against_kafka, replica_segments, verification_agrees
from workbench.analysis import replicas

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


@pytest.fixture(scope="module")
def healthy(kafka_bundle):
    from peer.kafka import DEFAULT_VERSION

    return Path(kafka_bundle("healthy")).resolve(), DEFAULT_VERSION


def test_every_replica_is_its_leaders_copy_and_nothing_is_found(spark, healthy):
    """Every partition's three replicas hold the same batches over the offsets they share (the area's
    ranges and verdicts equal those read from Kafka's dump), no batch diverges or is missing, the
    area finds nothing, and Kafka's live check reported every second without a mismatch."""
    root, version = healthy
    result = check_against_kafka(spark, root, version)
    assert {r["status"] for r in result.comparison.collect()} == {"same"}
    assert replicas.area_findings(result).collect() == []
    figures = replicas.key_figures(result)
    data = {k: nodes for k, nodes in replica_segments(root).items() if k[0] in ("orders", "payments")}
    assert len(data) == 8 and all(len(nodes) == 3 for nodes in data.values())
    written = {k for k, nodes in data.items() if sum(any(s.stat().st_size > 0 for s in segs)
                                                     for segs in nodes.values()) > 1}
    assert {t for t, _ in written} == {"orders", "payments"}
    assert figures["divergent_batches"] == figures["missing_batches"] == 0
    verification_agrees(root, len(data))
