"""MirrorMaker 2 backlog (KIP-971): replication-record-lag over time, outages, and an offset-translation audit.

KIP-971 proposed ``replication-record-lag`` = the source partition's log end offset (LEO) minus the
last offset MirrorMaker 2 replicated (LRO), as value, min, max and avg over a window; it never
shipped. Everything it needs is on disk: the source cluster's segments give the LEO at any past
moment (:mod:`workbench.analysis.logs`), and MirrorMaker 2's own topics (the ``mirror`` table) give
the LRO: the MirrorSourceConnector's Connect source offsets (``mm2-offsets.<source>.internal``, on
the target cluster) and its offset syncs (``mm2-offset-syncs.<target>.internal``, on the source
cluster by default). The outputs, each a Spark DataFrame:

* :func:`lro_observations` — one row per observation of MirrorMaker 2's replicated position of a
  source partition (a Connect source offset or an offset sync);
* :func:`lag_timeline` — one row per source partition and instant at which its log end or MM2's
  position changed, and at each window boundary: the lag in records (KIP-971), bytes and time;
* :func:`lag_windows` — one row per source partition and window: the KIP's value, min, max and avg;
* :func:`lag_at` — the lag at given instants (as a capture of Kafka's tools would have seen it);
* :func:`outage_episodes` — one row per interval in which a partition's LRO did not advance while
  its LEO did, with peak lag and time to catch up; :func:`flow_outages` — one row per interval in
  which MirrorMaker 2 replicated nothing at all for a flow;
* :func:`translation_audit` — one row per synced consumer group, partition and instant: the source
  group's committed offset, the checkpoint MM2 published, the target group's committed offset, and
  what a consumer failing over then would re-read or skip;
* :func:`reported_metrics` — MirrorMaker 2's own ``replication-latency-ms``, ``record-age-ms``,
  ``record-count`` and ``checkpoint-latency-ms`` samples, drawn beside the computed figures.

Offsets. ``log_end_offset`` is the source partition's end offset (the next offset to be written, as
``kafka-get-offsets.sh`` prints it). MirrorMaker 2 stores in its Connect source offset the offset of
the last record it replicated; ``replicated_end`` is that plus one (the next record to replicate,
where the task resumes), so ``lag_records = log_end_offset - replicated_end`` is 0 when MM2 has
replicated everything. An offset sync ``(upstream, downstream)`` says record ``upstream`` had been
replicated when it was written, so it gives ``replicated_end >= upstream + 1``. ``replicated_end``
is taken from the Connect source offsets and, where the bundle has none yet for the partition
(before MM2's first commit, or a bundle of the source cluster alone), from the offset syncs; each
row names its source in ``lro_source``. Connect commits source offsets every
``offset.flush.interval.ms`` (60 s by default), so between commits the Connect figure is an upper
bound of the lag; the offset syncs are written as records are acknowledged.

Which nodes are the source cluster: :func:`cluster_of_nodes` (the manifest, else where MirrorMaker
2's topics and the replicated topics lie, with ``mm2.properties`` naming the clusters and flows,
and nodes sharing a ``meta.properties`` cluster id sharing an alias).

Examples
--------
>>> from workbench.analysis import mirror
>>> frames = mirror.analyse(tables, {})                           # doctest: +SKIP
>>> frames.windows.where("topic = 'orders'").show()                # doctest: +SKIP
>>> mirror.findings_for(tables, {}).show(truncate=False)          # doctest: +SKIP
"""

from __future__ import annotations

from workbench.analysis.mirror.area import (
    analyse,
    area_findings,
    findings_for,
    key_figures,
    settings_from,
    view_frames,
)
from workbench.analysis.mirror.audit import AUDIT_COLUMNS, audit_summary, effective_commits, translation_audit
from workbench.analysis.mirror.flows import MM2_DEFAULTS, Flow, cluster_of_nodes, flows_of, mm2_properties
from workbench.analysis.mirror.kafka import METRIC_COLUMNS, MM2_METRICS, reported_metrics
from workbench.analysis.mirror.lag import (
    DEFAULT_WINDOW_S,
    KEY,
    OBSERVATION_SCHEMA,
    TIMELINE_COLUMNS,
    WINDOW_COLUMNS,
    lag_at,
    lag_timeline,
    lag_windows,
    lro_observations,
    source_growth,
)
from workbench.analysis.mirror.outages import (
    EPISODE_COLUMNS,
    FULL_SHARE,
    MIN_OUTAGE_S,
    OUTAGE_CADENCES,
    OUTAGE_COLUMNS,
    flow_outages,
    outage_episodes,
)
from workbench.analysis.mirror.result import MirrorAnalysis
from workbench.analysis.mirror.verdicts import findings, missing_inputs

# isort: split
from workbench.analysis.mirror import area as _area  # noqa: F401  (registers the area)

__all__ = [
    "MM2_DEFAULTS", "Flow", "mm2_properties", "flows_of", "cluster_of_nodes", "DEFAULT_WINDOW_S", "KEY",
    "OBSERVATION_SCHEMA", "TIMELINE_COLUMNS", "WINDOW_COLUMNS", "lro_observations", "source_growth", "lag_timeline",
    "lag_windows", "lag_at", "MIN_OUTAGE_S", "OUTAGE_CADENCES", "FULL_SHARE", "EPISODE_COLUMNS", "OUTAGE_COLUMNS",
    "outage_episodes", "flow_outages", "AUDIT_COLUMNS", "effective_commits", "translation_audit", "audit_summary",
    "METRIC_COLUMNS", "MM2_METRICS", "reported_metrics", "missing_inputs", "findings", "MirrorAnalysis",
    "settings_from", "analyse", "findings_for", "area_findings", "view_frames", "key_figures",
]
