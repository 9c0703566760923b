# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Kafka incident overview
#
# What happened, computed offline from what Kafka left on disk and what was exported: every
# area's findings on one time axis, linked into chains ("controller paused → broker fenced →
# partitions under min ISR → consumers behind"), then what the bundle holds and what could not be
# read. Run it in JupyterLab (`report = False`: interactive, choosing a time range here moves
# every view) or as an HTML report: `workbench report --bundle PATH --out report.html`.

# %% tags=["parameters"]
bundle: str = ""  # bundle directory or archive (empty: the demo bundle, a real incident captured from Kafka)
start: str = ""  # window start, UTC, e.g. 2026-11-21T03:00:00 (empty: the bundle's first record)
end: str = ""  # window end, UTC (empty: the bundle's last record)
report: bool = False  # True: static figures for an HTML report; False: interactive widgets
correlation_gap_s: float = 30.0  # findings beginning within this many seconds of each other, or of the previous ones' end, form one chain
summary_path: str = ""  # also write the findings and key figures as JSON to this file (empty: no file)
progress_path: str = ""  # set by `workbench report`: a line per step is appended here as it ends (empty: none)

# %% tags=["setup"]
import plotly.io as pio
from IPython.display import HTML, display

from widgets.tables import table_html
from workbench.investigation import open_investigation

pio.renderers.default = "plotly_mimetype+notebook"
inv = open_investigation(bundle, params=globals())

# %%
from widgets import timeline as timeline_view
from widgets.tables import text_html
from workbench.analysis import correlate

if not inv.report:  # interactive: the findings timeline first, its bars drawn area by area as each area's arrive
    inv.live_overview_timeline()
chained = inv.chains()
for failure in inv.failures_text():  # an area whose analysis failed: named first, the others reported
    display(HTML('<p class="wb-summary wb-failed"><strong>' + text_html(failure) + "</strong></p>"))
nothing = inv.nothing_to_analyse()
if nothing:  # no area has data: say so first, list what was found, claim nothing about health
    display(HTML('<p class="wb-summary wb-nothing"><strong>' + text_html(nothing) + "</strong></p>"))
    display(HTML(table_html(inv.unusable_files(), limit=200, empty="")))
else:
    display(HTML('<p class="wb-summary">' + text_html(
        correlate.summary_paragraph(chained, areas_without_data=inv.areas_without_data())) + "</p>"))

# %% [markdown]
# ## Chains of findings
#
# Warning and critical findings in time order (info findings are left out): those that begin
# within `correlation_gap_s` of each other, or while earlier ones are open or at most that long
# after they ended, form one chain: one stretch of trouble, told area by area.

# %%
chains_pd = correlate.chain_summaries(chained).toPandas()
display(HTML(table_html(chains_pd, limit=50, empty="No chain: no warning or critical finding.")))

# %% [markdown]
# ## Findings over time
#
# One lane per area, one bar per finding, coloured by severity; hover for the sentence. In
# JupyterLab, type a range or zoom to move every view of the notebook, and click a finding to
# open its area's view at that moment.

# %%
if inv.report:
    timeline_view.figure_findings_timeline(inv.findings().toPandas(), titles=inv.area_titles(),
                                           areas=list(inv.area_titles()), start=start, end=end).show()
else:
    display(HTML("<p>The interactive timeline is at the top of this notebook: it was drawn first, "
                 "area by area as each area's findings arrived.</p>"))

# %% [markdown]
# ## Findings by area
#
# How many findings each area made, by kind and severity; each area's section below tells them
# one by one.

# %%
display(HTML(table_html(inv.findings_by_area().toPandas(), limit=None, empty="No finding.")))

# %% [markdown] tags=["appendix"]
# ## Appendix: what the bundle holds
#
# Files by node and kind, which areas had data, and everything that could not be read in any
# file of the bundle the workbench reads (nothing readable is dropped because of a bad byte).

# %% tags=["appendix"]
display(HTML(table_html(inv.inventory_summary().toPandas(), limit=None,
                        empty="The bundle holds no file the workbench recognises.")))
display(HTML(table_html(inv.area_inputs().toPandas(), limit=None)))

# %% tags=["appendix"]
problems = inv.tables.problems
display(HTML(table_html(problems.groupBy("kind").count().orderBy("kind").toPandas(),
                        empty="No problems: every file read was read to the end.")))
display(HTML(table_html(problems.orderBy("path", "position").limit(50).toPandas(), empty="")))

# %% [markdown] tags=["appendix"]
# ## Appendix: parameters and versions

# %% tags=["appendix"]
display(HTML(table_html(inv.parameters_table(), limit=None)))
if summary_path:
    inv.write_summary(summary_path)
