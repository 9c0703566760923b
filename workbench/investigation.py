"""One investigation: a bundle, its tables, the parameters, and every area's findings.

Notebooks open one with :func:`open_investigation` in their setup cell and hand it to the
sections that follow; the composed incident report shares one across all sections, so each file
is decoded once and every area's findings are computed once.

Examples
--------
>>> inv = open_investigation("")            # the shipped demo bundle        # doctest: +SKIP
>>> inv.findings().show()                                                   # doctest: +SKIP
"""

from __future__ import annotations

import ast
import datetime as dt
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.params import parse_window
from workbench.progress import note

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from workbench.bundle import Bundle
    from workbench.spark.registry import Tables

_OPEN: dict[tuple, Investigation] = {}


@dataclass
class Investigation:
    """A bundle under investigation, with its tables and the parameters every section reads.

    Attributes
    ----------
    bundle : Bundle
    spark : SparkSession
    tables : Tables
    params : dict
        The notebook parameters (``start``, ``end``, ``report``, area parameters...).
    start, end : datetime or None
        The time window (UTC) the views open on; ``None``: the whole bundle.
    failed : dict
        Areas whose findings or key figures raised, and why (:meth:`area_failure`): the report
        says so first and goes on with the others.
    failed_views : list of dict
        Report cells that raised after the findings were computed (:func:`guard_report_cells`):
        each one's execution count and why; the report shows why in its place and goes on.
    """

    bundle: Bundle
    spark: SparkSession
    tables: Tables
    params: dict[str, Any] = field(default_factory=dict)
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    failed: dict[str, str] = field(default_factory=dict)
    failed_views: list[dict[str, Any]] = field(default_factory=list)
    _window: Any = field(default=None, repr=False)
    _summary_path: Path | None = field(default=None, repr=False)
    _summary: dict[str, Any] | None = field(default=None, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _progress: str = field(default="", repr=False)

    @property
    def report(self) -> bool:
        """Static figures for an HTML report (True) or interactive widgets (False)."""
        return bool(self.params.get("report", False))

    @property
    def window(self) -> Any:
        """The time window every interactive view of the notebook follows (a :class:`widgets.linking.TimeWindow`)."""
        if self._window is None:
            from widgets.linking import TimeWindow

            self._window = TimeWindow()
            if self.start is not None or self.end is not None:
                self._window.set(self.start, self.end)
        return self._window

    def param(self, name: str, default: Any = None) -> Any:
        """A parameter's value; empty strings count as not given."""
        value = self.params.get(name, default)
        return default if value == "" else value

    def findings(self) -> DataFrame:
        """Every registered area's findings, most severe and earliest first (computed once)."""
        from workbench.analysis.findings import findings_table

        return self.tables.derive(self._findings_key(), lambda: findings_table(
            self.spark, [row for _, area_rows in self._findings_in_turn() for row in area_rows]))

    def _findings_in_turn(self) -> Iterator[tuple[str, list[Any]]]:
        """:func:`~workbench.analysis.findings.findings_in_turn` with this investigation's failures
        recorded and a progress line per area (:mod:`workbench.progress`)."""
        from workbench.analysis.findings import areas, findings_in_turn

        titles = {name: area.title for name, area in areas().items()}
        began = time.monotonic()
        for area, rows in findings_in_turn(self.tables, self.params, failed=self.failed):
            took = time.monotonic() - began
            if area in self.failed:
                said = f"failed ({self.failed[area]})"
            elif rows or self.has_data(area):
                said = f"{len(rows):,} finding{'' if len(rows) == 1 else 's'}"
            else:
                said = "no data"
            note(self._progress, f"{titles.get(area, area)}: {said} ({took:.1f} s)")
            yield area, rows
            began = time.monotonic()

    def area_failure(self, area: str) -> str | None:
        """Why area ``area``'s findings could not be computed (None when they were, or it has no data)."""
        self.findings()
        return self.failed.get(area)

    def failures_text(self) -> list[str]:
        """One sentence per area that failed, for the report's first section."""
        from workbench.analysis.findings import areas

        self.findings()
        titles = {name: area.title for name, area in areas().items()}
        return [f"{titles.get(name, name)} could not be computed, and is left out of this report: {why}. "
                "Every other area is reported." for name, why in self.failed.items()]

    def section_failed(self, area: str) -> bool:
        """Whether ``area`` failed; if it did, show why (in a notebook) where its section would be."""
        why = self.area_failure(area)
        if why is not None:
            from IPython.display import HTML, display

            from widgets.tables import text_html

            display(HTML('<p class="wb-failed"><strong>' + text_html(
                f"This area could not be computed: {why}. The other areas are reported.") + "</strong></p>"))
        return why is not None

    def _findings_key(self) -> str:
        return f"findings:{self._key()}"

    def chains(self) -> DataFrame:
        """The findings linked into chains (:func:`workbench.analysis.correlate.chains`), computed once."""
        from workbench.analysis.correlate import DEFAULT_GAP_S, chains

        gap = float(self.param("correlation_gap_s", DEFAULT_GAP_S))
        return self.tables.derive(f"chains:{gap}:{self._key()}", lambda: chains(self.findings(), gap=gap))

    def findings_by_area(self) -> DataFrame:
        """Counts of findings per area, kind and severity, in area order, most severe first."""
        from pyspark.sql import functions as F

        from workbench.analysis.findings import areas, severity_rank, subject_count

        order = {name: i for i, name in enumerate(areas())}
        rank = F.lit(len(order))
        for name, i in order.items():
            rank = F.when(F.col("area") == name, F.lit(i)).otherwise(rank)
        return (self.findings().groupBy("area", "kind", "severity")
                .agg(F.count("*").alias("findings"), subject_count().alias("subjects"),
                     F.min("start").alias("first"), F.max(F.coalesce("end", "start")).alias("last"))
                .orderBy(rank, severity_rank(), "kind"))

    def area_titles(self) -> dict[str, str]:
        """Every registered area's title, in area order."""
        from workbench.analysis.findings import areas

        return {name: area.title for name, area in areas().items()}

    def areas_without_data(self) -> list[str]:
        """Titles of the areas whose tables have no row in this bundle."""
        from workbench.analysis.findings import areas

        return [area.title for name, area in areas().items() if not self.has_data(name)]

    def inventory_summary(self) -> DataFrame:
        """Files and bytes per node and kind."""
        from pyspark.sql import functions as F

        return (self.tables.inventory.groupBy("node_id", "kind")
                .agg(F.count("*").alias("files"), F.sum("bytes").alias("bytes"))
                .orderBy("node_id", "kind"))

    def parameters_table(self) -> Any:
        """The parameters of this run and the versions that produced it, as a small pandas frame."""
        import platform

        import pandas as pd
        import pyspark

        import workbench

        rows = [(k, str(v)) for k, v in sorted(self.params.items())]
        rows += [("bundle", str(self.bundle.root)), ("workbench version", workbench.__version__),
                 ("Spark version", pyspark.__version__), ("Python version", platform.python_version())]
        manifest = self.bundle.manifest or {}
        if manifest.get("kafka_version"):
            rows.append(("Kafka version (bundle manifest)", str(manifest["kafka_version"])))
        return pd.DataFrame(rows, columns=["name", "value"])

    def overview_timeline(self, findings: Any) -> Any:
        """The interactive findings timeline, linked to :attr:`window`; a click opens the area's view below it."""
        return self._overview_timeline(findings)[0]

    def live_overview_timeline(self) -> Any:
        """Show the interactive findings timeline at once and fill it area by area.

        Each area's bars appear as soon as its findings are computed (``findings_in_turn``): the
        first plot comes after the first area's findings, not after all of them; the status line
        names the areas still computing. It ends on :meth:`findings` (what the report holds, in
        its order). For Jupyter; the widget is displayed here and returned.
        """
        import pandas as pd
        from IPython.display import display

        from workbench.analysis.findings import FINDINGS_SCHEMA, findings_table

        empty = self.spark.createDataFrame([], FINDINGS_SCHEMA).toPandas()
        pending = list(self.area_titles())
        box, timeline = self._overview_timeline(empty, pending=pending)
        display(box)
        rows: list[Any] = []
        frames = []
        for area, area_rows in self._findings_in_turn():
            pending.remove(area)
            rows += area_rows
            if area_rows:
                frames.append(self.spark.createDataFrame(area_rows, FINDINGS_SCHEMA).toPandas())
            timeline.update(pd.concat(frames, ignore_index=True) if frames else empty, pending=pending)
        # the rows just computed are the findings: kept as :meth:`findings` keeps them, in its order
        found = self.tables.derive(self._findings_key(), lambda: findings_table(self.spark, rows))
        timeline.update(found.toPandas())
        return box

    def _overview_timeline(self, findings: Any, pending: list[str] | None = None) -> tuple[Any, Any]:
        import ipywidgets as ipw

        from widgets.timeline import FindingsTimeline

        out = ipw.Output()

        def opened(finding: dict) -> None:
            out.clear_output()
            view = self.view(str(finding["area"]))
            if view is not None:
                with out:
                    from IPython.display import display

                    display(view)

        titles = self.area_titles()
        timeline = FindingsTimeline(findings, titles=titles, areas=list(titles), window=self.window, on_select=opened,
                                    pending=pending or ())
        return ipw.VBox([timeline, out]), timeline

    def view(self, area: str) -> Any:
        """The interactive view an area registered (``widgets.linking.register_view``), following :attr:`window`."""
        from widgets.linking import view_factories
        from workbench.analysis.findings import areas

        factory = view_factories().get(area)
        known = areas().get(area)
        shown = None if factory is None or known is None else known.frames_for(self.tables, self.params)
        if shown is None:
            return None
        frames = {name: frame.toPandas() for name, frame in shown.items()}
        return factory(frames, self.window)

    def summary(self) -> dict[str, Any]:
        """The machine-readable result: findings, chains, per-area key figures, inputs and parameters."""
        from workbench.analysis.correlate import chain_summaries
        from workbench.analysis.findings import areas
        from workbench.summary import frame_records

        findings = self.findings().toPandas()
        by_area = findings.groupby(["area", "severity"]).size()   # from the rows at hand: no second job
        figures: dict[str, dict[str, Any]] = {}
        for name, area in areas().items():
            counts = {f"{severity}_findings": int(n) for (where, severity), n in by_area.items() if where == name}
            data = self.has_data(name)  # an area without data has no figures (not zeros)
            extra: dict[str, Any] = {}
            if area.key_figures and data and name not in self.failed:
                try:
                    extra = area.key_figures_for(self.tables, self.params)
                except Exception as exc:  # noqa: BLE001 - the area is named as failed, the others stay
                    from workbench.analysis.findings import failure_text

                    self.failed[name] = failure_text(exc)
            figures[name] = {"title": area.title, "has_data": data, **counts, **extra}
        nothing = self.nothing_to_analyse()
        return {
            "bundle": str(self.bundle.root),
            "parameters": dict(self.params),
            "nothing_to_analyse": nothing,
            "unusable_files": frame_records(self.unusable_files().head(200)) if nothing else [],
            "findings": frame_records(findings),
            "chains": frame_records(chain_summaries(self.chains()).toPandas()),
            "areas": figures,
            "failed_areas": dict(self.failed),
            "failed_views": list(self.failed_views),
            "problems": int(self.tables.problems.count()),
        }

    def write_summary(self, path: str | Path) -> Path:
        """Write :meth:`summary` as JSON (the scheduler's reading of the report); a view that fails
        later in the report is added to the same file (:meth:`view_failed`)."""
        from workbench.summary import write_json

        self._summary_path, self._summary = Path(path), self.summary()
        return write_json(path, self._summary)

    def view_failed(self, exc: BaseException) -> None:
        """Record a report cell that raised, show why in its place, and add it to the summary written."""
        from IPython import get_ipython
        from IPython.display import HTML, display

        from widgets.tables import text_html
        from workbench.analysis.findings import failure_text
        from workbench.summary import write_json

        shell = get_ipython()
        why = failure_text(exc)
        self.failed_views.append({"cell": getattr(shell, "execution_count", None), "error": why})
        display(HTML('<p class="wb-failed wb-view-failed"><strong>' + text_html(
            f"This part of the report could not be drawn: {why}. Every other part is reported.") + "</strong></p>"))
        if self._summary_path is not None and self._summary is not None:
            self._summary["failed_views"] = list(self.failed_views)
            write_json(self._summary_path, self._summary)

    def _key(self) -> str:
        return repr(sorted(self.params.items()))

    def area_inputs(self) -> DataFrame:
        """Per area: the tables it reads and how many rows each holds (an area without rows has no data)."""
        from pyspark.sql import functions as F

        from workbench.analysis.findings import areas
        from workbench.spark.registry import kept_with

        def held(name: str) -> int:   # each table counted once, however many areas read it
            none = getattr(self.tables, "reads_no_file", lambda _t: False)
            return kept_with(self.tables, f"rows_upto_1m:{name}",
                             lambda: 0 if none(name) else self.tables[name].limit(1_000_000).count())

        rows = [(area.name, area.title, name, held(name)) for area in areas().values() for name in area.tables]
        frame = self.spark.createDataFrame(rows, "area string, title string, table string, rows long")
        return frame.orderBy(F.col("area"), "table")

    def nothing_to_analyse(self) -> str | None:
        """One sentence when no area has data in this bundle (the report's first line), else ``None``.

        Such a bundle (empty, unrecognised files, nothing readable) gets a report that says so and
        claims nothing about the cluster; :meth:`summary` carries the sentence, and the report
        command exits 2 on it.

        Examples
        --------
        >>> open_investigation("empty-dir/").nothing_to_analyse()   # doctest: +SKIP
        'Nothing to analyse: the bundle holds no files, so this report cannot say whether the cluster was healthy.'
        """
        from workbench.analysis.findings import areas

        if "nothing" not in self._cache:
            self._cache["nothing"] = None if any(self.has_data(name) for name in areas()) else self._nothing()
        return self._cache["nothing"]

    def _nothing(self) -> str:
        files = self.bundle.artifacts
        known = [a for a in files if a.kind != "other"]
        metadata = self.bundle.metadata_files
        tail = "so this report cannot say whether the cluster was healthy."
        if not files:
            return f"Nothing to analyse: the bundle holds no files, {tail}"
        count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
        if not known:
            return (f"Nothing to analyse: none of the bundle's {count} is of a kind the workbench reads "
                    f"(KRaft metadata logs, log segments, tool output, metric exports; listed below), {tail}")
        if metadata:
            return (f"Nothing to analyse: none of the bundle's {len(metadata)} KRaft metadata log "
                    f"file{'s' if len(metadata) != 1 else ''} yielded a record, nor did anything else an analysis "
                    f"reads (its {count} are listed below with why each was unusable), {tail}")
        return (f"Nothing to analyse: the bundle holds no KRaft metadata log and nothing else an analysis reads "
                f"(its {count} are listed below with why each was unusable), {tail}")

    def unusable_files(self) -> Any:
        """Every file of the bundle with why it gave no data, as a small pandas frame (path, node, kind, bytes, why).

        Reads every table first, so that each file's problems are known; meant for a bundle with
        nothing to analyse (:meth:`nothing_to_analyse`), where that is cheap.
        """
        if "unusable" not in self._cache:
            self._cache["unusable"] = self._unusable_files()
        return self._cache["unusable"].copy()

    def _unusable_files(self) -> Any:
        import pandas as pd

        from workbench.errors import WorkbenchError
        from workbench.spark.registry import table_specs

        failed: list[str] = []
        for name in table_specs():
            try:
                self.tables[name]
            except WorkbenchError as exc:
                failed.append(f"{name}: {exc}")
        root = str(self.bundle.root)
        why: dict[str, list[str]] = {}
        for row in self.tables.problems.orderBy("path", "position").limit(10_000).collect():
            path = str(row["path"] or "")
            rel = path[len(root) + 1:] if path.startswith(root + "/") else path
            why.setdefault(rel, []).append(f"{row['kind']} at byte {row['position']}: {row['detail']}")
        rows = []
        for a in self.bundle.artifacts:
            reasons = why.pop(a.path, [])
            if reasons:
                more = f" (and {len(reasons) - 1} more problems)" if len(reasons) > 1 else ""
                text = reasons[0] + more
            elif a.kind == "other":
                text = "not a file the workbench recognises"
            elif a.bytes == 0:
                text = "empty"
            else:
                text = "read without error, but holds nothing an analysis uses"
            rows.append((a.path, a.node_id, a.kind, a.bytes, text))
        for path, reasons in why.items():  # problems of files discovery could not classify
            rows.append((path, -1, "unreadable", None, reasons[0]))
        rows += [("(table)", -1, "table", None, f) for f in failed]
        return pd.DataFrame(rows, columns=["path", "node_id", "kind", "bytes", "why unusable"])

    def has_data(self, area: str) -> bool:
        """Whether any table the area reads has a row."""
        from workbench.analysis.findings import area_has_data

        key = f"has_data:{area}"
        if key not in self._cache:
            self._cache[key] = area_has_data(self.tables, area)
        return self._cache[key]


def open_investigation(bundle: str | Path | None = "", *, spark: SparkSession | None = None,
                       params: Mapping[str, Any] | None = None, **options: Any) -> Investigation:
    """Open a bundle for investigation (the shipped demo bundle when ``bundle`` is empty).

    Parameters
    ----------
    bundle : str or path
        A bundle directory or archive; empty: the demo bundle (a real incident captured from Kafka).
    spark : SparkSession, optional
        Default: :func:`workbench.session`.
    params : mapping, optional
        Notebook parameters (a notebook passes ``globals()``: names starting with ``_`` and values
        that are not plain strings, numbers or booleans are left out); ``start`` and ``end`` set the
        window (checked here, before any Spark work).
    **options
        Load options (:func:`workbench.load`).

    Returns
    -------
    Investigation
        The same object for the same bundle, parameters and session (sections of one report share it).
    """
    from workbench.bundle import is_url, open_bundle
    from workbench.demo import demo_bundle_path
    from workbench.session import input_size, session
    from workbench.spark.registry import load

    values = {k: v for k, v in (params or {}).items()
              if not k.startswith("_") and isinstance(v, str | int | float | bool) and k != "bundle"}
    progress = str(values.pop("progress_path", "") or "")  # where a report's command reads progress, not a parameter
    start, end = parse_window(values.get("start"), values.get("end"))
    path = (str(bundle) if is_url(bundle) else Path(bundle)) if bundle not in (None, "") else demo_bundle_path()
    began = time.monotonic()
    spark = spark or session(input_bytes=None if is_url(path) else input_size(path))
    where = str(path) if is_url(path) else str(Path(path).resolve())
    key = (id(spark), where, repr(sorted(values.items(), key=lambda kv: kv[0])), repr(sorted(options.items())))
    found = _OPEN.get(key)
    if found is None:
        note(progress, f"Spark session ready ({time.monotonic() - began:.1f} s)")
        began = time.monotonic()
        opened = open_bundle(path)
        found = _OPEN[key] = Investigation(opened, spark, load(opened, spark, **options), values, start, end,
                                           _progress=progress)
        note(progress, f"bundle opened: {len(opened.artifacts):,} files ({time.monotonic() - began:.1f} s)")
    if found.report:
        guard_report_cells(found)
    return found


def reset() -> None:
    """Forget every open investigation and everything its bundle keeps in Spark (persisted reads,
    Parquet copies, derived results, Spark's cache), and stop guarding report cells: a kernel
    that runs report after report calls it between two, so nothing of one bundle reaches the next.

    The public name is ``workbench.reset()``; a notebook user calls it to open a bundle afresh.
    """
    from pyspark.sql import SparkSession

    from workbench.spark.registry import forget_all

    release_report_cells()  # first: a failure below must fail the cell that called this
    forget_all()
    _OPEN.clear()
    active = SparkSession.getActiveSession()
    if active is not None:
        active.catalog.clearCache()


# ------------------------------------------------------------------------------------------
# a report goes on past a cell that raises

#: The investigation of the report running in this kernel (its cells are guarded), or None.
_REPORTING: Investigation | None = None


class _GuardedCell(ast.NodeTransformer):
    """Wraps a cell's code in ``try``/``except Exception``: the exception goes to :func:`cell_failed`
    (an IPython AST transformer). A last bare expression is still displayed, as IPython would."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        if not node.body:
            return node
        body = list(node.body)
        if isinstance(body[-1], ast.Expr):
            hook = ast.parse("__import__('IPython').get_ipython().displayhook(None)", mode="eval").body
            hook.args = [body[-1].value]
            body[-1] = ast.Expr(hook)
        failed = ast.parse("__import__('workbench.investigation', fromlist=['cell_failed'])"
                           ".cell_failed(_workbench_cell_error)").body[0]
        handler = ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), name="_workbench_cell_error",
                                    body=[failed])
        node.body = [ast.Try(body=body, handlers=[handler], orelse=[], finalbody=[])]
        return ast.fix_missing_locations(node)


def guard_report_cells(inv: Investigation) -> None:
    """From the next cell on, a report cell that raises shows why in its place and the report goes on.

    A view that cannot be drawn (a bad value its figure meets, a widget bug) must not lose the
    findings and every other section already computed; the failure is recorded in the summary
    (``failed_views``) and named at the top of the HTML. Only in an IPython kernel; undone by
    :func:`release_report_cells` (a kept report kernel runs it between reports).
    """
    global _REPORTING
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    _REPORTING = inv
    if not any(isinstance(t, _GuardedCell) for t in shell.ast_transformers):
        shell.ast_transformers.append(_GuardedCell())


def release_report_cells() -> None:
    """Cells raise as usual again (see :func:`guard_report_cells`)."""
    global _REPORTING
    _REPORTING = None
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        shell.ast_transformers[:] = [t for t in shell.ast_transformers if not isinstance(t, _GuardedCell)]


def cell_failed(exc: Exception) -> None:
    """A guarded cell raised: the report's investigation records it; outside a report, it raises."""
    if _REPORTING is None:
        raise exc
    _REPORTING.view_failed(exc)
