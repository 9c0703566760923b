"""The driver JVM's compilation follows the input: C1 alone for a small bundle, tiered for a large one;
expressions interpreted up to a larger size, generated code above it.

Each check opens a bundle in a child process, as a report's kernel does (``open_investigation``
starts the session), and reads the options the driver JVM was started with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.session import (
    INTERPRETED_INPUT_BYTES,
    JAVA_OPTIONS_ENV,
    SMALL_INPUT_BYTES,
    SMALL_INPUT_OPTIONS,
    input_size,
)

_OPEN = """
import json, sys
from workbench.investigation import open_investigation
inv = open_investigation(sys.argv[1])
args = list(inv.spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
conf = {k: inv.spark.conf.get(k) for k in ("spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode")}
print(json.dumps({"files": len(inv.bundle.artifacts), "jvm_args": args, "conf": conf}))
inv.spark.stop()
"""


def _opened(bundle: Path, **env: str) -> dict:
    full = {k: v for k, v in os.environ.items() if k != JAVA_OPTIONS_ENV}
    full.update(env)
    done = subprocess.run([sys.executable, "-c", _OPEN, str(bundle)], env=full, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _jvm_args(bundle: Path, **env: str) -> list[str]:
    return _opened(bundle, **env)["jvm_args"]


def _sparse(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)  # sparse: its size without its blocks
    return path


def test_input_size_counts_files_up_to_its_limit(tmp_path: Path) -> None:
    _sparse(tmp_path / "a" / "one.log", 1000)
    _sparse(tmp_path / "a" / "b" / "two.log", 24)
    assert input_size(tmp_path / "a") == 1024
    assert input_size(tmp_path / "a" / "one.log") == 1000
    assert input_size(tmp_path / "a", limit=500) in (1000, 1024)  # stops at the first file past the limit
    assert input_size(tmp_path / "missing") is None and input_size("s3://bucket/bundle/") is None


@pytest.mark.kernel
def test_a_small_bundle_runs_c1_a_large_one_tiered_and_the_operator_decides_over_both(tmp_path: Path) -> None:
    from tests.incident import write_incident_bundle

    interpreted = {"spark.sql.codegen.wholeStage": "false", "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    small = write_incident_bundle(tmp_path / "small")
    opened = _opened(small)
    assert set(SMALL_INPUT_OPTIONS.split()) <= set(opened["jvm_args"]) and opened["conf"] == interpreted
    large = tmp_path / "large"
    _sparse(large / "heap.hprof", SMALL_INPUT_BYTES + 1)
    opened = _opened(large)
    assert not [a for a in opened["jvm_args"] if a.startswith(("-XX:TieredStopAtLevel", "-XX:ReservedCodeCacheSize"))]
    assert opened["conf"] == interpreted
    larger = tmp_path / "larger"
    _sparse(larger / "heap.hprof", INTERPRETED_INPUT_BYTES + 1)
    generated = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
    assert _opened(larger)["conf"] == generated
    mine = "-XX:TieredStopAtLevel=3"
    chosen = _jvm_args(small, **{JAVA_OPTIONS_ENV: mine})
    assert mine in chosen and "-XX:TieredStopAtLevel=1" not in chosen
