"""The ``events`` table read from real brokers' text logs, judged by Kafka's own dump of the metadata log.

A KRaft cluster's brokers write to ``server.log`` and ``state-change.log`` the partition states
the metadata log holds: each ISR change a leader made ("ISR updated to … and version updated to
N") and each leadership a broker took ("Leader/Follower … with partition epoch N …"). Every such
line must equal the partition's state at that partition epoch as Kafka's own dump of the metadata
log leaves it, every ISR expansion (always a leader's request) must have its line, and every time a
broker registered with the controller, its log must say it started.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import workbench
from tests.kafka_bundles import metadata_payloads

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

SCENARIOS = ("isr", "restarts")


@pytest.fixture(scope="module", params=SCENARIOS)
def bundle(request, spark, kafka_bundle):
    path = Path(kafka_bundle(request.param))
    tables = workbench.load(workbench.open_bundle(path), spark)
    return path, tables


def dumped_states(path: Path) -> tuple[dict[tuple[str, int, int], tuple[int, list[int]]], list[tuple], list[int]]:
    """From Kafka's dump: each partition's (leader, sorted ISR) at every partition epoch, the ISR
    expansions as (topic, partition, partition epoch), and the broker id of every incarnation
    registered (a process: a registration sent again is not another start)."""
    names: dict[str, str] = {}
    current: dict[tuple[str, int], tuple[int, list[int], int]] = {}
    states: dict[tuple[str, int, int], tuple[int, list[int]]] = {}
    expansions, registrations = [], []
    incarnations: set[tuple[int, str | None]] = set()
    for _t, p in metadata_payloads(path):
        data, kind = p["data"], p["type"]
        if kind == "TOPIC_RECORD":
            names[data["topicId"]] = data["name"]
        elif kind == "REGISTER_BROKER_RECORD":
            # a broker with no reply in time (a loaded controller) sends its registration again:
            # Kafka amends it (same incarnation id, one per process, same epoch): one start each
            if (data["brokerId"], data.get("incarnationId")) not in incarnations:
                incarnations.add((data["brokerId"], data.get("incarnationId")))
                registrations.append(data["brokerId"])
        elif kind == "PARTITION_RECORD":
            key = (names[data["topicId"]], data["partitionId"])
            current[key] = (data["leader"], sorted(data["isr"]), data.get("partitionEpoch", 0))
        elif kind == "PARTITION_CHANGE_RECORD":
            key = (names[data["topicId"]], data["partitionId"])
            leader, isr, epoch = current[key]
            new_leader = leader if data.get("leader", -2) == -2 else data["leader"]
            new_isr = isr if data.get("isr") is None else sorted(data["isr"])
            if new_leader == leader and leader >= 0 and set(new_isr) > set(isr):
                expansions.append((*key, epoch + 1))
            current[key] = (new_leader, new_isr, epoch + 1)
        else:
            continue
        if kind.startswith("PARTITION"):
            leader, isr, epoch = current[key]
            states[(*key, epoch)] = (leader, isr)
    return states, expansions, registrations


def test_every_partition_line_equals_the_metadata_logs_state_at_its_partition_epoch(bundle):
    path, tables = bundle
    states, expansions, _ = dumped_states(path)
    lines = (tables["events"].where("kind IN ('isr_updated', 'leader_start', 'follower_start', 'leader_kept', "
                                    "'follower_kept')")
             .select("kind", "node_id", "topic", "partition", "partition_epoch", "leader", "isr")
             .toPandas())
    assert len(lines) > 0 and lines["partition_epoch"].notna().all()
    lines["isr"] = lines["isr"].map(lambda v: None if v is None else sorted(int(x) for x in v))
    expected = lines.copy()
    expected["leader"] = [states[(t, p, e)][0] for t, p, e in zip(lines["topic"], lines["partition"],
                                                                  lines["partition_epoch"], strict=True)]
    expected["isr"] = [None if isr is None else states[(t, p, e)][1]
                       for t, p, e, isr in zip(lines["topic"], lines["partition"], lines["partition_epoch"],
                                               lines["isr"], strict=True)]
    pd.testing.assert_frame_equal(lines, expected, check_dtype=False)
    # the leader's own lines: every expansion Kafka committed is one of them
    updated = lines[lines["kind"].isin(["isr_updated", "leader_kept"])]
    logged = set(zip(updated["topic"], updated["partition"], updated["partition_epoch"], strict=True))
    assert expansions and set(expansions) <= logged, sorted(set(expansions) - logged)


def test_every_broker_registration_has_its_start_line(bundle):
    path, tables = bundle
    _, _, registrations = dumped_states(path)
    started = (tables["events"].where("kind = 'server' AND state_to = 'started'")
               .groupBy("node_id").count().toPandas().set_index("node_id")["count"].sort_index())
    registered = pd.Series(registrations).value_counts().sort_index()
    pd.testing.assert_series_equal(started, registered, check_names=False, check_dtype=False,
                                   check_index_type=False)
