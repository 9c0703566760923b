"""The tiered-storage area's contract: its analysis of a bundle, findings, view frames and key figures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis.tier.backlog import backlog_series, gaps, rollup, segment_history
from workbench.analysis.tier.inputs import copy_attempts
from workbench.analysis.tier.kafka import comparison, reported
from workbench.analysis.tier.verdicts import findings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True, eq=False)   # equal only to itself: no comparison of whole tables
class TierAnalysis:
    """The tiered-storage area's analysis of one bundle (:func:`analyse`): its tables and parameters.

    Each output (the backlog series, segment history, the comparison with Kafka's gauges) is kept
    with the tables when first computed, so the roles below read them once.
    """

    tables: Any
    params: Mapping[str, Any]


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> TierAnalysis:
    """The tiered-storage area's analysis of a bundle's tables."""
    return TierAnalysis(tables, dict(params or {}))


def area_findings(result: TierAnalysis) -> DataFrame:
    """The area's findings of one analysis (:func:`findings`)."""
    return findings(result.tables, result.params)


def view_frames(result: TierAnalysis) -> dict[str, DataFrame]:
    """What the tier view draws: the backlog series, its roll-up per broker, every segment's history,
    Kafka's own samples."""
    tables, params = result.tables, result.params
    series = backlog_series(tables, params)
    frames = {"series": series, "brokers": rollup(series, by=("broker",)), "history": segment_history(tables, params)}
    samples = reported(tables["metrics"])
    frames["reported"] = samples
    return frames


def key_figures(result: TierAnalysis) -> dict[str, Any]:
    """The summary's figures: partitions, the largest upload and delete lags, copies, gaps, Kafka's samples."""
    tables, params = result.tables, result.params
    series = backlog_series(tables, params)
    row = series.agg(
        F.countDistinct("topic", "partition").alias("partitions"),
        F.max("upload_segments").alias("max_upload_lag_segments"),
        F.max("upload_bytes").alias("max_upload_lag_bytes"),
        F.max("delete_segments").alias("max_delete_lag_segments"),
        F.max("delete_bytes").alias("max_delete_lag_bytes"),
    ).collect()[0].asDict()
    att = copy_attempts(tables["remote"])
    counts = att.groupBy("outcome").count().collect()
    row.update({f"copies_{r['outcome']}": r["count"] for r in counts})
    row["gap_ranges"] = gaps(segment_history(tables, params)).count()
    cmp = comparison(tables, params)
    if cmp is not None:
        reasons = cmp.groupBy("reason").count().collect()
        row.update({f"kafka_samples_{r['reason']}": r["count"] for r in reasons})
    return {k: (0 if v is None else v) for k, v in row.items()}


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("tier", title="Tiered storage backlog (KIP-405, KIP-963)", order=5, analyse=analyse,
                  findings=area_findings, tables=("remote",), frames=view_frames, key_figures=key_figures)


_register()
