# ---
# jupyter:
#   jupytext:
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
quorum_stall_multiple: float = 4.0  # a gap between the leader's appends longer than this many idle intervals is a stall
quorum_idle_ms: int = 0  # metadata.max.idle.interval.ms (0: the controllers' properties, else Kafka's 500 ms)
min_insync_replicas: int = 0  # static min.insync.replicas (0: the brokers' server.properties, else 1)
topics: str = ""  # comma-separated topics for the ISR timeline (empty: all)
lag_warn_seconds: float = 60.0  # a group whose time lag reaches this is a warning
lag_instant: str = ""  # UTC instant at which to show every group's lag, as --describe would have (empty: none)
lag_groups: str = ""  # comma-separated groups for the lag figures (empty: all)
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

# %% [markdown]
# ## KRaft quorum health (KIP-835)
#
# Did the quorum stop committing, when and for how long; who led each epoch; which controller or
# broker fell behind the metadata log, by how many offsets and milliseconds, and for how long.
# Answered from the metadata log replicas, snapshots, `quorum-state`, `kafka-metadata-quorum`
# captures and whatever KIP-835 and raft gauges were exported.

# %%
from widgets import quorum as quorum_view
from widgets.findings import findings_html
from widgets.tables import text_html
from workbench.analysis import quorum as quorum_analysis
from workbench.analysis.findings import ordered_findings

quorum_data = inv.has_data("quorum") and not inv.section_failed("quorum")
if not inv.has_data("quorum"):
    display(HTML("<p>No KRaft metadata in this bundle: quorum health cannot be judged.</p>"))

# %% [markdown]
# ### Quorum findings
#
# Commit stalls, new leaders and nodes left behind, most severe first; and what the bundle lacks.

# %%
if quorum_data:
    quorum_result = quorum_analysis.analyse(inv.tables, inv.params)
    display(HTML(f"<p>{text_html(quorum_result.writing.reason())}.</p>"))
    display(HTML(findings_html(ordered_findings(quorum_analysis.findings_for(inv.tables, inv.params)).toPandas(),
                               empty="The quorum never stalled and no node fell behind.")))

# %% [markdown]
# ### Quorum offset divergence
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
    if inv.report:
        quorum_view.figure_quorum_divergence(offsets_pd, stalls_pd, timeline_pd, fences_pd, start=start,
                                             end=end).show()
    else:
        display(quorum_view.QuorumDivergence(offsets_pd, stalls_pd, timeline_pd, fences_pd, window=inv.window))

# %% [markdown]
# ### Leaders and epochs
#
# One row per leader epoch: who led, from when, elected by which voters, and which sources say so.

# %%
if quorum_data:
    display(HTML(table_html(timeline_pd, limit=200, empty="No leader epoch in the metadata log.")))

# %% [markdown]
# ### Append cadence per epoch and nodes behind
#
# The intervals between the leader's appends (a healthy leader appends a NoOpRecord every idle
# interval), and every episode during which a node lacked records the leader had appended.

# %%
if quorum_data:
    display(HTML(table_html(quorum_result.cadence.toPandas(), limit=200, empty="No append in the metadata log.")))
    display(HTML(table_html(quorum_result.episodes.toPandas(), limit=200, empty="No node fell behind.")))

# %% [markdown]
# ## ISR health (KIP-164)
#
# Which partitions were under-replicated, under or at `min.insync.replicas`, or offline, when,
# for how long, and which replica flapped: replayed offline from the KRaft metadata log replicas
# in the bundle, with the brokers' own `UnderMinIsrPartitionCount` beside the computed one.

# %%
from widgets import isr as isr_view
from widgets.findings import findings_html
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
# ### ISR findings
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
# ### ISR timeline
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
    if inv.report:
        isr_view.figure_isr_timeline(shown["states"], topics=topics, start=start, end=end,
                                     partitions_total=total).show()
    else:
        display(isr_view.IsrTimeline(shown["states"], counts_pd, topics=topics, start=start, end=end,
                                     window=inv.window, partitions_total=total))

# %% [markdown]
# ### UnderMinIsrPartitionCount per broker
#
# The KIP-164 metric each leader broker would have reported, computed from the metadata log
# (lines). Where the bundle holds the brokers' own metric exports, their samples are drawn as open
# circles in the same colour: the two should agree.

# %%
if isr_data and inv.report:
    isr_view.figure_under_min_isr(counts_pd, start=start, end=end, reported=reported_pd).show()

# %% [markdown]
# ### Partitions that were not healthy
#
# Over the whole metadata log (not only the window above), worst first.

# %%
if isr_data:
    notable_pd = isr_analysis.notable_partitions(isr_analysis.partition_summary(states)).toPandas()
    display(HTML(table_html(notable_pd, limit=200, empty="Every partition stayed healthy.")))

# %% [markdown]
# ## Consumer lag in records, bytes and time
#
# How far behind the log end every consumer group was at every commit it made, in records (what
# `kafka-consumer-groups --describe` shows), in bytes (the broker metric `ConsumerFetchLagBytes` the
# seed asked for, never shipped) and in time (`ConsumerFetchLagTimeInMs`): computed from the commits in
# `__consumer_offsets` and the segments' batch positions and timestamps. Then how much page cache
# would have served the reads, which groups lost records to retention, whose offsets expired, and
# Burrow's verdicts over time.

# %%
from widgets import consumer_lag as lag_view
from widgets.findings import findings_html
from workbench.analysis import consumer_lag as lag_analysis
from workbench.analysis.findings import areas, ordered_findings

lag_data = inv.has_data("consumer_lag") and not inv.section_failed("consumer_lag")
if not inv.has_data("consumer_lag"):
    display(HTML("<p>No <code>__consumer_offsets</code> commits or no data segments in this bundle: "
                 "consumer lag cannot be computed.</p>"))

# %% [markdown]
# ### Consumer-lag findings
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
    lag_frames = {k: v.toPandas() for k, v in lag_area.frames(inv.tables, inv.params).items()}

# %% [markdown]
# ### Lag histograms, page cache and lag over time
#
# Commits per power-of-two bucket of byte or time lag (log scale; per leader broker), the share of
# consumer positions within N bytes of the tail with p50, p90, p99 and p99.9 marked, and the lag at
# each commit of the worst group-partitions.

# %%
if lag_data:
    if inv.report:
        lag_view.figure_lag_histogram(lag_frames["histogram_bytes"], metric="bytes", groups=lag_groups or None).show()
        lag_view.figure_lag_histogram(lag_frames["histogram_time"], metric="time", groups=lag_groups or None).show()
        lag_view.figure_page_cache(lag_frames["cdf"], lag_frames["page_cache"]).show()
        lag_view.figure_lag_over_time(lag_frames["series"], metric="bytes", groups=lag_groups or None,
                                      start=start or None, end=end or None).show()
    else:
        display(lag_view.ConsumerLagView(lag_frames, window=inv.window))
elif not inv.report:
    display(lag_view.ConsumerLagView(lag_view.empty_frames(), window=inv.window))

# %% [markdown]
# ### Page cache per broker
#
# `tail_bytes`: the partition tail within which that share of reads fell; `cache_bytes`: the bytes the
# broker wrote (all its partitions) between the read data and the read, the page cache that would
# have held it.

# %%
if lag_data:
    display(HTML(table_html(lag_frames["page_cache"], limit=50, empty="No commit with a known byte lag.")))
    display(HTML(table_html(lag_frames["groups"], limit=200, empty="No commits.")))

# %% [markdown]
# ### Lag at a chosen instant
#
# Every group and partition as `kafka-consumer-groups --describe` would have shown it at `lag_instant`.

# %%
if lag_data and lag_instant:
    at_instant = lag_analysis.lag_at(
        lag_analysis.commits_for(inv.tables), lag_analysis.growth_for(inv.tables), [lag_instant],
        removed=lag_analysis.removed_offsets(inv.tables.offsets))
    display(HTML(table_html(at_instant.toPandas(), limit=500, empty="No group had committed by then.")))

# %% [markdown]
# ## MirrorMaker 2 and tiered storage
#
# ### MirrorMaker 2 backlog (KIP-971)
#
# How far MirrorMaker 2 was behind each source partition over time — KIP-971's
# `replication-record-lag` (the source log end minus the last offset MirrorMaker 2 replicated, as
# value, min, max and avg per window), in bytes and in age too — when it stopped replicating, for
# which partitions, and what a consumer group failing over to the target would have re-read or
# skipped. Computed offline from the source cluster's segments and MirrorMaker 2's own topics
# (Connect source offsets, offset syncs, checkpoints), with its exported metrics beside them.

# %%
from widgets import mirror as mirror_view
from widgets.findings import findings_html
from workbench.analysis import mirror as mirror_analysis
from workbench.analysis.findings import ordered_findings

mirror_data = inv.has_data("mirror") and not inv.section_failed("mirror")
if not inv.has_data("mirror"):
    display(HTML("<p>No MirrorMaker 2 topic in this bundle: replication cannot be followed.</p>"))

# %% [markdown]
# #### MirrorMaker 2 findings
#
# Outages (MirrorMaker 2 replicated nothing for a flow), partial outages (one partition stalled while
# others moved), failover re-reads and skips, stale translation, and what the bundle lacks.

# %%
if mirror_data:
    mirror_result = mirror_analysis.analysed(inv.tables, inv.params)
    display(HTML(findings_html(ordered_findings(mirror_analysis.findings(mirror_result)).toPandas(),
                               empty="MirrorMaker 2 kept up: no outage, and translation was current.")))

# %% [markdown]
# #### Replication backlog per source partition
#
# KIP-971's replication-record-lag per window: the line is the value at the window's end, the band
# spans the window's min and max, the dashed line is its time-weighted average. Red bands: MirrorMaker 2
# replicated nothing for the flow; orange: this partition alone stalled.

# %%
if mirror_data:
    windows_pd = mirror_result.windows.toPandas()
    episodes_pd = mirror_result.episodes.toPandas()
    metrics_pd = mirror_result.metrics.toPandas()
    audit_pd = mirror_result.audit.where("boundary").toPandas()
    if inv.report:
        mirror_view.figure_backlog(windows_pd, episodes_pd, start=start, end=end).show()
        mirror_view.figure_backlog(windows_pd, episodes_pd, measure="age", start=start, end=end,
                                   metrics=metrics_pd).show()
    else:
        display(mirror_view.MirrorBacklog(windows_pd, episodes_pd, audit_pd, metrics=metrics_pd,
                                          window=inv.window))

# %% [markdown]
# #### Outage episodes
#
# One row per partition and stall: when MirrorMaker 2's position stopped advancing while records
# waited, the peak backlog, and how long it took to catch up once it resumed.

# %%
if mirror_data:
    display(HTML(table_html(episodes_pd.drop(columns=["evidence"]), empty="No outage episode.")))

# %% [markdown]
# #### Offset translation audit
#
# Per consumer group MirrorMaker 2 synced and partition: its last committed offset on the source,
# the checkpoint MirrorMaker 2 published, the group's offset on the target, and how many records a
# consumer failing over then would have re-read or skipped (worst moment of each).

# %%
if mirror_data:
    display(HTML(table_html(mirror_analysis.audit_summary(mirror_result.audit).toPandas(),
                            empty="No consumer group synced by MirrorMaker 2.")))

# %% [markdown]
# ### Tiered storage backlog (KIP-405, KIP-963)
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
from workbench.analysis import tier as tier_analysis
from workbench.analysis.findings import ordered_findings

tier_data = inv.has_data("tier") and not inv.section_failed("tier")
if not inv.has_data("tier"):
    display(HTML("<p>No <code>__remote_log_metadata</code> event in this bundle: tiered-storage uploads "
                 "and deletions cannot be judged.</p>"))

# %% [markdown]
# #### Tiered-storage findings
#
# Upload and delete backlogs that outlasted the threshold, failed or unfinished copies, offset
# ranges that existed nowhere, and samples of Kafka's gauges the segments and events do not explain.

# %%
if tier_data:
    display(HTML(f"<p>{tier_analysis.summary_sentence(inv.tables, inv.params)}</p>"))
    display(HTML(findings_html(ordered_findings(tier_analysis.findings(inv.tables, inv.params)).toPandas(),
                               empty="Uploads and deletions kept pace; no offset range is missing.")))

# %% [markdown]
# #### Upload and delete backlog
#
# One step line per partition (solid: upload, dotted: delete); Kafka's own gauge samples as open
# markers. Kafka refreshes its gauges from its tasks, so they trail the computed lines by up to one
# `remote.log.manager.task.interval.ms`.

# %%
# (without tiered data the series is empty and the view says so)
series_pd = tier_analysis.backlog_series(inv.tables, inv.params).toPandas()
reported_pd = tier_analysis.reported(inv.tables.metrics).toPandas()
if tier_data and inv.report:
    for measure in ("segments", "bytes"):
        tier_view.figure_tier_backlog(series_pd, measure=measure, start=start, end=end,
                                      reported=reported_pd).show()
    tier_view.figure_tier_ranges(series_pd, start=start, end=end).show()
elif not inv.report:
    display(tier_view.TierBacklog(series_pd, reported_pd, start=start, end=end, window=inv.window))

# %% [markdown]
# #### Kafka's gauges beside the computed values
#
# Samples where Kafka's value differs from the computed one, with the reason (`settling`: within one
# task interval of a change; `gauge_stale`: Kafka's value is the lag at its last update;
# `kafka_definition`: Kafka counts differently; `unexplained`).

# %%
if tier_data and len(reported_pd):
    differ = tier_analysis.comparison(inv.tables, inv.params).where("reason != 'agree'").toPandas()
    display(HTML(table_html(differ, limit=200, empty="Every sample of Kafka's gauges agrees with the computed value.")))

# %% [markdown]
# #### Segments
#
# Every segment of each tiered partition's log: when it rolled, was uploaded (after how many
# attempts), deleted locally and remotely, and whether its offsets ever existed nowhere.

# %%
if tier_data:
    history_pd = tier_analysis.segment_history(inv.tables, inv.params).toPandas()
    display(HTML(table_html(history_pd, limit=200, empty="No segment of a tiered partition in this bundle.")))

# %% [markdown]
# ## Appendix: what the bundle holds
#
# Files by node and kind, which areas had data, and everything that could not be read in any
# file of the bundle the workbench reads (nothing readable is dropped because of a bad byte).

# %%
display(HTML(table_html(inv.inventory_summary().toPandas(), limit=None,
                        empty="The bundle holds no file the workbench recognises.")))
display(HTML(table_html(inv.area_inputs().toPandas(), limit=None)))

# %%
problems = inv.tables.problems
display(HTML(table_html(problems.groupBy("kind").count().orderBy("kind").toPandas(),
                        empty="No problems: every file read was read to the end.")))
display(HTML(table_html(problems.orderBy("path", "position").limit(50).toPandas(), empty="")))

# %% [markdown]
# ## Appendix: parameters and versions

# %%
display(HTML(table_html(inv.parameters_table(), limit=None)))
if summary_path:
    inv.write_summary(summary_path)
