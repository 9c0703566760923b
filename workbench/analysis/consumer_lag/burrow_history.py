"""Burrow's rules applied to every commit of a bundle in Spark: partition and group statuses over time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

import workbench.analysis.consumer_lag.burrow as burrow_rules
from workbench.analysis._checks import require_columns
from workbench.analysis.consumer_lag.inputs import growth_for, removed_for
from workbench.analysis.consumer_lag.lag import lags_for
from workbench.analysis.logs import asof
from workbench.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame


BURROW_SCHEMA = ("group string, topic string, partition int, time timestamp, status string, window int, "
                 "current_lag long, last_offset long")


def burrow_status(lags: DataFrame, growth: DataFrame, *, instants: DataFrame | None = None,
                  intervals: int = burrow_rules.DEFAULT_INTERVALS,
                  min_distance_s: int = burrow_rules.DEFAULT_MIN_DISTANCE_S,
                  refresh_s: int = burrow_rules.DEFAULT_REFRESH_S) -> DataFrame:
    """Burrow's partition status (:mod:`.burrow`) right after every commit, or at instants.

    Burrow's recent broker offsets are the log ends of the ``intervals`` polls (every ``refresh_s``)
    before each evaluation. ``instants`` (``group, time`` rows) evaluate each of a group's partitions at
    those times instead. Returns :data:`BURROW_SCHEMA` rows; ``status`` is null before the first commit.
    """
    rows = burrow_inputs(lags, growth, instants=instants, intervals=intervals, min_distance_s=min_distance_s,
                         refresh_s=refresh_s)

    def kernel(pdf: pd.DataFrame) -> pd.DataFrame:
        return _burrow_kernel(pdf, intervals, min_distance_s)

    # many partitions per pandas call: one call per group and partition costs far more than the
    # rules it runs
    bucket = F.pmod(F.xxhash64("group", "topic", "partition"), F.lit(BURROW_BUCKETS))
    return rows.groupBy(bucket.alias("_bucket")).applyInPandas(kernel, BURROW_SCHEMA)


#: Pandas calls :func:`burrow_status` makes at most (partitions of groups are spread over them by hash).
BURROW_BUCKETS = 64


def burrow_inputs(lags: DataFrame, growth: DataFrame, *, instants: DataFrame | None = None,
                  intervals: int = burrow_rules.DEFAULT_INTERVALS,
                  min_distance_s: int = burrow_rules.DEFAULT_MIN_DISTANCE_S,
                  refresh_s: int = burrow_rules.DEFAULT_REFRESH_S) -> DataFrame:
    """What :func:`burrow_status` evaluates: its commits and instants, one row each (parameters as there).

    Returns
    -------
    DataFrame
        ``group, topic, partition, time, offset, lag, is_commit`` (commits: offset and lag) and
        ``_leo_now, _leo_recent`` (instants: the log end then and ``intervals`` polls before; before
        the partition's first batch, that batch's base offset when ``growth`` has it).
    """
    require_columns(lags, ("group", "topic", "partition", "commit_time", "committed_offset", "records_lag"),
                    "burrow_status")
    if intervals < 1 or refresh_s < 1 or min_distance_s < 0:
        raise ConfigError("burrow_status: intervals and refresh_s must be >= 1, min_distance_s >= 0")
    keys = ["group", "topic", "partition"]
    commits = lags.select(*keys, F.col("commit_time").alias("time"), F.col("committed_offset").alias("offset"),
                          F.col("records_lag").alias("lag"), F.lit(True).alias("is_commit"))
    if instants is None:
        points = lags.select(*keys, F.col("commit_time").alias("time")).distinct()
    else:
        require_columns(instants, ("group", "time"), "burrow_status (instants)")
        points = lags.select(*keys).distinct().join(instants.select("group", "time").distinct(), "group")
    ends = growth.select("topic", "partition", "reached", F.col("end_offset").alias("_leo"))
    lookback = F.expr(f"INTERVAL {(intervals - 1) * refresh_s} SECONDS")
    points = asof(points, ends, by=["topic", "partition"], left_time="time", right_time="reached", columns=["_leo"],
                  suffix="_now")
    points = asof(points.withColumn("_back", F.col("time") - lookback), ends, by=["topic", "partition"],
                  left_time="_back", right_time="reached", columns=["_leo"], suffix="_recent").drop("_back")
    if "base_offset" in growth.columns:
        # a look-back past a partition's first batch in the bundle: Burrow's ring then holds its polls
        # since it first saw the partition, the oldest at most the log end before that batch (its base
        # offset; a partition younger than the ring is judged as Burrow judges it, not as one with no poll)
        first = growth.groupBy("topic", "partition").agg(F.min("base_offset").alias("_leo_first"))
        points = (points.join(first, ["topic", "partition"], "left")
                  .withColumn("_leo_recent", F.coalesce("_leo_recent", "_leo_first")).drop("_leo_first"))
    rows = commits.select(*keys, "time", "offset", "lag", "is_commit",
                          F.lit(None).cast("long").alias("_leo_now"), F.lit(None).cast("long").alias("_leo_recent")) \
        .unionByName(points.select(*keys, "time", F.lit(None).cast("long").alias("offset"),
                                   F.lit(None).cast("long").alias("lag"), F.lit(False).alias("is_commit"),
                                   "_leo_now", "_leo_recent"))
    return rows


def _burrow_kernel(pdf: pd.DataFrame, intervals: int, min_distance_s: int) -> pd.DataFrame:
    """Burrow's status at every instant row of ``pdf``, for every (group, topic, partition) it holds.

    A row whose time is unknown (null) is left out (an instant of unknown time gets no status), and
    so is a commit whose offset is unknown; a null partition stays null.
    """
    import numpy as np
    import pandas as pd

    columns = [c.split()[0] for c in BURROW_SCHEMA.split(", ")]
    pdf = pdf[pdf["time"].notna() & ~(pdf["is_commit"].fillna(False).astype(bool) & pdf["offset"].isna())]
    if pdf.empty:
        return pd.DataFrame(columns=columns)
    ms = (pd.to_datetime(pdf["time"]).astype("int64") // 1_000_000).to_numpy()
    pdf = (pdf.assign(_ms=ms)
           .sort_values(["group", "topic", "partition", "_ms", "is_commit"], ascending=[True, True, True, True, False],
                        kind="stable").reset_index(drop=True))
    group, topic, part = pdf["group"].to_numpy(), pdf["topic"].to_numpy(), pdf["partition"].to_numpy()
    new = np.ones(len(pdf), dtype=bool)
    new[1:] = (group[1:] != group[:-1]) | (topic[1:] != topic[:-1]) | (part[1:] != part[:-1])
    bounds = [*np.flatnonzero(new).tolist(), len(pdf)]
    is_commit = pdf["is_commit"].to_numpy(dtype=bool)
    t_ms, offset, lag = pdf["_ms"].tolist(), pdf["offset"].tolist(), pdf["lag"].tolist()
    now, recent = pdf["_leo_now"].tolist(), pdf["_leo_recent"].tolist()
    out: dict[str, list] = {c: [] for c in columns}
    point_rows: list[int] = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        commits = [(int(offset[i]), int(t_ms[i]), None if pd.isna(lag[i]) else int(lag[i]))
                   for i in range(lo, hi) if is_commit[i]]
        points = [i for i in range(lo, hi) if not is_commit[i]]
        instants = [(int(t_ms[i]), None if pd.isna(now[i]) else int(now[i]),
                     [] if pd.isna(recent[i]) else [int(recent[i])]) for i in points]
        results = burrow_rules.evaluate(commits, instants, intervals=intervals, min_distance_s=min_distance_s)
        n = len(points)
        out["group"] += [group[lo]] * n
        out["topic"] += [topic[lo]] * n
        out["partition"] += [None if pd.isna(part[lo]) else int(part[lo])] * n
        point_rows += points
        out["status"] += [s for s, _w, _c in results]
        out["window"] += [w for _s, w, _c in results]
        out["current_lag"] += [c for _s, _w, c in results]
        out["last_offset"] += _last_offsets(commits, [t for t, _n, _r in instants])
    out["time"] = pdf["time"].to_numpy()[point_rows] if point_rows else []
    return pd.DataFrame(out, columns=columns)


def _last_offsets(commits: list[tuple[int, int, int | None]], times: list[int]) -> list[int | None]:
    out: list[int | None] = []
    i = 0
    last = None
    for t in times:
        while i < len(commits) and commits[i][1] <= t:
            last = commits[i][0]
            i += 1
        out.append(last)
    return out


def burrow_group_status(status: DataFrame) -> DataFrame:
    """A group's Burrow status at each instant its partitions were evaluated together.

    Returns
    -------
    DataFrame
        One row per group and instant: ``group, time, status`` (OK, WARN or ERR), ``partitions``,
        ``worst`` (the worst partition status), ``stop, stall, rewind, warn`` (partition counts),
        ``total_lag``, ``min_window`` (the fewest commits any partition's window held: Burrow calls an
        evaluation complete when every window is full).
    """
    require_columns(status, ("group", "time", "status", "current_lag"), "burrow_group_status")
    rank = {"OK": 1, "WARN": 2, "STOP": 4, "STALL": 5, "REWIND": 6}
    ranked = F.lit(0)
    for name, value in rank.items():
        ranked = F.when(F.col("status") == name, F.lit(value)).otherwise(ranked)
    per = status.where(F.col("status").isNotNull()).withColumn("_rank", ranked)
    agg = per.groupBy("group", "time").agg(
        F.count("*").alias("partitions"), F.max("_rank").alias("_worst"),
        *[F.sum((F.col("status") == s).cast("long")).alias(s.lower()) for s in ("STOP", "STALL", "REWIND", "WARN")],
        F.sum("current_lag").alias("total_lag"), F.min("window").alias("min_window"))
    names = {v: k for k, v in rank.items()}
    worst = F.lit(None).cast("string")
    for value, name in names.items():
        worst = F.when(F.col("_worst") == value, F.lit(name)).otherwise(worst)
    group = F.when(F.col("_worst") >= 3, F.lit("ERR")).when(F.col("_worst") == 2, F.lit("WARN")).otherwise(F.lit("OK"))
    return agg.select("group", "time", group.alias("status"), F.col("partitions").cast("long"), worst.alias("worst"),
                      "stop", "stall", "rewind", "warn", F.col("total_lag").cast("long"),
                      F.col("min_window").cast("int"))


def group_instants(lags: DataFrame, *, points: int = 400, growth: DataFrame | None = None,
                   removed: DataFrame | None = None,
                   every_s: int = burrow_rules.DEFAULT_REFRESH_S) -> DataFrame:
    """Instants at which to evaluate whole groups, at most ``points`` per group (evenly thinned).

    Each group's commit times and, with ``growth`` (:func:`~workbench.analysis.logs.log_growth`),
    instants every ``every_s`` seconds (wider when needed to stay within ``points``) from its first
    commit to the last growth of its partitions' logs: Burrow is asked whenever someone looks, not
    only when the group commits, and a group that stopped committing while its logs grew is STOP
    only at such an instant. ``removed`` (:func:`~.inputs.removed_offsets`) ends a group's
    instants at the first removal of its offsets after its last commit (its offsets are gone).

    Returns
    -------
    DataFrame
        ``group, time``.
    """
    times = lags.select("group", F.col("commit_time").alias("time")).distinct()
    if growth is not None:
        span = lags.groupBy("group").agg(F.min("commit_time").alias("_first"), F.max("commit_time").alias("_last"))
        ends = growth.groupBy("topic", "partition").agg(F.max("reached").alias("_end"))
        until = (lags.select("group", "topic", "partition").distinct().join(ends, ["topic", "partition"])
                 .groupBy("group").agg(F.max("_end").alias("_until")))
        span = span.join(until, "group")
        if removed is not None:
            gone = (removed.join(span.select("group", "_last"), "group")
                    .where(F.col("removed_time") > F.col("_last"))
                    .groupBy("group").agg(F.min("removed_time").alias("_gone")))
            span = span.join(gone, "group", "left").withColumn("_until", F.least("_until", "_gone"))
        first_ms, until_ms = F.unix_millis("_first"), F.unix_millis("_until")
        step_ms = F.greatest(F.lit(every_s * 1000), F.ceil((until_ms - first_ms) / F.lit(points)))
        steps = F.floor((until_ms - first_ms) / step_ms).cast("int")
        grid = (span.select("group", "_first", step_ms.alias("_step"), steps.alias("_steps"))
                .where(F.col("_steps") >= 1)     # sequence(1, 0) counts down
                .select("group", "_first", "_step", F.explode(F.sequence(F.lit(1), "_steps")).alias("_i"))
                .select("group", F.timestamp_millis(F.unix_millis("_first") + F.col("_i") * F.col("_step"))
                        .alias("time")))
        times = times.unionByName(grid).distinct()
    counted = times.withColumn("_n", F.count("*").over(Window.partitionBy("group"))).withColumn(
        "_i", F.row_number().over(Window.partitionBy("group").orderBy("time")))
    step = F.greatest(F.ceil(F.col("_n") / F.lit(points)), F.lit(1))
    return counted.where(((F.col("_i") - 1) % step == 0) | (F.col("_i") == F.col("_n"))).select("group", "time")


def _burrow_params(params: Mapping[str, Any]) -> tuple[int, int]:
    return (int(params.get("burrow_intervals") or burrow_rules.DEFAULT_INTERVALS),
            int(params.get("burrow_refresh_s") or burrow_rules.DEFAULT_REFRESH_S))


def partition_status_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """Burrow's partition status (:data:`BURROW_SCHEMA`) at (at most 400 of) each group's commit
    instants and the instants between them up to its logs' end (:func:`group_instants`), every
    partition of the group at each, computed once per parameters."""
    intervals, refresh = _burrow_params(params)
    lags = lags_for(tables)

    def compute() -> DataFrame:
        growth = growth_for(tables)
        instants = group_instants(lags, growth=growth, removed=removed_for(tables), every_s=refresh)
        return burrow_status(lags, growth, instants=instants, intervals=intervals, refresh_s=refresh)

    return tables.derive(f"consumer_lag.burrow_partitions:{intervals}:{refresh}", compute)


def group_status_for(tables: Any, params: Mapping[str, Any]) -> DataFrame:
    """Burrow's group status (:func:`burrow_group_status`) at the instants of :func:`partition_status_for`,
    computed once per parameters."""
    intervals, refresh = _burrow_params(params)
    return tables.derive(f"consumer_lag.burrow_groups:{intervals}:{refresh}",
                         lambda: burrow_group_status(partition_status_for(tables, params)))


#: Columns of :func:`status_runs`.
RUN_COLUMNS = ("group", "topic", "partition", "status", "start", "end", "evaluations", "max_lag")


def status_runs(status: DataFrame) -> DataFrame:
    """Each partition's Burrow status as runs: consecutive evaluations with one status, one row each.

    ``start`` is the run's first evaluation, ``end`` the next run's first (the partition's last
    evaluation for its last run): Burrow said ``status`` from ``start`` until ``end``. Also
    ``evaluations`` (how many) and ``max_lag`` (the largest lag among them). Evaluations before
    the partition's first commit (no status) are left out. Returns :data:`RUN_COLUMNS` rows.
    """
    require_columns(status, ("group", "topic", "partition", "time", "status", "current_lag"), "status_runs")
    key = ("group", "topic", "partition")
    order = Window.partitionBy(*key).orderBy("time")
    rated = status.where(F.col("status").isNotNull())
    runs = (rated.withColumn("_new", (F.lag("status").over(order).isNull()
                                      | (F.lag("status").over(order) != F.col("status"))).cast("int"))
            .withColumn("_run", F.sum("_new").over(order.rowsBetween(Window.unboundedPreceding, 0)))
            .groupBy(*key, "_run", "status").agg(
                F.min("time").alias("start"), F.max("time").alias("_last"),
                F.count("*").cast("long").alias("evaluations"), F.max("current_lag").alias("max_lag")))
    nxt = Window.partitionBy(*key).orderBy("_run")
    return runs.withColumn("end", F.coalesce(F.lead("start").over(nxt), F.col("_last"))).select(*RUN_COLUMNS)
