"""The voter timeline of a KIP-853 dynamic quorum, judged by real Kafka.

The ``voters`` scenario (``peer/scenarios/voters.py``): controller 1 formatted ``--standalone``,
controllers 2 and 3 added with ``kafka-metadata-quorum add-controller``, then 2 removed, with a
``describe --status`` capture after each step. Kafka's own texts judge: each capture's
``CurrentVoters`` and Kafka's dump of the metadata log (its ``KRaftVoters`` control records).
"""

from __future__ import annotations

import bisect
import json
import re
from pathlib import Path

import pytest

import workbench
from workbench.analysis import quorum

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


@pytest.fixture(scope="module")
def voters(spark, kafka_bundle):
    path = Path(kafka_bundle("voters")).resolve()
    tables = workbench.load(workbench.open_bundle(path), spark)
    return path, json.loads((path / "manifest.json").read_text("utf-8")), tables


def _captures(path: Path, manifest: dict) -> list[tuple[int, int, list[int]]]:
    """``(start ms, end ms, sorted voter ids)`` of each ``describe --status`` capture, read from Kafka's text."""
    out = []
    for entry in manifest["tools"]:
        if entry["tool"] == "kafka-metadata-quorum" and "--status" in entry["args"]:
            line = re.search(r"^CurrentVoters:\s+(.*)$", (path / entry["file"]).read_text("utf-8"), re.MULTILINE)
            out.append((entry["t_ms"], entry["t_end_ms"], sorted(v["id"] for v in json.loads(line.group(1)))))
    return out


def _dumped_voter_records(path: Path) -> list[tuple[int, int, list[int]]]:
    """``(offset, CreateTime ms, sorted voter ids)`` of each ``KRaftVoters`` record of the longest segment dump."""
    best: list[tuple[int, int, list[int]]] = []
    for dump in path.glob("dumps/nodes/*/logs/__cluster_metadata-0/*.log.txt"):
        rows = []
        for line in dump.read_text("utf-8").splitlines():
            if " KRaftVoters " in line:
                offset = int(line.split("offset: ", 1)[1].split()[0])
                created = int(line.split("CreateTime: ", 1)[1].split()[0])
                record = json.loads(line.split(" KRaftVoters ", 1)[1])
                rows.append((offset, created, sorted(v["voterId"] for v in record["voters"])))
        best = rows if len(rows) > len(best) else best
    return best


def test_bundle_reads_without_problems(voters):
    *_, tables = voters
    assert tables.problems.collect() == []


def test_voter_timeline_equals_every_status_capture_and_kafkas_dump(voters):
    """The log's voter records are Kafka's (offset, time, voters) as its dump prints them; at every
    ``describe --status`` capture the voter set the timeline holds is the capture's ``CurrentVoters``;
    and the timeline passes through every set the captures saw, in their order (one voter, two,
    three, two again)."""
    path, manifest, tables = voters
    timeline = quorum.voter_changes(tables.metadata).toPandas()
    segments = timeline[timeline.file_kind == "segment"]
    dumped = _dumped_voter_records(path)
    assert len(dumped) >= 4
    assert [(int(r.offset), int(r.time.timestamp() * 1000), list(r.voters)) for r in segments.itertuples()] == dumped
    times = [int(t.timestamp() * 1000) for t in timeline.time]
    captures = _captures(path, manifest)
    assert len(captures) == 4
    for start, end, want in captures:
        assert bisect.bisect_right(times, end) == bisect.bisect_right(times, start), "a change inside a capture"
        i = bisect.bisect_right(times, start) - 1
        assert list(timeline.voters.iloc[i]) == want, (start, want)
    seen = [v for _s, _e, v in captures]
    sets = [list(v) for v in timeline.voters]
    assert [v for i, v in enumerate(sets) if i == 0 or v != sets[i - 1]] == seen


def test_the_parsed_captures_are_kafkas_current_voters(voters):
    """The ``tool_quorum_status`` table's ``voters`` of each capture are its ``CurrentVoters`` ids."""
    path, manifest, tables = voters
    got = sorted((int(r.captured.timestamp() * 1000), sorted(r.voters)) for r in tables.tool_quorum_status.collect())
    assert got == [(start, want) for start, _end, want in _captures(path, manifest)]


def test_the_quorum_area_holds_every_capture_beside_the_log_and_all_agree(voters):
    """The quorum analysis' ``voter_captures``: one row per capture, its ``CurrentVoters`` (Kafka's
    text) beside the set the log held at its time, every one agreeing."""
    path, manifest, tables = voters
    got = quorum.analyse(tables).voter_captures.toPandas()
    want = [(start, want) for start, _end, want in _captures(path, manifest)]
    assert [(int(r.captured.timestamp() * 1000), sorted(r.captured_voters)) for r in got.itertuples()] == want
    assert [list(v) for v in got.voters] == [v for _s, v in want]
    assert got.voters_from.tolist() == ["log"] * len(want) and got.agrees.tolist() == [True] * len(want)
