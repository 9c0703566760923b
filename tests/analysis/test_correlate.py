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
    assert text.startswith("5 finding(s) (3 critical) in 2 chain(s) between 2026-03-01 03:12:00 and "
                           "2026-03-01 03:15:30 UTC. Chain 1 (03:12:00–03:13:30): quorum: node 2 stall")


def test_nothing_found_is_not_called_healthy(spark):
    empty = correlate.chains(spark.createDataFrame([], FINDINGS_SCHEMA))
    text = correlate.summary_paragraph(empty, areas_without_data=["Consumer lag"])
    assert "found nothing wrong" in text and "not a claim that the cluster was healthy" in text
    assert text.endswith("No data for: Consumer lag (those areas were not analysed).")
