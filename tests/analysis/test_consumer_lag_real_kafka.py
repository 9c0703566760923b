"""Consumer lag judged by real Kafka: consumer-groups --describe, the dump tool, JMX and get-offsets.

The ``consumer_lag`` scenario (``peer/scenarios/consumer_lag.py``) produces in runs to five topics (one
per codec) and a topic with a 5 s retention, while groups consume at different speeds; after every run
each consumer JVM is paused and ``kafka-consumer-groups --describe --all-groups`` is captured, so the
offsets and log ends it prints hold for the whole capture. The oracles:

* records lag: the ``LOG-END-OFFSET``, ``CURRENT-OFFSET`` and ``LAG`` columns of every capture, every group
  and partition (the commits strictly before the capture's start);
* bytes and time lag: Kafka's own dump of every segment (``dumps/…log.txt``, ``kafka-dump-log.sh``):
  the batch positions, sizes and timestamps it prints, and the segment files' sizes;
* the log end at past moments: the broker's ``LogEndOffset`` JMX samples (1 s);
* retention loss: the group's ``CURRENT-OFFSET`` and ``kafka-get-offsets --time -2`` (log start) captured
  once retention was switched off;
* expired offsets: the groups the final ``--describe --all-groups`` no longer lists.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import functions as F

import workbench
from peer.scenario import built_on
from tests.kafka_bundles import answered_by, expiring, lag_beside_captures
from tests.spark.internal_topics import dump_of, dumped_records, segments, topic_partition
from workbench.analysis import consumer_lag as cl
from workbench.analysis.consumer_lag import burrow
from workbench.formats.dumptext_parse import parse_kafka_dump

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: JmxTool stamps a sample when its poll starts, and a batch's CreateTime is the producer's clock, taken
#: before the broker appended it (a few ms on an idle machine; 2.3 s in a CI build at a load of 15, the
#: batch waiting in the producer): LogEndOffset samples this close to a change of the log end are not
#: compared (the production runs leave quiet stretches of 12 s and more, which are).
SKEW_MS = 5000
LAG_TOPICS = ("lag-none", "lag-gzip", "lag-snappy", "lag-lz4", "lag-zstd", "lag-retention")
#: Committed to through transactions (group ``txn-app``): COMMIT and ABORT markers in the log.
TXN_TOPIC = "txn-orders"
#: Every group of the scenario.
GROUPS = ("caught-up", "slow", "stopped", "behind-retention", "txn-app", "assigned")
#: How long before a capture a producer may have stamped a batch the leader had not appended when
#: the tool read the log end (a transactional batch waits for ``AddPartitionsToTxn``).
APPEND_SLACK_MS = 5000
#: Burrow as configured to judge the ``stopped`` group: the default ring (10 polls) of log ends fetched
#: every 2 s (``offset-refresh``), so that it looks back 18 s, well within the minute the scenario keeps
#: the group's offsets after it left.
STOP_BURROW = {"burrow_intervals": 10, "burrow_refresh_s": 2}


@pytest.fixture(scope="module", params=built_on("consumer_lag"))
def bundle(request, spark, kafka_bundle):
    path = Path(kafka_bundle("consumer_lag", request.param))
    tables = workbench.load(workbench.open_bundle(path), spark)
    return path, json.loads((path / "manifest.json").read_text()), tables


@pytest.fixture(scope="module")
def lags(bundle):
    _path, _manifest, tables = bundle
    return cl.lags_for(tables).toPandas()


@pytest.fixture(scope="module")
def dumped(bundle):
    """Per (topic, partition): Kafka's dump of every batch, in offset order, with each segment's file size."""
    path, _manifest, _tables = bundle
    out: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for seg in segments(path, lambda t: t in (*LAG_TOPICS, TXN_TOPIC)):
        tp = topic_partition(seg)
        base = int(seg.stem)
        for row in parse_kafka_dump(dump_of(path, seg)):
            assert row["kind"] != "problem", row
            if row["kind"] == "batch":
                out[tp].append({**row, "segment": base, "segment_size": seg.stat().st_size})
    for rows in out.values():
        rows.sort(key=lambda r: r["base_offset"])
    return out


def test_bundle_reads_without_problems(bundle):
    """Every file reads to its end. The bundle's problems hold Kafka's own answers and nothing else:
    the scenario describes the group whose offsets it let expire, and the tool says it is gone. Any
    other group without members for longer than ``offsets.retention.minutes`` (``txn-app``, whose
    offsets only the transactions commit; the groups whose consumers had ended) may expire while
    the scenario waits for that one: the final ``--describe --all-groups`` may then say so too (3.9
    lists a group and finds it gone when it describes it)."""
    *_, tables = bundle
    problems = tables.problems.collect()
    assert all(p.kind == "tool_message" and "kafka-consumer-groups" in p.path for p in problems), problems
    gone = [re.search(r"Consumer group '([^']+)' does not exist|Group (\S+) not found"
                      r"|Group (\S+) is not a consumer group", p.detail)    # 4.3: gone between list and describe
            for p in problems]
    assert all(gone), problems
    named = {m.group(1) or m.group(2) or m.group(3) for m in gone}
    assert "stopped" in named and named <= set(GROUPS), problems


def test_every_codec_and_several_segments_are_covered(lags, dumped):
    codecs = {b["compression"] for rows in dumped.values() for b in rows}
    assert codecs == {"none", "gzip", "snappy", "lz4", "zstd"}
    segs = {tp: len({b["segment"] for b in rows}) for tp, rows in dumped.items()}
    assert all(n >= 3 for tp, n in segs.items() if tp[0] in LAG_TOPICS[:5]), segs
    # commits whose committed batch and log end lie in different segments
    crossing = 0
    for row in lags.itertuples():
        rows = dumped.get((row.topic, row.partition), [])
        held = _holder(rows, row.committed_offset)
        end = _holder(rows, row.log_end_offset - 1)
        crossing += held is not None and end is not None and held["segment"] != end["segment"]
    assert crossing >= 20, crossing


def _utc(t) -> F.Column:
    return F.lit(pd.Timestamp(t).tz_localize("UTC").to_pydatetime())  # the session's time zone is UTC


def _removals(tables) -> pd.DataFrame:
    """When the coordinator removed offsets: ``group, removed_time`` (naive UTC, as the captures' times)."""
    return cl.removed_offsets(tables.offsets).select("group", "removed_time").toPandas()


def test_records_lag_equals_kafka_consumer_groups_at_every_capture(bundle):
    """Whole frame: every (capture, group, topic, partition) the tool printed with an offset, and nothing more.
    A group whose offsets the coordinator removed while the tool ran may be printed or not: if printed, the
    computed rows must equal Kafka's."""
    path, manifest, tables = bundle
    mine, want = lag_beside_captures(tables, path, manifest)
    # not vacuous: several captures, every group (on a loaded machine the groups joined 16-19 s after
    # they started, so the first captures may show none of them)
    assert want.path.nunique() >= 5 and want.group.nunique() >= 4
    mine = _with_unappended_batches_allowed(tables, path, manifest, mine, want)
    pd.testing.assert_frame_equal(mine, want, check_dtype=False)


def _with_unappended_batches_allowed(tables, path, manifest, mine, want):
    """``mine`` with the log end (and lag) the tool printed where the difference is one Kafka allows.

    The computed log end at a capture counts every batch stamped before it, but a producer stamps a
    data batch when it creates its records and the leader appends it later (a transactional batch
    after ``AddPartitionsToTxn``; a loaded CI build: 1.5 s). Kafka's answer may therefore be a
    log end the partition really had just before: a batch boundary the computed growth passed
    before the tool answered, followed only by data batches stamped at most :data:`APPEND_SLACK_MS`
    before the tool's request and no control batch (a marker is stamped by the leader as it is
    appended, so the log held it by its stamp). Any other difference stays a failure."""
    from tests.kafka_bundles import answered_by

    growth = cl.growth_for(tables).select("topic", "partition", "end_offset", "reached", "is_control").toPandas()
    done = answered_by(path, manifest)
    asked = {Path(e["file"]).name: pd.Timestamp(e["t_ms"], unit="ms") for e in manifest["tools"]}
    mine = mine.copy()
    for i in mine.index[(mine.log_end_offset != want.log_end_offset) & (mine.current_offset == want.current_offset)]:
        row, kafka = mine.loc[i], want.loc[i]
        name = Path(row.path).name
        part = growth[(growth.topic == row.topic) & (growth.partition == row.partition)].sort_values("end_offset")
        held = part[part.end_offset == kafka.log_end_offset]
        after = part[(part.end_offset > kafka.log_end_offset) & (part.end_offset <= row.log_end_offset)]
        if (len(held) and held.reached.min() <= done[name] and len(after) and not after.is_control.any()
                and after.reached.min() >= asked[name] - pd.Timedelta(milliseconds=APPEND_SLACK_MS)):
            mine.loc[i, ["log_end_offset", "lag"]] = [kafka.log_end_offset, kafka.lag]
    return mine


def test_an_assign_mode_committer_is_judged_as_kafka_lists_it(bundle):
    """``assigned`` commits from a consumer that assigned its partitions itself (as Flink and Spark do):
    the coordinator keeps its offset commits and no group record of it (the ``groups`` table; once the
    offsets expire, ``offsets.retention.minutes`` after the last commit, the coordinator may write a
    tombstone for the group key, which says there is no group), and the tool lists it with no member.
    Its lag at every capture equals the tool's, and Burrow rates it as any group."""
    path, manifest, tables = bundle

    def records(table, group: str) -> int:
        return table.where(F.col("group") == group).count()

    live_groups = tables.groups.where(~F.col("deleted"))
    assert records(tables.offsets, "assigned") > 0 and records(live_groups, "assigned") == 0
    assert records(tables.groups, "slow") > 0  # a subscribing group's records are read
    mine, want = lag_beside_captures(tables, path, manifest)
    mine, want = (f[f.group == "assigned"].reset_index(drop=True) for f in (mine, want))
    assert want.path.nunique() >= 5 and set(want.topic) == {"lag-none"} and set(want.partition) == {0, 1}
    pd.testing.assert_frame_equal(mine, want, check_dtype=False)
    status = cl.group_status_for(tables, {}).where(F.col("group") == "assigned").count()
    assert status > 0


def _holder(rows: list[dict], offset: int) -> dict | None:
    """The dumped batch holding ``offset`` (the first whose last offset is at or after it)."""
    for b in rows:
        if b["last_offset"] >= offset:
            return b
    return None


def _bytes_between(rows: list[dict], start: dict, end: dict) -> int:
    """Bytes of log from the start of batch ``start`` to the end of batch ``end``, from positions and file sizes."""
    if start["segment"] == end["segment"]:
        return end["position"] + end["size"] - start["position"]
    sizes = {b["segment"]: b["segment_size"] for b in rows}
    middle = sum(size for seg, size in sizes.items() if start["segment"] < seg < end["segment"])
    return sizes[start["segment"]] - start["position"] + middle + end["position"] + end["size"]


def test_bytes_and_time_lag_equal_kafka_dump_for_every_commit(lags, dumped):
    """Whole frame over every commit: bytes between the two positions in the dump, and the two timestamps.

    The log end at each commit is the analysis's own (judged against the tool and JMX in the other tests);
    given it, the bytes and times come from Kafka's dump alone. Where the dump lacks the committed batch
    (deleted by retention before the bundle was taken), both are unknown.
    """
    want, seen_first = [], set()
    for row in lags.itertuples():
        rows = dumped.get((row.topic, row.partition), [])
        if row.committed_offset >= row.log_end_offset:
            want.append((0, 0))
            continue
        held = _holder(rows, row.committed_offset)
        end = _holder(rows, row.log_end_offset - 1)
        if held is None or end is None or rows[0]["base_offset"] > row.committed_offset:
            want.append((None, None))
            continue
        seen_first.add(row.topic)
        newest = max(b["max_timestamp"] for b in rows if b["base_offset"] <= end["base_offset"])
        want.append((_bytes_between(rows, held, end), newest - held["max_timestamp"]))
    expected = pd.DataFrame(want, columns=["bytes_lag", "time_lag_ms"], dtype="Int64")
    got = lags[["bytes_lag", "time_lag_ms"]].astype("Int64")
    mismatch = (expected.fillna(-1) != got.fillna(-1)).any(axis=1)
    assert not mismatch.any(), lags[mismatch].assign(want_bytes=expected.bytes_lag[mismatch],
                                                     want_time=expected.time_lag_ms[mismatch]).head(20).to_string()
    assert (got.bytes_lag > 0).sum() >= 50 and seen_first >= set(LAG_TOPICS[:5])


def test_log_end_at_past_moments_equals_the_brokers_log_end_offset_metric(bundle):
    _path, _manifest, tables = bundle
    samples = cl.log_offsets_from_metrics(tables.metrics, "end").toPandas()
    samples = samples[samples.topic.isin(LAG_TOPICS[:5])]
    growth = cl.growth_for(tables)
    changes = growth.select("topic", "partition", "reached").toPandas()
    change_ms = {k: sorted(int(t.timestamp() * 1000) for t in g.reached)
                 for k, g in changes.groupby(["topic", "partition"])}
    quiet = [r for r in samples.itertuples()
             if all(abs(c - int(r.time.timestamp() * 1000)) > SKEW_MS for c in change_ms[(r.topic, r.partition)])]
    instants = tables.spark.createDataFrame(
        [(r.topic, int(r.partition), r.time.to_pydatetime(), int(r.value)) for r in quiet],
        "topic string, partition int, time timestamp, jmx long")
    from workbench.analysis.logs import log_end_at

    got = log_end_at(growth, instants).toPandas()
    got["log_end_offset"] = got.log_end_offset.fillna(0).astype(int)   # before the first batch: 0
    bad = got[got.log_end_offset != got.jmx]
    assert bad.empty, bad.head(20).to_string()
    # how many samples are quiet depends on how long the scenario's waits took: every partition of
    # the five topics must have one after its first batch, whatever the pace of the run
    nonzero = got[got.jmx > 0].groupby(["topic", "partition"]).size()
    assert len(got) >= 50 and len(nonzero) == 2 * len(LAG_TOPICS[:5]), nonzero.to_string()


def _tool_text(path: Path, manifest: dict, tool: str, *needles: str) -> list[tuple[dict, str]]:
    out = []
    for t in manifest["tools"]:
        if t["tool"] == tool and all(n in t["args"] for n in needles):
            out.append((t, (path / t["file"]).read_text()))
    return out


def test_group_behind_retention_is_reported_with_the_records_lost(bundle):
    """The group read the first run and left; retention then deleted past its offset.

    Its committed offset: the last ``--describe --all-groups`` capture listing it before retention was
    switched off (it had left: nothing commits for it after). Its offsets expire a minute after it left
    (``offsets.retention.minutes=1``), so the ``--describe --group`` taken after the switch may no longer
    find it. The log start: ``kafka-get-offsets --time -2`` once retention was off. The records it never
    read are the difference.
    """
    path, manifest, tables = bundle
    frozen = next(e["t_ms"] for e in manifest["events"] if e["event"] == "retention_frozen")
    shown = tables.tool_group_offsets.toPandas()
    listed = shown[(shown.group == "behind-retention") & shown.current_offset.notna()
                   & shown.args.map(lambda a: "--all-groups" in a)
                   & (shown.captured < pd.Timestamp(frozen, unit="ms"))]
    assert not listed.empty
    committed = int(listed.sort_values("captured").current_offset.iloc[-1])
    starts = [(t, text) for t, text in _tool_text(path, manifest, "kafka-get-offsets", "lag-retention", "-2")
              if t["t_ms"] < frozen]
    assert starts
    from workbench.formats.tooltext import parse_get_offsets

    (start,) = [int(p["offset"]) for p in parse_get_offsets(starts[-1][1])]
    assert start > committed, (start, committed)
    loss = cl.loss_for(tables).toPandas()
    # the certain losses, whole frame; a group that kept reading while retention caught up with it may or
    # may not have read the records first (its rows are upper bounds, never certain)
    assert set(loss[~loss.exact].kind) <= {"possibly_skipped"}
    got = loss[loss.exact][["group", "topic", "partition", "committed_offset", "log_start_offset", "records_lost"]]
    want = pd.DataFrame([("behind-retention", "lag-retention", 0, committed, start, start - committed)],
                        columns=got.columns)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)
    found = cl.findings(cl.lags_for(tables), loss=cl.loss_for(tables)).toPandas()
    lost = found[(found.kind == "retention_loss") & (found.severity == "critical")]
    assert list(lost.subject) == ["behind-retention"] and list(lost.severity) == ["critical"]
    assert lost.figures.iloc[0]["records_lost"] == start - committed
    assert f"lost {start - committed} records of lag-retention-0" in lost.summary.iloc[0]


def test_groups_whose_offsets_expired_are_those_kafka_no_longer_lists(bundle):
    path, manifest, tables = bundle
    shown = tables.tool_group_offsets.toPandas()
    all_groups = shown[shown.args.map(lambda a: "--all-groups" in a) & shown.current_offset.notna()]
    last = all_groups.captured.max()
    before = set(all_groups[all_groups.captured < last].group)
    gone = before - set(all_groups[all_groups.captured == last].group)
    assert "stopped" in gone
    partitions = {g: all_groups[all_groups.group == g][["topic", "partition"]].drop_duplicates().shape[0]
                  for g in gone}
    # as of the last capture: a group whose offsets expire after it (before the bundle was taken) is still
    # listed; one whose offsets expire while the tool runs may be listed or not
    done = answered_by(path, manifest)[Path(all_groups[all_groups.captured == last].path.iloc[0]).name]

    def removed_by(t) -> pd.DataFrame:
        removed = cl.removed_groups(
            cl.commits_for(tables).where(F.col("commit_time") <= _utc(t)),
            cl.removed_offsets(tables.offsets).where(F.col("removed_time") <= _utc(t))).toPandas()
        return removed[removed.all_removed][["group", "partitions", "removed_partitions"]]

    surely, maybe = removed_by(last), removed_by(done)
    assert set(surely.group) <= gone, (set(surely.group), gone)
    got = maybe[maybe.group.isin(gone)]
    want = pd.DataFrame([(g, n, n) for g, n in sorted(partitions.items())], columns=got.columns)
    pd.testing.assert_frame_equal(got.sort_values("group").reset_index(drop=True), want, check_dtype=False)
    assert set(maybe.group) - gone <= expiring(_removals(tables), last, done)


def test_histogram_buckets_hold_every_commit_on_power_of_two_bounds(bundle, lags):
    _path, _manifest, tables = bundle
    hist = cl.lag_histogram(cl.lags_for(tables), metric="bytes", by=("broker",)).toPandas()
    counts: dict[tuple[int, int], int] = defaultdict(int)
    for broker, value in zip(lags.broker, lags.bytes_lag, strict=True):
        if pd.isna(value):
            continue
        k = -1 if value <= 0 else next(k for k in range(64) if value <= 2 ** k)
        counts[(int(broker), k)] += 1
    got = {(int(r.broker), int(r.bucket)): int(r.count) for r in hist.itertuples()}
    assert got == dict(counts)
    for r in hist.itertuples():
        assert (r.lower, r.upper) == ((0.0, 0.0) if r.bucket < 0 else
                                      (0.0 if r.bucket == 0 else 2.0 ** (r.bucket - 1), 2.0 ** r.bucket))


def test_lag_summary_percentiles_follow_yammer(bundle, lags):
    _path, _manifest, tables = bundle
    got = cl.lag_summary(cl.lags_for(tables), metric="time", by=()).toPandas().iloc[0]
    values = sorted(v for v in lags.time_lag_ms if not pd.isna(v))
    n = len(values)
    for name, q in cl.YAMMER_PERCENTILES:
        pos = q * (n + 1)
        if pos < 1:
            want = values[0]
        elif pos >= n:
            want = values[-1]
        else:
            lo = values[int(math.floor(pos)) - 1]
            hi = values[int(math.floor(pos))]
            want = lo + (pos - math.floor(pos)) * (hi - lo)
        assert got[name] == pytest.approx(want), name
    assert got["count"] == n and got["max"] == values[-1]


def test_area_is_registered_with_findings_and_key_figures(bundle):
    _path, _manifest, tables = bundle
    from workbench.analysis.findings import areas

    area = areas()["consumer_lag"]
    assert (area.order, area.title) == (3, "Consumer lag in records, bytes and time")
    found = area.findings_for(tables, {}).toPandas()
    assert {"lag", "retention_loss", "offsets_removed"} <= set(found.kind)
    slow = found[(found.kind == "lag") & (found.subject == "slow")]
    assert len(slow) == 1 and "behind the tail on broker 2" in slow.summary.iloc[0]
    figures = area.key_figures_for(tables, {})
    lags = cl.lags_for(tables).toPandas()
    assert figures["commits"] == len(lags) and figures["max_bytes_lag"] == lags.bytes_lag.max()
    frames = area.frames_for(tables, {})
    assert {"histogram_bytes", "histogram_time", "page_cache", "top_partitions", "series"} <= set(frames)


def test_burrow_rates_the_stopped_group_stop_until_its_offsets_are_removed(bundle, lags, dumped):
    """Burrow's STOP (``checkIfOffsetsStopped``) on a real group that stopped committing while its logs
    grew: the ``stopped`` group is evaluated between and after its commits, up to the removal of its
    offsets or the last growth of its partitions' logs (Kafka's dump: the largest batch timestamp),
    whichever comes first, and rated STOP after its last commit (before it only where its commits paused
    longer than its window spans); the ``caught-up`` group, which never stopped,
    is STOP only while the scenario had its consumer paused (SIGSTOP for a capture) with records left.

    The stopped group is judged by a Burrow polling the log ends every 2 s (:data:`STOP_BURROW`): with the
    default 10 s its ring of log ends looks back 90 s, longer than the scenario keeps the group's offsets
    (``offsets.retention.minutes=1``), so the ring still holds a log end at or below them when they are
    removed and Burrow keeps the group OK (``checkIfRecentLagZero``)."""
    _path, manifest, tables = bundle
    status = cl.group_status_for(tables, {}).toPandas()
    assert set(status.group) == set(GROUPS)
    judged = cl.group_status_for(tables, STOP_BURROW).toPandas()
    stopped = judged[judged.group == "stopped"].sort_values("time")
    mine = lags[lags.group == "stopped"]
    last_commit = mine.commit_time.max()
    removed = (cl.removed_offsets(tables.offsets).where(F.col("group") == "stopped")
               .agg(F.min("removed_time")).first()[0])
    assert removed is not None, "the scenario waits for the stopped group's offsets to expire"
    stop = stopped[stopped.stop > 0]
    assert (stop.time > last_commit).sum() >= 2 and (stop.time <= removed).all(), stopped
    assert (stop.status == "ERR").all() and (stop.worst == "STOP").all()
    # before its last commit, only where its commits paused for longer than its window of commits
    # spans (rule 3): a consumer on a loaded machine may not commit for seconds (a CI build: 7.3 s
    # after three commits 2.7 s apart, then it went on)
    commits = sorted(mine.commit_time.unique())
    for row in stop[stop.time <= last_commit].itertuples(index=False):
        held = [c for c in commits if c <= row.time][-int(row.min_window):]
        assert held and row.time - held[-1] > held[-1] - held[0], (row, held)
    # evaluated after its last commit every Burrow refresh up to the removal or the logs' last
    # growth (a CI build's production ended 15 s before the removal), not only at commits
    grown = max(b["max_timestamp"] for tp in {(t, p) for t, p in zip(mine.topic, mine.partition, strict=True)}
                for b in dumped[tp])
    until = min(pd.Timestamp(removed), pd.Timestamp(grown, unit="ms"))
    after = stopped[stopped.time > last_commit]
    refresh = pd.Timedelta(seconds=STOP_BURROW["burrow_refresh_s"])
    assert after.time.max() > until - refresh and after.time.max() <= until, (until, removed)
    assert after.time.diff().dropna().max() <= refresh
    paused, since = [], None
    for e in manifest["events"]:
        if e["event"] == "consumers_paused" and "consumer-caught-up" in e["consumers"]:
            since = pd.Timestamp(e["t_ms"], unit="ms")
        elif e["event"] == "consumers_resumed" and since is not None:
            paused.append((since, pd.Timestamp(e["t_ms"], unit="ms")))
            since = None
    caught_up = status[(status.group == "caught-up") & (status.stop > 0)]
    assert all(any(a < t <= b for a, b in paused) for t in caught_up.time), (caught_up.time.tolist(), paused)


def test_burrow_partition_runs_are_each_partitions_statuses_in_turn_and_the_view_keeps_the_troubled(bundle):
    """What the view draws per partition: each partition's Burrow statuses at the evaluated instants,
    cut into runs of one status, equal to the same cut made here from the statuses themselves; the
    ``stopped`` group's partitions end in STOP, the ``slow`` group has a STALL run, and the view's
    frame keeps both groups' troubled partitions (Burrow polling every 2 s, as in the test above)."""
    _path, _manifest, tables = bundle
    status = cl.partition_status_for(tables, STOP_BURROW).toPandas()
    status = status[status.status.notna()].sort_values(["group", "topic", "partition", "time"])
    rows = []
    for (group, topic, part), one in status.groupby(["group", "topic", "partition"], sort=False):
        cut = (one.status != one.status.shift()).cumsum()
        runs = [(r.status.iloc[0], r.time.min(), len(r), r.current_lag.max()) for _, r in one.groupby(cut)]
        ends = [start for _s, start, _n, _l in runs[1:]] + [one.time.max()]
        rows += [(group, topic, int(part), st, start, end, n, lag)
                 for (st, start, n, lag), end in zip(runs, ends, strict=True)]
    want = pd.DataFrame(rows, columns=list(cl.RUN_COLUMNS))
    got = cl.status_runs(cl.partition_status_for(tables, STOP_BURROW)).toPandas()
    key = ["group", "topic", "partition", "start"]
    pd.testing.assert_frame_equal(got.sort_values(key).reset_index(drop=True),
                                  want.sort_values(key).reset_index(drop=True), check_dtype=False)
    last = got.sort_values("start").groupby(["group", "topic", "partition"]).last()
    assert (last.loc["stopped"].status == "STOP").all(), last.loc["stopped"]
    assert (got[got.group == "slow"].status == "STALL").any()
    from workbench.analysis.consumer_lag import area as lag_area

    shown = lag_area.view_frames(lag_area.analyse(tables, STOP_BURROW))["burrow_partitions"].toPandas()
    troubled = {(g, t, p) for g, t, p, s in zip(got.group, got.topic, got.partition, got.status, strict=True)
                if s != "OK" and g in ("stopped", "slow")}
    assert troubled and troubled <= set(zip(shown.group, shown.topic, shown.partition, strict=True))


def _dumped_commits(path: Path, group: str) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """Per (topic, partition): ``(commitTimestamp ms, offset)`` of each of ``group``'s commits, from Kafka's
    dump of ``__consumer_offsets`` (``--offsets-decoder``), in commit order."""
    out: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for seg in segments(path, lambda t: t == "__consumer_offsets"):
        for _batch, rec in dumped_records(dump_of(path, seg)):
            key = json.loads(rec["key"]) if rec.get("key") else None
            if not key or key["type"] != "1" or key["data"]["group"] != group or rec["payload"] == "<DELETE>":
                continue
            value = json.loads(rec["payload"])["data"]
            out[(key["data"]["topic"], key["data"]["partition"])].append((value["commitTimestamp"], value["offset"]))
    return {tp: sorted(commits) for tp, commits in out.items()}


def test_burrow_rates_the_slow_group_stall_where_kafkas_dumps_show_its_offsets_standing(bundle, lags, dumped):
    """Burrow's STALL (``checkIfOffsetsStalled``) on a real group too slow for its partitions: the ``slow``
    consumer works through one partition's fetched records at a time and meanwhile commits the unchanged
    offsets of the others. Every STALL rated right after one of its commits is held against Kafka's own
    dumps: the window's commits of that partition (``__consumer_offsets``, ``--offsets-decoder``) all carry
    the one offset, and the newest record the computed lag counts (the data segment's dump) was written
    before the evaluation. Full windows (Burrow's 10 commits) are among them, and the group is ERR,
    STALL its worst partition, at each of those instants."""
    path, _manifest, tables = bundle
    status = cl.burrow_status(cl.lags_for(tables), cl.growth_for(tables)).toPandas()
    stall = status[(status.group == "slow") & (status.status == "STALL")]
    assert len(stall) and (stall.window == burrow.DEFAULT_INTERVALS).any(), stall.window.value_counts()
    commits = _dumped_commits(path, "slow")
    for row in stall.itertuples():
        at_ms = int(pd.Timestamp(row.time).value // 1_000_000)
        seen = [offset for ts, offset in commits[(row.topic, row.partition)] if ts <= at_ms]
        assert len(seen) >= row.window and set(seen[-row.window:]) == {row.last_offset}, (row, seen[-12:])
        newest = _holder(dumped[(row.topic, row.partition)], row.last_offset + row.current_lag - 1)
        assert row.current_lag > 0 and newest is not None and newest["max_timestamp"] <= at_ms, (row, newest)
    groups = cl.group_status_for(tables, {}).toPandas().set_index(["group", "time"])
    at = groups.loc[[("slow", t) for t in stall.time.unique()]]
    assert (at.status == "ERR").all() and (at.worst == "STALL").all() and (at.stall >= 1).all(), at
