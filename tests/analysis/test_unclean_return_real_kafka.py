"""An unclean election whose old leader returns and truncates, judged by the producer's callback log and Kafka's tools.

The ``unclean_return`` scenario (``peer/scenarios/unclean_return.py``): broker 2 leads ``orders-0``
(replicas 2, 3, ``unclean.leader.election.enable``); with the follower down, 300 records are
acknowledged by the leader alone (``acks=1``) and group ``readers`` commits past them; the leader is
killed, the follower elected uncleanly and written to, then the old leader restarted: it truncates
and copies the new leader's records. The records are gone from every replica: the truth is the
producer's callback log (``oracle/acked.jsonl``: each acknowledged record's id and offset) against
Kafka's own dump of the final log, and ``kafka-consumer-groups --describe`` after the return.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import workbench
from tests.formats.kafka_dump_runs import run_dump_log
from workbench.analysis import replicas

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

_KEY = re.compile(r"\| offset: (\d+) .*?\bkey: (\S+)")


@pytest.fixture(scope="module")
def returned(kafka_bundle, spark):
    from peer.kafka import DEFAULT_VERSION

    root = Path(kafka_bundle("unclean_return")).resolve()
    manifest = json.loads((root / "manifest.json").read_text())
    tables = workbench.load(workbench.open_bundle(root), spark)
    return root, DEFAULT_VERSION, manifest, replicas.analyse(tables, {})


@pytest.fixture(scope="module")
def final_log(returned) -> dict[int, dict[int, str]]:
    """Each replica's ``orders-0`` after the return, as ``kafka-dump-log --print-data-log`` prints it: offset -> key."""
    root, version, *_ = returned
    segments = sorted(root.glob("nodes/*/logs/orders-0/*.log"))
    held: dict[int, dict[int, str]] = {}
    for seg, run in zip(segments, run_dump_log(version, [["--files", str(s), "--print-data-log"] for s in segments]),
                        strict=True):
        assert not run.failure, (seg, run.failure)
        held.setdefault(int(seg.parts[-4]), {}).update(
            {int(m[1]): m[2] for m in map(_KEY.search, run.stdout.splitlines()) if m})
    return held


def acked(root: Path) -> dict[str, int]:
    """The producer's callback log: each acknowledged record's id -> the offset the leader gave it."""
    lines = [json.loads(x) for x in (root / "oracle" / "acked.jsonl").read_text().splitlines()]
    assert not [x for x in lines if "error" in x]
    return {x["id"]: x["offset"] for x in lines}


def test_the_lost_records_are_the_acknowledged_ones_no_longer_in_the_log(returned, final_log):
    root, _version, manifest, result = returned
    ids = acked(root)
    assert set(final_log) == {2, 3} and final_log[2] == final_log[3]   # the old leader copied the new one's log
    kept = set(final_log[3].values())
    lost = {i: o for i, o in ids.items() if i not in kept}
    assert lost and all(i.startswith("alone-") for i in lost)       # the truth: acknowledged, then gone
    loss = result.losses.toPandas()
    assert len(loss) == 1
    row = loss.iloc[0]
    assert (int(row.new_start), int(row.old_end), int(row.lost_records)) == (
        min(lost.values()), max(lost.values()) + 1, len(lost))
    assert (int(row.leader), int(row.previous_leader)) == (3, 2)
    back = next(e for e in manifest["events"] if e["event"] == "broker_restart" and e["node"] == 2)["t_ms"]
    assert row.truncated_at.timestamp() * 1000 >= back - 1000   # a log4j time has no zone: UTC, ms precision
    told = replicas.area_findings(result).where("kind = 'unclean_election'").collect()
    assert [(f["severity"], f["subject"]) for f in told] == [("critical", "orders-0")]
    summary = told[0]["summary"]
    assert (f": {len(lost)} record(s) (offsets {min(lost.values())}–{max(lost.values())}) that broker 2, its last "
            "leader, held past the new leader's log end were lost: broker 2 dropped them when it returned and "
            f"truncated to offset {min(lost.values())} at ") in summary, summary


def test_the_truncation_is_where_kafka_says_the_logs_agree(returned):
    root, _version, manifest, result = returned
    cuts = result.truncations.where("topic = 'orders' AND dropped > 0").toPandas()
    assert len(cuts) == 1, cuts
    row = cuts.iloc[0]
    ends = []
    for tool in sorted((t for t in manifest["tools"] if t["tool"] == "kafka-get-offsets"), key=lambda t: t["t_ms"]):
        ends.append(int(re.search(r"^orders:0:(\d+)$", (root / tool["file"]).read_text(), re.M)[1]))
    # kafka-get-offsets: 500 (both), 800 (broker 2 alone), 600 (broker 3 after the election), 600 (both again)
    assert (int(row.node_id), int(row.end_before), ends[1], ends[2], ends[3]) == (2, ends[1], 800, 600, 600)
    assert int(row.truncated_to) == ends[0] == 500 and int(row.dropped) == ends[1] - ends[0]


def test_the_group_that_had_read_the_lost_records_is_named_as_kafka_shows_it(returned):
    root, _version, manifest, result = returned
    tool = next(t for t in manifest["tools"] if t["tool"] == "kafka-consumer-groups")
    text = (root / tool["file"]).read_text()
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
    rows = [line.split() for line in text.splitlines() if re.match(r"^\S+\s+orders\s+0\s+\d+", line)]
    past = {(r[0], int(r[3])) for r in rows if int(r[3]) > int(r[4])}
    assert past == {("readers", 800)}, text
    groups = result.groups.toPandas()
    assert {(g.group, int(g.committed_offset)) for g in groups.itertuples()} == past
    told = replicas.area_findings(result).where("kind = 'unclean_election'").collect()[0]
    assert "whose next fetch resets them: readers (offset 800)" in told["summary"]
