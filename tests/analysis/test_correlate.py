"""Correlation of findings into chains, compared as whole frames."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from tests.analysis.metadata_rows import at
from workbench.analysis import correlate
from workbench.analysis.findings import FINDINGS_SCHEMA

pytestmark = pytest.mark.spark


def finding(area, kind, severity, subject_type, subject, start, end, summary=""):
    return (area, kind, severity, subject_type, subject, None if start is None else at(start),
            None if end is None else at(end), summary or f"{subject} {kind}", {})


INCIDENT = [
    finding("quorum", "stall", "critical", "node", "2", 0, 8),                     # chain 1 starts
    finding("isr", "under_min_isr", "critical", "partition", "orders-0", 5, 40),   # overlaps the stall
    finding("isr", "under_min_isr", "critical", "partition", "orders-1", 6, 41),
    finding("consumer_lag", "behind", "warning", "group", "billing", 60, 90),    # 19 s after 41 s: joins (gap 30)
    finding("tier", "upload_lag", "warning", "partition", "orders-0", 200, 210),  # 110 s later: chain 2
    finding("isr", "isr_flapping", "warning", "partition", "audit-0", None, None),  # no time: left out
]


def test_chains_link_overlapping_and_following_findings(spark):
    got = correlate.chains(spark.createDataFrame(INCIDENT, FINDINGS_SCHEMA), gap=30)
    want_rows = [r + (1, i + 1) for i, r in enumerate(INCIDENT[:4])] + [INCIDENT[4] + (2, 1)]
    assertDataFrameEqual(got, spark.createDataFrame(want_rows, FINDINGS_SCHEMA + ", chain int, step int"))
    # a smaller gap splits the consumer-lag finding off
    tight = correlate.chains(spark.createDataFrame(INCIDENT, FINDINGS_SCHEMA), gap=10)
    assert [(r.subject, r.chain) for r in tight.orderBy("start").collect()] == [
        ("2", 1), ("orders-0", 1), ("orders-1", 1), ("billing", 2), ("orders-0", 3)]


def test_chain_summaries_tell_the_story_area_by_area(spark):
    chained = correlate.chains(spark.createDataFrame(INCIDENT, FINDINGS_SCHEMA), gap=30)
    got = correlate.chain_summaries(chained)
    want = spark.createDataFrame([
        (1, at(0), at(90), "critical", 4, ["quorum", "isr", "consumer_lag"],
         "quorum: node 2 stall → isr: 2 partitions under min isr → consumer_lag: group billing behind"),
        (2, at(200), at(210), "warning", 1, ["tier"], "tier: partition orders-0 upload lag"),
    ], "chain int, start timestamp, end timestamp, severity string, findings int, areas array<string>, story string")
    assertDataFrameEqual(got, want)
    text = correlate.summary_paragraph(chained)
    assert text.startswith("5 warning or critical finding(s) (3 critical) in 2 chain(s) between "
                           "2026-03-01 03:12:00 and 2026-03-01 03:15:30 UTC. Chain 1 (03:12:00–03:13:30): "
                           "quorum: node 2 stall")


def chain_of(chained):
    """(chain, step, area, subject) of every chained finding, in chain and step order."""
    return [(r.chain, r.step, r.area, r.subject) for r in chained.orderBy("chain", "step").collect()]


#: Group billing lags through the whole capture (a warning from 0 s to 1,000 s) while three
#: separate incidents happen inside it, minutes apart.
LONG_LAG = [
    finding("consumer_lag", "lag", "warning", "group", "billing", 0, 1000),
    finding("quorum", "commit_stall", "critical", "quorum", "metadata log", 100, 108),
    finding("isr", "under_min_isr", "critical", "partition", "payments-0", 105, 140),
    finding("mirror", "mirror_outage", "critical", "flow", "prod->dr", 400, 430),
    finding("consumer_lag", "stuck", "warning", "group", "reports", 420, 450),
    finding("tier", "copy_failed", "warning", "partition", "audit-0", 700, 720),
]


def test_a_finding_spanning_the_capture_does_not_merge_the_incidents_inside_it(spark):
    chained = correlate.chains(spark.createDataFrame(LONG_LAG, FINDINGS_SCHEMA), gap=30)
    # the lag's run is carried by the next run only (the stall begins while the lag is open);
    # the mirror outage begins 260 s after the ISR finding ended: a chain of its own, and so on
    assert chain_of(chained) == [
        (1, 1, "consumer_lag", "billing"), (1, 2, "quorum", "metadata log"), (1, 3, "isr", "payments-0"),
        (2, 1, "mirror", "prod->dr"), (2, 2, "consumer_lag", "reports"),
        (3, 1, "tier", "audit-0")]
    assert [r.story for r in correlate.chain_summaries(chained).collect()] == [
        "consumer_lag: group billing lag → quorum: quorum metadata log commit stall → "
        "isr: partition payments-0 under min isr",
        "mirror: flow prod->dr mirror outage → consumer_lag: group reports stuck",
        "tier: partition audit-0 copy failed"]


#: Two incidents 200 s apart, and info findings (notes, an election, lag within bounds) that
#: overlap both and fill the time between them; the first info finding comes before either.
INFO_BETWEEN = [
    finding("consumer_lag", "lag", "info", "group", "fulfilment", 0, 250),
    finding("tier", "upload_backlog", "warning", "broker", "4", 10, 40),
    finding("quorum", "leader_elected", "info", "node", "1", 30, None),
    finding("consumer_lag", "burrow_warn", "info", "group", "billing", 35, 120),
    finding("consumer_lag", "burrow_warn", "info", "group", "billing", 110, 215),
    finding("isr", "under_min_isr", "critical", "partition", "payments-0", 210, 250),
    finding("isr", "cluster_stopped", "info", "cluster", "c1", 260, 262),
]


def test_info_findings_neither_join_nor_glue_chains(spark):
    chained = correlate.chains(spark.createDataFrame(INFO_BETWEEN, FINDINGS_SCHEMA), gap=30)
    assert chain_of(chained) == [(1, 1, "tier", "4"), (2, 1, "isr", "payments-0")]
    text = correlate.summary_paragraph(chained)
    # the story begins with the earliest warning, not with the lag note before it; the critical
    # chain is told too, in time order after it
    assert text == ("2 warning or critical finding(s) (1 critical) in 2 chain(s) between 2026-03-01 03:12:10 and "
                    "2026-03-01 03:16:10 UTC. Chain 1 (03:12:10–03:12:40): tier: broker 4 upload backlog. "
                    "Chain 2 (03:15:30–03:16:10): isr: partition payments-0 under min isr.")
    only_info = correlate.chains(spark.createDataFrame([r for r in INFO_BETWEEN if r[2] == "info"], FINDINGS_SCHEMA))
    assert only_info.count() == 0


def test_nothing_found_is_not_called_healthy(spark):
    empty = correlate.chains(spark.createDataFrame([], FINDINGS_SCHEMA))
    text = correlate.summary_paragraph(empty, areas_without_data=["Consumer lag"])
    assert "found nothing wrong" in text and "not a claim that the cluster was healthy" in text
    assert text.endswith("No data for: Consumer lag (those areas were not analysed).")
