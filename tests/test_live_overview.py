"""The overview's findings timeline drawn area by area as each area's findings arrive (Spark)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from widgets.timeline import FindingsTimeline, merge_for_display
from workbench.analysis.findings import all_findings
from workbench.investigation import open_investigation

pytestmark = pytest.mark.spark


def test_the_live_overview_draws_each_area_as_it_arrives_and_ends_on_the_findings(
        spark, incident_bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inv = open_investigation(incident_bundle, spark=spark)
    drawn: list[tuple[list[str], list[str], pd.DataFrame]] = []
    first: list[str] = []
    update, init = FindingsTimeline.update, FindingsTimeline.__init__

    def watched(self: FindingsTimeline, findings: pd.DataFrame, *, pending=()) -> None:
        drawn.append((sorted(set(findings["area"])), list(pending), findings.copy()))
        update(self, findings, pending=pending)

    def made(self: FindingsTimeline, findings: pd.DataFrame, **kwargs) -> None:
        init(self, findings, **kwargs)
        first.extend(a["text"] for a in self.figure.layout.annotations)
        drawn.append((sorted(set(findings["area"])), list(kwargs.get("pending", ())), findings.copy()))

    monkeypatch.setattr(FindingsTimeline, "update", watched)
    monkeypatch.setattr(FindingsTimeline, "__init__", made)
    box = inv.live_overview_timeline()
    timeline = box.children[0]
    areas = list(inv.area_titles())
    # what the report computes on its own (the overview kept its rows as the investigation's findings)
    expected = all_findings(inv.tables, inv.params).toPandas()
    pd.testing.assert_frame_equal(inv.findings().toPandas(), expected)
    assert set(expected["area"]) >= {"isr"}  # the incident has findings to draw

    # first an empty timeline naming every area as computing (drawn once, by the constructor), then
    # one drawing per area, each with the findings of the areas done so far, then the findings as
    # the report holds them
    assert [(a, p, len(f)) for a, p, f in drawn[:1]] == [([], areas, 0)]
    titles = inv.area_titles()
    assert first == [f"Computing the findings of {', '.join(titles[a] for a in areas)}..."]
    assert len(drawn) == len(areas) + 2
    assert [p for _, p, _ in drawn[1:-1]] == [areas[i + 1:] for i in range(len(areas))]
    for i, (present, _, frame) in enumerate(drawn[1:-1]):
        done = expected[expected["area"].isin(areas[: i + 1])]
        assert present == sorted(set(done["area"]))
        key = ["area", "kind", "subject", "start"]
        pd.testing.assert_frame_equal(frame.sort_values(key).reset_index(drop=True)[list(expected.columns)],
                                      done.sort_values(key).reset_index(drop=True))
    pd.testing.assert_frame_equal(drawn[-1][2], expected)
    shown = merge_for_display(expected)  # what the timeline draws of them (as it did before it was live)
    pd.testing.assert_frame_equal(timeline._frame, shown)
    assert timeline.status.value == f"{len(shown)} of {len(shown)} finding(s) in the window"
    assert sum(len(t.y) for t in timeline.figure.data) == len(shown)
