"""Replay of one partition's tiered storage: its segments over time, and its backlog series.

The kernels behind :mod:`workbench.analysis.tier` (pure pandas and numpy, no Spark: the Spark
side groups the inputs by partition and calls them). Times are epoch milliseconds as floats,
NaN for unknown; offsets are inclusive (``end_offset`` is a segment's last offset).

What a bundle says about a partition's log, and what is derived from it:

* every remote segment copy attempt (``__remote_log_metadata``): its offsets, size, largest
  record timestamp, and when its copy started, finished, and its deletion started and finished;
* the local segments left at the end (the bundle's log directory): the final state only;
* a segment's offsets are a former local segment's (Kafka copies whole local segments), so the
  segments of the log are the union of both; offsets between them that neither holds are a
  range of unknown segments (their events are lost, or never written);
* when a segment stopped being the active one (``rolled``): Kafka rolls when a batch does not
  fit (or ``segment.ms`` passed) at the next append, or, for an idle partition, when local
  retention expires the active segment. The first batch of the next segment pins it when the
  bundle still holds it; else the largest record timestamp of the segment (it rolled no earlier),
  or that plus the local retention when the next segment was opened empty; never after the
  segment's first copy started. Retention deletes local segments in offset order and stops at the
  first one not uploaded, and it rolls the active segment only when every segment before it went:
  an idle segment's retention roll waits for the uploads of all earlier segments;
* when a local segment was deleted (``local_deleted``): local segments still in the bundle were
  never deleted; the others went at Kafka's first retention check after they became deletable —
  uploaded as far as Kafka knew (the highest copied offset reached their end) and past local
  retention (time or size), or below the log start offset. The check's phase is unknown, so
  ``local_deleted`` is the earliest moment and ``local_deleted_latest`` one
  ``log.retention.check.interval.ms`` later.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

NAN = float("nan")
INF = float("inf")

#: Kafka's defaults of the topic settings the model reads.
TOPIC_DEFAULTS: dict[str, str] = {
    "remote.storage.enable": "false",
    "retention.ms": "604800000",
    "retention.bytes": "-1",
    "local.retention.ms": "-2",
    "local.retention.bytes": "-2",
}

#: Broker settings standing for a topic setting the topic does not set (most specific first,
#: with the factor to milliseconds or bytes).
BROKER_SYNONYMS: dict[str, tuple[tuple[str, int], ...]] = {
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "retention.bytes": (("log.retention.bytes", 1),),
    "local.retention.ms": (("log.local.retention.ms", 1),),
    "local.retention.bytes": (("log.local.retention.bytes", 1),),
}

#: Broker settings of the remote log manager and the retention checker, with Kafka's defaults.
BROKER_DEFAULTS: dict[str, str] = {
    "remote.log.manager.task.interval.ms": "30000",
    "log.retention.check.interval.ms": "300000",
}

#: Every setting name the model reads from the ``configs`` table.
CONFIG_NAMES: tuple[str, ...] = (
    *TOPIC_DEFAULTS,
    *(name for synonyms in BROKER_SYNONYMS.values() for name, _ in synonyms),
    *BROKER_DEFAULTS,
)


def _int(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


@dataclass
class TopicSettings:
    """The settings in force for one topic over time.

    Parameters
    ----------
    topic_changes : sequence of (time_ms, name, value)
        The topic's ``ConfigRecord``\\ s in log order (value ``None``: deleted).
    default_changes : sequence of (time_ms, name, value)
        Cluster-wide dynamic broker defaults (``kafka-configs --entity-default``), in log order.
    static : mapping
        The brokers' ``server.properties`` values.

    Examples
    --------
    >>> s = TopicSettings([(1000.0, "local.retention.ms", "10000"), (5000.0, "local.retention.ms", "2000")],
    ...                   [], {"log.retention.hours": "1"})
    >>> s.local_retention_ms(0.0), s.local_retention_ms(2000.0), s.local_retention_ms(6000.0)
    (3600000, 10000, 2000)
    >>> s.remote_enabled(0.0), s.retention_bytes(0.0)
    (False, -1)
    """

    topic_changes: Sequence[tuple[float, str, str | None]] = ()
    default_changes: Sequence[tuple[float, str, str | None]] = ()
    static: Mapping[str, str] = field(default_factory=dict)

    def _last(self, changes: Iterable[tuple[float, str, str | None]], name: str, t: float) -> tuple[bool, str | None]:
        found, value = False, None
        for when, key, val in changes:
            if key != name:
                continue
            if when is None or (isinstance(when, float) and math.isnan(when)) or when <= t:
                found, value = True, val
        return found, value

    def raw(self, name: str, t: float) -> str:
        """A topic setting's value at ``t`` (topic config, else broker synonyms, else Kafka's default)."""
        found, value = self._last(self.topic_changes, name, t)
        if found and value is not None:
            return value
        for synonym, factor in BROKER_SYNONYMS.get(name, ()):
            found, value = self._last(self.default_changes, synonym, t)
            if not (found and value is not None):
                value = self.static.get(synonym)
            number = _int(value)
            if number is not None:
                return str(number * factor if number >= 0 else number)
        return TOPIC_DEFAULTS[name]

    def number(self, name: str, t: float) -> int:
        value = _int(self.raw(name, t))
        return value if value is not None else int(TOPIC_DEFAULTS[name])

    def remote_enabled(self, t: float) -> bool:
        """``remote.storage.enable`` at ``t``."""
        return self.raw("remote.storage.enable", t).strip().lower() == "true"

    def retention_ms(self, t: float) -> int:
        return self.number("retention.ms", t)

    def retention_bytes(self, t: float) -> int:
        return self.number("retention.bytes", t)

    def local_retention_ms(self, t: float) -> int:
        """Effective ``local.retention.ms`` (-2: ``retention.ms``)."""
        value = self.number("local.retention.ms", t)
        return self.retention_ms(t) if value == -2 else value

    def local_retention_bytes(self, t: float) -> int:
        """Effective ``local.retention.bytes`` (-2: ``retention.bytes``)."""
        value = self.number("local.retention.bytes", t)
        return self.retention_bytes(t) if value == -2 else value

    def change_times(self) -> list[float]:
        """Times at which any setting of the topic (or a cluster default) changed."""
        times = {float(t) for t, _n, _v in [*self.topic_changes, *self.default_changes]
                 if t is not None and not math.isnan(float(t))}
        return sorted(times)

    def pieces(self) -> list[tuple[float, float]]:
        """Intervals of constant settings, ``[-inf, c1), [c1, c2), ..., [cn, inf)``."""
        bounds = [-INF, *self.change_times(), INF]
        return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1) if bounds[i] < bounds[i + 1]]


@dataclass(frozen=True)
class Env:
    """Cluster-wide facts of the replay.

    Attributes
    ----------
    task_interval_ms : float
        ``remote.log.manager.task.interval.ms``.
    check_interval_ms : float
        ``log.retention.check.interval.ms``.
    bundle_end_ms : float
        The last moment the bundle saw (its latest event, record or sample).
    """

    task_interval_ms: float = 30000.0
    check_interval_ms: float = 300000.0
    bundle_end_ms: float = NAN


def _nanmin(*values: float) -> float:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return min(finite) if finite else NAN


def _nanmax(*values: float) -> float:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return max(finite) if finite else NAN


def time_due(since_ms: float, delay: Any, settings: TopicSettings) -> float:
    """The earliest ``t`` with ``since_ms + delay(t) <= t`` (``delay`` < 0: never), over setting changes.

    Examples
    --------
    >>> s = TopicSettings([(0.0, "retention.ms", "100"), (500.0, "retention.ms", "10")])
    >>> time_due(50.0, s.retention_ms, s), time_due(450.0, s.retention_ms, s)
    (150.0, 500.0)
    """
    if math.isnan(since_ms):
        return NAN
    for lo, hi in settings.pieces():
        at = lo if lo > -INF else min(since_ms, hi - 1)
        d = delay(at)
        if d < 0:
            continue
        cand = max(lo, since_ms + d)
        if cand < hi:
            return float(cand)
    return NAN


def size_due(index: int, rolled: np.ndarray, cum_bytes: np.ndarray, limit: Any, settings: TopicSettings) -> float:
    """The earliest ``t`` at which the bytes of the segments after ``index`` rolled by ``t`` reach ``limit(t)``.

    ``rolled`` must be non-decreasing (segments roll in offset order); NaN = never rolled.
    """
    n = len(rolled)
    if index >= n - 1:
        return NAN
    base = cum_bytes[index]
    for lo, hi in settings.pieces():
        at = lo if lo > -INF else (rolled[index + 1] if not math.isnan(rolled[index + 1]) else 0.0)
        r = limit(at)
        if r < 0:
            continue
        k = int(np.searchsorted(cum_bytes, base + r, side="left"))
        k = max(k, index + 1)
        if k >= n or math.isnan(rolled[k]):
            continue
        cand = max(lo, float(rolled[k]))
        if cand < hi:
            return cand
    return NAN


# ----------------------------------------------------------------------------------- attempts

ATTEMPT_COLUMNS = (
    "segment_id", "start_offset", "end_offset", "size_bytes", "max_ts", "broker", "copy_started",
    "copy_finished", "delete_started", "delete_finished",
)


def attempt_outcomes(attempts: pd.DataFrame) -> pd.DataFrame:
    """Each copy attempt's outcome and end.

    ``outcome``: ``uploaded`` (COPY_SEGMENT_FINISHED), ``failed`` (never finished, and cleaned
    up or followed by a later attempt), ``unfinished`` (never finished, nothing after it: in
    progress when the bundle was taken, or failed without a trace); ``ended``: when the attempt
    was over (finished, else its clean-up's last event, else its start).

    Examples
    --------
    >>> a = pd.DataFrame({"segment_id": ["a", "b"], "start_offset": [0, 0], "end_offset": [9, 9],
    ...     "size_bytes": [100, 100], "max_ts": [5.0, 5.0], "broker": [1, 1], "copy_started": [10.0, 20.0],
    ...     "copy_finished": [NAN, 21.0], "delete_started": [NAN, NAN], "delete_finished": [NAN, NAN]})
    >>> attempt_outcomes(a)[["segment_id", "outcome", "ended"]].values.tolist()
    [['a', 'failed', 10.0], ['b', 'uploaded', 21.0]]
    """
    out = attempts.copy()
    if out.empty:
        out["outcome"] = pd.Series(dtype=object)
        out["ended"] = pd.Series(dtype=float)
        return out
    out = out.sort_values(["copy_started", "start_offset"], kind="stable", na_position="first").reset_index(drop=True)
    started = out["copy_started"].to_numpy(dtype=float)
    finished = ~np.isnan(out["copy_finished"].to_numpy(dtype=float))
    cleaned = ~np.isnan(out["delete_started"].to_numpy(dtype=float))
    last_start = np.nanmax(started) if np.isfinite(started).any() else NAN
    later = np.array([not math.isnan(s) and s < last_start for s in started])
    outcome = np.where(finished, "uploaded", np.where(cleaned | later, "failed", "unfinished"))
    ended = [
        _nanmin(f) if ok else _nanmax(df, ds, s)
        for ok, f, df, ds, s in zip(finished, out["copy_finished"], out["delete_finished"], out["delete_started"],
                                    started, strict=True)
    ]
    out["outcome"] = outcome
    out["ended"] = np.array(ended, dtype=float)
    return out


def copy_runs(outcomes: pd.DataFrame, interval_ms: float) -> list[tuple[float, float]]:
    """The copy task runs that copied something: ``(start, end)`` of each, from the attempts.

    A run copies its candidates one after the other; the next run starts one task interval after
    the previous one ended (a fixed-delay schedule). An attempt starting less than half an
    interval after the previous one ended belongs to the same run.
    """
    runs: list[list[float]] = []
    rows = outcomes.dropna(subset=["copy_started"]).sort_values("copy_started", kind="stable")
    for start, end in zip(rows["copy_started"], rows["ended"], strict=True):
        end = start if math.isnan(end) else end
        if runs and start - runs[-1][1] < interval_ms / 2:
            runs[-1][1] = max(runs[-1][1], end)
        else:
            runs.append([float(start), float(end)])
    return [(a, b) for a, b in runs]


def run_ends(runs: Sequence[tuple[float, float]], interval_ms: float, first_ms: float, last_ms: float) -> list[float]:
    """Ends of every copy task run between ``first_ms`` and ``last_ms``: the runs that copied,
    and the idle runs the fixed-delay schedule places between and around them.

    Examples
    --------
    >>> run_ends([(100.0, 105.0)], 10.0, 70.0, 130.0)
    [70.0, 80.0, 90.0, 105.0, 115.0, 125.0]
    """
    out: list[float] = []
    if interval_ms <= 0 or math.isnan(first_ms) or math.isnan(last_ms):
        return [b for _a, b in runs]
    if not runs:
        t = first_ms
        while t <= last_ms:
            out.append(t)
            t += interval_ms
        return out
    t = runs[0][0] - interval_ms
    before = []
    while t >= first_ms:
        before.append(t)
        t -= interval_ms
    out += sorted(before)
    for i, (_a, b) in enumerate(runs):
        out.append(b)
        nxt = runs[i + 1][0] if i + 1 < len(runs) else INF
        t = b + interval_ms
        while t < nxt - interval_ms / 2 and t <= last_ms:
            out.append(t)
            t += interval_ms
    return out


# ------------------------------------------------------------------------------------ history

HISTORY_COLUMNS = (
    "base_offset", "end_offset", "records", "bytes", "max_ts", "source", "in_bundle", "active",
    "created", "rolled", "rolled_latest", "roll_evidence", "attempts", "failed_attempts", "first_copy_started",
    "uploaded", "segment_id", "uploaded_by", "remote_deleted", "remote_delete_finished", "covered",
    "log_start_passed", "retention_due", "local_due", "local_deleted", "local_deleted_latest", "gap_start",
    "gap_end", "broker",
)

LOCAL_COLUMNS = ("node_id", "base_offset", "last_offset", "bytes", "max_ts", "first_ts", "records", "active")


def _log_start_steps(outcomes: pd.DataFrame, interval_ms: float) -> list[tuple[float, int]]:
    """``(time, log start offset)`` steps from the retention deletions (log start moves first)."""
    dels = outcomes[(outcomes["outcome"] == "uploaded") & outcomes["delete_started"].notna()]
    dels = dels.sort_values("delete_started", kind="stable")
    steps: list[tuple[float, int]] = []
    run_start, run_end, run_max = NAN, NAN, -1
    for ds, df, end in zip(dels["delete_started"], dels["delete_finished"], dels["end_offset"], strict=True):
        done = ds if math.isnan(df) else df
        if math.isnan(run_start) or ds - run_end >= interval_ms / 2:
            if not math.isnan(run_start):
                steps.append((run_start, run_max + 1))
            run_start, run_end, run_max = float(ds), float(done), int(end)
        else:
            run_end, run_max = max(run_end, float(done)), max(run_max, int(end))
    if not math.isnan(run_start):
        steps.append((run_start, run_max + 1))
    return steps


def build_history(attempts: pd.DataFrame, local: pd.DataFrame, settings: TopicSettings, env: Env,
                  leaders: Sequence[tuple[float, int]] = ()) -> pd.DataFrame:
    """One row per segment of one partition's log (remote, local, or a range no file or event holds).

    A copy attempt whose offset range is unknown (null), or a local segment whose base offset is,
    cannot be placed in the log and is left out; a local segment of unknown node uploaded nothing
    known (its broker stays unknown).

    Parameters
    ----------
    attempts : pandas.DataFrame
        One row per remote segment id: :data:`ATTEMPT_COLUMNS`.
    local : pandas.DataFrame
        The partition's local segments in the bundle (one replica): :data:`LOCAL_COLUMNS`.
    settings, env
        The topic's settings over time; interval and the bundle's end.
    leaders : sequence of (time_ms, broker)
        Leadership changes (from the metadata log), for ``broker``.

    Returns
    -------
    pandas.DataFrame
        :data:`HISTORY_COLUMNS`, in offset order (see :mod:`workbench.analysis.tier` for their meaning).
    """
    outcomes = attempt_outcomes(attempts)
    ranges: dict[tuple[int, int], dict[str, Any]] = {}

    def slot(s: int, e: int) -> dict[str, Any]:
        return ranges.setdefault((s, e), {"attempts": [], "local": None})

    for row in outcomes.itertuples(index=False):
        if pd.isna(row.start_offset) or pd.isna(row.end_offset):
            continue
        slot(int(row.start_offset), int(row.end_offset))["attempts"].append(row)
    local = local[local["base_offset"].notna()] if not local.empty else local
    loc = local.sort_values("base_offset", kind="stable").reset_index(drop=True) if not local.empty else local
    bases = [int(b) for b in loc["base_offset"]] if not loc.empty else []
    for i, row in enumerate(loc.itertuples(index=False) if not loc.empty else []):
        s = int(row.base_offset)
        if bool(row.active) or i == len(bases) - 1:
            last = row.last_offset
            e = int(last) if last is not None and not (isinstance(last, float) and math.isnan(last)) else s - 1
            info = slot(s, e)
            info["local"] = row
            info["active"] = True
        else:
            slot(s, bases[i + 1] - 1)["local"] = row

    keys = sorted(ranges)
    rows: list[dict[str, Any]] = []
    prev_end: int | None = None
    for s, e in keys:
        if prev_end is not None and s > prev_end + 1:
            rows.append({"base_offset": prev_end + 1, "end_offset": s - 1, "source": "unknown", "attempts": [],
                         "local": None, "active": False})
        info = ranges[(s, e)]
        src = ("remote+local" if info["attempts"] and info["local"] is not None
               else "remote" if info["attempts"] else "local")
        rows.append({"base_offset": s, "end_offset": e, "source": src, "attempts": info["attempts"],
                     "local": info["local"], "active": bool(info.get("active", False))})
        prev_end = e if prev_end is None else max(prev_end, e)

    finished = outcomes[outcomes["outcome"] == "uploaded"]
    fin_end = finished["end_offset"].to_numpy(dtype=float)
    fin_time = finished["copy_finished"].to_numpy(dtype=float)
    ls_steps = _log_start_steps(outcomes, env.task_interval_ms)

    n = len(rows)
    out: dict[str, list[Any]] = {c: [] for c in HISTORY_COLUMNS}
    for r in rows:
        s, e = r["base_offset"], r["end_offset"]
        att = sorted(r["attempts"], key=lambda a: (a.copy_started if not math.isnan(a.copy_started) else -INF))
        lr = r["local"]
        ok = [a for a in att if a.outcome == "uploaded"]
        first_ok = min(ok, key=lambda a: a.copy_finished) if ok else None
        size = next((float(a.size_bytes) for a in att if not pd.isna(a.size_bytes)), NAN)
        if math.isnan(size) and lr is not None:
            size = float(lr.bytes)
        max_ts = next((float(a.max_ts) for a in att if not pd.isna(a.max_ts)), NAN)
        if lr is not None and not pd.isna(lr.max_ts):
            max_ts = _nanmax(max_ts, float(lr.max_ts))
        out["base_offset"].append(s)
        out["end_offset"].append(e)
        out["records"].append(max(0, e - s + 1))
        out["bytes"].append(size)
        out["max_ts"].append(max_ts)
        out["source"].append(r["source"])
        out["in_bundle"].append(lr is not None)
        out["active"].append(r["active"])
        out["attempts"].append(len(att))
        out["failed_attempts"].append(sum(1 for a in att if a.outcome == "failed"))
        out["first_copy_started"].append(_nanmin(*[a.copy_started for a in att]))
        out["uploaded"].append(float(first_ok.copy_finished) if first_ok is not None else NAN)
        out["segment_id"].append(first_ok.segment_id if first_ok is not None else (att[-1].segment_id if att else None))
        out["uploaded_by"].append(int(first_ok.broker) if first_ok is not None and not pd.isna(first_ok.broker)
                                  else None)
        out["remote_deleted"].append(float(first_ok.delete_started) if first_ok is not None else NAN)
        out["remote_delete_finished"].append(float(first_ok.delete_finished) if first_ok is not None else NAN)
        covers = fin_time[fin_end >= e] if len(fin_end) else np.array([])
        out["covered"].append(float(covers.min()) if covers.size else NAN)
        passed = [t for t, ls in ls_steps if ls >= e + 1]
        out["log_start_passed"].append(min(passed) if passed else NAN)

    # exact coverage for ranges without an attempt of their own (overlapping remote segments)
    fin_sorted = finished.sort_values("copy_finished", kind="stable")
    for i in range(n):
        if not math.isnan(out["uploaded"][i]) or not len(fin_sorted):
            continue
        s, e = out["base_offset"][i], out["end_offset"][i]
        if e < s:
            continue
        spans: list[tuple[int, int]] = []
        for a in fin_sorted.itertuples(index=False):
            if int(a.end_offset) < s or int(a.start_offset) > e:
                continue
            spans.append((max(s, int(a.start_offset)), min(e, int(a.end_offset))))
            spans.sort()
            reach = s - 1
            for lo, hi in spans:
                if lo > reach + 1:
                    break
                reach = max(reach, hi)
            if reach >= e:
                out["uploaded"][i] = float(a.copy_finished)
                out["remote_deleted"][i] = float(a.delete_started)
                out["remote_delete_finished"][i] = float(a.delete_finished)
                break

    # roll times, in offset order
    max_ts = np.array(out["max_ts"], dtype=float)
    rolled = np.full(n, NAN)
    latest = np.full(n, NAN)
    evidence: list[str | None] = [None] * n
    uploaded_before = NAN  # the last upload of a segment before i (a retention roll waits for it)
    for i in range(n):
        if i:
            uploaded_before = _nanmax(uploaded_before, out["uploaded"][i - 1])
        if out["active"][i]:
            continue
        nxt = i + 1 if i + 1 < n else None
        nxt_local = rows[nxt]["local"] if nxt is not None else None
        first_next = NAN
        next_empty = False
        if nxt_local is not None and rows[nxt]["base_offset"] == out["end_offset"][i] + 1:
            first_next = float(nxt_local.first_ts) if not pd.isna(nxt_local.first_ts) else NAN
            next_empty = math.isnan(first_next) and (pd.isna(nxt_local.records) or int(nxt_local.records) == 0)
        next_max = max_ts[nxt] if nxt is not None else NAN
        own = max_ts[i]
        lower = own if not math.isnan(own) else _nanmax(rolled[i - 1] if i else NAN, max_ts[i - 1] if i else NAN)
        by_retention = time_due(lower, settings.local_retention_ms, settings)
        if not math.isnan(by_retention):
            by_retention = _nanmax(by_retention, uploaded_before)
        if not math.isnan(first_next):
            cand, why = _nanmin(first_next, by_retention), "next_batch"
            if not math.isnan(by_retention) and by_retention < first_next:
                why = "retention_roll"
        elif next_empty and not math.isnan(by_retention):
            cand, why = by_retention, "retention_roll"
        else:
            cand, why = lower, "last_record" if not math.isnan(own) else "previous_segment"
        upper = _nanmin(out["first_copy_started"][i], next_max, first_next)
        if why == "retention_roll":
            upper = _nanmin(upper, by_retention + env.check_interval_ms)
        value = cand
        if not math.isnan(upper) and (math.isnan(value) or value > upper):
            value, why = upper, "copy_started" if upper == out["first_copy_started"][i] else "next_segment"
        if not math.isnan(lower) and not math.isnan(value) and value < lower:
            value = lower
        if i and not math.isnan(rolled[i - 1]) and (math.isnan(value) or value < rolled[i - 1]):
            value = rolled[i - 1] if not math.isnan(value) else value
        rolled[i] = value
        latest[i] = upper if not math.isnan(upper) else value
        if not math.isnan(value) and not math.isnan(latest[i]) and latest[i] < value:
            latest[i] = value
        evidence[i] = why
    out["rolled"] = list(rolled)
    out["rolled_latest"] = list(latest)
    out["roll_evidence"] = evidence
    out["created"] = [NAN] + list(rolled[:-1]) if n else []

    # retention due times (remote: retention.*; local: local.retention.*), in offset order
    sizes = np.nan_to_num(np.array(out["bytes"], dtype=float), nan=0.0)
    cum = np.cumsum(sizes)
    roll_mono = rolled.copy()
    for i in range(n):
        if out["active"][i]:
            roll_mono[i] = NAN
    for i in range(n):
        own = max_ts[i] if not math.isnan(max_ts[i]) else (max_ts[i - 1] if i else NAN)
        r_time = time_due(own, settings.retention_ms, settings)
        r_size = size_due(i, roll_mono, cum, settings.retention_bytes, settings)
        out["retention_due"].append(_nanmin(r_time, r_size))
        l_time = time_due(own, settings.local_retention_ms, settings)
        l_size = size_due(i, roll_mono, cum, settings.local_retention_bytes, settings)
        out["local_due"].append(_nanmin(l_time, l_size))

    end = env.bundle_end_ms
    for i in range(n):
        if out["in_bundle"][i] or out["active"][i]:
            out["local_deleted"].append(NAN)
            out["local_deleted_latest"].append(NAN)
            continue
        deletable = _nanmax(out["covered"][i], out["local_due"][i])
        if math.isnan(out["covered"][i]) or math.isnan(out["local_due"][i]):
            deletable = NAN
        deletable = _nanmin(deletable, out["log_start_passed"][i])
        deletable = _nanmax(deletable, rolled[i]) if not math.isnan(deletable) else NAN
        first = _nanmin(deletable, end)
        out["local_deleted"].append(first)
        out["local_deleted_latest"].append(_nanmin(deletable + env.check_interval_ms, end)
                                           if not math.isnan(deletable) else end)

    # nowhere: neither local nor readable in remote storage, above the log start
    for i in range(n):
        start = out["local_deleted"][i]
        if math.isnan(start):
            start = out["local_deleted_latest"][i]
        gap_s, gap_e = NAN, NAN
        up, lsp = out["uploaded"][i], out["log_start_passed"][i]
        if not math.isnan(start) and out["end_offset"][i] >= out["base_offset"][i]:
            stop = _nanmin(up, lsp, end)
            if math.isnan(up) or up > start:
                if math.isnan(stop) or stop > start:
                    gap_s, gap_e = start, stop
            elif not math.isnan(out["remote_deleted"][i]):
                rd = out["remote_deleted"][i]
                stop = _nanmin(lsp, end)
                if math.isnan(stop) or stop > rd:
                    gap_s, gap_e = rd, stop
        out["gap_start"].append(gap_s)
        out["gap_end"].append(gap_e)

    for i in range(n):
        broker = out["uploaded_by"][i]
        if broker is None:
            at = _nanmax(rolled[i], out["created"][i])
            broker = leader_at(leaders, at)
        if broker is None and rows[i]["local"] is not None and not pd.isna(rows[i]["local"].node_id):
            broker = int(rows[i]["local"].node_id)
        out["broker"].append(broker)
    frame = pd.DataFrame(out, columns=list(HISTORY_COLUMNS))
    return frame


def leader_at(leaders: Sequence[tuple[float, int]], t: float) -> int | None:
    """The leader in force at ``t`` (the first known one before any change)."""
    if not leaders:
        return None
    current = leaders[0][1]
    if math.isnan(t):
        return int(leaders[-1][1])
    for when, broker in leaders:
        if when <= t:
            current = broker
        else:
            break
    return int(current)


# ------------------------------------------------------------------------------------- series

SERIES_COLUMNS = (
    "time", "broker",
    "upload_segments", "upload_records", "upload_bytes", "upload_oldest_rolled",
    "uncertain_segments", "uncertain_bytes", "phantom_segments", "phantom_bytes",
    "copies_in_flight", "copies_failed",
    "kafka_copy_after_copy_segments", "kafka_copy_after_copy_bytes", "kafka_copy_after_copy_at",
    "kafka_copy_after_run_segments", "kafka_copy_after_run_bytes", "kafka_copy_after_run_at",
    "delete_segments", "delete_records", "delete_bytes", "deleting_segments", "overdue_segments",
    "kafka_delete_segments", "kafka_delete_bytes", "kafka_delete_at",
    "log_start", "log_end", "local_start", "local_segments", "local_bytes",
    "remote_start", "remote_end", "remote_segments", "remote_bytes", "remote_listed_bytes",
    "remote_listed_v4_bytes", "remote_metadata_count", "overlap_offsets", "gap_offsets", "gap_ranges",
)


def _arr(frame: pd.DataFrame, column: str, fill: float) -> np.ndarray:
    return np.nan_to_num(frame[column].to_numpy(dtype=float), nan=fill)


def build_series(history: pd.DataFrame, attempts: pd.DataFrame, settings: TopicSettings, env: Env,
                 leaders: Sequence[tuple[float, int]] = ()) -> pd.DataFrame:
    """The partition's backlog, ranges and sizes at every moment one of them changes.

    Parameters
    ----------
    history : pandas.DataFrame
        From :func:`build_history`.
    attempts : pandas.DataFrame
        The partition's copy attempts (:data:`ATTEMPT_COLUMNS`).
    settings, env, leaders
        As for :func:`build_history`.

    Returns
    -------
    pandas.DataFrame
        :data:`SERIES_COLUMNS`, one row per change time (see :mod:`workbench.analysis.tier`).
    """
    out_cols = list(SERIES_COLUMNS)
    if history.empty:
        return pd.DataFrame(columns=out_cols)
    att = attempt_outcomes(attempts)
    h = history
    s = h["base_offset"].to_numpy(dtype=float)
    e = h["end_offset"].to_numpy(dtype=float)
    recs = h["records"].to_numpy(dtype=float)
    size = np.nan_to_num(h["bytes"].to_numpy(dtype=float), nan=0.0)
    max_ts = h["max_ts"].to_numpy(dtype=float)
    active = h["active"].to_numpy(dtype=bool)
    rolled = _arr(h, "rolled", INF)
    rolled_latest = _arr(h, "rolled_latest", INF)
    created = _arr(h, "created", -INF)
    uploaded = _arr(h, "uploaded", INF)
    remote_until = _arr(h, "remote_deleted", INF)
    remote_done = _arr(h, "remote_delete_finished", INF)
    lsp = _arr(h, "log_start_passed", INF)
    due = _arr(h, "retention_due", INF)
    gone = np.where(h["in_bundle"].to_numpy(dtype=bool) | active, INF,
                    np.nan_to_num(h["local_deleted"].to_numpy(dtype=float),
                                  nan=np.nan_to_num(h["local_deleted_latest"].to_numpy(dtype=float), nan=INF)))
    gap_s = _arr(h, "gap_start", INF)
    gap_e = _arr(h, "gap_end", INF)
    a_start = _arr(att, "copy_started", INF) if not att.empty else np.array([])
    a_end = _arr(att, "ended", INF) if not att.empty else np.array([])
    a_fin = _arr(att, "copy_finished", INF) if not att.empty else np.array([])
    a_del_done = _arr(att, "delete_finished", INF) if not att.empty else np.array([])
    a_size = np.nan_to_num(att["size_bytes"].to_numpy(dtype=float), nan=0.0) if not att.empty else np.array([])
    a_endoff = att["end_offset"].to_numpy(dtype=float) if not att.empty else np.array([])
    a_failed = (att["outcome"] == "failed").to_numpy() if not att.empty else np.array([], dtype=bool)
    a_upl = (att["outcome"] == "uploaded").to_numpy() if not att.empty else np.array([], dtype=bool)
    # a deletion that cleans up a failed copy is not a retention deletion
    ds = _arr(h, "remote_deleted", INF)
    df = _arr(h, "remote_delete_finished", INF)
    first_offset = float(np.nanmin(s)) if len(s) else NAN
    ls_steps = _log_start_steps(att, env.task_interval_ms) if not att.empty else []

    t0 = float(np.nanmin(np.concatenate([created[np.isfinite(created)], rolled[np.isfinite(rolled)],
                                         max_ts[np.isfinite(max_ts)], a_start[np.isfinite(a_start)]])))\
        if (np.isfinite(created).any() or np.isfinite(rolled).any() or np.isfinite(max_ts).any()
            or (len(a_start) and np.isfinite(a_start).any())) else NAN
    end = env.bundle_end_ms if not math.isnan(env.bundle_end_ms) else t0
    if math.isnan(t0):
        return pd.DataFrame(columns=out_cols)
    runs = copy_runs(att, env.task_interval_ms) if not att.empty else []
    leader_start = leaders[0][0] if leaders else t0
    ends_b = run_ends(runs, env.task_interval_ms, max(t0, leader_start), end)
    fin_times = sorted(float(t) for t in a_fin[np.isfinite(a_fin)])
    del_times = sorted({float(t) for t in np.concatenate([ds[np.isfinite(ds)], df[np.isfinite(df)]])})

    times: set[float] = {t0, end}
    for arr in (rolled, rolled_latest, created, uploaded, remote_until, remote_done, lsp, gone, gap_s, gap_e,
                np.maximum(due, uploaded), max_ts, a_start, a_end):
        times.update(float(t) for t in arr[np.isfinite(arr)])
    times.update(ends_b)
    times.update(settings.change_times())
    times.update(float(t) for t, _b in leaders)
    grid = np.array(sorted(t for t in times if t0 <= t <= end), dtype=float)

    rows: list[list[Any]] = []
    copy_a = (0, 0.0, NAN)
    copy_b = (0, 0.0, NAN)
    kafka_del = (0, 0.0, NAN)
    fin_i = 0
    run_i = 0
    del_i = 0
    ends_b_sorted = sorted(ends_b)
    prev_broker: int | None = None
    for t in grid:
        enabled = settings.remote_enabled(t)
        h_off = float(a_endoff[a_upl & (a_fin <= t)].max()) if (a_upl & (a_fin <= t)).any() else -1.0
        log_start = first_offset
        for when, ls in ls_steps:
            if when <= t:
                log_start = max(log_start, ls)
        local = (created <= t) & (t < gone) & (e >= s)
        lag = (rolled <= t) & (t < uploaded) & (t < gone) & (t < lsp) & ~active & (e >= s)
        lag &= enabled
        uncertain = lag & (t < rolled_latest) & (rolled < rolled_latest)
        phantom = local & ~active & (s == e) & (s == h_off) & (uploaded <= t)
        readable = (uploaded <= t) & (t < remote_until)
        deleting = (ds <= t) & (t < df) & (uploaded <= ds)
        # due for deletion: past remote retention, or below the log start (the expiration task moves the
        # log start first, then deletes the segments below it one by one: they wait until their turn)
        overdue = (uploaded <= t) & (t < ds) & (np.minimum(due, lsp) <= t)
        gap = (gap_s <= t) & (t < gap_e)
        listed = (a_start <= t) & (t < a_del_done) if len(a_start) else np.array([], dtype=bool)
        listed_v4 = (a_fin <= t) & (t < a_del_done) if len(a_start) else np.array([], dtype=bool)
        in_flight = int(((a_start <= t) & (t < a_end)).sum()) if len(a_start) else 0
        failed = int((a_failed & (a_end <= t)).sum()) if len(a_start) else 0

        seg_lag = int(lag.sum())
        byte_lag = float(size[lag].sum())
        while fin_i < len(fin_times) and fin_times[fin_i] <= t:
            fin_i += 1
            copy_a = (seg_lag + int(phantom.sum()), byte_lag + float(size[phantom].sum()), fin_times[fin_i - 1])
        while run_i < len(ends_b_sorted) and ends_b_sorted[run_i] <= t:
            run_i += 1
            copy_b = (seg_lag + int(phantom.sum()), byte_lag + float(size[phantom].sum()), ends_b_sorted[run_i - 1])
        n_del = int(deleting.sum() + overdue.sum())
        b_del = float(size[deleting].sum() + size[overdue].sum())
        while del_i < len(del_times) and del_times[del_i] <= t:
            del_i += 1
            kafka_del = (n_del, b_del, del_times[del_i - 1])
        broker = leader_at(leaders, t) if leaders else None
        if broker is None:
            known = h["broker"].dropna()
            broker = int(known.iloc[-1]) if len(known) else None
        if prev_broker is not None and broker != prev_broker:
            copy_a, copy_b, kafka_del = (0, 0.0, t), (0, 0.0, t), (0, 0.0, t)
        prev_broker = broker

        local_start = float(s[local].min()) if local.any() else NAN
        reached = e[np.isfinite(max_ts) & (max_ts <= t) & (e >= s)]
        log_end = float(reached.max() + 1) if reached.size else NAN
        with np.errstate(invalid="ignore", divide="ignore"):  # -inf creation times: masked out below
            span = np.where(np.isfinite(max_ts) & (max_ts > created) & np.isfinite(created),
                            np.clip((t - created) / np.where(max_ts > created, max_ts - created, 1.0), 0.0, 1.0),
                            1.0)
        local_bytes = float((size * np.where(rolled <= t, 1.0, span))[local].sum())
        r_start = float(s[readable].min()) if readable.any() else NAN
        r_end = float(e[readable].max() + 1) if readable.any() else NAN
        overlap = NAN
        if not math.isnan(r_start) and not math.isnan(local_start) and not math.isnan(log_end):
            overlap = max(0.0, min(r_end, log_end) - max(r_start, local_start))
        rows.append([
            t, broker,
            seg_lag, float(recs[lag].sum()), byte_lag, float(rolled[lag].min()) if seg_lag else NAN,
            int(uncertain.sum()), float(size[uncertain].sum()), int(phantom.sum()), float(size[phantom].sum()),
            in_flight, failed,
            copy_a[0], copy_a[1], copy_a[2], copy_b[0], copy_b[1], copy_b[2],
            n_del, float(recs[deleting].sum() + recs[overdue].sum()), b_del, int(deleting.sum()),
            int(overdue.sum()), kafka_del[0], kafka_del[1], kafka_del[2],
            log_start, log_end, local_start, int(local.sum()), local_bytes,
            r_start, r_end, int(readable.sum()), float(size[readable].sum()),
            float(a_size[listed].sum()) if len(a_start) else 0.0,
            float(a_size[listed_v4].sum()) if len(a_start) else 0.0,
            int(listed.sum()) if len(a_start) else 0,
            overlap, float(recs[gap].sum()), int(gap.sum()),
        ])
    frame = pd.DataFrame(rows, columns=out_cols)
    # keep only the rows where something changed
    values = frame.drop(columns=["time"]).astype(object).where(frame.drop(columns=["time"]).notna(), None)
    changed = (values != values.shift()).any(axis=1)
    changed.iloc[0] = True
    if len(frame) > 1:
        changed.iloc[-1] = True
    return frame[changed.to_numpy()].reset_index(drop=True)
