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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.analysis._checks import require_columns
from workbench.analysis.logs import asof, log_growth
from workbench.analysis.text import bytes_text

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The KIP-971 refresh interval: the default window of value/min/max/avg.
DEFAULT_WINDOW_S = 15.0
#: Shortest stall counted as an outage when the partition's own cadence does not ask for longer.
MIN_OUTAGE_S = 5.0
#: A stall is an outage when longer than this many times the partition's median interval between
#: advances of MirrorMaker 2's position (and than :data:`MIN_OUTAGE_S`).
OUTAGE_CADENCES = 3.0
#: A partition's outage is "full" when MirrorMaker 2 replicated nothing at all for its flow during at
#: least this share of it; otherwise other partitions kept moving: a "partial" outage.
FULL_SHARE = 0.9

#: Key of a replicated source partition.
KEY = ("source_alias", "target_alias", "topic", "partition")

#: MirrorMaker 2's defaults for the settings the audit reads (MirrorSourceConfig, MirrorCheckpointConfig,
#: Connect's WorkerConfig).
MM2_DEFAULTS: dict[str, str] = {
    "topics": ".*",
    "topics.exclude": r".*[\-\.]internal, .*\.replica, __.*",
    "groups": ".*",
    "offset.lag.max": "100",
    "emit.checkpoints.interval.seconds": "60",
    "sync.group.offsets.interval.seconds": "60",
    "offset.flush.interval.ms": "60000",
}

OBSERVATION_SCHEMA = (
    "source_alias string, target_alias string, topic string, partition int, time timestamp, kind string, "
    "replicated_end long, downstream_offset long, record_offset long"
)
TIMELINE_COLUMNS = (
    "source_alias", "target_alias", "topic", "partition", "time", "boundary", "log_end_offset", "log_end_bytes",
    "replicated_end", "lro_source", "connect_end", "synced_end", "progress_end", "lag_records", "lag_bytes",
    "lag_age_s",
)
WINDOW_COLUMNS = (
    "source_alias", "target_alias", "topic", "partition", "window_start", "window_end", "lro_source",
    "log_end_offset", "replicated_end", "lag_records", "lag_records_min", "lag_records_max", "lag_records_avg",
    "lag_bytes", "lag_bytes_max", "lag_age_s", "lag_age_s_max",
)
EPISODE_COLUMNS = (
    "source_alias", "target_alias", "topic", "partition", "start", "end", "seconds", "open", "scope",
    "last_progress", "resumed", "replicated_end_at_start", "log_end_at_end", "peak_records", "peak_bytes",
    "peak_age_s", "peak_at", "caught_up_at", "catch_up_s", "evidence", "threshold_s",
)
OUTAGE_COLUMNS = ("source_alias", "target_alias", "start", "end", "seconds", "open", "partitions")
AUDIT_COLUMNS = (
    "source_alias", "target_alias", "group", "topic", "target_topic", "partition", "time", "boundary",
    "source_committed", "source_commit_time", "checkpoint_time", "checkpoint_upstream", "checkpoint_downstream",
    "target_committed", "target_commit_time", "exact_downstream", "checkpoint_exact", "translation_gap",
    "checkpoint_age_s", "stale", "behind_sync_cadence", "failover_offset", "failover_from", "reread", "skip",
    "status",
)
METRIC_COLUMNS = ("source_alias", "target_alias", "topic", "target_topic", "partition", "group", "metric", "time",
                  "value", "format", "node_id")

#: The MirrorMaker 2 metrics drawn beside the computed figures: normalised name -> short name.
MM2_METRICS: dict[str, str] = {
    "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms": "replication-latency-ms",
    "kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms_max": "replication-latency-ms-max",
    "kafka_connect_mirror_mirrorsourceconnector_record_age_ms": "record-age-ms",
    "kafka_connect_mirror_mirrorsourceconnector_record_age_ms_max": "record-age-ms-max",
    "kafka_connect_mirror_mirrorsourceconnector_record_count": "record-count",
    "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms": "checkpoint-latency-ms",
    "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms_max": "checkpoint-latency-ms-max",
}


# -- clusters, flows and settings ---------------------------------------------------------------


@dataclass(frozen=True)
class Flow:
    """One enabled MirrorMaker 2 flow and the settings the analysis reads (MM2's defaults where unset).

    Attributes
    ----------
    source, target : str
        Cluster aliases.
    separator : str
        ``replication.policy.separator``: a replicated topic is ``<source><separator><topic>``.
    settings : dict
        ``topics``, ``topics.exclude``, ``groups``, ``offset.lag.max``,
        ``emit.checkpoints.interval.seconds``, ``sync.group.offsets.interval.seconds`` (a flow's
        ``<source>-><target>.<name>`` over the top-level ``<name>``) and ``offset.flush.interval.ms``
        (the worker's, under the target cluster's prefix ``<target>.``).
    configured : bool
        Whether ``mm2.properties`` named the flow (else it was seen in MirrorMaker 2's records only).
    """

    source: str
    target: str
    separator: str = "."
    settings: dict[str, str] = field(default_factory=dict)
    configured: bool = False

    def setting(self, name: str) -> str:
        """A setting's value (MM2's default when not configured)."""
        return self.settings.get(name, MM2_DEFAULTS.get(name, ""))

    def number(self, name: str) -> float:
        """A numeric setting (its default when the configured value is not a number)."""
        try:
            return float(self.setting(name))
        except ValueError:
            return float(MM2_DEFAULTS[name])

    def upstream_topic(self, topic: str) -> str:
        """The source topic of a replicated (downstream) topic name (DefaultReplicationPolicy).

        >>> Flow("A", "B").upstream_topic("A.orders"), Flow("A", "B").upstream_topic("orders")
        ('orders', 'orders')
        """
        prefix = self.source + self.separator
        return topic[len(prefix):] if topic.startswith(prefix) else topic

    def replicates(self, topic: str) -> bool:
        """Whether the flow's topic filter takes ``topic`` (``topics`` minus ``topics.exclude``).

        >>> f = Flow("A", "B", settings={"topics": "orders, pay.*"})
        >>> f.replicates("orders"), f.replicates("payments"), f.replicates("mm2-offsets.A.internal")
        (True, True, False)
        """
        return _matches(self.setting("topics"), topic) and not _matches(self.setting("topics.exclude"), topic)


def _matches(patterns: str, name: str) -> bool:
    for p in (p.strip() for p in patterns.split(",")):
        if not p:
            continue
        try:
            if re.fullmatch(p, name):
                return True
        except re.error:
            if p == name:
                return True
    return False


def mm2_properties(bundle: Any) -> dict[str, str]:
    """The bundle's MirrorMaker 2 configuration (``mm2.properties`` or ``connect-mirror-maker*.properties``), parsed.

    The shallowest such file wins (as for the ``mirror`` table); ``{}`` when there is none or it
    cannot be read.
    """
    from workbench.formats.kraft_files import parse_java_properties
    from workbench.spark.mirror import MM2_CONFIG_NAME

    for a in sorted(bundle.artifacts, key=lambda a: (a.path.count("/"), a.path)):
        if MM2_CONFIG_NAME.match(a.path.rsplit("/", 1)[-1]):
            try:
                return parse_java_properties((bundle.root / a.path).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                return {}
    return {}


def flows_of(properties: Mapping[str, str], seen: Iterable[tuple[str, str]] = ()) -> list[Flow]:
    """The enabled flows of a parsed MirrorMaker 2 configuration, plus flows seen only in records.

    Examples
    --------
    >>> [f.setting("offset.lag.max") for f in flows_of({"clusters": "A, B", "A->B.enabled": "true",
    ...                                                  "A->B.offset.lag.max": "10"})]
    ['10']
    >>> flows_of({}, [("A", "B")])[0].configured
    False
    """
    from workbench.formats.mirror import mirror_topology

    topology = mirror_topology(dict(properties))
    out = []
    for source, target in topology.flows:
        settings = {}
        for name in MM2_DEFAULTS:
            if name == "offset.flush.interval.ms":
                value = properties.get(f"{target}.{name}")
            else:
                value = properties.get(f"{source}->{target}.{name}", properties.get(name))
            if value is not None:
                settings[name] = value.strip()
        out.append(Flow(source, target, topology.separator, settings, True))
    known = {(f.source, f.target) for f in out}
    for source, target in seen:
        if (source, target) not in known and source and target:
            out.append(Flow(source, target, topology.separator))
            known.add((source, target))
    return out


def cluster_of_nodes(bundle: Any, mirror_clusters: Mapping[int, str] | None = None,
                     flows: Sequence[Flow] = (), upstream_topics: Iterable[str] = ()) -> dict[int, str]:
    """Which cluster (MirrorMaker 2 alias) each node of a bundle belongs to.

    In order, the first that tells wins for a node:

    1. the bundle's ``manifest.json`` (``nodes[].cluster``);
    2. ``mirror_clusters``: the ``mirror`` table's ``cluster`` column per node (itself the manifest,
       else where MirrorMaker 2 puts each of its topics, with the clusters and flows of
       ``mm2.properties``);
    3. topic placement: a node holding a replicated topic ``<source><sep><topic>`` or the flow's
       Connect offsets topic ``mm2-offsets.<source>.internal`` is in the flow's target; a node holding
       ``mm2-offset-syncs.<target>.internal`` is in its source (the default offset-syncs location);
    4. a node holding only the upstream names of replicated topics (``upstream_topics``, e.g.
       ``orders``) is in the source of the one flow that replicates them;
    5. a node whose ``meta.properties`` cluster id is that of a node placed above gets its alias.

    Nodes nothing tells about are left out.

    Parameters
    ----------
    bundle : workbench.bundle.Bundle
    mirror_clusters : mapping, optional
        Node id -> alias from the ``mirror`` table.
    flows : sequence of Flow
        The flows (:func:`flows_of`).
    upstream_topics : iterable of str
        Source topic names MirrorMaker 2 replicated (its source offsets and offset syncs).

    Returns
    -------
    dict
        Node id -> cluster alias.

    Examples
    --------
    >>> cluster_of_nodes(workbench.open_bundle("bundle/"))          # doctest: +SKIP
    {1: 'source', 2: 'target'}
    """
    out: dict[int, str] = {}
    for n in (bundle.manifest or {}).get("nodes") or []:
        if isinstance(n, dict) and isinstance(n.get("id"), int) and isinstance(n.get("cluster"), str):
            out[n["id"]] = n["cluster"]
    for node, alias in (mirror_clusters or {}).items():
        if alias:
            out.setdefault(int(node), alias)
    topics_of: dict[int, set[str]] = {}
    for a in bundle.artifacts:
        if a.topic is not None and a.node_id is not None and a.node_id >= 0:
            topics_of.setdefault(a.node_id, set()).add(a.topic)
    placed: dict[int, str] = {}
    for node, topics in topics_of.items():
        for f in flows:
            remote = f.source + f.separator
            if any(t.startswith(remote) for t in topics) or f"mm2-offsets.{f.source}.internal" in topics:
                placed.setdefault(node, f.target)
            elif f"mm2-offset-syncs.{f.target}.internal" in topics:
                placed.setdefault(node, f.source)
    upstream = set(upstream_topics)
    for node, topics in topics_of.items():
        if node in placed or not (topics & upstream):
            continue
        sources = {f.source for f in flows}
        if len(sources) == 1:
            placed[node] = next(iter(sources))
    for node, alias in placed.items():
        out.setdefault(node, alias)
    ids = bundle.node_clusters()
    by_id: dict[str, set[str]] = {}
    for node, alias in out.items():
        if node in ids:
            by_id.setdefault(ids[node], set()).add(alias)
    for node, cid in ids.items():
        if node not in out and len(by_id.get(cid, ())) == 1:
            out[node] = next(iter(by_id[cid]))
    return dict(sorted(out.items()))


# -- MirrorMaker 2's position -------------------------------------------------------------------


def lro_observations(mirror: DataFrame) -> DataFrame:
    """One row per observation of MirrorMaker 2's replicated position of a source partition.

    Rows of :data:`OBSERVATION_SCHEMA`, each record of the ``mirror`` table counted once across node
    replicas. ``kind`` is ``connect_offset`` or ``offset_sync``; ``replicated_end`` is the offset after
    the last record replicated (source offset or sync's upstream offset, plus 1); ``downstream_offset``
    is a sync's offset in the target, else null. Tombstones and records without an offset are left out.
    """
    from pyspark.sql import functions as F

    require_columns(mirror, ("cluster", "internal_topic", "internal_partition", "offset", "timestamp", "kind",
                             "source_alias", "target_alias", "topic", "partition", "upstream_offset",
                             "downstream_offset", "deleted"), "lro_observations")
    rows = (mirror.where(F.col("kind").isin("source_offset", "offset_sync")
                         & ~F.coalesce(F.col("deleted"), F.lit(False))
                         & F.col("upstream_offset").isNotNull() & F.col("topic").isNotNull()
                         & F.col("partition").isNotNull() & F.col("timestamp").isNotNull())
            .dropDuplicates(["cluster", "internal_topic", "internal_partition", "offset"]))
    return rows.select(
        "source_alias", "target_alias", "topic", "partition", F.col("timestamp").alias("time"),
        F.when(F.col("kind") == "source_offset", F.lit("connect_offset")).otherwise(F.lit("offset_sync")).alias("kind"),
        (F.col("upstream_offset") + 1).alias("replicated_end"),
        F.when(F.col("kind") == "offset_sync", F.col("downstream_offset")).cast("long").alias("downstream_offset"),
        F.col("offset").alias("record_offset"))


def source_growth(batches: DataFrame, partitions: DataFrame, source_nodes: Mapping[str, Sequence[int]]) -> DataFrame:
    """The source log over time (:func:`workbench.analysis.logs.log_growth`) of each replicated partition.

    ``source_nodes`` maps a source alias to its cluster's node ids: only their replicas are read, as a
    target may hold a topic of the same name. Adds ``source_alias, target_alias`` (one copy per flow).
    """
    from pyspark.sql import functions as F

    topics = [r[0] for r in partitions.select("topic").distinct().collect()]
    out = log_growth(batches.where(F.lit(False))).withColumn("source_alias", F.lit(None).cast("string"))
    for alias in sorted(source_nodes):
        nodes = [int(n) for n in source_nodes[alias]]
        if nodes:
            growth = log_growth(batches.where(F.col("node_id").isin(nodes)), topics=topics)
            out = out.unionByName(growth.withColumn("source_alias", F.lit(alias)))
    return out.join(partitions.select(*KEY), ["source_alias", "topic", "partition"])


def _grid(frame: DataFrame, key: Sequence[str], time: str, window_s: float, start: Any = None,
          end: Any = None) -> DataFrame:
    """Window boundaries (epoch-aligned, every ``window_s``) over each key's span of ``time``."""
    from pyspark.sql import functions as F

    step = int(round(window_s * 1_000_000))
    span = frame.groupBy(*key).agg(F.min(time).alias("_lo"), F.max(time).alias("_hi"))
    if start is not None:
        span = span.withColumn("_lo", F.greatest("_lo", F.lit(start).cast("timestamp")))
    if end is not None:
        span = span.withColumn("_hi", F.least("_hi", F.lit(end).cast("timestamp")))
    lo = F.floor(F.unix_micros("_lo") / F.lit(step)) * F.lit(step)
    hi = F.ceil(F.unix_micros("_hi") / F.lit(step)) * F.lit(step)
    return (span.where(F.col("_lo") <= F.col("_hi"))
            .select(*key, F.explode(F.sequence(lo.cast("long"), hi.cast("long"),
                                               F.lit(step).cast("long"))).alias("_us"))
            .select(*key, F.timestamp_micros("_us").alias(time)))


def lag_timeline(growth: DataFrame, observations: DataFrame, *, window_s: float = DEFAULT_WINDOW_S,
                 start: Any = None, end: Any = None) -> DataFrame:
    """The replication lag of each source partition at every change, and at each window boundary.

    Parameters
    ----------
    growth : DataFrame
        :func:`source_growth`.
    observations : DataFrame
        :func:`lro_observations`.
    window_s : float
        Window length: a row is added at every multiple of it (epoch-aligned), so that each window
        opens with the value in force.
    start, end : timestamp, optional
        Keep only instants in ``[start, end]`` (the values in force at ``start`` are carried in).

    Returns
    -------
    DataFrame
        :data:`TIMELINE_COLUMNS`, one row per (``source_alias, target_alias, topic, partition``,
        ``time``), the values in force from ``time`` until the next row:

        * ``boundary``: a window boundary falls on ``time``;
        * ``log_end_offset``, ``log_end_bytes``: the source partition's end offset and the bytes of
          its log (from the first batch in the bundle) at ``time`` (null before the first batch);
        * ``connect_end``, ``synced_end``: ``replicated_end`` of the last Connect source offset and of
          the last offset sync at or before ``time``; ``replicated_end``: the first of them that is
          known, ``lro_source`` saying which (``connect_offset``, ``offset_sync``, null: neither yet);
          ``progress_end``: the larger (what MM2 is known to have replicated);
        * ``lag_records`` = ``log_end_offset - replicated_end`` (KIP-971's replication-record-lag);
        * ``lag_bytes``: bytes of source log from the batch holding offset ``replicated_end`` to the
          log end (a batch partly replicated counts in full); 0 when nothing waits;
        * ``lag_age_s``: seconds since the log held that batch (its ``max_timestamp``, as a running
          maximum): the age of the oldest record not yet replicated; 0 when nothing waits.

    Examples
    --------
    >>> lag_timeline(source_growth(tables.batches, parts, {"source": [1]}),
    ...              lro_observations(tables.mirror)).show()     # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(growth, (*KEY, "reached", "end_offset", "bytes_end", "bytes_before"), "lag_timeline (growth)")
    require_columns(observations, (*KEY, "time", "kind", "replicated_end", "record_offset"),
                    "lag_timeline (observations)")
    key = list(KEY)
    nothing = F.lit(None)
    g = growth.select(*key, F.col("reached").alias("time"), F.lit(0).alias("_src"), F.col("end_offset").alias("_ord"),
                      F.col("end_offset").alias("_leo"), F.col("bytes_end").alias("_leo_bytes"),
                      nothing.cast("long").alias("_c"), nothing.cast("long").alias("_s"))
    o = observations.select(*key, "time",
                            F.when(F.col("kind") == "connect_offset", 1).otherwise(2).alias("_src"),
                            F.col("record_offset").alias("_ord"), nothing.cast("long").alias("_leo"),
                            nothing.cast("long").alias("_leo_bytes"),
                            F.when(F.col("kind") == "connect_offset", F.col("replicated_end")).alias("_c"),
                            F.when(F.col("kind") == "offset_sync", F.col("replicated_end")).alias("_s"))
    events = g.unionByName(o)
    grid = _grid(events, key, "time", window_s, start, end).select(
        *key, "time", F.lit(3).alias("_src"), F.lit(None).cast("long").alias("_ord"),
        *[nothing.cast("long").alias(c) for c in ("_leo", "_leo_bytes", "_c", "_s")])
    order = Window.partitionBy(*key).orderBy("time", "_src", F.col("_ord").asc_nulls_first())
    running = order.rowsBetween(Window.unboundedPreceding, 0)
    filled = events.unionByName(grid).select(
        *key, "time", "_src", "_ord",
        *[F.last(c, ignorenulls=True).over(running).alias(c) for c in ("_leo", "_leo_bytes", "_c", "_s")])
    at_time = Window.partitionBy(*key, "time")
    last = Window.partitionBy(*key, "time").orderBy(F.col("_src").desc(), F.col("_ord").desc_nulls_last())
    rows = (filled.withColumn("boundary", F.max((F.col("_src") == 3).cast("int")).over(at_time) == 1)
            .withColumn("_n", F.row_number().over(last)).where(F.col("_n") == 1)
            .select(*key, "time", "boundary", F.col("_leo").alias("log_end_offset"),
                    F.col("_leo_bytes").alias("log_end_bytes"), F.col("_c").alias("connect_end"),
                    F.col("_s").alias("synced_end"))
            .withColumn("replicated_end", F.coalesce("connect_end", "synced_end"))
            .withColumn("lro_source", F.when(F.col("connect_end").isNotNull(), F.lit("connect_offset"))
                        .when(F.col("synced_end").isNotNull(), F.lit("offset_sync")))
            .withColumn("progress_end", F.greatest("connect_end", "synced_end"))
            .withColumn("lag_records", F.col("log_end_offset") - F.col("replicated_end")))
    if start is not None:
        rows = rows.where(F.col("time") >= F.lit(start).cast("timestamp"))
    if end is not None:
        rows = rows.where(F.col("time") <= F.lit(end).cast("timestamp"))
    # the first batch holding an offset >= replicated_end: its start in bytes and when the log held it
    look = rows.withColumn("_after", -(F.col("replicated_end") + 1))
    batches = growth.select(*key, (-F.col("end_offset")).alias("_neg_end"), "bytes_before",
                            F.col("reached").alias("_held"))
    found = asof(look, batches, by=key, left_time="_after", right_time="_neg_end",
                 columns=["bytes_before", "_held"], suffix="")
    waiting = F.coalesce(F.col("lag_records"), F.lit(0)) > 0
    return (found
            .withColumn("lag_bytes", F.when(waiting, F.col("log_end_bytes") - F.col("bytes_before"))
                        .when(F.col("lag_records").isNotNull(), F.lit(0).cast("long")))
            .withColumn("lag_age_s", F.when(waiting, (F.unix_micros("time") - F.unix_micros("_held")) / F.lit(1e6))
                        .when(F.col("lag_records").isNotNull(), F.lit(0.0)))
            .select(*TIMELINE_COLUMNS))


def lag_windows(timeline: DataFrame, *, window_s: float = DEFAULT_WINDOW_S) -> DataFrame:
    """KIP-971's value, min, max and avg of the lag per source partition and window.

    Parameters
    ----------
    timeline : DataFrame
        :func:`lag_timeline` built with the same ``window_s``.
    window_s : float
        Window length (windows are epoch-aligned).

    Returns
    -------
    DataFrame
        :data:`WINDOW_COLUMNS`, one row per source partition and window ``[window_start,
        window_end)`` holding a timeline row: ``lag_records`` (the value at the end of the window, as
        the metric would read), ``lag_records_min``/``_max`` (over the values in force during the
        window), ``lag_records_avg`` (time-weighted), ``lag_bytes``/``lag_bytes_max``,
        ``lag_age_s``/``lag_age_s_max``; ``log_end_offset``, ``replicated_end`` and ``lro_source`` at
        the end of the window. Lag columns are null where MM2's position is not known.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(timeline, TIMELINE_COLUMNS, "lag_windows")
    step = int(round(window_s * 1_000_000))
    key = list(KEY)
    order = Window.partitionBy(*key).orderBy("time")
    start_us = F.floor(F.unix_micros("time") / F.lit(step)) * F.lit(step)
    rows = (timeline.withColumn("_w", start_us.cast("long"))
            .withColumn("_next", F.lead("time").over(order))
            .withColumn("_dur", F.when(F.col("_next").isNull(), F.lit(0.0)).otherwise(
                (F.least(F.unix_micros("_next"), F.col("_w") + F.lit(step)) - F.unix_micros("time")) / F.lit(1e6))))
    last = F.struct("time", "log_end_offset", "replicated_end", "lro_source", "lag_records", "lag_bytes", "lag_age_s")
    weighted = F.sum(F.when(F.col("lag_records").isNotNull(), F.col("lag_records") * F.col("_dur")))
    covered = F.sum(F.when(F.col("lag_records").isNotNull(), F.col("_dur")))
    agg = rows.groupBy(*key, "_w").agg(
        F.max_by(last, "time").alias("_last"),
        F.min("lag_records").alias("lag_records_min"), F.max("lag_records").alias("lag_records_max"),
        weighted.alias("_weighted"), covered.alias("_covered"),
        F.max("lag_bytes").alias("lag_bytes_max"), F.max("lag_age_s").alias("lag_age_s_max"))
    return agg.select(
        *key, F.timestamp_micros("_w").alias("window_start"),
        F.timestamp_micros(F.col("_w") + F.lit(step)).alias("window_end"),
        F.col("_last.lro_source").alias("lro_source"), F.col("_last.log_end_offset").alias("log_end_offset"),
        F.col("_last.replicated_end").alias("replicated_end"), F.col("_last.lag_records").alias("lag_records"),
        "lag_records_min", "lag_records_max",
        F.when(F.col("_covered") > 0, F.col("_weighted") / F.col("_covered"))
        .otherwise(F.col("_last.lag_records").cast("double")).alias("lag_records_avg"),
        F.col("_last.lag_bytes").alias("lag_bytes"), "lag_bytes_max",
        F.col("_last.lag_age_s").alias("lag_age_s"), "lag_age_s_max")


def lag_at(timeline: DataFrame, instants: DataFrame, *, time: str = "time") -> DataFrame:
    """The lag of each source partition at given instants (the values of the timeline in force then).

    ``instants`` has ``topic, partition``, a timestamp column ``time`` and, with several flows,
    ``source_alias, target_alias``. Adds the lag columns, null before a partition's first timeline row.

    >>> lag_at(timeline, tables.tool_get_offsets.select("topic", "partition", F.col("captured").alias("time")))
    ...                                                              # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    by = [c for c in KEY if c in instants.columns]
    require_columns(instants, ("topic", "partition", time), "lag_at")
    values = ["log_end_offset", "replicated_end", "lro_source", "lag_records", "lag_bytes", "lag_age_s"]
    right = timeline.select(*by, F.col("time").alias("_t"), *values)
    return asof(instants, right, by=by, left_time=time, right_time="_t", columns=values)


# -- outages ------------------------------------------------------------------------------------


def _progress(observations: DataFrame, start: Any = None, end: Any = None) -> DataFrame:
    """Moments MirrorMaker 2's known position of a partition advanced (running maximum over both sources)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    key = list(KEY)
    order = Window.partitionBy(*key).orderBy("time", "record_offset")
    obs = observations
    if end is not None:
        obs = obs.where(F.col("time") <= F.lit(end).cast("timestamp"))
    marked = (obs.withColumn("_best", F.max("replicated_end").over(order.rowsBetween(Window.unboundedPreceding, 0)))
              .withColumn("_before", F.lag("_best").over(order))
              .where(F.col("_before").isNull() | (F.col("_best") > F.col("_before"))))
    per_time = marked.groupBy(*key, "time").agg(F.max("_best").alias("progress_end"),
                                                F.collect_set("kind").alias("_kinds"))
    if start is not None:
        # the last advance before the window opens its first interval
        t0 = F.lit(start).cast("timestamp")
        before = (per_time.where(F.col("time") < t0)
                  .withColumn("_r", F.row_number().over(Window.partitionBy(*key).orderBy(F.col("time").desc())))
                  .where("_r = 1").drop("_r").withColumn("time", t0))
        per_time = per_time.where(F.col("time") >= t0).unionByName(before)
    return per_time


def outage_episodes(timeline: DataFrame, observations: DataFrame, growth: DataFrame, *,
                    min_outage_s: float = 0.0, start: Any = None, end: Any = None) -> DataFrame:
    """Intervals in which a partition's LRO did not advance while its LEO did (MirrorMaker 2 outages).

    MirrorMaker 2's known position of a partition (``progress_end``: the larger of its Connect source
    offset and its offset syncs) advances at its commit and sync cadence. A stall is the time from
    the later of its last advance and the moment the first record it had not replicated joined the
    source log, to its next advance (or to the end of the bundle's data: ``open``); it is an episode
    when longer than ``min_outage_s`` (0: :data:`OUTAGE_CADENCES` times the partition's median
    interval between advances, at least :data:`MIN_OUTAGE_S`).

    Parameters
    ----------
    timeline, observations, growth : DataFrame
        :func:`lag_timeline`, :func:`lro_observations`, :func:`source_growth`.
    min_outage_s : float
        Shortest stall reported (0: per partition, from its cadence).
    start, end : timestamp, optional
        Only what happened within ``[start, end]`` (a healthy window reports nothing).

    Returns
    -------
    DataFrame
        :data:`EPISODE_COLUMNS`, one row per episode: ``start, end, seconds, open``; ``scope``
        (``full``: MM2 replicated nothing for the flow during at least :data:`FULL_SHARE` of it,
        else ``partial``: other partitions kept moving); ``last_progress``, ``resumed`` (the advances
        around it); ``replicated_end_at_start``; ``log_end_at_end``; the peak lag from ``start`` to
        the catch-up (``peak_records, peak_bytes, peak_age_s, peak_at``); ``caught_up_at``: when MM2
        had replicated every record that was in the source log when it resumed, ``catch_up_s`` from
        ``end`` to then (null when that is not in the data); ``evidence`` (the kinds of observation
        of the advances around it); ``threshold_s``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    key = list(KEY)
    progress = _progress(observations, start, end)
    order = Window.partitionBy(*key).orderBy("time")
    steps = (progress.withColumn("resumed", F.lead("time").over(order))
             .withColumn("_kinds_next", F.lead("_kinds").over(order)))
    gaps = steps.withColumn("_gap", (F.unix_micros("resumed") - F.unix_micros("time")) / F.lit(1e6))
    cadence = gaps.groupBy(*key).agg(F.percentile_approx("_gap", 0.5).alias("_median"))
    threshold = (F.lit(float(min_outage_s)) if min_outage_s > 0
                 else F.greatest(F.lit(MIN_OUTAGE_S), F.coalesce(F.col("_median") * F.lit(OUTAGE_CADENCES),
                                                                 F.lit(MIN_OUTAGE_S))))
    data_end = growth.groupBy(*key).agg(F.max("reached").alias("_data_end"))
    if end is not None:
        data_end = data_end.withColumn("_data_end", F.least("_data_end", F.lit(end).cast("timestamp")))
    # when the first record not yet replicated at the last advance joined the source log
    held = growth.select(*key, (-F.col("end_offset")).alias("_neg_end"), F.col("reached").alias("_waiting"))
    candidates = (steps.join(cadence, key, "left").join(data_end, key, "left")
                  .withColumn("threshold_s", threshold)
                  .withColumn("open", F.col("resumed").isNull())
                  .withColumn("_stop", F.coalesce("resumed", "_data_end"))
                  .withColumn("_after", -(F.col("progress_end") + 1)))
    candidates = asof(candidates, held, by=key, left_time="_after", right_time="_neg_end", columns=["_waiting"])
    eps = (candidates
           .withColumn("start", F.greatest("time", "_waiting"))
           .withColumn("seconds", (F.unix_micros("_stop") - F.unix_micros("start")) / F.lit(1e6))
           .where(F.col("_waiting").isNotNull() & (F.col("_waiting") < F.col("_stop"))
                  & (F.col("seconds") >= F.col("threshold_s")))
           .select(*key, "start", F.col("_stop").alias("end"), "seconds", "open",
                   F.col("time").alias("last_progress"), "resumed",
                   F.col("progress_end").alias("replicated_end_at_start"),
                   F.array_sort(F.array_union("_kinds", F.coalesce("_kinds_next", F.array().cast("array<string>"))))
                   .alias("evidence"), "threshold_s"))
    # the log end when MM2 resumed, and when its position first reached it
    ends = asof(eps, growth.select(*key, "reached", "end_offset"), by=key, left_time="end", right_time="reached",
                columns=["end_offset"]).withColumnRenamed("end_offset", "log_end_at_end")
    caught = (ends.alias("e").join(progress.alias("p"), key)
              .where((F.col("p.time") >= F.col("e.end")) & (F.col("p.progress_end") >= F.col("e.log_end_at_end"))
                     & ~F.col("e.open"))
              .groupBy(*[F.col(f"e.{k}") for k in key], F.col("e.start")).agg(F.min("p.time").alias("caught_up_at")))
    eps = ends.join(caught, [*key, "start"], "left")
    # peak lag from the start to the catch-up (or the end of the data)
    t = timeline.select(*key, F.col("time").alias("_t"), "lag_records", "lag_bytes", "lag_age_s")
    window = (eps.select(*key, "start", F.coalesce("caught_up_at", "end").alias("_until")).join(t, key)
              .where((F.col("_t") >= F.col("start")) & (F.col("_t") <= F.col("_until")))
              .groupBy(*key, "start").agg(
                  F.max_by(F.struct("lag_records", "_t"), "lag_records").alias("_peak"),
                  F.max("lag_bytes").alias("peak_bytes"), F.max("lag_age_s").alias("peak_age_s")))
    eps = eps.join(window, [*key, "start"], "left")
    eps = (eps.withColumn("peak_records", F.col("_peak.lag_records")).withColumn("peak_at", F.col("_peak._t"))
           .withColumn("catch_up_s", (F.unix_micros("caught_up_at") - F.unix_micros("end")) / F.lit(1e6)))
    full = flow_outages(observations, growth, episodes=eps, min_outage_s=min_outage_s, start=start, end=end)
    overlap = (eps.select(*key, "start", "end", "seconds").alias("e")
               .join(full.alias("f"), ["source_alias", "target_alias"])
               .where((F.col("f.start") < F.col("e.end")) & (F.col("f.end") > F.col("e.start")))
               .groupBy(*[F.col(f"e.{k}") for k in key], F.col("e.start"))
               .agg(F.sum((F.unix_micros(F.least("e.end", "f.end")) - F.unix_micros(F.greatest("e.start", "f.start")))
                          / F.lit(1e6)).alias("_full_s")))
    eps = eps.join(overlap, [*key, "start"], "left")
    scope = F.when(F.coalesce(F.col("_full_s"), F.lit(0.0)) >= F.col("seconds") * F.lit(FULL_SHARE), F.lit("full"))
    return eps.withColumn("scope", scope.otherwise(F.lit("partial"))).select(*EPISODE_COLUMNS)


def flow_outages(observations: DataFrame, growth: DataFrame, *, episodes: DataFrame | None = None,
                 min_outage_s: float = 0.0, start: Any = None, end: Any = None) -> DataFrame:
    """Intervals in which MirrorMaker 2 replicated nothing at all for a flow while records waited.

    The flow's progress is every advance of any of its partitions (:func:`outage_episodes`); a gap
    between two of them is an outage when it is at least the threshold (``min_outage_s``, else
    :data:`OUTAGE_CADENCES` times the flow's median gap, at least :data:`MIN_OUTAGE_S`) and some
    partition's episode overlaps it; it starts at the later of the gap's start and the earliest
    overlapping episode's start.

    Returns
    -------
    DataFrame
        :data:`OUTAGE_COLUMNS`: one row per outage: ``source_alias, target_alias, start, end,
        seconds, open`` (no advance after it in the data), ``partitions`` (the partitions whose
        episodes overlap it, ``topic-partition``).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    flow = ["source_alias", "target_alias"]
    if episodes is None:
        raise ValueError("flow_outages needs the partition episodes (outage_episodes computes them)")
    progress = _progress(observations, start, end).select(*flow, "time").distinct()
    order = Window.partitionBy(*flow).orderBy("time")
    gaps = (progress.withColumn("resumed", F.lead("time").over(order))
            .withColumn("_gap", (F.unix_micros("resumed") - F.unix_micros("time")) / F.lit(1e6)))
    cadence = gaps.groupBy(*flow).agg(F.percentile_approx("_gap", 0.5).alias("_median"))
    data_end = growth.groupBy(*flow).agg(F.max("reached").alias("_data_end"))
    if end is not None:
        data_end = data_end.withColumn("_data_end", F.least("_data_end", F.lit(end).cast("timestamp")))
    threshold = (F.lit(float(min_outage_s)) if min_outage_s > 0
                 else F.greatest(F.lit(MIN_OUTAGE_S), F.coalesce(F.col("_median") * F.lit(OUTAGE_CADENCES),
                                                                 F.lit(MIN_OUTAGE_S))))
    cands = (gaps.join(cadence, flow, "left").join(data_end, flow, "left")
             .withColumn("_stop", F.coalesce("resumed", "_data_end")).withColumn("_thr", threshold))
    eps = episodes.select(*flow, F.col("start").alias("_es"), F.col("end").alias("_ee"),
                          F.concat_ws("-", "topic", F.col("partition").cast("string")).alias("_p"))
    joined = (cands.join(eps, flow)
              .where((F.col("_es") < F.col("_stop")) & (F.col("_ee") > F.col("time")))
              .groupBy(*flow, "time", "_stop", "_thr", "resumed")
              .agg(F.min("_es").alias("_first"), F.array_sort(F.collect_set("_p")).alias("partitions")))
    return (joined.withColumn("start", F.greatest("time", "_first"))
            .withColumn("seconds", (F.unix_micros("_stop") - F.unix_micros("start")) / F.lit(1e6))
            .where(F.col("seconds") >= F.col("_thr"))
            .select(*flow, "start", F.col("_stop").alias("end"), "seconds",
                    F.col("resumed").isNull().alias("open"), "partitions"))


# -- the translation audit ----------------------------------------------------------------------


def effective_commits(offsets: DataFrame, nodes: Sequence[int]) -> DataFrame:
    """One row per effective offset commit (or deletion) in the ``__consumer_offsets`` of the given nodes.

    Returns
    -------
    DataFrame
        ``group, topic, partition, time, committed_offset`` (null for a tombstone), each record
        once however many replicas hold it; transactional commits count once committed.
    """
    from pyspark.sql import functions as F

    require_columns(offsets, ("node_id", "offsets_partition", "offset", "timestamp", "record_kind", "is_transactional",
                              "txn_outcome", "deleted", "group", "topic", "partition", "committed_offset"),
                    "effective_commits")
    effective = ((F.col("record_kind") != "TxnMarker")
                 & (~F.coalesce(F.col("is_transactional"), F.lit(False)) | (F.col("txn_outcome") == "COMMIT")))
    return (offsets.where(F.col("node_id").isin([int(n) for n in nodes]) & effective & F.col("group").isNotNull()
                          & F.col("topic").isNotNull() & F.col("partition").isNotNull())
            .dropDuplicates(["offsets_partition", "offset"])
            .select("group", "topic", "partition", F.col("timestamp").alias("time"),
                    F.when(~F.coalesce(F.col("deleted"), F.lit(False)), F.col("committed_offset"))
                    .alias("committed_offset"),
                    F.col("offset").alias("_ord")))


def translation_audit(mirror: DataFrame, observations: DataFrame, source_commits: DataFrame,
                      target_commits: DataFrame, flows: Sequence[Flow], *, window_s: float = DEFAULT_WINDOW_S,
                      stale_s: float = 0.0, groups: Sequence[str] | None = None) -> DataFrame:
    """For each synced group and partition, over time: what MirrorMaker 2 translated, and what a failover would do.

    At every instant a commit or checkpoint changed (and at every window boundary), for each consumer
    group MirrorMaker 2's checkpoint connector synced and each partition:

    * ``source_committed``: the group's committed offset on the source cluster;
    * ``checkpoint_upstream``, ``checkpoint_downstream``: the last checkpoint MM2 published (the
      source offset it saw and its translation on the target);
    * ``target_committed``: the group's committed offset on the target cluster (MM2's group offset
      sync, or the group's own commits there);
    * ``exact_downstream``: the target offset of the record at ``source_committed``, from the offset
      sync with the largest upstream offset at or below it (MirrorMaker 2 writes a sync whenever
      upstream offsets skip, so records between two syncs are consecutive on both sides);
      ``checkpoint_exact`` likewise for ``checkpoint_upstream``, and ``translation_gap`` =
      ``checkpoint_exact - checkpoint_downstream`` (how far behind MM2's translation was);
    * ``stale``: the checkpoint is older than ``stale_s`` while the source group had committed past it;
      ``behind_sync_cadence``: ``translation_gap`` exceeds the flow's ``offset.lag.max`` (the syncs
      were further apart than their cadence promises);
    * a consumer failing over then starts at ``failover_offset``: the target group's committed offset
      (``failover_from = 'target_group'``), else the checkpoint's (``'checkpoint'``); it re-reads
      ``reread = exact_downstream - failover_offset`` records it had processed on the source, or
      skips ``skip = failover_offset - exact_downstream`` records it never saw;
    * ``status``: ``no_source_commit``, ``no_checkpoint``, ``skip``, ``stale``,
      ``behind_sync_cadence``, ``reread`` or ``ok``, the first that applies.

    Parameters
    ----------
    mirror : DataFrame
        The ``mirror`` table (its checkpoints).
    observations : DataFrame
        :func:`lro_observations` (its offset syncs).
    source_commits, target_commits : DataFrame
        :func:`effective_commits` of the source and of the target cluster's nodes.
    flows : sequence of Flow
        For the separator, ``offset.lag.max``, ``emit.checkpoints.interval.seconds`` and ``groups``.
    window_s : float
        Window boundaries added as instants.
    stale_s : float
        Checkpoint age beyond which translation is stale (0: three times the flow's
        ``emit.checkpoints.interval.seconds``).
    groups : sequence of str, optional
        Only these groups.

    Returns
    -------
    DataFrame
        :data:`AUDIT_COLUMNS`, one row per (flow, ``group``, source ``topic``, ``partition``,
        ``time``); ``target_topic`` is the replicated topic; ``boundary`` marks window boundaries.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark = mirror.sparkSession
    flow = ["source_alias", "target_alias"]
    key = [*flow, "group", "topic", "partition"]
    settings = spark.createDataFrame(
        [(f.source, f.target, f.source + f.separator, int(f.number("offset.lag.max")),
          float(stale_s) if stale_s > 0 else 3.0 * f.number("emit.checkpoints.interval.seconds"), f.setting("groups"))
         for f in flows] or [("", "", ".", 100, 180.0, ".*")],
        "source_alias string, target_alias string, _prefix string, _lag_max int, _stale_s double, _groups string")
    cps = (mirror.where((F.col("kind") == "checkpoint") & ~F.coalesce(F.col("deleted"), F.lit(False))
                        & F.col("group").isNotNull() & F.col("topic").isNotNull())
           .dropDuplicates(["cluster", "internal_topic", "internal_partition", "offset"])
           .join(settings, flow)
           .select(*flow, "group", F.col("topic").alias("target_topic"),
                   F.when(F.col("topic").startswith(F.col("_prefix")),
                          F.expr("substring(topic, length(_prefix) + 1)")).otherwise(F.col("topic")).alias("topic"),
                   "partition", F.col("timestamp").alias("time"), F.col("upstream_offset").alias("_cu"),
                   F.col("downstream_offset").alias("_cd"), F.col("offset").alias("_ord")))
    if groups is not None:
        cps = cps.where(F.col("group").isin(list(groups)))
    # the synced (group, partition)s: those MM2 checkpointed, and those of the source commits its
    # `groups` filter takes for a replicated topic (a bundle without the target cluster has no checkpoints)
    replicated = observations.select(*flow, "topic", "partition").distinct()
    pairs = cps.select(*key).distinct()
    pattern_ok = F.udf(lambda patterns, name: _matches(patterns or ".*", name or ""), "boolean")
    from_source = (source_commits.select("group", "topic", "partition").distinct()
                   .join(replicated, ["topic", "partition"])
                   .join(settings, flow).where(pattern_ok(F.col("_groups"), F.col("group"))).select(*key))
    if groups is not None:
        from_source = from_source.where(F.col("group").isin(list(groups)))
    pairs = pairs.unionByName(from_source).distinct().join(settings.select(*flow, "_prefix"), flow).withColumn(
        "target_topic", F.concat("_prefix", "topic")).drop("_prefix")
    cp_topics = cps.select(*flow, "topic", "target_topic").distinct()
    pairs = (pairs.alias("p").join(cp_topics.alias("c"), [*flow, "topic"], "left")
             .select(*[F.col(f"p.{k}") for k in key],
                     F.coalesce("c.target_topic", "p.target_topic").alias("target_topic")))
    src = (source_commits.join(pairs.select(*key), ["group", "topic", "partition"])
           .select(*key, "time", F.lit(0).alias("_src"), "_ord", F.col("committed_offset").alias("_sc"),
                   F.col("time").alias("_sct")))
    tgt = (target_commits.withColumnRenamed("topic", "target_topic")
           .join(pairs, ["group", "target_topic", "partition"])
           .select(*key, "time", F.lit(2).alias("_src"), "_ord", F.col("committed_offset").alias("_tc"),
                   F.col("time").alias("_tct")))
    cpe = cps.select(*key, "time", F.lit(1).alias("_src"), "_ord", "_cu", "_cd", F.col("time").alias("_cpt"))
    value_cols = ["_sc", "_sct", "_cu", "_cd", "_cpt", "_tc", "_tct"]
    types = {"_sc": "long", "_sct": "timestamp", "_cu": "long", "_cd": "long", "_cpt": "timestamp", "_tc": "long",
             "_tct": "timestamp"}

    def widen(frame: DataFrame) -> DataFrame:
        for c in value_cols:
            if c not in frame.columns:
                frame = frame.withColumn(c, F.lit(None).cast(types[c]))
        return frame.select(*key, "time", "_src", "_ord", *value_cols)

    events = widen(src).unionByName(widen(tgt)).unionByName(widen(cpe))
    grid = widen(_grid(events, key, "time", window_s).withColumn("_src", F.lit(3))
                 .withColumn("_ord", F.lit(None).cast("long")))
    order = Window.partitionBy(*key).orderBy("time", "_src", F.col("_ord").asc_nulls_first())
    running = order.rowsBetween(Window.unboundedPreceding, 0)
    # a tombstone clears the committed offset: carry the commit's time, then its (null) offset
    filled = events.unionByName(grid).select(
        *key, "time", "_src", "_ord",
        F.last(F.when(F.col("_src") == 0, F.struct("_sc")), ignorenulls=True).over(running).alias("_s"),
        F.last("_sct", ignorenulls=True).over(running).alias("source_commit_time"),
        F.last("_cu", ignorenulls=True).over(running).alias("checkpoint_upstream"),
        F.last("_cd", ignorenulls=True).over(running).alias("checkpoint_downstream"),
        F.last("_cpt", ignorenulls=True).over(running).alias("checkpoint_time"),
        F.last(F.when(F.col("_src") == 2, F.struct("_tc")), ignorenulls=True).over(running).alias("_t"),
        F.last("_tct", ignorenulls=True).over(running).alias("target_commit_time"))
    last = Window.partitionBy(*key, "time").orderBy(F.col("_src").desc(), F.col("_ord").desc_nulls_last())
    at_time = Window.partitionBy(*key, "time")
    rows = (filled.withColumn("boundary", F.max((F.col("_src") == 3).cast("int")).over(at_time) == 1)
            .withColumn("_n", F.row_number().over(last)).where("_n = 1")
            .withColumn("source_committed", F.col("_s._sc")).withColumn("target_committed", F.col("_t._tc"))
            .drop("_s", "_t", "_n", "_src", "_ord")
            .join(pairs, key))
    # exact target offsets through the offset syncs: the sync with the largest upstream offset at or below
    syncs = (observations.where((F.col("kind") == "offset_sync") & F.col("downstream_offset").isNotNull())
             .select(*flow, "topic", "partition", (F.col("replicated_end") - 1).alias("_up"),
                     F.col("downstream_offset").alias("_down"), "time"))
    sync_key = [*flow, "topic", "partition"]
    mapped = asof(rows, syncs, by=sync_key, left_time="source_committed", right_time="_up",
                  columns=["_up", "_down"], suffix="_s")
    mapped = asof(mapped, syncs, by=sync_key, left_time="checkpoint_upstream", right_time="_up",
                  columns=["_up", "_down"], suffix="_c")
    exact = F.col("_down_s") + (F.col("source_committed") - F.col("_up_s"))
    cp_exact = F.col("_down_c") + (F.col("checkpoint_upstream") - F.col("_up_c"))
    out = (mapped.join(settings.select(*flow, "_lag_max", "_stale_s"), flow, "left")
           .withColumn("exact_downstream", exact).withColumn("checkpoint_exact", cp_exact)
           .withColumn("translation_gap", F.col("checkpoint_exact") - F.col("checkpoint_downstream"))
           .withColumn("checkpoint_age_s", (F.unix_micros("time") - F.unix_micros("checkpoint_time")) / F.lit(1e6))
           .withColumn("stale", (F.col("checkpoint_age_s") > F.col("_stale_s"))
                       & (F.col("source_committed") != F.col("checkpoint_upstream"))
                       & (F.col("source_commit_time") > F.col("checkpoint_time")))
           .withColumn("behind_sync_cadence", F.col("translation_gap") > F.col("_lag_max"))
           .withColumn("failover_offset", F.coalesce("target_committed", "checkpoint_downstream"))
           .withColumn("failover_from", F.when(F.col("target_committed").isNotNull(), F.lit("target_group"))
                       .when(F.col("checkpoint_downstream").isNotNull(), F.lit("checkpoint")))
           .withColumn("reread", F.greatest(F.col("exact_downstream") - F.col("failover_offset"), F.lit(0)))
           .withColumn("skip", F.greatest(F.col("failover_offset") - F.col("exact_downstream"), F.lit(0))))
    status = (F.when(F.col("source_committed").isNull(), F.lit("no_source_commit"))
              .when(F.col("failover_offset").isNull(), F.lit("no_checkpoint"))
              .when(F.col("skip") > 0, F.lit("skip"))
              .when(F.coalesce(F.col("stale"), F.lit(False)), F.lit("stale"))
              .when(F.coalesce(F.col("behind_sync_cadence"), F.lit(False)), F.lit("behind_sync_cadence"))
              .when(F.col("reread") > 0, F.lit("reread"))
              .when(F.col("exact_downstream").isNull(), F.lit("no_offset_sync"))
              .otherwise(F.lit("ok")))
    return out.withColumn("status", status).select(*AUDIT_COLUMNS)


# -- MirrorMaker 2's own metrics ----------------------------------------------------------------


def reported_metrics(metrics: DataFrame, flows: Sequence[Flow] = ()) -> DataFrame:
    """MirrorMaker 2's own samples of ``replication-latency-ms``, ``record-age-ms``, ``record-count`` and
    ``checkpoint-latency-ms`` (and their ``-max``), from JmxTool CSV or Prometheus exports.

    Returns
    -------
    DataFrame
        :data:`METRIC_COLUMNS`, one row per sample: ``source_alias, target_alias`` (the MBean's
        ``source``/``target``; Kafka 3.x's source connector MBeans lack ``source``: the flow whose
        target and replicated-topic prefix match), ``topic`` (the source topic), ``target_topic`` (the MBean's
        ``topic``: MM2 names the replicated one), ``partition``, ``group`` (checkpoint metrics),
        ``metric`` (the short name, e.g. ``replication-latency-ms``), ``time, value, format, node_id``.
        A NaN sample (the ``-max`` of a window without records, as MM2 reports it) is no value and is left
        out: Spark orders NaN above every number, so one would win every ``max``.
    """
    from pyspark.sql import functions as F

    require_columns(metrics, ("node_id", "name", "labels", "timestamp", "value", "format"), "reported_metrics")
    names = F.create_map(*[x for k, v in MM2_METRICS.items() for x in (F.lit(k), F.lit(v))])
    label = F.col("labels")
    target_topic = label.getItem("topic")
    upstream = target_topic
    source = label.getItem("source")
    for f in flows:
        # Kafka 3.x's MirrorSourceConnector MBeans have no ``source`` key: the flow is told by its
        # target and the replicated topic's prefix
        prefix = f.source + f.separator
        ours = ((source == f.source) | (source.isNull() & (label.getItem("target") == f.target))) \
            & target_topic.startswith(prefix)
        upstream = F.when(ours, F.expr(f"substring(labels['topic'], {len(prefix) + 1})")).otherwise(upstream)
        source = F.when(source.isNull() & ours, F.lit(f.source)).otherwise(source)
    return (metrics.where(F.col("name").isin(list(MM2_METRICS)) & F.col("timestamp").isNotNull()
                          & ~F.isnan("value"))
            .select(source.alias("source_alias"), label.getItem("target").alias("target_alias"),
                    upstream.alias("topic"), target_topic.alias("target_topic"),
                    label.getItem("partition").cast("int").alias("partition"), label.getItem("group").alias("group"),
                    names[F.col("name")].alias("metric"), F.col("timestamp").alias("time"), "value", "format",
                    "node_id"))


# -- a bundle's inputs, computed once -----------------------------------------------------------


@dataclass
class MirrorAnalysis:
    """The mirror area's results on one bundle (DataFrames persisted with the tables).

    Attributes
    ----------
    flows : list of Flow
    clusters : dict
        Node id -> cluster alias (:func:`cluster_of_nodes`).
    partitions, observations, growth, timeline, windows, episodes, outages, audit, metrics : DataFrame
    missing : list of str
        What the bundle lacks for a complete answer (plain sentences).
    window_s : float
    """

    flows: list[Flow]
    clusters: dict[int, str]
    partitions: DataFrame
    observations: DataFrame
    growth: DataFrame
    timeline: DataFrame
    windows: DataFrame
    episodes: DataFrame
    outages: DataFrame
    audit: DataFrame
    metrics: DataFrame
    missing: list[str]
    window_s: float


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


def _derive(tables: Any, key: str, compute: Any) -> DataFrame:
    """``tables.derive`` with the lineage cut, so plans built on several earlier results do not grow."""
    return tables.derive(key, lambda: compute().localCheckpoint(eager=True))


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
    from pyspark.sql import functions as F

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
    observations = _derive(tables, f"{tag}:observations", lambda: lro_observations(mirror))
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
    partitions = _derive(tables, f"{tag}:partitions", lambda: partitions)
    sources = {f.source: nodes_by_alias.get(f.source, []) for f in flows}
    growth = _derive(tables, f"{tag}:growth", lambda: source_growth(tables.batches, partitions, sources))
    w = s["window_s"]
    timeline = _derive(tables, f"{tag}:timeline", lambda: lag_timeline(growth, observations, window_s=w,
                                                                       start=start, end=end))
    windows = _derive(tables, f"{tag}:windows", lambda: lag_windows(timeline, window_s=w))
    episodes = _derive(tables, f"{tag}:episodes", lambda: outage_episodes(
        timeline, observations, growth, min_outage_s=s["outage_min_s"], start=start, end=end))
    outages = _derive(tables, f"{tag}:outages", lambda: flow_outages(
        observations, growth, episodes=episodes, min_outage_s=s["outage_min_s"], start=start, end=end))
    source_nodes = sorted({n for f in flows for n in nodes_by_alias.get(f.source, [])})
    target_nodes = sorted({n for f in flows for n in nodes_by_alias.get(f.target, [])})
    offsets = tables.offsets
    audit = _derive(tables, f"{tag}:audit", lambda: translation_audit(
        mirror, observations, effective_commits(offsets, source_nodes), effective_commits(offsets, target_nodes),
        flows, window_s=w, stale_s=s["stale_s"]))
    metrics = _derive(tables, f"{tag}:metrics", lambda: reported_metrics(tables.metrics, flows))
    result = MirrorAnalysis(flows, clusters, partitions, observations, growth, timeline, windows, episodes, outages,
                            audit, metrics, [], w)
    result.missing = missing_inputs(result, tables)
    _ANALYSED[cache_key] = result
    return result


def missing_inputs(result: MirrorAnalysis, tables: Any) -> list[str]:
    """Plain sentences naming what the bundle lacks for a complete mirror answer (empty: nothing)."""
    out = []
    if not result.flows:
        return ["No MirrorMaker 2 topic and no MirrorMaker 2 configuration in the bundle: nothing to say about "
                "replication."]
    for f in result.flows:
        flow = f"{f.source}->{f.target}"
        if not any(a == f.source for a in result.clusters.values()):
            out.append(f"No node of the source cluster {f.source} ({flow}) in the bundle: its log end offsets "
                       "over time cannot be computed.")
        if not any(a == f.target for a in result.clusters.values()):
            out.append(f"No node of the target cluster {f.target} ({flow}) in the bundle: MirrorMaker 2's Connect "
                       "offsets, its checkpoints and the target group offsets live there.")
    per_flow = {(r[0], r[1], r[2]) for r in tables.mirror.where("source_alias is not null and target_alias is not null")
                .select("source_alias", "target_alias", "kind").distinct().collect()}
    for f in result.flows:
        flow = f"{f.source}->{f.target}"
        if (f.source, f.target, "source_offset") not in per_flow:
            out.append(f"No Connect source offsets of MirrorMaker 2 for {flow} (mm2-offsets.{f.source}.internal, on "
                       "the target cluster): its position is taken from the offset syncs alone.")
        if (f.source, f.target, "offset_sync") not in per_flow:
            out.append(f"No offset syncs for {flow} (mm2-offset-syncs.{f.target}.internal): offset translation "
                       "cannot be checked, and MirrorMaker 2's position is known only at its Connect commits.")
        if (f.source, f.target, "checkpoint") not in per_flow:
            out.append(f"No checkpoints for {flow} ({f.source}.checkpoints.internal, on the target cluster): what "
                       "MirrorMaker 2 published for the consumer groups cannot be audited.")
    if result.partitions.limit(1).count() and result.growth.limit(1).count() == 0:
        out.append("No segment of the replicated topics on the source cluster's nodes: no log end offsets.")
    if result.partitions.limit(1).count() and result.observations.limit(1).count() == 0:
        out.append("No record of MirrorMaker 2's position (Connect source offsets or offset syncs): the lag cannot "
                   "be computed, only the source log's growth.")
    return out


# -- findings -----------------------------------------------------------------------------------


def findings(result: MirrorAnalysis, spark: SparkSession | None = None) -> DataFrame:
    """The mirror area's findings.

    * ``mirror_outage`` (critical): MirrorMaker 2 replicated nothing for a flow, from start to end,
      with the partition that fell furthest behind;
    * ``mirror_partial_outage`` (warning): a partition was not replicated while others of its flow were;
    * ``mirror_failover_reread`` / ``mirror_failover_skip`` (warning / critical): the moment a consumer
      group failing over to the target would have re-read (skipped) the most records;
    * ``mirror_translation_stale`` (warning): checkpoints of a group stopped while it committed;
    * ``mirror_inputs_missing`` (info): what the bundle lacks (never a claim of health without inputs).

    Returns
    -------
    DataFrame
        Rows of :data:`workbench.analysis.findings.FINDINGS_SCHEMA` (area ``mirror``).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from workbench.analysis.findings import FINDINGS_COLUMNS

    spark = spark or result.timeline.sparkSession
    when = lambda c: F.concat(F.date_format(c, "yyyy-MM-dd HH:mm:ss"), F.lit(" UTC"))  # noqa: E731
    flow_name = F.concat("source_alias", F.lit("->"), "target_alias")
    part = F.concat("topic", F.lit("-"), F.col("partition").cast("string"))
    eps = result.episodes
    # full outages, each with the partition that peaked highest within it
    o = result.outages.alias("o")
    e = eps.alias("e")
    peaks = (o.join(e, ["source_alias", "target_alias"])
             .where((F.col("e.start") < F.col("o.end")) & (F.col("e.end") > F.col("o.start")))
             .withColumn("_r", F.row_number().over(Window.partitionBy("source_alias", "target_alias", "o.start")
                                                   .orderBy(F.col("e.peak_records").desc_nulls_last(), "e.topic",
                                                            "e.partition")))
             .where("_r = 1")
             .select("source_alias", "target_alias", F.col("o.start").alias("start"), F.col("o.end").alias("end"),
                     F.col("o.seconds").alias("seconds"), F.col("o.open").alias("open"),
                     F.size("o.partitions").alias("n"), F.col("e.topic").alias("topic"),
                     F.col("e.partition").alias("partition"), F.col("e.peak_records").alias("peak_records"),
                     F.col("e.peak_bytes").alias("peak_bytes"), F.col("e.peak_age_s").alias("peak_age_s"),
                     F.col("e.catch_up_s").alias("catch_up_s")))
    outage = peaks.select(
        F.lit("mirror_outage").alias("kind"), F.lit("critical").alias("severity"), F.lit("flow").alias("subject_type"),
        flow_name.alias("subject"), "start", "end",
        F.concat(F.lit("MirrorMaker 2 ("), flow_name, F.lit(") replicated nothing for "),
                 F.format_string("%.1f", "seconds"), F.lit(" s from "), when("start"),
                 F.when(F.col("open"), F.lit(" (still so at the end of the data)")).otherwise(F.lit("")),
                 F.lit("; partition "), part, F.lit(" peaked at "), F.col("peak_records").cast("string"),
                 F.lit(" records ("), bytes_text("peak_bytes"), F.lit(", "), F.format_string("%.0f", "peak_age_s"),
                 F.lit(" s) behind"),
                 F.when(F.col("catch_up_s").isNotNull(),
                        F.concat(F.lit(" and caught up "), F.format_string("%.1f", "catch_up_s"),
                                 F.lit(" s after replication resumed"))).otherwise(F.lit(""))).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("partitions"), F.col("n").cast("double"),
                     F.lit("peak_records"), F.col("peak_records").cast("double"),
                     F.lit("peak_bytes"), F.col("peak_bytes").cast("double"),
                     F.lit("peak_age_s"), F.col("peak_age_s"),
                     F.lit("catch_up_s"), F.col("catch_up_s")).alias("figures"))
    partial = eps.where(F.col("scope") == "partial").select(
        F.lit("mirror_partial_outage").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("partition").alias("subject_type"), part.alias("subject"), "start", "end",
        F.concat(F.lit("Partition "), part, F.lit(" ("), flow_name, F.lit(") was not replicated for "),
                 F.format_string("%.1f", "seconds"), F.lit(" s from "), when("start"),
                 F.lit(" while other partitions of the flow were"),
                 F.when(F.col("open"), F.lit(" (still so at the end of the data)")).otherwise(F.lit("")),
                 F.lit("; it peaked at "), F.coalesce(F.col("peak_records").cast("string"), F.lit("?")),
                 F.lit(" records ("), F.coalesce(bytes_text("peak_bytes"), F.lit("? bytes")), F.lit(", "),
                 F.format_string("%.0f", "peak_age_s"), F.lit(" s) behind"),
                 F.when(F.col("catch_up_s").isNotNull(),
                        F.concat(F.lit(" and caught up "), F.format_string("%.1f", "catch_up_s"),
                                 F.lit(" s after replication resumed"))).otherwise(F.lit(""))).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("peak_records"), F.col("peak_records").cast("double"),
                     F.lit("peak_bytes"), F.col("peak_bytes").cast("double"), F.lit("peak_age_s"), F.col("peak_age_s"),
                     F.lit("catch_up_s"), F.col("catch_up_s")).alias("figures"))
    # failover: per group, the boundary instant where the whole group would have re-read (skipped) the most
    grid = (result.audit.where("boundary")
            .groupBy("source_alias", "target_alias", "group", "time")
            .agg(F.sum("reread").alias("reread"), F.sum("skip").alias("skip"),
                 F.sort_array(F.collect_list(F.struct(F.col("reread").alias("n"),
                                                      F.concat("target_topic", F.lit("-"),
                                                               F.col("partition").cast("string")).alias("p"))),
                              asc=False).alias("_parts")))

    def failover(measure: str, kind: str, severity: str, verb: str) -> DataFrame:
        top = (grid.where(F.col(measure) > 0)
               .withColumn("_r", F.row_number().over(Window.partitionBy("source_alias", "target_alias", "group")
                                                     .orderBy(F.col(measure).desc(), "time")))
               .where("_r = 1"))
        return top.select(
            F.lit(kind).alias("kind"), F.lit(severity).alias("severity"), F.lit("group").alias("subject_type"),
            F.col("group").alias("subject"), F.col("time").alias("start"), F.lit(None).cast("timestamp").alias("end"),
            F.concat(F.lit("A consumer of group "), F.col("group"), F.lit(" failing over to "), F.col("target_alias"),
                     F.lit(" at "), when("time"), F.lit(f" would have {verb} "), F.col(measure).cast("string"),
                     F.lit(" records (MirrorMaker 2's offsets for it on the target were behind what it had "
                           "committed on the source)" if measure == "reread"
                           else " records (its offsets on the target were ahead of what it had committed on the "
                                "source)")).alias("summary"),
            F.create_map(F.lit(measure), F.col(measure).cast("double")).alias("figures"))

    reread = failover("reread", "mirror_failover_reread", "warning", "re-read")
    skip = failover("skip", "mirror_failover_skip", "critical", "skipped")
    stale_eps = _stale_episodes(result.audit)
    stale = stale_eps.select(
        F.lit("mirror_translation_stale").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("group").alias("subject_type"), F.col("group").alias("subject"), "start", "end",
        F.concat(F.lit("MirrorMaker 2 published no checkpoint for group "), F.col("group"), F.lit(" on "),
                 F.col("partitions"), F.lit(" for "), F.format_string("%.1f", "seconds"),
                 F.lit(" s from "), when("start"), F.lit(" while the group committed on the source")).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds")).alias("figures"))
    out = outage.unionByName(partial).unionByName(reread).unionByName(skip).unionByName(stale)
    if result.missing:
        missing = spark.createDataFrame(
            [("mirror_inputs_missing", "info", "bundle", "mirror inputs", None, None, text, {}) for text in
             result.missing],
            "kind string, severity string, subject_type string, subject string, start timestamp, end timestamp, "
            "summary string, figures map<string,double>")
        out = out.unionByName(missing)
    return out.withColumn("area", F.lit("mirror")).select(*FINDINGS_COLUMNS)


def _stale_episodes(audit: DataFrame) -> DataFrame:
    """Intervals in which a group's translation was stale on some partition (merged over partitions)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    key = ["source_alias", "target_alias", "group", "topic", "partition"]
    order = Window.partitionBy(*key).orderBy("time")
    flagged = (audit.withColumn("_on", F.coalesce(F.col("stale"), F.lit(False)))
               .withColumn("_next", F.lead("time").over(order))
               .withColumn("_begin", F.col("_on") & ~F.coalesce(F.lag("_on").over(order), F.lit(False)))
               .withColumn("_run", F.sum(F.col("_begin").cast("int"))
                           .over(order.rowsBetween(Window.unboundedPreceding, 0)))
               .where("_on"))
    runs = (flagged.groupBy(*key, "_run").agg(F.min("time").alias("start"),
                                               F.max(F.coalesce("_next", "time")).alias("end")))
    return (runs.groupBy("source_alias", "target_alias", "group")
            .agg(F.min("start").alias("start"), F.max("end").alias("end"),
                 F.concat_ws(", ", F.array_sort(F.collect_set(F.concat("topic", F.lit("-"),
                                                                       F.col("partition").cast("string")))))
                 .alias("partitions"))
            .withColumn("seconds", (F.unix_micros("end") - F.unix_micros("start")) / F.lit(1e6)))


def findings_for(tables: Any, params: Mapping[str, Any] | None = None, *, start: Any = None,
                 end: Any = None) -> DataFrame:
    """:func:`findings` of a bundle's tables (computed once per tables, parameters and window)."""
    result = analyse(tables, params or {}, start=start, end=end)
    return tables.derive(f"mirror.findings:{sorted(settings_from(params or {}).items())}:{start}:{end}",
                         lambda: findings(result, tables.spark))


def area_findings(result: MirrorAnalysis) -> DataFrame:
    """The area's findings of one analysis (:func:`findings`)."""
    return findings(result)


def audit_summary(audit: DataFrame) -> DataFrame:
    """Per synced group and partition: the last audit row and the worst re-read and skip.

    Returns
    -------
    DataFrame
        ``source_alias, target_alias, group, topic, target_topic, partition, time`` (of the last row),
        ``source_committed, checkpoint_downstream, target_committed, exact_downstream, checkpoint_age_s,
        status``, ``max_reread, max_reread_at, max_skip, max_skip_at, stale_rows, behind_cadence_rows``.
    """
    from pyspark.sql import functions as F

    key = ["source_alias", "target_alias", "group", "topic", "target_topic", "partition"]
    last = F.struct("time", "source_committed", "checkpoint_downstream", "target_committed", "exact_downstream",
                    "checkpoint_age_s", "status")
    return (audit.groupBy(*key).agg(
        F.max_by(last, "time").alias("_l"),
        F.max_by(F.struct("reread", "time"), "reread").alias("_rr"),
        F.max_by(F.struct("skip", "time"), "skip").alias("_sk"),
        F.sum(F.coalesce(F.col("stale"), F.lit(False)).cast("int")).alias("stale_rows"),
        F.sum(F.coalesce(F.col("behind_sync_cadence"), F.lit(False)).cast("int")).alias("behind_cadence_rows"))
        .select(*key, "_l.*", F.col("_rr.reread").alias("max_reread"), F.col("_rr.time").alias("max_reread_at"),
                F.col("_sk.skip").alias("max_skip"), F.col("_sk.time").alias("max_skip_at"), "stale_rows",
                "behind_cadence_rows")
        .orderBy("group", "topic", "partition"))


def view_frames(result: MirrorAnalysis) -> dict[str, DataFrame]:
    """What the mirror view draws: lag windows, episodes, outages, the failover audit's boundaries, samples."""
    return {"windows": result.windows, "episodes": result.episodes, "outages": result.outages,
            "audit": result.audit.where("boundary"), "metrics": result.metrics,
            "timeline": result.timeline.where("boundary")}


def key_figures(result: MirrorAnalysis) -> dict[str, Any]:
    """The summary's figures: partitions, the largest lags, outages, episodes, the failover audit's worst."""
    from pyspark.sql import functions as F

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
