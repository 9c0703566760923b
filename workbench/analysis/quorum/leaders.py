"""Leaders, epochs and voters of the KRaft quorum, from control records, batches and captures."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


#: Columns of :func:`leader_timeline`.
TIMELINE_COLUMNS = ("epoch", "leader", "start", "end", "last_append", "first_offset", "last_offset", "batches",
                    "records", "voters", "granting_voters", "skipped_epochs", "sources", "quorum_state_nodes",
                    "leaderless_ms")


def _control_records(metadata: DataFrame, kind: str, file_kinds: tuple[str, ...] = ("segment",)) -> DataFrame:
    """Control records of one type, each offset once (the highest leader epoch's, like the log)."""
    rows = metadata.where(F.col("is_control") & (F.col("record_type") == kind) & F.col("file_kind").isin(*file_kinds))
    best = Window.partitionBy("file_kind", "file_offset", "offset").orderBy(F.col("leader_epoch").desc(), "node_id")
    return rows.withColumn("_rank", F.row_number().over(best)).where(F.col("_rank") == 1).drop("_rank")


def _voter_ids(column: str, path: str) -> Column:
    return F.array_sort(F.from_json(F.get_json_object(column, path), "array<struct<voterId:int>>")
                        .getField("voterId"))


def voter_changes(metadata: DataFrame) -> DataFrame:
    """The voter set of each KRaft voters control record (Kafka 3.9+, KIP-853).

    Returns
    -------
    DataFrame
        One row per voters record of the log, its snapshots or a bootstrap checkpoint:
        ``time, offset, epoch, file_kind, voters`` (sorted node ids).
    """
    require_columns(metadata, ("is_control", "record_type", "fields", "file_kind", "file_offset", "offset",
                               "leader_epoch", "node_id", "timestamp"), "voter_changes")
    rows = _control_records(metadata, "KRAFT_VOTERS", ("segment", "snapshot", "bootstrap"))
    return (rows.select(F.col("timestamp").alias("time"), "offset", F.col("leader_epoch").alias("epoch"),
                        "file_kind", _voter_ids("fields", "$.voters").alias("voters"))
            .dropDuplicates(["time", "offset", "file_kind", "voters"]).orderBy("time", "offset"))


#: The static setting that names a KRaft quorum's voters (``id@host:port,...``) when no voters record does.
STATIC_VOTERS_CONFIG = "controller.quorum.voters"


def configured_voters(values: Iterable[str | None]) -> list[int] | None:
    """The voter ids of the nodes' ``controller.quorum.voters`` values when every node names the same
    set; None when none does (a dynamic quorum), they disagree or a value is not ``id@host:port,...``.

    >>> configured_voters(["1@h:9093,2@h:9094", "2@h:9094,1@h:9093"])
    [1, 2]
    >>> configured_voters(["1@h:9093", "1@h:9093,2@h:9094"]) is None
    True
    >>> configured_voters(["one@h:9093"]) is None
    True
    """
    sets = set()
    for value in values:
        if not value or not value.strip():
            continue
        ids = [v.split("@", 1)[0].strip() for v in value.split(",") if v.strip()]
        if not ids or not all(i.isdigit() for i in ids):
            return None
        sets.add(tuple(sorted(int(i) for i in ids)))
    return list(next(iter(sets))) if len(sets) == 1 else None


def voters_beside_status(voters: DataFrame, status: DataFrame, configured: list[int] | None = None) -> DataFrame:
    """Each ``kafka-metadata-quorum describe --status`` capture's ``CurrentVoters`` beside the voter set
    in force at its time, so a reader sees the quorum's voters judged by Kafka's own answers: the last
    :func:`voter_changes` row at or before the capture, else ``configured`` (the nodes' common
    ``controller.quorum.voters``, see :func:`configured_voters`: a static quorum writes no voters record).

    Returns
    -------
    DataFrame
        ``captured, leader_id, captured_voters, voters, voters_from`` (``log`` or
        :data:`STATIC_VOTERS_CONFIG`), ``since`` (the voters record's time), ``agrees``; one row per
        capture; ``voters`` and ``agrees`` are null where neither says which voters were in force.
    """
    require_columns(voters, ("time", "voters"), "voters_beside_status")
    require_columns(status, ("captured", "leader_id", "voters"), "voters_beside_status")
    captures = status.select("captured", "leader_id", F.col("voters").alias("captured_voters"),
                             F.monotonically_increasing_id().alias("_capture"))
    log = voters.select(F.col("time").alias("_t"), F.col("voters").alias("_v"))
    held = F.max_by(F.struct("_t", "_v"), "_t")
    joined = (captures.join(log, F.col("_t") <= F.col("captured"), "left")
              .groupBy("_capture", "captured", "leader_id", "captured_voters").agg(held.alias("_held")))
    static = F.lit(sorted(configured)).cast("array<int>") if configured else F.lit(None).cast("array<int>")
    in_force = F.coalesce(F.col("_held._v"), static)
    source = (F.when(F.col("_held._v").isNotNull(), F.lit("log"))
              .when(static.isNotNull(), F.lit(STATIC_VOTERS_CONFIG)))
    agrees = F.when(in_force.isNull(), F.lit(None).cast("boolean")).otherwise(
        F.array_sort("captured_voters") == in_force)
    return joined.select("captured", "leader_id", "captured_voters", in_force.alias("voters"),
                         source.alias("voters_from"), F.col("_held._t").alias("since"),
                         agrees.alias("agrees")).orderBy("captured")


def leader_timeline(metadata: DataFrame, appends: DataFrame, quorum: DataFrame | None = None,
                    status: DataFrame | None = None) -> DataFrame:
    """Who led the quorum in each epoch, from when, elected by whom, and which sources say so.

    Parameters
    ----------
    metadata : DataFrame
        The ``metadata`` table (``LEADER_CHANGE`` control records: leader, voters and the voters
        that granted the vote).
    appends : DataFrame
        From :func:`log_appends` (the epochs of the batches, with their first and last appends).
    quorum : DataFrame, optional
        The ``quorum`` table (each node's ``quorum-state``: the epoch and leader it last knew).
    status : DataFrame, optional
        The ``tool_quorum_status`` table (``describe --status`` captures: leader and epoch at a time).

    Returns
    -------
    DataFrame
        One row per leader epoch, :data:`TIMELINE_COLUMNS`: ``epoch, leader`` (-1: no leader known),
        ``start`` (the LeaderChange record, else the epoch's first append, else its first
        capture), ``end`` (the next epoch's start; null for the last), ``last_append``,
        ``first_offset, last_offset, batches, records``, ``voters, granting_voters`` (from the
        LeaderChange record), ``skipped_epochs`` (epoch numbers since the previous row that
        elected nobody who appended: failed or disrupted elections), ``sources`` (any of
        ``leader_change``, ``batches``, ``quorum_state``, ``describe_status``),
        ``quorum_state_nodes`` (nodes whose ``quorum-state`` ends in this epoch), ``leaderless_ms``
        (from the previous epoch's last append to this epoch's start: how long the log had no
        writing leader around the election, the time to notice the old leader gone included; the
        log holds no vote times, so this bounds Kafka's ``election-latency`` from above; null for
        the first epoch or where either time is unknown).

    Examples
    --------
    >>> leader_timeline(tables.metadata, appends, tables.quorum).show()    # doctest: +SKIP
    """
    require_columns(metadata, ("is_control", "record_type", "fields", "file_kind", "file_offset", "offset",
                               "leader_epoch", "node_id", "timestamp"), "leader_timeline")
    changes = (_control_records(metadata, "LEADER_CHANGE")
               .select(F.col("leader_epoch").alias("epoch"),
                       F.get_json_object("fields", "$.leaderId").cast("int").alias("lc_leader"),
                       F.col("timestamp").alias("lc_time"), F.col("offset").alias("lc_offset"),
                       _voter_ids("fields", "$.voters").alias("voters"),
                       _voter_ids("fields", "$.grantingVoters").alias("granting_voters"))
               .groupBy("epoch").agg(F.min_by(F.struct("lc_leader", "lc_time", "lc_offset", "voters",
                                                        "granting_voters"),
                                              "lc_offset").alias("lc"))
               .select("epoch", "lc.*"))
    per_epoch = appends.groupBy("epoch").agg(
        F.min("time").alias("first_append"), F.max("time").alias("last_append"),
        F.min("base_offset").alias("first_offset"), F.max("last_offset").alias("last_offset"),
        F.count("*").alias("batches"), F.sum("records").alias("records"))
    epochs = per_epoch.join(changes, "epoch", "full")
    spark = metadata.sparkSession
    if quorum is not None:
        qs = (quorum.where(F.col("leader_epoch") >= 0)
              .groupBy(F.col("leader_epoch").alias("epoch"))
              .agg(F.array_sort(F.collect_set("node_id")).alias("quorum_state_nodes"),
                   F.max(F.when(F.col("leader_id") >= 0, F.col("leader_id"))).alias("qs_leader")))
    else:
        qs = spark.createDataFrame([], "epoch int, quorum_state_nodes array<int>, qs_leader int")
    if status is not None:
        st = (status.where(F.col("leader_epoch").isNotNull())
              .groupBy(F.col("leader_epoch").alias("epoch"))
              .agg(F.min("captured").alias("st_time"),
                   F.max(F.when(F.col("leader_id") >= 0, F.col("leader_id"))).alias("st_leader")))
    else:
        st = spark.createDataFrame([], "epoch int, st_time timestamp, st_leader int")
    joined = epochs.join(qs, "epoch", "full").join(st, "epoch", "full")
    sources = F.filter(F.array(
        F.when(F.col("lc_time").isNotNull(), F.lit("leader_change")),
        F.when(F.col("batches").isNotNull(), F.lit("batches")),
        F.when(F.col("quorum_state_nodes").isNotNull(), F.lit("quorum_state")),
        F.when(F.col("st_time").isNotNull(), F.lit("describe_status"))), lambda x: x.isNotNull())
    order = Window.partitionBy(F.lit(1)).orderBy("epoch")
    out = (joined
           .withColumn("leader", F.coalesce("lc_leader", "st_leader", "qs_leader", F.lit(-1)).cast("int"))
           .withColumn("start", F.coalesce("lc_time", "first_append", "st_time"))
           .withColumn("sources", sources)
           .withColumn("end", F.lead("start").over(order))
           .withColumn("skipped_epochs",
                       F.coalesce(F.col("epoch") - F.lag("epoch").over(order) - 1, F.lit(0)).cast("int"))
           .withColumn("_gap", (F.unix_micros("start") - F.unix_micros(F.lag("last_append").over(order)))
                       / F.lit(1000.0))
           .withColumn("leaderless_ms", F.when(F.col("_gap").isNotNull(), F.greatest(F.lit(0.0), F.col("_gap"))))
           .withColumn("batches", F.coalesce("batches", F.lit(0)).cast("long"))
           .withColumn("records", F.coalesce("records", F.lit(0)).cast("long")))
    return out.select(F.col("epoch").cast("int"), *TIMELINE_COLUMNS[1:]).orderBy("epoch")
