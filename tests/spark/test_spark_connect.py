"""The same tables and findings through Spark Connect (``SPARK_REMOTE``) as in a classic session.

A Spark Connect server (pyspark's own, ``SparkConnectServer``) is started on 127.0.0.1; a child
driver with ``SPARK_REMOTE=sc://127.0.0.1:<port>`` opens a bundle through ``workbench.session()``
(the data sources are registered with the server, their readers run in its Python workers) and
pickles what it computed. ``make test`` checks a small KRaft bundle's metadata table and ISR states;
``make test-full`` the demo bundle (real Kafka's files, all five areas): every file-reading table, the
problems and every area's findings equal the local session's, whole DataFrames compared.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import workbench
from peer.cluster import free_ports
from tests.spark.test_metadata_source import write_node
from tests.spark.test_standalone_cluster import spark_class, stop, wait_for_port

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

#: The child driver: a Connect session (SPARK_REMOTE), the bundle, the chosen tables and areas pickled.
DRIVER = """
import pickle, sys
import workbench
from workbench.analysis import isr
from workbench.analysis.findings import areas, check_findings
from workbench.spark.registry import table_specs
spark = workbench.session()
assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
bundle = workbench.open_bundle(sys.argv[1])
tables = workbench.load(bundle, spark)
names = sorted(n for n, s in table_specs().items()
               if s.kinds and (s.select(bundle) if s.select else bundle.of_kind(*s.kinds)))
out = {"tables": {n: tables[n].toPandas() for n in names}, "problems": tables.problems.toPandas()}
if sys.argv[3] == "states":
    from workbench.analysis.mirror.flows import _valid_regex
    out["states"] = isr.partition_states(tables.metadata).toPandas()
    # MirrorMaker 2's group filter is a Java regex, checked by the server's Java (no JVM in this process)
    out["regex"] = [_valid_regex(r, spark) for r in ("bill.*|app", "bill[", r"\\p{Lu}x", r"(?<name>a)\\k<name>")]
else:
    out["findings"] = {name: check_findings(area.findings_for(tables, {}), name).toPandas()
                       for name, area in areas().items()}
with open(sys.argv[2], "wb") as f:
    pickle.dump(out, f)
spark.stop()
"""


def connect_server(port: int, env: dict[str, str], logs: Path) -> subprocess.Popen:
    """pyspark's Spark Connect server on 127.0.0.1:``port`` (local[2]), answering."""
    import pyspark

    jar = next((Path(pyspark.__file__).parent / "jars").glob("spark-connect_*.jar"))
    server = subprocess.Popen(
        [str(Path(spark_class()).with_name("spark-submit")), "--master", "local[2]", "--driver-memory", "1g",
         "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.ui.enabled=false", "--conf", f"spark.pyspark.python={sys.executable}", str(jar)],
        env=env, start_new_session=True, stdout=open(logs / "connect.out", "w"), stderr=subprocess.STDOUT)
    wait_for_port(port, server, time.monotonic() + 120)
    return server


def run_on_connect(bundle: Path, what: str, tmp_path: Path) -> dict:
    """Start a Connect server, run :data:`DRIVER` against it on ``bundle``, stop it; what the driver pickled."""
    logs = tmp_path / "logs"
    logs.mkdir()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    env.pop("SPARK_REMOTE", None)
    (port,) = free_ports(1)
    result = tmp_path / "connect.pickle"
    server = connect_server(port, env, logs)
    try:
        done = subprocess.run([sys.executable, "-c", DRIVER, str(bundle), str(result), what],
                              env=dict(env, SPARK_REMOTE=f"sc://127.0.0.1:{port}"), capture_output=True, text=True,
                              timeout=1500)
        (logs / "driver.err").write_text(done.stderr)
        assert done.returncode == 0, "\n".join(line for line in done.stderr.splitlines()
                                               if not line.startswith("\tat ") and line.strip())[-6000:]
    finally:
        stop(server)
    with open(result, "rb") as f:
        return pickle.load(f)


def assert_tables_equal(remote: dict, bundle_path: Path, spark) -> workbench.Tables:
    """Every file-reading table and the problems of ``remote`` equal a local session's; the local tables."""
    from workbench.spark.registry import table_specs

    bundle = workbench.open_bundle(bundle_path)
    local = workbench.load(bundle, spark)
    names = sorted(n for n, s in table_specs().items() if s.kinds and (
        s.select(bundle) if s.select else bundle.of_kind(*s.kinds)))
    assert sorted(remote["tables"]) == names and names
    for name in names:
        pd.testing.assert_frame_equal(remote["tables"][name], local[name].toPandas(), obj=name)
    pd.testing.assert_frame_equal(remote["problems"], local.problems.toPandas())
    return local


def test_a_kraft_bundles_tables_and_isr_states_through_spark_connect_equal_the_local_sessions(spark, tmp_path):
    from workbench.analysis import isr

    bundle = tmp_path / "bundle"
    write_node(bundle, 1)
    write_node(bundle, 2)
    remote = run_on_connect(bundle, "states", tmp_path)
    local = assert_tables_equal(remote, bundle, spark)
    assert len(remote["tables"]["metadata"])
    pd.testing.assert_frame_equal(remote["states"], isr.partition_states(local.metadata).toPandas())
    assert remote["regex"] == [True, False, True, True]


@pytest.mark.full
def test_every_table_and_finding_of_the_demo_bundle_through_spark_connect_equals_the_local_sessions(
        spark, demo_bundle, tmp_path):
    from workbench.analysis.findings import areas, check_findings

    remote = run_on_connect(demo_bundle, "findings", tmp_path)
    local = assert_tables_equal(remote, demo_bundle, spark)
    assert sorted(remote["findings"]) == sorted(areas())
    for name, area in areas().items():
        mine = check_findings(area.findings_for(local, {}), name).toPandas()
        pd.testing.assert_frame_equal(remote["findings"][name], mine, obj=name)
    assert sum(len(f) for f in remote["findings"].values()) > 20
