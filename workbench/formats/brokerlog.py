"""Partition-state lines of Kafka's broker text logs (``server.log``, ``state-change.log``, ``controller.log``).

A ZooKeeper-era cluster keeps no metadata log: its partition state history is what the brokers
and the controller wrote to their log4j files. A KRaft cluster's brokers write the same kind of
lines beside the metadata log. :func:`read_events` turns the text into one event per line that
changes or reports a partition's state or a server's life, whatever the release (0.10 to 4.x):

================== ==============================================================================
kind               line (``logger``)
================== ==============================================================================
``isr_updated``    the leader's ISR change took effect: ``ISR updated to 1,2 and version updated to
                   5`` (2.7+), ``… zkVersion updated to [5]`` (before), ``(under-min-isr)`` (4.x)
``isr_shrink``     ``Shrinking ISR from 1,2,3 to 1,2`` (0.10: ``Shrinking ISR for partition [t,0]``)
``isr_expand``     ``Expanding ISR from 1,2 to 1,2,3``
``leader_start``   a broker became leader: ``Leader t-0 … starts at leader epoch 3 … ISR [1,2]``
``follower_start`` a broker became follower: ``Follower t-0 starts at leader epoch 3 …``
``leader_kept``    a leader saw its partition's new state and stayed leader (``Skipped the
                   become-leader state change for t-0 … PartitionRegistration(…)``, KRaft)
``follower_kept``  the same for a follower
``partition_state`` the ZooKeeper controller moved a partition: ``Changed partition t-0 from
                   OfflinePartition to OnlinePartition with state LeaderAndIsr(leader=1, …)``
``replica_offline`` the ZooKeeper controller took an offline replica out of the ISR (``Partition t-0
                   state changed to (Leader:1,ISR:1,2,…,ZkVersion:7,…) after removing replica 3``)
``log_created``    a broker created a partition's log, with the topic's properties (``properties``:
                   the overrides from 3.0, every effective setting before)
``controller``     a broker became the ZooKeeper-mode controller (``… successfully elected as the
                   controller. Epoch incremented to 7``)
``server``         a broker's life: ``starting``, ``started``, ``stopping``, ``stopped``
                   (ZooKeeper mode's ``KafkaServer``, KRaft's ``BrokerServer`` transitions)
``log_loaded``     a broker opened a partition's log (at start-up, or when it created it): ``offset``
                   is its log end then (``Completed load of Log(… logEndOffset=800)`` 2.8+, ``…
                   Completed load of log with 1 segments, log start offset 0 and log end offset 800``
                   before, ``Completed load of log t-0 with 1 log segments and log end offset 800`` 0.10)
``truncated``      a broker cut a partition's log back: ``offset`` is where the log now ends
                   (``[UnifiedLog partition=t-0, dir=…] Truncating to offset 500``; ``[Log …]`` 1.0-3.0;
                   ``Truncating log t-0 to offset 500.`` 0.10-0.11); a truncation that had no effect
                   (``Truncating to 500 has no effect …``) is none
================== ==============================================================================

Times are log4j's ``[yyyy-MM-dd HH:mm:ss,SSS]``, which carries no zone: they are read in the zone
given (UTC unless told). Lines that are not log4j records (stack traces, config dumps) and records
of other kinds are skipped; an undecodable byte is replaced and reported once per file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from workbench.formats.problems import ProblemLog

__all__ = ["EVENT_KINDS", "parse_line", "read_events"]

#: Every ``kind`` an event can have, in the order of the module docstring.
EVENT_KINDS = ("isr_updated", "isr_shrink", "isr_expand", "leader_start", "follower_start", "leader_kept",
               "follower_kept", "partition_state", "replica_offline", "log_created", "controller", "server",
               "log_loaded", "truncated")

# [2024-05-01 13:00:00,123] INFO message (logger); ISO-like and dotted milliseconds also accepted
_RECORD = re.compile(
    r"^\[?(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<clock>\d{2}:\d{2}:\d{2})(?:[,.](?P<ms>\d{1,3}))?\]?\s+"
    r"(?P<level>TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s+(?P<msg>.*?)(?:\s+\((?P<logger>[\w.$-]+)\))?\s*$"
)
_INTS = re.compile(r"-?\d+")
# who is speaking: "[Partition t-0 broker=1]", "Partition [t,0] on broker 1:", "[Broker id=4]", ...
_PARTITION_NEW = re.compile(r"\[Partition (?P<tp>\S+) broker=(?P<node>\d+)\]")
_PARTITION_OLD = re.compile(r"Partition \[(?P<topic>[^,\]]+),(?P<part>\d+)\] on broker (?P<node>\d+):")
_BROKER = re.compile(r"\[Broker id=(?P<node>\d+)(?: epoch=-?\d+)?\]")
_CONTROLLER = re.compile(r"\[Controller id=(?P<node>\d+)(?: epoch=(?P<epoch>\d+))?\]")

_ISR_UPDATED = re.compile(
    r"ISR updated to \[?(?P<isr>[\d,\s]*)\]?\s*(?:\([\w-]+\))?\s*and (?:zk)?[vV]ersion updated to \[?(?P<ver>-?\d+)\]?")
_ISR_CHANGE = re.compile(
    r"(?P<verb>Shrinking|Expanding) ISR (?:for partition \[[^\]]*\] )?from (?P<old>[\d,\s]*?) to (?P<new>[\d,\s]*?)"
    r"(?:\.|$|\s)")
_LEADER_START = re.compile(
    r"Leader (?P<tp>\S+?)(?: with topic id \S+)? starts at leader epoch (?P<epoch>-?\d+) from offset (?P<offset>-?\d+)"
    r"(?: with partition epoch (?P<pepoch>-?\d+))?(?:,)? (?:with )?high watermark (?P<hw>-?\d+)"
    r"(?:,? ISR \[(?P<isr>[\d,\s]*)\])?")
# 2.x-3.x ZooKeeper brokers: "[Partition t-0 broker=1] t-0 starts at leader epoch 1 from offset 5
# with high watermark 5 ISR [1,2] ..."
_PARTITION_LEADER = re.compile(
    r"\] (?P<tp>\S+) starts at [lL]eader [eE]poch (?P<epoch>-?\d+) from offset (?P<offset>-?\d+)"
    r"(?: with high watermark (?P<hw>-?\d+))?(?:\.? ISR \[(?P<isr>[\d,\s]*)\])?")
_FOLLOWER_START = re.compile(
    r"Follower (?P<tp>\S+?)(?: with topic id \S+)? starts at leader epoch (?P<epoch>-?\d+) "
    r"from offset (?P<offset>-?\d+)"
    r"(?: with partition epoch (?P<pepoch>-?\d+))?(?: and high watermark (?P<hw>-?\d+))?"
    r"(?:\. Current leader is (?P<leader>-?\d+))?")
_SKIPPED = re.compile(
    r"Skipped the become-(?P<role>leader|follower) state change for (?P<tp>\S+?)(?: with topic id \S+)?,"
    r" partition registration PartitionRegistration\((?P<state>.*?)\) and isNew")
_REGISTRATION = {name: re.compile(rf"\b{key}=(-?\d+)") for name, key in (
    ("leader", "leader"), ("leader_epoch", "leaderEpoch"), ("partition_epoch", "partitionEpoch"))}
_REGISTRATION_LISTS = {name: re.compile(rf"\b{key}=\[(?P<ids>[\d,\s]*)\]") for name, key in (
    ("isr", "isr"), ("replicas", "replicas"))}
_CHANGED_PARTITION = re.compile(
    r"Changed partition (?P<tp>\S+?) (?:state )?from (?P<old>\w+) to (?P<new>\w+)"
    r"(?: with state (?P<state>.*)| with assigned replicas (?P<replicas>[\d,\s]*))?$")
# 1.1+ controller: "Partition t-0 state changed to (Leader:1,ISR:1,2,LeaderRecoveryState:RECOVERED,LeaderEpoch:3,
# ZkVersion:7,ControllerEpoch:2) after removing replica 3 from the ISR as part of transition to OfflineReplica"
_STATE_CHANGED = re.compile(
    r"Partition (?P<tp>\S+) state changed to \(Leader:(?P<leader>-?\d+),ISR:(?P<isr>[\d,]*),"
    r"(?:LeaderRecoveryState:\w+,)?LeaderEpoch:(?P<epoch>-?\d+),(?:ZkVersion|PartitionEpoch):(?P<version>-?\d+)")
_CREATED = re.compile(r"Created log for partition (?:\[(?P<topic>[^,\]]+),(?P<part>\d+)\]|(?P<tp>\S+)) in \S+"
                      r"(?: with properties \{(?P<props>.*)\})?")
_PROPERTY = re.compile(r"([a-z][\w.]*)(?: ->\s?|=)(.*?)(?=, [a-z][\w.]*(?: ->|=)|$)")
# 0.10-1.x: "Controller 1 epoch 2 changed partition [t,0] state from OfflinePartition to OnlinePartition with leader 1"
_OLD_CHANGED_PARTITION = re.compile(
    r"changed partition \[(?P<topic>[^,\]]+),(?P<part>\d+)\] (?:state )?from (?P<old>\w+) to (?P<new>\w+)"
    r"(?: with leader (?P<leader>-?\d+))?")
_LEADER_AND_ISR = {
    "leader": re.compile(r"\bleader[=:](-?\d+)"),
    "leader_epoch": re.compile(r"\bleaderEpoch[=:](-?\d+)"),
    "partition_epoch": re.compile(r"\b(?:zkVersion|partitionEpoch)[=:](-?\d+)"),
}
_LAI_ISR = re.compile(r"\bisr[=:](?:List\()?\[?(?P<isr>[\d,\s]*)")
_LAI_BROKER_STATES = re.compile(r"isrWithBrokerEpoch=List\((?P<body>.*?)\)\)")
_ELECTED = re.compile(
    r"(?P<node>\d+) successfully elected as (?:the )?controller\.?(?: Epoch incremented to (?P<epoch>\d+))?")
# 0.10-0.11: "Controller 1 incremented epoch to 2 (kafka.controller.ControllerEpochListener)"
_OLD_ELECTED = re.compile(r"^Controller (?P<node>\d+) incremented epoch to (?P<epoch>\d+)")
# "[KafkaServer id=1] started" (1.0+), "[Kafka Server 1], started" (0.10-0.11),
# KRaft's "[BrokerServer id=4] Transition from …"
_SERVER = re.compile(r"\[(?P<cls>KafkaServer|BrokerServer|Kafka Server) (?:id=)?(?P<node>\d+)\],? (?P<what>.*)$")
_TRANSITIONS = {"SHUTDOWN to STARTING": "starting", "STARTING to STARTED": "started",
                "STARTED to SHUTTING_DOWN": "stopping", "SHUTTING_DOWN to SHUTDOWN": "stopped"}
_ZK_SERVER = {"starting": "starting", "started": "started", "shutting down": "stopping",
              "shut down completed": "stopped"}
# a partition's log speaking: "[UnifiedLog partition=t-0, dir=/d]" (3.0+), "[Log partition=t-0, dir=/d]"
# (1.0-2.8), "[LogLoader partition=t-0, dir=/d]" (3.0+)
_LOG_SPEAKER = re.compile(r"\[(?:Unified|Local)?Log(?:Loader)? partition=(?P<tp>[^,\]\s]+), dir=")
# 2.8+ LogManager: "Completed load of Log(dir=/d/t-0, topicId=…, topic=t, partition=0, …, logEndOffset=800) with …"
_LOADED = re.compile(r"Completed load of Log\((?P<body>[^)]*)\)")
_LOADED_FIELDS = {name: re.compile(rf"\b{name}=(?P<v>[^,\s)]+)") for name in ("topic", "partition", "logEndOffset")}
# before 2.8: "[Log partition=t-0, dir=/d] Completed load of log with 1 segments, log start offset 0 and log end
# offset 800 in 5 ms"; 0.10-1.1: "Completed load of log t-0 with 1 log segments(, log start offset 0) and log end
# offset 800 in 5 ms"
_LOADED_OLD = re.compile(r"Completed load of log (?:(?P<tp>\S+) )?with \d+ (?:log )?segments.*?"
                         r"\blog[ -]end[ -]offset (?P<end>-?\d+)")
_TRUNCATED = re.compile(r"Truncating (?:log (?P<tp>\S+) )?to offset (?P<offset>-?\d+)")
# cheap substring gate: a line holding none of these is not read further
_HINTS = ("ISR", "starts at", "Skipped the become", "hanged partition", "state changed to", "Created log",
          "elected as", "incremented epoch", "Server", "Completed load of", "to offset")


def _ints(text: str | None) -> list[int] | None:
    return None if text is None else [int(x) for x in _INTS.findall(text)]


def _topic_partition(tp: str) -> tuple[str, int] | None:
    topic, sep, part = tp.rpartition("-")
    if not sep or not topic or not part.isdigit():
        return None
    return topic, int(part)


def _leader_and_isr(state: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, pattern in _LEADER_AND_ISR.items():
        m = pattern.search(state)
        if m:
            out[name] = int(m.group(1))
    states = _LAI_BROKER_STATES.search(state)
    if states:
        out["isr"] = [int(x) for x in re.findall(r"brokerId=(-?\d+)", states.group("body"))]
    else:
        m = _LAI_ISR.search(state)
        if m:
            out["isr"] = _ints(m.group("isr"))
    return out


def parse_line(message: str) -> dict[str, Any] | None:
    """The event of one log4j message (the text after the level), or None when it is not one.

    >>> e = parse_line("[Partition orders-1 broker=4] ISR updated to 4,6  and version updated to 4")
    >>> e["kind"], e["topic"], e["partition"], e["leader"], e["isr"], e["partition_epoch"]
    ('isr_updated', 'orders', 1, 4, [4, 6], 4)
    >>> parse_line("Partition [t,0] on broker 1: Shrinking ISR for partition [t,0] from 1,2,3 to 1,2")["isr_before"]
    [1, 2, 3]
    """
    if not any(h in message for h in _HINTS):
        return None
    speaker = _PARTITION_NEW.search(message)
    topic = partition = node = None
    if speaker:
        tp = _topic_partition(speaker.group("tp"))
        if tp:
            topic, partition = tp
        node = int(speaker.group("node"))
    else:
        old = _PARTITION_OLD.search(message)
        if old:
            topic, partition, node = old.group("topic"), int(old.group("part")), int(old.group("node"))
    event: dict[str, Any] | None = None
    if "ISR updated to" in message and (m := _ISR_UPDATED.search(message)):
        event = {"kind": "isr_updated", "leader": node, "isr": _ints(m.group("isr")),
                 "partition_epoch": int(m.group("ver"))}
    elif " ISR " in message and (m := _ISR_CHANGE.search(message)):
        event = {"kind": "isr_shrink" if m.group("verb") == "Shrinking" else "isr_expand", "leader": node,
                 "isr_before": _ints(m.group("old")), "isr": _ints(m.group("new"))}
    elif "starts at" in message:
        event = _starts(message, node)
        if event is not None and event.pop("tp", None) is not None:
            topic, partition = event.pop("topic"), event.pop("partition")
    elif "Skipped the become" in message and (m := _SKIPPED.search(message)):
        tp = _topic_partition(m.group("tp"))
        if tp is None:
            return None
        topic, partition = tp
        event = {"kind": f"{m.group('role')}_kept"}
        for name, pattern in _REGISTRATION.items():
            found = pattern.search(m.group("state"))
            event[name] = int(found.group(1)) if found else None
        for name, pattern in _REGISTRATION_LISTS.items():
            found = pattern.search(m.group("state"))
            event[name] = _ints(found.group("ids")) if found else None
    elif "state changed to (" in message and (m := _STATE_CHANGED.search(message)):
        tp = _topic_partition(m.group("tp"))
        if tp is None:
            return None
        topic, partition = tp
        event = {"kind": "replica_offline", "leader": int(m.group("leader")), "isr": _ints(m.group("isr")),
                 "leader_epoch": int(m.group("epoch")), "partition_epoch": int(m.group("version"))}
    elif "Created log for" in message and (m := _CREATED.search(message)):
        if m.group("tp") is not None:
            tp = _topic_partition(m.group("tp"))
            if tp is None:
                return None
            topic, partition = tp
        else:
            topic, partition = m.group("topic"), int(m.group("part"))
        props = m.group("props")
        event = {"kind": "log_created",
                 "properties": None if props is None else {k: v.strip() for k, v in _PROPERTY.findall(props.strip())}}
    elif "hanged partition" in message:
        event = _changed(message)
        if event is not None:
            topic, partition = event.pop("topic"), event.pop("partition")
    elif "elected as" in message and (m := _ELECTED.search(message)):
        event = {"kind": "controller", "node_id": int(m.group("node")),
                 "controller_epoch": None if m.group("epoch") is None else int(m.group("epoch"))}
    elif "incremented epoch" in message and (m := _OLD_ELECTED.search(message)):
        event = {"kind": "controller", "node_id": int(m.group("node")), "controller_epoch": int(m.group("epoch"))}
    elif "Completed load of" in message:
        event = _loaded(message)
        if event is not None:
            topic, partition = event.pop("topic"), event.pop("partition")
    elif "Truncating" in message and (m := _TRUNCATED.search(message)):
        speaker_log = _LOG_SPEAKER.search(message)
        tp = _topic_partition(m.group("tp") or (speaker_log.group("tp") if speaker_log else ""))
        if tp is None:
            return None
        topic, partition = tp
        event = {"kind": "truncated", "offset": int(m.group("offset"))}
    elif "Server" in message and (m := _SERVER.search(message)):
        what = m.group("what").strip().rstrip(".")
        if m.group("cls") == "BrokerServer":   # KRaft: its state machine's transitions
            state = next((s for t, s in _TRANSITIONS.items() if f"Transition from {t}" in what), None)
        else:
            state = _ZK_SERVER.get(what.lower())
        if state is not None:
            event = {"kind": "server", "node_id": int(m.group("node")), "state_to": state}
    if event is None:
        return None
    event.setdefault("node_id", node)
    if topic is not None:
        event["topic"], event["partition"] = topic, partition
    controller = _CONTROLLER.search(message)
    if controller:
        event["node_id"] = int(controller.group("node"))
        if controller.group("epoch") is not None:
            event.setdefault("controller_epoch", int(controller.group("epoch")))
    elif event["node_id"] is None and (broker := _BROKER.search(message)):
        event["node_id"] = int(broker.group("node"))
    return event


def _starts(message: str, node: int | None) -> dict[str, Any] | None:
    broker = _BROKER.search(message)
    speaker = int(broker.group("node")) if broker else node
    for pattern, kind in ((_LEADER_START, "leader_start"), (_FOLLOWER_START, "follower_start"),
                          (_PARTITION_LEADER, "leader_start")):
        m = pattern.search(message)
        if not m:
            continue
        tp = _topic_partition(m.group("tp"))
        if tp is None:
            return None
        groups = m.groupdict()
        leader = speaker if kind == "leader_start" else (None if groups.get("leader") is None
                                                         else int(groups["leader"]))
        return {"kind": kind, "tp": m.group("tp"), "topic": tp[0], "partition": tp[1], "node_id": speaker,
                "leader": leader, "leader_epoch": int(m.group("epoch")),
                "partition_epoch": None if groups.get("pepoch") is None else int(groups["pepoch"]),
                "isr": _ints(groups.get("isr")), "offset": int(m.group("offset")),
                "high_watermark": None if groups.get("hw") is None else int(groups["hw"])}
    return None


def _loaded(message: str) -> dict[str, Any] | None:
    m = _LOADED.search(message)
    if m:
        fields = {k: f.search(m.group("body")) for k, f in _LOADED_FIELDS.items()}
        if any(v is None for v in fields.values()):
            return None
        try:
            partition, end = int(fields["partition"].group("v")), int(fields["logEndOffset"].group("v"))
        except ValueError:
            return None
        return {"kind": "log_loaded", "topic": fields["topic"].group("v"), "partition": partition, "offset": end}
    m = _LOADED_OLD.search(message)
    if not m:
        return None
    speaker = _LOG_SPEAKER.search(message)
    tp = _topic_partition(m.group("tp") or (speaker.group("tp") if speaker else ""))
    if tp is None:
        return None
    return {"kind": "log_loaded", "topic": tp[0], "partition": tp[1], "offset": int(m.group("end"))}


def _changed(message: str) -> dict[str, Any] | None:
    m = _CHANGED_PARTITION.search(message)
    if m:
        tp = _topic_partition(m.group("tp"))
        if tp is None:
            return None
        event = {"kind": "partition_state", "topic": tp[0], "partition": tp[1], "state_from": m.group("old"),
                 "state_to": m.group("new")}
        if m.group("state"):
            event.update(_leader_and_isr(m.group("state")))
        if m.group("replicas") is not None:
            event["replicas"] = _ints(m.group("replicas"))
        return event
    m = _OLD_CHANGED_PARTITION.search(message)
    if m:
        return {"kind": "partition_state", "topic": m.group("topic"), "partition": int(m.group("part")),
                "state_from": m.group("old"), "state_to": m.group("new"),
                "leader": None if m.group("leader") is None else int(m.group("leader"))}
    return None


def read_events(lines: Iterable[str], path: str = "", log: ProblemLog | None = None, *,
                zone: tzinfo = UTC) -> Iterator[dict[str, Any]]:
    """Every event of a log4j text, in line order: the parsed fields and ``time`` (aware, in
    ``zone``), ``level``, ``logger``, ``line_no`` (from 1) and ``line`` (the record's first line).

    >>> text = ["[2026-12-03 16:09:24,001] INFO [Partition payments-1 broker=4] ISR updated to 4,6 "
    ...         "(under-min-isr) and version updated to 5 (kafka.cluster.Partition)"]
    >>> e = next(read_events(text))
    >>> e["time"].isoformat(), e["isr"], e["logger"]
    ('2026-12-03T16:09:24.001000+00:00', [4, 6], 'kafka.cluster.Partition')
    """
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if not line or line[0] not in "[0123456789" or not any(h in line for h in _HINTS):
            continue
        m = _RECORD.match(line)
        if not m:
            continue
        event = parse_line(m.group("msg"))
        if event is None:
            continue
        try:
            moment = datetime.fromisoformat(f"{m.group('date')}T{m.group('clock')}").replace(tzinfo=zone)
        except ValueError:   # a record of a partition's state whose time is no date: said, not dropped silently
            if log is not None:
                log.report(0, "bad_value", f"{path or 'log'} line {number}: {m.group('date')} {m.group('clock')} "
                                           "is not a time; the line is skipped")
            continue
        ms = m.group("ms")
        if ms:
            moment += timedelta(milliseconds=int(ms.ljust(3, "0")))
        event.update(time=moment, level=m.group("level"), logger=m.group("logger"), line_no=number, line=line)
        yield event
