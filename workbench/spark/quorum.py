"""``quorum`` and ``snapshots``: each node's KRaft ``quorum-state``, and its metadata snapshot inventory.

``quorum`` — one row per ``quorum-state`` file (one per node that ever joined the quorum,
controllers and, since 3.7, brokers too).

Name
    ``kafka_quorum_state``.
Reads
    ``quorum_state`` artifacts.
Options
    ``files``, ``strict``.
Partitioning
    Each file read whole; small files are packed into one input partition (``pack_bytes``,
    ``pack_files``: :mod:`workbench.spark.source`).

Columns: ``node_id`` (the node whose log dir holds the file), ``path``, ``data_version`` (0:
3.x static quorum with ``clusterId``, ``appliedOffset`` and ``currentVoters``; 1: from 3.8,
``votedDirectoryId``), ``leader_id`` (-1 none), ``leader_epoch``, ``voted_id`` (-1 none),
``voted_directory_id`` (null in version 0), ``applied_offset`` and ``voters`` (version 0 only,
else null), ``cluster_id`` (version 0 only).

``snapshots`` — one row per KRaft metadata snapshot file (``<end offset>-<epoch>.checkpoint``,
also ``.checkpoint.part`` and ``.checkpoint.deleted``) and ``bootstrap.checkpoint``.

Name
    ``kafka_snapshot_inventory``.
Reads
    ``snapshot`` and ``bootstrap`` artifacts of ``__cluster_metadata``, and partial or deleted
    snapshots (``other`` artifacts named like snapshots there).
Options
    ``files``, ``strict``.
Partitioning
    Each file read whole (small ones packed, as above); every batch header is read and CRC-checked, only the control
    records (header and footer) are decoded.

Columns: ``node_id``, ``path``, ``file_kind`` (``snapshot`` or ``bootstrap``), ``state``
(``complete``, ``partial``, ``deleted``; null for bootstrap), ``end_offset`` and ``epoch`` (from the
file name; null for bootstrap), ``bytes``, ``batches``, ``records`` (from the batch headers),
``header_version`` and ``last_contained_time`` (the ``SnapshotHeader`` control record's
``lastContainedLogTimestamp``: the timestamp of the last record the snapshot covers),
``header_time`` (the header batch's timestamp: when the snapshot was written),
``footer`` (the file ends with a ``SnapshotFooter``: the snapshot was finished), ``crc_valid``
(every batch's CRC matched). A snapshot without header or footer, or with damaged batches, is
also a ``problems`` row.

Examples
--------
>>> tables.quorum.select("node_id", "leader_id", "leader_epoch").show()             # doctest: +SKIP
>>> tables.snapshots.orderBy("node_id", "end_offset").show()                        # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.spark.registry import register_table
from workbench.spark.source import ArtifactReader, ArtifactSource, FilePartition, ms_to_us

if TYPE_CHECKING:
    from workbench.bundle import Artifact, Bundle
    from workbench.formats.problems import ProblemLog

QUORUM_SCHEMA = (
    "node_id int, path string, data_version int, leader_id int, leader_epoch int, voted_id int, "
    "voted_directory_id string, applied_offset long, voters array<int>, cluster_id string"
)

SNAPSHOTS_SCHEMA = (
    "node_id int, path string, file_kind string, state string, end_offset long, epoch int, bytes long, "
    "batches int, records long, header_version int, last_contained_time timestamp, header_time timestamp, "
    "footer boolean, crc_valid boolean"
)


class QuorumStateReader(ArtifactReader):
    """One row per ``quorum-state`` file."""

    schema_ddl = QUORUM_SCHEMA
    ranges = {"leader_id": (-1, 2**31 - 1), "leader_epoch": (-1, 2**31 - 1), "voted_id": (-1, 2**31 - 1),
              "applied_offset": (-1, 2**63 - 1)}

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import fsspec

        from workbench.formats.kraft_files import parse_quorum_state

        with fsspec.open(partition.path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            log.report(exc.start, "decode_error", f"quorum-state is not UTF-8 text: {exc.reason}")
            return
        state = parse_quorum_state(text, partition.path)
        for p in state.problems:
            log.report(p.position, p.kind, p.detail)
        if state.data_version == -1 and not state.raw:
            return  # not JSON at all: the problem says so, there is nothing to show
        v0 = state.data_version == 0
        yield {
            "node_id": partition.node_id, "path": partition.path, "data_version": state.data_version,
            "leader_id": state.leader_id, "leader_epoch": state.leader_epoch, "voted_id": state.voted_id,
            "voted_directory_id": state.raw.get("votedDirectoryId") if "votedDirectoryId" in state.raw else None,
            "applied_offset": state.applied_offset if "appliedOffset" in state.raw else None,
            "voters": state.current_voters, "cluster_id": state.cluster_id if v0 and "clusterId" in state.raw else None,
        }


class QuorumStateSource(ArtifactSource):
    """``spark.read.format("kafka_quorum_state")``: one row per ``quorum-state`` file."""

    reader_class = QuorumStateReader

    @classmethod
    def name(cls) -> str:
        return "kafka_quorum_state"


class SnapshotInventoryReader(ArtifactReader):
    """One row per metadata snapshot or bootstrap checkpoint: name, size, header and footer."""

    schema_ddl = SNAPSHOTS_SCHEMA

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import fsspec

        from workbench.formats.batch import read_batches
        from workbench.formats.control import decode_control_record
        from workbench.formats.kraft_files import parse_snapshot_name

        name = Path(partition.path).name
        parsed = parse_snapshot_name(name)
        bootstrap = name == "bootstrap.checkpoint"
        row: dict[str, Any] = {
            "node_id": partition.node_id, "path": partition.path, "file_kind": "bootstrap" if bootstrap else "snapshot",
            "state": None if parsed is None else parsed.state,
            "end_offset": None if parsed is None else parsed.end_offset,
            "epoch": None if parsed is None else parsed.epoch, "bytes": 0, "batches": 0, "records": 0,
            "header_version": None, "last_contained_time": None, "header_time": None, "footer": False,
            "crc_valid": True,
        }
        last_types: list[str] = []
        with fsspec.open(partition.path, "rb") as f:
            row["bytes"] = f.size if hasattr(f, "size") and f.size is not None else Path(partition.path).stat().st_size
            for batch in read_batches(f, path=partition.path, problems=log, strict=self.strict):
                first = row["batches"] == 0
                row["batches"] += 1
                row["records"] += batch.record_count
                row["crc_valid"] = row["crc_valid"] and bool(batch.crc_valid)
                last_types = []
                if not batch.is_control:
                    if first:
                        log.report(batch.position, "missing_header",
                                   "the first batch is not a SnapshotHeader control batch")
                    continue
                for record in batch.records(log):
                    ctl = decode_control_record(record.key, record.value)
                    last_types.append(ctl.type_name)
                    if ctl.error:
                        log.report(batch.position, "decode_error",
                                   f"control record at offset {record.offset}: {ctl.error}")
                    if first and ctl.type_name == "SNAPSHOT_HEADER" and not ctl.error:
                        row["header_version"] = ctl.fields.get("version")
                        row["last_contained_time"] = ms_to_us(ctl.fields.get("lastContainedLogTimestamp"))
                        row["header_time"] = ms_to_us(batch.max_timestamp)
                if first and "SNAPSHOT_HEADER" not in last_types:
                    log.report(batch.position, "missing_header", "the first batch holds no SnapshotHeader record")
        row["footer"] = bool(last_types) and last_types[-1] == "SNAPSHOT_FOOTER"
        if row["batches"] and not row["footer"]:
            log.report(row["bytes"], "missing_footer",
                       "the last batch is not a SnapshotFooter: the snapshot was not finished, or the file is cut")
        if row["batches"] == 0:
            log.report(0, "truncated", "no readable batch")
            row["crc_valid"] = None
        yield row


class SnapshotInventorySource(ArtifactSource):
    """``spark.read.format("kafka_snapshot_inventory")``: one row per metadata snapshot file."""

    reader_class = SnapshotInventoryReader

    @classmethod
    def name(cls) -> str:
        return "kafka_snapshot_inventory"


def snapshot_files(bundle: Bundle) -> list[Artifact]:
    """Metadata snapshots (complete, partial, deleted) and bootstrap checkpoints."""
    from workbench.formats.kraft_files import parse_snapshot_name
    from workbench.formats.topics import METADATA_TOPIC

    out = []
    for a in bundle.artifacts:
        if a.kind == "bootstrap" or (a.topic == METADATA_TOPIC and a.kind == "snapshot"):
            out.append(a)
        elif a.kind == "other" and a.topic == METADATA_TOPIC and parse_snapshot_name(Path(a.path).name) is not None:
            out.append(a)
    return out


QUORUM_TABLE = register_table(
    "quorum",
    row="node's quorum-state file (leader, epoch, vote, voters)",
    schema=QUORUM_SCHEMA,
    kinds=("quorum_state",),
    source=QuorumStateSource,
)

SNAPSHOTS_TABLE = register_table(
    "snapshots",
    row="KRaft metadata snapshot or bootstrap checkpoint file (end offset, epoch, header times, size)",
    schema=SNAPSHOTS_SCHEMA,
    kinds=("snapshot", "bootstrap"),
    source=SnapshotInventorySource,
    select=snapshot_files,
)
