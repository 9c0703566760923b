"""KRaft quorum health (KIP-835): commit stalls, leaders and epochs, and how far each node fell behind.

Since metadata version 3.3-IV1 the active controller appends a ``NoOpRecord`` whenever the
metadata log would otherwise stay idle for ``metadata.max.idle.interval.ms`` (500 ms by default),
so a healthy quorum's log never stops growing: a gap in the leader's appends is a stall, and a
node whose applied offset stops while the log grows has fallen behind. This package answers, from
the artifacts, the questions the KIP-835 gauges answer live, and puts the gauges (where a bundle
holds exports of them) beside its own figures.

Outputs, each a DataFrame (computed from DataFrames; the functions never collect an unbounded
result):

* :func:`log_appends` — one row per batch the leaders appended to the metadata log (the fullest
  replica's segments), with the interval since the previous batch and its NoOpRecords;
* :func:`noop_writing` — one row: whether the cluster writes NoOpRecords at all (metadata version
  before 3.3-IV1: none, and then no stall is claimed) and the effective idle interval;
* :func:`cadence` — one row per leader epoch: the distribution of the intervals between the
  leader's appends, and its NoOpRecords;
* :func:`stalls` — one row per commit stall: a gap between consecutive appends longer than a
  multiple (default 4) of ``metadata.max.idle.interval.ms``;
* :func:`leader_timeline` — one row per leader epoch: who led, from when, with which voters, and
  which sources say so (LeaderChange control records, the batches' epochs, each node's
  ``quorum-state``, ``kafka-metadata-quorum describe --status`` captures);
* :func:`voter_changes` — one row per KRaft voters record; :func:`voters_beside_status` holds each
  ``describe --status`` capture's ``CurrentVoters`` beside it (or beside the nodes' common
  ``controller.quorum.voters``, :func:`configured_voters`, in a static quorum);
* :func:`node_offsets` — one row per observation of one node's position in the metadata log, from
  every source the bundle has (scraped KIP-835 and raft gauges, ``describe --replication``
  captures, snapshots, each replica's own log end), each with the leader's log end at that moment,
  the offset lag and the time lag;
* :func:`apply_lag` — KIP-835's ``LastAppliedRecordLagMs`` computed from the log at each sample of
  Kafka's own, beside it, with what explains a difference;
* :func:`divergence_episodes` — one row per episode during which a node was behind the log;
* :func:`fence_events` — one row per broker registration, fence, unfence or controlled shutdown
  of the metadata log, with the divergence episode it falls in;
* :func:`batch_sizes` — one row per time window and source: metadata batch sizes computed from the
  log, beside the brokers' ``MetadataBatchSizes`` and ``MetadataBatchProcessingTimeUs`` (and
  ``record-batch-size-byte-*``/``pending-record-processing-time-us``) where scraped;
* :func:`raft_latencies` — one row per node and sample: Kafka's own ``raft-metrics`` commit and
  election latency, append and fetch rates, epoch and leader, where scraped;
* :func:`findings` — the above as plain-language findings; :func:`analyse` computes everything
  once per bundle (the ``quorum`` area, order 1, registered with
  :func:`workbench.analysis.findings.register_area`).

Times are the leader's append times (the batches' ``max_timestamp``): a follower's replica holds
the batches exactly as the leader wrote them, so its own log says *what* it holds, never *when*
it fetched it. When a node had a record comes from the node's own exports (the gauges), the
leader's view of it (``describe --replication``) and the snapshots it wrote (their header time is
the node's clock).
"""

from __future__ import annotations

from workbench.analysis.quorum.appends import (
    APPENDS_COLUMNS,
    DEFAULT_IDLE_MS,
    DEFAULT_STALL_MULTIPLE,
    IDLE_CONFIG,
    METADATA_TOPIC,
    METADATA_VERSIONS,
    NOOP_MIN_LEVEL,
    STALLS_COLUMNS,
    NoOpWriting,
    cadence,
    log_appends,
    metadata_version_levels,
    noop_writing,
    stalls,
)
from workbench.analysis.quorum.area import (
    QuorumAnalysis,
    QuorumScope,
    analyse,
    area_findings,
    findings_for,
    key_figures,
    quorum_scope,
    unexplained_stalls,
    view_frames,
)
from workbench.analysis.quorum.brokers import (
    FENCE_COLUMNS,
    broker_changes,
    fence_events,
    node_roles,
)
from workbench.analysis.quorum.episodes import (
    EPISODES_COLUMNS,
    POSITION_KINDS,
    divergence_episodes,
)
from workbench.analysis.quorum.kafka import (
    BATCH_SIZE_COLUMNS,
    RAFT_GAUGES,
    batch_sizes,
    raft_latencies,
)
from workbench.analysis.quorum.leaders import (
    STATIC_VOTERS_CONFIG,
    TIMELINE_COLUMNS,
    configured_voters,
    leader_timeline,
    voter_changes,
    voters_beside_status,
)
from workbench.analysis.quorum.positions import (
    ANSWER_SLACK_MS,
    APPLY_LAG_AGREE_MS,
    APPLY_LAG_COLUMNS,
    GAP_INTERVALS,
    LAG_GAUGES,
    MIN_GAP_MS,
    OFFSET_GAUGES,
    OFFSETS_COLUMNS,
    TIME_GAUGES,
    apply_lag,
    node_offsets,
    offset_times,
)
from workbench.analysis.quorum.verdicts import findings

# isort: split
from workbench.analysis.quorum import area as _area  # noqa: F401  (registers the area)

__all__ = [
    "METADATA_TOPIC", "DEFAULT_IDLE_MS", "IDLE_CONFIG", "DEFAULT_STALL_MULTIPLE", "NOOP_MIN_LEVEL",
    "METADATA_VERSIONS", "APPENDS_COLUMNS", "STALLS_COLUMNS", "log_appends", "metadata_version_levels", "NoOpWriting",
    "noop_writing", "cadence", "stalls", "TIMELINE_COLUMNS", "voter_changes", "voters_beside_status",
    "STATIC_VOTERS_CONFIG", "configured_voters",
    "leader_timeline", "FENCE_COLUMNS",
    "broker_changes", "fence_events", "node_roles", "OFFSET_GAUGES", "TIME_GAUGES", "LAG_GAUGES", "GAP_INTERVALS",
    "MIN_GAP_MS", "ANSWER_SLACK_MS", "OFFSETS_COLUMNS", "offset_times", "node_offsets",
    "APPLY_LAG_COLUMNS", "APPLY_LAG_AGREE_MS", "apply_lag", "POSITION_KINDS",
    "EPISODES_COLUMNS", "divergence_episodes", "BATCH_SIZE_COLUMNS", "batch_sizes", "RAFT_GAUGES", "raft_latencies",
    "findings", "QuorumAnalysis", "analyse", "findings_for", "area_findings", "unexplained_stalls", "view_frames",
    "key_figures", "QuorumScope", "quorum_scope",
]
