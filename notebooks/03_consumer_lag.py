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
# # Consumer lag in records, bytes and time
#
# How far behind the log end every consumer group was at every commit it made, in records (what
# `kafka-consumer-groups --describe` shows), in bytes (the broker metric `ConsumerFetchLagBytes` the
# seed asked for, never shipped) and in time (`ConsumerFetchLagTimeInMs`): computed from the commits in
# `__consumer_offsets` and the segments' batch positions and timestamps. Then how much page cache
# would have served the reads, which groups lost records to retention, whose offsets expired, and
# Burrow's verdicts over time. The seed's metrics measure each fetch; a bundle keeps only the
# commits, so every figure here is sampled at a group's commits (a consumer fetches ahead of what it
# commits: the fetch offset the seed measures runs ahead of the committed one by the records fetched
# and not yet committed, so the lag here is the larger).

# %% tags=["parameters"]
bundle: str = ""  # bundle directory or archive (empty: the demo bundle, a real incident captured from Kafka)
start: str = ""  # window start, UTC, e.g. 2026-11-21T03:00:00 (empty: the bundle's first record)
end: str = ""  # window end, UTC (empty: the bundle's last record)
report: bool = False  # True: static figures for an HTML report; False: interactive widgets
lag_warn_seconds: float = 60.0  # a group whose time lag reaches this is a warning
lag_instant: str = ""  # UTC instant at which to show every group's lag, as --describe would have (empty: none)
lag_groups: str = ""  # comma-separated groups for the lag figures (empty: all)

# %% tags=["setup"]
import plotly.io as pio
from IPython.display import HTML, display

from widgets.tables import table_html
from workbench.investigation import open_investigation

pio.renderers.default = "plotly_mimetype+notebook"
inv = open_investigation(bundle, params=globals())

# %%
from widgets import consumer_lag as lag_view
from widgets.findings import findings_html
from widgets.linking import show
from workbench.analysis import consumer_lag as lag_analysis
from workbench.analysis.findings import areas, ordered_findings

lag_data = inv.has_data("consumer_lag") and not inv.section_failed("consumer_lag")
if not inv.has_data("consumer_lag"):
    display(HTML("<p>No <code>__consumer_offsets</code> commits or no data segments in this bundle: "
                 "consumer lag cannot be computed.</p>"))

# %% [markdown]
# ## Consumer-lag findings
#
# Groups behind the tail (with the page cache that would have served them), records lost to
# retention, removed (expired) offsets, Burrow's ERR and WARN periods, and what could not be computed,
# group by group (the overview tells many groups at once as one finding).

# %%
if lag_data:
    lag_area = areas()["consumer_lag"]
    per_group = ordered_findings(lag_analysis.findings_for(inv.tables, inv.params))  # not grouped, first 50
    display(HTML(findings_html(per_group.limit(50).toPandas(), total=per_group.count(),
                               empty="No group lagged, lost records or had its offsets removed.")))
    lag_frames = {k: v.toPandas() for k, v in lag_area.frames_for(inv.tables, inv.params).items()}

# %% [markdown]
# ## Lag histograms, page cache, lag and Burrow's status over time
#
# Commits per power-of-two bucket of byte or time lag (log scale; per leader broker), the share of
# consumer positions within N bytes of the tail with p50, p90, p99 and p99.9 marked, the lag at
# each commit of the worst group-partitions, Burrow's status of each group (OK, WARN, ERR) at
# its commits and between them (a group that stopped committing while its logs grew is STOP, so ERR),
# and each partition's own status (OK, WARN, STOP, STALL, REWIND) as runs, for the partitions longest
# out of OK.
# Every figure follows the shared time window: the histograms and the curve count the commits of the
# slices of the bundle's span (48 equal parts) that the window overlaps; the quantile marks are the
# whole bundle's, drawn while the window covers it.

# %%
if lag_data:
    show(lag_view.ConsumerLagView(lag_frames, window=inv.window, groups=lag_groups or None), report=inv.report)
elif not inv.report:
    display(lag_view.ConsumerLagView(lag_view.empty_frames(), window=inv.window))

# %% [markdown]
# ## Page cache per broker
#
# `tail_bytes`: the partition tail within which that share of reads fell; `cache_bytes`: the bytes the
# broker wrote (all its partitions) between the read data and the read, the page cache that would
# have held it.

# %%
if lag_data:
    display(HTML(table_html(lag_frames["page_cache"], limit=50, empty="No commit with a known byte lag.")))
    display(HTML(table_html(lag_frames["groups"], limit=200, empty="No commits.")))

# %% [markdown]
# ## Kafka's lag histograms per broker
#
# The attributes the seed's `ConsumerFetchLagBytes` and `ConsumerFetchLagTimeInMs` histogram MBeans
# would have shown per leader broker (Count, Min, Max, Mean, StdDev and Yammer's percentiles), over
# the notebook's window (`start`, `end`): computed over every commit in it, not a decaying sample;
# `unknown` counts the commits whose lag could not be computed.

# %%
if lag_data:
    for lag_metric in ("bytes", "time"):
        lag_attributes = lag_analysis.lag_summary(lag_analysis.lags_for(inv.tables), metric=lag_metric,
                                                  start=inv.start, end=inv.end)
        display(HTML(table_html(lag_attributes.orderBy("broker").toPandas(), limit=50,
                                empty="No commit in the window.")))

# %% [markdown]
# ## Lag at a chosen instant
#
# Every group and partition as `kafka-consumer-groups --describe` would have shown it at `lag_instant`.

# %%
if lag_data and lag_instant:
    at_instant = lag_analysis.lag_at(
        lag_analysis.commits_for(inv.tables), lag_analysis.growth_for(inv.tables), [lag_instant],
        removed=lag_analysis.removed_for(inv.tables))
    display(HTML(table_html(at_instant.toPandas(), limit=500, empty="No group had committed by then.")))
