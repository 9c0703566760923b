"""An unclean leader election on a real cluster, and the acknowledged records it lost, judged by Kafka's tools.

The ``unclean`` scenario (``peer/scenarios/unclean.py``): broker 2 leads ``orders-0`` (replicas 2, 3);
the follower is stopped, 300 records are acknowledged by the leader alone (``acks=1``), the leader is
stopped, the follower restarted and elected with ``kafka-leader-election --election-type unclean``,
then written to; the old leader stays down, its copy untruncated. ``kafka-get-offsets`` printed
the log end at each step, ``kafka-dump-log`` prints both replicas' batches and the metadata log's
records, with Kafka's own ``leaderRecoveryState`` mark of the election.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import workbench
from tests.analysis.test_replicas_real_kafka import kafka_batches, recovering_marks
from workbench.analysis import replicas

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


@pytest.fixture(scope="module")
def unclean(kafka_bundle, spark):
    from peer.kafka import DEFAULT_VERSION

    root = Path(kafka_bundle("unclean")).resolve()
    manifest = json.loads((root / "manifest.json").read_text())
    tables = workbench.load(workbench.open_bundle(root), spark)
    return root, DEFAULT_VERSION, manifest, replicas.analyse(tables, {})


@pytest.fixture(scope="module")
def dumped(unclean) -> dict[int, list[tuple[int, ...]]]:
    """``orders-0``'s batches on each replica as ``kafka-dump-log`` prints them: (base, last, count, epoch, crc)."""
    root, version, *_ = unclean
    return kafka_batches(version, root)[("orders", 0)]


def log_ends(root: Path, manifest: dict) -> list[int]:
    """``orders-0``'s log end at each ``kafka-get-offsets --time -1`` capture, in order."""
    ends = []
    for tool in sorted((t for t in manifest["tools"] if t["tool"] == "kafka-get-offsets"), key=lambda t: t["t_ms"]):
        m = re.search(r"^orders:0:(\d+)$", (root / tool["file"]).read_text(), re.M)
        ends.append(int(m[1]))
    return ends


def event(manifest: dict, name: str, **match) -> dict:
    return next(e for e in manifest["events"] if e["event"] == name and all(e.get(k) == v for k, v in match.items()))


def test_the_election_kafka_made_uncleanly_is_the_one_found(unclean):
    root, _version, manifest, result = unclean
    found = result.history.where("unclean").toPandas()
    assert [(r.topic, r.partition, r.leader, r.previous_leader) for r in found.itertuples()] == [("orders", 0, 3, 2)]
    marks, _log = recovering_marks(root)
    topic_id = found.topic_id.iloc[0]
    assert {(int(found.offset.iloc[0]), topic_id, 0, 3)} == {m for m in marks if m[1] == topic_id}
    elected = found.time.iloc[0].timestamp() * 1000
    assert event(manifest, "broker_restart")["t_ms"] <= elected <= event(manifest, "unclean_election")["t_ms"]


def test_what_it_lost_is_what_the_old_leader_acknowledged_past_the_new_leaders_start(unclean, dumped):
    root, _version, manifest, result = unclean
    before, acked, after = log_ends(root, manifest)   # 500 on both; 800 on broker 2 alone; 600 on broker 3
    assert before < after < acked
    loss = result.losses.toPandas()
    assert len(loss) == 1
    row = loss.iloc[0]
    assert (int(row.new_start), int(row.old_end), int(row.lost_records)) == (before, acked, acked - before)
    # broker 2's batches past the new start, as Kafka's dump prints them, are the ones counted
    old = [b for b in dumped[2] if b[0] >= before]
    assert (int(row.lost_batches), int(row.lost_records)) == (len(old), sum(b[2] for b in old))
    # broker 3 went on under the new epoch from there (its first batch of that epoch)
    epoch = int(row.epoch)
    assert min(b[0] for b in dumped[3] if b[3] == epoch) == before
    # written while the acks=1 producer ran
    start = event(manifest, "produce_start", acks="1")["t_ms"]
    end = event(manifest, "produce_end", records=300)["t_ms"]
    assert start <= row.first_time.timestamp() * 1000 <= row.last_time.timestamp() * 1000 <= end
    told = replicas.area_findings(result).where("kind = 'unclean_election'").collect()
    assert [(f["severity"], f["subject"]) for f in told] == [("critical", "orders-0")]
    assert f": {acked - before} record(s) (offsets {before}–{acked - 1}, written " in told[0]["summary"]
    assert "from outside the ISR [] (its last in-sync replicas: [2]) at " in told[0]["summary"]
    assert "that broker 2, its last leader, held past the new leader's log end were lost" in told[0]["summary"]


def test_the_view_draws_each_replicas_epochs_where_kafkas_dump_begins_them(unclean, dumped):
    """The replicas view's ticks on ``orders-0``: each replica's epochs begin at the first batch Kafka's
    dump shows of that epoch on that replica (an epoch of no batch may be ticked at the log end), and
    the unclean election's epoch is ticked apart, where the new leader went on."""
    from widgets.replicas import figure_replica_ranges

    _root, _version, _manifest, result = unclean
    frames = {k: v.toPandas() for k, v in replicas.view_frames(result).items()}
    fig = figure_replica_ranges(frames["ranges"], frames["differences"], topic="orders", partition=0,
                                epochs=frames["epochs"])
    ticks = {(int(y.split()[1]), int(label[1:])): (int(x), tr.name.endswith("(unclean election)"))
             for tr in fig.data if tr.name.startswith("epoch starts")
             for y, x, label in zip(tr.y, tr.x, tr.text, strict=True)}
    firsts: dict[tuple[int, int], int] = {}
    for node, batches in dumped.items():
        for base, _last, _count, epoch, *_ in batches:
            firsts[(node, epoch)] = min(firsts.get((node, epoch), base), base)
    assert {k: x for k, (x, _) in ticks.items() if k in firsts} == firsts
    (loss,) = result.losses.collect()
    assert {k: v for k, v in ticks.items() if v[1]} == {(3, loss.epoch): (loss.new_start, True)}
