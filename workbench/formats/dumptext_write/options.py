"""The dump tool's flags per Kafka release: the versions' eras (KafkaEra), DumpOptions and the argument parser."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from workbench.errors import ConfigError
from workbench.formats.topics import KAFKA_DECODERS

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
