"""The quorum area's contract: its analysis of a bundle, findings, view frames and key figures."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis.metadata_log import restarts_for
from workbench.analysis.quorum.appends import (
    DEFAULT_STALL_MULTIPLE,
    IDLE_CONFIG,
    METADATA_TOPIC,
    NoOpWriting,
    cadence,
    log_appends,
    noop_writing,
    stalls,
)
from workbench.analysis.quorum.brokers import fence_events, node_roles
from workbench.analysis.quorum.episodes import divergence_episodes
from workbench.analysis.quorum.kafka import batch_sizes, raft_latencies
from workbench.analysis.quorum.leaders import (
    STATIC_VOTERS_CONFIG,
    configured_voters,
    leader_timeline,
    voter_changes,
    voters_beside_status,
)
from workbench.analysis.quorum.positions import apply_lag, node_offsets
from workbench.analysis.quorum.verdicts import findings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame



@dataclass(frozen=True)
class QuorumAnalysis:
    """Every output of this module for one bundle (see :func:`analyse`)."""

    writing: NoOpWriting
    appends: DataFrame
    timeline: DataFrame
    cadence: DataFrame
    stalls: DataFrame
    offsets: DataFrame
    episodes: DataFrame
    fences: DataFrame
    voters: DataFrame
    latencies: DataFrame
    batch_sizes: DataFrame
    missing: tuple[str, ...]
    restarts: DataFrame | None = None
    apply_lag: DataFrame | None = None
    voter_captures: DataFrame | None = None


def _has_rows(frame: DataFrame | None) -> bool:
    return frame is not None and frame.limit(1).count() > 0


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> QuorumAnalysis:
    """The quorum analysis of a bundle's tables, each output computed once per bundle and parameters.

    Parameters
    ----------
    tables : Tables
        A loaded bundle (:func:`workbench.load`).
    params : mapping, optional
        ``quorum_stall_multiple`` (default 4), ``quorum_idle_ms`` (0 or absent: from the
        controllers' properties, else Kafka's 500 ms).

    Examples
    --------
    >>> result = analyse(tables)    # doctest: +SKIP
    >>> result.stalls.show()        # doctest: +SKIP
    """
    params = params or {}
    multiple = float(params.get("quorum_stall_multiple") or DEFAULT_STALL_MULTIPLE)
    idle = int(params.get("quorum_idle_ms") or 0) or None
    key = f"quorum:{multiple}:{idle}"
    cache = _CACHE.get(id(tables))
    if cache is None:
        cache = _CACHE[id(tables)] = {}
        weakref.finalize(tables, _CACHE.pop, id(tables), None)
    if key in cache:
        return cache[key]
    scope = quorum_scope(tables)
    metadata, configs = scope.only(tables.metadata), scope.only(tables.configs)
    from workbench.spark.configs import static_settings

    settings = static_settings(tables)
    idle_values = [value for _, name, value, _, cluster in settings if name == IDLE_CONFIG
                   and scope.holds(cluster)]
    writing = noop_writing(metadata, configs, idle_ms=idle, stall_multiple=multiple, configured=idle_values)
    static_voters = configured_voters(value for _, name, value, _, cluster in settings
                                      if name == STATIC_VOTERS_CONFIG and scope.holds(cluster))
    # the metadata log's batches only: the inventory names its files (not every data segment read)
    from workbench.analysis.logs import batches_of

    log_batches = scope.only(batches_of(tables, [METADATA_TOPIC]))
    appends = tables.derive("quorum.log_appends", lambda: log_appends(log_batches, metadata))
    timeline = tables.derive("quorum.leader_timeline", lambda: leader_timeline(
        metadata, appends, scope.only(tables.quorum), scope.only(tables.tool_quorum_status)))
    roles = node_roles(metadata, configs)
    offsets = tables.derive("quorum.node_offsets", lambda: node_offsets(
        appends, metrics=scope.only(tables.metrics), replication=tables.tool_quorum_replication,
        snapshots=scope.only(tables.snapshots), batches=log_batches, roles=roles))
    plain_fences = fence_events(metadata)
    episodes = tables.derive(f"quorum.episodes:{key}",
                             lambda: divergence_episodes(offsets, writing, fences=plain_fences))
    missing: list[str] = [scope.note] if scope.note else []
    if not _has_rows(appends):
        missing.append("the bundle holds no metadata log segment: no cadence, stall or leader timeline is judged")
    gauges = "name like '%lastappliedrecordoffset%' or name like '%last_applied_record_offset%'"
    if not _has_rows(tables.metrics.where(gauges)):
        missing.append("no KIP-835 gauge (LastAppliedRecordOffset, last-applied-record-offset) was exported: "
                       "nodes' applied offsets come only from captures, snapshots and their own logs")
    if not _has_rows(tables.tool_quorum_replication):
        missing.append("no kafka-metadata-quorum describe --replication capture: the leader's view of each "
                       "node's log end is not shown")
    voters = voter_changes(metadata)
    result = QuorumAnalysis(
        writing=writing, appends=appends, timeline=timeline, cadence=cadence(appends, timeline),
        stalls=stalls(appends, writing, timeline), offsets=offsets, episodes=episodes,
        fences=fence_events(metadata, episodes), voters=voters,
        latencies=raft_latencies(scope.only(tables.metrics)),
        batch_sizes=batch_sizes(appends, scope.only(tables.metrics)),
        missing=tuple(missing), restarts=scope.only(restarts_for(tables)), apply_lag=apply_lag(offsets, appends),
        voter_captures=voters_beside_status(voters, scope.only(tables.tool_quorum_status), static_voters))
    cache[key] = result
    return result


@dataclass(frozen=True)
class QuorumScope:
    """The one cluster whose quorum a bundle's analysis judges, and how to keep the others' rows out.

    A bundle may hold several clusters' metadata logs (MirrorMaker 2's source and target, say): each
    has its own quorum, epochs and offsets, which read as one log would mix. The analysed cluster is
    the one whose metadata log the most nodes hold (then the most bytes of it); ``note`` names the
    others, which are not judged.
    """

    cluster: str | None = None
    foreign_paths: tuple[str, ...] = ()
    foreign_nodes: tuple[int, ...] = ()
    note: str = ""

    def holds(self, cluster: str | None) -> bool:
        """Whether rows of ``cluster`` (``None``: of no known cluster) belong to the analysed one."""
        return not self.foreign_paths or cluster is None or cluster == self.cluster

    def only(self, frame: DataFrame | None) -> DataFrame | None:
        """``frame`` without the other clusters' rows: by ``cluster_id``, file ``path`` or ``node_id``."""
        if frame is None or not self.foreign_paths:
            return frame
        keep = F.lit(True)
        if "cluster_id" in frame.columns:
            # null or empty: of no known cluster (quorum-state v0 files write an empty clusterId)
            keep = keep & F.coalesce(F.col("cluster_id"), F.lit("")).isin("", self.cluster)
        if "path" in frame.columns:
            keep = keep & ~F.coalesce(F.col("path").isin(*self.foreign_paths), F.lit(False))
        if "node_id" in frame.columns and self.foreign_nodes:  # ids no node of the analysed cluster has
            keep = keep & ~F.coalesce(F.col("node_id").isin(*self.foreign_nodes), F.lit(False))
        return frame.where(keep)


def quorum_scope(tables: Any) -> QuorumScope:
    """The cluster whose quorum :func:`analyse` judges (:class:`QuorumScope`); the whole bundle when
    its metadata logs are of one cluster."""
    bundle = getattr(tables, "bundle", None)
    if bundle is None:
        return QuorumScope()
    holders: dict[str, tuple[set[int], int]] = {}
    for a in bundle.metadata_files:
        cluster = bundle.cluster_of(a)
        if cluster is not None:
            nodes, size = holders.setdefault(cluster, (set(), 0))
            nodes.add(a.node_id)
            holders[cluster] = (nodes, size + a.bytes)
    if len(holders) < 2:
        return QuorumScope()
    main = max(sorted(holders), key=lambda c: (len(holders[c][0]), holders[c][1]))
    clusters = bundle.clusters()
    others = [c for c in holders if c != main]
    foreign_paths = tuple(sorted(str(bundle.root / a.path) for a in bundle.artifacts
                                 if bundle.cluster_of(a) in others))
    foreign_nodes = tuple(sorted({n for c in others for n in clusters.get(c, ())} - set(clusters.get(main, ()))))

    def named(c: str) -> str:
        nodes = clusters.get(c, [])
        return f"cluster {c} (node{'s' if len(nodes) > 1 else ''} {', '.join(map(str, nodes))})"

    note = (f"the bundle holds the metadata logs of {len(holders)} clusters: this section judges the quorum of "
            f"{named(main)}, whose log the most nodes hold; not judged: {'; '.join(named(c) for c in sorted(others))}")
    return QuorumScope(main, foreign_paths, foreign_nodes, note)


#: Analyses of the bundles in use, by ``id(tables)`` (dropped when the tables are collected).
_CACHE: dict[int, dict[str, QuorumAnalysis]] = {}


def findings_for(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """:func:`findings` of a bundle's tables (the quorum area's findings; see :func:`analyse`).

    Examples
    --------
    >>> findings_for(tables, {"quorum_stall_multiple": 4}).show(truncate=False)    # doctest: +SKIP
    """
    return area_findings(analyse(tables, params))


def area_findings(result: QuorumAnalysis) -> DataFrame:
    """The area's findings of one analysis: commit stalls, leader changes, nodes left behind, what is missing."""
    return findings(result.writing, unexplained_stalls(result), result.episodes, result.timeline,
                    missing=result.missing)


def unexplained_stalls(result: QuorumAnalysis) -> DataFrame:
    """The commit stalls that no whole-cluster stop explains: a stall that began while the whole cluster
    was down (:func:`workbench.analysis.metadata_log.cluster_restarts`, told by the ISR area) is its silence."""
    if result.restarts is None:
        return result.stalls
    down = result.restarts.select(F.col("start").alias("_down"), F.col("end").alias("_back"))
    return result.stalls.join(down, (F.col("start") >= F.col("_down")) & (F.col("start") <= F.col("_back")),
                              "left_anti")


def view_frames(result: QuorumAnalysis) -> dict[str, DataFrame]:
    """What the quorum view draws: the leader timeline, stalls, every node's offsets and episodes, fences."""
    return {"timeline": result.timeline, "stalls": result.stalls, "offsets": result.offsets,
            "episodes": result.episodes, "fences": result.fences, "cadence": result.cadence,
            "latencies": result.latencies}


def key_figures(result: QuorumAnalysis) -> dict[str, Any]:
    """The summary's figures: stalls, leader epochs, divergence episodes, Raft latencies."""
    st = unexplained_stalls(result).agg(F.count("*").alias("n"), F.max("seconds").alias("longest"),
                           F.sum("seconds").alias("total")).collect()[0]
    ep = result.episodes.agg(F.count("*").alias("n"), F.max("peak_offset_lag").alias("lag"),
                             F.max("peak_time_lag_ms").alias("ms")).collect()[0]
    lat = result.latencies.agg(F.max(F.when(~F.isnan("commit_latency_max_ms"), F.col("commit_latency_max_ms")))
                               .alias("commit"),
                               F.max(F.when(~F.isnan("election_latency_max_ms"), F.col("election_latency_max_ms")))
                               .alias("election")).collect()[0]
    tl = result.timeline.agg(F.count("*").alias("epochs"),
                             F.countDistinct(F.when(F.col("leader") >= 0, F.col("leader"))).alias("leaders")
                             ).collect()[0]
    return {
        "noop_records": result.writing.noop_records,
        "writes_noop_records": result.writing.writes_noops,
        "idle_interval_ms": result.writing.idle_ms,
        "stall_threshold_ms": result.writing.threshold_ms,
        "commit_stalls": st["n"] if result.writing.writes_noops else None,
        "longest_stall_seconds": st["longest"] or 0.0,
        "stalled_seconds": st["total"] or 0.0,
        "leader_epochs": tl["epochs"],
        "leaders": tl["leaders"],
        "divergence_episodes": ep["n"],
        "peak_offset_lag": ep["lag"] or 0,
        "peak_time_lag_ms": ep["ms"] or 0,
        "commit_latency_max_ms": lat["commit"],
        "election_latency_max_ms": lat["election"],
    }


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("quorum", title="KRaft quorum health (KIP-835)", order=1, analyse=analyse, findings=area_findings,
                  tables=("metadata", "quorum", "tool_quorum_status", "tool_quorum_replication"),
                  frames=view_frames, key_figures=key_figures)


_register()
