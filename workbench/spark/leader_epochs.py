"""``leader_epochs``: each replica's leader-epoch history, as its ``leader-epoch-checkpoint`` keeps it.

Name
    ``leader_epochs``.
Reads
    ``leader_epoch_checkpoint`` artifacts of topic partitions (``<topic>-<partition>/leader-epoch-checkpoint``;
    small text files, read on the driver). The metadata log's own checkpoint (its Raft epochs) and
    partition directories being deleted, moved or left stray are left out.
Options
    ``strict``.

Kafka writes one entry per leader epoch whose batches the replica appended: ``epoch start_offset``,
the first offset written under that epoch. A follower asks its leader where its last epoch ended
(``OffsetsForLeaderEpoch``) and truncates to it, so these entries are what Kafka itself consults to
decide what a replica keeps. Columns: ``cluster_id, node_id, topic, partition, epoch,
start_offset`` (one row per entry, in the file's order: ``entry``), ``path``. A malformed line is a
problem of the table and its row is left out; the others are kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.spark.registry import Built, register_table

if TYPE_CHECKING:
    from workbench.bundle import Artifact, Bundle
    from workbench.spark.registry import BuildContext

LEADER_EPOCHS_SCHEMA = ("cluster_id string, node_id int, topic string, partition int, entry int, epoch int, "
                        "start_offset long, path string")
#: The metadata log's partition: its checkpoint holds the quorum's epochs, not a topic's leaders.
_METADATA_TOPIC = "__cluster_metadata"


def checkpoint_files(bundle: Bundle) -> list[Artifact]:
    """The ``leader-epoch-checkpoint`` files of the bundle's live topic partitions."""
    return [a for a in bundle.of_kind("leader_epoch_checkpoint")
            if a.dir_state is None and a.topic is not None and a.partition is not None and a.topic != _METADATA_TOPIC]


def build_leader_epochs(ctx: BuildContext) -> Built:
    """Every entry of :func:`checkpoint_files`, and the problems met reading them."""
    import fsspec

    from workbench.formats.kraft_files import parse_checkpoint
    from workbench.spark.source import PROBLEMS_SCHEMA

    rows: list[tuple] = []
    problems: list[tuple] = []
    strict = bool(ctx.option("strict", False))
    for artifact in checkpoint_files(ctx.bundle):
        path = str(ctx.bundle.root / artifact.path)
        try:
            with fsspec.open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
        except OSError as exc:
            problems.append((artifact.node_id, path, 0, "unreadable", f"cannot read file: {exc}"))
            continue
        parsed = parse_checkpoint(text, path, strict=strict)
        problems += [(artifact.node_id, p.path, p.position, p.kind, p.detail) for p in parsed.problems]
        entries = [e for e in parsed.entries if len(e) == 2]
        rows += [(artifact.cluster_id, artifact.node_id, artifact.topic, artifact.partition, i, int(epoch), int(start),
                  path) for i, (epoch, start) in enumerate(entries)]
    return Built(ctx.spark.createDataFrame(rows, LEADER_EPOCHS_SCHEMA),
                 ctx.spark.createDataFrame(problems, PROBLEMS_SCHEMA))


TABLE = register_table(
    "leader_epochs",
    row="entry of a replica's leader-epoch-checkpoint: a leader epoch and the first offset it wrote",
    schema=LEADER_EPOCHS_SCHEMA,
    select=checkpoint_files,
    build=build_leader_epochs,
)
