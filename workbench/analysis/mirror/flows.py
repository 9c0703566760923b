"""MirrorMaker 2's clusters, flows and settings: the enabled flows, their settings, which node is in which cluster."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: MirrorMaker 2's defaults for the settings the audit reads (MirrorSourceConfig, MirrorCheckpointConfig,
#: Connect's WorkerConfig).
MM2_DEFAULTS: dict[str, str] = {
    "topics": ".*",
    "topics.exclude": r".*[\-\.]internal, .*\.replica, __.*",
    "groups": ".*",
    "groups.exclude": "console-consumer-.*, connect-.*, __.*",
    "offset.lag.max": "100",
    "emit.checkpoints.interval.seconds": "60",
    "sync.group.offsets.interval.seconds": "60",
    "offset.flush.interval.ms": "60000",
}


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
        ``topics``, ``topics.exclude``, ``groups``, ``groups.exclude``, ``offset.lag.max``,
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


def synced_groups(flows: Sequence[Flow], spark: Any = None) -> Any:
    """A Column: whether MirrorMaker 2's checkpoint connector syncs a row's ``group`` for its flow
    (``source_alias``, ``target_alias``): ``groups`` minus ``groups.exclude``, as DefaultGroupFilter
    judges them (each list joined by ``|`` into one Java regex that must match the whole name).

    Evaluated in the JVM with Java's regexes, MM2's own. A list that is not a valid Java regex
    (MM2 would refuse to start) matches its names literally; ``spark`` (a session, classic or
    Spark Connect) checks validity with Java's compiler; without one, Python's ``re`` does.
    """
    from pyspark.sql import functions as F

    def matches(patterns: str) -> Any:
        parts = [p.strip() for p in patterns.split(",") if p.strip()]
        if not parts:  # an empty list matches nothing (MM2's filter has no pattern then)
            return F.lit(False)
        regex = "|".join(parts)
        if _valid_regex(regex, spark):
            return F.col("group").rlike(r"\A(?:" + regex + r")\z")
        return F.col("group").isin(parts)

    synced = F.lit(False)
    for f in flows:
        synced = synced | ((F.col("source_alias") == f.source) & (F.col("target_alias") == f.target)
                           & matches(f.setting("groups")) & ~matches(f.setting("groups.exclude")))
    return F.coalesce(synced, F.lit(False))


def _valid_regex(regex: str, spark: Any = None) -> bool:
    """Whether ``regex`` compiles: by Java's ``Pattern`` through the session's JVM, or, on Spark Connect
    (no JVM in this process), by a one-row query the server evaluates; by Python's ``re`` without a session."""
    if spark is None:
        try:
            re.compile(regex)
            return True
        except re.error:
            return False
    jvm = getattr(spark, "_jvm", None)  # Spark Connect raises an AttributeError
    try:
        if jvm is not None:
            jvm.java.util.regex.Pattern.compile(regex)
        else:
            from pyspark.sql import functions as F

            spark.range(1).select(F.lit("").rlike(regex)).collect()
        return True
    except Exception:  # noqa: BLE001 - py4j's or the server's error for Java's PatternSyntaxException
        return False


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
