"""The tiered-storage analysis judged by real Kafka, on the ``tiered`` scenario of both pinned versions.

The scenario (peer/scenarios/tiered.py) runs a broker with ``LocalTieredStorage`` behind a wrapper
that refuses uploads while a flag file exists, through four phases marked in the manifest:
``healthy`` (uploads keep pace), ``burst`` (throttled uploads fall behind), ``failing`` (copies
fail, then the retries upload them) and ``retention`` (``retention.bytes`` lowered: remote
segments deleted). The oracles are Kafka's, read here straight from the bundle's files: the
JmxTool CSV of the broker's ``RemoteCopyLag*`` / ``RemoteDeleteLag*`` / ``RemoteLogSizeBytes`` /
``RemoteCopyErrorsPerSec`` MBeans, the remote store's files, ``kafka-get-offsets`` captures and
the manifest's phase events.
"""

from __future__ import annotations

import bisect
import csv
import json
import re
from pathlib import Path

import pandas as pd
import pytest

import workbench
from peer.scenario import built_on
from tests.kafka_bundles import dump_entries
from workbench.analysis import tier
from workbench.analysis.tier import backlog, model
from workbench.formats.dumptext_parse import parse_kafka_dump

#: The module's fixture replays the bundle once per version (several Spark jobs): on a loaded
#: 2-core machine that takes longer than the default per-test limit.
pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.timeout(2400)]

#: The releases building the tiered scenario (``peer.scenario.DEFAULT_SETS``).
VERSIONS = built_on("tiered")
TOPIC = "tiered"
#: The scenario's only broker (node 2: ``metrics/2-tiered.csv``).
BROKER = 2
#: JmxTool stamps a sample when its poll starts and the broker's clock and the event timestamps
#: differ by a few milliseconds: a sample this close to a change is taken as either side of it.
SKEW_MS = 1500


#: The modelled values of Kafka's copy-lag gauges as last set by the broker (``tier.KAFKA_GAUGES``).
STALE_VARIANTS = {
    "upload_segments": ("kafka_copy_after_copy_segments", "kafka_copy_after_run_segments"),
    "upload_bytes": ("kafka_copy_after_copy_bytes", "kafka_copy_after_run_bytes"),
}


def ms(ts) -> float:
    return pd.Timestamp(ts).value / 1e6


def jmx_columns(path: Path) -> dict[str, list[tuple[float, float]]]:
    """The per-topic and broker-wide gauges of the JmxTool CSV: short name -> [(t_ms, value)]."""
    with (path / "metrics" / "2-tiered.csv").open(newline="") as fh:
        rows = list(csv.reader(fh))
    header, out = rows[0], {}
    for i, col in enumerate(header):
        m = re.search(r"name=(\w+)(,topic=(\w+))?:(Value|Count)$", col.replace("\n", ","))
        if not m:
            continue
        key = m.group(1) + ("" if m.group(3) is None else f"[{m.group(3)}]")
        out[key] = [(float(r[0]), float(r[i])) for r in rows[1:] if r[i] not in ("", None)]
    return out


def remote_store(path: Path) -> pd.DataFrame:
    """The ``.log`` files left in the remote store: ``start_offset, segment_id, size_bytes``."""
    rows = []
    for f in sorted((path / "remote").rglob("*.log")):
        base, seg = f.stem.split("-", 1)
        rows.append((int(base), seg, f.stat().st_size))
    return pd.DataFrame(rows, columns=["start_offset", "segment_id", "size_bytes"])


@pytest.fixture(scope="module", params=VERSIONS)
def analysed(request, spark, kafka_bundle):
    path = Path(kafka_bundle("tiered", request.param))
    manifest = json.loads((path / "manifest.json").read_text())
    tables = workbench.load(workbench.open_bundle(path), spark)
    series = tier.backlog_series(tables)
    out = {
        "version": request.param, "path": path, "manifest": manifest, "tables": tables,
        "attempts": tier.copy_attempts(tables["remote"]).toPandas(),
        "history": tier.segment_history(tables).toPandas(),
        "series": series.where(f"topic = '{TOPIC}' and partition = 0").orderBy("time").toPandas(),
        "findings": tier.findings(tables).toPandas(),
        "interval_ms": tier.task_interval_ms(tables),
        "jmx": jmx_columns(path),
    }
    topics = tier.tiered_topics(tables["remote"], tables["configs"])
    local = tier.local_segments(tables["inventory"], tables["batches"], topics)
    attempts = tier.copy_attempts(tables["remote"]).where(f"topic = '{TOPIC}'")
    settings, env = tier.settings_for(tables["configs"], topics)
    kin = backlog._kernel_input(attempts, local, tier.leader_changes(tables, {}, topics)).toPandas()
    out["kernel"] = (kin, settings[TOPIC],
                     model.Env(env.task_interval_ms, env.check_interval_ms, tier.bundle_end_ms(tables, topics)))
    return out


def phases(manifest: dict) -> dict[str, tuple[float, float]]:
    starts, out = {}, {}
    for e in manifest["events"]:
        if e["event"] == "phase":
            if e["state"] == "start":
                starts[e["name"]] = e["t_ms"]
            else:
                out[e["name"]] = (starts[e["name"]], e["t_ms"])
    return out


def value_at(series: pd.DataFrame, column: str, t_ms: float) -> float:
    times = [ms(t) for t in series.time]
    i = bisect.bisect_right(times, t_ms) - 1
    return 0.0 if i < 0 or pd.isna(series[column].iloc[i]) else float(series[column].iloc[i])


def values_between(series: pd.DataFrame, column: str, lo: float, hi: float) -> set[float]:
    """Every value the computed column held during [lo, hi]."""
    times = [ms(t) for t in series.time]
    out = {value_at(series, column, lo)}
    out.update(float(v) for t, v in zip(times, series[column], strict=True) if lo <= t <= hi and not pd.isna(v))
    return out


def change_times(series: pd.DataFrame, column: str) -> list[float]:
    vals = series[column].fillna(0).to_list()
    return [ms(t) for i, t in enumerate(series.time) if i == 0 or vals[i] != vals[i - 1]]


# ------------------------------------------------------------------------------------- the events

def test_uploaded_segments_left_are_the_remote_store_files(analysed):
    """Segments uploaded and never deleted = the ``.log`` files in the remote store, id, offset and size."""
    att = analysed["attempts"]
    kept = att[(att.outcome == "uploaded") & att.delete_started.isna()]
    got = kept[["start_offset", "segment_id", "size_bytes"]].sort_values("start_offset").reset_index(drop=True)
    want = remote_store(analysed["path"]).sort_values("start_offset").reset_index(drop=True)
    assert len(want) >= 3
    pd.testing.assert_frame_equal(got.astype({"size_bytes": "int64", "start_offset": "int64"}),
                                  want.astype({"size_bytes": "int64", "start_offset": "int64"}))


def test_failed_copies_match_kafka_copy_errors(analysed):
    """Copy attempts that never finished = Kafka's RemoteCopyErrorsPerSec count, all inside the failing phase."""
    att = analysed["attempts"]
    errors = analysed["jmx"]["RemoteCopyErrorsPerSec"][-1][1]
    failed = att[att.outcome == "failed"]
    assert errors >= 1
    assert len(failed) == errors
    down = next(e["t_ms"] for e in analysed["manifest"]["events"] if e["event"] == "remote_storage_down")
    up = next(e["t_ms"] for e in analysed["manifest"]["events"] if e["event"] == "remote_storage_up")
    assert all(down - SKEW_MS <= ms(t) <= up + SKEW_MS for t in failed.copy_started)
    # every failed range was uploaded by a retry after the storage came back
    hist = analysed["history"]
    retried = hist[hist.failed_attempts > 0]
    assert len(retried) >= 1 and retried.uploaded.notna().all()
    assert all(ms(t) >= up - SKEW_MS for t in retried.uploaded)


# ------------------------------------------------------------------------------- Kafka's gauges

@pytest.mark.parametrize("gauge, column", [
    ("RemoteCopyLagSegments", "upload_segments"), ("RemoteCopyLagBytes", "upload_bytes"),
    ("RemoteDeleteLagSegments", "delete_segments"), ("RemoteDeleteLagBytes", "delete_bytes"),
])
def test_lag_equals_kafka_gauge_away_from_changes(analysed, gauge, column):
    """At every sample of the topic's gauge not within one task interval of a change of the computed
    lag, the computed lag equals Kafka's, or the value Kafka's gauge was last set to as modelled from
    the events (:data:`STALE_VARIANTS`: 3.x leaves it stale while copies fail); every other sample
    shows a value the computed lag held within the task interval before it (Kafka refreshes the
    gauge from its tasks)."""
    judge_gauge(analysed["series"], analysed["jmx"][f"{gauge}[{TOPIC}]"], column, analysed["interval_ms"],
                copy_runs(analysed["attempts"], analysed["interval_ms"]))


@pytest.mark.parametrize("gauge, column", [
    ("RemoteCopyLagSegments", "upload_segments"), ("RemoteCopyLagBytes", "upload_bytes"),
    ("RemoteDeleteLagSegments", "delete_segments"), ("RemoteDeleteLagBytes", "delete_bytes"),
])
def test_broker_rollup_equals_the_broker_wide_gauge_away_from_changes(analysed, gauge, column):
    """Each broker's roll-up (its partitions added up while it led them, what the view draws per broker)
    beside the broker-wide ``BrokerTopicMetrics`` gauge (the MBean without a topic), judged as the
    topic's is."""
    rollup = (tier.rollup(tier.backlog_series(analysed["tables"]), by=["broker"]).orderBy("time").toPandas())
    assert set(rollup.broker.dropna()) == {BROKER}
    judge_gauge(rollup[rollup.broker == BROKER].reset_index(drop=True), analysed["jmx"][gauge], column,
                analysed["interval_ms"], copy_runs(analysed["attempts"], analysed["interval_ms"]))


def copy_runs(attempts: pd.DataFrame, interval: float) -> list[tuple[float, float]]:
    """(start, end) ms of each run of copies back to back (the next started within a task interval of the
    last one's end): one task run of the broker's copy task, which sets the copy-lag gauges as it starts
    and copies every eligible segment before the next run sets them again (on a loaded machine, longer
    than two task intervals: 7 segments in about 16 s in one cold CI run)."""
    rows = sorted((ms(r.copy_started), ms(r.ended if pd.notna(r.ended) else r.copy_started))
                  for r in attempts.itertuples(index=False) if pd.notna(r.copy_started))
    runs: list[list[float]] = []
    for start, end in rows:
        if runs and start - runs[-1][1] <= interval + SKEW_MS:
            runs[-1][1] = max(runs[-1][1], end)
        else:
            runs.append([start, end])
    return [(a, b) for a, b in runs]


def judge_gauge(series: pd.DataFrame, samples: list[tuple[float, float]], column: str, interval: float,
                runs: list[tuple[float, float]] = ()) -> None:
    """The comparison of :func:`test_lag_equals_kafka_gauge_away_from_changes`, for any series and samples.
    A copy-lag sample taken while a run of copies is under way may show the value the lag had when the
    run began (``runs``, :func:`copy_runs`), however long ago that was."""
    changes = change_times(series, column)
    start = ms(series.time.iloc[0])
    stable, settling, off = 0, 0, []
    for t, reported in samples:
        if t < start:
            continue
        near = any(abs(c - t) < interval + SKEW_MS for c in changes)
        if not near:
            stable += 1
            # Kafka's value at its last update, as modelled from the events (3.x refreshes the copy
            # lag after each successful copy, so failing copies leave it stale)
            stale = [value_at(series, v, t) for v in STALE_VARIANTS.get(column, ())]
            if reported != value_at(series, column, t) and reported not in stale:
                off.append((t, reported, value_at(series, column, t), "stable"))
        else:
            settling += 1
            lo = t - 2 * interval - SKEW_MS
            if column.startswith("upload"):
                lo = min([lo, *(start - interval - SKEW_MS for start, end in runs if start <= t <= end + interval)])
            held = values_between(series, column, lo, t + SKEW_MS)
            if reported > max(held):
                off.append((t, reported, sorted(held), "settling"))
    assert not off, f"(t, Kafka, computed, where) differ: {off[:10]}"
    assert stable >= 20, (stable, settling)


def dumped_segments(path: Path) -> dict[int, tuple[int, int]]:
    """Each segment of the topic's partition that Kafka's dump-log read, local or remote copy:
    base offset -> (records, bytes): the ``count`` of every batch line, and the file's size."""
    out: dict[int, tuple[int, int]] = {}
    for entry in dump_entries(path):
        name = Path(entry["file"]).name
        if not name.endswith(".log") or f"{TOPIC}-0" not in entry["file"]:
            continue
        records = sum(r["record_count"] for r in parse_kafka_dump(path / entry["dump"]) if r["kind"] == "batch")
        got = (records, (path / entry["file"]).stat().st_size)
        base = int(name.split("-", 1)[0].split(".", 1)[0])
        assert out.setdefault(base, got) == got, (entry["file"], got, out[base])  # both copies agree
    return out


def test_upload_lag_in_records_is_what_kafkas_dump_counts_in_the_waiting_segments(analysed):
    """Kafka has no records gauge. At every change of the computed upload lag, the segments waiting
    are the first ``upload_segments`` (Kafka's RemoteCopyLagSegments judges that count above) after
    the highest offset uploaded by then (COPY_SEGMENT_FINISHED): their bytes are the computed
    ``upload_bytes`` and their records, as Kafka's dump of the local or remote copy counts them, the
    computed ``upload_records``. Changes whose waiting segments no copy in the bundle holds any more
    (deleted by retention) are left out."""
    series, att = analysed["series"], analysed["attempts"]
    segments = dumped_segments(analysed["path"])
    bases = sorted(segments)
    uploaded = att[att.outcome == "uploaded"]
    checked, off = 0, []
    for row in series.itertuples(index=False):
        if pd.isna(row.upload_segments) or row.upload_segments <= 0:
            continue
        done = uploaded[uploaded.copy_finished <= row.time]
        after = int(done.end_offset.max()) + 1 if len(done) else int(row.log_start)
        waiting = [b for b in bases if b >= after][:int(row.upload_segments)]
        if len(waiting) < row.upload_segments or (waiting and waiting[0] != after):
            continue  # a waiting segment is in no copy the bundle holds
        records = sum(segments[b][0] for b in waiting)
        size = sum(segments[b][1] for b in waiting)
        if (records, size) != (row.upload_records, row.upload_bytes):
            off.append((str(row.time), waiting, (records, size), (row.upload_records, row.upload_bytes)))
        checked += 1
    assert not off, f"(time, waiting segments, Kafka's dump (records, bytes), computed) differ: {off[:5]}"
    assert checked >= 5, checked


def test_kafka_gauges_show_backlogs(analysed):
    """The scenario drove Kafka's gauges above zero, so the comparisons above are not all zeros."""
    jmx = analysed["jmx"]
    assert max(v for _t, v in jmx[f"RemoteCopyLagSegments[{TOPIC}]"]) >= 1
    assert max(v for _t, v in jmx[f"RemoteLogSizeBytes[{TOPIC}]"]) > 0


def test_remote_log_size_at_the_end(analysed):
    """The computed readable remote bytes at the end = the remote store's files; Kafka's last
    RemoteLogSizeBytes equals them on 4.x, while 3.x also counts the failed copies' segments
    (COPY_SEGMENT_STARTED never finished nor deleted), which the computed ``remote_listed_bytes`` holds."""
    last_t, last = analysed["jmx"][f"RemoteLogSizeBytes[{TOPIC}]"][-1]
    files = int(remote_store(analysed["path"]).size_bytes.sum())
    series = analysed["series"]
    assert value_at(series, "remote_bytes", last_t) == files
    att = analysed["attempts"]
    failed_bytes = int(att[(att.outcome == "failed") & att.delete_started.isna()].size_bytes.sum())
    if analysed["version"].startswith("3."):
        assert failed_bytes > 0 and last == files + failed_bytes
        assert value_at(series, "remote_listed_bytes", last_t) == last
    else:
        assert last == files


# -------------------------------------------------------------------------------- offset ranges

def test_log_start_and_end_match_get_offsets(analysed):
    """``kafka-get-offsets --time -2`` (log start, remote included) and ``-1`` (log end) at their capture times."""
    series, path = analysed["series"], analysed["path"]
    checked = 0
    for tool in analysed["manifest"]["tools"]:
        if tool["tool"] != "kafka-get-offsets":
            continue
        spec = tool["args"][tool["args"].index("--time") + 1]
        line = next(ln for ln in (path / tool["file"]).read_text().splitlines() if ln.startswith(f"{TOPIC}:0:"))
        offset = int(line.rsplit(":", 1)[1])
        column = {"-2": "log_start", "-1": "log_end"}[spec]
        assert value_at(series, column, tool["t_ms"]) == offset, (tool["t_ms"], spec, offset)
        checked += 1
    assert checked >= 4


def test_local_and_remote_ranges_cover_the_log(analysed):
    """At every moment, local + readable remote segments cover every offset from the log start to the log end."""
    series = analysed["series"]
    assert (series.gap_offsets == 0).all() and (series.gap_ranges == 0).all()
    for row in series.itertuples(index=False):
        if pd.isna(row.log_end) or row.log_end <= row.log_start:
            continue
        covered_from = row.local_start if pd.isna(row.remote_start) else min(row.remote_start, row.local_start
                                                                             if not pd.isna(row.local_start)
                                                                             else row.remote_start)
        assert covered_from <= row.log_start, row
        if not pd.isna(row.remote_end) and not pd.isna(row.local_start):
            assert row.local_start <= row.remote_end, row          # no hole between remote and local
        elif pd.isna(row.local_start):
            assert row.remote_end >= row.log_end, row


def test_a_hidden_range_is_reported_as_a_gap(analysed):
    """Remove one uploaded segment's events (as if lost): the history shows its offsets existed nowhere."""
    kin, settings, env = analysed["kernel"]
    attempts, local, leaders = backlog._split(kin)
    kept = attempts[(attempts.copy_finished.notna()) & attempts.delete_started.isna()].sort_values("start_offset")
    hidden = kept.iloc[len(kept) // 2]
    fewer = attempts[~((attempts.start_offset == hidden.start_offset) & (attempts.end_offset == hidden.end_offset))]
    full = model.build_history(attempts, local, settings, env, leaders)
    assert full.gap_start.isna().all()
    cut = model.build_history(fewer.reset_index(drop=True), local, settings, env, leaders)
    holes = cut[cut.gap_start.notna()]
    assert list(zip(holes.base_offset, holes.end_offset, holes.source, strict=True)) == [
        (int(hidden.start_offset), int(hidden.end_offset), "unknown")]
    cut_series = model.build_series(cut, fewer.reset_index(drop=True), settings, env, leaders)
    assert cut_series.gap_offsets.max() == hidden.end_offset - hidden.start_offset + 1


# ------------------------------------------------------------------------------------ findings

def test_findings_follow_the_phases(analysed):
    """No backlog in the healthy phase; an upload backlog from the burst; failed copies in the failing
    phase (as many as Kafka's error count); no gap; no unexplained gauge sample.

    The healthy phase rolls a segment every ~20 s and each is uploaded by the next task run. Kafka's
    lag gauge cannot judge the backlogs themselves: 4.x refreshes it when a copy task run ends, so a
    throttled run that uploads the whole burst leaves it at 0 throughout (measured), and 3.9.2 keeps
    it at 0 while copies fail."""
    f, ph = analysed["findings"], phases(analysed["manifest"])
    kinds = f.groupby("kind").size().to_dict()
    ups = f[f.kind == "upload_backlog"]
    healthy = ph["healthy"]
    assert not any(healthy[0] <= ms(t) <= healthy[1] for t in ups.start), ups.summary.to_list()
    burst = ph["burst"]
    assert any(burst[0] <= ms(t) <= burst[1] for t in ups.start), ups.summary.to_list()
    failed = f[f.kind == "copy_failed"]
    assert len(failed) == 1 and failed.figures.iloc[0]["attempts"] == analysed["jmx"]["RemoteCopyErrorsPerSec"][-1][1]
    assert "offset_gap" not in kinds and "gauge_unexplained" not in kinds and "copy_unfinished" not in kinds, kinds
    assert all(s.startswith("uploads on broker 2 fell ") for s in ups.summary)
