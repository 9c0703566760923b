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
# # ISR health (KIP-164)
#
# Which partitions were under-replicated, under or at `min.insync.replicas`, or offline, when,
# for how long, and which replica flapped: replayed offline from the KRaft metadata log replicas
# in the bundle, with the brokers' own `UnderMinIsrPartitionCount` beside the computed one.

# %% tags=["parameters"]
bundle: str = ""  # bundle directory or archive (empty: the demo bundle, a real incident captured from Kafka)
start: str = ""  # window start, UTC, e.g. 2026-11-21T03:00:00 (empty: the bundle's first record)
end: str = ""  # window end, UTC (empty: the bundle's last record)
report: bool = False  # True: static figures for an HTML report; False: interactive widgets
min_insync_replicas: int = 0  # static min.insync.replicas (0: the brokers' server.properties, else 1)
topics: str = ""  # comma-separated topics for the ISR timeline (empty: all)

# %% tags=["setup"]
import plotly.io as pio
from IPython.display import HTML, display

from widgets.tables import table_html
from workbench.investigation import open_investigation

pio.renderers.default = "plotly_mimetype+notebook"
inv = open_investigation(bundle, params=globals())

# %%
from widgets import isr as isr_view
from widgets.findings import findings_html
from widgets.linking import show
from workbench.analysis import isr as isr_analysis
from workbench.analysis.findings import ordered_findings

isr_data = inv.has_data("isr") and not inv.section_failed("isr")
if not inv.has_data("isr") and inv.bundle.metadata_files:
    n_meta = len(inv.bundle.metadata_files)
    display(HTML(f"<p>None of the bundle's {n_meta} KRaft metadata log file{'s' if n_meta != 1 else ''} yielded "
                 "a record (see the problems appendix): partition ISR health cannot be replayed.</p>"))
elif not inv.has_data("isr"):
    display(HTML("<p>No KRaft metadata log in this bundle: partition ISR health cannot be replayed.</p>"))

# %% [markdown]
# ## ISR findings
#
# Offline and under-min-ISR episodes and flapping ISRs, partition by partition, most severe first (the
# overview tells many partitions in trouble at once as one finding).

# %%
if isr_data:
    states = isr_analysis.states_for(inv.tables, inv.params)
    # every partition's findings (the overview groups many partitions at once into one), the first
    # 50 collected: a cluster of 10,000 partitions can have hundreds of thousands
    per_partition = ordered_findings(isr_analysis.findings_for(inv.tables, inv.params))
    display(HTML(findings_html(per_partition.limit(50).toPandas(), total=per_partition.count(),
                               empty="No partition was offline or under min ISR, and no ISR flapped.")))

# %% [markdown]
# ## ISR timeline
#
# One row per topic-partition; bars show when it was offline, under min ISR, at min ISR,
# under-replicated or healthy. Hover a bar for its leader, ISR, replicas and min ISR.

# %%
if isr_data:
    # bounded whatever the cluster's size: the least healthy partitions, the counts thinned in Spark
    shown = isr_analysis.view_frames(states, **(dict(topics=topics, start=start, end=end) if inv.report else {}))
    shown = {name: frame.toPandas() for name, frame in shown.items()}
    total = int(shown["partitions"]["partitions"].iloc[0])
    counts_pd = shown["counts"]
    reported_pd = isr_analysis.reported_under_min_isr(inv.tables.metrics).toPandas()
    show(isr_view.IsrTimeline(shown["states"], counts_pd, topics=topics, start=start, end=end, window=inv.window,
                              partitions_total=total, reported=reported_pd), report=inv.report)

# %% [markdown]
# ## UnderMinIsrPartitionCount per broker
#
# The KIP-164 metric each leader broker would have reported, computed from the metadata log
# (lines). Where the bundle holds the brokers' own metric exports, their samples are drawn as open
# circles in the same colour: the two should agree.

# %%
if isr_data and inv.report:
    isr_view.figure_under_min_isr(counts_pd, start=start, end=end, reported=reported_pd).show()

# %% [markdown]
# ## Kafka's own gauges beside the computed ones
#
# Where the bundle holds metric exports (JmxTool or Prometheus), every sample of Kafka's own ISR
# gauges is held against the value the partition states give at its time, over the whole bundle:
# each broker's `ReplicaManager` gauges (`LeaderCount`, `UnderReplicatedPartitions`,
# `AtMinIsrPartitionCount`, `UnderMinIsrPartitionCount`), each replica's per-partition gauges
# (`UnderMinIsr`, `AtMinIsr`, `UnderReplicated`, `InSyncReplicasCount`, `ReplicasCount`: the
# leader's figure, 0 on a follower) and the controllers' `OfflinePartitionsCount` and
# `GlobalPartitionCount` (every KRaft controller's; in a ZooKeeper-era cluster only the active
# controller's, the other brokers reporting 0 whatever the cluster's state). A sample within 1.5 s of a computed change is not judged (brokers apply a
# change a little after the controller wrote it); a broker that leads nothing counts 0. Then the
# samples that differ, if any.

# %%
if isr_data:
    beside = isr_analysis.kafka_gauges_for(inv.tables, inv.params)
    agreement = isr_analysis.gauge_agreement(beside).toPandas()
    display(HTML(table_html(agreement, empty="The bundle holds no sample of these gauges.")))
    if not agreement.empty:
        display(HTML(table_html(beside.where("agrees = false").limit(200).toPandas(), limit=200,
                                empty="Every sample judged equals the computed gauge.")))

# %% [markdown]
# ## Who left the ISR, and why
#
# Each replica that left a partition's ISR over the whole metadata log, how often and why: its broker
# fenced by the controller (its session expired; the fence and the ISR change are written together),
# in a controlled shutdown, or behind its leader for longer than `replica.lag.time.max.ms` (no broker
# event: the leader shrank the ISR); and how often it joined again. A same-size swap counts as a leave
# and a join. Most leaves first.

# %%
if isr_data:
    moves_pd = isr_analysis.move_summary(isr_analysis.moves_for(inv.tables, inv.params)).limit(200).toPandas()
    display(HTML(table_html(moves_pd, limit=200, empty="No replica left or joined an ISR.")))

# %% [markdown]
# ## Partitions that were not healthy
#
# Over the whole metadata log (not only the window above), worst first.

# %%
if isr_data:
    notable_pd = isr_analysis.notable_partitions(isr_analysis.partition_summary(states)).toPandas()
    display(HTML(table_html(notable_pd, limit=200, empty="Every partition stayed healthy.")))

# %% [markdown]
# ## State at the end of the log
#
# Each partition's last state, as Kafka's metadata image holds it when the log ends (a state that
# began at the log's last record is listed here although it has no length on the timeline): how many
# partitions ended in each state, then those that ended offline, under or at min ISR, or
# under-replicated, worst first.

# %%
if isr_data:
    final = isr_analysis.final_states(states)
    counts_at_end = isr_analysis.final_state_counts(final).toPandas()
    display(HTML(table_html(counts_at_end, empty="No partition in the metadata log.")))
    display(HTML(table_html(final.where("state != 'healthy'").limit(200).toPandas(), limit=200,
                            empty="Every partition was healthy at the end of the log.")))
