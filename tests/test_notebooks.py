"""Every shipped notebook runs on the demo bundle with no parameter set (interactive mode), in a
kernel of the environment Binder builds from ``binder/``'s files alone (``tests/binder_env.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill
import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_the_demo_bundle_without_parameters(path: Path, tmp_path: Path, binder_kernel,
                                                             monkeypatch) -> None:
    kernel, env, _ = binder_kernel
    monkeypatch.setenv("JUPYTER_PATH", env["JUPYTER_PATH"])
    executed = tmp_path / path.name
    # Binder's kernel runs Spark on one core with 512 MiB (binder/start): the overview computes the
    # findings of all five areas of the demo bundle in one cell, minutes on a busy machine
    papermill.execute_notebook(str(path), str(executed), kernel_name=kernel, cwd=str(REPO),
                               progress_bar=False, execution_timeout=1800)
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
