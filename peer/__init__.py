"""The real Kafka peer: Apache Kafka from Maven Central, run on loopback to capture bundles.

``peer.kafka.fetch`` resolves a pinned release, ``peer.cluster.Cluster`` runs KRaft nodes,
``peer.scenario.build`` turns an incident scenario into a bundle directory.
"""

from __future__ import annotations

from peer.errors import PeerError
from peer.kafka import DEFAULT_VERSION, VERSIONS, fetch
from peer.scenario import SCENARIOS, build

__all__ = ["DEFAULT_VERSION", "PeerError", "SCENARIOS", "VERSIONS", "build", "fetch"]
