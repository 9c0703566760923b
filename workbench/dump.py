"""``workbench dump``: segments, snapshots and indexes as JSON lines or as ``kafka-dump-log`` text.

``jsonl`` (:func:`workbench.formats.dumpjson.write_jsonl`) writes one JSON object per batch,
record, index entry and problem; records of internal topics carry their decoded payload.
``kafka`` (:func:`workbench.formats.dumptext_write.write_kafka_dump`) writes the text of
``kafka-dump-log.sh`` byte for byte, for the chosen Kafka release and the same flags
(:func:`workbench.formats.dumptext_write.parse_kafka_args`). Both stream: memory stays flat
whatever the file's size.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import BinaryIO, TextIO

from workbench.errors import UnsupportedError
from workbench.formats.problems import ProblemLog
from workbench.formats.topics import decoder_for

__all__ = ["decoder_for", "dump_files"]


def dump_files(
    files: Iterable[str],
    *,
    fmt: str = "jsonl",
    out: TextIO | BinaryIO,
    strict: bool = False,
    kafka_version: str | None = None,
    decoder: str | None = None,
    payloads: bool = False,
    options: object | None = None,
    problems: list[ProblemLog] | None = None,
) -> int:
    """Dump ``files`` to ``out`` as ``jsonl`` or ``kafka`` text; returns 0, or 1 when any problem was met.

    ``decoder`` defaults to ``auto`` (by each file's topic) for ``jsonl``, to that of ``options`` for
    ``kafka``. ``payloads`` adds keys, values and headers (``jsonl``) or ``--print-data-log``
    (``kafka`` without ``options``). ``problems`` receives one ProblemLog per file.

    >>> import io; buf = io.StringIO()                                   # doctest: +SKIP
    >>> dump_files(["00000000000000000000.log"], out=buf)                # doctest: +SKIP
    0
    """
    if fmt == "kafka":
        from workbench.formats.dumptext_write import DumpOptions, write_kafka_dump

        opts = options if isinstance(options, DumpOptions) else None
        if opts is None and (payloads or decoder is not None):
            opts = DumpOptions(print_data_log=payloads, deep_iteration=True)
        return write_kafka_dump(files, out=out, options=opts, kafka_version=kafka_version, decoder=decoder,
                                strict=strict, problems=problems)
    if fmt != "jsonl":
        raise UnsupportedError(f"unknown dump format {fmt!r}; expected 'jsonl' or 'kafka'")
    from workbench.formats.dumpjson import write_jsonl

    return write_jsonl(files, out=out, decoder=decoder or "auto", payloads=payloads, strict=strict,
                       problems=problems)
