"""The KRaft metadata log as one ordered stream of records, from any number of node replicas.

Every controller and broker keeps a replica of ``__cluster_metadata-0``. Committed records are
the same on every replica, so the analyses read one stream per cluster: each offset once, taking the record
of the highest leader epoch where replicas diverge (a divergent uncommitted tail is truncated and
rewritten in a later epoch). A bundle with a single replica whose segment files cover disjoint
offset ranges needs no such choice (and skips the shuffle it costs). When the oldest log segment
no longer starts at offset 0, the newest
snapshot that ends at or before the log start seeds the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_NEEDED = ("node_id", "cluster_id", "file_kind", "file_offset", "offset", "timestamp", "leader_epoch", "is_control",
           "record_type")


def broker_changes(metadata: DataFrame) -> DataFrame:
    """Broker registrations and their changes, one row per record of the metadata log.

    The only reader of these records' fields in this module: with the ``metadata`` table's typed
    columns (``broker_id, broker_epoch, fenced, in_controlled_shutdown``) it reads those, else the
    ``fields`` JSON.

    Returns
    -------
    DataFrame
        ``time, offset, record_type, broker_id, broker_epoch, fenced`` (true: fenced, false:
        unfenced, null: unchanged), ``in_controlled_shutdown`` (true when it began), ``cluster_id``
        (each cluster's records once, whichever of its nodes' copies held them).
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
    cluster = F.col("cluster_id") if "cluster_id" in metadata.columns else F.lit(None).cast("string")
    return (rows.select(F.col("timestamp").alias("time"), "offset", "record_type", broker.alias("broker_id"),
                        epoch.alias("broker_epoch"), fenced.alias("fenced"), shutdown.alias("in_controlled_shutdown"),
                        cluster.alias("cluster_id"))
            .dropDuplicates(["cluster_id", "offset"]))


def ordered_records(metadata: DataFrame) -> DataFrame:
    """One row per metadata-log position of each cluster, deduplicated across node replicas.

    Each cluster (``cluster_id``; null for nodes of unknown cluster) has its own log, deduplicated and
    seeded from its own snapshots. Adds ``seq`` (order within a seeding snapshot, 0 for log records):
    order by ``cluster_id, offset, seq`` to replay. Control records are kept.

    >>> ordered_records(tables.metadata).orderBy("cluster_id", "offset", "seq").show()   # doctest: +SKIP
    """
    require_columns(metadata, _NEEDED, "ordered_records")
    found = metadata.where(F.col("file_kind").isin("segment", "snapshot")).groupBy(
        "cluster_id", "node_id", "path", "file_kind").agg(F.min("offset").alias("first"), F.max("offset").alias("last"))
    spans: dict[str | None, list[tuple[int, int, int]]] = {}
    for r in found.collect():
        files = spans.setdefault(r["cluster_id"], [])
        if r["file_kind"] == "segment" and r["first"] is not None:
            files.append((r["first"], r["last"], r["node_id"]))
    if len(spans) <= 1:
        return _cluster_records(metadata, sorted(next(iter(spans.values()), [])))
    out = None
    for cluster in sorted(spans, key=lambda c: (c is None, c or "")):
        one = _cluster_records(metadata.where(F.col("cluster_id").eqNullSafe(F.lit(cluster).cast("string"))),
                               sorted(spans[cluster]))
        out = one if out is None else out.unionByName(one)
    return out


def _cluster_records(metadata: DataFrame, spans: list[tuple[int, int, int]]) -> DataFrame:
    """:func:`ordered_records` of one cluster's rows (``spans``: its segments' first and last offsets and node)."""
    log = metadata.where(F.col("file_kind") == "segment")
    if len({node for _f, _l, node in spans}) > 1 or any(b[0] <= a[1] for a, b in zip(spans, spans[1:], strict=False)):
        best = Window.partitionBy("cluster_id", "offset").orderBy(F.col("leader_epoch").desc(), F.col("node_id"))
        log = log.withColumn("_rank", F.row_number().over(best)).where(F.col("_rank") == 1).drop("_rank")
    # else: one replica whose segments do not overlap holds each offset once; nothing to choose
    log = log.withColumn("seq", F.lit(0).cast("long"))
    log_start = spans[0][0] if spans else None
    if log_start is None or log_start == 0:
        return log
    snaps = metadata.where((F.col("file_kind") == "snapshot") & (F.col("file_offset") <= log_start))
    snap_end = snaps.agg(F.max("file_offset").alias("end")).collect()[0]["end"]
    if snap_end is None:
        return log
    seed = (
        snaps.where((F.col("file_offset") == snap_end) & ~F.col("is_control"))
        .withColumn("_rank", F.row_number().over(
            Window.partitionBy("cluster_id", "offset").orderBy(F.col("node_id"))))
        .where(F.col("_rank") == 1).drop("_rank")
        .withColumn("seq", F.col("offset"))
        .withColumn("offset", F.lit(snap_end - 1).cast("long"))
    )
    return seed.unionByName(log.where(F.col("offset") >= snap_end))


#: Milliseconds before a stop's first controlled shutdown in which a broker that went down belongs to
#: the stop: stopped together, the brokers that lead nothing are fenced at once, ahead of those that
#: must hand their leaderships over first. A broker down for longer before it had its own outage.
STOP_LEAD_MS = 10_000
#: A new leader epoch that begins after the log was silent this long may follow a whole-cluster
#: stop: a live quorum appends a NoOpRecord every ``metadata.max.idle.interval.ms`` (500 ms by default).
RESTART_GAP_MS = 2_000
#: After such a silence, every broker must have registered anew within this time of the controller's
#: return for the silence to count as a whole-cluster stop (brokers start after their host is back).
RESTART_WITHIN_MS = 300_000
#: Columns of :func:`cluster_restarts`.
RESTART_COLUMNS = ("cluster_id", "start", "end", "resumed", "seconds", "clean", "brokers")
_BROKER_RECORDS = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "FenceBrokerRecord",
                   "UnfenceBrokerRecord", "UnregisterBrokerRecord")


def cluster_restarts(metadata: DataFrame) -> DataFrame:
    """Whole-cluster stops in the middle of the log: every node down at once, then every broker back.

    Such a stop leaves a silence in the log followed by a new leader epoch (the controllers
    restarted), after which every broker registered before it registers anew, a new process, before
    it shows any other sign of life (an unfence or a controlled shutdown of its old registration).
    It starts when its brokers went down where the log shows it (``clean``: controlled shutdowns and
    fences, from :data:`STOP_LEAD_MS` before the first shutdown), else at the last record before the
    silence (killed: nothing was written); it ends when the last of them was unfenced again.

    Returns
    -------
    DataFrame
        :data:`RESTART_COLUMNS`: ``resumed`` is the new epoch's first record, ``seconds`` the
        downtime (``end`` - ``start``), ``brokers`` the sorted ids; one row per stop.
    """
    import datetime


    require_columns(metadata, (*_NEEDED, "broker_id", "fenced", "in_controlled_shutdown"), "cluster_restarts")
    ordered = ordered_records(metadata)
    epochs: dict[str | None, list[tuple[int, Any, Any]]] = {}
    for r in (ordered.groupBy("cluster_id", "leader_epoch")
              .agg(F.min("offset").alias("first"), F.min("timestamp").alias("t1"), F.max("timestamp").alias("t0"))
              .collect()):
        if r["first"] is not None and r["t1"] is not None:
            epochs.setdefault(r["cluster_id"], []).append((r["first"], r["t1"], r["t0"]))
    rows = (ordered.where(~F.col("is_control") & F.col("record_type").isin(*_BROKER_RECORDS)
                          & F.col("broker_id").isNotNull())
            .select("cluster_id", "offset", "seq", "timestamp", "record_type", "broker_id", "fenced",
                    "in_controlled_shutdown").orderBy("cluster_id", "offset", "seq").collect())
    by_cluster: dict[str | None, list[Any]] = {}
    for r in rows:
        by_cluster.setdefault(r["cluster_id"], []).append(r)
    gap = datetime.timedelta(milliseconds=RESTART_GAP_MS)
    within = datetime.timedelta(milliseconds=RESTART_WITHIN_MS)
    lead = datetime.timedelta(milliseconds=STOP_LEAD_MS)
    out = []
    for cluster, spans in epochs.items():
        spans.sort(key=lambda s: s[0])
        records = by_cluster.get(cluster, [])
        state: dict[int, list[Any]] = {}  # broker -> [registered, down since, by a controlled shutdown]
        i = 0
        for (_first, _t1, t0), (boundary, t1, _t0) in zip(spans, spans[1:], strict=False):
            while i < len(records) and records[i]["offset"] < boundary:
                broker_state_step(state, records[i])
                i += 1
            alive = {b: s for b, s in state.items() if s[0]}
            if not alive or t0 is None or t1 - t0 < gap:
                continue
            back = _came_back(records[i:], set(alive), t1 + within)
            if back is None:
                continue
            down = {b: s for b, s in alive.items() if s[1] is not None}
            clean = len(down) == len(alive) and any(s[2] for s in down.values())
            if clean:
                since = min(s[1] for s in down.values() if s[2]) - lead
                start = min(s[1] for s in down.values() if s[1] >= since)
            elif len(down) == len(alive):
                start = max(s[1] for s in down.values())
            else:
                start = t0
            end = max(back.values())
            out.append((cluster, start, end, t1, (end - start).total_seconds(), clean, sorted(alive)))
    return metadata.sparkSession.createDataFrame(
        out, "cluster_id string, start timestamp, end timestamp, resumed timestamp, seconds double, clean boolean, "
             "brokers array<int>")


def broker_state_step(state: dict[int, list[Any]], r: Any) -> None:
    """One broker record (a Row of the ``metadata`` table) into ``state``: broker id -> [registered,
    down since, went down by a controlled shutdown]. Down means in controlled shutdown (Kafka's answer
    to SIGTERM while leading) or fenced; a registration or an unfencing brings it back."""
    s = state.setdefault(r["broker_id"], [True, None, False])
    kind, at = r["record_type"], r["timestamp"]
    if kind == "UnregisterBrokerRecord":
        s[:] = [False, None, False]
    elif kind == "RegisterBrokerRecord" or r["fenced"] is False:
        s[:] = [True, None, False]
    elif r["in_controlled_shutdown"]:
        s[1], s[2] = s[1] or at, True
    elif r["fenced"]:
        s[1] = s[1] or at


def _came_back(records: list[Any], brokers: set[int], deadline: Any) -> dict[int, Any] | None:
    """When each of ``brokers`` was unfenced after registering anew, if every one's first sign of life in
    ``records`` is a new registration before ``deadline``; else None (some broker lived on)."""
    registered: set[int] = set()
    back: dict[int, Any] = {}
    for r in records:
        b = r["broker_id"]
        if b not in brokers or b in back:
            continue
        kind = r["record_type"]
        if b not in registered:
            if kind == "RegisterBrokerRecord":
                if r["timestamp"] > deadline:
                    return None
                registered.add(b)
                if r["fenced"] is False:
                    back[b] = r["timestamp"]
            elif r["fenced"] is False or r["in_controlled_shutdown"] or kind == "UnregisterBrokerRecord":
                return None
        elif r["fenced"] is False:
            back[b] = r["timestamp"]
        if len(back) == len(brokers):
            return back
    return back if registered == brokers and back else None


def restarts_for(tables: Any) -> DataFrame:
    """:func:`cluster_restarts` of a bundle's tables, computed once and shared by the areas that read it."""
    return tables.derive("metadata.cluster_restarts", lambda: cluster_restarts(tables.metadata))
