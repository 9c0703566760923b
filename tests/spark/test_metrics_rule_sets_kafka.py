"""The ``metrics`` table names a value alike whichever published JMX-exporter rules scraped it.

One real Kafka node (broker and controller) with a topic that took records; the real JMX exporter
(its standalone server, from Maven Central) reads the node's MBeans over JMX with the project's
rules and with the naming of Strimzi's, Confluent's and Bitnami's published rules
(``exporter_rules/*.yaml``, each written for this test after the published file its header
names). The scrapes are loaded as a bundle: every value a published rule set exports must come out
under a name and labels the project's rules give too, with the same value wherever the project's
own scrapes just before and just after agree (a gauge that did not move meanwhile: the node writes
no metadata no-op records, so only its clocks and rates move).
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path

import pytest

import workbench
from peer.cluster import Cluster
from peer.jmx_exporter_server import StandaloneExporter
from peer.kafka import fetch
from peer.prometheus import agent_config
from peer.scenarios.isr import CONTROLLER_MBEANS as PARTITION_STATE_MBEANS
from peer.scenarios.isr import ISR_MBEANS, PARTITION_MBEANS
from peer.scenarios.quorum import BROKER_MBEANS, CONTROLLER_MBEANS

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

RULE_SETS = {path.stem: path for path in sorted((Path(__file__).parent / "exporter_rules").glob("*.yaml"))}
#: The MBeans the analyses read (the scenarios sample them), and the logs' and topics' gauges.
MBEANS = [*ISR_MBEANS, *PARTITION_MBEANS, *PARTITION_STATE_MBEANS, *CONTROLLER_MBEANS, *BROKER_MBEANS,
          "kafka.log:type=Log,*", "kafka.server:type=BrokerTopicMetrics,*", "kafka.controller:type=ControllerStats,*"]
NODE = 1


def _included(rules: str) -> str:
    """A rule file restricted to :data:`MBEANS`, as the project's rules are."""
    return "includeObjectNames:\n" + "".join(f'- "{name}"\n' for name in MBEANS) + rules


@pytest.fixture(scope="module")
def scraped(tmp_path_factory) -> Path:
    """A bundle of ``metrics/<rule set>/<node>-<t>.prom``: ours scraped before (``ours``) and after
    (``ours-after``) each published set, all at one moment of an idle node."""
    home = tmp_path_factory.mktemp("rule-sets")
    bundle = home / "bundle"
    configs = {"ours": home / "ours.yaml"}
    configs["ours"].write_text(agent_config(MBEANS), "utf-8")
    for name, path in RULE_SETS.items():
        configs[name] = home / f"{name}.yaml"
        configs[name].write_text(_included(path.read_text("utf-8")), "utf-8")
    # no metadata no-op records: the node is still between the scrapes, but for its clocks and rates
    with Cluster(fetch(), home / "cluster", "rules", controllers=1, brokers=0, combined=True, first_id=NODE,
                 settings={"metadata.max.idle.interval.ms": "3600000"}) as cluster:
        cluster.format()
        cluster.start()
        node = cluster.nodes[0]
        cluster.kafka.run_tool("topics", ["--bootstrap-server", cluster.bootstrap, "--create", "--topic", "orders",
                                          "--partitions", "2", "--replication-factor", "1"], timeout=60)
        cluster.kafka.run_tool("producer-perf", [
            "--topic", "orders", "--num-records", "200", "--record-size", "50", "--throughput", "-1",
            "--producer-props", f"bootstrap.servers={cluster.bootstrap}", "acks=all"], timeout=60)
        with contextlib.ExitStack() as stack:
            exporters = {name: stack.enter_context(StandaloneExporter(node.jmx_url, config, home))
                         for name, config in configs.items()}
            for exporter in exporters.values():
                exporter.scrape()  # listening, and the MBeans read once
            order = [("ours", "ours")] + [(name, name) for name in RULE_SETS] + [("ours", "ours-after")]
            for exporter_name, folder in order:
                out = bundle / "metrics" / folder / f"{NODE}-{int(time.time() * 1000)}.prom"
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(exporters[exporter_name].scrape(), "utf-8")
    return bundle


@pytest.fixture(scope="module")
def values(scraped, spark) -> dict[str, dict[tuple, float]]:
    """Per folder: ``(name, labels without the exporter's own) -> value`` from the ``metrics`` table."""
    rows = workbench.load(workbench.open_bundle(scraped), spark).metrics.select("path", "name", "labels", "value")
    out: dict[str, dict[tuple, float]] = {}
    for row in rows.collect():
        if not row["name"].startswith("kafka_"):
            continue  # the exporter's and the JVM's own series
        key = (row["name"], tuple(sorted((k.lower(), v) for k, v in (row["labels"] or {}).items())))
        out.setdefault(Path(row["path"]).parent.name, {})[key] = row["value"]
    return out


def _same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("rule_set", sorted(RULE_SETS))
def test_every_value_of_a_published_rule_set_has_the_projects_name_and_value(values, rule_set):
    ours, after, theirs = values["ours"], values["ours-after"], values[rule_set]
    assert theirs, f"{rule_set} exported nothing"
    unnamed = sorted(key for key in theirs if key not in ours)
    assert unnamed == [], f"{rule_set}: {len(unnamed)} of {len(theirs)} values under names the project's rules " \
                          f"do not give: {unnamed[:10]}"
    steady = [key for key in theirs if _same(ours[key], after.get(key))]
    differ = sorted((key, theirs[key], ours[key]) for key in steady if not _same(theirs[key], ours[key]))
    assert differ == [], f"{rule_set}: values unlike the project's scrape of the same moment: {differ[:10]}"
    names = {name for name, _ in theirs}
    assert "kafka_server_replicamanager_underminisrpartitioncount" in names
    assert "kafka_controller_kafkacontroller_lastappliedrecordoffset" in names
    assert len(steady) >= len(theirs) // 2, f"{rule_set}: too few steady values compared ({len(steady)})"


def test_strimzi_names_of_kafkas_own_metrics_are_the_projects(values):
    """Strimzi's rules are the only published ones here that export raft-metrics and
    broker-metadata-metrics (KIP-835's gauges), under names without the type's hyphens."""
    names = {name for name, _ in values["strimzi"]}
    assert {"kafka_server_raft_metrics_commit_latency_max", "kafka_server_raft_metrics_high_watermark",
            "kafka_server_broker_metadata_metrics_last_applied_record_offset"} <= names
