"""The driver JVM's class-data-sharing archive: Spark's classes loaded once at installation, mapped by every session.

A fresh Spark driver loads, verifies and links some 20,000 classes as its first queries run: the
first job that reads a Python data source or runs ``mapInArrow`` spends seconds in the JVM before
any Python worker starts, many times what the same job costs once the classes are loaded. HotSpot
can keep those classes, already parsed and verified, in an archive that later JVMs map from disk
(class-data sharing, a dynamic archive: ``-XX:ArchiveClassesAtExit``, ``-XX:SharedArchiveFile``,
JDK 13 and later).

``workbench compile`` (run by ``make venv`` and Binder's ``postBuild``) records the archive while
it runs the demo bundle's decoders and replays (:func:`workbench.kernels.record_class_archive`), into
``$KAFKA_WORKBENCH_CACHE/jvm/driver-<key>.jsa``; :func:`workbench.session.session` maps it. This
module belongs to the session's layer: it imports nothing of the project.

What keeps this safe:

* ``<key>`` digests the Java binary (path, size, time), Spark's jars and the JVM options the archive
  was recorded with: another JDK, another Spark or other options look for another file. The JVM
  itself also checks an archive against its own build and class path and ignores one that does not
  match (``-Xshare:auto``, the default), silently (``-Xlog:cds=off``).
* The archive is written under a temporary name by a JVM that has exited, then checked by starting
  a driver on it and counting the classes it loaded from it, and only then renamed into place,
  its length noted beside it (``<archive>.size``).
* HotSpot maps an archive without checking its length (a file cut short crashes the JVM as it
  starts, with SIGBUS): a session maps it only while its length is the one noted, else removes it;
  and a session that does not start with it all the same removes it and starts again without it.
* ``WORKBENCH_CLASS_ARCHIVE=0`` turns it off; settings that name ``spark.driver.extraJavaOptions``
  themselves get exactly what they name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: Environment variable: ``0`` keeps sessions off the archive and ``workbench compile`` from recording one.
ENV = "WORKBENCH_CLASS_ARCHIVE"
#: The driver's JVM options, with and without the archive (the archive is recorded with these).
DRIVER_OPTIONS = "-XX:+UseSerialGC -Duser.timezone=UTC"
#: Options that keep the JVM quiet about an archive it cannot use (it then runs without it).
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
#: Fewest classes a checked archive must have given the driver, else it is not kept.
MIN_SHARED_CLASSES = 1000


def enabled() -> bool:
    """Whether sessions may use the archive (``$WORKBENCH_CLASS_ARCHIVE`` is not ``0``)."""
    return os.environ.get(ENV, "1").strip() != "0"


def _java() -> Path | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the first on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else None
    if found is None or not found.exists():
        which = shutil.which("java")
        found = Path(which) if which else None
    return found.resolve() if found is not None else None


def _spark_jars() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    return jars if jars.is_dir() else None


def cache_dir() -> Path:
    """The workbench's cache directory: ``$KAFKA_WORKBENCH_CACHE``, else ``~/.cache/kafka-workbench``."""
    return Path(os.environ.get("KAFKA_WORKBENCH_CACHE") or Path.home() / ".cache" / "kafka-workbench").expanduser()


def archive_path() -> Path | None:
    """Where the archive for this JDK, this Spark and :data:`DRIVER_OPTIONS` is kept (None: no Java or Spark found)."""
    java, jars = _java(), _spark_jars()
    if java is None or jars is None:
        return None
    h = hashlib.sha256()
    st = java.stat()
    h.update(f"{java}\0{st.st_size}\0{st.st_mtime_ns}\0{DRIVER_OPTIONS}\0{jars}\0".encode())
    for jar in sorted(jars.iterdir()):
        h.update(f"{jar.name}\0{jar.stat().st_size}\0".encode())
    return cache_dir() / "jvm" / f"driver-{h.hexdigest()[:16]}.jsa"


def session_options() -> tuple[str, Path | None]:
    """The driver's JVM options for a new session, and the archive they map (None when there is none)."""
    path = archive_path() if enabled() else None
    if path is None or not path.is_file():
        return DRIVER_OPTIONS, None
    if path.stat().st_size != _recorded_size(path):
        discard(path)  # cut short (HotSpot maps it without checking its length: SIGBUS) or rewritten
        return DRIVER_OPTIONS, None
    return f"{DRIVER_OPTIONS} -XX:SharedArchiveFile={path} {_QUIET}", path


def _size_file(path: Path) -> Path:
    return path.with_name(path.name + ".size")


def _recorded_size(path: Path) -> int | None:
    """The archive's length when it was checked and installed (``<archive>.size``)."""
    try:
        return int(_size_file(path).read_text().strip())
    except (OSError, ValueError):
        return None


def discard(path: Path) -> None:
    """Remove an archive a JVM could not start with, or that is not as it was installed."""
    path.unlink(missing_ok=True)
    _size_file(path).unlink(missing_ok=True)


def shared_classes(archive: Path, *, timeout: float = 300.0) -> int:
    """How many classes a new driver JVM loads from ``archive`` (a session started in a child process).

    Raises
    ------
    RuntimeError
        The child session did not start or did not finish.
    """
    with tempfile.TemporaryDirectory(prefix="workbench-cds-") as tmp:
        classes = Path(tmp) / "classes.log"
        options = f"{DRIVER_OPTIONS} -XX:SharedArchiveFile={archive} {_QUIET} -Xlog:class+load=info:file={classes}"
        code = ("import sys; from workbench.session import session; "
                "spark = session('local[1]', conf={'spark.driver.extraJavaOptions': sys.argv[1]}); "
                "assert spark.range(3).count() == 3; spark.stop()")
        env = dict(os.environ, **{ENV: "0"})
        done = subprocess.run([sys.executable, "-c", code, options], env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"a session did not start on {archive}: {done.stderr.strip()[-2000:]}")
        if not classes.exists():
            return 0
        # class+load lines name each class's source; the dynamic archive is "shared objects file (top)"
        with classes.open(errors="replace") as lines:
            return sum(1 for line in lines if "source: shared objects file (top)" in line)


def recording_options(partial: Path) -> str:
    """The driver's JVM options that write the classes it loaded to ``partial`` as it exits."""
    return f"{DRIVER_OPTIONS} -XX:ArchiveClassesAtExit={partial} {_QUIET}"


def install(partial: Path, target: Path) -> None:
    """Put a checked archive in place, its length noted beside it."""
    _size_file(target).write_text(f"{partial.stat().st_size}\n")
    partial.replace(target)
