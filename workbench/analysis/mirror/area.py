"""The mirror area's contract: its result, the analysis of a bundle, its findings, view frames and key figures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis.mirror.audit import effective_commits, translation_audit
from workbench.analysis.mirror.flows import cluster_of_nodes, flows_of, mm2_properties
from workbench.analysis.mirror.kafka import reported_metrics
from workbench.analysis.mirror.lag import (
    DEFAULT_WINDOW_S,
    KEY,
    lag_timeline,
    lag_windows,
    lro_observations,
    source_growth,
)
from workbench.analysis.mirror.outages import flow_outages, outage_episodes
from workbench.analysis.mirror.result import MirrorAnalysis
from workbench.analysis.mirror.verdicts import findings, missing_inputs

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _param_float(params: Mapping[str, Any], name: str, default: float) -> float:
    value = params.get(name)
    if value in (None, ""):
        return default
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        from workbench.errors import ConfigError

        raise ConfigError(f"parameter {name}: expected a number, got {value!r}") from exc


def settings_from(params: Mapping[str, Any]) -> dict[str, float]:
    """The area's parameters: ``mirror_window_s`` (15), ``mirror_outage_min_s`` (0: from each partition's
    cadence), ``mirror_stale_s`` (0: three checkpoint intervals).

    >>> settings_from({"mirror_window_s": "30"})["window_s"]
    30.0
    """
    window = _param_float(params, "mirror_window_s", DEFAULT_WINDOW_S)
    if window <= 0:
        from workbench.errors import ConfigError

        raise ConfigError(f"parameter mirror_window_s: expected a positive number of seconds, got {window}")
    return {"window_s": window, "outage_min_s": _param_float(params, "mirror_outage_min_s", 0.0),
            "stale_s": _param_float(params, "mirror_stale_s", 0.0)}


_ANALYSED: dict[tuple, MirrorAnalysis] = {}


def analyse(tables: Any, params: Mapping[str, Any] | None = None, *, start: Any = None,
            end: Any = None) -> MirrorAnalysis:
    """Every mirror result of a bundle, computed once per tables, parameters and window.

    Parameters
    ----------
    tables : workbench.spark.registry.Tables
    params : mapping, optional
        ``mirror_window_s``, ``mirror_outage_min_s``, ``mirror_stale_s`` (:func:`settings_from`).
    start, end : timestamp, optional
        Restrict the timeline and the episodes to this window.
    """
    s = settings_from(params or {})
    cache_key = (id(tables), tuple(sorted(s.items())), str(start), str(end))
    if cache_key in _ANALYSED:
        return _ANALYSED[cache_key]
    spark: SparkSession = tables.spark
    mirror = tables.mirror
    tag = f"mirror:{sorted(s.items())}:{start}:{end}"
    seen = [(r["source_alias"], r["target_alias"]) for r in
            mirror.where(F.col("source_alias").isNotNull() & F.col("target_alias").isNotNull()
                         & F.col("kind").isin("source_offset", "offset_sync", "checkpoint"))
            .select("source_alias", "target_alias").distinct().collect()]
    flows = flows_of(mm2_properties(tables.bundle), seen)
    mirror_clusters = {int(r["node_id"]): r["cluster"] for r in  # a row of unknown node names no node's cluster
                       mirror.where(F.col("cluster").isNotNull() & F.col("node_id").isNotNull())
                       .select("node_id", "cluster").distinct().collect()}
    observations = tables.derive(f"{tag}:observations", lambda: lro_observations(mirror))
    upstream = [r[0] for r in observations.select("topic").distinct().collect()]
    clusters = cluster_of_nodes(tables.bundle, mirror_clusters, flows, upstream)
    nodes_by_alias: dict[str, list[int]] = {}
    for node, alias in clusters.items():
        nodes_by_alias.setdefault(alias, []).append(node)
    # the replicated partitions: named by MM2's records, or the flow's topic filter over the source's topics
    from_records = observations.select(*KEY).distinct()
    configured = []
    for f in flows:
        for a in tables.bundle.of_kind("segment"):
            if (a.topic and a.partition is not None and clusters.get(a.node_id) == f.source
                    and f.replicates(a.topic) and f.configured):
                configured.append((f.source, f.target, a.topic, int(a.partition)))
    partitions = from_records
    if configured:
        partitions = partitions.unionByName(
            spark.createDataFrame(sorted(set(configured)), "source_alias string, target_alias string, topic string, "
                                                           "partition int")).distinct()
    partitions = tables.derive(f"{tag}:partitions", lambda: partitions)
    sources = {f.source: nodes_by_alias.get(f.source, []) for f in flows}
    growth = tables.derive(f"{tag}:growth", lambda: source_growth(tables.batches, partitions, sources))
    w = s["window_s"]
    timeline = tables.derive(f"{tag}:timeline", lambda: lag_timeline(growth, observations, window_s=w,
                                                                       start=start, end=end))
    windows = tables.derive(f"{tag}:windows", lambda: lag_windows(timeline, window_s=w))
    episodes = tables.derive(f"{tag}:episodes", lambda: outage_episodes(
        timeline, observations, growth, min_outage_s=s["outage_min_s"], start=start, end=end))
    outages = tables.derive(f"{tag}:outages", lambda: flow_outages(
        observations, growth, episodes=episodes, min_outage_s=s["outage_min_s"], start=start, end=end))
    source_nodes = sorted({n for f in flows for n in nodes_by_alias.get(f.source, [])})
    target_nodes = sorted({n for f in flows for n in nodes_by_alias.get(f.target, [])})
    offsets = tables.offsets
    audit = tables.derive(f"{tag}:audit", lambda: translation_audit(
        mirror, observations, effective_commits(offsets, source_nodes), effective_commits(offsets, target_nodes),
        flows, window_s=w, stale_s=s["stale_s"]))
    metrics = tables.derive(f"{tag}:metrics", lambda: reported_metrics(tables.metrics, flows))
    result = MirrorAnalysis(flows, clusters, partitions, observations, growth, timeline, windows, episodes, outages,
                            audit, metrics, [], w)
    result.missing = missing_inputs(result, tables)
    _ANALYSED[cache_key] = result
    return result


def findings_for(tables: Any, params: Mapping[str, Any] | None = None, *, start: Any = None,
                 end: Any = None) -> DataFrame:
    """:func:`findings` of a bundle's tables (computed once per tables, parameters and window)."""
    result = analyse(tables, params or {}, start=start, end=end)
    return tables.derive(f"mirror.findings:{sorted(settings_from(params or {}).items())}:{start}:{end}",
                         lambda: findings(result, tables.spark))


def area_findings(result: MirrorAnalysis) -> DataFrame:
    """The area's findings of one analysis (:func:`findings`)."""
    return findings(result)


def view_frames(result: MirrorAnalysis) -> dict[str, DataFrame]:
    """What the mirror view draws: lag windows, episodes, outages, the failover audit's boundaries, samples."""
    return {"windows": result.windows, "episodes": result.episodes, "outages": result.outages,
            "audit": result.audit.where("boundary"), "metrics": result.metrics,
            "timeline": result.timeline.where("boundary")}


def key_figures(result: MirrorAnalysis) -> dict[str, Any]:
    """The summary's figures: partitions, the largest lags, outages, episodes, the failover audit's worst."""
    t = result.timeline.agg(F.countDistinct(*KEY).alias("partitions"),
                            F.max("lag_records").alias("max_lag_records"), F.max("lag_bytes").alias("max_lag_bytes"),
                            F.max("lag_age_s").alias("max_lag_age_s")).collect()[0].asDict()
    o = (result.outages.agg(F.count("*").alias("outages"), F.sum("seconds").alias("outage_seconds"))
         .collect()[0].asDict())
    e = result.episodes.agg(F.count("*").alias("partition_episodes"),
                            F.sum((F.col("scope") == "partial").cast("int")).alias("partial_episodes")).collect()[0]
    a = result.audit.agg(F.max("reread").alias("max_failover_reread"),
                         F.max("skip").alias("max_failover_skip")).collect()[0].asDict()
    out = {**t, **o, **e.asDict(), **a, "missing_inputs": len(result.missing)}
    return {k: (0 if v is None else v) for k, v in out.items()}


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("mirror", title="MirrorMaker 2 backlog (KIP-971)", order=4, analyse=analyse,
                  findings=area_findings, tables=("mirror",), frames=view_frames, key_figures=key_figures)


_register()
