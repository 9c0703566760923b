"""Metric exports: Kafka's JmxTool CSV, in the long ``metrics`` layout, and MBean names in the
Prometheus JMX exporter's form.

JmxTool (``kafka-jmx.sh`` / ``kafka.tools.JmxTool``) writes a header
``"time","<mbean>:<attribute>",...`` and one row per sample, the first cell being epoch
milliseconds (or a formatted date with ``--date-format``). Each numeric cell becomes one
row ``(timestamp_ms, mbean, attribute, value)``; non-numeric cells (``EventType``,
``RateUnit``) are skipped.

:func:`exporter_name` gives the name (and labels) under which the Prometheus JMX exporter,
with the usual Kafka rules, exports one MBean attribute, so that a JmxTool sample and a
Prometheus sample of the same value share one name:

* the MBean ``domain:type=T,name=N,k1=v1,...`` (Kafka's Yammer metrics) exports as
  ``<domain>_<T>_<N>`` for attribute ``Value``; ``<domain>_<T>_<N'>_total`` for ``Count`` of a
  ``N'PerSec...`` meter and ``<domain>_<T>_<N>_count`` for other ``Count`` attributes;
  ``<domain>_<T>_<N>`` with label ``quantile="0.NN"`` for ``NNthPercentile``;
  ``<domain>_<T>_<N'>_percent`` for ``MeanRate`` of a ``N'Percent...`` meter; and
  ``<domain>_<T>_<N>_<attribute>`` for any other attribute (``OneMinuteRate``, ``Mean``...);
* an MBean ``domain:type=T,k1=v1,...`` without ``name`` (Kafka's own metrics: ``raft-metrics``,
  ``broker-metadata-metrics``, MirrorMaker 2's ``MirrorSourceConnector``) exports as
  ``<domain>_<T>_<attribute>``;
* the other key properties (``topic``, ``partition``, ``clientId``, ``target``...) become
  labels, named and valued as in the MBean;
* the name is then made a legal Prometheus name as the exporter does (every character other
  than letters, digits, ``:`` and ``_`` becomes ``_``, runs of ``_`` collapse to one, a leading
  digit gets a ``_``) and lower-cased (the exporter's ``lowercaseOutputName``).

``peer/prometheus.py`` configures the exporter the scenarios attach with exactly these rules.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from workbench.formats.problems import ProblemLog, timestamp_in_range

#: Values at or beyond this magnitude (2^63, past any Java ``long``) load as null: no Kafka metric
#: reaches it, and analyses turn counts into 64-bit integers.
_MAX_VALUE = float(2**63)


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One value of one attribute of one MBean at one time."""

    timestamp_ms: int | None  # None: the row's time was out of range (an ``out_of_range`` problem)
    mbean: str
    attribute: str
    value: float | None  # None: out of range (an ``out_of_range`` problem); JmxTool's NaN stays NaN
    line: int = field(default=0, compare=False)  # the CSV line it was read from (its problems' position)


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
    rows = list(enumerate(reader, start=2))
    numeric = _numeric_columns(rows, len(columns))
    for number, row in rows:
        if not row:
            continue
        try:
            when = float(row[0])
        except ValueError:
            log.report(number, "unparsed_line", f"line {number}: time {row[0][:40]!r} is not epoch milliseconds")
            continue
        ts: int | None = int(when) if timestamp_in_range(when) else None
        if ts is None:
            log.report(number, "out_of_range", f"line {number}: time {row[0][:40]!r} is outside 1970-01-01.."
                                               "2262-04-11 in epoch milliseconds; its samples have a null time")
        if len(row) - 1 != len(columns):
            log.report(number, "unparsed_line", f"line {number}: {len(row) - 1} values for {len(columns)} columns")
        for i, ((mbean, attribute), cell) in enumerate(zip(columns, row[1:], strict=False)):
            try:
                value: float | None = float(cell)
            except ValueError:
                if i in numeric and cell:  # text in a column of numbers: no value, and a problem
                    log.report(number, "bad_value", f"line {number}: {mbean}:{attribute} value {cell[:40]!r} is "
                                                    "not a number (the column holds numbers); null")
                    yield MetricSample(ts, mbean, attribute, None, number)
                continue
            if value is not None and (math.isinf(value) or abs(value) >= _MAX_VALUE):
                log.report(number, "out_of_range", f"line {number}: {mbean}:{attribute} value {cell[:40]!r} is "
                                                   "beyond any Java long or finite gauge; null")
                value = None
            yield MetricSample(ts, mbean, attribute, value, number)


def _numeric_columns(rows: list[tuple[int, list[str]]], n: int) -> set[int]:
    """The value columns (0-based) holding a number in most of their non-empty cells (JmxTool also
    writes text attributes such as ``EventType``, which are not samples)."""
    numbers = [0] * n
    texts = [0] * n
    for _, row in rows:
        for i, cell in enumerate(row[1: n + 1]):
            if not cell:
                continue
            try:
                float(cell)
                numbers[i] += 1
            except ValueError:
                texts[i] += 1
    return {i for i in range(n) if numbers[i] > texts[i]}


def mbean_properties(mbean: str) -> tuple[str, list[tuple[str, str]]]:
    """The domain and the key properties, in written order, of an MBean name.

    Examples
    --------
    >>> mbean_properties("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=orders")
    ('kafka.server', [('type', 'BrokerTopicMetrics'), ('name', 'BytesInPerSec'), ('topic', 'orders')])
    """
    domain, _, props = mbean.partition(":")
    out = []
    for item in props.split(","):
        key, sep, value = item.partition("=")
        if sep:
            out.append((key.strip(), value.strip()))
    return domain, out


def safe_metric_name(name: str) -> str:
    """A legal Prometheus metric name, as the JMX exporter makes one, lower-cased.

    Examples
    --------
    >>> safe_metric_name("kafka.server_raft-metrics_commit-latency-avg")
    'kafka_server_raft_metrics_commit_latency_avg'
    """
    out = ["_"] if name[:1].isdigit() else []
    previous_underscore = False
    for ch in name:
        legal = ch == ":" or ch == "_" or ("a" <= ch <= "z") or ("A" <= ch <= "Z") or ("0" <= ch <= "9")
        if not legal or ch == "_":
            if previous_underscore:
                continue
            out.append("_")
            previous_underscore = True
        else:
            out.append(ch)
            previous_underscore = False
    return "".join(out).lower()


_PER_SEC = re.compile(r"^(.+)PerSec\w*$")
_PERCENT = re.compile(r"^(.+)Percent\w*$")
_PERCENTILE = re.compile(r"^(\d+)thPercentile$")


def exporter_name(mbean: str, attribute: str) -> tuple[str, dict[str, str]]:
    """The Prometheus name and labels of one MBean attribute (the rule in the module docstring).

    Examples
    --------
    >>> exporter_name("kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount", "Value")
    ('kafka_server_replicamanager_underminisrpartitioncount', {})
    >>> exporter_name("kafka.server:type=raft-metrics", "commit-latency-avg")
    ('kafka_server_raft_metrics_commit_latency_avg', {})
    >>> exporter_name("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=orders", "Count")
    ('kafka_server_brokertopicmetrics_bytesin_total', {'topic': 'orders'})
    >>> exporter_name("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Fetch", "99thPercentile")
    ('kafka_network_requestmetrics_totaltimems', {'request': 'Fetch', 'quantile': '0.99'})
    >>> name, labels = exporter_name("kafka.connect.mirror:type=MirrorSourceConnector,target=B,topic=A.t,partition=0",
    ...                              "replication-latency-ms")
    >>> name
    'kafka_connect_mirror_mirrorsourceconnector_replication_latency_ms'
    >>> labels
    {'target': 'B', 'topic': 'A.t', 'partition': '0'}
    """
    domain, props = mbean_properties(mbean)
    keys = [k for k, _ in props]
    if keys[:2] == ["type", "name"]:
        typ, name = props[0][1], props[1][1]
        labels = dict(props[2:])
        percentile = _PERCENTILE.match(attribute)
        if attribute == "Value":
            parts = [domain, typ, name]
        elif attribute == "Count":
            per_sec = _PER_SEC.match(name)
            parts = [domain, typ, per_sec.group(1), "total"] if per_sec else [domain, typ, name, "count"]
        elif percentile:
            parts = [domain, typ, name]
            labels["quantile"] = f"0.{percentile.group(1)}"
        elif attribute == "MeanRate" and _PERCENT.match(name):
            parts = [domain, typ, _PERCENT.match(name).group(1), "percent"]  # type: ignore[union-attr]
        else:
            parts = [domain, typ, name, attribute]
    elif keys[:1] == ["type"]:
        parts = [domain, props[0][1], attribute]
        labels = dict(props[1:])
    else:
        parts = [domain, attribute]
        labels = dict(props)
    return safe_metric_name("_".join(parts)), labels
