"""A corpus of real scenario bundles with one bad value each, taken through the report pipeline.

Each variant is a real bundle captured from Apache Kafka (``peer.scenario.build``) with exactly
one value of one file changed: a minimum, maximum, overflowing, negative, NaN, infinite or
garbage value of a time, id, epoch, offset or count field, for every reader of the workbench
(KRaft metadata log records and batches, data segment batches, ``__consumer_offsets`` commits,
JmxTool CSV, Prometheus text, ``server.properties``, ``meta.properties``, ``manifest.json``,
``quorum-state``, KRaft snapshots and the tool captures of ``kafka-topics``,
``kafka-consumer-groups``, ``kafka-get-offsets`` and ``kafka-metadata-quorum``). Binary values
are written with a valid CRC, so the value reaches the table instead of stopping at the checksum.

Every variant goes through what ``workbench report`` computes, in one process and one Spark
session (:func:`run_corpus`): the bundle is opened, the rows of the report's problems appendix
read first, before any table was built (``inv.tables.problems`` ordered and cut as the appendix
shows it: the problems of every table the bundle has files for, whatever the sections read),
then the tables built, and every area whose input tables the bad value reached computes its
findings and key figures (the other areas read exactly the clean bundle's rows, which the run
checks table by table). A variant passes when nothing raised, a row of the appendix names the
file, the position (where the format has one) and the raw bad value, every table's rows outside
the touched file position equal the clean bundle's, and every finding about another subject
(partition, node, group, ...) equals the clean bundle's.

``python benchmarks/bad_value_corpus.py [--only SUBSTRING] [--limit N]`` runs the whole corpus
and prints one JSON line: variants, passed, failed (with reasons), counts by reader and kind, and
timings; ``tests/test_bad_value_corpus.py`` runs it from here (tests import nothing from
``benchmarks/``).

``--report`` sends every variant through the real report pipeline instead (:func:`run_reports`):
the composed incident-report notebook run by papermill, the HTML export, the summary JSON and the
exit code, as ``workbench report`` does, but every report in one Jupyter kernel kept alive
between bundles (:class:`workbench.report.ReportKernel`: one Python process and one Spark
session for the whole corpus). A variant passes when its report exits 0 or 1, the HTML is
written, a row of its problems appendix names the file, the position and the raw bad value
(escaped), and its summary's findings about other subjects, and the key figures of every area the
value cannot reach, equal the clean bundle's report.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import math
import os
import re
import shutil
import struct
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: The release whose scenario bundles the corpus starts from.
VERSION = "4.3.1"

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
I32_MIN = -(2**31)


@dataclass(frozen=True)
class Variant:
    """One bad value in one file of one real bundle.

    Attributes
    ----------
    id : str
        ``scenario/reader/field/kind``, unique.
    scenario : str
        The real bundle it starts from.
    reader : str
        The table the value enters.
    field : str
        Which value (``PartitionChangeRecord.leader``, ``batch.max_timestamp``, ``time`` ...).
    kind : str
        ``min``, ``max``, ``overflow``, ``negative``, ``nan``, ``inf`` or ``garbage``.
    path : str
        The changed file, relative to the bundle.
    raw : str
        The bad value as written, which the problem's detail must quote.
    position : int or None
        The problem's expected position (byte of the batch, line of a text file), None when the
        format has none.
    subjects : tuple of str
        ``area:subject_type:subject`` patterns (fnmatch) of the findings the value may change;
        every other finding must equal the clean bundle's.
    edit : callable
        Writes the changed file into a copy of the bundle.
    """

    id: str
    scenario: str
    reader: str
    field: str
    kind: str
    path: str
    raw: str
    position: int | None
    subjects: tuple[str, ...]
    edit: Callable[[Path], None] = field(repr=False, compare=False)
    unit_rows: int = 1
    """Rows of the file's table a changed value may change or drop besides those at ``position``
    (a CSV line's samples, a text line's row)."""


# ------------------------------------------------------------------------------------------
# binary edits: a batch header field, or one record's value, with the CRC recomputed


def _crc_fix(data: bytearray, pos: int) -> None:
    from workbench.formats.batch import _crc32c

    length = struct.unpack_from(">i", data, pos + 8)[0]
    struct.pack_into(">I", data, pos + 17, _crc32c(bytes(data[pos + 21: pos + 12 + length])))


#: v2 batch header fields: (struct format, byte offset in the batch).
HEADER = {
    "partition_leader_epoch": (">i", 12), "base_timestamp": (">q", 27), "max_timestamp": (">q", 35),
    "producer_id": (">q", 43), "producer_epoch": (">h", 51), "base_sequence": (">i", 53),
}


def _header_edit(rel: str, pos: int, name: str, value: int) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        data = bytearray((root / rel).read_bytes())
        fmt, off = HEADER[name]
        struct.pack_into(fmt, data, pos + off, value)
        _crc_fix(data, pos)
        _replace(root / rel, bytes(data))
    return edit


def _record_spans(batch: Any) -> Iterator[tuple[Any, int]]:
    """Each record of an uncompressed v2 batch with its start, in bytes from the batch's start."""
    at = 61
    for rec in batch.records():
        yield rec, at
        at += rec.size


def _value_edit(rel: str, pos: int, start: int, size: int, old: bytes, new: bytes) -> Callable[[Path], None]:
    """Replace one record's value bytes ``old`` by ``new`` (same length) inside that record.

    ``start`` and ``size`` are the record's bytes relative to the batch at ``pos``: a batch often holds
    several records with the same value (one commit of many partitions), so the search stays inside
    the record.
    """
    if len(old) != len(new):
        raise ValueError("a record value must keep its length")

    def edit(root: Path) -> None:
        data = bytearray((root / rel).read_bytes())
        lo, hi = pos + start, pos + start + size
        at = bytes(data).find(old, lo, hi)
        if at < 0 or bytes(data).find(old, at + 1, hi) >= 0:
            raise ValueError(f"{rel}@{pos}: the record value is not found once in its record")
        data[at: at + len(old)] = new
        _crc_fix(data, pos)
        _replace(root / rel, bytes(data))
    return edit


def restamped_batch(batch: Any, ms: int) -> bytes:
    """``batch`` (uncompressed v2, read with its bytes) written again by the workbench's encoder with
    every record stamped ``ms`` and the header as it was: a valid CRC over a time no table holds."""
    from workbench.formats.batch import Record, encode_batch

    records = [Record(r.offset, ms, r.key, r.value, list(r.headers)) for r in batch.records()]
    data = encode_batch(records, base_offset=batch.base_offset, compression=batch.compression,
                        timestamp_type=batch.timestamp_type, partition_leader_epoch=batch.partition_leader_epoch,
                        producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                        base_sequence=batch.base_sequence, is_transactional=batch.is_transactional,
                        is_control=batch.is_control, last_offset=batch.last_offset)
    if len(data) != batch.size:
        raise ValueError(f"{batch.path}@{batch.position}: the batch re-encoded is {len(data)} bytes, not {batch.size}")
    return data


def _restamp_edit(rel: str, pos: int, ms: int) -> Callable[[Path], None]:
    """Write the batch at ``pos`` again with the encoder, every record stamped ``ms`` (:func:`restamped_batch`)."""
    def edit(root: Path) -> None:
        data = bytearray((root / rel).read_bytes())
        batch = next(_batches_at(root / rel, pos))
        new = restamped_batch(batch, ms)
        data[pos: pos + len(new)] = new
        _replace(root / rel, bytes(data))
    return edit


def _batches_at(path: Path, pos: int) -> Iterator[Any]:
    from workbench.formats.batch import read_batches

    with open(path, "rb") as f:
        yield from read_batches(f, str(path), start=pos)


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` as a new file (the copy's files are hard links to the cached bundle)."""
    path.unlink()
    path.write_bytes(data)


def _text_edit(rel: str, change: Callable[[str], str]) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        text = (root / rel).read_text(encoding="utf-8")
        new = change(text)
        if new == text:
            raise ValueError(f"{rel}: the edit changed nothing")
        _replace(root / rel, new.encode("utf-8"))
    return edit


def _batches(path: Path) -> Iterator[Any]:
    from workbench.formats.batch import read_batches

    with open(path, "rb") as f:
        yield from read_batches(f, str(path))


# ------------------------------------------------------------------------------------------
# the variants, reader by reader

TIME_KINDS = {"min": I64_MIN, "max": I64_MAX, "negative": -5, "overflow": 2**62}
#: Times a whole PartitionChangeRecord batch is stamped with (issue 43): the year 3000, 2^62 ms, -5 ms.
RESTAMPS = {"year3000": 32_503_680_000_000, "overflow": 2**62, "negative": -5}
INT32_KINDS = {"min": I32_MIN, "negative": -7}
INT64_KINDS = {"min": I64_MIN, "negative": -9}


def _metadata_variants(bundle: Path, scenario: str) -> list[Variant]:
    """Records of one controller's ``__cluster_metadata-0`` segment: batch times and epochs, record fields."""
    from workbench.formats.metadata import decode_metadata_record, encode_metadata_record

    out: list[Variant] = []
    segs = sorted(bundle.glob("nodes/*/logs/__cluster_metadata-0/*.log"))
    seg = segs[0]
    rel = str(seg.relative_to(bundle))
    node = rel.split("/")[1]
    replica = _replica_subject(seg)
    batches = [b for b in _batches(seg) if not b.is_control and b.record_count > 0]
    # a batch in the middle of the log: its records' times come from the header's base timestamp
    mid = batches[len(batches) // 2]
    for name in ("base_timestamp", "max_timestamp"):
        for kind, value in TIME_KINDS.items():
            out.append(Variant(f"{scenario}/metadata/batch.{name}/{kind}", scenario, "metadata", f"batch.{name}",
                               kind, rel, str(value), mid.position, ("quorum:*", "isr:*", "consumer_lag:*",
                                                                     "tier:*", "mirror:*", replica),
                               _header_edit(rel, mid.position, name, value)))
    for kind, value in INT32_KINDS.items():
        out.append(Variant(f"{scenario}/metadata/batch.partition_leader_epoch/{kind}", scenario, "metadata",
                           "batch.partition_leader_epoch", kind, rel, str(value), mid.position,
                           ("quorum:*", replica), _header_edit(rel, mid.position, "partition_leader_epoch", value)))
    out += _restamp_variants(seg, rel, scenario)
    # record fields: int32 ids and epochs, int64 epochs and times, patched in place (same length)
    wanted = {
        "PartitionChangeRecord": ("partitionId", "leader"),
        "PartitionRecord": ("partitionId", "leader", "leaderEpoch", "partitionEpoch"),
        "RegisterBrokerRecord": ("brokerId", "brokerEpoch"),
        "BrokerRegistrationChangeRecord": ("brokerId", "brokerEpoch"),
    }
    done: set[str] = set()
    topics: dict[str, str] = {}
    for b in _batches(seg):
        if b.is_control or b.compression != "none":
            continue
        for rec, start in _record_spans(b):
            meta = decode_metadata_record(rec.value)
            if meta.name == "TopicRecord":
                topics[meta.fields["topicId"]] = meta.fields["name"]
            if meta.name not in wanted or meta.name in done or meta.error:
                continue
            if encode_metadata_record(meta.name, meta.version, meta.fields, meta.unknown_tags) != rec.value:
                continue
            edits = [(fname, kind, value, encode_metadata_record(meta.name, meta.version, {**meta.fields, fname: value},
                                                                 meta.unknown_tags))
                     for fname in wanted[meta.name]
                     for kind, value in (INT64_KINDS if fname == "brokerEpoch" else INT32_KINDS).items()]
            if any(len(new) != len(rec.value) for *_, new in edits):
                continue  # a field of variable width in this record: take a later record of the type
            done.add(meta.name)
            if "partitionId" in meta.fields:
                subject = f"{topics.get(meta.fields.get('topicId'), '*')}-{meta.fields['partitionId']}"
                # the partition, and the cluster-wide ISR findings that count it (offline, under min ISR...)
                subjects = (f"isr:partition:{subject}", "isr:cluster:*", "quorum:*", "consumer_lag:*", "tier:*",
                            "mirror:*", replica, f"replicas:partition:{subject}")   # its unclean elections
            else:
                subjects = ("quorum:*", f"isr:*:{meta.fields['brokerId']}", replica)
            for fname, kind, value, new in edits:
                out.append(Variant(
                    f"{scenario}/metadata/{meta.name}.{fname}/{kind}", scenario, "metadata",
                    f"{meta.name}.{fname}", kind, rel, str(value), b.position, subjects,
                    _value_edit(rel, b.position, start, rec.size, bytes(rec.value), new)))
    del node
    return out


def _replica_subject(seg: Path) -> str:
    """The replicas area's findings a changed batch of segment ``seg`` may add: its partition's replicas
    (on a partition of two replicas both are named when they differ)."""
    return f"replicas:replica:*{seg.parent.name} on node *"


def _restamp_variants(seg: Path, rel: str, scenario: str) -> list[Variant]:
    """One ``PartitionChangeRecord`` batch of the metadata log (the middle one of them) written again
    by the encoder with every record stamped in the year 3000, at 2^62 ms or at -5 ms (issue 43)."""
    from workbench.formats.metadata import decode_metadata_record

    topics: dict[str, str] = {}
    changes: list[tuple[Any, list[Any]]] = []
    for b in _batches(seg):
        if b.is_control or b.compression != "none" or b.record_count == 0:
            continue
        metas = [decode_metadata_record(r.value) for r in b.records()]
        topics.update({m.fields["topicId"]: m.fields["name"] for m in metas if m.name == "TopicRecord"})
        if all(m.name == "PartitionChangeRecord" for m in metas):
            changes.append((b, metas))
    if not changes:
        return []
    b, metas = changes[len(changes) // 2]
    # the batch's partitions, and the cluster-wide ISR findings that count them; quorum reads batch times
    subjects = ("quorum:*", "isr:cluster:*", _replica_subject(seg), *sorted({
        f"{area}:partition:{topics.get(m.fields['topicId'], '*')}-{m.fields['partitionId']}"
        for m in metas for area in ("isr", "replicas")}))
    return [Variant(f"{scenario}/metadata/PartitionChangeRecord.batch_time/{kind}", scenario, "metadata",
                    "PartitionChangeRecord.batch_time", kind, rel, str(ms), b.position, subjects,
                    _restamp_edit(rel, b.position, ms)) for kind, ms in RESTAMPS.items()]


def _segment_variants(bundle: Path, scenario: str, topic_glob: str) -> list[Variant]:
    """Header fields of one batch of a data segment (``batches``)."""
    out: list[Variant] = []
    # the first segment holding batches: which partitions a producer filled varies from run to run
    seg, batches = next((s, found) for s in sorted(bundle.glob(f"nodes/*/logs/{topic_glob}/*.log"))
                        if (found := list(_batches(s))))
    rel = str(seg.relative_to(bundle))
    tp = seg.parent.name
    b = batches[len(batches) // 2]
    subjects = (f"*:partition:{tp}", "consumer_lag:*", "tier:*", "mirror:*", _replica_subject(seg))
    fields = {"base_timestamp": TIME_KINDS, "max_timestamp": TIME_KINDS,
              "partition_leader_epoch": INT32_KINDS, "producer_id": {"min": I64_MIN, "negative": -9},
              "producer_epoch": {"min": -(2**15), "negative": -7}, "base_sequence": INT32_KINDS}
    for name, kinds in fields.items():
        for kind, value in kinds.items():
            out.append(Variant(f"{scenario}/batches/{tp}.{name}/{kind}", scenario, "batches", f"batch.{name}", kind,
                               rel, str(value), b.position, subjects, _header_edit(rel, b.position, name, value)))
    return out


def _offsets_variants(bundle: Path, scenario: str) -> list[Variant]:
    """One offset commit of ``__consumer_offsets``: committed offset, leader epoch, commit time."""
    from workbench.formats.coordinator import decode_offsets_record, encode_offsets_record

    out: list[Variant] = []
    for seg in sorted(bundle.glob("nodes/*/logs/__consumer_offsets-*/*.log")):
        rel = str(seg.relative_to(bundle))
        for b in _batches(seg):
            if b.is_control or b.compression != "none":
                continue
            for rec, start in _record_spans(b):
                co = decode_offsets_record(rec.key, rec.value)
                if co.name != "OffsetCommit" or co.tombstone or co.error or co.value["leaderEpoch"] < 0:
                    continue
                if encode_offsets_record("OffsetCommit", co.key, co.value, co.value_version,
                                         co.unknown_tags)[1] != rec.value:
                    continue
                group = co.key["group"]
                subjects = (f"consumer_lag:group:{group}", "mirror:*")
                fields = {"offset": {"min": I64_MIN, "negative": -9}, "leaderEpoch": INT32_KINDS,
                          "commitTimestamp": TIME_KINDS}
                for fname, kinds in fields.items():
                    for kind, value in kinds.items():
                        _, new = encode_offsets_record("OffsetCommit", co.key, {**co.value, fname: value},
                                                       co.value_version, co.unknown_tags)
                        out.append(Variant(f"{scenario}/offsets/OffsetCommit.{fname}/{kind}", scenario, "offsets",
                                           f"OffsetCommit.{fname}", kind, rel, str(value), b.position, subjects,
                                           _value_edit(rel, b.position, start, rec.size, bytes(rec.value), new)))
                return out
    return out


def _line_edit(rel: str, line_no: int, old: str, new: str) -> Callable[[Path], None]:
    """Replace the first ``old`` on line ``line_no`` (1-based) by ``new``."""
    def change(text: str) -> str:
        lines = text.split("\n")
        if old not in lines[line_no - 1]:
            raise ValueError(f"{rel}:{line_no}: {old!r} not found")
        lines[line_no - 1] = lines[line_no - 1].replace(old, new, 1)
        return "\n".join(lines)
    return _text_edit(rel, change)


def _jmx_variants(bundle: Path, scenario: str) -> list[Variant]:
    """A JmxTool CSV: the time column and a numeric value column of one row."""
    out: list[Variant] = []
    csv = sorted(bundle.glob("metrics/*.csv"))[0]
    rel = str(csv.relative_to(bundle))
    lines = csv.read_text(encoding="utf-8").split("\n")
    line_no = len(lines) // 2
    cells = lines[line_no - 1].split(",")
    header = lines[0].split(",")
    col = next(i for i in range(1, len(cells)) if re.fullmatch(r"-?\d+(\.\d+)?", cells[i]))
    node = rel.split("/")[1].split("-")[0]
    subjects = ("quorum:*", f"*:*:{node}", "isr:*", "tier:*", "mirror:*", "consumer_lag:*")
    bad_times = {"inf": "inf", "overflow": "1e25", "negative": "-5", "nan": "nan", "garbage": "12:00:03",
                 "max": str(I64_MAX)}
    bad_values = {"inf": "Infinity", "overflow": "1e300", "garbage": "0x1f", "negative": "-inf"}
    for kind, raw in bad_times.items():
        def change(text: str, raw: str = raw) -> str:
            ls = text.split("\n")
            row = ls[line_no - 1].split(",")
            row[0] = raw
            ls[line_no - 1] = ",".join(row)
            return "\n".join(ls)
        out.append(Variant(f"{scenario}/metrics/jmx.time/{kind}", scenario, "metrics", "jmx.time", kind, rel, raw,
                           line_no, subjects, _text_edit(rel, change), unit_rows=len(cells) - 1))
    for kind, raw in bad_values.items():
        def change(text: str, raw: str = raw) -> str:
            ls = text.split("\n")
            row = ls[line_no - 1].split(",")
            row[col] = raw
            ls[line_no - 1] = ",".join(row)
            return "\n".join(ls)
        out.append(Variant(f"{scenario}/metrics/jmx.{header[col].strip(chr(34))[-40:]}/{kind}", scenario, "metrics",
                           "jmx.value", kind, rel, raw, line_no, subjects, _text_edit(rel, change)))
    return out


def _prom_variants(bundle: Path, scenario: str) -> list[Variant]:
    """A Prometheus text export: one sample's value (and one with a timestamp added)."""
    out: list[Variant] = []
    prom = sorted(bundle.glob("metrics/*.prom"))[len(sorted(bundle.glob("metrics/*.prom"))) // 2]
    rel = str(prom.relative_to(bundle))
    lines = prom.read_text(encoding="utf-8").split("\n")
    line_no = next(i for i, ln in enumerate(lines, 1) if ln.startswith("kafka_") and " " in ln)
    name, value = lines[line_no - 1].rsplit(" ", 1)
    node = rel.split("/")[1].split("-")[0]
    subjects = ("quorum:*", f"*:*:{node}", "isr:*", "tier:*", "mirror:*", "consumer_lag:*")
    for kind, raw in {"garbage": "12,5", "overflow": "1e400", "max": "1.7976931348623157e309",
                      "garbage2": "0x10"}.items():
        out.append(Variant(f"{scenario}/metrics/prom.value/{kind}", scenario, "metrics", "prom.value",
                           kind.rstrip("2"), rel, raw, line_no, subjects,
                           _line_edit(rel, line_no, f" {value}", f" {raw}")))
    for kind, raw in {"negative": "-5", "overflow": "99999999999999999999999", "garbage": "1e3",
                      "max": str(I64_MAX), "min": str(I64_MIN)}.items():
        out.append(Variant(f"{scenario}/metrics/prom.timestamp/{kind}", scenario, "metrics", "prom.timestamp",
                           kind, rel, raw, line_no, subjects,
                           _line_edit(rel, line_no, f" {value}", f" {value} {raw}")))
    return out


def _properties_variants(bundle: Path, scenario: str) -> list[Variant]:
    """``server.properties`` (node.id, min.insync.replicas...) and ``meta.properties`` (node.id)."""
    out: list[Variant] = []
    props = sorted(bundle.glob("nodes/*/config/server.properties"))[-1]
    rel = str(props.relative_to(bundle))
    text = props.read_text(encoding="utf-8")
    lines = text.split("\n")
    subjects = ("*",)
    for key in ("node.id", "min.insync.replicas", "metadata.max.idle.interval.ms"):
        found = [i for i, ln in enumerate(lines, 1) if ln.startswith(f"{key}=")]
        if not found:
            continue
        line_no = found[0]
        old = lines[line_no - 1]
        for kind, raw in {"overflow": str(2**40), "garbage": "abc", "negative": "-5", "nan": "NaN",
                          "min": str(I64_MIN)}.items():
            out.append(Variant(f"{scenario}/configs/{key}/{kind}", scenario, "configs", key, kind, rel, raw,
                               line_no, subjects, _line_edit(rel, line_no, old, f"{key}={raw}")))
    meta = sorted(bundle.glob("nodes/*/logs/meta.properties"))[-1]
    mrel = str(meta.relative_to(bundle))
    mlines = meta.read_text(encoding="utf-8").split("\n")
    line_no = next(i for i, ln in enumerate(mlines, 1) if ln.startswith("node.id="))
    for kind, raw in {"overflow": str(2**40), "garbage": "abc", "negative": "-5", "max": str(I64_MAX)}.items():
        out.append(Variant(f"{scenario}/meta_properties/node.id/{kind}", scenario, "inventory", "meta.node.id", kind,
                           mrel, raw, None, ("*",), _line_edit(mrel, line_no, mlines[line_no - 1],
                                                                  f"node.id={raw}")))
    return out


def _quorum_state_variants(bundle: Path, scenario: str) -> list[Variant]:
    """A ``quorum-state`` file: leader id, epoch, applied offset, a voter id."""
    out: list[Variant] = []
    qs = sorted(bundle.glob("nodes/*/logs/__cluster_metadata-0/quorum-state"))[0]
    rel = str(qs.relative_to(bundle))
    subjects = ("quorum:*",)
    for key in ("leaderId", "leaderEpoch", "appliedOffset"):
        for kind, raw in {"overflow": str(2**70), "garbage": '"abc"', "negative": "-5", "nan": "NaN",
                          "inf": "Infinity", "min": str(I64_MIN)}.items():
            def change(text: str, key: str = key, raw: str = raw) -> str:
                return re.sub(rf'"{key}":-?\d+', f'"{key}":{raw}', text, count=1)
            out.append(Variant(f"{scenario}/quorum/{key}/{kind}", scenario, "quorum", key, kind, rel, raw.strip('"'),
                               None, subjects, _text_edit(rel, change)))
    return out


def _tool_variants(bundle: Path, scenario: str) -> list[Variant]:
    """Tool captures: one number of one line, per tool and column."""
    out: list[Variant] = []
    tools = sorted(bundle.glob("tools/*.txt"))

    def first(tool: str, pattern: str) -> tuple[str, int, re.Match] | None:
        for t in tools:
            if not t.name.endswith(f"-{tool}.txt"):
                continue
            for i, ln in enumerate(t.read_text(encoding="utf-8").split("\n"), 1):
                m = re.search(pattern, ln)
                if m:
                    return str(t.relative_to(bundle)), i, m
        return None

    specs = [
        ("kafka-topics", r"\tPartition: (\d+)", "tool_topics", "partition"),
        ("kafka-topics", r"\tLeader: (\d+)", "tool_topics", "leader"),
        ("kafka-topics", r"PartitionCount: (\d+)", "tool_topics", "partition_count"),
        ("kafka-metadata-quorum", r"^LeaderEpoch:\s+(\d+)", "tool_quorum_status", "leader_epoch"),
        ("kafka-metadata-quorum", r"^HighWatermark:\s+(\d+)", "tool_quorum_status", "high_watermark"),
        ("kafka-metadata-quorum", r"^MaxFollowerLagTimeMs:\s+(\d+)", "tool_quorum_status", "max_follower_lag_time_ms"),
        ("kafka-metadata-quorum", r"^\d+\s+\S+\s+(\d+)\s+\d+\s+\d+", "tool_quorum_replication", "log_end_offset"),
        ("kafka-get-offsets", r"^\S+:\d+:(\d+)$", "tool_get_offsets", "offset"),
        ("kafka-consumer-groups", r"^\S+\s+\S+\s+\d+\s+\d+\s+(\d+)\s", "tool_group_offsets", "current_offset"),
    ]
    for tool, pattern, table, column in specs:
        hit = first(tool, pattern)
        if hit is None:
            continue
        rel, line_no, m = hit
        subjects = ("*",)
        for kind, raw in {"overflow": str(2**70), "garbage": "x7", "negative": "-5", "max": str(I64_MAX + 1)}.items():
            def change(text: str, line_no: int = line_no, m: re.Match = m, raw: str = raw) -> str:
                lines = text.split("\n")
                ln = lines[line_no - 1]
                a, b = m.span(1)
                tail = ln[b:]
                # keep the next column where it was when the value is longer (aligned columns)
                spaces = len(tail) - len(tail.lstrip(" "))
                grow = len(raw) - (b - a)
                if 0 < grow < spaces:
                    tail = tail[grow:]
                lines[line_no - 1] = ln[:a] + raw + tail
                return "\n".join(lines)
            # a topic's header line (PartitionCount) is in the row of each of its partitions
            unit = int(m.group(1)) if column == "partition_count" else 1
            out.append(Variant(f"{scenario}/{table}/{column}/{kind}", scenario, table, column, kind, rel, raw,
                               None, subjects, _text_edit(rel, change), unit_rows=unit))
    return out


def _manifest_variants(bundle: Path, scenario: str) -> list[Variant]:
    """``manifest.json``: the node a metric export was sampled from."""
    out: list[Variant] = []
    rel = "manifest.json"
    text = (bundle / rel).read_text(encoding="utf-8")
    doc = json.loads(text)
    entry = next((m for m in doc.get("metrics", []) if isinstance(m.get("node"), int)), None)
    if entry is None:
        return out
    pattern = re.compile(rf'("file": "{re.escape(entry["file"])}",\s*"node": ){entry["node"]},')
    if len(pattern.findall(text)) != 1:
        return out
    for kind, raw in {"overflow": str(2**40), "garbage": '"abc"', "negative": "-5", "nan": "NaN",
                      "inf": "Infinity", "max": "1e300"}.items():
        out.append(Variant(f"{scenario}/manifest/metrics.node/{kind}", scenario, "metrics", "manifest.metrics.node",
                           kind, rel, raw.strip('"'), None, ("*",),
                           _text_edit(rel, lambda t, raw=raw: pattern.sub(lambda m: f"{m.group(1)}{raw},", t))))
    return out


def _snapshot_variants(bundle: Path, scenario: str) -> list[Variant]:
    """A KRaft snapshot: its header batch's times."""
    out: list[Variant] = []
    snaps = sorted(bundle.glob("nodes/*/logs/__cluster_metadata-0/*.checkpoint"))
    if not snaps:
        return out
    snap = snaps[0]
    rel = str(snap.relative_to(bundle))
    first_batch = next(_batches(snap))
    for name in ("max_timestamp",):
        for kind, value in TIME_KINDS.items():
            out.append(Variant(f"{scenario}/snapshots/batch.{name}/{kind}", scenario, "snapshots", f"snapshot.{name}",
                               kind, rel, str(value), first_batch.position, ("quorum:*", "isr:*"),
                               _header_edit(rel, first_batch.position, name, value)))
    return out


#: Which readers' variants come from which scenario bundle, in corpus order.
PLAN: list[tuple[Any, ...]] = [
    (_metadata_variants, "isr"), (_segment_variants, "isr", "orders-*"),
    (_segment_variants, "consumer_lag", "lag-none-*"), (_offsets_variants, "consumer_lag"),
    (_jmx_variants, "isr"), (_prom_variants, "quorum"), (_prom_variants, "isr"), (_jmx_variants, "consumer_lag"),
    (_properties_variants, "isr"), (_quorum_state_variants, "isr"), (_tool_variants, "isr"),
    (_tool_variants, "consumer_lag"), (_tool_variants, "quorum"), (_manifest_variants, "quorum"),
    (_snapshot_variants, "quorum"),
]


def corpus(build: Callable[[str, str], Any] | None = None) -> list[Variant]:
    """Every variant, in a fixed order (bundles built by real Kafka on first use, then cached).

    ``build(name, version)`` gives a scenario bundle (default :func:`peer.scenario.build`).
    """
    if build is None:
        from peer.scenario import build

    bundles = {name: Path(build(BUNDLES[name], VERSION)) for name in BUNDLES}
    out: list[Variant] = []
    for make, scenario, *extra in PLAN:
        out += make(bundles[scenario], scenario, *extra)
    ids = Counter(v.id for v in out)
    dup = [i for i, n in ids.items() if n > 1]
    if dup:
        raise AssertionError(f"variant ids given twice: {dup}")
    return out


BUNDLES = {"isr": "isr", "consumer_lag": "consumer_lag", "quorum": "quorum"}


def sample(variants: list[Variant], n: int = 24) -> list[Variant]:
    """A deterministic sample of at least ``n`` variants: the first of each reader, of each kind and
    of each file format or record type (the field's first part), then evenly spaced others."""
    chosen: dict[str, Variant] = {}
    for key in (lambda v: v.reader, lambda v: v.kind, lambda v: (v.reader, v.field.split(".")[0])):
        seen = {key(c) for c in chosen.values()}
        for v in variants:
            if key(v) not in seen:
                seen.add(key(v))
                chosen[v.id] = v
    step = max(1, len(variants) // n)
    for v in variants[::step]:
        if len(chosen) >= n:
            break
        chosen.setdefault(v.id, v)
    return [v for v in variants if v.id in chosen]


def targets(v: Variant, bundle: Path) -> set[str]:
    """What variant ``v`` exercises, by the registries: ``reader:<table>`` (the table its value enters),
    ``table:<name>`` for every table reading its file (:func:`workbench.spark.registry.table_specs`),
    ``area:<name>`` for every area reading one of them (:func:`workbench.analysis.findings.areas`) and
    ``path:<name>`` for every compiled path (:func:`workbench.kernels.compiled_paths`) whose tables do."""
    from workbench.analysis.findings import areas
    from workbench.kernels import compiled_paths

    touched = _tables_reading(bundle, v.path)
    out = {f"reader:{v.reader}"} | {f"table:{t}" for t in touched}
    out |= {f"area:{name}" for name, area in areas().items() if set(area.tables) & touched}
    out |= {f"path:{p.name}" for p in compiled_paths() if set(p.tables) & touched}
    return out


def covering(variants: list[Variant], build: Callable[[str, str], Any] | None = None) -> list[Variant]:
    """The first variant (in corpus order) of each reader, and of each table, area and compiled path a
    variant reaches (:func:`targets`): a new reader, table, area or compiled path is covered without
    an edit here."""
    if build is None:
        from peer.scenario import build
    bundles = {s: Path(build(BUNDLES[s], VERSION)) for s in dict.fromkeys(v.scenario for v in variants)}
    held: set[str] = set()
    chosen = []
    for v in variants:
        mine = targets(v, bundles[v.scenario])
        if mine - held:
            chosen.append(v)
            held |= mine
    return chosen


# ------------------------------------------------------------------------------------------
# running: one Spark session, every variant through what the report computes


#: Rows of the problems appendix of the report (``notebooks/00_overview.py``'s appendix, which
#: closes the composed report: ``inv.tables.problems.orderBy("path", "position").limit(50)``).
APPENDIX_ROWS = 50


@dataclass
class Outcome:
    """What running one bundle gave."""

    tables: dict[str, Any]
    problems: list[dict]
    findings: dict[str, list[dict]]
    figures: dict[str, dict]
    areas_read: dict[str, set[str]] = field(default_factory=dict)
    seconds: float = 0.0
    appendix: list[dict] = field(default_factory=list)
    """The rows the report's problems appendix shows, read before any section built a table."""


def appendix_problems(inv: Any) -> tuple[list[dict], list[dict]]:
    """Every problem of the investigation's bundle, and the rows of them the report's appendix shows."""
    frame = inv.tables.problems
    shown = [r.asDict() for r in frame.orderBy("path", "position").limit(APPENDIX_ROWS).collect()]
    return [r.asDict() for r in frame.collect()], shown


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return tuple(sorted((k, _plain(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    if hasattr(value, "asDict"):
        return _plain(value.asDict(recursive=True))
    return value


def _rows(frame: Any) -> tuple[list[str], list[tuple]]:
    return frame.columns, sorted((tuple(_plain(v) for v in r) for r in frame.collect()), key=repr)


@contextlib.contextmanager
def _recording(log: set[str]) -> Iterator[None]:
    """Record the names of the tables built or read while in the block."""
    from workbench.spark.registry import Tables

    original = Tables._build

    def build(self: Any, name: str) -> Any:
        log.add(name)
        return original(self, name)

    Tables._build = build  # type: ignore[method-assign]
    try:
        yield
    finally:
        Tables._build = original  # type: ignore[method-assign]


def run_bundle(spark: Any, path: Path, *, tables: set[str] | None = None, areas: set[str] | None = None,
               record: bool = False) -> Outcome:
    """Open ``path``, build the tables, read the problems and compute the chosen areas' findings and key figures.

    ``tables``: the tables whose rows are kept for comparison (all when None); when no area is
    computed only they are built (a table reading none of the changed files reads what the clean
    bundle's did). ``areas``: the areas computed (all when None).
    """
    from workbench.analysis.findings import area_has_data, check_findings
    from workbench.analysis.findings import areas as all_areas
    from workbench.investigation import open_investigation
    from workbench.spark.registry import table_specs

    t0 = time.monotonic()
    inv = open_investigation(str(path), spark=spark, params={"report": True})
    problems, appendix = appendix_problems(inv)  # before anything is built: the appendix must not need it
    for name in table_specs():  # every table, or those asked for when no area runs
        if tables is None or areas is None or areas or name in tables:
            _ = inv.tables[name].columns
    kept = {name: _rows(inv.tables[name]) for name in table_specs() if tables is None or name in tables}
    findings: dict[str, list[dict]] = {}
    figures: dict[str, dict] = {}
    read: dict[str, set[str]] = {}
    for name, area in all_areas().items():
        if areas is not None and name not in areas:
            continue
        seen: set[str] = set()
        with _recording(seen) if record else contextlib.nullcontext():
            if area_has_data(inv.tables, name):
                frame = check_findings(area.findings_for(inv.tables, inv.params), name)
                findings[name] = [r.asDict(recursive=True) for r in frame.collect()]
            else:
                findings[name] = []
            figures[name] = area.key_figures_for(inv.tables, inv.params)
        read[name] = seen
    out = Outcome(kept, problems, findings, figures, read, time.monotonic() - t0, appendix)
    _close(spark, inv)
    return out


def _close(spark: Any, inv: Any) -> None:
    from workbench import investigation
    from workbench.spark import registry

    inv.tables.unpersist()
    for key in [k for k, v in investigation._OPEN.items() if v is inv]:
        del investigation._OPEN[key]
    for key in [k for k, v in registry._SESSION_TABLES.items() if v is inv.tables]:
        del registry._SESSION_TABLES[key]
    inv.bundle.close() if hasattr(inv.bundle, "close") else None


def _finding_key(f: dict) -> tuple:
    return (f["area"], f["kind"], f["subject_type"], f["subject"], str(f["start"]), str(f["end"]),
            f["summary"], _plain(f["figures"] or {}))


def _touches(f: dict, patterns: tuple[str, ...]) -> bool:
    text = f"{f['area']}:{f['subject_type']}:{f['subject']}"
    return any(fnmatch.fnmatchcase(text, p) for p in patterns)


def _tables_reading(bundle_path: Path, rel: str) -> set[str]:
    """The tables whose input includes file ``rel`` (a derived table of one of them included)."""
    from workbench.bundle import open_bundle
    from workbench.spark.registry import table_specs

    bundle = open_bundle(bundle_path)
    art = next((a for a in bundle.artifacts if a.path == rel), None)
    out = set()
    for name, spec in table_specs().items():
        if spec.build is not None:  # a derived table: by its kinds, or by the files it names
            if art is not None and (art.kind in spec.kinds
                                    or (spec.select is not None and any(a.path == rel for a in spec.select(bundle)))):
                out.add(name)
            continue
        chosen = spec.select(bundle) if spec.select else bundle.of_kind(*spec.kinds)
        if any(a.path == rel for a in chosen):
            out.add(name)
    if art is not None and art.kind in ("manifest", "meta_properties"):
        out = set(table_specs())  # capture times, nodes and cluster ids of files every table reads
    return out


def check_variant(spark: Any, v: Variant, clean: Outcome, bundle: Path, work: Path, *,
                  findings: bool = True) -> dict[str, Any]:
    """Build variant ``v`` beside its clean bundle, run it and judge it; returns ``{id, ok, reasons, seconds}``.

    ``findings``: also compute the findings of every area reading a table the value reached.
    """
    t0 = time.monotonic()
    dst = work / re.sub(r"[^A-Za-z0-9_.-]", "_", v.id)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(bundle, dst, copy_function=os.link)
    reasons: list[str] = []
    try:
        v.edit(dst)
        touched = _tables_reading(dst, v.path)
        areas = {a for a, read in clean.areas_read.items() if read & touched} if findings else set()
        got = run_bundle(spark, dst, tables=touched, areas=areas)
    except Exception as exc:  # the pipeline must not abort: this is the failure being looked for
        shutil.rmtree(dst, ignore_errors=True)
        return {"id": v.id, "ok": False, "reasons": [f"raised {type(exc).__name__}: {str(exc)[:300]}"],
                "seconds": round(time.monotonic() - t0, 1)}
    path = str(dst / v.path)
    new = [p for p in got.problems if p not in [{**q, "path": q["path"].replace(str(bundle), str(dst))}
                                                 for q in clean.problems]]
    named = [p for p in new if p["path"] == path and (v.position is None or p["position"] == v.position)
             and any(r in (p["detail"] or "") for r in _renderings(v.raw))]
    if not named:
        shown = [(p["path"].replace(str(dst) + "/", ""), p["position"], p["kind"], p["detail"][:120]) for p in new]
        reasons.append(f"no problem names {v.path}@{v.position} and {v.raw!r}; new problems: {shown[:4]}")
    elif not any(p in got.appendix for p in named):
        reasons.append(f"the problem naming {v.raw!r} is not among the {len(got.appendix)} rows the report's "
                       f"appendix shows")
    for name, (columns, rows) in got.tables.items():
        before = [_rebase(r, str(bundle), str(dst)) for r in clean.tables[name][1]]
        def of_file(r: tuple) -> bool:  # the inventory names files relative to the bundle
            return path in r or v.path in r
        other_new = [r for r in rows if not of_file(r)]
        other_old = [r for r in before if not of_file(r)]
        if other_new != other_old:
            reasons.append(f"table {name}: rows of other files differ ({len(other_old)} clean, {len(other_new)} now)")
        at = next((columns.index(c) for c in ("batch_position", "position") if c in columns), None)

        def elsewhere(r: tuple, at: int | None = at) -> bool:
            return of_file(r) and (at is None or v.position is None or r[at] != v.position)
        gone = Counter(r for r in before if elsewhere(r)) - Counter(r for r in rows if elsewhere(r))
        added = Counter(r for r in rows if elsewhere(r)) - Counter(r for r in before if elsewhere(r))
        if sum(gone.values()) > v.unit_rows or sum(added.values()) > v.unit_rows:
            reasons.append(f"table {name}: {sum(gone.values())} rows of the file gone, {sum(added.values())} new "
                           f"(at most {v.unit_rows} may change besides those at the position)")
    for area, found in got.findings.items():
        mine = sorted((_finding_key(f) for f in found if not _touches(f, v.subjects)), key=repr)
        theirs = sorted((_finding_key(f) for f in clean.findings[area] if not _touches(f, v.subjects)), key=repr)
        if mine != theirs:
            extra = [k[:4] for k in mine if k not in theirs][:3]
            lost = [k[:4] for k in theirs if k not in mine][:3]
            reasons.append(f"area {area}: findings about other subjects differ (new {extra}, gone {lost})")
    shutil.rmtree(dst, ignore_errors=True)
    return {"id": v.id, "ok": not reasons, "reasons": reasons, "seconds": round(time.monotonic() - t0, 1),
            "areas": sorted(areas), "tables": sorted(touched)}


def _renderings(raw: str) -> set[str]:
    """``raw`` as written, and as Python prints the number it parses to (JSON's ``NaN`` is ``nan``)."""
    out = {raw}
    with contextlib.suppress(ValueError):
        out.add(repr(float(raw)))
    return out


def _rebase(row: tuple, old: str, new: str) -> tuple:
    return tuple(v.replace(old, new) if isinstance(v, str) and v.startswith(old) else v for v in row)


def run_corpus(spark: Any, variants: list[Variant], *, work: Path | None = None,
               findings: bool | Collection[str] = True,
               progress: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Run ``variants`` in this Spark session; the result as one JSON-able dict.

    ``findings``: also compute the affected areas' findings of every variant (``True``), of none
    (``False``) or of the variants whose ids it holds; a scenario's clean bundle is run once, with
    every area when one of its variants needs findings.
    """
    from peer.scenario import build

    def wants(v: Variant) -> bool:
        return findings if isinstance(findings, bool) else v.id in findings

    t0 = time.monotonic()
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="bad-value-corpus-")) if own else work
    results: list[dict] = []
    clean: dict[str, tuple[Path, Outcome]] = {}
    clean_seconds = 0.0
    try:
        for v in variants:
            if v.scenario not in clean:
                bundle = Path(build(BUNDLES[v.scenario], VERSION))
                copy = work / f"clean-{v.scenario}"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(bundle, copy, copy_function=os.link)
                mine = [u for u in variants if u.scenario == v.scenario]
                every = any(wants(u) for u in mine)
                wanted = None if every else set().union(*(_tables_reading(copy, u.path) for u in mine))
                clean[v.scenario] = (copy, run_bundle(spark, copy, record=True, tables=wanted,
                                                      areas=None if every else set()))
                clean_seconds += clean[v.scenario][1].seconds
            copy, outcome = clean[v.scenario]
            result = check_variant(spark, v, outcome, copy, work, findings=wants(v))
            results.append(result)
            if progress:
                progress(result)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    failed = [r for r in results if not r["ok"]]
    return {
        "variants": len(results),
        "passed": len(results) - len(failed),
        "failed": len(failed),
        "failures": {r["id"]: r["reasons"] for r in failed},
        "ids": [r["id"] for r in results],
        "by_reader": dict(Counter(v.reader for v in variants)),
        "by_kind": dict(Counter(v.kind for v in variants)),
        "clean_seconds": round(clean_seconds, 1),
        "variant_seconds": round(sum(r["seconds"] for r in results), 1),
        "total_seconds": round(time.monotonic() - t0, 1),
    }


def _variant_copy(v: Variant, work: Path, prefix: str, build: Callable[[str, str], Any]) -> Path:
    """A copy of ``v``'s scenario bundle (hard links) under ``work`` with ``v``'s bad value written."""
    dst = work / (prefix + re.sub(r"[^A-Za-z0-9_.-]", "_", v.id))
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(Path(build(BUNDLES[v.scenario], VERSION)), dst, copy_function=os.link)
    v.edit(dst)
    return dst


def appendix_rows(text: str, path: str) -> list[str]:
    """The rows (``<tr>...</tr>``) of a report's appendix whose cells name ``path`` (as the HTML escapes it)."""
    import html

    appendix = text[text.find("Appendix: what the bundle holds"):] if text else ""
    cell = f"<td>{html.escape(path)}</td>"
    return [row for row in re.findall(r"<tr>.*?</tr>", appendix, flags=re.DOTALL) if cell in row]


def shows_value(v: Variant, text: str, bundle: Path) -> bool:
    """Whether a row of the report's problems appendix names ``v``'s file, its position (where the format
    has one) and the raw bad value, escaped as the HTML writes it."""
    import html

    rows = appendix_rows(text, str(bundle / v.path))
    if v.position is not None:
        rows = [r for r in rows if f"<td>{v.position}</td>" in r or f"<td>{v.position}.0</td>" in r]
    return any(html.escape(r) in row for row in rows for r in _renderings(v.raw))


def _area_touched(area: str, patterns: tuple[str, ...]) -> bool:
    """Whether a finding of ``area`` may be about a subject the bad value feeds (its key figures may change)."""
    return any(fnmatch.fnmatchcase(area, p.split(":")[0]) for p in patterns)


def compare_summaries(v: Variant, got: dict, clean: dict) -> list[str]:
    """Reasons the summary of ``v``'s report differs from the clean bundle's outside what ``v`` may change:
    a finding about another subject, or the key figures of an area no pattern of ``v`` reaches."""
    reasons = []
    mine = sorted((_finding_key(f) for f in got["findings"] if not _touches(f, v.subjects)), key=repr)
    theirs = sorted((_finding_key(f) for f in clean["findings"] if not _touches(f, v.subjects)), key=repr)
    if mine != theirs:
        extra = [k[:4] for k in mine if k not in theirs][:3]
        lost = [k[:4] for k in theirs if k not in mine][:3]
        reasons.append(f"findings about other subjects differ (new {extra}, gone {lost})")
    for area, figures in clean["areas"].items():
        if not _area_touched(area, v.subjects) and _plain(got["areas"].get(area)) != _plain(figures):
            changed = sorted(k for k in set(figures) | set(got["areas"].get(area) or {})
                             if _plain(figures.get(k)) != _plain((got["areas"].get(area) or {}).get(k)))
            reasons.append(f"area {area}: key figures differ ({changed[:5]})")
    if got["problems"] <= clean["problems"]:
        reasons.append(f"the summary counts {got['problems']} problems, the clean bundle's {clean['problems']}")
    return reasons


def run_cli(variants: list[Variant], work: Path, build: Callable[[str, str], Any] | None = None) -> list[dict]:
    """Run the real ``workbench report`` (papermill, HTML, ``--summary``) on each variant.

    A variant passes when the command exits 0 or 1, writes the HTML report and the summary, and the
    report's problems appendix shows the raw bad value.
    """
    import subprocess

    if build is None:
        from peer.scenario import build
    out = []
    for v in variants:
        t0 = time.monotonic()
        dst = _variant_copy(v, work, "cli-", build)
        report, summary = work / f"{dst.name}.html", work / f"{dst.name}.json"
        proc = subprocess.run([sys.executable, "-m", "workbench", "report", "--bundle", str(dst), "--out", str(report),
                               "--summary", str(summary)], capture_output=True, text=True, cwd=ROOT)
        reasons = []
        if proc.returncode not in (0, 1):
            reasons.append(f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
        text = report.read_text(encoding="utf-8") if report.is_file() else ""
        if not text:
            reasons.append("no HTML report")
        if not shows_value(v, text, dst):
            reasons.append(f"the report's problems appendix does not show {v.raw!r}")
        problems = json.loads(summary.read_text(encoding="utf-8"))["problems"] if summary.is_file() else None
        if not problems:
            reasons.append(f"the summary counts {problems} problems")
        out.append({"id": v.id, "ok": not reasons, "exit": proc.returncode, "reasons": reasons, "problems": problems,
                    "html_bytes": len(text), "seconds": round(time.monotonic() - t0, 1)})
        shutil.rmtree(dst, ignore_errors=True)
    return out


def _tree_rss_mb(pid: int | None) -> float | None:
    """Resident memory of a process and its children (the kernel and its Spark driver JVM), MiB."""
    if pid is None:
        return None
    try:
        import psutil

        proc = psutil.Process(pid)
        return round(sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20, 1)
    except Exception:  # psutil missing, or the process just ended
        return None


def _cell_seconds(executed: Path, into: dict[int, list]) -> None:
    """Add each cell's duration (papermill's metadata) of an executed notebook to ``into``: index -> [seconds, text]."""
    import nbformat

    for i, cell in enumerate(nbformat.read(str(executed), as_version=4).cells):
        seconds = (cell.metadata.get("papermill") or {}).get("duration")
        if seconds is not None:
            slot = into.setdefault(i, [0.0, cell.source.strip().split("\n")[-1][:80]])
            slot[0] += seconds


def run_reports(variants: list[Variant], work: Path, *, build: Callable[[str, str], Any] | None = None,
                progress: Callable[[dict], None] | None = None, timeout: float | None = 900,
                budget: float | None = None, kernels: int = 1) -> dict[str, Any]:
    """Run the real report pipeline (:class:`workbench.report.ReportKernel`: the composed notebook run by
    papermill, HTML export, offline check, summary, exit code) on each scenario's clean bundle and each
    variant, in ``kernels`` kept kernels (one Python process and one Spark session each) taking
    reports from one queue, the clean bundles' first.

    A variant passes when its report exits 0 or 1, the HTML is written, a row of its problems
    appendix names the file, the position and the raw bad value, and its summary's findings about
    other subjects and the key figures of the areas the value cannot reach equal the clean
    bundle's (:func:`compare_summaries`). The result is one JSON-able dict like :func:`run_corpus`'s,
    with the kernels' memory after each report and where the notebook spent its time. ``budget``:
    seconds after which no further variant is started (those left are counted as ``not_run``).
    One kernel leaves about a quarter of 2 cores idle (Spark's jobs on a small bundle are short, and
    each waits on the JVM and the kernel): two kernels on 2 cores finish a sample sooner.
    """
    import queue
    import threading

    from workbench.report import ReportError, ReportKernel

    if kernels < 1:
        raise ValueError(f"kernels must be >= 1, got {kernels}")
    if build is None:
        from peer.scenario import build
    t0 = time.monotonic()
    scenarios = list(dict.fromkeys(v.scenario for v in variants))
    bundles = {s: Path(build(BUNDLES[s], VERSION)) for s in scenarios}   # built here, read by every kernel

    def built(name: str, version: str) -> Path:
        return bundles[next(s for s in scenarios if BUNDLES[s] == name)]

    tasks: queue.SimpleQueue = queue.SimpleQueue()
    for scenario in scenarios:
        tasks.put(("clean", scenario))
    for v in variants:
        tasks.put(("variant", v))
    lock = threading.Lock()
    results: list[dict] = []
    clean: dict[str, dict | None] = {}
    clean_ready = {s: threading.Event() for s in scenarios}
    clean_seconds: list[float] = []
    cells: dict[int, list] = {}
    rss: list[float] = []
    starts: list[int] = []
    errors: list[BaseException] = []

    def report(kernel: ReportKernel, bundle: Path, name: str) -> tuple[Any, str]:
        html_out, executed = work / f"{name}.html", work / f"{name}.ipynb"
        result = kernel.run(bundle, html_out, summary=work / f"{name}.json", keep_executed=executed,
                            timeout=timeout)
        with lock:
            _cell_seconds(executed, cells)
        executed.unlink()
        text = html_out.read_text(encoding="utf-8")
        html_out.unlink()
        return result, text

    def clean_report(kernel: ReportKernel, scenario: str) -> None:
        t1 = time.monotonic()
        copy = work / f"clean-{scenario}"
        try:
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(bundles[scenario], copy, copy_function=os.link)
            result, _ = report(kernel, copy, copy.name)
            clean[scenario] = result.summary
        except ReportError:
            clean[scenario] = None   # each of its variants says so
        finally:
            shutil.rmtree(copy, ignore_errors=True)
            clean_seconds.append(time.monotonic() - t1)
            clean_ready[scenario].set()

    def variant_report(kernel: ReportKernel, v: Variant) -> None:
        t1 = time.monotonic()
        dst = _variant_copy(v, work, "report-", built)
        reasons: list[str] = []
        exit_code = None
        try:
            result, text = report(kernel, dst, dst.name)
            exit_code = result.exit_code
            if exit_code not in (0, 1):
                reasons.append(f"exit {exit_code}")
            if not text:
                reasons.append("no HTML report")
            if not shows_value(v, text, dst):
                reasons.append(f"no row of the report's problems appendix names {v.path}@{v.position} and "
                               f"{v.raw!r}")
            clean_ready[v.scenario].wait()
            baseline = clean[v.scenario]
            if baseline is None:
                reasons.append(f"the clean {v.scenario} bundle's report failed: nothing to compare with")
            else:
                reasons += compare_summaries(v, result.summary, baseline)
        except ReportError as exc:
            exit_code = 2
            reasons.append(f"report failed: {str(exc)[:400]}")
        shutil.rmtree(dst, ignore_errors=True)
        memory = _tree_rss_mb(kernel.pid)
        row = {"id": v.id, "ok": not reasons, "exit": exit_code, "reasons": reasons,
               "seconds": round(time.monotonic() - t1, 1), "rss_mb": memory}
        with lock:
            if memory is not None:
                rss.append(memory)
            results.append(row)
            if progress:
                progress(row)

    def worker() -> None:
        try:
            with ReportKernel() as kernel:
                try:
                    while True:
                        try:
                            what, item = tasks.get_nowait()
                        except queue.Empty:
                            break
                        if what == "clean":
                            clean_report(kernel, item)
                        elif budget is None or time.monotonic() - t0 <= budget:
                            variant_report(kernel, item)
                finally:
                    with lock:
                        starts.append(kernel.starts)
        except BaseException as exc:   # noqa: BLE001 - raised again below, in the caller's thread
            with lock:
                errors.append(exc)
            for event in clean_ready.values():   # no variant waits for a clean report that will not come
                event.set()

    threads = [threading.Thread(target=worker, name=f"report-kernel-{i}", daemon=True) for i in range(kernels)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    failed = [r for r in results if not r["ok"]]
    slowest = sorted(cells.items(), key=lambda kv: -kv[1][0])[:8]
    return {
        "variants": len(results),
        "passed": len(results) - len(failed),
        "failed": len(failed),
        "failures": {r["id"]: r["reasons"] for r in failed},
        "not_run": len(variants) - len(results),
        "exits": dict(Counter(str(r["exit"]) for r in results)),
        "kernels": kernels,
        "kernel_starts": sum(starts),
        "rss_mb": {"first": rss[0], "last": rss[-1], "max": max(rss)} if rss else None,
        "clean_seconds": round(sum(clean_seconds), 1),
        "variant_seconds": round(sum(r["seconds"] for r in results), 1),
        "seconds_per_report": round(sum(r["seconds"] for r in results) / max(1, len(results)), 1),
        "slowest_cells": [{"cell": i, "seconds": round(sec, 1), "last_line": src} for i, (sec, src) in slowest],
        "total_seconds": round(time.monotonic() - t0, 1),
    }
