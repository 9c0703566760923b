"""The quorum analysis judged by real Kafka: the scenario's manifest, its quorum tool output and JMX.

The ``quorum`` scenario runs a real KRaft cluster (3 controllers, 2 brokers) and freezes a
follower controller, a broker and then the leader controller with SIGSTOP (manifest events
``node_pause``/``node_resume``) while JmxTool samples every node's KIP-835 and raft gauges
about once a second and ``kafka-metadata-quorum describe --status/--replication`` is captured
before, during and after each pause. The figures computed from the metadata log are compared
with those: nothing here is copied from the code under test.
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path

import pandas as pd
import pytest

import workbench
from peer.scenario import built_on
from workbench.analysis import quorum

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: JmxTool samples each node about once a second; a figure may be off by one such interval.
SAMPLE_MS = 1500
#: Tolerance on when a pause shows in the data (one sampling interval plus the idle interval).
PAUSE_TOLERANCE_MS = SAMPLE_MS + quorum.DEFAULT_IDLE_MS
#: How far apart the leader's two reads of its clock put a batch's stamp in the log and the
#: LastAppliedRecordTimestamp gauge (measured: 1-6 ms; 33 ms at load 12 on 2 cores, where the
#: thread waits between the reads). Idle batches are 500 ms apart: 100 ms still names one.
CLOCK_MS = 100
#: How long before its batch's stamp in the log the active controller's gauge may be: its
#: LastAppliedRecordTimestamp is the time the write was *scheduled* (Kafka's OffsetControlManager
#: says so: "not truly the append timestamp"), and the raft thread appends the batch after its
#: linger (25 ms) and whatever it waits on a loaded machine; one sample interval bounds that.
SCHEDULED_MS = SAMPLE_MS


@pytest.fixture(scope="module", params=built_on("quorum"))
def analysed(request, spark, kafka_bundle):
    path = Path(kafka_bundle("quorum", request.param))
    tables = workbench.load(workbench.open_bundle(path), spark)
    result = quorum.analyse(tables)
    frames = {
        "appends": result.appends.toPandas(),
        "timeline": result.timeline.toPandas(),
        "stalls": result.stalls.toPandas(),
        "offsets": result.offsets.toPandas(),
        "episodes": result.episodes.toPandas(),
        "fences": result.fences.toPandas(),
        "metrics": tables.metrics.where("format = 'jmxtool'").toPandas(),
        "status": tables.tool_quorum_status.toPandas(),
        "replication": tables.tool_quorum_replication.toPandas(),
        "findings": quorum.findings_for(tables).toPandas(),
        "latencies": result.latencies.toPandas(),
    }
    manifest = json.loads((path / "manifest.json").read_text())
    return tables, result, frames, manifest


def ms(ts) -> int:
    """Epoch milliseconds of a time; a missing end (an open episode) is the far future."""
    if pd.isna(ts):
        return 2**62
    return pd.Timestamp(ts).value // 1_000_000


def pauses(manifest) -> list[tuple[int, str, int, int]]:
    """``(node, role, paused_ms, resumed_ms)`` of every pause in the manifest."""
    out, open_ = [], {}
    for e in manifest["events"]:
        if e["event"] == "node_pause":
            open_[e["node"]] = (e["role"], e["t_ms"])
        elif e["event"] == "node_resume":
            role, t = open_.pop(e["node"])
            out.append((e["node"], role, t, e["t_ms"]))
    return out


def split_stalls(frames, manifest) -> tuple[pd.Series, pd.DataFrame]:
    """The stall of the leader's pause, and every other stall.

    The leader stopped appending when it was frozen: its stall begins at its last NoOp, at most
    one sampling plus one idle interval before the pause. Any other stall must be an election a
    resumed controller forced: before Kafka 4.0 there is no pre-vote (KIP-996), so a controller
    frozen longer than its fetch timeout comes back as a candidate with a higher epoch and the
    quorum elects again; on a loaded machine that election can outlast the stall threshold (3.9.2
    measured at load 7: 2.07 and 2.10 s). Such a stall begins within that tolerance of the
    resume, ends in a new epoch and lasts a few seconds.
    """
    stalls = frames["stalls"]
    (_leader, _role, paused, _resumed), = [p for p in pauses(manifest) if p[1] == "leader controller"]
    mine = stalls[(stalls.start.map(ms) >= paused - PAUSE_TOLERANCE_MS) & (stalls.start.map(ms) <= paused)]
    assert len(mine) == 1, stalls
    others = stalls.drop(mine.index)
    resumes = [resumed for _n, role, _p, resumed in pauses(manifest) if "controller" in role]
    for other in others.itertuples(index=False):
        assert other.new_epoch and ms(other.end) - ms(other.start) <= 10_000, other
        assert any(r - PAUSE_TOLERANCE_MS <= ms(other.start) <= r + SAMPLE_MS for r in resumes), (other, resumes)
    return mine.iloc[0], others


def leader_end_at(appends: pd.DataFrame, t_ms: int) -> int:
    """The last offset the leader's log held at ``t_ms`` (from the log's batches)."""
    times = [ms(t) for t in appends["time"]]
    i = bisect.bisect_right(times, t_ms) - 1
    return -1 if i < 0 else int(appends["last_offset"].iloc[: i + 1].max())


def test_bundle_reads_without_problems(analysed):
    tables, *_ = analysed
    assert tables.problems.collect() == []


def test_the_cluster_writes_noops_at_the_idle_interval(analysed):
    _tables, result, frames, _m = analysed
    assert result.writing.writes_noops and result.writing.noop_records > 50
    assert result.writing.idle_ms == quorum.DEFAULT_IDLE_MS
    # a healthy leader's appends come every idle interval: the median gap is that interval
    cadence = result.cadence.toPandas()
    busiest = cadence.sort_values("intervals").iloc[-1]
    assert abs(busiest.interval_p50_ms - quorum.DEFAULT_IDLE_MS) <= 50, cadence


def test_the_leader_pause_is_a_stall_and_another_controller_leads_the_next_epoch(analysed):
    _tables, _result, frames, manifest = analysed
    status = frames["status"]
    (leader, _role, paused, resumed), = [p for p in pauses(manifest) if p[1] == "leader controller"]
    stall, _elections = split_stalls(frames, manifest)   # every other stall is a resumed controller's election
    # the leader stopped appending when it was frozen (its last NoOp was at most one interval before)
    assert paused - PAUSE_TOLERANCE_MS <= ms(stall.start) <= paused, (stall.start, paused)
    assert ms(stall.end) < resumed + SAMPLE_MS
    assert stall.leader_before == leader and stall.new_epoch and stall.leader_after != leader
    # Kafka's own word: the quorum tool's status captured after the pause names the new leader and epoch
    after = status[(status.captured.map(ms) > ms(stall.end)) & (status.leader_epoch == stall.epoch_after)]
    assert not after.empty and set(after.leader_id) == {stall.leader_after}, after


#: Kafka's ``controller.quorum.fetch.timeout.ms`` default: a follower stands for election only after
#: hearing nothing from the leader for this long.
FETCH_TIMEOUT_MS = 2000


def test_the_leaderless_time_of_the_election_after_the_leader_pause_holds_kafkas_election_latency(analysed):
    """The epoch elected while the leader was frozen: the log had no writing leader from the old
    leader's last append to the new epoch's start, at least the fetch timeout (no follower stands
    before it) and less than the pause; Kafka's own ``election-latency-max``, reported by the new
    leader in the next 30 s, is the part of it spent electing, so no longer."""
    _tables, _result, frames, manifest = analysed
    (_leader, _role, paused, resumed), = [p for p in pauses(manifest) if p[1] == "leader controller"]
    timeline = frames["timeline"]
    elected = timeline[(timeline.start.map(ms) > paused) & (timeline.start.map(ms) < resumed)]
    assert len(elected) == 1, timeline
    epoch = elected.iloc[0]
    assert FETCH_TIMEOUT_MS - CLOCK_MS <= epoch.leaderless_ms < resumed - paused + PAUSE_TOLERANCE_MS, epoch
    lat = frames["latencies"]
    reported = lat[(lat.node_id == epoch.leader) & (lat.time.map(ms) > ms(epoch.start))
                   & (lat.time.map(ms) <= ms(epoch.start) + 30_000)].election_latency_max_ms.dropna()
    assert not reported.empty and reported.max() <= epoch.leaderless_ms + CLOCK_MS, (reported.max(), epoch)


def test_leader_timeline_agrees_with_every_status_capture(analysed):
    _tables, _result, frames, _m = analysed
    timeline, status = frames["timeline"], frames["status"].dropna(subset=["leader_epoch"])
    assert len(status) >= 5
    for row in status.itertuples(index=False):
        epoch = timeline[timeline.epoch == row.leader_epoch]
        assert len(epoch) == 1, (row.leader_epoch, timeline)
        assert int(epoch.leader.iloc[0]) == int(row.leader_id)
        assert ms(epoch.start.iloc[0]) <= ms(row.captured)
        # the voters each epoch's LeaderChange record names are the tool's CurrentVoters (a static
        # quorum: the set never changes, and every epoch must say so)
        assert sorted(epoch.voters.iloc[0]) == sorted(row.voters), (row.leader_epoch, row.voters)


def test_every_status_capture_is_held_against_the_static_voters_each_node_names(analysed):
    """A static quorum writes no voters record: each ``describe --status`` capture (a failed one has
    no voters) is held against the ``controller.quorum.voters`` every node's properties name, read
    here from the files, and every one that answered agrees."""
    _tables, result, frames, manifest = analysed
    root = Path(frames["status"].path.iloc[0]).parent.parent  # <bundle>/tools/<capture>
    named = set()
    for node in manifest["nodes"]:
        lines = (root / node["config"]).read_text("utf-8").splitlines()
        props = dict(line.split("=", 1) for line in lines if "=" in line)
        named.add(tuple(sorted(int(v.split("@")[0]) for v in props[quorum.STATIC_VOTERS_CONFIG].split(","))))
    assert len(named) == 1
    beside = result.voter_captures.toPandas()
    answered = frames["status"].dropna(subset=["leader_epoch"])
    assert sorted(beside.captured) == sorted(frames["status"].captured)
    judged = beside.dropna(subset=["agrees"])
    assert len(judged) == len(answered) >= 5
    assert all(list(v) == list(next(iter(named))) for v in judged.voters)
    assert set(judged.voters_from) == {quorum.STATIC_VOTERS_CONFIG} and judged.agrees.all()


def test_every_pause_is_an_episode_of_the_paused_node(analysed):
    _tables, _result, frames, manifest = analysed
    episodes, offsets, metrics = frames["episodes"], frames["offsets"], frames["metrics"]
    answered = metrics[metrics.name.isin(quorum.OFFSET_GAUGES["applied"]) & metrics.value.notna()]
    for node, role, paused, resumed in pauses(manifest):
        mine = episodes[(episodes.node_id == node) & (episodes.start.map(ms) < resumed + SAMPLE_MS)
                        & (episodes.end.isna() | (episodes.end.map(ms) > paused))]
        assert len(mine) == 1, (node, role, mine)
        ep = mine.iloc[0]
        assert abs(ms(ep.start) - paused) <= PAUSE_TOLERANCE_MS, (role, ep.start, paused)
        end = ms(ep.start) + ep.seconds * 1000
        assert end >= resumed - 2 * PAUSE_TOLERANCE_MS, (role, ep.seconds)
        if end <= resumed + 2 * PAUSE_TOLERANCE_MS:
            continue
        # past the resume (by 5.4 s in a CI build at a load of 15): the resumed node still catching up
        # (a resumed leader first learns the new epoch, then truncates and fetches), as Kafka's own
        # LastAppliedRecordLagMs says, or its scrapes going unanswered, which the analysis takes as
        # "held its last offset" (see test_other_episodes_...): then the silence is in the export
        # itself. JmxTool's reads of the frozen JVM are stamped up to two samples late: left out of
        # Kafka's word; the silence counts from the resume (a scrape that hung through the freeze
        # may stay silent one more second, ending just inside those two samples).
        mine = offsets[(offsets.node_id == node) & (offsets.time.map(ms) <= end)]
        after = mine[mine.time.map(ms) > resumed + 2 * SAMPLE_MS]
        if (after.reported_lag_ms.dropna() > 2 * quorum.DEFAULT_IDLE_MS).any():
            continue
        silent = mine[(mine.time.map(ms) > resumed) & (mine.kind == "unanswered")]
        assert not silent.empty, (role, ep.seconds, after)
        gauge = answered[answered.node_id == node].timestamp.map(ms)
        last = gauge[gauge < ms(silent.time.min())].max()
        following = gauge[gauge > ms(silent.time.max())]
        following = following.min() if not following.empty else answered.timestamp.map(ms).max()
        assert following - last > quorum.MIN_GAP_MS, (role, ep.seconds, last, following)


def test_other_episodes_are_nodes_catching_up_after_the_election_as_kafka_says(analysed):
    # besides the paused nodes, nodes lag only around a fault:
    # * from the leader's pause until a few seconds after the stall ends: the stopped leader's log
    #   may hold appends a node had not fetched yet when it stopped (the divergence is measured
    #   against the leader's log), and no one can catch up until the new epoch commits;
    # * within a few seconds after the stall ends (the new epoch's first records are committed) or
    #   after a paused node resumes, and then Kafka's own LastAppliedRecordLagMs says so;
    # * or before the baseline capture, while the topic is created.
    _tables, _result, frames, manifest = analysed
    episodes, offsets, metrics = frames["episodes"], frames["offsets"], frames["metrics"]
    stall, elections = split_stalls(frames, manifest)
    baseline = next(e["t_ms"] for e in manifest["events"] if e["event"] == "capture" and e["what"] == "baseline")
    leader_pauses = [paused for _n, role, paused, _r in pauses(manifest) if role == "leader controller"]
    assert leader_pauses
    # every node's answers of its applied-offset gauge (for the episodes resting on unanswered scrapes)
    answered = metrics[metrics.name.isin(quorum.OFFSET_GAUGES["applied"]) & metrics.value.notna()]
    others = unprovoked = 0
    for ep in episodes.itertuples(index=False):
        if any(ep.node_id == node and abs(ms(ep.start) - paused) <= PAUSE_TOLERANCE_MS
               for node, _r, paused, _e in pauses(manifest)):
            continue
        others += 1
        if any(abs(ms(ep.start) - paused) <= PAUSE_TOLERANCE_MS for paused in leader_pauses):
            # behind the stopped leader's own appends: over once the new epoch has settled, or
            # longer only as the general rule below allows (the CI run of f37854e: controller 2
            # 3 s behind until 8.6 s after the stall, on a machine at a load of 11-15)
            assert ep.end is not None and not pd.isna(ep.end), ep
            if ms(ep.end) <= ms(stall.end) + 5000:
                continue
            after_fault = True
        else:
            settling = ([ms(stall.end)] + [ms(t) for t in elections.end]
                        + [resumed for *_x, resumed in pauses(manifest)])
            after_fault = any(t <= ms(ep.start) <= t + 5000 for t in settling)
            if ms(ep.start) < baseline:
                continue
        # elsewhere (a loaded machine: measured once, a controller 1.2 s behind for one sample) a
        # few, and each one Kafka's own gauge reports, or one that rests on the node's scrapes
        # going unanswered: the analysis cannot tell a frozen node from a scraper starved on a
        # loaded machine, and Kafka's gauge was not read meanwhile (seen once, in a CI run at a
        # load of 11-15 on 2 cores: an episode of controller 3 whose only gauge reading, at its
        # end, was 489 ms), so the silence must then be in the export itself
        unprovoked += not after_fault
        inside = offsets[(offsets.node_id == ep.node_id) & (offsets.time.map(ms) >= ms(ep.start))
                         & (offsets.time.map(ms) <= ms(ep.end))]
        behind = inside[inside.behind_ms > 2 * quorum.DEFAULT_IDLE_MS]
        if not behind.empty and set(behind.kind) == {"unanswered"}:
            # the node's applied-offset gauge: its last answer before, its next after (or the
            # export's end, when the scraper never heard from it again)
            mine = answered[answered.node_id == ep.node_id].timestamp.map(ms)
            last = mine[mine < ms(behind.time.min())].max()
            after = mine[mine > ms(behind.time.max())]
            following = after.min() if not after.empty else answered.timestamp.map(ms).max()
            assert following - last > quorum.MIN_GAP_MS, (ep, behind, last, following)
            continue
        reported = inside[inside.reported_lag_ms.notna()]
        assert (reported.reported_lag_ms > 2 * quorum.DEFAULT_IDLE_MS).any(), (ep, reported)
    # every one is judged above; their number grows with the machine's load (6 to 7 measured)
    assert others <= 10 and unprovoked <= 3, episodes


def test_no_stall_and_no_episode_in_the_healthy_window(analysed):
    # from the baseline capture (the topic is created and written, nothing changes any more) to the
    # first pause; while the topic is created a broker may lag 2 s, as its own gauge says
    _tables, _result, frames, manifest = analysed
    started = next(e["t_ms"] for e in manifest["events"] if e["event"] == "capture" and e["what"] == "baseline")
    # a paused node's episode starts when it stopped: up to one idle interval before the event
    first_pause = min(p[2] for p in pauses(manifest)) - quorum.DEFAULT_IDLE_MS
    for name in ("stalls", "episodes"):
        frame = frames[name]
        inside = frame[(frame.start.map(ms) >= started) & (frame.start.map(ms) < first_pause)]
        assert inside.empty, (name, inside)


def test_applied_offsets_are_within_one_sample_of_the_log_and_their_times_are_kafkas(analysed):
    _tables, _result, frames, manifest = analysed
    appends, metrics = frames["appends"], frames["metrics"]
    episodes = frames["episodes"]
    offset_names = {quorum.OFFSET_GAUGES["applied"][0], quorum.OFFSET_GAUGES["applied"][2]}
    samples = metrics[metrics.name.isin(offset_names)].dropna(subset=["value"])
    times = metrics[metrics.name.isin(quorum.TIME_GAUGES)][["node_id", "timestamp", "value"]]
    samples = samples.merge(times.rename(columns={"value": "record_ms"}), on=["node_id", "timestamp"])
    assert set(samples.node_id) == {1, 2, 3, 4, 5}
    batches = appends.sort_values("base_offset")
    batch_times = [ms(t) for t in batches.time]
    stopped = [(p[0], p[2], p[3]) for p in pauses(manifest)]
    epochs = frames["timeline"].sort_values("start")
    spans = [(int(e.leader), ms(e.start), ms(n)) for e, n in zip(
        epochs.itertuples(index=False), list(epochs.start.iloc[1:]) + [None], strict=True) if pd.notna(e.start)]
    compared = behind = dated = exact = 0
    previous: dict[int, int] = {}  # node -> the offset of its previous sample
    for row in samples.sort_values(["node_id", "timestamp"]).itertuples(index=False):
        offset, t = int(row.value), ms(row.timestamp)
        before, previous[row.node_id] = previous.get(row.node_id), offset
        if any(node == row.node_id and paused - SAMPLE_MS <= t <= resumed + 2 * SAMPLE_MS
               for node, paused, resumed in stopped):
            # JmxTool's read of a stopped JVM blocks until it resumes: the sample's stamp, its
            # offset and its timestamp are of different moments
            continue
        # the applied record's append time, from the log, is the one Kafka reports (JmxTool reads
        # the offset and the timestamp one after the other: a batch may land in between)
        hit = batches.index[(batches.base_offset <= offset) & (batches.last_offset >= offset)]
        if len(hit) == 0 or row.record_ms <= 0:
            continue
        i = batches.index.get_loc(hit[0])
        # Kafka's gauge may read a few ms after the batch's stamp in the log (the leader's clock read
        # twice; measured 1-6 ms), and JmxTool reads the offset and then the timestamp: the
        # timestamp may be of any batch applied in between, i.e. one at or after the offset's,
        # appended before the sample; JmxTool may read the timestamp first, so while a node catches
        # up (at start) it may be of any batch applied since its previous sample
        first = i - 1
        # a scrape under load may read the offset a second after the timestamp: any batch appended
        # within one sample interval before the stamp may be the one whose time Kafka reports
        first = min(first, bisect.bisect_left(batch_times, t - SAMPLE_MS))
        if before is not None:
            held = batches.index[(batches.base_offset <= before) & (batches.last_offset >= before)]
            if len(held):
                first = min(first, batches.index.get_loc(held[0]))
        near = [b for b in batch_times[max(0, first):] if abs(b - int(row.record_ms)) <= CLOCK_MS and b <= t + 1]
        if not near and any(node == row.node_id and start <= t and end >= t - SAMPLE_MS for node, start, end in spans):
            # the active controller's gauge (and, just after it lost the lead, what it kept) is the
            # clock when it scheduled its latest write: before the raft thread appended the batch
            # (which may land after JmxTool's stamp), or of a write an election then dropped from
            # the log (3.9.2 at load 7: 501 ms after the batch holding the offset, no batch then)
            near = [int(row.record_ms)] if batch_times[max(0, first)] - SCHEDULED_MS <= row.record_ms <= t + 1 else []
        assert near, (row.node_id, offset, row.record_ms)
        dated += 1
        exact += abs(batch_times[i] - int(row.record_ms)) <= CLOCK_MS
        in_episode = episodes[(episodes.node_id == row.node_id) & (episodes.start.map(ms) <= t)
                              & (episodes.end.isna() | (episodes.end.map(ms) >= t))]
        if not in_episode.empty:
            behind += 1
            continue
        # outside its episodes a node has applied what the leader's log held one sample earlier
        assert leader_end_at(appends, t - SAMPLE_MS) <= offset <= leader_end_at(appends, t + SAMPLE_MS), (
            row.node_id, row.timestamp, offset)
        compared += 1
    # samples inside a node's episodes are not compared (the episode tests judge those): how many
    # there are depends on how fast a resumed node catches up
    assert compared >= 200, (compared, behind)
    assert exact >= 0.9 * dated, (exact, dated)


def judge_apply_lag(apply_lag: pd.DataFrame, metrics: pd.DataFrame, appends: pd.DataFrame,
                    manifest: dict) -> tuple[pd.DataFrame, int]:
    """The JmxTool rows of the computed apply lag with Kafka's ``LastAppliedRecordLagMs`` beside them
    (``kafka_ms``), after asserting that each sample is the lag computed from the log wherever no
    record was applied while JmxTool read the gauges, the node was caught up and not frozen (its
    reads then block until it resumes); returns them and how many samples were judged.

    JmxTool stamps a row after reading every MBean it samples, one call each: on a loaded machine
    a gauge is read up to the whole scrape before the stamp (a CI build at load 15: 145 ms), so
    Kafka's lag may be below the one computed at the stamp by that much, never above it. Where the
    lag and the applied record's timestamp are attributes of one MBean (a broker's
    ``broker-metadata-metrics``, read in one call) their sum is the instant Kafka read them: it lies
    in the scrape (after the node's previous row, at or before the stamp), and the lag computed from
    the log at that instant is Kafka's. A controller's gauges are one MBean each: its lag lies
    between the ones computed at the stamp and at the previous row."""
    gauges = metrics.dropna(subset=["value"]).rename(columns={"timestamp": "time"})
    kafka = (gauges[gauges.name.isin(quorum.LAG_GAUGES)].rename(columns={"value": "kafka_ms", "mbean": "lag_mbean"})
             .sort_values(["path", "time"]))
    kafka["previous"] = kafka.groupby("path").time.shift()
    stamps = (gauges[gauges.name.isin(quorum.TIME_GAUGES) & (gauges.value > 0)]
              .rename(columns={"value": "kafka_ts", "mbean": "ts_mbean"}))
    kafka = kafka.merge(stamps[["path", "time", "kafka_ts", "ts_mbean"]], on=["path", "time"], how="left")
    mine = apply_lag[apply_lag.source == "jmxtool"].merge(
        kafka[["node_id", "time", "kafka_ms", "previous", "kafka_ts", "lag_mbean", "ts_mbean"]],
        on=["node_id", "time"], how="left")
    assert mine.kafka_ms.notna().all() and (mine.reported_lag_ms == mine.kafka_ms).all()
    appended = sorted(ms(t) for t in appends.time)
    stopped = pauses(manifest)
    judged = 0
    for r in mine.itertuples(index=False):
        t = ms(r.time)
        if any(node == r.node_id and paused - SAMPLE_MS <= t <= resumed + 2 * SAMPLE_MS
               for node, _role, paused, resumed in stopped) or not r.caught_up or pd.isna(r.previous):
            continue   # frozen, still applying, or a JmxTool's first row (its scrape's start unknown)
        previous = ms(r.previous)
        one_call = r.lag_mbean == r.ts_mbean and pd.notna(r.kafka_ts)
        read = int(r.kafka_ts + r.kafka_ms) if one_call else t
        i = bisect.bisect_left(appended, read - CLOCK_MS)
        if i < len(appended) and appended[i] <= read + CLOCK_MS:
            continue   # a record applied while the gauges were read
        if one_call:
            assert previous - CLOCK_MS <= read <= t + CLOCK_MS, r
            assert abs(r.kafka_ms - (r.lag_ms - (t - read))) <= CLOCK_MS, r
        else:
            assert -CLOCK_MS <= r.lag_ms - r.kafka_ms <= t - previous + CLOCK_MS, r
        judged += 1
    return mine, judged


def test_apply_lag_from_the_log_is_kafkas_last_applied_record_lag_away_from_changes(analysed):
    # KIP-835's LastAppliedRecordLagMs is "now" less the last applied record's time: computed from
    # the log at each JmxTool sample, it is Kafka's own figure away from changes (judge_apply_lag)
    _tables, result, frames, manifest = analysed
    mine, judged = judge_apply_lag(result.apply_lag.toPandas(), frames["metrics"], frames["appends"], manifest)
    assert set(mine.node_id) == {1, 2, 3, 4, 5} and set(mine.role) == {"controller", "broker"}
    assert judged >= 50, judged
    assert mine[mine.agrees].shape[0] >= 0.8 * len(mine), mine[~mine.agrees]


def test_kafkas_metadata_batch_sizes_are_the_logs_batches_each_broker_had_applied(analysed):
    """Each broker's metadata loader adds every batch it applies to ``MetadataBatchSizes``
    (``kafka.server:type=BrokerMetadataListener``), with its metadata records (a control batch has
    none): at every JmxTool sample its count and its mean are exactly the log's first batches, the
    last of them appended before the sample and the next not a sample interval before it (the
    broker kept up) unless the broker was frozen; and :func:`quorum.batch_sizes`, which the view
    draws, gives Kafka's windows the log's batches and records within one sample interval."""
    _tables, result, frames, manifest = analysed
    appends = frames["appends"].sort_values("base_offset").reset_index(drop=True)
    records = appends.records.where(~appends.is_control.astype(bool), 0)
    prefix = records.cumsum().tolist()
    times = [ms(t) for t in appends.time]
    metrics = frames["metrics"]
    stem = "kafka_server_brokermetadatalistener_metadatabatchsizes"
    samples = (metrics[metrics.name.isin([f"{stem}_count", f"{stem}_mean"])]
               .pivot_table(index=["node_id", "timestamp"], columns="name", values="value").reset_index()
               .dropna())
    assert set(samples.node_id) == {4, 5}
    frozen = [(node, paused, resumed) for node, _role, paused, resumed in pauses(manifest)]
    # the last batches an old leader appended before an election (a frozen leader; before Kafka 4.0 a
    # resumed controller forces one, having no pre-vote) are committed, and loaded, only once the new
    # leader commits: from two sample intervals before the old epoch's last append to the new start
    epochs = frames["timeline"].sort_values("epoch")
    elections = [(ms(last) - 2 * SAMPLE_MS, ms(start)) for last, start in
                 zip(epochs.last_append.iloc[:-1], epochs.start.iloc[1:], strict=True)
                 if pd.notna(last) and pd.notna(start)]
    judged = 0
    for row in samples.itertuples(index=False):
        count, t = int(getattr(row, f"{stem}_count")), ms(row.timestamp)
        total = round(getattr(row, f"{stem}_count") * getattr(row, f"{stem}_mean"))
        assert 0 < count <= len(prefix) and prefix[count - 1] == total, (row, prefix[count - 1 : count + 1])
        assert times[count - 1] <= t + CLOCK_MS, (row, appends.iloc[count - 1])
        if count < len(times) and not any(node == row.node_id and paused - SAMPLE_MS <= t <= resumed + 2 * SAMPLE_MS
                                          for node, paused, resumed in frozen) \
                and not any(lo <= times[count] <= hi for lo, hi in elections):
            assert times[count] > t - SAMPLE_MS, (row, appends.iloc[count])
            judged += 1
    assert judged >= 80, judged
    sizes = result.batch_sizes.toPandas()
    log = sizes[sizes.source == "log"].set_index("window_start")
    first = samples.groupby("node_id").timestamp.min().map(ms)
    sampled = {node: sorted(map(ms, g.timestamp)) for node, g in samples.groupby("node_id")}

    def last_before(node, t):
        """The node's last sample before ``t``: Kafka's figure for a window ends there, not at its edge."""
        times_ = sampled[node]
        return times_[max(bisect.bisect_left(times_, t) - 1, 0)]

    compared = 0
    for row in sizes[(sizes.source == "jmxtool") & sizes.batches.notna()].itertuples(index=False):
        start, end = ms(row.window_start), ms(row.window_end)
        if start <= first[row.node_id] + SAMPLE_MS or any(
                node == row.node_id and paused - SAMPLE_MS <= end and resumed + 2 * SAMPLE_MS >= start
                for node, paused, resumed in frozen):
            continue  # counted from the broker's first sample on; a frozen broker loads its pause late
        compared += 1
        # the window's count runs from the broker's last sample before it to its last sample in it
        # (the export may stop, or pause, before the window ends); the broker applies within a sample
        # interval, so the batches from a sample interval before each of those samples to the edge
        # after it, and one sample interval past the edge, may fall on either side
        lo, hi = min(start, last_before(row.node_id, start)), min(end, last_before(row.node_id, end))
        near = sum(lo - SAMPLE_MS <= t < start + SAMPLE_MS or hi - SAMPLE_MS <= t < end + SAMPLE_MS for t in times)
        in_log = int(log.batches.get(row.window_start, 0))
        assert abs(int(row.batches) - in_log) <= near, (row, in_log, near)
    assert compared >= 8, compared


@pytest.mark.parametrize("version", built_on("demo"))
def test_the_demo_samples_every_nodes_kip835_gauges_and_they_equal_the_log(spark, kafka_bundle, version):
    """The demo incident (the shipped bundle's scenario) samples every node of its production cluster's
    KIP-835 gauges: the divergence view has Kafka's figure beside the computed one on all six nodes,
    equal away from changes, through a frozen leader controller and a killed broker."""
    path = Path(kafka_bundle("demo", version))
    tables = workbench.load(workbench.open_bundle(path), spark)
    result = quorum.analyse(tables)
    metrics = tables.metrics.where("format = 'jmxtool'").toPandas()
    manifest = json.loads((path / "manifest.json").read_text())
    mine, judged = judge_apply_lag(result.apply_lag.toPandas(), metrics, result.appends.toPandas(), manifest)
    assert set(mine.node_id) == {1, 2, 3, 4, 5, 6} and set(mine.role) == {"controller", "broker"}
    assert judged >= 60, judged


def test_describe_replication_log_ends_match_the_log(analysed):
    _tables, _result, frames, _m = analysed
    appends, repl = frames["appends"], frames["replication"]
    leaders = repl[repl.status.str.lower() == "leader"]
    assert len(leaders) >= 5
    for row in leaders.itertuples(index=False):
        # the leader's own row: its last fetch time is when it answered
        t = ms(row.last_fetch_time)
        last = int(row.log_end_offset) - 1
        assert leader_end_at(appends, t - SAMPLE_MS) <= last <= leader_end_at(appends, t + SAMPLE_MS), (row.path, last)


def test_the_paused_broker_is_fenced_and_unfenced_within_its_episode(analysed):
    _tables, _result, frames, manifest = analysed
    (broker, _role, paused, resumed), = [p for p in pauses(manifest) if p[1] == "broker"]
    episodes = frames["episodes"]
    ep = episodes[(episodes.node_id == broker) & (episodes.start.map(ms) < resumed)
                  & (episodes.end.map(ms) > paused)].iloc[0]
    assert pd.notna(ep.fenced_at) and paused < ms(ep.fenced_at) < resumed
    assert pd.notna(ep.unfenced_at) and ms(ep.unfenced_at) >= resumed - SAMPLE_MS


def test_findings_say_what_happened(analysed):
    _tables, _result, frames, manifest = analysed
    findings = frames["findings"]
    leader_stall, elections = split_stalls(frames, manifest)
    stalls = findings[findings.kind == "commit_stall"]
    assert sorted(stalls.start.map(ms)) == sorted(map(ms, [leader_stall.start, *elections.start]))
    stall = stalls[stalls.start.map(ms) == ms(leader_stall.start)]
    assert len(stall) == 1 and stall.severity.iloc[0] == "critical"
    leader = next(p[0] for p in pauses(manifest) if p[1] == "leader controller")
    assert f"controller {leader}, epoch" in stall.summary.iloc[0] and "led epoch" in stall.summary.iloc[0]
    behind = findings[findings.kind == "node_behind"]
    assert {p[0] for p in pauses(manifest)} <= set(behind.subject.astype(int))
    assert findings[findings.kind == "input_missing"].empty, findings.summary.tolist()


def test_the_metadata_logs_batches_are_read_from_its_own_files(spark, kafka_bundle):
    from pyspark.sql import functions as F
    from pyspark.testing import assertDataFrameEqual

    from workbench.analysis.logs import batches_of
    from workbench.spark.registry import Tables

    path = Path(kafka_bundle("quorum", "4.3.1"))
    tables = Tables(workbench.open_bundle(path), spark)       # fresh: nothing read yet
    got = batches_of(tables, [quorum.METADATA_TOPIC])
    assert "batches" not in tables.built                      # the data segments were not decoded
    want = tables.batches.where(F.col("topic") == quorum.METADATA_TOPIC)
    assertDataFrameEqual(got, want)
    assert got.count() > 0
    tables.unpersist()


#: Kafka's raft-metrics as the JMX exporter names them in its text exposition, by the column of
#: ``raft_latencies`` each is expected in (written from Kafka's metric names, not from the code).
RAFT_EXPORTED = {
    "kafka_server_raft_metrics_commit_latency_avg": "commit_latency_avg_ms",
    "kafka_server_raft_metrics_commit_latency_max": "commit_latency_max_ms",
    "kafka_server_raft_metrics_election_latency_avg": "election_latency_avg_ms",
    "kafka_server_raft_metrics_election_latency_max": "election_latency_max_ms",
    "kafka_server_raft_metrics_append_records_rate": "append_records_rate",
    "kafka_server_raft_metrics_fetch_records_rate": "fetch_records_rate",
    "kafka_server_raft_metrics_current_epoch": "current_epoch",
    "kafka_server_raft_metrics_current_leader": "current_leader",
    "kafka_server_raft_metrics_high_watermark": "high_watermark",
    "kafka_server_raft_metrics_log_end_offset": "log_end_offset",
}


def raft_gauges_of_prometheus_files(metrics_dir: Path) -> pd.DataFrame:
    """One row per ``metrics/<node>-<epoch ms>.prom`` scrape with a raft-metrics gauge, read with
    prometheus_client's own parser: the node and scrape time are the file name's (the exporter
    writes no sample timestamps; a sample's own one would win)."""
    from prometheus_client.parser import text_string_to_metric_families

    rows = []
    for path in sorted(metrics_dir.glob("*.prom")):
        node, stamp = path.stem.split("-")
        row: dict = {}
        for family in text_string_to_metric_families(path.read_text()):
            for sample in family.samples:
                if sample.name in RAFT_EXPORTED:
                    assert RAFT_EXPORTED[sample.name] not in row, (path, sample.name)  # one sample each
                    row[RAFT_EXPORTED[sample.name]] = sample.value
                    if sample.timestamp is not None:
                        stamp = int(float(sample.timestamp) * 1000)
        if row:
            rows.append({"node_id": int(node), "time": pd.Timestamp(int(stamp), unit="ms"), **row})
    return pd.DataFrame(rows, columns=["node_id", "time", *RAFT_EXPORTED.values()])


@pytest.mark.parametrize("version", built_on("quorum"))
def test_raft_latencies_are_the_gauges_of_every_prometheus_scrape(spark, kafka_bundle, version):
    """Every scrape's commit and election latency, rates, epoch, leader, high watermark and log end,
    per node and time, exactly as the exporter wrote them (NaN included: a follower's commit latency)."""
    path = Path(kafka_bundle("quorum", version))
    want = raft_gauges_of_prometheus_files(path / "metrics")
    assert not want.empty and want["commit_latency_max_ms"].isna().any() and want["commit_latency_max_ms"].notna().any()
    assert want["current_leader"].nunique() > 1  # the leader's pause is in the scrapes
    tables = workbench.load(workbench.open_bundle(path), spark)
    got = quorum.raft_latencies(tables.metrics).where("source = 'prometheus_text'").drop("source").toPandas()
    keys = ["node_id", "time"]
    pd.testing.assert_frame_equal(got.sort_values(keys).reset_index(drop=True),
                                  want.sort_values(keys).reset_index(drop=True), check_dtype=False)
