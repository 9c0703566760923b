"""``metrics``: metric exports in long format, one row per sample of one metric value.

Name
    ``kafka_metrics``.
Reads
    ``metrics`` artifacts (files under ``metrics/``, and ``.csv``/``.prom`` files anywhere), each
    read in the format its content shows: JmxTool CSV (``"time",...`` header), Prometheus text
    exposition (``# HELP``/``# TYPE`` or sample lines; OpenMetrics text too), or a Prometheus HTTP
    API response (``query_range`` matrix, ``query`` vector or scalar JSON). A file in none of
    these formats, or one that cannot be read, is a ``problems`` row (``unknown_format``,
    ``unparsed_line``, ``truncated``...), never skipped without a word.
Options
    ``strict``.
Partitioning
    Each file read whole; small files are packed into one input partition (``pack_bytes``,
    ``pack_files``: :mod:`workbench.spark.source`).

Columns: ``node_id, path, format`` (``jmxtool``, ``prometheus_text``, ``prometheus_json``),
``name`` (the normalised name: the same for a value whatever the export), ``metric`` (as the
export names it: the MBean's ``name`` — or ``type`` — property for JmxTool, the sample name for
Prometheus), ``mbean`` and ``attribute`` (JmxTool only), ``labels``, ``timestamp``, ``value``.

The normalised ``name`` is the Prometheus JMX exporter's name with the usual Kafka rules (the
rule: :mod:`workbench.formats.jmx`): a JmxTool column
``kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount:Value`` and a scraped
``kafka_server_replicamanager_underminisrpartitioncount`` both have ``name =
'kafka_server_replicamanager_underminisrpartitioncount'``; ``raft-metrics``'
``commit-latency-avg`` is ``kafka_server_raft_metrics_commit_latency_avg``. A Prometheus
sample's name is lower-cased (exporters without ``lowercaseOutputName`` then match too), and the
names the common published rule sets (Strimzi's, Confluent's, Bitnami's) and the exporter 1.x's
``_total`` on counters give are rewritten to it (:mod:`workbench.formats.exporter_names`).
``labels`` are alike in both: for JmxTool the MBean's key properties other than ``type`` and
``name`` (``topic``, ``partition``, ``clientId``, ``target``...) and ``quantile`` for percentile
attributes; for Prometheus the sample's labels (``__name__`` removed; a Prometheus server's
``instance`` and ``job`` stay).

Times: JmxTool rows carry their sample time; a Prometheus sample its own timestamp when the text
has one (the API JSON always has). A text sample without one takes the capture time of its
file: the manifest entry's ``t_ms`` (the scenarios record the moment the scrape was sent), else
epoch milliseconds in the file name (``metrics/4-1795410208438.prom``), else null. The file's
modification time is never used: copies and archives change it.

The node a file was sampled from comes from the bundle's manifest, else from a leading number
in the file name (``3-broker.csv``), else from the log dir the file lies in. A Prometheus server's
export (API JSON, or federated text) holds every node's series, told apart by their ``instance``
label (the exporter's ``host:port``); a row that has one takes the node it names, chosen in this
order (read on the driver once per bundle, given to the readers as the ``instances`` option):

1. the operator's mapping ``metrics/instances.json`` (else ``.yaml``, ``.yml``; every one present
   is read, the first giving an instance wins): ``{"<instance>": <node id>}``. An entry that is
   not a node id (0..2147483647), or a file that does not parse, is a ``problems`` row
   (``bad_value``, ``decode_error``) and maps nothing. The file is no export (the inventory's
   kind ``other``);
2. else the instance's host when it is the ``listeners``/``advertised.listeners`` host of exactly
   one node's properties file in the bundle (``server.properties``...; wildcards and hosts several
   nodes share, all nodes on one machine, decide nothing);
3. else the file's own node, as above, and one ``unmapped_instance`` problem per instance and
   file saying how to map it. No row is dropped.

Examples
--------
>>> tables.metrics.where("name = 'kafka_server_replicamanager_underminisrpartitioncount'").show()  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.bundle import INSTANCE_MAPS
from workbench.formats.problems import Problem
from workbench.spark._files import epoch_ms_in_name, facts_option, manifest_entries, read_with_facts
from workbench.spark.registry import register_table
from workbench.spark.source import ArtifactReader, ArtifactSource, FilePartition

if TYPE_CHECKING:
    from workbench.bundle import Artifact, Bundle
    from workbench.formats.problems import ProblemLog
    from workbench.spark.registry import BuildContext, Built

METRICS_SCHEMA = (
    "node_id int, path string, format string, name string, metric string, mbean string, attribute string, "
    "labels map<string,string>, timestamp timestamp, value double"
)


def mbean_labels(mbean: str) -> dict[str, str]:
    """Key properties of an MBean name (``domain:k=v,...``), with the domain under ``domain``.

    >>> mbean_labels("kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount")
    {'domain': 'kafka.server', 'type': 'ReplicaManager', 'name': 'UnderMinIsrPartitionCount'}
    """
    from workbench.formats.jmx import mbean_properties

    domain, props = mbean_properties(mbean)
    return {"domain": domain, **dict(props)}


def sniff_format(path: str, text: str) -> str | None:
    """The format of a metric export from its content (and ``.csv`` name): ``jmxtool``,
    ``prometheus_json``, ``prometheus_text`` or None.

    Examples
    --------
    >>> sniff_format("m.csv", '"time","a:b=c:Value"\\n'), sniff_format("x.prom", "# HELP up up\\n")
    ('jmxtool', 'prometheus_text')
    """
    from workbench.formats.prometheus import looks_like_prometheus_json, looks_like_prometheus_text

    head = text.lstrip()[:4096]
    if head.startswith('"time"') or (path.endswith(".csv") and head.startswith("time,")):
        return "jmxtool"
    if looks_like_prometheus_json(head):
        return "prometheus_json"
    if looks_like_prometheus_text(head):
        return "prometheus_text"
    return None


def _ms(value: int | None) -> int | None:
    from workbench.spark.source import ms_to_us

    return ms_to_us(value)


class MetricsReader(ArtifactReader):
    """Every metric export format in the long ``metrics`` layout (one row per numeric sample value)."""

    schema_ddl = METRICS_SCHEMA

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import fsspec

        with fsspec.open(partition.path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            log.report(exc.start, "decode_error", f"byte {exc.start}: not UTF-8 ({exc.reason}); bytes replaced")
            text = raw.decode("utf-8", "replace")
        fmt = sniff_format(partition.path, text)
        base = {"node_id": partition.node_id, "path": partition.path, "format": fmt}
        if fmt == "jmxtool":
            yield from self._jmx(text, partition, log, base)
        elif fmt == "prometheus_text":
            captured = facts_option(self.options).get(partition.path, {}).get("captured_ms")
            yield from self._prometheus(text, partition, log, base, "text", captured)
        elif fmt == "prometheus_json":
            yield from self._prometheus(text, partition, log, base, "json", None)
        elif not text.strip():
            log.report(0, "truncated", "an empty metric export")
        else:
            log.report(0, "unknown_format", f"not JmxTool CSV, Prometheus text or Prometheus API JSON: "
                                            f"{text.lstrip()[:80]!r}")

    @staticmethod
    def _jmx(text: str, partition: FilePartition, log: ProblemLog, base: dict[str, Any]) -> Iterator[dict[str, Any]]:
        from workbench.formats.jmx import exporter_name, read_jmx_csv

        names: dict[tuple[str, str], tuple[str, str, list[tuple[str, str]]]] = {}
        for sample in read_jmx_csv(text, partition.path, log):
            key = (sample.mbean, sample.attribute)
            known = names.get(key)
            if known is None:
                labels = mbean_labels(sample.mbean)
                name, exported = exporter_name(sample.mbean, sample.attribute)
                known = names[key] = (name, labels.get("name") or labels.get("type") or sample.mbean,
                                      list(exported.items()))
            yield {**base, "name": known[0], "metric": known[1], "mbean": sample.mbean,
                   "attribute": sample.attribute, "labels": known[2], "timestamp": _ms(sample.timestamp_ms),
                   "value": sample.value, "line": sample.line}

    def _prometheus(self, text: str, partition: FilePartition, log: ProblemLog, base: dict[str, Any], kind: str,
                    captured: int | None) -> Iterator[dict[str, Any]]:
        from workbench.formats.exporter_names import canonical_name, summary_names
        from workbench.formats.prometheus import read_prometheus_json, read_prometheus_text

        summaries = summary_names(text, kind)
        samples = (read_prometheus_text(text, partition.path, log, default_ms=captured) if kind == "text"
                   else read_prometheus_json(text, partition.path, log))
        node_of = InstanceNodes(self.options.get("instances"), partition.node_id, log)
        for s in samples:
            instance = s.labels.get("instance")
            node = partition.node_id if instance is None else node_of(instance)
            count = "quantile" not in s.labels and s.name.lower() in summaries  # Confluent's histogram count
            yield {**base, "node_id": node, "name": canonical_name(s.name, histogram_count=count), "metric": s.name,
                   "mbean": None, "attribute": None, "labels": list(s.labels.items()), "timestamp": _ms(s.timestamp_ms),
                   "value": s.value, "line": s.line}


class InstanceNodes:
    """The node of a Prometheus ``instance`` label in one file (rules 1-3 of the module docstring);
    an instance neither rule maps keeps the file's node, and is reported once the file shows a second
    unmapped instance (one instance alone is the file's node's export, and says nothing wrong)."""

    def __init__(self, option: str | None, file_node: int, log: ProblemLog) -> None:
        import json

        facts = json.loads(option) if option else {}
        self.mapped: dict[str, int] = facts.get("mapped", {})
        self.hosts: dict[str, int] = facts.get("hosts", {})
        self.file_node = file_node
        self.log = log
        self.seen: dict[str, int] = {}
        self.unmapped: list[str] = []

    def __call__(self, instance: str) -> int:
        node = self.seen.get(instance)
        if node is not None:
            return node
        from workbench.formats.prometheus_instances import instance_host

        node = self.mapped.get(instance)
        if node is None:
            node = self.hosts.get(instance_host(instance))
        if node is None:
            node = self.file_node
            self.unmapped.append(instance)
            told_now = self.unmapped if len(self.unmapped) == 2 else [instance] if len(self.unmapped) > 2 else []
            for told in told_now:
                self.log.report(0, "unmapped_instance",
                                f"instance {told!r}: no node known for it (not in {INSTANCE_MAPS[0]}, and its host "
                                f"is no single node's listener host); its rows keep the file's node {node}. Map it "
                                f'in {INSTANCE_MAPS[0]}: {{"{told}": <node id>}}')
        self.seen[instance] = node
        return node


class MetricsSource(ArtifactSource):
    """``spark.read.format("kafka_metrics")``: metric export samples as rows of the ``metrics`` table."""

    reader_class = MetricsReader

    @classmethod
    def name(cls) -> str:
        return "kafka_metrics"


def metric_files(bundle: Bundle) -> list[Artifact]:
    """Metric export files, each with the node it was sampled from (manifest, else a leading number)."""
    entries = manifest_entries(bundle, "metrics")
    out = []
    for a in bundle.of_kind("metrics"):
        node = entries.get(a.path, {}).get("node")
        if node is not None and (not isinstance(node, int) or isinstance(node, bool) or not 0 <= node < 2**31):
            manifest = str(bundle.root / "manifest.json")
            problem = Problem(manifest, 0, "bad_value", f"metrics entry of {a.path}: node {node} is not a node id "
                                                        "(0..2147483647); the node is taken from the file name")
            if problem not in bundle.problems:
                bundle.problems.append(problem)
            node = None
        if not isinstance(node, int):
            m = re.match(r"^(\d+)[-_.]", Path(a.path).name)
            node = int(m.group(1)) if m else a.node_id
        out.append(dataclasses.replace(a, node_id=int(node)))
    return out


def capture_times(bundle: Bundle) -> dict[str, dict[str, Any]]:
    """Capture time of each metric file (manifest ``t_ms``, else epoch ms in the name)."""
    entries = manifest_entries(bundle, "metrics")
    out: dict[str, dict[str, Any]] = {}
    for a in bundle.of_kind("metrics"):
        t = entries.get(a.path, {}).get("t_ms")
        if not isinstance(t, int):
            t = epoch_ms_in_name(a.path)
        out[a.path] = {"captured_ms": t}
    return out


def instance_nodes(bundle: Bundle) -> dict[str, dict[str, int]]:
    """What names the node of a Prometheus ``instance`` label in this bundle: ``mapped`` (the
    operator's mapping files, :data:`workbench.bundle.INSTANCE_MAPS`; a bad entry or file is a
    bundle problem) and ``hosts`` (a listener host -> the one node whose properties name it)."""
    from workbench.formats.kraft_files import read_properties_file
    from workbench.formats.problems import ProblemLog
    from workbench.formats.prometheus_instances import listener_hosts, read_instance_map

    mapped: dict[str, int] = {}
    for rel in INSTANCE_MAPS:
        path = bundle.root / rel
        if not path.is_file():
            continue
        log = ProblemLog(str(path))
        try:
            data = path.read_bytes()
        except OSError as exc:
            log.report(0, "unreadable", f"cannot read file: {exc}")
            data = b""
        entries = read_instance_map(data, str(path), not rel.endswith(".json"), log) if data else {}
        for instance, node in entries.items():
            if mapped.setdefault(instance, node) != node:
                log.report(0, "bad_value", f"entry {instance!r}: node {node}, but an earlier mapping file gives "
                                           f"node {mapped[instance]}, which is kept")
        for problem in log.problems:
            if problem not in bundle.problems:
                bundle.problems.append(problem)
    owners: dict[str, set[int]] = {}
    for a in bundle.of_kind("server_properties"):
        try:
            props = read_properties_file((bundle.root / a.path).read_bytes(), a.path, ProblemLog(a.path))
        except OSError:
            continue  # the configs table reports an unreadable properties file
        node = a.node_id
        if node < 0:  # outside a node's directory: the file names its node (as the configs table reads it)
            own = props.get("node.id", props.get("broker.id", "")).strip()
            node = int(own) if own.isdigit() and int(own) < 2**31 else -1
        if node >= 0:
            for host in listener_hosts(props):
                owners.setdefault(host, set()).add(node)
    hosts = {host: next(iter(nodes)) for host, nodes in owners.items() if len(nodes) == 1}
    return {"mapped": mapped, "hosts": hosts}


def build_metrics(ctx: BuildContext) -> Built:
    """Read every metric export of the bundle."""
    import json

    return read_with_facts(ctx, "metrics", TABLE_ROW, METRICS_SCHEMA, MetricsSource, metric_files(ctx.bundle),
                           capture_times(ctx.bundle), instances=json.dumps(instance_nodes(ctx.bundle)))


TABLE_ROW = "sample of one metric value in a metric export (JmxTool CSV, Prometheus text or API JSON)"

TABLE = register_table(
    "metrics",
    row=TABLE_ROW,
    schema=METRICS_SCHEMA,
    kinds=("metrics",),
    build=build_metrics,
)
