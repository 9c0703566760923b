"""KRaft metadata records from ``kafka-dump-log.sh --cluster-metadata-decoder`` text.

A ticket often holds only pasted dumps. The ``metadata`` table reads such text as it reads the
binary files it describes: each ``Dumping <file>`` block of a ``__cluster_metadata`` segment,
snapshot or bootstrap checkpoint becomes the same rows (batch, offset, time, Raft epoch, record
type and version, the typed columns), with ``path`` = ``<dump text file>#<file it describes>``
marking the source and ``file_kind`` the described file's kind. The record bodies are Kafka's
JSON; each is encoded with the record's schema and decoded again, so fields the tool leaves out
(tagged fields at their default) take their default as in the binary path.

A dump text file is read only when none of the metadata files it describes is in the bundle in
binary form (the binary file is the better witness; a bundle holding both reads the binary).

Examples
--------
>>> described_key("nodes/1/logs/__cluster_metadata-0/00000000000000000000.log")
('__cluster_metadata-0', '00000000000000000000.log')
>>> described_key("/var/lib/kafka/meta/bootstrap.checkpoint")
('', 'bootstrap.checkpoint')
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from workbench.formats.topics import METADATA_TOPIC

if TYPE_CHECKING:
    import pyarrow as pa

    from workbench.bundle import Artifact, Bundle
    from workbench.formats.problems import ProblemLog
    from workbench.spark.source import FilePartition

#: Rows per Arrow batch.
CHUNK_ROWS = 20_000
_KINDS = {"log": "segment", "snapshot": "snapshot", "bootstrap": "bootstrap"}
_DUMPING = "Dumping "


def described_key(path: str) -> tuple[str, str]:
    """(partition directory, file name) of a described file; ``""`` directory for bootstrap checkpoints."""
    p = PurePath(path.strip())
    if p.name == "bootstrap.checkpoint":
        return "", p.name
    return p.parent.name, p.name


def _is_metadata(path: str) -> bool:
    directory, name = described_key(path)
    return name == "bootstrap.checkpoint" or directory.startswith(METADATA_TOPIC + "-")


def _described(bundle: Bundle, artifact: Artifact) -> list[str]:
    """The files a dump text artifact describes (its ``Dumping`` lines)."""
    found: list[str] = []
    try:
        with (bundle.root / artifact.path).open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(_DUMPING):
                    found.append(line[len(_DUMPING):].rstrip("\n"))
    except OSError:
        return []
    return found


def dump_metadata_files(bundle: Bundle, binary: list[Artifact]) -> list[Artifact]:
    """Dump text artifacts describing KRaft metadata files that the bundle lacks in binary form."""
    have: dict[tuple[str, str], set[int]] = {}
    for a in binary:
        have.setdefault(described_key(a.path), set()).add(a.node_id)
    out = []
    for a in bundle.of_kind("dump_text"):
        described = [p for p in _described(bundle, a) if _is_metadata(p)]
        if not described:
            continue
        present = any(a.node_id == -1 or a.node_id in have.get(described_key(p), set())
                      for p in described if described_key(p) in have)
        if not present:
            out.append(a)
    return out


def _record_body(text: str | None) -> dict | None:
    if not text:
        return None
    start = text.find("{")
    if start < 0:
        return None
    try:
        body = json.loads(text[start:])
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _decoded(type_name: str, version: int, data: dict) -> tuple[str, int | None, dict, str | None]:
    """(record type, api key, fields with defaults, error) of one record body from the dump."""
    from workbench.formats.metadata import decode_metadata_record, encode_metadata_record, schema_for

    try:
        schema = schema_for(type_name)
    except Exception:  # noqa: BLE001 - a type this release of the workbench does not know
        return type_name, None, data, f"unknown record type {type_name!r} in dump text"
    try:
        record = decode_metadata_record(encode_metadata_record(schema.name, version, data))
    except Exception as exc:  # noqa: BLE001 - JSON that does not fit the schema: keep it as printed
        return schema.name, schema.api_key, data, f"dump text body does not fit {schema.name} v{version}: {exc}"
    return schema.name, schema.api_key, record.fields, record.error


class _Rows:
    """Column lists of the metadata table's rows, flushed as Arrow batches."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.columns: dict[str, list] = {n: [] for n in names}

    def add(self, row: dict[str, Any]) -> None:
        for name in self.names:
            self.columns[name].append(row.get(name))

    def __len__(self) -> int:
        return len(self.columns[self.names[0]])

    def flush(self, schema: pa.Schema) -> pa.RecordBatch:
        import pyarrow as pa

        from workbench.spark.source import timestamps_us

        arrays = []
        for field in schema:
            values = self.columns[field.name]
            if field.name == "timestamp":
                import numpy as np

                ms = np.array([-1 if v is None else v for v in values], dtype=np.int64)
                arr = timestamps_us(ms)
                arrays.append(arr)
            else:
                arrays.append(pa.array(values, type=field.type))
        self.columns = {n: [] for n in self.names}
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def dump_metadata_batches(partition: FilePartition, schema: pa.Schema, log: ProblemLog, *,
                          want_fields: bool = False) -> Iterator[pa.RecordBatch]:
    """Rows of the ``metadata`` table from one dump text file (see the module docstring)."""
    from workbench.formats.control import CONTROL_TYPES
    from workbench.formats.dumptext_parse import parse_kafka_dump
    from workbench.formats.fastmetadata import TYPED_RECORD_TYPES, fields_json, typed_values
    from workbench.spark.source import local_path

    control_ids = {name: type_id for type_id, name in CONTROL_TYPES.items()}
    rows = _Rows(tuple(schema.names))
    block: dict[str, Any] | None = None
    batch: dict[str, Any] | None = None
    local = local_path(partition.path) or partition.path
    for row in parse_kafka_dump(Path(local), path=partition.path, problems=log):
        kind = row["kind"]
        if kind == "file":
            block = row if _is_metadata(row["path"]) and row["file_kind"] in _KINDS else None
            batch = None
            continue
        if block is None:
            continue
        if kind == "batch":
            batch = row
            continue
        if kind != "record" or batch is None:
            continue
        out: dict[str, Any] = {
            "node_id": partition.node_id, "cluster_id": partition.cluster_id,
            "path": f"{partition.path}#{block['path']}", "file_kind": _KINDS[block["file_kind"]],
            "file_offset": block["base_offset"] if block["file_kind"] == "log" else block["snapshot_end_offset"],
            "batch_position": batch["position"], "batch_base_offset": batch["base_offset"],
            "offset": row["offset"], "timestamp": row["timestamp"], "leader_epoch": batch["partition_leader_epoch"],
            "is_control": bool(batch["is_control"]), "crc_valid": batch["crc_valid"],
        }
        if row.get("control_type"):
            body = _record_body(row.get("control"))
            out.update(record_type=row["control_type"], api_key=control_ids.get(row["control_type"]),
                       version=None if body is None else body.get("version"),
                       fields=None if body is None else json.dumps(body, separators=(",", ":")))
        else:
            payload = _record_body(row.get("payload"))
            if payload is None or "type" not in payload:
                out.update(record_type="Unknown",
                           error="no --cluster-metadata-decoder payload in the dump text for this record")
            else:
                version = int(payload.get("version", 0))
                data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
                name, api_key, fields, error = _decoded(str(payload["type"]), version, data)
                out.update(record_type=name, api_key=api_key, version=version, error=error)
                out.update(typed_values(name, fields))
                if want_fields or name not in TYPED_RECORD_TYPES:
                    out["fields"] = fields_json(fields)
        rows.add(out)
        if len(rows) >= CHUNK_ROWS:
            yield rows.flush(schema)
    if len(rows):
        yield rows.flush(schema)
