"""The ``metrics`` table's node of a Prometheus server export's rows, by their ``instance`` label:
the operator's mapping file, else a single node's listener host, else the file's node and a problem."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from workbench.spark.metrics import METRICS_SCHEMA

pytestmark = pytest.mark.spark

NAME = "kafka_server_replicamanager_underminisrpartitioncount"
T0 = 1795290596.161
PROBLEMS = "node_id int, path string, position long, kind string, detail string"


def query_range(instances: dict[str, list[float]]) -> str:
    """A ``query_range`` answer: one series per instance, a sample per second from ``T0``."""
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": NAME, "instance": instance, "job": "kafka"},
         "values": [[T0 + i, str(v)] for i, v in enumerate(values)]}
        for instance, values in instances.items()]}})


def want_rows(path, nodes: dict[str, int], instances: dict[str, list[float]]) -> list[tuple]:
    return [(nodes[instance], str(path), "prometheus_json", NAME, NAME, None, None,
             {"instance": instance, "job": "kafka"}, datetime.fromtimestamp(T0 + i, UTC), float(v))
            for instance, values in instances.items() for i, v in enumerate(values)]


def properties(root, node: int, host: str, port: int) -> None:
    config = root / "nodes" / str(node) / "config"
    config.mkdir(parents=True)
    (config / "server.properties").write_text(
        f"node.id={node}\nprocess.roles=broker\nlisteners=PLAINTEXT://0.0.0.0:{port}\n"
        f"advertised.listeners=PLAINTEXT://{host}:{port}\n")


def load(spark, root):
    return workbench.load(workbench.open_bundle(root), spark)


def problems(tables):
    return tables.problems.drop("detail")


def test_operator_mapping_names_each_instance(spark, tmp_path):
    """Rule 1: ``metrics/instances.json``; the file itself is no export (no ``unknown_format``)."""
    series = {"127.0.0.1:43121": [0, 1, 2], "127.0.0.1:43122": [3, 3], "127.0.0.1:43123": [5]}
    mapping = {"127.0.0.1:43121": 4, "127.0.0.1:43122": 5, "127.0.0.1:43123": 6}
    (tmp_path / "metrics").mkdir()
    export = tmp_path / "metrics" / "prometheus-query_range.json"
    export.write_text(query_range(series))
    (tmp_path / "metrics" / "instances.json").write_text(json.dumps(mapping))
    tables = load(spark, tmp_path)
    assertDataFrameEqual(tables.metrics, spark.createDataFrame(want_rows(export, mapping, series), METRICS_SCHEMA))
    assert problems(tables).collect() == []
    kinds = {r.path: r.kind for r in tables.inventory.collect()}
    assert kinds["metrics/instances.json"] == "other" and kinds["metrics/prometheus-query_range.json"] == "metrics"


def test_yaml_mapping_and_listener_hosts(spark, tmp_path):
    """Rule 1 from YAML, rule 2 for the instances it leaves: a host one node's listeners name;
    a host several nodes share decides nothing (rule 3: the file's node and one problem)."""
    series = {"kafka-4.example:7071": [1, 0], "KAFKA-5.example:7071": [2], "10.0.0.9:7071": [7],
              "shared.example:7071": [8, 9], "shared.example:7072": [4]}
    for node, host in ((4, "kafka-4.example"), (5, "kafka-5.example"), (6, "10.0.0.6"),
                       (7, "shared.example"), (8, "shared.example")):
        properties(tmp_path, node, host, 9092)
    (tmp_path / "metrics").mkdir()
    export = tmp_path / "metrics" / "3-cluster.json"   # the file's own node: 3 (leading number)
    export.write_text(query_range(series))
    (tmp_path / "metrics" / "instances.yaml").write_text("'10.0.0.9:7071': 6\n")
    tables = load(spark, tmp_path)
    nodes = {"kafka-4.example:7071": 4, "KAFKA-5.example:7071": 5, "10.0.0.9:7071": 6,
             "shared.example:7071": 3, "shared.example:7072": 3}
    assertDataFrameEqual(tables.metrics, spark.createDataFrame(want_rows(export, nodes, series), METRICS_SCHEMA))
    got = tables.problems_of("metrics").toPandas()
    assert sorted(zip(got.node_id, got.path, got.position, got.kind, strict=True)) == [
        (3, str(export), 0, "unmapped_instance")] * 2
    assert sorted(d.split("'")[1] for d in got.detail) == ["shared.example:7071", "shared.example:7072"]
    assert all('metrics/instances.json: {"shared.example:707' in d for d in got.detail)


def test_unmapped_instances_keep_the_files_node_with_one_problem_each(spark, tmp_path):
    """Rule 3: no mapping, every node on one host: rows kept under the file's node, one problem per
    instance and file (not per row) where the file holds several; a file of one instance is that
    node's own export, no problem."""
    series = {"127.0.0.1:1": [0, 1, 2], "127.0.0.1:2": [3, 4]}
    for node, port in ((4, 9092), (5, 9093)):
        properties(tmp_path, node, "127.0.0.1", port)
    (tmp_path / "metrics").mkdir()
    first, second = tmp_path / "metrics" / "a.json", tmp_path / "metrics" / "b.json"
    first.write_text(query_range(series))
    second.write_text(query_range({"127.0.0.1:1": [9]}))
    tables = load(spark, tmp_path)
    want = (want_rows(first, {"127.0.0.1:1": -1, "127.0.0.1:2": -1}, series)
            + want_rows(second, {"127.0.0.1:1": -1}, {"127.0.0.1:1": [9]}))
    assertDataFrameEqual(tables.metrics, spark.createDataFrame(want, METRICS_SCHEMA))
    assertDataFrameEqual(problems(tables), spark.createDataFrame(
        [(-1, str(first), 0, "unmapped_instance"), (-1, str(first), 0, "unmapped_instance")],
        "node_id int, path string, position long, kind string"))


def test_bad_mapping_entries_are_problems(spark, tmp_path):
    """A bad entry is a ``bad_value`` and maps nothing (its instance is then unmapped); the good
    ones still map; a mapping file that does not parse is a ``decode_error``."""
    series = {"127.0.0.1:1": [1], "127.0.0.1:2": [2], "127.0.0.1:3": [3], "127.0.0.1:4": [4]}
    (tmp_path / "metrics").mkdir()
    export = tmp_path / "metrics" / "prometheus-query_range.json"
    export.write_text(query_range(series))
    mapping = tmp_path / "metrics" / "instances.json"
    mapping.write_text(json.dumps({"127.0.0.1:1": 4, "127.0.0.1:2": "five", "127.0.0.1:3": 2**31,
                                   "127.0.0.1:4": True}))
    broken = tmp_path / "metrics" / "instances.yml"
    broken.write_text("[unclosed: 4\n")
    tables = load(spark, tmp_path)
    nodes = {"127.0.0.1:1": 4, "127.0.0.1:2": -1, "127.0.0.1:3": -1, "127.0.0.1:4": -1}
    assertDataFrameEqual(tables.metrics, spark.createDataFrame(want_rows(export, nodes, series), METRICS_SCHEMA))
    got = tables.problems.toPandas()
    assert sorted(zip(got.node_id, got.path, got.kind, strict=True)) == sorted(
        [(-1, str(mapping), "bad_value")] * 3 + [(-1, str(broken), "decode_error")]
        + [(-1, str(export), "unmapped_instance")] * 3)
    bad = sorted(d for p, k, d in zip(got.path, got.kind, got.detail, strict=True) if k == "bad_value")
    assert [d.split("'")[1] for d in bad] == ["127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4"]
    assert all("is not a node id" in d for d in bad)


def test_series_without_instance_keep_the_files_node(spark, tmp_path):
    """A Prometheus text scrape of one exporter has no ``instance``: nothing changes, no problem."""
    (tmp_path / "metrics").mkdir()
    scrape = tmp_path / "metrics" / "4-1795290596161.prom"
    scrape.write_text(f"# TYPE {NAME} gauge\n{NAME} 2.0\n")
    (tmp_path / "metrics" / "instances.json").write_text(json.dumps({"127.0.0.1:1": 5}))
    tables = load(spark, tmp_path)
    assertDataFrameEqual(tables.metrics, spark.createDataFrame(
        [(4, str(scrape), "prometheus_text", NAME, NAME, None, None, {}, datetime.fromtimestamp(T0, UTC), 2.0)],
        METRICS_SCHEMA))
    assert tables.problems.collect() == []
