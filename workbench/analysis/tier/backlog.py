"""Each partition's segment history and backlog series (:mod:`.model` run per partition), roll-ups, gaps, episodes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

import workbench.analysis.tier.model as model
from workbench.analysis._checks import require_columns
from workbench.analysis.tier.inputs import (
    _ms,
    _tiered_topics_of,
    _ts,
    bundle_end_ms,
    copy_attempts,
    leader_changes,
    local_segments,
    settings_for,
)

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import Column, DataFrame


_TIMES = ("max_ts", "created", "rolled", "rolled_latest", "first_copy_started", "uploaded", "remote_deleted",
          "remote_delete_finished", "covered", "log_start_passed", "retention_due", "local_due", "local_deleted",
          "local_deleted_latest", "gap_start", "gap_end")
#: Columns of :func:`segment_history`.
HISTORY_SCHEMA = (
    "topic string, partition int, base_offset long, end_offset long, records long, bytes long, "
    "max_timestamp timestamp, source string, in_bundle boolean, active boolean, created timestamp, "
    "rolled timestamp, rolled_latest timestamp, roll_evidence string, attempts int, failed_attempts int, "
    "first_copy_started timestamp, uploaded timestamp, segment_id string, uploaded_by int, "
    "remote_deleted timestamp, remote_delete_finished timestamp, covered timestamp, log_start_passed timestamp, "
    "retention_due timestamp, local_due timestamp, local_deleted timestamp, local_deleted_latest timestamp, "
    "gap_start timestamp, gap_end timestamp, broker int"
)
_SERIES_TIMES = ("time", "upload_oldest_rolled", "kafka_copy_after_copy_at", "kafka_copy_after_run_at",
                 "kafka_delete_at")
_SERIES_INTS = ("broker", "upload_segments", "uncertain_segments", "phantom_segments", "copies_in_flight",
                "copies_failed", "kafka_copy_after_copy_segments", "kafka_copy_after_run_segments",
                "delete_segments", "deleting_segments", "overdue_segments", "kafka_delete_segments",
                "local_segments", "remote_segments", "remote_metadata_count", "gap_ranges")
_SERIES_LONGS = ("upload_records", "upload_bytes", "uncertain_bytes", "phantom_bytes", "kafka_copy_after_copy_bytes",
                 "kafka_copy_after_run_bytes", "delete_records", "delete_bytes", "kafka_delete_bytes", "log_start",
                 "log_end", "local_start", "local_bytes", "remote_start", "remote_end", "remote_bytes",
                 "remote_listed_bytes", "remote_listed_v4_bytes", "overlap_offsets", "gap_offsets")


def _series_type(column: str) -> str:
    if column in _SERIES_TIMES:
        return "timestamp"
    if column in _SERIES_INTS:
        return "int"
    return "long"


#: Columns of :func:`backlog_series`.
SERIES_SCHEMA = "topic string, partition int, " + ", ".join(f"{c} {_series_type(c)}" for c in model.SERIES_COLUMNS)
#: Measures a roll-up adds over partitions (plus the partitions counted by :data:`ROLLUP_COUNTS`).
ROLLUP_SUMS = (
    "upload_segments", "upload_records", "upload_bytes", "uncertain_segments", "uncertain_bytes",
    "phantom_segments", "phantom_bytes", "copies_in_flight", "copies_failed",
    "kafka_copy_after_copy_segments", "kafka_copy_after_copy_bytes", "kafka_copy_after_run_segments",
    "kafka_copy_after_run_bytes", "delete_segments", "delete_records", "delete_bytes", "deleting_segments",
    "overdue_segments", "kafka_delete_segments", "kafka_delete_bytes", "local_segments", "local_bytes",
    "remote_segments", "remote_bytes", "remote_listed_bytes", "remote_listed_v4_bytes", "remote_metadata_count",
    "gap_offsets", "gap_ranges",
)
#: Partition counts of a roll-up: name -> the per-partition condition.
ROLLUP_COUNTS = {
    "partitions": "true",
    "partitions_uploading_behind": "upload_segments > 0",
    "partitions_deleting_behind": "delete_segments > 0",
    "partitions_with_gap": "gap_ranges > 0",
}
#: Times a roll-up keeps the latest of (a Kafka gauge's last modelled update).
ROLLUP_LATEST = ("kafka_copy_after_copy_at", "kafka_copy_after_run_at", "kafka_delete_at")
_KERNEL_INPUT = (
    "kind string, topic string, partition int, segment_id string, start_offset long, end_offset long, "
    "size_bytes double, max_ts double, broker int, copy_started double, copy_finished double, "
    "delete_started double, delete_finished double, node_id int, base_offset long, last_offset double, "
    "bytes double, first_ts double, records double, active boolean, time double, leader int"
)


def _kernel_input(attempts: DataFrame, local: DataFrame, leaders: DataFrame | None) -> DataFrame:
    names = [c.split()[0] for c in _KERNEL_INPUT.split(", ")]
    types = dict(c.split() for c in _KERNEL_INPUT.split(", "))

    def shaped(frame: DataFrame, kind: str, given: dict[str, Column]) -> DataFrame:
        cols = []
        for name in names:
            if name == "kind":
                cols.append(F.lit(kind).alias("kind"))
            elif name in given:
                cols.append(given[name].cast(types[name]).alias(name))
            else:
                cols.append(F.lit(None).cast(types[name]).alias(name))
        return frame.select(*cols)

    parts = [
        shaped(attempts, "attempt", {
            "topic": F.col("topic"), "partition": F.col("partition"), "segment_id": F.col("segment_id"),
            "start_offset": F.col("start_offset"), "end_offset": F.col("end_offset"),
            "size_bytes": F.col("size_bytes"), "max_ts": _ms("max_timestamp"), "broker": F.col("broker"),
            "copy_started": _ms("copy_started"), "copy_finished": _ms("copy_finished"),
            "delete_started": _ms("delete_started"), "delete_finished": _ms("delete_finished")}),
        shaped(local, "local", {c: F.col(c) for c in ("topic", "partition", "node_id", "base_offset", "last_offset",
                                                      "bytes", "max_ts", "first_ts", "records", "active")}),
    ]
    if leaders is not None:
        parts.append(shaped(leaders, "leader", {c: F.col(c) for c in ("topic", "partition", "time", "leader")}))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def _split(pdf: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[tuple[float, int]]]:
    """A partition's kernel input as its copy attempts, local segments and leader changes (a change
    whose time or leader is unknown is left out: it cannot be placed or named)."""
    attempts = pdf[pdf["kind"] == "attempt"][list(model.ATTEMPT_COLUMNS)].reset_index(drop=True)
    local = pdf[pdf["kind"] == "local"][list(model.LOCAL_COLUMNS)].reset_index(drop=True)
    lead = pdf[(pdf["kind"] == "leader") & pdf["time"].notna() & pdf["leader"].notna()]
    lead = lead.sort_values("time", kind="stable")
    leaders = [(float(t), int(b)) for t, b in zip(lead["time"], lead["leader"], strict=True)]
    compact: list[tuple[float, int]] = []
    for t, b in leaders:
        if not compact or compact[-1][1] != b:
            compact.append((t, b))
    return attempts, local, compact


def _settings(tables: Any, topics: list[str]) -> tuple[dict[str, model.TopicSettings], model.Env]:
    """:func:`settings_for` the topics, collected once per loaded bundle (both kernels and the
    task interval read it)."""
    from workbench.spark.registry import kept_with

    return kept_with(tables, f"tier.settings:{sorted(topics)}", lambda: settings_for(tables["configs"], topics))


def _settings_and_end(tables: Any, topics: list[str]) -> tuple[dict[str, model.TopicSettings], model.Env]:
    """:func:`_settings` with the bundle's end (:func:`bundle_end_ms`), also collected once."""
    from workbench.spark.registry import kept_with

    settings, env = _settings(tables, topics)
    end = kept_with(tables, f"tier.bundle_end:{sorted(topics)}", lambda: bundle_end_ms(tables, topics))
    return settings, model.Env(env.task_interval_ms, env.check_interval_ms, end)


def _run_kernel(tables: Any, params: Mapping[str, Any], which: str) -> DataFrame:
    """Apply the history (``which='history'``) or series kernel to every tiered partition."""
    topics = _tiered_topics_of(tables)
    spark = tables.spark
    schema = HISTORY_SCHEMA if which == "history" else SERIES_SCHEMA
    if not topics:
        return spark.createDataFrame([], schema)
    attempts = copy_attempts(tables["remote"]).where(F.col("topic").isin(topics))
    local = local_segments(tables["inventory"], tables["batches"], topics)
    leaders = leader_changes(tables, params, topics)
    settings, env = _settings_and_end(tables, topics)
    return apply_kernel(_kernel_input(attempts, local, leaders), settings, env, which)


_HISTORY_KERNEL_TYPES: dict[str, str] = {
    **{c: "double" for c in _TIMES}, "base_offset": "long", "end_offset": "long", "records": "long",
    "bytes": "double", "source": "string", "in_bundle": "boolean", "active": "boolean", "roll_evidence": "string",
    "attempts": "int", "failed_attempts": "int", "segment_id": "string", "uploaded_by": "int", "broker": "int",
}


def _kernel_schema(which: str) -> list[tuple[str, str]]:
    if which == "history":
        cols = [(c, _HISTORY_KERNEL_TYPES[c]) for c in model.HISTORY_COLUMNS]
    else:
        cols = [(c, "double" if c in _SERIES_TIMES else ("int" if c in _SERIES_INTS else "double"))
                for c in model.SERIES_COLUMNS]
    return [("topic", "string"), ("partition", "int"), *cols]


def apply_kernel(kernel_input: DataFrame, settings: Mapping[str, model.TopicSettings], env: model.Env,
                 which: str) -> DataFrame:
    """Run :func:`model.build_history` (``which='history'``) or :func:`model.build_series` per partition.

    ``kernel_input`` holds, per partition, its copy attempts, local segments and leader changes
    (``kind`` = ``attempt``, ``local``, ``leader``); ``settings`` maps each topic to its settings.
    """
    import pandas as pd

    if which not in ("history", "series"):
        raise ValueError(f"which must be 'history' or 'series', got {which!r}")
    fields = _kernel_schema(which)
    udf_schema = ", ".join(f"{n} {t}" for n, t in fields)
    empty = model.TopicSettings()

    def kernel(pdf: pd.DataFrame) -> pd.DataFrame:
        topic, partition = pdf["topic"].iloc[0], pdf["partition"].iloc[0]
        topic, partition = (None if pd.isna(topic) else str(topic)), (None if pd.isna(partition) else int(partition))
        attempts, local, leaders = _split(pdf)
        s = settings.get(topic, empty)
        history = model.build_history(attempts, local, s, env, leaders)
        frame = history if which == "history" else model.build_series(history, attempts, s, env, leaders)
        frame = frame.copy()
        frame.insert(0, "partition", partition)
        frame.insert(0, "topic", topic)
        for name, kind in fields:
            if kind in ("int", "long"):
                frame[name] = pd.array([None if v is None or (isinstance(v, float) and math.isnan(v)) else int(v)
                                        for v in frame[name]], dtype="Int64")
            elif kind == "double":
                frame[name] = pd.to_numeric(frame[name], errors="coerce").astype("float64")
        return frame[[n for n, _t in fields]]

    out = kernel_input.groupBy("topic", "partition").applyInPandas(kernel, udf_schema)
    final = HISTORY_SCHEMA if which == "history" else SERIES_SCHEMA
    selected = []
    for spec in final.split(", "):
        name, kind = spec.split()
        source = "max_ts" if (which == "history" and name == "max_timestamp") else name
        if kind == "timestamp":
            selected.append(_ts(source).alias(name))
        elif kind in ("int", "long"):
            selected.append(F.col(source).cast(kind).alias(name))
        else:
            selected.append(F.col(source).alias(name))
    return out.select(*selected)


def segment_history(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """One row per segment of each tiered partition's log, with its life cycle (computed once per bundle).

    Rows of :data:`HISTORY_SCHEMA`: ``topic, partition, base_offset, end_offset`` (inclusive),
    ``records`` (offsets), ``bytes`` (null: unknown), ``max_timestamp``, ``source`` (``remote``,
    ``local``, ``remote+local``, ``unknown``: offsets no event and no file holds), ``in_bundle``,
    ``active`` (at the end), ``created``, ``rolled``, ``rolled_latest``, ``roll_evidence`` (what fixed
    ``rolled``), ``attempts``, ``failed_attempts``, ``first_copy_started``, ``uploaded`` (first
    COPY_SEGMENT_FINISHED covering it), ``segment_id, uploaded_by``, ``remote_deleted``,
    ``remote_delete_finished``, ``covered`` (Kafka's highest copied offset reached its end: local
    deletion allowed), ``log_start_passed``, ``retention_due`` (remote), ``local_due``,
    ``local_deleted``, ``local_deleted_latest``, ``gap_start``, ``gap_end`` (existed nowhere), ``broker``.

    >>> segment_history(tables).where("source = 'unknown' or gap_start is not null").show()   # doctest: +SKIP
    """
    p = dict(params or {})
    return tables.derive("tier.segment_history", lambda: _run_kernel(tables, p, "history"))


def backlog_series(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """Each tiered partition's backlog, ranges and sizes at every change (computed once per bundle).

    Rows of :data:`SERIES_SCHEMA`; a value holds until the partition's next row. ``broker`` is the
    leader; ``upload_*`` and ``delete_*`` are the lags; ``uncertain_*`` the part of the upload lag whose
    roll time is uncertain; ``phantom_*`` uploaded single-offset segments Kafka still counts
    (KAFKA-20977); ``kafka_copy_after_copy_*`` / ``kafka_copy_after_run_*`` what Kafka's RemoteCopyLag*
    gauge would show if updated after each copy (3.x) or each copy task run (4.x);
    ``kafka_delete_*`` Kafka's RemoteDeleteLag*; ``overdue_segments`` past retention, deletion not
    started; offsets (``log_*``, ``local_*``, ``remote_*``) have exclusive ends;
    ``remote_listed_bytes`` / ``remote_listed_v4_bytes`` as Kafka 3.x / 4.x count RemoteLogSizeBytes;
    ``overlap_offsets`` are both local and remote; ``gap_*`` nowhere.

    >>> backlog_series(tables).where("upload_segments > 0").orderBy("time").show()   # doctest: +SKIP
    """
    p = dict(params or {})
    return tables.derive("tier.backlog_series", lambda: _run_kernel(tables, p, "series"))


def task_interval_ms(tables: Any) -> float:
    """``remote.log.manager.task.interval.ms`` of the brokers (Kafka's default when unset)."""
    topics = _tiered_topics_of(tables)
    return _settings(tables, topics)[1].task_interval_ms


def rollup(series: DataFrame, by: Sequence[str] = ("broker",)) -> DataFrame:
    """The partitions' series added up per group (``broker``, ``topic``, or both), at every change.

    A partition counts for the broker that led it at that moment, so a leadership move moves its
    backlog from one broker's line to the other's.

    Parameters
    ----------
    series : DataFrame
        From :func:`backlog_series`.
    by : sequence of str
        ``("broker",)``, ``("topic",)`` or ``("broker", "topic")``.

    Returns
    -------
    DataFrame
        One row per group and change time: the ``by`` columns, ``time``, the sums of
        :data:`ROLLUP_SUMS`, the partition counts of :data:`ROLLUP_COUNTS`, and the latest of
        :data:`ROLLUP_LATEST` (when Kafka's gauge of any of its partitions was last set).

    Examples
    --------
    >>> rollup(backlog_series(tables), by=["broker"]).where("upload_segments > 0").show()   # doctest: +SKIP
    """
    by = list(by)
    if not by or any(b not in ("broker", "topic") for b in by):
        raise ValueError(f"by must name broker and/or topic, got {by}")
    require_columns(series, ("topic", "partition", "time", "broker", *ROLLUP_SUMS, *ROLLUP_LATEST), "rollup")
    # Written as SQL text: a Column built in Python costs a py4j round trip per function, literal,
    # cast and alias (thousands for one roll-up of 30-odd measures); each expression below is
    # parsed by Spark in one.
    measures = list(ROLLUP_SUMS) + list(ROLLUP_COUNTS)
    keys = [f"`{b}`" for b in by]
    latest = [f"`{c}`" for c in ROLLUP_LATEST]
    w = "OVER (PARTITION BY `topic`, `partition` ORDER BY `time`)"
    keyed = series.selectExpr(
        "`topic`", "`partition`", "`time`", "`broker`", *latest,
        *[f"coalesce(cast(`{m}` AS BIGINT), 0) AS `{m}`" for m in ROLLUP_SUMS],
        *[f"CAST(CASE WHEN {cond} THEN 1 ELSE 0 END AS BIGINT) AS `{name}`" for name, cond in ROLLUP_COUNTS.items()])
    keyed = keyed.selectExpr(
        "*", *[f"coalesce(lag(`{m}`) {w}, 0) AS `_p_{m}`" for m in measures], f"lag(`broker`) {w} AS `_p_broker`",
        f"lag(`time`) {w} IS NULL AS `_first`")
    keyed = keyed.selectExpr(
        "*", "`_first` OR coalesce(`_p_broker` = `broker`, `_p_broker` IS NULL AND `broker` IS NULL) AS `_same`")
    current = keyed.selectExpr(*keys, "`time`", *latest, *[
        f"`{m}` - CASE WHEN `_same` THEN `_p_{m}` ELSE 0 END AS `{m}`" for m in measures])
    moved = keyed.where("NOT `_same`").selectExpr(
        *[("`_p_broker` AS `broker`" if b == "broker" else f"`{b}`") for b in by], "`time`",
        *[f"CAST(NULL AS TIMESTAMP) AS {c}" for c in latest], *[f"-`_p_{m}` AS `{m}`" for m in measures])
    deltas = current.unionByName(moved).groupBy(*by, "time").agg(
        *[F.expr(f"sum(`{m}`) AS `{m}`") for m in measures], *[F.expr(f"max({c}) AS {c}") for c in latest])
    g = f"OVER (PARTITION BY {', '.join(keys)} ORDER BY `time` ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    return deltas.selectExpr(*keys, "`time`", *[f"CAST(sum(`{m}`) {g} AS BIGINT) AS `{m}`" for m in measures],
                             *[f"max({c}) {g} AS {c}" for c in latest])


def gaps(history: DataFrame) -> DataFrame:
    """Offset ranges that existed nowhere (neither local nor readable in remote storage, above the log start).

    Returns
    -------
    DataFrame
        One row per such segment: ``topic, partition, base_offset, end_offset, records, bytes,
        start, end`` (when; ``end`` is the bundle's end while it lasted), ``source``, ``evidence``
        (plain text: why the workbench says so).
    """
    require_columns(history, ("topic", "partition", "base_offset", "end_offset", "gap_start", "gap_end", "source",
                              "uploaded", "local_deleted", "attempts"), "gaps")
    why = (F.when(F.col("source") == "unknown", F.lit(
        "no remote segment event and no local file holds these offsets, while segments after them were uploaded"))
        .when(F.col("uploaded").isNull(), F.concat(
            F.lit("never uploaded ("), F.col("attempts").cast("string"),
            F.lit(" copy attempt(s)) and its local segment was deletable "
                  "(Kafka's highest copied offset had passed it)")))
        .otherwise(F.lit("its remote copy was deleted before the log start offset passed it")))
    return (history.where(F.col("gap_start").isNotNull())
            .select("topic", "partition", "base_offset", "end_offset", "records", "bytes",
                    F.col("gap_start").alias("start"), F.col("gap_end").alias("end"), "source", why.alias("evidence"))
            .orderBy("topic", "partition", "base_offset"))


def episodes(series: DataFrame, lag: str = "upload", *, min_seconds: float = 0.0) -> DataFrame:
    """Maximal periods during which a partition's upload (or delete) lag stayed above zero (for
    uploads: above the segments whose roll time is uncertain, ``uncertain_segments``).

    Parameters
    ----------
    series : DataFrame
        From :func:`backlog_series`.
    lag : str
        ``upload`` or ``delete``.
    min_seconds : float
        Only episodes lasting at least this long (an upload lag always appears between a roll and
        the next task run; a backlog is one that outlasts that).

    Returns
    -------
    DataFrame
        One row per episode: ``topic, partition, broker`` (the leader when it began), ``start, end``
        (``end`` null: still behind at the end of the bundle), ``seconds``, ``peak_segments,
        peak_records, peak_bytes``, ``failed_copies`` (copy attempts that failed meanwhile).
    """
    if lag not in ("upload", "delete"):
        raise ValueError(f"lag must be 'upload' or 'delete', got {lag!r}")
    seg, rec, byt = f"{lag}_segments", f"{lag}_records", f"{lag}_bytes"
    require_columns(series, ("topic", "partition", "time", "broker", seg, rec, byt, "copies_failed"), "episodes")
    w = Window.partitionBy("topic", "partition").orderBy("time")
    ends = series.agg(F.max("time").alias("_bundle_end"))
    on = F.col(seg) > 0
    if lag == "upload" and "uncertain_segments" in series.columns:
        # a segment whose roll time the bundle does not pin down (an idle active segment rolled by
        # time, at some moment before its upload) may not have been waiting at all: it does not
        # start or keep up a backlog on its own
        on = (F.col(seg) - F.coalesce(F.col("uncertain_segments"), F.lit(0))) > 0
    flagged = (series.withColumn("_on", on)
               .withColumn("_next", F.lead("time").over(w))
               .withColumn("_begin", F.col("_on") & ~F.coalesce(F.lag("_on").over(w), F.lit(False)))
               .withColumn("_run", F.sum(F.col("_begin").cast("int")).over(w.rowsBetween(Window.unboundedPreceding, 0)))
               .withColumn("_failed_before", F.coalesce(F.lag("copies_failed").over(w), F.lit(0))))
    runs = (flagged.where("_on").groupBy("topic", "partition", "_run").agg(
        F.min("time").alias("start"), F.max(F.struct("time", "_next")).alias("_last"),
        F.min_by("broker", "time").alias("broker"),
        F.max(seg).alias("peak_segments"), F.max(rec).alias("peak_records"), F.max(byt).alias("peak_bytes"),
        (F.max("copies_failed") - F.min("_failed_before")).alias("failed_copies")))
    runs = runs.crossJoin(ends).withColumn("end", F.col("_last._next"))
    until = F.coalesce(F.col("end"), F.col("_bundle_end"))
    seconds = (F.unix_micros(until) - F.unix_micros("start")) / F.lit(1e6)
    return (runs.withColumn("seconds", seconds).where(F.col("seconds") >= F.lit(float(min_seconds)))
            .select("topic", "partition", F.col("broker").cast("int"), "start", "end", "seconds",
                    F.col("peak_segments").cast("int"), F.col("peak_records").cast("long"),
                    F.col("peak_bytes").cast("long"), F.col("failed_copies").cast("int"))
            .orderBy("start", "topic", "partition"))
