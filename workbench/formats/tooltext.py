"""Text printed by Kafka's command-line tools, parsed into rows.

One parser per view, each ``parse_...(text, path="", problems=None) -> list of dict``:

* ``kafka-topics.sh --describe`` (also with ``--under-replicated-partitions``,
  ``--under-min-isr-partitions``, ``--unavailable-partitions``...): :func:`parse_topics_describe`,
  one row per partition line, carrying its topic line's fields when the output has them;
* ``kafka-consumer-groups.sh --describe``, every column layout: the offsets view (default or
  ``--offsets``, with ``--verbose``'s ``LEADER-EPOCH``): :func:`parse_group_offsets`; ``--members``
  (with or without ``GROUP-INSTANCE-ID``, and ``--verbose``'s assignment columns of 3.x and
  4.x): :func:`parse_group_members`; ``--state`` (and ``--verbose``'s epochs):
  :func:`parse_group_states`;
* ``kafka-metadata-quorum.sh describe --status``: :func:`parse_quorum_status` (voters and
  observers as JSON objects, 3.7+, or as id lists, earlier);
  ``describe --replication``: :func:`parse_quorum_replication` (with or without ``DirectoryId``,
  with ``--human-readable``'s ``N ms ago``);
* ``kafka-get-offsets.sh`` (``GetOffsetShell``): :func:`parse_get_offsets`;
* any table Kafka prints with ``ToolsUtils.prettyPrintTable`` (``kafka-transactions.sh`` ``list``,
  ``describe``, ``describe-producers``, ``find-hanging``): :func:`parse_tab_table`, one dict of
  header to cell per row.

The consumer-groups tool prints fixed-width blocks (``printf("%-Ns ", ...)``, widths chosen per
block), so a row is cut at its block header's column positions, which keeps empty cells (3.x
prints an empty ``ASSIGNMENT-STRATEGY``) and cells with spaces (``COORDINATOR (ID)``). A value
wider than its column pushes the rest of the line right; such a line is read by whitespace
instead.

Lines that fit no known shape become problems (``position`` = line number, as for every text
input; the detail says which line), never dropped silently; every readable line still gives
its row. :func:`tool_view` names the view of a capture from the command line when it is known,
:func:`recognise_view` from the text's header line otherwise.

Examples
--------
>>> parse_get_offsets("orders:0:1532\\norders:1:17\\n")
[{'topic': 'orders', 'partition': 0, 'offset': 1532}, {'topic': 'orders', 'partition': 1, 'offset': 17}]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.formats.problems import Problem, ProblemLog

#: The views this module parses, by name (the ``tool_output`` tables' names follow them).
VIEWS = ("topics_describe", "group_offsets", "group_members", "group_states", "quorum_status",
         "quorum_replication", "get_offsets")

_FIELD_RE = re.compile(r"(\w+):[ ]*([^\t]*)")
_MISSING = "-"


def _log(path: str, problems: ProblemLog | None) -> ProblemLog:
    return problems if problems is not None else ProblemLog(path)


def _lines(text: str) -> Iterator[tuple[int, str]]:
    yield from enumerate(text.splitlines(), start=1)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _elr(text: str | None) -> list[int] | None:
    return None if text is None or text == "N/A" else _ints(text)


def parse_topic_configs(text: str) -> dict[str, str]:
    """The ``Configs:`` field of ``kafka-topics --describe``: ``k=v`` pairs joined by commas.

    A value may itself hold commas (``leader.replication.throttled.replicas=0:1,1:2``): a
    piece without ``=`` continues the previous value.

    Examples
    --------
    >>> parse_topic_configs("min.insync.replicas=2,leader.replication.throttled.replicas=0:1,1:2")
    {'min.insync.replicas': '2', 'leader.replication.throttled.replicas': '0:1,1:2'}
    """
    out: dict[str, str] = {}
    last: str | None = None
    for item in text.split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            last = key.strip()
            out[last] = value.strip()
        elif last is not None and item.strip():
            out[last] += "," + item.strip()
    return out


# ---------------------------------------------------------------------------------------------
# kafka-topics --describe


@dataclass
class TopicsDescribe:
    """Parsed ``kafka-topics --describe`` output: topic lines and partition lines."""

    #: topic, topic_id, partition_count, replication_factor, configs
    topics: list[dict] = field(default_factory=list)
    #: topic, partition, leader, replicas, isr, elr, last_known_elr
    partitions: list[dict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def parse_topics_describe(text: str, path: str = "", problems: ProblemLog | None = None) -> TopicsDescribe:
    """Parse the text of ``kafka-topics.sh --describe`` (every Kafka line: ``Topic:x`` of 1.x-2.x
    without the space, ``TopicId`` from 2.8, ``Elr``/``LastKnownElr`` from 3.9).

    A partition line's ``leader`` is -1 for ``none``; ``elr``/``last_known_elr`` are None when
    the version does not print them, or prints ``N/A`` (3.9's tool against a ZooKeeper-mode cluster).

    Examples
    --------
    >>> out = parse_topics_describe(
    ...     "Topic: t\\tTopicId: x\\tPartitionCount: 1\\tReplicationFactor: 2\\tConfigs: min.insync.replicas=2\\n"
    ...     "\\tTopic: t\\tPartition: 0\\tLeader: 1\\tReplicas: 1,2\\tIsr: 1\\tElr: 2\\tLastKnownElr: \\n")
    >>> out.partitions[0]["isr"], out.partitions[0]["elr"], out.topics[0]["configs"]
    ([1], [2], {'min.insync.replicas': '2'})
    """
    log = _log(path, problems)
    result = TopicsDescribe()
    start = len(log.problems)
    for number, line in _lines(text):
        if not line.strip():
            continue
        values = {k: v.strip() for k, v in _FIELD_RE.findall(line)}
        try:
            if "Partition" in values:
                leader = values.get("Leader", "none")
                if "Replicas" not in values or "Isr" not in values:
                    raise ValueError("a partition line without Replicas and Isr")
                result.partitions.append({
                    "topic": values["Topic"], "partition": int(values["Partition"]),
                    "leader": -1 if leader in ("none", "", "-1") else int(leader),
                    "replicas": _ints(values["Replicas"]), "isr": _ints(values["Isr"]),
                    "elr": _elr(values.get("Elr")), "last_known_elr": _elr(values.get("LastKnownElr")),
                })
            elif "Topic" in values and "PartitionCount" in values:
                result.topics.append({
                    "topic": values["Topic"], "topic_id": values.get("TopicId"),
                    "partition_count": int(values["PartitionCount"]),
                    "replication_factor": int(values["ReplicationFactor"]),
                    "configs": parse_topic_configs(values.get("Configs", "")),
                })
            else:
                log.report(number, "unparsed_line",
                           f"line {number}: not a kafka-topics --describe line: {line[:200]!r}")
        except (KeyError, ValueError) as exc:
            log.report(number, "unparsed_line", f"line {number}: {exc}: {line[:200]!r}")
    result.problems = log.problems[start:]
    return result


def topics_describe_rows(text: str, path: str = "", problems: ProblemLog | None = None) -> list[dict]:
    """One row per partition line, with its topic line's ``topic_id``, ``partition_count``,
    ``replication_factor`` and ``configs`` (None without a topic line, as with ``--under-replicated-partitions``).

    >>> rows = topics_describe_rows("\\tTopic: t\\tPartition: 0\\tLeader: none\\tReplicas: 1\\tIsr: \\n")
    >>> rows[0]["leader"], rows[0]["isr"], rows[0]["configs"]
    (-1, [], None)
    """
    parsed = parse_topics_describe(text, path, problems)
    topics = {t["topic"]: t for t in parsed.topics}
    out = []
    for p in parsed.partitions:
        t = topics.get(p["topic"], {})
        out.append({**p, "topic_id": t.get("topic_id"), "partition_count": t.get("partition_count"),
                    "replication_factor": t.get("replication_factor"), "configs": t.get("configs")})
    return out


# ---------------------------------------------------------------------------------------------
# kafka-consumer-groups --describe: fixed-width blocks

#: Column names of every layout -> row key; values are ints when the key is in _INT_COLUMNS.
GROUP_COLUMNS = {
    "GROUP": "group", "TOPIC": "topic", "PARTITION": "partition", "LEADER-EPOCH": "leader_epoch",
    "CURRENT-OFFSET": "current_offset", "LOG-END-OFFSET": "log_end_offset", "LAG": "lag",
    "CONSUMER-ID": "consumer_id", "HOST": "host", "CLIENT-ID": "client_id",
    "GROUP-INSTANCE-ID": "group_instance_id", "#PARTITIONS": "partitions", "ASSIGNMENT": "assignment",
    "CURRENT-EPOCH": "current_epoch", "CURRENT-ASSIGNMENT": "current_assignment",
    "TARGET-EPOCH": "target_epoch", "TARGET-ASSIGNMENT": "target_assignment", "UPGRADED": "upgraded",
    "COORDINATOR (ID)": "coordinator", "ASSIGNMENT-STRATEGY": "assignment_strategy", "STATE": "state",
    "GROUP-EPOCH": "group_epoch", "TARGET-ASSIGNMENT-EPOCH": "target_assignment_epoch",
    "#MEMBERS": "members",
}
_INT_COLUMNS = frozenset({"partition", "leader_epoch", "current_offset", "log_end_offset", "lag", "partitions",
                          "current_epoch", "target_epoch", "group_epoch", "target_assignment_epoch", "members"})
_HEADER_TOKEN = re.compile(r"COORDINATOR \(ID\)|\S+")
_COORDINATOR = re.compile(r"^(?P<host>.*):(?P<port>\d+)\s+\((?P<id>-?\d+)\)$")

#: The row keys of each consumer-groups view, in table order.
GROUP_VIEW_KEYS = {
    "group_offsets": ("group", "topic", "partition", "leader_epoch", "current_offset", "log_end_offset", "lag",
                      "consumer_id", "host", "client_id"),
    "group_members": ("group", "consumer_id", "group_instance_id", "host", "client_id", "partitions", "assignment",
                      "current_epoch", "current_assignment", "target_epoch", "target_assignment", "upgraded"),
    "group_states": ("group", "coordinator_host", "coordinator_port", "coordinator_id", "assignment_strategy",
                     "state", "members", "group_epoch", "target_assignment_epoch"),
}


def group_header_view(line: str) -> str | None:
    """The consumer-groups view a block header line belongs to, or None if it is not one.

    Examples
    --------
    >>> group_header_view("GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG  CONSUMER-ID  HOST  CLIENT-ID")
    'group_offsets'
    >>> group_header_view("GROUP  COORDINATOR (ID)  ASSIGNMENT-STRATEGY  STATE  #MEMBERS")
    'group_states'
    """
    tokens = _HEADER_TOKEN.findall(line)
    if not tokens or tokens[0] != "GROUP" or any(t not in GROUP_COLUMNS for t in tokens):
        return None
    if "COORDINATOR (ID)" in tokens:
        return "group_states"
    if "CURRENT-OFFSET" in tokens:
        return "group_offsets"
    if "#PARTITIONS" in tokens:
        return "group_members"
    return None


@dataclass(frozen=True)
class _Block:
    view: str
    names: tuple[str, ...]
    starts: tuple[int, ...]


def _block(line: str) -> _Block | None:
    view = group_header_view(line)
    if view is None:
        return None
    matches = list(_HEADER_TOKEN.finditer(line))
    return _Block(view, tuple(m.group(0) for m in matches), tuple(m.start() for m in matches))


def _cut(block: _Block, line: str) -> list[str] | None:
    """Cells at the header's positions, or None when a value overflowed its column."""
    cells = []
    for i, start in enumerate(block.starts):
        if start > 0 and (len(line) <= start - 1 or line[start - 1] != " "):
            return None
        end = block.starts[i + 1] - 1 if i + 1 < len(block.starts) else len(line)
        cells.append(line[start:end].strip())
    if block.starts[-1] > len(line) and len(block.starts) > 1:
        return None
    return cells


def _split(block: _Block, line: str) -> list[str] | None:
    """Cells by whitespace (a line whose values overflowed): the last column takes the rest."""
    n = len(block.names)
    if block.view == "group_states":
        m = re.match(r"^(\S+)\s+(\S+:\d+\s+\(-?\d+\))\s+(.*)$", line)
        if m is None:
            return None
        rest = m.group(3).split()
        if len(rest) == n - 3:  # an empty ASSIGNMENT-STRATEGY (3.x) leaves one cell fewer
            rest = ["", *rest]
        return [m.group(1), m.group(2), *rest] if len(rest) == n - 2 else None
    tokens = line.split(None, n - 1)
    return tokens if len(tokens) == n else None


def _group_row(block: _Block, cells: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(GROUP_VIEW_KEYS[block.view])
    for name, cell in zip(block.names, cells, strict=True):
        key = GROUP_COLUMNS[name]
        value: Any = None if cell in (_MISSING, "") else cell
        if key == "coordinator":
            m = _COORDINATOR.match(cell)
            if m is None:
                raise ValueError(f"COORDINATOR (ID) {cell!r} is not 'host:port  (id)'")
            row["coordinator_host"], row["coordinator_port"] = m.group("host"), int(m.group("port"))
            row["coordinator_id"] = int(m.group("id"))
            continue
        if key in _INT_COLUMNS and value is not None:
            value = int(value)
        if key == "upgraded" and value is not None:
            value = {"true": True, "false": False}[value]
        row[key] = value
    return row


def _parse_groups(view: str, text: str, path: str, problems: ProblemLog | None) -> list[dict]:
    log = _log(path, problems)
    rows: list[dict] = []
    block: _Block | None = None
    for number, line in _lines(text):
        if not line.strip():
            continue
        header = _block(line)
        if header is not None:
            block = header
            if header.view != view:
                log.report(number, "unparsed_line", f"line {number}: a {header.view} header in {view} output")
            continue
        if line.startswith(("Error:", "Warning:", "Consumer group ")):
            log.report(number, "tool_message", f"line {number}: {line[:200]}")
            continue
        if block is None or block.view != view:
            log.report(number, "unparsed_line", f"line {number}: a row before any {view} header: {line[:200]!r}")
            continue
        cells = _cut(block, line)
        try:
            if cells is None:
                cells = _split(block, line)
            if cells is None:
                raise ValueError(f"{len(line.split())} cells for {len(block.names)} columns")
            rows.append(_group_row(block, cells))
        except (ValueError, KeyError) as exc:
            log.report(number, "unparsed_line", f"line {number}: {exc}: {line[:200]!r}")
    return rows


def parse_group_offsets(text: str, path: str = "", problems: ProblemLog | None = None) -> list[dict]:
    """Rows of ``kafka-consumer-groups --describe`` (offsets view; ``--verbose`` adds ``leader_epoch``); ``-`` is None.

    >>> text = ("\\nGROUP   TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG   CONSUMER-ID  HOST   CLIENT-ID\\n"
    ...         "slow    orders  0          198             525             327   -            -      -\\n")
    >>> row = parse_group_offsets(text)[0]
    >>> row["group"], row["partition"], row["lag"], row["consumer_id"], row["leader_epoch"]
    ('slow', 0, 327, None, None)
    """
    return _parse_groups("group_offsets", text, path, problems)


def parse_group_members(text: str, path: str = "", problems: ProblemLog | None = None) -> list[dict]:
    """Rows of ``kafka-consumer-groups --describe --members [--verbose]``, one per member.

    >>> text = ("GROUP   CONSUMER-ID   HOST         CLIENT-ID   #PARTITIONS     \\n"
    ...         "slow    c-1-abc       /127.0.0.1   c-1         10              \\n")
    >>> row = parse_group_members(text)[0]
    >>> row["consumer_id"], row["host"], row["partitions"], row["assignment"]
    ('c-1-abc', '/127.0.0.1', 10, None)
    """
    return _parse_groups("group_members", text, path, problems)


def parse_group_states(text: str, path: str = "", problems: ProblemLog | None = None) -> list[dict]:
    """Rows of ``kafka-consumer-groups --describe --state [--verbose]``, one per group.
    An empty ``ASSIGNMENT-STRATEGY`` (3.x for a group without members) is None.

    >>> text = ("GROUP   COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE   #MEMBERS\\n"
    ...         "slow    127.0.0.1:9092  (2)                            Empty   0\\n")
    >>> row = parse_group_states(text)[0]
    >>> row["coordinator_port"], row["coordinator_id"], row["assignment_strategy"], row["state"], row["members"]
    (9092, 2, None, 'Empty', 0)
    """
    return _parse_groups("group_states", text, path, problems)


# ---------------------------------------------------------------------------------------------
# kafka-metadata-quorum describe

_STATUS_KEYS = {"ClusterId": "cluster_id", "LeaderId": "leader_id", "LeaderEpoch": "leader_epoch",
                "HighWatermark": "high_watermark", "MaxFollowerLag": "max_follower_lag",
                "MaxFollowerLagTimeMs": "max_follower_lag_time_ms", "CurrentVoters": "voters",
                "CurrentObservers": "observers"}
_STATUS_LINE = re.compile(r"^(\w+):\s*(.*)$")


def _quorum_nodes(text: str) -> list[dict]:
    """``[{"id": 1, ...}, ...]`` (3.7+) or ``[1,2,3]`` (earlier) as a list of dicts with ``id``."""
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError("not a JSON list")
    out = []
    for item in value:
        if isinstance(item, bool):
            raise ValueError(f"bad node {item!r}")
        if isinstance(item, int):
            out.append({"id": item})
        elif isinstance(item, dict) and isinstance(item.get("id"), int):
            out.append(item)
        else:
            raise ValueError(f"bad node {item!r}")
    return out


def parse_quorum_status(text: str, path: str = "", problems: ProblemLog | None = None) -> list[dict]:
    """The one row of ``kafka-metadata-quorum describe --status`` (none for an empty capture).

    Keys: ``cluster_id, leader_id, leader_epoch, high_watermark, max_follower_lag,
    max_follower_lag_time_ms, voters, observers`` (node id lists) and ``voters_json``,
    ``observers_json`` (the printed lists: directory ids and endpoints where the version prints
    them). A field the text lacks (a truncated capture) is None and a ``missing_key`` problem.

    Examples
    --------
    >>> row = parse_quorum_status("ClusterId: abc\\nLeaderId: 2\\nLeaderEpoch: 5\\nHighWatermark: 70\\n"
    ...                           "MaxFollowerLag: 0\\nMaxFollowerLagTimeMs: 0\\n"
    ...                           'CurrentVoters: [{"id": 1, "endpoints": []}, {"id": 2}]\\n'
    ...                           "CurrentObservers: [4,5]\\n")[0]
    >>> row["leader_id"], row["voters"], row["observers"]
    (2, [1, 2], [4, 5])
    """
    log = _log(path, problems)
    row: dict[str, Any] = {k: None for k in (*_STATUS_KEYS.values(), "voters_json", "observers_json")}
    seen = False
    last = 0
    for number, line in _lines(text):
        last = number
        if not line.strip():
            continue
        m = _STATUS_LINE.match(line.strip())
        key = _STATUS_KEYS.get(m.group(1)) if m else None
        if m is None or key is None:
            log.report(number, "unparsed_line", f"line {number}: not a --status line: {line[:200]!r}")
            continue
        seen = True
        value = m.group(2).strip()
        try:
            if key == "cluster_id":
                row[key] = value
            elif key in ("voters", "observers"):
                nodes = _quorum_nodes(value)
                row[key] = [n["id"] for n in nodes]
                row[f"{key}_json"] = value
            else:
                row[key] = int(value)
        except ValueError as exc:
            log.report(number, "unparsed_line", f"line {number}: {m.group(1)}: {exc}: {value[:200]!r}")
    if not seen:
        return []
    for name, key in _STATUS_KEYS.items():
        if row[key] is None:
            log.report(last, "missing_key", f"--status output has no readable {name} (truncated?)")
    return [row]


_REPLICATION_KEYS = {"NodeId": "node_id", "DirectoryId": "directory_id", "LogEndOffset": "log_end_offset",
                     "Lag": "lag", "LastFetchTimestamp": "last_fetch_timestamp",
                     "LastCaughtUpTimestamp": "last_caught_up_timestamp", "Status": "status"}
#: Row keys of :func:`parse_quorum_replication`.
REPLICATION_ROW_KEYS = ("node_id", "directory_id", "log_end_offset", "lag", "last_fetch_timestamp",
                        "last_caught_up_timestamp", "last_fetch_ms_ago", "last_caught_up_ms_ago", "status")
_AGO = re.compile(r"^(\d+) ms ago$")


def parse_quorum_replication(text: str, path: str = "", problems: ProblemLog | None = None) -> list[dict]:
    """Rows of ``kafka-metadata-quorum describe --replication`` (tab-separated), one per node.

    Timestamps are epoch ms; ``--human-readable`` prints ``N ms ago`` instead, read into
    ``last_fetch_ms_ago`` / ``last_caught_up_ms_ago``. ``-1`` timestamps (never fetched) stay -1.

    Examples
    --------
    >>> text = ("NodeId\\tDirectoryId\\tLogEndOffset\\tLag\\tLastFetchTimestamp\\tLastCaughtUpTimestamp\\tStatus\\t\\n"
    ...         "2     \\tAAAAAAAAAAAAAAAAAAAAAA\\t149 \\t0 \\t1795290643075 \\t1795290643075 \\tLeader  \\t\\n")
    >>> row = parse_quorum_replication(text)[0]
    >>> row["node_id"], row["log_end_offset"], row["last_fetch_timestamp"], row["status"]
    (2, 149, 1795290643075, 'Leader')
    """
    log = _log(path, problems)
    rows: list[dict] = []
    header: list[str] | None = None
    for number, line in _lines(text):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.rstrip("\t").split("\t")]
        if header is None:
            if cells and cells[0] == "NodeId" and all(c in _REPLICATION_KEYS for c in cells):
                header = cells
            else:
                log.report(number, "unparsed_line", f"line {number}: no --replication header before {line[:200]!r}")
            continue
        if len(cells) != len(header):
            log.report(number, "unparsed_line", f"line {number}: {len(cells)} cells for {len(header)} columns")
            continue
        row: dict[str, Any] = dict.fromkeys(REPLICATION_ROW_KEYS)
        try:
            for name, cell in zip(header, cells, strict=True):
                key = _REPLICATION_KEYS[name]
                if key in ("directory_id", "status"):
                    row[key] = cell or None
                elif key.endswith("_timestamp") and _AGO.match(cell):
                    row[key.replace("_timestamp", "_ms_ago")] = int(_AGO.match(cell).group(1))  # type: ignore[union-attr]
                else:
                    row[key] = int(cell)
        except ValueError as exc:
            log.report(number, "unparsed_line", f"line {number}: {exc}: {line[:200]!r}")
            continue
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# kafka-get-offsets


def parse_get_offsets(text: str, path: str = "", problems: ProblemLog | None = None) -> list[dict]:
    """Rows of ``kafka-get-offsets.sh`` output, ``topic:partition:offset`` per line.

    An empty offset (none for the requested time) is None.

    Examples
    --------
    >>> parse_get_offsets("t:0:\\n")
    [{'topic': 't', 'partition': 0, 'offset': None}]
    """
    log = _log(path, problems)
    rows = []
    for number, line in _lines(text):
        if not line.strip():
            continue
        parts = line.strip().rsplit(":", 2)
        try:
            if len(parts) != 3 or not parts[0]:
                raise ValueError("not topic:partition:offset")
            rows.append({"topic": parts[0], "partition": int(parts[1]),
                         "offset": int(parts[2]) if parts[2] else None})
        except ValueError as exc:
            log.report(number, "unparsed_line", f"line {number}: {exc}: {line[:200]!r}")
    return rows


# ---------------------------------------------------------------------------------------------
# which view a capture is

#: Parser of each view: ``parser(text, path, problems) -> list of dict``.
PARSERS = {
    "topics_describe": topics_describe_rows,
    "group_offsets": parse_group_offsets,
    "group_members": parse_group_members,
    "group_states": parse_group_states,
    "quorum_status": parse_quorum_status,
    "quorum_replication": parse_quorum_replication,
    "get_offsets": parse_get_offsets,
}


def parse_tab_table(text: str, path: str = "", problems: ProblemLog | None = None) -> list[dict[str, str | None]]:
    """Rows of a table printed by Kafka's ``ToolsUtils.prettyPrintTable``: a header line, then one
    line per row, each cell padded to its column's width and followed by a tab. An empty cell is
    None; a line with another number of cells is a problem (its line number), not a row.

    Examples
    --------
    >>> parse_tab_table("TransactionalId\\tProducerId\\t\\npayments \\t7         \\t\\n")
    [{'TransactionalId': 'payments', 'ProducerId': '7'}]
    """
    log = _log(path, problems)
    header: list[str] | None = None
    rows: list[dict[str, str | None]] = []
    for number, line in _lines(text):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.rstrip("\n").split("\t")]
        if cells and cells[-1] == "":
            cells.pop()
        if header is None:
            header = cells
            continue
        if len(cells) != len(header):
            log.report(number, "unparsed_line", f"line {number}: {len(cells)} cells under a header of {len(header)}")
            continue
        rows.append({h: (c or None) for h, c in zip(header, cells, strict=True)})
    return rows


def tool_view(tool: str, args: Sequence[str]) -> str | None:
    """The view a tool run prints, from its name and arguments; None for runs that print no table.

    ``tool`` is a script name (``kafka-topics``, ``kafka-topics.sh``, ``kafka-consumer-groups``...).

    Examples
    --------
    >>> tool_view("kafka-consumer-groups", ["--bootstrap-server", "b:9092", "--describe", "--all-groups", "--members"])
    'group_members'
    >>> tool_view("kafka-topics", ["--create", "--topic", "t"]) is None
    True
    """
    name = tool.rsplit("/", 1)[-1].removesuffix(".sh").removesuffix(".bat")
    flags = set(args)
    if name == "kafka-topics" and "--describe" in flags:
        return "topics_describe"
    if name == "kafka-consumer-groups" and "--describe" in flags:
        if "--members" in flags:
            return "group_members"
        if "--state" in flags:
            return "group_states"
        return "group_offsets"
    if name == "kafka-metadata-quorum" and "describe" in flags:
        if "--replication" in flags:
            return "quorum_replication"
        if "--status" in flags:
            return "quorum_status"
    if name == "kafka-get-offsets":
        return "get_offsets"
    return None


_GET_OFFSETS_LINE = re.compile(r"^[A-Za-z0-9._-]+:\d+:-?\d*$")


def recognise_view(text: str) -> str | None:
    """The view of a capture, from its first non-blank line; None when it is none of :data:`VIEWS`.

    Examples
    --------
    >>> recognise_view("\\nGROUP  COORDINATOR (ID)  ASSIGNMENT-STRATEGY  STATE  #MEMBERS\\n")
    'group_states'
    >>> recognise_view("Created topic orders.\\n") is None
    True
    """
    for line in text.splitlines():
        if not line.strip():
            continue
        view = group_header_view(line)
        if view is not None:
            return view
        stripped = line.strip()
        if re.match(r"^Topic:\s*\S+\t", stripped + "\t") and ("Partition" in line):
            return "topics_describe"
        if stripped.startswith("ClusterId:"):
            return "quorum_status"
        if stripped.split("\t", 1)[0].strip() == "NodeId":
            return "quorum_replication"
        if _GET_OFFSETS_LINE.match(stripped):
            return "get_offsets"
        return None
    return None


_CAPTURE_NAME = re.compile(r"^(\d{13})-")


def capture_time_from_name(name: str) -> int | None:
    """Epoch ms at the start of a capture's file name (``1795408283358-kafka-consumer-groups.txt``).

    >>> capture_time_from_name("1795408283358-kafka-consumer-groups.txt")
    1795408283358
    >>> capture_time_from_name("describe.txt") is None
    True
    """
    m = _CAPTURE_NAME.match(name)
    return int(m.group(1)) if m else None
