"""``markers``: one row per control record of every data partition (transaction COMMIT and ABORT markers).

Derived from ``batches``: its control batches outside the KRaft metadata log, each read again
at its byte position (a control batch holds one record of a few bytes), so no other record of a
segment is decoded.

Columns
    ``node_id``, ``path``, ``topic``, ``partition``, ``batch_position``, ``offset`` (the marker's
    own offset: a marker takes an offset, which is why a consumer that has read everything can
    still be one offset short of the log end), ``timestamp`` (when the partition leader wrote
    it), ``producer_id``, ``producer_epoch`` (of the transaction the marker ends),
    ``marker`` (``COMMIT`` or ``ABORT``; another control type by its name),
    ``coordinator_epoch`` (the coordinator's epoch when it asked for the marker; ``kafka-transactions
    abort`` by an operator writes the one it is given), ``error`` (why the record could not be
    decoded; the bytes' own damage is a ``problems`` row of ``batches``).

Examples
--------
>>> tables.markers.groupBy("topic", "marker").count().show()  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from workbench.spark.registry import register_table

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

    from workbench.spark.registry import BuildContext

MARKERS_SCHEMA = (
    "node_id int, path string, topic string, partition int, batch_position long, offset long, "
    "timestamp timestamp, producer_id long, producer_epoch int, marker string, coordinator_epoch int, error string"
)
_COLUMNS = [c.strip().split(" ")[0] for c in MARKERS_SCHEMA.split(",")]


def control_rows(path: str, position: int, size: int) -> list[dict[str, Any]]:
    """The control records of the batch of ``size`` bytes at ``position`` of ``path``.

    Examples
    --------
    >>> import tempfile, os
    >>> from workbench.formats.batch import encode_batch
    >>> from workbench.formats.control import encode_control_record
    >>> k, v = encode_control_record("ABORT", {"version": 0, "coordinatorEpoch": 3})
    >>> data = encode_batch([(9, 1700000000000, k, v)], base_offset=9, is_control=True, producer_id=4)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "0.log"); _ = open(p, "wb").write(data)
    ...     [(r["offset"], r["marker"], r["coordinator_epoch"]) for r in control_rows(p, 0, len(data))]
    [(9, 'ABORT', 3)]
    """
    import io

    import fsspec

    from workbench.formats.batch import read_batches
    from workbench.formats.control import decode_control_record
    from workbench.formats.problems import ProblemLog

    with fsspec.open(path, "rb") as f:
        f.seek(position)
        data = f.read(size)
    log = ProblemLog(path)
    out = []
    for batch in read_batches(io.BytesIO(data), path, problems=log):
        for record in batch.records(log):
            rec = decode_control_record(record.key, record.value)
            out.append({"offset": record.offset, "timestamp_ms": record.timestamp, "marker": rec.type_name,
                        "coordinator_epoch": rec.fields.get("coordinatorEpoch"), "error": rec.error})
    if not out:
        detail = "; ".join(p.detail for p in log.problems) or "no record"
        out.append({"offset": None, "timestamp_ms": None, "marker": None, "coordinator_epoch": None,
                    "error": f"control batch at byte {position} not read: {detail}"})
    return out


def _decode(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    import pandas as pd

    for frame in frames:
        rows = []
        for b in frame.itertuples(index=False):
            for r in control_rows(b.path, int(b.position), int(b.size)):
                ms = r.pop("timestamp_ms")
                rows.append({
                    "node_id": b.node_id, "path": b.path, "topic": b.topic, "partition": b.partition,
                    "batch_position": b.position, "timestamp": pd.Timestamp(ms, unit="ms") if ms is not None else None,
                    "producer_id": b.producer_id, "producer_epoch": b.producer_epoch, **r,
                })
        out = pd.DataFrame(rows, columns=_COLUMNS)
        out["timestamp"] = pd.to_datetime(out["timestamp"])
        yield out


def build_markers(ctx: BuildContext) -> DataFrame:
    """The control records of the bundle's data partitions (see the module docstring)."""
    from workbench.formats.topics import METADATA_TOPIC

    control = (ctx.tables.batches
               .where(f"is_control AND topic <> '{METADATA_TOPIC}'")
               .select("node_id", "path", "topic", "partition", "position", "size", "producer_id", "producer_epoch"))
    return control.mapInPandas(_decode, MARKERS_SCHEMA)


TABLE = register_table(
    "markers",
    row="control record (transaction COMMIT/ABORT marker) of a data partition, per node replica",
    schema=MARKERS_SCHEMA,
    build=build_markers,
)
