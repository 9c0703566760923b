"""What the comparison needs besides the batches: which topics Kafka's log cleaner compacts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.formats.topics import OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_TOPIC

#: Kafka's own compacted topics (their cleanup.policy is set when Kafka creates them).
KAFKA_COMPACTED = frozenset({OFFSETS_TOPIC, TRANSACTION_TOPIC, SHARE_GROUP_STATE_TOPIC})


@dataclass(frozen=True)
class Compaction:
    """Which topics the log cleaner compacts: ``topics`` by name, and ``default`` for every topic that
    sets no ``cleanup.policy`` of its own (the brokers' ``log.cleanup.policy`` includes ``compact``)."""

    topics: frozenset[str] = KAFKA_COMPACTED
    not_compacted: frozenset[str] = frozenset()
    default: bool = False

    def compacts(self, topic: str) -> bool:
        """Whether ``topic``'s replicas may have been compacted."""
        return topic in self.topics or (self.default and topic not in self.not_compacted)


def compaction(tables: Any) -> Compaction:
    """The compacted topics of a bundle: Kafka's own, MirrorMaker 2's internal topics, every topic whose
    last ``cleanup.policy`` (metadata log, snapshot) includes ``compact``, and all others when a node's
    ``log.cleanup.policy`` does. A bundle without configs knows Kafka's and MirrorMaker 2's only."""
    from pyspark.sql import functions as F

    from workbench.formats.mirror import classify_mirror_topic
    from workbench.spark.configs import effective_configs

    configs = tables["configs"]
    topic_rows = (effective_configs(configs).where((F.col("resource_type") == "topic")
                                                   & (F.col("name") == "cleanup.policy"))
                  .select("resource_name", "value").collect())
    compact = {r["resource_name"] for r in topic_rows if "compact" in (r["value"] or "")}
    plain = {r["resource_name"] for r in topic_rows if "compact" not in (r["value"] or "")}
    static = configs.where((F.col("scope") == "static") & (F.col("name") == "log.cleanup.policy")).select(
        "value").collect()
    bundle = getattr(tables, "bundle", None)
    held = {a.topic for a in bundle.of_kind("segment") if a.topic} if bundle is not None else set()
    mirror = {t for t in held if classify_mirror_topic(t) is not None}
    return Compaction(topics=frozenset(KAFKA_COMPACTED | compact | mirror), not_compacted=frozenset(plain),
                      default=any("compact" in (r["value"] or "") for r in static))
