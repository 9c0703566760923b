"""Compile the workbench's numba kernels ahead of their first use.

The decoders (batch-header hopping, record and metadata-record decoding, dump text writing) and
the ISR replay are numba kernels compiled with ``cache=True``: numba keeps their machine code
beside each module (``__pycache__``, or numba's cache directory where that is not writable) and a
later process, the driver's or a Spark worker's, loads it instead of compiling again. A fresh
installation has none: the first investigation would wait for them (measured on the 1M-partition
benchmark: 36.7 s for the first metadata analysis on a cold cache, 19.2 s on a warm one).

:func:`compile_kernels` runs every path that uses a kernel once, on the demo bundle (real Kafka
files of each kind the kernels read), so installation pays that time instead: ``make venv``,
Binder's ``postBuild`` and ``workbench compile`` call it.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any


def _demo_files(bundle: Any) -> list[str]:
    """One file of each kind the dump writers read (from the bundle's inventory): a data, a
    metadata and a ``__consumer_offsets`` segment, an offset and a time index, a snapshot."""
    from workbench.formats.topics import METADATA_TOPIC, OFFSETS_TOPIC

    wanted = {
        "data segment": lambda a: a.kind == "segment" and not (a.topic or "").startswith("__"),
        "metadata segment": lambda a: a.kind == "segment" and a.topic == METADATA_TOPIC,
        "offsets segment": lambda a: a.kind == "segment" and a.topic == OFFSETS_TOPIC,
        "offset index": lambda a: a.kind == "offset_index",
        "time index": lambda a: a.kind == "time_index",
        "snapshot": lambda a: a.kind == "snapshot" and a.topic == METADATA_TOPIC,
    }
    found: dict[str, str] = {}
    for artifact in sorted(bundle.of_kind("segment", "offset_index", "time_index", "snapshot"), key=lambda a: a.path):
        for kind, match in wanted.items():
            if kind not in found and artifact.bytes > 0 and match(artifact):
                found[kind] = str(bundle.root / artifact.path)
    return list(found.values())


def compile_kernels(spark: Any = None, *, report: Callable[[str], None] | None = None) -> dict[str, float]:
    """Run each kernel-using path once on the demo bundle; returns the seconds each step took.

    Parameters
    ----------
    spark : SparkSession, optional
        Default: :func:`workbench.session.session` (local).
    report : callable, optional
        Called with one line per step done.

    Examples
    --------
    >>> compile_kernels(report=print)                     # doctest: +SKIP
    dump writers: 6 files, 9.8 s
    ...
    """
    from workbench.bundle import open_bundle
    from workbench.demo import demo_bundle_path
    from workbench.dump import dump_files

    say = report or (lambda line: None)
    took: dict[str, float] = {}
    bundle = demo_bundle_path()
    with open_bundle(bundle) as opened:
        files = _demo_files(opened)

    t = time.perf_counter()
    for fmt in ("kafka", "jsonl"):
        for payloads, decoder in ((False, None), (True, "auto")):    # decoders by topic: memoised texts
            dump_files(files, fmt=fmt, out=io.StringIO(), payloads=payloads, decoder=decoder, problems=[])
    took["dump writers"] = time.perf_counter() - t
    say(f"dump writers: {len(files)} files, {took['dump writers']:.1f} s")

    import workbench
    from workbench.analysis import isr
    from workbench.session import session

    t = time.perf_counter()
    spark = spark or session()
    with open_bundle(bundle) as opened:
        tables = workbench.load(opened, spark)
        # the decoders, in Spark's Python workers: batches, records, metadata records
        rows = sum(getattr(tables, name).count() for name in ("batches", "records", "metadata"))
        # the ISR replays (partition states, per-broker counts, per-partition summaries)
        states = isr.states_for(tables, {})
        rows += states.count() + isr.under_min_isr_counts(states).count() + isr.partition_summary(states).count()
    took["decoders and replays"] = time.perf_counter() - t
    say(f"decoders and replays on the demo bundle: {rows} rows, {took['decoders and replays']:.1f} s")
    return took
