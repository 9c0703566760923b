"""The command line, run as a user runs it (a subprocess of the installed console script)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.spark.test_metadata_source import write_node

REPO = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True, timeout=120)


def test_inspect_lists_nodes_and_problems(tmp_path):
    path, w = write_node(tmp_path, 4)
    data = bytearray(path.read_bytes())
    del data[w.positions[-1] + 20:]
    path.write_bytes(bytes(data))
    res = run("inspect", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert re.search(r"^  node 4 \(\S*meta\.properties\): ", res.stdout, re.M)
    assert "segment 1" in res.stdout and "meta_properties 1" in res.stdout
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


def _section_parameters() -> set[str]:
    """The names the section notebooks' ``parameters`` cells assign (read here with nbformat and
    ast, not papermill's inspection the CLI uses), but ``bundle``, ``report`` and
    ``progress_path`` (the report sets them): what the report says it takes, each area's own
    parameters among them."""
    import ast

    import nbformat

    from workbench.report import section_notebooks

    names: set[str] = set()
    for path in section_notebooks(REPO / "notebooks"):
        for cell in nbformat.read(str(path), as_version=4).cells:
            if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
                for node in ast.parse(cell.source).body:
                    targets = node.targets if isinstance(node, ast.Assign) else \
                        [node.target] if isinstance(node, ast.AnnAssign) else []
                    names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names - {"bundle", "report", "progress_path"}


def test_report_refuses_bad_parameters_before_starting_anything(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    params = tmp_path / "p.yaml"
    params.write_text("min_insync_replicas: two\n")
    res = run("report", "--bundle", str(bundle), "--out", str(tmp_path / "r.html"), "--parameters", str(params),
              "-p", "start", "notadate", "-p", "colour", "red")
    assert res.returncode == 2
    takes = _section_parameters()
    assert {"start", "end", "topics", "summary_path", "min_insync_replicas", "quorum_stall_multiple"} <= takes
    assert sorted(res.stderr.splitlines()) == [
        f"workbench: incident_report has no parameter 'colour'; it takes {', '.join(sorted(takes))}",
        "workbench: parameter 'min_insync_replicas' is an int; got 'two'",
        "workbench: start: expected a date and time such as 2026-03-01T03:12:05, got 'notadate'",
    ]
    assert not (tmp_path / "r.html").exists()


def test_dump_of_a_missing_file_or_a_directory_is_one_line_each(tmp_path):
    path, _ = write_node(tmp_path, 1)
    res = run("dump", str(tmp_path / "missing.log"), str(tmp_path), str(path))
    assert res.returncode == 2
    assert res.stdout == ""  # checked before anything is dumped
    assert res.stderr.splitlines() == [
        f"workbench: {tmp_path / 'missing.log'}: no such file",
        f"workbench: {tmp_path}: is a directory; give the segment, snapshot or index files in it",
    ]


def test_inspect_names_each_cluster_its_nodes_and_the_files_that_named_them(tmp_path):
    """Two clusters' data dirs whose node ids repeat: one line per cluster, then each node of each."""
    for cluster, node in (("east", 1), ("east", 2), ("west", 1)):
        data = tmp_path / cluster / f"kafka{node}" / "data"
        data.mkdir(parents=True)
        (data / "meta.properties").write_text(f"node.id={node}\nversion=1\ncluster.id={cluster}-id\n")
    res = run("inspect", str(tmp_path))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[1:3] == ["  cluster east-id: nodes 1, 2", "  cluster west-id: node 1"]
    assert [line.split(":")[0] for line in lines[3:6]] == [
        "  node 1 of east-id (east/kafka1/data/meta.properties)",
        "  node 2 of east-id (east/kafka2/data/meta.properties)",
        "  node 1 of west-id (west/kafka1/data/meta.properties)"]


def test_inspect_of_a_bundle_whose_manifest_is_a_list(tmp_path):
    write_node(tmp_path, 1)
    (tmp_path / "manifest.json").write_text('["not", "a", "manifest"]')
    res = run("inspect", str(tmp_path), "--fail-on-problems")
    assert res.returncode == 1, res.stderr
    assert re.search(r"^  node 1 \(\S*meta\.properties\): ", res.stdout, re.M)
    assert (f"{tmp_path / 'manifest.json'} @ 0: decode_error: manifest.json holds a JSON list, expected an object; "
            "ignored") in res.stdout.splitlines()[-1]


def test_report_out_naming_a_directory_is_refused_first(tmp_path):
    bundle = tmp_path / "b"
    bundle.mkdir()
    for out in (tmp_path / "reports", tmp_path / "reports.html"):
        out.mkdir()
        res = run("report", "--bundle", str(bundle), "--out", str(out), "-p", "start", "notadate")
        assert res.returncode == 2
        assert res.stderr == f"workbench: out: {out} is a directory; give an .html file name\n"
        assert list(out.iterdir()) == [] and not list(tmp_path.glob(".*partial"))


def test_a_traceback_only_with_debug(tmp_path):
    missing = str(tmp_path / "missing")
    res = run("inspect", missing)
    assert (res.returncode, res.stderr) == (2, f"workbench: bundle path does not exist: {missing}\n")
    for args in (("--debug", "inspect", missing), ("inspect", missing, "--debug")):
        res = run(*args)
        assert res.returncode == 1  # Python's own exit on an uncaught exception
        assert res.stderr.startswith("Traceback (most recent call last):")
        assert res.stderr.endswith(f"workbench.errors.BundleError: bundle path does not exist: {missing}\n")


def test_inspect_says_which_clusters_are_replayed_from_their_text_logs(tmp_path):
    """A ZooKeeper-era data dir (no ``__cluster_metadata``) beside its broker's logs, and a KRaft node."""
    zk = tmp_path / "zk" / "kafka1"
    (zk / "data").mkdir(parents=True)
    (zk / "data" / "meta.properties").write_text("broker.id=1\nversion=0\ncluster.id=zk-id\n")
    (zk / "logs").mkdir()
    (zk / "logs" / "server.log").write_text("[2024-05-01 13:00:00,000] INFO [KafkaServer id=1] started\n")
    kraft = tmp_path / "kraft" / "kafka1" / "data"
    (kraft / "__cluster_metadata-0").mkdir(parents=True)
    (kraft / "meta.properties").write_text("node.id=1\nversion=1\ncluster.id=kraft-id\n")
    (kraft / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"")
    (kraft.parent / "server.log").write_text("")
    res = run("inspect", str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[1:3] == [
        "  cluster kraft-id: node 1",
        "  cluster zk-id: node 1; no metadata log: partition history from its text logs"]
