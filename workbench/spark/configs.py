"""``configs``: effective static and dynamic configuration, one row per setting as a bundle records it.

Name
    ``configs`` (derived: no data source of its own).
Reads
    ``server_properties`` artifacts (``server.properties``, ``broker.properties``,
    ``controller.properties``; read on the driver, they are small) and the ``metadata`` table's
    ``ConfigRecord`` rows.
Options
    ``strict``; ``config_secrets`` (default False: values of settings whose name looks secret —
    ``password``, ``secret``, ``jaas.config``, ``credential``, ``token``, a name ending in
    ``.key`` — are replaced by ``[hidden]`` and ``sensitive`` is true; True keeps them).
Partitioning
    Static settings: one small DataFrame; dynamic ones: the ``metadata`` table's partitions.

Columns:

* ``scope``: ``static`` (a node's properties file), ``dynamic_broker`` (``ConfigRecord`` of
  resource type BROKER with a broker id), ``dynamic_cluster_default`` (BROKER with an empty
  name: ``kafka-configs --entity-default``), ``topic``, ``broker_logger``, ``client_metrics``,
  ``group``, or ``unknown`` for other resource types;
* ``resource_type`` (``node`` for static settings, else Kafka's resource type in lower case) and
  ``resource_name`` (the node id, broker id, topic, ...; ``""`` for cluster defaults);
* ``name``, ``value`` (null: the dynamic setting was deleted, Kafka's ``--delete-config``),
  ``sensitive``;
* ``time``: the record's timestamp (for a snapshot's records, when the snapshot was written:
  the value was in effect at its end offset); null for static settings;
* ``offset``: the record's metadata log offset; a snapshot's end offset for records read from
  a snapshot; null for static settings and bootstrap records;
* ``source``: ``properties`` (a node's file), ``log``, ``snapshot`` or ``bootstrap``;
* ``node_id``: the node whose file holds the setting (dynamic records: the lowest node id of
  the replicas holding it) and ``replicas``: how many nodes' metadata replicas hold the same
  record (each record is one row however many replicas hold it); ``cluster_id``: the cluster of
  those nodes, from their ``meta.properties`` (a bundle may hold several clusters, as
  MirrorMaker 2's does; null when unknown); ``path``: one file holding it.

Examples
--------
>>> tables.configs.where("name = 'min.insync.replicas'").orderBy("time").show()     # doctest: +SKIP
>>> static_config(tables, "min.insync.replicas").show()                              # doctest: +SKIP
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from workbench.spark.registry import Built, register_table
from workbench.spark.source import PROBLEMS_SCHEMA

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import Column, DataFrame

    from workbench.formats.problems import ProblemLog
    from workbench.spark.registry import BuildContext

CONFIGS_SCHEMA = (
    "scope string, resource_type string, resource_name string, name string, value string, sensitive boolean, "
    "time timestamp, offset long, source string, node_id int, replicas int, cluster_id string, path string"
)

#: ``ConfigRecord.resourceType`` codes (``org.apache.kafka.common.config.ConfigResource.Type``).
RESOURCE_TYPES = {2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}

#: Setting names whose values are hidden unless ``config_secrets=True``.
SECRET_NAME = re.compile(r"password|secret|jaas\.config|credential|token|\.key$", re.IGNORECASE)
HIDDEN = "[hidden]"

_SOURCES = {"segment": "log", "snapshot": "snapshot", "bootstrap": "bootstrap"}


def is_secret(name: str) -> bool:
    """Whether a setting's value is hidden by default.

    >>> is_secret("ssl.keystore.password"), is_secret("sasl.jaas.config"), is_secret("min.insync.replicas")
    (True, True, False)
    """
    return bool(SECRET_NAME.search(name))


def node_clusters(ctx: BuildContext) -> dict[int, str]:
    """Cluster id of each node (:meth:`workbench.bundle.Bundle.node_clusters`)."""
    return ctx.bundle.node_clusters()


#: Integer settings and the values Kafka accepts; any name ending ``.ms`` or ``.bytes`` is a
#: long from -1 (Kafka's "none" or "unlimited").
INTEGER_SETTINGS: dict[str, tuple[int, int]] = {
    "node.id": (0, 2**31 - 1), "broker.id": (-1, 2**31 - 1), "min.insync.replicas": (1, 2**31 - 1),
    "default.replication.factor": (1, 2**15 - 1), "num.partitions": (1, 2**31 - 1),
    "offsets.topic.replication.factor": (1, 2**15 - 1), "transaction.state.log.replication.factor": (1, 2**15 - 1),
    "transaction.state.log.min.isr": (1, 2**31 - 1),
}


def setting_range(name: str) -> tuple[int, int] | None:
    """The integer values a setting can take, or None when it is not an integer setting Kafka defines."""
    if name in INTEGER_SETTINGS:
        return INTEGER_SETTINGS[name]
    if name.endswith((".ms", ".bytes")):
        return (-1, 2**63 - 1)
    return None


def checked_setting(name: str, value: str, text: str, log: ProblemLog) -> str | None:
    """``value`` of an integer setting (:func:`setting_range`), or None with a ``bad_value`` problem
    at its line when it is not an integer Kafka would accept."""
    allowed = setting_range(name)
    if allowed is None:
        return value
    raw = value.strip()
    if re.fullmatch(r"[+-]?\d+", raw) and allowed[0] <= int(raw) <= allowed[1]:
        return value
    m = re.search(rf"^[ \t\f]*{re.escape(name)}[ \t\f]*[=:]", text, re.MULTILINE)
    line = text.count("\n", 0, m.start()) + 1 if m else 0
    log.report(line, "bad_value", f"line {line}: {name}={raw[:80]} is not an integer in "
                                  f"{allowed[0]}..{allowed[1]}; null")
    return None


def static_rows(ctx: BuildContext) -> tuple[list[tuple], list[tuple]]:
    """Rows of every node's properties file, and the problems met reading them."""
    import fsspec

    from workbench.formats.kraft_files import read_properties_file
    from workbench.formats.problems import ProblemLog

    rows: list[tuple] = []
    problems: list[tuple] = []
    strict = bool(ctx.option("strict", False))
    for artifact in ctx.bundle.of_kind("server_properties"):
        path = str(ctx.bundle.root / artifact.path)
        log = ProblemLog(path, strict=strict)
        try:
            with fsspec.open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            log.report(0, "unreadable", f"cannot read file: {exc}")
            data = b""
        props = read_properties_file(data, path, log) if data or not log.problems else {}
        node = artifact.node_id
        if node < 0:  # outside a node's directory: the file names its node
            own = props.get("node.id", props.get("broker.id", ""))
            node = int(own) if own.strip().lstrip("-").isdigit() else -1
        text = data.decode("utf-8", "replace")
        for name, value in props.items():
            value = checked_setting(name, value, text, log)
            rows.append(("static", "node", str(node), name, value, None, None, None, "properties", node, 1,
                         artifact.cluster_id or ctx.bundle.node_clusters().get(node), path))
        problems += [(node, p.path, p.position, p.kind, p.detail) for p in log.problems]
    return rows, problems


def config_record_fields(metadata: DataFrame) -> DataFrame:
    """The ``ConfigRecord`` rows of the ``metadata`` table with ``resource_type_code, resource_name,
    name, value``: its typed ``config_*`` columns, or, where a reader left them null, the
    record's ``fields`` JSON.

    Returns
    -------
    DataFrame
        ``node_id, cluster_id, path, file_kind, file_offset, offset, timestamp, resource_type_code,
        resource_name, name, value``.
    """
    from pyspark.sql import functions as F

    fields = F.from_json("fields", "resourceType int, resourceName string, name string, value string")
    typed = {"config_resource_type": "resourceType", "config_resource_name": "resourceName",
             "config_name": "name", "config_value": "value"}
    present = set(metadata.columns)

    def column(name: str, key: str) -> Column:
        from_fields = fields.getField(key)
        return F.coalesce(F.col(name), from_fields) if name in present else from_fields

    cluster = F.col("cluster_id") if "cluster_id" in present else F.lit(None).cast("string")
    return (metadata.where(F.col("record_type") == "ConfigRecord")
            .select("node_id", cluster.alias("cluster_id"), "path", "file_kind", "file_offset", "offset", "timestamp",
                    column("config_resource_type", typed["config_resource_type"]).alias("resource_type_code"),
                    column("config_resource_name", typed["config_resource_name"]).alias("resource_name"),
                    column("config_name", typed["config_name"]).alias("name"),
                    column("config_value", typed["config_value"]).alias("value")))


def dynamic_configs(metadata: DataFrame, clusters: Mapping[int, str] | None = None) -> DataFrame:
    """``ConfigRecord`` records as rows of :data:`CONFIGS_SCHEMA` (before hiding secrets), one per
    record of each cluster: the metadata row's ``cluster_id``, else its node's in ``clusters``
    (node id -> cluster id)."""
    from pyspark.sql import functions as F

    rec = config_record_fields(metadata)
    cluster = F.lit(None).cast("string")
    for node, cid in sorted((clusters or {}).items()):
        cluster = F.when(F.col("node_id") == node, F.lit(cid)).otherwise(cluster)
    rec = rec.withColumn("cluster_id", F.coalesce(F.col("cluster_id"), cluster))
    code = F.col("resource_type_code")
    rtype = F.lit(None).cast("string")
    for number, label in RESOURCE_TYPES.items():
        rtype = F.when(code == number, F.lit(label)).otherwise(rtype)
    scope = (F.when((code == 4) & (F.coalesce(F.col("resource_name"), F.lit("")) == ""), "dynamic_cluster_default")
             .when(code == 4, "dynamic_broker").when(code.isin(*RESOURCE_TYPES), rtype).otherwise("unknown"))
    source = F.coalesce(*[F.when(F.col("file_kind") == k, F.lit(v)) for k, v in _SOURCES.items()], F.lit("log"))
    offset = (F.when(source == "log", F.col("offset")).when(source == "snapshot", F.col("file_offset"))
              .otherwise(F.lit(None).cast("long")))
    keyed = rec.select(scope.alias("scope"), F.coalesce(rtype, F.concat(F.lit("type_"), code.cast("string")))
                       .alias("resource_type"), "resource_name", "name", "value", source.alias("source"),
                       offset.alias("offset"), "timestamp", "node_id", "cluster_id", "path")
    key = ["cluster_id", "scope", "resource_type", "resource_name", "name", "value", "source", "offset"]
    grouped = keyed.groupBy(*key).agg(
        F.min("timestamp").alias("time"), F.min("node_id").alias("node_id"),
        F.countDistinct("node_id").cast("int").alias("replicas"),
        F.min(F.struct("node_id", "path")).alias("first"))
    return grouped.select("scope", "resource_type", "resource_name", "name", "value",
                          F.lit(False).alias("sensitive"), "time", "offset", "source", "node_id", "replicas",
                          "cluster_id", F.col("first.path").alias("path"))


def hide_secrets(configs: DataFrame) -> DataFrame:
    """``configs`` with the values of secret-looking settings replaced by ``[hidden]`` (``sensitive`` true)."""
    from pyspark.sql import functions as F

    secret = F.coalesce(F.lower("name").rlike(SECRET_NAME.pattern), F.lit(False))
    return configs.withColumn("sensitive", secret).withColumn(
        "value", F.when(secret & F.col("value").isNotNull(), F.lit(HIDDEN)).otherwise(F.col("value")))


def build_configs(ctx: BuildContext) -> Built:
    """Static settings of every properties file, then every ``ConfigRecord`` of the metadata log."""
    spark = ctx.spark
    rows, problems = static_rows(ctx)
    hide = not ctx.option("config_secrets", False)
    keep = getattr(ctx.tables, "kept", None)
    if keep is not None:   # what static_settings returns, from the rows themselves: no Spark job
        keep(STATIC_KEY, lambda: _settings_of(rows, hide))
    static = spark.createDataFrame(rows, CONFIGS_SCHEMA)
    dynamic = (dynamic_configs(ctx.tables["metadata"], node_clusters(ctx)) if ctx.bundle.metadata_files
               else spark.createDataFrame([], CONFIGS_SCHEMA))
    out = static.unionByName(dynamic)
    if hide:
        out = hide_secrets(out)
    return Built(out, spark.createDataFrame(problems, PROBLEMS_SCHEMA))


def static_config(tables: Mapping[str, DataFrame], name: str) -> DataFrame:
    """The value of one static setting in every node's properties file: ``node_id, value, path``.

    A node whose file does not set it has no row (Kafka's default applies).

    >>> static_config(tables, "min.insync.replicas").collect()          # doctest: +SKIP
    [Row(node_id=4, value='2', path='.../nodes/4/config/server.properties'), ...]
    """
    from pyspark.sql import functions as F

    return (tables["configs"].where((F.col("scope") == "static") & (F.col("name") == name))
            .select("node_id", "value", "path").orderBy("node_id", "path"))


#: Key of :func:`static_settings`' list kept with the tables (:meth:`~workbench.spark.registry.Tables.kept`).
STATIC_KEY = "configs.static"


def _settings_of(rows: list[tuple], hide: bool) -> list[tuple[int | None, str, str | None, str, str | None]]:
    """:func:`static_settings` from :func:`static_rows`' rows (every node id a number, -1 when unknown):
    values hidden as :func:`hide_secrets` hides them, in the order of the table's
    ``orderBy("node_id", "path")`` (a file's own order within it)."""
    at = {c.split()[0]: i for i, c in enumerate(CONFIGS_SCHEMA.split(", "))}
    node, name, value, path, cluster = at["node_id"], at["name"], at["value"], at["path"], at["cluster_id"]
    out = [(r[node], r[name], HIDDEN if hide and r[value] is not None and SECRET_NAME.search(r[name].lower())
            else r[value], r[path], r[cluster]) for r in rows]
    return sorted(out, key=lambda s: (s[0], s[3]))


def static_settings(tables: Any) -> list[tuple[int | None, str, str | None, str, str | None]]:
    """Every static setting of the nodes' properties files as ``(node_id, name, value, path, cluster_id)``.

    Kept once per loaded bundle (``tables.kept``): building the ``configs`` table keeps the list from
    the rows it read, so no Spark job runs (a collect of the table would compute its dynamic part from
    the metadata log too). Tables without ``kept`` (a mapping of frames) collect it each time.
    """
    from pyspark.sql import functions as F

    def collect() -> list[tuple[int | None, str, str | None, str, str | None]]:
        return [(r["node_id"], r["name"], r["value"], r["path"], r["cluster_id"]) for r in
                tables["configs"].where(F.col("scope") == "static")
                .select("node_id", "name", "value", "path", "cluster_id").orderBy("node_id", "path").collect()]

    from workbench.spark.registry import kept_with

    tables["configs"]   # built (lazily) now: a Tables' build keeps the list
    return kept_with(tables, STATIC_KEY, collect)


def effective_configs(configs: DataFrame, at: Any = None) -> DataFrame:
    """The settings in effect at ``at`` (timestamp or ISO string; default the end of the bundle).

    Per setting: the static value, or the last dynamic record by offset (a snapshot's at its end offset)
    unless it deleted the setting.

    >>> effective_configs(tables.configs).where("resource_type = 'topic'").show()   # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    dynamic = configs.where(F.col("scope") != "static")
    if at is not None:
        dynamic = dynamic.where(F.col("time").isNull() | (F.col("time") <= F.lit(at).cast("timestamp")))
    rank = F.when(F.col("source") == "snapshot", F.col("offset") * 2 - 1).otherwise(F.col("offset") * 2)
    order = Window.partitionBy("cluster_id", "scope", "resource_type", "resource_name", "name").orderBy(
        F.coalesce(rank, F.lit(-1)).desc(), F.col("time").desc_nulls_last())
    latest = (dynamic.withColumn("_n", F.row_number().over(order)).where(F.col("_n") == 1).drop("_n")
              .where(F.col("value").isNotNull()))
    return configs.where(F.col("scope") == "static").unionByName(latest)


TABLE = register_table(
    "configs",
    row="static setting of a node's properties file, or dynamic ConfigRecord of the metadata log",
    schema=CONFIGS_SCHEMA,
    kinds=("server_properties",),
    build=build_configs,
    options=("config_secrets",),
)
