"""The records of one segment, each with the header fields of its batch that readers of internal topics need.

Kafka's internal topics (``__consumer_offsets``, ``__remote_log_metadata``, MirrorMaker 2's
topics) are read record by record, and what a record means can depend on its batch: an offset
commit in a transactional batch counts only if its transaction commits, and a control batch
holds transaction markers, not data. :func:`records_with_batches` walks a file with
:func:`~workbench.formats.batch.read_batches`, batch by batch, and gives each record with a
small :class:`BatchInfo` of its batch.

The careful record reader (:meth:`~workbench.formats.batch.Batch.records`) is used, not the
compiled :func:`~workbench.formats.fastrecords.records_table`: these topics' batches are small
(a commit request's offsets, one event) and their payloads are decoded in Python per record,
which dominates: the walk is a small part of the ``offsets`` reader's time, and the compiled walk
(with its columns turned back into Python values) would save little of it. The careful reader
streams a batch at a time where the compiled one holds a whole file's records, and needs no
compiled kernels loaded in every Spark worker.

Examples
--------
>>> import io
>>> from workbench.formats.batch import encode_batch
>>> data = encode_batch([(0, 5, b"k", b"v")], base_offset=0, producer_id=7, is_transactional=True)
>>> [(info.producer_id, info.is_transactional, r.offset, r.key) for info, r in records_with_batches(io.BytesIO(data))]
[(7, True, 0, b'k')]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from workbench.formats.batch import Batch, Record, read_batches
from workbench.formats.problems import ProblemLog

__all__ = ["BatchInfo", "records_with_batches"]


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """The header fields of a batch that give its records their meaning.

    Attributes
    ----------
    position : int
        Byte position of the batch in its file.
    producer_id, producer_epoch : int
        The batch's producer (-1 when none).
    is_transactional, is_control : bool
        The batch's attribute bits.
    crc_valid : bool
        Whether the batch's CRC matched (a mismatch is also a ``crc_mismatch`` problem).
    """

    position: int
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    is_control: bool
    crc_valid: bool


def _info(b: Batch) -> BatchInfo:
    return BatchInfo(b.position, b.producer_id, b.producer_epoch, b.is_transactional, b.is_control, b.crc_valid)


def records_with_batches(
    f: BinaryIO,
    path: str = "",
    *,
    problems: ProblemLog | None = None,
    strict: bool = False,
    start: int = 0,
    end: int | None = None,
) -> Iterator[tuple[BatchInfo, Record]]:
    """Every readable record of a file of record batches, in file order, with its batch's header.

    Yields ``(BatchInfo, Record)``; a batch's records share one :class:`BatchInfo`. Problems go to
    ``problems`` in file order; ``start``/``end`` as in :func:`~workbench.formats.batch.read_batches`.
    """
    log = problems if problems is not None else ProblemLog(path, strict=strict)
    for batch in read_batches(f, path, problems=log, strict=strict, start=start, end=end):
        info = _info(batch)
        for record in batch.records(log):
            yield info, record
