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
# # Transactions and the last stable offset
#
# Which open transaction held a partition's last stable offset (LSO) back, for how long, and which
# read_committed consumers it stalled. Each transaction's span runs from its first record to the
# COMMIT or ABORT marker its coordinator wrote; a transaction with no marker pins the LSO, and a
# read_committed consumer cannot read past it while the log keeps growing. A transaction is
# **hanging** by the rule of `kafka-transactions.sh find-hanging`: open longer than the maximum
# transaction timeout, and no coordinator will ever write its marker (the coordinator's log holds
# no state for its producer id, or its transaction does not list the partition). Computed offline
# from the data partitions' batches and markers, `__transaction_state` and `__consumer_offsets`.

# %% tags=["parameters"]
bundle: str = ""  # bundle directory or archive (empty: the demo bundle, a real incident captured from Kafka)
start: str = ""  # window start, UTC, e.g. 2026-11-21T03:00:00 (empty: the bundle's first record)
end: str = ""  # window end, UTC (empty: the bundle's last record)
report: bool = False  # True: static figures for an HTML report; False: interactive widgets
txn_pinned_s: float = 60.0  # an LSO held back (or a group stalled) this long is reported, seconds
txn_max_timeout_ms: int = 900000  # find-hanging's --max-transaction-timeout, in ms (Kafka's default: 15 min)

# %% tags=["setup"]
import plotly.io as pio
from IPython.display import HTML, display

from widgets.tables import table_html
from workbench.investigation import open_investigation

pio.renderers.default = "plotly_mimetype+notebook"
inv = open_investigation(bundle, params=globals())

# %%
from widgets import transactions as txn_view
from widgets.findings import findings_html
from widgets.linking import show
from workbench.analysis import transactions as txn_analysis
from workbench.analysis.findings import ordered_findings

txn_data = inv.has_data("transactions") and not inv.section_failed("transactions")
if not inv.has_data("transactions"):
    display(HTML("<p>No transaction marker and no <code>__transaction_state</code> record in this bundle: "
                 "no transactional producer wrote to it.</p>"))

# %% [markdown]
# ### Transactions findings
#
# Hanging and orphaned transactions, transactions open past their timeout, LSOs held back longer
# than `txn_pinned_s`, and the consumer groups that sat at a held LSO meanwhile.

# %%
if txn_data:
    txn_result = txn_analysis.analyse(inv.tables, inv.params)
    display(HTML(findings_html(ordered_findings(txn_analysis.area_findings(txn_result)).toPandas(),
                               empty="Every transaction ended: no LSO was held back.")))

# %% [markdown]
# ### LSO lag and transactions
#
# Each partition's LSO lag (log end − LSO, in offsets: markers take one each) over time; then the
# partition that lagged most, its log end and LSO with every transaction as a bar at its first
# offset (green: committed, grey: aborted, red: open at the end of the bundle).

# %%
if txn_data:
    txn_frames = {k: v.toPandas() for k, v in txn_analysis.view_frames(txn_result).items()}
    show(txn_view.TransactionsView(txn_frames["lso"], txn_frames["spans"], start=start, end=end, window=inv.window),
         report=inv.report)

# %% [markdown]
# ### Transactions open at the end of the bundle
#
# What `kafka-transactions.sh find-hanging` reads, from the files: each open transaction's first
# offset (the LSO it holds), its last write, the coordinator's state of its producer, and why no
# marker will come.

# %%
if txn_data:
    display(HTML(table_html(txn_frames["open"], empty="No transaction was open at the end of the bundle.")))

# %% [markdown]
# ### Consumer groups against the LSO
#
# Each group's last committed position on each transactional partition beside the LSO and the log
# end then. `lag_to_lso` is what a read_committed reader could still read; `markers_in_lag` counts
# the COMMIT/ABORT markers among those offsets (no consumer receives them: a group that read
# everything shows a lag of 1 against a log ending with a marker, and `records_to_read` 0); a
# negative `lag_to_lso` is a read_uncommitted reader past the LSO.

# %%
if txn_data:
    display(HTML(table_html(txn_frames["groups"], empty="No group committed offsets of a transactional topic.")))
