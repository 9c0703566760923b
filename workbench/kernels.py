"""Compile the workbench's numba kernels ahead of their first use.

The decoders (batch-header hopping, record and metadata-record decoding, dump text writing) and
the ISR replay are numba kernels compiled with ``cache=True``: numba keeps their machine code
beside each module (``__pycache__``, or numba's cache directory where that is not writable) and a
later process, the driver's or a Spark worker's, loads it instead of compiling again. A fresh
installation has none: the first investigation would wait while they compile, inside its first
metadata analysis.

:func:`compile_kernels` runs every path that uses a kernel once, on the demo bundle (real Kafka
files of each kind the kernels read), so installation pays that time instead: ``make venv``,
Binder's ``postBuild`` and ``workbench compile`` call it.
"""

from __future__ import annotations

import io
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CompiledPath:
    """One way the workbench reaches compiled (numba) kernels: the module whose kernels it runs, and
    the tables whose read or the areas whose findings run them (``unreached``: why a bundle's
    findings never do, for a path only a command takes). ``warm`` (``"module:function"``, called
    with the demo bundle's tables, returning a row count) runs the kernels the tables' reads do not.

    Each kernel module declares its path as a plain mapping ``COMPILED_PATH`` (no import of this
    module needed); :func:`compiled_paths` collects them, so a new kernel adds no line here."""

    name: str
    modules: tuple[str, ...]
    tables: tuple[str, ...] = ()
    areas: tuple[str, ...] = ()
    unreached: str = ""
    warm: str = ""


def compiled_paths() -> tuple[CompiledPath, ...]:
    """Every compiled path: the ``COMPILED_PATH`` of each module with a numba kernel
    (:func:`kernel_modules`), by module name. A kernel module declaring none is on no path, which
    ``tests/test_bad_value_corpus.py`` refuses."""
    import importlib

    paths = []
    for name in sorted(kernel_modules()):
        declared = getattr(importlib.import_module(name), "COMPILED_PATH", None)
        if declared is not None:
            paths.append(CompiledPath(modules=(name,), **{k: tuple(v) if isinstance(v, list | tuple) else v
                                                            for k, v in declared.items()}))
    return tuple(paths)


def kernel_modules() -> set[str]:
    """The modules of the package that define a numba kernel (``njit``)."""
    import importlib.util
    import pkgutil
    import re

    import workbench

    found = set()
    for info in pkgutil.walk_packages(workbench.__path__, "workbench."):
        spec = importlib.util.find_spec(info.name)
        if spec is not None and spec.origin is not None and spec.origin.endswith(".py") \
                and re.search(r"^@(numba\.)?n?jit\b", Path(spec.origin).read_text(encoding="utf-8"), re.M):
            found.add(info.name)
    return found


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

    import importlib

    import workbench
    from workbench.session import session

    t = time.perf_counter()
    spark = spark or session()
    with open_bundle(bundle) as opened:
        tables = workbench.load(opened, spark)
        rows, counted = 0, set()
        for path in compiled_paths():
            if path.unreached:
                continue
            # the decoders run in Spark's Python workers as the tables are read
            for name in path.tables:
                if name not in counted:
                    counted.add(name)
                    rows += getattr(tables, name).count()
            if path.warm:  # the kernels an analysis runs on what the tables hold
                module, function = path.warm.split(":")
                rows += getattr(importlib.import_module(module), function)(tables)
    took["decoders and replays"] = time.perf_counter() - t
    say(f"decoders and replays on the demo bundle: {rows} rows, {took['decoders and replays']:.1f} s")
    return took


def _stop_driver_jvm(spark: Any, timeout: float) -> None:
    """Stop the session and its driver JVM, waiting until that JVM has exited (and so written its archive)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    spark.stop()
    if proc is None:
        raise RuntimeError("the driver JVM was not started by this process")
    proc.stdin.close()  # Spark's gateway server exits normally on end of input
    proc.wait(timeout=timeout)
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - the JVM is gone; only Python-side sockets remain
        pass
    SparkContext._gateway = None
    SparkContext._jvm = None


def record_class_archive(workload: Callable[[Any], Any], *, report: Callable[[str], None] | None = None,
                         timeout: float = 300.0) -> Path | None:
    """Run ``workload(spark)`` in a new session whose JVM archives the classes it loaded; keep the archive if it works.

    Must run in a process without a Spark session (the recording JVM is started here and stopped
    at the end). Returns the installed archive, or None (no Java or Spark found, turned off by
    ``$WORKBENCH_CLASS_ARCHIVE``, or the archive did not check: the reason goes to ``report``).
    """
    from pyspark import SparkContext

    from workbench import classarchive as ca
    from workbench.session import session

    say = report or (lambda line: None)
    target = ca.archive_path()
    if target is None or not ca.enabled():
        workload(session())
        return None
    if SparkContext._active_spark_context is not None:
        raise RuntimeError("the class archive is recorded by a process's first Spark session")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    t = time.perf_counter()
    try:
        spark = session(conf={"spark.driver.extraJavaOptions": ca.recording_options(partial)})
    except Exception as exc:  # noqa: BLE001 - a JVM that cannot record: the work is done without
        say(f"class archive: a JVM recording one did not start ({str(exc)[:300]}); sessions run without")
        workload(session(conf={"spark.driver.extraJavaOptions": ca.DRIVER_OPTIONS}))
        return None
    try:
        workload(spark)
    finally:
        _stop_driver_jvm(spark, timeout)
    try:
        if not partial.is_file() or partial.stat().st_size == 0:
            say("class archive: the JVM wrote none (this JDK cannot record one); sessions run without")
            return None
        count = ca.shared_classes(partial, timeout=timeout)
        if count < ca.MIN_SHARED_CLASSES:
            say(f"class archive: a session loaded {count} classes from it; not kept")
            return None
        ca.install(partial, target)
        say(f"class archive: {target} ({target.stat().st_size / 2**20:.0f} MiB, {count} classes), "
            f"{time.perf_counter() - t:.1f} s")
        return target
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        say(f"class archive: not kept ({exc})")
        return None
    finally:
        partial.unlink(missing_ok=True)
