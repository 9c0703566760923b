"""Text printed by Kafka's command-line tools, parsed into rows.

* ``kafka-topics.sh --describe`` (with or without ``--under-replicated-partitions`` /
  ``--under-min-isr-partitions``): :func:`parse_topics_describe`.
* ``kafka-metadata-quorum.sh describe --replication``: :func:`parse_quorum_replication`.

Lines that fit no known shape are returned as problems (line number, text), never dropped
silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench.formats.problems import Problem

_FIELD_RE = re.compile(r"(\w+):[ ]*([^\t]*)")


@dataclass
class TopicsDescribe:
    """Parsed ``kafka-topics --describe`` output."""

    topics: list[dict] = field(default_factory=list)       # topic, topic_id, partition_count, rf, configs
    # topic, partition, leader, replicas, isr, elr, last_known_elr
    partitions: list[dict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _configs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in text.split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def parse_topics_describe(text: str, path: str = "") -> TopicsDescribe:
    """Parse the text of ``kafka-topics.sh --describe``.

    Examples
    --------
    >>> out = parse_topics_describe(
    ...     "Topic: t\\tTopicId: x\\tPartitionCount: 1\\tReplicationFactor: 2\\tConfigs: min.insync.replicas=2\\n"
    ...     "\\tTopic: t\\tPartition: 0\\tLeader: 1\\tReplicas: 1,2\\tIsr: 1\\tElr: 2\\tLastKnownElr: \\n")
    >>> out.partitions[0]["isr"], out.partitions[0]["elr"], out.topics[0]["configs"]
    ([1], [2], {'min.insync.replicas': '2'})
    """
    result = TopicsDescribe()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        values = {k: v.strip() for k, v in _FIELD_RE.findall(line)}
        try:
            if "Partition" in values:
                leader = values.get("Leader", "none")
                result.partitions.append({
                    "topic": values["Topic"], "partition": int(values["Partition"]),
                    "leader": -1 if leader in ("none", "") else int(leader),
                    "replicas": _ints(values.get("Replicas", "")), "isr": _ints(values.get("Isr", "")),
                    "elr": _ints(values["Elr"]) if "Elr" in values else None,
                    "last_known_elr": _ints(values["LastKnownElr"]) if "LastKnownElr" in values else None,
                })
            elif "Topic" in values and "PartitionCount" in values:
                result.topics.append({
                    "topic": values["Topic"], "topic_id": values.get("TopicId"),
                    "partition_count": int(values["PartitionCount"]),
                    "replication_factor": int(values.get("ReplicationFactor", "0")),
                    "configs": _configs(values.get("Configs", "")),
                })
            else:
                result.problems.append(Problem(path, number, "unparsed_line", line[:200]))
        except (KeyError, ValueError) as exc:
            result.problems.append(Problem(path, number, "unparsed_line", f"{exc}: {line[:200]}"))
    return result


def parse_quorum_replication(text: str, path: str = "") -> tuple[list[dict], list[Problem]]:
    """Parse ``kafka-metadata-quorum describe --replication`` (tab-separated table).

    Returns rows with ``node_id, directory_id, log_end_offset, lag, last_fetch_ms,
    last_caught_up_ms, status`` and the problems of lines that did not parse.
    """
    rows: list[dict] = []
    problems: list[Problem] = []
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return rows, problems
    header = [h.strip() for h in lines[0].split("\t") if h.strip()]
    names = {"NodeId": "node_id", "DirectoryId": "directory_id", "LogEndOffset": "log_end_offset", "Lag": "lag",
             "LastFetchTimestamp": "last_fetch_ms", "LastCaughtUpTimestamp": "last_caught_up_ms",
             "Status": "status"}
    for number, line in enumerate(lines[1:], start=2):
        cells = [c.strip() for c in line.split("\t")]
        cells = [c for c in cells if c != ""] if len(cells) > len(header) else cells
        if len(cells) < len(header):
            problems.append(Problem(path, number, "unparsed_line", line[:200]))
            continue
        row: dict = {}
        for name, cell in zip(header, cells, strict=False):
            key = names.get(name, name)
            row[key] = cell if key in ("directory_id", "status") else _int_or_none(cell)
        rows.append(row)
    return rows, problems


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
