"""The driver JVM's class archive (workbench.classarchive): recorded, checked, mapped, and dropped when broken.

Every session here runs in a child process with its own empty cache: the test process's own session
(tests/conftest.py names its driver options, so it never maps an archive) is not touched.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import classarchive

#: A child session through workbench.session(): what the driver ran with, whether it answered.
_SESSION = """
import json, workbench
spark = workbench.session("local[1]")
args = list(spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
print(json.dumps({"count": spark.range(5).count(), "jvm_args": args}))
spark.stop()
"""

_RECORD = """
from workbench.kernels import record_class_archive
print(record_class_archive(lambda spark: spark.range(1000).selectExpr("sum(id)").collect(), report=print))
"""


def _child(code: str, cache: Path, **env: str) -> subprocess.CompletedProcess:
    """``code`` in a child Python with ``cache`` as its cache and working directory (a JVM's crash log lands there)."""
    full = {k: v for k, v in os.environ.items() if k != classarchive.ENV}
    full.update(KAFKA_WORKBENCH_CACHE=str(cache), **env)
    return subprocess.run([sys.executable, "-c", code], env=full, cwd=cache, capture_output=True, text=True,
                          timeout=600, check=False)


def _session(cache: Path, **env: str) -> dict:
    done = _child(_SESSION, cache, **env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """A cache in which a child process recorded an archive; the archive's bytes."""
    cache = tmp_path_factory.mktemp("cds-cache")
    done = _child(_RECORD, cache)
    assert done.returncode == 0, done.stderr[-3000:]
    archives = sorted((cache / "jvm").glob("driver-*.jsa"))
    assert len(archives) == 1, (done.stdout, done.stderr[-3000:])
    assert archives[0].with_name(archives[0].name + ".size").read_text() == f"{archives[0].stat().st_size}\n"
    assert done.stdout.strip().splitlines()[-1] == str(archives[0])
    # kept only after a driver started on it loaded thousands of classes from it
    checked = re.search(r"class archive: .* MiB, (\d+) classes\)", done.stdout)
    assert checked and int(checked[1]) >= classarchive.MIN_SHARED_CLASSES, done.stdout
    assert not list((cache / "jvm").glob(".*partial")), "the recording's temporary file is left"
    return cache, archives[0].read_bytes()


def _install(cache: Path, data: bytes, tmp: Path, noted: int | None = None) -> Path:
    """A copy of the recorded cache holding ``data`` as its archive, noted as ``noted`` bytes (default: its length)."""
    target = tmp / "cache"
    (target / "jvm").mkdir(parents=True)
    name = next((cache / "jvm").glob("driver-*.jsa")).name
    (target / "jvm" / name).write_bytes(data)
    (target / "jvm" / f"{name}.size").write_text(f"{len(data) if noted is None else noted}\n")
    return target / "jvm" / name


@pytest.mark.kernel
def test_session_maps_the_archive(recorded: tuple[Path, bytes]) -> None:
    cache, _ = recorded
    archive = next((cache / "jvm").glob("driver-*.jsa"))
    seen = _session(cache)
    assert seen["count"] == 5
    assert f"-XX:SharedArchiveFile={archive}" in seen["jvm_args"]
    # with options of the operator's own (the suite's report kernels run C1 alone), still mapped
    from workbench.session import JAVA_OPTIONS_ENV

    options = ["-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=1g"]
    seen = _session(cache, **{JAVA_OPTIONS_ENV: " ".join(options)})
    assert seen["count"] == 5
    assert f"-XX:SharedArchiveFile={archive}" in seen["jvm_args"] and set(options) <= set(seen["jvm_args"])


@pytest.mark.kernel
def test_turned_off_session_runs_without(recorded: tuple[Path, bytes]) -> None:
    cache, _ = recorded
    seen = _session(cache, **{classarchive.ENV: "0"})
    assert seen["count"] == 5
    assert not [a for a in seen["jvm_args"] if "SharedArchiveFile" in a]
    assert list((cache / "jvm").glob("driver-*.jsa")), "turning it off does not remove it"


@pytest.mark.kernel
def test_archive_cut_short_is_removed_unmapped(recorded: tuple[Path, bytes], tmp_path: Path) -> None:
    cache, data = recorded
    archive = _install(cache, data[: len(data) // 2], tmp_path, noted=len(data))
    seen = _session(archive.parent.parent)
    assert seen["count"] == 5
    assert not [a for a in seen["jvm_args"] if "SharedArchiveFile" in a]
    assert not archive.exists() and not archive.with_name(archive.name + ".size").exists()
    assert not list(archive.parent.parent.glob("hs_err*")), "the JVM was started on it"


@pytest.mark.kernel
def test_archive_jvm_cannot_start_with_is_removed_and_session_starts_without(
        recorded: tuple[Path, bytes], tmp_path: Path) -> None:
    cache, data = recorded
    # its noted length agrees, so the JVM is started on it: HotSpot dies mapping it (SIGBUS)
    archive = _install(cache, data[: len(data) // 2], tmp_path)
    seen = _session(archive.parent.parent)
    assert seen["count"] == 5
    assert not [a for a in seen["jvm_args"] if "SharedArchiveFile" in a]
    assert not archive.exists()


@pytest.mark.kernel
def test_archive_of_garbage_is_ignored_by_the_jvm(recorded: tuple[Path, bytes], tmp_path: Path) -> None:
    cache, data = recorded
    archive = _install(cache, os.urandom(len(data)), tmp_path)
    seen = _session(archive.parent.parent)
    assert seen["count"] == 5


@pytest.mark.kernel
def test_nothing_recorded_when_turned_off(tmp_path: Path) -> None:
    done = _child(_RECORD, tmp_path, **{classarchive.ENV: "0"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "None"
    assert not list(tmp_path.rglob("*.jsa"))


def test_options_follow_the_cache_and_the_switch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKA_WORKBENCH_CACHE", str(tmp_path))
    options, archive = classarchive.session_options()
    assert (options, archive) == (classarchive.DRIVER_OPTIONS, None)  # nothing recorded in this cache
    path = classarchive.archive_path()
    assert path is not None and path.parent == tmp_path / "jvm"
    path.parent.mkdir()
    path.write_bytes(b"x")
    path.with_name(path.name + ".size").write_text("1\n")
    options, archive = classarchive.session_options()
    assert archive == path and f"-XX:SharedArchiveFile={path}" in options
    path.write_bytes(b"xy")  # not the length noted when it was installed: removed, not mapped
    assert classarchive.session_options() == (classarchive.DRIVER_OPTIONS, None)
    assert not path.exists()
    path.write_bytes(b"x")
    path.with_name(path.name + ".size").write_text("1\n")
    monkeypatch.setenv(classarchive.ENV, "0")
    assert classarchive.session_options() == (classarchive.DRIVER_OPTIONS, None)
