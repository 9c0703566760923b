"""JSON lines of segments, snapshots and the files beside them (``workbench dump --format jsonl``).

One JSON object per line, in file order:

* ``{"kind": "batch", ...}`` for every batch (every header field; names as in the ``batches``
  table), followed by one ``{"kind": "record", ...}`` per record (offset, timestamp, key and
  value sizes, header keys; with ``payloads`` also ``key``/``value``/``headers`` in base64);
* a record of a control batch carries ``"control"`` (its type and fields), a record of an
  internal topic the decoded ``"payload"`` (:func:`payload_object`: KRaft metadata, consumer
  offsets and groups, transactions, share group state, remote log metadata, MirrorMaker 2
  offset syncs, checkpoints, heartbeats and Connect offsets);
* ``.index``, ``.timeindex``, ``.txnindex`` and producer ``.snapshot`` files give one object per
  entry (``offset_index``, ``time_index``, ``txn_index``, ``producer_state``);
* every problem met is a ``{"kind": "problem", ...}`` line after the file's objects, so a dump
  is never silently short.

Batches are read by the careful reader's rules (:func:`workbench.formats.batch.read_batches`:
damage is skipped and reported, reading resumes at the next valid batch), but where the file is
clean the text is written by compiled code (:func:`workbench.formats.dumpfast.jsonl_run`): runs
of clean v2 batches (a clean header, a matching CRC, a known codec, not a control batch) go
through the kernel, everything else through the Python objects of :func:`batch_object` and
:func:`record_object`, which define the output (the tests compare both paths).

Examples
--------
>>> import io, json, os, tempfile
>>> from workbench.formats.batch import encode_batch
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "00000000000000000000.log")
>>> _ = open(p, "wb").write(encode_batch([(0, 5, None, b"v", [("h", b"1")])], base_offset=0))
>>> buf = io.StringIO()
>>> write_jsonl([p], out=buf)
0
>>> [json.loads(line)["kind"] for line in buf.getvalue().splitlines()]
['batch', 'record']
>>> json.loads(buf.getvalue().splitlines()[1])["headerKeys"]
['h']
"""

from __future__ import annotations

import base64
import json
import os
import struct
from collections.abc import Iterable
from typing import Any, BinaryIO, TextIO

from workbench.formats.batch import MAX_BATCH_BYTES, Batch, Record, read_batches
from workbench.formats.problems import ProblemLog
from workbench.formats.topics import DECODERS, decoder_for

__all__ = ["batch_object", "payload_object", "record_object", "write_jsonl"]

_WINDOW = 16 << 20
_META_ROWS = 1 << 16
_OUT_BYTES = 8 << 20


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


def _default(value: object) -> object:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def _dumps(obj: object) -> str:
    return json.dumps(obj, default=_default)


def batch_object(batch: Batch) -> dict[str, Any]:
    """The JSON object of one batch (every header field, names as in the ``batches`` table)."""
    b = batch
    return {
        "kind": "batch", "path": b.path, "position": b.position, "baseOffset": b.base_offset,
        "lastOffset": b.last_offset, "count": b.record_count, "size": b.size,
        "magic": b.magic, "crc": b.crc, "isValid": b.crc_valid, "compression": b.compression,
        "timestampType": b.timestamp_type, "baseTimestamp": b.base_timestamp,
        "maxTimestamp": b.max_timestamp, "partitionLeaderEpoch": b.partition_leader_epoch,
        "producerId": b.producer_id, "producerEpoch": b.producer_epoch,
        "baseSequence": b.base_sequence, "isTransactional": b.is_transactional,
        "isControl": b.is_control, "deleteHorizon": b.has_delete_horizon,
    }  # fmt: skip


def payload_object(decoder: str, key: bytes | None, value: bytes | None) -> dict[str, Any] | None:
    """The decoded ``"payload"`` of a record of an internal topic (``None``: nothing to decode).

    Parameters
    ----------
    decoder : str
        One of :data:`workbench.formats.topics.DECODERS` (``none`` decodes nothing).
    key, value : bytes or None
        The record's key and value.

    Returns
    -------
    dict or None
        KRaft metadata and remote log metadata: ``type, version, data, error``; coordinator
        records (offsets, transactions, share group state): ``type, recordType, key,
        valueVersion, value, tombstone, error`` (consumer group members' subscriptions and
        assignments decoded); MirrorMaker 2 records: ``type, key, value, error``.

    Examples
    --------
    >>> payload_object("cluster-metadata", None, bytes([1, 20, 0, 0]))
    {'type': 'NO_OP_RECORD', 'version': 0, 'data': {}, 'error': None}
    """
    if decoder in ("cluster-metadata", "remote-log-metadata"):
        if value is None:
            return None
        if decoder == "cluster-metadata":
            from workbench.formats.metadata import decode_metadata_record as decode_framed_value
        else:
            from workbench.formats.remote import decode_remote_log_metadata as decode_framed_value
        md = decode_framed_value(value)
        return {"type": md.type_name, "version": md.version, "data": md.fields, "error": md.error}
    if decoder in ("offsets", "transaction-log", "share-group-state"):
        from workbench.formats import coordinator as c

        decode: Any = {
            "offsets": c.decode_offsets_record,
            "transaction-log": c.decode_transaction_record,
            "share-group-state": c.decode_share_state_record,
        }[decoder]
        rec = decode(key, value)
        data = rec.value
        if data is not None and rec.name == "GroupMetadata":
            data = c.expand_group_metadata(data)
        return {
            "type": rec.name, "recordType": rec.record_type, "key": rec.key, "valueVersion": rec.value_version,
            "value": data, "tombstone": rec.tombstone, "error": rec.error,
        }  # fmt: skip
    if decoder.startswith("mm2-"):
        from workbench.formats import mirror as m

        decode = {
            "mm2-offset-syncs": m.decode_offset_sync,
            "mm2-checkpoints": m.decode_checkpoint,
            "mm2-heartbeats": m.decode_heartbeat,
            "mm2-connect-offsets": m.decode_connect_offset,
        }[decoder]
        mr = decode(key, value)
        return {"type": mr.kind, "key": mr.key, "value": mr.value, "error": mr.error}
    return None


def record_object(batch: Batch, record: Record, decoder: str, payloads: bool) -> dict[str, Any]:
    """The JSON object of one record: the decoded payload of an internal topic (or the control
    record), the raw key, value and headers only with ``payloads``."""
    r = record
    obj: dict[str, Any] = {
        "kind": "record", "offset": r.offset, "timestamp": r.timestamp,
        "keySize": -1 if r.key is None else len(r.key),
        "valueSize": -1 if r.value is None else len(r.value),
        "headerKeys": [k for k, _ in r.headers],
    }  # fmt: skip
    if batch.is_control:
        from workbench.formats.control import decode_control_record

        ctl = decode_control_record(r.key, r.value)
        obj["control"] = {"type": ctl.type_name, "fields": ctl.fields, "error": ctl.error}
    else:
        decoded = payload_object(decoder, r.key, r.value)
        if decoded is not None:
            obj["payload"] = decoded
    if payloads:
        obj["key"] = _b64(r.key)
        obj["value"] = _b64(r.value)
        obj["headers"] = [[k, _b64(v)] for k, v in r.headers]
    return obj


def _is_clean(b: Batch) -> bool:
    return b.magic == 2 and b.crc_valid and (b.attributes & 7) <= 4


class _Out:
    def __init__(self, out: TextIO | BinaryIO) -> None:
        from workbench.formats.dumptext_write import Sink

        self.sink = Sink(out)
        self.lines: list[str] = []

    def obj(self, obj: dict[str, Any]) -> None:
        self.lines.append(_dumps(obj))
        if len(self.lines) >= 4096:
            self.flush_lines()

    def flush_lines(self) -> None:
        if self.lines:
            self.sink.lines(self.lines)
            self.lines = []

    def write(self, data: memoryview) -> None:
        self.flush_lines()
        self.sink.write(data)


class _LogJsonl:
    """The JSON lines of one segment or snapshot (see the module docstring)."""

    def __init__(
        self, path: str, decoder: str, payloads: bool, out: _Out, log: ProblemLog, strict: bool, compiled: bool = True
    ) -> None:
        self.compiled = compiled
        self.path = path
        self.decoder = decoder
        self.payloads = payloads
        self.out = out
        self.log = log
        self.strict = strict
        self.win = bytearray(0)

    def careful(self, f: BinaryIO, pos: int, first_only: bool = False) -> int | None:
        """Careful reader from ``pos`` until (and including) the next clean batch; where to resume."""
        f.seek(pos)
        for b in read_batches(f, self.path, problems=self.log, strict=self.strict, start=pos):
            self.out.obj(batch_object(b))
            for record in b.records(self.log):
                self.out.obj(record_object(b, record, self.decoder, self.payloads))
            if first_only or _is_clean(b):
                return b.position + b.size
        return None

    def run(self) -> None:
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            pos: int | None = 0
            kernel = self.compiled and hasattr(os, "preadv")
            while pos is not None and pos < size:
                if kernel:
                    pos = self.fast(f, pos, size)
                    if pos is None or pos >= size:
                        break
                pos = self.careful(f, pos)

    def fast(self, f: BinaryIO, pos: int, size: int) -> int | None:
        """Write the clean batches from ``pos`` with the kernel; where the careful reader takes over."""
        import numpy as np

        from workbench.formats import dumpfast as K

        meta = np.zeros((_META_ROWS, K.M_COLUMNS), dtype=np.int64)
        out = np.empty(_OUT_BYTES, dtype=np.uint8)
        o = 0
        path_json = np.frombuffer(json.dumps(self.path).encode("ascii"), dtype=np.uint8)
        texts = _PayloadTexts(self.decoder) if self.decoder != "none" else None
        empty = np.zeros(0, dtype=np.int64)
        no_data = np.zeros(0, dtype=np.uint8)
        no_off = np.zeros(1, dtype=np.int64)
        want = _WINDOW
        fd = f.fileno()
        while True:
            n_read = min(want, size - pos)
            if n_read <= 17:
                return pos
            if len(self.win) < n_read:
                self.win = bytearray(n_read)
            mv = memoryview(self.win)[: os.preadv(fd, [memoryview(self.win)[:n_read]], pos)]
            win = np.frombuffer(mv, dtype=np.uint8)
            n, stop, why = K.hop(win, pos, pos, size, meta, 0, MAX_BATCH_BYTES, True)
            if n == 0:
                if why == K.HOP_WINDOW and n_read < size - pos:
                    length = struct.unpack_from(">i", mv, 8)[0] if len(mv) >= 12 else 0
                    want = max(want, 12 + length, 61)
                    continue
                return pos
            want = _WINDOW
            keep, stage = K.stage_run(mv, meta, n, no_data)
            run = meta[:keep]
            if texts is not None:
                pay_text, text_data, text_off = texts.table(win, stage, run)
                mode = K.TEXT_TABLE
            else:
                pay_text, text_data, text_off, mode = empty, no_data, no_off, K.TEXT_NONE
            j = 0
            while j < keep:
                j, o, status = K.jsonl_run(
                    win, stage, run, j, out, o, path_json, self.payloads, mode, pay_text, text_data, text_off
                )
                if status == K.DONE:
                    break
                if status == K.FLUSH and o == 0:
                    out = np.empty(2 * len(out), dtype=np.uint8)
                    continue
                self.out.write(out.data[:o])
                o = 0
                if status == K.FALLBACK:  # records the careful reader must decode: this batch alone
                    self.careful(f, int(run[j, K.M_POSITION]), first_only=True)
                    j += 1
            if o:
                self.out.write(out.data[:o])
                o = 0
            if keep < n:
                return int(meta[keep, K.M_POSITION])
            pos = stop
            if why != K.HOP_WINDOW and why != K.HOP_FULL:
                return pos


class _PayloadTexts:
    """The ``"payload"`` JSON of each record of a run, computed once per distinct key and value
    (:class:`workbench.formats.dumpfast.TextMemo`)."""

    def __init__(self, decoder: str) -> None:
        from workbench.formats.dumpfast import TextMemo

        self.decoder = decoder
        self.memo = TextMemo(decoder not in ("cluster-metadata", "remote-log-metadata"), 1)

    def _text(self, key: bytes | None, value: bytes | None) -> tuple[bytes | None]:
        obj = payload_object(self.decoder, key, value)
        return (None if obj is None else _dumps(obj).encode("utf-8"),)

    def table(self, win: Any, stage: Any, run: Any) -> Any:
        """``(payload text per record, text bytes, text offsets)`` for the records of ``run``."""
        _, idx, data, off = self.memo.table(
            win,
            stage,
            run,
            lambda k, v, offset: (self._text(k, v), True),
            lambda k, v, offset, at: self._text(k, v),
            stop_at_bad=False,  # the kernel hands batches that fail the check to the careful reader
        )
        return idx[0], data, off


def _sidecar_objects(path: str, suffix: str, log: ProblemLog) -> Iterable[dict[str, Any]]:
    from workbench.formats import index as ix

    name = os.path.basename(path)
    base_text = name.split(".")[0]
    base = int(base_text) if base_text.lstrip("+-").isdigit() else None
    if suffix == ".index":
        if base is None:
            log.report(0, "bad_name", f"{name}: no base offset in the file name")
            return
        for offset, position in ix.read_offset_index(path, base, path, problems=log):
            yield {"kind": "offset_index", "offset": offset, "position": position}
    elif suffix == ".timeindex":
        for timestamp, offset in ix.read_time_index(path, path, problems=log, base_offset=base):
            yield {"kind": "time_index", "timestamp": timestamp, "offset": offset}
    elif suffix == ".txnindex":
        for t in ix.read_txn_index(path, path, problems=log):
            yield {"kind": "txn_index", "version": t.version, "producerId": t.producer_id,
                   "firstOffset": t.first_offset, "lastOffset": t.last_offset,
                   "lastStableOffset": t.last_stable_offset}  # fmt: skip
    else:
        for e in ix.read_producer_snapshot(path, path, problems=log):
            yield {"kind": "producer_state", "producerId": e.producer_id, "producerEpoch": e.producer_epoch,
                   "coordinatorEpoch": e.coordinator_epoch, "currentTxnFirstOffset": e.current_txn_first_offset,
                   "lastSequence": e.last_sequence, "lastOffset": e.last_offset, "offsetDelta": e.offset_delta,
                   "timestamp": e.timestamp}  # fmt: skip


def write_jsonl(
    files: Iterable[str | os.PathLike[str]],
    *,
    out: TextIO | BinaryIO,
    decoder: str = "auto",
    payloads: bool = False,
    strict: bool = False,
    problems: list[ProblemLog] | None = None,
    compiled: bool = True,
) -> int:
    """Write the JSON lines of ``files`` to ``out``; 0, or 1 when any problem was met.

    Parameters
    ----------
    files : iterable of paths
        Segments and snapshots (``.log``, ``.checkpoint``, anything else read as a log), and
        ``.index``/``.timeindex``/``.txnindex``/producer ``.snapshot`` files.
    out : text or binary stream
        Receives the lines (UTF-8).
    decoder : str
        ``auto`` (by each file's topic, :func:`workbench.formats.topics.decoder_for`) or one of
        :data:`workbench.formats.topics.DECODERS`.
    payloads : bool
        Add each record's key, value and header values (base64).
    strict : bool
        Raise :class:`~workbench.errors.CorruptDataError` at the first problem.
    problems : list, optional
        Receives one :class:`ProblemLog` per file.
    compiled : bool
        ``False``: every batch through the Python objects (the reference the tests compare with).
    """
    sink = _Out(out)
    status = 0
    for path in [os.fspath(f) for f in files]:
        log = ProblemLog(str(path), strict=strict)
        if problems is not None:
            problems.append(log)
        name = os.path.basename(path)
        suffix = name[name.rfind(".") :] if "." in name else ""
        if suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
            for obj in _sidecar_objects(path, suffix, log):
                sink.obj(obj)
        else:
            chosen = decoder_for(path, decoder)
            if chosen not in DECODERS:  # pragma: no cover - decoder_for checks
                raise ValueError(chosen)
            _LogJsonl(str(path), chosen, payloads, sink, log, strict, compiled).run()
        for p in log.problems:
            sink.obj({"kind": "problem", "path": p.path, "position": p.position, "problem": p.kind, "detail": p.detail})
            status = 1
    sink.flush_lines()
    sink.sink.flush()
    return status
