"""Findings as data: what each analysis concluded, in one table, and the registry of analysis areas.

Every analysis module (``workbench/analysis/<area>.py``) turns its figures into rows of
:data:`FINDINGS_SCHEMA` and registers its area with :func:`register_area`, naming the function
that computes its findings from a bundle's tables. The overview, the report and the scheduler's
summary read :func:`all_findings`, so adding an area adds a module and edits nothing here.

Columns of a finding:

* ``area`` — the question it answers (``quorum``, ``isr``, ``consumer_lag``, ``mirror``, ``tier``);
* ``kind`` — what was found, a short stable key (``under_min_isr``, ``offline``, ``isr_flapping``...);
* ``severity`` — ``critical``, ``warning`` or ``info`` (:data:`SEVERITIES`, most severe first);
* ``subject_type`` and ``subject`` — what it is about: ``partition`` ``payments-3``, ``node`` ``2``,
  ``group`` ``billing``...;
* ``start``, ``end`` — when (``end`` null for an instant or an open episode);
* ``summary`` — one plain-text sentence (escape it when rendering);
* ``figures`` — the key figures behind the sentence, by name (seconds, records, bytes...).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

FINDINGS_SCHEMA = (
    "area string, kind string, severity string, subject_type string, subject string, start timestamp, "
    "end timestamp, summary string, figures map<string,double>"
)
FINDINGS_COLUMNS = tuple(c.split()[0] for c in FINDINGS_SCHEMA.split(", "))

#: Severities, most severe first.
SEVERITIES: tuple[str, ...] = ("critical", "warning", "info")


def severity_rank(column: str = "severity") -> Column:
    """A Spark column ranking severities (0 = critical), for ordering findings most severe first."""
    from pyspark.sql import functions as F

    rank = F.lit(len(SEVERITIES))
    for i, name in reversed(list(enumerate(SEVERITIES))):
        rank = F.when(F.col(column) == name, F.lit(i)).otherwise(rank)
    return rank


def empty_findings(spark: SparkSession) -> DataFrame:
    """A findings table without rows."""
    return spark.createDataFrame([], FINDINGS_SCHEMA)


def check_findings(frame: DataFrame, what: str) -> DataFrame:
    """``frame`` with exactly the findings columns, in order; a one-line error names what is missing."""
    missing = [c for c in FINDINGS_COLUMNS if c not in frame.columns]
    if missing:
        raise ConfigError(f"{what}: findings lack column(s) {missing}")
    return frame.select(*FINDINGS_COLUMNS)


@dataclass(frozen=True)
class Area:
    """One question the workbench answers.

    Attributes
    ----------
    name : str
        The ``area`` value of its findings (``isr``).
    title : str
        A heading for views and reports ("ISR health (KIP-164)").
    order : int
        Position among areas in the overview and the report.
    findings : callable
        ``findings(tables, params) -> DataFrame`` of :data:`FINDINGS_SCHEMA`, from a bundle's
        :class:`~workbench.spark.registry.Tables` and the report parameters (a mapping).
    tables : tuple of str
        The tables it reads (a report says an area has no data when none of them has rows).
    frames : callable, optional
        ``frames(tables, params) -> {name: DataFrame}``: the small, aggregated results its
        interactive view draws (``widgets.linking.register_view``).
    key_figures : callable, optional
        ``key_figures(tables, params) -> {name: number}`` for the machine-readable summary.
    """

    name: str
    title: str
    order: int
    findings: Callable[[Any, Mapping[str, Any]], DataFrame]
    tables: tuple[str, ...] = ()
    frames: Callable[[Any, Mapping[str, Any]], dict[str, DataFrame]] | None = None
    key_figures: Callable[[Any, Mapping[str, Any]], dict[str, Any]] | None = None


_AREAS: dict[str, Area] = {}
_DISCOVERED = False
_LOCK = threading.Lock()


def register_area(name: str, *, title: str, order: int, findings: Callable[[Any, Mapping[str, Any]], DataFrame],
                  tables: tuple[str, ...] = (),
                  frames: Callable[[Any, Mapping[str, Any]], dict[str, DataFrame]] | None = None,
                  key_figures: Callable[[Any, Mapping[str, Any]], dict[str, Any]] | None = None) -> Area:
    """Declare an analysis area (called by its module at import time).

    Examples
    --------
    >>> areas()["isr"].title
    'ISR health (KIP-164)'
    """
    area = Area(name, title, order, findings, tuple(tables), frames, key_figures)
    with _LOCK:
        old = _AREAS.get(name)
        if old is not None and (old.title, old.order) != (title, order):
            raise ConfigError(f"analysis area {name!r} is registered twice")
        _AREAS[name] = area
    return area


def areas() -> dict[str, Area]:
    """Every registered area, in their order (importing every module of ``workbench.analysis`` once)."""
    global _DISCOVERED
    if not _DISCOVERED:
        here = Path(__file__).resolve().parent
        package = __name__.rpartition(".")[0]
        for info in pkgutil.iter_modules([str(here)]):
            if not info.name.startswith("_") and info.name != "findings":
                importlib.import_module(f"{package}.{info.name}")
        _DISCOVERED = True
    return dict(sorted(_AREAS.items(), key=lambda kv: (kv[1].order, kv[0])))


def ordered_findings(frame: DataFrame) -> DataFrame:
    """Findings most severe first, then earliest first, then by area and subject."""
    from pyspark.sql import functions as F

    return frame.orderBy(severity_rank(), F.col("start").asc_nulls_last(), "area", "subject", "kind")


def all_findings(tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
    """The findings of every registered area on one bundle's tables, most severe and earliest first.

    Examples
    --------
    >>> all_findings(workbench.load(bundle, spark)).show()   # doctest: +SKIP
    """
    rows: list[Any] = []
    for area in areas().values():
        # an area none of whose tables has a row says so once, in the report's "no data" line,
        # not in findings of what its inputs lack
        if not area_has_data(tables, area.name):
            continue
        # findings are few (one row per episode or event): each area's are computed on their own
        # and kept as rows, so what follows (correlation, views) plans over a small local table
        # instead of every area's lineage at once, which outgrew a 512 MiB driver
        rows += check_findings(area.findings(tables, dict(params or {})), f"area {area.name}").collect()
    return ordered_findings(tables.spark.createDataFrame(rows, FINDINGS_SCHEMA))


def area_has_data(tables: Any, name: str) -> bool:
    """Whether any table area ``name`` reads has a row (an area that declares no table: always).

    Raises
    ------
    ConfigError
        For an area that is not registered.
    """
    known = areas()
    if name not in known:
        raise ConfigError(f"no analysis area {name!r}; areas: {', '.join(known)}")
    wanted = known[name].tables
    return not wanted or any(tables[t].limit(1).count() > 0 for t in wanted)
