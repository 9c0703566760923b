"""Inline KRaft metadata sequences for analysis tests: rows of the ``metadata`` table."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

T0 = datetime(2026, 3, 1, 3, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """A timestamp ``seconds`` after :data:`T0`."""
    return T0 + timedelta(seconds=seconds)


class MetadataLog:
    """Builds metadata rows in log order, one record per offset, as one node's replica."""

    def __init__(self, node_id: int = 1, epoch: int = 1) -> None:
        self.node_id = node_id
        self.epoch = epoch
        self.rows: list[tuple] = []

    def add(self, seconds: float, record_type: str, fields: dict, *, api_key: int = 0, version: int = 0,
            is_control: bool = False) -> MetadataLog:
        offset = len(self.rows)
        self.rows.append((
            self.node_id, f"/b/{self.node_id}/__cluster_metadata-0/00000000000000000000.log", "segment", 0,
            offset * 100, offset, offset, at(seconds), self.epoch, is_control, record_type, api_key, version,
            json.dumps(fields), True, None,
        ))
        return self

    def topic(self, s: float, name: str, topic_id: str) -> MetadataLog:
        return self.add(s, "TopicRecord", {"name": name, "topicId": topic_id}, api_key=2)

    def partition(self, s: float, topic_id: str, p: int, replicas: list[int], isr: list[int], leader: int,
                  elr: list[int] | None = None) -> MetadataLog:
        return self.add(s, "PartitionRecord", {
            "partitionId": p, "topicId": topic_id, "replicas": replicas, "isr": isr, "removingReplicas": [],
            "addingReplicas": [], "leader": leader, "leaderEpoch": 0, "partitionEpoch": 0,
            "eligibleLeaderReplicas": elr, "lastKnownElr": None}, api_key=3)

    def change(self, s: float, topic_id: str, p: int, *, isr: list[int] | None = None, leader: int = -2,
               replicas: list[int] | None = None, elr: list[int] | None = None) -> MetadataLog:
        return self.add(s, "PartitionChangeRecord", {
            "partitionId": p, "topicId": topic_id, "isr": isr, "leader": leader, "replicas": replicas,
            "removingReplicas": None, "addingReplicas": None, "leaderRecoveryState": -1,
            "eligibleLeaderReplicas": elr, "lastKnownElr": None}, api_key=5)

    def config(self, s: float, resource_type: int, resource: str, name: str, value: str | None) -> MetadataLog:
        return self.add(s, "ConfigRecord", {"resourceType": resource_type, "resourceName": resource,
                                            "name": name, "value": value}, api_key=4)

    def remove_topic(self, s: float, topic_id: str) -> MetadataLog:
        return self.add(s, "RemoveTopicRecord", {"topicId": topic_id}, api_key=9)

    def noop(self, s: float) -> MetadataLog:
        return self.add(s, "NoOpRecord", {}, api_key=20)
