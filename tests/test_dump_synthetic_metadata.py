"""The synthetic metadata log of ``peer/synthetic.py``: seeded, as described, and
read by Kafka's dump tool exactly as by ours."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest

from peer.synthetic import write_synthetic_metadata_log
from workbench.formats.batch import read_batches
from workbench.formats.metadata import decode_metadata_record


def _log(tmp_path: Path, name: str, records: int, seed: int) -> tuple[Path, dict]:
    path = tmp_path / name / "__cluster_metadata-0" / "00000000000000000000.log"
    return path, write_synthetic_metadata_log(path, records, seed, topics=20, partitions=5)


def test_seeded_and_as_described(tmp_path):
    a, summary = _log(tmp_path, "a", 3000, 7)
    b, _ = _log(tmp_path, "b", 3000, 7)
    c, _ = _log(tmp_path, "c", 3000, 8)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    types: Counter = Counter()
    isr: dict[tuple[str, int], list[int]] = {}
    offsets = []
    batches = list(read_batches(io.BytesIO(a.read_bytes())))
    for batch in batches:
        assert batch.crc_valid and batch.partition_leader_epoch == 1 and batch.compression == "none"
        for r in batch.records():
            rec = decode_metadata_record(r.value)
            assert rec.error is None
            types[rec.name] += 1
            offsets.append(r.offset)
            f = rec.fields
            if rec.name == "PartitionRecord":
                assert f["replicas"] == [1, 2, 3] and f["isr"] == [1, 2, 3]
                isr[(f["topicId"], f["partitionId"])] = f["isr"]
            elif rec.name == "PartitionChangeRecord":
                before, after = isr[(f["topicId"], f["partitionId"])], f["isr"]
                assert abs(len(after) - len(before)) == 1 and after == sorted(after) and 1 <= len(after) <= 3
                isr[(f["topicId"], f["partitionId"])] = after
            elif rec.name == "ConfigRecord":
                assert (f["name"], f["value"], f["resourceName"]) == ("min.insync.replicas", "2", "")
    assert offsets == list(range(3000)) and summary["batches"] == len(batches) == 30
    assert dict(types) == {"FeatureLevelRecord": 1, "ConfigRecord": 1, "TopicRecord": 20, "PartitionRecord": 100,
                           "PartitionChangeRecord": summary["partition_changes"], "NoOpRecord": summary["noops"]}
    assert 0.65 < summary["partition_changes"] / (3000 - summary["setup_records"]) < 0.75
    assert summary["isr_shrinks"] + summary["isr_expands"] == summary["partition_changes"]


@pytest.mark.kafka
def test_kafka_dump_tool_reads_it_as_we_do(tmp_path):
    from tests.formats.kafka_dump_runs import run_dump_log
    from workbench.formats.dumptext_write import options_from_args, write_kafka_dump

    path, _ = _log(tmp_path, "k", 20_000, 0)
    run = run_dump_log("4.3.1", [("--cluster-metadata-decoder", "--files", str(path))])[0]
    ours = io.StringIO()
    write_kafka_dump([str(path)], out=ours, options=options_from_args(["--cluster-metadata-decoder"]))
    assert run.failure == "" and "Error at" not in run.stdout and run.stdout == ours.getvalue()
