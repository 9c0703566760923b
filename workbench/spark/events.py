"""The ``events`` table: partition-state and server lines of the brokers' and controllers' text logs.

Name
    ``kafka_events``.
Reads
    ``server_log`` artifacts (``server.log``, ``state-change.log``, ``controller.log`` and their
    rotated or dated copies, gzip-compressed ones included; ``kafkaServer.out``), streamed line by
    line: memory does not grow with the file.
Options
    ``strict``; ``log_timezone`` (an IANA zone name, default ``UTC``): log4j's default layout
    writes local time without a zone, so the zone the brokers ran in is the user's to give.
Rows
    One per line :func:`workbench.formats.brokerlog.read_events` recognises: ISR updates, shrinks
    and expands, leader and follower starts, states a broker saw while keeping its role (with the
    replicas), the ZooKeeper controller's partition state changes and elections, and servers
    starting and stopping. ``node_id`` is the node the line names (the
    partition's leader for ISR lines, the broker for state-change lines, the controller for its
    own), else the node whose directory holds the file; ``cluster_id`` is that directory's.

A ZooKeeper-era cluster has no metadata log: this table is its partition state history. On a
KRaft cluster it holds the brokers' side of the same history, beside the metadata log.

Examples
--------
>>> tables.events.where("kind = 'isr_updated'").orderBy("time").show()   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from workbench.spark.registry import register_table
from workbench.spark.source import ArtifactReader, ArtifactSource, FilePartition

if TYPE_CHECKING:
    from workbench.formats.problems import ProblemLog

EVENTS_SCHEMA = (
    "path string, line_no long, time timestamp, level string, logger string, node_id int, cluster_id string, "
    "kind string, topic string, partition int, leader int, isr array<int>, isr_before array<int>, replicas array<int>, "
    "leader_epoch int, partition_epoch int, controller_epoch int, offset long, high_watermark long, "
    "state_from string, state_to string, properties map<string,string>, line string"
)

_FIELDS = ("kind", "topic", "partition", "leader", "isr", "isr_before", "replicas", "leader_epoch", "partition_epoch",
           "controller_epoch", "offset", "high_watermark", "state_from", "state_to", "properties", "level", "logger",
           "line_no", "line")
#: Longest ``line`` kept: a record's first line, cut (the event's fields are parsed from all of it).
LINE_CHARS = 2000


def _zone(options: dict[str, str]) -> Any:
    from datetime import UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from workbench.errors import ConfigError

    name = (options.get("log_timezone") or "UTC").strip()
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"log_timezone: {name!r} is not a time zone name (such as 'Europe/Berlin')") from exc


class EventsReader(ArtifactReader):
    """The events of one text log, streamed line by line (gzip-compressed files decompressed on the way)."""

    schema_ddl = EVENTS_SCHEMA

    def partitions(self):  # noqa: ANN201 (the base's)
        _zone(self.options)   # a zone that is no zone is said while planning, before any task runs
        return super().partitions()

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import io

        import fsspec

        from workbench.formats.brokerlog import read_events

        zone = _zone(self.options)
        compression = "gzip" if partition.path.endswith(".gz") else None
        with fsspec.open(partition.path, "rb", compression=compression) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            lines = _reported_lines(text, log)
            try:
                for event in read_events(lines, partition.path, log, zone=zone):
                    row = {name: event.get(name) for name in _FIELDS}
                    moment = event["time"]
                    row["time"] = int(moment.timestamp() * 1_000_000)
                    row["line"] = row["line"][:LINE_CHARS]
                    if row["properties"] is not None:
                        row["properties"] = list(row["properties"].items())
                    row["node_id"] = event["node_id"] if event.get("node_id") is not None else partition.node_id
                    yield {**row, "path": partition.path, "cluster_id": partition.cluster_id}
            except (OSError, EOFError) as exc:   # a truncated gzip member, a file cut mid-copy
                log.report(0, "truncated", f"the text ends early ({exc}); the lines before it are read")


def _reported_lines(text: Any, log: ProblemLog) -> Iterator[str]:
    """The lines of ``text``, with one problem for the first undecodable byte (replaced, the line kept)."""
    reported = False
    for line in text:
        if not reported and "\ufffd" in line:
            log.report(0, "decode_error", "not UTF-8: undecodable bytes replaced (first on this line: "
                                          f"{line.strip()[:80]!r})")
            reported = True
        yield line


class EventsSource(ArtifactSource):
    """``spark.read.format("kafka_events")``: partition-state and server lines of Kafka's text logs."""

    reader_class = EventsReader

    @classmethod
    def name(cls) -> str:
        return "kafka_events"


TABLE = register_table(
    "events",
    row="partition-state or server line of a broker's or controller's text log (ISR, leader, controller, start, stop)",
    schema=EVENTS_SCHEMA,
    kinds=("server_log",),
    source=EventsSource,
    options=("log_timezone",),
)
