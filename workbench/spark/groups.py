"""``groups``: one row per group record of ``__consumer_offsets`` (everything but offset commits).

Name
    ``kafka_groups``.
Reads
    Every segment of ``__consumer_offsets`` in every node's log dirs (each replica, as
    ``offsets``); offset commits and transaction markers are left to ``offsets``.
Options
    ``files``, ``strict``.
Partitioning
    Each file read whole; small files are packed into one input partition (``pack_bytes``,
    ``pack_files``: :mod:`workbench.spark.source`).

Rows
    ``record_kind`` names the record type of the key (``record_type``, its number):

    * ``GroupMetadata``: a classic-protocol group's state after a rebalance or an expiry:
      ``protocol_type`` (``consumer``, ``connect``, ...; empty for a group that only commits
      offsets), ``generation``, ``protocol`` (the assignor), ``leader``,
      ``current_state_timestamp`` (value version 2+), and ``members``: one struct per member
      with ``member_id``, ``group_instance_id``, ``client_id``, ``client_host``,
      ``rebalance_timeout_ms``, ``session_timeout_ms``, and for ``consumer`` groups the topics
      of its subscription (``subscribed_topics``) and its assignment (``assigned_partitions``:
      ``topic``, ``partitions``). An empty member list is an empty group. The classic format has
      no state field: a group's state is inferred from its members and tombstone.
    * KIP-848 consumer groups (Kafka 3.7+ with ``group.protocol=consumer``), and likewise the
      ``ShareGroup*`` (KIP-932) and ``StreamsGroup*`` (KIP-1071) records:
      ``ConsumerGroupMetadata`` (``epoch`` = the group epoch), ``ConsumerGroupMemberMetadata``
      (``member_id``, ``instance_id``, ``rack_id``, ``client_id``, ``client_host``,
      ``subscribed_topics``, ``subscribed_topic_regex``, ``rebalance_timeout_ms``,
      ``server_assignor``, ``session_timeout_ms`` for a member that joined with the classic
      protocol), ``ConsumerGroupTargetAssignmentMetadata`` (``epoch`` = the assignment epoch),
      ``ConsumerGroupTargetAssignmentMember`` (``assigned_partitions``: the target, by
      ``topic_id``), ``ConsumerGroupCurrentMemberAssignment`` (``epoch`` = the member epoch,
      ``previous_epoch``, ``member_state``, ``assigned_partitions``,
      ``partitions_pending_revocation``), ``ConsumerGroupPartitionMetadata``,
      ``ConsumerGroupRegularExpression`` (``regular_expression``), ``StreamsGroupTopology``
      (``epoch`` = the topology epoch), ...
    * ``Unknown``: a record type this version of the workbench does not know (``record_type``
      says which; also a ``problems`` row).

    Every row has ``fields``: the whole value as JSON, in the form
    ``kafka-dump-log.sh --offsets-decoder`` prints it (consumer-protocol subscriptions and
    assignments decoded), so a field without a column of its own is still at hand.
    ``deleted`` marks a tombstone (null value): the group, member or assignment was removed.

Examples
--------
>>> tables = workbench.load(workbench.open_bundle("bundle/"), spark)                    # doctest: +SKIP
>>> (tables.groups.where("record_kind = 'GroupMetadata'")                                # doctest: +SKIP
...  .select("group", "offset", "generation", "protocol", F.size("members")).show())
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from workbench.spark.offsets import (
    coordinator_records,
    is_commit_key,
    offsets_files,
    record_base,
    report_unreadable_key,
)
from workbench.spark.registry import register_table
from workbench.spark.source import ArtifactReader, ArtifactSource, FilePartition, ms_to_us

if TYPE_CHECKING:
    from workbench.formats.coordinator import CoordinatorRecord
    from workbench.formats.problems import ProblemLog

_PARTITIONS = "array<struct<topic_id:string,topic:string,partitions:array<int>>>"
_MEMBER = (
    "struct<member_id:string,group_instance_id:string,client_id:string,client_host:string,"
    f"rebalance_timeout_ms:int,session_timeout_ms:int,subscribed_topics:array<string>,assigned_partitions:{_PARTITIONS}>"
)
GROUPS_SCHEMA = (
    "node_id int, path string, offsets_partition int, batch_position long, offset long, timestamp timestamp, "
    "record_kind string, record_type int, value_version int, deleted boolean, group string, member_id string, "
    "protocol_type string, generation int, protocol string, leader string, current_state_timestamp timestamp, "
    f"members array<{_MEMBER}>, epoch int, previous_epoch int, member_state string, instance_id string, "
    "rack_id string, client_id string, client_host string, rebalance_timeout_ms int, session_timeout_ms int, "
    "subscribed_topics array<string>, subscribed_topic_regex string, server_assignor string, "
    f"regular_expression string, assigned_partitions {_PARTITIONS}, partitions_pending_revocation {_PARTITIONS}, "
    "fields string, error string"
)

#: The value field that is the ``epoch`` column, by record kind suffix.
_EPOCH_FIELDS = {"GroupMetadata": "epoch", "TargetAssignmentMetadata": "assignmentEpoch",
                 "CurrentMemberAssignment": "memberEpoch", "Topology": "epoch"}


def _partitions(items: list[dict] | None, *, by_id: bool) -> list[dict] | None:
    if items is None:
        return None
    if by_id:
        return [{"topic_id": p.get("topicId"), "topic": None, "partitions": p.get("partitions")} for p in items]
    return [{"topic_id": None, "topic": p.get("topic"), "partitions": p.get("partitions")} for p in items]


def classic_members(value: dict, report: Any) -> list[dict]:
    """The ``members`` of a ``GroupMetadata`` value; ``report(detail)`` hears of an undecodable blob.

    Examples
    --------
    >>> from workbench.formats.coordinator import encode_consumer_subscription
    >>> m = {"memberId": "m1", "groupInstanceId": None, "clientId": "c", "clientHost": "/h", "rebalanceTimeout": 5,
    ...      "sessionTimeout": 10, "subscription": encode_consumer_subscription({"topics": ["t"]}), "assignment": b""}
    >>> classic_members({"protocolType": "consumer", "members": [m]}, print)[0]["subscribed_topics"]
    ['t']
    """
    from workbench.errors import CorruptDataError
    from workbench.formats.coordinator import decode_consumer_assignment, decode_consumer_subscription

    consumer = value.get("protocolType") == "consumer"
    out = []
    for m in value.get("members") or []:
        topics = assigned = None
        if consumer:
            try:
                if m.get("subscription"):
                    topics = decode_consumer_subscription(m["subscription"])[1]["topics"]
                if m.get("assignment"):
                    got = decode_consumer_assignment(m["assignment"])[1]["assignedPartitions"]
                    assigned = _partitions(got, by_id=False)
            except CorruptDataError as exc:
                report(f"member {m.get('memberId')!r}: consumer protocol blob: {exc.detail}")
        out.append({
            "member_id": m.get("memberId"), "group_instance_id": m.get("groupInstanceId"),
            "client_id": m.get("clientId"), "client_host": m.get("clientHost"),
            "rebalance_timeout_ms": m.get("rebalanceTimeout"), "session_timeout_ms": m.get("sessionTimeout"),
            "subscribed_topics": topics, "assigned_partitions": assigned,
        })
    return out


def group_columns(rec: CoordinatorRecord, report: Any) -> dict[str, Any]:
    """The typed columns of one decoded group record (see the module docstring).

    Examples
    --------
    >>> from workbench.formats.coordinator import decode_offsets_record, encode_offsets_record
    >>> rec = decode_offsets_record(*encode_offsets_record("ConsumerGroupCurrentMemberAssignment",
    ...     {"groupId": "g", "memberId": "m"}, {"memberEpoch": 4, "previousMemberEpoch": 3, "state": 1,
    ...      "assignedPartitions": [], "partitionsPendingRevocation": []}))
    >>> cols = group_columns(rec, print)
    >>> cols["epoch"], cols["previous_epoch"], cols["member_state"], cols["fields"][:15]
    (4, 3, 'UNREVOKED_PARTITIONS', '{"memberEpoch":')
    """
    from workbench.formats.coordinator import member_state_name, offsets_dump_payload

    key, value, name = rec.key, rec.value, rec.name
    row: dict[str, Any] = {
        "record_kind": name, "record_type": rec.record_type, "value_version": rec.value_version,
        "deleted": rec.tombstone, "group": key.get("group", key.get("groupId")), "member_id": key.get("memberId"),
        "regular_expression": key.get("regularExpression"),
    }
    if value is None:
        return row
    payload = offsets_dump_payload(rec)
    prefix = f'{{"version":"{rec.value_version}","data":'
    if payload is not None and payload.startswith(prefix):
        row["fields"] = payload[len(prefix):-1]
    if name == "GroupMetadata":
        row.update(protocol_type=value.get("protocolType"), generation=value.get("generation"),
                   protocol=value.get("protocol"), leader=value.get("leader"),
                   current_state_timestamp=ms_to_us(value.get("currentStateTimestamp")),
                   members=classic_members(value, report))
        return row
    for suffix, field in _EPOCH_FIELDS.items():
        if name.endswith(suffix) and field in value:
            row["epoch"] = value[field]
    if "previousMemberEpoch" in value:
        row["previous_epoch"] = value["previousMemberEpoch"]
    if "state" in value and name.endswith("CurrentMemberAssignment"):
        row["member_state"] = member_state_name(name, value["state"])
    if name.endswith("MemberMetadata"):
        classic = value.get("classicMemberMetadata")
        row.update(instance_id=value.get("instanceId"), rack_id=value.get("rackId"), client_id=value.get("clientId"),
                   client_host=value.get("clientHost"), rebalance_timeout_ms=value.get("rebalanceTimeoutMs"),
                   subscribed_topics=value.get("subscribedTopicNames"),
                   subscribed_topic_regex=value.get("subscribedTopicRegex"),
                   server_assignor=value.get("serverAssignor"),
                   session_timeout_ms=classic.get("sessionTimeoutMs") if classic else None)
    if name.endswith("TargetAssignmentMember") and "topicPartitions" in value:
        row["assigned_partitions"] = _partitions(value["topicPartitions"], by_id=True)
    if "assignedPartitions" in value:
        row["assigned_partitions"] = _partitions(value["assignedPartitions"], by_id=True)
    if "partitionsPendingRevocation" in value:
        row["partitions_pending_revocation"] = _partitions(value["partitionsPendingRevocation"], by_id=True)
    return row


def _report(log: ProblemLog, position: int, what: str, detail: str) -> None:
    log.report(position, "decode_error", f"{what}: {detail}")


class GroupsReader(ArtifactReader):
    """Group records of ``__consumer_offsets`` segments (all record types but offset commits)."""

    schema_ddl = GROUPS_SCHEMA

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        from workbench.formats.coordinator import decode_offsets_record

        for info, record in coordinator_records(partition, log, self.strict):
            if info.is_control:
                continue  # transaction markers: the offsets table
            if is_commit_key(record.key):
                continue  # offset commits: the offsets table
            rec = decode_offsets_record(record.key, record.value)
            if rec.record_type == -1:
                report_unreadable_key(log, info.position, record.offset, rec.error)
                continue

            report = partial(_report, log, info.position, f"{rec.name} at offset {record.offset}")
            row = record_base(partition, info, record)
            row.update(group_columns(rec, report))
            if rec.error:
                row["error"] = rec.error
                report(rec.error)
            yield row


class GroupsSource(ArtifactSource):
    """``spark.read.format("kafka_groups")``: one row per group record of ``__consumer_offsets``."""

    reader_class = GroupsReader

    @classmethod
    def name(cls) -> str:
        return "kafka_groups"


TABLE = register_table(
    "groups",
    row="group record of __consumer_offsets (classic group metadata, KIP-848/share/streams group records), "
        "per node replica",
    schema=GROUPS_SCHEMA,
    kinds=("segment",),
    source=GroupsSource,
    select=offsets_files,
)
