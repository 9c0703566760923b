"""What the mirror area computes for one bundle, as one object (the result its roles read)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.analysis.mirror.flows import Flow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass
class MirrorAnalysis:
    """The mirror area's results on one bundle (DataFrames persisted with the tables).

    Attributes
    ----------
    flows : list of Flow
    clusters : dict
        Node id -> cluster alias (:func:`cluster_of_nodes`).
    partitions, observations, growth, timeline, windows, episodes, outages, audit, metrics : DataFrame
    missing : list of str
        What the bundle lacks for a complete answer (plain sentences).
    window_s : float
    """

    flows: list[Flow]
    clusters: dict[int, str]
    partitions: DataFrame
    observations: DataFrame
    growth: DataFrame
    timeline: DataFrame
    windows: DataFrame
    episodes: DataFrame
    outages: DataFrame
    audit: DataFrame
    metrics: DataFrame
    missing: list[str]
    window_s: float
