"""Leader epochs: who led each partition under each epoch (the metadata log), elections from outside the
ISR, and what each replica's ``leader-epoch-checkpoint`` says it wrote under them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: ``PartitionChangeRecord.leader`` when the record leaves the leader as it was (Kafka's ``NO_LEADER_CHANGE``).
NO_LEADER_CHANGE = -2
#: ``leaderRecoveryState`` Kafka sets on a partition whose leader was elected uncleanly (``RECOVERING``).
RECOVERING = 1

#: Columns of :func:`leader_history`.
HISTORY_COLUMNS = ("cluster_id", "topic", "topic_id", "partition", "epoch", "leader", "previous_leader", "time",
                   "offset", "isr_before", "last_isr", "isr", "leader_recovery_state", "unclean")
#: Columns of :func:`replica_epochs`.
EPOCH_COLUMNS = ("cluster_id", "topic", "partition", "node_id", "epoch", "start_offset", "end_offset", "leader",
                 "elected", "unclean")
_PARTITION = ("cluster_id", "topic_id", "partition")


def leader_history(metadata: DataFrame) -> DataFrame:
    """One row per leader epoch of every partition, replayed from the metadata log as Kafka merges it.

    A ``PartitionRecord`` registers a partition at its ``leaderEpoch``; each ``PartitionChangeRecord``
    that names a leader (anything but ``NO_LEADER_CHANGE``, -2; the same leader again when the
    controller bumps the epoch) starts the next epoch, as ``PartitionRegistration.merge`` does.
    Columns :data:`HISTORY_COLUMNS`: ``leader`` (-1: none), ``previous_leader`` (the last broker that
    led before this epoch; null for none), ``time`` and ``offset`` of the record,
    ``isr_before`` (the ISR the record found; null for a registration), ``last_isr`` (the last
    non-empty ISR before the record: an offline partition's ISR may have emptied), ``isr`` (after it),
    ``leader_recovery_state`` (as the record sets it; null when it leaves it) and ``unclean``: a
    leader elected from outside the ISR and the eligible leader replicas it found, or one the
    controller marked ``RECOVERING`` (Kafka's mark of an unclean election). ``topic`` is the name of
    the topic id, each cluster's log replayed on its own.
    """
    from workbench.analysis.metadata_log import ordered_records

    require_columns(metadata, ("record_type", "topic_id", "topic", "partition", "leader", "isr", "elr",
                               "record_leader_epoch", "leader_recovery_state"), "the leader history")
    records = ordered_records(metadata).where(~F.col("is_control"))
    names = (records.where((F.col("record_type") == "TopicRecord") & F.col("topic_id").isNotNull())
             .groupBy("cluster_id", "topic_id").agg(F.max_by("topic", "offset").alias("_name")))
    parts = records.where(F.col("record_type").isin("PartitionRecord", "PartitionChangeRecord")
                          & F.col("topic_id").isNotNull() & F.col("partition").isNotNull())
    registers = F.col("record_type") == "PartitionRecord"
    bumps = ((F.col("record_type") == "PartitionChangeRecord") & F.col("leader").isNotNull()
             & (F.col("leader") != NO_LEADER_CHANGE))
    parts = parts.withColumn("_reg", F.sum(registers.cast("int")).over(
        Window.partitionBy(*_PARTITION).orderBy("offset", "seq").rowsBetween(Window.unboundedPreceding, 0)))
    within = Window.partitionBy(*_PARTITION, "_reg").orderBy("offset", "seq")
    upto = within.rowsBetween(Window.unboundedPreceding, 0)
    replayed = (parts
                .withColumn("epoch", (F.first(F.when(registers, F.col("record_leader_epoch")), ignorenulls=True)
                                      .over(upto) + F.sum(bumps.cast("int")).over(upto)).cast("int"))
                .withColumn("_isr", F.last("isr", ignorenulls=True).over(upto))
                .withColumn("_elr", F.last(F.when(F.col("elr").isNotNull() | registers,
                                                  F.coalesce("elr", F.array().cast("array<int>"))),
                                           ignorenulls=True).over(upto))
                .withColumn("_led", F.last(F.when((registers | bumps) & (F.col("leader") >= 0), F.col("leader")),
                                           ignorenulls=True).over(upto))
                .withColumn("previous_leader", F.lag("_led").over(within))
                .withColumn("isr_before", F.lag("_isr").over(within))
                .withColumn("_full", F.last(F.when(F.size("isr") > 0, F.col("isr")), ignorenulls=True).over(upto))
                .withColumn("last_isr", F.lag("_full").over(within))
                .withColumn("_elr_before", F.lag("_elr").over(within)))
    started = replayed.where((F.col("_reg") > 0) & (registers | bumps))   # nothing before the registration
    outside = (~registers & (F.col("leader") >= 0) & F.col("isr_before").isNotNull()
               & ~F.array_contains("isr_before", F.col("leader"))
               & ~F.coalesce(F.array_contains("_elr_before", F.col("leader")), F.lit(False)))
    unclean = outside | (~registers & F.coalesce(F.col("leader_recovery_state") == RECOVERING, F.lit(False)))
    names = names.select(F.col("cluster_id").alias("_n_cluster"), F.col("topic_id").alias("_n_topic"), "_name")
    on = [started["cluster_id"].eqNullSafe(names["_n_cluster"]), started["topic_id"] == names["_n_topic"]]
    out = started.join(names, on, "left").select(
        "cluster_id", F.col("_name").alias("topic"), "topic_id", "partition", "epoch", "leader",
        F.when(~registers, F.col("previous_leader")).alias("previous_leader"), F.col("timestamp").alias("time"),
        "offset", F.when(~registers, F.col("isr_before")).alias("isr_before"),
        F.when(~registers, F.col("last_isr")).alias("last_isr"),
        F.col("_isr").alias("isr"), "leader_recovery_state", unclean.alias("unclean"))
    return out.select(*HISTORY_COLUMNS)


def replica_epochs(leader_epochs: DataFrame, history: DataFrame, ranges: DataFrame | None = None) -> DataFrame:
    """One row per entry of each replica's ``leader-epoch-checkpoint``, with who led that epoch.

    Columns :data:`EPOCH_COLUMNS`: ``start_offset`` (the first offset the replica holds from the
    epoch), ``end_offset`` (the next entry's start, else the replica's log end from ``ranges``
    (:func:`~.compare.replica_ranges`), else null), and from ``history`` (:func:`leader_history`,
    the latest topic id of each name) ``leader``, ``elected`` (when) and ``unclean``; null when
    the metadata log does not reach that epoch (a ZooKeeper-era cluster, or a log cleaned past it).
    """
    order = Window.partitionBy("cluster_id", "node_id", "topic", "partition").orderBy("entry")
    entries = leader_epochs.withColumn("_next", F.lead("start_offset").over(order))
    if ranges is not None:
        ends = ranges.select(*(F.col(c).alias(f"_e_{c}") for c in ("cluster_id", "topic", "partition", "node_id")),
                             "log_end_offset")
        entries = entries.join(ends, [entries[c].eqNullSafe(ends[f"_e_{c}"])
                                      for c in ("cluster_id", "topic", "partition", "node_id")], "left")
    else:
        entries = entries.withColumn("log_end_offset", F.lit(None).cast("long"))
    latest = Window.partitionBy("cluster_id", "topic")
    led = (history.where(F.col("topic").isNotNull())
           .withColumn("_last", F.max_by("topic_id", "offset").over(latest))
           .where(F.col("topic_id") == F.col("_last"))
           .select(*(F.col(c).alias(f"_h_{c}") for c in ("cluster_id", "topic", "partition", "epoch")),
                   "leader", F.col("time").alias("elected"), "unclean"))
    keys = ("cluster_id", "topic", "partition", "epoch")
    joined = entries.join(led, [entries[c].eqNullSafe(led[f"_h_{c}"]) for c in keys], "left")
    return joined.select("cluster_id", "topic", "partition", "node_id", "epoch", "start_offset",
                         F.coalesce("_next", "log_end_offset").alias("end_offset"), "leader", "elected", "unclean")


#: Columns of :func:`election_losses`.
LOSS_COLUMNS = ("cluster_id", "topic", "partition", "epoch", "leader", "previous_leader", "elected", "new_start",
                "old_end", "lost_batches", "lost_records", "first_time", "last_time", "truncated_at")


def election_losses(history: DataFrame, epochs: DataFrame, batches: DataFrame,
                    cuts: DataFrame | None = None) -> DataFrame:
    """What each unclean election of another broker lost, where both replicas' copies are in the bundle.

    For an election under epoch ``E`` of broker ``L`` after broker ``P`` led: ``new_start`` is where
    ``L``'s log went on (its checkpoint's first entry at ``E`` or later), ``old_end`` where ``P``'s
    copy of the epochs before ``E`` ends. When ``old_end > new_start``, ``P`` held offsets
    ``[new_start, old_end)`` that ``L`` never had: Kafka truncates ``P`` to ``new_start`` when it
    follows ``L``, so they are lost (``lost_batches``, ``lost_records`` and the batches' times, from
    ``P``'s batches in ``batches``, the ``replica_batches`` table). A ``P`` that returned and
    truncated holds nothing past ``new_start`` any more: with ``cuts`` (:func:`~.truncations.truncations`),
    its first truncation after the election that says what it dropped gives ``old_end`` (its log end
    at start-up), ``lost_records`` and ``truncated_at``; the batches and their times are gone (null).
    Columns :data:`LOSS_COLUMNS`; ``new_start``/``old_end`` null when neither a checkpoint nor a
    truncation line in the bundle tells.
    """
    part = ("cluster_id", "topic", "partition")
    elections = (history.where(F.col("unclean") & ~F.col("previous_leader").eqNullSafe(F.col("leader"))
                               & F.col("topic").isNotNull())
                 .select(*part, "epoch", "leader", "previous_leader", F.col("time").alias("elected")))

    def keyed(frame: DataFrame, prefix: str, *kept: str) -> DataFrame:
        return frame.select(*(F.col(c).alias(f"{prefix}{c}") for c in (*part, "node_id")), *kept)

    def on(left: DataFrame, right: DataFrame, prefix: str) -> list:
        return [left[c].eqNullSafe(right[f"{prefix}{c}"]) for c in part]

    new = keyed(epochs, "_n_", F.col("epoch").alias("_n_epoch"), "start_offset")
    starts = (elections.join(new, on(elections, new, "_n_") + [new["_n_node_id"] == elections["leader"],
                                                                 new["_n_epoch"] >= elections["epoch"]], "left")
              .groupBy(*part, "epoch", "leader", "previous_leader", "elected")
              .agg(F.min("start_offset").alias("new_start")))
    old = keyed(epochs, "_o_", F.col("epoch").alias("_o_epoch"), "end_offset")
    ends = (starts.join(old, on(starts, old, "_o_") + [old["_o_node_id"] == starts["previous_leader"],
                                                       old["_o_epoch"] < starts["epoch"]], "left")
            .groupBy(*part, "epoch", "leader", "previous_leader", "elected", "new_start")
            .agg(F.max("end_offset").alias("old_end")))
    held = keyed(batches, "_b_", F.col("base_offset").alias("_b_base_offset"),
                 F.col("partition_leader_epoch").alias("_b_partition_leader_epoch"), "record_count", "max_timestamp")
    lost = held["_b_base_offset"] >= ends["new_start"]
    joined = ends.join(held, on(ends, held, "_b_") + [held["_b_node_id"] == ends["previous_leader"],
                                                      held["_b_partition_leader_epoch"] < ends["epoch"], lost,
                                                      held["_b_base_offset"] < ends["old_end"]], "left")
    copied = (joined.groupBy(*part, "epoch", "leader", "previous_leader", "elected", "new_start", "old_end")
              .agg(F.count("_b_base_offset").alias("lost_batches"),
                   F.sum("record_count").cast("long").alias("lost_records"),
                   F.min("max_timestamp").alias("first_time"), F.max("max_timestamp").alias("last_time")))
    if cuts is None:
        return copied.withColumn("truncated_at", F.lit(None).cast("timestamp")).select(*LOSS_COLUMNS)
    told = cuts.where(F.col("dropped").isNotNull()).select(
        *(F.col(c).alias(f"_t_{c}") for c in (*part, "node_id", "time", "truncated_to", "end_before", "dropped")))
    first_cut = Window.partitionBy(*part, "epoch").orderBy("_t_time")
    matched = (copied.join(told, on(copied, told, "_t_") + [told["_t_node_id"] == copied["previous_leader"],
                                                             told["_t_time"] >= copied["elected"]], "left")
               .withColumn("_n", F.row_number().over(first_cut)).where(F.col("_n") == 1))
    # the copy in the bundle lost nothing past the new start (or is not there): the truncation line tells
    by_cut = ((F.coalesce("lost_records", F.lit(0)) == 0) & F.col("_t_dropped").isNotNull()
              & (F.col("_t_dropped") > 0))
    return matched.select(
        *part, "epoch", "leader", "previous_leader", "elected",
        F.when(by_cut, F.coalesce("new_start", "_t_truncated_to")).otherwise(F.col("new_start")).alias("new_start"),
        F.when(by_cut, F.col("_t_end_before")).otherwise(F.col("old_end")).alias("old_end"),
        F.when(by_cut, F.lit(None).cast("long")).otherwise(F.col("lost_batches")).alias("lost_batches"),
        F.when(by_cut, F.col("_t_dropped")).otherwise(F.col("lost_records")).alias("lost_records"),
        F.when(by_cut, F.lit(None).cast("timestamp")).otherwise(F.col("first_time")).alias("first_time"),
        F.when(by_cut, F.lit(None).cast("timestamp")).otherwise(F.col("last_time")).alias("last_time"),
        F.when(by_cut, F.col("_t_time")).alias("truncated_at")).select(*LOSS_COLUMNS)


def unclean_elections(history: DataFrame, losses: DataFrame | None = None) -> DataFrame:
    """The unclean rows of :func:`leader_history` with what each lost (:func:`election_losses`'s
    ``new_start, old_end, lost_batches, lost_records, first_time, last_time, truncated_at``; null when unknown)."""
    rows = history.where(F.col("unclean"))
    if losses is None:
        return rows.select("*", *(F.lit(None).cast(t).alias(c) for c, t in (
            ("new_start", "long"), ("old_end", "long"), ("lost_batches", "long"), ("lost_records", "long"),
            ("first_time", "timestamp"), ("last_time", "timestamp"), ("truncated_at", "timestamp"))))
    keys = ("cluster_id", "topic", "partition", "epoch")
    found = losses.select(*(F.col(c).alias(f"_l_{c}") for c in keys), "new_start", "old_end", "lost_batches",
                          "lost_records", "first_time", "last_time", "truncated_at")
    return rows.join(found, [rows[c].eqNullSafe(found[f"_l_{c}"]) for c in keys], "left").drop(
        *(f"_l_{c}" for c in keys))


def unclean_findings(history: DataFrame, losses: DataFrame | None = None, groups: DataFrame | None = None
                     ) -> DataFrame:
    """One finding per election of a leader from outside the ISR (:func:`leader_history`'s ``unclean``).

    ``unclean_election``, critical: another broker than the partition's last leader was elected, so
    whatever the last leader wrote past the new leader's log end is gone; with ``losses``
    (:func:`election_losses`) the finding names those records where the bundle holds both copies
    (figure ``lost_records``). ``unclean_reelection``,
    warning: the last leader itself came back and was elected from outside the ISR (Kafka marks it
    ``RECOVERING`` all the same): no other replica's records were lost, but what the broker had not
    flushed before it stopped may be. With ``groups`` (:func:`~.truncations.groups_beyond`) it names
    the consumer groups that had committed past the new leader's log end (figure ``groups_past_end``).
    Subject ``orders-3`` (the cluster named when the bundle's metadata spans several).
    """
    from workbench.analysis.findings import FINDINGS_COLUMNS
    from workbench.analysis.text import time_text

    clusters = F.size(F.collect_set(F.coalesce("cluster_id", F.lit(""))).over(Window.partitionBy()))
    part = F.concat(F.coalesce("topic", "topic_id"), F.lit("-"), F.col("partition").cast("string"))
    subject = F.when(clusters > 1, F.concat(F.lit("cluster "), F.coalesce("cluster_id", F.lit("?")), F.lit(": "), part)
                     ).otherwise(part)
    def listed(column: str) -> Column:
        return F.concat(F.lit("["), F.array_join(F.transform(F.coalesce(column, F.array().cast("array<int>")),
                                                             lambda n: n.cast("string")), ", "), F.lit("]"))

    isr = F.when((F.size(F.coalesce("isr_before", F.array())) == 0) & F.col("last_isr").isNotNull(),
                 F.concat(listed("isr_before"), F.lit(" (its last in-sync replicas: "), listed("last_isr"), F.lit(")"))
                 ).otherwise(listed("isr_before"))
    marked = F.when(F.col("leader_recovery_state") == RECOVERING,
                    F.lit("; Kafka marked its recovery RECOVERING")).otherwise(F.lit(""))
    again = F.col("previous_leader").eqNullSafe(F.col("leader"))
    before = F.coalesce(F.col("previous_leader").cast("string"), F.lit("?"))
    written = F.when(F.col("first_time").isNotNull(), F.concat(F.lit(", written "), time_text("first_time"),
                                                               F.lit(" to "), time_text("last_time")))
    cut = F.when(F.col("truncated_at").isNotNull(), F.concat(
        F.lit(": broker "), before, F.lit(" dropped them when it returned and truncated to offset "),
        F.col("new_start").cast("string"), F.lit(" at "), time_text("truncated_at"), F.lit(" (its server log)")))
    counted = F.concat(
        F.lit(": "), F.col("lost_records").cast("string"), F.lit(" record(s) (offsets "),
        F.col("new_start").cast("string"), F.lit("–"), (F.col("old_end") - 1).cast("string"),
        F.coalesce(written, F.lit("")), F.lit(") that broker "), before,
        F.lit(", its last leader, held past the new leader's log end were lost"), F.coalesce(cut, F.lit("")))
    outcome = (F.when(again, F.lit(": it led the partition last, so no other replica's records were lost (what it "
                                   "had not flushed before it stopped may be)"))
               .when(F.col("lost_records") > 0, counted)
               .when(F.col("old_end") <= F.col("new_start"),
                     F.concat(F.lit(": broker "), before,
                              F.lit("'s copy in the bundle holds nothing past the new leader's log end (it lost "
                                    "nothing, or had truncated)")))
               .otherwise(F.concat(F.lit(": what broker "), before,
                                   F.lit(", its last leader, wrote past the new leader's log end was lost"))))
    rows = unclean_elections(history, losses)
    keys = ("cluster_id", "topic", "partition", "epoch")
    if groups is not None:
        told = (groups.groupBy(*keys).agg(
            F.count("group").alias("_groups"),
            F.array_join(F.array_sort(F.collect_list(F.concat(
                F.col("group"), F.lit(" (offset "), F.col("committed_offset").cast("string"), F.lit(")")))), ", ")
            .alias("_named"))
            .select(*(F.col(c).alias(f"_g_{c}") for c in keys), "_groups", "_named"))
        rows = rows.join(told, [rows[c].eqNullSafe(told[f"_g_{c}"]) for c in keys], "left")
    else:
        rows = rows.withColumn("_groups", F.lit(None).cast("long")).withColumn("_named", F.lit(None).cast("string"))
    past = F.when(F.col("_groups") > 0, F.concat(
        F.lit("; consumer group(s) that had committed past the new log end ("), F.col("new_start").cast("string"),
        F.lit("), whose next fetch resets them: "), F.col("_named")))
    rows = rows.withColumn("_subject", subject)
    summary = F.concat(F.col("_subject"), F.lit(": broker "), F.col("leader").cast("string"),
                       F.lit(" was elected leader from outside the ISR "), isr, F.lit(" at "), time_text("time"),
                       F.lit(" (leader epoch "), F.col("epoch").cast("string"), F.lit(")"), marked, outcome,
                       F.coalesce(past, F.lit("")))
    return rows.select(
        F.lit("replicas").alias("area"),
        F.when(again, F.lit("unclean_reelection")).otherwise(F.lit("unclean_election")).alias("kind"),
        F.when(again, F.lit("warning")).otherwise(F.lit("critical")).alias("severity"),
        F.lit("partition").alias("subject_type"), F.col("_subject").alias("subject"), F.col("time").alias("start"),
        F.col("time").alias("end"), summary.alias("summary"),
        F.map_filter(F.create_map(
            F.lit("epoch"), F.col("epoch").cast("double"), F.lit("leader"), F.col("leader").cast("double"),
            F.lit("offset"), F.col("offset").cast("double"),
            F.lit("lost_records"), F.col("lost_records").cast("double"),
            F.lit("groups_past_end"), F.col("_groups").cast("double")),
            lambda _k, v: v.isNotNull()).alias("figures")).select(*FINDINGS_COLUMNS)
