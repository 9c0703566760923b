"""A synthetic KRaft metadata log of any size: ISR churn on 10,000 partitions, streamed to disk.

Usage::

    from peer.synthetic import write_synthetic_metadata_log
    summary = write_synthetic_metadata_log("00000000000000000000.log", 10_000_000, seed=0)

or ``python benchmarks/synthetic_metadata.py OUT.log --records 10000000 [--seed 0]``.

The log, in batches of ``batch_records`` records (default 100), one Raft batch each, written by
the workbench encoder (:class:`workbench.formats.kraft_log.MetadataLogWriter`: uncompressed v2
batches, no producer id, the Raft epoch in the partition leader epoch, every record stamped with
the batch's append time):

1. setup: a ``FeatureLevelRecord`` (``metadata.version`` 21), a cluster-wide ``ConfigRecord``
   ``min.insync.replicas=2`` (broker resource, empty name: the cluster default), then ``topics``
   topics (default 1,000), each a ``TopicRecord`` followed by ``partitions`` ``PartitionRecord``\\ s
   (default 10): replicas ``[1, 2, 3]``, ISR ``[1, 2, 3]``, leader 1, 2 or 3 by partition
   (``partition % 3``), leader and partition epoch 0;
2. churn until ``records`` records in all: 70 % ``PartitionChangeRecord`` (a random partition's
   ISR shrinks by one random member or expands by one missing replica; a full ISR always shrinks,
   a one-member ISR always grows; when the leader leaves the ISR, the first remaining member
   becomes leader and the record carries ``leader``), 30 % ``NoOpRecord``.

Everything is drawn from ``random.Random(seed)``: one seed, one file, byte for byte. Batches go
to disk as they are made and the writer keeps no record objects, so ten million records need
no more memory than a hundred (encoded values are reused from a bounded cache: the 10,000
partitions have few distinct ISR states).

Kafka's dump tool reads the result (``kafka-dump-log.sh --cluster-metadata-decoder``); the
benchmark ``bench_dump.py`` checks that on the file it times.

Examples
--------
>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> s = write_synthetic_metadata_log(os.path.join(d, "00000000000000000000.log"), 12_000, seed=1)
>>> s["records"], s["topics"], s["partitions"], s["setup_records"]
(12000, 1000, 10000, 11002)
>>> s["partition_changes"] + s["noops"] + s["setup_records"] == s["records"]
True
"""

from __future__ import annotations

import base64
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from workbench.formats import kraft_log
from workbench.formats.batch import Record, encode_batch
from workbench.formats.metadata import encode_metadata_record

__all__ = ["write_synthetic_metadata_log"]

REPLICAS = (1, 2, 3)
METADATA_VERSION = 21  # 3.9-IV0: understood by Kafka 3.9 and 4.x
MIN_ISR = "2"
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER; name "" is the cluster-wide default
START_MS = 1_700_000_000_000
_CACHE_LIMIT = 500_000  # encoded values kept for reuse


class _StreamingWriter(kraft_log.MetadataLogWriter):
    """The metadata log writer, sending each batch to ``out`` as soon as it is encoded.

    Record values come from :func:`~workbench.formats.metadata.encode_metadata_record` (kept in
    a bounded cache keyed by the record's fields); batches are laid out exactly as
    :meth:`MetadataLogWriter.append` lays them out.
    """

    def __init__(self, out: BinaryIO) -> None:
        super().__init__()
        self.out = out
        self.values: dict[tuple[Any, ...], bytes] = {}

    def _add(self, data: bytes) -> int:
        position = self.size
        self.out.write(data)
        self.size += len(data)
        return position

    def value(self, key: tuple[Any, ...], name: str, version: int, fields: dict[str, Any]) -> bytes:
        """The encoded value of a record, from the cache when the same record was encoded before."""
        v = self.values.get(key)
        if v is None:
            if len(self.values) >= _CACHE_LIMIT:
                self.values.clear()
            v = self.values[key] = encode_metadata_record(name, version, fields)
        return v

    def append_values(self, values: list[bytes], *, timestamp: int, epoch: int) -> int:
        """Append one batch of encoded metadata record values (as :meth:`append` does)."""
        recs = [Record(self.next_offset + i, timestamp, None, v, []) for i, v in enumerate(values)]
        data = encode_batch(recs, base_offset=self.next_offset, partition_leader_epoch=epoch)
        self.next_offset += len(recs)
        return self._add(data)


def _uuid(rng: random.Random) -> str:
    """A random topic id in Kafka's JSON form (base64url, no padding), never the zero UUID."""
    raw = rng.getrandbits(128).to_bytes(16, "big")
    if raw == bytes(16):
        raw = b"\x00" * 15 + b"\x01"
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def write_synthetic_metadata_log(
    path: str | os.PathLike[str],
    records: int,
    seed: int = 0,
    *,
    topics: int = 1000,
    partitions: int = 10,
    batch_records: int = 100,
    start_ms: int = START_MS,
    interval_ms: int = 50,
    epoch: int = 1,
    change_share: float = 0.7,
) -> dict[str, Any]:
    """Write a synthetic ``__cluster_metadata`` segment of exactly ``records`` records.

    Parameters
    ----------
    path : path-like
        The segment to write (replaced); name it ``<base offset>.log``, e.g.
        ``00000000000000000000.log`` in a ``__cluster_metadata-0`` directory, for Kafka's tools.
    records : int
        Records in all, setup included (a smaller count cuts the setup short).
    seed : int
        Seed of every random choice (topic ids, partitions, ISR changes).
    topics, partitions : int
        Topics, and partitions per topic.
    batch_records : int
        Records per batch.
    start_ms, interval_ms : int
        Append time of the first batch, and the step between batches.
    epoch : int
        Raft epoch (partition leader epoch of every batch).
    change_share : float
        Share of churn records that are ``PartitionChangeRecord`` (the rest are ``NoOpRecord``).

    Returns
    -------
    dict
        ``path, records, batches, bytes, seed, topics, partitions, setup_records,
        partition_changes, noops, isr_shrinks, isr_expands, leader_changes, first_timestamp,
        last_timestamp, last_offset, seconds``.

    Raises
    ------
    ValueError
        For a negative record count or a batch size below 1.
    """
    if records < 0:
        raise ValueError(f"records must be >= 0, got {records}")
    if batch_records < 1:
        raise ValueError(f"batch_records must be >= 1, got {batch_records}")
    t0 = time.perf_counter()
    rng = random.Random(seed)
    topic_ids = [_uuid(rng) for _ in range(topics)]
    counts = {"partition_changes": 0, "noops": 0, "isr_shrinks": 0, "isr_expands": 0, "leader_changes": 0}
    setup_count = 2 + topics * (1 + partitions)

    def setup() -> Iterator[tuple[tuple[Any, ...], str, int, dict[str, Any]]]:
        yield ("fl",), "FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": METADATA_VERSION}
        yield (
            ("cfg",),
            "ConfigRecord",
            0,
            {"resourceType": BROKER_RESOURCE, "resourceName": "", "name": "min.insync.replicas", "value": MIN_ISR},
        )
        for t, tid in enumerate(topic_ids):
            yield ("t", t), "TopicRecord", 0, {"name": f"topic-{t:04d}", "topicId": tid}
            for p in range(partitions):
                leader = REPLICAS[p % len(REPLICAS)]
                yield (
                    ("p", t, p),
                    "PartitionRecord",
                    0,
                    {
                        "partitionId": p,
                        "topicId": tid,
                        "replicas": list(REPLICAS),
                        "isr": list(REPLICAS),
                        "removingReplicas": [],
                        "addingReplicas": [],
                        "leader": leader,
                        "leaderEpoch": 0,
                        "partitionEpoch": 0,
                    },
                )

    # per partition: (isr, leader); the ISR keeps the replica order
    state = [[tuple(REPLICAS), REPLICAS[p % len(REPLICAS)]] for _ in range(topics) for p in range(partitions)]

    def churn() -> Iterator[tuple[tuple[Any, ...], str, int, dict[str, Any]]]:
        noop = (("noop",), "NoOpRecord", 0, {})
        while True:
            if not state or rng.random() >= change_share:
                counts["noops"] += 1
                yield noop
                continue
            k = rng.randrange(len(state))
            isr, leader = state[k]
            grow = len(isr) == 1 or (len(isr) < len(REPLICAS) and rng.random() < 0.5)
            if grow:
                missing = [r for r in REPLICAS if r not in isr]
                add = rng.choice(missing)
                isr = tuple(r for r in REPLICAS if r in isr or r == add)
                counts["isr_expands"] += 1
            else:
                drop = rng.choice(isr)
                isr = tuple(r for r in isr if r != drop)
                counts["isr_shrinks"] += 1
            fields: dict[str, Any] = {
                "partitionId": k % partitions,
                "topicId": topic_ids[k // partitions],
                "isr": list(isr),
            }
            new_leader = leader if leader in isr else isr[0]
            if new_leader != leader:
                fields["leader"] = new_leader
                counts["leader_changes"] += 1
            state[k] = [isr, new_leader]
            counts["partition_changes"] += 1
            yield ("pc", k, isr, new_leader if new_leader != leader else None), "PartitionChangeRecord", 0, fields

    def all_records() -> Iterator[tuple[tuple[Any, ...], str, int, dict[str, Any]]]:
        yield from setup()
        yield from churn()

    out_path = Path(path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")
    batches = 0
    timestamp = start_ms
    source = all_records()
    with open(tmp, "wb", buffering=1 << 20) as f:
        w = _StreamingWriter(f)
        left = records
        while left > 0:
            n = min(batch_records, left)
            values = []
            for _ in range(n):
                key, name, version, fields = next(source)
                values.append(w.value(key, name, version, fields))
            timestamp = start_ms + batches * interval_ms
            w.append_values(values, timestamp=timestamp, epoch=epoch)
            batches += 1
            left -= n
        size = w.size
        last_offset = w.next_offset - 1
    os.replace(tmp, out_path)
    return {
        "path": str(out_path),
        "records": records,
        "batches": batches,
        "bytes": size,
        "seed": seed,
        "topics": topics,
        "partitions": topics * partitions,
        "setup_records": min(setup_count, records),
        **counts,
        "first_timestamp": start_ms if records else None,
        "last_timestamp": timestamp if records else None,
        "last_offset": last_offset,
        "seconds": round(time.perf_counter() - t0, 3),
    }
