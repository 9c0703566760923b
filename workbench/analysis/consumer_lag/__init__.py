"""Consumer lag in records, bytes and time at every commit (the seed's broker consumer-lag metrics, computed).

The seed asked Kafka for broker histograms of how far behind the log end consumers fetch, in bytes
(``ConsumerFetchLagBytes``) and in time (``ConsumerFetchLagTimeInMs``), to size the page cache; Kafka
never shipped them. A bundle holds every commit still in ``__consumer_offsets`` and the segments with
their batch positions, sizes and timestamps, so this module computes the three lags exactly and
historically, from the ``offsets``, ``batches`` and (for leaders) ``metadata`` tables:

* :func:`effective_commits` — one row per commit that took effect (transactional commits at their
  COMMIT marker, aborted ones left out), one replica of ``__consumer_offsets`` read;
* :func:`lag_at_commits` — one row per commit: the log end offset when it was made, the lag in records
  (log end − committed offset), in bytes (bytes of log from the start of the batch holding the committed
  offset to the log end, across segments) and in time (the largest record timestamp in the log then −
  the timestamp of the batch holding the committed offset, as the seed defines it), the broker leading
  the partition then (from the metadata log);
* :func:`lag_at` — the same for every group and partition at any chosen instants (the last commit
  strictly before each instant; what ``kafka-consumer-groups --describe`` would have shown then);
* :func:`lag_histogram` and :func:`lag_summary` — ``ConsumerFetchLagBytes`` and
  ``ConsumerFetchLagTimeInMs`` over a window, per leader broker (and per group or topic on request):
  bucket counts on power-of-two boundaries, and the attributes a Kafka histogram MBean has (count,
  min, max, mean, stddev, 50th … 99.9th percentile);
* :func:`page_cache` and :func:`byte_lag_cdf` — how many bytes of log tail, and how much page cache,
  would have served p50, p90, p99 and p99.9 of consumer positions, per broker;
* :func:`with_time_slices`, :func:`lag_points`, :func:`in_slices` and :func:`cdf_of_points` — the
  view's distributions counted per slice of the bundle's span, so that they follow a time window;
* :func:`retention_loss` — groups whose committed offset fell below the log start: the records they
  skipped, exactly;
* :func:`stuck_partitions` and :func:`removed_offsets` — committed offsets that stood still while the log
  grew, and groups whose offsets were removed (expired or deleted);
* :func:`burrow_status` and :func:`burrow_group_status` — Burrow's verdicts (OK, WARN, STOP, STALL,
  REWIND; ERR for a group) at every commit and over time (:mod:`workbench.analysis.consumer_lag.burrow`);
  :func:`status_runs` — each partition's verdicts as runs of one status (what the view draws).

**The log end at a past moment.** A batch joined the log no earlier than its ``max_timestamp`` and after
every batch before it, so the log held it from ``reached`` = the running maximum of ``max_timestamp`` in
offset order (:func:`workbench.analysis.logs.log_growth`); the log end at time *t* is the end of the last
batch reached by *t*. With ``LogAppendTime`` that is the broker's clock. With ``CreateTime`` (Kafka's
default) it is the producer's, which runs ahead of the append by the producer's linger and the round
trip: a batch may be counted a few milliseconds before the broker had it. Rows of such topics say so in
``note``. Where the segments holding the log end at that time are gone (deleted by retention before the
bundle was taken), the broker's own ``LogEndOffset`` metric, when the bundle has it, gives the log end
(``log_end_source = 'metric'``); bytes and time cannot be known for offsets whose batches are gone.

**Buckets.** Kafka's own histograms (Yammer ``Histogram``, what ``RequestMetrics`` and the seed's
proposed metrics use) have no buckets: their MBeans report count, min, max, mean, standard deviation and
the 50th, 75th, 95th, 98th, 99th and 99.9th percentiles of a decaying sample. :func:`lag_summary` gives
exactly those attributes, computed over every commit of the window with Yammer's percentile rule
(``pos = q·(n+1)``, interpolated) rather than over a sample. For drawing on log scales,
:func:`lag_histogram` counts commits in power-of-two buckets: 0 on its own, then ``(2^(k-1), 2^k]`` bytes
or milliseconds (``(0, 1]`` for k = 0). Powers of two are the boundaries of an exponential histogram of
scale 0 (OpenTelemetry, HdrHistogram's magnitudes): equal width on a log axis, a fixed set whatever the
data, so histograms of different brokers, groups and windows add up bucket by bucket; 50 of them span
1 byte to 1 PiB and 1 ms to 35 years.

**Page cache.** A consumer read is cheap while the bytes it reads are still in the broker's page cache.
The cache holds what the broker wrote most recently (every replica it hosts, leaders and followers), so
the page cache a read needs is the number of bytes the broker wrote from the moment the read batch was
written until the read (``cache_bytes``); ``bytes_lag`` is the distance within the partition alone.
:func:`page_cache` gives both at p50, p90, p99 and p99.9 (nearest rank: a cache of that many bytes
holds at least that share of the reads).

Commits are a consumer's positions as it reports them; between commits a consumer reads ahead of its
last commit, so lag at commits is what an SRE's lag tools see, not a per-fetch measurement.
``__consumer_offsets`` is compacted: commits the log cleaner removed are not in the bundle.

Examples
--------
>>> lags = lag_at_commits(effective_commits(tables.offsets), growth_for(tables))    # doctest: +SKIP
>>> lag_summary(lags, metric="bytes").show()                                          # doctest: +SKIP
"""

from __future__ import annotations

from workbench.analysis.consumer_lag.area import (
    ConsumerLagAnalysis,
    analyse,
    area_findings,
    key_figures,
    view_frames,
)
from workbench.analysis.consumer_lag.burrow_history import (
    BURROW_BUCKETS,
    BURROW_SCHEMA,
    RUN_COLUMNS,
    burrow_group_status,
    burrow_inputs,
    burrow_status,
    group_instants,
    group_status_for,
    partition_status_for,
    status_runs,
)
from workbench.analysis.consumer_lag.distributions import (
    CACHE_QUANTILES,
    METRICS,
    VIEW_SLICES,
    YAMMER_PERCENTILES,
    broker_writes,
    bucket_of,
    byte_lag_cdf,
    cache_lags_for,
    cdf_of_points,
    in_slices,
    lag_histogram,
    lag_points,
    lag_summary,
    page_cache,
    with_cache_bytes,
    with_time_slices,
)
from workbench.analysis.consumer_lag.inputs import (
    COMMIT_COLUMNS,
    commits_for,
    effective_commits,
    growth_for,
    leader_changes,
    log_offsets_from_metrics,
    removed_for,
    removed_offsets,
)
from workbench.analysis.consumer_lag.lag import (
    BELOW_START_NOTE,
    CREATE_TIME_NOTE,
    LAG_COLUMNS,
    METRIC_END_NOTE,
    NEGATIVE_OFFSET_NOTE,
    UNKNOWN_END_NOTE,
    VIEW_TOP_PARTITIONS,
    lag_at,
    lag_at_commits,
    lags_for,
    top_partitions,
)
from workbench.analysis.consumer_lag.retention import (
    loss_for,
    removed_groups,
    retention_loss,
    stuck_partitions,
)
from workbench.analysis.consumer_lag.verdicts import (
    DEFAULT_LAG_WARN_S,
    GROUP_GROUPS,
    findings,
    findings_for,
    group_lag_summary,
)

# isort: split
from workbench.analysis.consumer_lag import area as _area  # noqa: F401  (registers the area)

__all__ = [
    "COMMIT_COLUMNS", "LAG_COLUMNS", "YAMMER_PERCENTILES", "CACHE_QUANTILES", "METRICS", "CREATE_TIME_NOTE",
    "METRIC_END_NOTE", "BELOW_START_NOTE", "NEGATIVE_OFFSET_NOTE", "UNKNOWN_END_NOTE", "effective_commits",
    "removed_offsets", "removed_for",
    "log_offsets_from_metrics", "leader_changes", "growth_for", "commits_for", "lag_at_commits", "lag_at", "lags_for",
    "bucket_of", "lag_histogram", "lag_summary", "broker_writes", "with_cache_bytes", "page_cache", "byte_lag_cdf",
    "retention_loss", "stuck_partitions", "removed_groups", "BURROW_SCHEMA", "burrow_status", "BURROW_BUCKETS",
    "burrow_inputs", "burrow_group_status", "group_instants", "DEFAULT_LAG_WARN_S", "group_lag_summary", "findings",
    "cache_lags_for", "loss_for", "group_status_for", "partition_status_for", "RUN_COLUMNS", "status_runs",
    "findings_for", "GROUP_GROUPS", "ConsumerLagAnalysis", "analyse",
    "area_findings", "VIEW_TOP_PARTITIONS", "top_partitions", "view_frames", "key_figures", "lag_points",
    "VIEW_SLICES", "with_time_slices", "in_slices", "cdf_of_points",
]
