"""Grouping findings that touch many subjects at once, compared as whole frames."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from tests.analysis.metadata_rows import at
from workbench.analysis import correlate
from workbench.analysis.findings import FINDINGS_SCHEMA, grouped_findings

pytestmark = pytest.mark.spark


def finding(kind, subject, start, end, severity="critical", area="isr", subject_type="partition", summary=None):
    return (area, kind, severity, subject_type, subject, None if start is None else at(start),
            None if end is None else at(end), summary or f"{subject} {kind} {start}-{end}", {"seconds": 1.0})


ROWS = [
    # a broker outage: three partitions under min ISR from 10 s, overlapping, two at once at most
    # after t-2 joined at 30 s (t-0 ended at 30 s: an end and a start at one instant do not overlap)
    finding("under_min_isr", "t-0", 10, 30),
    finding("under_min_isr", "t-1", 12, 40),
    finding("under_min_isr", "t-2", 30, 35),
    finding("under_min_isr", "t-0", 38, 39),     # t-0 again, within the same run: 3 subjects, 4 findings
    # later, one partition alone: stays as it is
    finding("under_min_isr", "t-5", 100, 110),
    # two partitions offline at once: fewer than three subjects, both stay
    finding("offline", "t-0", 20, 25),
    finding("offline", "t-1", 21, 26),
    # three instants at one time, of another kind and severity
    finding("isr_flapping", "t-7", 50, 50, severity="warning"),
    finding("isr_flapping", "t-8", 50, None, severity="warning"),
    finding("isr_flapping", "t-9", 50, 50, severity="warning"),
    # no time: never grouped
    finding("isr_flapping", "t-3", None, None, severity="warning"),
]

LONGEST = "t-1 under_min_isr 12-40"


def test_runs_of_many_subjects_become_one_finding_and_the_rest_stay(spark):
    frame = spark.createDataFrame(ROWS, FINDINGS_SCHEMA)
    got = grouped_findings(frame, min_subjects=3, phrases={"under_min_isr": "were under min ISR"})
    want = spark.createDataFrame([
        ("isr", "under_min_isr", "critical", "partition", "3 partitions", at(10), at(40),
         "3 partitions were under min ISR between 2026-03-01 03:12:10 and 2026-03-01 03:12:40 UTC, up to 2 at once "
         f"(4 findings); the longest: {LONGEST}",
         {"subjects": 3.0, "findings": 4.0, "at_once": 2.0, "seconds": 30.0}),
        ROWS[4], ROWS[5], ROWS[6],
        ("isr", "isr_flapping", "warning", "partition", "3 partitions", at(50), at(50),
         "3 partitions isr flapping between 2026-03-01 03:12:50 and 2026-03-01 03:12:50 UTC, up to 3 at once "
         "(3 findings); the longest: t-9 isr_flapping 50-50",
         {"subjects": 3.0, "findings": 3.0, "at_once": 3.0, "seconds": 0.0}),
        ROWS[10],
    ], FINDINGS_SCHEMA)
    assertDataFrameEqual(got, want)


def test_a_gap_joins_runs_and_a_high_threshold_keeps_every_finding(spark):
    frame = spark.createDataFrame(ROWS, FINDINGS_SCHEMA)
    assertDataFrameEqual(grouped_findings(frame, min_subjects=4), frame)
    # with a 60 s gap, t-5 (100 s) joins the outage's run (ended at 40 s): 4 partitions, 5 findings
    joined = grouped_findings(frame, min_subjects=4, gap_s=60).where("kind = 'under_min_isr'")
    assertDataFrameEqual(joined.selectExpr("subject", "start", "end", "figures['findings'] as f",
                                           "figures['at_once'] as o"),
                         spark.createDataFrame([("4 partitions", at(10), at(110), 5.0, 2.0)],
                                               "subject string, start timestamp, end timestamp, f double, o double"))
    with pytest.raises(ValueError, match="min_subjects"):
        grouped_findings(frame, min_subjects=1)


def test_chains_count_the_subjects_of_grouped_findings(spark):
    frame = grouped_findings(spark.createDataFrame(ROWS[:5], FINDINGS_SCHEMA), min_subjects=3)
    chained = correlate.chains(frame, gap=30)
    got = correlate.chain_summaries(chained).select("chain", "findings", "story")
    want = spark.createDataFrame([
        (1, 1, "isr: 3 partitions under min isr"),
        # 60 s after the run's end: a chain of its own
        (2, 1, "isr: partition t-5 under min isr"),
    ], "chain int, findings int, story string")
    assertDataFrameEqual(got, want)


class _KeptTables:
    """A bundle's tables as far as the area's caches see them: ``derive`` (frames) and ``kept``
    (results) each keep one result per key."""

    def __init__(self):
        self.store = {}

    def derive(self, key, compute):
        if key not in self.store:
            self.store[key] = compute()
        return self.store[key]

    kept = derive


def test_an_areas_result_and_findings_are_computed_once_per_bundle_and_parameters():
    from workbench.analysis.findings import Area

    analysed, found = [], []

    def analyse(tables, params):
        analysed.append(dict(params))
        return f"result {len(analysed)}"

    def findings(result):
        found.append(result)
        return f"findings of {result}"

    area = Area("isr", "ISR", 2, analyse, findings, frames=lambda r: {"f": r}, key_figures=lambda r: {"k": r})
    tables = _KeptTables()
    assert area.findings_for(tables, {"isr_flap_threshold": 3}) == "findings of result 1"
    assert area.findings_for(tables, {"isr_flap_threshold": 3}) == "findings of result 1"
    # the view frames and key figures read the same result
    assert area.frames_for(tables, {"isr_flap_threshold": 3}) == {"f": "result 1"}
    assert area.key_figures_for(tables, {"isr_flap_threshold": 3}) == {"k": "result 1"}
    assert (analysed, found) == ([{"isr_flap_threshold": 3}], ["result 1"])
    assert area.findings_for(tables, {"isr_flap_threshold": 5}) == "findings of result 2"         # other parameters
    assert area.findings_for(_KeptTables(), {"isr_flap_threshold": 3}) == "findings of result 3"  # another bundle
    assert area.findings_for({}, {}) == "findings of result 4"   # tables that keep nothing: each time
    assert area.findings_for({}, {}) == "findings of result 5"
    # an area registered again under the same name keeps nothing of the old one's results
    again = Area("isr", "ISR", 2, lambda t, p: "new", lambda r: r)
    assert again.findings_for(tables, {"isr_flap_threshold": 3}) == "new"
    assert Area("isr", "ISR", 2, analyse, findings).frames_for(tables, {}) is None
