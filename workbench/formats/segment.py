"""Segment files: naming (reference §4.5, §5.1) and reading a ``.log``/``.checkpoint`` file.

A segment is named by its base offset, zero-padded to 20 digits, plus a suffix; a KRaft
snapshot by ``<endOffset>-<epoch>.checkpoint``. Marker suffixes (``.deleted``, ``.cleaned``,
``.swap``, and ``.part`` for snapshots being written) follow the normal suffix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import BinaryIO

from workbench.formats.batch import Batch, read_batches
from workbench.formats.problems import ProblemLog

__all__ = ["SEGMENT_KINDS", "parse_checkpoint_name", "parse_segment_name", "read_segment", "segment_name"]

SEGMENT_KINDS: tuple[str, ...] = ("log", "index", "timeindex", "txnindex", "snapshot", "checkpoint")
"""File kinds named after an offset."""

_MARKERS = ("deleted", "cleaned", "swap", "part")

_NAME = re.compile(
    r"^(?P<offset>\d{20})"
    r"(?:-(?P<epoch>\d{10})(?:-[^.]+)?|-[A-Za-z0-9_-]{22})?"  # snapshot epoch (+ temp suffix) or remote segment id
    r"\.(?P<kind>log|index|timeindex|txnindex|snapshot|checkpoint)"
    r"(?:\.(?P<marker>deleted|cleaned|swap|part))?$"
)


def parse_segment_name(name: str | os.PathLike[str]) -> tuple[int, str] | None:
    """Offset and kind encoded in a segment-family file name (directories ignored), or ``None``.

    The kind is the suffix plus any ``.deleted``/``.cleaned``/``.swap``/``.part`` marker. The offset is
    the base offset, the snapshot offset of a ``.snapshot``, or the exclusive end offset of a KRaft
    ``.checkpoint``.

    >>> parse_segment_name("00000000000000000042.log")
    (42, 'log')
    >>> parse_segment_name("/data/t-0/00000000000000368769.timeindex.deleted")
    (368769, 'timeindex.deleted')
    >>> parse_segment_name("00000000000000012345-0000000007.checkpoint")
    (12345, 'checkpoint')
    >>> parse_segment_name("bootstrap.checkpoint") is None
    True
    """
    m = _NAME.match(os.path.basename(os.fspath(name)))
    if m is None:
        return None
    if m.group("epoch") is not None and m.group("kind") != "checkpoint":
        return None
    kind = m.group("kind") + (f".{m.group('marker')}" if m.group("marker") else "")
    return int(m.group("offset")), kind


def parse_checkpoint_name(name: str | os.PathLike[str]) -> tuple[int, int] | None:
    """End offset and epoch of a KRaft snapshot name ``<endOffset>-<epoch>.checkpoint``.

    >>> parse_checkpoint_name("00000000000000012345-0000000007.checkpoint")
    (12345, 7)
    >>> parse_checkpoint_name("00000000000000000042.log") is None
    True
    """
    m = _NAME.match(os.path.basename(os.fspath(name)))
    if m is None or m.group("kind") != "checkpoint" or m.group("epoch") is None:
        return None
    return int(m.group("offset")), int(m.group("epoch"))


def segment_name(offset: int, kind: str = "log", epoch: int | None = None) -> str:
    """The file name Kafka gives a segment-family file.

    >>> segment_name(42, "index")
    '00000000000000000042.index'
    >>> segment_name(12345, "checkpoint", epoch=7)
    '00000000000000012345-0000000007.checkpoint'
    """
    if epoch is not None:
        return f"{offset:020d}-{epoch:010d}.{kind}"
    return f"{offset:020d}.{kind}"


def read_segment(
    path_or_file: str | os.PathLike[str] | BinaryIO,
    *,
    problems: ProblemLog | None = None,
    strict: bool = False,
    start: int = 0,
    end: int | None = None,
) -> Iterator[Batch]:
    """Read the batches of a ``.log`` segment or ``.checkpoint`` snapshot (a path, or a binary file object).

    See :func:`~workbench.formats.batch.read_batches` for damage handling and ``start``/``end``.

    >>> import io
    >>> from workbench.formats.batch import encode_batch
    >>> [b.base_offset for b in read_segment(io.BytesIO(encode_batch([(3, 0, None, b"x")], base_offset=3)))]
    [3]
    """
    if isinstance(path_or_file, (str, os.PathLike)):
        path = os.fspath(path_or_file)
        with open(path, "rb") as f:
            yield from read_batches(f, path, problems=problems, strict=strict, start=start, end=end)
    else:
        name = getattr(path_or_file, "name", "")
        path = name if isinstance(name, str) else ""
        yield from read_batches(path_or_file, path, problems=problems, strict=strict, start=start, end=end)
