"""``mirror``: one row per record of MirrorMaker 2's topics: offset syncs, checkpoints, heartbeats, source offsets.

Name
    ``kafka_mirror``.
Reads
    The segments of MirrorMaker 2's topics in every node's log dirs, recognised by their
    default names (:func:`workbench.formats.mirror.classify_mirror_topic`):
    ``mm2-offset-syncs.<alias>.internal`` (offset syncs), ``<source>.checkpoints.internal``
    (checkpoints), ``heartbeats`` and its replicated copies ``<source>.heartbeats``
    (heartbeats), and ``mm2-offsets.<source>.internal`` (the Connect offsets topic of a
    dedicated-mode MirrorMaker 2: the MirrorSourceConnector's positions, and the checkpoint and
    heartbeat connectors' dummy offsets), or the offsets topic of a Connect cluster running
    MirrorMaker 2's connectors (its usual names,
    :data:`workbench.formats.mirror.CONNECT_OFFSETS_TOPICS`, or the ``offset.storage.topic``
    a configuration names). The bundle's ``manifest.json`` (which cluster each
    node belongs to), MirrorMaker 2 configuration (``mm2.properties``, or a
    ``connect-mirror-maker*.properties``: clusters, enabled flows, separator, offset-syncs
    location, offsets topics) and Connect workers' ``connect-distributed*.properties``
    (offsets topic) are read on the driver to name the clusters.
Options
    ``files``, ``strict``, ``context`` (set by the table's build: the clusters and flows as JSON).
Partitioning
    Each file read whole; small files are packed into one input partition (``pack_bytes``,
    ``pack_files``: :mod:`workbench.spark.source`).

Control batches (the transaction markers of an exactly-once Connect worker) are skipped; the
records of an aborted transaction of such a worker are kept like the others.

Columns
    ``node_id``, ``path``: the replica read: ``node_id`` is the broker whose log dir holds the
    file, a broker of the cluster named by ``cluster`` (the records of one MirrorMaker 2 flow
    are spread over both of its clusters); ``cluster``: the alias of that cluster (from the
    manifest, else from where MirrorMaker 2 puts each topic: the offset syncs on the source
    cluster, unless ``offset-syncs.topic.location = target``; checkpoints, heartbeats and the
    Connect offsets topic on the target cluster of their flow; null when neither tells);
    ``internal_topic``, ``internal_partition``: the MirrorMaker 2 topic
    and partition the record lies in; ``batch_position``, ``offset``, ``timestamp``: the record's
    batch, its own offset and timestamp; ``kind``: ``offset_sync``, ``checkpoint``,
    ``heartbeat``, ``source_offset`` (MirrorSourceConnector), ``checkpoint_offset``,
    ``heartbeat_offset`` (the other two connectors' dummy offsets) or ``connect_offset`` (any
    other connector); ``source_alias``, ``target_alias``: the flow the record belongs to (a
    heartbeat's own key; otherwise the topic's name, the record's key, the manifest and the
    configuration, null when they do not tell); ``connector``: the Connect connector name;
    ``group``: the consumer group of a checkpoint; ``topic``, ``partition``: the replicated
    partition the record is about: for an offset sync and a source offset the **upstream**
    (source cluster) topic, for a checkpoint the **downstream** (renamed, e.g. ``A.orders``)
    topic, as MirrorMaker 2 writes them; ``upstream_offset``, ``downstream_offset``: an offset
    sync's or checkpoint's pair (``upstream_offset`` on the source partition corresponds to
    ``downstream_offset`` on the remote one); for a source offset, ``upstream_offset`` is the
    offset of the last record replicated (the task resumes after it); ``metadata``: a
    checkpoint's offset-commit metadata; ``heartbeat_timestamp``: when the heartbeat was
    emitted; ``value_version``; ``deleted``: a tombstone (null value, e.g. a Connect offset
    reset); ``connect_partition``, ``connect_offset``: a Connect offsets record's source
    partition and offset, as JSON; ``error`` (also a ``problems`` row).

Examples
--------
>>> tables = workbench.load(workbench.open_bundle("bundle/"), spark)             # doctest: +SKIP
>>> (tables.mirror.where("kind = 'offset_sync'")                                  # doctest: +SKIP
...  .groupBy("topic", "partition").agg(F.max("upstream_offset"), F.max("downstream_offset")).show())
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

from workbench.spark.registry import Built, TableSpec, register_table
from workbench.spark.source import PROBLEMS_SCHEMA, ArtifactReader, ArtifactSource, FilePartition, ms_to_us

if TYPE_CHECKING:
    from workbench.bundle import Artifact, Bundle
    from workbench.formats.mirror import MirrorRecord, MirrorTopology
    from workbench.formats.problems import ProblemLog
    from workbench.spark.registry import BuildContext

MIRROR_SCHEMA = (
    "node_id int, path string, cluster string, internal_topic string, internal_partition int, "
    "batch_position long, offset long, timestamp timestamp, kind string, source_alias string, target_alias string, "
    "connector string, group string, topic string, partition int, upstream_offset long, downstream_offset long, "
    "metadata string, heartbeat_timestamp timestamp, value_version int, deleted boolean, connect_partition string, "
    "connect_offset string, error string"
)

#: Names of a MirrorMaker 2 configuration file in a bundle.
MM2_CONFIG_NAME = re.compile(r"^(mm2|connect-mirror-maker)[\w.-]*\.properties$")
#: A Kafka Connect worker's configuration, read for the offsets topic it names (``offset.storage.topic``).
CONNECT_CONFIG_NAME = re.compile(r"^connect-distributed[\w.-]*\.properties$")


def mirror_context(bundle: Bundle) -> tuple[dict[str, Any], list[tuple[int, str, int, str, str]]]:
    """The clusters and flows of a bundle (manifest and MirrorMaker 2 configuration), and problems met reading them.

    Returns
    -------
    (dict, list)
        ``{"node_clusters": {node id: alias}, "clusters": [...], "flows": [[source, target]...],
        "separator": ".", "offset_syncs_location": {...}, "offsets_topics": [...]}``, and ``problems``
        rows. ``offsets_topics`` are the Connect offsets topics the MirrorMaker 2 configuration and any
        Connect worker's configuration (``connect-distributed*.properties``) name.
    """
    from workbench.formats.kraft_files import parse_java_properties
    from workbench.formats.mirror import mirror_topology

    nodes = (bundle.manifest or {}).get("nodes") or []
    node_clusters = {str(n["id"]): n["cluster"] for n in nodes
                     if isinstance(n, dict) and isinstance(n.get("id"), int) and isinstance(n.get("cluster"), str)}
    problems = []
    props: dict[str, str] | None = None
    stored: set[str] = set()
    for a in sorted(bundle.artifacts, key=lambda a: (a.path.count("/"), a.path)):
        name = a.path.rsplit("/", 1)[-1]
        mm2 = props is None and MM2_CONFIG_NAME.match(name)
        if not (mm2 or CONNECT_CONFIG_NAME.match(name)):
            continue
        try:
            read = parse_java_properties((bundle.root / a.path).read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            problems.append((a.node_id, str(bundle.root / a.path), 0, "unreadable", f"cannot read file: {exc}"))
            continue
        if mm2:
            props = read
        elif read.get("offset.storage.topic", "").strip():
            stored.add(read["offset.storage.topic"].strip())
    topology = mirror_topology(props or {})
    return {
        "node_clusters": node_clusters, "clusters": list(topology.clusters), "flows": [list(f) for f in topology.flows],
        "separator": topology.separator, "offset_syncs_location": topology.offset_syncs_location,
        "offsets_topics": sorted(stored | set(topology.offsets_topics)),
    }, problems


def _topology(context: dict[str, Any]) -> MirrorTopology:
    from workbench.formats.mirror import MirrorTopology

    return MirrorTopology(tuple(context.get("clusters") or ()), tuple(tuple(f) for f in context.get("flows") or ()),
                          context.get("separator") or ".", dict(context.get("offset_syncs_location") or {}),
                          tuple(context.get("offsets_topics") or ()))


def mirror_files(bundle: Bundle, separator: str = ".", offsets_topics: Collection[str] = ()) -> list[Artifact]:
    """The bundle's segments of MirrorMaker 2 topics (offset syncs, checkpoints, heartbeats, Connect offsets)."""
    from workbench.formats.mirror import classify_mirror_topic

    return [a for a in bundle.of_kind("segment") if a.path.endswith(".log") and a.topic is not None
            and classify_mirror_topic(a.topic, separator, offsets_topics) is not None]


def flow_of(kind: str, topic_kind: str, topic_alias: str | None, key: dict, node_cluster: str | None,
            topology: MirrorTopology) -> tuple[str | None, str | None, str | None]:
    """``(source_alias, target_alias, cluster)`` of a record (see the module docstring).

    Examples
    --------
    >>> from workbench.formats.mirror import mirror_topology
    >>> t = mirror_topology({"clusters": "A, B", "A->B.enabled": "true"})
    >>> flow_of("offset_sync", "offset_syncs", "B", {"topic": "orders", "partition": 0}, None, t)
    ('A', 'B', 'A')
    >>> flow_of("checkpoint", "checkpoints", "A", {"group": "g"}, "B", t)
    ('A', 'B', 'B')
    """
    if kind in ("heartbeat", "heartbeat_offset"):
        source, target = key.get("sourceClusterAlias"), key.get("targetClusterAlias")
        if topic_kind == "heartbeats" and topic_alias is None:
            return source, target, node_cluster or target  # the local heartbeats topic lies in the target
        if topic_kind == "heartbeats":  # a copy <upstream>.heartbeats (multi-hop <B>.<A>.heartbeats) lies
            alias = topic_alias.split(topology.separator, 1)[0]  # in a target of the nearest upstream
            return source, target, node_cluster or (alias and topology.other(alias, alias_is_source=True))
        return source, target, node_cluster or target
    if topic_kind == "offset_syncs" and topic_alias is not None:
        local = node_cluster if node_cluster != topic_alias else None
        flows = [(s, t) for s, t in topology.flows
                 if (topology.location(s, t) == "source" and t == topic_alias)
                 or (topology.location(s, t) == "target" and s == topic_alias)]
        if len(flows) == 1:
            source, target = flows[0]
        elif topology.offset_syncs_location.get("", "source") == "source":
            source, target = local or topology.other(topic_alias, alias_is_source=False), topic_alias
        else:
            source, target = topic_alias, local or topology.other(topic_alias, alias_is_source=True)
        cluster = node_cluster or (source if topology.location(source or "", target or "") == "source" else target)
        return source, target, cluster
    source = key.get("cluster") if kind == "source_offset" and key.get("cluster") else topic_alias
    local = node_cluster if node_cluster != source else None
    target = local or (topology.other(source, alias_is_source=True) if source else None)
    return source, target, node_cluster or target


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def record_columns(rec: MirrorRecord) -> dict[str, Any]:
    """The kind-specific columns of one decoded MirrorMaker 2 record.

    Examples
    --------
    >>> from workbench.formats.mirror import decode_checkpoint, encode_checkpoint
    >>> cols = record_columns(decode_checkpoint(*encode_checkpoint("g", "A.orders", 1, 100, 98, "m")))
    >>> cols["group"], cols["topic"], cols["upstream_offset"], cols["downstream_offset"], cols["metadata"]
    ('g', 'A.orders', 100, 98, 'm')
    """
    key, value = rec.key, rec.value
    row: dict[str, Any] = {"kind": rec.kind, "deleted": value is None and rec.error is None}
    if rec.kind in ("offset_sync", "checkpoint"):
        row.update(group=key.get("group"), topic=key.get("topic"), partition=key.get("partition"))
        if value is not None:
            row.update(upstream_offset=value.get("upstreamOffset"), downstream_offset=value.get("offset"),
                       metadata=value.get("metadata"), value_version=value.get("version"))
    elif rec.kind == "heartbeat":
        if value is not None:
            row.update(heartbeat_timestamp=ms_to_us(value.get("timestamp")), value_version=value.get("version"))
    elif key:  # Connect offsets
        partition = {k: v for k, v in key.items() if k != "connector"}
        row.update(connector=key.get("connector"), connect_partition=json.dumps(partition, separators=(",", ":")),
                   group=key.get("group") if isinstance(key.get("group"), str) else None,
                   topic=key.get("topic") if isinstance(key.get("topic"), str) else None,
                   partition=_int(key.get("partition")))
        if value is not None:
            row["connect_offset"] = json.dumps(value, separators=(",", ":"))
            if rec.kind == "source_offset":
                row["upstream_offset"] = _int(value.get("offset"))
    return row


class MirrorReader(ArtifactReader):
    """Records of MirrorMaker 2's offset-syncs, checkpoints, heartbeats and Connect offsets topics."""

    schema_ddl = MIRROR_SCHEMA

    def __init__(self, schema: Any, options: dict[str, str]) -> None:
        super().__init__(schema, options)
        self.context = json.loads(options.get("context") or "{}")

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import fsspec

        from workbench.formats.mirror import (
            classify_mirror_topic,
            decode_checkpoint,
            decode_connect_offset,
            decode_heartbeat,
            decode_offset_sync,
        )
        from workbench.formats.topicrecords import records_with_batches

        topology = _topology(self.context)
        kind = classify_mirror_topic(partition.topic or "", topology.separator, topology.offsets_topics)
        if kind is None:
            return
        topic_kind, topic_alias = kind
        decoder = {"offset_syncs": decode_offset_sync, "checkpoints": decode_checkpoint,
                   "heartbeats": decode_heartbeat, "connect_offsets": decode_connect_offset}[topic_kind]
        node_cluster = (self.context.get("node_clusters") or {}).get(str(partition.node_id))
        with fsspec.open(partition.path, "rb") as f:
            for info, record in records_with_batches(f, partition.path, problems=log, strict=self.strict):
                if info.is_control:
                    continue  # transaction markers of an exactly-once Connect worker
                rec = decoder(record.key, record.value)
                row = {
                    "node_id": partition.node_id, "path": partition.path, "internal_topic": partition.topic,
                    "internal_partition": partition.partition, "batch_position": info.position,
                    "offset": record.offset, "timestamp": ms_to_us(record.timestamp),
                }
                row.update(record_columns(rec))
                source, target, cluster = flow_of(rec.kind, topic_kind, topic_alias, rec.key, node_cluster, topology)
                row.update(source_alias=source, target_alias=target, cluster=cluster, error=rec.error)
                if rec.error:
                    log.report(info.position, "decode_error",
                               f"{partition.topic} record at offset {record.offset}: {rec.error}")
                yield row


class MirrorSource(ArtifactSource):
    """``spark.read.format("kafka_mirror")``: one row per record of MirrorMaker 2's topics."""

    reader_class = MirrorReader

    @classmethod
    def name(cls) -> str:
        return "kafka_mirror"


_ROW = ("record of MirrorMaker 2's topics (offset syncs, checkpoints, heartbeats, Connect source offsets), "
        "per node replica")

#: How the files are read (the registered table builds through it, with the bundle's clusters and flows).
READ_SPEC = TableSpec(name="mirror", row=_ROW, schema=MIRROR_SCHEMA, kinds=("segment",), source=MirrorSource)


def build_mirror(ctx: BuildContext) -> Built:
    """The ``mirror`` table: the bundle's clusters and flows on the driver, then the files read by Spark."""
    context, problems = mirror_context(ctx.bundle)
    ctx.spark.dataSource.register(MirrorSource)
    built = ctx.read(READ_SPEC, mirror_files(ctx.bundle, context["separator"], context["offsets_topics"]),
                     context=json.dumps(context, sort_keys=True))
    if problems and built.problems is not None:
        return Built(built.rows, built.problems.unionByName(ctx.spark.createDataFrame(problems, PROBLEMS_SCHEMA)),
                     built.persisted, built.scratch)
    return built


TABLE = register_table("mirror", row=_ROW, schema=MIRROR_SCHEMA, kinds=("segment", "other", "manifest"),
                       build=build_mirror)
