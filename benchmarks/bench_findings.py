"""What each registered area costs to compute its findings on one bundle, in one Spark session.

What a report's findings cell (and the overview notebook's first cell) spends, area by area in
registry order, as the report computes them: wall seconds, Spark jobs and stages, and py4j round
trips (calls from Python into the driver JVM), the fixed costs that dominate on small bundles. The
first area also pays the session's first table loads. ``--sites N`` also counts the DataFrames each
area builds and times its actions (collects, counts, checkpoints) by the workbench function that
runs them, printing the N costliest. Usage::

    python benchmarks/bench_findings.py BUNDLE [--master local[2]] [--json FILE] [--sites N] [--conf K=V ...]

Prints one line per area and the total, session start included.
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import contextmanager


@contextmanager
def _counting_py4j():
    """Count py4j commands sent to the JVM while the block runs (``counts["calls"]``)."""
    from py4j.clientserver import ClientServerConnection
    from py4j.java_gateway import GatewayConnection

    counts = {"calls": 0}
    originals = {cls: cls.send_command for cls in (ClientServerConnection, GatewayConnection)}

    def wrap(send):
        def send_command(self, command, *args, **kwargs):
            counts["calls"] += 1
            return send(self, command, *args, **kwargs)
        return send_command

    for cls, send in originals.items():
        cls.send_command = wrap(send)
    try:
        yield counts
    finally:
        for cls, send in originals.items():
            cls.send_command = send


#: DataFrame methods that run Spark jobs (an eager local checkpoint among them).
ACTIONS = ("collect", "count", "toPandas", "localCheckpoint", "first", "take", "isEmpty", "head",
           "toLocalIterator")


def _site() -> str:
    """The innermost workbench function on the stack outside the table registry."""
    import traceback

    for frame in reversed(traceback.extract_stack(limit=24)):
        if "/workbench/" in frame.filename and not frame.filename.endswith("registry.py"):
            return f"{frame.filename.split('/workbench/', 1)[1]}:{frame.name}"
    return "?"


@contextmanager
def _nothing():
    yield None


@contextmanager
def _counting_actions():
    """Count DataFrames built (``counts["frames"]``) and time outermost actions by call site
    (``counts["sites"]``: site -> [actions, seconds]) while the block runs."""
    from pyspark.sql.classic.dataframe import DataFrame

    counts: dict = {"frames": 0, "sites": {}}
    depth = [0]
    init = DataFrame.__init__
    originals = {name: getattr(DataFrame, name) for name in ACTIONS}

    def counted_init(self, *args, **kwargs):
        counts["frames"] += 1
        init(self, *args, **kwargs)

    def timed(name, action):
        def run(self, *args, **kwargs):
            if depth[0]:
                return action(self, *args, **kwargs)
            site, started = f"{name}@{_site()}", time.monotonic()
            depth[0] += 1
            try:
                return action(self, *args, **kwargs)
            finally:
                depth[0] -= 1
                entry = counts["sites"].setdefault(site, [0, 0.0])
                entry[0] += 1
                entry[1] += time.monotonic() - started
        return run

    DataFrame.__init__ = counted_init
    for name, action in originals.items():
        setattr(DataFrame, name, timed(name, action))
    try:
        yield counts
    finally:
        DataFrame.__init__ = init
        for name, action in originals.items():
            setattr(DataFrame, name, action)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", help="bundle directory or archive")
    parser.add_argument("--master", default=None, help="Spark master (default: workbench.session's)")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    parser.add_argument("--sites", type=int, default=0, metavar="N",
                        help="also count DataFrames and time actions by call site, printing the N costliest")
    parser.add_argument("--conf", action="append", default=[], metavar="K=V",
                        help="a Spark setting for the session, as a report could be given one (repeatable)")
    args = parser.parse_args(argv)
    conf = dict(item.split("=", 1) for item in args.conf)

    import workbench
    from workbench.analysis.findings import area_has_data, areas, check_findings
    from workbench.investigation import open_investigation
    from workbench.session import input_size

    t0 = time.monotonic()
    spark = workbench.session(args.master, input_bytes=input_size(args.bundle),  # as a report's kernel starts it
                              conf=conf or None)
    tracker = spark.sparkContext.statusTracker()
    inv = open_investigation(args.bundle, params={"bundle": args.bundle, "report": True}, spark=spark)
    rows_out = {"session_s": round(time.monotonic() - t0, 1), "areas": {}}
    print(f"session and investigation: {rows_out['session_s']:.1f} s", flush=True)
    print(f"{'area':<14}{'has_data s':>11}{'findings s':>11}{'rows':>6}{'jobs':>6}{'stages':>8}{'py4j':>8}")
    for area in areas().values():
        spark.sparkContext.setJobGroup(f"bench-{area.name}", area.name)
        with _counting_py4j() as py4j, (_counting_actions() if args.sites else _nothing()) as acts:
            a = time.monotonic()
            has = area_has_data(inv.tables, area.name)
            b = time.monotonic()
            rows = check_findings(area.findings_for(inv.tables, inv.params), area.name).collect() if has else []
            c = time.monotonic()
        jobs = tracker.getJobIdsForGroup(f"bench-{area.name}")
        stages = sum(len(info.stageIds) for j in jobs if (info := tracker.getJobInfo(j)) is not None)
        figures = {"has_data_s": round(b - a, 1), "findings_s": round(c - b, 1), "rows": len(rows),
                   "jobs": len(jobs), "stages": stages, "py4j_calls": py4j["calls"]}
        rows_out["areas"][area.name] = figures
        print(f"{area.name:<14}{b - a:>11.1f}{c - b:>11.1f}{len(rows):>6}{len(jobs):>6}{stages:>8}{py4j['calls']:>8}",
              flush=True)
        if acts is not None:
            sites = sorted(acts["sites"].items(), key=lambda kv: -kv[1][1])
            figures.update(frames=acts["frames"], actions=sum(n for n, _ in acts["sites"].values()),
                           action_s=round(sum(t for _, t in acts["sites"].values()), 1),
                           sites={k: [n, round(t, 2)] for k, (n, t) in sites})
            print(f"    {acts['frames']} DataFrames built, {figures['actions']} actions, "
                  f"{figures['action_s']} s in them", flush=True)
            for site, (n, t) in sites[:args.sites]:
                print(f"    {t:>7.2f} s {n:>3}x {site}", flush=True)
    rows_out["total_s"] = round(time.monotonic() - t0, 1)
    print(f"total {rows_out['total_s']:.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(rows_out, out, indent=2)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
