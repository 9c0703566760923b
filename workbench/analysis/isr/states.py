"""Partition states: the replay of the metadata log into intervals of constant state, compiled or reference."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.isr.inputs import (
    _NEEDED,
    _UDF_SCHEMA,
    BROKER_RESOURCE,
    MIN_ISR_CONFIG,
    STATES_SCHEMA,
    TOPIC_RESOURCE,
    _static_key,
    static_min_isr,
)
from workbench.analysis.isr.reference import _replay_partition
from workbench.analysis.isr.textlog import with_text_logs
from workbench.analysis.metadata_log import ordered_records

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame


#: Partition records from which :func:`partition_states` runs its replay at once and keeps the
#: intervals as Parquet (:func:`workbench.analysis.replay.replay_to_parquet`) instead of a lazy plan.
MATERIALIZE_RECORDS = 1 << 18


def partition_states(metadata: DataFrame, *, static_min_isr: int | Mapping[str | None, int] = 1,
                     compiled: bool = True, materialize_records: int = MATERIALIZE_RECORDS) -> DataFrame:
    """Intervals of constant state per partition, with the KIP-164 flags.

    Parameters
    ----------
    metadata : DataFrame
        The ``metadata`` table (any number of node replicas, of any number of clusters: each
        cluster's log, by ``cluster_id``, is replayed on its own); its typed columns
        (``topic_id, topic, partition, leader, isr, replicas, adding, elr, config_*``) are read.
    static_min_isr : int or mapping
        ``min.insync.replicas`` of the brokers' ``server.properties`` (not in the metadata log):
        one value for every cluster, or a value per cluster id (clusters not named: 1). Topic and
        dynamic broker configs of the log override it, as in Kafka.
    compiled : bool
        Replay each partition with the compiled replay (:mod:`workbench.analysis.isr.kernel`,
        through :func:`workbench.analysis.replay.replay_by_key`), the default. ``False`` runs the
        reference replay, a Python loop per partition (``applyInPandas``): same rows, many times
        slower; kept as the oracle the compiled one is tested against.
    materialize_records : int
        A compiled replay of a cluster with at least this many partition records runs when this
        function is called, and its intervals are written once as Parquet under
        :func:`workbench.spark.registry.scratch_root` and read from there (a local scratch
        directory only; else the plan stays lazy): every later question reads them without
        replaying the log again or caching the intervals in Spark's memory. Smaller logs give a
        lazy plan. 0: always. A ``metadata`` table the registry keeps as a local Parquet copy
        (:func:`workbench.spark.registry.parquet_copy`, logs of 32 MiB and more) holding one
        replica with nothing to choose or seed is replayed at once whatever its size, by tasks
        reading the copy's files (:func:`workbench.analysis.replay.replay_files`); that replay also
        walks each partition's intervals for :func:`partition_summary` and sums the steps of
        :func:`under_min_isr_counts` as it writes them, so both read their results instead of
        the intervals.

    Returns
    -------
    DataFrame
        Columns ``STATES_SCHEMA``: ``topic, topic_id, partition, start, end, start_offset,
        leader, isr, replicas, elr, min_isr, under_replicated, under_min_isr, at_min_isr,
        offline, state, end_reason, cluster_id``; one row per interval of constant state of one
        partition of one cluster. ``state`` is the most severe of ``offline``,
        ``under_min_isr``, ``at_min_isr``, ``under_replicated``, ``healthy``. ``end`` is the
        time of the next change, of the topic's deletion (``end_reason = "topic_deleted"``) or
        of the last record of the log (``"log_end"``).

    Examples
    --------
    >>> states = partition_states(tables.metadata)                          # doctest: +SKIP
    >>> states.where("under_min_isr").select("topic", "partition", "start", "end").show()  # doctest: +SKIP
    """
    statics = {} if isinstance(static_min_isr, int) else dict(static_min_isr)
    default_static = static_min_isr if isinstance(static_min_isr, int) else 1
    for value in (default_static, *statics.values()):
        if value < 1:
            raise ValueError(f"static_min_isr must be >= 1, got {value}")
    require_columns(metadata, _NEEDED, "partition_states")
    if compiled:
        from workbench.spark.registry import parquet_copy

        directory = parquet_copy(metadata)
        fast = None if directory is None else _states_from_copy(metadata.sparkSession, directory, statics,
                                                                 default_static)
        if fast is not None:
            return fast
    records = ordered_records(metadata).where(~F.col("is_control"))
    records = records.withColumn("t_us", F.unix_micros("timestamp"))
    # one pass over the log for each cluster's end and the few records every partition needs: topic
    # names, deletions, min.insync.replicas changes (small enough to ship to every task with the replay)
    kind = (F.when(F.col("record_type") == "TopicRecord", F.lit("topic"))
            .when(F.col("record_type") == "RemoveTopicRecord", F.lit("removed"))
            .when((F.col("record_type") == "ConfigRecord") & (F.col("config_name") == MIN_ISR_CONFIG)
                  & F.col("config_resource_type").isin(TOPIC_RESOURCE, BROKER_RESOURCE), F.lit("config")))
    small = F.when(kind.isNotNull(), F.struct(kind.alias("kind"), "offset", "seq", "t_us", "topic_id", "topic",
                                              "config_resource_type", "config_resource_name", "config_value"))
    is_part = F.col("record_type").isin("PartitionRecord", "PartitionChangeRecord")
    heads = [h for h in records.groupBy("cluster_id").agg(F.max("t_us").alias("end"),
                                                          F.collect_list(small).alias("small"),
                                                          F.count(F.when(is_part, 1)).alias("parts")).collect()
             if h["end"] is not None]
    spark = metadata.sparkSession
    if not heads:
        return spark.createDataFrame([], STATES_SCHEMA)
    parts = (records.where(is_part & F.col("topic_id").isNotNull() & F.col("partition").isNotNull())
             .select("cluster_id", "offset", "seq", "t_us", "record_type", "topic_id", "partition", "leader", "isr",
                     "replicas", "adding", "elr"))
    out = None
    for head in sorted(heads, key=lambda h: (h["cluster_id"] is None, h["cluster_id"] or "")):
        cluster = head["cluster_id"]
        static = statics.get(cluster, default_static)
        mine = parts if len(heads) == 1 else parts.where(F.col("cluster_id").eqNullSafe(F.lit(cluster).cast("string")))
        one = _cluster_states(records, mine.drop("cluster_id"), cluster, head, static, compiled, len(heads) > 1,
                              head["parts"] >= materialize_records)
        out = one if out is None else out.unionByName(one)
    if compiled and len(heads) == 1:  # one replay: each partition's intervals together, in time order
        from workbench.analysis.replay import mark_clustered

        mark_clustered(out, ["topic_id", "partition"], ["start", "start_offset"])
    return out


def _states_from_copy(spark: Any, directory: str, statics: dict[str | None, int], default_static: int
                      ) -> DataFrame | None:
    """:func:`partition_states` of a metadata table read from its Parquet copy (``directory``), the
    replay's tasks reading the copy's files themselves (:func:`workbench.analysis.replay.replay_files`),
    when :func:`ordered_records` would keep its log records as they are: one cluster, one replica,
    segments that do not overlap, nothing to seed from a snapshot. Else None (the general path)."""
    import glob
    import json

    files = sorted(glob.glob(f"{directory}/*.parquet"))
    found = [json.loads(r["head"]) for r in spark.range(0, max(len(files), 1), 1, max(len(files), 1))
             .mapInArrow(_copy_heads(files), "head string").collect()]
    spans: dict[tuple, list[int]] = {}
    small: list[dict] = []
    end = None
    for one in found:
        for *key, first, last in one["spans"]:
            have = spans.setdefault(tuple(key), [first, last])
            have[0], have[1] = min(have[0], first), max(have[1], last)
        small.extend(one["small"])
        end = one["end"] if end is None else end if one["end"] is None else max(end, one["end"])
    clusters = {key[0] for key in spans}
    if len(clusters) > 1:
        return None
    segments = sorted((first, last, key[1]) for key, (first, last) in spans.items() if key[3] == "segment")
    if len({node for _f, _l, node in segments}) > 1 or any(
            b[0] <= a[1] for a, b in zip(segments, segments[1:], strict=False)):
        return None
    log_start = segments[0][0] if segments else None
    if log_start and any(key[3] == "snapshot" and key[4] is not None and key[4] <= log_start for key in spans):
        return None  # seeded from a snapshot
    if end is None:
        return spark.createDataFrame([], STATES_SCHEMA)
    cluster = next(iter(clusters), None)
    return _replay_copy(spark, files, cluster, small, end, statics.get(cluster, default_static))


def _copy_heads(files: list[str]) -> Any:
    """The task reading one file of the metadata table's Parquet copy for :func:`_states_from_copy`:
    its segment and snapshot files' offset spans, its log's last time, and its topic, topic
    deletion and ``min.insync.replicas`` records (as JSON)."""

    def heads(batches: Any) -> Any:
        import json

        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        from workbench.analysis.replay import PACK_ROWS

        for ids in batches:
            for i in ids.column(0).to_pylist():
                if i >= len(files):
                    continue
                spans: dict[tuple, list[int]] = {}
                small: list[dict] = []
                end = None
                reader = pq.ParquetFile(files[i], read_dictionary=_DICTIONARY_COLUMNS)
                for chunk in reader.iter_batches(batch_size=PACK_ROWS, columns=_HEAD_COLUMNS, use_threads=False):
                    t = pa.Table.from_batches([chunk])
                    kept = t.filter(pc.and_(pc.is_null(t.column("_problem_kind")),
                                            pc.is_in(t.column("file_kind"), pa.array(["segment", "snapshot"]))))
                    keys = ["cluster_id", "node_id", "path", "file_kind", "file_offset"]
                    for r in kept.group_by(keys, use_threads=False).aggregate(
                            [("offset", "min"), ("offset", "max")]).to_pylist():
                        if r["offset_min"] is None:
                            continue
                        have = spans.setdefault(tuple(r[k] for k in keys), [r["offset_min"], r["offset_max"]])
                        have[0], have[1] = min(have[0], r["offset_min"]), max(have[1], r["offset_max"])
                    log = t.filter(_log_rows(t))
                    t_us = log.column("timestamp").cast(pa.int64())
                    last = pc.max(t_us).as_py()
                    end = last if end is None else end if last is None else max(end, last)
                    rtype = log.column("record_type")
                    config = pc.and_(pc.and_(pc.equal(rtype, "ConfigRecord"),
                                             pc.equal(log.column("config_name"), MIN_ISR_CONFIG)),
                                     pc.is_in(log.column("config_resource_type"),
                                              pa.array([TOPIC_RESOURCE, BROKER_RESOURCE], pa.int32())))
                    few = pc.or_(pc.is_in(rtype, pa.array(["TopicRecord", "RemoveTopicRecord"])),
                                 pc.fill_null(config, False))
                    picked = log.append_column("t_us", t_us).filter(few)
                    for r in picked.select(["record_type", "offset", "t_us", "topic_id", "topic",
                                            "config_resource_type", "config_resource_name",
                                            "config_value"]).to_pylist():
                        kind = {"TopicRecord": "topic", "RemoveTopicRecord": "removed"}.get(r.pop("record_type"),
                                                                                              "config")
                        small.append({"kind": kind, "seq": 0, **r})
                yield pa.RecordBatch.from_pydict({"head": [json.dumps(
                    {"spans": [[*k, *v] for k, v in spans.items()], "small": small, "end": end})]})

    return heads


def _cluster_states(records: DataFrame, parts: DataFrame, cluster: str | None, head: Any, static_min_isr: int,
                    compiled: bool, several: bool, materialize: bool = False) -> DataFrame:
    """:func:`partition_states` of one cluster (``head``: its log end and its few topic and config records)."""
    end = head["end"]
    config_events, topics, removed = _few_records(head["small"])
    if compiled:
        out = _compiled_states(parts, config_events, topics, removed, end, static_min_isr, materialize)
    else:
        mine = records if not several else records.where(F.col("cluster_id").eqNullSafe(F.lit(cluster).cast("string")))
        topics_df = mine.where(F.col("record_type") == "TopicRecord").select("topic_id", "topic")
        removed_df = (mine.where(F.col("record_type") == "RemoveTopicRecord")
                      .select("topic_id", F.col("t_us").alias("deleted_us"), F.col("offset").alias("deleted_offset")))
        joined = parts.join(topics_df, "topic_id", "left").join(removed_df, "topic_id", "left")

        def replay(pdf: pd.DataFrame) -> pd.DataFrame:
            return _replay_partition(pdf, config_events, end, static_min_isr)

        out = joined.groupBy("topic_id", "partition").applyInPandas(replay, _UDF_SCHEMA)
    return _as_states(out, cluster)


def _few_records(small: list[Any]) -> tuple[list[tuple], dict[str, str], dict[str, tuple[int, int]]]:
    """A cluster's few topic, deletion and ``min.insync.replicas`` records (``kind``, ``offset``,
    ``seq``, ``t_us``, ...), in log order, as the replay takes them: config events, topic names by
    id, and each deleted topic's time and offset."""
    few = sorted(small, key=lambda r: (r["offset"], r["seq"]))
    config_events = [(r["offset"], r["seq"], r["t_us"], r["config_resource_type"], r["config_resource_name"],
                      r["config_value"]) for r in few if r["kind"] == "config"]
    topics = {r["topic_id"]: r["topic"] for r in few if r["kind"] == "topic"}
    removed = {r["topic_id"]: (r["t_us"], r["offset"]) for r in few if r["kind"] == "removed"}
    return config_events, topics, removed


def _as_states(out: DataFrame, cluster: str | None) -> DataFrame:
    """A replay's output (times in microseconds) as :data:`STATES_SCHEMA` rows of ``cluster``."""
    return (out.withColumn("start", F.timestamp_micros("start"))
            .withColumn("end", F.timestamp_micros("end"))
            .withColumn("cluster_id", F.lit(cluster).cast("string"))
            .select(*[c.split()[0] for c in STATES_SCHEMA.split(", ")]))


def _compiled_states(parts: DataFrame, config_events: list[tuple], topics: dict[str, str],
                     removed: dict[str, tuple[int, int]], log_end_us: int, static_min_isr: int,
                     materialize: bool = False) -> DataFrame:
    """The partition rows replayed by :class:`~workbench.analysis.isr.kernel.IsrReplay` (``materialize``:
    now, into Parquet under the scratch directory, when that is a local one)."""
    from workbench.analysis.isr.kernel import REPLAY_SCHEMA
    from workbench.analysis.replay import replay_by_key

    factory = _replay_factory(config_events, topics, removed, log_end_us, static_min_isr)
    keys, order = ["topic_id", "partition"], ["offset", "seq"]
    if materialize:
        from workbench.analysis.replay import replay_to_parquet

        directory = _scratch("isr-states")
        if directory is not None:
            return replay_to_parquet(_rows_of(parts), keys, order, REPLAY_SCHEMA, factory, directory)
    return replay_by_key(_rows_of(parts), keys, order, REPLAY_SCHEMA, factory)


def _replay_factory(config_events: list[tuple], topics: dict[str, str], removed: dict[str, tuple[int, int]],
                    log_end_us: int, static_min_isr: int) -> Any:
    """What makes an :class:`~workbench.analysis.isr.kernel.IsrReplay` in each task (it pickles)."""
    from functools import partial

    from workbench.analysis.isr.kernel import IsrReplay, TopicInfo, min_isr_configs

    configs = min_isr_configs(config_events)
    return partial(IsrReplay, configs, TopicInfo.of(topics, removed, configs), log_end_us, static_min_isr)


def _scratch(kind: str) -> str | None:
    """A new directory name under the local scratch directory (None when the scratch is not local)."""
    import uuid

    from workbench.spark.registry import scratch_root
    from workbench.spark.source import local_path

    return local_path(f"{scratch_root()}/{kind}-{uuid.uuid4().hex}")


#: States :func:`_replay_copy` replayed, with where their followers wrote each partition's summary
#: and the UnderMinIsr count's steps.
_FOLLOWED: weakref.WeakKeyDictionary[Any, tuple[str, str]] = weakref.WeakKeyDictionary()


def _replay_copy(spark: Any, files: list[str], cluster: str | None, small: list[dict], end: int,
                 static_min_isr: int) -> DataFrame | None:
    """The compiled replay of one cluster's partition records read from the metadata table's Parquet
    copy by the replay's tasks, with :func:`partition_summary`'s and :func:`under_min_isr_counts`'
    first passes run as its followers (None when the scratch directory is not local)."""
    from workbench.analysis.isr.kernel import (
        REPLAY_SCHEMA,
        STEPS_SCHEMA,
        SUMMARY_SCHEMA,
        CountSteps,
        SummaryReplay,
        summary_rows,
    )
    from workbench.analysis.replay import Follower, mark_clustered, replay_files

    directory = _scratch("isr-states")
    if directory is None:
        return None
    factory = _replay_factory(*_few_records(small), end, static_min_isr)
    keys = ["topic_id", "partition"]
    summary, steps = f"{directory}-summary", f"{directory}-steps"
    followers = [Follower(tuple(keys), SummaryReplay, SUMMARY_SCHEMA, summary, summary_rows),
                 Follower((), CountSteps, STEPS_SCHEMA, steps)]
    out = replay_files(spark, files, _COPY_COLUMNS, _replay_rows, _ROWS_DDL, keys, ["offset", "seq"], REPLAY_SCHEMA,
                       factory, directory, followers=followers, read_dictionary=_DICTIONARY_COLUMNS)
    states = mark_clustered(_as_states(out, cluster), keys, ["start", "start_offset"])
    _FOLLOWED[states] = (summary, steps)
    return states


def _rows_of(parts: DataFrame) -> DataFrame:
    """The replay's input columns (:data:`_ROWS_DDL`) of partition record rows."""
    return parts.select("topic_id", "partition", "offset", "seq", "t_us",
                        (F.col("record_type") == "PartitionRecord").alias("full"), "leader", "isr", "replicas",
                        "adding", "elr")


#: The replay's input rows (:func:`_rows_of`, :func:`_replay_rows`).
_ROWS_DDL = ("topic_id string, partition int, offset long, seq long, t_us long, full boolean, leader int, "
             "isr array<int>, replicas array<int>, adding array<int>, elr array<int>")
#: Columns of the metadata table's Parquet copy that :func:`_replay_rows` and :func:`_copy_heads` read.
_COPY_COLUMNS = ["_problem_kind", "file_kind", "is_control", "record_type", "topic_id", "partition", "offset",
                 "timestamp", "leader", "isr", "replicas", "adding", "elr"]
_HEAD_COLUMNS = ["_problem_kind", "cluster_id", "node_id", "path", "file_kind", "file_offset", "offset",
                 "timestamp", "is_control", "record_type", "topic_id", "topic", "config_resource_type",
                 "config_resource_name", "config_name", "config_value"]
_PART_TYPES = ("PartitionRecord", "PartitionChangeRecord")
#: String columns of few values that the copy's readers only compare: read as dictionary arrays
#: (decoding a file path into a string per row cost more than the rest of the pass).
_DICTIONARY_COLUMNS = ["_problem_kind", "cluster_id", "path", "file_kind", "record_type", "config_name"]


def _log_rows(table: pa.Table) -> Any:
    """The mask of a Parquet-copy chunk's rows :func:`ordered_records` keeps from a single replica
    with nothing to seed: readable log records, not control records."""
    import pyarrow.compute as pc

    return pc.and_(pc.and_(pc.is_null(table.column("_problem_kind")), pc.equal(table.column("file_kind"), "segment")),
                   pc.invert(table.column("is_control")))


def _replay_rows(table: pa.Table) -> pa.Table:
    """A chunk of the metadata table's Parquet copy as the replay's rows (:data:`_ROWS_DDL`), as
    :func:`partition_states` selects them from :func:`ordered_records` (the copy's single replica
    needing no choice and no seed)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keep = pc.and_(_log_rows(table), pc.is_in(table.column("record_type"), pa.array(_PART_TYPES)))
    keep = pc.and_(keep, pc.and_(pc.is_valid(table.column("topic_id")), pc.is_valid(table.column("partition"))))
    t = table.filter(keep)
    return pa.table({
        "topic_id": t.column("topic_id"), "partition": t.column("partition"), "offset": t.column("offset"),
        "seq": pa.repeat(pa.scalar(0, pa.int64()), t.num_rows), "t_us": t.column("timestamp").cast(pa.int64()),
        "full": pc.equal(t.column("record_type"), "PartitionRecord"), "leader": t.column("leader"),
        "isr": t.column("isr"), "replicas": t.column("replicas"), "adding": t.column("adding"), "elr": t.column("elr"),
    })


def states_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """:func:`partition_states` of a bundle's ``metadata`` table, computed once per bundle and static min ISR;
    a cluster with no metadata log (ZooKeeper era) is replayed from its text logs
    (:func:`workbench.analysis.isr.textlog.with_text_logs`)."""
    static = static_min_isr(tables, params)
    return tables.derive(f"isr.partition_states:{_static_key(static)}",
                         lambda: partition_states(with_text_logs(tables), static_min_isr=static))
