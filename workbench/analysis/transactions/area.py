"""The transactions area's contract: its analysis of a bundle, findings, view frames and key figures."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis.transactions.hanging import open_transactions
from workbench.analysis.transactions.inputs import bundle_end_ms
from workbench.analysis.transactions.lso import lso_series, pinned_episodes
from workbench.analysis.transactions.spans import transaction_spans
from workbench.analysis.transactions.stalls import lag_explained
from workbench.analysis.transactions.verdicts import findings, max_timeout_ms

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The view draws at most this many partitions' LSO series (the most lagging first) and spans.
VIEW_PARTITIONS = 50
VIEW_SPANS = 2000
VIEW_POINTS = 2000


@dataclass(frozen=True, eq=False)   # equal only to itself: no comparison of whole tables
class TransactionsAnalysis:
    """The transactions area's analysis of one bundle (:func:`analyse`): its tables, parameters and end."""

    tables: Any
    params: Mapping[str, Any]
    end_ms: int | None


def analyse(tables: Any, params: Mapping[str, Any] | None = None) -> TransactionsAnalysis:
    """The transactions area's analysis of a bundle's tables, as they stood at the bundle's end."""
    p = dict(params or {})
    return TransactionsAnalysis(tables, p, bundle_end_ms(tables, p))


def area_findings(result: TransactionsAnalysis) -> DataFrame:
    """The area's findings of one analysis (:func:`findings`)."""
    return findings(result.tables, result.params)


def view_frames(result: TransactionsAnalysis) -> dict[str, DataFrame]:
    """What the transactions view draws: the LSO and log end of the most lagging partitions over time,
    their transactions as bars, the transactions open at the end, the groups' positions against the LSO."""
    tables = result.tables
    series = lso_series(tables)
    worst = (series.groupBy("topic", "partition").agg(F.max("lag_records").alias("_peak"))
             .withColumn("_n", F.row_number().over(Window.orderBy(F.col("_peak").desc(), "topic", "partition")))
             .where(F.col("_n") <= VIEW_PARTITIONS).select("topic", "partition"))
    spans = transaction_spans(tables).join(worst, ["topic", "partition"])
    # open ones first, then the longest: what holds an LSO back is never cut
    held = Window.orderBy((F.col("outcome") != "open").cast("int"),
                          (F.unix_micros("start") - F.coalesce(F.unix_micros("end"), F.lit(2**62))),
                          "topic", "partition", "first_offset")
    frames = {
        "lso": thinned(series.join(worst, ["topic", "partition"])),
        "spans": spans.withColumn("_n", F.row_number().over(held)).where(F.col("_n") <= VIEW_SPANS).drop("_n"),
    }
    if result.end_ms is not None:
        frames["open"] = open_transactions(tables, result.end_ms, max_timeout_ms=max_timeout_ms(result.params)).select(
            "topic", "partition", "producer_id", "producer_epoch", "transactional_id", "first_offset", "records",
            "bytes", "start", "last_write", (F.col("open_ms") / F.lit(1000.0)).alias("open_s"), "coordinator_state",
            F.array_join("coordinator_partitions", ", ").alias("coordinator_partitions"), "hanging", "orphaned",
            "past_timeout", "reason")
    frames["groups"] = lag_explained(tables).select(
        "group", "topic", "partition", "commit_time", "committed_offset", "log_end_offset", "lso", "lag_to_end",
        "lag_to_lso", "markers_in_lag", "records_to_read", "at_lso",
        F.col("pinned_producer_id").cast("string").alias("pinned_by_producer"))
    return frames


def thinned(series: DataFrame, points: int = VIEW_POINTS) -> DataFrame:
    """An LSO series cut to about ``points`` rows per partition, keeping every row where what pins the
    LSO changes (and the row before it: a pinned lag grows until it is released, so its peak is kept)."""
    order = Window.partitionBy("topic", "partition").orderBy("time", "log_end_offset")
    pin = F.coalesce(F.col("pinned_producer_id"), F.lit(-1))
    n = F.count("*").over(Window.partitionBy("topic", "partition"))
    step = F.greatest(F.lit(1), F.ceil(n / F.lit(points)))
    number = F.row_number().over(order)
    keep = ((pin != F.coalesce(F.lag(pin).over(order), F.lit(-2))) | (pin != F.coalesce(F.lead(pin).over(order),
                                                                                          F.lit(-2)))
            | (number % step == 0) | (number == n))
    return series.withColumn("_keep", keep).where("_keep").drop("_keep")


def key_figures(result: TransactionsAnalysis) -> dict[str, Any]:
    """The summary's figures: transactions by outcome, open and hanging ones, the largest LSO lag."""
    tables = result.tables
    figures: dict[str, Any] = {f"transactions_{r['outcome']}": r["count"]
                               for r in transaction_spans(tables).groupBy("outcome").count().collect()}
    peak = lso_series(tables).agg(F.max("lag_records").alias("r"), F.max("lag_bytes").alias("b")).collect()[0]
    held = pinned_episodes(lso_series(tables), result.end_ms, 0.0).agg(F.max("seconds")).collect()[0][0]
    figures.update({"max_lso_lag_records": peak["r"] or 0, "max_lso_lag_bytes": peak["b"] or 0,
                    "max_lso_pinned_seconds": held or 0})
    if result.end_ms is not None:
        row = open_transactions(tables, result.end_ms, max_timeout_ms=max_timeout_ms(result.params)).agg(
            F.count("*").alias("open"), F.sum(F.col("hanging").cast("int")).alias("hanging"),
            F.sum(F.col("orphaned").cast("int")).alias("orphaned")).collect()[0]
        figures.update({k: row[k] or 0 for k in ("open", "hanging", "orphaned")})
    return figures


def _register() -> None:
    from workbench.analysis.findings import register_area

    register_area("transactions", title="Transactions and the last stable offset (KIP-664)", order=6,
                  analyse=analyse, findings=area_findings, tables=("markers", "transactions"), frames=view_frames,
                  key_figures=key_figures)


_register()
