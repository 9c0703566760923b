"""Scraped metric names of the common published JMX-exporter rule sets, as the workbench names them.

The workbench's name for a value is the one :func:`workbench.formats.jmx.exporter_name` gives its
MBean attribute (``kafka_server_replicamanager_underminisrpartitioncount``,
``kafka_server_raft_metrics_commit_latency_avg``). Clusters in the field are scraped with other
rule sets, which name some of the same values otherwise; :func:`canonical_name` rewrites those
names, and only where the rewrite cannot name another value:

* **the JMX exporter 1.x** appends ``_total`` to every counter: ``<x>_count_total`` is
  ``<x>_count``, and a ``-max`` attribute a rule types as a counter (``<x>_max_total``) is
  ``<x>_max``;
* **Strimzi** (the operator's example ``kafka-metrics.yaml``) names Kafka's own metrics of
  ``raft-metrics``, ``raft-channel-metrics`` and ``broker-metadata-metrics`` without the
  hyphens of the type: ``kafka_server_raftmetrics_<attribute>`` is
  ``kafka_server_raft_metrics_<attribute>``;
* **Confluent** (``jmx-monitoring-stacks``' ``kafka_broker.yml``) names a Yammer ``Count`` like
  its ``Value``: a meter's ``kafka_<domain>_<type>_<name>persec`` is ``..._<name>_total``, and
  a histogram's or timer's bare count — a name whose other samples carry a ``quantile`` label
  (``summary_names``) — is ``..._count``;
* **Bitnami** (the Helm chart's ``jmx-kafka-prometheus.yml``) suffixes the attribute and puts
  ``total`` after the type of ``kafka.server`` MBeans: ``kafka_server_<type>_total_<name>_value``
  and ``kafka_<domain>_<type>_<name>_value`` are ``..._<type>_<name>``, a ``_count`` of a
  ``...PerSec`` meter is ``..._total``.

Names the rewrites do not recognise are kept (lower-cased). Label names are kept as exported
(``lowercaseOutputLabelNames`` makes ``clientId`` ``clientid``); the analyses read only
``topic``, ``partition``, ``quantile``, ``source`` and ``target``, which every rule set writes alike.

Examples
--------
>>> canonical_name("kafka_server_raftmetrics_commit_latency_max_total")
'kafka_server_raft_metrics_commit_latency_max'
>>> canonical_name("kafka_server_replicamanager_total_underminisrpartitioncount_value")
'kafka_server_replicamanager_underminisrpartitioncount'
>>> canonical_name("kafka_server_brokertopicmetrics_bytesinpersec")
'kafka_server_brokertopicmetrics_bytesin_total'
"""

from __future__ import annotations

import re

_HYPHENATED_TYPES = {
    "kafka_server_raftmetrics_": "kafka_server_raft_metrics_",
    "kafka_server_raftchannelmetrics_": "kafka_server_raft_channel_metrics_",
    "kafka_server_brokermetadatametrics_": "kafka_server_broker_metadata_metrics_",
}
#: The families whose ``-max`` attributes Strimzi types as counters.
_KAFKA_METRICS_FAMILIES = tuple(_HYPHENATED_TYPES.values())

# one token of a Yammer name: the MBean's type or name property, lower-cased, without "_"
_TOKEN = r"[a-z0-9]+"
# kafka.<domain>: "server", "log", "controller"... or "coordinator_group" (kafka.coordinator.group)
_DOMAIN = rf"{_TOKEN}(?:_{_TOKEN})?"
_BITNAMI_SERVER = re.compile(rf"^kafka_server_({_TOKEN})_total_(\w+?)_(value|count|oneminuterate)$")
_ATTRIBUTE_VALUE = re.compile(rf"^(kafka_{_DOMAIN}_{_TOKEN}_{_TOKEN})_value$")
_METER_COUNT = re.compile(rf"^(kafka_{_DOMAIN}_{_TOKEN}_[a-z0-9]+?)persec[a-z0-9]*(?:_count)?$")
_YAMMER = re.compile(rf"^kafka_{_DOMAIN}_{_TOKEN}_{_TOKEN}$")


def canonical_name(name: str, *, histogram_count: bool = False) -> str:
    """The workbench's name of a scraped sample's name (the module docstring's rewrites).

    Parameters
    ----------
    name
        The sample's name as exported.
    histogram_count
        The sample has no ``quantile`` label while others of its name have (:func:`summary_names`):
        it is the histogram's count (Confluent's rules).

    Examples
    --------
    >>> canonical_name("kafka_server_brokermetadatalistener_metadatabatchsizes_count_total")
    'kafka_server_brokermetadatalistener_metadatabatchsizes_count'
    >>> canonical_name("kafka_server_brokermetadatalistener_metadatabatchsizes", histogram_count=True)
    'kafka_server_brokermetadatalistener_metadatabatchsizes_count'
    >>> canonical_name("kafka_controller_kafkacontroller_lastappliedrecordoffset_value")
    'kafka_controller_kafkacontroller_lastappliedrecordoffset'
    >>> canonical_name("kafka_server_controllerserver_total_linux_disk_read_bytes_value")
    'kafka_server_controllerserver_linux_disk_read_bytes'
    >>> canonical_name("kafka_controller_controllerstats_uncleanleaderelectionspersec_count")
    'kafka_controller_controllerstats_uncleanleaderelections_total'
    >>> canonical_name("kafka_server_brokertopicmetrics_bytesinpersec_oneminuterate")
    'kafka_server_brokertopicmetrics_bytesinpersec_oneminuterate'
    >>> canonical_name("Kafka_Log_Log_LogEndOffset")
    'kafka_log_log_logendoffset'
    """
    name = name.lower()
    if name.endswith("_count_total"):
        return name[: -len("_total")]
    for prefix, ours in _HYPHENATED_TYPES.items():
        if name.startswith(prefix):
            name = ours + name[len(prefix):]
            break
    if name.startswith(_KAFKA_METRICS_FAMILIES):
        return name[: -len("_total")] if name.endswith("_max_total") else name
    bitnami = _BITNAMI_SERVER.match(name)
    if bitnami:
        kind, metric, attribute = bitnami.groups()
        if attribute == "value":
            return f"kafka_server_{kind}_{metric}"
        name = f"kafka_server_{kind}_{metric}_{attribute}"
    value = _ATTRIBUTE_VALUE.match(name)
    if value:
        return value.group(1)
    meter = _METER_COUNT.match(name)
    if meter and not name.endswith("_total"):
        return meter.group(1) + "_total"
    if histogram_count and _YAMMER.match(name):
        return name + "_count"
    return name


_TEXT_QUANTILE = re.compile(r'^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{[^}\n]*\bquantile\s*=', re.MULTILINE)
_JSON_QUANTILE = (
    re.compile(r'\{[^{}]*"__name__"\s*:\s*"([^"]+)"[^{}]*"quantile"\s*:[^{}]*\}'),
    re.compile(r'\{[^{}]*"quantile"\s*:[^{}]*"__name__"\s*:\s*"([^"]+)"[^{}]*\}'),
)


def summary_names(text: str, kind: str) -> frozenset[str]:
    """Lower-cased names that have samples with a ``quantile`` label in an export (``kind``:
    ``text`` or ``json``), found with one regular-expression pass, before the export is parsed.

    Examples
    --------
    >>> sorted(summary_names('a{quantile="0.99"} 1\\na 7\\nb{topic="t"} 2\\n', "text"))
    ['a']
    >>> sorted(summary_names('{"metric":{"quantile":"0.5","__name__":"H"},"values":[]}', "json"))
    ['h']
    """
    patterns = (_TEXT_QUANTILE,) if kind == "text" else _JSON_QUANTILE
    return frozenset(m.group(1).lower() for pattern in patterns for m in pattern.finditer(text))
