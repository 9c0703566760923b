"""Which Kafka node a Prometheus ``instance`` label names.

A Prometheus server tells the series of the nodes it scrapes apart by ``instance``
(``host:port`` of the exporter), which is not a node id. Two sources give the node:

* the operator's mapping, ``{"<instance>": <node id>}`` as JSON or YAML
  (:func:`read_instance_map`): each entry that is not a string key and an int node id
  (0..2^31-1) is a ``bad_value`` problem and left out, never a crash;
* a node's ``listeners``/``advertised.listeners`` (:func:`listener_hosts`): the exporter runs
  on the node's machine, so an instance's host (:func:`instance_host`) that is the listener host
  of exactly one node names it.

Examples
--------
>>> instance_host("10.0.0.4:7071"), instance_host("[::1]:9404"), instance_host("Broker-1")
('10.0.0.4', '::1', 'broker-1')
>>> sorted(listener_hosts({"listeners": "PLAINTEXT://:9092,CONTROLLER://kafka-1.local:9093",
...                        "advertised.listeners": "PLAINTEXT://Kafka-1.example:9092"}))
['kafka-1.example', 'kafka-1.local']
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from workbench.formats.problems import ProblemLog

#: Listener hosts that name no machine: a wildcard bind or none.
_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})
_MAX_NODE = 2**31 - 1


def instance_host(instance: str) -> str:
    """The host part of an ``instance`` label (``host:port``, ``[v6]:port`` or a bare host), lower-cased."""
    text = instance.strip()
    if text.startswith("["):
        end = text.find("]")
        return text[1:end].lower() if end > 0 else text.lower()
    if text.count(":") == 1:
        text = text.split(":", 1)[0]
    return text.lower()


def listener_hosts(props: Mapping[str, str]) -> set[str]:
    """The hosts a node's ``listeners`` and ``advertised.listeners`` name (wildcards left out)."""
    hosts = set()
    for key in ("listeners", "advertised.listeners"):
        for listener in props.get(key, "").split(","):
            _, sep, address = listener.strip().partition("://")
            if not sep:
                continue
            if address.startswith("["):
                host = address[1:address.find("]")] if "]" in address else address
            else:
                host = address.rsplit(":", 1)[0] if ":" in address else address
            host = host.strip().lower()
            if host not in _WILDCARDS:
                hosts.add(host)
    return hosts


def _load(text: str, yaml_text: bool) -> object:
    """The document of a JSON or YAML text; ValueError when it does not parse."""
    if not yaml_text:
        return json.loads(text)  # json.JSONDecodeError is a ValueError
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc).replace("\n", " ")) from exc


def read_instance_map(data: bytes, path: str, yaml_text: bool, log: ProblemLog) -> dict[str, int]:
    """The ``{instance: node id}`` entries of a mapping file (JSON, or YAML when ``yaml_text``).

    A file that does not parse, or whose top is not a mapping, is a ``decode_error``; an entry
    whose key is not a string or whose node is not an int 0..2^31-1 is a ``bad_value`` (its
    instance stays unmapped). Problem positions are 0 (the detail names the entry).

    Examples
    --------
    >>> log = ProblemLog("instances.json")
    >>> read_instance_map(b'{"127.0.0.1:7071": 4, "127.0.0.1:7072": "five", "h:1": -1}', "instances.json", False, log)
    {'127.0.0.1:7071': 4}
    >>> [p.kind for p in log.problems]
    ['bad_value', 'bad_value']
    """
    try:
        document = _load(data.decode("utf-8", "replace"), yaml_text)
    except ValueError as exc:
        log.report(0, "decode_error", f"the instance -> node mapping does not parse: {exc}; no instance mapped from it")
        return {}
    if document is None:
        return {}
    if not isinstance(document, dict):
        log.report(0, "decode_error", f"the instance -> node mapping holds a {type(document).__name__}, expected "
                                      '{"<instance>": <node id>, ...}; no instance mapped from it')
        return {}
    out: dict[str, int] = {}
    for key, node in document.items():
        if not isinstance(key, str) or not key.strip():
            log.report(0, "bad_value", f"entry {key!r}: an instance is a string such as \"10.0.0.4:7071\"; "
                                       "entry left out")
        elif isinstance(node, bool) or not isinstance(node, int) or not 0 <= node <= _MAX_NODE:
            log.report(0, "bad_value", f"entry {key!r}: node {node!r} is not a node id (0..{_MAX_NODE}); "
                                       "the instance stays unmapped")
        else:
            out[key] = node
    return out
