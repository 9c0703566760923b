"""Loading a bundle into Spark: the tables that flow between the layers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.bundle import Bundle

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

INVENTORY_SCHEMA = (
    "path string, node_id int, kind string, topic string, partition int, base_offset long, "
    "bytes long, dir_state string"
)


@dataclass
class Tables:
    """The tables of one bundle, as lazy Spark DataFrames.

    Attributes
    ----------
    inventory : DataFrame
        One row per artifact (path, node_id, kind, topic, partition, base_offset, bytes).
    metadata : DataFrame
        One row per KRaft metadata record or control record of every node's metadata log
        replica, snapshots and bootstrap checkpoint (columns: ``METADATA_SCHEMA``).
    metrics : DataFrame
        Metric exports in long format: node_id, path, metric, mbean, attribute, labels,
        timestamp, value (columns: ``METRICS_SCHEMA``; JmxTool CSV today).
    batches : DataFrame
        One row per record batch of every log segment and snapshot, headers only
        (columns: ``BATCHES_SCHEMA``).
    problems : DataFrame
        Everything that could not be read: node_id, path, byte position, kind, detail.
    """

    inventory: DataFrame
    metadata: DataFrame
    batches: DataFrame
    metrics: DataFrame
    problems: DataFrame


def _files_option(bundle: Bundle, artifacts: list) -> str:
    return json.dumps(
        [
            {"path": str(bundle.root / a.path), "node_id": a.node_id, "kind": a.kind, "base_offset": a.base_offset,
             "topic": a.topic, "partition": a.partition}
            for a in artifacts
        ]
    )


def load(bundle: Bundle, spark: SparkSession, *, strict: bool = False, verify_crc: bool = True) -> Tables:
    """Build the bundle's tables.

    Nothing is read until a DataFrame is evaluated; reading is spread over Spark tasks, one
    per file.

    Parameters
    ----------
    bundle : Bundle
        From :func:`workbench.open_bundle`.
    spark : SparkSession
        From :func:`workbench.session` (its data sources must be registered).
    strict : bool
        Raise at the first unreadable byte instead of recording a problem.
    verify_crc : bool
        Check every batch's CRC-32C in the ``batches`` table (the default). ``False`` reads batch
        headers only, for quick triage of very large bundles: ``crc_valid`` is then null, and
        damage inside a batch's payload goes unnoticed (damaged headers are still reported).

    Returns
    -------
    Tables

    Examples
    --------
    >>> tables = load(open_bundle("bundle/"), spark)                  # doctest: +SKIP
    >>> tables.metadata.groupBy("record_type").count().show()          # doctest: +SKIP
    """
    from workbench.spark.sources import BATCHES_SCHEMA, METADATA_SCHEMA, METRICS_SCHEMA, PROBLEMS_SCHEMA

    meta_files = bundle.metadata_files
    strict_opt = "true" if strict else "false"
    if meta_files:
        reader = (spark.read.format("kafka_metadata").option("files", _files_option(bundle, meta_files))
                  .option("strict", strict_opt))
        metadata = reader.load()
        meta_problems = reader.option("emit", "problems").load()
    else:
        metadata = spark.createDataFrame([], METADATA_SCHEMA)
        meta_problems = spark.createDataFrame([], PROBLEMS_SCHEMA)
    segments = bundle.of_kind("segment", "snapshot", "bootstrap")
    if segments:
        breader = (spark.read.format("kafka_batches").option("files", _files_option(bundle, segments))
                   .option("strict", strict_opt).option("verify_crc", "true" if verify_crc else "false"))
        batches = breader.load()
        # metadata segments are read by both sources: take their problems once, from the metadata source
        data_only = [a for a in segments if a not in meta_files]
        batch_problems = (breader.option("files", _files_option(bundle, data_only)).option("emit", "problems").load()
                          if data_only else spark.createDataFrame([], PROBLEMS_SCHEMA))
    else:
        batches = spark.createDataFrame([], BATCHES_SCHEMA)
        batch_problems = spark.createDataFrame([], PROBLEMS_SCHEMA)
    csvs = _metric_files(bundle)
    if csvs:
        mreader = spark.read.format("kafka_jmx").option("files", json.dumps(csvs)).option("strict", strict_opt)
        metrics = mreader.load()
        metric_problems = mreader.option("emit", "problems").load()
    else:
        metrics = spark.createDataFrame([], METRICS_SCHEMA)
        metric_problems = spark.createDataFrame([], PROBLEMS_SCHEMA)
    discovery = spark.createDataFrame(
        [(-1, p.path, p.position, p.kind, p.detail) for p in bundle.problems], PROBLEMS_SCHEMA
    )
    inventory = spark.createDataFrame(
        [tuple(r.values()) for r in bundle.inventory_rows()], INVENTORY_SCHEMA
    )
    problems = discovery.unionByName(meta_problems).unionByName(batch_problems).unionByName(metric_problems)
    return Tables(inventory=inventory, metadata=metadata, batches=batches, metrics=metrics, problems=problems)


def load_records(bundle: Bundle, spark: SparkSession, *, topics: list[str] | None = None, payloads: bool = False,
                 strict: bool = False) -> tuple[DataFrame, DataFrame]:
    """The ``records`` table of a bundle's data segments, and the problems met decoding it.

    Kept apart from :func:`load` because it decodes every record: evaluate it for the topics
    you need. Rows: ``RECORDS_SCHEMA`` (node_id, path, topic, partition, batch_position, offset,
    timestamp, attributes, size, key_size, value_size, key, value, headers).

    Parameters
    ----------
    bundle : Bundle
        From :func:`workbench.open_bundle`.
    spark : SparkSession
        From :func:`workbench.session`.
    topics : list of str, optional
        Only these topics' segments (all data segments by default; KRaft metadata logs are the
        ``metadata`` table's business and are left out).
    payloads : bool
        Keep keys, values and header values. By default they are redacted (null) and only their
        sizes are kept, so that reports built on the table carry no payload.
    strict : bool
        Raise at the first unreadable byte instead of recording a problem.

    Returns
    -------
    (DataFrame, DataFrame)
        The records and their problems (``PROBLEMS_SCHEMA``), batch- and record-level.

    Examples
    --------
    >>> records, problems = load_records(open_bundle("bundle/"), spark, topics=["orders"])  # doctest: +SKIP
    """
    from workbench.spark.sources import PROBLEMS_SCHEMA, RECORDS_SCHEMA

    meta = {a.path for a in bundle.metadata_files}
    segments = [a for a in bundle.of_kind("segment") if a.path not in meta and a.path.endswith(".log")
                and (topics is None or a.topic in topics)]
    if not segments:
        return spark.createDataFrame([], RECORDS_SCHEMA), spark.createDataFrame([], PROBLEMS_SCHEMA)
    reader = (spark.read.format("kafka_records").option("files", _files_option(bundle, segments))
              .option("strict", "true" if strict else "false").option("payloads", "true" if payloads else "false"))
    return reader.load(), reader.option("emit", "problems").load()


def _metric_files(bundle: Bundle) -> list[dict]:
    """JmxTool CSV files, with the node each was sampled from (manifest, else a leading number)."""
    nodes = {m.get("file"): m.get("node") for m in (bundle.manifest or {}).get("metrics", [])}
    out = []
    for a in bundle.of_kind("metrics"):
        if not a.path.endswith(".csv"):
            continue
        node = nodes.get(a.path)
        if node is None:
            m = re.match(r"^(\d+)[-_.]", Path(a.path).name)
            node = int(m.group(1)) if m else a.node_id
        out.append({"path": str(bundle.root / a.path), "node_id": int(node), "kind": "metrics", "base_offset": None})
    return out
