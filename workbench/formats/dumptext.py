"""Kafka's dump-tool text (``kafka-dump-log.sh`` / ``DumpLogSegments``), both directions.

* Writing: :func:`write_kafka_dump` (``workbench dump --format kafka``), :func:`dump_lines`
  and :func:`dump_text` reproduce the tool's stdout for segments, snapshots, indexes and
  producer snapshots byte for byte, per Kafka version and flags (:func:`parse_kafka_args`)
  (:mod:`workbench.formats.dumptext_write`).
* Parsing: :func:`parse_kafka_dump` turns dump text of any era (2.x to 4.3) back into batch
  and record rows named like the ``batches`` table (:mod:`workbench.formats.dumptext_parse`).

Examples
--------
>>> import os, tempfile
>>> from workbench.formats.batch import encode_batch
>>> d = tempfile.mkdtemp(); p = os.path.join(d, "00000000000000000000.log")
>>> _ = open(p, "wb").write(encode_batch([(0, 1000, b"k", b"v")], base_offset=0))
>>> text = dump_text(p, DumpOptions(print_data_log=True), shown_path="t-0/00000000000000000000.log")
>>> [row["kind"] for row in parse_kafka_dump(text)]
['file', 'batch', 'record']
"""

from __future__ import annotations

from workbench.formats.dumptext_parse import parse_kafka_dump
from workbench.formats.dumptext_write import (
    DECODERS,
    DEFAULT_KAFKA_VERSION,
    INT_MAX,
    TOOL_FAILURE,
    DumpOptions,
    KafkaEra,
    Sink,
    Unterminated,
    dump_lines,
    dump_text,
    java_file_path,
    java_utf8,
    options_for,
    options_from_args,
    parse_kafka_args,
    write_kafka_dump,
    write_log_dump,
)

__all__ = [
    "DECODERS",
    "DEFAULT_KAFKA_VERSION",
    "INT_MAX",
    "TOOL_FAILURE",
    "DumpOptions",
    "KafkaEra",
    "Sink",
    "Unterminated",
    "dump_lines",
    "dump_text",
    "java_file_path",
    "java_utf8",
    "options_for",
    "options_from_args",
    "parse_kafka_args",
    "parse_kafka_dump",
    "write_kafka_dump",
    "write_log_dump",
]
