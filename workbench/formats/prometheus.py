"""Prometheus metric exports: the text exposition format and the HTTP API's JSON.

* Text exposition (``/metrics`` of an exporter, ``.prom`` files; OpenMetrics text when it ends
  with ``# EOF``) is read with ``prometheus_client``'s parser, one sample line at a time, so a
  damaged line is a problem and every other line still gives its sample. A sample's own
  timestamp (milliseconds in the text) is kept; a sample without one gets ``default_ms``
  (the capture time, chosen by the caller) or None. A text that does not end with a newline
  was cut: its last line is reported (``truncated``) and not read, since its value may be cut.
* Prometheus HTTP API responses (``/api/v1/query_range`` ``matrix``, ``/api/v1/query``
  ``vector`` and ``scalar``) are read with :mod:`json`; a response cut short still gives every
  series that ends before the cut (each series is decoded on its own).

Samples come out as :class:`PromSample` (``name`` as written, labels without ``__name__``,
timestamp in epoch ms or None, value as a float: ``NaN`` and ``±Inf`` included).

Examples
--------
>>> [s.value for s in read_prometheus_text("# TYPE up gauge\\nup{job=\\"kafka\\"} 1 1700000000000\\n")]
[1.0]
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.formats.problems import ProblemLog, timestamp_in_range

#: Values at or beyond this magnitude load as null, as in JmxTool CSV (:mod:`workbench.formats.jmx`).
_MAX_VALUE = float(2**63)


@dataclass(frozen=True, slots=True)
class PromSample:
    """One sample of one series."""

    name: str
    labels: dict[str, str]
    timestamp_ms: int | None  # None: none given and no capture time, or out of range (a problem)
    value: float | None  # None: beyond any Java long or infinite (an ``out_of_range`` problem)
    line: int = field(default=0, compare=False)  # the line it was read from (text exports)


_INT = re.compile(r"[-+]?\d+")

_SAMPLE_LINE = re.compile(
    r"^(?:[a-zA-Z_:][a-zA-Z0-9_:]*\s*(?:\{.*\})?|\{.*\})\s+[-+]?(?:[0-9.]|NaN|Inf)", re.IGNORECASE)


def looks_like_prometheus_text(text: str) -> bool:
    """Whether ``text`` starts like a text exposition (a ``# HELP``/``# TYPE`` line or a sample).

    Examples
    --------
    >>> looks_like_prometheus_text("# HELP up 1 if up\\nup 1\\n"), looks_like_prometheus_text("time,value\\n")
    (True, False)
    """
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            return stripped.startswith(("# HELP ", "# TYPE ", "# UNIT ", "# EOF"))
        return bool(_SAMPLE_LINE.match(stripped))
    return False


def looks_like_prometheus_json(text: str) -> bool:
    """Whether ``text`` starts like a Prometheus HTTP API response (``{"status": ...``).

    >>> looks_like_prometheus_json('{"status":"success","data":{"resultType":"vector","result":[]}}')
    True
    """
    head = text.lstrip()[:200]
    return head.startswith("{") and ('"status"' in head or '"resultType"' in head or '"data"' in head)


def _parse_line(line: str, openmetrics: bool) -> list[Any]:
    if openmetrics:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse

        families = parse(line + "\n# EOF\n")
    else:
        from prometheus_client.parser import text_string_to_metric_families as parse

        families = parse(line + "\n")
    return [s for family in families for s in family.samples]


def read_prometheus_text(text: str, path: str = "", problems: ProblemLog | None = None, *,
                         default_ms: int | None = None) -> Iterator[PromSample]:
    """Yield the samples of a Prometheus (or OpenMetrics) text exposition.

    Parameters
    ----------
    text
        The exposition.
    path
        File name for problems.
    problems
        Where unreadable lines go (``position`` = line number).
    default_ms
        Timestamp of samples that carry none (the capture time), or None.

    Examples
    --------
    >>> log = ProblemLog("x.prom")
    >>> got = list(read_prometheus_text('a_total{t="x"} 3\\nbroken{ 1\\nb 2.5 1700000000123\\n', "x.prom", log,
    ...                                 default_ms=1700000000000))
    >>> [(s.name, s.labels, s.timestamp_ms, s.value) for s in got]
    [('a_total', {'t': 'x'}, 1700000000000, 3.0), ('b', {}, 1700000000123, 2.5)]
    >>> [(p.position, p.kind) for p in log.problems]
    [(2, 'unparsed_line')]
    """
    log = problems if problems is not None else ProblemLog(path)
    lines = text.split("\n")
    cut = lines[-1] != ""
    if not cut:
        lines.pop()
    openmetrics = any(line.strip() == "# EOF" for line in lines[-3:])
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if number == len(lines) and cut:
            log.report(number, "truncated", f"line {number}: the export ends without a newline; "
                                            f"its last line may be cut and is not read: {line[:200]!r}")
            break
        if not line or line.startswith("#"):  # HELP, TYPE, UNIT, EOF and comments
            continue
        try:
            samples = _parse_line(line, openmetrics)
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            log.report(number, "unparsed_line", f"line {number}: {exc or 'not a sample line'}: {line[:200]!r}")
            continue
        tokens = line.split()
        for s in samples:
            ts = s.timestamp
            ms = default_ms if ts is None else int(round(float(ts) * 1000))
            value: float | None = float(s.value)
            if ts is not None and not openmetrics and not _INT.fullmatch(tokens[-1]):
                # the text format's timestamp is an integer of milliseconds (OpenMetrics': seconds, maybe fractional)
                log.report(number, "bad_value", f"line {number}: timestamp {tokens[-1][:40]} is not an integer of "
                                                "milliseconds; the sample has a null time")
                ms = None
            elif ts is not None and not timestamp_in_range(ms):
                log.report(number, "out_of_range", f"line {number}: timestamp {tokens[-1][:40]} ms is outside "
                                                   "1970-01-01..2262-04-11; the sample has a null time")
                ms = None
            if math.isinf(value) or abs(value) >= _MAX_VALUE:
                shown = tokens[-2] if ts is not None and len(tokens) > 1 else tokens[-1]
                log.report(number, "out_of_range", f"line {number}: {s.name} value {shown[:40]} is beyond any "
                                                   "Java long or finite gauge; null")
                value = None
            yield PromSample(s.name, dict(s.labels), ms, value, number)


def _series(series: Any, result_type: str) -> tuple[dict[str, str], list[Any]]:
    """A series' labels and its points (unchecked)."""
    if not isinstance(series, dict) or not isinstance(series.get("metric", {}), dict):
        raise ValueError("a series is not an object with a 'metric' object")
    labels = {str(k): str(v) for k, v in series.get("metric", {}).items()}
    if result_type == "matrix":
        points = series.get("values")
        if not isinstance(points, list):
            raise ValueError("a matrix series without 'values'")
        return labels, points
    return labels, [series.get("value")]


def _to_sample(labels: dict[str, str], point: Any) -> PromSample:
    if not isinstance(point, list) or len(point) != 2:
        raise ValueError(f"a point is not [time, value]: {str(point)[:80]}")
    name = labels.get("__name__", "")
    rest = {k: v for k, v in labels.items() if k != "__name__"}
    return PromSample(name, rest, int(round(float(point[0]) * 1000)), float(point[1]))


def _points(labels: dict[str, str], points: list[Any], log: ProblemLog, position: int,
            what: str) -> Iterator[PromSample]:
    for point in points:
        try:
            yield _to_sample(labels, point)
        except (ValueError, TypeError) as exc:
            log.report(position, "decode_error", f"{what}: {exc}")


def read_prometheus_json(text: str, path: str = "", problems: ProblemLog | None = None) -> Iterator[PromSample]:
    """Yield the samples of a Prometheus HTTP API query response (``matrix``, ``vector``, ``scalar``).

    ``position`` of a problem is the byte offset in the text. A response whose ``status`` is
    ``error`` is one problem. A series without ``__name__`` (an expression's result) has the
    name ``""``.

    Examples
    --------
    >>> text = ('{"status":"success","data":{"resultType":"matrix","result":['
    ...         '{"metric":{"__name__":"up","job":"kafka"},"values":[[1700000000.5,"1"],[1700000015,"NaN"]]}]}}')
    >>> [(s.name, s.labels, s.timestamp_ms, s.value) for s in read_prometheus_json(text)]
    [('up', {'job': 'kafka'}, 1700000000500, 1.0), ('up', {'job': 'kafka'}, 1700000015000, nan)]
    """
    log = problems if problems is not None else ProblemLog(path)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        yield from _salvage_json(text, log, exc)
        return
    if not isinstance(doc, dict):
        log.report(0, "decode_error", "not a Prometheus API response (a JSON object)")
        return
    if doc.get("status") == "error":
        log.report(0, "tool_message", f"query error {doc.get('errorType')}: {str(doc.get('error'))[:200]}")
        return
    data = doc.get("data")
    if not isinstance(data, dict) or "resultType" not in data:
        log.report(0, "decode_error", "no data.resultType: not a Prometheus query response")
        return
    result_type, result = data.get("resultType"), data.get("result")
    if result_type in ("scalar", "string"):
        try:
            if result_type == "scalar":
                yield _to_sample({}, result)
        except (TypeError, ValueError, IndexError) as exc:
            log.report(0, "decode_error", f"scalar result {str(result)[:100]!r}: {exc}")
        return
    if result_type not in ("matrix", "vector") or not isinstance(result, list):
        log.report(0, "decode_error", f"unknown resultType {result_type!r} or a result that is not a list")
        return
    for i, series in enumerate(result):
        try:
            labels, points = _series(series, result_type)
        except (ValueError, TypeError) as exc:
            log.report(0, "decode_error", f"series {i}: {exc}")
            continue
        yield from _points(labels, points, log, 0, f"series {i}")


_RESULT_TYPE = re.compile(r'"resultType"\s*:\s*"(\w+)"')
_RESULT = re.compile(r'"result"\s*:\s*\[')


def _salvage_json(text: str, log: ProblemLog, error: ValueError) -> Iterator[PromSample]:
    """The complete series of a response that is not valid JSON as a whole (cut or damaged)."""
    rt, start = _RESULT_TYPE.search(text), _RESULT.search(text)
    position = getattr(error, "pos", 0)
    if rt is None or start is None or rt.group(1) not in ("matrix", "vector"):
        log.report(position, "decode_error", f"not a readable Prometheus API response: {error}")
        return
    decoder = json.JSONDecoder()
    i, index = start.end(), 0
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            break
        try:
            series, end = decoder.raw_decode(text, i)
        except ValueError as exc:
            log.report(i, "truncated", f"series {index} at byte {i} cannot be read (cut or damaged): {exc}")
            return
        try:
            labels, points = _series(series, rt.group(1))
        except (ValueError, TypeError) as exc:
            log.report(i, "decode_error", f"series {index}: {exc}")
        else:
            yield from _points(labels, points, log, i, f"series {index}")
        i, index = end, index + 1
    log.report(position, "decode_error", f"the response is not valid JSON after its series ({error})")
