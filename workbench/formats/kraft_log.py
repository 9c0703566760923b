"""Writing KRaft metadata log segments the way the Raft leader lays them out.

Raft batches are uncompressed v2 batches with no producer id, the Raft epoch in the partition
leader epoch field, and every record stamped with the batch's append time. Used to build test
logs and to re-encode decoded logs; Kafka's dump tool accepts what this writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from workbench.formats.batch import Record, encode_batch
from workbench.formats.control import encode_control_record
from workbench.formats.metadata import encode_metadata_record


@dataclass
class MetadataLogWriter:
    """Accumulates Raft batches of a ``__cluster_metadata-0`` segment.

    Examples
    --------
    >>> w = MetadataLogWriter()
    >>> w.append([("NoOpRecord", 0, {})], timestamp=1_700_000_000_000, epoch=1)
    0
    >>> w.next_offset
    1
    """

    base_offset: int = 0
    next_offset: int = 0
    chunks: list[bytes] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    size: int = 0

    def __post_init__(self) -> None:
        if self.next_offset < self.base_offset:
            self.next_offset = self.base_offset

    def _add(self, data: bytes) -> int:
        self.positions.append(self.size)
        self.chunks.append(data)
        self.size += len(data)
        return self.positions[-1]

    def append(self, records: Sequence[tuple[str, int, dict]], *, timestamp: int, epoch: int) -> int:
        """Append one batch of metadata records ``(name, version, fields)``; returns its byte position."""
        recs = [Record(self.next_offset + i, timestamp, None, encode_metadata_record(name, version, fields), [])
                for i, (name, version, fields) in enumerate(records)]
        data = encode_batch(recs, base_offset=self.next_offset, partition_leader_epoch=epoch)
        self.next_offset += len(recs)
        return self._add(data)

    def append_control(self, type_name: str, fields: dict, *, timestamp: int, epoch: int) -> int:
        """Append one control batch holding one control record; returns its byte position."""
        key, value = encode_control_record(type_name, fields)
        data = encode_batch([Record(self.next_offset, timestamp, key, value, [])], base_offset=self.next_offset,
                            partition_leader_epoch=epoch, is_control=True)
        self.next_offset += 1
        return self._add(data)

    def to_bytes(self) -> bytes:
        """The segment's bytes."""
        return b"".join(self.chunks)
