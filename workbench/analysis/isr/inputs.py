"""What the ISR replay reads: the metadata columns and schemas, and the static ``min.insync.replicas``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MIN_ISR_CONFIG = "min.insync.replicas"
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

STATES_SCHEMA = (
    "topic string, topic_id string, partition int, start timestamp, end timestamp, start_offset long, "
    "leader int, isr array<int>, replicas array<int>, elr array<int>, min_isr int, under_replicated boolean, "
    "under_min_isr boolean, at_min_isr boolean, offline boolean, state string, end_reason string, cluster_id string"
)
_UDF_SCHEMA = (STATES_SCHEMA.replace("start timestamp, end timestamp", "start long, end long")
               .replace(", cluster_id string", ""))
_NEEDED = ("cluster_id", "offset", "timestamp", "is_control", "record_type", "topic_id", "topic", "partition",
           "leader", "isr",
           "replicas", "adding", "elr", "config_resource_type", "config_resource_name", "config_name",
           "config_value")


def _config_int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None  # an unparsable value is rejected by Kafka; it never takes effect


def static_min_isr(tables: Any, params: Mapping[str, Any]) -> int | dict[str | None, int]:
    """The static ``min.insync.replicas`` the replay starts from.

    The ``min_insync_replicas`` parameter when above 0 (for every cluster), else per cluster the
    value the brokers' ``server.properties`` set (:func:`configured_min_isr`).
    """
    given = int(params.get("min_insync_replicas") or 0)
    return given if given > 0 else configured_min_isr(tables)


def configured_min_isr(tables: Any) -> dict[str | None, int]:
    """Per cluster id, the static ``min.insync.replicas`` of its brokers' ``server.properties``.

    Read with :func:`workbench.spark.configs.static_settings`. A broker is a node whose
    ``process.roles`` names ``broker`` (or that has no ``process.roles``: ZooKeeper mode); a
    broker whose file does not set the setting has Kafka's default, 1; a value that is not a
    positive integer counts as not set. Where a cluster's brokers disagree the smallest value is
    taken (Kafka applies the leader's own; the replay has one static value per cluster). Clusters
    without any properties file are absent (:func:`partition_states` then uses 1).

    Examples
    --------
    >>> configured_min_isr(tables)                                    # doctest: +SKIP
    {'MkU3OEVBNTcwNTJENDM2Qg': 2}
    """
    from workbench.spark.configs import static_settings

    static = static_settings(tables)
    roles = {(cluster, node): value for node, name, value, _, cluster in static if name == "process.roles"}
    values = {(cluster, node): value for node, name, value, _, cluster in static if name == MIN_ISR_CONFIG}
    out: dict[str | None, int] = {}
    for cluster, node in sorted(set(roles) | set(values), key=lambda k: (k[0] is None, k[0] or "", k[1] or 0)):
        role = roles.get((cluster, node))
        if role is not None and "broker" not in {x.strip() for x in role.split(",")}:
            continue
        value = _config_int(values.get((cluster, node)))
        value = value if value is not None and value >= 1 else 1
        out[cluster] = min(out.get(cluster, value), value)
    return out


def _static_key(static: int | Mapping[str | None, int]) -> Any:
    return static if isinstance(static, int) else sorted(static.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))
