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
# # Replica consistency
#
# Do the copies of a partition on several brokers hold the same data? Over the offsets they share,
# the replicas of a partition should hold byte-identical batches: the same base and last offset,
# leader epoch and CRC. Kafka's `kafka-replica-verification.sh` checked this only on a live cluster,
# and it is gone in Kafka 4.0. Offsets below a replica's cleaned point are not compared: the log
# cleaner rewrites each replica on its own schedule, so their compacted batches differ without
# anything being wrong. Computed offline from the batch headers of each replica's segments alone:
# no record is decoded.

# %% tags=["parameters"]
bundle: str = ""  # bundle directory or archive (empty: the demo bundle, a real incident captured from Kafka)
start: str = ""  # window start, UTC, e.g. 2026-11-21T03:00:00 (empty: the bundle's first record)
end: str = ""  # window end, UTC (empty: the bundle's last record)
report: bool = False  # True: static figures for an HTML report; False: interactive widgets

# %% tags=["setup"]
import plotly.io as pio
from IPython.display import HTML, display

from widgets.tables import table_html
from workbench.investigation import open_investigation

pio.renderers.default = "plotly_mimetype+notebook"
inv = open_investigation(bundle, params=globals())

# %%
from widgets import replicas as replicas_view
from widgets.findings import findings_html
from widgets.linking import show
from workbench.analysis import replicas as replica_analysis
from workbench.analysis.findings import ordered_findings

replica_data = inv.has_data("replicas") and not inv.section_failed("replicas")
if not inv.has_data("replicas"):
    display(HTML("<p>No partition has copies on several nodes in this bundle: nothing to compare.</p>"))

# %% [markdown]
# ### Replica consistency findings
#
# Replicas holding different batches at the same offsets (divergent), and replicas lacking a batch
# the others hold inside their own range (missing).

# %%
if replica_data:
    replica_result = replica_analysis.analyse(inv.tables, inv.params)
    display(HTML(findings_html(ordered_findings(replica_analysis.area_findings(replica_result)).toPandas(),
                               empty="Every replica holds the same batches over the offsets it shares.")))

# %% [markdown]
# ### Replicas and their differences
#
# The batches compared on each partition, added up over its replicas (the same, divergent and
# missing ones); then the
# partition with most differences, each replica's log as a bar over its offsets, the range every
# replica holds shaded green, the offsets not compared (below the cleaned point) grey, and each
# differing batch drawn over its replica (red: divergent, orange: missing; dimmed when written
# outside the time window). A tick on each replica's bar marks where one of its leader epochs
# begins (`e7`: epoch 7), dark red where an unclean election began it.

# %%
if replica_data:
    replica_frames = {k: v.toPandas() for k, v in replica_analysis.view_frames(replica_result).items()}
    show(replicas_view.ReplicasView(replica_frames["ranges"], replica_frames["differences"], start=start, end=end,
                                    window=inv.window, epochs=replica_frames["epochs"]),
         report=inv.report)

# %% [markdown]
# ### Differing batches
#
# Each batch that differs: the replica (node) holding it, whether its contents diverge from the
# other replicas' or it is missing there, its offsets, records, leader epoch and time, and the
# nodes that hold the other version.

# %%
if replica_data:
    display(HTML(table_html(replica_frames["differences"], empty="No batch differs between replicas.")))

# %% [markdown]
# ### Leader elections from outside the ISR
#
# Every leader the metadata log shows elected from outside the ISR (and the eligible leader
# replicas): an unclean election, which Kafka also marks by setting the partition's leader recovery
# state to RECOVERING (1). Another broker than the last leader elected this way means whatever the
# last leader wrote past the new leader's log end was lost.

# %%
if replica_data:
    display(HTML(table_html(replica_frames["elections"].drop(columns=["unclean"]),
                            empty="No leader was elected from outside the ISR.")))

# %% [markdown]
# ### Each replica's leader epochs
#
# Each replica's `leader-epoch-checkpoint`: the first offset it holds from each leader epoch, where
# the epoch ends on that replica (the next epoch's start, else its log end) and which broker the
# metadata log says led the partition under that epoch. Kafka truncates a follower to where its
# leader's copy of the same epoch ends, so replicas that disagree here held different data.

# %%
if replica_data:
    display(HTML(table_html(replica_frames["epochs"], empty="No replica's leader-epoch checkpoint is in the bundle.")))

# %% [markdown]
# ### Truncations the brokers logged
#
# A replica that follows a new leader truncates its log to where the two agree; an old leader that
# returns after an unclean election drops everything it held past the new leader's start. Once
# truncated, those records are gone from its disk: its text log still says where the log ended when
# the broker started (`end_before`) and where it was cut (`truncated_to`). `dropped` is the
# difference, empty where the broker led or fetched in between and the log does not tell.

# %%
if replica_data:
    display(HTML(table_html(replica_frames["truncations"], empty="No broker log in the bundle records a truncation.")))

# %% [markdown]
# ### Consumer groups that had read what an election lost
#
# Groups whose last commit before an unclean election was past the new leader's log end: they had
# read records that are gone, and their next fetch past the log end makes the consumer reset
# (`auto.offset.reset`). `next_offset` is the group's first commit after the election (a reset shows
# as a commit back).

# %%
if replica_data:
    display(HTML(table_html(replica_frames["groups"], empty="No group had committed past a lost log end.")))
