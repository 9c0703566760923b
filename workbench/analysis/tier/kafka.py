"""Kafka's own ``RemoteCopyLag*``, ``RemoteDeleteLag*`` and ``RemoteLog*`` samples beside the computed series."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.sql import sql_literal
from workbench.analysis.tier.backlog import ROLLUP_LATEST, ROLLUP_SUMS, backlog_series, rollup, task_interval_ms

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


#: Kafka's gauges (normalised metric ``name``) and what they are compared with: the computed
#: column, then Kafka's own way of counting it (modelled), by the variant's name.
KAFKA_GAUGES: dict[str, tuple[str, str, dict[str, str]]] = {
    "kafka_server_brokertopicmetrics_remotecopylagsegments": (
        "RemoteCopyLagSegments", "upload_segments",
        {"after_copy": "kafka_copy_after_copy_segments", "after_run": "kafka_copy_after_run_segments"}),
    "kafka_server_brokertopicmetrics_remotecopylagbytes": (
        "RemoteCopyLagBytes", "upload_bytes",
        {"after_copy": "kafka_copy_after_copy_bytes", "after_run": "kafka_copy_after_run_bytes"}),
    "kafka_server_brokertopicmetrics_remotedeletelagsegments": (
        "RemoteDeleteLagSegments", "delete_segments", {"deletions": "kafka_delete_segments"}),
    "kafka_server_brokertopicmetrics_remotedeletelagbytes": (
        "RemoteDeleteLagBytes", "delete_bytes", {"deletions": "kafka_delete_bytes"}),
    "kafka_server_brokertopicmetrics_remotelogsizebytes": (
        "RemoteLogSizeBytes", "remote_bytes",
        {"listed": "remote_listed_bytes", "listed_v4": "remote_listed_v4_bytes"}),
    "kafka_server_brokertopicmetrics_remotelogmetadatacount": (
        "RemoteLogMetadataCount", "remote_metadata_count", {}),
}
#: Columns of :func:`reported`.
REPORTED_SCHEMA = "metric string, broker int, topic string, time timestamp, value double, format string"
#: Columns of :func:`compare`.
COMPARE_COLUMNS = (
    "metric", "broker", "topic", "time", "format", "reported", "computed", "difference", "modelled",
    "changed_before", "changes_after", "reason", "note",
)
#: Reasons of :func:`compare`, in the order they are tried.
REASONS = ("agree", "settling", "gauge_stale", "kafka_definition", "phantom_segment", "roll_time_uncertain",
           "unexplained")


def reported(metrics: DataFrame) -> DataFrame:
    """Kafka's own tiered-storage gauges from the bundle's metric exports (JmxTool CSV, Prometheus).

    Returns
    -------
    DataFrame
        :data:`REPORTED_SCHEMA`: ``metric`` (``RemoteCopyLagSegments``, ``RemoteCopyLagBytes``,
        ``RemoteDeleteLagSegments``, ``RemoteDeleteLagBytes``, ``RemoteLogSizeBytes``,
        ``RemoteLogMetadataCount``), ``broker`` (the exporting node), ``topic`` (null: the
        broker-wide gauge), ``time``, ``value``, ``format``; one row per sample.
    """
    require_columns(metrics, ("node_id", "name", "labels", "timestamp", "value", "format"), "reported")
    short = F.lit(None).cast("string")
    for name, (label, _c, _m) in KAFKA_GAUGES.items():
        short = F.when(F.col("name") == name, F.lit(label)).otherwise(short)
    return (metrics.where(F.col("name").isin(list(KAFKA_GAUGES)) & F.col("timestamp").isNotNull()
                          & F.col("value").isNotNull() & ~F.isnan("value"))
            .where(F.coalesce(F.col("labels").getItem("partition"), F.lit("")) == "")
            .select(short.alias("metric"), F.col("node_id").cast("int").alias("broker"),
                    F.col("labels").getItem("topic").alias("topic"), F.col("timestamp").alias("time"),
                    F.col("value").cast("double").alias("value"), "format"))


#: The evidence :func:`compare` writes in its notes.
_COMPARE_TEXT = {
    "after_copy": "; Kafka's value is the lag right after the last successful copy, at ",
    "after_copy_3x": " (Kafka 3.x updates RemoteCopyLag* only after a successful copy; ",
    "after_copy_failed": " copy attempt(s) had failed by then or since: KAFKA-19530, KAFKA-19995), while the segments "
                         "and events show the backlog now",
    "after_run": "; Kafka's value is the lag at the end of the copy task run at ",
    "after_run_4x": " (Kafka 4.x updates RemoteCopyLag* once per run of ",
    "after_run_in_flight": " copy in flight now), while the segments and events show the backlog now",
    "deletions": "; Kafka's value was set by the expiration task at ",
    "deletions_hold": " and holds until its next run, while the deletion events and retention show the backlog now",
    "listed": "; Kafka counts every segment not yet deleted, copies that only started (COPY_SEGMENT_STARTED, failed "
              "or in flight) included",
    "listed_v4": "; Kafka counts segments whose deletion started too",
    "phantom": "; Kafka counts an already uploaded single-offset segment at its highest copied offset as still local "
               "(KAFKA-20977 phantom lag)",
    "uncertain": "; the difference is segment(s) whose roll time the bundle does not pin down (no later batch is "
                 "left): the computed value counts them from their last record",
    "unexplained": "; no evidence in the segments and events explains the difference",
}


def _sql_time(column: str) -> str:
    """SQL text of :func:`_fmt_time`."""
    return f"date_format(`{column}`, 'HH:mm:ss.SSS')"


def compare(series: DataFrame, samples: DataFrame, *, interval_ms: float) -> DataFrame:
    """Kafka's gauge samples beside the computed values, each difference classified and explained.

    Each sample is compared with the roll-up of its broker (and topic, when the gauge is per topic)
    at the sample's time.

    Parameters
    ----------
    series : DataFrame
        From :func:`backlog_series`.
    samples : DataFrame
        From :func:`reported`.
    interval_ms : float
        ``remote.log.manager.task.interval.ms``: Kafka refreshes these gauges from its tasks, so a
        sample within one interval of a change of the computed value may lag it.

    Returns
    -------
    DataFrame
        :data:`COMPARE_COLUMNS`, one row per sample: ``metric, broker, topic, time, format``,
        ``reported`` (Kafka), ``computed``, ``difference`` (reported - computed), ``modelled`` (the
        value of Kafka's own way of counting that matches the sample, when one does),
        ``changed_before`` and ``changes_after`` (the computed value's last change at or before
        the sample, and its next change), ``reason`` (:data:`REASONS`, the first that holds:
        ``agree``; ``gauge_stale``: Kafka's value is the lag at its
        last update (after each successful copy in 3.x, so failing copies leave it stale:
        KAFKA-19530, KAFKA-19995; at the end of each copy task run in 4.x; at each deletion for
        the delete lag); ``kafka_definition``: Kafka's RemoteLogSizeBytes counts segments whose
        copy started, or whose deletion started, too; ``settling``: within one task interval (and
        a second, or a tenth of the interval when longer, for that run to reach the gauge) of
        a change of the computed value or of one of Kafka's ways of counting it (the task run that
        refreshes the gauge may have seen either before it); ``phantom_segment``: Kafka counts an
        uploaded single-offset segment as still local (KAFKA-20977); ``roll_time_uncertain``:
        the difference is segments whose roll time the bundle does not pin down; ``unexplained``),
        ``note`` (the evidence, in words).
    """
    require_columns(samples, ("metric", "broker", "topic", "time", "value", "format"), "compare")
    by_topic = rollup(series, by=("broker", "topic"))
    by_broker = rollup(series, by=("broker",)).withColumn("topic", F.lit(None).cast("string"))
    rolled = by_topic.unionByName(by_broker).withColumn("_key", F.coalesce(F.col("topic"), F.lit("*")))
    w = Window.partitionBy("broker", "_key").orderBy("time")
    fwd = w.rowsBetween(Window.unboundedPreceding, 0)
    after = w.rowsBetween(1, Window.unboundedFollowing)
    # changes of the computed columns and of Kafka's own ways of counting them (a gauge refreshed
    # by a task run may show either as it was up to one interval before)
    compared = sorted({c for _l, c, _m in KAFKA_GAUGES.values()}
                      | {v for _l, _c, m in KAFKA_GAUGES.values() for v in m.values()})
    rolled = rolled.withColumns({f"_chg_{c}": F.when(F.coalesce(F.col(c) != F.lag(c).over(w), F.lit(True)),
                                                     F.col("time")) for c in compared})
    rolled = rolled.withColumns({
        **{f"{c}__since": F.last(f"_chg_{c}", ignorenulls=True).over(fwd) for c in compared},
        **{f"{c}__until": F.first(f"_chg_{c}", ignorenulls=True).over(after) for c in compared}})
    carried = [*ROLLUP_SUMS, *ROLLUP_LATEST, *[f"{c}__since" for c in compared], *[f"{c}__until" for c in compared]]
    right = rolled.select("broker", "_key", "time", *carried)
    from workbench.analysis.logs import asof

    left = samples.withColumn("_key", F.coalesce(F.col("topic"), F.lit("*")))
    # every gauge below reads these rows: kept once, instead of its window and as-of plan per gauge
    joined = asof(left, right, by=["broker", "_key"], left_time="time", right_time="time",
                  columns=carried).localCheckpoint(eager=True)

    interval_s = float(interval_ms) / 1000.0
    # Kafka runs its remote log tasks with a fixed delay: the run that refreshes a gauge starts one
    # interval after the run that made the change ended, and reaches the gauge's update a moment
    # later (a JmxTool sample taken just after the next run began can still read the old count)
    settle_s = interval_s + max(1.0, 0.1 * interval_s)
    # Each gauge's columns are SQL text: built as Python Columns they take tens of thousands of
    # py4j round trips; Spark parses each expression in one.
    lit, fmt = sql_literal, _sql_time
    parts = []
    for _name, (label, col, variants) in KAFKA_GAUGES.items():
        sub = joined.where(F.col("metric") == label)
        computed = f"coalesce(CAST(`{col}` AS DOUBLE), 0.0D)"
        settling = " OR ".join(
            f"coalesce((unix_micros(`time`) - unix_micros(`{t}__since`)) / 1000000.0D < {settle_s!r}D, false)"
            f" OR coalesce((unix_micros(`{t}__until`) - unix_micros(`time`)) / 1000000.0D < {settle_s!r}D, false)"
            for t in (col, *variants.values()))
        matched, modelled = "CAST(NULL AS STRING)", "CAST(NULL AS DOUBLE)"
        for vname, vcol in reversed(list(variants.items())):
            hit = f"coalesce(CAST(`{vcol}` AS DOUBLE), 0.0D) = `value`"
            matched = f"CASE WHEN {hit} THEN {lit(vname)} ELSE {matched} END"
            modelled = f"CASE WHEN {hit} THEN coalesce(CAST(`{vcol}` AS DOUBLE), 0.0D) ELSE {modelled} END"
        segments = col.endswith("segments")
        phantom = f"coalesce(CAST(`{'phantom_segments' if segments else 'phantom_bytes'}` AS DOUBLE), 0.0D)"
        uncertain = f"coalesce(CAST(`{'uncertain_segments' if segments else 'uncertain_bytes'}` AS DOUBLE), 0.0D)"
        diff = f"(`value` - {computed})"
        reason = ("CASE WHEN _diff = 0 THEN 'agree' WHEN _matched IN ('after_copy', 'after_run', 'deletions') "
                  "THEN 'gauge_stale' WHEN _matched IN ('listed', 'listed_v4') THEN 'kafka_definition' "
                  "WHEN _settling THEN 'settling' ")
        if col.startswith("upload"):
            reason += (f"WHEN {phantom} > 0 AND _diff = {phantom} THEN 'phantom_segment' "
                       f"WHEN {uncertain} > 0 AND _diff < 0 AND -_diff <= {uncertain} THEN 'roll_time_uncertain' ")
        reason += "ELSE 'unexplained' END"
        unit = lit(" segment(s)" if segments else (" offset(s)" if col == "remote_metadata_count" else " byte(s)"))
        what = (f"concat('computed ', format_number(_computed, 0), {unit}, ', Kafka ', "
                f"format_number(`value`, 0), {unit})")
        t = {k: lit(v) for k, v in _COMPARE_TEXT.items()}
        stale_text = (
            f"CASE WHEN _matched = 'after_copy' THEN concat({t['after_copy']}, {fmt('kafka_copy_after_copy_at')}, "
            f"{t['after_copy_3x']}, CAST(coalesce(`copies_failed`, 0) AS STRING), {t['after_copy_failed']}) "
            f"WHEN _matched = 'after_run' THEN concat({t['after_run']}, {fmt('kafka_copy_after_run_at')}, "
            f"{t['after_run_4x']}, {lit(f'{interval_s:g} s')}, '; ', CAST(coalesce(`copies_in_flight`, 0) AS STRING), "
            f"{t['after_run_in_flight']}) "
            f"WHEN _matched = 'deletions' THEN concat({t['deletions']}, {fmt('kafka_delete_at')}, "
            f"{t['deletions_hold']}) "
            f"WHEN _matched = 'listed' THEN {t['listed']} WHEN _matched = 'listed_v4' THEN {t['listed_v4']} END")
        settling_text = lit(f", within one task interval ({interval_s:g} s, and {settle_s - interval_s:g} s for "
                            "the run to reach the gauge)")
        note = (
            f"CASE WHEN _reason = 'agree' THEN concat('agree: ', {what}) "
            f"WHEN _reason = 'settling' THEN concat({what}, '; the computed value changed at ', "
            f"{fmt(col + '__since')}, ' and next changes at ', coalesce({fmt(col + '__until')}, 'the end'), "
            f"{settling_text}) "
            f"WHEN _reason IN ('gauge_stale', 'kafka_definition') THEN concat({what}, {stale_text}) "
            f"WHEN _reason = 'phantom_segment' THEN concat({what}, {t['phantom']}) "
            f"WHEN _reason = 'roll_time_uncertain' THEN concat({what}, {t['uncertain']}) "
            f"ELSE concat({what}, {t['unexplained']}) END")
        step = sub.selectExpr("*", f"{computed} AS _computed", f"{diff} AS _diff", f"{matched} AS _matched",
                              f"{modelled} AS _modelled", f"{settling} AS _settling")
        step = step.selectExpr("*", f"{reason} AS _reason")
        parts.append(step.selectExpr(
            "metric", "broker", "topic", "time", "format", "`value` AS reported", "_computed AS computed",
            "_diff AS difference", "_modelled AS modelled", f"`{col}__since` AS changed_before",
            f"`{col}__until` AS changes_after", "_reason AS reason", f"{note} AS note"))
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out.orderBy("metric", "broker", F.col("topic").asc_nulls_first(), "time", "format")


def comparison(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame | None:
    """:func:`compare` of :func:`backlog_series` with Kafka's own gauges (:func:`reported`), computed once
    per bundle; ``None`` when the bundle has no gauge samples.

    >>> comparison(tables).where("reason != 'agree'").show()          # doctest: +SKIP
    """
    samples = reported(tables["metrics"])
    if not samples.limit(1).count():
        return None
    p = dict(params or {})
    return tables.derive("tier.compare", lambda: compare(backlog_series(tables, p), samples,
                                                         interval_ms=task_interval_ms(tables)))
