"""ISR health (KIP-164): partition state intervals, UnderMinIsr and per-broker counts.

Replays ``TopicRecord``, ``PartitionRecord``, ``PartitionChangeRecord``, ``RemoveTopicRecord``
and ``min.insync.replicas`` ``ConfigRecord``\\ s of the KRaft metadata log into intervals of
constant visible state per partition (each cluster of a bundle on its own), and flags each
interval as Kafka's metrics would:

* ``under_replicated`` — ISR smaller than the assigned replicas (adding replicas excluded);
* ``under_min_isr`` — ISR smaller than the effective ``min.insync.replicas`` (KIP-164);
* ``at_min_isr`` — ISR size equal to it;
* ``offline`` — no leader (``-1``).

The effective ``min.insync.replicas`` is resolved as Kafka resolves a topic's config: the topic
config, else the leader broker's dynamic broker config, else the cluster-wide dynamic default,
else the static value of the brokers' ``server.properties`` (which the metadata log does not hold:
:func:`states_for` reads it from the ``configs`` table, a parameter overrides it, 1 when unknown),
and it is re-evaluated at every config change, so a change mid-stream opens a new interval.

A cluster with no metadata log (ZooKeeper era) is replayed the same way from its brokers' and
controller's text logs (:mod:`workbench.analysis.isr.textlog`).
"""

from __future__ import annotations

from workbench.analysis.isr.area import (
    IsrAnalysis,
    analyse,
    area_view_frames,
    grouped_area_findings,
    key_figures,
)
from workbench.analysis.isr.inputs import (
    BROKER_RESOURCE,
    MIN_ISR_CONFIG,
    STATES_SCHEMA,
    TOPIC_RESOURCE,
    configured_min_isr,
    static_min_isr,
)
from workbench.analysis.isr.kafka import (
    REPORTED_NAME,
    gauge_agreement,
    gauges_beside_reported,
    kafka_gauges_beside,
    kafka_gauges_for,
    reported_cluster_gauges,
    reported_leader_gauges,
    reported_partition_gauges,
    reported_under_min_isr,
)
from workbench.analysis.isr.moves import (
    MOVE_COLUMNS,
    move_summary,
    moves_for,
    replica_moves,
)
from workbench.analysis.isr.outages import (
    STOP_COLUMNS,
    cluster_stops,
    episodes,
)
from workbench.analysis.isr.states import (
    MATERIALIZE_RECORDS,
    partition_states,
    states_for,
)
from workbench.analysis.isr.summary import (
    CLUSTER_GAUGES,
    LEADER_GAUGES,
    PARTITION_GAUGES,
    STATES,
    cluster_gauges,
    final_state_counts,
    final_states,
    leader_gauges,
    notable_partitions,
    partition_gauges,
    partition_summary,
    under_min_isr_counts,
)
from workbench.analysis.isr.textlog import (
    text_log_clusters,
    text_log_records,
    with_text_logs,
)
from workbench.analysis.isr.verdicts import (
    GROUP_PARTITIONS,
    area_findings,
    findings,
    findings_for,
)
from workbench.analysis.isr.view import (
    VIEW_PARTITIONS,
    VIEW_POINTS,
    view_frames,
)

# isort: split
from workbench.analysis.isr import area as _area  # noqa: F401  (registers the area)

__all__ = [
    "MIN_ISR_CONFIG", "TOPIC_RESOURCE", "BROKER_RESOURCE", "STATES_SCHEMA", "MATERIALIZE_RECORDS", "partition_states",
    "under_min_isr_counts", "partition_summary", "REPORTED_NAME", "reported_under_min_isr",
    "LEADER_GAUGES", "leader_gauges", "reported_leader_gauges", "gauges_beside_reported", "gauge_agreement", "STATES",
    "PARTITION_GAUGES", "partition_gauges", "reported_partition_gauges", "CLUSTER_GAUGES", "cluster_gauges",
    "reported_cluster_gauges", "kafka_gauges_beside", "kafka_gauges_for", "MOVE_COLUMNS", "replica_moves",
    "move_summary", "moves_for",
    "notable_partitions", "final_states", "final_state_counts", "episodes", "STOP_COLUMNS", "cluster_stops",
    "findings", "static_min_isr", "configured_min_isr", "states_for", "GROUP_PARTITIONS", "area_findings",
    "findings_for", "IsrAnalysis", "analyse", "grouped_area_findings", "VIEW_PARTITIONS", "VIEW_POINTS",
    "view_frames", "area_view_frames", "key_figures", "text_log_clusters", "text_log_records", "with_text_logs",
]
