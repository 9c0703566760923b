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
# # Kafka incident report
#
# What happened to partition ISR health (KIP-164), computed offline from the KRaft metadata
# log replicas in a bundle. Run it interactively in JupyterLab (`report = False` shows the
# widgets), or as an HTML report: `workbench report --bundle PATH --out report.html`.

# %% tags=["parameters"]
bundle: str = ""  # bundle directory or archive (required)
start: str = ""  # window start, UTC, e.g. 2026-11-21T03:00:00 (empty: first record)
end: str = ""  # window end, UTC (empty: end of the metadata log)
topics: str = ""  # comma-separated topics for the timeline (empty: all)
report: bool = True  # True: static figures for an HTML report; False: interactive widgets
show_payloads: bool = False  # show record payloads (the ISR sections use none)
summary_path: str = ""  # also write findings as JSON to this file (empty: no file)

# %%
import html

import plotly.io as pio
from IPython.display import HTML, display

import workbench
from widgets import isr as isr_view
from widgets.tables import table_html
from workbench.analysis import isr as isr_analysis
from workbench.errors import ConfigError
from workbench.report import write_summary

pio.renderers.default = "plotly_mimetype+notebook"
if not bundle:
    raise ConfigError("set the 'bundle' parameter to a bundle directory or archive")

spark = workbench.session()
opened = workbench.open_bundle(bundle)
tables = workbench.load(opened, spark)
display(HTML(f"<p>Bundle <code>{html.escape(str(bundle))}</code></p>"))

# %% [markdown]
# ## Bundle inventory and problems
#
# What the bundle holds, and everything that could not be read (nothing readable is dropped
# because of a bad byte).

# %%
inventory = tables.inventory.groupBy("kind").agg({"path": "count", "bytes": "sum"}).orderBy("kind").toPandas()
inventory = inventory.rename(columns={"count(path)": "files", "sum(bytes)": "bytes"})
display(HTML(table_html(inventory, empty="The bundle holds no file the workbench recognises.")))

# %%
problem_counts = tables.problems.groupBy("kind").count().orderBy("kind").toPandas()
first_problems = tables.problems.orderBy("path", "position").limit(20).toPandas()
display(HTML(table_html(problem_counts, empty="No problems: every file was read to the end.")))
if not first_problems.empty:
    display(HTML(table_html(first_problems)))

# %% [markdown]
# ## ISR timeline
#
# One row per topic-partition; bars show when it was offline, under min ISR, at min ISR,
# under-replicated or healthy. Hover a bar for its leader, ISR, replicas and min ISR.

# %%
states = isr_analysis.partition_states(tables.metadata).cache()
states_pd = states.toPandas()
counts_pd = isr_analysis.under_min_isr_counts(states).toPandas()
reported_pd = isr_analysis.reported_under_min_isr(tables.metrics).toPandas()
if report:
    isr_view.figure_isr_timeline(states_pd, topics=topics, start=start, end=end).show()
else:
    display(isr_view.IsrTimeline(states_pd, counts_pd, topics=topics, start=start, end=end))

# %% [markdown]
# ## UnderMinIsrPartitionCount per broker
#
# The KIP-164 metric each leader broker would have reported, computed from the metadata log
# (lines). Where the bundle holds the brokers' own metric exports (JmxTool CSV), their samples
# are drawn as open circles in the same colour: the two should agree.

# %%
if report:
    isr_view.figure_under_min_isr(counts_pd, start=start, end=end, reported=reported_pd).show()

# %% [markdown]
# ## Partitions that were not healthy
#
# Over the whole metadata log (not only the window above), worst first.

# %%
summary_pd = isr_analysis.partition_summary(states).toPandas()
display(HTML(table_html(isr_view.summary_table(summary_pd, limit=None), empty="Every partition stayed healthy.")))

# %% [markdown]
# ## Findings

# %%
findings = isr_view.isr_findings(summary_pd)
display(HTML(isr_view.findings_html(findings)))
if summary_path:
    write_summary(
        summary_path,
        bundle=bundle,
        findings=findings,
        partitions=isr_view.summary_table(summary_pd, limit=None),
        parameters={"start": start, "end": end, "topics": topics},
    )
