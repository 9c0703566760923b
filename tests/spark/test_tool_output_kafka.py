"""Tool-output tables equal the text real Kafka printed, on every scenario bundle of both versions.

Each expected row comes from an independent reading of the captured text written here (fields
split on whitespace, tabs and colons, as a reader of the text would), not from
``workbench.formats.tooltext``; the tables must equal them as whole DataFrames.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from pyspark.testing import assertDataFrameEqual

from peer.scenario import built_on
from workbench.spark.tool_output import COMMON, TABLE_NAMES, VIEW_COLUMNS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


def _none(cell: str) -> str | None:
    return None if cell in ("-", "") else cell


def _int(cell: str) -> int | None:
    return None if cell in ("-", "") else int(cell)


def _ints(cell: str) -> list[int]:
    return [int(x) for x in cell.split(",") if x]


def _when(t_ms: int) -> datetime:
    return datetime.fromtimestamp(t_ms / 1000, UTC)


def read_topics(text: str, args: list[str]) -> list[dict]:
    flag = next((a[2:] for a in args if a.endswith("-partitions") and a.startswith("--u")), None)
    topics: dict[str, dict] = {}
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = dict(part.split(": ", 1) if ": " in part else (part.rstrip(":"), "")
                      for part in line.strip("\t").split("\t"))
        if not line.startswith("\t"):
            topics[fields["Topic"]] = fields
            continue
        t = topics.get(fields["Topic"])
        configs = None if t is None else dict(kv.split("=", 1) for kv in t["Configs"].split(",") if kv)
        rows.append({
            "topic": fields["Topic"], "partition": int(fields["Partition"]),
            "leader": -1 if fields["Leader"] == "none" else int(fields["Leader"]),
            "replicas": _ints(fields["Replicas"]), "isr": _ints(fields["Isr"]),
            "elr": _ints(fields["Elr"]) if "Elr" in fields else None,
            "last_known_elr": _ints(fields["LastKnownElr"]) if "LastKnownElr" in fields else None,
            "topic_id": None if t is None else t["TopicId"],
            "partition_count": None if t is None else int(t["PartitionCount"]),
            "replication_factor": None if t is None else int(t["ReplicationFactor"]),
            "configs": configs, "filter": flag})
    return rows


_GROUP_INTS = {"PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "#PARTITIONS",
               "CURRENT-EPOCH", "TARGET-EPOCH", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"}
_GROUP_KEYS = {"#PARTITIONS": "partitions", "#MEMBERS": "members"}


def read_groups(text: str, view: str) -> list[dict]:
    keys = [c.split()[0] for c in VIEW_COLUMNS[view].split(", ")]
    rows, header = [], None
    for line in text.splitlines():
        if not line.strip() or line.startswith(("Error:", "Warning:", "Consumer group ")):
            continue  # the tool's own messages (a group that is gone, one with no members), not rows
        if line.startswith("GROUP "):
            header = line.replace("COORDINATOR (ID)", "COORDINATOR").split()
            continue
        assert header is not None, line
        if view == "group_states":
            m = re.match(r"^(\S+)\s+(\S+):(\d+)\s+\((\d+)\)\s+(.*)$", line)
            rest = m.group(5).split()
            if len(rest) == len(header) - 3:
                rest = ["", *rest]  # 3.9 leaves ASSIGNMENT-STRATEGY empty
            cells = dict(zip(header[2:], rest, strict=True))
            row = {"group": m.group(1), "coordinator_host": m.group(2), "coordinator_port": int(m.group(3)),
                   "coordinator_id": int(m.group(4))}
        else:
            cells = dict(zip(header, line.split(None, len(header) - 1), strict=True))
            row = {}
        for name, cell in cells.items():
            key = _GROUP_KEYS.get(name, name.lower().replace("-", "_"))
            row[key] = _int(cell) if name in _GROUP_INTS else _none(cell.strip())
        rows.append({k: row.get(k) for k in keys})
    return rows


def read_status(text: str) -> list[dict]:
    fields = dict(line.split(":", 1) for line in text.splitlines() if line.strip())
    fields = {k: v.strip() for k, v in fields.items()}
    if not fields:
        return []
    return [{"cluster_id": fields["ClusterId"], "leader_id": int(fields["LeaderId"]),
             "leader_epoch": int(fields["LeaderEpoch"]), "high_watermark": int(fields["HighWatermark"]),
             "max_follower_lag": int(fields["MaxFollowerLag"]),
             "max_follower_lag_time_ms": int(fields["MaxFollowerLagTimeMs"]),
             "voters": [v["id"] for v in json.loads(fields["CurrentVoters"])],
             "observers": [v["id"] for v in json.loads(fields["CurrentObservers"])],
             "voters_json": fields["CurrentVoters"], "observers_json": fields["CurrentObservers"]}]


def read_replication(text: str) -> list[dict]:
    lines = [line.split("\t") for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = [h.strip() for h in lines[0]]
    rows = []
    for cells in lines[1:]:
        d = dict(zip(header, (c.strip() for c in cells), strict=True))
        rows.append({"node_id": int(d["NodeId"]), "directory_id": d["DirectoryId"],
                     "log_end_offset": int(d["LogEndOffset"]), "lag": int(d["Lag"]),
                     "last_fetch_time": _when(int(d["LastFetchTimestamp"])),
                     "last_caught_up_time": _when(int(d["LastCaughtUpTimestamp"])),
                     "last_fetch_ms_ago": None, "last_caught_up_ms_ago": None, "status": d["Status"]})
    return rows


def read_get_offsets(text: str, args: list[str]) -> list[dict]:
    spec = args[args.index("--time") + 1]
    out = []
    for line in text.splitlines():
        topic, partition, offset = line.split(":")
        out.append({"topic": topic, "partition": int(partition), "offset": int(offset) if offset else None,
                    "time_spec": spec})
    return out


def independent_rows(view: str, text: str, args: list[str]) -> list[dict]:
    if view == "topics_describe":
        return read_topics(text, args)
    if view.startswith("group_"):
        return read_groups(text, view)
    if view == "quorum_status":
        return read_status(text)
    if view == "quorum_replication":
        return read_replication(text)
    return read_get_offsets(text, args)


def _view_of(tool: str, args: list[str]) -> str | None:
    """The view of a manifest entry, decided here from the command line."""
    if tool == "kafka-topics" and "--describe" in args:
        return "topics_describe"
    if tool == "kafka-consumer-groups":
        return "group_members" if "--members" in args else "group_states" if "--state" in args else "group_offsets"
    if tool == "kafka-metadata-quorum":
        return "quorum_replication" if "--replication" in args else "quorum_status"
    return "get_offsets" if tool == "kafka-get-offsets" else None


@pytest.mark.parametrize("view", list(VIEW_COLUMNS))
def test_tool_table_equals_the_captured_text(spark, real_bundles, view):
    schema = f"{COMMON}, {VIEW_COLUMNS[view]}"
    columns = [c.split()[0] for c in schema.split(", ")]
    expected, got, versions, messages = [], None, set(), []
    for version, _name, path, manifest, tables in real_bundles:
        for tool in manifest["tools"]:
            if _view_of(tool["tool"], tool["args"]) != view:
                continue
            text = (path / tool["file"]).read_text("utf-8")
            if view.startswith("group_"):  # the tool's own messages, e.g. "Error: ... Group stopped not found."
                messages += [(str(path / tool["file"]), "tool_message") for line in text.splitlines()
                             if line.startswith(("Error:", "Warning:", "Consumer group "))]
            common = {"path": str(path / tool["file"]), "captured": _when(tool["t_ms"]),
                      "captured_from": "file_name", "args": tool["args"]}
            for row in independent_rows(view, text, tool["args"]):
                expected.append(tuple({**common, **row}.get(c) for c in columns))
                versions.add(version)
        table = tables[TABLE_NAMES[view]]
        got = table if got is None else got.unionByName(table)
    assert versions == {v for v, *_ in real_bundles}, (view, versions)   # every release whose bundles are built
    want = spark.createDataFrame(expected, schema)
    assertDataFrameEqual(got, want)
    # nothing unreadable: the only problems are the tool's messages, each one recorded
    problems = [(r["path"], r["kind"]) for *_, t in real_bundles
                for r in t.problems_of(TABLE_NAMES[view]).select("path", "kind").collect()]
    assert sorted(problems) == sorted(messages)


def test_every_consumer_groups_layout_was_captured(real_bundles):
    """The comparison above covers every layout of both versions (3.9 and 4.x differ)."""
    headers = {}
    for version, name, path, manifest, _tables in real_bundles:
        if name != "consumer_lag":
            continue
        for tool in manifest["tools"]:
            if tool["tool"] == "kafka-consumer-groups":
                for line in (path / tool["file"]).read_text("utf-8").splitlines():
                    if line.startswith("GROUP "):
                        headers.setdefault(version, set()).add(" ".join(line.split()))
    assert set(headers) == set(built_on("consumer_lag"))
    for version in headers:
        seen = headers[version]
        assert any("CURRENT-OFFSET" in h for h in seen) and any("#PARTITIONS" in h for h in seen)
        assert any("COORDINATOR (ID)" in h for h in seen)
        assert any(h.endswith("ASSIGNMENT") or "CURRENT-ASSIGNMENT" in h for h in seen), seen
    assert any("LEADER-EPOCH" in h for h in headers["4.3.1"])
    assert any("GROUP-EPOCH" in h for h in headers["4.3.1"])


def test_tool_captures_lists_every_capture(spark, real_bundles):
    for _version, _name, path, manifest, tables in real_bundles:
        want = spark.createDataFrame(
            [(str(path / t["file"]), t["tool"], t["args"], _view_of(t["tool"], t["args"]), _when(t["t_ms"]),
              "file_name", t.get("exit_code"), (path / t["file"]).stat().st_size) for t in manifest["tools"]],
            tables.tool_captures.schema)
        assertDataFrameEqual(tables.tool_captures, want)
