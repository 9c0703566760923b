"""A Spark standalone cluster whose workers share no disk with the driver, reading a bundle from object storage.

A master and two workers on 127.0.0.1; each worker runs in a mount namespace of its own with a tmpfs
over the tests' base temporary directory, which holds its work, local and temporary directories: the
driver's files there (the bundle's copy, its scratch and local directories) are invisible to every
executor, and the executors' to the driver. The demo
bundle (real Kafka's files, all five areas) lies only in a real S3-compatible server (s3proxy,
:mod:`peer.s3proxy`); the driver opens it by URL and the executors read its files from there with the
credentials the driver's environment gives (``workbench.spark.registry.pass_storage_environment``).
Every table that reads the bundle's files, and the ISR area's findings (every area's in ``make
test-full``), equal the local session's.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import time

import pandas as pd
import pytest

import workbench
from peer.cluster import free_ports
from tests.spark.test_standalone_cluster import spark_class, start_master, stop, wait_for_port
from tests.test_bundle_s3 import without_root

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

PREFIX = "clusters/demo"

#: The driver: a session on the cluster, the bundle by URL, every file-reading table and every area's
#: findings pickled for the test; and where each table's rows were computed (the executors' hosts).
DRIVER = """
import pickle, sys
import workbench
from workbench.analysis.findings import areas, check_findings
from workbench.spark.registry import table_specs
# the two workers stand for two hosts on one address: Spark would read a same-host executor's shuffle and
# cached blocks from its directories by path, which no second host offers; over the network instead
spark = workbench.session(sys.argv[1], driver_memory="768m", conf={
    "spark.executor.memory": "768m", "spark.cores.max": "2", "spark.sql.shuffle.partitions": "4",
    "spark.shuffle.readHostLocalDisk": "false"})
bundle = workbench.open_bundle(sys.argv[2])
tables = workbench.load(bundle, spark)
names = sorted(n for n, s in table_specs().items()
               if s.kinds and (s.select(bundle) if s.select else bundle.of_kind(*s.kinds)))
out = {"tables": {n: tables[n].toPandas() for n in names}, "problems": tables.problems.toPandas()}
wanted = sys.argv[4].split(",") if sys.argv[4] else list(areas())
out["findings"] = {name: check_findings(areas()[name].findings_for(tables, {}), name).toPandas() for name in wanted}
status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
out["executors"] = status.size()
with open(sys.argv[3], "wb") as f:
    pickle.dump(out, f)
spark.stop()
"""


@pytest.mark.parametrize("checked", [
    # make test: the ISR area (its replay runs in the executors' Python workers), make test-full: all five
    "isr", pytest.param("", marks=pytest.mark.full, id="every-area")])
def test_every_table_and_finding_on_two_workers_without_a_shared_disk_equals_the_local_run(
        spark, s3_server, demo_bundle, tmp_path, tmp_path_factory, checked):
    import s3fs

    from workbench.analysis.findings import areas, check_findings
    from workbench.spark.registry import table_specs

    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to give each worker a /tmp of its own")
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3_server.storage_options())
    fs.call_s3("create_bucket", Bucket=PREFIX.split("/")[0])
    fs.put(str(demo_bundle), PREFIX, recursive=True)
    url = f"s3://{PREFIX}"
    storage = {"AWS_ACCESS_KEY_ID": s3_server.key, "AWS_SECRET_ACCESS_KEY": s3_server.secret,
               "AWS_ENDPOINT_URL": s3_server.endpoint_url, "AWS_DEFAULT_REGION": "us-east-1"}
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env = dict(base, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_NO_DAEMONIZE="1", SPARK_LOG_DIR=str(tmp_path / "logs"))
    logs = tmp_path / "logs"
    logs.mkdir()
    port, ui, *worker_ports = free_ports(6)
    procs: list[subprocess.Popen] = []
    result = tmp_path / "cluster.pickle"
    try:
        procs.append(start_master(port, ui, env, logs))
        # every file of this session's tests (the demo bundle's copy, the driver's scratch and local
        # directories below) lies under the base temporary directory: each worker mounts a tmpfs of its
        # own there, holding its own directories, so neither side sees the other's files
        hidden = tmp_path_factory.getbasetemp()
        for i in range(2):
            wport, wui = worker_ports[2 * i], worker_ports[2 * i + 1]
            mine = hidden / "worker"
            own = dict(env, HOME=str(mine / "home"), SPARK_WORKER_DIR=str(mine / "work"),
                       SPARK_LOCAL_DIRS=str(mine / "local"), TMPDIR=str(mine / "tmp"))
            command = (f"mount -t tmpfs -o size=2g tmpfs {hidden} && "
                       f"mkdir -p {mine}/home {mine}/work {mine}/local {mine}/tmp && "
                       f"exec {spark_class()} org.apache.spark.deploy.worker.Worker spark://127.0.0.1:{port} "
                       f"--host 127.0.0.1 --port {wport} --webui-port {wui} --cores 1 --memory 1g")
            worker = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", command],
                                      env=own, start_new_session=True, stdout=open(logs / f"worker-{i}.out", "w"),
                                      stderr=subprocess.STDOUT)
            procs.append(worker)
            wait_for_port(wport, worker, time.monotonic() + 90)
        done = subprocess.run([sys.executable, "-c", DRIVER, f"spark://127.0.0.1:{port}", url, str(result), checked],
                              env=dict(env, WORKBENCH_SCRATCH=str(tmp_path / "scratch"),
                                       SPARK_LOCAL_DIRS=str(tmp_path / "driver-local"), **storage),
                              capture_output=True, text=True, timeout=900)
        (logs / "driver.err").write_text(done.stderr)
        assert done.returncode == 0, "\n".join(line for line in done.stderr.splitlines()
                                               if not line.startswith("\tat ") and line.strip())[-6000:]
    finally:
        for proc in reversed(procs):
            stop(proc)
    with open(result, "rb") as f:
        cluster = pickle.load(f)
    assert cluster["executors"] >= 3          # the driver and both workers' executors

    bundle = workbench.open_bundle(demo_bundle)
    local = workbench.load(bundle, spark)
    names = sorted(n for n, s in table_specs().items() if s.kinds and (
        s.select(bundle) if s.select else bundle.of_kind(*s.kinds)))
    assert sorted(cluster["tables"]) == names and "records" in names
    here = str(demo_bundle.resolve())
    for name in names:
        pd.testing.assert_frame_equal(without_root(cluster["tables"][name], url), without_root(local[name], here),
                                      obj=name)
    pd.testing.assert_frame_equal(without_root(cluster["problems"], url), without_root(local.problems, here))
    wanted = checked.split(",") if checked else sorted(areas())
    assert sorted(cluster["findings"]) == sorted(wanted)
    for name in wanted:
        mine = check_findings(areas()[name].findings_for(local, {}), name).toPandas()
        pd.testing.assert_frame_equal(without_root(cluster["findings"][name], url), without_root(mine, here),
                                      obj=name)
    assert all(len(f) for f in cluster["findings"].values()), {n: len(f) for n, f in cluster["findings"].items()}
