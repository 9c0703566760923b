"""The replicas area on a real three-broker cluster, judged by Kafka's own dump of every replica's segments.

The ``isr`` scenario (``peer/scenarios/isr.py``) runs three brokers with RF 3 topics under load,
kills two brokers in turn and restarts them: followers truncate and catch up, so once the cluster
stops every replica holds its leader's batches. Kafka's ``kafka-dump-log`` prints each batch's
offsets, leader epoch and CRC from every replica's files; the area must find the same ranges and
the same agreement. Then one replica's batch is rewritten with one byte of one value changed and a
valid CRC (the workbench's encoder), as a disk or a bug that returned other bytes would leave it:
that batch, on that replica only, is divergent.
"""

from __future__ import annotations

import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from tests.formats.kafka_dump_runs import run_dump_log
from workbench.analysis import replicas
from workbench.formats.batch import Record, encode_batch, read_batches
from workbench.formats.problems import ProblemLog

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*partitionLeaderEpoch: (-?\d+) "
                    r".* crc: (\d+) isvalid: (\w+)")
_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def replica_segments(root: Path) -> dict[tuple[str, int], dict[int, list[Path]]]:
    """The ``.log`` segments of every partition held by two nodes or more: (topic, partition) -> node -> files."""
    held: dict[tuple[str, int], dict[int, list[Path]]] = defaultdict(lambda: defaultdict(list))
    for seg in sorted(root.glob("nodes/*/logs/*/*.log")):
        m = _DIR.match(seg.parent.name)
        if m:
            held[(m["topic"], int(m["partition"]))][int(seg.parts[-4])].append(seg)
    return {k: v for k, v in held.items() if len(v) > 1}


def kafka_batches(version: str, root: Path) -> dict[tuple[str, int], dict[int, list[tuple[int, ...]]]]:
    """Every replica's batches as ``kafka-dump-log`` prints them: (base, last, count, epoch, crc)."""
    held = replica_segments(root)
    runs = [(key, node, seg) for key, nodes in held.items() for node, segs in nodes.items() for seg in segs]
    out: dict[tuple[str, int], dict[int, list[tuple[int, ...]]]] = defaultdict(lambda: defaultdict(list))
    for (key, node, seg), run in zip(runs, run_dump_log(version, [["--files", str(s)] for _, _, s in runs]),
                                     strict=True):
        assert not run.failure, (seg, run.failure)
        for line in run.stdout.splitlines():
            m = _BATCH.match(line)
            if m:
                assert m[6] == "true", line
                out[key][node].append(tuple(int(m[i]) for i in range(1, 6)))
    return out


def judged(held: dict[tuple[str, int], dict[int, list[tuple[int, ...]]]]) -> tuple[list[tuple], list[tuple]]:
    """Each replica's range, and each batch's verdict over the offsets every replica holds, from Kafka's
    dump: same (held by every holder, or by more than half of them), divergent, or missing."""
    ranges, verdicts = [], []
    for (topic, partition), nodes in held.items():
        for node, batches in nodes.items():
            ranges.append((topic, partition, node, batches[0][0], batches[-1][1] + 1, len(batches),
                           sum(b[2] for b in batches)))
        lo = max(b[0][0] for b in nodes.values())
        hi = min(b[-1][1] + 1 for b in nodes.values())
        at: dict[int, dict[int, tuple[int, ...]]] = defaultdict(dict)
        for node, batches in nodes.items():
            for b in batches:
                if b[0] >= lo and b[1] < hi:
                    at[b[0]][node] = b
        for base, copies in at.items():
            for node, b in copies.items():
                sig = (b[1], b[3], b[4])
                same = sum((o[1], o[3], o[4]) == sig for o in copies.values())
                others = sorted(n for n, o in copies.items() if (o[1], o[3], o[4]) != sig)
                status = "same" if same == len(copies) or 2 * same > len(copies) else "divergent"
                verdicts.append((topic, partition, node, base, b[1], status, ", ".join(map(str, others)) or None))
            some = next(iter(copies.values()))
            for node in sorted(set(nodes) - set(copies)):
                holders = ", ".join(map(str, sorted(copies)))
                verdicts.append((topic, partition, node, base, some[1], "missing", holders))
    return ranges, verdicts


RANGES = ("topic string, partition int, node_id int, log_start_offset long, log_end_offset long, batches long, "
          "records long")
VERDICTS = ("topic string, partition int, node_id int, base_offset long, last_offset long, status string, "
            "others string")


def check_against_kafka(spark, root: Path, version: str):
    """The area's ranges and verdicts on ``root`` equal those read from Kafka's dump; its analysis."""
    tables = workbench.load(workbench.open_bundle(root), spark)
    result = replicas.analyse(tables, {})
    want_ranges, want_verdicts = judged(kafka_batches(version, root))
    names = [c.split(" ")[0] for c in RANGES.split(", ")]
    assertDataFrameEqual(result.ranges.select(*names), spark.createDataFrame(want_ranges, RANGES))
    assertDataFrameEqual(
        result.comparison.select("topic", "partition", "node_id", "base_offset", "last_offset", "status", "others"),
        spark.createDataFrame(want_verdicts, VERDICTS))
    return result


@pytest.fixture(scope="module")
def cluster(kafka_bundle):
    from peer.kafka import DEFAULT_VERSION

    return Path(kafka_bundle("isr")).resolve(), DEFAULT_VERSION


def test_every_replica_of_a_real_cluster_holds_its_leaders_batches(spark, cluster):
    root, version = cluster
    result = check_against_kafka(spark, root, version)
    assert {r["status"] for r in result.comparison.collect()} == {"same"}
    # the replicas agree; the only findings are the elections Kafka itself marked unclean (RECOVERING)
    assert {f["kind"] for f in replicas.area_findings(result).collect()} <= {"unclean_election", "unclean_reelection"}
    figures = replicas.key_figures(result)
    data = {(t, p) for (t, p) in replica_segments(root) if not t.startswith("__")}
    # every partition two replicas hold batches of: the producer's sticky partitioner picks which
    # partitions get records (one CI build left payments-1 empty, another orders-0 and payments-1), but
    # each of the two RF 3 topics gets some
    written = {k for k, nodes in replica_segments(root).items()
               if sum(any(s.stat().st_size > 0 for s in segs) for segs in nodes.values()) > 1}
    assert len(data) >= 5 and {t for t, _ in written if not t.startswith("__")} == {"orders", "payments"}
    assert figures["partitions_compared"] == len(written)
    assert figures["divergent_batches"] == figures["missing_batches"] == 0
    verification_agrees(root, len([k for k in replica_segments(root) if k[0] in ("orders", "payments")]))


def verification_agrees(root: Path, partitions: int) -> None:
    """Kafka's own live check agreed: ``kafka-replica-verification`` (3.9.2) ran over ``orders`` and
    ``payments`` while ``orders`` took records, reported every second over all their ``partitions``
    and found no mismatch (it exits 1 on one; the scenario stops it, so it has no exit code)."""
    import json

    manifest = json.loads((root / "manifest.json").read_text())
    ended = next(e for e in manifest["events"] if e["event"] == "replica_verification_end")
    text = (root / "oracle" / "replica-verification.txt").read_text()
    reports = re.findall(r"max lag is (\d+) for partition (\S+) at offset (\d+) among (\d+) partitions", text)
    assert ended["exit_code"] is None and len(reports) >= 3 and "match" not in text, text[-2000:]
    assert {int(r[3]) for r in reports} == {partitions}


def test_a_replica_batch_rewritten_with_a_valid_crc_diverges_on_that_replica_only(spark, cluster, tmp_path):
    root, version = cluster
    copy = tmp_path / "isr"
    shutil.copytree(root, copy)
    held = replica_segments(copy)
    (topic, partition), nodes = next((k, v) for k, v in sorted(held.items())
                                     if not k[0].startswith("__") and len(v) == 3
                                     and all(len(list(read_batches(open(s[0], "rb"), str(s[0])))) >= 3
                                             for s in v.values()))
    node = sorted(nodes)[1]
    seg = nodes[node][0]
    data = bytearray(seg.read_bytes())
    log = ProblemLog(str(seg), strict=True)
    batches = list(read_batches(open(seg, "rb"), str(seg), problems=log))
    mid = batches[len(batches) // 2]
    records = mid.records(log)

    def encoded(rs):
        return encode_batch(rs, base_offset=mid.base_offset, compression=mid.compression,
                            timestamp_type=mid.timestamp_type, partition_leader_epoch=mid.partition_leader_epoch,
                            producer_id=mid.producer_id, producer_epoch=mid.producer_epoch,
                            base_sequence=mid.base_sequence, is_transactional=mid.is_transactional,
                            max_timestamp=mid.max_timestamp, last_offset=mid.last_offset)

    original = bytes(data[mid.position : mid.position + mid.size])
    assert encoded(records) == original  # the encoder writes the batch Kafka wrote, byte for byte
    first = records[0]
    value = bytearray(first.value)
    value[0] ^= 0x01
    changed = encoded([Record(first.offset, first.timestamp, first.key, bytes(value), first.headers),
                       *records[1:]])
    assert len(changed) == len(original) and changed != original
    data[mid.position : mid.position + mid.size] = changed
    seg.write_bytes(bytes(data))

    result = check_against_kafka(spark, copy, version)  # Kafka reads the rewritten batch as valid
    others = ", ".join(str(n) for n in sorted(nodes) if n != node)
    differing = result.comparison.where("status <> 'same'").select(
        "topic", "partition", "node_id", "base_offset", "last_offset", "status", "others")
    assertDataFrameEqual(differing, spark.createDataFrame(
        [(topic, partition, node, mid.base_offset, mid.last_offset, "divergent", others)], VERDICTS))
    found = replicas.area_findings(result).where("kind = 'replica_divergent'").collect()
    assert [(f["kind"], f["severity"], f["subject"]) for f in found] == [
        ("replica_divergent", "critical", f"{topic}-{partition} on node {node}")]
    assert f"offsets {mid.base_offset}–{mid.last_offset} (1 batch(es), {mid.record_count} record(s)" in found[0][
        "summary"]
    frames = {k: v.toPandas() for k, v in replicas.view_frames(result).items()}
    assert (frames["ranges"].iloc[0]["topic"], frames["ranges"].iloc[0]["partition"]) == (topic, partition)
    assert frames["differences"][["node_id", "kind", "base_offset"]].values.tolist() == [
        [node, "divergent", mid.base_offset]]


def recovering_marks(root: Path) -> tuple[set[tuple[int, str, int, int]], Path]:
    """The partition changes Kafka's dump of the longest metadata log shows marked
    ``leaderRecoveryState`` 1 (an unclean election): ``(offset, topic id, partition, leader)``; that log."""
    import json

    manifest = json.loads((root / "manifest.json").read_text())
    dumps = [d for d in manifest["dumps"] if "__cluster_metadata-0" in d["file"] and d["file"].endswith(".log")]
    longest = max(dumps, key=lambda d: (root / d["file"]).stat().st_size)
    marks = set()
    for line in (root / longest["dump"]).read_text().splitlines():
        if '"PARTITION_CHANGE_RECORD"' not in line:
            continue
        offset = int(re.search(r"offset: (\d+)", line)[1])
        data = json.loads(line[line.index("payload: ") + len("payload: "):])["data"]
        if data.get("leaderRecoveryState") == 1:
            marks.add((offset, data["topicId"], data["partitionId"], data["leader"]))
    return marks, root / longest["file"]


def test_leader_epochs_are_kafkas_checkpoints_dump_shell_image_and_recovery_marks(spark, cluster):
    from peer.kafka import fetch
    from peer.metadata_shell import image_partitions

    root, version = cluster
    tables = workbench.load(workbench.open_bundle(root), spark)
    result = replicas.analyse(tables, {})
    # every partition's last epoch and leader are those of Kafka's own replay of the log
    marks, segment = recovering_marks(root)
    image = image_partitions(fetch(version), segment).partitions
    history = result.history.toPandas()
    last = history.sort_values("offset").groupby(["topic_id", "partition"]).last()
    assert {k: (int(r.epoch), int(r.leader)) for k, r in last.iterrows()} == {
        k: (v["leader_epoch"], v["leader"]) for k, v in image.items()}
    # the elections found unclean are exactly those Kafka marked RECOVERING (the scenario restarts an
    # RF 1 partition's only broker after its ISR emptied), each told by one finding
    unclean = history[history.unclean]
    assert marks and {(int(r.offset), r.topic_id, int(r.partition), int(r.leader))
                      for r in unclean.itertuples()} == marks
    told = replicas.area_findings(result).where("kind like 'unclean%'").toPandas()
    assert sorted(told.subject) == sorted(f"{r.topic}-{r.partition}" for r in unclean.itertuples())
    # each replica's checkpoint, against Kafka's dump of its batches: an entry starts at the first
    # batch of its epoch, or at the log end when the replica became leader and wrote nothing since;
    # every epoch the batches carry has its entry; the metadata log names the leader of each
    epochs = result.epochs.toPandas()
    assert not epochs.empty and epochs.leader.notna().all(), epochs[epochs.leader.isna()]
    dumped = kafka_batches(version, root)
    checked = 0
    for (topic, partition), nodes in dumped.items():
        if topic == "__cluster_metadata":  # its checkpoint holds the quorum's epochs: not a leader-epochs row
            continue
        for node, batches in nodes.items():
            mine = epochs[(epochs.topic == topic) & (epochs.partition == partition) & (epochs.node_id == node)]
            entries = [(int(r.epoch), int(r.start_offset)) for r in mine.sort_values("start_offset").itertuples()]
            firsts = [(b[3], b[0]) for i, b in enumerate(batches) if i == 0 or batches[i - 1][3] != b[3]]
            end = batches[-1][1] + 1
            written = [e for e in entries if e[1] < end]
            assert written == firsts, (topic, partition, node, entries, firsts)
            for epoch, start in entries:
                if start == end and (epoch, start) not in firsts:
                    led = mine[mine.epoch == epoch].leader.iloc[0]
                    assert led == node, (topic, partition, node, epoch)
            checked += 1
    assert checked >= 6   # three replicas of at least one partition of each RF 3 topic (see above)
