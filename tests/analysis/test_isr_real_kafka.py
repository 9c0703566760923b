"""The ISR analysis judged by real Kafka: its JMX UnderMinIsrPartitionCount and kafka-topics output.

The ``isr`` scenario runs a real KRaft cluster (3 controllers, 3 brokers), stops two brokers
one after the other and restarts them, while JmxTool samples every broker's ReplicaManager
metrics each second and ``kafka-topics.sh --describe`` is captured at known times.
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from peer.scenario import built_on
from tests.kafka_bundles import candidate_views, dumped_final_states, metadata_payloads
from workbench.analysis import isr
from workbench.analysis.isr.states import _FOLLOWED
from workbench.formats.tooltext import parse_topics_describe

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: Brokers apply a committed metadata record a little after the controller wrote it, and
#: JmxTool stamps a sample when its poll starts: samples this close to a change are not compared.
SKEW_MS = 1500


@pytest.fixture(scope="module", params=built_on("isr"))
def analysed(request, spark, kafka_bundle):
    path = Path(kafka_bundle("isr", request.param))
    tables = workbench.load(workbench.open_bundle(path), spark)
    states = isr.partition_states(tables.metadata)
    counts = isr.under_min_isr_counts(states).toPandas()
    return path, json.loads((path / "manifest.json").read_text()), states.toPandas(), counts, tables


def ms(ts) -> int:
    return int(ts.timestamp() * 1000)


def test_bundle_reads_without_problems(analysed):
    *_, tables = analysed
    assert tables.problems.collect() == []


def test_under_min_isr_count_matches_jmx(analysed):
    _path, manifest, _states, counts, tables = analysed
    reported = isr.reported_under_min_isr(tables.metrics).toPandas()
    assert sorted(reported.broker.unique()) == sorted({m["node"] for m in manifest["metrics"] if m["what"] == "isr"})
    compared, nonzero = [], 0
    for broker, samples in reported.groupby("broker"):
        series = counts[counts.broker == broker].sort_values("time")
        times = [ms(t) for t in series.time]
        values = list(series["count"])
        for t, value in zip(samples.time, samples["count"], strict=True):
            t_ms = ms(t)
            if not times or t_ms < times[0] - SKEW_MS:
                continue  # before the broker led anything (our series starts at its first leadership)
            i = bisect.bisect_right(times, t_ms) - 1
            if i < 0 or any(abs(c - t_ms) <= SKEW_MS for c in times):
                continue
            compared.append((int(broker), t_ms, int(value), int(values[i])))
            nonzero += value > 0
    mismatches = [c for c in compared if c[2] != c[3]]
    assert not mismatches, f"(broker, time, JMX, computed) differ: {mismatches}"
    assert len(compared) >= 30 and nonzero >= 5, (len(compared), nonzero)


def test_topics_describe_matches_a_state_of_its_run_window(analysed):
    path, manifest, states, _counts, _ = analysed
    tools = manifest["tools"]
    checked = {"describe": 0, "--under-min-isr-partitions": 0, "--under-replicated-partitions": 0}
    for i, tool in enumerate(tools):
        if tool["tool"] != "kafka-topics" or "--describe" not in tool["args"]:
            continue
        end = tools[i + 1]["t_ms"] if i + 1 < len(tools) else manifest["events"][-1]["t_ms"]
        parsed = parse_topics_describe((path / tool["file"]).read_text())
        assert not parsed.problems
        shown = {(p["topic"], p["partition"]): (p["leader"], p["replicas"], p["isr"], p["elr"] or [])
                 for p in parsed.partitions}
        views = candidate_views(states, tool["t_ms"], end)
        # kafka-topics lists a partition without a leader under --under-min-isr-partitions too
        # (TopicCommand: "!hasLeader() || isr.size() < minIsrCount"), and under-replicated by its
        # ISR against its replicas whether it has a leader or not; the analysis flags both on the
        # leader, as the brokers' UnderMinIsr and UnderReplicated gauges do
        if "--under-min-isr-partitions" in tool["args"]:
            kind = "--under-min-isr-partitions"
            ok = any({k for k, v in view.items() if v[4] or v[0] < 0} == set(shown) for view in views)
        elif "--under-replicated-partitions" in tool["args"]:
            kind = "--under-replicated-partitions"
            ok = any({k for k, v in view.items() if v[5] or (v[0] < 0 and len(v[2]) < len(v[1]))} == set(shown)
                     for view in views)
        else:
            kind = "describe"
            ok = any({k: v[:4] for k, v in view.items()} == shown for view in views)
        assert ok, f"{tool['file']}: tool shows {shown}; computed states in its window: {views}"
        checked[kind] += 1
    assert all(n >= 2 for n in checked.values()), checked


def test_incident_is_visible(analysed):
    _path, manifest, states, counts, _ = analysed
    stops = [e["t_ms"] for e in manifest["events"] if e["event"] == "broker_hard_stop"]
    restart = min(e["t_ms"] for e in manifest["events"] if e["event"] == "broker_restart")
    under = states[states.under_min_isr & (states.leader >= 0)]
    first_under = min(ms(t) for t in under.start)
    # the second broker's stop drives orders under min ISR 2 (payments, min ISR 3, after the first)
    orders_under = min(ms(t) for t in under[under.topic == "orders"].start)
    assert stops[1] < orders_under < restart
    assert stops[0] < first_under < stops[1]
    assert counts["count"].max() == 5   # every partition is led by the last broker standing


def test_static_min_isr_comes_from_the_brokers_server_properties(analysed):
    """Per cluster, the value the scenario wrote into its brokers' server.properties; a parameter overrides it."""
    path, manifest, _states, _counts, tables = analysed
    want: dict[str, int] = {}
    for node in manifest["nodes"]:
        if "broker" not in node["roles"]:
            continue
        lines = (path / node["config"]).read_text().splitlines()
        props = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
        value = int(props.get("min.insync.replicas", "1"))
        want[manifest["cluster_id"]] = min(want.get(manifest["cluster_id"], value), value)
    assert want == {manifest["cluster_id"]: 2}  # the scenario sets 2 (its docstring)
    assert isr.configured_min_isr(tables) == want
    assert isr.static_min_isr(tables, {}) == want
    assert isr.static_min_isr(tables, {"min_insync_replicas": 3}) == 3


def test_each_partitions_final_state_is_what_kafkas_dump_leaves(analysed):
    """Every partition's last leader and ISR, as Kafka's own dump of the metadata log leaves them
    (records applied in log order; a change record's leader -2 and absent ISR mean unchanged)."""
    path, _manifest, states, _counts, tables = analysed
    final = dumped_final_states(path)
    got = isr.final_states(isr.partition_states(tables.metadata)).toPandas()
    assert {(r.topic_id, r.partition): (r.leader, sorted(r.isr)) for r in got.itertuples()} == final
    assert len(got) == len(final) > 0
    # each final state is the partition's last interval, which ends where the log ends
    last = states.sort_values(["start", "start_offset"]).groupby(["topic_id", "partition"]).tail(1)
    assert sorted(zip(got.topic_id, got.partition, got.state, got.since, strict=True)) == sorted(
        zip(last.topic_id, last.partition, last.state, last.start, strict=True))
    order = [isr.STATES.index(s) for s in got.state]
    assert order == sorted(order)
    counts = isr.final_state_counts(isr.final_states(isr.partition_states(tables.metadata))).toPandas()
    assert list(counts.itertuples(index=False, name=None)) == [
        (s, int((got.state == s).sum())) for s in isr.STATES if (got.state == s).any()]


def test_the_clean_stop_at_the_end_is_one_info_finding(analysed):
    """The scenario stops its cluster cleanly: Kafka writes each broker's controlled shutdown, then
    leaves partitions leaderless. That stop is one ``cluster_stopped`` finding naming every broker,
    from the first broker Kafka took down after the manifest's stop (a broker leading nothing is
    fenced at once, ahead of the controlled shutdown of one that leads), with as many offline
    partitions as Kafka's last partition records left without a leader; no critical finding starts
    inside it, and the incident's own findings (broker stops mid-run) stay."""
    path, manifest, _states, _counts, tables = analysed
    stop_ms = next(e["t_ms"] for e in manifest["events"] if e["event"] == "cluster_stop")
    records = metadata_payloads(path)
    shutdowns = [t for t, p in records if p["type"] == "BROKER_REGISTRATION_CHANGE_RECORD"
                 and p["data"].get("inControlledShutdown") == 1 and t >= stop_ms]
    downs = [t for t, p in records if t >= stop_ms and (p["type"] == "FENCE_BROKER_RECORD" or (
        p["type"] == "BROKER_REGISTRATION_CHANGE_RECORD"
        and (p["data"].get("fenced") == 1 or p["data"].get("inControlledShutdown") == 1)))]
    assert shutdowns, "Kafka wrote no controlled shutdown after the stop"
    brokers = sorted(n["id"] for n in manifest["nodes"] if "broker" in n["roles"])
    leaders: dict[tuple[str, int], int] = {}
    for _t, p in records:
        if p["type"] in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") and "leader" in p["data"]:
            leaders[(p["data"]["topicId"], p["data"]["partitionId"])] = p["data"]["leader"]
    leaderless = sum(1 for leader in leaders.values() if leader == -1)

    stops = isr.cluster_stops(tables.metadata).collect()
    want = [(manifest["cluster_id"], min(downs), brokers)]
    assert [(r.cluster_id, ms(r.start), r.brokers) for r in stops] == want
    found = isr.findings_for(tables, {}).toPandas()
    told = found[found.kind == "cluster_stopped"]
    assert len(told) == 1 and told.iloc[0].severity == "info"
    assert told.iloc[0].figures["offline_partitions"] == leaderless > 0
    critical = found[found.severity == "critical"]
    assert not [ms(t) for t in critical.start if ms(t) >= min(downs)]
    hard_stops = [e["t_ms"] for e in manifest["events"] if e["event"] == "broker_hard_stop"]
    assert critical.start.map(ms).min() > hard_stops[0]  # the mid-run outage is still told, per partition
    # without the stops, the same shutdown is a critical finding per leaderless partition
    bare = isr.findings(isr.states_for(tables, {})).toPandas()
    assert len(bare[(bare.kind == "offline") & (bare.start.map(ms) >= min(downs))]) == leaderless


def test_one_replica_kept_as_parquet_is_replayed_from_its_files_as_the_reference(analysed, spark, tmp_path):
    """The scenario's most complete replica of ``__cluster_metadata`` alone in a bundle, read as a
    Parquet copy: its replay by tasks reading the copy's files (Kafka's own topic, partition,
    partition-change and config records), with the summary and the count's steps computed as the
    intervals are written, gives the reference replay's states, counts and summary."""
    import shutil

    path, _manifest, _states, _counts, tables = analysed
    logs = max((d for d in (path / "nodes").glob("*/logs") if (d / "__cluster_metadata-0").is_dir()),
               key=lambda d: sum(f.stat().st_size for f in (d / "__cluster_metadata-0").glob("*.log")))
    target = tmp_path / "nodes" / logs.parent.name / "logs"
    shutil.copytree(logs / "__cluster_metadata-0", target / "__cluster_metadata-0")
    shutil.copy(logs / "meta.properties", target / "meta.properties")
    one = workbench.load(workbench.open_bundle(tmp_path), spark, materialize_bytes=0)
    static = isr.static_min_isr(tables, {})
    states = isr.partition_states(one.metadata, static_min_isr=static)
    assert _FOLLOWED.get(states) is not None  # the copy's own replay ran
    reference = isr.partition_states(one.metadata, static_min_isr=static, compiled=False)
    assert reference.where("under_min_isr").count() > 0
    assertDataFrameEqual(states, reference)
    assertDataFrameEqual(isr.under_min_isr_counts(states), isr.under_min_isr_counts(reference, compiled=False))
    assertDataFrameEqual(isr.partition_summary(states), isr.partition_summary(reference, compiled=False))


def test_every_replica_manager_gauge_matches_kafkas_samples(analysed):
    """LeaderCount, UnderReplicatedPartitions, AtMinIsrPartitionCount and UnderMinIsrPartitionCount
    per broker, computed from the partition states, equal every sample the brokers reported (JmxTool
    and the Prometheus exporter) away from a change; ``gauges_beside_reported`` judges the same."""
    *_, tables = analysed
    computed = isr.leader_gauges(isr.partition_states(tables.metadata)).toPandas()
    reported = isr.reported_leader_gauges(tables.metrics).toPandas()
    assert set(reported.gauge) == set(isr.LEADER_GAUGES)
    series = {key: (sorted(ms(t) for t in g.time), list(g.sort_values("time").value))
              for key, g in computed.groupby(["broker", "gauge"])}
    want = []
    for r in reported.itertuples():
        times, values = series.get((r.broker, r.gauge), ([], []))
        t_ms = ms(r.time)
        i = bisect.bisect_right(times, t_ms) - 1
        value = values[i] if i >= 0 else 0  # before its first leadership a broker leads nothing
        settling = any(abs(c - t_ms) <= SKEW_MS for c in times)
        want.append((r.broker, r.gauge, t_ms, r.value, value, settling, None if settling else r.value == value))
    beside = isr.gauges_beside_reported(isr.leader_gauges(isr.partition_states(tables.metadata)),
                                        isr.reported_leader_gauges(tables.metrics)).toPandas()
    got = [(r.broker, r.gauge, ms(r.time), r.reported, r.computed, r.settling, None if r.agrees is None else r.agrees)
           for r in beside.itertuples()]
    assert sorted(got, key=str) == sorted(want, key=str)
    judged = [w for w in want if w[6] is not None]
    assert all(w[6] for w in judged), [w for w in judged if not w[6]]
    for gauge in isr.LEADER_GAUGES:  # each gauge was judged, and judged while it was not zero
        assert sum(1 for w in judged if w[1] == gauge and w[3] > 0) >= 3, gauge


def _dumped_history(path: Path, static_min_isr: int) -> list[tuple[int, dict[tuple[str, int], tuple]]]:
    """Every state of the cluster's partitions Kafka's own metadata-log dump passes through: ``(CreateTime ms,
    {(topic, partition): (leader, isr, replicas, min_isr)})`` after each partition or config record; the
    effective ``min.insync.replicas`` is the topic's, else the cluster default's, else ``static_min_isr``."""
    names: dict[str, str] = {}
    parts: dict[tuple[str, int], list] = {}
    topic_min: dict[str, int] = {}
    default: list[int] = []
    history = []
    for t, p in metadata_payloads(path):
        data, kind = p["data"], p["type"]
        if kind == "TOPIC_RECORD":
            names[data["topicId"]] = data["name"]
        elif kind == "PARTITION_RECORD":
            parts[(names[data["topicId"]], data["partitionId"])] = [data["leader"], data["isr"], data["replicas"]]
        elif kind == "PARTITION_CHANGE_RECORD":
            state = parts[(names[data["topicId"]], data["partitionId"])]
            if data.get("leader", -2) != -2:
                state[0] = data["leader"]
            if data.get("isr") is not None:
                state[1] = data["isr"]
            if data.get("replicas") is not None:
                state[2] = data["replicas"]
        elif kind == "CONFIG_RECORD" and data["name"] == "min.insync.replicas":
            if data["resourceType"] == isr.TOPIC_RESOURCE:
                topic_min[data["resourceName"]] = int(data["value"])
            elif data["resourceType"] == isr.BROKER_RESOURCE and data["resourceName"] == "":
                default[:] = [int(data["value"])]
        else:
            continue
        fallback = default[0] if default else static_min_isr
        history.append((t, {k: (v[0], list(v[1]), list(v[2]), topic_min.get(k[0], fallback))
                            for k, v in parts.items()}))
    return history


def _dumped_gauges(state: tuple, broker: int) -> dict[str, int]:
    """Kafka's per-partition gauges of ``broker``'s replica in a dumped state: the leader's figures, 0 elsewhere."""
    leader, in_sync, replicas, min_isr = state
    figures = {"UnderMinIsr": int(len(in_sync) < min_isr), "AtMinIsr": int(len(in_sync) == min_isr),
               "UnderReplicated": int(len(in_sync) < len(replicas)), "InSyncReplicasCount": len(in_sync),
               "ReplicasCount": len(replicas)}
    return {g: v if leader == broker else 0 for g, v in figures.items()}


def test_per_partition_and_controller_gauges_equal_kafkas_samples(analysed):
    """Each replica's ``kafka.cluster:type=Partition`` gauges (UnderMinIsr and its siblings) and each
    controller's ``OfflinePartitionsCount`` / ``GlobalPartitionCount``, JmxTool and Prometheus samples,
    equal the values Kafka's own dump of the metadata log gives at the sample's time away from a change
    (1.5 s); ``kafka_gauges_beside`` judges the same samples, computes the same values and finds every
    one equal; the scenario's incident shows in them (payments and orders under min ISR, audit offline)."""
    path, manifest, _states, _counts, tables = analysed
    history = _dumped_history(path, static_min_isr=2)
    times = [t for t, _ in history]

    def at(t_ms: int) -> dict:
        i = bisect.bisect_right(times, t_ms) - 1
        return history[i][1] if i >= 0 else {}

    def settling(t_ms: int, key: tuple[str, int] | None) -> bool:
        lo, hi = bisect.bisect_left(times, t_ms - SKEW_MS), bisect.bisect_right(times, t_ms + SKEW_MS)
        before = at(t_ms - SKEW_MS - 1)
        return any((history[i][1].get(key) != before.get(key)) if key else history[i][1] != before
                   for i in range(lo, hi))

    beside = isr.kafka_gauges_beside(isr.partition_states(tables.metadata), tables.metrics).toPandas()
    judged: dict[tuple, int] = {}
    for r in beside[~beside.gauge.isin(list(isr.LEADER_GAUGES))].itertuples():
        t_ms = ms(r.time)
        if r.gauge in isr.CLUSTER_GAUGES:
            key, parts = None, at(t_ms)
            want = len(parts) if r.gauge == "GlobalPartitionCount" else sum(s[0] == -1 for s in parts.values())
        else:
            topic, partition = r.subject.rsplit("-", 1)
            key = (topic, int(partition))
            want = _dumped_gauges(at(t_ms)[key], r.broker)[r.gauge]
        if settling(t_ms, key):
            continue
        assert (r.gauge, r.subject, r.broker, t_ms, r.reported, r.computed, r.agrees) == (
            r.gauge, r.subject, r.broker, t_ms, want, want, True)
        if r.reported > 0:
            judged[(r.gauge, r.subject)] = judged.get((r.gauge, r.subject), 0) + 1
    assert set(beside.gauge) == {*isr.LEADER_GAUGES, *isr.PARTITION_GAUGES, *isr.CLUSTER_GAUGES}
    assert set(beside[beside.gauge.isin(list(isr.CLUSTER_GAUGES))].broker) == {1, 2, 3}  # every controller
    incident = {("UnderMinIsr", "payments-0"), ("UnderMinIsr", "payments-1"), ("UnderMinIsr", "orders-0"),
                ("OfflinePartitionsCount", f"cluster {manifest['cluster_id']}")}
    assert {k for k, n in judged.items() if n >= 3} >= incident, judged
    assert beside.agrees.dropna().all()
