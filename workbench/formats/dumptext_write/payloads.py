"""Key and payload text of each decoder (``--offsets-decoder`` and the others), and of control records."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from workbench.formats.dumptext_write.javatext import java_utf8
from workbench.formats.dumptext_write.options import KafkaEra
from workbench.formats.problems import ProblemLog

if TYPE_CHECKING:
    from workbench.formats.batch import Record


_CONTROL_NAMES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
#: Kafka 2.7 and 2.8 named control types 2 and 3 differently (ControlRecordType of those releases)
_CONTROL_NAMES_27 = {0: "ABORT", 1: "COMMIT", 2: "QUORUM_REASSIGNMENT", 3: "LEADER_CHANGE"}


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
        """Kafka's StringDecoder: ``new String(bytes, UTF_8)``, malformed input as Java replaces it."""
        key = None if r.key is None else java_utf8(r.key)
        value = None if r.value is None else java_utf8(r.value)
        return key, value

    def _metadata(self, r: Record) -> tuple[str | None, str | None]:
        from workbench.formats.metadata import decode_metadata_record, dump_payload

        if r.value is None:
            # Kafka's serde reads the frame version from a null buffer; the failure is wrapped
            self._problem(r.offset, "metadata record with a null value")
            return None, f"Error at {r.offset}, skipping. Error while reading frame version"
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
            # Java's own NullPointerException text (Java 15+): Kafka's tool takes value().remaining()
            self._problem(r.offset, "remote log metadata record with a null value")
            internal = "internal." if self.era.version >= (4, 3, 0) else ""
            record = f"org.apache.kafka.common.record.{internal}Record"
            return None, (f'Error at offset {r.offset}, skipping. Cannot invoke "java.nio.ByteBuffer.remaining()" '
                          f'because the return value of "{record}.value()" is null')
        rec = decode_remote_log_metadata(r.value)
        text = remote_dump_text(rec, with_txn_idx_empty=self.era.txn_idx_empty)
        if text is None:
            self._problem(r.offset, rec.error or f"remote log metadata {rec.name} has no text form")
            error = rec.error or ""
            if error.startswith("unreadable frame"):  # the same frame reader as the metadata serde
                entity, too_large = _frame_entity(bytes(r.value))
                error = (f"Value for {entity} was too large." if too_large is not None
                         else f"Error while reading {entity}")
            return None, f"Error at offset {r.offset}, skipping. {error}"
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
    names = _CONTROL_NAMES_27 if (2, 7) <= era.version[:2] < (3, 0) else _CONTROL_NAMES
    name = names.get(t, "UNKNOWN") if 0 <= t < era.known_control_types else "UNKNOWN"
    return f"controlType: {name}({t})"
