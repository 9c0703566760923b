"""Consumer lag in records, bytes and time at every commit (the seed's broker consumer-lag metrics, computed).

The seed asked Kafka for broker histograms of how far behind the log end consumers fetch, in bytes
(``ConsumerFetchLagBytes``) and in time (``ConsumerFetchLagTimeInMs``), to size the page cache; Kafka
never shipped them. A bundle holds every commit still in ``__consumer_offsets`` and the segments with
their batch positions, sizes and timestamps, so this module computes the three lags exactly and
historically, from the ``offsets``, ``batches`` and (for leaders) ``metadata`` tables:

* :func:`effective_commits` — one row per commit that took effect (transactional commits at their
  COMMIT marker, aborted ones left out), one replica of ``__consumer_offsets`` read;
* :func:`lag_at_commits` — one row per commit: the log end offset when it was made, the lag in records
  (log end − committed offset), in bytes (bytes of log from the start of the batch holding the committed
  offset to the log end, across segments) and in time (the largest record timestamp in the log then −
  the timestamp of the batch holding the committed offset, as the seed defines it), the broker leading
  the partition then (from the metadata log);
* :func:`lag_at` — the same for every group and partition at any chosen instants (the last commit
  strictly before each instant; what ``kafka-consumer-groups --describe`` would have shown then);
* :func:`lag_histogram` and :func:`lag_summary` — ``ConsumerFetchLagBytes`` and
  ``ConsumerFetchLagTimeInMs`` over a window, per leader broker (and per group or topic on request):
  bucket counts on power-of-two boundaries, and the attributes a Kafka histogram MBean has (count,
  min, max, mean, stddev, 50th … 99.9th percentile);
* :func:`page_cache` and :func:`byte_lag_cdf` — how many bytes of log tail, and how much page cache,
  would have served p50, p90, p99 and p99.9 of consumer positions, per broker;
* :func:`retention_loss` — groups whose committed offset fell below the log start: the records they
  skipped, exactly;
* :func:`stuck_partitions` and :func:`removed_offsets` — committed offsets that stood still while the log
  grew, and groups whose offsets were removed (expired or deleted);
* :func:`burrow_status` and :func:`burrow_group_status` — Burrow's verdicts (OK, WARN, STOP, STALL,
  REWIND; ERR for a group) at every commit and over time (:mod:`workbench.analysis.burrow`).

**The log end at a past moment.** A batch joined the log no earlier than its ``max_timestamp`` and after
every batch before it, so the log held it from ``reached`` = the running maximum of ``max_timestamp`` in
offset order (:func:`workbench.analysis.logs.log_growth`); the log end at time *t* is the end of the last
batch reached by *t*. With ``LogAppendTime`` that is the broker's clock. With ``CreateTime`` (Kafka's
default) it is the producer's, which runs ahead of the append by the producer's linger and the round
trip: a batch may be counted a few milliseconds before the broker had it. Rows of such topics say so in
``note``. Where the segments holding the log end at that time are gone (deleted by retention before the
bundle was taken), the broker's own ``LogEndOffset`` metric, when the bundle has it, gives the log end
(``log_end_source = 'metric'``); bytes and time cannot be known for offsets whose batches are gone.

**Buckets.** Kafka's own histograms (Yammer ``Histogram``, what ``RequestMetrics`` and the seed's
proposed metrics use) have no buckets: their MBeans report count, min, max, mean, standard deviation and
the 50th, 75th, 95th, 98th, 99th and 99.9th percentiles of a decaying sample. :func:`lag_summary` gives
exactly those attributes, computed over every commit of the window with Yammer's percentile rule
(``pos = q·(n+1)``, interpolated) rather than over a sample. For drawing on log scales,
:func:`lag_histogram` counts commits in power-of-two buckets: 0 on its own, then ``(2^(k-1), 2^k]`` bytes
or milliseconds (``(0, 1]`` for k = 0). Powers of two are the boundaries of an exponential histogram of
scale 0 (OpenTelemetry, HdrHistogram's magnitudes): equal width on a log axis, a fixed set whatever the
data, so histograms of different brokers, groups and windows add up bucket by bucket; 50 of them span
1 byte to 1 PiB and 1 ms to 35 years.

**Page cache.** A consumer read is cheap while the bytes it reads are still in the broker's page cache.
The cache holds what the broker wrote most recently (every replica it hosts, leaders and followers), so
the page cache a read needs is the number of bytes the broker wrote from the moment the read batch was
written until the read (``cache_bytes``); ``bytes_lag`` is the distance within the partition alone.
:func:`page_cache` gives both at p50, p90, p99 and p99.9 (nearest rank: a cache of that many bytes
holds at least that share of the reads).

Commits are a consumer's positions as it reports them; between commits a consumer reads ahead of its
last commit, so lag at commits is what an SRE's lag tools see, not a per-fetch measurement.
``__consumer_offsets`` is compacted: commits the log cleaner removed are not in the bundle.

Examples
--------
>>> lags = lag_at_commits(effective_commits(tables.offsets), growth_for(tables))    # doctest: +SKIP
>>> lag_summary(lags, metric="bytes").show()                                          # doctest: +SKIP
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.analysis import burrow as burrow_rules
from workbench.analysis._checks import require_columns
from workbench.analysis.logs import asof, log_growth
from workbench.analysis.text import bytes_text, duration_text, time_text
from workbench.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import Column, DataFrame

#: Columns of :func:`effective_commits`.
COMMIT_COLUMNS = ("group", "topic", "partition", "commit_time", "committed_offset", "leader_epoch", "metadata",
                  "transactional", "offsets_partition", "commit_log_offset")
#: Columns of :func:`lag_at_commits` (and, with ``time`` and ``last_commit_time``, of :func:`lag_at`).
LAG_COLUMNS = ("group", "topic", "partition", "commit_time", "committed_offset", "log_end_offset", "log_end_source",
               "records_lag", "bytes_lag", "time_lag_ms", "committed_batch_offset", "committed_batch_time",
               "committed_batch_reached", "log_end_time", "timestamp_type", "broker", "note")
#: The percentiles a Kafka (Yammer) histogram MBean reports, and their attribute names.
YAMMER_PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 0.5), ("p75", 0.75), ("p95", 0.95), ("p98", 0.98), ("p99", 0.99), ("p999", 0.999))
#: The page-cache quantiles the seed asks for.
CACHE_QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.99, 0.999)
#: ``metric`` of :func:`lag_histogram` -> (column, unit, Kafka metric name of the seed).
METRICS: dict[str, tuple[str, str, str]] = {
    "bytes": ("bytes_lag", "bytes", "ConsumerFetchLagBytes"),
    "time": ("time_lag_ms", "ms", "ConsumerFetchLagTimeInMs"),
    "records": ("records_lag", "records", "records lag"),
}
CREATE_TIME_NOTE = "CreateTime: times are the producers' clocks"
METRIC_END_NOTE = "log end from the broker's LogEndOffset metric (segments gone)"
BELOW_START_NOTE = "committed offset below the first batch in the bundle: bytes and time unknown"
UNKNOWN_END_NOTE = "log end at that time unknown (no batch, no LogEndOffset sample)"
_US = 1_000_000

_OFFSETS_NEEDED = ("node_id", "offsets_partition", "offset", "timestamp", "producer_id", "is_transactional",
                   "record_kind", "deleted", "group", "topic", "partition", "committed_offset", "leader_epoch",
                   "metadata", "commit_timestamp", "marker", "txn_outcome", "error")


# --------------------------------------------------------------------------------------------- commits


def effective_commits(offsets: DataFrame) -> DataFrame:
    """One row per offset commit that took effect, from one replica of ``__consumer_offsets``.

    The effective-commit filter of the ``offsets`` table (README): transaction markers out, and a
    transactional commit only when its transaction committed. A transactional commit takes effect when
    the COMMIT marker is written, so its ``commit_time`` is the marker's time; any other commit's is the
    record's own timestamp (when the coordinator appended it). Tombstones are left out
    (:func:`removed_offsets`).

    Parameters
    ----------
    offsets : DataFrame
        The ``offsets`` table (any number of replicas; the lowest node id holding a record is read).

    Returns
    -------
    DataFrame
        One row per commit, :data:`COMMIT_COLUMNS`: ``group, topic, partition, commit_time,
        committed_offset, leader_epoch, metadata, transactional, offsets_partition`` and
        ``commit_log_offset`` (the commit's own offset in ``__consumer_offsets``).

    Examples
    --------
    >>> effective_commits(tables.offsets).where("group = 'billing'").show()   # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(offsets, _OFFSETS_NEEDED, "effective_commits")
    one = _one_replica(offsets)
    commits = one.where((F.col("record_kind") != "TxnMarker") & ~F.coalesce(F.col("deleted"), F.lit(False))
                        & F.col("group").isNotNull() & F.col("topic").isNotNull() & F.col("partition").isNotNull()
                        & F.col("committed_offset").isNotNull() & F.col("error").isNull())
    commits = commits.where(~F.coalesce(F.col("is_transactional"), F.lit(False)) | (F.col("txn_outcome") == "COMMIT"))
    # a transactional commit takes effect at the first COMMIT marker after it (same replica, partition, producer)
    markers = one.where(F.col("record_kind") == "TxnMarker").select(
        "node_id", "offsets_partition", "producer_id", "offset", F.col("timestamp").alias("_marker_time"),
        F.lit(True).alias("_is_marker"))
    txn = commits.where(F.coalesce(F.col("is_transactional"), F.lit(False)))
    following = (Window.partitionBy("node_id", "offsets_partition", "producer_id").orderBy("offset")
                 .rowsBetween(Window.currentRow, Window.unboundedFollowing))
    settled = (txn.select("node_id", "offsets_partition", "producer_id", "offset", F.lit(None).cast("timestamp")
                          .alias("_marker_time"), F.lit(False).alias("_is_marker"))
               .unionByName(markers)
               .withColumn("_effective", F.first(F.when(F.col("_is_marker"), F.col("_marker_time")), ignorenulls=True)
                           .over(following))
               .where(~F.col("_is_marker"))
               .select("node_id", "offsets_partition", "offset", "_effective"))
    with_time = commits.join(settled, ["node_id", "offsets_partition", "offset"], "left")
    commit_time = F.when(F.coalesce(F.col("is_transactional"), F.lit(False)),
                         F.coalesce(F.col("_effective"), F.col("timestamp"))) \
        .otherwise(F.coalesce(F.col("timestamp"), F.col("commit_timestamp")))
    return with_time.select(
        "group", "topic", F.col("partition").cast("int").alias("partition"), commit_time.alias("commit_time"),
        F.col("committed_offset").cast("long").alias("committed_offset"), "leader_epoch", "metadata",
        F.coalesce(F.col("is_transactional"), F.lit(False)).alias("transactional"), "offsets_partition",
        F.col("offset").alias("commit_log_offset"))


def removed_offsets(offsets: DataFrame) -> DataFrame:
    """One row per offset tombstone: a group's committed offset for a partition removed (expired or deleted).

    Columns ``group, topic, partition, removed_time, offsets_partition, commit_log_offset``. Expiry and
    deletion write the same tombstone, so the log cannot tell them apart.
    """
    from pyspark.sql import functions as F

    require_columns(offsets, _OFFSETS_NEEDED, "removed_offsets")
    return (_one_replica(offsets)
            .where((F.col("record_kind") != "TxnMarker") & F.coalesce(F.col("deleted"), F.lit(False))
                   & F.col("group").isNotNull() & F.col("topic").isNotNull())
            .select("group", "topic", F.col("partition").cast("int").alias("partition"),
                    F.col("timestamp").alias("removed_time"), "offsets_partition",
                    F.col("offset").alias("commit_log_offset")))


def _one_replica(offsets: DataFrame) -> DataFrame:
    """The rows of one replica per ``__consumer_offsets`` record (the lowest node id holding it)."""
    from pyspark.sql import functions as F

    first = offsets.groupBy("offsets_partition", "offset").agg(F.min("node_id").alias("node_id"))
    return offsets.join(first, ["offsets_partition", "offset", "node_id"])


# ------------------------------------------------------------------------------------- log positions


def log_offsets_from_metrics(metrics: DataFrame | None, which: str = "end") -> DataFrame | None:
    """The brokers' ``LogEndOffset`` (``which='end'``) or ``LogStartOffset`` (``'start'``) samples.

    Returns
    -------
    DataFrame or None
        ``topic, partition, node_id, time, value`` (one row per sample), or None when the bundle has
        no such metric (or no metrics at all).
    """
    if metrics is None:
        return None
    from pyspark.sql import functions as F

    name = {"end": "kafka_log_log_logendoffset", "start": "kafka_log_log_logstartoffset"}[which]
    require_columns(metrics, ("node_id", "name", "labels", "timestamp", "value"), "log_offsets_from_metrics")
    rows = (metrics.where((F.col("name") == name) & F.col("timestamp").isNotNull() & F.col("value").isNotNull())
            .select(F.col("labels")["topic"].alias("topic"),
                    F.col("labels")["partition"].cast("int").alias("partition"), "node_id",
                    F.col("timestamp").alias("time"), F.col("value").cast("long").alias("value"))
            .where(F.col("topic").isNotNull() & F.col("partition").isNotNull()))
    return rows


def leader_changes(metadata: DataFrame | None) -> DataFrame | None:
    """Leader of each partition over time, from the KRaft metadata log (``PartitionRecord``/``PartitionChangeRecord``).

    Returns
    -------
    DataFrame or None
        One row per record that set a leader: ``topic, partition, time, metadata_offset, leader`` (-1:
        none); None without a metadata log.
    """
    if metadata is None:
        return None
    from pyspark.sql import functions as F

    from workbench.analysis.metadata_log import ordered_records

    records = ordered_records(metadata).where(~F.col("is_control"))
    present = set(records.columns)

    def field(typed: str, key: str, cast: str = "string") -> Column:
        """The metadata table's typed column, or the record's ``fields`` JSON where it is null."""
        from_json = F.get_json_object("fields", f"$.{key}").cast(cast)
        return F.coalesce(F.col(typed).cast(cast), from_json) if typed in present else from_json

    names = (records.where(F.col("record_type") == "TopicRecord")
             .select(field("topic_id", "topicId").alias("topic_id"), field("topic", "name").alias("topic"))
             .dropDuplicates(["topic_id"]))
    parts = (records.where(F.col("record_type").isin("PartitionRecord", "PartitionChangeRecord"))
             .select(field("topic_id", "topicId").alias("topic_id"),
                     field("partition", "partitionId", "int").alias("partition"),
                     field("leader", "leader", "int").alias("leader"),
                     F.col("timestamp").alias("time"), (F.col("offset") * 1_000_000 + F.col("seq"))
                     .alias("metadata_offset"))
             .where(F.col("leader").isNotNull() & (F.col("leader") != -2)))
    return parts.join(names, "topic_id").select("topic", "partition", "time", "metadata_offset", "leader")


def growth_for(tables: Any, topics: Sequence[str] | None = None) -> DataFrame:
    """:func:`~workbench.analysis.logs.log_growth` of the topics with commits, computed once per bundle."""
    def compute() -> DataFrame:
        wanted = topics
        if wanted is None:
            wanted = sorted(r["topic"] for r in commits_for(tables).select("topic").distinct().collect())
        return log_growth(tables.batches, topics=wanted)

    return tables.derive(f"consumer_lag.growth:{','.join(topics or [])}", compute)


def commits_for(tables: Any) -> DataFrame:
    """:func:`effective_commits` of a bundle, computed once."""
    return tables.derive("consumer_lag.commits", lambda: effective_commits(tables.offsets))


# ------------------------------------------------------------------------------------------------ lag


def lag_at_commits(commits: DataFrame, growth: DataFrame, *, leaders: DataFrame | None = None,
                   log_ends: DataFrame | None = None) -> DataFrame:
    """Lag in records, bytes and time of every commit, when it was made: one row of :data:`LAG_COLUMNS` each.

    ``commits``: :func:`effective_commits`; ``growth``: :func:`~workbench.analysis.logs.log_growth` of the
    committed topics; ``leaders`` (:func:`leader_changes`) name the ``broker``, else the node whose replica
    was read; ``log_ends`` (:func:`log_offsets_from_metrics`) give the log end where the segments are gone
    (``log_end_source`` ``metric``, else ``segments``). ``records_lag`` is log end minus committed offset, as
    ``kafka-consumer-groups`` computes it; ``bytes_lag`` and ``time_lag_ms`` run from the batch holding the
    committed offset (``committed_batch_*``: the next batch when the offset lies in a gap; its time is the
    max timestamp of its header) to the log end (``log_end_time``: the largest record timestamp then), 0
    when caught up; ``note`` says why a figure is missing or what it rests on.

    >>> lag_at_commits(commits, growth).orderBy(F.desc("bytes_lag")).show(5)   # doctest: +SKIP
    """
    require_columns(commits, ("group", "topic", "partition", "commit_time", "committed_offset"), "lag_at_commits")
    return _lag_rows(commits, growth, time="commit_time", leaders=leaders, log_ends=log_ends).select(*LAG_COLUMNS)


def lag_at(commits: DataFrame, growth: DataFrame, instants: DataFrame | Sequence[Any], *,
           removed: DataFrame | None = None, leaders: DataFrame | None = None,
           log_ends: DataFrame | None = None) -> DataFrame:
    """Lag of every group and partition at chosen instants: the state ``kafka-consumer-groups --describe`` shows.

    Each group-partition's last commit strictly before the instant against the log end at it; a partition
    whose offset was removed before it is left out, as the tool does. ``instants`` is a DataFrame with a
    timestamp column ``time`` (other columns kept) or datetimes / ISO strings (UTC); ``removed`` is
    :func:`removed_offsets`; the rest as for :func:`lag_at_commits`. Returns the instants' columns then
    :data:`LAG_COLUMNS`, ``commit_time`` renamed ``last_commit_time``.

    >>> lag_at(commits, growth, ["2026-03-01T03:12:00"]).show()   # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    require_columns(commits, ("group", "topic", "partition", "commit_time", "committed_offset"), "lag_at")
    spark = commits.sparkSession
    if not hasattr(instants, "columns"):
        instants = spark.createDataFrame([(_as_datetime(v),) for v in instants], "time timestamp")
    require_columns(instants, ("time",), "lag_at (instants)")
    keys = commits.select("group", "topic", "partition").distinct()
    events = commits.select("group", "topic", "partition", F.col("commit_time").alias("_et"), "committed_offset",
                            F.lit(False).alias("_removed"))
    if removed is not None:
        events = events.unionByName(removed.select("group", "topic", "partition", F.col("removed_time").alias("_et"),
                                                   F.lit(None).cast("long").alias("committed_offset"),
                                                   F.lit(True).alias("_removed")))
    grid = keys.crossJoin(instants).withColumn("_before", F.col("time") - F.expr("INTERVAL 1 MICROSECOND"))
    positions = asof(grid, events, by=["group", "topic", "partition"], left_time="_before", right_time="_et",
                     columns=["_et", "_removed", "committed_offset"])
    positions = (positions.where(F.col("_et").isNotNull() & ~F.col("_removed"))
                 .withColumnRenamed("_et", "last_commit_time").drop("_before", "_removed"))
    rows = _lag_rows(positions, growth, time="time", leaders=leaders, log_ends=log_ends)
    inst_cols = [c for c in instants.columns]
    out = [c if c != "commit_time" else "last_commit_time" for c in LAG_COLUMNS]
    return rows.select(*inst_cols, *[c for c in out if c not in inst_cols])


def _as_datetime(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is None else value.astimezone(dt.UTC).replace(tzinfo=None)
    try:
        parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise ConfigError(f"instant: expected a date/time such as 2026-03-01T03:12:00, got {value!r}") from exc
    return parsed if parsed.tzinfo is None else parsed.astimezone(dt.UTC).replace(tzinfo=None)


def _lag_rows(positions: DataFrame, growth: DataFrame, *, time: str, leaders: DataFrame | None,
              log_ends: DataFrame | None) -> DataFrame:
    """Log end at ``time``, the batch holding the committed offset, and the three lags."""
    from pyspark.sql import functions as F

    require_columns(growth, ("topic", "partition", "node_id", "base_offset", "end_offset", "bytes_before",
                             "bytes_end", "max_timestamp", "reached", "timestamp_type"), "consumer lag (growth)")
    by = ["topic", "partition"]
    ends = growth.select(*by, "reached", F.col("end_offset").alias("_leo"), F.col("bytes_end").alias("_leo_bytes"),
                         F.col("reached").alias("_leo_time"))
    rows = asof(positions, ends, by=by, left_time=time, right_time="reached",
                columns=["_leo", "_leo_bytes", "_leo_time"])
    # the batch holding the committed offset: the first batch whose last offset is at or after it
    holders = growth.select(*by, (-(F.col("end_offset") - 1)).alias("_hkey"), F.col("base_offset").alias("_hb_base"),
                            F.col("bytes_before").alias("_hb_bytes"), F.col("max_timestamp").alias("_hb_time"),
                            F.col("reached").alias("_hb_reached"))
    rows = asof(rows.withColumn("_ckey", -F.col("committed_offset")), holders, by=by, left_time="_ckey",
                right_time="_hkey", columns=["_hb_base", "_hb_bytes", "_hb_time", "_hb_reached"]).drop("_ckey")
    facts = growth.groupBy(*by).agg(
        F.min("base_offset").alias("_first_offset"),
        F.max(F.when(F.col("timestamp_type") == "CreateTime", 1).otherwise(0)).alias("_create_time"),
        F.first("timestamp_type", ignorenulls=True).alias("timestamp_type"),
        F.first("node_id", ignorenulls=True).alias("_replica"))
    rows = rows.join(facts, by, "left")
    if log_ends is not None:
        samples = log_ends.groupBy(*by, "time").agg(F.max("value").alias("_m_leo"))
        rows = asof(rows, samples.withColumnRenamed("time", "_mt"), by=by, left_time=time, right_time="_mt",
                    columns=["_m_leo"])
    else:
        rows = rows.withColumn("_m_leo", F.lit(None).cast("long"))
    if leaders is not None:
        rows = asof(rows, leaders.select(*by, F.col("time").alias("_lt"), "metadata_offset", "leader"), by=by,
                    left_time=time, right_time="_lt", columns=["metadata_offset", "leader"]).drop("metadata_offset")
    else:
        rows = rows.withColumn("leader", F.lit(None).cast("int"))

    from_metric = F.col("_leo").isNull() & F.col("_m_leo").isNotNull()
    # a consumer commits only offsets it has read: the log end was at least the committed offset (the
    # metric, sampled each second, can be older than the commit)
    leo = F.coalesce(F.col("_leo"), F.greatest(F.col("_m_leo"), F.col("committed_offset")))
    committed = F.col("committed_offset")
    caught_up = committed >= leo
    below = F.col("_first_offset").isNotNull() & (committed < F.col("_first_offset"))
    known = ~below & F.col("_hb_base").isNotNull() & F.col("_leo").isNotNull()
    bytes_lag = (F.when(leo.isNull(), F.lit(None)).when(caught_up, F.lit(0))
                 .when(known, F.greatest(F.col("_leo_bytes") - F.col("_hb_bytes"), F.lit(0))))
    time_lag = (F.when(leo.isNull(), F.lit(None)).when(caught_up, F.lit(0))
                .when(known, F.greatest((F.unix_micros("_leo_time") - F.unix_micros("_hb_time")) / 1000, F.lit(0))))
    note = F.concat_ws("; ",
                       F.when(F.col("_create_time") == 1, F.lit(CREATE_TIME_NOTE)),
                       F.when(from_metric, F.lit(METRIC_END_NOTE)),
                       F.when(below & ~caught_up, F.lit(BELOW_START_NOTE)),
                       F.when(leo.isNull(), F.lit(UNKNOWN_END_NOTE)))
    return rows.select(
        *positions.columns,
        leo.cast("long").alias("log_end_offset"),
        F.when(F.col("_leo").isNotNull(), F.lit("segments")).when(from_metric, F.lit("metric")).alias("log_end_source"),
        (leo - committed).cast("long").alias("records_lag"),
        bytes_lag.cast("long").alias("bytes_lag"),
        time_lag.cast("long").alias("time_lag_ms"),
        F.col("_hb_base").alias("committed_batch_offset"),
        F.col("_hb_time").alias("committed_batch_time"),
        F.col("_hb_reached").alias("committed_batch_reached"),
        F.col("_leo_time").alias("log_end_time"),
        "timestamp_type",
        F.coalesce(F.col("leader"), F.col("_replica")).cast("int").alias("broker"),
        note.alias("note"))


def lags_for(tables: Any) -> DataFrame:
    """:func:`lag_at_commits` of a bundle (leaders from its metadata log, LogEndOffset samples), computed once."""
    def compute() -> DataFrame:
        return lag_at_commits(commits_for(tables), growth_for(tables), leaders=_leaders(tables),
                              log_ends=log_offsets_from_metrics(_metrics(tables), "end"))

    return tables.derive("consumer_lag.lags", compute)


def _leaders(tables: Any) -> DataFrame | None:
    try:
        return leader_changes(tables.metadata) if not tables.metadata.isEmpty() else None
    except (KeyError, AttributeError):
        return None


def _metrics(tables: Any) -> DataFrame | None:
    try:
        return tables.metrics
    except (KeyError, AttributeError):
        return None


# ---------------------------------------------------------------------------------------- histograms


def _window(lags: DataFrame, start: Any, end: Any, time: str = "commit_time") -> DataFrame:
    from pyspark.sql import functions as F

    if start is not None:
        lags = lags.where(F.col(time) >= F.lit(_as_datetime(start)))
    if end is not None:
        lags = lags.where(F.col(time) < F.lit(_as_datetime(end)))
    return lags


def _metric_column(metric: str) -> str:
    if metric not in METRICS:
        raise ConfigError(f"metric: expected one of {sorted(METRICS)}, got {metric!r}")
    return METRICS[metric][0]


def bucket_of(value: Column) -> Column:
    """The power-of-two bucket of a lag: -1 for 0 (or less), else ``k`` with ``2^(k-1) < value <= 2^k``."""
    from pyspark.sql import functions as F

    return F.when(value <= 0, F.lit(-1)).otherwise(F.ceil(F.log2(value.cast("double")))).cast("int")


def lag_histogram(lags: DataFrame, *, metric: str = "bytes", by: Sequence[str] = ("broker",), start: Any = None,
                  end: Any = None) -> DataFrame:
    """``ConsumerFetchLagBytes`` / ``ConsumerFetchLagTimeInMs`` as bucket counts over a window of commits.

    ``lags`` from :func:`lag_at_commits`; ``metric`` is ``bytes``, ``time`` (ms) or ``records``; commits in
    ``[start, end)``. One row per key and non-empty bucket: ``bucket`` -1 holds 0, bucket ``k`` holds
    ``(2^(k-1), 2^k]`` (``lower``, ``upper``). Commits of unknown lag are left out.

    >>> lag_histogram(lags, metric="time", by=["broker", "group"]).show()   # doctest: +SKIP
    """
    from pyspark.sql import functions as F

    column = _metric_column(metric)
    require_columns(lags, (column, "commit_time", *by), "lag_histogram")
    data = _window(lags, start, end).where(F.col(column).isNotNull())
    counted = data.groupBy(*by, bucket_of(F.col(column)).alias("bucket")).agg(F.count("*").alias("count"))
    return counted.select(
        *by, F.lit(metric).alias("metric"), "bucket",
        F.when(F.col("bucket") <= 0, F.lit(0.0)).otherwise(F.pow(F.lit(2.0), F.col("bucket") - 1)).alias("lower"),
        F.when(F.col("bucket") < 0, F.lit(0.0)).otherwise(F.pow(F.lit(2.0), F.col("bucket"))).alias("upper"),
        "count")


def lag_summary(lags: DataFrame, *, metric: str = "bytes", by: Sequence[str] = ("broker",), start: Any = None,
                end: Any = None) -> DataFrame:
    """The attributes of a Kafka histogram MBean for the lag of the commits in a window.

    Percentiles follow Yammer's ``Snapshot.getValue`` (Kafka's histograms): over the ``n`` sorted values,
    ``pos = q·(n+1)``; below 1 the minimum, at ``n`` or above the maximum, else the values at ranks
    ``floor(pos)`` and ``floor(pos)+1`` interpolated. Computed over every commit, not a decaying sample.

    Returns
    -------
    DataFrame
        One row per key: ``by`` columns, ``metric``, ``name`` (the seed's metric name), ``count``,
        ``unknown`` (commits whose lag is unknown), ``min, max, mean, stddev, p50, p75, p95, p98, p99,
        p999``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    column = _metric_column(metric)
    require_columns(lags, (column, "commit_time", *by), "lag_summary")
    data = _window(lags, start, end)
    key = list(by)
    unknown = data.groupBy(*key).agg(F.sum(F.col(column).isNull().cast("long")).alias("unknown"))
    known = data.where(F.col(column).isNotNull()).select(*key, F.col(column).cast("double").alias("_v"))
    part = Window.partitionBy(*key) if key else Window.partitionBy(F.lit(1))
    ranked = (known.withColumn("_rank", F.row_number().over(part.orderBy("_v")))
              .withColumn("_n", F.count("*").over(part)))
    aggs = [F.count("*").alias("count"), F.min("_v").alias("min"), F.max("_v").alias("max"),
            F.mean("_v").alias("mean"), F.coalesce(F.stddev_samp("_v"), F.lit(0.0)).alias("stddev")]
    for name, q in YAMMER_PERCENTILES:
        pos = F.lit(q) * (F.col("_n") + 1)
        lo = F.floor(pos).cast("long")
        aggs.append(F.max(F.when(F.col("_rank") == F.greatest(F.least(lo, F.col("_n")), F.lit(1)), F.col("_v")))
                    .alias(f"_{name}_lo"))
        aggs.append(F.max(F.when(F.col("_rank") == F.least(lo + 1, F.col("_n")), F.col("_v"))).alias(f"_{name}_hi"))
        aggs.append(F.first(pos - F.floor(pos)).alias(f"_{name}_frac"))
        aggs.append(F.first(pos).alias(f"_{name}_pos"))
    summary = ranked.groupBy(*key).agg(*aggs)
    cols = []
    for name, _q in YAMMER_PERCENTILES:
        lo, hi, frac, pos = (F.col(f"_{name}_{s}") for s in ("lo", "hi", "frac", "pos"))
        cols.append(F.when(pos < 1, F.col("min")).when(pos >= F.col("count"), F.col("max"))
                    .otherwise(lo + frac * (hi - lo)).alias(name))
    result = summary.select(*key, "count", "min", "max", "mean", "stddev", *cols)
    joined = unknown.join(result, key, "left") if key else unknown.crossJoin(result)
    return joined.select(*key, F.lit(metric).alias("metric"), F.lit(METRICS[metric][2]).alias("name"),
                         F.coalesce(F.col("count"), F.lit(0)).cast("long").alias("count"),
                         F.col("unknown").cast("long").alias("unknown"),
                         "min", "max", "mean", "stddev", *[n for n, _ in YAMMER_PERCENTILES])


# ---------------------------------------------------------------------------------------- page cache


def broker_writes(batches: DataFrame) -> DataFrame:
    """Bytes each node had written over time, all its replicas together (what fills its page cache).

    Returns
    -------
    DataFrame
        One row per batch of each node's log dirs (KRaft snapshots left out): ``broker, time`` (when the
        node's log held it: the running maximum of batch timestamps in its partition), ``written``
        (bytes the node had written by then, cumulative in time order).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(batches, ("node_id", "topic", "partition", "segment_base_offset", "base_offset", "size",
                              "max_timestamp"), "broker_writes")
    data = batches.where(F.col("segment_base_offset").isNotNull() & F.col("topic").isNotNull())
    in_partition = (Window.partitionBy("node_id", "topic", "partition").orderBy("base_offset", "segment_base_offset")
                    .rowsBetween(Window.unboundedPreceding, 0))
    timed = data.withColumn("time", F.max("max_timestamp").over(in_partition))
    in_node = (Window.partitionBy("node_id").orderBy("time", "topic", "partition", "base_offset")
               .rowsBetween(Window.unboundedPreceding, 0))
    return timed.select(F.col("node_id").alias("broker"), "time",
                        F.sum(F.col("size").cast("long")).over(in_node).alias("written"))


def with_cache_bytes(lags: DataFrame, writes: DataFrame) -> DataFrame:
    """``lags`` plus ``cache_bytes``: bytes the leader wrote from when the read batch was written to the commit.

    0 when caught up; null when the read batch or the leader's log dirs are not in the bundle.
    """
    from pyspark.sql import functions as F

    require_columns(lags, ("broker", "commit_time", "committed_batch_reached", "records_lag"), "with_cache_bytes")
    w = writes.select("broker", F.col("time").alias("_wt"), F.col("written").alias("_w"))
    # as-of joins carry each row whole (no generated row id to join back on)
    now = asof(lags, w, by=["broker"], left_time="commit_time", right_time="_wt", columns=["_wt", "_w"],
               suffix="_now").drop("_wt_now")
    before = now.withColumn("_b", F.col("committed_batch_reached") - F.expr("INTERVAL 1 MICROSECOND"))
    joined = asof(before, w, by=["broker"], left_time="_b", right_time="_wt", columns=["_wt", "_w"],
                  suffix="_then").drop("_b", "_wt_then")
    cache = (F.when(F.col("records_lag") <= 0, F.lit(0))
             .when(F.col("committed_batch_reached").isNull() | F.col("_w_now").isNull(), F.lit(None))
             .otherwise(F.greatest(F.col("_w_now") - F.coalesce(F.col("_w_then"), F.lit(0)), F.lit(0))))
    return joined.withColumn("cache_bytes", cache.cast("long")).drop("_w_now", "_w_then")


def page_cache(lags: DataFrame, *, quantiles: Sequence[float] = CACHE_QUANTILES, by: Sequence[str] = ("broker",),
               start: Any = None, end: Any = None) -> DataFrame:
    """How many bytes of log tail, and of page cache, would have served each share of consumer reads.

    One row per key and quantile (nearest rank over commits with a known byte lag): ``tail_bytes``, the
    bytes behind the log end, and ``cache_bytes``, the bytes the broker wrote since the data read (null
    unless ``lags`` has ``cache_bytes``: :func:`with_cache_bytes`).
    """
    from pyspark.sql import functions as F

    require_columns(lags, ("bytes_lag", "commit_time", *by), "page_cache")
    data = _window(lags, start, end)
    has_cache = "cache_bytes" in lags.columns
    tail = _nearest_rank(data, "bytes_lag", by, quantiles, "tail_bytes")
    if has_cache:
        cache = _nearest_rank(data, "cache_bytes", by, quantiles, "cache_bytes").drop("reads")
        return tail.join(cache, [*by, "quantile"], "left").select(*by, "quantile", "reads", "tail_bytes",
                                                                 "cache_bytes")
    return tail.withColumn("cache_bytes", F.lit(None).cast("long"))


def _nearest_rank(data: DataFrame, column: str, by: Sequence[str], quantiles: Sequence[float],
                  name: str) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    for q in quantiles:
        if not 0 < q <= 1:
            raise ConfigError(f"quantiles: expected values in (0, 1], got {q}")
    known = data.where(F.col(column).isNotNull()).select(*by, F.col(column).alias("_v"))
    part = Window.partitionBy(*by) if by else Window.partitionBy(F.lit(1))
    ranked = (known.withColumn("_rank", F.row_number().over(part.orderBy("_v")))
              .withColumn("_n", F.count("*").over(part)))
    qs = F.explode(F.array(*[F.lit(float(q)) for q in quantiles])).alias("quantile")
    spark = data.sparkSession
    qframe = spark.range(1).select(qs)
    picked = ranked.crossJoin(qframe).where(F.col("_rank") == F.greatest(F.ceil(F.col("quantile") * F.col("_n")),
                                                                          F.lit(1)))
    return picked.select(*by, "quantile", F.col("_n").alias("reads"), F.col("_v").cast("long").alias(name))


def byte_lag_cdf(lags: DataFrame, *, column: str = "bytes_lag", by: Sequence[str] = ("broker",),
                 per_octave: int = 4, start: Any = None, end: Any = None) -> DataFrame:
    """The cumulative distribution of a byte measure over commits, at fixed points on a log scale.

    Returns
    -------
    DataFrame
        One row per key and point: ``by`` columns, ``bytes`` (0, then ``2^(j/per_octave)``), ``fraction``
        (share of commits whose ``column`` is at most ``bytes``), ``reads`` (commits with a known value).
        Small however many commits: at most ``per_octave`` × 60 points per key.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(lags, (column, "commit_time", *by), "byte_lag_cdf")
    if per_octave < 1:
        raise ConfigError(f"per_octave: expected at least 1, got {per_octave}")
    data = _window(lags, start, end).where(F.col(column).isNotNull())
    point = F.when(F.col(column) <= 0, F.lit(-1)).otherwise(
        F.ceil(F.log2(F.col(column).cast("double")) * per_octave)).cast("int")
    counted = data.groupBy(*by, point.alias("_j")).agg(F.count("*").alias("_c"))
    order = (Window.partitionBy(*by) if by else Window.partitionBy(F.lit(1))).orderBy("_j")
    cum = (counted.withColumn("_cum", F.sum("_c").over(order.rowsBetween(Window.unboundedPreceding, 0)))
           .withColumn("reads", F.sum("_c").over(Window.partitionBy(*by) if by else Window.partitionBy(F.lit(1)))))
    return cum.select(*by, F.when(F.col("_j") < 0, F.lit(0.0)).otherwise(F.pow(F.lit(2.0), F.col("_j") / per_octave))
                      .alias("bytes"), (F.col("_cum") / F.col("reads")).alias("fraction"), "reads")


# ------------------------------------------------------------------------ retention, stuck and removed


def retention_loss(lags: DataFrame, growth: DataFrame, *, log_starts: DataFrame | None = None,
                   removed: DataFrame | None = None, away_s: float = 30.0) -> DataFrame:
    """Records a group skipped because retention deleted them before it read them.

    Three cases, each with the group, the partition and the count of records lost:

    * ``skipped``: between two commits ``X`` (earlier) and ``Y``, the log start overtook ``X``: the
      group resumed at the log start (``auto.offset.reset``), so the records from ``X`` to
      ``min(Y, log start)`` were never read by it. The log start at the second commit is the broker's
      ``LogStartOffset`` metric (``basis = 'metric'``), exact when the log start did not move between
      the group's reset and that commit; without the metric the bundle's log start (its first batch)
      bounds it (``basis = 'bundle'``, an upper bound: ``exact`` false). The loss is taken as certain when
      the group was gone in between — its offsets were removed (``removed``: :func:`removed_offsets`), or
      it committed nothing for more than ``away_s`` seconds (consumers commit every few seconds while they
      read: a longer silence means no member was reading) — and it restarted at the log start.
      Otherwise the group may have read the records before retention deleted
      them (a consumer reads ahead of its commits): the row is ``possibly_skipped``, ``exact`` false, its
      count an upper bound;
    * ``commit_below_log_start``: a commit of an offset already below the log start when made (the
      metric says so): the group will skip the records up to the log start;
    * ``behind_log_start``: the group's last commit is below the log start of the bundle (its first
      batch): the records between are gone for it, should it come back.

    Returns
    -------
    DataFrame
        One row per case: ``kind, group, topic, partition, time`` (the commit that showed it, or of the
        last commit), ``committed_offset`` (X), ``next_offset`` (Y, or null), ``log_start_offset``,
        ``records_lost``, ``basis`` (``metric`` or ``bundle``), ``exact``; ``kind`` is ``skipped``,
        ``possibly_skipped``, ``commit_below_log_start`` or ``behind_log_start``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(lags, ("group", "topic", "partition", "commit_time", "committed_offset"), "retention_loss")
    by = ["topic", "partition"]
    first = growth.groupBy(*by).agg(F.min("base_offset").alias("_bundle_start"))
    keys = ["group", "topic", "partition"]
    order = Window.partitionBy(*keys).orderBy("commit_time", "committed_offset")
    rows = lags.select(*keys, "commit_time", "committed_offset").withColumn(
        "_prev", F.lag("committed_offset").over(order)).withColumn(
        "_next", F.lead("committed_offset").over(order))
    if log_starts is not None:
        samples = log_starts.groupBy(*by, "time").agg(F.max("value").alias("_m_start"))
        rows = asof(rows, samples.withColumnRenamed("time", "_st"), by=by, left_time="commit_time", right_time="_st",
                    columns=["_m_start"])
    else:
        rows = rows.withColumn("_m_start", F.lit(None).cast("long"))
    rows = rows.join(first, by, "left")
    rows = rows.withColumn("_prev_time", F.lag("commit_time").over(order))
    away = (F.unix_micros("commit_time") - F.unix_micros("_prev_time")) > F.lit(int(away_s * 1e6))
    if removed is not None:
        gone = removed.select(*keys, "removed_time")
        cond = [rows[k] == gone[k] for k in keys] + [gone["removed_time"] > rows["_prev_time"],
                                                      gone["removed_time"] <= rows["commit_time"]]
        hits = rows.join(gone, cond, "left_semi").select(*keys, "commit_time", "committed_offset").distinct() \
            .withColumn("_reset", F.lit(True))
        rows = rows.join(hits, [*keys, "commit_time", "committed_offset"], "left")
    else:
        rows = rows.withColumn("_reset", F.lit(None).cast("boolean"))
    reset = F.coalesce(F.col("_reset"), F.lit(False)) | F.coalesce(away, F.lit(False))
    skip_kind = F.when(reset, F.lit("skipped")).otherwise(F.lit("possibly_skipped")).alias("kind")
    start_now = F.col("_m_start")
    x, y = F.col("_prev"), F.col("committed_offset")
    skipped_metric = (rows.where(start_now.isNotNull() & x.isNotNull() & (y > x) & (start_now > x))
                      .select(skip_kind, *keys, F.col("commit_time").alias("time"),
                              x.alias("committed_offset"), y.alias("next_offset"),
                              start_now.alias("log_start_offset"), (F.least(y, start_now) - x).alias("records_lost"),
                              F.lit("metric").alias("basis"), reset.alias("exact")))
    skipped_bundle = (rows.where(start_now.isNull() & x.isNotNull() & (y > x) & (F.col("_bundle_start") > x))
                      .select(skip_kind, *keys, F.col("commit_time").alias("time"),
                              x.alias("committed_offset"), y.alias("next_offset"),
                              F.col("_bundle_start").alias("log_start_offset"),
                              (F.least(y, F.col("_bundle_start")) - x).alias("records_lost"),
                              F.lit("bundle").alias("basis"), F.lit(False).alias("exact")))
    below = (rows.where(start_now.isNotNull() & (y < start_now) & (x.isNull() | (x >= start_now) | (x == y)))
             .select(F.lit("commit_below_log_start").alias("kind"), *keys, F.col("commit_time").alias("time"),
                     y.alias("committed_offset"), F.lit(None).cast("long").alias("next_offset"),
                     start_now.alias("log_start_offset"), (start_now - y).alias("records_lost"),
                     F.lit("metric").alias("basis"), F.lit(True).alias("exact")))
    behind = (rows.where(F.col("_next").isNull() & F.col("_bundle_start").isNotNull() & (y < F.col("_bundle_start")))
              .select(F.lit("behind_log_start").alias("kind"), *keys, F.col("commit_time").alias("time"),
                      y.alias("committed_offset"), F.lit(None).cast("long").alias("next_offset"),
                      F.col("_bundle_start").alias("log_start_offset"),
                      (F.col("_bundle_start") - y).alias("records_lost"),
                      F.lit("bundle").alias("basis"), F.lit(True).alias("exact")))
    out = skipped_metric.unionByName(skipped_bundle).unionByName(below).unionByName(behind)
    return out.select("kind", *keys, "time", F.col("committed_offset").cast("long"), F.col("next_offset").cast("long"),
                      F.col("log_start_offset").cast("long"), F.col("records_lost").cast("long"), "basis", "exact")


def stuck_partitions(lags: DataFrame, growth: DataFrame | None = None, *, min_commits: int = 2) -> DataFrame:
    """Committed offsets that stood still while the log end grew.

    A run is a maximal sequence of consecutive commits of one group and partition with the same offset,
    of at least ``min_commits`` commits, during which the log end grew; with ``growth``, a group's last
    commit also counts as a run to the end of the bundle when the log grew after it (it stopped
    committing with lag: ``to_end`` true).

    Returns
    -------
    DataFrame
        One row per run: ``group, topic, partition, committed_offset, start, end, commits, log_end_start,
        log_end_end, lag_start, lag_end, to_end``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    require_columns(lags, ("group", "topic", "partition", "commit_time", "committed_offset", "log_end_offset"),
                    "stuck_partitions")
    keys = ["group", "topic", "partition"]
    order = Window.partitionBy(*keys).orderBy("commit_time", "commit_log_offset" if "commit_log_offset" in
                                               lags.columns else "committed_offset")
    flagged = (lags.withColumn("_new", F.coalesce(F.col("committed_offset") != F.lag("committed_offset").over(order),
                                                  F.lit(True)))
               .withColumn("_run", F.sum(F.col("_new").cast("long")).over(order.rowsBetween(Window.unboundedPreceding,
                                                                                           0)))
               .withColumn("_last", F.lead("commit_time").over(order).isNull()))
    runs = flagged.groupBy(*keys, "_run").agg(
        F.first("committed_offset").alias("committed_offset"), F.min("commit_time").alias("start"),
        F.max("commit_time").alias("end"), F.count("*").alias("commits"),
        F.min("log_end_offset").alias("log_end_start"), F.max("log_end_offset").alias("log_end_end"),
        F.max(F.col("_last").cast("int")).alias("_is_last"))
    runs = runs.withColumn("to_end", F.lit(False))
    if growth is not None:
        final = growth.groupBy("topic", "partition").agg(F.max("end_offset").alias("_final"),
                                                         F.max("reached").alias("_final_time"))
        runs = (runs.join(final, ["topic", "partition"], "left")
                .withColumn("to_end", (F.col("_is_last") == 1) & (F.col("_final") > F.greatest(
                    F.col("log_end_end"), F.col("committed_offset"))) & (F.col("_final_time") > F.col("end")))
                .withColumn("end", F.when(F.col("to_end"), F.col("_final_time")).otherwise(F.col("end")))
                .withColumn("log_end_end", F.when(F.col("to_end"), F.col("_final")).otherwise(F.col("log_end_end"))))
    grew = F.col("log_end_end") > F.col("log_end_start")
    stuck = runs.where(((F.col("commits") >= min_commits) & grew) | F.col("to_end"))
    return stuck.select(*keys, "committed_offset", "start", "end", F.col("commits").cast("long"), "log_end_start",
                        "log_end_end", (F.col("log_end_start") - F.col("committed_offset")).alias("lag_start"),
                        (F.col("log_end_end") - F.col("committed_offset")).alias("lag_end"), "to_end")


def removed_groups(commits: DataFrame, removed: DataFrame) -> DataFrame:
    """Groups whose offsets were removed (expired, or deleted): per group, what was removed and when.

    Returns
    -------
    DataFrame
        One row per group with a tombstone: ``group, partitions`` (committed partitions in the bundle),
        ``removed_partitions``, ``all_removed`` (every committed partition's last event is a tombstone),
        ``last_commit``, ``first_removed``, ``last_removed``.
    """
    from pyspark.sql import functions as F

    keys = ["group", "topic", "partition"]
    last_commit = commits.groupBy(*keys).agg(F.max("commit_time").alias("_lc"))
    last_removal = removed.groupBy(*keys).agg(F.max("removed_time").alias("_lr"), F.min("removed_time").alias("_fr"))
    both = last_commit.join(last_removal, keys, "full")
    gone = F.col("_lr").isNotNull() & (F.col("_lc").isNull() | (F.col("_lr") >= F.col("_lc")))
    per_group = both.groupBy("group").agg(
        F.countDistinct(F.when(F.col("_lc").isNotNull(), F.concat_ws("\u0000", "topic", F.col("partition").cast(
            "string")))).alias("partitions"),
        F.sum(gone.cast("int")).alias("removed_partitions"),
        F.min(gone.cast("int")).alias("_all"),
        F.max("_lc").alias("last_commit"), F.min(F.when(gone, F.col("_fr"))).alias("first_removed"),
        F.max(F.when(gone, F.col("_lr"))).alias("last_removed"))
    return (per_group.where(F.col("removed_partitions") > 0)
            .select("group", F.col("partitions").cast("long"), F.col("removed_partitions").cast("long"),
                    (F.col("_all") == 1).alias("all_removed"), "last_commit", "first_removed", "last_removed"))


# -------------------------------------------------------------------------------------------- Burrow


BURROW_SCHEMA = ("group string, topic string, partition int, time timestamp, status string, window int, "
                 "current_lag long, last_offset long")


def burrow_status(lags: DataFrame, growth: DataFrame, *, instants: DataFrame | None = None,
                  intervals: int = burrow_rules.DEFAULT_INTERVALS,
                  min_distance_s: int = burrow_rules.DEFAULT_MIN_DISTANCE_S,
                  refresh_s: int = burrow_rules.DEFAULT_REFRESH_S) -> DataFrame:
    """Burrow's partition status (:mod:`workbench.analysis.burrow`) right after every commit, or at instants.

    Burrow's recent broker offsets are the log ends of the ``intervals`` polls (every ``refresh_s``)
    before each evaluation. ``instants`` (``group, time`` rows) evaluate each of a group's partitions at
    those times instead. Returns :data:`BURROW_SCHEMA` rows; ``status`` is null before the first commit.
    """
    from pyspark.sql import functions as F

    rows = burrow_inputs(lags, growth, instants=instants, intervals=intervals, min_distance_s=min_distance_s,
                         refresh_s=refresh_s)

    def kernel(pdf: pd.DataFrame) -> pd.DataFrame:
        return _burrow_kernel(pdf, intervals, min_distance_s)

    # many partitions per pandas call: one call per group and partition costs far more than the
    # rules it runs
    bucket = F.pmod(F.xxhash64("group", "topic", "partition"), F.lit(BURROW_BUCKETS))
    return rows.groupBy(bucket.alias("_bucket")).applyInPandas(kernel, BURROW_SCHEMA)


#: Pandas calls :func:`burrow_status` makes at most (partitions of groups are spread over them by hash).
BURROW_BUCKETS = 64


def burrow_inputs(lags: DataFrame, growth: DataFrame, *, instants: DataFrame | None = None,
                  intervals: int = burrow_rules.DEFAULT_INTERVALS,
                  min_distance_s: int = burrow_rules.DEFAULT_MIN_DISTANCE_S,
                  refresh_s: int = burrow_rules.DEFAULT_REFRESH_S) -> DataFrame:
    """What :func:`burrow_status` evaluates: its commits and instants, one row each (parameters as there).

    Returns
    -------
    DataFrame
        ``group, topic, partition, time, offset, lag, is_commit`` (commits: offset and lag) and
        ``_leo_now, _leo_recent`` (instants: the log end then and ``intervals`` polls before).
    """
    from pyspark.sql import functions as F

    require_columns(lags, ("group", "topic", "partition", "commit_time", "committed_offset", "records_lag"),
                    "burrow_status")
    if intervals < 1 or refresh_s < 1 or min_distance_s < 0:
        raise ConfigError("burrow_status: intervals and refresh_s must be >= 1, min_distance_s >= 0")
    keys = ["group", "topic", "partition"]
    commits = lags.select(*keys, F.col("commit_time").alias("time"), F.col("committed_offset").alias("offset"),
                          F.col("records_lag").alias("lag"), F.lit(True).alias("is_commit"))
    if instants is None:
        points = lags.select(*keys, F.col("commit_time").alias("time")).distinct()
    else:
        require_columns(instants, ("group", "time"), "burrow_status (instants)")
        points = lags.select(*keys).distinct().join(instants.select("group", "time").distinct(), "group")
    ends = growth.select("topic", "partition", "reached", F.col("end_offset").alias("_leo"))
    lookback = F.expr(f"INTERVAL {(intervals - 1) * refresh_s} SECONDS")
    points = asof(points, ends, by=["topic", "partition"], left_time="time", right_time="reached", columns=["_leo"],
                  suffix="_now")
    points = asof(points.withColumn("_back", F.col("time") - lookback), ends, by=["topic", "partition"],
                  left_time="_back", right_time="reached", columns=["_leo"], suffix="_recent").drop("_back")
    rows = commits.select(*keys, "time", "offset", "lag", "is_commit",
                          F.lit(None).cast("long").alias("_leo_now"), F.lit(None).cast("long").alias("_leo_recent")) \
        .unionByName(points.select(*keys, "time", F.lit(None).cast("long").alias("offset"),
                                   F.lit(None).cast("long").alias("lag"), F.lit(False).alias("is_commit"),
                                   "_leo_now", "_leo_recent"))
    return rows


def _burrow_kernel(pdf: pd.DataFrame, intervals: int, min_distance_s: int) -> pd.DataFrame:
    """Burrow's status at every instant row of ``pdf``, for every (group, topic, partition) it holds.

    A row whose time is unknown (null) is left out (an instant of unknown time gets no status), and
    so is a commit whose offset is unknown; a null partition stays null.
    """
    import numpy as np
    import pandas as pd

    columns = [c.split()[0] for c in BURROW_SCHEMA.split(", ")]
    pdf = pdf[pdf["time"].notna() & ~(pdf["is_commit"].fillna(False).astype(bool) & pdf["offset"].isna())]
    if pdf.empty:
        return pd.DataFrame(columns=columns)
    ms = (pd.to_datetime(pdf["time"]).astype("int64") // 1_000_000).to_numpy()
    pdf = (pdf.assign(_ms=ms)
           .sort_values(["group", "topic", "partition", "_ms", "is_commit"], ascending=[True, True, True, True, False],
                        kind="stable").reset_index(drop=True))
    group, topic, part = pdf["group"].to_numpy(), pdf["topic"].to_numpy(), pdf["partition"].to_numpy()
    new = np.ones(len(pdf), dtype=bool)
    new[1:] = (group[1:] != group[:-1]) | (topic[1:] != topic[:-1]) | (part[1:] != part[:-1])
    bounds = [*np.flatnonzero(new).tolist(), len(pdf)]
    is_commit = pdf["is_commit"].to_numpy(dtype=bool)
    t_ms, offset, lag = pdf["_ms"].tolist(), pdf["offset"].tolist(), pdf["lag"].tolist()
    now, recent = pdf["_leo_now"].tolist(), pdf["_leo_recent"].tolist()
    out: dict[str, list] = {c: [] for c in columns}
    point_rows: list[int] = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        commits = [(int(offset[i]), int(t_ms[i]), None if pd.isna(lag[i]) else int(lag[i]))
                   for i in range(lo, hi) if is_commit[i]]
        points = [i for i in range(lo, hi) if not is_commit[i]]
        instants = [(int(t_ms[i]), None if pd.isna(now[i]) else int(now[i]),
                     [] if pd.isna(recent[i]) else [int(recent[i])]) for i in points]
        results = burrow_rules.evaluate(commits, instants, intervals=intervals, min_distance_s=min_distance_s)
        n = len(points)
        out["group"] += [group[lo]] * n
        out["topic"] += [topic[lo]] * n
        out["partition"] += [None if pd.isna(part[lo]) else int(part[lo])] * n
        point_rows += points
        out["status"] += [s for s, _w, _c in results]
        out["window"] += [w for _s, w, _c in results]
        out["current_lag"] += [c for _s, _w, c in results]
        out["last_offset"] += _last_offsets(commits, [t for t, _n, _r in instants])
    out["time"] = pdf["time"].to_numpy()[point_rows] if point_rows else []
    return pd.DataFrame(out, columns=columns)


def _last_offsets(commits: list[tuple[int, int, int | None]], times: list[int]) -> list[int | None]:
    out: list[int | None] = []
    i = 0
    last = None
    for t in times:
        while i < len(commits) and commits[i][1] <= t:
            last = commits[i][0]
            i += 1
        out.append(last)
    return out


def burrow_group_status(status: DataFrame) -> DataFrame:
    """A group's Burrow status at each instant its partitions were evaluated together.

    Returns
    -------
    DataFrame
        One row per group and instant: ``group, time, status`` (OK, WARN or ERR), ``partitions``,
        ``worst`` (the worst partition status), ``stop, stall, rewind, warn`` (partition counts),
        ``total_lag``, ``min_window`` (the fewest commits any partition's window held: Burrow calls an
        evaluation complete when every window is full).
    """
    from pyspark.sql import functions as F

    require_columns(status, ("group", "time", "status", "current_lag"), "burrow_group_status")
    rank = {"OK": 1, "WARN": 2, "STOP": 4, "STALL": 5, "REWIND": 6}
    ranked = F.lit(0)
    for name, value in rank.items():
        ranked = F.when(F.col("status") == name, F.lit(value)).otherwise(ranked)
    per = status.where(F.col("status").isNotNull()).withColumn("_rank", ranked)
    agg = per.groupBy("group", "time").agg(
        F.count("*").alias("partitions"), F.max("_rank").alias("_worst"),
        *[F.sum((F.col("status") == s).cast("long")).alias(s.lower()) for s in ("STOP", "STALL", "REWIND", "WARN")],
        F.sum("current_lag").alias("total_lag"), F.min("window").alias("min_window"))
    names = {v: k for k, v in rank.items()}
    worst = F.lit(None).cast("string")
    for value, name in names.items():
        worst = F.when(F.col("_worst") == value, F.lit(name)).otherwise(worst)
    group = F.when(F.col("_worst") >= 3, F.lit("ERR")).when(F.col("_worst") == 2, F.lit("WARN")).otherwise(F.lit("OK"))
    return agg.select("group", "time", group.alias("status"), F.col("partitions").cast("long"), worst.alias("worst"),
                      "stop", "stall", "rewind", "warn", F.col("total_lag").cast("long"),
                      F.col("min_window").cast("int"))


def group_instants(lags: DataFrame, *, points: int = 400) -> DataFrame:
    """Instants at which to evaluate whole groups: each group's commit times, thinned to at most ``points``.

    Returns
    -------
    DataFrame
        ``group, time``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    times = lags.select("group", F.col("commit_time").alias("time")).distinct()
    counted = times.withColumn("_n", F.count("*").over(Window.partitionBy("group"))).withColumn(
        "_i", F.row_number().over(Window.partitionBy("group").orderBy("time")))
    step = F.greatest(F.ceil(F.col("_n") / F.lit(points)), F.lit(1))
    return counted.where(((F.col("_i") - 1) % step == 0) | (F.col("_i") == F.col("_n"))).select("group", "time")


# ------------------------------------------------------------------------------------------ findings


#: A group whose time lag reaches this many seconds is a ``warning`` (parameter ``lag_warn_seconds``).
DEFAULT_LAG_WARN_S = 60.0


def group_lag_summary(lags: DataFrame) -> DataFrame:
    """Per group and leader broker: how far behind the tail its commits were, and when.

    Returns
    -------
    DataFrame
        One row per group and broker: ``group, broker, commits, partitions, lagging_commits`` (records
        lag above 0), ``start, end`` (first and last commit with lag), ``max_records_lag, max_bytes_lag,
        max_time_lag_ms``, ``at_max`` (commit time of the largest time lag), ``unknown`` (commits whose
        bytes or time lag is unknown), ``create_time`` (times are the producers').
    """
    from pyspark.sql import functions as F

    require_columns(lags, ("group", "broker", "topic", "partition", "commit_time", "records_lag", "bytes_lag",
                           "time_lag_ms", "timestamp_type"), "group_lag_summary")
    lagging = F.col("records_lag") > 0
    return lags.groupBy("group", "broker").agg(
        F.count("*").alias("commits"),
        F.countDistinct("topic", "partition").alias("partitions"),
        F.sum(lagging.cast("long")).alias("lagging_commits"),
        F.min(F.when(lagging, F.col("commit_time"))).alias("start"),
        F.max(F.when(lagging, F.col("commit_time"))).alias("end"),
        F.max("records_lag").alias("max_records_lag"),
        F.max("bytes_lag").alias("max_bytes_lag"),
        F.max("time_lag_ms").alias("max_time_lag_ms"),
        F.max_by("commit_time", F.coalesce(F.col("time_lag_ms"), F.lit(-1))).alias("at_max"),
        F.sum((F.col("bytes_lag").isNull() | F.col("time_lag_ms").isNull()).cast("long")).alias("unknown"),
        F.max((F.col("timestamp_type") == "CreateTime").cast("int")).alias("_ct"),
    ).select("group", "broker", F.col("commits").cast("long"), F.col("partitions").cast("long"),
             F.col("lagging_commits").cast("long"), "start", "end", F.col("max_records_lag").cast("long"),
             F.col("max_bytes_lag").cast("long"), F.col("max_time_lag_ms").cast("long"), "at_max",
             F.col("unknown").cast("long"), (F.col("_ct") == 1).alias("create_time"))


def findings(lags: DataFrame, *, loss: DataFrame | None = None, removed: DataFrame | None = None,
             cache: DataFrame | None = None, group_status: DataFrame | None = None,
             stuck: DataFrame | None = None,
             lag_warn_s: float = DEFAULT_LAG_WARN_S,
             burrow_intervals: int = burrow_rules.DEFAULT_INTERVALS) -> DataFrame:
    """Consumer-lag findings, as rows of :data:`workbench.analysis.findings.FINDINGS_SCHEMA` (area ``consumer_lag``).

    * ``lag`` (``warning`` when the time lag reached ``lag_warn_s``, else ``info``; one per group and
      leader broker with lag): how far behind the tail the group read, from when to when, and with
      ``cache`` (:func:`page_cache` by broker) the page cache that would have served 99 % of the
      broker's reads;
    * ``retention_loss`` (critical): :func:`retention_loss` rows, records the group will never read;
    * ``offsets_removed`` (info): :func:`removed_groups` rows: a group's committed offsets were removed
      (expired after it was empty for ``offsets.retention.minutes``, or deleted);
    * ``burrow_err`` / ``burrow_warn`` (warning / info): maximal runs of instants at which Burrow's
      rules rate the group ERR or WARN (:func:`burrow_group_status`), counting only complete
      evaluations (every partition's window holds ``burrow_intervals`` commits: a window of one or two
      commits rates any lag a STALL);
    * ``stuck`` (warning): :func:`stuck_partitions` runs, per group: committed offsets that stood
      still while the log grew, or a group that stopped committing with lag (``to_end``);
    * ``lag_unknown`` (info): commits whose lag in bytes or time cannot be computed (the segments of
      that time are not in the bundle): what is missing rather than a claim of health.

    Returns
    -------
    DataFrame
        Subject type ``group``, subject the group name; ``figures`` holds the numbers of the summary.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from workbench.analysis.findings import FINDINGS_COLUMNS, empty_findings

    spark = lags.sparkSession
    out = empty_findings(spark).drop("area", "subject_type")
    summary = group_lag_summary(lags)
    p99 = None
    if cache is not None:
        p99 = (cache.where(F.abs(F.col("quantile") - 0.99) < 1e-9)
               .select("broker", F.col("tail_bytes").alias("_p99_tail"), F.col("cache_bytes").alias("_p99_cache")))
    lagged = summary.where(F.col("lagging_commits") > 0)
    if p99 is not None:
        lagged = lagged.join(p99, "broker", "left")
    else:
        lagged = lagged.withColumn("_p99_tail", F.lit(None).cast("long")).withColumn("_p99_cache",
                                                                                   F.lit(None).cast("long"))
    cache_text = F.when(F.col("_p99_cache").isNotNull(), F.concat(
        F.lit("; "), bytes_text(F.col("_p99_cache")), F.lit(" of page cache on broker "),
        F.col("broker").cast("string"),
        F.lit(" would have served 99 % of its reads"))).otherwise(F.lit(""))
    lag_rows = lagged.select(
        F.lit("lag").alias("kind"),
        F.when(F.col("max_time_lag_ms") >= F.lit(lag_warn_s * 1000), F.lit("warning")).otherwise(F.lit("info"))
        .alias("severity"),
        F.col("group").alias("subject"), "start", "end",
        F.concat(F.lit("group "), F.col("group"), F.lit(" read up to "), bytes_text(F.coalesce("max_bytes_lag",
                                                                                              F.lit(0))),
                 F.lit(" ("), duration_text(F.coalesce("max_time_lag_ms", F.lit(0))), F.lit(", "),
                 F.col("max_records_lag").cast("string"), F.lit(" records) behind the tail on broker "),
                 F.col("broker").cast("string"), F.lit(" from "), time_text(F.col("start")), F.lit(" to "),
                 time_text(F.col("end")), cache_text,
                 F.when(F.col("create_time"), F.lit(" (times are the producers' CreateTime)")).otherwise(F.lit("")))
        .alias("summary"),
        F.map_from_arrays(
            F.array(*[F.lit(n) for n in ("broker", "max_records_lag", "max_bytes_lag", "max_time_lag_ms",
                                         "lagging_commits", "partitions", "p99_cache_bytes", "p99_tail_bytes")]),
            F.array(*[F.col(c).cast("double") for c in ("broker", "max_records_lag", "max_bytes_lag",
                                                        "max_time_lag_ms", "lagging_commits", "partitions",
                                                        "_p99_cache", "_p99_tail")])).alias("figures"))
    out = out.unionByName(lag_rows)
    unknown = summary.where(F.col("unknown") > 0).groupBy("group").agg(
        F.sum("unknown").alias("unknown"), F.sum("commits").alias("commits"))
    out = out.unionByName(unknown.select(
        F.lit("lag_unknown").alias("kind"), F.lit("info").alias("severity"), F.col("group").alias("subject"),
        F.lit(None).cast("timestamp").alias("start"), F.lit(None).cast("timestamp").alias("end"),
        F.concat(F.lit("lag in bytes or time of "), F.col("unknown").cast("string"), F.lit(" of "),
                 F.col("commits").cast("string"), F.lit(" commits of group "), F.col("group"),
                 F.lit(" is unknown: the segments holding the committed offsets or the log end then are not in "
                       "the bundle")).alias("summary"),
        F.create_map(F.lit("unknown_commits"), F.col("unknown").cast("double"), F.lit("commits"),
                     F.col("commits").cast("double")).alias("figures")))
    if loss is not None:
        out = out.unionByName(loss.select(
            F.lit("retention_loss").alias("kind"),
            F.when(F.col("kind") == "possibly_skipped", F.lit("info")).otherwise(F.lit("critical")).alias("severity"),
            F.col("group").alias("subject"), F.col("time").alias("start"), F.lit(None).cast("timestamp").alias("end"),
            F.concat(F.lit("group "), F.col("group"),
                     F.when(F.col("kind") == "possibly_skipped", F.lit(" may have lost up to "))
                     .otherwise(F.lit(" lost ")),
                     F.col("records_lost").cast("string"),
                     F.lit(" records of "), F.col("topic"), F.lit("-"), F.col("partition").cast("string"),
                     F.lit(" to retention (committed offset "), F.col("committed_offset").cast("string"),
                     F.lit(", log start "), F.col("log_start_offset").cast("string"),
                     F.when(F.col("exact"), F.lit(")")).otherwise(F.lit("; at most: the log start is the bundle's)")))
            .alias("summary"),
            F.create_map(F.lit("records_lost"), F.col("records_lost").cast("double"), F.lit("committed_offset"),
                         F.col("committed_offset").cast("double"), F.lit("log_start_offset"),
                         F.col("log_start_offset").cast("double"), F.lit("partition"),
                         F.col("partition").cast("double")).alias("figures")))
    if removed is not None:
        out = out.unionByName(removed.select(
            F.lit("offsets_removed").alias("kind"), F.lit("info").alias("severity"), F.col("group").alias("subject"),
            F.col("first_removed").alias("start"), F.col("last_removed").alias("end"),
            F.concat(F.lit("the committed offsets of group "), F.col("group"), F.lit(" for "),
                     F.col("removed_partitions").cast("string"), F.lit(" of its "), F.col("partitions").cast("string"),
                     F.lit(" partitions were removed (expired or deleted) at "), time_text(F.col("first_removed")),
                     F.lit("; its last commit was at "), time_text(F.col("last_commit")),
                     F.when(F.col("all_removed"), F.lit(": the group is gone")).otherwise(F.lit("")))
            .alias("summary"),
            F.create_map(F.lit("removed_partitions"), F.col("removed_partitions").cast("double"),
                         F.lit("partitions"), F.col("partitions").cast("double")).alias("figures")))
    if stuck is not None:
        per_group = stuck.groupBy("group").agg(
            F.countDistinct("topic", "partition").alias("partitions"), F.min("start").alias("start"),
            F.max("end").alias("end"), F.sum("lag_end").alias("lag"), F.max(F.col("to_end").cast("int")).alias("_left"),
            F.sum((F.col("log_end_end") - F.col("log_end_start")).cast("long")).alias("grew"))
        out = out.unionByName(per_group.select(
            F.lit("stuck").alias("kind"), F.lit("warning").alias("severity"), F.col("group").alias("subject"),
            "start", "end",
            F.concat(F.lit("the committed offsets of group "), F.col("group"), F.lit(" stood still on "),
                     F.col("partitions").cast("string"), F.lit(" partition(s) from "), time_text(F.col("start")),
                     F.lit(" to "), time_text(F.col("end")), F.lit(" while the log grew by "),
                     F.col("grew").cast("string"), F.lit(" records (lag then "), F.col("lag").cast("string"),
                     F.lit(" records"),
                     F.when(F.col("_left") == 1, F.lit("; it stopped committing with lag")).otherwise(F.lit("")),
                     F.lit(")")).alias("summary"),
            F.create_map(F.lit("partitions"), F.col("partitions").cast("double"), F.lit("lag"),
                         F.col("lag").cast("double"), F.lit("grew"), F.col("grew").cast("double")).alias("figures")))
    if group_status is not None:
        order = Window.partitionBy("group").orderBy("time")
        flagged = (group_status.where(F.col("min_window") >= burrow_intervals)
                   .withColumn("_next", F.lead("time").over(order))
                   .withColumn("_new", F.coalesce(F.col("status") != F.lag("status").over(order), F.lit(True)))
                   .withColumn("_run", F.sum(F.col("_new").cast("long")).over(
                       order.rowsBetween(Window.unboundedPreceding, 0))))
        runs = (flagged.where(F.col("status").isin("ERR", "WARN"))
                .groupBy("group", "_run", "status").agg(
                    F.min("time").alias("start"), F.max(F.coalesce("_next", "time")).alias("end"),
                    F.count("*").alias("instants"), F.max("stop").alias("stop"), F.max("stall").alias("stall"),
                    F.max("rewind").alias("rewind"), F.max("warn").alias("warn"),
                    F.max("total_lag").alias("max_total_lag")))
        parts = F.concat_ws(", ", *[F.when(F.col(c) > 0, F.concat(F.lit(f"{c.upper()} on "), F.col(c).cast("string"),
                                                                      F.lit(" partition(s)")))
                                    for c in ("stop", "stall", "rewind", "warn")])
        out = out.unionByName(runs.select(
            F.when(F.col("status") == "ERR", F.lit("burrow_err")).otherwise(F.lit("burrow_warn")).alias("kind"),
            F.when(F.col("status") == "ERR", F.lit("warning")).otherwise(F.lit("info")).alias("severity"),
            F.col("group").alias("subject"), "start", "end",
            F.concat(F.lit("Burrow's rules rate group "), F.col("group"), F.lit(" "), F.col("status"),
                     F.lit(" from "), time_text(F.col("start")), F.lit(" to "), time_text(F.col("end")),
                     F.lit(" ("), parts, F.lit("; total lag up to "), F.col("max_total_lag").cast("string"),
                     F.lit(" records)")).alias("summary"),
            F.create_map(*[x for c in ("stop", "stall", "rewind", "warn", "max_total_lag", "instants")
                           for x in (F.lit(c), F.col(c).cast("double"))]).alias("figures")))
    return (out.withColumn("area", F.lit("consumer_lag")).withColumn("subject_type", F.lit("group"))
            .select(*FINDINGS_COLUMNS))


# -------------------------------------------------------------------------------- the area, per bundle


def cache_lags_for(tables: Any) -> DataFrame:
    """:func:`lags_for` with ``cache_bytes`` (:func:`with_cache_bytes` over the bundle's batches), computed once."""
    return tables.derive("consumer_lag.cache_lags",
                         lambda: with_cache_bytes(lags_for(tables), broker_writes(tables.batches)))


def loss_for(tables: Any) -> DataFrame:
    """:func:`retention_loss` of a bundle (LogStartOffset samples when it has them), computed once."""
    return tables.derive("consumer_lag.loss", lambda: retention_loss(
        lags_for(tables), growth_for(tables), log_starts=log_offsets_from_metrics(_metrics(tables), "start"),
        removed=removed_offsets(tables.offsets)))


def group_status_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """Burrow's group status at (at most 400 of) each group's commit instants, computed once per parameters."""
    intervals = int(params.get("burrow_intervals") or burrow_rules.DEFAULT_INTERVALS)
    refresh = int(params.get("burrow_refresh_s") or burrow_rules.DEFAULT_REFRESH_S)
    lags = lags_for(tables)

    def compute() -> DataFrame:
        status = burrow_status(lags, growth_for(tables), instants=group_instants(lags), intervals=intervals,
                               refresh_s=refresh)
        return burrow_group_status(status)

    return tables.derive(f"consumer_lag.burrow_groups:{intervals}:{refresh}", compute)


def _has_commits(tables: Any) -> bool:
    try:
        return not tables.offsets.isEmpty()
    except (KeyError, AttributeError):
        return False


def findings_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """:func:`findings` of a bundle, one per group (and broker), computed once per parameters."""
    from workbench.analysis.findings import empty_findings

    if not _has_commits(tables):
        return empty_findings(tables.spark)
    warn_s = float(params.get("lag_warn_seconds") or DEFAULT_LAG_WARN_S)
    intervals = int(params.get("burrow_intervals") or burrow_rules.DEFAULT_INTERVALS)
    refresh = int(params.get("burrow_refresh_s") or burrow_rules.DEFAULT_REFRESH_S)

    def compute() -> DataFrame:
        commits = commits_for(tables)
        return findings(lags_for(tables), loss=loss_for(tables),
                        removed=removed_groups(commits, removed_offsets(tables.offsets)),
                        cache=page_cache(cache_lags_for(tables)), group_status=group_status_for(tables, params),
                        stuck=stuck_partitions(lags_for(tables), growth_for(tables)),
                        lag_warn_s=warn_s, burrow_intervals=intervals)

    return tables.derive(f"consumer_lag.findings:{warn_s}:{intervals}:{refresh}", compute)


#: A run of overlapping consumer-lag findings of one kind on at least this many groups is one finding
#: (``lag_group_groups``; :func:`workbench.analysis.findings.grouped_findings`).
GROUP_GROUPS = 20

#: How a grouped consumer-lag finding's sentence says what its groups went through.
_GROUPED_PHRASES = {"lag": "read behind the tail", "retention_loss": "lost records to retention",
                    "offsets_removed": "had their committed offsets removed", "burrow_err": "were rated ERR by Burrow",
                    "burrow_warn": "were rated WARN by Burrow", "stuck": "had committed offsets standing still"}


@dataclass(frozen=True, eq=False)   # equal only to itself: no comparison of whole tables
class ConsumerLagAnalysis:
    """The consumer-lag area's analysis of one bundle (:func:`analyse`): its tables and parameters.

    Each output (lags, losses, Burrow statuses, findings) is kept with the tables when first
    computed (:meth:`~workbench.spark.registry.Tables.derive`), so the roles below read them once.
    """

    tables: Any
    params: Mapping[str, Any]

    @property
    def has_commits(self) -> bool:
        """Whether the bundle holds any committed offset."""
        return _has_commits(self.tables)


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> ConsumerLagAnalysis:
    """The consumer-lag area's analysis of a bundle's tables."""
    return ConsumerLagAnalysis(tables, dict(params or {}))


def area_findings(result: ConsumerLagAnalysis) -> DataFrame:
    """The area's findings: :func:`findings_for`, with many groups in trouble at once told as one."""
    from workbench.analysis.findings import grouped_findings

    return grouped_findings(findings_for(result.tables, result.params), phrases=_GROUPED_PHRASES,
                            min_subjects=int(result.params.get("lag_group_groups") or GROUP_GROUPS))


#: How many partitions :func:`view_frames` keeps per frame (the worst by byte lag).
VIEW_TOP_PARTITIONS = 50


def top_partitions(lags: DataFrame, n: int = VIEW_TOP_PARTITIONS) -> DataFrame:
    """The ``n`` group-partitions with the largest byte lag (then time lag), worst first.

    Returns
    -------
    DataFrame
        ``group, topic, partition, broker, commits, max_records_lag, max_bytes_lag, max_time_lag_ms``.
    """
    from pyspark.sql import functions as F

    agg = lags.groupBy("group", "topic", "partition").agg(
        F.max("broker").alias("broker"), F.count("*").cast("long").alias("commits"),
        F.max("records_lag").alias("max_records_lag"), F.max("bytes_lag").alias("max_bytes_lag"),
        F.max("time_lag_ms").alias("max_time_lag_ms"))
    return agg.orderBy(F.col("max_bytes_lag").desc_nulls_last(), F.col("max_time_lag_ms").desc_nulls_last(),
                       "group", "topic", "partition").limit(n)


def view_frames(result: ConsumerLagAnalysis) -> dict[str, DataFrame]:
    """What the consumer-lag view draws: histograms, the page-cache CDF, the worst partitions' series, groups."""
    if not result.has_commits:
        return {}
    tables, params = result.tables, result.params
    lags = cache_lags_for(tables)
    top = top_partitions(lags, int(params.get("lag_top_partitions") or VIEW_TOP_PARTITIONS))
    keep = ["group", "topic", "partition", "commit_time", "committed_offset", "log_end_offset", "records_lag",
            "bytes_lag", "time_lag_ms", "broker"]
    return {
        "histogram_bytes": lag_histogram(lags, metric="bytes", by=("broker", "group", "topic")),
        "histogram_time": lag_histogram(lags, metric="time", by=("broker", "group", "topic")),
        "page_cache": page_cache(lags),
        "cdf": byte_lag_cdf(lags),
        "top_partitions": top,
        "series": lags.join(top.select("group", "topic", "partition"), ["group", "topic", "partition"])
        .select(*keep),
        "groups": group_lag_summary(lags),
        "burrow": group_status_for(tables, params),
    }


def key_figures(result: ConsumerLagAnalysis) -> dict[str, Any]:
    """The summary's figures: groups, commits, the largest lags, records lost, removed offsets, page cache."""
    from pyspark.sql import functions as F

    if not result.has_commits:
        return {"groups": 0, "commits": 0}
    tables = result.tables
    lags = lags_for(tables)
    row = lags.agg(
        F.countDistinct("group").alias("groups"),
        F.countDistinct("group", "topic", "partition").alias("group_partitions"),
        F.count("*").alias("commits"),
        F.max("records_lag").alias("max_records_lag"),
        F.max("bytes_lag").alias("max_bytes_lag"),
        F.max("time_lag_ms").alias("max_time_lag_ms"),
        F.sum((F.col("bytes_lag").isNull() | F.col("time_lag_ms").isNull()).cast("long")).alias("unknown_commits"),
    ).collect()[0].asDict()
    lost = loss_for(tables).agg(F.sum("records_lost").alias("lost")).collect()[0]["lost"]
    removed = removed_groups(commits_for(tables), removed_offsets(tables.offsets)).count()
    p99 = page_cache(cache_lags_for(tables), by=()).where(F.abs(F.col("quantile") - 0.99) < 1e-9).collect()
    out = {k: (0 if v is None else v) for k, v in row.items()}
    out.update(records_lost=int(lost or 0), groups_with_removed_offsets=removed,
               p99_tail_bytes=p99[0]["tail_bytes"] if p99 else None,
               p99_cache_bytes=p99[0]["cache_bytes"] if p99 else None)
    return out


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("consumer_lag", title="Consumer lag in records, bytes and time", order=3,
                  analyse=analyse, findings=area_findings, tables=("offsets",), frames=view_frames,
                  key_figures=key_figures)


_register()
