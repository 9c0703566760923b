"""ISR health (KIP-164): partition state intervals, UnderMinIsr and per-broker counts.

Replays ``TopicRecord``, ``PartitionRecord``, ``PartitionChangeRecord``, ``RemoveTopicRecord``
and ``min.insync.replicas`` ``ConfigRecord``\\ s of the KRaft metadata log into intervals of
constant visible state per partition (each cluster of a bundle on its own), and flags each
interval as Kafka's metrics would:

* ``under_replicated`` — ISR smaller than the assigned replicas (adding replicas excluded);
* ``under_min_isr`` — ISR smaller than the effective ``min.insync.replicas`` (KIP-164);
* ``at_min_isr`` — ISR size equal to it;
* ``offline`` — no leader (``-1``).

The effective ``min.insync.replicas`` is resolved as Kafka resolves a topic's config: the topic
config, else the leader broker's dynamic broker config, else the cluster-wide dynamic default,
else the static value of the brokers' ``server.properties`` (which the metadata log does not hold:
:func:`states_for` reads it from the ``configs`` table, a parameter overrides it, 1 when unknown),
and it is re-evaluated at every config change, so a change mid-stream opens a new interval.
"""

from __future__ import annotations

import datetime
import functools
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.analysis._checks import require_columns
from workbench.analysis.metadata_log import STOP_LEAD_MS, broker_state_step, ordered_records, restarts_for
from workbench.params import parse_window

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

MIN_ISR_CONFIG = "min.insync.replicas"
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

STATES_SCHEMA = (
    "topic string, topic_id string, partition int, start timestamp, end timestamp, start_offset long, "
    "leader int, isr array<int>, replicas array<int>, elr array<int>, min_isr int, under_replicated boolean, "
    "under_min_isr boolean, at_min_isr boolean, offline boolean, state string, end_reason string, cluster_id string"
)
_UDF_SCHEMA = (STATES_SCHEMA.replace("start timestamp, end timestamp", "start long, end long")
               .replace(", cluster_id string", ""))
_NEEDED = ("cluster_id", "offset", "timestamp", "is_control", "record_type", "topic_id", "topic", "partition",
           "leader", "isr",
           "replicas", "adding", "elr", "config_resource_type", "config_resource_name", "config_name",
           "config_value")


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
        Replay each partition with the compiled replay (:mod:`workbench.analysis.isr_kernel`,
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
    from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

    return (out.withColumn("start", F.timestamp_micros("start"))
            .withColumn("end", F.timestamp_micros("end"))
            .withColumn("cluster_id", F.lit(cluster).cast("string"))
            .select(*[c.split()[0] for c in STATES_SCHEMA.split(", ")]))


def _compiled_states(parts: DataFrame, config_events: list[tuple], topics: dict[str, str],
                     removed: dict[str, tuple[int, int]], log_end_us: int, static_min_isr: int,
                     materialize: bool = False) -> DataFrame:
    """The partition rows replayed by :class:`~workbench.analysis.isr_kernel.IsrReplay` (``materialize``:
    now, into Parquet under the scratch directory, when that is a local one)."""
    from workbench.analysis.isr_kernel import REPLAY_SCHEMA
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
    """What makes an :class:`~workbench.analysis.isr_kernel.IsrReplay` in each task (it pickles)."""
    from functools import partial

    from workbench.analysis.isr_kernel import IsrReplay, TopicInfo, min_isr_configs

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
    from workbench.analysis.isr_kernel import (
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
    from pyspark.sql import functions as F

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


def _effective_min_isr(topic_cfg: int | None, broker_cfg: dict[str, int], cluster_cfg: int | None,
                       leader: int, static_min_isr: int) -> int:
    if topic_cfg is not None:
        return topic_cfg
    if leader >= 0 and str(leader) in broker_cfg:
        return broker_cfg[str(leader)]
    if cluster_cfg is not None:
        return cluster_cfg
    return static_min_isr


def _state_label(offline: bool, under_min: bool, at_min: bool, under_rep: bool) -> str:
    if offline:
        return "offline"
    if under_min:
        return "under_min_isr"
    if at_min:
        return "at_min_isr"
    if under_rep:
        return "under_replicated"
    return "healthy"


def _as_list(value: object) -> list[int] | None:
    if value is None:
        return None
    return [int(v) for v in value]  # type: ignore[union-attr]


def _config_int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None  # an unparsable value is rejected by Kafka; it never takes effect


def _replay_partition(pdf: pd.DataFrame, config_events: list[tuple], log_end_us: int,
                      static_min_isr: int) -> pd.DataFrame:
    """Walk one partition's records and the min ISR config changes in log order.

    Nulls as the compiled replay takes them (:mod:`workbench.analysis.isr_kernel`): a record
    without an offset is skipped; an event without a time takes the partition's latest known time,
    or, before it has one, changes the state without opening an interval.
    """
    import pandas as pd

    pdf = pdf.sort_values(["offset", "seq"], kind="stable")
    first = pdf.iloc[0]
    topic = first["topic"] if isinstance(first["topic"], str) else None
    topic_id, partition = first["topic_id"], int(first["partition"])
    deleted_offset = None if pd.isna(first["deleted_offset"]) else int(first["deleted_offset"])
    deleted_us = None if pd.isna(first["deleted_us"]) or deleted_offset is None else int(first["deleted_us"])
    pdf = pdf[pdf["offset"].notna()]

    # one merged event stream: ("p", row) for partition records, ("c", event) for config changes
    events: list[tuple[int, int, str, object]] = [
        (int(r.offset), 0 if pd.isna(r.seq) else int(r.seq), "p", r) for r in pdf.itertuples(index=False)
    ]
    for ev in config_events:
        offset, seq, _t, rtype, rname, _v = ev
        if offset is None or (rtype == TOPIC_RESOURCE and rname != topic):
            continue
        events.append((int(offset), int(seq), "c", ev))
    events.sort(key=lambda e: (e[0], e[1], 0 if e[2] == "c" else 1))

    topic_cfg: int | None = None
    broker_cfg: dict[str, int] = {}
    cluster_cfg: int | None = None
    leader, isr, replicas, adding, elr = -1, None, None, [], None
    exists = False
    rows: list[dict] = []
    current: dict | None = None
    last_known: int | None = None  # the partition's latest known time

    def close(at_us: int, reason: str) -> None:
        if current is not None:
            current["end"] = at_us
            current["end_reason"] = reason
            rows.append(current)

    for offset, _seq, kind, payload in events:
        if deleted_offset is not None and offset >= deleted_offset:
            break
        if kind == "c":
            _o, _s, t_us, rtype, rname, value = payload  # type: ignore[misc]
            parsed = _config_int(value)
            if rtype == TOPIC_RESOURCE:
                topic_cfg = parsed
            elif rname == "":
                cluster_cfg = parsed
            elif parsed is None:
                broker_cfg.pop(rname, None)
            else:
                broker_cfg[rname] = parsed
            if not exists:
                continue
        else:
            r = payload
            t_us = None if pd.isna(r.t_us) else int(r.t_us)  # type: ignore[attr-defined]
            full = r.record_type == "PartitionRecord"  # type: ignore[attr-defined]
            new_leader = r.leader  # type: ignore[attr-defined]
            if full:
                leader = -1 if pd.isna(new_leader) else int(new_leader)
                isr = _as_list(r.isr) or []  # type: ignore[attr-defined]
                replicas = _as_list(r.replicas) or []  # type: ignore[attr-defined]
                adding = _as_list(r.adding) or []  # type: ignore[attr-defined]
                elr = _as_list(r.elr)  # type: ignore[attr-defined]
                exists = True
            else:
                if not exists:
                    continue  # a change for a partition whose creation is not in this log
                if not pd.isna(new_leader) and int(new_leader) != -2:
                    leader = int(new_leader)
                for name in ("isr", "replicas", "adding", "elr"):
                    value = _as_list(getattr(r, name))
                    if value is not None:
                        if name == "isr":
                            isr = value
                        elif name == "replicas":
                            replicas = value
                        elif name == "adding":
                            adding = value
                        else:
                            elr = value
        if t_us is None:
            t_us = last_known
            if t_us is None:
                continue  # the state shows from the partition's next event with a known time
        else:
            last_known = int(t_us)
        min_isr = _effective_min_isr(topic_cfg, broker_cfg, cluster_cfg, leader, static_min_isr)
        isr_list = isr or []
        rf = len([b for b in (replicas or []) if b not in adding])
        offline = leader < 0
        under_min = len(isr_list) < min_isr
        at_min = len(isr_list) == min_isr
        under_rep = len(isr_list) < rf
        state = (leader, tuple(isr_list), tuple(replicas or []), None if elr is None else tuple(elr), min_isr)
        if current is not None and current["_key"] == state:
            continue
        close(t_us, "next_change")
        current = {
            "_key": state, "topic": topic, "topic_id": topic_id, "partition": partition,
            "start": t_us, "start_offset": offset, "leader": leader, "isr": list(isr_list),
            "replicas": list(replicas or []), "elr": None if elr is None else list(elr), "min_isr": min_isr,
            "under_replicated": under_rep, "under_min_isr": under_min, "at_min_isr": at_min,
            "offline": offline, "state": _state_label(offline, under_min, at_min, under_rep),
        }
    if deleted_offset is not None:
        if current is not None:  # an open interval had a known start: a deletion of unknown time ends it there
            close(deleted_us if deleted_us is not None else last_known, "topic_deleted")
    else:
        close(log_end_us, "log_end")
    columns = [c.split()[0] for c in _UDF_SCHEMA.split(", ")]
    return pd.DataFrame([{k: row[k] for k in columns} for row in rows], columns=columns)


def under_min_isr_counts(states: DataFrame, *, compiled: bool = True) -> DataFrame:
    """KIP-164 ``UnderMinIsrPartitionCount`` per leader broker, as a step series.

    The count of partitions a broker leads whose ISR is smaller than their effective
    ``min.insync.replicas``. One row per broker at its first appearance as a leader, at every
    change of its count, and at the end of the log.

    Parameters
    ----------
    states : DataFrame
        From :func:`partition_states`.
    compiled : bool
        Count with a compiled running sum per broker (:class:`~workbench.analysis.isr_kernel.
        CountsReplay` through :func:`workbench.analysis.replay.replay_by_key`), the default; ``False``
        uses Spark window functions (the reference: same rows).

    Returns
    -------
    DataFrame
        Columns ``broker int, time timestamp, count int``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(states, ("leader", "start", "end", "under_min_isr", "end_reason"), "under_min_isr_counts")
    if compiled:
        return _compiled_counts(states)
    led = states.where(F.col("leader") >= 0)
    flag = F.col("under_min_isr").cast("int")
    opens = led.select(F.col("leader").alias("broker"), F.col("start").alias("time"), flag.alias("delta"))
    closes = (led.where(F.col("end_reason") != "log_end")
              .select(F.col("leader").alias("broker"), F.col("end").alias("time"), (-flag).alias("delta")))
    steps = opens.unionByName(closes).groupBy("broker", "time").agg(F.sum("delta").alias("delta"))
    by_time = Window.partitionBy("broker").orderBy("time")
    running = steps.withColumn("count", F.sum("delta").over(by_time.rowsBetween(Window.unboundedPreceding, 0)))
    changed = (running.withColumn("_prev", F.lag("count").over(by_time))
               .where(F.col("_prev").isNull() | (F.col("_prev") != F.col("count"))))
    log_end = states.agg(F.max("end").alias("time"))
    last = (running.withColumn("_rank", F.row_number().over(Window.partitionBy("broker").orderBy(F.col("time").desc())))
            .where(F.col("_rank") == 1).select("broker", "count").crossJoin(log_end))
    return (changed.select("broker", "time", "count").unionByName(last.select("broker", "time", "count"))
            .dropDuplicates(["broker", "time"])
            .select(F.col("broker").cast("int"), "time", F.col("count").cast("int")))


def _compiled_counts(states: DataFrame) -> DataFrame:
    """Steps of the count per broker (only the under-min-ISR intervals move it), replayed in time order."""
    from functools import partial

    from pyspark.sql import functions as F

    from workbench.analysis.isr_kernel import COUNTS_SCHEMA, CountsReplay
    from workbench.analysis.replay import replay_by_key

    log_end = states.agg(F.max(F.unix_micros("end")).alias("t")).collect()[0]["t"]
    spark = states.sparkSession
    if log_end is None:
        return spark.createDataFrame([], "broker int, time timestamp, count int")
    followed = _FOLLOWED.get(states)
    if followed is not None:  # the steps, summed as the replay wrote the intervals
        from workbench.analysis.isr_kernel import STEPS_SCHEMA

        # each task summed its own; summed again across tasks in Spark, the replay sorts far fewer
        steps = (spark.read.schema(STEPS_SCHEMA).parquet(followed[1]).groupBy("broker", "time")
                 .agg(F.sum("delta").alias("delta")))
    else:
        led = states.where(F.col("leader") >= 0).select(F.col("leader").alias("broker"), "start", "end",
                                                        "under_min_isr", "end_reason")
        under = led.where(F.col("under_min_isr"))
        opens = under.select("broker", F.unix_micros("start").alias("time"), F.lit(1).alias("delta"))
        closes = (under.where(F.col("end_reason") != "log_end")
                  .select("broker", F.unix_micros("end").alias("time"), F.lit(-1).alias("delta")))
        # a broker's series starts where it first leads a partition, whatever that partition's state
        first = led.groupBy("broker").agg(F.min(F.unix_micros("start")).alias("time")).select(
            "broker", "time", F.lit(0).alias("delta"))
        steps = opens.unionByName(closes).unionByName(first)
    out = replay_by_key(steps, ["broker"], ["time"], COUNTS_SCHEMA, partial(CountsReplay, log_end))
    return out.select("broker", F.timestamp_micros("time").alias("time"), "count")


def partition_summary(states: DataFrame, *, compiled: bool = True) -> DataFrame:
    """Per partition: time spent in each bad state, first UnderMinIsr, ISR shrinks and expands.

    Parameters
    ----------
    states : DataFrame
        From :func:`partition_states`.
    compiled : bool
        Walk each partition's intervals in order with a compiled loop (:class:`~workbench.analysis.
        isr_kernel.SummaryReplay` through :func:`workbench.analysis.replay.replay_by_key`), the
        default; ``False`` uses Spark window functions (the reference: same rows).

    Returns
    -------
    DataFrame
        Columns ``topic, partition, min_isr, under_min_isr_seconds, under_replicated_seconds,
        offline_seconds, first_under_min_isr, isr_shrinks, isr_expands``; ``min_isr`` is the
        value in force at the end.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(states, ("topic", "topic_id", "partition", "start", "end", "isr", "min_isr"), "partition_summary")
    if compiled:
        from workbench.analysis.isr_kernel import SUMMARY_SCHEMA, SummaryReplay
        from workbench.analysis.replay import is_clustered, replay_by_key, replay_clustered

        rows = states.select("topic_id", "partition", "topic", F.unix_micros("start").alias("start"),
                             F.unix_micros("end").alias("end"), "start_offset", F.size("isr").alias("isr_size"),
                             "min_isr", "under_min_isr", "under_replicated", "offline")
        keys, order = ["topic_id", "partition"], ["start", "start_offset"]
        followed = _FOLLOWED.get(states)
        if followed is not None:  # walked as the replay wrote the intervals
            out = states.sparkSession.read.schema(SUMMARY_SCHEMA).parquet(followed[0])
        elif is_clustered(states, keys, order):  # partition_states' own output: each partition's rows together
            out = replay_clustered(rows, keys, SUMMARY_SCHEMA, SummaryReplay)
        else:
            out = replay_by_key(rows, keys, order, SUMMARY_SCHEMA, SummaryReplay)
        # one row per partition: sorted in one task (orderBy would sample its input first, a second
        # pass over every interval)
        return (out.withColumn("first_under_min_isr", F.timestamp_micros("first_under_min_isr"))
                .repartition(1).sortWithinPartitions("topic", "partition"))
    order = Window.partitionBy("topic_id", "partition").orderBy("start", "start_offset")
    seconds = F.unix_micros("end") - F.unix_micros("start")
    sized = (states.withColumn("_secs", seconds / F.lit(1e6))
             .withColumn("_prev", F.lag(F.size("isr")).over(order))
             .withColumn("_last", F.row_number().over(
                 order.orderBy(F.col("start").desc(), F.col("start_offset").desc()))))

    def secs_when(cond: str):  # noqa: ANN202
        return F.sum(F.when(F.col(cond), F.col("_secs")).otherwise(0.0))

    return (sized.groupBy("topic", "topic_id", "partition").agg(
        F.max(F.when(F.col("_last") == 1, F.col("min_isr"))).alias("min_isr"),
        secs_when("under_min_isr").alias("under_min_isr_seconds"),
        secs_when("under_replicated").alias("under_replicated_seconds"),
        secs_when("offline").alias("offline_seconds"),
        F.min(F.when(F.col("under_min_isr"), F.col("start"))).alias("first_under_min_isr"),
        F.sum(F.when(F.size("isr") < F.col("_prev"), 1).otherwise(0)).cast("int").alias("isr_shrinks"),
        F.sum(F.when(F.size("isr") > F.col("_prev"), 1).otherwise(0)).cast("int").alias("isr_expands"),
    ).drop("topic_id").orderBy("topic", "partition"))


#: The normalised ``metrics`` name of ``kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount``.
REPORTED_NAME = "kafka_server_replicamanager_underminisrpartitioncount"


def reported_under_min_isr(metrics: DataFrame) -> DataFrame:
    """Kafka's own ``UnderMinIsrPartitionCount`` samples from a bundle's metric exports.

    Selected by the normalised ``name`` (:data:`REPORTED_NAME`), so JmxTool CSV and Prometheus
    text or API exports alike.

    Shown beside :func:`under_min_isr_counts`, it lets a reader check the computed series
    against what each broker reported (when its JMX or Prometheus export was collected).

    Returns
    -------
    DataFrame
        Columns ``broker int, time timestamp, count int``, one row per sample.
    """
    from pyspark.sql import functions as F

    require_columns(metrics, ("node_id", "name", "timestamp", "value"), "reported_under_min_isr")
    return (metrics.where(F.col("name") == REPORTED_NAME)
            .select(F.col("node_id").cast("int").alias("broker"), F.col("timestamp").alias("time"),
                    F.col("value").cast("int").alias("count")))


#: Partition states, most severe first (``state`` of :func:`partition_states`).
STATES: tuple[str, ...] = ("offline", "under_min_isr", "at_min_isr", "under_replicated", "healthy")

#: The per-partition summary columns worth ordering by, worst first.
_SUMMARY_SECONDS = ("offline_seconds", "under_min_isr_seconds", "under_replicated_seconds")


def notable_partitions(summary: DataFrame) -> DataFrame:
    """The partitions of :func:`partition_summary` worth reading, worst first.

    Partitions never offline, under min ISR or under-replicated, whose ISR never shrank, are left
    out; the rest are ordered by offline, under-min-ISR and under-replicated seconds, then ISR
    shrinks, then topic and partition. Seconds are rounded to milliseconds.
    """
    from pyspark.sql import functions as F

    require_columns(summary, ("topic", "partition", *_SUMMARY_SECONDS, "isr_shrinks"), "notable_partitions")
    rounded = summary
    for c in _SUMMARY_SECONDS:
        rounded = rounded.withColumn(c, F.round(F.coalesce(F.col(c), F.lit(0.0)), 3))
    notable = sum((F.col(c) for c in _SUMMARY_SECONDS), F.lit(0.0)) > 0
    return (rounded.where(notable | (F.coalesce(F.col("isr_shrinks"), F.lit(0)) > 0))
            .orderBy(*[F.col(c).desc() for c in _SUMMARY_SECONDS], F.col("isr_shrinks").desc(), "topic", "partition"))


def final_states(states: DataFrame) -> DataFrame:
    """Each partition's state at the end of the log: its last interval, least healthy first.

    What Kafka's metadata image holds for the partition when the log ends (a final state may begin
    at the last record and last no time, e.g. when every broker stopped at once). Partitions of
    deleted topics have none.

    Returns
    -------
    DataFrame
        ``cluster_id, topic, topic_id, partition, state, since, leader, isr, replicas, elr,
        min_isr``; ordered by :data:`STATES` severity, then topic and partition.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(states, ("cluster_id", "topic", "topic_id", "partition", "start", "start_offset", "state",
                             "leader", "isr", "replicas", "elr", "min_isr", "end_reason"), "final_states")
    last = Window.partitionBy("cluster_id", "topic_id", "partition").orderBy(F.col("start").desc(),
                                                                            F.col("start_offset").desc())
    return (states.withColumn("_n", F.row_number().over(last)).where("_n = 1")
            .where(F.coalesce(F.col("end_reason"), F.lit("")) != "topic_deleted")
            .select("cluster_id", "topic", "topic_id", "partition", "state", F.col("start").alias("since"),
                    "leader", "isr", "replicas", "elr", "min_isr")
            .orderBy(_severity(), "topic", "partition", "cluster_id"))


def _severity() -> Column:
    """The rank of ``state`` in :data:`STATES` (1: offline, the least healthy)."""
    from pyspark.sql import functions as F

    return F.array_position(F.array(*[F.lit(s) for s in STATES]), F.col("state"))


def final_state_counts(final: DataFrame) -> DataFrame:
    """How many partitions ended in each state (of :func:`final_states`): ``state, partitions``, least healthy first."""
    from pyspark.sql import functions as F

    return final.groupBy("state").agg(F.count("*").alias("partitions")).orderBy(_severity())


def episodes(states: DataFrame, flag: str) -> DataFrame:
    """Maximal runs of consecutive state intervals of one partition during which ``flag`` held.

    Parameters
    ----------
    states : DataFrame
        From :func:`partition_states`.
    flag : str
        A boolean column of it: ``under_min_isr``, ``offline``, ``under_replicated``, ``at_min_isr``.

    Returns
    -------
    DataFrame
        One row per episode: ``topic, topic_id, partition, start, end, seconds, min_isr, smallest_isr,
        leaders`` (the distinct leaders seen, -1 for none), ``open`` (still so at the end of the log).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(states, ("topic", "topic_id", "partition", "start", "end", flag, "isr", "leader", "end_reason"),
                    "episodes")
    order = Window.partitionBy("topic_id", "partition").orderBy("start", "start_offset")
    flagged = (states.withColumn("_on", F.col(flag).cast("boolean"))
               .withColumn("_begin", F.col("_on") & ~F.coalesce(F.lag("_on").over(order), F.lit(False)))
               .withColumn("_run", F.sum(F.col("_begin").cast("int")).over(
                   order.rowsBetween(Window.unboundedPreceding, 0)))
               .where("_on"))
    return (flagged.groupBy("topic", "topic_id", "partition", "_run").agg(
        F.min("start").alias("start"), F.max("end").alias("end"),
        F.max("min_isr").alias("min_isr"), F.min(F.size("isr")).alias("smallest_isr"),
        F.array_sort(F.collect_set("leader")).alias("leaders"),
        F.max(F.col("end_reason") == "log_end").alias("open"))
        .withColumn("seconds", (F.unix_micros("end") - F.unix_micros("start")) / F.lit(1e6))
        .select("topic", "topic_id", "partition", "start", "end", "seconds", "min_isr", "smallest_isr", "leaders",
                "open"))


#: Columns of :func:`cluster_stops`.
STOP_COLUMNS = ("cluster_id", "start", "end", "brokers")


def cluster_stops(metadata: DataFrame) -> DataFrame:
    """Clusters whose log ends with their brokers shut down in order: the cluster was stopped.

    A broker is down from the first record since its last registration or unfencing that puts it
    in controlled shutdown (``inControlledShutdown``: Kafka's response to SIGTERM while it leads
    partitions) or fences it (Kafka fences a stopping broker that leads nothing at once, and a
    crashed one when its session times out). A cluster was stopped when every broker registered
    at the end of its log (not unregistered) is down there and at least one went down by a
    controlled shutdown: the stop's brokers are those that went down from :data:`STOP_LEAD_MS`
    before the first such shutdown on (the brokers stopped with it that led nothing were fenced
    just ahead of it), and it starts when the first of them went down. A cluster whose brokers were
    all fenced without any controlled shutdown (killed, cut off) is not in this table, nor is a
    broker that went down longer before (its outage stays an outage).

    Returns
    -------
    DataFrame
        ``cluster_id, start, end`` (the log's last record), ``brokers`` (sorted ids); one row per
        stopped cluster.

    Examples
    --------
    >>> cluster_stops(tables.metadata).show()                              # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    require_columns(metadata, ("cluster_id", "record_type", "broker_id", "fenced", "in_controlled_shutdown"),
                    "cluster_stops")
    types = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "FenceBrokerRecord", "UnfenceBrokerRecord",
             "UnregisterBrokerRecord")
    records = ordered_records(metadata).where(~F.col("is_control"))
    ends = {r["cluster_id"]: r["end"] for r in records.groupBy("cluster_id").agg(F.max("timestamp").alias("end"))
            .collect()}
    rows = (records.where(F.col("record_type").isin(*types) & F.col("broker_id").isNotNull())
            .select("cluster_id", "offset", "seq", "timestamp", "record_type", "broker_id", "fenced",
                    "in_controlled_shutdown").orderBy("cluster_id", "offset", "seq").collect())
    # per cluster and broker: [registered, down since, went down by a controlled shutdown]
    brokers: dict[Any, dict[int, list[Any]]] = {}
    for r in rows:
        broker_state_step(brokers.setdefault(r["cluster_id"], {}), r)
    out = []
    for cluster, by_broker in brokers.items():
        alive = [s for s in by_broker.values() if s[0]]
        if not alive or any(s[1] is None for s in alive) or not any(s[2] for s in alive):
            continue
        first_shutdown = min(s[1] for s in alive if s[2])
        since = first_shutdown - datetime.timedelta(milliseconds=STOP_LEAD_MS)
        stopped = {b: s[1] for b, s in by_broker.items() if s[0] and s[1] >= since}
        out.append((cluster, min(stopped.values()), ends.get(cluster), sorted(stopped)))
    return metadata.sparkSession.createDataFrame(
        out, "cluster_id string, start timestamp, end timestamp, brokers array<int>")


def findings(states: DataFrame, *, flap_threshold: int = 3, stops: DataFrame | None = None,
             restarts: DataFrame | None = None) -> DataFrame:
    """ISR findings: offline and under-min-ISR episodes, and partitions whose ISR flapped.

    * ``offline`` (critical): the partition had no leader, from start to end;
    * ``under_min_isr`` (critical): its ISR was smaller than ``min.insync.replicas``: producers
      with ``acks=all`` were refused;
    * ``isr_flapping`` (warning): its ISR shrank at least ``flap_threshold`` times; start and end
      span the changes;
    * ``cluster_stopped`` (info), with ``stops`` (:func:`cluster_stops`): a cluster's brokers all
      shut down in order at the end of its log. The offline and under-min-ISR episodes that began
      with that shutdown and last to the end of the log are its consequence, not an outage: they
      are told as this one finding (how many partitions it left offline and under min ISR)
      instead of one critical finding each. Episodes that began before it are kept.
    * ``cluster_restarted`` (warning), with ``restarts``
      (:func:`workbench.analysis.metadata_log.cluster_restarts`): the whole cluster was down in the
      middle of the log and came back. The offline and under-min-ISR episodes that began and ended
      within it are told as this one finding, with the downtime; ISR changes within it are not
      counted as flapping.

    Returns
    -------
    DataFrame
        Rows of :data:`workbench.analysis.findings.FINDINGS_SCHEMA` (area ``isr``, subject type
        ``partition``, subject ``topic-partition``).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from workbench.analysis.findings import FINDINGS_COLUMNS

    if flap_threshold < 1:
        raise ValueError(f"flap_threshold must be >= 1, got {flap_threshold}")
    subject = F.concat(F.coalesce(F.col("topic"), F.col("topic_id")), F.lit("-"), F.col("partition").cast("string"))
    when_text = F.concat(F.lit(" starting "), F.date_format("start", "yyyy-MM-dd HH:mm:ss"), F.lit(" UTC"),
                         F.when(F.col("open"), F.lit(" (still so at the end of the log)")).otherwise(F.lit("")))
    name = F.concat(F.lit("topic "), F.coalesce(F.col("topic"), F.col("topic_id")), F.lit(" partition "),
                    F.col("partition").cast("string"))
    offline = episodes(states, "offline").select(
        F.lit("offline").alias("kind"), F.lit("critical").alias("severity"), subject.alias("subject"), "start", "end",
        F.concat(name, F.lit(" was offline for "), F.format_string("%.1f", "seconds"), F.lit(" s"), when_text)
        .alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds")).alias("figures"), F.col("open").alias("_open"),
        F.col("topic_id").alias("_topic_id"))
    under = episodes(states, "under_min_isr").select(
        F.lit("under_min_isr").alias("kind"), F.lit("critical").alias("severity"), subject.alias("subject"),
        "start", "end",
        F.concat(name, F.lit(" was under min ISR ("), F.col("min_isr").cast("string"), F.lit(") for "),
                 F.format_string("%.1f", "seconds"), F.lit(" s"), when_text).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("min_isr"), F.col("min_isr").cast("double"),
                     F.lit("smallest_isr"), F.col("smallest_isr").cast("double")).alias("figures"),
        F.col("open").alias("_open"), F.col("topic_id").alias("_topic_id"))
    order = Window.partitionBy("topic_id", "partition").orderBy("start", "start_offset")
    changes = (states.withColumn("_prev", F.lag(F.size("isr")).over(order))
               .withColumn("_shrink", F.size("isr") < F.col("_prev"))
               .withColumn("_expand", F.size("isr") > F.col("_prev")))
    if restarts is not None:  # nor are the changes of a whole-cluster stop and restart
        down = restarts.select(F.col("cluster_id").alias("_rc"), F.col("start").alias("_rs"),
                               F.col("end").alias("_re"))
        changes = changes.join(down, changes["cluster_id"].eqNullSafe(down["_rc"]) & (changes["start"] >= down["_rs"])
                               & (changes["start"] <= down["_re"]), "left_anti")
    if stops is not None:  # a stopped cluster's last changes are its shutdown, not flapping
        stop_at = stops.select(F.col("cluster_id").alias("_cluster"), F.col("start").alias("_stop"))
        changes = (changes.join(stop_at, changes["cluster_id"].eqNullSafe(stop_at["_cluster"]), "left")
                   .where(F.col("_stop").isNull() | (F.col("start") < F.col("_stop"))))
    flaps = (changes.where(F.col("_shrink") | F.col("_expand"))
             .groupBy("topic", "topic_id", "partition").agg(
                 F.sum(F.col("_shrink").cast("int")).alias("shrinks"),
                 F.sum(F.col("_expand").cast("int")).alias("expands"),
                 F.min("start").alias("start"), F.max("start").alias("end"))
             .where(F.col("shrinks") >= flap_threshold)
             .select(F.lit("isr_flapping").alias("kind"), F.lit("warning").alias("severity"), subject.alias("subject"),
                     "start", "end",
                     F.concat(F.lit("ISR of "), name, F.lit(" shrank "), F.col("shrinks").cast("string"),
                              F.lit(" times and expanded "), F.col("expands").cast("string"),
                              F.lit(" times (flapping)")).alias("summary"),
                     F.create_map(F.lit("shrinks"), F.col("shrinks").cast("double"), F.lit("expands"),
                                  F.col("expands").cast("double")).alias("figures"), F.lit(False).alias("_open"),
                     F.col("topic_id").alias("_topic_id")))
    out = offline.unionByName(under).unionByName(flaps).withColumn("subject_type", F.lit("partition"))
    if restarts is not None:
        out = _told_as_restarts(out, states, restarts)
    if stops is not None:
        out = _told_as_stops(out, states, stops)
    return out.withColumn("area", F.lit("isr")).select(*FINDINGS_COLUMNS)


def _told_as_restarts(found: DataFrame, states: DataFrame, restarts: DataFrame) -> DataFrame:
    """``found`` with the episodes a whole-cluster stop explains replaced by one finding per stop."""
    from pyspark.sql import functions as F

    clusters = states.select("cluster_id", F.col("topic_id").alias("_topic_id")).distinct()
    down = restarts.select(F.col("cluster_id").alias("_cluster"), F.col("start").alias("_down"),
                           F.col("end").alias("_back"))
    tagged = found.join(clusters, "_topic_id", "left")
    tagged = tagged.join(down, tagged["cluster_id"].eqNullSafe(down["_cluster"])
                         & F.col("kind").isin("offline", "under_min_isr") & (F.col("start") >= F.col("_down"))
                         & (F.col("start") <= F.col("_back")) & (F.col("end") <= F.col("_back")), "left")
    kept = tagged.where(F.col("_down").isNull()).select(*found.columns)
    counts = (tagged.where(F.col("_down").isNotNull()).groupBy("_cluster", "_down").agg(
        F.countDistinct(F.when(F.col("kind") == "offline", F.col("subject"))).alias("_offline"),
        F.countDistinct(F.when(F.col("kind") == "under_min_isr", F.col("subject"))).alias("_under")))
    rows = restarts.join(counts, restarts["cluster_id"].eqNullSafe(counts["_cluster"])
                         & (restarts["start"] == counts["_down"]), "left")
    offline, under = F.coalesce(F.col("_offline"), F.lit(0)), F.coalesce(F.col("_under"), F.lit(0))
    how = F.when(F.col("clean"), F.concat(
        F.when(F.size("brokers") == 1, F.lit("broker ")).otherwise(F.lit("brokers ")), F.array_join("brokers", ", "),
        F.lit(" shut down in order (a controlled shutdown) and the controllers stopped"))).otherwise(F.concat(
            F.lit("the log stops at "), F.date_format("start", "HH:mm:ss"),
            F.lit(" UTC with no broker shut down (killed, or the hosts lost power)")))
    told = rows.select(
        F.lit("cluster_restarted").alias("kind"), F.lit("warning").alias("severity"),
        F.coalesce(F.col("cluster_id"), F.lit("unknown")).alias("subject"), "start", "end",
        F.concat(F.lit("The whole cluster was down for "), F.format_string("%.1f", "seconds"), F.lit(" s from "),
                 F.date_format("start", "yyyy-MM-dd HH:mm:ss"), F.lit(" to "),
                 F.date_format("end", "yyyy-MM-dd HH:mm:ss"),
                 F.lit(" UTC: "), how, F.lit("; the controllers wrote again from "),
                 F.date_format("resumed", "HH:mm:ss"), F.lit(" UTC in a new epoch and every broker registered anew; "),
                 offline.cast("string"), F.lit(" partitions were offline and "), under.cast("string"),
                 F.lit(" under min ISR meanwhile (the stop, not a partition outage)")).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("brokers"), F.size("brokers").cast("double"),
                     F.lit("offline_partitions"), offline.cast("double"), F.lit("under_min_isr_partitions"),
                     under.cast("double")).alias("figures"),
        F.lit("cluster").alias("subject_type"), F.lit(False).alias("_open"),
        F.lit(None).cast("string").alias("_topic_id"))
    return kept.unionByName(told)


def _told_as_stops(found: DataFrame, states: DataFrame, stops: DataFrame) -> DataFrame:
    """``found`` with the open episodes that a cluster's final shutdown began replaced by one finding per stop."""
    from pyspark.sql import functions as F

    clusters = states.select("cluster_id", F.col("topic_id").alias("_topic_id")).distinct()
    stop = stops.select(F.col("cluster_id").alias("_cluster"), F.col("start").alias("_stop"),
                        F.col("end").alias("_stop_end"), "brokers")
    tagged = found.join(clusters, "_topic_id", "left")
    tagged = (tagged.join(stop, tagged["cluster_id"].eqNullSafe(stop["_cluster"]), "left")
              .withColumn("_by_stop", F.col("kind").isin("offline", "under_min_isr") & F.col("_stop").isNotNull()
                          & (F.col("start") >= F.col("_stop")) & F.col("_open")))
    kept = tagged.where(~F.col("_by_stop")).select(*found.columns)
    by_stop = tagged.where(F.col("_by_stop"))
    offline = F.countDistinct(F.when(F.col("kind") == "offline", F.col("subject")))
    under = F.countDistinct(F.when(F.col("kind") == "under_min_isr", F.col("subject")))
    told = (by_stop.groupBy("cluster_id", "_stop", "_stop_end", "brokers")
            .agg(offline.alias("_offline"), under.alias("_under"))
            .select(F.lit("cluster_stopped").alias("kind"), F.lit("info").alias("severity"),
                    F.coalesce(F.col("cluster_id"), F.lit("unknown")).alias("subject"),
                    F.col("_stop").alias("start"), F.col("_stop_end").alias("end"),
                    F.concat(F.lit("The cluster was stopped at the end of the log: "),
                             F.when(F.size("brokers") == 1, F.lit("broker ")).otherwise(F.lit("brokers ")),
                             F.array_join("brokers", ", "),
                             F.lit(" shut down in order (a controlled shutdown, not a crash) from "),
                             F.date_format("_stop", "yyyy-MM-dd HH:mm:ss"), F.lit(" UTC; "),
                             F.col("_offline").cast("string"), F.lit(" partitions went offline and "),
                             F.col("_under").cast("string"),
                             F.lit(" under min ISR with it (expected of a stopped cluster, not an outage)"))
                    .alias("summary"),
                    F.create_map(F.lit("brokers"), F.size("brokers").cast("double"), F.lit("offline_partitions"),
                                 F.col("_offline").cast("double"), F.lit("under_min_isr_partitions"),
                                 F.col("_under").cast("double")).alias("figures"),
                    F.lit("cluster").alias("subject_type"), F.lit(True).alias("_open"),
                    F.lit(None).cast("string").alias("_topic_id")))
    return kept.unionByName(told)


def static_min_isr(tables: Any, params: Mapping[str, Any]) -> int | dict[str | None, int]:
    """The static ``min.insync.replicas`` the replay starts from.

    The ``min_insync_replicas`` parameter when above 0 (for every cluster), else per cluster the
    value the brokers' ``server.properties`` set (:func:`configured_min_isr`).
    """
    given = int(params.get("min_insync_replicas") or 0)
    return given if given > 0 else configured_min_isr(tables)


def configured_min_isr(tables: Any) -> dict[str | None, int]:
    """Per cluster id, the static ``min.insync.replicas`` of its brokers' ``server.properties``.

    Read with :func:`workbench.spark.configs.static_config`. A broker is a node whose
    ``process.roles`` names ``broker`` (or that has no ``process.roles``: ZooKeeper mode); a
    broker whose file does not set the setting has Kafka's default, 1; a value that is not a
    positive integer counts as not set. Where a cluster's brokers disagree the smallest value is
    taken (Kafka applies the leader's own; the replay has one static value per cluster). Clusters
    without any properties file are absent (:func:`partition_states` then uses 1).

    Examples
    --------
    >>> configured_min_isr(tables)                                    # doctest: +SKIP
    {'MkU3OEVBNTcwNTJENDM2Qg': 2}
    """
    from workbench.spark.configs import static_config

    clusters = tables.bundle.node_clusters() if hasattr(tables, "bundle") else {}
    roles = {r["node_id"]: r["value"] for r in static_config(tables, "process.roles").collect()}
    values = {r["node_id"]: r["value"] for r in static_config(tables, MIN_ISR_CONFIG).collect()}
    out: dict[str | None, int] = {}
    for node in sorted(set(roles) | set(values)):
        role = roles.get(node)
        if role is not None and "broker" not in {x.strip() for x in role.split(",")}:
            continue
        value = _config_int(values.get(node))
        value = value if value is not None and value >= 1 else 1
        cluster = clusters.get(node)
        out[cluster] = min(out.get(cluster, value), value)
    return out


def states_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """:func:`partition_states` of a bundle's ``metadata`` table, computed once per bundle and static min ISR."""
    static = static_min_isr(tables, params)
    return tables.derive(f"isr.partition_states:{_static_key(static)}",
                         lambda: partition_states(tables.metadata, static_min_isr=static))


def _static_key(static: int | Mapping[str | None, int]) -> Any:
    return static if isinstance(static, int) else sorted(static.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))


#: A run of overlapping ISR findings of one kind on at least this many partitions is one finding
#: (``isr_group_partitions``; :func:`workbench.analysis.findings.grouped_findings`).
GROUP_PARTITIONS = 20

#: How a grouped ISR finding's sentence says what its partitions went through.
_GROUPED_PHRASES = {"offline": "were offline", "under_min_isr": "were under min ISR",
                    "isr_flapping": "had a flapping ISR"}


def area_findings(states: DataFrame, *, flap_threshold: int = 3, group_partitions: int = GROUP_PARTITIONS,
                  per_partition: DataFrame | None = None) -> DataFrame:
    """The ISR area's findings: :func:`findings`, with many partitions in trouble at once told as one.

    A run of overlapping findings of one kind on at least ``group_partitions`` partitions (a broker
    outage on a large cluster, ISR churn everywhere) is one finding naming how many partitions, how
    many at once at most and the longest episode (:func:`workbench.analysis.findings.grouped_findings`);
    fewer partitions keep one finding each. :func:`findings` keeps every partition's (pass them as
    ``per_partition`` when already computed).
    """
    from workbench.analysis.findings import grouped_findings

    per = per_partition if per_partition is not None else findings(states, flap_threshold=flap_threshold)
    return grouped_findings(per, min_subjects=group_partitions, phrases=_GROUPED_PHRASES)


def findings_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """:func:`findings` (every partition's) of a bundle, computed once per parameters (grouping reads them thrice)."""
    flap = int(params.get("isr_flap_threshold") or 3)
    key = _static_key(static_min_isr(tables, params))
    return tables.derive(f"isr.findings:{flap}:{key}",
                         lambda: findings(states_for(tables, params), flap_threshold=flap,
                                          stops=cluster_stops(tables.metadata), restarts=restarts_for(tables)))


class IsrAnalysis:
    """The ISR area's analysis of one bundle (:func:`analyse`): the partition states, and the
    per-partition findings once asked for, with the parameters that shape the area's outputs."""

    def __init__(self, tables: Any, params: Mapping[str, Any]) -> None:
        self.tables, self.params = tables, dict(params)
        self.states = states_for(tables, self.params)

    @functools.cached_property
    def per_partition(self) -> DataFrame:
        """Every partition's findings (:func:`findings_for`)."""
        return findings_for(self.tables, self.params)

    def setting(self, name: str, default: int) -> int:
        """An integer parameter of the area (``isr_group_partitions``...), else its default."""
        return int(self.params.get(name) or default)


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> IsrAnalysis:
    """The ISR area's analysis of a bundle's tables (states computed once per bundle and static min ISR)."""
    return IsrAnalysis(tables, params or {})


def grouped_area_findings(result: IsrAnalysis) -> DataFrame:
    """The area's findings of one analysis: :func:`area_findings` of its states and per-partition findings."""
    return area_findings(result.states, per_partition=result.per_partition,
                         group_partitions=result.setting("isr_group_partitions", GROUP_PARTITIONS))


#: Partitions whose intervals a view receives at most (the least healthy; ``isr_view_partitions``).
VIEW_PARTITIONS = 500

#: Points per broker of the UnderMinIsr count series a view receives at most (``isr_view_points``).
VIEW_POINTS = 2000


def view_frames(states: DataFrame, *, topics: Any = None, start: Any = None, end: Any = None,
                partitions: int = VIEW_PARTITIONS, points: int = VIEW_POINTS) -> dict[str, DataFrame]:
    """What the ISR view plots, bounded whatever the cluster's size, aggregated in Spark.

    Parameters
    ----------
    states : DataFrame
        From :func:`partition_states`.
    topics : str or iterable of str, optional
        Only these topics (a string is a comma-separated list); empty: all.
    start, end : optional
        The time window (``datetime``, ``Timestamp`` or ISO text; UTC when naive): intervals
        outside it are left out and the ranking counts time inside it only.
    partitions : int
        At most this many partitions' intervals: the least healthy ones (most offline time, then
        under min ISR, then otherwise unhealthy time within the window; then topic, partition), as
        the timeline's own ``max_rows`` ranks them.
    points : int
        At most about twice this many rows per broker of the count series: where a broker's
        series has more changes, time is cut into ``points`` equal buckets and each bucket keeps
        its highest count and its last one (peaks and the level after each bucket survive), and
        the series keeps its first row.

    Returns
    -------
    dict of str to DataFrame
        ``states`` (rows of ``states``), ``counts`` (:func:`under_min_isr_counts`, the whole log:
        thinned, not windowed) and ``partitions``: one row, ``partitions`` (in the filters) and
        ``shown``.

    Examples
    --------
    >>> frames = view_frames(states_for(tables, {}), partitions=200)        # doctest: +SKIP
    >>> frames["partitions"].first()                                       # doctest: +SKIP
    Row(partitions=10000, shown=200)
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(states, ("topic", "topic_id", "partition", "start", "end", "state", "leader"), "view_frames")
    if partitions < 1 or points < 1:
        raise ValueError(f"view_frames: partitions and points must be positive, got {partitions} and {points}")
    chosen = [t.strip() for t in topics.split(",")] if isinstance(topics, str) else list(topics or ())
    chosen = [t for t in chosen if t]
    lo, hi = parse_window(start, end)
    rows = states
    if chosen:
        rows = rows.where(F.col("topic").isin(chosen))
    if lo is not None:
        rows = rows.where(F.col("end") > F.lit(lo))
    if hi is not None:
        rows = rows.where(F.col("start") < F.lit(hi))
    begin = F.unix_micros("start") if lo is None else F.greatest(F.unix_micros("start"), F.unix_micros(F.lit(lo)))
    finish = F.unix_micros("end") if hi is None else F.least(F.unix_micros("end"), F.unix_micros(F.lit(hi)))
    micros = F.greatest(finish - begin, F.lit(0))  # whole µs, summed exactly: ties stay ties
    keys = ["topic", "topic_id", "partition"]
    ranked = (rows.groupBy(*keys).agg(
        F.sum(F.when(F.col("state") == "offline", micros).otherwise(0)).alias("_offline"),
        F.sum(F.when(F.col("state") == "under_min_isr", micros).otherwise(0)).alias("_under_min"),
        F.sum(F.when(F.col("state") != "healthy", micros).otherwise(0)).alias("_unhealthy"))
        .withColumn("_rank", F.row_number().over(Window.orderBy(
            F.col("_offline").desc(), F.col("_under_min").desc(), F.col("_unhealthy").desc(), "topic", "partition",
            "topic_id"))))
    kept = ranked.where(F.col("_rank") <= partitions).select(*keys)
    shown_states = rows.join(F.broadcast(kept), ["topic_id", "partition", "topic"], "left_semi").select(*states.columns)
    total = ranked.agg(F.count("*").cast("long").alias("partitions")).withColumn(
        "shown", F.least(F.col("partitions"), F.lit(partitions)).cast("long"))
    counts = under_min_isr_counts(states)
    span = counts.groupBy("broker").agg(F.count("*").alias("_n"), F.min(F.unix_micros("time")).alias("_t0"),
                                        F.max(F.unix_micros("time")).alias("_t1"))
    bucketed = (counts.join(span, "broker")
                .withColumn("_bucket", F.when(F.col("_n") <= 2 * points, F.monotonically_increasing_id()).otherwise(
                    F.floor((F.unix_micros("time") - F.col("_t0")) * F.lit(points)
                            / F.greatest(F.col("_t1") - F.col("_t0"), F.lit(1))))))
    by_bucket = Window.partitionBy("broker", "_bucket")
    thinned = (bucketed
               .withColumn("_peak", F.row_number().over(by_bucket.orderBy(F.col("count").desc(), "time")))
               .withColumn("_last", F.row_number().over(by_bucket.orderBy(F.col("time").desc())))
               .where((F.col("_peak") == 1) | (F.col("_last") == 1) | (F.unix_micros("time") == F.col("_t0")))
               .select("broker", "time", "count").orderBy("broker", "time"))
    return {"states": shown_states, "counts": thinned, "partitions": total}


def area_view_frames(result: IsrAnalysis) -> dict[str, DataFrame]:
    """What the ISR view draws (:func:`view_frames`), bounded by ``isr_view_partitions`` and ``isr_view_points``."""
    return view_frames(result.states, partitions=result.setting("isr_view_partitions", VIEW_PARTITIONS),
                       points=result.setting("isr_view_points", VIEW_POINTS))


def key_figures(result: IsrAnalysis) -> dict[str, Any]:
    """The summary's figures: partitions, those under min ISR or offline, and for how long in all."""
    from pyspark.sql import functions as F

    summary = partition_summary(result.states)
    row = summary.agg(
        F.count("*").alias("partitions"),
        F.sum((F.col("under_min_isr_seconds") > 0).cast("int")).alias("partitions_under_min_isr"),
        F.sum((F.col("offline_seconds") > 0).cast("int")).alias("partitions_offline"),
        F.sum("under_min_isr_seconds").alias("under_min_isr_partition_seconds"),
        F.sum("offline_seconds").alias("offline_partition_seconds"),
    ).collect()[0]
    return {k: (0 if v is None else v) for k, v in row.asDict().items()}


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("isr", title="ISR health (KIP-164)", order=2, analyse=analyse, findings=grouped_area_findings,
                  tables=("metadata",), frames=area_view_frames, key_figures=key_figures)


_register()
