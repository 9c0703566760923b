"""HTML incident reports: run a parameterised notebook with papermill, export it with nbconvert.

The report is one self-contained HTML file: no code cells, plotly.js embedded once (the
notebooks use the ``plotly_mimetype+notebook`` renderer), and no script loaded from the
network, so it opens offline and can be attached to a ticket.

The notebooks live in the repository's ``notebooks/`` directory. Each takes a ``bundle``
parameter and a ``report`` flag (static figures instead of widgets, which do not render
offline).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import BundleError, ConfigError, WorkbenchError
from workbench.params import convert_parameter, parse_window

__all__ = [
    "ReportError",
    "ReportKernel",
    "ReportResult",
    "build_report",
    "compose_report_notebook",
    "composed_notebook",
    "notebook_path",
    "notebooks_dir",
    "run_report",
]


#: Arguments of every report kernel: its own notices (a loopback kernel's "running over TCP without
#: encryption") are not a report's output; errors still show.
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR"]
#: Cells with these tags are dropped from the HTML (the parameter cells).
HIDDEN_CELL_TAGS = frozenset({"parameters", "injected-parameters"})

#: Parameters that :func:`build_report` sets itself.
RESERVED_PARAMETERS = frozenset({"bundle", "report", "progress_path"})

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
    if stem == COMPOSED_NOTEBOOK:
        return composed_notebook(directory)
    path = directory / f"{stem}.ipynb"
    if not path.is_file():
        known = sorted([COMPOSED_NOTEBOOK, *(p.stem for p in directory.glob("*.ipynb"))])
        raise ConfigError(f"notebook: no notebook named {stem!r} in {directory}; available: {', '.join(known)}")
    return path


def composed_notebook(directory: Path | None = None) -> Path:
    """The incident report notebook (:func:`compose_report_notebook`) as a file, written on first use.

    It is composed from the section notebooks as they are now, never kept in the repository (a
    stale copy cannot exist, and adding a section edits nothing else), into
    ``$KAFKA_WORKBENCH_CACHE/notebooks/<digest of the sections>/incident_report.ipynb`` (written
    to a temporary name and renamed: processes composing at once each get a whole file).
    """
    import hashlib

    import nbformat

    from workbench.classarchive import cache_dir

    folder = directory or notebooks_dir()
    digest = hashlib.sha256()
    for path in section_notebooks(folder):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    target = cache_dir() / "notebooks" / digest.hexdigest()[:16] / f"{COMPOSED_NOTEBOOK}.ipynb"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=target.parent, suffix=".partial")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            nbformat.write(compose_report_notebook(folder), out)
        os.replace(partial, target)
    return target


#: The report notebook composed from the section notebooks (``NN_<area>.ipynb``).
COMPOSED_NOTEBOOK = "incident_report"
_SECTION = re.compile(r"^(\d\d)_[a-z0-9_]+\.ipynb$")


def section_notebooks(directory: Path | None = None) -> list[Path]:
    """The section notebooks (``00_overview.ipynb``, ``01_quorum.ipynb``, ...), in order."""
    folder = directory or notebooks_dir()
    return sorted(p for p in folder.glob("*.ipynb") if _SECTION.match(p.name))


def _parameter_lines(source: str) -> list[tuple[str, str]]:
    out = []
    for line in source.splitlines():
        m = re.match(r"^([A-Za-z_]\w*)\s*[:=]", line)
        if m:
            out.append((m.group(1), line))
    return out


def compose_report_notebook(directory: Path | None = None) -> Any:
    """The incident report as one notebook: every section notebook's cells, in order, sharing one setup.

    * one ``parameters`` cell: the union of the sections' parameter lines (a name declared twice
      must be declared identically);
    * each distinct ``setup`` cell once (the sections share one :class:`~workbench.investigation.Investigation`);
    * every other cell in section order, except cells tagged ``appendix``, which close the report;
    * the sections' first markdown cell (their title) stays; the overview's opens the report.

    Adding an area's notebook adds a section: the report composes its notebook from the sections
    each time they change (:func:`composed_notebook`).
    """
    import nbformat

    sections = section_notebooks(directory)
    if not sections:
        raise ReportError(f"no section notebooks (NN_<name>.ipynb) in {directory or notebooks_dir()}")
    params: dict[str, str] = {}
    setups: list[str] = []
    body: list[Any] = []
    appendix: list[Any] = []
    kernelspec = None
    for path in sections:
        nb = nbformat.read(str(path), as_version=4)
        kernelspec = kernelspec or nb.metadata.get("kernelspec")
        for cell in nb.cells:
            tags = set(cell.metadata.get("tags", []))
            if "parameters" in tags:
                for name, line in _parameter_lines(cell.source):
                    if name in params and params[name].split("#")[0].strip() != line.split("#")[0].strip():
                        raise ReportError(f"parameter {name!r} is declared differently in {path.name}: "
                                          f"{line!r} vs {params[name]!r}")
                    params.setdefault(name, line)
            elif "setup" in tags:
                if cell.source not in setups:
                    setups.append(cell.source)
                    body.append(_fresh_cell(cell))
            elif "appendix" in tags:
                appendix.append(_fresh_cell(cell))
            else:
                body.append(_fresh_cell(cell, demote=path != sections[0]))
    first = nbformat.v4.new_code_cell("\n".join(params.values()), metadata={"tags": ["parameters"]})
    # the title cell of the first section opens the report, then the parameters
    cells = body[:1] + [first] + body[1:] + appendix
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = kernelspec or {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["workbench"] = {"composed_from": [p.name for p in sections]}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
    return nb


def _fresh_cell(cell: Any, demote: bool = False) -> Any:
    import nbformat

    tags = [t for t in cell.metadata.get("tags", []) if t != "appendix"]
    meta = {"tags": tags} if tags else {}
    if cell.cell_type == "markdown":
        # a section's headings go one level down, under the report's title
        text = re.sub(r"(?m)^(#+ )", r"#\1", cell.source) if demote else cell.source
        return nbformat.v4.new_markdown_cell(text, metadata=meta)
    return nbformat.v4.new_code_cell(cell.source, metadata=meta)


def declared_parameters(notebook: Path) -> dict[str, dict[str, Any]]:
    """The parameters a notebook's ``parameters`` cell declares: name -> {type, default, help}."""
    import papermill

    return {name: {"type": (spec.get("inferred_type_name") or "str").split("|")[0].strip(),
                   "default": spec.get("default"), "help": spec.get("help") or ""}
            for name, spec in papermill.inspect_notebook(str(notebook)).items()}


def check_parameters(notebook: Path, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Validate and convert report parameters against the notebook's declared types.

    Every error is collected and reported at once, one line each: unknown names, reserved names
    (``bundle``, ``report``), values of the wrong type, and unreadable ``start``/``end`` times. No
    Spark work happens before this passes.

    Returns
    -------
    dict
        The parameters converted to the declared types.

    Raises
    ------
    ConfigError
        With one line per problem.
    """
    declared = declared_parameters(notebook)
    errors: list[str] = []
    out: dict[str, Any] = {}
    for name, value in parameters.items():
        if name in RESERVED_PARAMETERS:
            hint = " (give the bundle with --bundle)" if name == "bundle" else ""
            errors.append(f"parameter {name!r} is set by the report itself{hint}")
        elif name not in declared:
            takes = ", ".join(sorted(set(declared) - RESERVED_PARAMETERS))
            errors.append(f"{notebook.stem} has no parameter {name!r}; it takes {takes}")
        else:
            try:
                out[name] = convert_parameter(name, declared[name]["type"], value)
            except ConfigError as exc:
                errors.append(str(exc))
    try:
        parse_window(out.get("start"), out.get("end"))
    except ConfigError as exc:
        errors.extend(str(exc).splitlines())
    if errors:
        raise ConfigError("\n".join(errors))
    return out


def _execute(notebook: Path, executed: Path, parameters: dict[str, Any], kernel_name: str, timeout: float | None,
             kernel: ReportKernel | None = None, *, progress_bar: bool = False) -> None:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    # a kept kernel runs the notebook through papermill too (same parameter cell, same error
    # handling), with an engine that reuses the kernel instead of starting one; either writes the
    # executed notebook once, at the end
    engine = kernel._engine_arguments() if kernel is not None else {
        "kernel_manager_class": _kernel_manager_class(), "engine_name": _register(_SAVING_ENGINE, _end_saving_engine)}
    log = (engine["kernel_manager_class"] if kernel is None else kernel.km).stderr_log
    said = f"; the kernel's messages are in {log}"
    try:
        papermill.execute_notebook(
            str(notebook),
            str(executed),
            parameters=parameters,
            kernel_name=kernel_name,
            cwd=os.getcwd(),
            progress_bar=progress_bar,
            log_output=False,
            execution_timeout=timeout,
            extra_arguments=KERNEL_ARGUMENTS,
            # a report is static HTML: widget state kept in the notebook would make nbconvert load
            # the widget manager from a CDN (and carry every widget's data twice)
            store_widget_state=False,
            **engine,
        )
    except PapermillExecutionError as exc:
        raise ReportError(
            f"notebook {notebook.name} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}; "
            f"the executed notebook is kept at {executed}{said}{_discarded(kernel)}",
            executed,
        ) from exc
    except Exception as exc:  # kernel death, timeouts, missing kernel: all mean no report
        kept = executed if executed.exists() else None
        where = f"; the executed notebook is kept at {executed}" if kept else ""
        raise ReportError(
            f"notebook {notebook.name} could not be run: {type(exc).__name__}: {exc}{where}{said}{_discarded(kernel)}",
            kept
        ) from exc


def _discarded(kernel: ReportKernel | None) -> str:
    """Shut a kept kernel down after a failed run (its state is unknown): the next report starts a fresh one."""
    if kernel is None:
        return ""
    kernel.discard()
    return "; its kernel was shut down and the next report starts a fresh one"


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
    _name_failed_views(nb)
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


def _name_failed_views(nb: Any) -> None:
    """Name at the top of the report (after its title) every part that could not be drawn: each
    failed cell (:func:`workbench.investigation.guard_report_cells`) by the heading above it."""
    import nbformat

    from widgets.tables import text_html

    failed, heading = [], None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = re.findall(r"(?m)^#+ +(.+)$", cell.source)
            heading = found[-1].strip() if found else heading
            continue
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html", "")
            if isinstance(html, str) and "wb-view-failed" in html:
                failed.append(heading or "(before the first heading)")
    if not failed:
        return
    parts = ", ".join(dict.fromkeys(failed))
    text = (f"{len(failed)} part{'s' if len(failed) != 1 else ''} of this report could not be drawn ({parts}); "
            "each says why in its place. Everything else is reported.")
    banner = nbformat.v4.new_code_cell("", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": '<p class="wb-summary wb-failed"><strong>' + text_html(text)
                              + "</strong></p>"})])
    nb.cells.insert(1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0, banner)


def _check_offline(body: str, executed: Path | None) -> None:
    remote = _REMOTE_SCRIPT.search(body) or _REMOTE_LINK.search(body)
    if remote:
        found = remote.group(0)
        raise ReportError(
            f"the report would load scripts from the network ({found!r}); expected plotly.js embedded "
            "(set pio.renderers.default = 'plotly_mimetype+notebook' in the notebook)",
            executed,
        )


#: Exit codes of a report run, for schedulers.
EXIT_OK, EXIT_FINDINGS, EXIT_FAILED = 0, 1, 2
#: ``fail_on`` values, most severe first; ``never`` makes findings never fail the run.
FAIL_ON = ("critical", "warning", "info", "never")


@dataclass(frozen=True)
class ReportResult:
    """What a report run produced.

    Attributes
    ----------
    path : pathlib.Path
        The HTML report.
    summary : dict or None
        The machine-readable summary (findings, chains, per-area key figures), when the notebook
        writes one (the incident report and the overview do).
    exit_code : int
        :data:`EXIT_OK` (no finding at or above ``fail_on``) or :data:`EXIT_FINDINGS`.
    """

    path: Path
    summary: dict[str, Any] | None
    exit_code: int


def exit_code_for(summary: Mapping[str, Any] | None, fail_on: str) -> int:
    """:data:`EXIT_FINDINGS` when the summary holds a finding at or above ``fail_on``, else :data:`EXIT_OK`.

    :data:`EXIT_FAILED` whatever ``fail_on`` when the summary says the bundle held nothing to
    analyse (``nothing_to_analyse``): a report on no data is not a clean bill of health; and when
    every area with data failed (``failed_areas``): nothing could be reported. A report with some
    areas failed and others computed is judged on the others' findings.

    Examples
    --------
    >>> exit_code_for({"findings": [{"severity": "warning"}]}, "critical")
    0
    >>> exit_code_for({"findings": [{"severity": "warning"}]}, "warning")
    1
    >>> exit_code_for({"findings": [], "nothing_to_analyse": "The bundle holds no file ..."}, "never")
    2
    >>> areas = {"isr": {"has_data": True}, "quorum": {"has_data": True}}
    >>> exit_code_for({"findings": [], "areas": areas, "failed_areas": {"isr": "ArrowInvalid: ..."}}, "critical")
    0
    >>> exit_code_for({"findings": [], "areas": areas, "failed_areas": dict.fromkeys(areas, "...")}, "never")
    2
    """
    if fail_on not in FAIL_ON:
        raise ConfigError(f"fail_on: expected one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    if summary and summary.get("nothing_to_analyse"):
        return EXIT_FAILED
    failed = set((summary or {}).get("failed_areas") or {})
    with_data = {name for name, a in ((summary or {}).get("areas") or {}).items() if a.get("has_data")}
    if failed and with_data <= failed:
        return EXIT_FAILED
    if fail_on == "never" or not summary:
        return EXIT_OK
    worst = FAIL_ON.index(fail_on)
    hits = [f for f in summary.get("findings", []) if f.get("severity") in FAIL_ON[: worst + 1]]
    return EXIT_FINDINGS if hits else EXIT_OK


def build_report(
    bundle: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    notebook: str = COMPOSED_NOTEBOOK,
    parameters: Mapping[str, Any] | None = None,
    kernel_name: str = "python3",
    keep_executed: str | os.PathLike[str] | None = None,
    timeout: float | None = 600,
) -> Path:
    """Run a report notebook on a bundle and write one self-contained HTML file; returns its path.

    See :func:`run_report`, which also returns the summary and the exit code.

    Examples
    --------
    >>> build_report("demo-bundle", "reports/incident.html",
    ...              parameters={"topics": "payments"})  # doctest: +SKIP
    PosixPath('/.../reports/incident.html')
    """
    return run_report(bundle, out, notebook=notebook, parameters=parameters, kernel_name=kernel_name,
                      keep_executed=keep_executed, timeout=timeout).path


def run_report(
    bundle: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    notebook: str = COMPOSED_NOTEBOOK,
    parameters: Mapping[str, Any] | None = None,
    summary: str | os.PathLike[str] | None = None,
    fail_on: str = "critical",
    kernel_name: str = "python3",
    keep_executed: str | os.PathLike[str] | None = None,
    timeout: float | None = 600,
    archive_limits: Any = None,
    progress: Callable[[str], None] | None = None,
) -> ReportResult:
    """Run a report notebook on a bundle and write one self-contained HTML file.

    Everything given is checked before any notebook (or Spark) starts: the bundle exists, ``out``
    is an ``.html`` path that is not a directory, the notebook exists, every parameter is declared
    with a value of its type (one line per error).

    Parameters
    ----------
    bundle : str or path
        Bundle directory or archive; passed to the notebook as the ``bundle`` parameter
        (absolute), with ``report=True``.
    out : str or path
        The HTML file to write (parent directories are created).
    notebook : str
        A notebook name from the repository's ``notebooks/`` directory (default: the composed
        incident report), or a path to an ``.ipynb`` file.
    parameters : mapping, optional
        Further notebook parameters (``start``, ``end``, ``topics``, ...). Strings are converted
        to the declared type (``-p NAME VALUE``); typed values (a YAML file) are checked.
    summary : str or path, optional
        Also write the machine-readable summary (JSON) here.
    fail_on : str
        The severity from which findings make the exit code :data:`EXIT_FINDINGS`
        (``critical``, ``warning``, ``info``, or ``never``).
    kernel_name : str
        Jupyter kernel to run the notebook with.
    keep_executed : str or path, optional
        Where to keep the executed notebook. By default it is written to a temporary directory
        that is removed on success and kept on failure.
    timeout : float or None
        Seconds a single cell may run.
    archive_limits : ArchiveLimits, optional
        How far an archive ``bundle`` may expand (default
        :meth:`workbench.bundle.ArchiveLimits.from_env`). An archive is extracted once, after every
        argument is checked, into a directory of its own that is removed when the report is done,
        failed or not; the notebook reads the extracted directory.
    progress : callable, optional
        Called with one line as each step of the run ends (the Spark session started, the bundle
        opened, each area's findings computed: :mod:`workbench.progress`), while the notebook
        runs; with it, papermill's progress bar over the cells is drawn on a terminal's stderr.

    Returns
    -------
    ReportResult
        ``exit_code`` is :data:`EXIT_FAILED` when the bundle held nothing to analyse (the report
        is written and says so).

    Raises
    ------
    ReportError
        The notebook failed (the message names the executed notebook, which is kept), or the
        HTML would load scripts from the network.
    BundleError
        ``bundle`` does not exist.
    ConfigError
        Unknown notebook, parameter names or values, or a bad ``out``/``fail_on``.
    """
    return _report(bundle, out, notebook=notebook, parameters=parameters, summary=summary, fail_on=fail_on,
                   kernel_name=kernel_name, keep_executed=keep_executed, timeout=timeout,
                   archive_limits=archive_limits, progress=progress, kernel=None)


def _report(bundle: str | os.PathLike[str], out: str | os.PathLike[str], *, notebook: str,
            parameters: Mapping[str, Any] | None, summary: str | os.PathLike[str] | None, fail_on: str,
            kernel_name: str, keep_executed: str | os.PathLike[str] | None, timeout: float | None,
            archive_limits: Any, kernel: ReportKernel | None,
            progress: Callable[[str], None] | None = None) -> ReportResult:
    """:func:`run_report`, in a kernel of its own (``kernel`` None) or in a kept :class:`ReportKernel`."""
    out_path = Path(out).expanduser().resolve()
    if out_path.is_dir():
        raise ConfigError(f"out: {out_path} is a directory; give an .html file name")
    if out_path.suffix.lower() not in (".html", ".htm"):
        raise ConfigError(f"out: expected an .html file name, got {out_path.name}")
    from workbench.bundle import is_url, url_kind

    if is_url(bundle):   # a bundle in object storage: its title is its last name, it is read where it lies
        url = str(bundle)
        bundle_is_file = url_kind(url) == "file"
        bundle_path = Path(url.rstrip("/").rsplit("/", 1)[-1])
    else:
        url = None
        bundle_path = Path(bundle).expanduser().resolve()
        if not bundle_path.exists():
            raise BundleError(f"bundle path does not exist: {bundle_path}")
        bundle_is_file = bundle_path.is_file()
    if fail_on not in FAIL_ON:
        raise ConfigError(f"fail_on: expected one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0 or math.isnan(timeout)):
        raise ConfigError(f"timeout: expected a positive number of seconds or None, got {timeout!r}")
    source = notebook_path(notebook)
    params = check_parameters(source, dict(parameters or {}))
    summary = summary or params.pop("summary_path", None) or None
    writes_summary = "summary_path" in declared_parameters(source)
    if summary and not writes_summary:
        raise ConfigError(f"summary: {source.stem} writes no summary (it has no summary_path parameter)")
    if (out_path.exists() and not os.access(out_path, os.W_OK)) or not _writable_dir(out_path.parent):
        raise ConfigError(f"out: cannot write {out_path} (no permission)")

    run = dict(source=source, params=params, bundle_path=bundle_path, out_path=out_path, summary=summary,
               writes_summary=writes_summary, fail_on=fail_on, kernel_name=kernel_name, keep_executed=keep_executed,
               timeout=timeout, kernel=kernel, progress=progress)
    if bundle_is_file:
        from workbench.bundle import open_bundle

        with open_bundle(url or bundle_path, limits=archive_limits) as opened:  # removed when the report is done
            return _run(root=opened.root, **run)
    return _run(root=url or bundle_path, **run)


def _writable_dir(directory: Path) -> bool:
    """Whether ``directory`` (or its nearest existing ancestor, where it would be created) takes new files."""
    for candidate in (directory, *directory.parents):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


def _run(*, source: Path, params: dict[str, Any], root: Path, bundle_path: Path, out_path: Path,
         summary: str | os.PathLike[str] | None, writes_summary: bool, fail_on: str, kernel_name: str,
         keep_executed: str | os.PathLike[str] | None, timeout: float | None,
         kernel: ReportKernel | None, progress: Callable[[str], None] | None) -> ReportResult:
    from workbench.progress import follow

    params = dict(params, bundle=str(root), report=True)
    scratch = Path(tempfile.mkdtemp(prefix="workbench-report-"))
    if keep_executed is not None:
        executed = Path(keep_executed).expanduser().resolve()
        executed.parent.mkdir(parents=True, exist_ok=True)
    else:
        executed = scratch / f"{source.stem}.executed.ipynb"
    summary_file = None
    if writes_summary:
        summary_file = Path(summary).expanduser().resolve() if summary else scratch / "summary.json"
        params["summary_path"] = str(summary_file)
    progress_file = scratch / "progress.txt"
    if progress is not None and "progress_path" in declared_parameters(source):
        params["progress_path"] = str(progress_file)

    bar = progress is not None and sys.stderr.isatty()
    with follow(progress_file, progress) if progress else contextlib.nullcontext():  # failed: scratch is kept
        _execute(source, executed, params, kernel_name, timeout, kernel, progress_bar=bar)
    try:
        body = _to_html(executed, f"Kafka incident report: {bundle_path.name}")
        _check_offline(body, executed if keep_executed is not None else None)
        document = json.loads(summary_file.read_text(encoding="utf-8")) if summary_file and summary_file.is_file() \
            else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    out_path.parent.mkdir(parents=True, exist_ok=True)
    partial = out_path.with_name(f".{out_path.name}.partial")
    partial.write_text(body, encoding="utf-8")
    partial.replace(out_path)
    return ReportResult(out_path, document, exit_code_for(document, fail_on))


# ------------------------------------------------------------------------------------------
# many reports in one kernel

#: What one report keeps in the kernel, dropped before the next: every open investigation and what
#: its bundle keeps in Spark (:func:`workbench.reset`), and the notebook's
#: variables (so no figure of one bundle can reach the next bundle's report); cells count from 1 again.
_RELEASE = """\
import workbench

workbench.reset()
get_ipython().run_line_magic("reset", "-f")
get_ipython().execution_count = 1  # the next notebook's cells count from 1, as in a kernel of their own
__import__("gc").collect()
"""

_ENGINE = "workbench-kept-kernel"


class ReportKernel:
    """One Jupyter kernel that runs report after report: one Python process and one Spark session for all.

    :meth:`run` takes :func:`run_report`'s arguments and does what it does (the same checks of
    every argument before anything runs, the notebook parameterised and run by papermill, the
    same HTML export, offline check, summary and exit code), but in a kernel started once and
    kept: the Spark session the first report starts serves the next ones. Between two reports
    the kernel drops what the previous one kept (persisted tables, open investigations, Spark's
    cache, the notebook's variables), so memory stays flat over hundreds of reports.

    A report whose notebook fails (a cell error, a timeout, the kernel dying) raises
    :class:`ReportError` as :func:`run_report` does (the command's exit 2), and its kernel is shut
    down: the next report starts in a fresh one.

    Examples
    --------
    >>> with ReportKernel() as kernel:                                              # doctest: +SKIP
    ...     for bundle in bundles:
    ...         result = kernel.run(bundle, f"reports/{bundle.name}.html", summary=f"reports/{bundle.name}.json")
    """

    def __init__(self, kernel_name: str = "python3", *, startup_timeout: float = 120) -> None:
        self.kernel_name = kernel_name
        self.startup_timeout = startup_timeout
        self.km: Any = None
        self.kc: Any = None
        #: Kernels started so far (1 when no report failed).
        self.starts = 0

    def __enter__(self) -> ReportKernel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, bundle: str | os.PathLike[str], out: str | os.PathLike[str], **options: Any) -> ReportResult:
        """Run a report notebook on a bundle in this kernel: :func:`run_report`'s arguments (but
        ``kernel_name``, the kernel's), defaults, checks, result and errors."""
        import inspect

        call = inspect.signature(run_report).bind(bundle, out, kernel_name=self.kernel_name, **options)
        call.apply_defaults()
        try:
            return _report(**call.arguments, kernel=self)
        finally:
            self._release()

    @property
    def pid(self) -> int | None:
        """The kernel's process id while one runs (its Spark driver JVM is a child of it)."""
        provisioner = getattr(self.km, "provisioner", None)
        process = getattr(provisioner, "process", None)
        return getattr(process, "pid", None)

    def discard(self) -> None:
        """Shut the kernel down, if one runs; the next report starts a fresh one."""
        from jupyter_core.utils import ensure_async, run_sync

        km, kc, self.km, self.kc = self.km, self.kc, None, None
        if km is None:
            return

        async def shutdown() -> None:
            try:
                if await ensure_async(km.is_alive()):
                    await ensure_async(km.shutdown_kernel(now=True))
            finally:
                await ensure_async(km.cleanup_resources())
                if kc is not None:
                    await ensure_async(kc.stop_channels())

        try:
            run_sync(shutdown)()
        except Exception:  # a kernel that is already gone leaves nothing to shut down
            pass

    close = discard

    def _engine_arguments(self) -> dict[str, Any]:
        """papermill's engine and its arguments for a run in this kernel (a kernel manager made if
        none is alive; the engine starts its kernel)."""
        from jupyter_core.utils import run_sync

        _register(_ENGINE, _kept_kernel_engine)
        if self.km is not None and not run_sync(self.km.is_alive)():
            self.discard()  # died between two reports
        if self.km is None:
            self.km = _kernel_manager_class()(kernel_name=self.kernel_name)
        return {"engine_name": _ENGINE, "kernel": self, "start_timeout": self.startup_timeout}

    def _release(self) -> None:
        """Drop what the last report kept in the kernel (nothing to do when no kernel is alive)."""
        if self.km is None or self.kc is None:
            return
        import nbformat
        from nbclient import NotebookClient

        client = NotebookClient(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(_RELEASE)]), km=self.km,
                                kernel_name=self.kernel_name, timeout=300)
        client.kc = self.kc
        try:
            client.execute()
        except Exception:  # a kernel that cannot drop what it kept is not reused
            self.discard()


def kernel_log_path() -> Path:
    """A new file for one report kernel's stderr (its Spark JVM's too), beside Spark's logs
    (:func:`workbench.session.spark_log_path`); the newest 50 are kept."""
    from workbench.session import prune_logs, spark_log_path

    folder = spark_log_path().parent
    folder.mkdir(parents=True, exist_ok=True)
    prune_logs(folder, "kernel-*.log")
    fd, name = tempfile.mkstemp(prefix=f"kernel-{os.getpid()}-", suffix=".log", dir=folder)
    os.close(fd)
    return Path(name)


def _kernel_manager_class(log: Path | None = None) -> type:
    """A kernel manager class whose kernels write their stderr to ``log`` (a new
    :func:`kernel_log_path` when None): a report's terminal shows what it did, not the kernel's
    and the JVM's notices; a failed report names the file."""
    from jupyter_client.manager import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        """jupyter_client's manager with the kernel's stderr in a log file, and without the
        interrupt it sends before every shutdown: a report's kernel is idle by then (or killed
        outright on a timeout), and the interrupt only races with the kernel's last message and
        logs "KeyboardInterrupt caught in kernel" on a good run."""

        stderr_log = log or kernel_log_path()

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            with open(self.stderr_log, "ab") as err:  # the kernel holds its own copy once started
                await super()._async_launch_kernel(kernel_cmd, **{**kw, "stderr": err})

        async def _async_interrupt_kernel(self) -> None:
            if not self.shutting_down:
                await super()._async_interrupt_kernel()

    return QuietKernelManager


_SAVING_ENGINE = "workbench-end-saving"


def _register(name: str, make: Callable[[], type]) -> str:
    """Register papermill engine ``name`` (made by ``make``) once per process; returns the name."""
    from papermill.engines import papermill_engines

    if name not in papermill_engines._engines:
        papermill_engines.register(name, make())
    return name


def _end_saving_engine() -> type:
    """papermill's nbclient engine, writing the executed notebook once, when the run ends.

    papermill writes the whole executed notebook (nbformat-validated) as each cell starts and as it
    ends: a report's notebook of about a hundred cells, with figures, grows to megabytes, and those
    writes cost seconds of a small bundle's report. The run's end (success, error, timeout or a dead
    kernel alike: papermill's ``notebook_complete`` runs in a ``finally``) still writes it.
    """
    from papermill.engines import NBClientEngine, NotebookExecutionManager

    class EndSavingManager(NotebookExecutionManager):
        final = False

        def save(self, **kwargs: Any) -> None:
            if self.final:
                super().save(**kwargs)

        def notebook_complete(self, **kwargs: Any) -> None:
            self.final = True
            super().notebook_complete(**kwargs)

    class EndSavingEngine(NBClientEngine):
        @classmethod
        def execute_notebook(cls, nb: Any, kernel_name: str, output_path: str | None = None, progress_bar: bool = True,
                             log_output: bool = False, autosave_cell_every: int = 30, **kwargs: Any) -> Any:
            nb_man = EndSavingManager(nb, output_path=output_path, progress_bar=progress_bar, log_output=log_output,
                                      autosave_cell_every=autosave_cell_every)
            nb_man.notebook_start()
            try:
                cls.execute_managed_notebook(nb_man, kernel_name, log_output=log_output, **kwargs)
            finally:
                nb_man.cleanup_pbar()
                nb_man.notebook_complete()
            return nb_man.nb

    return EndSavingEngine


def _kept_kernel_engine() -> type:
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.log import logger

    class KeptKernelEngine(_end_saving_engine()):
        """papermill's nbclient engine, running in a :class:`ReportKernel`'s kernel (started on first use, kept)."""

        @classmethod
        def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, *, kernel: ReportKernel,
                                     log_output: bool = False, stdout_file: Any = None, stderr_file: Any = None,
                                     start_timeout: float = 60, execution_timeout: float | None = None,
                                     extra_arguments: list[str] | None = None, **_: Any) -> Any:
            client = PapermillNotebookClient(nb_man, km=kernel.km, kernel_name=kernel_name, timeout=execution_timeout,
                                             startup_timeout=start_timeout, log=logger, log_output=log_output,
                                             stdout_file=stdout_file, stderr_file=stderr_file,
                                             extra_arguments=list(extra_arguments or []),
                                             store_widget_state=False)
            client.kc = kernel.kc  # None the first time: nbclient starts the kernel and its client
            starting = not kernel.km.has_kernel
            try:
                return client.execute()
            finally:
                kernel.kc = client.kc
                kernel.starts += starting

    return KeptKernelEngine

