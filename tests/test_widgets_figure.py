"""The views' figure widget (``widgets._figure.FigureWidget``): what its comm carries.

The messages a kernel would send are recorded by a comm that keeps what it publishes (``comm``'s
own ``DummyComm``, with ``publish_msg`` recording), so these checks read the real opening state and
updates ipywidgets and plotly produce. What the page does with them is the JupyterLab test's
(``tests/browser/test_notebooks_lab.py``).
"""

from __future__ import annotations

from typing import Any

import comm
import ipywidgets as ipw
import plotly.graph_objects as go
import pytest

from widgets._figure import LOADER, PLOTLY_BUNDLE, PLOTLY_BUNDLE_ID, FigureWidget, redraw


class RecordingComm(comm.DummyComm):
    published: list[tuple[str, Any, Any]] = []

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None,
                    **keys: Any) -> None:
        RecordingComm.published.append((msg_type, self.comm_id, data))


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any, Any]]:
    RecordingComm.published = []
    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: RecordingComm(*a, **k))
    return RecordingComm.published


def _figure(title: str, ys: list[int]) -> go.Figure:
    return go.Figure(go.Bar(y=ys, name="bars"), layout_title_text=title)


def _opened(published: list, comm_id: str) -> dict:
    states = [d["state"] for kind, cid, d in published if kind == "comm_open" and cid == comm_id]
    assert len(states) == 1, states
    return states[0]


def test_the_comm_opens_when_a_box_takes_the_figure_with_the_figure_as_its_state(published: list) -> None:
    fig = FigureWidget()
    redraw(fig, _figure("lag per group", [3, 1, 2]))
    assert fig.comm is None and fig.unopened
    assert published == []  # nothing reached a page yet: no empty opening state

    box = ipw.VBox([fig])
    state = _opened(published, fig.model_id)
    assert state["_widget_layout"]["title"]["text"] == "lag per group"
    [trace] = state["_widget_data"]
    assert trace["type"] == "bar" and trace["name"] == "bars"
    assert list(trace["y"]) == [3, 1, 2] or trace["y"]["shape"] == [3]  # a list, or plotly's typed array
    assert state["_esm"] == LOADER
    assert state["_plotly_bundle"] == PLOTLY_BUNDLE and state["_plotly_bundle_id"] == PLOTLY_BUNDLE_ID
    assert state["_anywidget_id"] == "widgets._figure.FigureWidget"
    assert box.children == (fig,)


def test_displaying_opens_it_too_and_names_the_opened_model(published: list) -> None:
    fig = FigureWidget(_figure("fences", [1]))
    bundle = fig._repr_mimebundle_()
    model_id = bundle["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert model_id == fig.model_id
    assert _opened(published, model_id)["_widget_layout"]["title"]["text"] == "fences"


def test_every_edit_after_opening_leaves_the_whole_figure_in_the_synced_state(published: list) -> None:
    fig = FigureWidget(_figure("before", [1, 2]))
    model_id = fig.model_id
    published.clear()
    redraw(fig, go.Figure([go.Scatter(y=[5, 6], name="a"), go.Scatter(y=[7], name="b")],
                          layout_title_text="after"))
    updates = [d["state"] for kind, cid, d in published if kind == "comm_msg" and cid == model_id
               and d.get("method") == "update"]
    last = {}
    for state in updates:
        last.update(state)
    assert last["_widget_layout"]["title"]["text"] == "after"
    assert [t["name"] for t in last["_widget_data"]] == ["a", "b"]
    # the edits themselves went too, for views already drawn
    assert any("_py2js_addTraces" in s and s["_py2js_addTraces"] for s in updates)

    fig.layout.xaxis.range = [0, 1]  # an edit outside redraw (a linked window) as well
    assert list(fig._widget_layout["xaxis"]["range"]) == [0, 1]


def test_a_closed_figure_never_opens_again(published: list) -> None:
    fig = FigureWidget(_figure("gone", [1]))
    _ = fig.model_id
    fig.close()
    assert not fig.unopened
    with pytest.raises(AttributeError):
        _ = fig.model_id
    assert [kind for kind, _cid, _d in published].count("comm_open") == 1

