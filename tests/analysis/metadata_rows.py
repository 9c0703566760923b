"""Inline KRaft metadata sequences for analysis tests: rows of the ``metadata`` table.

Each helper fills the typed columns the ``metadata`` source fills for that record type, and
leaves ``fields`` null as the source does for these types.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from workbench.spark.metadata import METADATA_SCHEMA
from workbench.spark.source import column_names

T0 = datetime(2026, 3, 1, 3, 12, 0, tzinfo=UTC)
COLUMNS = column_names(METADATA_SCHEMA)


def at(seconds: float) -> datetime:
    """A timestamp ``seconds`` after :data:`T0`."""
    return T0 + timedelta(seconds=seconds)


class MetadataLog:
    """Builds metadata rows in log order, one record per offset, as one node's replica."""

    def __init__(self, node_id: int = 1, epoch: int = 1) -> None:
        self.node_id = node_id
        self.epoch = epoch
        self.rows: list[tuple] = []

    def add(self, seconds: float, record_type: str, typed: dict, *, api_key: int = 0, version: int = 0,
            is_control: bool = False) -> MetadataLog:
        offset = len(self.rows)
        row = dict.fromkeys(COLUMNS)
        row.update(
            node_id=self.node_id, path=f"/b/{self.node_id}/__cluster_metadata-0/00000000000000000000.log",
            file_kind="segment", file_offset=0, batch_position=offset * 100, batch_base_offset=offset,
            offset=offset, timestamp=at(seconds), leader_epoch=self.epoch, is_control=is_control,
            record_type=record_type, api_key=api_key, version=version, crc_valid=True,
        )
        row.update(typed)
        self.rows.append(tuple(row[c] for c in COLUMNS))
        return self

    def topic(self, s: float, name: str, topic_id: str) -> MetadataLog:
        return self.add(s, "TopicRecord", {"topic": name, "topic_id": topic_id}, api_key=2)

    def partition(self, s: float, topic_id: str, p: int, replicas: list[int], isr: list[int], leader: int,
                  elr: list[int] | None = None) -> MetadataLog:
        return self.add(s, "PartitionRecord", {
            "topic_id": topic_id, "partition": p, "replicas": replicas, "isr": isr, "removing": [], "adding": [],
            "leader": leader, "record_leader_epoch": 0, "partition_epoch": 0, "leader_recovery_state": 0,
            "elr": elr}, api_key=3)

    def change(self, s: float, topic_id: str, p: int, *, isr: list[int] | None = None, leader: int = -2,
               replicas: list[int] | None = None, elr: list[int] | None = None,
               recovery: int | None = None) -> MetadataLog:
        return self.add(s, "PartitionChangeRecord", {
            "topic_id": topic_id, "partition": p, "isr": isr, "leader": leader, "replicas": replicas,
            "elr": elr, "leader_recovery_state": recovery}, api_key=5)

    def config(self, s: float, resource_type: int, resource: str, name: str, value: str | None) -> MetadataLog:
        return self.add(s, "ConfigRecord", {"config_resource_type": resource_type, "config_resource_name": resource,
                                            "config_name": name, "config_value": value}, api_key=4)

    def remove_topic(self, s: float, topic_id: str) -> MetadataLog:
        return self.add(s, "RemoveTopicRecord", {"topic_id": topic_id}, api_key=9)

    def broker(self, s: float, record_type: str, broker_id: int, *, fenced: bool | None = None,
               in_controlled_shutdown: bool | None = None) -> MetadataLog:
        """A broker registration record (``RegisterBrokerRecord``, ``FenceBrokerRecord``, ...)."""
        return self.add(s, record_type, {"broker_id": broker_id, "broker_epoch": 1, "fenced": fenced,
                                         "in_controlled_shutdown": in_controlled_shutdown})

    def same_batch(self) -> MetadataLog:
        """The last record joins the batch of the record before it."""
        last = dict(zip(COLUMNS, self.rows[-1], strict=True))
        last["batch_base_offset"] = self.rows[-2][COLUMNS.index("batch_base_offset")]
        self.rows[-1] = tuple(last[c] for c in COLUMNS)
        return self

    def noop(self, s: float) -> MetadataLog:
        return self.add(s, "NoOpRecord", {}, api_key=20)
