"""Writing the text of Kafka's dump tool (``kafka-dump-log.sh``) for segments and snapshots.

:func:`dump_lines` produces, for one ``.log`` segment or ``.checkpoint`` snapshot (and for
the ``.index``, ``.timeindex``, ``.txnindex`` and producer ``.snapshot`` files beside them),
the lines ``kafka-dump-log.sh --files <path>`` prints on stdout, byte for byte, for a chosen
Kafka version and the same flags (reference §10). :func:`write_kafka_dump` is the entry point of
``workbench dump --format kafka``: it streams the same text (:func:`write_log_dump`), writing runs
of clean batches with compiled code (:mod:`workbench.formats.dumpfast`) and everything else with
the Python writer of :func:`dump_lines`.

The flags are the tool's, with its meaning in each release (:func:`parse_kafka_args`,
:func:`options_for`; checked against ``DumpLogSegments`` of 3.9.2 and 4.3.1): batch lines only
unless ``--deep-iteration``, ``--print-data-log`` (implies it) or a decoder (implies both; the
first of offsets, transaction log, cluster metadata, remote log metadata, share group state
wins); ``--skip-record-metadata``; ``--max-bytes`` (3.3+: batches wholly within the first N bytes,
no trailer line unless it is ``Integer.MAX_VALUE``); ``--index-sanity-check`` and
``--verify-index-only`` (``.index``/``.timeindex`` only); ``--max-message-size`` (how far an index
entry's batch is framed); ``--key-decoder-class``/``--value-decoder-class`` (Kafka's StringDecoder
only: other classes are Java code). Keys and values are printed as Java's ``new String(bytes,
UTF_8)`` decodes them (:func:`java_utf8`). Index dumps make Kafka's checks against the log:
a mismatch is a problem (Kafka's stderr), an entry Kafka's tool dies on ends the dump there.

What differs by version (reference §10.2–§10.5; the record and batch lines of 2.1, 2.2, 2.4,
2.7, 2.8, 3.1, 3.2, 3.5, 3.9, 4.0, 4.2 and 4.3 checked against those releases' own tools):

==========================  ================================================================
version                     difference
==========================  ================================================================
<= 3.2 / >= 3.3             ``Starting offset: N`` / ``Log starting offset: N``; snapshots
                            (``*.checkpoint``) are dumped from 3.3 on
< 3.2 / >= 3.2              batch line without / with ``deleteHorizonMs: OptionalLong…``
<= 2.8 / >= 3.0             ``compresscodec: NONE`` / ``compresscodec: none``
<= 2.1, 2.2–2.7, 2.8, 3.0+  record line forms (record lines only, ``keysize``, the verbose 2.8
                            form, ``keySize``)
<= 2.3 / >= 2.4             a record without a value: nothing / ``key: K`` after the metadata
2.7–2.8                     control types 2 and 3 are ``QUORUM_REASSIGNMENT`` and ``LEADER_CHANGE``
<= 4.2 (Scala) / >= 4.3     payload always after ``" "`` vs. chained prefix; legacy record
                            ``crc: N}`` with a stray brace vs. ``crc: N``
<= 4.0 / >= 4.1             ``controlType: LEADER_CHANGE(2)`` vs. ``LeaderChange: {json}``
< 3.3, < 3.9                snapshot header/footer and KRaft version/voters records print
                            as ``controlType: NAME(id)``
>= 4.0                      ``txnIdxEmpty`` in remote-log-metadata text
<= 4.0 / >= 4.1             ``--transaction-log-decoder``: ``transaction_metadata::…`` text
                            (partitions in Scala HashSet order) vs. JSON
<= 4.2 / >= 4.3             producer snapshot line: ``lastTimestamp: T `` + ``firstSequence``
                            vs. ``lastTimestamp: T`` + `` firstSequence``
==========================  ================================================================

Damaged files are read the way Kafka's tool reads them (see :func:`dump_lines`): batches are
framed by their declared length alone, and the output ends where Kafka's reader ends or where
its tool fails. The decoder texts (``--offsets-decoder`` and the others) of releases before 3.5
follow the reference and differ from those releases' tools.

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
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO, TypeGuard

from crc32c import crc32c as _crc32c

from workbench.errors import ConfigError
from workbench.formats.problems import ProblemLog
from workbench.formats.topics import KAFKA_DECODERS, decoder_for

if TYPE_CHECKING:
    from workbench.formats.batch import Batch, Record

# The batch reader and the codecs are imported where records are read: batch lines alone (the
# default dump) need neither, and a command line that only prints them starts faster without.
_CODEC_TEXT = ("none", "gzip", "snappy", "lz4", "zstd")  # Kafka's CompressionType names, ids 0-4

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "DECODERS",
    "INT_MAX",
    "MAX_MESSAGE_SIZE",
    "DumpOptions",
    "KafkaEra",
    "Sink",
    "TOOL_FAILURE",
    "Unterminated",
    "dump_lines",
    "dump_text",
    "java_file_path",
    "java_utf8",
    "options_for",
    "options_from_args",
    "parse_kafka_args",
    "write_kafka_dump",
    "write_log_dump",
]

DEFAULT_KAFKA_VERSION = "4.3.1"
"""The newest Kafka release whose dump text is reproduced (the default ``--kafka-version``)."""

DECODERS = KAFKA_DECODERS
"""Payload decoders of Kafka's tool (``none`` = its default StringDecoder)."""

INT_MAX = 2**31 - 1
"""``Integer.MAX_VALUE``: ``--max-bytes``' default (the trailer line is printed only then)."""

MAX_MESSAGE_SIZE = 5 * 1024 * 1024
"""``--max-message-size``' default (how far the ``.index`` check frames a batch)."""

STRING_DECODERS = ("org.apache.kafka.tools.api.StringDecoder",)
"""The ``--key-decoder-class``/``--value-decoder-class`` values reproduced (Kafka's default)."""

#: decoder flags in the order Kafka's tool gives them precedence (the first one given wins)
_FLAG_DECODERS = {
    "--offsets-decoder": "offsets",
    "--transaction-log-decoder": "transaction-log",
    "--cluster-metadata-decoder": "cluster-metadata",
    "--remote-log-metadata-decoder": "remote-log-metadata",
    "--share-group-state-decoder": "share-group-state",
}
_DECODER_FLAGS = {v: k for k, v in _FLAG_DECODERS.items()}

#: every flag of kafka-dump-log, with the first release that has it (reference §10.1; 3.9.2 and
#: 4.3.1 checked against DumpLogSegments' sources) and whether it takes a value
_FLAGS: dict[str, tuple[tuple[int, int], str]] = {
    "--files": ((0, 0), "required"),
    "--print-data-log": ((0, 0), "none"),
    "--deep-iteration": ((0, 0), "none"),
    "--verify-index-only": ((0, 0), "none"),
    "--index-sanity-check": ((0, 0), "none"),
    "--max-message-size": ((0, 0), "required"),
    "--key-decoder-class": ((0, 0), "optional"),
    "--value-decoder-class": ((0, 0), "optional"),
    "--offsets-decoder": ((0, 0), "none"),
    "--transaction-log-decoder": ((0, 0), "none"),
    "--cluster-metadata-decoder": ((2, 8), "none"),
    "--skip-record-metadata": ((2, 8), "none"),
    "--max-bytes": ((3, 3), "required"),
    "--remote-log-metadata-decoder": ((3, 9), "none"),
    "--share-group-state-decoder": ((4, 0), "none"),
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
#: Kafka 2.7 and 2.8 named control types 2 and 3 differently (ControlRecordType of those releases)
_CONTROL_NAMES_27 = {0: "ABORT", 1: "COMMIT", 2: "QUORUM_REASSIGNMENT", 3: "LEADER_CHANGE"}
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
        known = 7 if mm >= (3, 9) else 5 if mm >= (3, 0) else 4 if mm >= (2, 7) else 2
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
    """The ``kafka-dump-log`` flags that shape a dump.

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
    max_bytes : int
        ``--max-bytes``: only the batches within the first ``max_bytes`` bytes of a log are
        read, and no ``Found N invalid bytes`` trailer is printed unless it is
        :data:`INT_MAX` (the default).
    index_sanity_check : bool
        ``--index-sanity-check``: ``.index``/``.timeindex`` files are only checked
        (``<file> passed sanity check.``).
    verify_index_only : bool
        ``--verify-index-only``: index entries are checked against the log, not printed.
    max_message_size : int
        ``--max-message-size``: the bytes an ``.index`` entry's batch must fit in.
    decoder_class : bool
        ``--key-decoder-class``/``--value-decoder-class`` given (Kafka's StringDecoder, the only
        class reproduced): implies ``print_data_log``.
    """

    decoder: str = "none"
    print_data_log: bool = False
    deep_iteration: bool = True
    skip_record_metadata: bool = False
    max_bytes: int = INT_MAX
    index_sanity_check: bool = False
    verify_index_only: bool = False
    max_message_size: int = MAX_MESSAGE_SIZE
    decoder_class: bool = False

    @property
    def prints_contents(self) -> bool:
        """Whether keys and payloads are printed."""
        return self.print_data_log or self.decoder != "none" or self.decoder_class

    @property
    def deep(self) -> bool:
        """Whether records are iterated."""
        return self.deep_iteration or self.prints_contents


def _has_flag(era: KafkaEra, flag: str) -> bool:
    since = _FLAGS[flag][0]
    return era.version[:2] >= since


def _int_arg(flag: str, value: object) -> int:
    """An ``Integer`` option value, as joptsimple converts it."""
    try:
        n = int(str(value).strip())
    except (TypeError, ValueError):
        n = None
    if n is None or not -(2**31) <= n <= INT_MAX or (isinstance(value, str) and not re.fullmatch(r"[+-]?\d+", value)):
        raise ConfigError(f"{flag}: {value!r} is not a 32-bit integer (Kafka's tool: Cannot parse argument)")
    return n


def options_for(
    kafka_version: str | None = None,
    *,
    decoders: Iterable[str] = (),
    print_data_log: bool = False,
    deep_iteration: bool = False,
    skip_record_metadata: bool = False,
    max_bytes: int | str | None = None,
    index_sanity_check: bool = False,
    verify_index_only: bool = False,
    max_message_size: int | str | None = None,
    key_decoder_class: str | None = None,
    value_decoder_class: str | None = None,
) -> DumpOptions:
    """The :class:`DumpOptions` of ``kafka-dump-log`` flags, checked against one Kafka release.

    Parameters
    ----------
    kafka_version : str, optional
        The release whose tool the flags are for (default :data:`DEFAULT_KAFKA_VERSION`).
    decoders : iterable of str
        Decoders whose flags were given (``cluster-metadata`` for ``--cluster-metadata-decoder``
        ...); as in Kafka's tool the first in the order offsets, transaction log, cluster
        metadata, remote log metadata, share group state wins.
    print_data_log, deep_iteration, skip_record_metadata, index_sanity_check, verify_index_only : bool
        The flags of those names.
    max_bytes, max_message_size : int or str, optional
        ``--max-bytes`` and ``--max-message-size`` (32-bit integers).
    key_decoder_class, value_decoder_class : str, optional
        The class given (``""`` when the flag came without one, i.e. Kafka's default).

    Raises
    ------
    ConfigError
        For a flag the release's tool does not have, a value it would not parse, or a decoder
        class other than Kafka's StringDecoder (a class is Java code: it cannot run here).

    Examples
    --------
    >>> options_for("4.3.1", decoders=["share-group-state"]).decoder
    'share-group-state'
    >>> options_for("3.9.2", decoders=["share-group-state"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    workbench.errors.ConfigError: kafka-dump-log of Kafka 3.9.2 has no --share-group-state-decoder (it came in ...)
    """
    era = KafkaEra.of(kafka_version)
    shown = ".".join(map(str, era.version))
    given: list[str] = []
    for d in decoders:
        if d == "none":
            continue
        if d not in _DECODER_FLAGS:
            raise ConfigError(f"unknown decoder {d!r}; expected one of {', '.join(DECODERS)}")
        given.append(_DECODER_FLAGS[d])
    flags = {
        "--print-data-log": print_data_log,
        "--deep-iteration": deep_iteration,
        "--skip-record-metadata": skip_record_metadata,
        "--max-bytes": max_bytes is not None,
        "--index-sanity-check": index_sanity_check,
        "--verify-index-only": verify_index_only,
        "--max-message-size": max_message_size is not None,
        "--key-decoder-class": key_decoder_class is not None,
        "--value-decoder-class": value_decoder_class is not None,
        **{flag: True for flag in given},
    }
    for flag, on in flags.items():
        if on and not _has_flag(era, flag):
            since = ".".join(map(str, _FLAGS[flag][0]))
            raise ConfigError(f"kafka-dump-log of Kafka {shown} has no {flag} (it came in Kafka {since})")
    for flag, cls in (("--key-decoder-class", key_decoder_class), ("--value-decoder-class", value_decoder_class)):
        if cls and cls not in STRING_DECODERS:
            raise ConfigError(
                f"{flag} {cls}: a decoder class is Java code and cannot run here; only Kafka's default "
                f"{STRING_DECODERS[0]} is reproduced (leave the flag out, or add --print-data-log)"
            )
    decoder = next((_FLAG_DECODERS[f] for f in _FLAG_DECODERS if f in given), "none")
    return DumpOptions(
        decoder=decoder,
        print_data_log=print_data_log,
        deep_iteration=deep_iteration,
        skip_record_metadata=skip_record_metadata,
        max_bytes=INT_MAX if max_bytes is None else _int_arg("--max-bytes", max_bytes),
        index_sanity_check=index_sanity_check,
        verify_index_only=verify_index_only,
        max_message_size=MAX_MESSAGE_SIZE
        if max_message_size is None
        else _int_arg("--max-message-size", max_message_size),
        decoder_class=key_decoder_class is not None or value_decoder_class is not None,
    )


def _looks_like_file(text: str) -> bool:
    """Whether an argument is a path rather than a Java class name."""
    return "/" in text or text.endswith((".log", ".checkpoint", ".index", ".timeindex", ".txnindex", ".snapshot"))


def parse_kafka_args(args: Iterable[str], kafka_version: str | None = None) -> tuple[DumpOptions, list[str]]:
    """``kafka-dump-log`` arguments as the release's tool parses them: ``(options, files)``.

    ``--flag value`` and ``--flag=value`` are both accepted; ``--files`` takes a comma-separated
    list (and may be repeated); arguments that are not flags are taken as files too (Kafka's
    tool would ignore them). Flags are not abbreviated (Kafka's parser does not allow it).

    Raises
    ------
    ConfigError
        For an unknown flag, a flag the release does not have, a missing or unparsable value, or
        a decoder class that cannot be honoured (see :func:`options_for`).

    Examples
    --------
    >>> opts, files = parse_kafka_args(["--deep-iteration", "--max-bytes=4096", "--files", "a.log,b.index"])
    >>> opts.deep, opts.max_bytes, files
    (True, 4096, ['a.log', 'b.index'])
    """
    era = KafkaEra.of(kafka_version)
    items = list(args)
    files: list[str] = []
    seen: dict[str, str | None] = {}
    decoders: list[str] = []
    i = 0
    while i < len(items):
        a = items[i]
        i += 1
        if not a.startswith("--"):
            files.append(a)
            continue
        name, eq, inline = a.partition("=")
        spec = _FLAGS.get(name)
        if spec is None:
            raise ConfigError(f"{name} is not a recognized option of kafka-dump-log")
        arity = spec[1]
        value: str | None = inline if eq else None
        if arity == "none" and eq:
            value = None  # Kafka's parser (joptsimple) accepts and ignores "--flag=value"
        if arity == "required" and not eq:
            if i >= len(items):
                raise ConfigError(f"{name} requires a value")
            value = items[i]
            i += 1
        if arity == "optional" and not eq and i < len(items) and not items[i].startswith("-"):
            if not _looks_like_file(items[i]):  # a class name; a path is the next file
                value = items[i]
                i += 1
        if name == "--files":
            files.extend(f for f in (value or "").split(",") if f)
        elif name in _FLAG_DECODERS:
            decoders.append(_FLAG_DECODERS[name])
        else:
            seen[name] = value if value is not None else ""
    shown = ".".join(map(str, era.version))
    return (
        options_for(
            shown,
            decoders=decoders,
            print_data_log="--print-data-log" in seen,
            deep_iteration="--deep-iteration" in seen,
            skip_record_metadata="--skip-record-metadata" in seen,
            max_bytes=seen.get("--max-bytes"),
            index_sanity_check="--index-sanity-check" in seen,
            verify_index_only="--verify-index-only" in seen,
            max_message_size=seen.get("--max-message-size"),
            key_decoder_class=seen.get("--key-decoder-class"),
            value_decoder_class=seen.get("--value-decoder-class"),
        ),
        files,
    )


def options_from_args(args: Iterable[str], kafka_version: str | None = None) -> DumpOptions:
    """The :class:`DumpOptions` of ``kafka-dump-log`` arguments (files ignored; raises as :func:`parse_kafka_args`).

    >>> o = options_from_args(["--cluster-metadata-decoder"])
    >>> o.decoder, o.prints_contents, o.deep_iteration, o.deep
    ('cluster-metadata', True, False, True)
    """
    return parse_kafka_args(args, kafka_version)[0]


def _is_batch(x: object) -> TypeGuard[Batch]:
    """Whether a frame's first item is a batch (else the trailing byte count, or ``None``)."""
    return x is not None and not isinstance(x, int)


def _codec_error() -> type[Exception]:
    from workbench.formats.compression import CodecError

    return CodecError


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


def java_utf8(data: bytes | bytearray | memoryview) -> str:
    r"""``new String(data, UTF_8)`` as Java 17 decodes it: each malformed sequence becomes one
    U+FFFD the way Java's decoder delimits it (not always Python's way: Java takes a surrogate
    encoding such as ``ED A0 80`` as one malformed character, and a truncated sequence at the
    end as one).

    Examples
    --------
    >>> java_utf8(b"ok \xc3\xbc")
    'ok ü'
    >>> java_utf8(b"\xed\xa0\x80!") == "\ufffd!", java_utf8(b"\xbf\xed\xaa") == "\ufffd" * 2
    (True, True)
    """
    raw = bytes(data)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    repl = "\ufffd"
    n = len(raw)
    i = 0

    def cont(b: int) -> bool:
        return b & 0xC0 == 0x80

    while i < n:
        b1 = raw[i]
        i += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if i < n:
                b2 = raw[i]
                if not cont(b2):
                    out.append(repl)
                else:
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                    i += 1
                continue
            out.append(repl)
            break
        elif 0xE0 <= b1 <= 0xEF:
            if i + 1 < n:
                b2, b3 = raw[i], raw[i + 1]
                if (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not cont(b2) or not cont(b3):
                    out.append(repl)
                    if not ((b1 == 0xE0 and b2 & 0xE0 == 0x80) or not cont(b2)):
                        i += 1  # the first two bytes make one malformed sequence
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(repl if 0xD800 <= c <= 0xDFFF else chr(c))
                    i += 2
                continue
            if i < n and ((b1 == 0xE0 and raw[i] & 0xE0 == 0x80) or not cont(raw[i])):
                out.append(repl)
                continue
            out.append(repl)
            break
        elif 0xF0 <= b1 <= 0xF7:
            if i + 2 < n:
                b2, b3, b4 = raw[i], raw[i + 1], raw[i + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not cont(b2) or not cont(b3) or not cont(b4) or not 0x10000 <= uc <= 0x10FFFF:
                    out.append(repl)
                    if (
                        b1 > 0xF4
                        or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
                        or (b1 == 0xF4 and b2 & 0xF0 != 0x80)
                        or not cont(b2)
                    ):
                        pass
                    elif not cont(b3):
                        i += 1
                    else:
                        i += 2
                else:
                    out.append(chr(uc))
                    i += 3
                continue
            if b1 > 0xF4 or (
                i < n
                and (
                    (b1 == 0xF0 and not 0x90 <= raw[i] <= 0xBF)
                    or (b1 == 0xF4 and raw[i] & 0xF0 != 0x80)
                    or not cont(raw[i])
                )
            ):
                out.append(repl)
                continue
            i += 1
            out.append(repl)
            if i < n and not cont(raw[i]):
                continue
            break
        else:
            out.append(repl)
    return "".join(out)


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
        from workbench.formats.compression import CODEC_NAMES, decompress

        inner = decompress(CODEC_NAMES[codec], raw[value_at + 4 : value_at + 4 + value_len], magic=batch.magic)
    except (struct.error, IndexError, KeyError, _codec_error()):
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
            elif form in ("2.2", "2.8"):
                crc, valid = checks[i] if checks and i < len(checks) else (0, False)
                parts.append(f" crc: {crc} isvalid: {_bool(valid)}")
            if control:
                parts.append(" " + _control_text(r, era))
            prefix = " "
        if contents and not (r.value is None and era.version[:2] < (2, 4)
                             and payloads.parse == payloads._string):  # type: ignore[union-attr]
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
    """The <= 2.1 record line (no batch lines in deep mode; checked against Kafka 2.1.1's tool).

    ``isvalid`` is the record's own check: a v2 record has no checksum of its own, so it is
    ``true`` even in a batch whose CRC does not match. The string decoder of Kafka 2.3 and older
    prints neither key nor payload for a record without a value.
    """
    codec = b.compression.upper()
    valid = True if checks is None else (checks[i][1] if i < len(checks) else False)
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
    elif contents and payloads is not None and not (r.value is None and payloads.parse == payloads._string):
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
        from workbench.formats.batch import Batch

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
            _CODEC_TEXT[codec] if codec < 5 else "unknown",
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
    from workbench.formats.batch import read_batches

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
    from workbench.formats.batch import Batch

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


# --------------------------------------------------------------------------------------------
# the streaming writer: compiled runs over clean batches, the Python lines around damage


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
