"""Progress of a report, one line per step, from the notebook's kernel to the command that runs it.

A report's notebook runs in a Jupyter kernel, out of the command's sight: ``workbench report``
would be silent for minutes. The report passes the kernel a file (the ``progress_path``
parameter); the kernel appends a line to it as each step ends (the Spark session started, each
area's findings computed) and the command prints each line as it arrives (:func:`follow`).
Writing never fails a report: a line that cannot be written is dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

#: How often :func:`follow` looks for new lines, in seconds.
POLL_S = 0.2


def note(path: str | Path | None, text: str) -> None:
    """Append one line of progress to ``path`` (nothing when ``path`` is empty or cannot be written)."""
    if not path:
        return
    line = " ".join(str(text).split())  # one line, whatever the text holds
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
    except OSError:
        pass


@contextmanager
def follow(path: str | Path, emit: Callable[[str], None]) -> Iterator[None]:
    """Call ``emit`` with each whole line appended to ``path`` while the block runs, and with the
    last ones when it ends (a thread polls the file; lines already in it are not repeated)."""
    target = Path(path)
    offset = target.stat().st_size if target.exists() else 0
    pending = b""
    stop = threading.Event()

    def drain() -> None:
        nonlocal offset, pending
        try:
            with open(target, "rb") as src:
                src.seek(offset)
                chunk = src.read()
        except OSError:
            return
        offset += len(chunk)
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            emit(line.decode("utf-8", "replace"))

    def poll() -> None:
        while not stop.wait(POLL_S):
            drain()

    thread = threading.Thread(target=poll, name="workbench-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        drain()
