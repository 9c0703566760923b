"""Correlation: warning and critical findings that begin in one stretch of trouble become one chain.

An incident is rarely one area: a quorum stall fences a broker, ISRs shrink, producers with
``acks=all`` stop, consumers fall behind. :func:`chains` links findings on one time axis by
these rules:

* **Only warning and critical findings form chains.** An info finding (a leader elected after a
  stall, a clean stop at the end of the capture, lag within bounds, a note on what the bundle
  lacks) is not trouble; it is left out rather than attached to a chain it overlaps, because an
  attached info finding would still glue what it overlaps (one note spanning two incidents
  joins them) and would open a chain's story with a note instead of the first cause. Info
  findings stay in the findings table and on the timeline. Findings without a start (no time
  known) are left out too.
* **Findings that begin together form a run.** In order of start, a finding beginning at most
  ``gap`` seconds after the previous finding began joins its run; a longer pause between two
  beginnings starts a new run.
* **A run continues the chain of the run just before it** when a finding that began in that
  previous run was still open, or had ended at most ``gap`` seconds earlier, when the new run
  began (trouble that follows other trouble, or begins during it). Otherwise the run starts a
  new chain.

Only the previous run carries a chain, so how long a finding lasts links at most the next run
that begins during it (or within ``gap`` after it ends), never every later one: a consumer group
that lags through the whole capture no longer merges every incident inside it into one chain,
and an ISR outage still links the consumer lag that begins while it lasts or just after. The
price: a long finding links only the run after its own, so three incidents inside one long lag
make three chains (the first of which also holds the lag), though the lag was open during all
three; the timeline still shows it across them.

:func:`chain_steps` condenses a chain into its steps (one per area and kind, in order of first
appearance, with how many subjects it touched), and :func:`chain_summaries` writes the one-line
story an SRE reads first, beginning with the chain's earliest warning or critical finding::

    quorum: controller 2 unresponsive → isr: 12 partitions under min ISR → consumer_lag: group billing behind
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.analysis._checks import require_columns
from workbench.analysis.findings import FINDINGS_COLUMNS, severity_rank, subject_count

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Default gap, in seconds: findings beginning within it of each other form one run, and a run
#: beginning within it after the end of the previous run's findings continues its chain.
DEFAULT_GAP_S = 30.0

#: The severities whose findings form chains (info findings are left out: see the module docstring).
CHAINED_SEVERITIES = ("critical", "warning")


def chains(findings: DataFrame, *, gap: float = DEFAULT_GAP_S) -> DataFrame:
    """Every warning and critical finding with a start, with the chain it belongs to.

    Parameters
    ----------
    findings : DataFrame
        Rows of :data:`~workbench.analysis.findings.FINDINGS_SCHEMA`.
    gap : float
        Seconds: a finding beginning at most this long after the previous one joins its run; a
        run beginning at most this long after the previous run's findings ended (or while one
        is open) continues its chain. Info findings and findings without a start are left out.

    Returns
    -------
    DataFrame
        The findings' columns plus ``chain`` (1, 2, ... in time order) and ``step`` (the finding's
        position in its chain, by start).

    Examples
    --------
    >>> chains(all_findings(tables), gap=30).show()   # doctest: +SKIP
    """
    if gap < 0:
        raise ValueError(f"gap must be >= 0 seconds, got {gap}")
    require_columns(findings, FINDINGS_COLUMNS, "chains")
    gap_us = F.lit(int(gap * 1e6))
    start_us = F.unix_micros("start")
    end_us = F.unix_micros(F.coalesce("end", "start"))
    # one global order: findings are few (hundreds to tens of thousands), one task is fine
    order = Window.orderBy(start_us, severity_rank(), "area", "subject", "kind")
    timed = (findings.where(F.col("start").isNotNull() & F.col("severity").isin(*CHAINED_SEVERITIES))
             .withColumn("_s", start_us).withColumn("_e", F.greatest(end_us, start_us))
             .withColumn("_prev", F.lag("_s").over(order))
             .withColumn("_run", F.sum((F.col("_prev").isNull() | (F.col("_s") > F.col("_prev") + gap_us))
                                       .cast("int")).over(order.rowsBetween(Window.unboundedPreceding, 0))))
    # one row per run: when it began, and until when its findings reach (their latest end)
    by_run = Window.orderBy("_run")
    runs = (timed.groupBy("_run").agg(F.min("_s").alias("_first"), F.max("_e").alias("_reach"))
            .withColumn("_tied", F.lag("_reach").over(by_run) + gap_us >= F.col("_first"))
            .withColumn("chain", F.sum((~F.coalesce("_tied", F.lit(False))).cast("int")).over(
                by_run.rowsBetween(Window.unboundedPreceding, 0)))
            .select("_run", "chain"))
    chained = timed.join(runs, "_run")
    return (chained.withColumn("step", F.row_number().over(Window.partitionBy("chain").orderBy(
        "_s", severity_rank(), "area", "subject", "kind")))
        .select(*FINDINGS_COLUMNS, F.col("chain").cast("int"), F.col("step").cast("int")))


def chain_steps(chained: DataFrame) -> DataFrame:
    """One row per chain and (area, kind): when it first and last showed, how many subjects, how severe.

    Returns
    -------
    DataFrame
        ``chain, area, kind, severity`` (the most severe of its findings), ``first, last`` (start of
        the first, end of the last finding), ``subjects`` (distinct; a grouped finding counts the
        subjects it stands for: :func:`~workbench.analysis.findings.subject_count`), ``subject_type``, ``example``
        (one subject), ``order`` (1, 2, ... by ``first`` within the chain).
    """
    require_columns(chained, (*FINDINGS_COLUMNS, "chain"), "chain_steps")
    grouped = chained.groupBy("chain", "area", "kind").agg(
        F.min(severity_rank()).alias("_rank"), F.min("start").alias("first"),
        F.max(F.coalesce("end", "start")).alias("last"), subject_count().alias("subjects"),
        F.first("subject_type").alias("subject_type"), F.min("subject").alias("example"))
    order = Window.partitionBy("chain").orderBy("first", "_rank", "area", "kind")
    severity = F.element_at(F.array(F.lit("critical"), F.lit("warning"), F.lit("info")), F.col("_rank") + 1)
    return grouped.select("chain", "area", "kind", severity.alias("severity"), "first", "last",
                          F.col("subjects").cast("int"), "subject_type", "example",
                          F.row_number().over(order).cast("int").alias("order"))


def chain_summaries(chained: DataFrame) -> DataFrame:
    """One row per chain: its span, its most severe finding's severity, and its story in one line.

    Returns
    -------
    DataFrame
        ``chain, start, end, severity, findings`` (count), ``areas`` (in order of appearance),
        ``story`` (``area: what → area: what``, each step naming its subject, or how many).
    """
    steps = chain_steps(chained)
    kind_text = F.regexp_replace("kind", "_", " ")
    what = F.when(F.col("subjects") == 1, F.concat(F.col("subject_type"), F.lit(" "), F.col("example"), F.lit(" "),
                                                   kind_text)) \
        .otherwise(F.concat(F.col("subjects").cast("string"), F.lit(" "), F.col("subject_type"), F.lit("s "),
                            kind_text))
    text = steps.select("chain", "order", "area", F.concat(F.col("area"), F.lit(": "), what).alias("text"))
    story = (text.groupBy("chain").agg(F.array_sort(F.collect_list(F.struct("order", "text", "area"))).alias("_s"))
             .select("chain", F.array_join(F.transform("_s", lambda s: s["text"]), " → ").alias("story"),
                     F.array_distinct(F.transform("_s", lambda s: s["area"])).alias("areas")))
    span = chained.groupBy("chain").agg(
        F.min("start").alias("start"), F.max(F.coalesce("end", "start")).alias("end"),
        F.min(severity_rank()).alias("_rank"), F.count("*").cast("int").alias("findings"))
    severity = F.element_at(F.array(F.lit("critical"), F.lit("warning"), F.lit("info")), F.col("_rank") + 1)
    return (span.join(story, "chain")
            .select("chain", "start", "end", severity.alias("severity"), "findings", "areas", "story")
            .orderBy("chain"))


def summary_paragraph(chained: DataFrame, *, areas_without_data: list[str] | None = None, limit: int = 3) -> str:
    """The report's opening paragraph: what went wrong, when, in how many chains; or that nothing did.

    Counts the chained (warning and critical) findings, and tells at most ``limit`` chains'
    stories: the most severe, then earliest, chains are chosen and told in time order, so the
    paragraph begins with the earliest warning or critical finding among them. Collects only
    counts and those stories.

    Examples
    --------
    >>> summary_paragraph(chains(all_findings(tables)))   # doctest: +SKIP
    '7 warning or critical finding(s) (5 critical) in 2 chain(s) between 03:12:05 and 03:14:40 UTC. ...'
    """
    counts = chained.agg(F.count("*").alias("n"), F.sum((F.col("severity") == "critical").cast("int")).alias("crit"),
                         F.min("start").alias("first"), F.max(F.coalesce("end", "start")).alias("last"),
                         F.countDistinct("chain").alias("chains")).collect()[0]
    missing = ""
    if areas_without_data:
        missing = f" No data for: {', '.join(areas_without_data)} (those areas were not analysed)."
    if not counts["n"]:
        return ("The analyses found nothing wrong in what the bundle holds (this is not a claim that the "
                "cluster was healthy where the bundle has no data)." + missing)
    chosen = chain_summaries(chained).orderBy(severity_rank(), "start").limit(limit).collect()
    stories = sorted(chosen, key=lambda r: r["chain"])
    span = f"between {counts['first']:%Y-%m-%d %H:%M:%S} and {counts['last']:%Y-%m-%d %H:%M:%S} UTC"
    lead = (f"{counts['n']} warning or critical finding(s) ({counts['crit'] or 0} critical) in "
            f"{counts['chains']} chain(s) {span}. "
            + " ".join(f"Chain {r['chain']} ({r['start']:%H:%M:%S}–{r['end']:%H:%M:%S}): {r['story']}."
                       for r in stories))
    more = counts["chains"] - len(stories)
    if more > 0:
        lead += f" {more} more chain(s) below."
    return lead + missing
