"""Findings as data: what each analysis concluded, in one table, and the registry of analysis areas.

Every analysis module (``workbench/analysis/<area>.py``) turns its figures into rows of
:data:`FINDINGS_SCHEMA` and registers its area with :func:`register_area`: the four roles of
:class:`Area` (analyse a bundle's tables into one result; its findings, view frames and key
figures from that result). The overview, the report and the scheduler's
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
import itertools
import pkgutil
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Row, SparkSession

FINDINGS_SCHEMA = (
    "area string, kind string, severity string, subject_type string, subject string, start timestamp, "
    "end timestamp, summary string, figures map<string,double>"
)
FINDINGS_COLUMNS = tuple(c.split()[0] for c in FINDINGS_SCHEMA.split(", "))

#: Severities, most severe first.
SEVERITIES: tuple[str, ...] = ("critical", "warning", "info")


def severity_rank(column: str = "severity") -> Column:
    """A Spark column ranking severities (0 = critical), for ordering findings most severe first."""
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
    """One question the workbench answers, and the contract every area follows.

    An area registers four roles (:func:`register_area`), the same for every area:

    * ``analyse(tables, params) -> result``: everything the area computes for a bundle's
      :class:`~workbench.spark.registry.Tables` and the report parameters, as one object (kept
      per bundle and parameters: :meth:`result_for`);
    * ``findings(result) -> DataFrame`` of :data:`FINDINGS_SCHEMA`;
    * ``frames(result) -> {name: DataFrame}`` (optional): the small, aggregated results its
      interactive view draws (``widgets.linking.register_view``);
    * ``key_figures(result) -> {name: number}`` (optional): for the machine-readable summary.

    The overview, the report and the summary call :meth:`findings_for`, :meth:`frames_for` and
    :meth:`key_figures_for` with a bundle's tables and parameters.

    Attributes
    ----------
    name : str
        The ``area`` value of its findings (``isr``).
    title : str
        A heading for views and reports ("ISR health (KIP-164)").
    order : int
        Position among areas in the overview and the report.
    tables : tuple of str
        The tables it reads (a report says an area has no data when none of them has rows).
    """

    name: str
    title: str
    order: int
    analyse: Callable[[Any, Mapping[str, Any]], Any]
    findings: Callable[[Any], DataFrame]
    tables: tuple[str, ...] = ()
    frames: Callable[[Any], dict[str, DataFrame]] | None = None
    key_figures: Callable[[Any], dict[str, Any]] | None = None
    token: int = field(default_factory=lambda: next(_TOKENS), compare=False)

    def result_for(self, tables: Any, params: Mapping[str, Any] | None = None) -> Any:
        """``analyse(tables, params)``, computed once per loaded bundle and parameters
        (:meth:`~workbench.spark.registry.Tables.kept`; tables without it compute it each time)."""
        from workbench.spark.registry import kept_with

        params = dict(params or {})
        return kept_with(tables, f"result.{self.name}:{self.token}:{_params_key(params)}",
                         lambda: self.analyse(tables, params))

    def findings_for(self, tables: Any, params: Mapping[str, Any] | None = None) -> DataFrame:
        """The area's findings of a bundle, computed once per loaded bundle and parameters.

        Several views ask for them in turn; tables without ``derive`` compute them each time.
        """
        from workbench.spark.registry import derived_with

        params = dict(params or {})
        key = f"findings.{self.name}:{self.token}:{_params_key(params)}"
        return derived_with(tables, key, lambda: self.findings(self.result_for(tables, params)))

    def frames_for(self, tables: Any, params: Mapping[str, Any] | None = None) -> dict[str, DataFrame] | None:
        """What the area's view draws for a bundle (None: the area has no view frames)."""
        return None if self.frames is None else self.frames(self.result_for(tables, params))

    def key_figures_for(self, tables: Any, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The area's key figures of a bundle (empty: the area names none)."""
        return {} if self.key_figures is None else self.key_figures(self.result_for(tables, params))


_AREAS: dict[str, Area] = {}
_DISCOVERED = False
_LOCK = threading.Lock()
_TOKENS = itertools.count()


def _params_key(params: Mapping[str, Any]) -> str:
    return repr(sorted((str(k), repr(v)) for k, v in params.items()))


def register_area(name: str, *, title: str, order: int, analyse: Callable[[Any, Mapping[str, Any]], Any],
                  findings: Callable[[Any], DataFrame], tables: tuple[str, ...] = (),
                  frames: Callable[[Any], dict[str, DataFrame]] | None = None,
                  key_figures: Callable[[Any], dict[str, Any]] | None = None) -> Area:
    """Declare an analysis area with its four roles (:class:`Area`; called by its module at import).

    A name registered again replaces the old area and keeps none of its results.

    Examples
    --------
    >>> areas()["isr"].title
    'ISR health (KIP-164)'
    """
    roles = {"analyse": (analyse, 2), "findings": (findings, 1), "frames": (frames, 1), "key_figures": (key_figures, 1)}
    for role, (function, arguments) in roles.items():
        if function is not None and not _takes(function, arguments):
            wanted = "(tables, params)" if arguments == 2 else "(result)"
            raise ConfigError(f"analysis area {name!r}: its {role} must be called as {role}{wanted}")
    area = Area(name, title, order, analyse, findings, tuple(tables), frames, key_figures)
    with _LOCK:
        old = _AREAS.get(name)
        if old is not None and (old.title, old.order) != (title, order):
            raise ConfigError(f"analysis area {name!r} is registered twice")
        _AREAS[name] = area
    return area


def _takes(function: Callable[..., Any], arguments: int) -> bool:
    """Whether ``function`` can be called with exactly ``arguments`` positional arguments."""
    import inspect

    try:
        inspect.signature(function).bind(*range(arguments))
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): taken on trust
        return True
    return True


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
    return frame.orderBy(severity_rank(), F.col("start").asc_nulls_last(), "area", "subject", "kind")


#: The figures of a grouped finding (:func:`grouped_findings`); ``subjects`` marks one.
GROUPED_FIGURES = ("subjects", "findings", "at_once", "seconds")


def subject_count() -> Column:
    """An aggregate column: how many subjects a set of findings is about.
    A subject in two grouped findings (:func:`grouped_findings`) counts twice.
    """
    grouped = F.col("figures")["subjects"]
    return (F.countDistinct(F.when(grouped.isNull(), F.col("subject")))
            + F.coalesce(F.sum(grouped), F.lit(0.0)).cast("long"))


def grouped_findings(findings: DataFrame, *, min_subjects: int, phrases: Mapping[str, str] | None = None,
                     gap_s: float = 0.0) -> DataFrame:
    """Findings that touch many subjects at once, as one finding per stretch of time.

    Findings of one area, kind, severity and subject type whose intervals overlap (or follow
    within ``gap_s`` seconds) form a run. A run of findings on at least ``min_subjects`` distinct
    subjects becomes **one** finding
    (an incident on 4,000 partitions is one row, not 4,000); smaller runs, and findings without a
    start, stay as they are. So a finding's count follows incidents, not the cluster's size, and a
    bundle where few subjects are in trouble at once keeps one finding per subject.

    A grouped finding keeps the area, kind, severity and subject type; ``subject`` is the count
    (``"4,000 partitions"``); ``start``/``end`` span the run; ``summary`` says how many subjects,
    when, how many at once at most, and quotes the run's longest finding; ``figures`` are
    :data:`GROUPED_FIGURES`: ``subjects`` (distinct), ``findings`` (in the run), ``at_once``
    (most findings open at one instant) and ``seconds`` (the run's span). The per-subject findings
    are still the area's own table (for ISR, :func:`workbench.analysis.isr.findings`).

    Parameters
    ----------
    findings : DataFrame
        Rows of :data:`FINDINGS_SCHEMA`.
    min_subjects : int
        Runs touching at least this many distinct subjects are grouped (>= 2).
    phrases : mapping, optional
        Per kind, the predicate of the summary's sentence (``{"offline": "were offline"}``);
        default: the kind's words (``"offline"``).
    gap_s : float
        Seconds between findings that still join a run.

    Examples
    --------
    >>> grouped_findings(isr.findings(states), min_subjects=20).show()   # doctest: +SKIP
    """
    from workbench.analysis._checks import require_columns

    if min_subjects < 2:
        raise ValueError(f"min_subjects must be >= 2, got {min_subjects}")
    if gap_s < 0:
        raise ValueError(f"gap_s must be >= 0 seconds, got {gap_s}")
    require_columns(findings, FINDINGS_COLUMNS, "grouped_findings")
    key = ["area", "kind", "severity", "subject_type"]
    start_us = F.unix_micros("start")
    order = Window.partitionBy(*key).orderBy("_s", "_e", "subject")
    timed = (findings.where(F.col("start").isNotNull())
             .withColumn("_s", start_us)
             .withColumn("_e", F.greatest(F.unix_micros(F.coalesce("end", "start")), start_us))
             .withColumn("_reach", F.max("_e").over(order.rowsBetween(Window.unboundedPreceding, -1)))
             .withColumn("_new", F.col("_reach").isNull() | (F.col("_s") > F.col("_reach") + F.lit(int(gap_s * 1e6))))
             .withColumn("_run", F.sum(F.col("_new").cast("long")).over(
                 order.rowsBetween(Window.unboundedPreceding, 0)))
             # read thrice below (runs, the sweep, the findings kept): computed once, when first read
             .localCheckpoint(eager=False))
    runs = timed.groupBy(*key, "_run").agg(
        F.countDistinct("subject").alias("_subjects"), F.count("*").alias("_n"), F.min("_s").alias("_first"),
        F.max("_e").alias("_last"), F.max_by("summary", F.struct(F.col("_e") - F.col("_s"), F.col("subject")))
        .alias("_longest"))
    # the most findings open at one instant: +1 at each start, -1 at each end (ends first at a tie;
    # an instant is open for 1 µs)
    edges = timed.select(*key, "_run", F.explode(F.array(
        F.struct(F.col("_s").alias("t"), F.lit(1).alias("d")),
        F.struct(F.greatest(F.col("_e"), F.col("_s") + 1).alias("t"), F.lit(-1).alias("d")))).alias("_x"))
    sweep = Window.partitionBy(*key, "_run").orderBy("_x.t", "_x.d").rowsBetween(Window.unboundedPreceding, 0)
    peaks = (edges.withColumn("_open", F.sum("_x.d").over(sweep))
             .groupBy(*key, "_run").agg(F.max("_open").alias("_at_once")))
    big = runs.where(F.col("_subjects") >= min_subjects).join(peaks, [*key, "_run"])
    phrase = F.regexp_replace("kind", "_", " ")
    for kind, text in (phrases or {}).items():
        phrase = F.when(F.col("kind") == kind, F.lit(text)).otherwise(phrase)
    first, last = F.timestamp_micros("_first"), F.timestamp_micros("_last")
    first_text, last_text = F.date_format(first, "yyyy-MM-dd HH:mm:ss"), F.date_format(last, "yyyy-MM-dd HH:mm:ss")
    count = F.format_number(F.col("_subjects"), 0)
    seconds = (F.col("_last") - F.col("_first")) / F.lit(1e6)
    grouped = big.select(
        *key[:3], "subject_type", F.concat(count, F.lit(" "), F.col("subject_type"), F.lit("s")).alias("subject"),
        first.alias("start"), last.alias("end"),
        F.concat(count, F.lit(" "), F.col("subject_type"), F.lit("s "), phrase, F.lit(" between "),
                 first_text, F.lit(" and "), last_text,
                 F.lit(" UTC, up to "), F.format_number(F.col("_at_once"), 0), F.lit(" at once ("),
                 F.format_number(F.col("_n"), 0), F.lit(" findings); the longest: "), F.col("_longest"))
        .alias("summary"),
        F.create_map(F.lit("subjects"), F.col("_subjects").cast("double"), F.lit("findings"),
                     F.col("_n").cast("double"), F.lit("at_once"), F.col("_at_once").cast("double"),
                     F.lit("seconds"), seconds.cast("double")).alias("figures"))
    small = runs.where(F.col("_subjects") < min_subjects).select(*key, "_run")
    kept = timed.join(F.broadcast(small), [*key, "_run"], "left_semi").select(*FINDINGS_COLUMNS)
    untimed = findings.where(F.col("start").isNull()).select(*FINDINGS_COLUMNS)
    return kept.unionByName(grouped.select(*FINDINGS_COLUMNS)).unionByName(untimed)


def all_findings(tables: Any, params: Mapping[str, Any] | None = None, *,
                 failed: dict[str, str] | None = None) -> DataFrame:
    """The findings of every registered area on one bundle's tables, most severe and earliest first.

    >>> all_findings(workbench.load(bundle, spark)).show()   # doctest: +SKIP
    """
    return findings_table(tables.spark, [row for _, area_rows in findings_in_turn(tables, params, failed=failed)
                                         for row in area_rows])


def findings_table(spark: Any, rows: list[Row]) -> DataFrame:
    """Findings rows (as :func:`findings_in_turn` yields them) as the findings table, most severe and earliest first."""
    return ordered_findings(spark.createDataFrame(rows, FINDINGS_SCHEMA))


def findings_in_turn(tables: Any, params: Mapping[str, Any] | None = None, *,
                     failed: dict[str, str] | None = None) -> Iterator[tuple[str, list[Row]]]:
    """Each registered area's findings rows, area by area in registry order, as soon as each is computed.

    With a ``failed`` dict, an area whose findings raise yields ``[]`` and ``failed[area]`` says
    why (the exception's type and message), so one area that fails leaves the others' findings;
    without one, the exception propagates.

    An area none of whose tables has a row yields ``[]``: it says so once, in the report's "no
    data" line, not in findings of what its inputs lack. The overview draws each area's bars as
    they arrive (:meth:`workbench.investigation.Investigation.live_overview_timeline`);
    :func:`all_findings` is their union. Each area's findings are kept per bundle
    (:func:`register_area`), so computing them here first costs nothing later.
    """
    for area in areas().values():
        if not area_has_data(tables, area.name):
            yield area.name, []
            continue
        # findings are few (one row per episode or event): each area's are computed on their own
        # and kept as rows, so what follows (correlation, views) plans over a small local table
        # instead of every area's lineage at once, which outgrew a 512 MiB driver
        try:
            rows = check_findings(area.findings_for(tables, params), f"area {area.name}").collect()
        except Exception as exc:  # noqa: BLE001 - named in the report's first section, the other areas go on
            if failed is None:
                raise
            failed[area.name] = failure_text(exc)
            rows = []
        yield area.name, rows


def failure_text(exc: BaseException) -> str:
    """One line saying why an area failed: the exception's type and the first line of its message.

    >>> failure_text(ValueError("zero_copy_only was True\\nat ..."))
    'ValueError: zero_copy_only was True'
    """
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:300]}"


def area_has_data(tables: Any, name: str) -> bool:
    """Whether any table area ``name`` reads has a row (always, for an area that declares none).
    Each table is asked once per loaded bundle (areas share tables, and the report asks again).
    Raises :class:`ConfigError` for an area that is not registered.
    """
    from workbench.spark.registry import kept_with

    known = areas()
    if name not in known:
        raise ConfigError(f"no analysis area {name!r}; areas: {', '.join(known)}")
    wanted = known[name].tables
    none = getattr(tables, "reads_no_file", lambda _t: False)
    return not wanted or any(kept_with(tables, f"has_rows:{t}",
                                       lambda t=t: not none(t) and tables[t].limit(1).count() > 0)
                             for t in wanted)
