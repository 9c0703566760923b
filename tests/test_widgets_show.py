"""``widgets.linking.show``: one call in a notebook cell for both modes, the view's report figures in an
HTML report, the interactive view otherwise; and the window a view's report figures cover."""

from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import pytest

import widgets.linking as linking
from widgets.consumer_lag import ConsumerLagView, empty_frames
from widgets.linking import TimeWindow, report_window, show


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """What a notebook would show: figures (``Figure.show``) and displayed objects (``display``)."""
    seen: dict[str, list] = {"figures": [], "displayed": []}
    monkeypatch.setattr(go.Figure, "show", lambda self, *args, **kwargs: seen["figures"].append(self))
    monkeypatch.setattr(linking, "display", lambda *objs, **kwargs: seen["displayed"].extend(objs))
    return seen


def test_a_report_shows_each_report_figure_in_order_and_no_widget(shown: dict[str, list]) -> None:
    view = ConsumerLagView(empty_frames())
    show(view, report=True)
    assert shown["displayed"] == []
    assert [json.loads(f.to_json()) for f in shown["figures"]] == [
        json.loads(f.to_json()) for f in view.report_figures()]
    assert [f.layout.title.text for f in shown["figures"]] == [
        "ConsumerFetchLagBytes (commits per bucket)", "ConsumerFetchLagTimeInMs (commits per bucket)",
        "Page cache: share of reads within N bytes of the log tail", "Lag at each commit (bytes behind)",
        "Burrow's group status over time (OK, WARN, ERR)",
        "Burrow's partition status over time (OK, WARN, STOP, STALL, REWIND)"]


def test_interactively_the_view_itself_is_displayed_and_no_figure_shown(shown: dict[str, list]) -> None:
    view = ConsumerLagView(empty_frames())
    show(view, report=False)
    assert shown["figures"] == []
    assert len(shown["displayed"]) == 1 and shown["displayed"][0] is view


def test_the_report_window_is_start_and_end_when_given_else_the_shared_windows_range() -> None:
    window = TimeWindow()
    window.set("2026-11-21 03:00:00", "2026-11-21 04:00:00")
    assert report_window("2026-11-21 03:30:00", "", window) == (pd.Timestamp("2026-11-21 03:30:00"), None)
    assert report_window("", None, window) == window.range
    assert report_window(None, None, None) == (None, None)
