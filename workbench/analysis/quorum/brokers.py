"""Brokers' registrations, fences and unfences in the metadata log, and each node's role."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.quorum.leaders import _voter_ids

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


#: Columns of :func:`fence_events`.
FENCE_COLUMNS = ("time", "offset", "broker_id", "broker_epoch", "event", "record_type", "episode_start",
                 "episode_end")


def broker_changes(metadata: DataFrame) -> DataFrame:
    """Broker registrations and their changes, one row per record of the metadata log.

    The only reader of these records' fields in this module: with the ``metadata`` table's typed
    columns (``broker_id, broker_epoch, fenced, in_controlled_shutdown``) it reads those, else the
    ``fields`` JSON.

    Returns
    -------
    DataFrame
        ``time, offset, record_type, broker_id, broker_epoch, fenced`` (true: fenced, false:
        unfenced, null: unchanged), ``in_controlled_shutdown`` (true when it began).
    """
    types = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "FenceBrokerRecord",
             "UnfenceBrokerRecord", "UnregisterBrokerRecord")
    rows = metadata.where((F.col("file_kind") == "segment") & F.col("record_type").isin(*types))
    rtype = F.col("record_type")
    if {"broker_id", "broker_epoch", "fenced", "in_controlled_shutdown"} <= set(metadata.columns):
        broker, epoch, fenced, shutdown = (F.col("broker_id"), F.col("broker_epoch"), F.col("fenced"),
                                           F.col("in_controlled_shutdown"))
    else:
        def field(name: str) -> Column:
            return F.get_json_object("fields", f"$.{name}")

        broker = F.coalesce(field("brokerId"), field("id")).cast("int")
        epoch = F.coalesce(field("brokerEpoch"), field("epoch")).cast("long")
        flag = field("fenced")
        fenced = (F.when(rtype == "FenceBrokerRecord", F.lit(True))
                  .when(rtype == "UnfenceBrokerRecord", F.lit(False))
                  .when(rtype == "RegisterBrokerRecord", F.coalesce(flag.cast("boolean"), F.lit(True)))
                  .when(rtype == "BrokerRegistrationChangeRecord",
                        F.when(flag == "1", F.lit(True)).when(flag == "-1", F.lit(False))))
        ics = field("inControlledShutdown")
        shutdown = (F.when(rtype == "RegisterBrokerRecord", ics.cast("boolean"))
                    .when(rtype == "BrokerRegistrationChangeRecord", F.when(ics == "1", F.lit(True))))
    return (rows.select(F.col("timestamp").alias("time"), "offset", "record_type", broker.alias("broker_id"),
                        epoch.alias("broker_epoch"), fenced.alias("fenced"), shutdown.alias("in_controlled_shutdown"))
            .dropDuplicates(["offset"]))


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
