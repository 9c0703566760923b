"""Whole-cluster stops in the middle of the log, judged by the ``restarts`` scenario and Kafka's own dump.

The scenario stops its cluster cleanly and starts it again, then kills every node and starts it
again, then kills one broker alone (peer/scenarios/restarts.py). Each whole-cluster stop must be one
finding with the downtime the manifest records, and the quorum's silence and the partitions' offline
intervals during it must not be told as a commit stall and an outage.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import workbench
from tests.kafka_bundles import dump_entries, dumped_final_states
from workbench.analysis import isr, quorum
from workbench.analysis.metadata_log import cluster_restarts

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: A live quorum writes a NoOpRecord at least every idle interval (metadata.max.idle.interval.ms).
IDLE_MS = 500


@pytest.fixture(scope="module")
def bundle(spark, kafka_bundle):
    path = Path(kafka_bundle("restarts"))
    tables = workbench.load(workbench.open_bundle(path), spark)
    return path, json.loads((path / "manifest.json").read_text()), tables


def ms(ts) -> int:
    return int(ts.timestamp() * 1000)


def events(manifest: dict, name: str) -> list[int]:
    return [e["t_ms"] for e in manifest["events"] if e["event"] == name]


def kafka_dump_records(path: Path) -> list[tuple[int, str, dict]]:
    """(CreateTime, kind, data) of every record of the controller's metadata-log dump by Kafka's tool:
    kind is ``LeaderChange`` for the control record a new leader writes, else the payload's type."""
    dumps = [e["dump"] for e in dump_entries(path) if "__cluster_metadata" in e["file"] and e["file"].endswith(".log")]
    best: list[tuple[int, str, dict]] = []
    for dump in dumps:
        rows = []
        for line in (path / dump).read_text(encoding="utf-8").splitlines():
            created = re.search(r"CreateTime: (\d+)", line)
            if created is None:
                continue
            if " LeaderChange: " in line:
                rows.append((int(created.group(1)), "LeaderChange", json.loads(line.split(" LeaderChange: ", 1)[1])))
            elif " payload: " in line:
                payload = json.loads(line.split(" payload: ", 1)[1])
                rows.append((int(created.group(1)), payload["type"], payload["data"]))
        best = rows if len(rows) > len(best) else best
    return best


def test_each_whole_cluster_stop_is_found_with_the_downtime_the_manifest_records(bundle):
    path, manifest, tables = bundle
    got = cluster_restarts(tables.metadata).orderBy("start").toPandas()
    stops, downs = events(manifest, "whole_cluster_stop"), events(manifest, "whole_cluster_down")
    starts, readies = events(manifest, "whole_cluster_start"), events(manifest, "whole_cluster_ready")
    cleans = [e["clean"] for e in manifest["events"] if e["event"] == "whole_cluster_stop"]
    assert len(stops) == 2 and cleans == [True, False]
    brokers = sorted(n["id"] for n in manifest["nodes"] if "broker" in n["roles"] and "controller" not in n["roles"])
    assert list(got.clean) == cleans
    assert [list(b) for b in got.brokers] == [brokers, brokers]
    records = kafka_dump_records(path)
    times = sorted(t for t, _, _ in records)
    up_since = times[0]
    for row, stop, down, start, ready, clean in zip(got.itertuples(), stops, downs, starts, readies, cleans,
                                                     strict=True):
        # a live quorum writes at least once per idle interval, late under load (the longest silence
        # Kafka's own dump shows while the cluster was up); the record due as the kill lands is lost
        before = [t for t in times if up_since <= t <= stop]
        up_since = ms(row.end)
        idle = max([IDLE_MS, *(b - a for a, b in zip(before, before[1:], strict=False))])
        assert stop - 2 * idle <= ms(row.start) <= down, (row, stop, down, idle)
        if not clean:  # killed: nothing was written, the stop starts at the log's last record before it
            assert ms(row.start) == max(t for t in times if t <= down), (row, down)
        assert start <= ms(row.resumed) <= ms(row.end) <= ready, (row, start, ready)
        assert row.seconds == pytest.approx((ms(row.end) - ms(row.start)) / 1000.0)

    # against Kafka's own dump: each stop ends a leader epoch; the controllers' return is the new
    # leader's LeaderChange record, and the stop ends at the last broker's unfencing after it
    changes = [t for t, kind, _ in records if kind == "LeaderChange"]
    assert [ms(r) for r in got.resumed] == changes[1:3]
    for row in got.itertuples():
        registered: set[int] = set()
        back: dict[int, int] = {}
        for t, kind, data in records:
            if t < ms(row.resumed):
                continue
            broker = data.get("brokerId")
            if kind == "REGISTER_BROKER_RECORD":
                registered.add(broker)
            elif kind == "BROKER_REGISTRATION_CHANGE_RECORD" and data.get("fenced") == -1 and broker in registered:
                back.setdefault(broker, t)
            if len(back) == len(brokers):
                break
        assert ms(row.end) == max(back.values()), (row, back)


def test_each_stop_is_one_finding_and_no_outage_or_stall_is_told_for_it(bundle):
    _path, manifest, tables = bundle
    restarts = cluster_restarts(tables.metadata).orderBy("start").toPandas()
    found = isr.findings_for(tables, {}).toPandas()
    told = found[found.kind == "cluster_restarted"].sort_values("start")
    assert [(ms(s), ms(e)) for s, e in zip(told.start, told.end, strict=True)] == [
        (ms(s), ms(e)) for s, e in zip(restarts.start, restarts.end, strict=True)]
    assert set(told.severity) == {"warning"}
    assert [f["seconds"] for f in told.figures] == pytest.approx(list(restarts.seconds))
    assert all(f["offline_partitions"] == 2 for f in told.figures)  # both partitions of `events`
    for row in restarts.itertuples():
        inside = found[(found.start >= row.start) & (found.start <= row.end) & (found.kind != "cluster_restarted")]
        assert inside.empty, inside[["kind", "start", "summary"]]
    assert not (found.kind == "isr_flapping").any(), found[found.kind == "isr_flapping"].summary.tolist()
    # the clean stop at the end of the log stays the info finding it was
    assert list(found[found.kind == "cluster_stopped"].severity) == ["info"]

    # the same partitions without the restarts: an outage per partition and stop, as before
    bare = isr.findings(isr.states_for(tables, {})).toPandas()
    for row in restarts.itertuples():
        offline = bare[(bare.kind == "offline") & (bare.start >= row.start) & (bare.start <= row.end)]
        assert len(offline) == 2, offline

    # the quorum was silent in each stop (Kafka's controllers were down): a stall the stop explains.
    # A loaded machine may show more than one: a controller elected as the nodes come back may take
    # longer than the threshold to activate before brokers register; the findings above tell none.
    result = quorum.analyse(tables, {})
    stalls = result.stalls.toPandas()
    for row in restarts.itertuples():
        assert ((stalls.start >= row.start) & (stalls.start <= row.end)).sum() >= 1, (row, stalls)
    assert quorum.unexplained_stalls(result).count() == 0
    q = quorum.findings_for(tables, {}).toPandas()
    assert not (q.kind == "commit_stall").any(), q[q.kind == "commit_stall"].summary.tolist()
    assert quorum.key_figures(result)["commit_stalls"] == 0
    assert events(manifest, "broker_hard_stop"), "the scenario kills one broker alone too"


def test_after_the_stops_each_partitions_final_state_is_what_kafkas_dump_leaves(bundle):
    """Killing every node at once, then the clean stop at the end (brokers fenced and shut down
    within milliseconds): each partition's last leader and ISR are those Kafka's own dump of the
    metadata log leaves, every record applied in offset order."""
    path, _manifest, tables = bundle
    final = dumped_final_states(path)
    got = isr.final_states(isr.partition_states(tables.metadata)).toPandas()
    assert {(r.topic_id, r.partition): (r.leader, sorted(r.isr)) for r in got.itertuples()} == final
    assert len(final) > 0
