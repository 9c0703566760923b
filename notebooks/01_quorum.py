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
# # KRaft quorum health (KIP-835)
#
# Did the quorum stop committing, when and for how long; who led each epoch; which controller or
# broker fell behind the metadata log, by how many offsets and milliseconds, and for how long.
# Answered from the metadata log replicas, snapshots, `quorum-state`, `kafka-metadata-quorum`
# captures and whatever KIP-835 and raft gauges were exported.

# %% tags=["parameters"]
bundle: str = ""  # bundle directory or archive (empty: the demo bundle, a real incident captured from Kafka)
start: str = ""  # window start, UTC, e.g. 2026-11-21T03:00:00 (empty: the bundle's first record)
end: str = ""  # window end, UTC (empty: the bundle's last record)
report: bool = False  # True: static figures for an HTML report; False: interactive widgets
quorum_stall_multiple: float = 4.0  # a gap between the leader's appends longer than this many idle intervals is a stall
quorum_idle_ms: int = 0  # metadata.max.idle.interval.ms (0: the controllers' properties, else Kafka's 500 ms)

# %% tags=["setup"]
import plotly.io as pio
from IPython.display import HTML, display

from widgets.tables import table_html
from workbench.investigation import open_investigation

pio.renderers.default = "plotly_mimetype+notebook"
inv = open_investigation(bundle, params=globals())

# %%
from widgets import quorum as quorum_view
from widgets.findings import findings_html
from widgets.linking import show
from widgets.tables import text_html
from workbench.analysis import quorum as quorum_analysis
from workbench.analysis.findings import ordered_findings

quorum_data = inv.has_data("quorum") and not inv.section_failed("quorum")
if not inv.has_data("quorum"):
    display(HTML("<p>No KRaft metadata in this bundle: quorum health cannot be judged.</p>"))

# %% [markdown]
# ## Quorum findings
#
# Commit stalls, new leaders and nodes left behind, most severe first; and what the bundle lacks.

# %%
if quorum_data:
    quorum_result = quorum_analysis.analyse(inv.tables, inv.params)
    display(HTML(f"<p>{text_html(quorum_result.writing.reason())}.</p>"))
    display(HTML(findings_html(ordered_findings(quorum_analysis.findings_for(inv.tables, inv.params)).toPandas(),
                               empty="The quorum never stalled and no node fell behind.")))

# %% [markdown]
# ## Quorum offset divergence
#
# Each node's lag behind the leader's log, in offsets (top) and milliseconds (bottom), from every
# source the bundle has (line style: source). Red bands are commit stalls, shading the leader
# epochs; crosses and circles mark a broker fenced and unfenced. Hover for the exact figures.

# %%
if quorum_data:
    offsets_pd = quorum_result.offsets.toPandas()
    stalls_pd = quorum_result.stalls.toPandas()
    timeline_pd = quorum_result.timeline.toPandas()
    fences_pd = quorum_result.fences.toPandas()
    show(quorum_view.QuorumDivergence(offsets_pd, stalls_pd, timeline_pd, fences_pd, window=inv.window),
         report=inv.report)

# %% [markdown]
# ## Metadata apply lag (KIP-835)
#
# How long ago each node applied its last metadata record, computed from the log (the append time of
# the record at the node's applied offset; line) beside Kafka's own `LastAppliedRecordLagMs` /
# `last-applied-record-lag-ms` at the same samples (open markers). The table lists the samples where
# they differ, with how long before and after each sample the leader appended a record: a gauge read
# while a record is applied moves by up to one idle interval.

# %%
if quorum_data:
    apply_lag_pd = quorum_result.apply_lag.toPandas()
    if apply_lag_pd.empty:
        display(HTML("<p>The bundle exported no LastAppliedRecordLagMs gauge: the apply lag is not compared.</p>"))
    else:
        quorum_view.figure_apply_lag(apply_lag_pd, start=start, end=end).show()
        display(HTML(table_html(apply_lag_pd[~apply_lag_pd["agrees"]], limit=50,
                                empty="Computed and reported apply lag agree at every sample.")))

# %% [markdown]
# ## Leaders and epochs
#
# One row per leader epoch: who led, from when, elected by which voters, and which sources say so.

# %%
if quorum_data:
    display(HTML(table_html(timeline_pd, limit=200, empty="No leader epoch in the metadata log.")))

# %% [markdown]
# ## Append cadence per epoch and nodes behind
#
# The intervals between the leader's appends (a healthy leader appends a NoOpRecord every idle
# interval), and every episode during which a node lacked records the leader had appended.

# %%
if quorum_data:
    display(HTML(table_html(quorum_result.cadence.toPandas(), limit=200, empty="No append in the metadata log.")))
    display(HTML(table_html(quorum_result.episodes.toPandas(), limit=200, empty="No node fell behind.")))

# %% [markdown]
# ## Voter set changes
#
# Each KRaft voters control record (Kafka 3.9+, KIP-853) in the log, its snapshots or the bootstrap
# checkpoint: from when, at which offset and epoch, which node ids voted. Then each
# `kafka-metadata-quorum describe --status` capture's `CurrentVoters` beside the set in force then:
# the log's, or in a static quorum the `controller.quorum.voters` every node names.

# %%
if quorum_data:
    display(HTML(table_html(quorum_result.voters.toPandas(), limit=200,
                            empty="No voters record in the metadata log (Kafka writes one from 3.9, for a dynamic "
                                  "quorum): the voters are the static controller.quorum.voters.")))
    display(HTML(table_html(quorum_result.voter_captures.toPandas(), limit=200,
                            empty="No describe --status capture to hold the voters against.")))

# %% [markdown]
# ## Commit and election latency (Kafka's raft-metrics)
#
# Kafka's own `commit-latency-avg/max` (from the leader's append until the high watermark passes it;
# only a leader records it, so a node that has not led lately reports NaN, drawn as a gap) and
# `election-latency-avg/max` per node, as the bundle's JmxTool or Prometheus exports sampled them. The
# metadata log holds no latencies; beside the election latency, each new epoch's leaderless time from
# the log (from the old leader's last append to the new epoch's start: the time to notice the leader
# gone and to elect, so never less than Kafka's election latency) is marked ×. The commit latency has
# no counterpart in the log (it holds no high-watermark times).

# %%
if quorum_data:
    latencies_pd = quorum_result.latencies.toPandas()
    timeline_pd = quorum_result.timeline.toPandas()
    if latencies_pd.empty and timeline_pd["leaderless_ms"].isna().all():
        display(HTML("<p>The bundle exported no raft-metrics and its log shows no election: commit and election "
                     "latency are unknown.</p>"))
    else:
        if latencies_pd.empty:
            display(HTML("<p>The bundle exported no raft-metrics: only the log's leaderless times are drawn.</p>"))
        quorum_view.figure_raft_latencies(latencies_pd, timeline=timeline_pd, start=start, end=end).show()

# %% [markdown]
# ## Metadata batch sizes
#
# Records per metadata batch in 10-second windows: computed from the metadata log (`log`) beside each
# broker's `MetadataBatchSizes` histogram where it was scraped (a broker's maximum is since it started).

# %%
if quorum_data:
    quorum_view.figure_batch_sizes(quorum_result.batch_sizes.toPandas(), start=start, end=end).show()
