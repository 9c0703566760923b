"""Time to first plot of every area view on a synthetic bundle of 10,000 partitions and 1,000 groups.

Usage::

    python benchmarks/bench_views.py                         # 1 M metadata records, 100,000 commits
    python benchmarks/bench_views.py --metadata-records 200000 --commits 20000

The bundle (one node, written once into ``$KAFKA_WORKBENCH_CACHE/bench/views-m<records>-c<commits>-s<seed>/``):

* a KRaft metadata log of ``synthetic_metadata.py``: 1,000 topics of 10 partitions (10,000 partitions,
  ``min.insync.replicas=2``), then ISR shrinks and expands (70 %) and NoOpRecords (30 %);
* data partitions and ``__consumer_offsets`` of ``bench_consumer_lag.py``: 10,000 partitions (topics
  ``lag-000``..``lag-999``), ``--gib`` GiB of batches, ``--commits`` commits by 1,000 groups, one topic each.

Timed, in one local Spark session (``local[2]``), as a person meets them in the overview notebook:
``open`` (:func:`workbench.investigation.open_investigation`: the bundle listed, the tables declared),
``findings`` (every area's findings, collected: what the overview's timeline plots first), then for
every area with data ``view:<area>`` (:meth:`Investigation.view`: the area's view frames computed,
brought to pandas, and the widget built with its first figure). Each is the time from the click to
a plot. Peak memory: the Spark JVM's and this process's largest resident set.

Prints one JSON line: ``steps`` (seconds), ``cpu_seconds`` (per step, of this process and its
children: the Spark JVM and Python workers; steadier than seconds on a shared machine), ``findings``
(rows), ``bars`` (what the timeline draws of them), ``per_area`` (with ``--per-area``: each area's
findings by kind and severity), ``views`` (per area: the widget's class and the number of traces of its
first figure), ``jvm_peak_mib``, ``python_peak_mib``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_consumer_lag import write_bundle  # noqa: E402
from bench_metadata_scale import tree_cpu  # noqa: E402
from bench_quorum import Steps, spark_with_peak_rss  # noqa: E402
from synthetic_metadata import write_synthetic_metadata_log  # noqa: E402

PARTITIONS = 10_000


def bundle_for(metadata_records: int, commits: int, gib: float, seed: int) -> Path:
    from peer.kafka import cache_root

    root = cache_root() / "bench" / f"views-m{metadata_records}-c{commits}-g{gib:g}-s{seed}"
    done = root / ".complete"
    if done.exists():
        return root
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    written = write_bundle(root, commits, gib, PARTITIONS, seed)
    meta = root / "nodes" / "1" / "logs" / "__cluster_metadata-0"
    meta.mkdir(parents=True)
    written["metadata"] = write_synthetic_metadata_log(str(meta / "00000000000000000000.log"), metadata_records,
                                                       seed=seed)
    (root / "written.json").write_text(json.dumps(written, indent=1), "utf-8")
    done.write_text("", "utf-8")
    return root


def _figures(widget) -> list:
    """The plotly figures inside a widget tree (FigureWidget children, or ``figure`` attributes)."""
    import plotly.graph_objects as go

    out, todo = [], [widget]
    while todo:
        w = todo.pop()
        if isinstance(w, go.FigureWidget | go.Figure):
            out.append(w)
        todo.extend(getattr(w, "children", ()) or ())
        fig = getattr(w, "figure", None)
        if isinstance(fig, go.Figure | go.FigureWidget):
            out.append(fig)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metadata-records", type=int, default=1_000_000)
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-area", action="store_true",
                        help="first time each area's findings on their own (steps findings:<area>, with their rows); "
                             "the findings step then only unions what is already computed")
    parser.add_argument("--live", action="store_true",
                        help="open the overview as the notebook does (Investigation.live_overview_timeline: drawn "
                             "area by area): first_plot_s is the first drawing with bars, draws every drawing")
    args = parser.parse_args()

    from collections import Counter

    import workbench
    from widgets.timeline import merge_for_display
    from workbench.investigation import open_investigation

    path = bundle_for(args.metadata_records, args.commits, args.gib, args.seed)
    spark, jvm = spark_with_peak_rss(workbench)
    steps = Steps()

    cpu = {}

    def step(name, fn):
        before = tree_cpu(os.getpid())
        out = steps.run(name, fn)
        cpu[name] = round(tree_cpu(os.getpid()) - before, 2)
        print(f"{name}: {steps[name]} s, {cpu[name]} CPU s", file=sys.stderr, flush=True)  # progress
        return out

    inv = step("open", lambda: open_investigation(str(path), spark=spark))
    per_area = {}
    if args.per_area:
        from workbench.analysis.findings import area_has_data, areas

        for name, area in areas().items():
            if step(f"has_data:{name}", lambda n=name: area_has_data(inv.tables, n)):
                rows = step(f"findings:{name}", lambda a=area: a.findings_for(inv.tables, inv.params).collect())
                per_area[name] = dict(Counter((r["kind"], r["severity"]) for r in rows).most_common())
                per_area[name] = {f"{k} {s}": n for (k, s), n in per_area[name].items()}
    draws: list[dict] = []
    if args.live:
        import time

        from widgets.timeline import FindingsTimeline

        update, t0 = FindingsTimeline.update, time.monotonic()

        def timed(self, frame, *, pending=()):
            update(self, frame, pending=pending)
            draws.append({"seconds": round(time.monotonic() - t0, 1), "findings": len(frame),
                          "areas_pending": list(pending)})

        FindingsTimeline.update = timed
        step("overview", inv.live_overview_timeline)
        FindingsTimeline.update = update
    findings = step("findings", lambda: inv.findings().toPandas())
    views = {}
    for area in inv.area_titles():
        if not inv.has_data(area):
            continue
        widget = step(f"view:{area}", lambda a=area: inv.view(a))
        figs = _figures(widget) if widget is not None else []
        views[area] = {"widget": type(widget).__name__, "figures": len(figs),
                       "traces": sum(len(f.data) for f in figs)}
    result = {"bundle": json.loads((path / "written.json").read_text("utf-8")),
              "steps": steps, "cpu_seconds": cpu, "findings": len(findings), "per_area": per_area,
              # from the click that opens the bundle to the first bars (the Spark session already started)
              "first_plot_s": next((round(steps["open"] + d["seconds"], 1) for d in draws if d["findings"]), None),
              "draws": draws,
              "bars": len(merge_for_display(findings)), "views": views,
              "jvm_peak_mib": round(jvm.stop() / 2**20),
              "python_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
              "load_average": os.getloadavg()[0]}
    spark.stop()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
