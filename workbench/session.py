"""The Spark session factory used by notebooks, tests, reports and the CLI."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import workbench.classarchive as classarchive
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Environment variable naming the Spark master (``local[2]``, ``spark://host:7077``, ...).
MASTER_ENV = "WORKBENCH_SPARK_MASTER"
#: Environment variable giving ``spark.driver.memory`` (``512m`` on Binder).
MEMORY_ENV = "WORKBENCH_DRIVER_MEMORY"
#: Environment variable adding the operator's own options to the driver JVM's (``-XX:TieredStopAtLevel=4``,
#: ``-Xss4m``); when set, it replaces the options chosen by the input's size (:data:`SMALL_INPUT_OPTIONS`).
JAVA_OPTIONS_ENV = "WORKBENCH_DRIVER_JAVA_OPTIONS"
#: Input under this many bytes is small (most incident bundles): its session's driver JVM compiles with
#: C1 alone, whose code a short run reaches sooner and for far less CPU than C2's (benchmarks/README.md,
#: "C1 alone for small bundles"); larger input keeps the JVM's tiered compilation, for its long runs.
SMALL_INPUT_BYTES = 16 * 2**20
#: The driver JVM options for small input (C1's code cache enlarged: its 48 MiB default fills with a
#: session's generated classes, after which the JVM stops compiling).
SMALL_INPUT_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m"
#: Input under this many bytes is evaluated without generated code (:data:`INTERPRETED_CONF`): each of
#: a small bundle's few hundred queries is new, and compiling its generated classes with Janino (whose
#: class lookups scan every jar of the classpath) cost more than interpreting its few rows
#: (benchmarks/README.md, "Interpreted expressions for small bundles"); larger input keeps code generation.
INTERPRETED_INPUT_BYTES = 64 * 2**20
#: The settings that turn Spark's code generation off: whole-stage code generation, and the generated
#: projections, predicates and orderings (``NO_CODEGEN``: Spark's interpreted expression evaluation).
INTERPRETED_CONF: dict[str, str] = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
#: Spark's defaults of the same settings, set again for larger input (a kept session may have run a small one).
GENERATED_CONF: dict[str, str] = {
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
}
#: The driver JVM's logging: Spark's messages go to :func:`spark_log_path`, not to the terminal.
LOG_CONFIG = Path(__file__).resolve().parent / "data" / "log4j2.properties"
#: Newest log files kept; older ones are removed when a session starts.
KEEP_LOGS = 50


def spark_log_path() -> Path:
    """The file a session made by this process logs Spark's messages to (one per process, in the cache)."""
    return classarchive.cache_dir() / "logs" / f"spark-{os.getpid()}.log"


def _log_options() -> str:
    """Driver JVM options sending Spark's log to :func:`spark_log_path` (empty if its directory cannot be made)."""
    log = spark_log_path()
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return ""
    prune_logs(log.parent, "spark-*.log")
    return f" -Dlog4j2.configurationFile={LOG_CONFIG.as_uri()} -Dworkbench.log.file={log}"


def _extra_java_options(input_bytes: int | None = None) -> str:
    """The driver JVM options ``$WORKBENCH_DRIVER_JAVA_OPTIONS`` adds, else :data:`SMALL_INPUT_OPTIONS`
    for input known to be under :data:`SMALL_INPUT_BYTES` (empty otherwise)."""
    extra = os.environ.get(JAVA_OPTIONS_ENV, "").strip()
    if not extra and input_bytes is not None and input_bytes < SMALL_INPUT_BYTES:
        extra = SMALL_INPUT_OPTIONS
    return f" {extra}" if extra else ""


def input_size(path: str | Path, limit: int = INTERPRETED_INPUT_BYTES) -> int | None:
    """The bytes of the files under ``path`` (a directory, or one file such as an archive), counted up to
    ``limit`` and no further (a large data directory is not walked to its end); None when ``path`` is not
    a local file or directory (a URL, a missing path): its size is unknown."""
    root = Path(path)
    try:
        if not root.is_dir():
            return root.stat().st_size
        total = 0
        for folder, _dirs, files in os.walk(root):
            for name in files:
                try:
                    total += os.stat(os.path.join(folder, name)).st_size
                except OSError:
                    continue
                if total >= limit:
                    return total
        return total
    except OSError:
        return None


def prune_logs(folder: Path, pattern: str) -> None:
    """Remove all but the newest :data:`KEEP_LOGS` files of ``folder`` matching ``pattern``."""
    try:  # another process may be pruning at the same time
        older = sorted(folder.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
        for stale in older[KEEP_LOGS:]:
            stale.unlink(missing_ok=True)
    except OSError:
        pass

#: A static setting: fixed when the driver starts, not settable through a Connect session
CODEGEN_CACHE = "spark.sql.codegen.cache.maxEntries"
#: PySpark's switch for the Python call sites of DataFrame errors (off here: ``conf`` may turn it on).
DEBUGGING_CONF = "spark.python.sql.dataFrameDebugging.enabled"

#: Spark's setting that offers a read's filters to a Python data source (``DataSourceReader.pushFilters``).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

_ONE_MACHINE_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    # No data source of the workbench takes filters (none overrides DataSourceReader.pushFilters): asking
    # it would start one more Python daemon and add a round trip to planning each filtered read
    PUSHDOWN_CONF: "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # Generated classes kept for reuse: Spark's default, 100, is fewer than the analyses generate,
    # so a bundle opened again compiled the same stage code again with Janino
    CODEGEN_CACHE: "2000",
    # PySpark's DataFrame debugging records the Python call site of every column function in the
    # driver JVM (a stack walk and several round trips each), much of what building an analysis'
    # plans costs (benchmarks/README.md, "PySpark's DataFrame debugging off")
    DEBUGGING_CONF: "false",
    # The JVM's default tiered compilation: C1 alone (-XX:TieredStopAtLevel=1) saved CPU in a short
    # report, but its code cache defaults to 48 MiB, which a session's generated classes fill within
    # minutes (the demo bundle's tier findings: "CodeCache is full. Compiler has been disabled"),
    # after which every new class runs interpreted, for the rest of the session
    # (spark.driver.extraJavaOptions: workbench.classarchive.DRIVER_OPTIONS, with the class archive when there is one)
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}


def session(
    master: str | None = None,
    *,
    app_name: str = "kafka-workbench",
    driver_memory: str | None = None,
    conf: dict[str, Any] | None = None,
    input_bytes: int | None = None,
) -> SparkSession:
    """Return a Spark session set up for the workbench and register its data sources.

    Parameters
    ----------
    master : str, optional
        Spark master URL. Defaults to ``$WORKBENCH_SPARK_MASTER``, else ``local[*]``.
        With ``SPARK_REMOTE`` set, a Spark Connect session is created instead.
    app_name : str
        Application name shown by a cluster's UI.
    driver_memory : str, optional
        ``spark.driver.memory`` for a session started by this call; defaults to
        ``$WORKBENCH_DRIVER_MEMORY``, else ``1g`` (Binder sets ``512m``). ``$WORKBENCH_DRIVER_JAVA_OPTIONS``
        adds options to the driver JVM's (unless ``conf`` names them).
    conf : dict, optional
        Extra Spark settings; they override the defaults.
    input_bytes : int, optional
        The size of what the session will read, when known (:func:`input_size`): under
        :data:`SMALL_INPUT_BYTES` a new driver JVM runs with :data:`SMALL_INPUT_OPTIONS`, unless
        ``$WORKBENCH_DRIVER_JAVA_OPTIONS`` says otherwise; under :data:`INTERPRETED_INPUT_BYTES` the
        session evaluates expressions without generated code (:data:`INTERPRETED_CONF`), above it with.

    Returns
    -------
    pyspark.sql.SparkSession
        The session, with the UTC time zone, few shuffle partitions, the UI off and Python
        workers running the current interpreter; its driver JVM maps the class archive
        ``workbench compile`` recorded, if there is one (:mod:`workbench.classarchive`), and
        logs to :func:`spark_log_path` (unless ``conf`` names the driver's JVM options).

    Examples
    --------
    >>> spark = workbench.session("local[2]")          # doctest: +SKIP
    >>> spark.conf.get("spark.sql.session.timeZone")   # doctest: +SKIP
    'UTC'
    """
    from pyspark.sql import SparkSession

    from workbench.spark.registry import register_sources

    # Python workers must run this interpreter (a venv's), not whatever python3 is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")

    settings = dict(_ONE_MACHINE_CONF)
    archive = None
    if "spark.driver.extraJavaOptions" not in (conf or {}):
        settings["spark.driver.extraJavaOptions"], archive = classarchive.session_options()
        settings["spark.driver.extraJavaOptions"] += _log_options() + _extra_java_options(input_bytes)
    if input_bytes is not None:
        settings.update(INTERPRETED_CONF if input_bytes < INTERPRETED_INPUT_BYTES else GENERATED_CONF)
    settings["spark.driver.memory"] = driver_memory or os.environ.get(MEMORY_ENV) or "1g"
    settings["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    for key, value in (conf or {}).items():
        settings[str(key)] = str(value)

    builder = SparkSession.builder.appName(app_name)
    remote = os.environ.get("SPARK_REMOTE")
    if remote and master is None:
        # protobuf's default (upb) parser refuses plans nested over 100 levels, which an area's plan
        # reaches before its checkpoints; the pure-Python one has no such limit (read at its first import)
        os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
        builder = builder.remote(remote)
        # static driver settings do not apply to a Connect server
        settings = {k: v for k, v in settings.items() if k.startswith("spark.sql.") and k != CODEGEN_CACHE}
    else:
        chosen = master or os.environ.get(MASTER_ENV) or "local[*]"
        if not isinstance(chosen, str) or not chosen.strip():
            raise ConfigError(f"Spark master must be a non-empty string, got {chosen!r}")
        builder = builder.master(chosen)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception:
        if archive is None or remote:
            raise
        # a class archive the JVM cannot start with (cut short, overwritten): without it, and never again
        classarchive.discard(archive)
        spark = builder.config("spark.driver.extraJavaOptions",
                               classarchive.DRIVER_OPTIONS + _log_options() + _extra_java_options(input_bytes)
                               ).getOrCreate()
    if not remote:
        spark.sparkContext.setLogLevel("ERROR")
    register_sources(spark)
    return spark
