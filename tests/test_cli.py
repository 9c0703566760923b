"""The command line, run as a user runs it (a subprocess of the installed console script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.spark.test_metadata_source import write_node


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, timeout=120)


def test_inspect_lists_nodes_and_problems(tmp_path):
    path, w = write_node(tmp_path, 4)
    data = bytearray(path.read_bytes())
    del data[w.positions[-1] + 20:]
    path.write_bytes(bytes(data))
    res = run("inspect", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "node 4:" in res.stdout and "segment 1" in res.stdout and "meta_properties 1" in res.stdout
    assert f"{path} @ {w.positions[-1]}: truncated" in res.stdout
    res = run("inspect", str(tmp_path), "--json", "--fail-on-problems")
    assert res.returncode == 1
    doc = json.loads(res.stdout)
    assert [(p["position"], p["kind"]) for p in doc["problems"]] == [(w.positions[-1], "truncated")]
    assert {r["kind"] for r in doc["inventory"]} == {"segment", "meta_properties"}


def test_dump_jsonl_decodes_metadata(tmp_path):
    path, w = write_node(tmp_path, 1)
    res = run("dump", str(path))
    assert res.returncode == 0, res.stderr
    objs = [json.loads(line) for line in res.stdout.splitlines()]
    batches = [o for o in objs if o["kind"] == "batch"]
    records = [o for o in objs if o["kind"] == "record"]
    assert [b["position"] for b in batches] == w.positions
    assert all(b["isValid"] for b in batches)
    assert [r["offset"] for r in records] == list(range(w.next_offset))
    assert records[0]["control"]["type"] == "LEADER_CHANGE"
    change = [r for r in records if r.get("payload", {}).get("type") == "PARTITION_CHANGE_RECORD"]
    assert change[0]["payload"]["data"]["isr"] == [1, 3]
    assert "value" not in records[1]          # payloads only on request


def test_errors_are_one_line(tmp_path):
    res = run("inspect", str(Path(tmp_path) / "missing"))
    assert res.returncode == 2
    assert res.stderr.startswith("workbench: bundle path does not exist")


def test_report_parameters_take_the_notebook_types():
    from workbench.cli import _parse_params
    from workbench.errors import ConfigError

    declared = {"start": "str", "report": "bool", "limit": "int"}
    got = _parse_params([["start", "2026"], ["report", "false"], ["limit", "7"], ["topics", "42"]], declared)
    assert got == {"start": "2026", "report": False, "limit": 7, "topics": "42"}
    import pytest

    with pytest.raises(ConfigError, match="bool"):
        _parse_params([["report", "maybe"]], declared)
