"""The MirrorMaker 2 analysis judged by real Kafka: the ``mm2`` and ``mm2_partial`` scenarios.

``mm2``: MirrorMaker 2 replicates ``orders`` (2 partitions) from cluster ``source`` (node 1) to
``target`` (node 2), is stopped for 25 s while the producer goes on, then restarted. ``mm2_partial``:
``orders`` and ``payments``; MirrorMaker is restarted with a topic filter leaving ``payments`` out
for 30 s, then with both again. Every few seconds the scenarios capture the source's end offsets
(``kafka-get-offsets.sh``) and the group ``app``'s committed offsets on both clusters
(``kafka-consumer-groups.sh --describe``); the manifest records when MirrorMaker was stopped and
replicated again.

The oracles: the tools' captures (parsed here from their text files), the manifest's events, the
MirrorMaker 2 Connect source offset records themselves (the offset of the last record replicated,
from which the task resumes at +1: ``MirrorSourceTask`` seeks to ``offset + 1``), and MirrorMaker's
JmxTool export.
"""

from __future__ import annotations

import bisect
import csv
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import workbench
from peer.scenario import built_on
from workbench.analysis import mirror

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: The releases building MirrorMaker 2's scenarios (``peer.scenario.DEFAULT_SETS``).
VERSIONS = built_on("mm2")
#: The scenarios capture every 5 s (their CAPTURE_EVERY_S).
CAPTURE_S = 5.0


def ms(ts) -> int:
    return int(pd.Timestamp(ts).timestamp() * 1000)


def stamp(t_ms: int) -> pd.Timestamp:
    return pd.Timestamp(t_ms, unit="ms")


class Run:
    """A scenario bundle, its manifest and the analysis of it."""

    def __init__(self, path: Path, spark, params=None, **window):
        self.path = path
        self.manifest = json.loads((path / "manifest.json").read_text())
        self.tables = workbench.load(workbench.open_bundle(path), spark)
        self.result = mirror.analyse(self.tables, params or {}, **window)
        self.timeline = self.result.timeline.toPandas()
        self.episodes = self.result.episodes.toPandas()
        self.outages = self.result.outages.toPandas()
        self.audit = self.result.audit.toPandas()
        self.findings = mirror.findings(self.result).toPandas()
        self.nodes = {n["id"]: n["cluster"] for n in self.manifest["nodes"]}
        self.bootstrap = {}  # cluster alias -> bootstrap address, from the tools' arguments
        for t in self.manifest["tools"]:
            if t["tool"] == "kafka-topics":
                self.bootstrap.setdefault("source", t["args"][1])

    def events(self, name: str, **match) -> list[dict]:
        return [e for e in self.manifest["events"] if e["event"] == name
                and all(e.get(k) == v for k, v in match.items())]

    def event_ms(self, name: str, **match) -> int:
        found = self.events(name, **match)
        assert len(found) == 1, (name, match, found)
        return found[0]["t_ms"]

    def captures(self, tool: str):
        """(start ms, end ms, args, text) of each capture of ``tool``; end = the next tool's start."""
        tools = self.manifest["tools"]
        out = []
        for i, t in enumerate(tools):
            if t["tool"] == tool and t.get("exit_code", 0) == 0:
                end = tools[i + 1]["t_ms"] if i + 1 < len(tools) else self.event_ms("cluster_stop")
                out.append((t["t_ms"], end, t["args"], (self.path / t["file"]).read_text()))
        return out

    def series(self, topic: str, partition: int) -> pd.DataFrame:
        t = self.timeline
        return t[(t.topic == topic) & (t.partition == partition)].sort_values("time").reset_index(drop=True)


def at(series: pd.DataFrame, t_ms: int, column: str):
    """The value of ``column`` in force at ``t_ms`` (the last row at or before it)."""
    rows = series[series.time <= stamp(t_ms)]
    return None if rows.empty else rows.iloc[-1][column]


def get_offsets(text: str) -> dict[tuple[str, int], int]:
    out = {}
    for line in text.splitlines():
        parts = line.strip().rsplit(":", 2)
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            out[(parts[0], int(parts[1]))] = int(parts[2])
    return out


def describe_offsets(text: str) -> dict[tuple[str, int], int]:
    out = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 4 and cols[2].isdigit() and cols[3].isdigit():
            out[(cols[1], int(cols[2]))] = int(cols[3])
    return out


def connect_commits(run: Run) -> pd.DataFrame:
    """MirrorMaker 2's Connect source offset records (each once), as stored."""
    m = run.tables.mirror
    rows = (m.where("kind = 'source_offset' and not coalesce(deleted, false)")
            .dropDuplicates(["cluster", "internal_topic", "internal_partition", "offset"])
            .select("topic", "partition", "timestamp", "offset", "upstream_offset").toPandas())
    return rows.sort_values(["timestamp", "offset"])


def committed_end(commits: pd.DataFrame, topic: str, partition: int, t_ms: int):
    rows = commits[(commits.topic == topic) & (commits.partition == partition) & (commits.timestamp <= stamp(t_ms))]
    return None if rows.empty else int(rows.iloc[-1].upstream_offset) + 1


@pytest.fixture(scope="module", params=VERSIONS)
def mm2(request, spark, kafka_bundle):
    return Run(Path(kafka_bundle("mm2", request.param)), spark)


@pytest.fixture(scope="module", params=built_on("mm2_partial"))
def partial(request, spark, kafka_bundle):
    return Run(Path(kafka_bundle("mm2_partial", request.param)), spark)


def _source_lag_checks(run: Run, topics: tuple[str, ...]):
    """Per source ``kafka-get-offsets`` capture and partition: the tool's end offset against ours."""
    commits = connect_commits(run)
    checked = []
    for start, end, args, text in run.captures("kafka-get-offsets"):
        if args[1] != run.bootstrap["source"]:
            continue
        for (topic, partition), tool_end in get_offsets(text).items():
            if topic not in topics:
                continue
            s = run.series(topic, partition)
            leo_lo, leo_hi = at(s, start, "log_end_offset"), at(s, end, "log_end_offset")
            # the tool read the log end somewhere while it ran
            assert leo_lo <= tool_end <= leo_hi, (topic, partition, start, leo_lo, tool_end, leo_hi)
            done = committed_end(commits, topic, partition, start)
            if done is None:
                continue
            assert at(s, start, "replicated_end") == done
            assert at(s, start, "lro_source") == "connect_offset"
            expected = tool_end - done
            ours = at(s, start, "lag_records")
            # ours is at the tool's start: records appended while it ran are the only difference
            assert 0 <= expected - ours <= leo_hi - leo_lo, (topic, partition, start, expected, ours)
            checked.append((start, topic, partition, expected, ours, leo_hi - leo_lo))
    return checked


def test_lag_at_each_capture_is_the_tools_log_end_minus_mm2s_committed_offset(mm2):
    checked = _source_lag_checks(mm2, ("orders",))
    stopped = mm2.event_ms("mm2_stop", run=1)
    resumed = mm2.event_ms("mm2_start", run=2)
    during = [c for c in checked if stopped <= c[0] < resumed]
    # the capture at the stop, and those of the outage that fit in its 25 s (a capture runs three
    # tools: on a loaded machine one capture spanned the whole outage)
    assert len({c[0] for c in during}) >= 1, during
    assert all(c[3] > 0 for c in during)                        # records waited on both partitions
    exact = [c for c in checked if c[5] == 0]                   # nothing appended while the tool ran
    assert len(exact) >= 4 and all(c[3] == c[4] for c in exact)
    after = [c for c in checked if c[0] > mm2.event_ms("mm2_replicating", run=2) + 2 * CAPTURE_S * 1000]
    assert after and all(c[3] == c[4] == 0 for c in after[-2:]), after     # caught up


def test_position_during_the_outage_is_what_the_target_holds(mm2):
    # the last count of the target's replica before MirrorMaker restarted (kafka-get-offsets on the target)
    restart = mm2.event_ms("mm2_start", run=2)
    on_target = [(s, get_offsets(text)) for s, _e, args, text in mm2.captures("kafka-get-offsets")
                 if args[1] != mm2.bootstrap["source"] and s < restart and s > mm2.event_ms("mm2_stop", run=1)]
    assert on_target
    t, ends = on_target[-1]
    assert sorted(ends) == [("source.orders", 0), ("source.orders", 1)]
    got = {("source." + topic, p): at(mm2.series(topic, p), t, "replicated_end") for topic, p in
           [("orders", 0), ("orders", 1)]}
    assert got == ends


def test_connect_offsets_trail_by_about_one_flush_while_mm2_replicates(mm2):
    """Connect commits MirrorMaker 2's source offsets every ``offset.flush.interval.ms`` (the scenario's
    mm2.properties: 2 s) while records move, so a backlog read from them overstates KIP-971's in-memory
    figure by what MirrorMaker 2 replicated since. ``connect_age_s`` is the time since the partition's
    last Connect record (the records themselves); while MirrorMaker 2 replicated the steadily written
    topic it stayed within one flush interval (plus the captures' slack for a loaded machine), and
    during the outage it grew past that."""
    (flow,) = mm2.result.flows
    flush_s = flow.number("offset.flush.interval.ms") / 1000
    assert flush_s == 2.0
    commits = connect_commits(mm2)
    slack = CAPTURE_S * 1000
    running = [(mm2.event_ms("mm2_replicating", run=1) + slack, mm2.event_ms("mm2_stopping", run=1)),
               (mm2.event_ms("mm2_replicating", run=2) + slack, mm2.event_ms("producer_stop"))]
    judged, longest = 0, 0.0
    for partition in (0, 1):
        mine = commits[(commits.topic == "orders") & (commits.partition == partition)]
        times = sorted(ms(t) for t in mine.timestamp)
        for row in mm2.series("orders", partition).itertuples():
            t = ms(row.time)
            i = bisect.bisect_right(times, t)
            if i == 0:
                assert pd.isna(row.connect_age_s), row
                continue
            assert row.connect_age_s == pytest.approx((t - times[i - 1]) / 1000, abs=0.002), row
            longest = max(longest, row.connect_age_s)
            if any(a <= t <= b for a, b in running):
                assert row.connect_age_s <= flush_s + CAPTURE_S, row
                judged += 1
    assert judged >= 20 and longest > flush_s + CAPTURE_S, (judged, longest)


def test_the_targets_count_lies_between_mm2s_acknowledged_and_next_committed_positions(mm2):
    """KIP-971 reads MirrorMaker 2's in-memory position: the last record the target acknowledged. The
    bundle holds what MM2 stored: offset syncs (each written once its record was acknowledged) and
    Connect's commits (each holding every record acknowledged before it). Kafka's own count on the
    target (``kafka-get-offsets`` on ``source.orders``, from the partition's first stored position on;
    each source record is there once: the first MirrorMaker 2, stopped with SIGTERM, committed all it
    had replicated, see the test above) lies between MM2's stored position when the tool started and
    the second commit written after the tool ended. Not the first: Connect snapshots the acknowledged
    offsets before it writes a commit, so a record acknowledged in between (moments, longer on a loaded
    machine: 2 records here once) is only in the next; commits run one at a time, so the second's
    snapshot follows the first's write, which follows the tool (``next_connect_end`` at that write).
    Where no second commit follows (the producer stopped and MirrorMaker 2 caught up, so Connect had
    nothing more to commit), the source's own count at its next capture bounds the target's instead: no
    record is on the target before it is on the source."""
    captures = mm2.captures("kafka-get-offsets")
    source_counts = [(start, get_offsets(text)) for start, _end, args, text in captures
                     if args[1] == mm2.bootstrap["source"]]
    judged = []
    for start, end, args, text in captures:
        if args[1] == mm2.bootstrap["source"]:
            continue
        for (topic, partition), target_end in get_offsets(text).items():
            s = mm2.series(topic.removeprefix("source."), partition)
            stored = [v for v in (at(s, start, "connect_end"), at(s, start, "synced_end")) if not pd.isna(v)]
            commits = s.time[(s.lro_source == "connect_offset") & (s.connect_age_s == 0) & (s.time > stamp(end))]
            following = at(s, ms(commits.iloc[0]), "next_connect_end") if len(commits) else None
            if pd.isna(following):
                later = [counts[(topic.removeprefix("source."), partition)] for t, counts in source_counts
                         if t >= end and (topic.removeprefix("source."), partition) in counts]
                following = later[0] if later else None
            if not stored or pd.isna(following):  # no position stored yet, or nothing bounds it from above
                continue
            assert max(stored) <= target_end <= following, (topic, partition, start, stored, target_end, following)
            judged.append((start, topic, partition, max(stored), target_end, following))
    assert len(judged) >= 4, judged
    assert any(lo < n for _s, _t, _p, lo, n, _f in judged), judged   # the stored position trailed the target


def test_outage_matches_the_manifest(mm2):
    stopping, replicating = mm2.event_ms("mm2_stopping", run=1), mm2.event_ms("mm2_replicating", run=2)
    restarted = mm2.event_ms("mm2_start", run=2)
    slack = CAPTURE_S * 1000

    def resumed(end) -> bool:
        # after the restart and before the scenario's poll (a tool run, seconds late under load) saw it
        return restarted - slack <= ms(end) <= replicating + slack

    assert len(mm2.outages) == 1, mm2.outages
    o = mm2.outages.iloc[0]
    assert abs(ms(o.start) - stopping) <= slack, (o.start, stamp(stopping))
    assert resumed(o.end), (o.end, stamp(restarted), stamp(replicating))
    assert not o.open and {"orders-0", "orders-1"} <= set(o.partitions)
    orders = mm2.episodes[mm2.episodes.topic == "orders"].sort_values("partition")
    assert list(orders.partition) == [0, 1] and set(orders.scope) == {"full"}
    for e in orders.itertuples():
        assert abs(ms(e.start) - stopping) <= slack
        assert resumed(e.end), (e.end, stamp(restarted), stamp(replicating))
        assert e.caught_up_at is not None and e.peak_records > 0 and e.peak_bytes > 0
        # the peak is the timeline's largest lag in the episode, and no smaller than any capture's
        s = mm2.series("orders", e.partition)
        inside = s[(s.time >= e.start) & (s.time <= e.caught_up_at)]
        assert e.peak_records == inside.lag_records.max()
    kinds = set(mm2.findings.kind)
    assert "mirror_outage" in kinds and "mirror_partial_outage" not in kinds


def test_translation_audit_agrees_with_consumer_groups_on_both_clusters(mm2):
    a = mm2.audit[mm2.audit.group == "app"]
    compared = {"target": 0, "source": 0}
    for start, end, _args, text in mm2.captures("kafka-consumer-groups"):
        for (topic, partition), offset in describe_offsets(text).items():
            side = "target" if topic.startswith("source.") else "source"
            column = f"{side}_committed"
            rows = a[(a.target_topic == ("source." + topic if side == "source" else topic))
                     & (a.partition == partition)].sort_values("time")
            in_force = rows[rows.time <= stamp(start)].tail(1)
            during = rows[(rows.time > stamp(start)) & (rows.time <= stamp(end))]
            values = set(pd.concat([in_force, during])[column].dropna().astype(int))
            assert offset in values, (side, topic, partition, stamp(start), offset, values)
            compared[side] += 1
    assert compared["target"] >= 10 and compared["source"] >= 10, compared


def test_reported_metrics_are_the_jmxtool_samples(mm2):
    got = mm2.result.metrics.where("format = 'jmxtool'").toPandas()
    with open(mm2.path / "metrics" / "0-mm2.csv", newline="") as f:
        rows = list(csv.reader(f))
    header, samples = rows[0], rows[1:]
    want = {}
    for i, column in enumerate(header[1:], start=1):
        mbean, attribute = column.rsplit(":", 1)
        props = dict(kv.split("=", 1) for kv in mbean.split(":", 1)[1].split(","))
        short = attribute
        if props["type"] == "MirrorSourceConnector" and short not in {
                "replication-latency-ms", "replication-latency-ms-max", "record-age-ms", "record-age-ms-max",
                "record-count"}:
            continue
        if props["type"] == "MirrorCheckpointConnector" and short not in {
                "checkpoint-latency-ms", "checkpoint-latency-ms-max"}:
            continue
        n = sum(1 for r in samples if i < len(r) and r[i].strip() not in ("", "NaN"))
        if n:
            want[(props["topic"], int(props["partition"]), short)] = n
    counts = got.groupby(["target_topic", "partition", "metric"]).size().to_dict()
    assert counts == want
    assert set(got[got.target_topic == "source.orders"].topic) == {"orders"}
    assert set(got.source_alias) == {"source"} and set(got.target_alias) == {"target"}


def test_partial_outage_is_told_from_a_full_one(partial):
    stopping = {n: partial.event_ms("mm2_stopping", run=n) for n in (1, 2)}
    started = {n: partial.event_ms("mm2_start", run=n) for n in (2, 3)}
    replicating = {n: partial.event_ms("mm2_replicating", run=n) for n in (2, 3)}
    slack = CAPTURE_S * 1000

    def resumed(end, n: int) -> bool:
        # replication resumed after run n started and before the scenario's poll saw it arrive
        # (the poll runs a tool: on a loaded machine it sees the first records seconds late)
        return started[n] - slack <= ms(end) <= replicating[n] + slack

    # each restart stopped the whole flow: one full outage per restart
    o = partial.outages.sort_values("start")
    assert len(o) == 2, o
    for row, n in zip(o.itertuples(), (1, 2), strict=True):
        assert abs(ms(row.start) - stopping[n]) <= slack and resumed(row.end, n + 1), row
    # orders stalled only during the restarts, and fully
    e = partial.episodes
    for row in e[e.topic == "orders"].itertuples():
        assert row.scope == "full"
        assert any(abs(ms(row.start) - stopping[n]) <= slack and resumed(row.end, n + 1) for n in (1, 2)), row
    # payments stalled from the first restart until the filter took it back (the restarted task may
    # still replicate a little of it before the connector applies the narrower filter), mostly alone
    for p in (0, 1):
        pay = e[(e.topic == "payments") & (e.partition == p)].sort_values("start")
        assert abs(ms(pay.start.iloc[0]) - stopping[1]) <= slack, pay
        assert resumed(pay.end.iloc[-1], 3), pay
        # a longer break in the stall is the restarted task replicating payments until the connector
        # applied the narrower filter: it starts once run 2 started and ends by the time the scenario
        # saw the narrowed filter replicate (6.9 s on a loaded machine)
        gaps = [(ms(a), ms(b)) for a, b in zip(pay.end.iloc[:-1], pay.start.iloc[1:], strict=True)]
        assert all(b - a <= slack or started[2] - slack <= a <= b <= replicating[2] + slack for a, b in gaps), \
            (gaps, started[2], replicating[2])
        partial_rows = pay[pay.scope == "partial"]
        assert len(partial_rows) == 1 and partial_rows.seconds.iloc[0] >= 25, pay   # PAUSE_S is 30 s
    findings = partial.findings
    assert set(findings[findings.kind == "mirror_partial_outage"].subject) == {"payments-0", "payments-1"}
    assert (findings.kind == "mirror_outage").sum() == 2
    _source_lag_checks(partial, ("orders", "payments"))


@pytest.mark.full   # the analysis again, on a window of the mm2 bundle the module's fixture analyses whole
@pytest.mark.parametrize("version", VERSIONS)
def test_healthy_window_reports_no_episode(spark, kafka_bundle, version):
    path = Path(kafka_bundle("mm2", version))
    manifest = json.loads((path / "manifest.json").read_text())
    ev = {(e["event"], e.get("run")): e["t_ms"] for e in manifest["events"]}
    start, end = stamp(ev[("mm2_replicating", 1)] + 10_000), stamp(ev[("mm2_stopping", 1)])
    run = Run(path, spark, start=start, end=end)
    assert run.episodes.empty and run.outages.empty, (run.episodes, run.outages)
    assert not {"mirror_outage", "mirror_partial_outage"} & set(run.findings.kind)
    orders = run.timeline[run.timeline.topic == "orders"]
    assert orders.time.min() >= start and orders.time.max() <= end and orders.lag_records.notna().all()


@pytest.mark.full   # the analysis again, on the source cluster's part of the mm2 bundle
@pytest.mark.parametrize("version", VERSIONS)
def test_source_cluster_alone_gives_log_end_figures_and_says_what_is_missing(spark, kafka_bundle, tmp_path, version):
    path = Path(kafka_bundle("mm2", version))
    manifest = json.loads((path / "manifest.json").read_text())
    alone = tmp_path / "source-only"
    alone.mkdir()
    shutil.copytree(path / "nodes" / "1", alone / "nodes" / "1")
    shutil.copy(path / "mm2.properties", alone / "mm2.properties")
    manifest["nodes"] = [n for n in manifest["nodes"] if n["id"] == 1]
    manifest["tools"], manifest["metrics"], manifest["dumps"] = [], [], []
    (alone / "manifest.json").write_text(json.dumps(manifest))
    run = Run(alone, spark)
    assert run.result.clusters == {1: "source"}
    orders = run.timeline[run.timeline.topic == "orders"]
    assert sorted(orders.partition.unique()) == [0, 1]
    # the log end offsets are the source's: at the last source capture of the full bundle they agree
    full = Run(path, spark)
    for p in (0, 1):
        a, b = run.series("orders", p), full.series("orders", p)
        assert a.log_end_offset.max() == b.log_end_offset.max()
    known = orders[orders.replicated_end.notna()]
    assert set(known.lro_source) == {"offset_sync"}                 # the Connect offsets are on the target
    missing = " ".join(run.result.missing)
    assert "target cluster target" in missing and "Connect source offsets" in missing
    assert "mirror_inputs_missing" in set(run.findings.kind)
