"""The plotly figure widget every view draws in, and how a view redraws it.

Plotly's ``FigureWidget`` is an anywidget: its page side is plotly's widget module (plotly.js and
the widget code, a 5 MB ES module), which the page evaluates once per figure model, each time
about as long as anywidget waits for it. anywidget holds back every message to a model until that
model's module has loaded and initialised, and gives up after 2 s: from then on every message to
the model is dropped. A plain ``FigureWidget`` also opens its comm with an empty figure and sends
its figure in later messages. On a loaded machine both showed in CI: figures drawn from an empty
state (untitled, default axes), then, once the figures opened filled, a topic filter whose redraw
never reached the page.

:class:`FigureWidget` avoids both:

* its comm opens when it is first needed on a page (displayed, or put in a box, which asks for
  its model id), with the figure it holds by then as the model's opening state; views fill their
  figures before they are displayed, so the page's first state of each figure is the figure;
* its page module (:data:`LOADER`) is a few lines: it initialises at once, so anywidget never
  times out and no message is dropped; plotly's module travels as a synced string
  (``_plotly_bundle``), is evaluated once per page for all figures (cached under its hash) and
  takes over when the first view of a figure renders;
* every edit the kernel sends (relayout, restyle, traces) also leaves the whole figure in the
  synced state, so a view rendered after edits starts from the edited figure.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import plotly.graph_objects as go
import traitlets

#: Plotly's own page module for its figure widget (the text of ``widgetbundle.js``).
PLOTLY_BUNDLE = str(go.FigureWidget._esm)
PLOTLY_BUNDLE_ID = hashlib.sha256(PLOTLY_BUNDLE.encode()).hexdigest()[:16]

#: The page module of :class:`FigureWidget`: initialises at once; the first render evaluates
#: plotly's module (once per page: cached on ``globalThis`` under its hash), initialises plotly's
#: widget on this model and lets it render every view of the model.
LOADER = """\
const modules = (globalThis.__workbenchPlotlyWidget ??= new Map());

function plotlyModule(model) {
  const id = model.get("_plotly_bundle_id");
  if (!modules.has(id)) {
    const source = new Blob([model.get("_plotly_bundle")], { type: "text/javascript" });
    const url = URL.createObjectURL(source);
    modules.set(id, import(url).finally(() => URL.revokeObjectURL(url)));
  }
  return modules.get(id);
}

export default () => {
  let modelContext;  // what anywidget gives initialize: the model, for the model's lifetime
  let plotly;  // plotly's widget for this model, made at its first render
  return {
    initialize(context) {
      modelContext = context;
    },
    async render(context) {
      plotly ??= plotlyModule(context.model).then(async (module) => {
        const widget = await module.default();
        await widget.initialize(modelContext);
        return widget;
      });
      return (await plotly).render(context);
    },
  };
};
"""


class FigureWidget(go.FigureWidget):
    """A ``FigureWidget`` that reaches the page whole (see the module docstring): its comm opens
    when it is first displayed or put in a box, with its figure as the opening state, and its page
    module never makes anywidget drop a message.

    Examples
    --------
    >>> fig = FigureWidget(go.Figure(go.Bar(y=[1, 2]), layout_title_text="t"))
    >>> fig.comm is None and fig.unopened
    True
    """

    _esm = LOADER
    _plotly_bundle = traitlets.Unicode(PLOTLY_BUNDLE).tag(sync=True)
    _plotly_bundle_id = traitlets.Unicode(PLOTLY_BUNDLE_ID).tag(sync=True)

    def open(self) -> None:
        """Open the comm only once the widget is asked for on a page (:attr:`model_id`)."""
        if self.__dict__.get("_may_open"):
            super().open()

    @property
    def model_id(self) -> str:
        """The comm's id; the first call opens the comm with the figure as its state."""
        if self.comm is None and not self.__dict__.get("_closed"):
            self._figure_state()
            self._may_open = True
            super().open()
        return self.comm.comm_id

    @property
    def unopened(self) -> bool:
        """True while the widget is alive but was never asked for on a page."""
        return self.comm is None and not self.__dict__.get("_closed")

    def close(self) -> None:
        self._closed = True
        super().close()

    def _repr_mimebundle_(self, *args: Any, **kwargs: Any) -> Any:
        self.model_id  # noqa: B018  (opens the comm with the figure as its first state)
        return super()._repr_mimebundle_(*args, **kwargs)

    def _figure_state(self) -> None:
        """The whole figure in the synced state, as plotly's own display of a widget does."""
        self._widget_layout = copy.deepcopy(self._layout_obj._props)
        self._widget_data = copy.deepcopy(self._data)

    def _edited(self) -> None:
        if self.comm is not None:
            self._figure_state()


def _then_figure_state(name: str) -> Any:
    """Plotly's edit message ``name``, then the whole figure in the synced state."""

    def send(self: FigureWidget, *args: Any, **kwargs: Any) -> None:
        getattr(go.FigureWidget, name)(self, *args, **kwargs)
        self._edited()

    send.__name__ = name
    return send


for _name in ("_send_relayout_msg", "_send_restyle_msg", "_send_update_msg", "_send_addTraces_msg",
              "_send_moveTraces_msg", "_send_deleteTraces_msg"):
    setattr(FigureWidget, _name, _then_figure_state(_name))


def redraw(widget: Any, figure: Any) -> None:
    """Show ``figure``'s traces and layout in the ``FigureWidget`` ``widget``.

    A new layout reaches the page as a relayout of the keys it holds: annotations and shapes the
    old layout had and the new one lacks (an empty figure's sentence, a stall band outside the new
    window) would stay drawn, so their removal is sent first.
    """
    for key in ("annotations", "shapes"):
        if widget.layout[key] and not figure.layout[key]:
            widget.layout[key] = ()
    with widget.batch_update():
        widget.data = ()
        widget.add_traces(list(figure.data))
        widget.layout = figure.layout


def empty_figure(title: str, message: str) -> go.Figure:
    """A titled figure without axes that says ``message`` (a view with nothing to draw)."""
    from widgets._frames import plotly_text

    fig = go.Figure()
    fig.update_layout(title=title, height=300, xaxis={"visible": False}, yaxis={"visible": False},
                      annotations=[{"text": plotly_text(message), "showarrow": False, "xref": "paper",
                                    "yref": "paper", "x": 0.5, "y": 0.5}])
    return fig
