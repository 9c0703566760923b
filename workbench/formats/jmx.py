"""Metric exports: Kafka's JmxTool CSV, in the long ``metrics`` layout.

JmxTool (``kafka-jmx.sh`` / ``kafka.tools.JmxTool``) writes a header
``"time","<mbean>:<attribute>",...`` and one row per sample, the first cell being epoch
milliseconds (or a formatted date with ``--date-format``). Each numeric cell becomes one
row ``(timestamp_ms, mbean, attribute, value)``; non-numeric cells (``EventType``,
``RateUnit``) are skipped.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass

from workbench.formats.problems import ProblemLog


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One value of one attribute of one MBean at one time."""

    timestamp_ms: int
    mbean: str
    attribute: str
    value: float


def _split_column(name: str) -> tuple[str, str]:
    mbean, sep, attribute = name.rpartition(":")
    if not sep or "=" not in mbean:
        return name, ""
    return mbean, attribute


def read_jmx_csv(text: str, path: str = "", problems: ProblemLog | None = None) -> Iterator[MetricSample]:
    """Yield the numeric samples of a JmxTool CSV export.

    Examples
    --------
    >>> rows = list(read_jmx_csv('"time","kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount:Value"\\n'
    ...                          '1700000000000,2\\n'))
    >>> rows[0].mbean, rows[0].attribute, rows[0].value
    ('kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount', 'Value', 2.0)
    """
    log = problems if problems is not None else ProblemLog(path)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        return
    columns = [_split_column(h) for h in header[1:]]
    for number, row in enumerate(reader, start=2):
        if not row:
            continue
        try:
            ts = int(float(row[0]))
        except ValueError:
            log.report(number, "unparsed_line", f"line {number}: time {row[0][:40]!r} is not epoch milliseconds")
            continue
        if len(row) - 1 != len(columns):
            log.report(number, "unparsed_line", f"line {number}: {len(row) - 1} values for {len(columns)} columns")
        for (mbean, attribute), cell in zip(columns, row[1:], strict=False):
            try:
                value = float(cell)
            except ValueError:
                continue
            yield MetricSample(ts, mbean, attribute, value)
