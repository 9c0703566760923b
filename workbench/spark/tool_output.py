"""Tool-output tables: captured text of Kafka's command-line tools, one table per view.

=========================== ==================================================================
table                       one row per
=========================== ==================================================================
``tool_captures``           captured tool output file (tool, arguments, view, capture time)
``tool_topics``             partition line of ``kafka-topics --describe`` (any filter flag)
``tool_group_offsets``      partition line of ``kafka-consumer-groups --describe`` (offsets view)
``tool_group_members``      member line of ``kafka-consumer-groups --describe --members``
``tool_group_states``       group line of ``kafka-consumer-groups --describe --state``
``tool_quorum_status``      ``kafka-metadata-quorum describe --status`` capture
``tool_quorum_replication`` node line of ``kafka-metadata-quorum describe --replication``
``tool_get_offsets``        ``topic:partition:offset`` line of ``kafka-get-offsets``
=========================== ==================================================================

Name
    ``kafka_tool_<view>`` (one data source per view; ``tool_captures`` is built on the driver).
Reads
    ``tool_output`` artifacts. Which view a file holds: from the bundle manifest's ``tools``
    entry (``tool`` and ``args``) when it has one, else from the text's header line
    (:func:`workbench.formats.tooltext.recognise_view`). Files of no view (``--create``
    output, producer-perf summaries) are listed by ``tool_captures`` only.
Options
    ``strict``.
Partitioning
    Each file read whole; small files are packed into one input partition (``pack_bytes``,
    ``pack_files``: :mod:`workbench.spark.source`).

Every row carries ``path``, ``captured`` (when the tool ran), ``captured_from`` and ``args``.
The capture time comes from the file name when it starts with epoch milliseconds (the
scenarios' ``tools/<t_ms>-<tool>.txt``; ``captured_from = 'file_name'``), else from the
manifest entry's ``t_ms`` (``'manifest'``), else it is null (``captured_from`` null): an incident
bundle with bare ``describe.txt`` files still loads, without times. ``args`` is the command line
from the manifest (null without one). The view columns are those of the parsers in
:mod:`workbench.formats.tooltext`; ``-`` cells are null.

Examples
--------
>>> tables.tool_group_offsets.groupBy("captured", "group").sum("lag").orderBy("captured").show()  # doctest: +SKIP
>>> tables.tool_topics.where("filter = 'under-min-isr-partitions'").show()                      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.spark._files import facts_option, manifest_entries, read_with_facts
from workbench.spark.registry import register_table
from workbench.spark.source import ArtifactReader, ArtifactSource, FilePartition, ms_to_us

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from workbench.bundle import Bundle
    from workbench.formats.problems import ProblemLog
    from workbench.spark.registry import BuildContext, Built

COMMON = "path string, captured timestamp, captured_from string, args array<string>"

#: Columns of each view's table after :data:`COMMON`.
VIEW_COLUMNS = {
    "topics_describe": (
        "topic string, partition int, leader int, replicas array<int>, isr array<int>, elr array<int>, "
        "last_known_elr array<int>, topic_id string, partition_count int, replication_factor int, "
        "configs map<string,string>, filter string"),
    "group_offsets": (
        "group string, topic string, partition int, leader_epoch int, current_offset long, log_end_offset long, "
        "lag long, consumer_id string, host string, client_id string"),
    "group_members": (
        "group string, consumer_id string, group_instance_id string, host string, client_id string, partitions int, "
        "assignment string, current_epoch int, current_assignment string, target_epoch int, "
        "target_assignment string, upgraded boolean"),
    "group_states": (
        "group string, coordinator_host string, coordinator_port int, coordinator_id int, "
        "assignment_strategy string, state string, members int, group_epoch int, target_assignment_epoch int"),
    "quorum_status": (
        "cluster_id string, leader_id int, leader_epoch int, high_watermark long, max_follower_lag long, "
        "max_follower_lag_time_ms long, voters array<int>, observers array<int>, voters_json string, "
        "observers_json string"),
    "quorum_replication": (
        "node_id int, directory_id string, log_end_offset long, lag long, last_fetch_time timestamp, "
        "last_caught_up_time timestamp, last_fetch_ms_ago long, last_caught_up_ms_ago long, status string"),
    "get_offsets": "topic string, partition int, offset long, time_spec string",
}

#: Table name of each view.
TABLE_NAMES = {
    "topics_describe": "tool_topics", "group_offsets": "tool_group_offsets", "group_members": "tool_group_members",
    "group_states": "tool_group_states", "quorum_status": "tool_quorum_status",
    "quorum_replication": "tool_quorum_replication", "get_offsets": "tool_get_offsets",
}
_ROWS = {
    "topics_describe": "partition line of a captured kafka-topics --describe",
    "group_offsets": "partition line of a captured kafka-consumer-groups --describe (offsets view)",
    "group_members": "member line of a captured kafka-consumer-groups --describe --members",
    "group_states": "group line of a captured kafka-consumer-groups --describe --state",
    "quorum_status": "captured kafka-metadata-quorum describe --status",
    "quorum_replication": "node line of a captured kafka-metadata-quorum describe --replication",
    "get_offsets": "topic:partition:offset line of a captured kafka-get-offsets",
}
_FILTERS = ("--under-replicated-partitions", "--under-min-isr-partitions", "--at-min-isr-partitions",
            "--unavailable-partitions")

CAPTURES_SCHEMA = (
    "path string, tool string, args array<string>, view string, captured timestamp, captured_from string, "
    "exit_code int, bytes long"
)


def _head(path: Path, size: int = 8192) -> str:
    import fsspec

    try:
        with fsspec.open(str(path), "rb") as f:
            return f.read(size).decode("utf-8", "replace")
    except OSError:
        return ""


def captures(bundle: Bundle) -> list[dict[str, Any]]:
    """Every ``tool_output`` file with its tool, arguments, view and capture time (see the module docstring)."""
    from workbench.formats.tooltext import capture_time_from_name, recognise_view, tool_view

    entries = manifest_entries(bundle, "tools")
    out = []
    for a in bundle.of_kind("tool_output"):
        entry = entries.get(a.path)
        tool = args = view = None
        if entry is not None:
            tool = str(entry.get("tool", "")) or None
            args = [str(x) for x in entry.get("args", [])] if isinstance(entry.get("args"), list) else None
            view = tool_view(tool or "", args or [])
        if view is None and (entry is None or tool is None):
            view = recognise_view(_head(bundle.root / a.path))
        captured, source = capture_time_from_name(Path(a.path).name), "file_name"
        if captured is None and entry is not None and isinstance(entry.get("t_ms"), int):
            captured, source = entry["t_ms"], "manifest"
        if captured is None:
            source = None
        exit_code = entry.get("exit_code") if entry is not None else None
        out.append({"path": a.path, "tool": tool, "args": args, "view": view, "captured_ms": captured,
                    "captured_from": source, "exit_code": exit_code if isinstance(exit_code, int) else None,
                    "bytes": a.bytes})
    return out


class ToolTextReader(ArtifactReader):
    """Rows of one view's captures (the view is the subclass's)."""

    view = ""
    #: What a tool prints: ids and partitions from 0, epochs, offsets and times from -1 (none).
    ranges = {
        **dict.fromkeys(("partition", "partition_count", "replication_factor", "node_id", "coordinator_id",
                         "coordinator_port", "members", "partitions"), (0, 2**31 - 1)),
        **dict.fromkeys(("leader", "leader_id", "leader_epoch", "current_epoch", "target_epoch", "group_epoch",
                         "target_assignment_epoch"), (-1, 2**31 - 1)),
        **dict.fromkeys(("current_offset", "log_end_offset", "offset", "high_watermark", "max_follower_lag",
                         "max_follower_lag_time_ms", "last_fetch_ms_ago", "last_caught_up_ms_ago"), (-1, 2**63 - 1)),
    }

    def decode(self, partition: FilePartition, log: ProblemLog) -> Iterator[dict[str, Any]]:
        import fsspec

        from workbench.formats.tooltext import PARSERS

        facts = facts_option(self.options).get(partition.path, {})
        with fsspec.open(partition.path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            log.report(0, "decode_error", f"byte {exc.start}: not UTF-8 ({exc.reason}); undecodable bytes replaced")
            text = raw.decode("utf-8", "replace")
        args = facts.get("args")
        common = {"path": partition.path, "captured": ms_to_us(facts.get("captured_ms")),
                  "captured_from": facts.get("captured_from"), "args": args}
        extra: dict[str, Any] = {}
        if self.view == "topics_describe":
            extra["filter"] = next((f.lstrip("-") for f in _FILTERS if args and f in args), None)
        if self.view == "get_offsets":
            extra["time_spec"] = args[args.index("--time") + 1] if args and "--time" in args[:-1] else None
        for row in PARSERS[self.view](text, partition.path, log):
            if self.view == "quorum_replication":
                row = {**row, "last_fetch_time": ms_to_us(row.pop("last_fetch_timestamp")),
                       "last_caught_up_time": ms_to_us(row.pop("last_caught_up_timestamp"))}
            if self.view == "topics_describe" and row.get("configs") is not None:
                row = {**row, "configs": list(row["configs"].items())}
            yield {**common, **row, **extra}


def _source(view: str) -> type[ArtifactSource]:
    reader = type(f"Tool_{view}_Reader", (ToolTextReader,),
                  {"view": view, "schema_ddl": f"{COMMON}, {VIEW_COLUMNS[view]}", "__module__": __name__})

    def name(cls: type) -> str:
        return f"kafka_tool_{view}"

    return type(f"Tool_{view}_Source", (ArtifactSource,),
                {"reader_class": reader, "name": classmethod(name), "__module__": __name__,
                 "__doc__": f'``spark.read.format("kafka_tool_{view}")``: {_ROWS[view]}.'})


SOURCES = {view: _source(view) for view in VIEW_COLUMNS}


def _builder(view: str):  # noqa: ANN202 (a build function)
    table = TABLE_NAMES[view]
    schema = f"{COMMON}, {VIEW_COLUMNS[view]}"

    def build(ctx: BuildContext) -> Built:
        chosen = [c for c in captures(ctx.bundle) if c["view"] == view]
        by_path = {a.path: a for a in ctx.bundle.of_kind("tool_output")}
        facts = {c["path"]: {k: c[k] for k in ("captured_ms", "captured_from", "args")} for c in chosen}
        return read_with_facts(ctx, table, _ROWS[view], schema, SOURCES[view],
                               [by_path[c["path"]] for c in chosen], facts)

    build.__doc__ = f"The ``{table}`` table: {_ROWS[view]}."
    return build


def build_captures(ctx: BuildContext) -> DataFrame:
    """The ``tool_captures`` table."""
    from datetime import UTC, datetime

    def when(ms: int | None) -> datetime | None:
        return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)

    rows = [(str(ctx.bundle.root / c["path"]), c["tool"], c["args"], c["view"], when(c["captured_ms"]),
             c["captured_from"], c["exit_code"], c["bytes"]) for c in captures(ctx.bundle)]
    return ctx.spark.createDataFrame(rows, CAPTURES_SCHEMA)


CAPTURES_TABLE = register_table(
    "tool_captures",
    row="captured tool output file (tool, arguments, view, capture time)",
    schema=CAPTURES_SCHEMA,
    kinds=("tool_output",),
    build=build_captures,
)

TABLES = {
    view: register_table(TABLE_NAMES[view], row=_ROWS[view], schema=f"{COMMON}, {VIEW_COLUMNS[view]}",
                         kinds=("tool_output",), build=_builder(view))
    for view in VIEW_COLUMNS
}
