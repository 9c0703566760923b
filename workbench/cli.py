"""The ``workbench`` command line: it normalises arguments and calls one library function each."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from workbench.errors import ConfigError, WorkbenchError


def _parse_params(pairs: list[list[str]] | None, declared: dict[str, str]) -> dict[str, object]:
    """Convert ``-p NAME VALUE`` strings to the type the notebook's parameters cell declares."""
    params: dict[str, object] = {}
    for name, raw in pairs or []:
        kind = declared.get(name, "str")
        if kind == "bool":
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ConfigError(f"parameter {name!r} is a bool; got {raw!r} (use true or false)")
            params[name] = raw.lower() in ("true", "1", "yes")
        elif kind in ("int", "float"):
            try:
                params[name] = int(raw) if kind == "int" else float(raw)
            except ValueError as exc:
                raise ConfigError(f"parameter {name!r} is an {kind}; got {raw!r}") from exc
        else:
            params[name] = raw  # strings stay strings: -p start 2026 is not a number
    return params


def cmd_report(args: argparse.Namespace) -> int:
    import papermill

    from workbench.report import build_report, notebook_path

    declared = {name: (spec.get("inferred_type_name") or "str").split("|")[0].strip()
                for name, spec in papermill.inspect_notebook(str(notebook_path(args.notebook))).items()}
    out = build_report(args.bundle, args.out, notebook=args.notebook, parameters=_parse_params(args.param, declared))
    print(out)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from workbench.demo import write_demo_bundle

    print(write_demo_bundle(args.out))
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from workbench.bundle import open_bundle
    from workbench.inspect import scan_problems

    bundle = open_bundle(args.path)
    problems = list(bundle.problems) + scan_problems(bundle, deep=args.deep)
    if args.json:
        json.dump({"root": str(bundle.root), "inventory": bundle.inventory_rows(),
                   "problems": [p.__dict__ for p in problems]}, sys.stdout, indent=1)
        print()
        return 1 if problems and args.fail_on_problems else 0
    print(f"bundle {bundle.root}")
    if bundle.manifest:
        print(f"  scenario {bundle.manifest.get('scenario')}, Kafka {bundle.manifest.get('kafka_version')}")
    per_node: dict[int, Counter] = {}
    sizes: Counter = Counter()
    for a in bundle.artifacts:
        per_node.setdefault(a.node_id, Counter())[a.kind] += 1
        sizes[a.node_id] += a.bytes
    for node in sorted(per_node):
        label = f"node {node}" if node >= 0 else "outside node dirs"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(per_node[node].items()))
        print(f"  {label}: {sizes[node]:,} bytes; {kinds}")
    topics = sorted({(a.topic, a.partition) for a in bundle.artifacts if a.topic is not None},
                    key=lambda t: (t[0] or "", t[1] or 0))
    print(f"  {len(topics)} partition directories")
    print(f"problems: {len(problems)}")
    for p in problems:
        print(f"  {p.path} @ {p.position}: {p.kind}: {p.detail}")
    return 1 if problems and args.fail_on_problems else 0


def cmd_dump(args: argparse.Namespace) -> int:
    from workbench.dump import dump_files

    return dump_files(args.files, fmt=args.format, out=sys.stdout, strict=args.strict,
                      kafka_version=args.kafka_version, decoder=args.decoder,
                      payloads=args.print_data_log)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``workbench`` command."""
    parser = argparse.ArgumentParser(prog="workbench",
                                     description="Offline investigation workbench for Kafka incidents.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("report", help="run an incident-report notebook on a bundle and write self-contained HTML")
    p.add_argument("--bundle", required=True, help="bundle directory or archive")
    p.add_argument("--out", required=True, help="HTML file to write")
    p.add_argument("--notebook", default="incident_report", help="notebook name in notebooks/ (default: %(default)s)")
    p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="notebook parameter (VALUE parsed as JSON when it can be)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("demo", help="write the demo bundle (captured from real Kafka)")
    p.add_argument("--out", required=True, help="directory to create")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("inspect", help="list what a bundle holds and what could not be read")
    p.add_argument("path", help="bundle directory or archive")
    p.add_argument("--deep", action="store_true", help="also read every data segment (slower)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--fail-on-problems", action="store_true", help="exit 1 when anything could not be read")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("dump", help="dump segment or snapshot files as JSON lines or kafka-dump-log text")
    p.add_argument("files", nargs="+", help=".log or .checkpoint files")
    p.add_argument("--format", choices=("jsonl", "kafka"), default="jsonl")
    p.add_argument("--kafka-version", default=None, help="dump-tool text of this Kafka version (with --format kafka)")
    p.add_argument("--decoder", choices=("auto", "none", "cluster-metadata", "offsets", "remote-log-metadata",
                                         "transaction-log", "share-group-state"),
                   default="auto", help="payload decoder (auto: by the file's topic directory)")
    p.add_argument("--print-data-log", action="store_true", help="include record payloads")
    p.add_argument("--strict", action="store_true", help="stop at the first unreadable byte")
    p.set_defaults(func=cmd_dump)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except WorkbenchError as exc:
        print(f"workbench: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
