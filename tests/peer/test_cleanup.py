"""No JVM outlives the run that started it, even when the test using the cluster fails.

A child pytest run starts a real cluster through the ``kafka_cluster`` fixture and fails on
purpose; every process group it spawned is recorded through ``KAFKA_PEER_PID_FILE``. After it
exits, none of those groups may have a live process. The same holds for a harness that is
terminated (SIGTERM handler) or killed outright (parent-death signal) while a node runs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from peer.process import PID_FILE_ENV

pytestmark = pytest.mark.kafka

REPO = Path(__file__).resolve().parents[2]

FAILING_TEST = textwrap.dedent(
    """
    import os

    from peer.pytest_plugin import kafka_cluster, kafka_dist  # noqa: F401


    def test_fails_with_cluster_running(kafka_cluster):
        cluster = kafka_cluster("doomed", controllers=1, brokers=1, jmx=False)
        assert all(node.alive() for node in cluster.nodes)
        with open(os.environ["PEER_TEST_READY"], "w") as fh:
            fh.write(cluster.bootstrap)
        raise AssertionError("failing on purpose with the cluster running")
    """
)

HANGING_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from peer.cluster import Cluster
    from peer.kafka import fetch

    cluster = Cluster(fetch(), Path(sys.argv[1]), "orphan", controllers=1, brokers=0,
                      combined=True, jmx=False)
    cluster.start()
    Path(os.environ["PEER_TEST_READY"]).write_text(cluster.bootstrap)
    time.sleep(600)
    """
)


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is alive (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) succeeds for zombies too: look at the states.
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            return True
    return False


def recorded_groups(pid_file: Path) -> list[int]:
    return [int(x) for x in pid_file.read_text().split()] if pid_file.exists() else []


def child_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env[PID_FILE_ENV] = str(tmp_path / "pids.txt")
    env["PEER_TEST_READY"] = str(tmp_path / "ready.txt")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def test_failing_test_leaves_no_jvm(kafka_dist, tmp_path: Path) -> None:
    kafka_dist()
    test_file = tmp_path / "test_doomed.py"
    test_file.write_text(FAILING_TEST, encoding="utf-8")
    env = child_env(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(tmp_path), str(test_file)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "failing on purpose" in done.stdout
    assert (tmp_path / "ready.txt").exists(), "the cluster never started"
    groups = recorded_groups(tmp_path / "pids.txt")
    assert len(groups) >= 2, groups  # the storage formats and the two nodes at least
    assert [g for g in groups if group_alive(g)] == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killed_runner_leaves_no_jvm(kafka_dist, tmp_path: Path, sig: signal.Signals) -> None:
    if sig == signal.SIGKILL and shutil.which("setpriv") is None:
        pytest.skip("no setpriv: a SIGKILLed harness cannot take its children along")
    kafka_dist()
    script = tmp_path / "orphan.py"
    script.write_text(HANGING_SCRIPT, encoding="utf-8")
    env = child_env(tmp_path)
    runner = subprocess.Popen([sys.executable, str(script), str(tmp_path / "c")], env=env,
                              cwd=tmp_path, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (tmp_path / "ready.txt").exists():
            assert runner.poll() is None, "runner died before the cluster was ready"
            assert time.monotonic() < deadline, "cluster not ready in 180 s"
            time.sleep(0.5)
        runner.send_signal(sig)
        runner.wait(60)
        deadline = time.monotonic() + 30
        groups = recorded_groups(tmp_path / "pids.txt")
        while any(group_alive(g) for g in groups) and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait(10)
    groups = recorded_groups(tmp_path / "pids.txt")
    assert groups
    assert [g for g in groups if group_alive(g)] == []
