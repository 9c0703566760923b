"""``quorum`` for both quorum-state data versions, and ``configs`` helpers, on small hand-made bundles.

The real scenario bundles (``tests/spark/test_quorum_configs_kafka.py``) all run static quorums
(data version 0); version 1 is what a dynamic quorum (KIP-853) writes.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from workbench.spark.configs import CONFIGS_SCHEMA, effective_configs, hide_secrets
from workbench.spark.quorum import QUORUM_SCHEMA

pytestmark = pytest.mark.spark


def test_quorum_state_both_versions_and_damage(spark, tmp_path):
    rows = {
        1: '{"clusterId":"","leaderId":1,"leaderEpoch":4,"votedId":-1,"appliedOffset":0,'
           '"currentVoters":[{"voterId":1},{"voterId":2}],"data_version":0}',
        2: '{"leaderId":3,"leaderEpoch":7,"votedId":3,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}',
        3: '{"leaderId":3,"leaderEp',
    }
    for node, text in rows.items():
        d = tmp_path / "nodes" / str(node) / "logs" / "__cluster_metadata-0"
        d.mkdir(parents=True)
        (d / "quorum-state").write_text(text)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    path = str(tmp_path / "nodes/{}/logs/__cluster_metadata-0/quorum-state")
    assertDataFrameEqual(tables.quorum, spark.createDataFrame([
        (1, path.format(1), 0, 1, 4, -1, None, 0, [1, 2], ""),
        (2, path.format(2), 1, 3, 7, 3, "J8aAPcfLQt2bqs1JT_rMgQ", None, None, None)], QUORUM_SCHEMA))
    assert [(r.node_id, r.kind) for r in tables.problems.collect()] == [(3, "decode_error")]


def _t(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=UTC)


def test_effective_configs_latest_record_wins_deletions_remove(spark):
    rows = [
        ("static", "node", "4", "min.insync.replicas", "1", False, None, None, "properties", 4, 1, "c", "p"),
        ("topic", "topic", "orders", "retention.ms", "1000", False, _t("2026-01-01T00:00:00"), 90, "snapshot", 1, 3,
         "c", "s"),
        ("topic", "topic", "orders", "retention.ms", "2000", False, _t("2026-01-01T00:01:00"), 95, "log", 1, 3, "c",
         "l"),
        ("topic", "topic", "orders", "retention.ms", "3000", False, _t("2026-01-01T00:05:00"), 120, "log", 1, 3, "c",
         "l"),
        ("topic", "topic", "orders", "cleanup.policy", "compact", False, _t("2026-01-01T00:00:30"), 92, "log", 1, 3,
         "c", "l"),
        ("topic", "topic", "orders", "cleanup.policy", None, False, _t("2026-01-01T00:02:00"), 100, "log", 1, 3, "c",
         "l"),
        ("dynamic_cluster_default", "broker", "", "min.insync.replicas", "2", False, _t("2026-01-01T00:00:10"), 91,
         "log", 1, 3, "c", "l"),
    ]
    configs = spark.createDataFrame(rows, CONFIGS_SCHEMA)
    assertDataFrameEqual(effective_configs(configs), spark.createDataFrame([rows[0], rows[3], rows[6]],
                                                                            CONFIGS_SCHEMA))
    at = effective_configs(configs, at="2026-01-01 00:01:30")
    assertDataFrameEqual(at, spark.createDataFrame([rows[0], rows[2], rows[4], rows[6]], CONFIGS_SCHEMA))


def test_hide_secrets(spark):
    rows = [("static", "node", "1", name, value, False, None, None, "properties", 1, 1, None, "p")
            for name, value in (("ssl.keystore.password", "s3cret"), ("sasl.jaas.config", "x required;"),
                                ("listeners", "PLAINTEXT://:9092"), ("ssl.key.password", None))]
    got = hide_secrets(spark.createDataFrame(rows, CONFIGS_SCHEMA))
    assert [(r.name, r.value, r.sensitive) for r in got.collect()] == [
        ("ssl.keystore.password", "[hidden]", True), ("sasl.jaas.config", "[hidden]", True),
        ("listeners", "PLAINTEXT://:9092", False), ("ssl.key.password", None, True)]


@pytest.mark.parametrize("secrets", [False, True])
def test_static_settings_are_the_tables_static_rows_without_a_spark_job(spark, tmp_path, secrets):
    """``static_settings`` comes from the rows building ``configs`` read (no job), equal to a collect of
    the table's static rows in its order (node, then path), secrets hidden as the table hides them."""
    from pyspark.sql import functions as F

    from workbench.spark.configs import static_settings

    texts = {"nodes/2/config/server.properties": "node.id=2\nssl.keystore.password=s3cret\nlisteners=PLAINTEXT://:9092",
             "nodes/1/config/server.properties": "node.id=1\nsasl.jaas.config=x required;\nssl.Key=k\nnum.partitions=0",
             "nodes/1/config/b/server.properties": "node.id=1\nmy.token=t"}
    for rel, text in texts.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    tables = workbench.load(workbench.open_bundle(tmp_path), spark, config_secrets=secrets)
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup(None))
    got = static_settings(tables)
    assert set(tracker.getJobIdsForGroup(None)) == before
    want = [tuple(r) for r in tables.configs.where(F.col("scope") == "static")
            .select("node_id", "name", "value", "path", "cluster_id").orderBy("node_id", "path").collect()]
    assert sorted(got, key=str) == sorted(want, key=str) and [s[3] for s in got] == [s[3] for s in want]
    hidden = {s[1] for s in got if s[2] == "[hidden]"}
    assert hidden == (set() if secrets else {"ssl.keystore.password", "sasl.jaas.config", "ssl.Key", "my.token"})
    assert ("num.partitions", None) in {(s[1], s[2]) for s in got}   # out of range: null, as in the table
