"""The ``workbench`` command line: it normalises arguments and calls one library function each."""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError


def cmd_report(args: argparse.Namespace) -> int:
    from workbench.params import load_parameters_file
    from workbench.report import EXIT_FAILED, EXIT_FINDINGS, run_report

    params: dict[str, object] = {}
    if args.parameters:
        params.update(load_parameters_file(args.parameters))
    for name, raw in args.param or []:
        params[name] = raw  # converted to the notebook's declared type by run_report
    began = time.monotonic()
    result = run_report(args.bundle, args.out, notebook=args.notebook, parameters=params, summary=args.summary,
                        fail_on=args.fail_on, archive_limits=_archive_limits(args), progress=_say)
    _say(f"report written ({time.monotonic() - began:.0f} s in all)")
    print(result.path)
    for view in (result.summary or {}).get("failed_views") or []:
        print(f"workbench: a part of the report could not be drawn (cell {view['cell']}): {view['error']}",
              file=sys.stderr)
    if result.exit_code == EXIT_FINDINGS:
        print(f"workbench: findings at or above {args.fail_on} (see the report)", file=sys.stderr)
    elif result.exit_code == EXIT_FAILED:
        reason = (result.summary or {}).get("nothing_to_analyse") or "nothing to analyse"
        print(f"workbench: {reason}", file=sys.stderr)
    return result.exit_code


def _say(line: str) -> None:
    """One line of progress on stderr (above papermill's progress bar when one is drawn)."""
    from tqdm import tqdm

    tqdm.write(f"workbench: {line}", file=sys.stderr)


def _archive_limits(args: argparse.Namespace) -> object:
    from workbench.bundle import ArchiveLimits

    return ArchiveLimits.from_env(max_bytes=args.archive_max_bytes, max_members=args.archive_max_members,
                                  max_ratio=args.archive_max_ratio)


def _add_archive_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("archive limits", "an archive is extracted into a private directory that is removed "
                             "when the command ends; these refuse archive bombs (environment variables "
                             "WORKBENCH_ARCHIVE_MAX_BYTES, _MAX_MEMBERS, _MAX_RATIO set them too)")
    g.add_argument("--archive-max-bytes", metavar="SIZE", default=None,
                   help="most bytes the archive may expand to (default 32G)")
    g.add_argument("--archive-max-members", metavar="N", default=None,
                   help="most files and directories in the archive (default 200000)")
    g.add_argument("--archive-max-ratio", metavar="R", default=None,
                   help="most extracted bytes per archive byte, checked beyond 1 GiB extracted (default 200)")


def cmd_demo(args: argparse.Namespace) -> int:
    from workbench.demo import write_demo_bundle

    print(write_demo_bundle(args.out))
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    from workbench.collect import collect

    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=0, unit="B", unit_scale=True, desc="collect", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    try:
        result = collect(args.config, args.out, max_bytes=args.max_bytes,
                         full_partition_bytes=args.full_partition_bytes, log4j_dirs=args.log4j_dir,
                         bootstrap_server=args.bootstrap_server, kafka_bin=args.kafka_bin, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    taken = sum(t.bytes for t in result.taken)
    print(f"{result.archive}: node {result.node_id}, {len(result.taken)} files ({taken:,} bytes) from "
          f"{', '.join(result.log_dirs)}; {len(result.left_out)} left out, each with its reason in "
          f"nodes/{result.node_id}/collect-manifest.json; {len(result.tools)} tool outputs")
    return 0


def _byte_count(text: str) -> int:
    """``1048576``, ``512k``, ``64M``, ``2G`` (binary multiples) as a number of bytes."""
    units = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)i?[bB]?\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"not a byte count: {text!r} (e.g. 500M, 2G)")
    return int(m.group(1)) * units[m.group(2).lower()]


def cmd_compile(args: argparse.Namespace) -> int:
    from workbench.kernels import compile_kernels, record_class_archive

    def say(line: str) -> None:
        print(f"workbench compile: {line}", file=sys.stderr)

    # the driver JVM's class archive is recorded while the kernels' Spark paths run
    record_class_archive(lambda spark: compile_kernels(spark, report=say), report=say)
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from workbench.bundle import open_bundle
    from workbench.inspect import scan_problems

    limits = _archive_limits(args)
    with open_bundle(args.path, limits=limits) as bundle:  # an archive's extraction is removed on leaving
        return _inspect(args, bundle, scan_problems(bundle, deep=args.deep))


def _inspect(args: argparse.Namespace, bundle: Any, scanned: list) -> int:
    problems = list(bundle.problems) + scanned
    if args.json:
        json.dump({"root": str(bundle.root), "inventory": bundle.inventory_rows(),
                   "problems": [p.__dict__ for p in problems]}, sys.stdout, indent=1)
        print()
        return 1 if problems and args.fail_on_problems else 0
    print(f"bundle {bundle.root}")
    if bundle.manifest:
        print(f"  scenario {bundle.manifest.get('scenario')}, Kafka {bundle.manifest.get('kafka_version')}")
    clusters = bundle.clusters()
    from_text = set(bundle.text_log_clusters())
    for cluster, nodes in clusters.items():
        named = f"cluster {cluster}" if cluster is not None else "nodes of no known cluster (no cluster.id)"
        era = "; no metadata log: partition history from its text logs" if cluster in from_text else ""
        print(f"  {named}: node{'s' if len(nodes) > 1 else ''} {', '.join(map(str, nodes))}{era}")
    several = len(clusters) > 1
    per_node: dict[tuple[str, int], Counter] = {}
    sizes: Counter = Counter()
    for a in bundle.artifacts:
        key = ((bundle.cluster_of(a) or "") if several and a.node_id >= 0 else "", a.node_id)
        per_node.setdefault(key, Counter())[a.kind] += 1
        sizes[key] += a.bytes
    named_by: dict[tuple[str, int], list[str]] = {}  # why: the meta.properties files naming each node
    for a in bundle.of_kind("meta_properties"):
        key = ((bundle.cluster_of(a) or "") if several and a.node_id >= 0 else "", a.node_id)
        named_by.setdefault(key, []).append(a.path)
    from workbench.bundle import path_number

    by_path = {node: log_dir for log_dir, node in bundle.path_nodes.items()}
    for key in sorted(per_node):
        cluster, node = key
        label = f"node {node}" if node >= 0 else "outside node dirs"
        label += f" of {cluster}" if cluster else ""
        label += f" ({', '.join(named_by[key])})" if node >= 0 and key in named_by else ""
        if node in by_path and key not in named_by:
            how = ("numbered from its path" if path_number(bundle.root.name, by_path[node]) == node
                   else "its path gives no free number, numbered by discovery")
            label += f" ({by_path[node]}: no meta.properties, {how})"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(per_node[key].items()))
        print(f"  {label}: {sizes[key]:,} bytes; {kinds}")
    topics = sorted({(a.topic, a.partition) for a in bundle.artifacts if a.topic is not None},
                    key=lambda t: (t[0] or "", t[1] or 0))
    print(f"  {len(topics)} partition directories")
    print(f"problems: {len(problems)}")
    for p in problems:
        print(f"  {p.path} @ {p.position}: {p.kind}: {p.detail}")
    return 1 if problems and args.fail_on_problems else 0


def cmd_dump(args: argparse.Namespace) -> int:
    from workbench.errors import ConfigError
    from workbench.formats.dumptext_write import _looks_like_file

    files = list(args.files)
    for flag in ("key_decoder_class", "value_decoder_class"):  # "--value-decoder-class FILE": FILE is a file
        value = getattr(args, flag)
        if value and _looks_like_file(value):
            files.insert(0, value)
            setattr(args, flag, "")
    for group in args.files_opt or []:
        files.extend(f for f in group.split(",") if f)
    if not files:
        raise ConfigError("no file to dump: give files as arguments or with --files a,b,c")
    errors = []
    for name in files:
        path = Path(name)
        if not path.exists():
            errors.append(f"{name}: no such file")
        elif path.is_dir():
            errors.append(f"{name}: is a directory; give the segment, snapshot or index files in it")
        elif not path.is_file():
            errors.append(f"{name}: not a regular file")
    if errors:
        raise ConfigError("\n".join(errors))
    decoders = [name for flag, name in _DUMP_DECODER_FLAGS.items() if getattr(args, flag)]
    decoder = args.decoder
    problems: list = []
    try:
        status = _dump(args, files, decoders, decoder, problems)
    except BrokenPipeError:  # the reader went away (| head): stop quietly
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    if args.format == "kafka":
        for log in problems:
            for p in log.problems:
                print(f"workbench: {p.path} @ {p.position}: {p.kind}: {p.detail}", file=sys.stderr)
    return status


def _dump(args: argparse.Namespace, files: list[str], decoders: list[str], decoder: str | None, problems: list) -> int:
    from workbench.dump import dump_files
    from workbench.errors import ConfigError
    from workbench.formats.dumptext_write import options_for

    if args.format == "kafka":
        if decoder not in (None, "auto", "none"):
            decoders.append(decoder)
        options = options_for(
            args.kafka_version, decoders=decoders, print_data_log=args.print_data_log,
            deep_iteration=args.deep_iteration, skip_record_metadata=args.skip_record_metadata,
            max_bytes=args.max_bytes, index_sanity_check=args.index_sanity_check,
            verify_index_only=args.verify_index_only, max_message_size=args.max_message_size,
            key_decoder_class=args.key_decoder_class, value_decoder_class=args.value_decoder_class,
        )
        status = dump_files(files, fmt="kafka", out=sys.stdout, strict=args.strict, kafka_version=args.kafka_version,
                            decoder="auto" if decoder == "auto" else None, options=options, problems=problems)
    else:
        kafka_only = [flag for flag in ("skip_record_metadata", "index_sanity_check", "verify_index_only")
                      if getattr(args, flag)]
        kafka_only += [flag for flag in ("max_bytes", "max_message_size", "key_decoder_class", "value_decoder_class")
                       if getattr(args, flag) is not None]
        if kafka_only:
            flag = "--" + kafka_only[0].replace("_", "-")
            raise ConfigError(f"{flag} shapes kafka-dump-log text: use it with --format kafka")
        if len(decoders) > 1:
            raise ConfigError("give one decoder with --format jsonl")
        if decoders:
            decoder = decoders[0]
        status = dump_files(files, fmt="jsonl", out=sys.stdout, strict=args.strict, decoder=decoder or "auto",
                            payloads=args.print_data_log, problems=problems)
    sys.stdout.flush()
    return status


#: kafka-dump-log's decoder flags (argparse destinations) and the decoder each selects
_DUMP_DECODER_FLAGS = {
    "offsets_decoder": "offsets",
    "transaction_log_decoder": "transaction-log",
    "cluster_metadata_decoder": "cluster-metadata",
    "remote_log_metadata_decoder": "remote-log-metadata",
    "share_group_state_decoder": "share-group-state",
}


def _add_dump_parser(sub: argparse._SubParsersAction) -> None:
    from workbench.formats.topics import DECODERS

    p = sub.add_parser(
        "dump",
        help="dump segments, snapshots and indexes as JSON lines or as kafka-dump-log text",
        description="JSON lines (default), or with --format kafka the text of kafka-dump-log.sh, byte for byte, "
        "taking its flags with its meaning for the chosen Kafka release (--kafka-version): batch lines only "
        "unless --deep-iteration, --print-data-log or a decoder is given.",
        allow_abbrev=False,
    )
    p.add_argument("files", nargs="*", help="files (.log, .checkpoint, .index, .timeindex, .txnindex, .snapshot)")
    p.add_argument("--files", dest="files_opt", action="append", metavar="A,B,...",
                   help="comma-separated files, as kafka-dump-log takes them")
    p.add_argument("--format", choices=("jsonl", "kafka"), default="jsonl")
    p.add_argument("--kafka-version", default=None,
                   help="dump-tool text and flags of this Kafka release (--format kafka)")
    p.add_argument("--decoder", choices=("auto", *DECODERS), default=None,
                   help="payload decoder: auto = by the file's topic directory (the jsonl default); "
                   "with --format kafka a shorthand for the --...-decoder flags")
    k = p.add_argument_group("kafka-dump-log flags")
    k.add_argument("--deep-iteration", action="store_true", help="one line per record")
    k.add_argument("--print-data-log", action="store_true",
                   help="print keys and payloads (implies --deep-iteration); jsonl: add keys, values, headers")
    for flag in _DUMP_DECODER_FLAGS:
        k.add_argument("--" + flag.replace("_", "-"), action="store_true",
                       help=f"decode payloads as {_DUMP_DECODER_FLAGS[flag]} records (implies --print-data-log)")
    k.add_argument("--skip-record-metadata", action="store_true", help="print keys and payloads only")
    k.add_argument("--max-bytes", default=None, metavar="N", help="read only the batches in the first N bytes")
    k.add_argument("--max-message-size", default=None, metavar="N",
                   help="bytes an .index entry's batch must fit in (default 5242880)")
    k.add_argument("--index-sanity-check", action="store_true", help="only check .index/.timeindex files")
    k.add_argument("--verify-index-only", action="store_true", help="check index entries against the log, print none")
    k.add_argument("--key-decoder-class", nargs="?", const="", default=None, metavar="CLASS",
                   help="only Kafka's default org.apache.kafka.tools.api.StringDecoder can be honoured")
    k.add_argument("--value-decoder-class", nargs="?", const="", default=None, metavar="CLASS",
                   help="only Kafka's default org.apache.kafka.tools.api.StringDecoder can be honoured")
    p.add_argument("--strict", action="store_true", help="stop at the first unreadable byte")
    p.set_defaults(func=cmd_dump)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``workbench`` command."""
    parser = argparse.ArgumentParser(
        prog="workbench", description="Offline investigation workbench for Kafka incidents.",
        epilog="Exit codes: 0 success (report: no finding at or above --fail-on); 1 report: findings at or above "
               "--fail-on, inspect --fail-on-problems / dump: something could not be read; 2 error (bad arguments, "
               "unreadable bundle or archive, failed notebook, report on a bundle with nothing to analyse); "
               "130 interrupted. Errors are one line each on stderr; --debug adds the traceback.")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    real_add = sub.add_parser

    def add_parser(*a: Any, **k: Any) -> argparse.ArgumentParser:  # --debug after the command too
        p = real_add(*a, **k)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of an error")
        return p

    sub.add_parser = add_parser  # type: ignore[method-assign]

    p = sub.add_parser(
        "report", help="run an incident-report notebook on a bundle and write self-contained HTML",
        description="Exit codes: 0 no finding at or above --fail-on; 1 findings at or above it; 2 the report "
                    "could not be built (bad arguments, unreadable bundle, failed notebook).")
    p.add_argument("--bundle", required=True, help="bundle directory or archive")
    p.add_argument("--out", required=True, help="HTML file to write")
    p.add_argument("--notebook", default="incident_report", help="notebook name in notebooks/ (default: %(default)s)")
    p.add_argument("--parameters", metavar="FILE", help="YAML file of notebook parameters (name: value)")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="notebook parameter, converted to its declared type (overrides --parameters)")
    p.add_argument("--summary", metavar="FILE", help="also write the findings and key figures as JSON")
    p.add_argument("--fail-on", default="critical", choices=("critical", "warning", "info", "never"),
                   help="exit 1 when a finding is at least this severe (default: %(default)s)")
    _add_archive_options(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("demo", help="write the demo bundle (captured from real Kafka)")
    p.add_argument("--out", required=True, help="directory to create")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("inspect", help="list what a bundle holds and what could not be read")
    p.add_argument("path", help="bundle directory or archive")
    p.add_argument("--deep", action="store_true", help="also read every data segment (slower)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--fail-on-problems", action="store_true", help="exit 1 when anything could not be read")
    _add_archive_options(p)
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("compile", help="compile the decoding and replay kernels now (done at installation)",
                       description="Runs every numba kernel once on the demo bundle, so that their machine code "
                                   "is cached and the first investigation does not wait for it, and records the "
                                   "Spark driver's class archive meanwhile (WORKBENCH_CLASS_ARCHIVE=0: not).")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser(
        "collect", help="gather one node's log dirs, logs and tool outputs into a bundle archive, read-only (no Spark)",
        description="Run on a broker or controller, beside Kafka: reads its configuration, takes the metadata log, "
                    "the internal topics, every index and checkpoint, small partitions' segments, the log4j files "
                    "and (with --bootstrap-server) Kafka's tools' outputs into one .tar.gz, and says in its "
                    "collect-manifest.json what was left out and why. Nothing in the log dirs is written or locked.")
    p.add_argument("--config", required=True, help="the node's server.properties (or broker/controller.properties)")
    p.add_argument("--out", required=True, help="archive to write (.tar.gz), outside the log dirs")
    p.add_argument("--max-bytes", type=_byte_count, default=None, metavar="N",
                   help="take at most N bytes of files (e.g. 2G), the most telling first")
    p.add_argument("--full-partition-bytes", type=_byte_count, default="64M", metavar="N",
                   help="take a data partition's segments while they hold at most N bytes (default: %(default)s)")
    p.add_argument("--log4j-dir", action="append", default=[], metavar="DIR",
                   help="directory of the node's log4j files (default: $LOG_DIR, $KAFKA_HOME/logs, ../logs)")
    p.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT",
                   help="also capture kafka-topics, kafka-consumer-groups and kafka-metadata-quorum outputs")
    p.add_argument("--kafka-bin", default=None, metavar="DIR", help="Kafka's bin directory (with --bootstrap-server)")
    p.set_defaults(func=cmd_collect)

    _add_dump_parser(sub)
    return parser


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: an archive's extraction directory is removed on the way out


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the process exit code (see the epilog of :func:`build_parser`)."""
    args = build_parser().parse_args(argv)
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread
        previous = None
    try:
        return int(args.func(args))
    except WorkbenchError as exc:
        if args.debug:
            raise
        for line in str(exc).splitlines() or [type(exc).__name__]:
            print(f"workbench: {line}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, or input the workbench does not yet turn into a clear error
        if args.debug:
            raise
        detail = " ".join(str(exc).split())[:300]
        print(f"workbench: unexpected {type(exc).__name__}: {detail} (run with --debug for the traceback)",
              file=sys.stderr)
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    raise SystemExit(main())
