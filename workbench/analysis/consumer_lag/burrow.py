"""Burrow's consumer status rules, applied historically: OK, WARN, STOP, STALL, REWIND per partition, and ERR per group.

`Burrow <https://github.com/linkedin/Burrow>`_ (LinkedIn's lag monitor) keeps, per group and
partition, a sliding window of the last ``intervals`` commits (10 by default), each with the lag it
had when stored (broker log end offset minus the committed offset, never below 0), and the last
``intervals`` log end offsets it polled from the brokers (every ``offset-refresh`` seconds, 10 by
default). Its caching evaluator (``core/internal/evaluator/caching.go``) rates a partition with these
rules, in this order (Burrow's own words in quotes):

1. when the current lag (log end now minus the last committed offset) is 0, the partition is OK;
2. STOP: "the difference between now and the last offset timestamp is greater than the difference
   between the last and first offset timestamps" — unless one of the recent broker log end offsets
   was at or below the last committed offset (the consumer was caught up recently);
3. when the lag of some commit in the window was 0, OK ("if over the stored period, the lag is ever
   zero for the partition, the period is OK");
4. REWIND: "the consumer offset decreases from one interval to the next";
5. STALL: "the consumer is committing offsets that do not change" (and there is lag);
6. WARN: "the consumer offsets are advancing, but the lag is not decreasing somewhere" (no commit's lag
   is below the one before it; commits without a known lag are skipped);
7. otherwise OK.

A group's status is its worst partition's, any partition error (STOP, STALL, REWIND) counting as ERR.
Two details of Burrow's storage matter historically and are kept: a commit arriving less than
``min-distance`` seconds after the previous one replaces it (keeping the earlier timestamp), and
the window keeps only the last ``intervals`` commits.

This module holds the rules as plain functions over a window (:func:`partition_status`, tested with
Burrow's own evaluator test vectors in ``tests/analysis/test_burrow_rules.py``) and the window
bookkeeping (:func:`evaluate`); :mod:`workbench.analysis.consumer_lag` applies them to every commit of
a bundle in Spark. The only departure from a live Burrow is for the better: the lag of each commit and
the recent log end offsets are the exact log end at those times (from the segments), not the
value of Burrow's last poll (before a partition's first batch in the bundle, that batch's base offset:
the most a poll could then have seen).

Examples
--------
>>> window = [Offset(1000, 100_000, 100), Offset(1000, 200_000, 150), Offset(1000, 300_000, 200)]
>>> partition_status(window, broker_offsets=[1300], current_lag=300, now_s=350)
'STALL'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: Partition statuses, in Burrow's order of severity
#: (``protocol.StatusConstant``: OK < WARN < ERR < STOP < STALL < REWIND).
PARTITION_STATUSES: tuple[str, ...] = ("OK", "WARN", "STOP", "STALL", "REWIND")
#: Group statuses (a partition error makes the group ERR).
GROUP_STATUSES: tuple[str, ...] = ("OK", "WARN", "ERR")
_RANK = {"OK": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6}

#: Burrow's defaults: ``storage.intervals`` 10, ``storage.min-distance`` 0 (its sample configuration
#: sets 1), ``cluster.offset-refresh`` 10 s.
DEFAULT_INTERVALS = 10
DEFAULT_MIN_DISTANCE_S = 0
DEFAULT_REFRESH_S = 10


@dataclass(frozen=True)
class Offset:
    """One stored commit: ``offset``, ``timestamp`` (ms), ``lag`` (None: unknown when stored)."""

    offset: int
    timestamp: int
    lag: int | None


def lag_always_not_zero(window: Sequence[Offset]) -> bool:
    """Burrow's rule 1 (``isLagAlwaysNotZero``): no commit of the window had a known lag of 0."""
    return all(o.lag is None or o.lag != 0 for o in window)


def offsets_rewind(window: Sequence[Offset]) -> bool:
    """Rule 2 (``checkIfOffsetsRewind``): some committed offset is below the one before it."""
    return any(window[i].offset < window[i - 1].offset for i in range(1, len(window)))


def offsets_stopped(window: Sequence[Offset], now_s: int) -> bool:
    """Rule 3 (``checkIfOffsetsStopped``): more time since the last commit than the window spans (``now_s`` in s)."""
    first, last = window[0].timestamp, window[-1].timestamp
    return (now_s * 1000 - last) > (last - first)


def offsets_stalled(window: Sequence[Offset]) -> bool:
    """Rule 4 (``checkIfOffsetsStalled``): every commit of the window has the same offset."""
    return all(window[i].offset == window[i - 1].offset for i in range(1, len(window)))


def lag_not_decreasing(window: Sequence[Offset]) -> bool:
    """Rule 5 (``checkIfLagNotDecreasing``): no known lag is below the previous known lag."""
    last: int | None = None
    for o in window:
        if o.lag is not None:
            if last is not None and o.lag < last:
                return False
            last = o.lag
    return True


def recent_lag_zero(window: Sequence[Offset], broker_offsets: Sequence[int]) -> bool:
    """``checkIfRecentLagZero``: a recent broker log end offset was at or below the last committed offset."""
    last = window[-1].offset
    return any(b <= last for b in broker_offsets)


def partition_status(window: Sequence[Offset], *, broker_offsets: Sequence[int], current_lag: int,
                     now_s: int) -> str:
    """Burrow's ``calculatePartitionStatus`` over a non-empty window of commits (oldest first).

    ``broker_offsets`` are Burrow's ring of recent log end offsets; ``current_lag`` is the log end now minus
    the last committed offset (0 when negative, as Burrow stores it); ``now_s`` is in epoch seconds.
    Returns one of :data:`PARTITION_STATUSES`.

    >>> partition_status([Offset(5, 1000, 0)], broker_offsets=[5], current_lag=0, now_s=9)
    'OK'
    """
    if current_lag > 0:
        if offsets_stopped(window, now_s) and not recent_lag_zero(window, broker_offsets):
            return "STOP"
        if lag_always_not_zero(window):
            if offsets_rewind(window):
                return "REWIND"
            if offsets_stalled(window):
                return "STALL"
            if lag_not_decreasing(window):
                return "WARN"
    return "OK"


def group_status(statuses: Sequence[str]) -> str:
    """A group's status from its partitions' (Burrow: the worst, errors beyond ERR counted as ERR).

    >>> group_status(["OK", "WARN", "STALL"]), group_status(["OK", "WARN"]), group_status([])
    ('ERR', 'WARN', 'OK')
    """
    worst = max((_RANK[s] for s in statuses), default=_RANK["OK"])
    return "ERR" if worst >= _RANK["ERR"] else ("WARN" if worst == _RANK["WARN"] else "OK")


def store(window: list[Offset], commit: Offset, *, intervals: int, min_distance_s: int) -> None:
    """Add a commit to a window as Burrow's in-memory storage does (commits arrive in order).

    A commit within ``min_distance_s`` of the last stored one replaces it but keeps its timestamp.

    >>> w = []
    >>> for ts in (0, 400, 1500):
    ...     store(w, Offset(ts, ts, 1), intervals=2, min_distance_s=1)
    >>> [(o.offset, o.timestamp) for o in w]
    [(400, 0), (1500, 1500)]
    """
    if window and commit.timestamp - window[-1].timestamp < min_distance_s * 1000:
        window[-1] = Offset(commit.offset, window[-1].timestamp, commit.lag)
        return
    window.append(commit)
    if len(window) > intervals:
        del window[0]


def evaluate(commits: Sequence[tuple[int, int, int | None]], instants: Sequence[tuple[int, int, Sequence[int]]], *,
             intervals: int = DEFAULT_INTERVALS, min_distance_s: int = DEFAULT_MIN_DISTANCE_S
             ) -> list[tuple[str | None, int, int]]:
    """Burrow's status of one partition of one group at each instant, from its whole commit history.

    ``commits`` are ``(offset, timestamp_ms, lag)`` in time order (``lag``: log end at the commit minus
    the offset, None if unknown); ``instants`` are ``(time_ms, log_end_offset, recent_log_end_offsets)`` in
    time order, the last being the log ends Burrow would have polled in its window. Returns, per instant,
    ``(status, window_size, current_lag)``: the status is None before the first commit, and a commit at
    the very instant counts.

    >>> evaluate([(10, 1_000, 5), (10, 2_000, 9)], [(2_000, 19, [19]), (9_000, 19, [19])])
    [('STALL', 2, 9), ('STOP', 2, 9)]
    """
    window: list[Offset] = []
    out: list[tuple[str | None, int, int]] = []
    i = 0
    for time_ms, log_end, recent in instants:
        while i < len(commits) and commits[i][1] <= time_ms:
            offset, ts, lag = commits[i]
            store(window, Offset(int(offset), int(ts), None if lag is None else max(0, int(lag))),
                  intervals=intervals, min_distance_s=min_distance_s)
            i += 1
        if not window:
            out.append((None, 0, 0))
            continue
        current = max(0, int(log_end) - window[-1].offset) if log_end is not None else 0
        status = partition_status(window, broker_offsets=[int(b) for b in recent if b is not None],
                                  current_lag=current, now_s=time_ms // 1000)
        out.append((status, len(window), current))
    return out
