"""Replicas: do a partition's copies on several brokers hold the same batches?

A follower copies its leader's batches byte for byte, so the replicas of a partition hold the same
batches over the offsets they all hold. Where they do not, data was lost or changed: an unclean
election, a truncation that did not happen, a disk that returned other bytes. Kafka's own check,
``kafka-replica-verification.sh``, ran live only (deprecated in 3.9, gone in 4.0); this area answers
it from the files.

Inputs: ``replica_batches``, the batch headers of every partition the bundle holds on several nodes
of one cluster. No record is decoded: a batch is identified by its base and last offset, its
partition leader epoch and its stored CRC (which covers every byte after it).

Definitions:

* a replica's **range** is the offsets its segments hold;
* the **shared range** of a partition is what every replica holds, above the point where any
  replica's log cleaner visibly rewrote its batches (a batch with fewer records than offsets; on a
  compacted topic, also offsets missing before it): the cleaner compacts each replica on its own
  schedule, so cleaned batches may differ without fault and are not compared. A topic is compacted
  when Kafka or MirrorMaker 2 owns it or its ``cleanup.policy`` (else the brokers'
  ``log.cleanup.policy``) says so;
* over the shared range, a replica's batch is **divergent** when other replicas hold other contents
  at its base offset and its version is not the majority's, **missing** when the others hold a batch
  it lacks.

What cannot be known from batch headers alone: which record differs inside a divergent batch, and
which replica Kafka kept (the leader's: the metadata log's leader history tells).

Leader epochs (:mod:`.epochs`): the metadata log replayed into each partition's leader epochs, an
election from outside the ISR (and the eligible leader replicas) or one Kafka marked ``RECOVERING``
is **unclean**; each replica's ``leader-epoch-checkpoint`` (the ``leader_epochs`` table) with the
leader of each epoch.

Outputs, each a DataFrame documented by its function: :func:`replica_ranges`, :func:`shared_ranges`,
:func:`compare_replicas`, :func:`replica_summary`, :func:`findings`, :func:`leader_history`,
:func:`replica_epochs`, :func:`election_losses`, :func:`unclean_findings`, :func:`truncations`,
:func:`groups_beyond`.
"""

from __future__ import annotations

from workbench.analysis.replicas.area import ReplicasAnalysis, analyse, area_findings, key_figures, view_frames
from workbench.analysis.replicas.compare import (
    COMPARISON_COLUMNS,
    RANGE_COLUMNS,
    compare_replicas,
    replica_ranges,
    replica_summary,
    shared_ranges,
)
from workbench.analysis.replicas.epochs import election_losses, leader_history, replica_epochs, unclean_findings
from workbench.analysis.replicas.inputs import Compaction, compaction
from workbench.analysis.replicas.truncations import groups_beyond, truncations
from workbench.analysis.replicas.verdicts import findings

# isort: split
from workbench.analysis.replicas import area as _area  # noqa: F401  (registers the area)

__all__ = [
    "ReplicasAnalysis", "analyse", "area_findings", "key_figures", "view_frames", "COMPARISON_COLUMNS",
    "RANGE_COLUMNS", "compare_replicas", "replica_ranges", "replica_summary", "shared_ranges", "Compaction",
    "compaction", "findings", "leader_history", "replica_epochs", "election_losses", "unclean_findings",
    "truncations", "groups_beyond",
]
