"""A flapping ISR on real Kafka (``flap`` scenario: one broker paused again and again, now past its
session timeout, now only past ``replica.lag.time.max.ms``): each replica that left and joined an
ISR, and why, against Kafka's own dump of the metadata log, batch by batch."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench
from tests.kafka_bundles import dump_entries, manifest
from workbench.analysis import isr
from workbench.analysis.metadata_log import broker_changes

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _dumped_batches(path: Path) -> list[list[dict]]:
    """The batches of the controller's metadata-log dump: each a list of its records' payloads, with the
    record's CreateTime under ``t_ms``."""
    import json

    dump = next(e["dump"] for e in dump_entries(path)
                if "__cluster_metadata" in e["file"] and e["file"].endswith(".log"))
    batches: list[list[dict]] = []
    for line in (path / dump).read_text(encoding="utf-8").splitlines():
        if line.startswith("baseOffset: "):
            batches.append([])
        elif " payload: " in line and batches:
            payload = json.loads(line.split(" payload: ", 1)[1])
            payload["t_ms"] = int(line.split("CreateTime: ", 1)[1].split()[0])
            batches[-1].append(payload)
    return batches


def _dumped_moves(path: Path) -> list[tuple]:
    """Each replica that left or joined an ISR between the partitions' states of successive milliseconds,
    as Kafka's dump gives them: ``(topic, partition, t_ms, replica, move, cause)``. A leave is ``fenced`` or
    ``controlled_shutdown`` when the batch whose record removed the replica holds that broker's fence or
    controlled shutdown, else ``fell_behind``; a join is ``unfenced`` when the broker's last registration
    change before it unfenced it after the replica's previous leave, else ``caught_up``."""
    names: dict[str, str] = {}
    isr_now: dict[tuple[str, int], list[int]] = {}
    shown: dict[tuple[str, int], list[int]] = {}    # the ISR as of the last millisecond closed
    why_left: dict[tuple[tuple[str, int], int], str] = {}
    left_at: dict[tuple[tuple[str, int], int], int] = {}
    last_event: dict[int, tuple[str, int]] = {}     # broker -> (fenced / unfenced / controlled_shutdown, record no)
    pending: dict[tuple[str, int], int] = {}        # partition -> the millisecond of its unclosed changes
    joined_after: dict[tuple[tuple[str, int], int], str] = {}
    moves: list[tuple] = []
    serial = 0

    def close(key: tuple[str, int]) -> None:
        t_ms = pending.pop(key)
        before, after = shown.get(key, []), isr_now[key]
        for r in sorted(set(before) - set(after)):
            moves.append((key[0], key[1], t_ms, r, "left", why_left[(key, r)]))
        for r in sorted(set(after) - set(before)):
            moves.append((key[0], key[1], t_ms, r, "joined", joined_after[(key, r)]))
        shown[key] = list(after)

    for batch in _dumped_batches(path):
        events = {}
        for p in batch:
            data = p["data"]
            if p["type"] == "BROKER_REGISTRATION_CHANGE_RECORD":
                if data.get("fenced") == 1:
                    events[data["brokerId"]] = "fenced"
                elif data.get("fenced") == -1:
                    events[data["brokerId"]] = "unfenced"
                elif data.get("inControlledShutdown") == 1:
                    events.setdefault(data["brokerId"], "controlled_shutdown")
            elif p["type"] in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
                events[data["id"]] = "fenced" if p["type"] == "FENCE_BROKER_RECORD" else "unfenced"
        for p in batch:
            serial += 1
            data, kind = p["data"], p["type"]
            if kind == "TOPIC_RECORD":
                names[data["topicId"]] = data["name"]
                continue
            if kind in ("BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD",
                        "REGISTER_BROKER_RECORD"):
                broker = data.get("brokerId", data.get("id"))
                if broker in events:
                    last_event[broker] = (events[broker], serial)
                continue
            if kind not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") or data.get("isr") is None:
                continue
            key = (names[data["topicId"]], data["partitionId"])
            if key in pending and pending[key] != p["t_ms"]:
                close(key)
            before = isr_now.get(key, data["isr"] if kind == "PARTITION_RECORD" else [])
            for r in set(before) - set(data["isr"]):
                explained = events.get(r) in ("fenced", "controlled_shutdown")
                why_left[(key, r)] = events[r] if explained else "fell_behind"
                left_at[(key, r)] = serial
            for r in set(data["isr"]) - set(before):
                event = last_event.get(r)
                rejoined = event is not None and event[0] == "unfenced" and event[1] > left_at.get((key, r), 0)
                joined_after[(key, r)] = "unfenced" if rejoined else "caught_up"
            isr_now[key] = list(data["isr"])
            if kind == "PARTITION_RECORD":
                shown[key] = list(data["isr"])
            else:
                pending[key] = p["t_ms"]
    for key in list(pending):
        close(key)
    return moves


@pytest.fixture(scope="module")
def flapped(spark, kafka_bundle):
    path = Path(kafka_bundle("flap"))
    tables = workbench.load(workbench.open_bundle(path), spark)
    return path, tables


def test_each_isr_leave_and_join_and_its_cause_is_what_kafkas_dump_shows(flapped):
    """Every replica that left or joined an ISR, with the fence, controlled shutdown or unfence that
    explains it, equals what Kafka's own dump shows batch by batch; the paused broker left both ways
    (fenced past its session timeout, behind its leaders inside it) and rejoined after its unfences."""
    path, tables = flapped
    want = _dumped_moves(path)
    states = isr.states_for(tables, {})
    got = isr.replica_moves(states, broker_changes(tables.metadata)).toPandas()
    rows = sorted((r.topic, r.partition, int(r.time.timestamp() * 1000), r.replica, r.move, r.cause)
                  for r in got.itertuples())
    assert rows == sorted(want)
    victim = next(e["node"] for e in manifest(path)["events"] if e["event"] == "broker_paused")
    causes = {(m[4], m[5]) for m in want if m[3] == victim}
    assert {("left", "fenced"), ("left", "fell_behind"), ("joined", "unfenced")} <= causes, causes


def test_the_flapping_finding_names_the_paused_broker_and_why_it_left(flapped):
    """Each partition whose ISR lost the paused broker at least three times before the clean stop is
    one ``isr_flapping`` finding that names that broker with as many leaves, fenced and behind, as
    Kafka's dump shows; the stop's own changes are not counted."""
    path, tables = flapped
    events = manifest(path)["events"]
    victim = next(e["node"] for e in events if e["event"] == "broker_paused")
    stop_ms = next(e["t_ms"] for e in events if e["event"] == "cluster_stop")
    leaves: dict[tuple[str, int], list[str]] = {}
    for topic, partition, t_ms, replica, move, cause in _dumped_moves(path):
        if move == "left" and t_ms < stop_ms:
            assert replica == victim
            leaves.setdefault((topic, partition), []).append(cause)
    found = isr.findings_for(tables, {}).toPandas()
    flapping = found[found.kind == "isr_flapping"]
    want = {}
    for (topic, partition), causes in leaves.items():
        if len(causes) < 3:
            continue
        reasons = ", ".join(f"{label} {causes.count(c)}" for c, label in (("fenced", "fenced"),
                                                                          ("fell_behind", "fell behind"))
                            if causes.count(c))
        want[f"{topic}-{partition}"] = f"broker {victim} left {len(causes)} times ({reasons})"
    assert want, leaves
    got = {r.subject: r.summary.split(" (flapping): ", 1)[1] for r in flapping.itertuples()}
    assert got == want
    for r in flapping.itertuples():
        causes = leaves[tuple([r.subject.rsplit("-", 1)[0], int(r.subject.rsplit("-", 1)[1])])]
        assert (r.figures["fenced_leaves"], r.figures["lagged_leaves"]) == (
            causes.count("fenced"), causes.count("fell_behind"))
