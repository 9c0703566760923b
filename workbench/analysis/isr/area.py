"""The ISR area's contract: its analysis of a bundle, findings, view frames and key figures."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis.isr.kafka import reported_under_min_isr
from workbench.analysis.isr.states import states_for
from workbench.analysis.isr.summary import partition_summary
from workbench.analysis.isr.verdicts import GROUP_PARTITIONS, area_findings, findings_for
from workbench.analysis.isr.view import VIEW_PARTITIONS, VIEW_POINTS, view_frames

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class IsrAnalysis:
    """The ISR area's analysis of one bundle (:func:`analyse`): the partition states, and the
    per-partition findings once asked for, with the parameters that shape the area's outputs."""

    def __init__(self, tables: Any, params: Mapping[str, Any]) -> None:
        self.tables, self.params = tables, dict(params)
        self.states = states_for(tables, self.params)

    @functools.cached_property
    def per_partition(self) -> DataFrame:
        """Every partition's findings (:func:`findings_for`)."""
        return findings_for(self.tables, self.params)

    def setting(self, name: str, default: int) -> int:
        """An integer parameter of the area (``isr_group_partitions``...), else its default."""
        return int(self.params.get(name) or default)


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> IsrAnalysis:
    """The ISR area's analysis of a bundle's tables (states computed once per bundle and static min ISR)."""
    return IsrAnalysis(tables, params or {})


def grouped_area_findings(result: IsrAnalysis) -> DataFrame:
    """The area's findings of one analysis: :func:`area_findings` of its states and per-partition findings."""
    return area_findings(result.states, per_partition=result.per_partition,
                         group_partitions=result.setting("isr_group_partitions", GROUP_PARTITIONS))


def area_view_frames(result: IsrAnalysis) -> dict[str, DataFrame]:
    """What the ISR view draws (:func:`view_frames`), bounded by ``isr_view_partitions`` and ``isr_view_points``,
    and the brokers' own UnderMinIsrPartitionCount samples (``reported``) beside the computed counts."""
    frames = view_frames(result.states, partitions=result.setting("isr_view_partitions", VIEW_PARTITIONS),
                         points=result.setting("isr_view_points", VIEW_POINTS))
    metrics = getattr(result.tables, "metrics", None)
    if metrics is not None:
        frames["reported"] = reported_under_min_isr(metrics)
    return frames


def key_figures(result: IsrAnalysis) -> dict[str, Any]:
    """The summary's figures: partitions, those under min ISR or offline, and for how long in all."""
    summary = partition_summary(result.states)
    row = summary.agg(
        F.count("*").alias("partitions"),
        F.sum((F.col("under_min_isr_seconds") > 0).cast("int")).alias("partitions_under_min_isr"),
        F.sum((F.col("offline_seconds") > 0).cast("int")).alias("partitions_offline"),
        F.sum("under_min_isr_seconds").alias("under_min_isr_partition_seconds"),
        F.sum("offline_seconds").alias("offline_partition_seconds"),
    ).collect()[0]
    return {k: (0 if v is None else v) for k, v in row.asDict().items()}


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("isr", title="ISR health (KIP-164)", order=2, analyse=analyse, findings=grouped_area_findings,
                  tables=("metadata", "events"), frames=area_view_frames, key_figures=key_figures)


_register()
