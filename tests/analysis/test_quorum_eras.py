"""The quorum cadence on metadata logs written by Kafka 3.x releases before and after NoOpRecords.

KIP-835's NoOpRecords came with Kafka 3.3 (metadata version 3.3-IV1). The ``idle`` scenario
(``peer/scenarios/idle.py``) runs one combined KRaft node of Kafka 3.2.3 (no NoOpRecords, no
``metadata.version`` at all) and one of Kafka 3.5.2 (a NoOpRecord per 500 ms idle interval), each
idle for 8 s, then creating a topic, then idle again. The judge is that release's own
``DumpLogSegments --cluster-metadata-decoder`` output, kept in the bundle: every record the
workbench decodes, its offset, type and time, and the cadence figures computed from the
batches Kafka printed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import workbench
from peer.scenario import ERA_SETS
from workbench.analysis import quorum

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .* isControl: (true|false) .* CreateTime: (\d+) ")
RECORD = re.compile(r"^\| offset: (\d+) CreateTime: (\d+) .*?(?:controlType: ([A-Z_]+)\(\d+\)|payload: (\{.*\}))\s*$")


def kafka_dump(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(records, batches) of the metadata segment as the release's own dump tool printed them."""
    manifest = json.loads((path / "manifest.json").read_text("utf-8"))
    (entry,) = [d for d in manifest["dumps"] if "__cluster_metadata-0/" in d["file"] and d["file"].endswith(".log")]
    assert entry["args"] == ["--cluster-metadata-decoder"], entry
    records, batches = [], []
    for line in (path / entry["dump"]).read_text("utf-8").splitlines():
        if m := BATCH.match(line):
            batches.append((int(m[1]), int(m[2]), m[3] == "true", int(m[4])))
        elif m := RECORD.match(line):
            kind = m[3] or json.loads(m[4])["type"]
            records.append((int(m[1]), kind, int(m[2])))
    return (pd.DataFrame(records, columns=["offset", "type", "time_ms"]),
            pd.DataFrame(batches, columns=["base_offset", "last_offset", "is_control", "time_ms"]))


def kafka_name(record_type: str, is_control: bool) -> str:
    """The workbench's record type as the dump tool spells it (``NoOpRecord`` -> ``NO_OP_RECORD``)."""
    return record_type if is_control else re.sub(r"(?<!^)(?=[A-Z])", "_", record_type).upper()


@pytest.fixture(scope="module", params=sorted(ERA_SETS))
def era(request, spark, kafka_bundle):
    path = Path(kafka_bundle("idle", request.param))
    tables = workbench.load(workbench.open_bundle(path), spark)
    return request.param, path, tables, quorum.analyse(tables)


def test_every_metadata_record_is_decoded_as_the_release_own_dump_tool_prints_it(era):
    version, path, tables, _ = era
    records, _ = kafka_dump(path)
    ours = (tables.metadata.where("file_kind = 'segment'")
            .selectExpr("offset", "record_type", "is_control", "unix_millis(timestamp) AS time_ms").toPandas())
    names = [kafka_name(t, c) for t, c in zip(ours["record_type"], ours["is_control"], strict=True)]
    ours = pd.DataFrame({"offset": ours["offset"], "type": names, "time_ms": ours["time_ms"]})
    pd.testing.assert_frame_equal(ours.sort_values("offset").reset_index(drop=True),
                                  records.sort_values("offset").reset_index(drop=True), check_dtype=False)
    assert tables.problems.count() == 0
    assert (records["type"] == "TOPIC_RECORD").sum() == 1, version


def test_the_cadence_is_the_interval_between_the_batches_kafka_wrote(era):
    version, path, _, result = era
    _, batches = kafka_dump(path)
    (row,) = result.cadence.toPandas().to_dict("records")
    gaps = batches["time_ms"].diff().dropna()
    assert row["batches"] == len(batches)
    assert row["intervals"] == len(gaps)
    assert row["interval_max_ms"] == gaps.max()
    assert row["interval_p50_ms"] in set(gaps)
    assert row["records"] == int((batches["last_offset"] - batches["base_offset"] + 1).sum())


def test_before_noop_records_the_absence_is_stated_and_no_stall_is_claimed(era):
    version, path, tables, result = era
    records, batches = kafka_dump(path)
    noops = int((records["type"] == "NO_OP_RECORD").sum())
    assert result.writing.noop_records == noops
    found = quorum.findings_for(tables).toPandas()
    if version.startswith("3.2."):
        # Kafka 3.2 writes no NoOpRecord and no metadata.version: the idle seconds are silent
        assert noops == 0 and result.writing.metadata_level is None and not result.writing.writes_noops
        assert batches["time_ms"].diff().max() > 4 * quorum.DEFAULT_IDLE_MS  # a silent gap, not a stall
        (note,) = found[found["kind"] == "no_noop_records"]["summary"]
        assert "writes no NoOpRecords" in note and "no stall is claimed" in note and "3.2 or older" in note
        assert quorum.key_figures(quorum.analyse(tables, {}))["commit_stalls"] is None
    else:
        # 3.3 and later: one NoOpRecord per idle interval (500 ms by default), and no stall
        assert noops >= 20 and result.writing.writes_noops
        assert result.writing.metadata_level >= quorum.NOOP_MIN_LEVEL
        (row,) = result.cadence.toPandas().to_dict("records")
        assert row["noops"] == noops
        assert abs(row["noop_interval_p50_ms"] - quorum.DEFAULT_IDLE_MS) <= 50
        noop_times = records[records["type"] == "NO_OP_RECORD"]["time_ms"].diff().dropna()
        assert abs(noop_times.median() - quorum.DEFAULT_IDLE_MS) <= 50
        assert "no_noop_records" not in set(found["kind"])
        assert quorum.key_figures(quorum.analyse(tables, {}))["commit_stalls"] == 0
    assert result.stalls.count() == 0
    assert "commit_stall" not in set(found["kind"]) and "node_behind" not in set(found["kind"])
    (epoch,) = result.timeline.toPandas().to_dict("records")
    assert epoch["leader"] == 1 and epoch["epoch"] == 1
