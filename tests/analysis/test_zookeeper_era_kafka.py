"""A ZooKeeper-era cluster judged by real Kafka: the ISR area from its text logs alone, consumer lag.

The ``zk_isr`` scenario runs ZooKeeper and three Kafka brokers in ZooKeeper mode, on each release of
``peer.scenario.ZK_SETS`` (peer/scenarios/zk_isr.py): under load it kills broker 3, then broker 2 (``orders`` goes under
``min.insync.replicas`` 2), restarts both, and stops the cluster; ``kafka-topics --describe`` is
captured after every step and JmxTool samples each broker's ReplicaManager gauges; then a consumer
group reads part of the topic twice, ``kafka-consumer-groups --describe`` captured after each read.
The bundle has no metadata log: the partition history is what the brokers and the controller wrote
to ``server.log``, ``state-change.log`` and ``controller.log``.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import workbench
from peer.scenario import ZK_SETS
from tests.kafka_bundles import candidate_views, lag_beside_captures, states_at
from workbench.analysis import isr
from workbench.formats.tooltext import parse_topics_describe

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

TOPIC = "orders"   # the topic of the incident (the consumer group creates __consumer_offsets at the end)


@pytest.fixture(scope="module", params=sorted(v for v, names in ZK_SETS.items() if "zk_isr" in names))
def analysed(request, spark, kafka_bundle):
    path = Path(kafka_bundle("zk_isr", request.param))
    tables = workbench.load(workbench.open_bundle(path), spark)
    states = isr.states_for(tables, {})
    return path, json.loads((path / "manifest.json").read_text()), states, states.toPandas(), tables


def ms(ts) -> int:
    return int(ts.timestamp() * 1000)


def test_the_cluster_is_replayed_from_its_text_logs(analysed):
    path, manifest, _states, frame, tables = analysed
    assert tables.metadata.count() == 0   # no metadata log: everything below comes from the text logs
    assert isr.text_log_clusters(tables.bundle)[0] == manifest["cluster_id"]
    assert set(frame.cluster_id) == {manifest["cluster_id"]}
    assert set(frame.min_isr) == {2}   # the brokers' server.properties


#: Before inter-broker protocol 2.7 (no AlterIsr) a leader writes its ISR change to ZooKeeper itself and
#: the brokers' metadata caches, which ``kafka-topics --describe`` reads, learn it when the leader
#: propagates its ISR change notifications: once no ISR of that broker changed for 5 s, checked every
#: 2.5 s (``ReplicaManager``'s ``IsrChangePropagationBlackOut`` and its propagation task), then the
#: controller's UpdateMetadata. Each staged change here is followed by more than 5 s without one, so a
#: describe may show the state of up to 5 + 2.5 s + 2.5 s (the controller, the cache) before it; and as
#: each leader propagates its own partitions' changes, each partition's shown state is one it had in
#: that window, not necessarily at the same instant as another leader's partitions.
LEGACY_DESCRIBE_LAG_MS = 10_000


def legacy_isr_protocol(manifest: dict) -> bool:
    """Whether the scenario ran its brokers on an inter-broker protocol before 2.7 (ISR changes to ZooKeeper)."""
    settings = next(e["settings"] for e in manifest["events"] if e["event"] == "cluster_format")
    version = settings.get("inter.broker.protocol.version")
    return version is not None and tuple(int(x) for x in version.split(".")[:2]) < (2, 7)


def test_topics_describe_matches_a_state_of_its_run_window(analysed):
    path, manifest, _states, frame, _ = analysed
    tools = manifest["tools"]
    checked = 0
    lag = LEGACY_DESCRIBE_LAG_MS if legacy_isr_protocol(manifest) else 0
    for i, tool in enumerate(tools):
        if tool["tool"] != "kafka-topics" or "--describe" not in tool["args"]:
            continue
        # the tool's answer holds at some instant between its start and its exit (``t_end_ms``); the next
        # entry of the list is no bound: a background tool (the producer) is listed when it ends
        end = tool.get("t_end_ms") or (tools[i + 1]["t_ms"] if i + 1 < len(tools) else manifest["events"][-1]["t_ms"])
        parsed = parse_topics_describe((path / tool["file"]).read_text())
        assert not parsed.problems
        shown = {(p["topic"], p["partition"]): (p["leader"], sorted(p["replicas"]), sorted(p["isr"]))
                 for p in parsed.partitions}
        if not shown:
            continue   # the topic not created yet
        views = [{k: (v[0], sorted(v[1]), sorted(v[2])) for k, v in view.items() if k[0] == TOPIC}
                 for view in candidate_views(frame, tool["t_ms"] - lag, end)]
        if lag:   # each partition as its own leader propagated it
            ok = all(any(view.get(k) == v for view in views) for k, v in shown.items()) and all(
                set(view) == set(shown) for view in views[-1:])
        else:
            ok = any(view == shown for view in views)
        assert ok, f"{tool['file']}: tool shows {shown}; computed states in its window: {views}"
        checked += 1
    assert checked >= 5, checked


def test_every_staged_shrink_and_expand_in_order(analysed):
    """Each partition's ISR at each step of the incident; each goes under min ISR when the second
    broker is killed. Any other under-min-ISR interval before the stop at the end starts where a
    leader logged the partition's ISR below min ISR: on a loaded machine (a CI build) followers that
    have not fetched within ``replica.lag.time.max.ms`` of the topic's creation are dropped by their
    leaders."""
    path, manifest, _states, frame, _ = analysed
    at = {e["event"] + str(e.get("node", "")): e["t_ms"] for e in manifest["events"]}
    ready = [e["t_ms"] for e in manifest["events"] if e["event"] == "brokers_ready"]
    steps = [  # (moment, the ISR every partition must show by then)
        (at["broker_hard_stop2"], [1, 2]),       # 3 killed: out of every ISR
        (at["broker_restart2"], [1]),            # 2 killed too: only 1, under min ISR 2
        (at["broker_restart3"], [1, 2]),         # 2 back in
        (at["produce_end"], [1, 2, 3]),          # 3 back in
    ]
    partitions = sorted({(t, p) for t, p in zip(frame.topic, frame.partition, strict=True) if t == TOPIC})
    assert len(partitions) == 3
    for moment, want in steps:
        view = states_at(frame, moment)
        assert {k: sorted(v[2]) for k, v in view.items() if k in partitions} == dict.fromkeys(partitions, want), \
            (moment, view)
    incident = (frame.topic == TOPIC) & frame.start.map(lambda t: ms(t) < at["cluster_stop"])
    under = frame[incident & frame.under_min_isr & (frame.leader >= 0)]
    lines = leader_isr_lines(path)
    staged = set()
    for topic, partition, start in zip(under.topic, under.partition, under.start, strict=True):
        name, t = f"{topic}-{partition}", ms(start)
        if at["broker_hard_stop2"] < t < ready[0]:
            staged.add(name)
        else:
            assert any(p == name and isr_ is not None and len(isr_) < 2 and abs(t - t_line) <= 50
                       for t_line, p, isr_ in lines), (name, start, [x for x in lines if x[1] == name])
    assert staged == {f"{t}-{p}" for t, p in partitions}


#: A ZooKeeper-era broker's gauges change when it handles the controller's LeaderAndIsr request,
#: after the controller logged the decision the computed change is stamped with: 1.85 s for a
#: leadership at topic creation in a CI build (load ~10 on 2 cores), above the KRaft window.
ZK_SETTLE_MS = 3000


#: A broker's ``state-change.log`` line as it has applied a ``LeaderAndIsr`` request of the controller.
APPLIED_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] \w+ \[Broker id=(\d+)\] "
                          r"Finished LeaderAndIsr request")


def applied_requests(path: Path) -> dict[int, list[int]]:
    """Per broker, the times (ms) it finished applying a ``LeaderAndIsr`` request, in order."""
    out: dict[int, list[int]] = {}
    for log in sorted(path.glob("nodes/*/log4j/state-change.log*")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if m := APPLIED_LINE.match(line):
                out.setdefault(int(m.group(2)), []).append(ms(pd.Timestamp(m.group(1).replace(",", "."))))
    return {b: sorted(ts) for b, ts in out.items()}


def test_every_replica_manager_gauge_agrees_with_kafkas_samples(analysed):
    """Every sample of a broker's ReplicaManager gauges equals the computed gauge, outside
    ``ZK_SETTLE_MS`` of a change. A broker learns a leadership only from the controller's
    ``LeaderAndIsr`` request, which a loaded broker may apply seconds after the controller decided:
    a ``LeaderCount`` sample still showing the value from before the change is Kafka's own answer
    when the broker's ``state-change.log`` shows it had applied no request since the change."""
    path, _manifest, states, _frame, tables = analysed
    computed = isr.leader_gauges(states)
    beside = isr.gauges_beside_reported(computed, isr.reported_leader_gauges(tables.metrics), settle_ms=ZK_SETTLE_MS)
    judged = beside.where("agrees IS NOT NULL").toPandas()
    steps = computed.selectExpr("broker", "gauge", "unix_millis(time) AS t", "value").toPandas()
    applied = applied_requests(path)

    def not_yet_applied(row) -> bool:
        series = steps[(steps.broker == row.broker) & (steps.gauge == row.gauge)].sort_values("t")
        before = series[series.t <= ms(row.time)]
        if row.gauge != "LeaderCount" or before.empty:
            return False
        change, earlier = before.t.iloc[-1], (before.value.iloc[-2] if len(before) > 1 else 0)
        return row.reported == earlier and not any(change <= t <= ms(row.time) for t in applied.get(row.broker, []))

    disagree = judged[~judged.agrees]
    wrong = disagree[~disagree.apply(not_yet_applied, axis=1).astype(bool)] if len(disagree) else disagree
    assert wrong.empty, wrong
    nonzero = judged[(judged.gauge == "UnderMinIsrPartitionCount") & (judged.reported > 0)]
    assert len(nonzero) >= 3, len(nonzero)


def test_controller_gauges_are_judged_at_the_active_controller_only(analysed):
    """Every ZooKeeper-era broker exports ``KafkaController`` gauges, and reports 0 for them unless it is
    the active controller: the ``OfflinePartitionsCount`` samples judged are exactly those JmxTool's own
    CSVs show with ``ActiveControllerCount`` 1 (or a count above 0), and each agrees."""
    path, _manifest, _states, _frame, tables = analysed
    col = "kafka.controller:type=KafkaController,name={}:Value"
    want = set()
    for export in sorted((path / "metrics").glob("*-isr.csv")):
        broker = int(export.name.split("-")[0])
        for row in csv.DictReader(export.open()):
            active, offline = row[col.format("ActiveControllerCount")], row[col.format("OfflinePartitionsCount")]
            if offline.strip() and (active.strip() == "1" or int(offline) > 0):
                want.add((broker, int(row["time"])))
    beside = isr.kafka_gauges_for(tables, {}).where("gauge = 'OfflinePartitionsCount'").toPandas()
    assert want and {(b, ms(t)) for b, t in zip(beside.broker, beside.time, strict=True)} == want
    assert beside.agrees.dropna().all() and beside.agrees.notna().sum() >= 10, beside[beside.agrees == False]  # noqa: E712


#: A partition leader's ISR change in ``server.log`` (2.8: ``ISR updated to 1,2 and version ...``; 3.x
#: adds ``(under-min-isr)``), and its shrink of the ISR.
ISR_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] INFO \[Partition (\S+) broker=\d+\] "
                      r"(ISR updated to ([\d,]+)|Shrinking ISR)")
#: The controller's own ISR change (``controller.log``), as when it removes a replica of a broker in
#: controlled shutdown: ``Partition P state changed to (Leader:3,ISR:3,...) after removing replica 2``.
CONTROLLER_ISR_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] INFO \[Controller id=\d+ epoch=\d+\] "
                                 r"Partition (\S+) state changed to \(Leader:-?\d+,ISR:([\d,]*),")


def leader_isr_lines(path: Path) -> list[tuple[int, str, list[int] | None]]:
    """(time ms, partition, new ISR or None for a shrink announced) of every ISR line of a leader
    (``server.log``) or of the controller (``controller.log``)."""
    out = []
    for log in sorted(path.glob("nodes/*/log4j/*.log*")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if m := ISR_LINE.match(line):
                isr_ = [int(b) for b in m.group(4).split(",")] if m.group(4) else None
            elif m := CONTROLLER_ISR_LINE.match(line):
                isr_ = [int(b) for b in m.group(3).split(",") if b]
            else:
                continue
            out.append((ms(pd.Timestamp(m.group(1).replace(",", "."))), m.group(2), isr_))
    return out


def logged_shrinks(lines: list[tuple[int, str, list[int] | None]], created: dict[str, set[int]],
                   before_ms: int) -> dict[str, int]:
    """Per partition, how many of the logged ISR changes before ``before_ms`` dropped a replica of the
    ISR logged before them (a same-size swap too); ``created`` is each partition's ISR at creation."""
    last = dict(created)
    out: dict[str, int] = {}
    for t, p, isr_ in sorted(lines, key=lambda x: x[0]):
        if isr_ is None or t >= before_ms:
            continue
        if p in last and last[p] - set(isr_):
            out[p] = out.get(p, 0) + 1
        last[p] = set(isr_)
    return out


def test_the_area_reports_the_incident_and_the_stop_at_the_end_once(analysed):
    """The staged incident: every ``orders`` partition under min ISR from the second broker's stop to
    its restart; the clean stop at the end: one finding, not an outage of every partition.

    A leader may drop a follower again right after its restart (its last caught-up time still from
    before its stop; measured on a loaded CI machine: broker 2 added to ``orders-1`` and dropped 13 ms
    later, back 19 ms after that): any other under-min-ISR finding starts where a leader logged the
    partition's ISR below min ISR, and flapping is told only of a partition a leader shrank after
    that restart. Whatever the stop at the end did to a partition (the controller removing each
    stopping broker from its ISR, then leaving it without a leader) is told in the stop's finding,
    never as a critical finding of its own."""
    path, manifest, _states, frame, tables = analysed
    found = isr.grouped_area_findings(isr.analyse(tables)).toPandas()
    at = {e["event"] + str(e.get("node", "")): e["t_ms"] for e in manifest["events"]}
    under = found[found.kind == "under_min_isr"]
    staged = under.start.map(lambda t: at["broker_hard_stop2"] < ms(t) < at["broker_restart2"])
    assert sorted(under[staged].subject) == ["orders-0", "orders-1", "orders-2"], found
    lines = leader_isr_lines(path)
    for row in under[~staged].itertuples():
        assert any(p == row.subject and isr_ is not None and len(isr_) < 2 and abs(t - ms(row.start)) <= 50
                   for t, p, isr_ in lines), (row, [x for x in lines if x[1] == row.subject])
    stopped = found[found.kind == "cluster_stopped"]
    assert list(stopped.subject) == [manifest["cluster_id"]] and ms(stopped.start.iloc[0]) > at["cluster_stop"]
    flapping = found[found.kind == "isr_flapping"]
    created = {f"{t}-{p}": set(r) for t, p, r in zip(frame.topic, frame.partition, frame.replicas, strict=True)}
    shrinks = logged_shrinks(lines, created, ms(stopped.start.iloc[0]))
    assert {p: int(f["shrinks"]) for p, f in zip(flapping.subject, flapping.figures, strict=True)} == \
        {p: n for p, n in shrinks.items() if n >= 3}, (flapping, shrinks)
    critical = found[found.severity == "critical"]
    assert not (critical.start >= stopped.start.iloc[0]).any(), critical
    assert set(found.kind) - {"isr_flapping"} == {"under_min_isr", "cluster_stopped"}, found


def test_consumer_lag_equals_kafka_consumer_groups_at_every_capture(analysed):
    path, manifest, *_, tables = analysed
    mine, want = lag_beside_captures(tables, path, manifest)
    assert want.path.nunique() == 2 and set(want.group) == {"zk-reader"} and (want.lag > 0).any()
    pd.testing.assert_frame_equal(mine, want, check_dtype=False)


def test_a_cluster_on_the_0_10_formats_is_read_in_them(analysed):
    """Where the scenario ran the brokers on inter-broker protocol and message format 0.10.2
    (``peer.scenarios.zk_isr.LEGACY_FORMAT``), the bundle's batches are magic 1 and its offset commits
    value version 1, and every check of this module judged them; elsewhere magic 2 and version 3."""
    _path, manifest, *_, tables = analysed
    settings = next(e["settings"] for e in manifest["events"] if e["event"] == "cluster_format")
    legacy = settings.get("log.message.format.version") == "0.10.2"
    magics = {r.magic for r in tables.batches.where(f"topic = '{TOPIC}'").select("magic").distinct().collect()}
    commits = tables.offsets.where("record_kind = 'OffsetCommit' AND NOT deleted")
    versions = {r.value_version for r in commits.select("value_version").distinct().collect()}
    assert (magics, versions) == (({1}, {1}) if legacy else ({2}, {3}))


def test_data_dirs_without_meta_properties_are_numbered_from_their_paths(analysed, spark, tmp_path):
    """The same cluster copied as people copy very old data dirs: no ``meta.properties``, each log dir
    at the top as ``kafka-logs-<n>``; every file keeps its node, the answers stay the same."""
    path, manifest, _states, frame, _ = analysed
    copy = tmp_path / "incident"
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("meta.properties"))
    nodes = sorted(int(p.name) for p in (path / "nodes").iterdir() if (p / "logs").is_dir())
    for n in nodes:
        (copy / "nodes" / str(n) / "logs").rename(copy / f"kafka-logs-{n}")
    bundle = workbench.open_bundle(copy)
    assert bundle.path_nodes == {f"kafka-logs-{n}": n for n in nodes}
    def moved(rel: str) -> str:
        for n in nodes:
            if rel.startswith(f"nodes/{n}/logs/"):
                return f"kafka-logs-{n}/" + rel[len(f"nodes/{n}/logs/"):]
        return rel

    before = {moved(a.path): a.node_id for a in workbench.open_bundle(path).artifacts if a.kind != "meta_properties"}
    assert {a.path: a.node_id for a in bundle.artifacts} == before
    shown = subprocess.run([sys.executable, "-m", "workbench", "inspect", str(copy)], capture_output=True,
                           text=True, timeout=120, check=True).stdout
    for n in nodes:
        assert f"node {n} (kafka-logs-{n}: no meta.properties, numbered from its path)" in shown, shown

    tables = workbench.load(bundle, spark)
    states = isr.states_for(tables, {}).toPandas()
    assert set(states.cluster_id) == {None}   # no meta.properties: no cluster id, one cluster all the same
    key = ["topic", "partition", "start"]
    pd.testing.assert_frame_equal(states.drop(columns="cluster_id").sort_values(key).reset_index(drop=True),
                                  frame.drop(columns="cluster_id").sort_values(key).reset_index(drop=True))
    mine, want = lag_beside_captures(tables, copy, manifest)
    assert len(want) > 0
    pd.testing.assert_frame_equal(mine, want, check_dtype=False)
