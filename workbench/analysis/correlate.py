"""Correlation: findings whose intervals overlap or follow each other closely become one chain.

An incident is rarely one area: a quorum stall fences a broker, ISRs shrink, producers with
``acks=all`` stop, consumers fall behind. :func:`chains` orders every finding by start and
starts a new chain whenever a finding begins more than ``gap`` seconds after every earlier
finding of the current chain has ended, so each chain is a connected stretch of trouble on one
time axis. :func:`chain_steps` condenses a chain into its steps (one per area and kind, in order
of first appearance, with how many subjects it touched), and :func:`chain_summaries` writes the
one-line story an SRE reads first::

    quorum: controller 2 unresponsive → isr: 12 partitions under min ISR → consumer_lag: group billing behind
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.analysis._checks import require_columns
from workbench.analysis.findings import FINDINGS_COLUMNS, severity_rank, subject_count

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Default gap, in seconds, within which a finding that follows another joins its chain.
DEFAULT_GAP_S = 30.0


def chains(findings: DataFrame, *, gap: float = DEFAULT_GAP_S) -> DataFrame:
    """Every finding with the chain it belongs to.

    Parameters
    ----------
    findings : DataFrame
        Rows of :data:`~workbench.analysis.findings.FINDINGS_SCHEMA`.
    gap : float
        Seconds: a finding starting at most this long after the chain's latest end joins it.
        Findings without a start (none known) are left out.

    Returns
    -------
    DataFrame
        The findings' columns plus ``chain`` (1, 2, ... in time order) and ``step`` (the finding's
        position in its chain, by start).

    Examples
    --------
    >>> chains(all_findings(tables), gap=30).show()   # doctest: +SKIP
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if gap < 0:
        raise ValueError(f"gap must be >= 0 seconds, got {gap}")
    require_columns(findings, FINDINGS_COLUMNS, "chains")
    start_us = F.unix_micros("start")
    end_us = F.unix_micros(F.coalesce("end", "start"))
    # one global order: findings are few (hundreds to tens of thousands), one task is fine
    order = Window.orderBy(start_us, severity_rank(), "area", "subject", "kind")
    running = order.rowsBetween(Window.unboundedPreceding, -1)
    timed = (findings.where(F.col("start").isNotNull())
             .withColumn("_s", start_us).withColumn("_e", F.greatest(end_us, start_us))
             .withColumn("_reach", F.max("_e").over(running))
             .withColumn("_new", F.col("_reach").isNull() | (F.col("_s") > F.col("_reach") + F.lit(int(gap * 1e6))))
             .withColumn("chain", F.sum(F.col("_new").cast("int")).over(order.rowsBetween(
                 Window.unboundedPreceding, 0))))
    return (timed.withColumn("step", F.row_number().over(Window.partitionBy("chain").orderBy(
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
    from pyspark.sql import Window
    from pyspark.sql import functions as F

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
    from pyspark.sql import functions as F

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

    Collects only counts and at most ``limit`` chain stories.

    Examples
    --------
    >>> summary_paragraph(chains(all_findings(tables)))   # doctest: +SKIP
    '7 findings (5 critical) in 2 chains between 03:12:05 and 03:14:40 UTC. ...'
    """
    from pyspark.sql import functions as F

    counts = chained.agg(F.count("*").alias("n"), F.sum((F.col("severity") == "critical").cast("int")).alias("crit"),
                         F.min("start").alias("first"), F.max(F.coalesce("end", "start")).alias("last"),
                         F.countDistinct("chain").alias("chains")).collect()[0]
    missing = ""
    if areas_without_data:
        missing = f" No data for: {', '.join(areas_without_data)} (those areas were not analysed)."
    if not counts["n"]:
        return ("The analyses found nothing wrong in what the bundle holds (this is not a claim that the "
                "cluster was healthy where the bundle has no data)." + missing)
    stories = chain_summaries(chained).orderBy(severity_rank(), "start").limit(limit).collect()
    span = f"between {counts['first']:%Y-%m-%d %H:%M:%S} and {counts['last']:%Y-%m-%d %H:%M:%S} UTC"
    lead = (f"{counts['n']} finding(s) ({counts['crit'] or 0} critical) in {counts['chains']} chain(s) {span}. "
            + " ".join(f"Chain {r['chain']} ({r['start']:%H:%M:%S}–{r['end']:%H:%M:%S}): {r['story']}."
                       for r in stories))
    more = counts["chains"] - len(stories)
    if more > 0:
        lead += f" {more} more chain(s) below."
    return lead + missing
