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

from workbench.formats.dumptext_write.indexes import (
    _OFFSET_ENTRY,  # noqa: F401
    _SIDECARS,  # noqa: F401
    _TIME_ENTRY,  # noqa: F401
    _TXN_ENTRY,  # noqa: F401
    _dump_offset_index,  # noqa: F401
    _dump_producer_snapshot,  # noqa: F401
    _dump_time_index,  # noqa: F401
    _dump_txn_index,  # noqa: F401
    _index_base,  # noqa: F401
    _index_lookup,  # noqa: F401
    _LogView,  # noqa: F401
    _needs,  # noqa: F401
    _records_max_timestamp,  # noqa: F401
    _sibling,  # noqa: F401
    _slice_check,  # noqa: F401
    _wrap_long,  # noqa: F401
)
from workbench.formats.dumptext_write.javatext import (
    java_file_path,
    java_utf8,
)
from workbench.formats.dumptext_write.lines import (
    _batch_line,  # noqa: F401
    _bool,  # noqa: F401
    _codec_error,  # noqa: F401
    _legacy_checks,  # noqa: F401
    _record_line_21,  # noqa: F401
    _record_lines,  # noqa: F401
    _sequence,  # noqa: F401
)
from workbench.formats.dumptext_write.logfile import (
    _file_head,  # noqa: F401
    _Head,  # noqa: F401
    _LogFrames,  # noqa: F401
    _unreadable,  # noqa: F401
    dump_lines,
)
from workbench.formats.dumptext_write.options import (
    _DECODER_FLAGS,  # noqa: F401
    _FLAG_DECODERS,  # noqa: F401
    _FLAGS,  # noqa: F401
    _VERSION,  # noqa: F401
    DECODERS,
    DEFAULT_KAFKA_VERSION,
    INT_MAX,
    MAX_MESSAGE_SIZE,
    STRING_DECODERS,
    DumpOptions,
    KafkaEra,
    _has_flag,  # noqa: F401
    _int_arg,  # noqa: F401
    _looks_like_file,  # noqa: F401
    options_for,
    options_from_args,
    parse_kafka_args,
)
from workbench.formats.dumptext_write.payloads import (
    _ARRAY_SHORT,  # noqa: F401
    _CONTROL_NAMES,  # noqa: F401
    _CONTROL_NAMES_27,  # noqa: F401
    _control_text,  # noqa: F401
    _coordinator_error,  # noqa: F401
    _frame_entity,  # noqa: F401
    _java_string_hash,  # noqa: F401
    _metadata_error,  # noqa: F401
    _Payloads,  # noqa: F401
    _scala_hash_set_order,  # noqa: F401
)
from workbench.formats.dumptext_write.reading import (
    _BASE_NAME,  # noqa: F401
    _BYTE_AT,  # noqa: F401
    _CODEC_TEXT,  # noqa: F401
    _HEADER_SIZE_UP_TO_MAGIC,  # noqa: F401
    _LOG_HDR,  # noqa: F401
    _RECORD_OVERHEAD_V0,  # noqa: F401
    _V2_HEADER,  # noqa: F401
    TOOL_FAILURE,
    Unterminated,
    _is_batch,  # noqa: F401
    _java_gzip,  # noqa: F401
    _java_gzip_records,  # noqa: F401
    _kafka_record_failure,  # noqa: F401
    _next_frame,  # noqa: F401
)
from workbench.formats.dumptext_write.stream import (
    _MAP_BYTES,  # noqa: F401
    _META_ROWS,  # noqa: F401
    _OUT_BYTES,  # noqa: F401
    _POOL,  # noqa: F401
    _SHALLOW_HDR,  # noqa: F401
    _WINDOW,  # noqa: F401
    Sink,
    _check_crcs,  # noqa: F401
    _crc_pool,  # noqa: F401
    _DecoderTexts,  # noqa: F401
    _FastLog,  # noqa: F401
    _first_bad,  # noqa: F401
    _first_bad_crc,  # noqa: F401
    _last_sequence,  # noqa: F401
    dump_text,
    write_kafka_dump,
    write_log_dump,
)

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "DECODERS",
    "INT_MAX",
    "MAX_MESSAGE_SIZE",
    "STRING_DECODERS",
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
