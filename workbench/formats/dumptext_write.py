"""Writing the text of Kafka's dump tool (``kafka-dump-log.sh``) for segments and snapshots.

:func:`dump_lines` produces, for one ``.log`` segment or ``.checkpoint`` snapshot (and for
the ``.index``, ``.timeindex``, ``.txnindex`` and producer ``.snapshot`` files beside them),
the lines ``kafka-dump-log.sh --files <path>`` prints on stdout, byte for byte, for a chosen
Kafka version and the same flags (reference §10). :func:`write_kafka_dump` is the entry point of
``workbench dump --format kafka``.

What differs by version (reference §10.2–§10.5; 3.9 and 4.3 checked against real dumps):

==========================  ================================================================
version                     difference
==========================  ================================================================
<= 3.2 / >= 3.3             ``Starting offset: N`` / ``Log starting offset: N``; snapshots
                            (``*.checkpoint``) are dumped from 3.3 on
< 3.2 / >= 3.2              batch line without / with ``deleteHorizonMs: OptionalLong…``
<= 2.8 / >= 3.0             ``compresscodec: NONE`` / ``compresscodec: none``
2.2–2.7, 2.8, >= 3.0        record line forms (``keysize``, the verbose 2.8 form, ``keySize``)
<= 4.2 (Scala) / >= 4.3     payload always after ``" "`` vs. chained prefix; legacy record
                            ``crc: N}`` with a stray brace vs. ``crc: N``
<= 4.0 / >= 4.1             ``controlType: LEADER_CHANGE(2)`` vs. ``LeaderChange: {json}``
< 3.3, < 3.9                snapshot header/footer and KRaft version/voters records print
                            as ``controlType: NAME(id)`` (unverified for old releases)
>= 4.0                      ``txnIdxEmpty`` in remote-log-metadata text
<= 4.0 / >= 4.1             ``--transaction-log-decoder``: ``transaction_metadata::…`` text
                            (partitions in Scala HashSet order) vs. JSON
<= 4.2 / >= 4.3             producer snapshot line: ``lastTimestamp: T `` + ``firstSequence``
                            vs. ``lastTimestamp: T`` + `` firstSequence``
==========================  ================================================================

Damaged files are read the way Kafka's tool reads them (see :func:`dump_lines`): batches are
framed by their declared length alone, and the output ends where Kafka's reader ends or where
its tool fails. Forms of releases before 3.0 follow the reference and were not compared with
a real tool.

Examples
--------
>>> import io, os, tempfile
>>> from workbench.formats.batch import encode_batch
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "00000000000000000000.log")
>>> _ = open(p, "wb").write(encode_batch([(0, 1000, None, b"v")], base_offset=0))
>>> lines = list(dump_lines(p, shown_path="t-0/00000000000000000000.log"))
>>> lines[0], lines[1]
('Dumping t-0/00000000000000000000.log', 'Log starting offset: 0')
>>> lines[3]
'| offset: 0 CreateTime: 1000 keySize: -1 valueSize: 1 sequence: -1 headerKeys: []'
"""

from __future__ import annotations

import io
import os
import re
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, TextIO

from crc32c import crc32c as _crc32c

from workbench.errors import ConfigError
from workbench.formats.batch import Batch, Record, read_batches
from workbench.formats.compression import CODEC_NAMES, CodecError, decompress
from workbench.formats.problems import ProblemLog
from workbench.formats.segment import parse_checkpoint_name

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "DECODERS",
    "DumpOptions",
    "KafkaEra",
    "TOOL_FAILURE",
    "Unterminated",
    "dump_lines",
    "dump_text",
    "java_file_path",
    "options_from_args",
    "write_kafka_dump",
]

DEFAULT_KAFKA_VERSION = "4.3.1"
"""The newest Kafka release whose dump text is reproduced (the default ``--kafka-version``)."""

DECODERS = ("none", "cluster-metadata", "offsets", "remote-log-metadata", "transaction-log", "share-group-state")
"""Payload decoders (``none`` = Kafka's default StringDecoder)."""

_FLAG_DECODERS = {
    "--cluster-metadata-decoder": "cluster-metadata",
    "--offsets-decoder": "offsets",
    "--remote-log-metadata-decoder": "remote-log-metadata",
    "--transaction-log-decoder": "transaction-log",
    "--share-group-state-decoder": "share-group-state",
}

_VERSION = re.compile(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_BASE_NAME = re.compile(r"^[+-]?\d+$")
_LOG_HDR = struct.Struct(">qi")
_CONTROL_NAMES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
_HEADER_SIZE_UP_TO_MAGIC = 17
_RECORD_OVERHEAD_V0 = 14


@dataclass(frozen=True)
class KafkaEra:
    """What the dump text of one Kafka release looks like (derived from its version).

    Examples
    --------
    >>> KafkaEra.of("3.9.2").scala, KafkaEra.of("4.3").scala
    (True, False)
    """

    version: tuple[int, int, int]
    scala: bool  # kafka.tools.DumpLogSegments (<= 4.2)
    log_start_label: str  # "Log starting offset: " or "Starting offset: "
    snapshots: bool  # *.checkpoint files are dumped (3.3+)
    delete_horizon: bool  # deleteHorizonMs on the batch line (3.2+)
    codec_upper: bool  # compresscodec NONE (<= 2.8)
    record_form: str  # "3.0" | "2.8" | "2.2" | "2.1"
    leader_change_json: bool  # LeaderChange: {json} (4.1+)
    snapshot_controls: bool  # SnapshotHeader/SnapshotFooter text (3.3+)
    kraft_controls: bool  # KRaftVersion/KRaftVoters text (3.9+)
    known_control_types: int  # control type ids below this have an enum name
    offsets_json: bool  # --offsets-decoder prints JSON (3.8+)
    txn_idx_empty: bool  # remote-log-metadata text has txnIdxEmpty (4.0+)

    @classmethod
    def of(cls, version: str | None) -> KafkaEra:
        """The era of ``version`` (``"4.3.1"``, ``"3.9"``, ``"2.8.2"``; ``None`` = newest).

        Raises
        ------
        ConfigError
            When ``version`` is not a Kafka version number.
        """
        text = DEFAULT_KAFKA_VERSION if version is None else str(version)
        m = _VERSION.match(text)
        if m is None:
            raise ConfigError(f"Kafka version {text!r} is not a version number like '4.3.1' or '3.9'")
        v = (int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0))
        mm = v[:2]
        if mm >= (3, 0):
            form = "3.0"
        elif mm == (2, 8):
            form = "2.8"
        elif mm >= (2, 2):
            form = "2.2"
        else:
            form = "2.1"
        known = 7 if mm >= (3, 9) else 5 if mm >= (3, 0) else 3 if mm >= (2, 7) else 2
        return cls(
            version=v,
            scala=mm <= (4, 2),
            log_start_label="Log starting offset: " if mm >= (3, 3) else "Starting offset: ",
            snapshots=mm >= (3, 3),
            delete_horizon=mm >= (3, 2),
            codec_upper=mm <= (2, 8),
            record_form=form,
            leader_change_json=mm >= (4, 1),
            snapshot_controls=mm >= (3, 3),
            kraft_controls=mm >= (3, 9),
            known_control_types=known,
            offsets_json=mm >= (3, 8),
            txn_idx_empty=mm >= (4, 0),
        )


@dataclass(frozen=True)
class DumpOptions:
    """The ``kafka-dump-log`` flags that shape a log dump.

    Attributes
    ----------
    decoder : str
        One of :data:`DECODERS`; any decoder but ``none`` implies ``print_data_log``.
    print_data_log : bool
        ``--print-data-log`` (implies ``deep_iteration``).
    deep_iteration : bool
        ``--deep-iteration``: one line per record.
    skip_record_metadata : bool
        ``--skip-record-metadata``.
    """

    decoder: str = "none"
    print_data_log: bool = False
    deep_iteration: bool = True
    skip_record_metadata: bool = False

    @property
    def prints_contents(self) -> bool:
        """Whether keys and payloads are printed."""
        return self.print_data_log or self.decoder != "none"

    @property
    def deep(self) -> bool:
        """Whether records are iterated."""
        return self.deep_iteration or self.prints_contents


def options_from_args(args: Iterable[str]) -> DumpOptions:
    """The :class:`DumpOptions` of ``kafka-dump-log`` arguments (``--files`` is ignored).

    Examples
    --------
    >>> options_from_args(["--cluster-metadata-decoder"])
    DumpOptions(decoder='cluster-metadata', print_data_log=False, deep_iteration=False, skip_record_metadata=False)

    Raises
    ------
    ConfigError
        For a flag this writer does not reproduce (index checks, custom decoder classes).
    """
    decoder, pdl, deep, skip = "none", False, False, False
    items = list(args)
    i = 0
    while i < len(items):
        a = items[i]
        if a in _FLAG_DECODERS:
            decoder = _FLAG_DECODERS[a]
        elif a == "--print-data-log":
            pdl = True
        elif a == "--deep-iteration":
            deep = True
        elif a == "--skip-record-metadata":
            skip = True
        elif a == "--files":
            i += 1
        elif a.startswith("--files="):
            pass
        else:
            raise ConfigError(
                f"kafka-dump-log flag {a!r} is not reproduced; known: --deep-iteration, "
                f"--print-data-log, --skip-record-metadata, {', '.join(_FLAG_DECODERS)}"
            )
        i += 1
    return DumpOptions(decoder, pdl, deep, skip)


def java_file_path(path: str | os.PathLike[str]) -> str:
    """``path`` as ``java.io.File.toString()`` prints it (repeated and trailing ``/`` removed).

    Examples
    --------
    >>> java_file_path("a//b/00000000000000000000.log")
    'a/b/00000000000000000000.log'
    """
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    text = re.sub(r"/{2,}", "/", text)
    if len(text) > 1 and text.endswith("/"):
        text = text[:-1]
    return text


# --------------------------------------------------------------------------------------------
# payload text of each decoder


class _Payloads:
    """Key and payload text of one decoder for one era: ``parse(record) -> (key, payload)``."""

    def __init__(self, decoder: str, era: KafkaEra, log: ProblemLog, position: list[int]) -> None:
        self.era = era
        self.log = log
        self.position = position  # [batch position], updated by the caller
        self.parse = {
            "none": self._string,
            "cluster-metadata": self._metadata,
            "offsets": self._offsets,
            "transaction-log": self._transactions,
            "share-group-state": self._share_state,
            "remote-log-metadata": self._remote,
        }[decoder]

    def _problem(self, offset: int, detail: str) -> None:
        self.log.report(self.position[0], "decode_error", f"offset {offset}: {detail}")

    @staticmethod
    def _string(r: Record) -> tuple[str | None, str | None]:
        """Kafka's StringDecoder: ``new String(bytes, UTF_8)``, malformed input as U+FFFD."""
        key = None if r.key is None else r.key.decode("utf-8", "replace")
        value = None if r.value is None else r.value.decode("utf-8", "replace")
        return key, value

    def _metadata(self, r: Record) -> tuple[str | None, str | None]:
        from workbench.formats.metadata import decode_metadata_record, dump_payload

        if r.value is None:
            self._problem(r.offset, "metadata record with a null value")
            return None, f"Error at {r.offset}, skipping. null"
        rec = decode_metadata_record(r.value)
        text = dump_payload(rec) if rec.error is None else None
        if text is None:
            self._problem(r.offset, rec.error or "metadata record not decoded")
            return None, f"Error at {r.offset}, skipping. {_metadata_error(rec)}"
        return None, text

    def _coordinator(self, r: Record, decode: object, max_type: int | None) -> tuple[str | None, str | None]:
        from workbench.formats.coordinator import offsets_dump_key, offsets_dump_payload

        if r.key is None:
            self._problem(r.offset, "coordinator record without a key (Kafka's tool stops here)")
            return (
                f"Error at offset {r.offset}, skipping. Failed to decode message at offset {r.offset} "
                "using the specified decoder (message had a missing key)"
            ), None
        rec = decode(r.key, r.value)  # type: ignore[operator]
        if rec.record_type >= 0 and (rec.name == "Unknown" or (max_type is not None and rec.record_type > max_type)):
            self._problem(r.offset, rec.error or f"record type {rec.record_type} unknown to this release")
            return f"Unknown record type {rec.record_type} at offset {r.offset}, skipping.", None
        if rec.error is not None:
            self._problem(r.offset, rec.error)
            if not rec.error.startswith("found "):  # Kafka ignores bytes after the value
                return f"Error at offset {r.offset}, skipping. {_coordinator_error(rec)}", None
        key = offsets_dump_key(rec)
        payload = offsets_dump_payload(rec) if key is not None else None
        if key is None or payload is None:
            self._problem(r.offset, "record not rendered")
            return f"Error at offset {r.offset}, skipping. {rec.error}", None
        return key, payload

    def _offsets(self, r: Record) -> tuple[str | None, str | None]:
        from workbench.formats.coordinator import decode_offsets_record

        if not self.era.offsets_json:
            return self._offsets_legacy_text(r)
        mm = self.era.version[:2]
        max_type = 8 if mm < (4, 0) else 16 if mm < (4, 1) else None
        return self._coordinator(r, decode_offsets_record, max_type)

    def _offsets_legacy_text(self, r: Record) -> tuple[str | None, str | None]:
        """The 2.5–3.7 text form (reference §10.5; not compared with a real tool)."""
        from workbench.formats.coordinator import decode_offsets_record, expand_group_metadata

        rec = decode_offsets_record(r.key, r.value)
        if rec.error is not None and not rec.tombstone:
            self._problem(r.offset, rec.error)
        if rec.record_type in (0, 1) and rec.key:
            k = rec.key
            key = f"offset_commit::group={k.get('group')},partition={k.get('topic')}-{k.get('partition')}"
            if rec.value is None:
                return key, "<DELETE>"
            meta = rec.value.get("metadata") or ""
            return key, f"offset={rec.value.get('offset')}" + (f",metadata={meta}" if meta else "")
        if rec.record_type == 2 and rec.key:
            key = f"group_metadata::group={rec.key.get('group')}"
            if rec.value is None:
                return key, "<DELETE>"
            value = expand_group_metadata(rec.value)
            parts = []
            for m in value.get("members") or []:
                assigned = m.get("assignment")
                if isinstance(assigned, dict):
                    tps = ", ".join(
                        f"{tp['topic']}-{p}"
                        for tp in assigned.get("assignedPartitions") or []
                        for p in tp.get("partitions") or []
                    )
                    parts.append(f"{m.get('memberId')}=[{tps}]")
                else:
                    parts.append(f"{m.get('memberId')}={bytes(assigned or b'').hex().upper()}")
            import json

            text = json.dumps(
                {
                    "protocolType": value.get("protocolType"),
                    "protocol": value.get("protocol"),
                    "generationId": value.get("generation"),
                    "assignment": "{" + ",".join(parts) + "}",
                },
                separators=(",", ":"),
            )
            return key, text
        return f"unknown::version={rec.record_type}", None

    def _transactions(self, r: Record) -> tuple[str | None, str | None]:
        from workbench.formats.coordinator import decode_transaction_record

        if self.era.version[:2] >= (4, 1):
            return self._coordinator(r, decode_transaction_record, None)
        return self._transactions_text(r)

    def _transactions_text(self, r: Record) -> tuple[str | None, str | None]:
        """The Scala ``TransactionLog.formatRecordKeyAndValue`` text (<= 4.0)."""
        from workbench.formats.coordinator import TRANSACTION_STATUS, decode_transaction_record

        rec = decode_transaction_record(r.key, r.value)
        if rec.record_type != 0 or not rec.key:
            self._problem(r.offset, rec.error or f"transaction log key version {rec.record_type}")
            return f"unknown::version={rec.record_type}", None
        key = f"transaction_metadata::transactionalId={rec.key['transactionalId']}"
        if rec.tombstone:
            return key, "<DELETE>"
        v = rec.value
        if v is None or (rec.error is not None and not rec.error.startswith("found ")):
            self._problem(r.offset, rec.error or "transaction log value not decoded")
            return f"Error at offset {r.offset}, skipping. {rec.error}", None
        pairs = [(tp["topic"], p) for tp in v.get("transactionPartitions") or [] for p in tp["partitionIds"]]
        if v["transactionStatus"] == 0:
            pairs = []  # Kafka does not add the partitions of an Empty transaction
        partitions = ",".join(f"{t}-{p}" for t, p in _scala_hash_set_order(pairs))
        state = TRANSACTION_STATUS.get(v["transactionStatus"], str(v["transactionStatus"]))
        return key, (
            f"producerId:{v['producerId']},producerEpoch:{v['producerEpoch']},state={state},"
            f"partitions=[{partitions}],txnLastUpdateTimestamp={v['transactionLastUpdateTimestampMs']},"
            f"txnTimeoutMs={v['transactionTimeoutMs']}"
        )

    def _share_state(self, r: Record) -> tuple[str | None, str | None]:
        from workbench.formats.coordinator import decode_share_state_record

        return self._coordinator(r, decode_share_state_record, None)

    def _remote(self, r: Record) -> tuple[str | None, str | None]:
        from workbench.formats.remote import decode_remote_log_metadata, remote_dump_text

        if r.value is None:
            self._problem(r.offset, "remote log metadata record with a null value")
            return None, f"Error at offset {r.offset}, skipping. null"
        rec = decode_remote_log_metadata(r.value)
        text = remote_dump_text(rec, with_txn_idx_empty=self.era.txn_idx_empty)
        if text is None:
            self._problem(r.offset, rec.error or f"remote log metadata {rec.name} has no text form")
            return None, f"Error at offset {r.offset}, skipping. {rec.error}"
        return None, text


_ARRAY_SHORT = re.compile(r"of (\d+) bytes runs past the end \((\d+) left\)")


def _frame_entity(raw: bytes) -> tuple[str, int | None]:
    """The frame field (``frame version``, ``type``, ``version``) Kafka fails on, and its value."""
    pos = 0
    for entity in ("frame version", "type", "version"):
        value = shift = 0
        while True:
            if pos >= len(raw) or shift > 28:
                return entity, None
            b = raw[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if value > 0x7FFF:
            return entity, value
    return "", None


def _metadata_error(rec: object) -> str:
    """The exception message Kafka's MetadataRecordSerde gives for an undecodable record."""
    error = getattr(rec, "error", None) or ""
    api_key = getattr(rec, "api_key", -1)
    if error.startswith("unknown apiKey"):
        return f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}"
    if error.startswith("unsupported version") or error.startswith("at byte"):
        return f"Failed to deserialize record with type {api_key}"
    if error.startswith("found "):
        return f"Found {error.split(' ')[1]} byte(s) of garbage after {api_key}"
    if error.startswith("unsupported frame version"):
        frame = int(error.split(" ")[3])
        if frame == 0:
            return (
                "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                "preview release of KRaft in 2.8 to newer versions are not supported."
            )
        return (
            f"Could not deserialize metadata record due to unknown frame version {frame}"
            "(only frame version 1 is supported)"
        )
    if error.startswith("unreadable frame") or error.startswith("apiKey"):
        entity, too_large = _frame_entity(bytes(getattr(rec, "raw", b"") or b""))
        if too_large is not None:
            return f"Value for {entity} was too large."
        return f"Error while reading {entity}"
    return error


def _coordinator_error(rec: object) -> str:
    """The exception message of Kafka's CoordinatorRecordSerde for an undecodable record."""
    error = getattr(rec, "error", None) or ""
    if error.startswith("key of "):
        return "Could not read version from key's buffer."
    if error.startswith("value of "):
        return "Could not read version from value's buffer."
    for prefix, name, version in (
        ("key at byte", "key", getattr(rec, "record_type", -1)),
        ("value at byte", "value", getattr(rec, "value_version", None)),
    ):
        if error.startswith(prefix):
            m = _ARRAY_SHORT.search(error)
            cause = (
                f"Error reading byte array of {m[1]} byte(s): only {m[2]} byte(s) available"
                if m is not None
                else "null"
            )
            return f"Could not read record with version {version} from {name}'s buffer due to: {cause}."
    return error


def _java_string_hash(text: str) -> int:
    """``String.hashCode()`` (over UTF-16 code units) as an unsigned 32-bit value."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def _scala_hash_set_order(pairs: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` filled with ``pairs``.

    Buckets in index order, hash order within a bucket (ties: insertion order); the table
    starts at 16 and doubles when the next insertion would reach 3/4 of it.
    """
    seen: dict[tuple[str, int], int] = {}
    for pair in pairs:
        seen.setdefault(pair, len(seen))
    size = 16
    while len(seen) >= int(size * 0.75):
        size *= 2

    def key(item: tuple[tuple[str, int], int]) -> tuple[int, int, int]:
        (topic, partition), order = item
        h = (31 * ((31 + partition) & 0xFFFFFFFF) + _java_string_hash(topic)) & 0xFFFFFFFF
        improved = h ^ (h >> 16)
        signed = improved - (1 << 32) if improved & 0x80000000 else improved
        return improved & (size - 1), signed, order

    return [pair for pair, _ in sorted(seen.items(), key=key)]


def _control_text(r: Record, era: KafkaEra) -> str:
    from workbench.formats.control import decode_control_record, dump_control_text

    rec = decode_control_record(r.key, r.value)
    t = rec.type
    if (
        t in (0, 1)
        or (t == 2 and era.leader_change_json)
        or (t in (3, 4) and era.snapshot_controls)
        or (t in (5, 6) and era.kraft_controls)
    ):
        return dump_control_text(rec, leader_change_json=era.leader_change_json)
    name = _CONTROL_NAMES.get(t, "UNKNOWN") if 0 <= t < era.known_control_types else "UNKNOWN"
    return f"controlType: {name}({t})"


# --------------------------------------------------------------------------------------------
# legacy (magic 0/1) record checksums, which Batch.records() does not keep


def _legacy_checks(batch: Batch) -> list[tuple[int, bool]]:
    """(stored CRC, valid) of each message a legacy entry yields on deep iteration."""
    raw = bytes(batch.data or b"")
    if not batch.attributes & 7:
        return [(batch.crc, batch.crc_valid)]
    codec = batch.attributes & 7
    try:
        key_at = 12 + (14 if batch.magic == 1 else 6)  # crc, magic, attributes[, timestamp]
        key_len = struct.unpack_from(">i", raw, key_at)[0]
        value_at = key_at + 4 + max(key_len, 0)
        value_len = struct.unpack_from(">i", raw, value_at)[0]
        inner = decompress(CODEC_NAMES[codec], raw[value_at + 4 : value_at + 4 + value_len], magic=batch.magic)
    except (struct.error, IndexError, KeyError, CodecError):
        return []
    out = []
    p = 0
    while p + 12 <= len(inner):
        _, size = _LOG_HDR.unpack_from(inner, p)
        end = p + 12 + size
        if size < 4 or end > len(inner):
            break
        stored = struct.unpack_from(">I", inner, p + 12)[0]
        out.append((stored, zlib.crc32(inner[p + 16 : end]) == stored))
        p = end
    return out


# --------------------------------------------------------------------------------------------
# one file


def _bool(v: bool) -> str:
    return "true" if v else "false"


def _batch_line(b: Batch, position: int, era: KafkaEra) -> str:
    codec = b.compression.upper() if era.codec_upper else b.compression
    if era.record_form == "2.1":
        tail = (
            f" position: {position} {b.timestamp_type}: {b.max_timestamp} isvalid: {_bool(b.crc_valid)}"
            f" size: {b.size} magic: {b.magic} compresscodec: {codec} crc: {b.crc}"
        )
    else:
        tail = (
            f" position: {position} {b.timestamp_type}: {b.max_timestamp} size: {b.size} magic: {b.magic}"
            f" compresscodec: {codec} crc: {b.crc} isvalid: {_bool(b.crc_valid)}"
        )
    if b.magic < 2:
        return f"offset: {b.last_offset}{tail}"
    head = (
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count}"
        f" baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id}"
        f" producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch}"
        f" isTransactional: {_bool(b.is_transactional)} isControl: {_bool(b.is_control)}"
    )
    if era.delete_horizon:
        dh = f"OptionalLong[{b.base_timestamp}]" if b.has_delete_horizon else "OptionalLong.empty"
        head = f"{head} deleteHorizonMs: {dh}"
    return head + tail


def _sequence(b: Batch, offset: int) -> int:
    if b.base_sequence < 0:
        return -1
    s = b.base_sequence + (offset - b.base_offset)
    return s - 0x80000000 if s > 0x7FFFFFFF else s


def _record_lines(
    b: Batch, position: int, records: list[Record], era: KafkaEra, opts: DumpOptions, payloads: _Payloads | None
) -> Iterator[str]:
    """The lines of one batch's records (the 3.0+ form and, from the reference, older forms)."""
    tst = b.timestamp_type
    v2 = b.magic >= 2
    control = b.is_control
    checks = _legacy_checks(b) if not v2 else None
    contents = payloads is not None and opts.prints_contents and not control
    skip = opts.skip_record_metadata
    form = era.record_form
    scala = era.scala
    brace = "}" if scala else ""
    if form == "3.0" and v2 and not control and not skip:
        # the common case, one f-string per line
        bseq, boff = b.base_sequence, b.base_offset
        parse = payloads.parse if contents and payloads is not None else None
        for r in records:
            k, v, off = r.key, r.value, r.offset
            if bseq < 0:
                seq = -1
            else:
                seq = bseq + off - boff
                if seq > 0x7FFFFFFF:
                    seq -= 0x80000000
            hk = ",".join([h[0] for h in r.headers]) if r.headers else ""
            line = (
                f"| offset: {off} {tst}: {r.timestamp} keySize: {-1 if k is None else len(k)} "
                f"valueSize: {-1 if v is None else len(v)} sequence: {seq} headerKeys: [{hk}]"
            )
            if parse is not None:
                key, payload = parse(r)
                if key is not None:
                    line = f"{line} key: {key}"
                if payload is not None:
                    line = f"{line} payload: {payload}"
            yield line
        return
    if form == "2.8":
        codec = b.compression.upper()
        batch_part = (
            f" baseOffset: {b.base_offset} lastOffset: {b.last_offset} baseSequence: {b.base_sequence}"
            f" lastSequence: {b.last_sequence} producerEpoch: {b.producer_epoch}"
            f" partitionLeaderEpoch: {b.partition_leader_epoch} batchSize: {b.size} magic: {b.magic}"
            f" compressType: {codec} position: {position}"
        )
    for i, r in enumerate(records):
        ks = -1 if r.key is None else len(r.key)
        vs = -1 if r.value is None else len(r.value)
        if form == "2.1":
            yield _record_line_21(b, position, r, ks, vs, era, checks, i, contents, payloads)
            continue
        parts: list[str] = []
        prefix = "| "
        if not skip:
            if form == "3.0":
                parts.append(f"| offset: {r.offset} {tst}: {r.timestamp} keySize: {ks} valueSize: {vs}")
            elif form == "2.8":
                # v2 records have no checksum of their own: crc null, isValid true
                crc, valid = (checks[i] if checks and i < len(checks) else (None, False)) if not v2 else (None, True)
                parts.append(
                    f"| offset: {r.offset} isValid: {_bool(valid)} crc: {'null' if crc is None else crc}"
                    f" keySize: {ks} valueSize: {vs} {tst}: {r.timestamp}{batch_part}"
                )
            else:
                parts.append(f"| offset: {r.offset} {tst}: {r.timestamp} keysize: {ks} valuesize: {vs}")
            if v2:
                keys = ",".join(k for k, _ in r.headers)
                parts.append(f" sequence: {_sequence(b, r.offset)} headerKeys: [{keys}]")
            elif form == "3.0":
                crc, valid = checks[i] if checks and i < len(checks) else (0, False)
                parts.append(f" isValid: {_bool(valid)} crc: {crc}{brace}")
            elif form == "2.2":
                crc, valid = checks[i] if checks and i < len(checks) else (0, False)
                parts.append(f" crc: {crc} isvalid: {_bool(valid)}")
            if control:
                parts.append(" " + _control_text(r, era))
            prefix = " "
        if contents:
            key, payload = payloads.parse(r)  # type: ignore[union-attr]
            if key is not None:
                parts.append(f"{prefix}key: {key}")
                prefix = " "
            if payload is not None:
                parts.append(f" payload: {payload}" if scala else f"{prefix}payload: {payload}")
        yield "".join(parts)


def _record_line_21(
    b: Batch,
    position: int,
    r: Record,
    ks: int,
    vs: int,
    era: KafkaEra,
    checks: list[tuple[int, bool]] | None,
    i: int,
    contents: bool,
    payloads: _Payloads | None,
) -> str:
    """The <= 2.1 record line (no batch lines in deep mode; reference §10.4, unverified)."""
    codec = b.compression.upper()
    valid = b.crc_valid if checks is None else (checks[i][1] if i < len(checks) else False)
    text = (
        f"offset: {r.offset} position: {position} {b.timestamp_type}: {r.timestamp} isvalid: {_bool(valid)}"
        f" keysize: {ks} valuesize: {vs} magic: {b.magic} compresscodec: {codec}"
    )
    if b.magic >= 2:
        keys = ",".join(k for k, _ in r.headers)
        text += (
            f" producerId: {b.producer_id} producerEpoch: {b.producer_epoch} sequence: {_sequence(b, r.offset)}"
            f" isTransactional: {_bool(b.is_transactional)} headerKeys: [{keys}]"
        )
    else:
        text += f" crc: {checks[i][0] if checks and i < len(checks) else 0}"
    if b.is_control:
        text += " " + _control_text(r, era)
    elif contents and payloads is not None:
        key, payload = payloads.parse(r)
        if key is not None:
            text += f" key: {key}"
        if payload is not None:
            text += f" payload: {payload}"
    return text


TOOL_FAILURE = "tool_failure"
"""Problem kind: Kafka's dump tool itself fails at this point (its output ends, and a
multi-file run dumps no further file)."""

_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_BYTE_AT = re.compile(r"byte (\d+)")


class Unterminated(str):
    """The last output of a tool that failed mid-line (no line break follows it)."""


def _next_frame(
    f: BinaryIO, path: str | os.PathLike[str], pos: int, size: int, log: ProblemLog
) -> tuple[Batch, int] | tuple[int | None, str]:
    """The batch Kafka's ``FileLogInputStream`` frames at ``pos`` (and its magic), or where it
    stops: ``(trailing bytes it reports, why)``, with ``None`` when the tool fails there.

    Kafka frames by the declared length alone: a bad CRC, an inner batch or a magic above 2
    do not stop it (magic >= 2 is read as a v2 batch).
    """
    if pos + _HEADER_SIZE_UP_TO_MAGIC >= size:
        return size - pos, "fewer than 18 bytes left"
    f.seek(pos)
    head = f.read(_HEADER_SIZE_UP_TO_MAGIC)
    _, length = _LOG_HDR.unpack_from(head, 0)
    if length < _RECORD_OVERHEAD_V0:
        return None, (
            f"record size {length} is smaller than the minimum record overhead (14) (Kafka: CorruptRecordException)"
        )
    if pos + 12 + length > size:
        return size - pos, "the batch runs past the end of the file"
    magic = struct.unpack_from(">b", head, 16)[0]
    f.seek(pos)
    data = f.read(12 + length)
    if magic >= 2:
        if length < 49:
            return None, f"a batch of magic {magic} with {length} bytes, fewer than its 49-byte header"
        (base, _, ple, _, stored, attrs, lod, base_ts, max_ts, pid, pep, bseq, count) = _V2_HEADER.unpack_from(data)
        codec = attrs & 7
        batch = Batch(
            str(path),
            pos,
            base,
            base + lod,
            12 + length,
            ple,
            2,
            stored,
            _crc32c(memoryview(data)[21:]) == stored,
            attrs,
            CODEC_NAMES[codec] if codec < 5 else "unknown",
            ("CreateTime", "LogAppendTime")[(attrs >> 3) & 1],
            bool(attrs & 0x10),
            bool(attrs & 0x20),
            bool(attrs & 0x40),
            base_ts,
            max_ts,
            pid,
            pep,
            bseq,
            count,
            data,
        )
        return batch, magic
    if magic < 0:
        return None, f"magic {magic} (a negative magic byte is not dumped here)"
    quiet = ProblemLog(str(path))
    for batch in read_batches(io.BytesIO(data), str(path), problems=quiet):
        if batch.position == 0 and batch.size == len(data):
            batch.position = pos
            return batch, magic
        break
    return None, f"a magic {magic} entry this reader cannot frame"


def _java_gzip(payload: bytes) -> bytes | None:
    """Decompress like ``java.util.zip.GZIPInputStream``: members follow each other while the
    next bytes start a gzip header; anything else after a member is ignored."""
    out = []
    data = payload
    while True:
        d = zlib.decompressobj(31)
        try:
            out.append(d.decompress(data))
            out.append(d.flush())
        except zlib.error:
            return None
        if not d.eof:
            return None
        data = d.unused_data
        if data[:3] != b"\x1f\x8b\x08":
            return b"".join(out)


def _java_gzip_records(batch: Batch, local: ProblemLog) -> tuple[list[Record], ProblemLog]:
    """Records of a gzip batch whose stream has bytes after its end, read as Kafka reads them."""
    raw = bytes(batch.data or b"")
    inner = _java_gzip(raw[61:])
    if inner is None:
        return [], local
    attrs = batch.attributes & ~7
    header = bytearray(raw[:61])
    struct.pack_into(">h", header, 21, attrs)
    plain = Batch(
        batch.path,
        batch.position,
        batch.base_offset,
        batch.last_offset,
        61 + len(inner),
        batch.partition_leader_epoch,
        2,
        batch.crc,
        batch.crc_valid,
        attrs,
        "none",
        batch.timestamp_type,
        batch.is_transactional,
        batch.is_control,
        batch.has_delete_horizon,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.record_count,
        bytes(header) + inner,
    )
    again = ProblemLog(batch.path)
    again.report(batch.position, "garbage", "bytes after the end of the gzip stream (Kafka ignores them)")
    records = plain.records(again)
    return records, again


def _kafka_record_failure(records: list[Record], local: ProblemLog, batch: Batch) -> tuple[list[Record], str | None]:
    """The records Kafka prints before its record iterator fails, and why it fails (or None).

    Kafka reads records lazily and dies at the first it cannot read: a stream that does not
    decompress fails before the first record; a malformed record after the ones before it;
    bytes left after the declared count ("Incorrect declared batch size") while the last
    record is read, so that one is not printed.
    """
    problems = [p for p in local.problems if p.kind != "garbage"]
    if batch.magic < 2 or not problems:
        return records, None
    first = problems[0]
    if first.kind in ("decompress_error", "unknown_codec"):
        return [], first.detail
    if first.kind != "record_error":
        return records, None
    if " bytes after the last of " in first.detail:
        return records[:-1], f"{first.detail} (Kafka: Incorrect declared batch size)"
    if "data ends after" in first.detail:
        return records, first.detail
    m = _BYTE_AT.search(first.detail)
    if m is None:
        return records, first.detail
    stop = int(m[1])
    kept: list[Record] = []
    start = 0
    for r in records:
        if start >= stop:
            break
        kept.append(r)
        start += r.size
    return kept, first.detail


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

    Handles ``.log`` segments and ``.checkpoint`` snapshots (KRaft snapshots and
    ``bootstrap.checkpoint``), and the ``.index``, ``.timeindex``, ``.txnindex`` and producer
    ``.snapshot`` files (the entries Kafka prints on stdout; its consistency checks against
    the segment go to stderr and are not reproduced).

    Damage is read as Kafka's tool reads it. Batches are framed by their declared length
    alone: a bad CRC prints ``isvalid: false``, a length that swallows the next batches
    frames one batch, a magic above 2 is read as v2. Kafka's reader ends when fewer than 18
    bytes are left or a batch runs past the end of the file (then ``Found N invalid bytes at
    the end of <name>``; problem ``stopped``), and its tool fails (output ends, problem
    ``tool_failure``) at a declared size below 14, an unknown codec id (the batch line breaks
    off after ``deleteHorizonMs``, see :class:`Unterminated`), a stream that does not
    decompress (after the batch line), a malformed record (after the records before it), bytes
    left after the declared records (before the last record) or a file name without a base
    offset. Every such stop, and every record that could not be decoded, is a problem in
    ``problems``.

    Parameters
    ----------
    path : str or path-like
        The file to read.
    options : DumpOptions, optional
        The flags (default: ``--deep-iteration`` only).
    kafka_version : str, optional
        Whose text to reproduce (default :data:`DEFAULT_KAFKA_VERSION`).
    shown_path : str, optional
        The path the tool was given, printed after ``Dumping`` (default: ``path``, as Java
        prints it). Its file name is the one Kafka reads the base offset from, e.g. a link
        ``<offset>.log`` to a remote segment ``<offset>-<segment id>.log``.
    problems : ProblemLog, optional
        Receives problems (reader problems too).
    strict : bool
        Raise :class:`~workbench.errors.CorruptDataError` at the first problem.

    Yields
    ------
    str
        One line of output.

    Examples
    --------
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
    # Kafka takes the base offset (and the name in its trailer) from the path it was given
    name = os.path.basename(os.fspath(path) if shown_path is None else shown_path)
    log = problems if problems is not None else ProblemLog(str(path), strict=strict)
    shown = java_file_path(path) if shown_path is None else shown_path
    yield "Dumping " + shown
    suffix = name[name.rfind(".") :] if "." in name else ""
    if suffix == ".checkpoint" and not era.snapshots:
        log.report(
            0,
            "unsupported",
            f"Kafka {'.'.join(map(str, era.version))} does not dump .checkpoint files (stderr: Ignoring unknown file)",
        )
        return
    if suffix in _SIDECARS:
        yield from _SIDECARS[suffix](path, name, shown, era, log)
        return
    if suffix not in (".log", ".checkpoint"):
        log.report(0, "unsupported", f"{name}: Kafka's tool ignores this file (stderr: Ignoring unknown file)")
        return
    if suffix == ".log":
        base = name.split(".")[0]
        if not _BASE_NAME.match(base):
            log.report(
                0, TOOL_FAILURE, f"{name}: the base offset in the file name is not a number (Kafka's tool fails here)"
            )
            return
        yield f"{era.log_start_label}{int(base)}"
    elif name == "bootstrap.checkpoint":
        yield "KRaft bootstrap snapshot"
    else:
        parsed = parse_checkpoint_name(name)
        if parsed is None:
            log.report(0, TOOL_FAILURE, f"{name}: not a <endOffset>-<epoch>.checkpoint name (Kafka's tool fails here)")
            return
        yield f"Snapshot end offset: {parsed[0]}, epoch: {parsed[1]}"
    deep = opts.deep
    form = era.record_form
    position_box = [0]
    payloads = _Payloads(opts.decoder, era, log, position_box) if opts.prints_contents else None
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        while True:
            frame = _next_frame(f, path, pos, size, log)
            if not isinstance(frame[0], Batch):  # Kafka's reader ends here
                trailing, why = frame
                if trailing:
                    yield f"Found {trailing} invalid bytes at the end of {name}"
                    log.report(pos, "stopped", f"Kafka's dump stops at byte {pos} of {size}: {why}")
                elif trailing is None:
                    log.report(pos, TOOL_FAILURE, f"at byte {pos}: {why}")
                return
            batch, magic = frame
            position_box[0] = pos
            if not batch.crc_valid:
                log.report(
                    pos,
                    "crc_mismatch",
                    f"batch at byte {pos}: stored CRC {batch.crc} does not match "
                    "its bytes (Kafka prints isvalid: false)",
                )
            if batch.attributes & 7 > 4:
                # the batch line fails at compresscodec: Kafka prints its start, unterminated, and stops
                yield Unterminated(_batch_line(batch, pos, era).split(" position: ", 1)[0])
                log.report(
                    pos,
                    TOOL_FAILURE,
                    f"batch at byte {pos}: unknown compression codec id "
                    f"{batch.attributes & 7} (Kafka: Unknown compression type id)",
                )
                return
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
            if form != "2.1" or not deep:
                yield _batch_line(batch, pos, era)
            if deep:
                yield from _record_lines(batch, pos, records, era, opts, payloads)
            if failure is not None:
                log.report(pos, TOOL_FAILURE, f"batch at byte {pos}: {failure}")
                return
            pos += batch.size


# --------------------------------------------------------------------------------------------
# index, time index, transaction index and producer snapshot (reference §10.6)

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


def _dump_offset_index(
    path: str | os.PathLike[str], name: str, shown: str, era: KafkaEra, log: ProblemLog
) -> Iterator[str]:
    """``offset: N position: P`` per entry; stops at the first zero entry after entry 0."""
    base = _index_base(name, log)
    if base is None or not _needs([_sibling(path, name, ".log")], log):
        return
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // 8
    if n == 0:
        yield f"{shown} is empty."
        return
    for i, (rel, pos) in enumerate(_OFFSET_ENTRY.iter_unpack(data[: n * 8])):
        if rel == 0 and i > 0:
            return
        yield f"offset: {base + rel} position: {pos}"


def _dump_time_index(
    path: str | os.PathLike[str], name: str, shown: str, era: KafkaEra, log: ProblemLog
) -> Iterator[str]:
    """``timestamp: T offset: N`` per entry; stops at the first zero entry after entry 0."""
    base = _index_base(name, log)
    if base is None or not _needs([_sibling(path, name, ".log"), _sibling(path, name, ".index")], log):
        return
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // 12
    for i, (ts, rel) in enumerate(_TIME_ENTRY.iter_unpack(data[: n * 12])):
        if rel == 0 and i > 0:
            return
        yield f"timestamp: {ts} offset: {base + rel}"


def _dump_txn_index(
    path: str | os.PathLike[str], name: str, shown: str, era: KafkaEra, log: ProblemLog
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
    path: str | os.PathLike[str], name: str, shown: str, era: KafkaEra, log: ProblemLog
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

    Examples
    --------
    >>> import os, tempfile
    >>> from workbench.formats.batch import encode_batch
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "00000000000000000000.log")
    >>> _ = open(p, "wb").write(encode_batch([(0, 1, None, b"v")], base_offset=0))
    >>> dump_text(p, shown_path="t-0/00000000000000000000.log").splitlines()[:2]
    ['Dumping t-0/00000000000000000000.log', 'Log starting offset: 0']
    """
    lines = list(
        dump_lines(path, options, kafka_version=kafka_version, shown_path=shown_path, problems=problems, strict=strict)
    )
    return "\n".join(lines) + ("" if lines and isinstance(lines[-1], Unterminated) else "\n")


def write_kafka_dump(
    files: Iterable[str | os.PathLike[str]],
    *,
    out: TextIO,
    kafka_version: str | None,
    decoder: str,
    payloads: bool,
    strict: bool,
) -> int:
    """Write ``kafka-dump-log`` text of ``files`` to ``out`` (``workbench dump --format kafka``).

    Records are always iterated (``--deep-iteration``); ``payloads`` adds
    ``--print-data-log``; a decoder other than ``none`` adds its ``--…-decoder`` flag (and so
    prints payloads). ``decoder="auto"`` picks the decoder from the file's partition directory
    (:func:`workbench.dump.decoder_for`). Problems go to stderr-free problem logs; the return
    value says whether there were any. As Kafka's tool, the run ends at a file on which the
    tool itself fails (problem ``tool_failure``); later files get a ``not_dumped`` problem.

    Parameters
    ----------
    files : iterable of paths
        ``.log`` / ``.checkpoint`` files, printed after ``Dumping`` as given.
    out : text stream
        Receives the text.
    kafka_version : str or None
        Kafka release whose text is reproduced (``None``: :data:`DEFAULT_KAFKA_VERSION`).
    decoder : str
        ``auto``, or one of :data:`DECODERS`.
    payloads : bool
        ``--print-data-log``.
    strict : bool
        Raise at the first problem.

    Returns
    -------
    int
        0, or 1 when a file had problems.

    Examples
    --------
    >>> import io, os, tempfile
    >>> from workbench.formats.batch import encode_batch
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "00000000000000000000.log")
    >>> _ = open(p, "wb").write(encode_batch([(0, 1, b"k", b"v")], base_offset=0))
    >>> buf = io.StringIO()
    >>> write_kafka_dump([p], out=buf, kafka_version="3.9.2", decoder="none", payloads=True, strict=False)
    0
    >>> buf.getvalue().splitlines()[-1][-17:]
    'key: k payload: v'
    """
    from workbench.dump import decoder_for

    status = 0
    failed: str | None = None
    for path in files:
        log = ProblemLog(str(path), strict=strict)
        if failed is not None:
            # Kafka's tool stopped at the failure in an earlier file and dumps nothing more
            log.report(0, "not_dumped", f"not dumped: Kafka's tool fails in {failed} before this file")
            status = 1
            continue
        chosen = decoder_for(os.fspath(path), decoder)
        if chosen not in DECODERS:
            raise ConfigError(f"unknown decoder {chosen!r}; expected 'auto' or one of {', '.join(DECODERS)}")
        opts = DumpOptions(decoder=chosen, print_data_log=payloads, deep_iteration=True)
        chunk: list[str] = []
        last = ""
        for line in dump_lines(path, opts, kafka_version=kafka_version, problems=log):
            chunk.append(line)
            if len(chunk) >= 4096:
                chunk.append("")
                out.write("\n".join(chunk))
                chunk = []
        if chunk:
            last = chunk[-1]
            out.write("\n".join(chunk) + ("" if isinstance(last, Unterminated) else "\n"))
        if log.problems:
            status = 1
        if any(p.kind == TOOL_FAILURE for p in log.problems):
            failed = str(path)
    return status
