"""``remote``: one row per tiered-storage event of ``__remote_log_metadata`` (KIP-405), per node replica.

Name
    ``kafka_remote``.
Reads
    Every segment of ``__remote_log_metadata`` in every node's log dirs (the topic-based
    remote log metadata manager's topic; each replica is read, told apart by ``node_id``).
Options
    ``files``, ``strict``.
Partitioning
    Each file read whole; small files are packed into one input partition (``pack_bytes``,
    ``pack_files``: :mod:`workbench.spark.source`).

Columns
    ``node_id``, ``path``; ``metadata_partition``: the partition *of* ``__remote_log_metadata``
    (the events of a user partition all go to one of them); ``batch_position``, ``offset``,
    ``timestamp``: the record's batch, its own offset and timestamp; ``record_type`` and
    ``api_key`` (``RemoteLogSegmentMetadataRecord`` 0, ``RemoteLogSegmentMetadataUpdateRecord`` 1,
    ``RemotePartitionDeleteMetadataRecord`` 2, ``RemoteLogSegmentMetadataSnapshotRecord`` 3),
    ``version``; ``event``: ``segment`` (a copy starts: the segment's full metadata),
    ``segment_update`` (a segment changes state), ``partition_delete`` or ``segment_snapshot``;
    ``state``: ``COPY_SEGMENT_STARTED``, ``COPY_SEGMENT_FINISHED``, ``DELETE_SEGMENT_STARTED``,
    ``DELETE_SEGMENT_FINISHED``, or for partition deletes ``DELETE_PARTITION_MARKED``,
    ``DELETE_PARTITION_STARTED``, ``DELETE_PARTITION_FINISHED``; ``topic``, ``topic_id``,
    ``partition``: the user partition; ``segment_id``: the remote segment's id (a base64 uuid,
    as Kafka prints it); ``start_offset``, ``end_offset``, ``max_timestamp``,
    ``segment_size_bytes``, ``segment_leader_epochs`` (``leader_epoch``, ``start_offset``: the
    epochs the segment spans), ``txn_index_empty`` (a tag Kafka 4.0+ writes; false when absent,
    as Kafka reads such a record): on ``segment`` and ``segment_snapshot`` rows only;
    ``broker_id``: the broker that wrote the event (the partition's leader then);
    ``event_timestamp``; ``custom_metadata_size``: bytes of the remote
    storage plugin's custom metadata, null when absent (KIP-917); ``error``: why the value
    could not be decoded (also a ``problems`` row).

    A segment's state is its last event: fold the rows of one ``segment_id`` in ``offset``
    order; the segment is in remote storage and readable once ``COPY_SEGMENT_FINISHED`` and
    until ``DELETE_SEGMENT_STARTED``.

Examples
--------
>>> tables = workbench.load(workbench.open_bundle("bundle/"), spark)              # doctest: +SKIP
>>> tables.remote.groupBy("topic", "partition", "state").count().show()            # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from workbench.formats.topics import REMOTE_LOG_METADATA_TOPIC
from workbench.spark.registry import register_table
from workbench.spark.source import ArtifactReader, ArtifactSource, FilePartition, ms_to_us

if TYPE_CHECKING:
    from workbench.bundle import Artifact, Bundle
    from workbench.formats.problems import ProblemLog

REMOTE_SCHEMA = (
    "node_id int, path string, metadata_partition int, batch_position long, offset long, timestamp timestamp, "
    "record_type string, api_key int, version int, event string, state string, topic string, topic_id string, "
    "partition int, segment_id string, start_offset long, end_offset long, max_timestamp timestamp, "
    "segment_size_bytes int, segment_leader_epochs array<struct<leader_epoch:int,start_offset:long>>, "
    "txn_index_empty boolean, broker_id int, event_timestamp timestamp, custom_metadata_size int, error string"
)


def remote_files(bundle: Bundle) -> list[Artifact]:
    """The bundle's ``__remote_log_metadata`` segments (every node's replica)."""
    return [a for a in bundle.of_kind("segment") if a.topic == REMOTE_LOG_METADATA_TOPIC and a.path.endswith(".log")]


def event_columns(record: Any) -> dict[str, Any]:
    """The columns of one decoded ``__remote_log_metadata`` value (a ``MetadataRecord``).

    Examples
    --------
    >>> from workbench.formats.remote import decode_remote_log_metadata, encode_remote_log_metadata
    >>> rec = decode_remote_log_metadata(encode_remote_log_metadata(2, 0, {
    ...     "topicIdPartition": {"name": "t", "id": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 3},
    ...     "brokerId": 1, "eventTimestampMs": 9, "remotePartitionDeleteState": 1}))
    >>> cols = event_columns(rec)
    >>> cols["event"], cols["state"], cols["topic"], cols["partition"], cols["custom_metadata_size"]
    ('partition_delete', 'DELETE_PARTITION_STARTED', 't', 3, None)
    """
    from workbench.formats.remote import remote_event

    row: dict[str, Any] = {"record_type": record.name, "api_key": record.api_key, "version": record.version}
    event = remote_event(record)
    if event is None:
        return row
    custom = record.fields.get("customMetadata")
    epochs = event["leader_epochs"]
    row.update(
        event=event["kind"], state=event["state"], topic=event["topic"], topic_id=event["topic_id"],
        partition=event["partition"], segment_id=event["segment_id"], start_offset=event["start_offset"],
        end_offset=event["end_offset"], max_timestamp=ms_to_us(event["max_timestamp_ms"]),
        segment_size_bytes=event["size_bytes"], txn_index_empty=event["txn_index_empty"],
        segment_leader_epochs=None if epochs is None else [
            {"leader_epoch": e, "start_offset": o} for e, o in sorted(epochs.items())],
        broker_id=event["broker_id"], event_timestamp=ms_to_us(event["event_timestamp_ms"]),
        custom_metadata_size=None if custom is None else len(custom),
    )
    return row


class RemoteReader(ArtifactReader):
    """Tiered-storage lifecycle events of ``__remote_log_metadata`` segments."""

    schema_ddl = REMOTE_SCHEMA

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import fsspec

        from workbench.formats.remote import decode_remote_log_metadata
        from workbench.formats.topicrecords import records_with_batches

        with fsspec.open(partition.path, "rb") as f:
            for info, record in records_with_batches(f, partition.path, problems=log, strict=self.strict):
                if info.is_control:
                    continue  # the manager's producer is idempotent, not transactional: none expected
                row = {
                    "node_id": partition.node_id, "path": partition.path, "metadata_partition": partition.partition,
                    "batch_position": info.position, "offset": record.offset,
                    "timestamp": ms_to_us(record.timestamp),
                }
                if record.value is None:
                    row["error"] = "null value"
                else:
                    rec = decode_remote_log_metadata(record.value)
                    row.update(event_columns(rec))
                    row["error"] = rec.error
                if row["error"]:
                    log.report(info.position, "decode_error",
                               f"{REMOTE_LOG_METADATA_TOPIC} record at offset {record.offset}: {row['error']}")
                yield row


class RemoteSource(ArtifactSource):
    """``spark.read.format("kafka_remote")``: one row per ``__remote_log_metadata`` event."""

    reader_class = RemoteReader

    @classmethod
    def name(cls) -> str:
        return "kafka_remote"


TABLE = register_table(
    "remote",
    row="tiered-storage event of __remote_log_metadata (segment copy/delete states, partition deletes), "
        "per node replica",
    schema=REMOTE_SCHEMA,
    kinds=("segment",),
    source=RemoteSource,
    select=remote_files,
)
