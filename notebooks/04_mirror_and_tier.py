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
# # MirrorMaker 2 and tiered storage
#
# ## MirrorMaker 2 backlog (KIP-971)
#
# How far MirrorMaker 2 was behind each source partition over time — KIP-971's
# `replication-record-lag` (the source log end minus the last offset MirrorMaker 2 replicated, as
# value, min, max and avg per window), in bytes and in age too — when it stopped replicating, for
# which partitions, and what a consumer group failing over to the target would have re-read or
# skipped. Computed offline from the source cluster's segments and MirrorMaker 2's own topics
# (Connect source offsets, offset syncs, checkpoints), with its exported metrics beside them.

# %% tags=["parameters"]
bundle: str = ""  # bundle directory or archive (empty: the demo bundle, a real incident captured from Kafka)
start: str = ""  # window start, UTC, e.g. 2026-11-21T03:00:00 (empty: the bundle's first record)
end: str = ""  # window end, UTC (empty: the bundle's last record)
report: bool = False  # True: static figures for an HTML report; False: interactive widgets
mirror_window_s: float = 15.0  # KIP-971 window for value/min/max/avg of the lag, seconds
mirror_outage_min_s: float = 0.0  # shortest stall reported as an outage, seconds (0: from each partition's cadence)
mirror_stale_s: float = 0.0  # checkpoint age beyond which translation is stale, seconds (0: three checkpoint intervals)
tier_backlog_s: float = 0.0  # a backlog is reported when it lasts this long (0: two RLM task intervals)

# %% tags=["setup"]
import plotly.io as pio
from IPython.display import HTML, display

from widgets.tables import table_html
from workbench.investigation import open_investigation

pio.renderers.default = "plotly_mimetype+notebook"
inv = open_investigation(bundle, params=globals())

# %%
from widgets import mirror as mirror_view
from widgets.findings import findings_html
from widgets.linking import show
from workbench.analysis import mirror as mirror_analysis
from workbench.analysis.findings import ordered_findings

mirror_data = inv.has_data("mirror") and not inv.section_failed("mirror")
if not inv.has_data("mirror"):
    display(HTML("<p>No MirrorMaker 2 topic in this bundle: replication cannot be followed.</p>"))

# %% [markdown]
# ### MirrorMaker 2 findings
#
# Outages (MirrorMaker 2 replicated nothing for a flow), partial outages (one partition stalled while
# others moved), failover re-reads and skips, stale translation, and what the bundle lacks.

# %%
if mirror_data:
    mirror_result = mirror_analysis.analyse(inv.tables, inv.params)
    display(HTML(findings_html(ordered_findings(mirror_analysis.findings(mirror_result)).toPandas(),
                               empty="MirrorMaker 2 kept up: no outage, and translation was current.")))

# %% [markdown]
# ### Replication backlog per source partition
#
# KIP-971's replication-record-lag per window: the line is the value at the window's end, the band
# spans the window's min and max, the dashed line is its time-weighted average. Red bands: MirrorMaker 2
# replicated nothing for the flow; orange: this partition alone stalled. KIP-971 reads the task's
# in-memory last replicated offset; the bundle holds the one Connect committed, every
# `offset.flush.interval.ms` of the target's worker settings in `mm2.properties` (60 s by default)
# while records move. So this backlog may exceed KIP-971's figure by what MirrorMaker 2 replicated
# since its last commit (how long before each point of the timeline that was: the `connect_age_s`
# column of the `mirror.lag_timeline` table; `progress_end`, the larger of the committed and the
# offset-synced positions, is the tighter bound). Triangles: the least KIP-971's figure can have been,
# from MirrorMaker 2's next commit (every record acknowledged before it), so the task's in-memory lag
# lay between the triangle and the line. KIP-971's cache drops a partition 20 s after its last
# replicated record: the proposed metric goes silent for an idle partition, and for one whose task
# stalled, just when its backlog grows (`kip971_reported` in the same table).

# %%
if mirror_data:
    windows_pd = mirror_result.windows.toPandas()
    episodes_pd = mirror_result.episodes.toPandas()
    metrics_pd = mirror_result.metrics.toPandas()
    audit_pd = mirror_result.audit.where("boundary").toPandas()
    show(mirror_view.MirrorBacklog(windows_pd, episodes_pd, audit_pd, metrics=metrics_pd, window=inv.window),
         report=inv.report)

# %% [markdown]
# ### Outage episodes
#
# One row per partition and stall: when MirrorMaker 2's position stopped advancing while records
# waited, the peak backlog, and how long it took to catch up once it resumed.

# %%
if mirror_data:
    display(HTML(table_html(episodes_pd.drop(columns=["evidence"]), empty="No outage episode.")))

# %% [markdown]
# ### Offset translation audit
#
# Per consumer group MirrorMaker 2 synced and partition: its last committed offset on the source,
# the checkpoint MirrorMaker 2 published, the group's offset on the target, and how many records a
# consumer failing over then would have re-read or skipped (worst moment of each).

# %%
if mirror_data:
    display(HTML(table_html(mirror_analysis.audit_summary(mirror_result.audit).toPandas(),
                            empty="No consumer group synced by MirrorMaker 2.")))

# %% [markdown]
# ## Tiered storage backlog (KIP-405, KIP-963)
#
# Whether uploads to remote storage and deletions from it kept pace, per partition and over
# time, in segments, records and bytes; where each partition's offsets lived (local log, remote
# storage, both, or nowhere); and the brokers' own `RemoteCopyLag*` / `RemoteDeleteLag*` /
# `RemoteLogSizeBytes` samples beside the computed series, each disagreement explained.
# Computed offline from `__remote_log_metadata`'s segment events, the local segments and the
# topic settings in the bundle.

# %%
from widgets import tier as tier_view
from widgets.findings import findings_html
from widgets.linking import show
from workbench.analysis import tier as tier_analysis
from workbench.analysis.findings import ordered_findings

tier_data = inv.has_data("tier") and not inv.section_failed("tier")
if not inv.has_data("tier"):
    display(HTML("<p>No <code>__remote_log_metadata</code> event in this bundle: tiered-storage uploads "
                 "and deletions cannot be judged.</p>"))

# %% [markdown]
# ### Tiered-storage findings
#
# Upload and delete backlogs that outlasted the threshold, failed or unfinished copies, offset
# ranges that existed nowhere, and samples of Kafka's gauges the segments and events do not explain.

# %%
if tier_data:
    display(HTML(f"<p>{tier_analysis.summary_sentence(inv.tables, inv.params)}</p>"))
    display(HTML(findings_html(ordered_findings(tier_analysis.findings(inv.tables, inv.params)).toPandas(),
                               empty="Uploads and deletions kept pace; no offset range is missing.")))

# %% [markdown]
# ### Upload and delete backlog
#
# One step line per partition (solid: upload, dotted: delete); Kafka's own gauge samples as open
# markers. Kafka refreshes its gauges from its tasks, so they trail the computed lines by up to one
# `remote.log.manager.task.interval.ms`. Then each broker's backlog, its partitions added up while it
# led them, beside the broker-wide gauges (the samples of the `BrokerTopicMetrics` without a topic).

# %%
# (without tiered data the series is empty and the view says so)
series = tier_analysis.backlog_series(inv.tables, inv.params)
series_pd = series.toPandas()
brokers_pd = tier_analysis.rollup(series, by=["broker"]).toPandas()
reported_pd = tier_analysis.reported(inv.tables.metrics).toPandas()
if tier_data or not inv.report:  # without tiered data a report draws no figure here
    show(tier_view.TierBacklog(series_pd, reported_pd, brokers=brokers_pd, start=start, end=end, window=inv.window),
         report=inv.report)

# %% [markdown]
# ### Kafka's gauges beside the computed values
#
# Samples where Kafka's value differs from the computed one, with the reason (`settling`: within one
# task interval of a change; `gauge_stale`: Kafka's value is the lag at its last update;
# `kafka_definition`: Kafka counts differently; `unexplained`).

# %%
if tier_data and len(reported_pd):
    differ = tier_analysis.comparison(inv.tables, inv.params).where("reason != 'agree'").toPandas()
    display(HTML(table_html(differ, limit=200, empty="Every sample of Kafka's gauges agrees with the computed value.")))

# %% [markdown]
# ### Segments
#
# Every segment of each tiered partition's log: when it rolled, was uploaded (after how many
# attempts), deleted locally and remotely, and whether its offsets ever existed nowhere.

# %%
if tier_data:
    history_pd = tier_analysis.segment_history(inv.tables, inv.params).toPandas()
    display(HTML(table_html(history_pd, limit=200, empty="No segment of a tiered partition in this bundle.")))
