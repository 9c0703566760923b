"""The bad-value corpus from the command line: every variant through findings, or through the report.

The corpus, its variants and the runs live in :mod:`peer.corpus` (the tests use them from there);
``python benchmarks/bad_value_corpus.py --help`` lists the options. One JSON line is printed:
variants, passed, failed (with reasons), counts by reader and kind, and timings.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from peer.corpus import Variant, corpus, run_cli, run_corpus, run_reports, sample  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run the variants whose id contains this")
    parser.add_argument("--limit", type=int, default=0, help="at most this many variants")
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    parser.add_argument("--verbose", action="store_true", help="one line per variant on stderr")
    parser.add_argument("--cli", type=int, default=0, metavar="N",
                        help="also run the real workbench report (papermill, HTML) on N variants of the sample")
    parser.add_argument("--no-findings", action="store_true",
                        help="tables and problems only: no area's findings recomputed")
    parser.add_argument("--report", action="store_true",
                        help="instead: every variant through the real report pipeline (notebook, HTML, summary), "
                             "in kept kernels (one Spark session each; see --kernels)")
    parser.add_argument("--sample", action="store_true", help="only the deterministic sample of the tests")
    parser.add_argument("--rest", action="store_true", help="only the variants outside that sample")
    parser.add_argument("--spread", action="store_true",
                        help="take the readers in turn (one variant of each, then the next of each...)")
    parser.add_argument("--part", default="", metavar="I/N",
                        help="only every N-th variant from the I-th (after --spread): N processes side by side")
    parser.add_argument("--kernels", type=int, default=1, metavar="N",
                        help="--report: N kept kernels side by side (2 suits a 2-core machine)")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help="--report: start no variant after this many seconds (the rest counted as not_run)")
    parser.add_argument("--record", type=Path, default=None, metavar="JSONL",
                        help="append each variant's result to this file as a JSON line, and skip the variants "
                             "it already holds (a run stopped part-way resumes where it stopped)")
    args = parser.parse_args(argv)
    variants = [v for v in corpus() if args.only in v.id]
    if args.sample or args.rest:
        chosen = {v.id for v in sample(variants)}
        variants = [v for v in variants if (v.id in chosen) == args.sample]
    if args.spread:
        by_reader: dict[str, list[Variant]] = {}
        for v in variants:
            by_reader.setdefault(v.reader, []).append(v)
        turns = list(by_reader.values())
        variants = [g[i] for i in range(max(map(len, turns), default=0)) for g in turns if i < len(g)]
    if args.part:
        index, parts = (int(x) for x in args.part.split("/"))
        variants = variants[index::parts]
    recorded = _recorded(args.record) if args.record else set()
    variants = [v for v in variants if v.id not in recorded]
    if args.limit:
        variants = variants[: args.limit]
    if args.list:
        for v in variants:
            print(v.id, v.path, v.raw, v.position)
        return 0

    def progress(r: dict) -> None:
        if args.record:
            with args.record.open("a") as out:  # one short append per line: parts may share the file
                out.write(json.dumps(r, sort_keys=True) + "\n")
        if args.verbose:
            print(("ok  " if r["ok"] else "FAIL") + f" {r['seconds']:6.1f}s {r['id']} {r['reasons'][:2]}",
                  file=sys.stderr, flush=True)

    if args.report:
        with tempfile.TemporaryDirectory(prefix="bad-value-reports-") as work:
            result = run_reports(variants, Path(work), progress=progress, budget=args.budget,
                                 kernels=args.kernels)
        print(json.dumps(result, sort_keys=True))
        return 0 if result["failed"] == 0 else 1
    import workbench

    spark = workbench.session("local[2]", app_name="bad-value-corpus", driver_memory="2g",
                              conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                                    "spark.ui.enabled": "false"})
    result = run_corpus(spark, variants, progress=progress, findings=not args.no_findings)
    if args.cli:
        spark.stop()
        with tempfile.TemporaryDirectory(prefix="bad-value-cli-") as work:
            picked = sample(variants)[:: max(1, len(sample(variants)) // args.cli)][: args.cli]
            t0 = time.monotonic()
            runs = run_cli(picked, Path(work))
            result["cli"] = {"runs": len(runs), "passed": sum(r["ok"] for r in runs),
                             "results": runs, "seconds": round(time.monotonic() - t0, 1)}
    print(json.dumps(result, sort_keys=True))
    cli_ok = all(r["ok"] for r in result.get("cli", {}).get("results", []))
    return 0 if result["failed"] == 0 and cli_ok else 1


def _recorded(path: Path) -> set[str]:
    """The variant ids a ``--record`` file already holds (none if it does not exist yet)."""
    if not path.exists():
        return set()
    return {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}


if __name__ == "__main__":
    sys.exit(main())
