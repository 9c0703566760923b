"""Transactions: which open transaction pinned a partition's last stable offset, for how long, and whom it stalled.

A transaction left open (a producer killed inside it, a zombie fenced too late, a coordinator that
lost its state) pins the partition's **last stable offset** (LSO): read_committed consumers stop
there while the log grows. Kafka answers it live only (``kafka-transactions.sh find-hanging``,
KIP-664); this area answers it from the files.

Inputs: the data partitions' batches (``batches``: transactional batches and control batches, of
each partition's fullest replica), their markers (``markers``), the coordinator's log
(``transactions``, ``__transaction_state``) and the groups' commits (``offsets``).

Definitions (Kafka's):

* a **transaction's span** on a partition runs from its producer's first transactional batch after
  its previous marker to its next marker (COMMIT or ABORT); without a marker it is **open**;
* the **LSO** is the first offset of the earliest open transaction, or the log end when none is
  open; the **LSO lag** is log end − LSO in offsets (markers take one each), in bytes, and in time
  (since the pinning transaction's first batch);
* **hanging** (``find-hanging``'s rule): open, its last write older than the maximum transaction
  timeout (15 minutes unless ``txn_max_timeout_ms``), and no coordinator will write its marker — the
  coordinator holds no state for the producer id, or its transaction does not list the partition;
  **orphaned**: the second half alone, at any age;
* a group is **stalled** by a transaction while its committed position is the LSO and the log end
  is beyond it (a read_committed reader waiting).

What cannot be known from a bundle: the high watermark (the log end of the fullest replica stands
for it); the producer's clock stamps data batches (``reached``, as :mod:`workbench.analysis.logs`
explains) while markers carry the broker's; whether a group reads read_committed (its positions
show it).

Outputs, each a DataFrame documented by its function: :func:`transaction_spans`, :func:`lso_series`,
:func:`pinned_episodes`, :func:`open_transactions`, :func:`hanging_transactions`,
:func:`coordinator_state`, :func:`commits_vs_lso`, :func:`stalled_groups`, :func:`lag_explained`,
:func:`findings`.
"""

from __future__ import annotations

from workbench.analysis.transactions.area import TransactionsAnalysis, analyse, area_findings, key_figures, view_frames
from workbench.analysis.transactions.hanging import OPEN_COLUMNS, hanging_transactions, open_transactions
from workbench.analysis.transactions.inputs import (
    DEFAULT_MAX_TIMEOUT_MS,
    bundle_end_ms,
    coordinator_state,
    log_rows,
    transactional_topics,
)
from workbench.analysis.transactions.lso import SERIES_COLUMNS, lso_at, lso_series, pinned_episodes
from workbench.analysis.transactions.spans import SPAN_COLUMNS, transaction_spans
from workbench.analysis.transactions.stalls import commits_vs_lso, group_positions, lag_explained, stalled_groups
from workbench.analysis.transactions.verdicts import findings, max_timeout_ms, pinned_threshold_s

# isort: split
from workbench.analysis.transactions import area as _area  # noqa: F401  (registers the area)

__all__ = [
    "TransactionsAnalysis", "analyse", "area_findings", "key_figures", "view_frames", "OPEN_COLUMNS",
    "hanging_transactions", "open_transactions", "DEFAULT_MAX_TIMEOUT_MS", "bundle_end_ms", "coordinator_state",
    "log_rows", "transactional_topics", "SERIES_COLUMNS", "lso_at", "lso_series", "pinned_episodes", "SPAN_COLUMNS",
    "transaction_spans", "commits_vs_lso", "group_positions", "lag_explained", "stalled_groups", "findings",
    "max_timeout_ms", "pinned_threshold_s",
]
