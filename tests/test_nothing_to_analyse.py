"""A bundle with nothing to analyse gets a report that says so first, claims no health, and exits 2.

One module, one shared Spark session for the investigation-level checks; one real ``workbench
report`` run (its notebook kernel starts its own Spark) on an archive, end to end.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from workbench.investigation import open_investigation
from workbench.report import EXIT_FAILED, exit_code_for

pytestmark = pytest.mark.spark

TAIL = "so this report cannot say whether the cluster was healthy."


def unrecognised_bundle(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "notes.md").write_text("the cluster fell over at 3 am\n")
    (root / "heap.hprof").write_bytes(os.urandom(3000))
    (root / "screens").mkdir()
    (root / "screens" / "grafana.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(500))
    return root


def garbage_bundle(root: Path) -> Path:
    """Files named as Kafka names them, holding bytes that are not Kafka's formats."""
    meta = root / "nodes" / "1" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    (meta / "00000000000000000000.log").write_bytes(b"\xff" * 4096)
    orders = root / "nodes" / "1" / "orders-0"
    orders.mkdir()
    (orders / "00000000000000000000.log").write_bytes(b"not a record batch\n" * 100)
    return root


def test_an_empty_directory(spark, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    inv = open_investigation(tmp_path / "empty", spark=spark)
    assert inv.nothing_to_analyse() == f"Nothing to analyse: the bundle holds no files, {TAIL}"
    assert inv.unusable_files().empty
    summary = inv.summary()
    assert summary["nothing_to_analyse"] == inv.nothing_to_analyse()
    assert summary["findings"] == [] and exit_code_for(summary, "never") == EXIT_FAILED


def test_a_bundle_of_unrecognised_files(spark, tmp_path: Path) -> None:
    root = unrecognised_bundle(tmp_path / "b")
    inv = open_investigation(root, spark=spark)
    assert inv.nothing_to_analyse() == (
        "Nothing to analyse: none of the bundle's 3 files is of a kind the workbench reads (KRaft metadata logs, "
        f"log segments, tool output, metric exports; listed below), {TAIL}")
    expected = pd.DataFrame(
        [(p, -1, "other", (root / p).stat().st_size, "not a file the workbench recognises")
         for p in ("heap.hprof", "notes.md", "screens/grafana.png")],
        columns=["path", "node_id", "kind", "bytes", "why unusable"])
    pd.testing.assert_frame_equal(inv.unusable_files(), expected, check_dtype=False)
    assert exit_code_for(inv.summary(), "critical") == EXIT_FAILED


def test_a_bundle_whose_files_are_all_unreadable(spark, tmp_path: Path) -> None:
    root = garbage_bundle(tmp_path / "b")
    inv = open_investigation(root, spark=spark)
    assert inv.nothing_to_analyse() == (
        "Nothing to analyse: none of the bundle's 1 KRaft metadata log file yielded a record, nor did anything "
        f"else an analysis reads (its 2 files are listed below with why each was unusable), {TAIL}")
    files = inv.unusable_files()
    assert list(files["path"]) == ["nodes/1/__cluster_metadata-0/00000000000000000000.log",
                                   "nodes/1/orders-0/00000000000000000000.log"]
    assert list(files["kind"]) == ["segment", "segment"]
    # each file's reason is its first problem, as the problems table has it
    problems = inv.tables.problems.toPandas().sort_values(["path", "position"])
    for path, why in zip(files["path"], files["why unusable"], strict=True):
        first = problems[problems["path"].str.endswith(path)].iloc[0]
        assert why.startswith(f"{first['kind']} at byte {first['position']}: {first['detail']}"), why


def test_a_bundle_with_data_is_not_called_empty(spark, incident_bundle: Path) -> None:
    inv = open_investigation(incident_bundle, spark=spark)
    assert inv.nothing_to_analyse() is None
    summary = inv.summary()
    assert summary["nothing_to_analyse"] is None and summary["unusable_files"] == []
    assert exit_code_for(summary, "critical") == 1  # its findings are critical


@pytest.mark.kernel
def test_the_report_of_an_archive_with_nothing_to_analyse(tmp_path: Path) -> None:
    """Through the command line: the sentence first, the files and why, no health claim, exit 2, no leftovers."""
    root = unrecognised_bundle(tmp_path / "b")
    garbage_bundle(root)
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(root, arcname=".")
    private = tmp_path / "tmpdir"
    private.mkdir()
    out, summary = tmp_path / "r.html", tmp_path / "s.json"
    env = dict(os.environ, TMPDIR=str(private))
    res = subprocess.run([sys.executable, "-m", "workbench", "report", "--bundle", str(archive), "--out", str(out),
                          "--summary", str(summary), "--fail-on", "never"],
                         capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 2, res.stderr
    sentence = ("Nothing to analyse: none of the bundle's 1 KRaft metadata log file yielded a record, nor did "
                "anything else an analysis reads (its 5 files are listed below with why each was unusable), " + TAIL)
    assert res.stderr.splitlines()[-1] == f"workbench: {sentence}"
    assert res.stdout.strip() == str(out.resolve())
    document = json.loads(summary.read_text())
    assert document["nothing_to_analyse"] == sentence and document["findings"] == []
    assert sorted(f["path"] for f in document["unusable_files"]) == sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())

    text = html.unescape(out.read_text(encoding="utf-8"))
    at = text.index(sentence)
    assert at < text.index("<h2")  # before the report's first section heading
    for p in document["unusable_files"]:
        assert p["path"] in text
    rest = text.replace(sentence, "")
    assert not re.search(r"nothing wrong|stayed healthy", rest, re.IGNORECASE)
    # no health claim anywhere else: "healthy" only in the sections' fixed explanations (ISR: "bars show when
    # it was offline, ... under-replicated or healthy", the heading "Partitions that were not healthy"; quorum:
    # "a healthy leader appends a NoOpRecord every idle ...")
    assert {m.group(0) for m in re.finditer(r"\w+ healthy", rest)} == {"or healthy", "not healthy", "a healthy"}
    assert "a healthy leader appends a NoOpRecord" in rest
    assert "No KRaft metadata log in this bundle" not in text  # there is one; it is unreadable
    assert "None of the bundle's 1 KRaft metadata log file yielded a record (see the problems appendix)" in text

    # nothing of the archive is left in $TMPDIR (Spark's and Python's own scratch files may be)
    names = {p.name for p in root.rglob("*")}
    left = [p for p in private.rglob("*") if p.name in names or "workbench-bundle" in str(p)]
    assert left == []
