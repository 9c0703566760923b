"""``workbench dump``: machine-readable dumps of segment and snapshot files.

``jsonl`` writes one JSON object per batch (``"kind": "batch"``) followed by one per record
(``"kind": "record"``) and one per problem (``"kind": "problem"``), so a dump is never silently
short. Record payloads are included only on request; KRaft metadata and control records are
decoded into their fields.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from workbench.errors import UnsupportedError
from workbench.formats.problems import ProblemLog


def decoder_for(path: str | Path, decoder: str = "auto") -> str:
    """The payload decoder a file needs: from its partition directory when ``decoder`` is ``auto``."""
    if decoder != "auto":
        return decoder
    parent = Path(path).resolve().parent.name
    if parent.startswith("__cluster_metadata-") or Path(path).name == "bootstrap.checkpoint":
        return "cluster-metadata"
    if parent.startswith("__consumer_offsets-"):
        return "offsets"
    if parent.startswith("__remote_log_metadata-"):
        return "remote-log-metadata"
    if parent.startswith("__transaction_state-"):
        return "transaction-log"
    if parent.startswith("__share_group_state-"):
        return "share-group-state"
    return "none"


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


def batch_object(batch: object) -> dict:
    """The JSON object of one batch (every header field, names as in the ``batches`` table)."""
    b = batch
    return {
        "kind": "batch", "path": b.path, "position": b.position, "baseOffset": b.base_offset,  # type: ignore[attr-defined]
        "lastOffset": b.last_offset, "count": b.record_count, "size": b.size,  # type: ignore[attr-defined]
        "magic": b.magic, "crc": b.crc, "isValid": b.crc_valid, "compression": b.compression,  # type: ignore[attr-defined]
        "timestampType": b.timestamp_type, "baseTimestamp": b.base_timestamp,  # type: ignore[attr-defined]
        "maxTimestamp": b.max_timestamp, "partitionLeaderEpoch": b.partition_leader_epoch,  # type: ignore[attr-defined]
        "producerId": b.producer_id, "producerEpoch": b.producer_epoch,  # type: ignore[attr-defined]
        "baseSequence": b.base_sequence, "isTransactional": b.is_transactional,  # type: ignore[attr-defined]
        "isControl": b.is_control, "deleteHorizon": b.has_delete_horizon,  # type: ignore[attr-defined]
    }


def record_object(batch: object, record: object, decoder: str, payloads: bool) -> dict:
    """The JSON object of one record; decoded payload for metadata, raw payload only on request."""
    from workbench.formats.control import decode_control_record
    from workbench.formats.metadata import decode_metadata_record

    r = record
    obj: dict = {
        "kind": "record", "offset": r.offset, "timestamp": r.timestamp,  # type: ignore[attr-defined]
        "keySize": -1 if r.key is None else len(r.key),  # type: ignore[attr-defined]
        "valueSize": -1 if r.value is None else len(r.value),  # type: ignore[attr-defined]
        "headerKeys": [k for k, _ in r.headers],  # type: ignore[attr-defined]
    }
    if batch.is_control:  # type: ignore[attr-defined]
        ctl = decode_control_record(r.key, r.value)  # type: ignore[attr-defined]
        obj["control"] = {"type": ctl.type_name, "fields": ctl.fields, "error": ctl.error}
    elif decoder == "cluster-metadata" and r.value is not None:  # type: ignore[attr-defined]
        md = decode_metadata_record(r.value)  # type: ignore[attr-defined]
        obj["payload"] = {"type": md.type_name, "version": md.version, "data": md.fields, "error": md.error}
    if payloads:
        obj["key"] = _b64(r.key)  # type: ignore[attr-defined]
        obj["value"] = _b64(r.value)  # type: ignore[attr-defined]
        obj["headers"] = [[k, _b64(v)] for k, v in r.headers]  # type: ignore[attr-defined]
    return obj


def _default(value: object) -> object:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)


def dump_files(files: Iterable[str], *, fmt: str = "jsonl", out: TextIO, strict: bool = False,
               kafka_version: str | None = None, decoder: str = "auto", payloads: bool = False) -> int:
    """Dump ``files`` to ``out``; returns 0, or 1 when any problem was met.

    Examples
    --------
    >>> import io; buf = io.StringIO()                                   # doctest: +SKIP
    >>> dump_files(["00000000000000000000.log"], out=buf)                # doctest: +SKIP
    0
    """
    from workbench.formats.batch import read_batches

    if fmt == "kafka":
        from workbench.formats.dumptext import write_kafka_dump

        return write_kafka_dump(files, out=out, kafka_version=kafka_version, decoder=decoder,
                                payloads=payloads, strict=strict)
    if fmt != "jsonl":
        raise UnsupportedError(f"unknown dump format {fmt!r}; expected 'jsonl' or 'kafka'")
    status = 0
    for path in files:
        chosen = decoder_for(path, decoder)
        log = ProblemLog(str(path), strict=strict)
        with open(path, "rb") as f:
            for batch in read_batches(f, path=str(path), problems=log):
                out.write(json.dumps(batch_object(batch), default=_default) + "\n")
                for record in batch.records(log):
                    out.write(json.dumps(record_object(batch, record, chosen, payloads), default=_default) + "\n")
        for p in log.problems:
            out.write(json.dumps({"kind": "problem", "path": p.path, "position": p.position,
                                  "problem": p.kind, "detail": p.detail}) + "\n")
            status = 1
    return status
