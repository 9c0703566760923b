"""``replica_batches``: the batch headers of every partition the bundle holds on several nodes.

A partition's copies (replicas) on the brokers of one cluster should hold the same batches over
the offsets they share: a follower copies its leader's batches byte for byte. This table is what
comparing them needs, taken from ``batches`` (no second read of the files): the batches of the log
segments (``.log``, not a partition directory being deleted, moved or left stray) of each
partition with segments on two nodes or more of one cluster (``cluster.id`` of the node directory,
so two clusters whose node ids repeat stay apart), with the stored CRC that stands for the
batch's bytes. A bundle holding no such partition gives no row without a Spark job.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from workbench.spark.registry import BuildContext, register_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from workbench.bundle import Artifact, Bundle

REPLICA_BATCHES_SCHEMA = (
    "cluster_id string, node_id int, topic string, partition int, path string, position long, base_offset long, "
    "last_offset long, record_count int, size int, partition_leader_epoch int, crc long, is_control boolean, "
    "max_timestamp timestamp"
)


def replica_segments(bundle: Bundle) -> list[Artifact]:
    """The log segments of the partitions held by several nodes of one cluster."""
    nodes: dict[tuple[str | None, str, int], set[int]] = defaultdict(set)
    segments = [a for a in bundle.of_kind("segment")
                if a.dir_state is None and a.topic is not None and a.partition is not None
                and a.path.endswith((".log", ".log.headers"))]  # an extract's headers compare alike
    for a in segments:
        nodes[(a.cluster_id, a.topic, a.partition)].add(a.node_id)
    return [a for a in segments if len(nodes[(a.cluster_id, a.topic, a.partition)]) > 1]


def build_replica_batches(ctx: BuildContext) -> DataFrame:
    """The batches of :func:`replica_segments`, with the cluster of each file."""
    chosen = replica_segments(ctx.bundle)
    if not chosen:
        return ctx.empty(REPLICA_BATCHES_SCHEMA)
    files = ctx.spark.createDataFrame(sorted({(str(ctx.bundle.root / a.path), a.cluster_id) for a in chosen}),
                                      "path string, cluster_id string")
    columns = [c.split(" ")[0] for c in REPLICA_BATCHES_SCHEMA.split(", ")]
    return ctx.tables.batches.join(F.broadcast(files), "path").select(*columns)


TABLE = register_table(
    "replica_batches",
    row="record batch of a log segment of a partition held by several nodes of one cluster (headers only)",
    schema=REPLICA_BATCHES_SCHEMA,
    select=replica_segments,
    build=build_replica_batches,
)
