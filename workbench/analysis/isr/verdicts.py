"""The ISR findings: offline, under-min-ISR and flapping partitions, cluster stops and restarts, grouped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis.isr.inputs import _static_key, static_min_isr
from workbench.analysis.isr.moves import move_summary, moves_for, replica_moves
from workbench.analysis.isr.outages import cluster_stops, episodes
from workbench.analysis.isr.states import states_for
from workbench.analysis.isr.textlog import with_text_logs
from workbench.analysis.metadata_log import restarts_for

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def findings(states: DataFrame, *, flap_threshold: int = 3, stops: DataFrame | None = None,
             restarts: DataFrame | None = None, changes: DataFrame | None = None,
             moves: DataFrame | None = None) -> DataFrame:
    """ISR findings: offline and under-min-ISR episodes, and partitions whose ISR flapped.

    * ``offline`` (critical): the partition had no leader, from start to end;
    * ``under_min_isr`` (critical): its ISR was smaller than ``min.insync.replicas``: producers
      with ``acks=all`` were refused;
    * ``isr_flapping`` (warning): its ISR lost a replica at least ``flap_threshold`` times (a
      same-size swap counts); start and end span the changes; the summary names each replica that
      left, how often and why, with ``changes`` (:func:`workbench.analysis.metadata_log.broker_changes`)
      telling a fence or controlled shutdown from falling behind (:func:`~workbench.analysis.isr.
      moves.replica_moves`; ``moves`` passes them computed);
    * ``cluster_stopped`` (info), with ``stops`` (:func:`cluster_stops`): a cluster's brokers all
      shut down in order at the end of its log. The offline and under-min-ISR episodes that began
      with that shutdown are its consequence, not an outage, whether they last to the end of the log
      or end within it (a partition under min ISR as one broker stops, then offline as the next
      does): they are told as this one finding (how many partitions it left offline and under min
      ISR) instead of one critical finding each. Episodes that began before it are kept.
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
    moves = replica_moves(states, changes) if moves is None else moves
    if restarts is not None:  # nor are the changes of a whole-cluster stop and restart
        down = restarts.select(F.col("cluster_id").alias("_rc"), F.col("start").alias("_rs"),
                               F.col("end").alias("_re"))
        moves = moves.join(down, moves["cluster_id"].eqNullSafe(down["_rc"]) & (moves["time"] >= down["_rs"])
                           & (moves["time"] <= down["_re"]), "left_anti")
    if stops is not None:  # a stopped cluster's last changes are its shutdown, not flapping
        stop_at = stops.select(F.col("cluster_id").alias("_cluster"), F.col("start").alias("_stop"))
        moves = (moves.join(stop_at, moves["cluster_id"].eqNullSafe(stop_at["_cluster"]), "left")
                 .where(F.col("_stop").isNull() | (F.col("time") < F.col("_stop"))).drop("_cluster", "_stop"))
    flaps = _flapping(moves, flap_threshold, subject, name)
    out = offline.unionByName(under).unionByName(flaps).withColumn("subject_type", F.lit("partition"))
    if restarts is not None:
        out = _told_as_restarts(out, states, restarts)
    if stops is not None:
        out = _told_as_stops(out, states, stops)
    return out.withColumn("area", F.lit("isr")).select(*FINDINGS_COLUMNS)


def _flapping(moves: DataFrame, flap_threshold: int, subject: Column, name: Column) -> DataFrame:
    """The ``isr_flapping`` rows: partitions whose ISR lost a replica at least ``flap_threshold`` times,
    naming each replica that left (how often, and why) and how often replicas joined again."""
    keys = ["topic", "topic_id", "partition"]
    per_replica = (move_summary(moves).where(F.col("left") > 0)
                   .select(*keys, "replica", F.col("left").alias("_left"), F.col("fenced").alias("_fenced"),
                           F.col("controlled_shutdown").alias("_shutdown"), F.col("fell_behind").alias("_behind")))
    reasons = F.concat_ws(", ", *[F.when(F.col(c) > 0, F.concat(F.lit(f"{label} "), F.col(c).cast("string")))
                                  for c, label in (("_fenced", "fenced"), ("_shutdown", "controlled shutdown"),
                                                   ("_behind", "fell behind"))])
    told = F.concat(F.lit("broker "), F.col("replica").cast("string"), F.lit(" left "), F.col("_left").cast("string"),
                    F.lit(" times"), F.when(reasons != "", F.concat(F.lit(" ("), reasons, F.lit(")"))).otherwise(""))
    named = (per_replica.groupBy(*keys)
             .agg(F.sort_array(F.collect_list(F.struct((-F.col("_left")).alias("_n"), "replica", told.alias("_t"))))
                  .alias("_told"),
                  F.sum("_fenced").alias("_fenced"), F.sum("_behind").alias("_behind"))
             .select(*keys, F.concat_ws("; ", F.col("_told._t")).alias("_named"), "_fenced", "_behind"))
    counts = (moves.groupBy(*keys)
              .agg(F.countDistinct(F.when(F.col("move") == "left", F.col("time"))).alias("shrinks"),
                   F.countDistinct(F.when(F.col("move") == "joined", F.col("time"))).alias("expands"),
                   F.min("time").alias("start"), F.max("time").alias("end"))
              .where(F.col("shrinks") >= flap_threshold))
    return (counts.join(named, keys, "left")
            .select(F.lit("isr_flapping").alias("kind"), F.lit("warning").alias("severity"), subject.alias("subject"),
                    "start", "end",
                    F.concat(F.lit("ISR of "), name, F.lit(" shrank "), F.col("shrinks").cast("string"),
                             F.lit(" times and expanded "), F.col("expands").cast("string"),
                             F.lit(" times (flapping): "), F.coalesce(F.col("_named"), F.lit(""))).alias("summary"),
                    F.create_map(F.lit("shrinks"), F.col("shrinks").cast("double"), F.lit("expands"),
                                 F.col("expands").cast("double"), F.lit("fenced_leaves"),
                                 F.coalesce(F.col("_fenced"), F.lit(0)).cast("double"), F.lit("lagged_leaves"),
                                 F.coalesce(F.col("_behind"), F.lit(0)).cast("double")).alias("figures"),
                    F.lit(False).alias("_open"), F.col("topic_id").alias("_topic_id")))


def _told_as_restarts(found: DataFrame, states: DataFrame, restarts: DataFrame) -> DataFrame:
    """``found`` with the episodes a whole-cluster stop explains replaced by one finding per stop."""
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
    """``found`` with the episodes that a cluster's final shutdown began (open or not: nothing but the
    shutdown happens after its start) replaced by one finding per stop."""
    clusters = states.select("cluster_id", F.col("topic_id").alias("_topic_id")).distinct()
    stop = stops.select(F.col("cluster_id").alias("_cluster"), F.col("start").alias("_stop"),
                        F.col("end").alias("_stop_end"), "brokers")
    tagged = found.join(clusters, "_topic_id", "left")
    tagged = (tagged.join(stop, tagged["cluster_id"].eqNullSafe(stop["_cluster"]), "left")
              .withColumn("_by_stop", F.col("kind").isin("offline", "under_min_isr") & F.col("_stop").isNotNull()
                          & (F.col("start") >= F.col("_stop"))))
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
                                          stops=cluster_stops(with_text_logs(tables)), restarts=restarts_for(tables),
                                          moves=moves_for(tables, params)))
