"""The streaming writer (compiled runs over clean batches, Python lines around damage) and the entry points."""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterable
from dataclasses import replace
from typing import Any, BinaryIO, TextIO

from crc32c import crc32c as _crc32c

from workbench.errors import ConfigError
from workbench.formats.dumptext_write.indexes import _SIDECARS
from workbench.formats.dumptext_write.logfile import _file_head, _LogFrames, _unreadable
from workbench.formats.dumptext_write.options import (
    _DECODER_FLAGS,
    DECODERS,
    DumpOptions,
    KafkaEra,
    _has_flag,
    options_from_args,  # noqa: F401  (used by write_kafka_dump's docstring example)
)
from workbench.formats.dumptext_write.reading import _CODEC_TEXT, TOOL_FAILURE, Unterminated
from workbench.formats.problems import ProblemLog
from workbench.formats.topics import decoder_for


class Sink:
    """Where dump text goes: bytes to a binary stream, or to a text stream (its ``buffer`` when it
    has one, e.g. ``sys.stdout``; decoded for an ``io.StringIO``)."""

    def __init__(self, out: TextIO | BinaryIO) -> None:
        self.out = out
        self.text: TextIO | None = None
        self.raw: BinaryIO | None = None
        if isinstance(out, io.TextIOBase):
            buffer = getattr(out, "buffer", None)
            if buffer is not None:
                out.flush()
                self.raw = buffer
            else:
                self.text = out
        else:
            self.raw = out  # type: ignore[assignment]

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Write bytes (UTF-8 text)."""
        if self.raw is not None:
            self.raw.write(data)
        else:
            assert self.text is not None
            self.text.write(bytes(data).decode("utf-8", "surrogateescape"))

    def lines(self, lines: list[str]) -> None:
        """Write lines, each with its line break (none after an :class:`Unterminated` one)."""
        if not lines:
            return
        text = "\n".join(lines) + ("" if isinstance(lines[-1], Unterminated) else "\n")
        if self.raw is not None:
            self.raw.write(text.encode("utf-8", "surrogateescape"))
        else:
            assert self.text is not None
            self.text.write(text)

    def flush(self) -> None:
        """Flush the stream."""
        (self.raw if self.raw is not None else self.out).flush()


_SHALLOW_HDR = struct.Struct(">qiibIhiqqqhii")
_WINDOW = 16 << 20  # file bytes read at a time by the fast paths
_META_ROWS = 1 << 16
_OUT_BYTES = 8 << 20
_MAP_BYTES = 64 << 20  # file bytes mapped at a time by the shallow writer


def _last_sequence(bseq: int, lod: int) -> int:
    """``DefaultRecordBatch.lastSequence()`` (Java ``int`` arithmetic)."""
    if bseq == -1:
        return -1

    def i32(v: int) -> int:
        v &= 0xFFFFFFFF
        return v - (1 << 32) if v >= 1 << 31 else v

    if bseq > i32(0x7FFFFFFF - lod):
        return i32(lod - i32(0x7FFFFFFF - bseq) - 1)
    return i32(bseq + lod)


_POOL: list[object] = []


def _crc_pool() -> object:
    """Two threads for the CRC checks (``crc32c`` releases the GIL)."""
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(2, thread_name_prefix="dump-crc"))
    return _POOL[0]


def _first_bad_crc(mv: memoryview, heads: list[tuple[int, int, tuple]]) -> int:
    """Index of the first batch whose stored CRC-32C does not match its bytes (``len(heads)``: none)."""
    crc = _crc32c
    for k, (i, _, h) in enumerate(heads):
        if crc(mv[i + 21 : i + 12 + h[1]]) != h[4]:
            return k
    return len(heads)


def _check_crcs(mv: memoryview, heads: list[tuple[int, int, tuple]]) -> list[tuple[object, int, int]]:
    """Start checking the CRCs of ``heads`` in two threads: ``(future of :func:`_first_bad_crc`, first
    index, count)`` per half, so that the caller formats the lines meanwhile."""
    pool = _crc_pool()
    n = len(heads)
    parts = [(0, n)] if n < 16 or (os.cpu_count() or 1) < 2 else [(0, n // 2), (n // 2, n - n // 2)]
    return [(pool.submit(_first_bad_crc, mv, heads[a : a + k]), a, k) for a, k in parts]  # type: ignore[attr-defined]


def _first_bad(checks: list[tuple[object, int, int]]) -> int | None:
    """Index of the first batch whose CRC does not match (``None``: all match), once every check is done."""
    found = [(a + k, k < count) for future, a, count in checks for k in (future.result(),)]  # type: ignore[attr-defined]
    return next((i for i, bad in found if bad), None)


class _FastLog:
    """Writes the clean batches of a log or snapshot from position ``pos`` on, fast, and returns
    where the first batch the Python writer must take is (see :func:`write_log_dump`)."""

    def __init__(self, frames: _LogFrames, sink: Sink, strict: bool) -> None:
        self.frames = frames
        self.sink = sink
        self.opts = frames.opts
        self.era = frames.era
        self.f = frames.f
        self.end = frames.end
        self.win = bytearray(0)
        self.deep = frames.deep
        # records through the compiled kernel: 3.0+ text forms; decoders through the text table
        self.kernel = self.deep and self.era.record_form == "3.0"
        decoder_texts = self.opts.prints_contents and self.opts.decoder != "none"
        if decoder_texts and (strict or frames.payloads is None):
            self.kernel = False
        self.texts = _DecoderTexts(frames, self.opts.decoder) if self.kernel and decoder_texts else None

    @staticmethod
    def usable(frames: _LogFrames) -> bool:
        """Whether the fast paths apply (else every batch goes through the Python writer)."""
        return frames.era.record_form != "2.1" and frames.opts.max_bytes >= 0

    def _read(self, pos: int, want: int) -> memoryview:
        if len(self.win) < want:
            self.win = bytearray(want)
        mv = memoryview(self.win)
        assert self.f is not None
        n = os.preadv(self.f.fileno(), [mv[:want]], pos) if hasattr(os, "preadv") else self._read_seek(pos, mv[:want])
        return mv[:n]

    def _read_seek(self, pos: int, mv: memoryview) -> int:
        assert self.f is not None
        self.f.seek(pos)
        return self.f.readinto(mv) or 0  # type: ignore[attr-defined]

    def run(self, pos: int) -> int | None:
        """Write every clean batch from ``pos``; the position of the first other one (``None``: the end)."""
        if not self.deep or not self.kernel:
            if self.deep:
                return pos
            return self._shallow(pos)
        return self._deep(pos)

    # shallow: batch lines only, no compiled code (a start-up of its own would cost more than it saves)

    def _shallow(self, pos: int) -> int:
        """Batch lines straight from the headers: the file is memory-mapped 64 MiB at a time, clean
        headers are hopped over, then the CRCs of the window's batches are checked in two threads
        (``crc32c`` releases the GIL) before their lines are written."""
        import mmap

        era, end = self.era, self.end
        assert self.f is not None
        fd = self.f.fileno()
        gran = mmap.ALLOCATIONGRANULARITY
        span = _MAP_BYTES
        while end - pos > 17:
            w0 = pos - pos % gran
            w1 = min(end, w0 + span)
            try:
                m = mmap.mmap(fd, w1 - w0, access=mmap.ACCESS_READ, offset=w0)
            except (ValueError, OSError):
                return pos  # not mappable: the Python writer
            mv = memoryview(m)
            try:
                nxt, why = self._shallow_window(mv, w0, pos, w1, end, era)
            finally:
                mv.release()
                m.close()
            if why == "window" and nxt == pos:
                if w1 >= end:
                    return pos
                span *= 2  # one batch larger than the window
                continue
            span = _MAP_BYTES
            if why != "window":
                return nxt
            pos = nxt
        return pos

    def _shallow_window(self, mv: memoryview, w0: int, pos: int, w1: int, end: int, era: KafkaEra) -> tuple[int, str]:
        """Lines of the clean batches wholly inside ``[w0, w1)`` from ``pos``: ``(next position, why it
        stopped: "window" or "batch")``."""
        unpack = _SHALLOW_HDR.unpack_from
        dh = era.delete_horizon
        codecs = [c.upper() if era.codec_upper else c for c in _CODEC_TEXT]
        heads = []
        why = "window"
        while pos + 17 < end and pos + 61 <= w1:
            h = unpack(mv, pos - w0)
            length, magic, attrs = h[1], h[3], h[5]
            if length < 49 or pos + 12 + length > end or magic != 2 or attrs & 7 > 4:
                why = "batch"
                break
            if pos + 12 + length > w1:
                break
            heads.append((pos - w0, pos, h))
            pos += 12 + length
        else:
            if pos + 17 >= end or pos + 61 > end:
                why = "batch"  # the end: the Python writer says what is left there
        if not heads:
            return pos, why
        checks = _check_crcs(mv, heads)  # in two threads, while the lines are formatted here
        out: list[str] = []
        for _, at, h in heads:
            (base, length, ple, _, stored, attrs, lod, base_ts, max_ts, pid, pep, bseq, count) = h
            head = (
                f"baseOffset: {base} lastOffset: {base + lod} count: {count} baseSequence: {bseq} "
                f"lastSequence: {_last_sequence(bseq, lod)} producerId: {pid} producerEpoch: {pep} "
                f"partitionLeaderEpoch: {ple} isTransactional: {'true' if attrs & 0x10 else 'false'} "
                f"isControl: {'true' if attrs & 0x20 else 'false'}"
            )
            if dh:
                head += " deleteHorizonMs: " + (f"OptionalLong[{base_ts}]" if attrs & 0x40 else "OptionalLong.empty")
            out.append(
                f"{head} position: {at} {'LogAppendTime' if attrs & 8 else 'CreateTime'}: {max_ts} "
                f"size: {12 + length} magic: 2 compresscodec: {codecs[attrs & 7]} crc: {stored} isvalid: true"
            )
        bad = _first_bad(checks)
        if bad is not None:  # the first batch whose CRC does not match: the Python writer's
            del out[bad:]
            self._flush_lines(out)
            return heads[bad][1], "batch"
        self._flush_lines(out)
        return pos, why

    def _flush_lines(self, out: list[str]) -> None:
        if out:
            self.sink.lines(out)
            out.clear()

    # deep: the compiled kernel

    def _deep(self, pos: int) -> int | None:
        import numpy as np

        from workbench.formats import dumpfast as K
        from workbench.formats.batch import MAX_BATCH_BYTES

        era, opts, end = self.era, self.opts, self.end
        meta = np.zeros((_META_ROWS, K.M_COLUMNS), dtype=np.int64)
        out = np.empty(_OUT_BYTES, dtype=np.uint8)
        o = 0
        empty = np.zeros(0, dtype=np.int64)
        no_texts = np.zeros(1, dtype=np.int64)
        no_data = np.zeros(0, dtype=np.uint8)
        want = _WINDOW
        while True:
            size = min(want, end - pos)
            if size <= 17:
                break
            mv = self._read(pos, size)
            win = np.frombuffer(mv, dtype=np.uint8)
            n, stop, why = K.hop(win, pos, pos, end, meta, 0, MAX_BATCH_BYTES, True)
            if n == 0:
                if why == K.HOP_WINDOW and size < end - pos:
                    length = struct.unpack_from(">i", mv, 8)[0] if len(mv) >= 12 else 0
                    want = max(want, 12 + length, 61)
                    continue
                break
            want = _WINDOW
            # CRCs and decompression: a batch the Python writer must take ends the run
            keep, stage = K.stage_run(mv, meta, n, no_data)
            run = meta[:keep]
            if self.texts is not None:
                keep2, key_text, pay_text, text_data, text_off = self.texts.table(win, stage, run)
                if keep2 < keep:
                    keep = keep2
                    run = meta[:keep]
                mode = K.TEXT_TABLE
            else:
                key_text = pay_text = empty
                text_data, text_off, mode = no_data, no_texts, K.TEXT_NONE
            j = 0
            while j < keep:
                j, o, status = K.kafka_text_run(
                    win,
                    stage,
                    run,
                    j,
                    out,
                    o,
                    True,
                    opts.prints_contents,
                    opts.skip_record_metadata,
                    era.scala,
                    era.delete_horizon,
                    mode,
                    key_text,
                    pay_text,
                    text_data,
                    text_off,
                )
                if status == K.DONE:
                    break
                if status == K.FLUSH and o == 0:  # one batch's text is larger than the buffer
                    out = np.empty(2 * len(out), dtype=np.uint8)
                    continue
                self.sink.write(out.data[:o])
                o = 0
                if status == K.FALLBACK:
                    at = int(run[j, K.M_POSITION])
                    lines, nxt = self.frames.frame(at)
                    self.sink.lines(lines)
                    if nxt is None:
                        return None
                    j += 1
            if o:
                self.sink.write(out.data[:o])
                o = 0
            if keep < n:
                return int(meta[keep, K.M_POSITION])
            pos = stop
            if why != K.HOP_WINDOW and why != K.HOP_FULL:
                break
        return pos


class _DecoderTexts:
    """Key and payload texts of a decoder for the records of a run (:class:`dumpfast.TextMemo`):
    computed once per distinct key and value; records whose text depends on their offset, or whose
    decoding is a problem, are done one by one, in order, with the problems reported."""

    def __init__(self, frames: _LogFrames, decoder: str) -> None:
        from workbench.formats.dumpfast import TextMemo

        assert frames.payloads is not None
        self.payloads = frames.payloads
        self.memo = TextMemo(decoder in ("offsets", "transaction-log", "share-group-state"), 2)

    def _parse(
        self, key: bytes | None, value: bytes | None, offset: int, log: ProblemLog
    ) -> tuple[bytes | None, bytes | None]:
        from workbench.formats.batch import Record

        payloads = self.payloads
        saved = payloads.log
        payloads.log = log
        try:
            k, v = payloads.parse(Record(offset, 0, key, value, []))
        finally:
            payloads.log = saved
        return (
            None if k is None else k.encode("utf-8", "surrogateescape"),
            None if v is None else v.encode("utf-8", "surrogateescape"),
        )

    def _compute(self, key: bytes | None, value: bytes | None, offset: int) -> tuple[tuple, bool]:
        quiet = ProblemLog()
        texts = self._parse(key, value, offset, quiet)
        return texts, not quiet.problems

    def _alone(self, key: bytes | None, value: bytes | None, offset: int, position: int) -> tuple:
        self.payloads.position[0] = position
        return self._parse(key, value, offset, self.payloads.log)

    def table(self, win: Any, stage: Any, run: Any) -> Any:
        """``(batches kept, key text per record, payload text per record, text bytes, text offsets)``."""
        keep, idx, data, off = self.memo.table(win, stage, run, self._compute, self._alone)
        return keep, idx[0], idx[1], data, off


def write_log_dump(
    path: str | os.PathLike[str],
    sink: Sink,
    options: DumpOptions | None = None,
    *,
    kafka_version: str | None = None,
    shown_path: str | None = None,
    problems: ProblemLog | None = None,
    strict: bool = False,
    compiled: bool = True,
) -> None:
    """Write ``kafka-dump-log``'s text of one file to ``sink``: :func:`dump_lines`' text, streamed.

    Clean v2 batches (Kafka frames them as the careful reader does: a clean header, the batch
    within the file, a matching CRC, a known codec, not a control batch when records are
    printed) are written by compiled code (records and the batch line by
    :func:`workbench.formats.dumpfast.kafka_text_run`; shallow batch lines straight from the
    headers); every other batch, and whatever follows where Kafka's reader stops, by the
    Python writer of :func:`dump_lines`. Memory stays flat: a 16 MiB window of the file and an
    8 MiB output buffer at a time (64 MiB mapped for batch lines alone). ``compiled=False``
    writes every batch with the Python writer (the reference the tests compare with).
    """
    opts = options or DumpOptions()
    era = KafkaEra.of(kafka_version)
    log = problems if problems is not None else ProblemLog(str(path), strict=strict)
    head = _file_head(path, opts, era, shown_path, log)
    sink.lines(head.lines)
    if _unreadable(path, head, log):
        return
    if head.kind != "log":
        if head.kind in _SIDECARS:
            sink.lines(list(_SIDECARS[head.kind](path, head.name, head.shown, era, log, opts)))
        return
    with _LogFrames(path, head.name, opts, era, log) as frames:
        fast = _FastLog(frames, sink, strict or log.strict) if compiled and _FastLog.usable(frames) else None
        pos: int | None = 0
        while pos is not None:
            if fast is not None:
                pos = fast.run(pos)
                if pos is None:
                    break
            lines, pos = frames.frame(pos)
            sink.lines(lines)


def dump_text(
    path: str | os.PathLike[str],
    options: DumpOptions | None = None,
    *,
    kafka_version: str | None = None,
    shown_path: str | None = None,
    problems: ProblemLog | None = None,
    strict: bool = False,
) -> str:
    """The whole stdout text of ``kafka-dump-log`` for one file (see :func:`dump_lines`).

    >>> import os, tempfile
    >>> from workbench.formats.batch import encode_batch
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "00000000000000000000.log")
    >>> _ = open(p, "wb").write(encode_batch([(0, 1, None, b"v")], base_offset=0))
    >>> dump_text(p, shown_path="t-0/00000000000000000000.log").splitlines()[:2]
    ['Dumping t-0/00000000000000000000.log', 'Log starting offset: 0']
    """
    buf = io.BytesIO()
    write_log_dump(
        path, Sink(buf), options, kafka_version=kafka_version, shown_path=shown_path, problems=problems, strict=strict
    )
    return buf.getvalue().decode("utf-8", "surrogateescape")


def write_kafka_dump(
    files: Iterable[str | os.PathLike[str]],
    *,
    out: TextIO | BinaryIO,
    options: DumpOptions | None = None,
    kafka_version: str | None = None,
    decoder: str | None = None,
    payloads: bool | None = None,
    strict: bool = False,
    problems: list[ProblemLog] | None = None,
    compiled: bool = True,
) -> int:
    """Write ``kafka-dump-log`` text of ``files`` to ``out`` (``workbench dump --format kafka``); 0, or 1 on problems.

    Each file as :func:`write_log_dump` writes it. As with Kafka's tool, the run ends at a file on which
    the tool fails (``tool_failure``); later files get a ``not_dumped`` problem. Without ``options``:
    Kafka's defaults, or ``--deep-iteration`` plus ``decoder``/``payloads`` when given. ``decoder``
    ``auto`` picks each file's decoder by topic among those this release's tool has; a name overrides
    ``options.decoder``. ``compiled=False`` uses the Python writer for every batch.

    >>> import io, os, tempfile
    >>> from workbench.formats.batch import encode_batch
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "00000000000000000000.log")
    >>> _ = open(p, "wb").write(encode_batch([(0, 1, b"k", b"v")], base_offset=0))
    >>> buf = io.StringIO()
    >>> write_kafka_dump([p], out=buf, options=options_from_args(["--print-data-log"], "3.9.2"), kafka_version="3.9.2")
    0
    >>> buf.getvalue().splitlines()[-1][-17:]
    'key: k payload: v'
    """
    era = KafkaEra.of(kafka_version)
    if options is None:
        if decoder is None and payloads is None:
            options = DumpOptions(deep_iteration=False)
        else:
            options = DumpOptions(print_data_log=bool(payloads), deep_iteration=True)
    sink = Sink(out)
    status = 0
    failed: str | None = None
    for path in files:
        log = ProblemLog(str(path), strict=strict)
        if problems is not None:
            problems.append(log)
        if failed is not None:
            # Kafka's tool stopped at the failure in an earlier file and dumps nothing more
            log.report(0, "not_dumped", f"not dumped: Kafka's tool fails in {failed} before this file")
            status = 1
            continue
        opts = options
        if decoder is not None:
            chosen = decoder_for(os.fspath(path), decoder, kafka_only=True)
            if chosen not in DECODERS:
                raise ConfigError(f"decoder {chosen!r} is not one of Kafka's dump tool; expected {', '.join(DECODERS)}")
            if chosen != "none" and not _has_flag(era, _DECODER_FLAGS[chosen]):
                chosen = "none"  # this release's tool has no such decoder
            opts = replace(opts, decoder=chosen)
        write_log_dump(path, sink, opts, kafka_version=kafka_version, problems=log, strict=strict, compiled=compiled)
        if log.problems:
            status = 1
        if any(p.kind == TOOL_FAILURE for p in log.problems):
            failed = str(path)
    sink.flush()
    return status
