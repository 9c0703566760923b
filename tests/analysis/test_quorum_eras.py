"""The quorum cadence on metadata logs written by Kafka 3.x releases before and after NoOpRecords.

KIP-835's NoOpRecords came with Kafka 3.3 (metadata version 3.3-IV1). The ``idle`` scenario
(``peer/scenarios/idle.py``) runs one combined KRaft node of each of Kafka 3.1.2 and 3.2.3 (no
NoOpRecords, no ``metadata.version`` at all), 3.3.2 (the first with both) and 3.5.2 (a NoOpRecord
per 500 ms idle interval), each idle for 8 s, then creating a topic, then idle again. The judge
is that release's own ``DumpLogSegments --cluster-metadata-decoder`` output, kept in the bundle:
every record the workbench decodes, its offset, type and time, and the cadence figures computed
from the batches Kafka printed; the ISR area's partition states are held against the same dump and
the release's own ``kafka-topics --describe``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import workbench
from peer.scenario import ERA_SETS
from peer.scenarios import idle
from tests.kafka_bundles import candidate_views, dumped_final_states
from workbench.analysis import isr, quorum
from workbench.formats.tooltext import parse_topics_describe

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
    if tuple(int(n) for n in version.split(".")[:2]) < (3, 3):
        # Kafka 3.1 and 3.2 write no NoOpRecord and no metadata.version: the idle seconds are silent
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


def test_the_isr_area_reads_the_era_log_as_the_release_does(era):
    version, path, tables, _ = era
    states = isr.states_for(tables, {}).toPandas()
    final = states[states["end_reason"] == "log_end"]
    ours = {(r.topic_id, int(r.partition)): (int(r.leader), sorted(r.isr)) for r in final.itertuples()}
    assert ours == dumped_final_states(path), version   # each partition's last state, as Kafka's dump leaves it
    manifest = json.loads((path / "manifest.json").read_text("utf-8"))
    (describe,) = [t for t in manifest["tools"] if "--describe" in t["args"]]
    parsed = parse_topics_describe((path / describe["file"]).read_text("utf-8"))
    assert not parsed.problems and len(parsed.partitions) == idle.PARTITIONS
    shown = {(p["topic"], p["partition"]): (p["leader"], sorted(p["replicas"]), sorted(p["isr"]))
             for p in parsed.partitions}
    # the clean stop at the end is the cluster stopping (before 3.3 no record says inControlledShutdown)
    found = isr.findings_for(tables, {}).toPandas()
    assert list(zip(found.kind, found.severity, strict=True)) == [("cluster_stopped", "info")], found
    views = candidate_views(states, describe["t_ms"], manifest["events"][-1]["t_ms"])
    assert any({k: (v[0], sorted(v[1]), sorted(v[2])) for k, v in view.items()} == shown for view in views), \
        f"{version}: kafka-topics shows {shown}; computed states in its window: {views}"
