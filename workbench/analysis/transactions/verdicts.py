"""The transactions findings: hanging and orphaned transactions, pinned last stable offsets, stalled readers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from workbench.analysis.text import bytes_text, time_text
from workbench.analysis.transactions.hanging import open_transactions
from workbench.analysis.transactions.inputs import DEFAULT_MAX_TIMEOUT_MS, DEFAULT_PINNED_S, bundle_end_ms
from workbench.analysis.transactions.lso import lso_series, pinned_episodes
from workbench.analysis.transactions.spans import transaction_spans
from workbench.analysis.transactions.stalls import stalled_groups

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def max_timeout_ms(params: Mapping[str, Any]) -> int:
    """``find-hanging``'s ``--max-transaction-timeout``: the ``txn_max_timeout_ms`` parameter, else 15 minutes."""
    return int(params.get("txn_max_timeout_ms") or DEFAULT_MAX_TIMEOUT_MS)


def pinned_threshold_s(params: Mapping[str, Any]) -> float:
    """Seconds an LSO must stay pinned (or a group stalled) to be reported: ``txn_pinned_s``, else 60."""
    return float(params.get("txn_pinned_s") or DEFAULT_PINNED_S)


def _part(topic: str = "topic", partition: str = "partition") -> Column:
    return F.concat(F.col(topic), F.lit("-"), F.col(partition).cast("string"))


def _txn_name() -> Column:
    return F.concat(F.coalesce(F.concat(F.lit("transactional id "), F.col("transactional_id")),
                               F.lit("an unknown transactional id")),
                    F.lit(" (producer "), F.col("producer_id").cast("string"), F.lit(", epoch "),
                    F.coalesce(F.col("producer_epoch").cast("string"), F.lit("?")), F.lit(")"))


def findings(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """Transactions findings of a bundle, as it stood at its end (:func:`~.inputs.bundle_end_ms`).

    Kinds: ``hanging_transaction`` (critical: what ``find-hanging`` would list), ``orphaned_transaction``
    (warning: no coordinator will end it, not yet past the tool's age limit), ``transaction_past_timeout``
    (warning: the coordinator holds it but has not aborted it in time), ``open_transaction_unjudged``
    (info: open past the age limit, the bundle holds no coordinator log), ``lso_pinned`` (warning:
    :func:`~.lso.pinned_episodes`), ``read_committed_stalled`` (warning: :func:`~.stalls.stalled_groups`
    as long as the same threshold).
    """
    from workbench.analysis.findings import FINDINGS_COLUMNS, empty_findings

    p = dict(params or {})
    out = empty_findings(tables.spark)
    end = bundle_end_ms(tables, p)
    if end is None:
        return out
    threshold = pinned_threshold_s(p)
    spans = transaction_spans(tables)
    opened = open_transactions(tables, end, max_timeout_ms=max_timeout_ms(p))
    since = F.concat(F.lit(" open since "), time_text("start"), F.lit(" (first offset "),
                     F.col("first_offset").cast("string"), F.lit(", "), F.col("records").cast("string"),
                     F.lit(" record(s), "), bytes_text("bytes"), F.lit("; last write "), time_text("last_write"),
                     F.lit(")"))
    figures = F.create_map(F.lit("first_offset"), F.col("first_offset").cast("double"),
                           F.lit("open_ms"), F.col("open_ms").cast("double"),
                           F.lit("records"), F.col("records").cast("double"),
                           F.lit("bytes"), F.col("bytes").cast("double"))
    kinds = (
        ("hanging_transaction", "critical", F.col("hanging"),
         F.concat(F.lit("hanging transaction on "), _part(), F.lit(": "), _txn_name(), since,
                  F.lit(" pins the last stable offset: "), F.col("reason"),
                  F.lit(", so no marker will be written (what kafka-transactions.sh find-hanging lists; "
                        "end it with kafka-transactions.sh abort)"))),
        ("orphaned_transaction", "warning", F.col("orphaned") & ~F.col("candidate"),
         F.concat(F.lit("transaction on "), _part(), F.lit(" that no coordinator will end: "), _txn_name(), since,
                  F.lit("; "), F.col("reason"),
                  F.lit(" (find-hanging lists it once its last write is older than the maximum transaction timeout)"))),
        ("transaction_past_timeout", "warning", F.col("past_timeout") & ~F.coalesce(F.col("orphaned"), F.lit(False)),
         F.concat(F.lit("transaction on "), _part(), F.lit(": "), _txn_name(), since,
                  F.lit(" is still open past its transaction.timeout.ms of "),
                  F.col("timeout_ms").cast("string"), F.lit(" ms: its coordinator ("), F.col("coordinator_state"),
                  F.lit(") did not abort it"))),
        ("open_transaction_unjudged", "info", F.col("hanging").isNull() & F.col("candidate"),
         F.concat(F.lit("transaction on "), _part(), F.lit(": "), _txn_name(), since,
                  F.lit(" is open past the maximum transaction timeout; the bundle holds no coordinator log "
                        "(__transaction_state) to tell whether it hangs"))),
    )
    for kind, severity, rule, summary in kinds:
        out = out.unionByName(opened.where(F.coalesce(rule, F.lit(False))).select(
            F.lit("transactions").alias("area"), F.lit(kind).alias("kind"), F.lit(severity).alias("severity"),
            F.lit("partition").alias("subject_type"), _part().alias("subject"), "start",
            F.lit(None).cast("timestamp").alias("end"), summary.alias("summary"), figures.alias("figures")))

    names = spans.select(F.col("topic").alias("_t"), F.col("partition").alias("_p"),
                         F.col("first_offset").alias("_f"), "transactional_id")
    episodes = pinned_episodes(lso_series(tables), end, threshold)
    episodes = episodes.join(names, (F.col("_t") == F.col("topic")) & (F.col("_p") == F.col("partition"))
                             & (F.col("_f") == F.col("lso")), "left")
    who = F.concat(F.coalesce(F.concat(F.lit("transactional id "), F.col("transactional_id")),
                              F.lit("an unknown transactional id")),
                   F.lit(" (producer "), F.col("pinned_producer_id").cast("string"), F.lit(")"))
    out = out.unionByName(episodes.select(
        F.lit("transactions").alias("area"), F.lit("lso_pinned").alias("kind"), F.lit("warning").alias("severity"),
        F.lit("partition").alias("subject_type"), _part().alias("subject"), "start", "end",
        F.concat(F.lit("the last stable offset of "), _part(), F.lit(" stayed at "), F.col("lso").cast("string"),
                 F.lit(" for "), F.format_string("%.0f s", "seconds"), F.lit(" from "), time_text("start"),
                 F.when(F.col("end").isNull(), F.lit(" to the end of the bundle")).otherwise(
                     F.concat(F.lit(" to "), time_text("end"))),
                 F.lit(", held by the open transaction of "), who, F.lit("; the log end reached "),
                 F.col("log_end_offset").cast("string"), F.lit(" ("), F.col("peak_records").cast("string"),
                 F.lit(" offsets, "), bytes_text("peak_bytes"),
                 F.lit(" unreadable to read_committed consumers)")).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("lso"), F.col("lso").cast("double"),
                     F.lit("peak_records"), F.col("peak_records").cast("double"),
                     F.lit("peak_bytes"), F.col("peak_bytes").cast("double")).alias("figures")))

    stalls = stalled_groups(tables)
    stop = F.coalesce("released", "last_commit")
    stalls = (stalls.withColumn("seconds", (F.unix_micros(stop) - F.unix_micros("start")) / F.lit(1e6))
              .where(F.col("seconds") >= F.lit(threshold))
              .join(names, (F.col("_t") == F.col("topic")) & (F.col("_p") == F.col("partition"))
                    & (F.col("_f") == F.col("lso")), "left"))
    out = out.unionByName(stalls.select(
        F.lit("transactions").alias("area"), F.lit("read_committed_stalled").alias("kind"),
        F.lit("warning").alias("severity"), F.lit("group").alias("subject_type"), F.col("group").alias("subject"),
        "start", F.col("released").alias("end"),
        F.concat(F.lit("group "), F.col("group"), F.lit(" sat at offset "), F.col("lso").cast("string"), F.lit(" of "),
                 _part(), F.lit(", the last stable offset, for "), F.format_string("%.0f s", "seconds"),
                 F.lit(" ("), F.col("commits").cast("string"), F.lit(" commits from "), time_text("start"),
                 F.when(F.col("released").isNull(), F.lit(", still there at its last commit")).otherwise(
                     F.concat(F.lit(" until "), time_text("released"))),
                 F.lit(") while the log end grew to "), F.col("log_end_offset").cast("string"),
                 F.lit(": a read_committed reader stalled by the open transaction of "), who).alias("summary"),
        F.create_map(F.lit("seconds"), F.col("seconds"), F.lit("offset"), F.col("lso").cast("double"),
                     F.lit("log_end_offset"), F.col("log_end_offset").cast("double")).alias("figures")))
    return out.select(*FINDINGS_COLUMNS)
