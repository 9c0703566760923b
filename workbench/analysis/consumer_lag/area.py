"""The consumer-lag area's contract: its analysis, findings role, view frames, key figures and registration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis.consumer_lag.burrow_history import group_status_for, partition_status_for, status_runs
from workbench.analysis.consumer_lag.distributions import (
    cache_lags_for,
    lag_histogram,
    lag_points,
    page_cache,
    with_time_slices,
)
from workbench.analysis.consumer_lag.inputs import _has_commits, commits_for, removed_for
from workbench.analysis.consumer_lag.lag import VIEW_TOP_PARTITIONS, lags_for, top_partitions
from workbench.analysis.consumer_lag.retention import loss_for, removed_groups
from workbench.analysis.consumer_lag.verdicts import _GROUPED_PHRASES, GROUP_GROUPS, findings_for, group_lag_summary

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Group-partitions whose Burrow statuses the view draws at most: those longest in a status other
#: than OK first (``lag_burrow_partitions`` parameter).
VIEW_BURROW_PARTITIONS = 60


@dataclass(frozen=True, eq=False)   # equal only to itself: no comparison of whole tables
class ConsumerLagAnalysis:
    """The consumer-lag area's analysis of one bundle (:func:`analyse`): its tables and parameters.

    Each output (lags, losses, Burrow statuses, findings) is kept with the tables when first
    computed (:meth:`~workbench.spark.registry.Tables.derive`), so the roles below read them once.
    """

    tables: Any
    params: Mapping[str, Any]

    @property
    def has_commits(self) -> bool:
        """Whether the bundle holds any committed offset."""
        return _has_commits(self.tables)


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> ConsumerLagAnalysis:
    """The consumer-lag area's analysis of a bundle's tables."""
    return ConsumerLagAnalysis(tables, dict(params or {}))


def area_findings(result: ConsumerLagAnalysis) -> DataFrame:
    """The area's findings: :func:`findings_for`, with many groups in trouble at once told as one."""
    from workbench.analysis.findings import grouped_findings

    return grouped_findings(findings_for(result.tables, result.params), phrases=_GROUPED_PHRASES,
                            min_subjects=int(result.params.get("lag_group_groups") or GROUP_GROUPS))


def view_frames(result: ConsumerLagAnalysis) -> dict[str, DataFrame]:
    """What the consumer-lag view draws: histograms and the page-cache CDF's points (counted per time slice,
    so that they follow a time window), the worst partitions' series, groups, Burrow's statuses."""
    if not result.has_commits:
        return {}
    tables, params = result.tables, result.params
    lags = cache_lags_for(tables)
    top = top_partitions(lags, int(params.get("lag_top_partitions") or VIEW_TOP_PARTITIONS))
    keep = ["group", "topic", "partition", "commit_time", "committed_offset", "log_end_offset", "records_lag",
            "bytes_lag", "time_lag_ms", "broker"]
    sliced = with_time_slices(lags)
    slice_keys = ("slice_start", "slice_end")
    return {
        "histogram_bytes": lag_histogram(sliced, metric="bytes", by=("broker", "group", "topic", *slice_keys)),
        "histogram_time": lag_histogram(sliced, metric="time", by=("broker", "group", "topic", *slice_keys)),
        "page_cache": page_cache(lags),
        "cdf_points": lag_points(sliced, by=("broker", *slice_keys)),
        "top_partitions": top,
        "series": lags.join(top.select("group", "topic", "partition"), ["group", "topic", "partition"])
        .select(*keep),
        "groups": group_lag_summary(lags),
        "burrow": group_status_for(tables, params),
        "burrow_partitions": burrow_partition_runs(
            tables, params, int(params.get("lag_burrow_partitions") or VIEW_BURROW_PARTITIONS)),
    }


def burrow_partition_runs(tables: Any, params: Mapping[str, Any], top: int) -> DataFrame:
    """:func:`status_runs` of the ``top`` group-partitions with the most evaluations in a status other
    than OK (then by name), every run of each."""
    runs = status_runs(partition_status_for(tables, params))
    key = ["group", "topic", "partition"]
    ranked = (runs.groupBy(*key).agg(F.sum(F.when(F.col("status") != "OK", F.col("evaluations")).otherwise(0))
                                     .alias("_bad"))
              .orderBy(F.col("_bad").desc(), *key).limit(top).select(*key))
    return runs.join(ranked, key)


def key_figures(result: ConsumerLagAnalysis) -> dict[str, Any]:
    """The summary's figures: groups, commits, the largest lags, records lost, removed offsets, page cache."""
    if not result.has_commits:
        return {"groups": 0, "commits": 0}
    tables = result.tables
    lags = lags_for(tables)
    row = lags.agg(
        F.countDistinct("group").alias("groups"),
        F.countDistinct("group", "topic", "partition").alias("group_partitions"),
        F.count("*").alias("commits"),
        F.max("records_lag").alias("max_records_lag"),
        F.max("bytes_lag").alias("max_bytes_lag"),
        F.max("time_lag_ms").alias("max_time_lag_ms"),
        F.sum((F.col("bytes_lag").isNull() | F.col("time_lag_ms").isNull()).cast("long")).alias("unknown_commits"),
    ).collect()[0].asDict()
    lost = loss_for(tables).agg(F.sum("records_lost").alias("lost")).collect()[0]["lost"]
    removed = removed_groups(commits_for(tables), removed_for(tables)).count()
    p99 = page_cache(cache_lags_for(tables), by=()).where(F.abs(F.col("quantile") - 0.99) < 1e-9).collect()
    out = {k: (0 if v is None else v) for k, v in row.items()}
    out.update(records_lost=int(lost or 0), groups_with_removed_offsets=removed,
               p99_tail_bytes=p99[0]["tail_bytes"] if p99 else None,
               p99_cache_bytes=p99[0]["cache_bytes"] if p99 else None)
    return out


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("consumer_lag", title="Consumer lag in records, bytes and time", order=3,
                  analyse=analyse, findings=area_findings, tables=("offsets",), frames=view_frames,
                  key_figures=key_figures)


_register()
