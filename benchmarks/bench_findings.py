"""Seconds each registered area takes to compute its findings on one bundle, in one Spark session.

What a report's findings cell (and the overview notebook's first cell) spends, area by area in
registry order, as the report computes them: the first area also pays the session's first table
loads. Usage::

    python benchmarks/bench_findings.py BUNDLE [--master local[2]]

Prints one line per area (``has_data`` and ``findings`` seconds, findings rows) and the total,
session start included.
"""

from __future__ import annotations

import argparse
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", help="bundle directory or archive")
    parser.add_argument("--master", default=None, help="Spark master (default: workbench.session's)")
    args = parser.parse_args(argv)

    import workbench
    from workbench.analysis.findings import area_has_data, areas, check_findings
    from workbench.investigation import open_investigation

    t0 = time.monotonic()
    spark = workbench.session(args.master)
    inv = open_investigation(args.bundle, params={"bundle": args.bundle, "report": True}, spark=spark)
    print(f"session and investigation: {time.monotonic() - t0:.1f} s", flush=True)
    for area in areas().values():
        a = time.monotonic()
        has = area_has_data(inv.tables, area.name)
        b = time.monotonic()
        rows = check_findings(area.findings(inv.tables, dict(inv.params)), area.name).collect() if has else []
        print(f"{area.name}: has_data {b - a:.1f} s, findings {time.monotonic() - b:.1f} s, {len(rows)} rows",
              flush=True)
    print(f"total {time.monotonic() - t0:.1f} s")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
