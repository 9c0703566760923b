"""Each node's position in the metadata log over time, from every source, with its lag behind the leader."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.quorum.appends import APPENDS_COLUMNS, METADATA_TOPIC
from workbench.analysis.sql import sql_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


#: Normalised metric names (``metrics.name``) of a node's position, by the kind of position.
#: Offsets of ``log_end`` and ``high_watermark`` are exclusive (the next offset) in Kafka.
OFFSET_GAUGES: dict[str, tuple[str, ...]] = {
    "applied": ("kafka_controller_kafkacontroller_lastappliedrecordoffset",
                "kafka_controller_kafkacontroller_metadatalastappliedrecordoffset",
                "kafka_server_broker_metadata_metrics_last_applied_record_offset"),
    "committed": ("kafka_controller_kafkacontroller_lastcommittedrecordoffset",
                  "kafka_controller_kafkacontroller_metadatalastcommittedrecordoffset"),
    "log_end": ("kafka_server_raft_metrics_log_end_offset",),
    "high_watermark": ("kafka_server_raft_metrics_high_watermark",),
}
#: The applied record's append time (epoch ms) and Kafka's own lag (now minus that time).
TIME_GAUGES: tuple[str, ...] = ("kafka_controller_kafkacontroller_lastappliedrecordtimestamp",
                                "kafka_controller_kafkacontroller_metadatalastappliedrecordtimestamp",
                                "kafka_server_broker_metadata_metrics_last_applied_record_timestamp")
LAG_GAUGES: tuple[str, ...] = ("kafka_controller_kafkacontroller_lastappliedrecordlagms",
                               "kafka_controller_kafkacontroller_metadatalastappliedrecordlagms",
                               "kafka_server_broker_metadata_metrics_last_applied_record_lag_ms")
_EXCLUSIVE = ("log_end", "high_watermark")

#: A gap between a node's scrapes longer than this many of its usual intervals (and than
#: :data:`MIN_GAP_MS`) means the node did not answer: it held at most what it had before.
GAP_INTERVALS = 2.0
MIN_GAP_MS = 3000
#: How long after a gauge sample's stamp the leader may have appended the record the sample
#: reports (its linger, 25 ms, and the waits of a loaded machine). Shorter than any election
#: (at least the 2 s fetch timeout): a frozen node's last answer is held only to what the log
#: had by then, so a write an election dropped (the active controller's applied offset counts
#: writes when scheduled) is not taken for the new leader's record at that offset.
ANSWER_SLACK_MS = 500

#: Columns of :func:`node_offsets`.
OFFSETS_COLUMNS = ("node_id", "role", "time", "source", "kind", "offset", "record_time", "leader_offset",
                   "leader_time", "offset_lag", "time_lag_ms", "missing_since", "behind_ms", "reported_lag_ms",
                   "reported_offset_lag", "note")


def _metric_positions(metrics: DataFrame) -> DataFrame:
    """Gauge samples of a node's position, one row per (node, export file, sample time, kind)."""
    names = {n: kind for kind, ns in OFFSET_GAUGES.items() for n in ns}
    kind_col = F.lit(None).cast("string")
    for n, k in names.items():
        kind_col = F.when(F.col("name") == n, F.lit(k)).otherwise(kind_col)
    wanted = [*names, *TIME_GAUGES, *LAG_GAUGES]
    rows = metrics.where(F.col("name").isin(wanted) & F.col("timestamp").isNotNull() & F.col("node_id").isNotNull())
    rows = rows.withColumn("_v", F.when(~F.isnan("value"), F.col("value")))
    keys = ["node_id", "path", "format", "timestamp"]
    per_sample = rows.groupBy(*keys).agg(
        F.max(F.when(F.col("name").isin(*TIME_GAUGES) & (F.col("_v") > 0), F.col("_v"))).alias("_ts_ms"),
        F.max(F.when(F.col("name").isin(*LAG_GAUGES), F.col("_v"))).alias("_lag"))
    offsets = (rows.withColumn("kind", kind_col).where(F.col("kind").isNotNull() & F.col("_v").isNotNull())
               .groupBy(*keys, "kind").agg(F.max("_v").alias("_o")))
    offsets = offsets.withColumn("offset", (F.when(F.col("kind").isin(*_EXCLUSIVE), F.col("_o") - 1)
                                            .otherwise(F.col("_o"))).cast("long")).where(F.col("offset") >= 0)
    joined = offsets.join(per_sample, keys, "left")
    applied = F.col("kind") == "applied"
    return joined.select(
        F.col("node_id").cast("int"), F.col("timestamp").alias("time"), F.col("format").alias("source"), "kind",
        "offset",
        F.when(applied, F.timestamp_millis(F.col("_ts_ms").cast("long"))).alias("reported_time"),
        F.when(applied, F.col("_lag").cast("long")).alias("reported_lag_ms"),
        F.lit(None).cast("long").alias("reported_offset_lag"), F.lit(None).cast("string").alias("note"))


def _unanswered(positions: DataFrame, moved: DataFrame | None = None) -> DataFrame:
    """Where a node's scrapes stopped answering (a frozen or overloaded JVM): its last offset, repeated.

    For each node and export format, the usual interval is the median between its ``applied``
    samples; a gap longer than :data:`GAP_INTERVALS` of them (and :data:`MIN_GAP_MS`) gets one
    ``unanswered`` row per missed interval, each with the offset of the last answer and its time
    (``answered_at``): the node held at most that (an unanswered node is not shown to be current). A series that stops
    while other nodes' go on (the scraper gave up on the node) runs to the format's last sample.
    A gap ends where the node answered through another export (a scraper held up by another
    node, not this one, is no evidence; an answer within one usual interval of the last and at
    its offset is of the same moment, e.g. both scrapers answered just before a freeze, and does
    not end it), or where ``moved`` (other observations of the node: the leader's
    ``describe --replication`` view of its fetches, a snapshot the node wrote) shows it past the
    offset it last answered after a silence that is itself a gap: it was running again, whatever the stalled
    scraper says (a scraper blocked on a frozen JVM may take seconds to answer again once it
    resumed). A stale position there (the leader repeats a frozen follower's last fetch), or one
    seen just after the last answer, is no evidence.
    """
    series = Window.partitionBy("node_id", "source").orderBy("time")
    last_of_source = F.max("time").over(Window.partitionBy("source"))
    applied = (positions.where(F.col("kind") == "applied")
               .withColumn("_next", F.coalesce(F.lead("time").over(series), last_of_source))
               .withColumn("_gap", F.unix_millis("_next") - F.unix_millis("time")))
    usual = applied.groupBy("node_id", "source").agg(F.percentile_approx("_gap", 0.5, 1000).alias("_usual"))
    threshold = F.greatest(F.lit(MIN_GAP_MS), F.col("_usual") * GAP_INTERVALS)
    gaps = applied.join(usual, ["node_id", "source"]).where((F.col("_usual") > 0) & (F.col("_gap") > threshold))

    def evidence(frame: DataFrame, any_offset: bool) -> DataFrame:
        return frame.select(F.col("node_id").alias("_a_node"), F.col("source").alias("_a_source"),
                            F.col("time").alias("_a_time"), F.col("offset").alias("_a_offset"),
                            F.lit(any_offset).alias("_a_any"))

    answers = evidence(positions.where(F.col("kind") == "applied"), True)
    if moved is not None:
        answers = answers.unionByName(evidence(moved, False))
    # moved evidence counts once the silence before it is itself a gap: a position seen just
    # after the last answer says nothing about the time after it
    moved_on = ((F.col("_a_offset") > F.col("offset"))
                & (F.unix_millis("_a_time") - F.unix_millis("time") > threshold))
    # an answer through another export within one usual interval of the last, at the same
    # offset, is of the same moment: it says nothing about the time after it (a node frozen
    # right after both answered)
    later = ((F.unix_millis("_a_time") - F.unix_millis("time") > F.col("_usual"))
             | (F.col("_a_offset") > F.col("offset")))
    answered = ((F.col("_a_node") == F.col("node_id")) & (F.col("_a_source") != F.col("source"))
                & (F.col("_a_time") > F.col("time")) & (F.col("_a_time") < F.col("_next"))
                & ((F.col("_a_any") & later) | moved_on))
    # a gap ends where the node answered through another export, or was seen past its last answer
    cut = (gaps.join(answers, answered, "left")
           .groupBy("node_id", "source", "time", "offset", "_next", "_usual").agg(F.min("_a_time").alias("_answer"))
           .withColumn("_next", F.coalesce("_answer", "_next"))
           .withColumn("_gap", F.unix_millis("_next") - F.unix_millis("time")))
    gaps = cut.where(F.col("_gap") > threshold)
    missed = gaps.withColumn("_k", F.explode(F.sequence(F.lit(1), F.least(
        F.floor(F.col("_gap") / F.col("_usual")).cast("int") - 1, F.lit(100_000)))))
    return missed.select(
        "node_id", (F.col("time") + F.make_dt_interval(secs=F.col("_k") * F.col("_usual") / 1000.0)).alias("time"),
        "source", F.lit("unanswered").alias("kind"), "offset", F.lit(None).cast("timestamp").alias("reported_time"),
        F.lit(None).cast("long").alias("reported_lag_ms"), F.lit(None).cast("long").alias("reported_offset_lag"),
        F.lit(None).cast("string").alias("note"), F.col("time").alias("answered_at"))


def _replication_positions(replication: DataFrame) -> DataFrame:
    """``describe --replication`` rows as positions at the moment the leader answered."""
    per_capture = Window.partitionBy("path")
    leader_now = F.max(F.when(F.lower("status") == "leader", F.col("last_fetch_time"))).over(per_capture)
    rows = replication.where(F.col("node_id").isNotNull() & F.col("log_end_offset").isNotNull())
    return rows.select(
        F.col("node_id").cast("int"), F.coalesce(leader_now, F.col("captured")).alias("time"),
        F.lit("describe_replication").alias("source"),
        F.when(F.lower("status") == "leader", F.lit("log_end")).otherwise(F.lit("fetched")).alias("kind"),
        (F.col("log_end_offset") - 1).alias("offset"), F.lit(None).cast("timestamp").alias("reported_time"),
        F.lit(None).cast("long").alias("reported_lag_ms"), F.col("lag").alias("reported_offset_lag"),
        F.lit(None).cast("string").alias("note"))


def _snapshot_positions(snapshots: DataFrame) -> DataFrame:
    """Snapshots a node wrote (header time: the node's clock), and copies it fetched from the leader.

    A snapshot whose end offset, epoch and header time equal another node's is one file written
    once and fetched by the others: its time says nothing about when they had it (``snapshot_copy``).
    """
    snaps = snapshots.where((F.col("file_kind") == "snapshot") & F.col("end_offset").isNotNull()
                            & F.col("header_time").isNotNull() & F.col("node_id").isNotNull())
    same = Window.partitionBy("end_offset", "epoch", "header_time")
    first = F.min("node_id").over(same)
    count = F.count("*").over(same)
    kind = F.when((count > 1) & (F.col("node_id") != first), F.lit("snapshot_copy")).otherwise(F.lit("snapshot"))
    return snaps.select(
        F.col("node_id").cast("int"), F.col("header_time").alias("time"), F.lit("snapshot").alias("source"),
        kind.alias("kind"), (F.col("end_offset") - 1).alias("offset"),
        F.col("last_contained_time").alias("reported_time"), F.lit(None).cast("long").alias("reported_lag_ms"),
        F.lit(None).cast("long").alias("reported_offset_lag"),
        F.when(kind == "snapshot_copy", F.concat(F.lit("the same snapshot as node "), first.cast("string"),
                                                 F.lit("'s: fetched, not written here")))
        .alias("note"))


def _replica_ends(batches: DataFrame) -> DataFrame:
    """Each replica's own log end: the last batch it holds (at the leader's append time of it)."""
    from workbench.analysis.logs import log_growth

    growth = log_growth(batches, topics=[METADATA_TOPIC], per_replica=True)
    last = growth.groupBy("node_id").agg(F.max_by(F.struct("end_offset", "reached"), "end_offset").alias("b"))
    return last.select(
        F.col("node_id").cast("int"), F.col("b.reached").alias("time"), F.lit("replica_log").alias("source"),
        F.lit("replica_end").alias("kind"), (F.col("b.end_offset") - 1).alias("offset"),
        F.col("b.reached").alias("reported_time"), F.lit(None).cast("long").alias("reported_lag_ms"),
        F.lit(None).cast("long").alias("reported_offset_lag"),
        F.lit("the last record this node's log holds, at the leader's append time").alias("note"))


def _known_offsets(known: DataFrame) -> DataFrame:
    """:func:`offset_times` with what the lookups of :func:`node_offsets` read, kept as rows: ``reach``
    (the leader's last record by ``time``: the largest offset appended by then) and ``reach_time``
    (its append time), and ``next_time`` (the append time of the next known offset)."""
    by_time = "OVER (PARTITION BY _k ORDER BY time, offset ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    reach = f"max(struct(offset, time)) {by_time}"
    return (known.selectExpr("1 AS _k", "offset", "time")
            .selectExpr("_k", "offset", "time", f"{reach}.offset AS reach", f"{reach}.time AS reach_time",
                        "lead(time) OVER (PARTITION BY _k ORDER BY offset) AS next_time")
            .localCheckpoint(eager=True))


def _leader_and_record_times(obs: DataFrame, known: DataFrame) -> DataFrame:
    """Each observation with the leader's last record at its ``time`` (``leader_offset``, ``leader_time``:
    the last known reach at or before it) and the append times of its ``offset`` (``record_time``: the
    first known offset at or after it; offsets grow with time) and of the next record (``missing_since``),
    in one pass over the observations and the known offsets together."""
    columns = obs.columns
    left = obs.selectExpr("1 AS _k", "time AS _t", "offset AS _o", "1 AS _side",
                          f"struct({', '.join(sql_name(c) for c in columns)}) AS _l",
                          "CAST(NULL AS STRUCT<reach: BIGINT, reach_time: TIMESTAMP>) AS _r",
                          "CAST(NULL AS STRUCT<offset: BIGINT, time: TIMESTAMP, next_time: TIMESTAMP>) AS _a")
    right = known.selectExpr("_k", "time AS _t", "offset AS _o", "0 AS _side",
                             f"CAST(NULL AS {left.schema['_l'].dataType.simpleString()}) AS _l",
                             "struct(reach, reach_time) AS _r", "struct(offset, time, next_time) AS _a")
    # right rows sort before left rows of the same key: "at or before" (as in workbench.analysis.logs.asof)
    frame = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
    filled = left.unionByName(right).selectExpr(
        "_side", "_l",
        f"last(_r, true) OVER (PARTITION BY _k ORDER BY _t, _side, _r.reach {frame}) AS _reach",
        f"last(_a, true) OVER (PARTITION BY _k ORDER BY _o DESC NULLS FIRST, _side {frame}) AS _at")
    return filled.where("_side = 1").selectExpr(
        *[f"_l.{sql_name(c)} AS {sql_name(c)}" for c in columns],
        "_reach.reach AS leader_offset", "_reach.reach_time AS leader_time", "_at.time AS record_time",
        "CASE WHEN _at.offset = _l.offset THEN _at.next_time ELSE _at.time END AS missing_since")


def offset_times(appends: DataFrame, positions: DataFrame | None = None) -> DataFrame:
    """Known append times of metadata log offsets: the log's batches, snapshots and gauge readings.

    The log gives each batch's last offset and append time; a snapshot gives its last offset and
    the timestamp of that record (``lastContainedLogTimestamp``); a KIP-835 gauge sample gives an
    applied offset and that record's timestamp. The log is the authority where it reaches: the
    other sources date only offsets before its first one (a gauge's offset and timestamp are read
    one after the other, so a sample may pair an offset with the previous batch's time).

    Returns
    -------
    DataFrame
        One row per offset: ``offset, time`` (the earliest time any source gives).
    """
    pairs = appends.select(F.col("last_offset").alias("offset"), "time")
    if positions is not None:
        first = appends.agg(F.min("base_offset").alias("_first"))
        older = (positions.where(F.col("kind").isin("applied", "snapshot", "snapshot_copy")
                                 & F.col("reported_time").isNotNull())
                 .crossJoin(first).where(F.col("_first").isNull() | (F.col("offset") < F.col("_first")))
                 .select("offset", F.col("reported_time").alias("time")))
        pairs = pairs.unionByName(older)
    return pairs.where(F.col("offset").isNotNull() & F.col("time").isNotNull()).groupBy("offset").agg(
        F.min("time").alias("time"))


def node_offsets(appends: DataFrame, *, metrics: DataFrame | None = None, replication: DataFrame | None = None,
                 snapshots: DataFrame | None = None, batches: DataFrame | None = None,
                 roles: DataFrame | None = None) -> DataFrame:
    """Every observation of a node's position in the metadata log, with its lag behind the leader.

    Sources (``source``) and kinds of position (``kind``):

    * scraped gauges (``jmxtool``, ``prometheus_text``, ``prometheus_json``): ``applied``
      (controllers' ``LastAppliedRecordOffset``, brokers' ``last-applied-record-offset``),
      ``committed`` (``LastCommittedRecordOffset``), ``log_end`` and ``high_watermark``
      (``raft-metrics``), and ``unanswered``: where a node's scrapes stopped for longer than
      :data:`GAP_INTERVALS` usual intervals, one row per missed interval with its last answered
      offset (a frozen node applies nothing), or the log's end :data:`ANSWER_SLACK_MS` after that
      answer if lower (a frozen active controller's last write may be one an election dropped);
    * ``describe_replication``: each voter's and observer's log end as the leader saw it at its
      last fetch (``fetched``; the leader's own row is ``log_end``), at the moment the leader
      answered;
    * ``snapshot``: a snapshot the node wrote (``snapshot``, at its header time) or fetched from
      the leader (``snapshot_copy``: its time is the leader's);
    * ``replica_log``: the last record of the node's own log (``replica_end``).

    Offsets are of the last record held (Kafka's exclusive log end and high watermark minus one).

    Parameters
    ----------
    appends : DataFrame
        From :func:`log_appends`: the leader's log end at each moment.
    metrics, replication, snapshots, batches : DataFrame, optional
        The ``metrics``, ``tool_quorum_replication``, ``snapshots`` and ``batches`` tables.
    roles : DataFrame, optional
        From :func:`node_roles`.

    Returns
    -------
    DataFrame
        One row per observation, :data:`OFFSETS_COLUMNS`: ``node_id, role, time, source, kind,
        offset``, ``record_time`` (when the leader appended that record), ``leader_offset`` and
        ``leader_time`` (the last record of the leader's log at ``time``, and when it was
        appended), ``offset_lag`` (leader_offset - offset), ``time_lag_ms`` (leader_time -
        record_time), ``missing_since`` (when the first record the node lacked was appended) and
        ``behind_ms`` (``time`` - ``missing_since``), ``reported_lag_ms`` (Kafka's own
        ``LastAppliedRecordLagMs``/``last-applied-record-lag-ms``), ``reported_offset_lag`` (the
        quorum tool's ``Lag``), ``note`` (``ahead of the log``: a sample stamped before the
        leader appended the offset it reports, e.g. a scrape answered after a pause, is not used
        to judge the node).

    Examples
    --------
    >>> node_offsets(appends, metrics=tables.metrics).where("kind = 'applied'").show()    # doctest: +SKIP
    """
    from workbench.analysis.logs import asof

    require_columns(appends, APPENDS_COLUMNS, "node_offsets")
    spark = appends.sparkSession
    schema = ("node_id int, time timestamp, source string, kind string, offset long, reported_time timestamp, "
              "reported_lag_ms long, reported_offset_lag long, note string")
    parts = spark.createDataFrame([], schema)
    fetches = _replication_positions(replication) if replication is not None else None
    written = _snapshot_positions(snapshots) if snapshots is not None else None
    parts = parts.withColumn("answered_at", F.lit(None).cast("timestamp"))
    if metrics is not None:
        gauges = _metric_positions(metrics)
        # a snapshot the node wrote itself (its own clock) shows it running as much as a fetch does
        moved = fetches
        if written is not None:
            own = written.where(F.col("kind") == "snapshot")
            moved = own if moved is None else moved.unionByName(own, allowMissingColumns=True)
        parts = (parts.unionByName(gauges, allowMissingColumns=True)
                 .unionByName(_unanswered(gauges, moved)))
    if fetches is not None:
        parts = parts.unionByName(fetches, allowMissingColumns=True)
    if written is not None:
        parts = parts.unionByName(written, allowMissingColumns=True)
    if batches is not None:
        parts = parts.unionByName(_replica_ends(batches), allowMissingColumns=True)
    # the observations are read by both passes below: kept once (a few rows a node and a second),
    # so the passes plan and run from rows, not from their lineage
    parts = parts.where(F.col("time").isNotNull() & F.col("offset").isNotNull()).localCheckpoint(eager=True)
    known = _known_offsets(offset_times(appends, parts))
    # an unanswered node held at most what the log had shortly after its last answer: an offset
    # the log reached only later is another record there (a write an election dropped)
    unanswered = parts.where(F.col("answered_at").isNotNull()).selectExpr(
        "*", "1 AS _k", f"answered_at + INTERVAL {ANSWER_SLACK_MS} MILLISECONDS AS _held_at")
    unanswered = asof(unanswered, known, by=["_k"], left_time="_held_at", right_time="time", columns=["reach"])
    unanswered = unanswered.selectExpr(*["least(offset, coalesce(reach, offset)) AS offset" if c == "offset"
                                         else sql_name(c) for c in parts.columns])
    obs = _leader_and_record_times(parts.where(F.col("answered_at").isNull()).unionByName(unanswered), known)
    record_time = F.coalesce("record_time", "reported_time")
    behind = F.col("leader_offset") > F.col("offset")
    out = (obs
           .withColumn("record_time", record_time)
           .withColumn("offset_lag", F.col("leader_offset") - F.col("offset"))
           .withColumn("time_lag_ms", F.greatest(F.lit(0), F.unix_millis("leader_time") - F.unix_millis("record_time")))
           .withColumn("missing_since", F.when(behind, F.col("missing_since")))
           .withColumn("behind_ms", F.when(behind, F.greatest(F.lit(0), F.unix_millis("time")
                                                               - F.unix_millis("missing_since"))))
           .withColumn("note", F.coalesce("note", F.when(F.col("offset") > F.col("leader_offset")
                                                         + F.lit(0), F.lit("ahead of the log")))))
    if roles is not None:
        out = out.join(roles, "node_id", "left")
    else:
        out = out.withColumn("role", F.lit(None).cast("string"))
    return out.select(*OFFSETS_COLUMNS).orderBy("node_id", "time", "source", "kind")


#: Columns of :func:`apply_lag`.
APPLY_LAG_COLUMNS = ("node_id", "role", "source", "time", "offset", "record_time", "lag_ms", "reported_lag_ms",
                     "difference_ms", "agrees", "caught_up", "last_append_ms", "next_append_ms")
#: Computed and reported apply lag within this many ms agree: a scrape reads its gauges over a
#: few ms (JmxTool) to tens of ms (an exporter's scrape), a record applied meanwhile moves the
#: gauge by up to one idle interval (500 ms by default).
APPLY_LAG_AGREE_MS = 50


def apply_lag(offsets: DataFrame, appends: DataFrame) -> DataFrame:
    """KIP-835's ``LastAppliedRecordLagMs`` computed from the metadata log beside Kafka's own.

    For every sample of a node's applied offset that came with Kafka's lag gauge: ``lag_ms`` is the
    sample time less the append time of the record at that offset in the log (the gauge's
    definition: now less the last applied record's timestamp), ``reported_lag_ms`` Kafka's value,
    ``difference_ms`` the second less the first, ``agrees`` within :data:`APPLY_LAG_AGREE_MS`.
    The columns that explain a difference:
    ``caught_up`` (the node held the leader's last record), ``last_append_ms`` and
    ``next_append_ms`` (how long before and after the sample the leader appended a record: a
    gauge read while one is applied may name the record before or after it, about one idle
    interval apart, and a scrape reads its gauges over its own duration).

    Parameters
    ----------
    offsets : DataFrame
        :func:`node_offsets` (its ``applied`` rows with ``reported_lag_ms`` are read).
    appends : DataFrame
        :func:`workbench.analysis.quorum.log_appends` (the leader's batches and their times).
    """
    from workbench.analysis.logs import asof

    require_columns(offsets, OFFSETS_COLUMNS, "apply_lag")
    require_columns(appends, APPENDS_COLUMNS, "apply_lag")
    rows = (offsets.where((F.col("kind") == "applied") & F.col("reported_lag_ms").isNotNull()
                          & F.col("record_time").isNotNull())
            .select("node_id", "role", "source", "time", "offset", "record_time", "leader_offset", "reported_lag_ms")
            .withColumn("_k", F.lit(1)).withColumn("_neg", -F.unix_millis("time")))
    times = appends.where(F.col("time").isNotNull()).select(F.lit(1).alias("_k"), F.col("time").alias("_at"),
                                                            (-F.unix_millis("time")).alias("_neg_at"))
    rows = asof(rows, times.select("_k", "_at"), by=["_k"], left_time="time", right_time="_at", columns=["_at"],
                suffix="_before")
    rows = asof(rows, times.select("_k", "_neg_at"), by=["_k"], left_time="_neg", right_time="_neg_at",
                columns=["_neg_at"], suffix="_after")
    lag = F.unix_millis("time") - F.unix_millis("record_time")
    return rows.select(
        "node_id", "role", "source", "time", "offset", "record_time", lag.alias("lag_ms"),
        F.col("reported_lag_ms").cast("long").alias("reported_lag_ms"),
        (F.col("reported_lag_ms") - lag).cast("long").alias("difference_ms"),
        (F.abs(F.col("reported_lag_ms") - lag) <= APPLY_LAG_AGREE_MS).alias("agrees"),
        (F.col("offset") >= F.col("leader_offset")).alias("caught_up"),
        (F.unix_millis("time") - F.unix_millis("_at_before")).alias("last_append_ms"),
        (-F.col("_neg_at_after") - F.unix_millis("time")).alias("next_append_ms"),
    ).orderBy("node_id", "source", "time")
