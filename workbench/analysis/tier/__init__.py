"""Tiered storage backlog (the seed's UploadTierLag / DeleteTierLag, shipped as KIP-963's metrics).

How much eligible data waited to be uploaded to remote storage, and how much waited to be deleted
from it, per partition and over time, in segments, records and bytes; where a partition's data
lived (local log, remote storage, both, or nowhere); and Kafka's own ``RemoteCopyLag*``,
``RemoteDeleteLag*`` and ``RemoteLogSizeBytes`` samples beside the computed series, each
disagreement explained from the segments and events.

Inputs: the ``remote`` table (``__remote_log_metadata`` segment life-cycle events), the local
segments (``inventory`` and ``batches``), the topic and broker settings (``configs``:
``remote.storage.enable``, ``local.retention.*``, ``retention.*``,
``remote.log.manager.task.interval.ms``, ``log.retention.check.interval.ms``), leaders from the
KRaft metadata log when the bundle has it (:mod:`workbench.analysis.isr`), and ``metrics``.

Definitions (the seed's, as Kafka implements them):

* **upload lag** of a partition at time *t*: the rolled (non-active) local segments whose offsets
  no ``COPY_SEGMENT_FINISHED`` remote segment covered yet at *t*, while ``remote.storage.enable``
  was true, and that had not fallen below the log start offset; in segments, records (offsets:
  ``end - base + 1``) and bytes;
* **delete lag**: the uploaded segments whose deletion started (``DELETE_SEGMENT_STARTED``) and
  had not finished, plus those past ``retention.ms`` (largest record timestamp) or
  ``retention.bytes`` (the data after them reached it) whose deletion had not started. A failed
  copy's clean-up is not a deletion backlog;
* **local range**: the local segments present at *t*; **remote range**: the segments readable in
  remote storage at *t* (copy finished, deletion not started); the **log start** moves when the
  expiration task deletes by retention; a **gap** is an offset range above the log start that is
  neither local nor readable remotely — data that exists nowhere.

What cannot be known from a bundle (and how it is approximated):

* the local segments present are the final state: earlier ones are known from their remote
  copies (offsets, size, largest timestamp); when their local files were deleted is derived from
  Kafka's rule (the first retention check after the segment was uploaded, as far as Kafka knew,
  and past local retention, or below the log start): ``local_deleted`` is the earliest such
  moment and ``local_deleted_latest`` one ``log.retention.check.interval.ms`` later;
* when a segment rolled is pinned by the first batch of the next segment when the bundle holds it;
  otherwise it is taken as the time of the segment's last record (or, when the next segment was
  opened empty, when local retention expired it), never after its copy started;
  ``rolled_latest`` bounds it;
* offsets between known segments that no event and no file hold are one segment of unknown size
  (``source = 'unknown'``): their events were lost or never written; if the log start had not
  passed them when their local files must have gone, they are a gap;
* record counts are offset counts (transaction markers take offsets too); the active segment's
  size at a past moment is interpolated between its creation and its last record.

Outputs, each a DataFrame documented by its function: :func:`copy_attempts` (one row per remote
segment id), :func:`segment_history` (one row per segment of each partition's log),
:func:`backlog_series` (one row per partition per change), :func:`rollup` (per broker, per topic),
:func:`gaps`, :func:`episodes`, :func:`reported` (Kafka's samples), :func:`compare` (each sample
beside the computed value, with the reason for a difference), :func:`findings`.
"""

from __future__ import annotations

import workbench.analysis.tier.model as model
from workbench.analysis.tier.area import TierAnalysis, analyse, area_findings, key_figures, view_frames
from workbench.analysis.tier.backlog import (
    HISTORY_SCHEMA,
    ROLLUP_COUNTS,
    ROLLUP_LATEST,
    ROLLUP_SUMS,
    SERIES_SCHEMA,
    apply_kernel,
    backlog_series,
    episodes,
    gaps,
    rollup,
    segment_history,
    task_interval_ms,
)
from workbench.analysis.tier.inputs import (
    ATTEMPTS_SCHEMA,
    bundle_end_ms,
    copy_attempts,
    leader_changes,
    local_segments,
    settings_for,
    tiered_topics,
)
from workbench.analysis.tier.kafka import (
    COMPARE_COLUMNS,
    KAFKA_GAUGES,
    REASONS,
    REPORTED_SCHEMA,
    compare,
    comparison,
    reported,
)
from workbench.analysis.tier.verdicts import backlog_threshold_s, findings, summary_sentence

# isort: split
from workbench.analysis.tier import area as _area  # noqa: F401  (registers the area)

__all__ = [
    "model", "ATTEMPTS_SCHEMA", "copy_attempts", "tiered_topics", "local_segments", "leader_changes",
    "settings_for", "bundle_end_ms", "HISTORY_SCHEMA", "SERIES_SCHEMA", "ROLLUP_SUMS", "ROLLUP_COUNTS",
    "ROLLUP_LATEST", "apply_kernel", "segment_history", "backlog_series", "task_interval_ms", "rollup",
    "gaps", "episodes", "KAFKA_GAUGES", "REPORTED_SCHEMA", "COMPARE_COLUMNS", "REASONS", "reported",
    "compare", "comparison", "backlog_threshold_s", "findings", "summary_sentence", "TierAnalysis", "analyse",
    "area_findings", "view_frames", "key_figures",
]
