"""Truncations: where a broker cut a partition's log back, and how many records it dropped.

A replica that becomes a follower asks its new leader where their logs agree and truncates to
there; an old leader returning after an unclean election drops everything it held past the new
leader's start. Once truncated, the records are gone from its disk: what is left is the broker's
text log — the ``truncated`` line (where the log now ends) and the ``log_loaded`` line of its last
start-up (where it ended then). From the ``events`` table (:mod:`workbench.formats.brokerlog`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: Columns of :func:`truncations`.
TRUNCATION_COLUMNS = ("cluster_id", "topic", "partition", "node_id", "time", "truncated_to", "end_before",
                      "dropped", "loaded", "path", "line_no")
_KEY = ("cluster_id", "topic", "partition", "node_id")


def truncations(events: DataFrame) -> DataFrame:
    """One row per truncation a broker's text log records, with what it dropped where the log tells.

    ``truncated_to`` is where the replica's log ends after the truncation. ``end_before`` is its end
    before: the log end of the broker's last load of the partition (``loaded``, its start-up) when
    nothing could have moved it since — no other truncation, no leadership (a leader appends), at
    most one start as a follower (a follower truncates before it fetches); else null.
    ``dropped`` = ``end_before - truncated_to`` (0 when the log did not reach that far), null when
    ``end_before`` is. Columns :data:`TRUNCATION_COLUMNS`, one row per ``truncated`` event.
    """
    require_columns(events, ("kind", "cluster_id", "topic", "partition", "node_id", "time", "offset", "path",
                             "line_no"), "the truncations")
    ev = events.where(F.col("kind").isin("log_loaded", "truncated", "leader_start", "follower_start")
                      & F.col("topic").isNotNull() & F.col("partition").isNotNull() & F.col("node_id").isNotNull())
    # a node's events of one partition in time order; each load starts a run that the events after it belong to
    order = Window.partitionBy(*_KEY).orderBy("time", "path", "line_no")
    upto = order.rowsBetween(Window.unboundedPreceding, 0)
    ev = ev.withColumn("_run", F.sum((F.col("kind") == "log_loaded").cast("int")).over(upto))
    run = Window.partitionBy(*_KEY, "_run").orderBy("time", "path", "line_no")
    before = run.rowsBetween(Window.unboundedPreceding, -1)

    def count(kind: str) -> Column:
        return F.coalesce(F.sum((F.col("kind") == kind).cast("int")).over(before), F.lit(0))

    ev = (ev.withColumn("_loaded_end", F.first(F.when(F.col("kind") == "log_loaded", F.col("offset")),
                                               ignorenulls=True).over(run.rowsBetween(Window.unboundedPreceding, 0)))
          .withColumn("_loaded_at", F.first(F.when(F.col("kind") == "log_loaded", F.col("time")),
                                            ignorenulls=True).over(run.rowsBetween(Window.unboundedPreceding, 0)))
          .withColumn("_cuts", count("truncated")).withColumn("_leads", count("leader_start"))
          .withColumn("_follows", count("follower_start")))
    cut = ev.where(F.col("kind") == "truncated")
    known = (F.col("_run") > 0) & (F.col("_cuts") == 0) & (F.col("_leads") == 0) & (F.col("_follows") <= 1)
    end_before = F.when(known, F.col("_loaded_end"))
    return cut.select(
        *_KEY, "time", F.col("offset").alias("truncated_to"), end_before.alias("end_before"),
        F.when(end_before.isNotNull(), F.greatest(end_before - F.col("offset"), F.lit(0))).alias("dropped"),
        F.when(known, F.col("_loaded_at")).alias("loaded"), "path", "line_no").select(*TRUNCATION_COLUMNS)


#: Columns of :func:`groups_beyond`.
GROUP_COLUMNS = ("cluster_id", "topic", "partition", "epoch", "elected", "new_start", "group", "committed_offset",
                 "committed_at", "next_offset", "next_at")


def groups_beyond(offsets: DataFrame, losses: DataFrame) -> DataFrame:
    """The consumer groups whose committed offset was past the new leader's log end when an election lost records.

    For each row of :func:`~.epochs.election_losses` whose ``new_start`` is known, each group's last
    commit of that partition at or before the election (``committed_offset``, ``committed_at``; the
    ``offsets`` table, every replica's copy of ``__consumer_offsets`` read as one) when it is past
    ``new_start``: the group has read records that are gone, and its next fetch past the log end
    makes the consumer reset (``auto.offset.reset``). ``next_offset``/``next_at``: the group's first
    commit after the election (a reset shows as a commit back), null when none is in the bundle.
    Commits are matched by topic name and partition (``__consumer_offsets`` names no cluster).
    Columns :data:`GROUP_COLUMNS`.
    """
    require_columns(offsets, ("record_kind", "deleted", "group", "topic", "partition", "committed_offset",
                              "commit_timestamp", "timestamp", "is_transactional", "txn_outcome", "error"),
                    "the groups past a lost log end")
    # commits that took effect: not a tombstone, decoded, outside a transaction or in a committed one
    commits = (offsets.where((F.col("record_kind") != "TxnMarker") & ~F.coalesce("deleted", F.lit(False))
                             & F.col("committed_offset").isNotNull() & F.col("group").isNotNull()
                             & F.col("error").isNull()
                             & (~F.coalesce("is_transactional", F.lit(False)) | (F.col("txn_outcome") == "COMMIT")))
               .select(F.col("topic").alias("_c_topic"), F.col("partition").alias("_c_partition"), "group",
                       "committed_offset", F.coalesce("commit_timestamp", "timestamp").alias("_at"))
               .dropDuplicates())
    keys = ("cluster_id", "topic", "partition", "epoch", "elected", "new_start")
    lost = losses.where(F.col("new_start").isNotNull()).select(*keys)
    joined = lost.join(commits, (lost["topic"] == commits["_c_topic"]) & (lost["partition"] == commits["_c_partition"]))
    before = (joined.where(F.col("_at") <= F.col("elected")).groupBy(*keys, "group")
              .agg(F.max_by("committed_offset", "_at").alias("committed_offset"), F.max("_at").alias("committed_at"))
              .where(F.col("committed_offset") > F.col("new_start")))
    after = (joined.where(F.col("_at") > F.col("elected")).groupBy(*keys, "group")
             .agg(F.min_by("committed_offset", "_at").alias("next_offset"), F.min("_at").alias("next_at")))
    on = [before[c].eqNullSafe(after[c]) for c in (*keys, "group")]
    return (before.join(after, on, "left")
            .select(*(before[c] for c in (*keys, "group", "committed_offset", "committed_at")),
                    "next_offset", "next_at").select(*GROUP_COLUMNS))
