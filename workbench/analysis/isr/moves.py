"""Which replica left or joined each partition's ISR, and the broker event of the metadata log that explains it.

A shrink and an expand of the same size (one replica out, another in) are both told: the ISR's
size alone would hide them. A replica leaves the ISR because the controller fenced its broker
(its session expired: the fence and the ISR changes are written in one batch), because its
broker began a controlled shutdown, or because its leader found it behind for longer than
``replica.lag.time.max.ms`` (no broker event at all). It joins again once caught up, usually
after its broker was unfenced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: Columns of :func:`replica_moves`.
MOVE_COLUMNS = ("cluster_id", "topic", "topic_id", "partition", "time", "replica", "move", "cause", "cause_time")
#: How far apart the broker's event and the ISR change may be written for the one to explain the other:
#: the controller writes a fence and the ISR changes it causes in one batch, whose records share its
#: append time; a leader's own shrink (AlterPartition) is a batch of its own, and on a loaded controller
#: it can land within a second of an unrelated fence, so only the same time counts.
CAUSE_SKEW_MS = 0
#: A replica that joins within this long of its broker's unfence rejoined after the unfence; later, it
#: had caught up on its own.
REJOIN_MS = 60_000


def replica_moves(states: DataFrame, changes: DataFrame | None = None) -> DataFrame:
    """Every replica that left or joined a partition's ISR, with the broker event that explains it.

    Parameters
    ----------
    states : DataFrame
        From :func:`~workbench.analysis.isr.partition_states`.
    changes : DataFrame, optional
        :func:`~workbench.analysis.metadata_log.broker_changes` of the same clusters; without it,
        and for a cluster none of whose records it holds (a ZooKeeper-era one), ``cause`` is null.

    Returns
    -------
    DataFrame
        :data:`MOVE_COLUMNS`: ``move`` is ``left`` or ``joined``; ``cause`` of a leave is ``fenced``,
        ``controlled_shutdown`` (the broker's event written closest to it, within :data:`CAUSE_SKEW_MS`) or
        ``fell_behind`` (none: its leader shrank the ISR); of a join, ``unfenced`` (within
        :data:`REJOIN_MS` after the broker's unfence, itself after the replica's last leave) or
        ``caught_up``; ``cause_time`` is the event's.
    """
    require_columns(states, ("cluster_id", "topic", "topic_id", "partition", "start", "start_offset", "isr"),
                    "replica_moves")
    order = Window.partitionBy("cluster_id", "topic_id", "partition").orderBy("start", "start_offset")
    steps = states.select("cluster_id", "topic", "topic_id", "partition", F.col("start").alias("time"), "isr",
                          F.lag("isr").over(order).alias("_before"))
    steps = steps.where(F.col("_before").isNotNull())
    keys = ["cluster_id", "topic", "topic_id", "partition", "time"]
    moves = (steps.select(*keys, F.explode(F.array_except("_before", "isr")).alias("replica"),
                          F.lit("left").alias("move"))
             .unionByName(steps.select(*keys, F.explode(F.array_except("isr", "_before")).alias("replica"),
                                       F.lit("joined").alias("move"))))
    if changes is None:
        return moves.select(*keys, "replica", "move", F.lit(None).cast("string").alias("cause"),
                            F.lit(None).cast("timestamp").alias("cause_time"))
    kind = (F.when(F.col("fenced") == F.lit(True), F.lit("fenced"))
            .when(F.col("fenced") == F.lit(False), F.lit("unfenced"))
            .when(F.col("in_controlled_shutdown"), F.lit("controlled_shutdown")))
    events = (changes.select(F.col("cluster_id").alias("_cluster"), F.col("broker_id").alias("_broker"),
                             F.col("time").alias("_t"), F.col("offset").alias("_o"), kind.alias("_kind"))
              .where(F.col("_kind").isNotNull()))
    # a join follows the unfence that ended the replica's last leave, not an unfence before that leave
    earlier = (Window.partitionBy("cluster_id", "topic_id", "partition", "replica").orderBy("time")
               .rowsBetween(Window.unboundedPreceding, -1))
    tagged = (moves.withColumn("_left_before", F.max(F.when(F.col("move") == "left", F.col("time"))).over(earlier))
              .withColumn("_move", F.monotonically_increasing_id()))
    near = tagged.join(events, tagged["cluster_id"].eqNullSafe(events["_cluster"])
                       & (tagged["replica"] == events["_broker"])
                       & (F.unix_millis("_t") <= F.unix_millis("time") + CAUSE_SKEW_MS), "left")
    # a leave: the broker's fence or controlled shutdown written closest to it (the batch that holds
    # the change holds the event); a join: the broker's last event before it
    apart = F.abs(F.unix_millis("time") - F.unix_millis("_t"))
    closest = F.min_by(F.struct("_t", "_kind"), F.when((apart <= CAUSE_SKEW_MS)
                                                     & F.col("_kind").isin("fenced", "controlled_shutdown"),
                                                     F.struct(apart, F.col("_o"))))
    last = F.max_by(F.struct("_t", "_kind"), F.when(F.col("_t") <= F.col("time"), F.struct("_t", "_o")))
    found = near.groupBy("_move", *keys, "replica", "move", "_left_before").agg(closest.alias("_closest"),
                                                                                 last.alias("_last"))
    since_ms = F.unix_millis("time") - F.unix_millis(F.col("_last._t"))
    rejoined = ((F.col("_last._kind") == "unfenced") & (since_ms <= REJOIN_MS)
                & (F.col("_left_before").isNull() | (F.col("_last._t") >= F.col("_left_before"))))
    event = (F.when(F.col("move") == "left", F.col("_closest"))
             .otherwise(F.when(rejoined, F.col("_last"))))
    cause = F.coalesce(event.getField("_kind"),
                       F.when(F.col("move") == "left", F.lit("fell_behind")).otherwise(F.lit("caught_up")))
    # a cluster whose log holds no broker record (a ZooKeeper-era one) says nothing of causes
    logged = changes.select(F.col("cluster_id").alias("_logged"), F.lit(True).alias("_has_log")).distinct()
    found = found.join(logged, found["cluster_id"].eqNullSafe(logged["_logged"]), "left")
    return found.select(*keys, "replica", "move", F.when(F.col("_has_log"), cause).alias("cause"),
                        F.when(F.col("_has_log"), event.getField("_t")).alias("cause_time"))


def move_summary(moves: DataFrame) -> DataFrame:
    """Per partition and replica (of :func:`replica_moves`): how often it left and joined the ISR, and why.

    Returns
    -------
    DataFrame
        ``cluster_id, topic, topic_id, partition, replica, left, joined, fenced, controlled_shutdown,
        fell_behind, first, last``, most moves first.
    """
    def count(condition: Column) -> Column:
        return F.sum(F.when(condition, 1).otherwise(0))

    return (moves.groupBy("cluster_id", "topic", "topic_id", "partition", "replica")
            .agg(count(F.col("move") == "left").alias("left"), count(F.col("move") == "joined").alias("joined"),
                 count(F.col("cause") == "fenced").alias("fenced"),
                 count(F.col("cause") == "controlled_shutdown").alias("controlled_shutdown"),
                 count(F.col("cause") == "fell_behind").alias("fell_behind"),
                 F.min("time").alias("first"), F.max("time").alias("last"))
            .orderBy(F.col("left").desc(), "topic", "partition", "replica"))


def moves_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """:func:`replica_moves` of a bundle's partition states and metadata log, kept once per bundle (the
    flapping findings and the notebook's table both read it)."""
    from workbench.analysis.isr.inputs import _static_key, static_min_isr
    from workbench.analysis.isr.states import states_for
    from workbench.analysis.metadata_log import broker_changes

    key = _static_key(static_min_isr(tables, params))
    return tables.derive(f"isr.moves:{key}",
                         lambda: replica_moves(states_for(tables, params), broker_changes(tables.metadata)))
