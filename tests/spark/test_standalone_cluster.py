"""The same load and analysis on a real Spark standalone cluster (master + worker on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from peer.cluster import free_ports
from tests.spark.test_metadata_source import write_node

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

SCRIPT = """
import json, sys
import workbench
from workbench.analysis import isr
spark = workbench.session(sys.argv[1], driver_memory="512m", conf={"spark.executor.memory": "512m",
                          "spark.cores.max": "1", "spark.sql.shuffle.partitions": "2"})
master = spark.sparkContext.master
tables = workbench.load(workbench.open_bundle(sys.argv[2]), spark)
states = isr.partition_states(tables.metadata)
rows = [r.asDict() for r in states.orderBy("topic", "partition", "start").collect()]
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
# the same through Parquet written by the executor's Python tasks: the log, then the replay
kept = workbench.load(workbench.open_bundle(sys.argv[2]), spark, materialize_bytes=0)
kept_states = isr.partition_states(kept.metadata, materialize_records=0)
same = sorted(map(str, kept_states.collect())) == sorted(map(str, states.collect()))
print(json.dumps({"master": master, "executors": executors, "records": tables.metadata.count(),
                  "states": rows, "kept_same": same, "kept_files": len(kept_states.inputFiles()),
                  "kept_records": kept.metadata.count()}, default=str))
spark.stop()
"""



def spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def wait_for_port(port: int, proc: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"port {port} did not open in time")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(15)


def start_master(port: int, ui: int, env: dict[str, str], logs: Path) -> subprocess.Popen:
    """A standalone master on 127.0.0.1:``port``, answering; its output in ``logs/master.out``."""
    master = subprocess.Popen(
        [spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(ui)], env=env, start_new_session=True,
        stdout=open(logs / "master.out", "w"), stderr=subprocess.STDOUT)
    wait_for_port(port, master, time.monotonic() + 90)
    return master


def test_isr_analysis_on_a_standalone_cluster(tmp_path):
    write_node(tmp_path / "bundle", 1)
    write_node(tmp_path / "bundle", 2)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOG_DIR=str(tmp_path / "logs"),
               SPARK_WORKER_DIR=str(tmp_path / "work"), SPARK_NO_DAEMONIZE="1")
    port, ui, wport, wui = free_ports(4)
    logs = tmp_path / "logs"
    logs.mkdir()
    procs: list[subprocess.Popen] = []
    try:
        procs.append(start_master(port, ui, env, logs))
        worker = subprocess.Popen(
            [spark_class(), "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}", "--host",
             "127.0.0.1", "--port", str(wport), "--webui-port", str(wui), "--cores", "1", "--memory", "1g"],
            env=env, start_new_session=True, stdout=open(logs / "worker.out", "w"), stderr=subprocess.STDOUT)
        procs.append(worker)
        wait_for_port(wport, worker, time.monotonic() + 90)
        res = subprocess.run([sys.executable, "-c", SCRIPT, f"spark://127.0.0.1:{port}", str(tmp_path / "bundle")],
                             env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        out = json.loads(res.stdout.strip().splitlines()[-1])
    finally:
        for proc in reversed(procs):
            stop(proc)
    assert out["master"] == f"spark://127.0.0.1:{port}"
    assert out["executors"] >= 2          # the driver and the worker's executor
    assert out["records"] == out["kept_records"] == 2 * 12
    assert out["kept_same"] and out["kept_files"] >= 1
    assert [(s["topic"], s["isr"], s["state"], s["end_reason"]) for s in out["states"]] == [
        ("orders", [1, 2, 3], "healthy", "next_change"),
        ("orders", [1, 3], "under_replicated", "log_end"),
    ]
    for proc in procs:
        assert proc.poll() is not None
