"""Progress lines from a report's kernel to its command (:mod:`workbench.progress`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from workbench.progress import follow, note


def test_lines_written_by_another_process_arrive_whole_in_order_and_once(tmp_path: Path) -> None:
    path = tmp_path / "progress.txt"
    note(path, "before the command follows")  # already there: not repeated
    seen: list[str] = []
    writer = """
import sys, time
from workbench.progress import note
for i in range(5):
    note(sys.argv[1], f"step {i}\\n  done")
    time.sleep(0.05)
open(sys.argv[1], "a").write("half a line")
"""
    with follow(path, seen.append):
        subprocess.run([sys.executable, "-c", writer, str(path)], check=True, cwd=Path(__file__).parents[1])
    # each note is one line whatever it holds; a line not ended yet is not emitted
    assert seen == [f"step {i} done" for i in range(5)]


def test_no_path_writes_nothing_and_an_unwritable_one_is_dropped(tmp_path: Path) -> None:
    note("", "nowhere")
    note(tmp_path / "missing" / "progress.txt", "a directory that does not exist")
    assert list(tmp_path.iterdir()) == []
