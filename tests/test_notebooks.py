"""Every shipped notebook runs on the demo bundle in a kernel of the environment Binder builds from
``binder/``'s files alone (``tests/binder_env.py``).

The section notebooks (the overview and one per area) run with no parameter set (interactive mode) in that kernel
inside JupyterLab, in a real browser (``tests/browser/test_notebooks_lab.py``, ``make test-full``). The composed
``incident_report`` notebook, made of the same section notebooks (``tests/test_report.py`` checks the
composition), runs there as the demo report (``workbench.report.run_report``, the ``demo_report``
fixture), which the report tests and the offline browser test then read: running it once more in
interactive mode would repeat the same kernel's work, ten minutes on a loaded 2-core machine."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tests.conftest import DEMO_REPORT_TIMEOUT_S
from workbench.report import section_notebooks

REPO = Path(__file__).resolve().parent.parent
SHIPPED = sorted((REPO / "notebooks").glob("*.ipynb"))
#: The notebooks the JupyterLab test opens in the Binder kernel: every section notebook
#: (``NN_<name>.ipynb``), so an area's notebook is opened there by being added.
IN_LAB = tuple(p.stem for p in section_notebooks(REPO / "notebooks"))
#: The notebook the demo report runs in the Binder kernel (composed from the sections).
AS_REPORT = ("incident_report",)

pytestmark = pytest.mark.spark


def test_every_shipped_notebook_runs_in_the_binder_kernel_in_jupyterlab_or_as_the_demo_report():
    from tests.browser.test_notebooks_lab import NOTEBOOKS as LAB
    from workbench.report import COMPOSED_NOTEBOOK, notebook_path

    assert tuple(LAB) == IN_LAB and IN_LAB[0] == "00_overview" and len(IN_LAB) >= 5
    assert sorted(p.stem for p in SHIPPED) == sorted(IN_LAB)   # every shipped notebook is a section
    assert notebook_path(COMPOSED_NOTEBOOK).stem == AS_REPORT[0]   # composed from them


@pytest.mark.timeout(DEMO_REPORT_TIMEOUT_S)
def test_the_incident_report_runs_on_the_demo_bundle_in_the_binder_kernel(demo_report) -> None:
    """The demo report ran the composed notebook in Binder's kernel (a kernelspec that exists only in
    that environment): every cell ran, none failed, and the report drew figures."""
    assert demo_report.exit_code in (0, 1), demo_report
    executed = nbformat.read(str(demo_report.path.parent / "executed.ipynb"), as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code)
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    shown = [o for o in outputs if o.get("output_type") == "display_data"]
    assert any("application/vnd.plotly.v1+json" in o.get("data", {}) or "text/html" in o.get("data", {})
               for o in shown)
    assert "Traceback" not in "".join(str(o.get("data", {}).get("text/html", "")) for o in shown)
    assert executed.metadata.get("papermill", {}).get("parameters", {}).get("report") is True


def test_binder_jupyterlab_settings(binder_kernel) -> None:
    """``postBuild`` turns off JupyterLab's announcements plugin (its news and update checks), and
    installs ``binder/overrides.json`` (every cell stays rendered) as the image's settings."""
    _, _, python = binder_kernel
    prefix = Path(python).parents[1]
    config = prefix / "etc" / "jupyter" / "labconfig" / "page_config.json"
    disabled = json.loads(config.read_text(encoding="utf-8"))["disabledExtensions"]
    assert disabled == {"@jupyterlab/apputils-extension:announcements": True}
    installed = json.loads((prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json").read_text("utf-8"))
    assert installed == json.loads((REPO / "binder" / "overrides.json").read_text("utf-8"))
    assert installed["@jupyterlab/notebook-extension:tracker"]["windowingMode"] == "none"
