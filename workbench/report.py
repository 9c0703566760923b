"""HTML incident reports: run a parameterised notebook with papermill, export it with nbconvert.

The report is one self-contained HTML file: no code cells, plotly.js embedded once (the
notebooks use the ``plotly_mimetype+notebook`` renderer), and no script loaded from the
network, so it opens offline and can be attached to a ticket.

The notebooks live in the repository's ``notebooks/`` directory. Each takes a ``bundle``
parameter and a ``report`` flag (static figures instead of widgets, which do not render
offline).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.errors import BundleError, ConfigError, WorkbenchError

__all__ = ["ReportError", "build_report", "notebook_path", "notebooks_dir", "write_summary"]

#: Cells with these tags are dropped from the HTML (the parameter cells).
HIDDEN_CELL_TAGS = frozenset({"parameters", "injected-parameters"})

#: Parameters that :func:`build_report` sets itself.
RESERVED_PARAMETERS = frozenset({"bundle", "report"})

# The lab template without anything fetched from a CDN: require.js, MathJax, mermaid and the
# widget manager are not needed by a report whose figures are plain plotly output.
_TEMPLATE_NAME = "workbench_report.html.j2"
_TEMPLATE = """\
{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""

# plotly's "notebook" renderer always adds MathJax from a CDN next to every figure (plotly 6/7,
# include_mathjax="cdn" is hard-coded). Figures here use no LaTeX, so the tag is dropped rather
# than let an opened report call out to the network.
_PLOTLY_MATHJAX = re.compile(
    r"""<script src="https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/[^"<>]*"></script>"""
    r"""(<script>if \(window\.MathJax && window\.MathJax\.Hub && window\.MathJax\.Hub\.Config\)"""
    r"""[^<]*</script>)?"""
)
_REMOTE_SCRIPT = re.compile(r"""<script[^>]*\ssrc\s*=\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)
_REMOTE_LINK = re.compile(r"""<link[^>]*\shref\s*=\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)


class ReportError(WorkbenchError):
    """A report could not be built: the notebook failed, or its HTML would need the network.

    Attributes
    ----------
    executed_notebook : pathlib.Path or None
        The executed (possibly partial) notebook kept for reading, when there is one.
    """

    def __init__(self, message: str, executed_notebook: Path | None = None) -> None:
        super().__init__(message)
        self.executed_notebook = executed_notebook


def notebooks_dir() -> Path:
    """The directory holding the shipped notebooks (``<repository>/notebooks``).

    Examples
    --------
    >>> notebooks_dir().name
    'notebooks'
    """
    here = Path(__file__).resolve().parent.parent / "notebooks"  # <repository>/workbench/report.py
    if not here.is_dir():
        raise ReportError(
            f"notebooks directory not found at {here}: the workbench must run from a source checkout "
            "(pip install -e .) for reports"
        )
    return here


def notebook_path(name: str) -> Path:
    """Resolve a notebook name (``incident_report``) or a path to an ``.ipynb`` file.

    Examples
    --------
    >>> notebook_path("incident_report").name
    'incident_report.ipynb'
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"notebook: expected a notebook name such as 'incident_report', got {name!r}")
    candidate = Path(name)
    if candidate.suffix == ".ipynb" and candidate.is_file():
        return candidate.resolve()
    directory = notebooks_dir()
    stem = candidate.name[: -len(".ipynb")] if candidate.name.endswith(".ipynb") else candidate.name
    if stem != name.removesuffix(".ipynb"):
        raise ConfigError(f"notebook: {name!r} is neither an existing .ipynb file nor a notebook name")
    path = directory / f"{stem}.ipynb"
    if not path.is_file():
        known = sorted(p.stem for p in directory.glob("*.ipynb"))
        raise ConfigError(f"notebook: no notebook named {stem!r} in {directory}; available: {', '.join(known)}")
    return path


def _check_parameters(notebook: Path, parameters: Mapping[str, Any]) -> None:
    import papermill

    clash = sorted(RESERVED_PARAMETERS & set(parameters))
    if clash:
        raise ConfigError(f"parameters: {', '.join(clash)} are set by build_report itself; pass the bundle argument")
    declared = papermill.inspect_notebook(str(notebook))
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise ConfigError(
            f"parameters: {notebook.stem} has no parameter(s) {', '.join(unknown)}; "
            f"it takes {', '.join(sorted(declared))}"
        )


def _execute(
    notebook: Path, executed: Path, parameters: dict[str, Any], kernel_name: str, timeout: float | None
) -> None:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    try:
        papermill.execute_notebook(
            str(notebook),
            str(executed),
            parameters=parameters,
            kernel_name=kernel_name,
            cwd=os.getcwd(),
            progress_bar=False,
            log_output=False,
            execution_timeout=timeout,
        )
    except PapermillExecutionError as exc:
        raise ReportError(
            f"notebook {notebook.name} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}; "
            f"the executed notebook is kept at {executed}",
            executed,
        ) from exc
    except Exception as exc:  # kernel death, timeouts, missing kernel: all mean no report
        kept = executed if executed.exists() else None
        where = f"; the executed notebook is kept at {executed}" if kept else ""
        raise ReportError(
            f"notebook {notebook.name} could not be run: {type(exc).__name__}: {exc}{where}", kept
        ) from exc


def _to_html(executed: Path, title: str) -> str:
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb = nbformat.read(str(executed), as_version=4)
    nb.metadata.pop("widgets", None)  # widget state does not render offline
    for cell in nb.cells:
        # stderr is the kernel's and the JVM's logging (Spark start-up warnings), not findings
        outputs = [
            o for o in cell.get("outputs", []) if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
        ]
        if "outputs" in cell:
            cell["outputs"] = outputs
        for output in outputs:
            data = output.get("data", {})
            if isinstance(data.get("text/html"), str):
                data["text/html"] = _PLOTLY_MATHJAX.sub("", data["text/html"])
    nb.metadata["title"] = title
    exporter = HTMLExporter(
        template_name="lab",
        template_file=_TEMPLATE_NAME,
        extra_loaders=[jinja2.DictLoader({_TEMPLATE_NAME: _TEMPLATE})],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    exporter.register_preprocessor(
        TagRemovePreprocessor(enabled=True, remove_cell_tags=set(HIDDEN_CELL_TAGS)), enabled=True
    )
    body, _resources = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    return body


def _check_offline(body: str, executed: Path | None) -> None:
    remote = _REMOTE_SCRIPT.search(body) or _REMOTE_LINK.search(body)
    if remote:
        found = remote.group(0)
        raise ReportError(
            f"the report would load scripts from the network ({found!r}); expected plotly.js embedded "
            "(set pio.renderers.default = 'plotly_mimetype+notebook' in the notebook)",
            executed,
        )


def build_report(
    bundle: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    notebook: str = "incident_report",
    parameters: Mapping[str, Any] | None = None,
    kernel_name: str = "python3",
    keep_executed: str | os.PathLike[str] | None = None,
    timeout: float | None = 600,
) -> Path:
    """Run a report notebook on a bundle and write one self-contained HTML file.

    Parameters
    ----------
    bundle : str or path
        Bundle directory or archive; passed to the notebook as the ``bundle`` parameter
        (absolute), with ``report=True``.
    out : str or path
        The HTML file to write (parent directories are created).
    notebook : str
        A notebook name from the repository's ``notebooks/`` directory, or a path to an
        ``.ipynb`` file.
    parameters : mapping, optional
        Further notebook parameters (``start``, ``end``, ``topics``, ...). Names the notebook
        does not declare are refused, as are ``bundle`` and ``report``.
    kernel_name : str
        Jupyter kernel to run the notebook with.
    keep_executed : str or path, optional
        Where to keep the executed notebook. By default it is written to a temporary directory
        that is removed on success and kept on failure.
    timeout : float or None
        Seconds a single cell may run.

    Returns
    -------
    pathlib.Path
        The absolute path of the HTML report.

    Raises
    ------
    ReportError
        The notebook failed (the message names the executed notebook, which is kept), or the
        HTML would load scripts from the network.
    BundleError
        ``bundle`` does not exist.
    ConfigError
        Unknown notebook or parameter names.

    Examples
    --------
    >>> build_report("demo-bundle", "reports/incident.html",
    ...              parameters={"topics": "payments"})  # doctest: +SKIP
    PosixPath('/.../reports/incident.html')
    """
    bundle_path = Path(bundle).expanduser().resolve()
    if not bundle_path.exists():
        raise BundleError(f"bundle path does not exist: {bundle_path}")
    out_path = Path(out).expanduser().resolve()
    if out_path.suffix.lower() not in (".html", ".htm"):
        raise ConfigError(f"out: expected an .html file name, got {out_path.name}")
    if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0 or math.isnan(timeout)):
        raise ConfigError(f"timeout: expected a positive number of seconds or None, got {timeout!r}")
    source = notebook_path(notebook)
    params = dict(parameters or {})
    _check_parameters(source, params)
    params.update(bundle=str(bundle_path), report=True)

    scratch: Path | None = None
    if keep_executed is not None:
        executed = Path(keep_executed).expanduser().resolve()
        executed.parent.mkdir(parents=True, exist_ok=True)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="workbench-report-"))
        executed = scratch / f"{source.stem}.executed.ipynb"

    _execute(source, executed, params, kernel_name, timeout)  # on failure the scratch dir is kept
    try:
        body = _to_html(executed, f"Kafka incident report: {bundle_path.name}")
        _check_offline(body, executed if keep_executed is not None else None)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_name(f".{out_path.name}.partial")
    partial.write_text(body, encoding="utf-8")
    partial.replace(out_path)
    return out_path


def _json_value(value: Any) -> Any:
    """Make pandas/numpy scalars JSON-friendly: NaN/NaT become null, times ISO 8601 in UTC."""
    import pandas as pd

    if value is None:
        return None
    if isinstance(value, dt.datetime | dt.date | pd.Timestamp):
        if pd.isna(value):
            return None
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)  # the workbench's Spark sessions run in UTC
        return value.isoformat()
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def write_summary(
    path: str | os.PathLike[str],
    *,
    bundle: str,
    findings: Sequence[str],
    partitions: Any = None,
    parameters: Mapping[str, Any] | None = None,
) -> Path:
    """Write the machine-readable result of a report run as JSON.

    Parameters
    ----------
    path : str or path
        JSON file to write (parent directories are created).
    bundle : str
        The bundle the report was built from.
    findings : sequence of str
        Plain-text findings, most severe first.
    partitions : pandas.DataFrame, optional
        A per-partition table (e.g. the ISR summary); written as a list of records.
    parameters : mapping, optional
        The notebook parameters, recorded for reproducibility.

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import tempfile, json
    >>> p = write_summary(Path(tempfile.mkdtemp()) / "s.json", bundle="b", findings=["x"])
    >>> json.loads(p.read_text())["findings"]
    ['x']
    """
    target = Path(path).expanduser()
    rows: list[dict[str, Any]] = []
    if partitions is not None:
        rows = [{str(k): _json_value(v) for k, v in rec.items()} for rec in partitions.to_dict("records")]
    document = {
        "bundle": str(bundle),
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "parameters": {str(k): _json_value(v) for k, v in (parameters or {}).items()},
        "findings": [str(f) for f in findings],
        "partitions": rows,
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return target
