"""One file's dump: the lines before its entries, and the Python writer of a log's batches (dump_lines)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from workbench.formats.dumptext_write.indexes import _SIDECARS
from workbench.formats.dumptext_write.javatext import java_file_path
from workbench.formats.dumptext_write.lines import _batch_line, _record_lines
from workbench.formats.dumptext_write.options import INT_MAX, DumpOptions, KafkaEra
from workbench.formats.dumptext_write.payloads import _Payloads
from workbench.formats.dumptext_write.reading import (
    _BASE_NAME,
    TOOL_FAILURE,
    Unterminated,
    _is_batch,
    _java_gzip_records,
    _kafka_record_failure,
    _next_frame,
)
from workbench.formats.problems import ProblemLog


def dump_lines(
    path: str | os.PathLike[str],
    options: DumpOptions | None = None,
    *,
    kafka_version: str | None = None,
    shown_path: str | None = None,
    problems: ProblemLog | None = None,
    strict: bool = False,
) -> Iterator[str]:
    """The stdout lines (without line breaks) of ``kafka-dump-log --files <path>`` for one file.

    Handles ``.log`` segments, ``.checkpoint`` snapshots, indexes and producer ``.snapshot`` files
    (stdout only: Kafka's consistency checks on stderr are not reproduced). Damage is read as Kafka's
    tool reads it: batches are framed by their declared length alone, and the output ends where Kafka's
    reader stops (problem ``stopped``) or its tool fails (problem ``tool_failure``); every such stop and
    every undecodable record is a problem in ``problems`` (``strict``: CorruptDataError instead).
    ``shown_path`` is printed after ``Dumping`` and its file name gives the base offset (e.g. a link
    ``<offset>.log`` to a remote segment); default ``path``.

    >>> import os, tempfile
    >>> from workbench.formats.batch import encode_batch
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "00000000000000000005.log")
    >>> _ = open(p, "wb").write(encode_batch([(5, 7, b"k", b"v")], base_offset=5))
    >>> for line in dump_lines(p, DumpOptions(print_data_log=True), shown_path="t-0/00000000000000000005.log"):
    ...     print(line[:58])
    Dumping t-0/00000000000000000005.log
    Log starting offset: 5
    baseOffset: 5 lastOffset: 5 count: 1 baseSequence: -1 last
    | offset: 5 CreateTime: 7 keySize: 1 valueSize: 1 sequence
    """
    opts = options or DumpOptions()
    era = KafkaEra.of(kafka_version)
    log = problems if problems is not None else ProblemLog(str(path), strict=strict)
    head = _file_head(path, opts, era, shown_path, log)
    yield from head.lines
    if _unreadable(path, head, log):
        return
    if head.kind != "log":
        if head.kind in _SIDECARS:
            yield from _SIDECARS[head.kind](path, head.name, head.shown, era, log, opts)
        return
    with _LogFrames(path, head.name, opts, era, log) as frames:
        pos: int | None = 0
        while pos is not None:
            lines, pos = frames.frame(pos)
            yield from lines


def _unreadable(path: str | os.PathLike[str], head: _Head, log: ProblemLog) -> bool:
    """Whether the file cannot be read (reported as the failure of Kafka's tool there; a missing
    ``.txnindex`` is an empty one to Kafka)."""
    if not head.kind:
        return False
    try:
        with open(path, "rb"):
            return False
    except OSError as exc:
        if head.kind == ".txnindex" and isinstance(exc, FileNotFoundError):
            return True
        why = f"{exc.strerror or exc} (Kafka's tool fails here: {type(exc).__name__})"
        log.report(0, TOOL_FAILURE, f"{head.name}: {why}")
        return True


@dataclass
class _Head:
    """What Kafka's tool prints before the entries of a file, and how it goes on."""

    name: str  # the file name Kafka reads offsets from (of the path it was given)
    shown: str  # the path after "Dumping "
    lines: list[str]
    kind: str  # "log" | ".index" | ".timeindex" | ".txnindex" | ".snapshot" | "" (nothing more)


def _file_head(
    path: str | os.PathLike[str], opts: DumpOptions, era: KafkaEra, shown_path: str | None, log: ProblemLog
) -> _Head:
    # Kafka takes the base offset (and the name in its trailer) from the path it was given
    name = os.path.basename(os.fspath(path) if shown_path is None else shown_path)
    shown = java_file_path(path) if shown_path is None else shown_path
    head = _Head(name, shown, ["Dumping " + shown], "")
    if "." not in name:
        if era.scala:  # filename.substring(lastIndexOf(".")) with -1 throws
            log.report(0, TOOL_FAILURE, f"{name}: a file name without a dot (Kafka's tool fails here)")
        else:
            log.report(0, "unsupported", f"{name}: Kafka's tool ignores this file (stderr: Ignoring unknown file)")
        return head
    suffix = name[name.rfind(".") :]
    if suffix == ".checkpoint" and not era.snapshots:
        log.report(
            0,
            "unsupported",
            f"Kafka {'.'.join(map(str, era.version))} does not dump .checkpoint files (stderr: Ignoring unknown file)",
        )
        return head
    if suffix in _SIDECARS:
        head.kind = suffix
        return head
    if suffix not in (".log", ".checkpoint"):
        log.report(0, "unsupported", f"{name}: Kafka's tool ignores this file (stderr: Ignoring unknown file)")
        return head
    if suffix == ".log":
        base = name.split(".")[0]
        if not _BASE_NAME.match(base):
            log.report(
                0, TOOL_FAILURE, f"{name}: the base offset in the file name is not a number (Kafka's tool fails here)"
            )
            return head
        head.lines.append(f"{era.log_start_label}{int(base)}")
    elif name == "bootstrap.checkpoint":
        head.lines.append("KRaft bootstrap snapshot")
    else:
        from workbench.formats.segment import parse_checkpoint_name

        parsed = parse_checkpoint_name(name)
        if parsed is None:
            log.report(0, TOOL_FAILURE, f"{name}: not a <endOffset>-<epoch>.checkpoint name (Kafka's tool fails here)")
            return head
        head.lines.append(f"Snapshot end offset: {parsed[0]}, epoch: {parsed[1]}")
    head.kind = "log"
    return head


class _LogFrames:
    """Kafka's reading of a log or snapshot, one batch ("frame") at a time, as Python lines.

    ``frame(pos)`` gives the lines of the batch Kafka frames at ``pos`` and the position of the
    next one (``None``: the dump of this file ends there). Open as a context manager.
    """

    def __init__(
        self, path: str | os.PathLike[str], name: str, opts: DumpOptions, era: KafkaEra, log: ProblemLog
    ) -> None:
        self.path = path
        self.name = name
        self.opts = opts
        self.era = era
        self.log = log
        self.deep = opts.deep
        self.position_box = [0]
        self.payloads = _Payloads(opts.decoder, era, log, self.position_box) if opts.prints_contents else None
        self.f: BinaryIO | None = None
        self.size = 0
        self.end = 0

    def __enter__(self) -> _LogFrames:
        self.f = open(self.path, "rb")
        self.size = os.fstat(self.f.fileno()).st_size
        # FileRecords.open(file).slice(0, maxBytes): batches are framed within the first maxBytes
        self.end = min(self.size, max(self.opts.max_bytes, 0))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.f is not None:
            self.f.close()

    def frame(self, pos: int) -> tuple[list[str], int | None]:
        """The lines of the batch at ``pos`` and where the next batch starts (``None``: the end)."""
        path, era, opts, log, name = self.path, self.era, self.opts, self.log, self.name
        deep = self.deep
        assert self.f is not None
        if opts.max_bytes < 0:  # FileRecords.slice(0, maxBytes) throws
            log.report(0, TOOL_FAILURE, f"--max-bytes {opts.max_bytes} (Kafka: Invalid size)")
            return [], None
        frame = _next_frame(self.f, path, pos, self.end, log)
        batch = frame[0]
        if not _is_batch(batch):  # Kafka's reader ends here
            trailing, why = batch, str(frame[1])
            if trailing and opts.max_bytes == INT_MAX:
                log.report(pos, "stopped", f"Kafka's dump stops at byte {pos} of {self.size}: {why}")
                return [f"Found {trailing} invalid bytes at the end of {name}"], None
            if trailing is None:
                log.report(pos, TOOL_FAILURE, f"at byte {pos}: {why}")
            return [], None
        magic = int(frame[1])
        self.position_box[0] = pos
        if not batch.crc_valid:
            log.report(
                pos,
                "crc_mismatch",
                f"batch at byte {pos}: stored CRC {batch.crc} does not match its bytes (Kafka prints isvalid: false)",
            )
        if batch.attributes & 7 > 4:
            # the batch line fails at compresscodec: Kafka prints its start, unterminated, and stops
            log.report(
                pos,
                TOOL_FAILURE,
                f"batch at byte {pos}: unknown compression codec id "
                f"{batch.attributes & 7} (Kafka: Unknown compression type id)",
            )
            return [Unterminated(_batch_line(batch, pos, era).split(" position: ", 1)[0])], None
        if deep:
            local = ProblemLog(str(path))
            records = batch.records(local)
            if local.problems and local.problems[0].kind == "decompress_error" and batch.attributes & 7 == 1:
                records, local = _java_gzip_records(batch, local)
            for p in local.problems:
                log.report(p.position, p.kind, p.detail)
            records, failure = _kafka_record_failure(records, local, batch)
        else:
            records, failure = [], None
        batch.magic = magic
        lines: list[str] = []
        if era.record_form != "2.1" or not deep:
            lines.append(_batch_line(batch, pos, era))
        if deep:
            lines.extend(_record_lines(batch, pos, records, era, opts, self.payloads))
        if failure is not None:
            log.report(pos, TOOL_FAILURE, f"batch at byte {pos}: {failure}")
            return lines, None
        return lines, pos + batch.size
