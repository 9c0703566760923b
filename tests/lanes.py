"""The suite in two pytest processes side by side (``make test``), each over its own files.

One pytest leaves much of a 2-core machine idle: a Spark test waits on its driver's round trips, a
report test on a kernel process, a browser test on Chromium and JupyterLab. The ``kernels`` lane
holds the files whose tests mostly wait on kernel processes they start (the HTML reports, the
corpus's kept kernels, the Binder notebooks); the ``main`` lane holds every other file of
``tests/``. Each lane has its own temporary directory, its output goes to its own log, printed
whole when the lane ends (so ``collected``, ``FAILED`` and ``SKIPPED`` lines stay at line starts for
``.ci/run``), and the exit status is the first non-zero one of the lanes. Every
:data:`HEARTBEAT_S` a line per running lane shows its last output line; a run stopped by a signal
prints the end of each running lane's log first.

Usage: ``python -m tests.lanes [pytest options...]`` (the same options go to both lanes).
``$WORKBENCH_LANE`` (``main`` or ``kernels``; ``make test-full LANE_ONLY=kernels``) runs that lane
alone: a whole ``make test-full`` outlasts one sitting, and its lanes pass or fail independently.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Files of the ``kernels`` lane (relative to the repository); every other test file is ``main``'s.
KERNELS_LANE: tuple[str, ...] = (
    "tests/test_bad_value_corpus.py",
    "tests/test_notebooks.py",
    "tests/browser/test_report_browser.py",
    "tests/test_hostile_report.py",
    "tests/test_report.py",
    "tests/test_nothing_to_analyse.py",
    "tests/test_kernels.py",
)
#: The environment variable naming the one lane to run (unset or empty: both).
ONLY_ENV = "WORKBENCH_LANE"
#: Seconds between the one-line progress reports while the lanes run.
HEARTBEAT_S = 300.0
#: Runs whose directories (logs, each lane's ``--basetemp`` with its screenshots) are kept, newest first.
KEEP_RUNS = 3


def lane_commands(options: list[str]) -> dict[str, list[str]]:
    """The pytest command line of each lane: ``kernels`` over :data:`KERNELS_LANE`, ``main`` over
    ``tests`` without them (only the lane :data:`ONLY_ENV` names, when it names one)."""
    missing = [p for p in KERNELS_LANE if not (REPO / p).is_file()]
    if missing:
        raise SystemExit(f"tests/lanes.py: lane files missing: {missing}")
    base = [sys.executable, "-m", "pytest", *options]
    lanes = {
        "kernels": [*base, *KERNELS_LANE],
        "main": [*base, "tests", *[f"--ignore={p}" for p in KERNELS_LANE]],
    }
    only = os.environ.get(ONLY_ENV, "").strip()
    if only and only not in lanes:
        raise SystemExit(f"tests/lanes.py: ${ONLY_ENV} names no lane: {only!r} (one of {', '.join(lanes)})")
    return {only: lanes[only]} if only else lanes


def _tail(log: Path, lines: int = 60) -> str:
    """The last ``lines`` lines of a lane's log (what a stopped or running lane has printed)."""
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def run(options: list[str]) -> int:
    """Run both lanes; print each lane's whole log as it ends; return the first non-zero status."""
    commands = lane_commands(options)
    work = Path(tempfile.mkdtemp(prefix="workbench-lanes-"))
    earlier = sorted(work.parent.glob("workbench-lanes-*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in [p for p in earlier if p != work][KEEP_RUNS - 1:]:
        shutil.rmtree(old, ignore_errors=True)
    print(f"lanes: logs and temporary directories in {work}", flush=True)
    procs: dict[str, subprocess.Popen] = {}
    logs: dict[str, Path] = {}
    started = time.monotonic()
    for name, argv in commands.items():
        logs[name] = work / f"{name}.log"
        argv = [*argv, f"--basetemp={work / ('tmp-' + name)}"]
        print(f"lanes: {name}: {' '.join(argv[2:])}", flush=True)
        with open(logs[name], "wb") as log:
            procs[name] = subprocess.Popen(argv, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True)

    def stop(*_):
        for name, p in procs.items():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                print(f"lanes: {name} stopped after {time.monotonic() - started:.0f} s; the end of its output:",
                      flush=True)
                print(_tail(logs[name]), flush=True)
        raise SystemExit(130)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    done = threading.Event()

    def heartbeat():
        while not done.wait(HEARTBEAT_S):
            for name in [n for n, p in procs.items() if p.poll() is None]:
                last = _tail(logs[name], 1).strip()[-160:]
                print(f"lanes: {time.monotonic() - started:.0f} s, {name} running: {last}", flush=True)

    threading.Thread(target=heartbeat, daemon=True).start()
    statuses: dict[str, int] = {}
    while len(statuses) < len(procs):
        for name, p in procs.items():
            if name not in statuses and p.poll() is not None:
                statuses[name] = p.returncode
                print(f"lanes: {name} ended after {time.monotonic() - started:.0f} s, exit {p.returncode}; "
                      f"its output:", flush=True)
                sys.stdout.write(logs[name].read_text(errors="replace"))
                sys.stdout.flush()
        time.sleep(1.0)
    done.set()
    print(f"lanes: {', '.join(f'{n} exit {s}' for n, s in statuses.items())}; "
          f"{time.monotonic() - started:.0f} s in all", flush=True)
    return next((s for s in statuses.values() if s != 0), 0)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
