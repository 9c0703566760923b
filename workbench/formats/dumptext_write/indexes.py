"""Dumps of the index, time index, transaction index and producer snapshot beside a log (reference §10.6)."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from workbench.formats.dumptext_write.options import INT_MAX, DumpOptions, KafkaEra
from workbench.formats.dumptext_write.reading import (
    _BASE_NAME,
    _HEADER_SIZE_UP_TO_MAGIC,
    _LOG_HDR,
    _RECORD_OVERHEAD_V0,
    TOOL_FAILURE,
    _is_batch,
    _java_gzip_records,
    _kafka_record_failure,
    _next_frame,
)
from workbench.formats.problems import ProblemLog

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_TXN_ENTRY = struct.Struct(">hqqqq")


def _sibling(path: str | os.PathLike[str], name: str, suffix: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(os.fspath(path))), name.split(".")[0] + suffix)


def _index_base(name: str, log: ProblemLog) -> int | None:
    base = name.split(".")[0]
    if not _BASE_NAME.match(base):
        log.report(
            0, TOOL_FAILURE, f"{name}: the base offset in the file name is not a number (Kafka's tool fails here)"
        )
        return None
    return int(base)


def _needs(files: list[str], log: ProblemLog) -> bool:
    missing = [f for f in files if not os.path.exists(f)]
    if missing:
        log.report(0, TOOL_FAILURE, f"Kafka's tool needs {', '.join(missing)} for this dump and fails without it")
    return not missing


class _LogView:
    """The log beside an index, read as Kafka's ``FileRecords``/``FileLogInputStream`` frame it
    (headers only), for the checks of ``.index`` and ``.timeindex`` dumps."""

    def __init__(self, path: str) -> None:
        self.f = open(path, "rb")
        self.size = os.fstat(self.f.fileno()).st_size
        self.chains: dict[int, str | None] = {}  # frame position -> failure of the chain from it

    def close(self) -> None:
        self.f.close()

    def header(self, pos: int, n: int) -> bytes:
        self.f.seek(pos)
        return self.f.read(n)

    def frame(self, pos: int, end: int) -> tuple[int, int, int] | str | None:
        """The batch framed at ``pos`` within ``[pos, end)``: ``(size, magic, offset field)``;
        ``None`` where the stream ends; the failure text where Kafka throws."""
        if pos >= end - _HEADER_SIZE_UP_TO_MAGIC:
            return None
        head = self.header(pos, _HEADER_SIZE_UP_TO_MAGIC)
        offset, length = _LOG_HDR.unpack_from(head, 0)
        if length < _RECORD_OVERHEAD_V0:
            return f"CorruptRecordException: Found record size {length} smaller than minimum record overhead (14)"
        if pos > end - 12 - length:
            return None
        return 12 + length, struct.unpack_from(">b", head, 16)[0], offset

    def last_offset(self, pos: int, frame: tuple[int, int, int]) -> int | str:
        """``batch.lastOffset()``: the offset field of a legacy entry, else from the v2 header
        (61 bytes, read whatever the batch's own size)."""
        size, magic, offset = frame
        if magic < 2:
            return offset
        head = self.header(pos, 61)
        if len(head) < 61:
            return f"KafkaException: Failed to load record batch at position {pos} (EOFException)"
        base, lod = struct.unpack_from(">q", head, 0)[0], struct.unpack_from(">i", head, 23)[0]
        return _wrap_long(base + lod)

    def chain_failure(self, pos: int) -> str | None:
        """The failure met while framing every batch from ``pos`` to the end (``None``: none)."""
        seen = []
        failure: str | None = None
        while True:
            if pos in self.chains:
                failure = self.chains[pos]
                break
            seen.append(pos)
            f = self.frame(pos, self.size)
            if f is None:
                break
            if isinstance(f, str):
                failure = f
                break
            pos += f[0]
        for p in seen:
            self.chains[p] = failure
        return failure


def _wrap_long(v: int) -> int:
    """``v`` in Java ``long`` arithmetic."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _slice_check(pos: int, size: int) -> str | None:
    """Why ``FileRecords.slice(pos, ...)`` throws, or ``None``."""
    if pos < 0:
        return f"IllegalArgumentException: Invalid position: {pos}"
    if pos > size:
        return f"IllegalArgumentException: Slice from position {pos} exceeds end position of the log ({size} bytes)"
    return None


def _index_lookup(entries: list[tuple[int, int]], base: int, target: int) -> int:
    """``OffsetIndex.lookup(target).position`` (largest entry <= target, searched as Kafka does:
    the warm section of the last 1024 entries first)."""
    n = len(entries)
    if n == 0:
        return 0

    def key(i: int) -> int:
        return base + entries[i][0]

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            k = key(mid)
            if k > target:
                hi = mid - 1
            elif k < target:
                lo = mid
            else:
                return mid
        return lo

    first_hot = max(0, n - 1 - 1024)
    if key(first_hot) < target:
        return entries[search(first_hot, n - 1)][1]
    if key(0) > target:
        return 0
    return entries[search(0, first_hot)][1]


def _dump_offset_index(
    path: str | os.PathLike[str], name: str, shown: str, era: KafkaEra, log: ProblemLog, opts: DumpOptions
) -> Iterator[str]:
    """``offset: N position: P`` per entry, after the check Kafka makes of it against the log: the
    batch at ``P`` (within ``--max-message-size`` bytes) must exist, and its last offset be ``N``
    (a mismatch is a problem; Kafka's tool reports it on stderr). Stops at the first zero entry
    after entry 0. ``--index-sanity-check`` and ``--verify-index-only`` as in Kafka's tool."""
    base = _index_base(name, log)
    if base is None or not _needs([_sibling(path, name, ".log")], log):
        return
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // 8
    if n == 0:
        yield f"{shown} is empty."
        return
    entries = list(_OFFSET_ENTRY.iter_unpack(data[: n * 8]))
    if opts.index_sanity_check:
        last = base + entries[-1][0]
        if last < base:
            log.report(
                (n - 1) * 8,
                TOOL_FAILURE,
                f"CorruptIndexException: the last offset is {last} which is less than the base offset {base}",
            )
            return
        if len(data) % 8:
            log.report(0, TOOL_FAILURE, f"CorruptIndexException: found {len(data)} bytes which is not a multiple of 8")
            return
        yield f"{shown} passed sanity check."
        return
    view = _LogView(_sibling(path, name, ".log"))
    try:
        for i, (rel, pos) in enumerate(entries):
            offset = base + rel
            if offset == base and i > 0:
                return
            why = _slice_check(pos, view.size)
            if why is None:
                end = pos + opts.max_message_size
                if end > INT_MAX or end < 0 or end > view.size:
                    end = view.size
                frame = view.frame(pos, end)
                if frame is None:
                    why = f"NoSuchElementException: no batch at position {pos} within {opts.max_message_size} bytes"
                elif isinstance(frame, str):
                    why = frame
                else:
                    last = view.last_offset(pos, frame)
                    if isinstance(last, str):
                        why = last
                    elif last != offset:
                        log.report(
                            i * 8,
                            "index_mismatch",
                            f"Index offset: {offset}, log offset: {last} "
                            f"(Kafka: Mismatches in :{os.path.abspath(path)})",
                        )
            if why is not None:
                log.report(i * 8, TOOL_FAILURE, f"entry {i} (offset {offset}, position {pos}): {why}")
                return
            if not opts.verify_index_only:
                yield f"offset: {offset} position: {pos}"
    finally:
        view.close()


def _records_max_timestamp(view: _LogView, path: str, pos: int, size: int) -> int | str:
    """The largest record timestamp of the batch at ``pos`` (Kafka iterates its records), or
    the failure text where that iteration throws."""
    quiet = ProblemLog(path)
    frame = _next_frame(view.f, path, pos, view.size, quiet)
    batch = frame[0]
    if not _is_batch(batch):
        return f"batch at byte {pos}: {frame[1]}"
    if batch.attributes & 7 > 4 and batch.magic >= 2:
        return f"Unknown compression type id: {batch.attributes & 7}"
    local = ProblemLog(path)
    records = batch.records(local)
    if local.problems and local.problems[0].kind == "decompress_error" and batch.attributes & 7 == 1:
        records, local = _java_gzip_records(batch, local)
    records, failure = _kafka_record_failure(records, local, batch)
    if failure is not None:
        return failure
    best = -1  # RecordBatch.NO_TIMESTAMP
    for r in records:
        best = max(best, r.timestamp)
    return best


def _dump_time_index(
    path: str | os.PathLike[str], name: str, shown: str, era: KafkaEra, log: ProblemLog, opts: DumpOptions
) -> Iterator[str]:
    """``timestamp: T offset: N`` per entry, after Kafka's check of it against the log and the
    offset index (the batch holding ``N`` is found from the ``.index`` position, its records'
    largest timestamp must be ``T``; mismatches are problems, reported by Kafka on stderr).
    Stops at the first zero entry after entry 0. ``--index-sanity-check``/``--verify-index-only``
    as in Kafka's tool. Kafka 4.x frames every batch from the looked-up position to the end of
    the log for each entry, 3.x only up to the batch it looks for: a damaged log fails each
    release's tool at its own place."""
    base = _index_base(name, log)
    if base is None or not _needs([_sibling(path, name, ".log"), _sibling(path, name, ".index")], log):
        return
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // 12
    entries = list(_TIME_ENTRY.iter_unpack(data[: n * 12]))
    if opts.index_sanity_check:
        last_ts, last_rel = entries[-1] if entries else (-1, 0)
        if entries and last_ts < entries[0][0]:
            log.report(
                (n - 1) * 12,
                TOOL_FAILURE,
                f"CorruptIndexException: the last timestamp is {last_ts} which is less than the first timestamp "
                f"{entries[0][0]}",
            )
            return
        if entries and base + last_rel < base:
            log.report(
                (n - 1) * 12,
                TOOL_FAILURE,
                f"CorruptIndexException: the last offset is {base + last_rel} which is less than the first "
                f"offset {base}",
            )
            return
        if len(data) % 12:
            log.report(0, TOOL_FAILURE, f"CorruptIndexException: found {len(data)} bytes which is not a multiple of 12")
            return
        yield f"{shown} passed sanity check."
        return
    with open(_sibling(path, name, ".index"), "rb") as f:
        idx = f.read()
    offsets = list(_OFFSET_ENTRY.iter_unpack(idx[: len(idx) // 8 * 8]))
    log_path = _sibling(path, name, ".log")
    view = _LogView(log_path)
    where = os.path.abspath(path)
    try:
        prev_ts = -1
        for i, (ts, rel) in enumerate(entries):
            offset = base + rel
            if offset == base and i > 0:
                return
            position = _index_lookup(offsets, base, offset)
            why = _slice_check(position, view.size)
            found: tuple[int, int] | None = None  # (position, last offset) of the first batch with last >= offset
            if why is None and not era.scala:
                why = view.chain_failure(position)  # the Java tool collects every batch first
            p = position
            while why is None:
                frame = view.frame(p, view.size)
                if frame is None:
                    break
                if isinstance(frame, str):
                    why = frame
                    break
                last = view.last_offset(p, frame)
                if isinstance(last, str):
                    why = last
                    break
                if last >= offset:
                    found = (p, last)
                    break
                p += frame[0]
            if why is None:
                if found is None:
                    log.report(
                        i * 12,
                        "index_mismatch",
                        f"Indexed offset: {offset}, found log offset: -1 "
                        f"(Kafka: the following indexed offsets are not found in the log {where})",
                    )
                elif found[1] != offset:
                    log.report(
                        i * 12,
                        "index_mismatch",
                        f"Indexed offset: {offset}, found log offset: {found[1]} "
                        f"(Kafka: the following indexed offsets are not found in the log {where})",
                    )
                else:
                    best = _records_max_timestamp(view, log_path, found[0], view.size)
                    if isinstance(best, str):
                        why = best
                    else:
                        if best != ts:
                            log.report(
                                i * 12,
                                "index_mismatch",
                                f"Index timestamp: {ts}, log timestamp: {best} "
                                f"(Kafka: Found timestamp mismatch in :{where})",
                            )
                        if prev_ts >= ts:
                            log.report(
                                i * 12,
                                "index_mismatch",
                                f"Index timestamp: {ts}, Previously indexed "
                                f"timestamp: {prev_ts} (Kafka: Found out of order timestamp in :{where})",
                            )
            if why is not None:
                log.report(i * 12, TOOL_FAILURE, f"entry {i} (offset {offset}, timestamp {ts}): {why}")
                return
            if not opts.verify_index_only:
                yield f"timestamp: {ts} offset: {offset}"
            prev_ts = ts
    finally:
        view.close()


def _dump_txn_index(
    path: str | os.PathLike[str], name: str, shown: str, era: KafkaEra, log: ProblemLog, opts: DumpOptions
) -> Iterator[str]:
    """``version: V producerId: P firstOffset: F lastOffset: L lastStableOffset: S`` per entry."""
    if _index_base(name, log) is None:
        return
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // 34
    if len(data) % 34:
        log.report(n * 34, "truncated", f"{len(data) % 34} bytes after the last whole aborted-transaction entry")
    for i, (version, pid, first, last, lso) in enumerate(_TXN_ENTRY.iter_unpack(data[: n * 34])):
        if version != 0:
            log.report(
                i * 34, "unknown_version", f"aborted transaction entry version {version} (Kafka's tool fails here)"
            )
            return
        yield f"version: {version} producerId: {pid} firstOffset: {first} lastOffset: {last} lastStableOffset: {lso}"


def _dump_producer_snapshot(
    path: str | os.PathLike[str], name: str, shown: str, era: KafkaEra, log: ProblemLog, opts: DumpOptions
) -> Iterator[str]:
    """One line per producer; nothing (Kafka prints the error on stderr) for a corrupt file."""
    from workbench.formats.index import read_producer_snapshot

    if _index_base(name, log) is None:
        return
    local = ProblemLog(str(path))
    with open(path, "rb") as f:
        entries = read_producer_snapshot(f, str(path), problems=local)
    for p in local.problems:
        log.report(p.position, p.kind, p.detail)
    if local.problems:
        return
    sep = "" if era.scala else " "
    for e in entries:
        txn = "OptionalLong.empty" if e.current_txn_first_offset < 0 else f"OptionalLong[{e.current_txn_first_offset}]"
        if era.version[:2] < (3, 0):
            txn = "None" if e.current_txn_first_offset < 0 else f"Some({e.current_txn_first_offset})"
        line = (
            f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: "
            f"{e.coordinator_epoch} currentTxnFirstOffset: {txn}"
        )
        if era.version[:2] >= (3, 0):
            line += f" lastTimestamp: {e.timestamp}" + (" " if era.scala else "")
        else:
            line += " "
        if e.last_offset >= 0:
            first = e.last_sequence - e.offset_delta
            if e.last_sequence < e.offset_delta:
                first = 0x7FFFFFFF - (e.offset_delta - e.last_sequence) + 1
            line += (
                f"{sep}firstSequence: {first} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
            )
        yield line


_SIDECARS = {
    ".index": _dump_offset_index,
    ".timeindex": _dump_time_index,
    ".txnindex": _dump_txn_index,
    ".snapshot": _dump_producer_snapshot,
}
