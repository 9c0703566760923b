"""Kafka's own ``kafka-dump-log`` (``DumpLogSegments``), many runs in one JVM.

A JVM start costs about a second; comparing every file of every scenario bundle under every
flag combination would take thousands. :func:`run_dump_log` hands all runs of one Kafka release
to ``DumpRuns.java`` (Java's source launcher, on the release's classpath), which calls the tool's
``main`` once per run and keeps each run's stdout bytes and the exception that ended it, if any.
:func:`check_driver` compares the driver with the tool run as its own process.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DRIVER = Path(__file__).with_name("DumpRuns.java")


@dataclass(frozen=True)
class KafkaRun:
    """What one run of Kafka's tool printed (``stdout`` as UTF-8 text) and how it ended."""

    args: tuple[str, ...]
    stdout: str
    failure: str  # "" when main returned


def run_dump_log(version: str, runs: Sequence[Sequence[str]], *, timeout: float = 900.0) -> list[KafkaRun]:
    """Run ``kafka-dump-log`` of Kafka ``version`` once per argument list, all in one JVM."""
    from peer.kafka import fetch

    kafka = fetch(version)
    with tempfile.TemporaryDirectory(prefix="dump-runs-") as tmp:
        spec = Path(tmp) / "spec.txt"
        lines = []
        for i, args in enumerate(runs):
            for a in args:
                if "\n" in a:
                    raise ValueError(f"an argument with a line break: {a!r}")
            lines += [f"RUN {tmp}/{i}.out {tmp}/{i}.err", *args, "END"]
        spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
        cmd = kafka.java(str(DRIVER), [kafka.tool_class("dump-log"), str(spec)], heap="512m")
        done = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"DumpRuns failed ({done.returncode}):\n{done.stderr.decode('utf-8', 'replace')[-3000:]}"
            )
        return [
            KafkaRun(
                tuple(args),
                (Path(tmp) / f"{i}.out").read_bytes().decode("utf-8", "surrogateescape"),
                (Path(tmp) / f"{i}.err").read_text(encoding="utf-8"),
            )
            for i, args in enumerate(runs)
        ]


def check_driver(version: str, args: Sequence[str]) -> tuple[str, str]:
    """``(stdout of the tool as its own process, stdout of the same run in the driver)``."""
    from peer.kafka import fetch

    own = fetch(version).run_tool("dump-log", list(args), timeout=180, check=False, heap="256m").stdout
    return own, run_dump_log(version, [args])[0].stdout
