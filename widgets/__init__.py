"""Presentation layer: plotly figures and ipywidgets views over aggregated analysis results."""

from widgets.isr import IsrTimeline, figure_isr_timeline, figure_under_min_isr

__all__ = ["IsrTimeline", "figure_isr_timeline", "figure_under_min_isr"]
