"""Every shipped notebook runs on the demo bundle with no parameter set (interactive mode), in a
kernel of the environment Binder builds from ``binder/``'s files alone (``tests/binder_env.py``).

The overview and the four area notebooks run in that kernel inside JupyterLab, in a real browser
(``tests/browser/test_notebooks_lab.py``); papermill runs the others here (``incident_report``).
Running the five again with papermill would repeat the same kernel's work."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent
SHIPPED = sorted((REPO / "notebooks").glob("*.ipynb"))
#: The notebooks the JupyterLab test opens in the Binder kernel (the same stems as its NOTEBOOKS).
IN_LAB = ("00_overview", "01_quorum", "02_isr", "03_consumer_lag", "04_mirror_and_tier")
NOTEBOOKS = [p for p in SHIPPED if p.stem not in IN_LAB]

pytestmark = pytest.mark.spark


#: Notebooks run at once: Binder's kernel runs Spark on one core (``binder/start``), so two of them
#: share a 2-core machine without waiting on each other (each also waits on its JVM and Python).
AT_ONCE = 2
#: Started first: they compute the findings of all five areas (the longest runs).
FIRST = ("incident_report", "00_overview")


@pytest.fixture(scope="session")
def binder_runs(binder_kernel, tmp_path_factory) -> Iterator[dict[str, Future]]:
    """Every notebook executed by papermill (its command line, one process each) in the Binder
    kernel, :data:`AT_ONCE` at a time, longest first: ``{stem: future of (returncode, output, path)}``."""
    kernel, env, _ = binder_kernel
    out = tmp_path_factory.mktemp("binder-notebooks")
    running: list[subprocess.Popen] = []
    stopping = threading.Event()

    def execute(path: Path) -> tuple[int, str, Path]:
        executed = out / path.name
        # Binder's kernel runs Spark on one core with 512 MiB (binder/start): the overview computes the
        # findings of all five areas of the demo bundle in one cell, minutes on a busy machine
        argv = [sys.executable, "-m", "papermill", str(path), str(executed), "--kernel", kernel,
                "--cwd", str(REPO), "--no-progress-bar", "--execution-timeout", "1800"]
        if stopping.is_set():
            return -1, "not started: the session ended", executed
        with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            running.append(proc)
            output, _ = proc.communicate(timeout=3600)
        return proc.returncode, output, executed

    order = sorted(NOTEBOOKS, key=lambda p: (p.stem not in FIRST, FIRST.index(p.stem) if p.stem in FIRST else 0,
                                             p.stem))
    with ThreadPoolExecutor(max_workers=AT_ONCE, thread_name_prefix="papermill") as pool:
        futures = {path.stem: pool.submit(execute, path) for path in order}
        try:
            yield futures
        finally:
            stopping.set()
            for future in futures.values():
                future.cancel()
            for proc in running:
                if proc.poll() is None:
                    proc.kill()


def test_every_shipped_notebook_runs_in_the_binder_kernel_here_or_in_jupyterlab():
    from tests.browser.test_notebooks_lab import NOTEBOOKS as LAB

    assert tuple(LAB) == IN_LAB
    assert sorted(p.stem for p in SHIPPED) == sorted([*IN_LAB, *(p.stem for p in NOTEBOOKS)])
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_the_demo_bundle_without_parameters(path: Path, binder_runs) -> None:
    returncode, output, executed = binder_runs[path.stem].result()
    assert returncode == 0, f"papermill exited {returncode}:\n{output[-6000:]}"
    nb = nbformat.read(str(executed), as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    shown = [o for o in outputs if o.get("output_type") == "display_data"]
    widgets = [o for o in shown if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widgets, "interactive mode shows at least one widget"
    text = "".join(str(o.get("data", {}).get("text/html", "")) for o in shown)
    assert "Traceback" not in text


def test_binder_jupyterlab_does_not_offer_to_fetch_news(binder_kernel) -> None:
    """``postBuild`` turns off JupyterLab's announcements plugin (its news and update checks)."""
    _, _, python = binder_kernel
    config = Path(python).parents[1] / "etc" / "jupyter" / "labconfig" / "page_config.json"
    disabled = json.loads(config.read_text(encoding="utf-8"))["disabledExtensions"]
    assert disabled == {"@jupyterlab/apputils-extension:announcements": True}
