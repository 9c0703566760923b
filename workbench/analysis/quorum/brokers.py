"""Brokers' registrations, fences and unfences in the metadata log, and each node's role."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.metadata_log import broker_changes
from workbench.analysis.quorum.leaders import _voter_ids

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


#: Columns of :func:`fence_events`.
FENCE_COLUMNS = ("time", "offset", "broker_id", "broker_epoch", "event", "record_type", "episode_start",
                 "episode_end")


def fence_events(metadata: DataFrame, episodes: DataFrame | None = None) -> DataFrame:
    """Broker fence, unfence, registration and controlled-shutdown events, joined to divergence episodes.

    Parameters
    ----------
    metadata : DataFrame
        The ``metadata`` table.
    episodes : DataFrame, optional
        From :func:`divergence_episodes`: an event of a broker during one of its episodes (from
        the episode's start to its end, or on, for an open one) carries the episode's bounds.

    Returns
    -------
    DataFrame
        One row per event, :data:`FENCE_COLUMNS`: ``time, offset, broker_id, broker_epoch,
        event`` (``registered``, ``registered_fenced``, ``fenced``, ``unfenced``,
        ``controlled_shutdown``, ``unregistered``), ``record_type, episode_start, episode_end``.

    Examples
    --------
    >>> fence_events(tables.metadata).where("event = 'fenced'").show()    # doctest: +SKIP
    """
    require_columns(metadata, ("file_kind", "record_type", "timestamp", "offset"), "fence_events")
    changes = broker_changes(metadata)
    rtype = F.col("record_type")
    event = (F.when(rtype == "UnregisterBrokerRecord", F.lit("unregistered"))
             .when(rtype == "RegisterBrokerRecord",
                   F.when(F.col("fenced"), F.lit("registered_fenced")).otherwise(F.lit("registered")))
             .when(F.col("fenced") == F.lit(True), F.lit("fenced"))
             .when(F.col("fenced") == F.lit(False), F.lit("unfenced"))
             .when(F.col("in_controlled_shutdown"), F.lit("controlled_shutdown")))
    events = (changes.withColumn("event", event).where(F.col("event").isNotNull())
              .select("time", "offset", "broker_id", "broker_epoch", "event", "record_type"))
    if episodes is None:
        return (events.withColumn("episode_start", F.lit(None).cast("timestamp"))
                .withColumn("episode_end", F.lit(None).cast("timestamp")).select(*FENCE_COLUMNS).orderBy("offset"))
    eps = episodes.select(F.col("node_id").alias("_node"), F.col("start").alias("episode_start"),
                          F.col("end").alias("episode_end"))
    cond = ((F.col("broker_id") == F.col("_node")) & (F.col("time") >= F.col("episode_start"))
            & (F.col("episode_end").isNull() | (F.col("time") <= F.col("episode_end"))))
    return events.join(eps, cond, "left").select(*FENCE_COLUMNS).orderBy("offset")


def node_roles(metadata: DataFrame, configs: DataFrame | None = None) -> DataFrame:
    """Each node's role: ``controller``, ``broker`` or ``controller+broker``.

    From ``process.roles`` in the nodes' properties when the bundle has them, else from the
    metadata log (brokers register with ``RegisterBrokerRecord``, controllers with
    ``RegisterControllerRecord`` or appear as voters of a LeaderChange record).

    Returns
    -------
    DataFrame
        One row per node: ``node_id, role``.
    """
    spark = metadata.sparkSession
    pairs = spark.createDataFrame([], "node_id int, r string")
    if configs is not None:
        pairs = pairs.unionByName(
            configs.where((F.col("scope") == "static") & (F.col("name") == "process.roles"))
            .select(F.col("node_id").cast("int"), F.explode(F.split("value", r"\s*,\s*")).alias("r")))
    brokers = (metadata.where(F.col("record_type") == "RegisterBrokerRecord")
               .select(F.get_json_object("fields", "$.brokerId").cast("int").alias("node_id"),
                       F.lit("broker").alias("r")))
    if "broker_id" in metadata.columns:
        brokers = (metadata.where(F.col("record_type") == "RegisterBrokerRecord")
                   .select(F.col("broker_id").alias("node_id"), F.lit("broker").alias("r")))
    controller_id = F.get_json_object("fields", "$.controllerId").cast("int")
    if "broker_id" in metadata.columns:  # the typed column holds a RegisterControllerRecord's controllerId
        controller_id = F.coalesce(F.col("broker_id"), controller_id)
    controllers = (metadata.where(F.col("record_type") == "RegisterControllerRecord")
                   .select(controller_id.alias("node_id"), F.lit("controller").alias("r")))
    voters = (metadata.where(F.col("record_type") == "LEADER_CHANGE")
              .select(F.explode(_voter_ids("fields", "$.voters")).alias("node_id"), F.lit("controller").alias("r")))
    logged = brokers.unionByName(controllers).unionByName(voters).where(F.col("node_id").isNotNull())
    from_props = pairs.select("node_id").distinct()
    all_pairs = pairs.unionByName(logged.join(from_props, "node_id", "left_anti")).distinct()
    return (all_pairs.groupBy("node_id").agg(F.array_sort(F.collect_set("r")).alias("_r"))
            .select("node_id", F.when(F.size("_r") > 1, F.lit("controller+broker"))
                    .otherwise(F.col("_r")[0]).alias("role")))
