"""An area whose analysis fails leaves every other area's findings, and the report says which and why.

Issue 43: one bad timestamp failed the ISR replay and the whole report with it (exit 2, no
report). The areas run in turn; one that raises is left out and named (its exception's type and
first line) before anything else in the report, the others' findings and key figures stay as they
are, and the exit code is judged on them: 2 only when every area with data failed. Here a real
``isr`` bundle, with an area registered beside the real ones whose findings raise as the replay did.
"""

from __future__ import annotations

import pytest

from workbench.analysis import findings as findings_module
from workbench.analysis.findings import register_area
from workbench.investigation import open_investigation
from workbench.report import EXIT_FAILED, exit_code_for

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _raises(tables, params):
    import pyarrow as pa

    raise pa.lib.ArrowInvalid("Needed to copy 1 chunks with 1 nulls, but zero_copy_only was True")


def _kept(summary):
    return {k: v for k, v in summary.items() if k not in ("parameters", "failed_areas")}


def test_a_failing_area_is_named_and_the_others_are_reported(spark, kafka_bundle):
    bundle = kafka_bundle("isr")
    clean = open_investigation(bundle, spark=spark, params={"report": True}).summary()
    register_area("zz_failing", title="An area that fails", order=99, analyse=_raises,
                  findings=lambda result: result, tables=("metadata",))
    try:
        inv = open_investigation(bundle, spark=spark, params={"report": True, "run": "with a failing area"})
        got = inv.summary()
        texts = inv.failures_text()
    finally:
        findings_module._AREAS.pop("zz_failing", None)
    why = "ArrowInvalid: Needed to copy 1 chunks with 1 nulls, but zero_copy_only was True"
    assert got["failed_areas"] == {"zz_failing": why}
    assert texts == [f"An area that fails could not be computed, and is left out of this report: {why}. "
                     "Every other area is reported."]
    areas = dict(got["areas"])
    assert areas.pop("zz_failing") == {"title": "An area that fails", "has_data": True}
    assert _kept({**got, "areas": areas}) == _kept(clean)
    assert exit_code_for(got, "critical") == exit_code_for(clean, "critical") != EXIT_FAILED
    nothing_reported = {**got, "failed_areas": {a: why for a, v in got["areas"].items() if v["has_data"]}}
    assert exit_code_for(nothing_reported, "never") == EXIT_FAILED
