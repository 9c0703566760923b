"""The transaction tables (``transactions``, ``markers``, ``producer_state``, ``aborted``) against Kafka.

On the ``transactions`` scenario (committed and aborted transactions, one left open by a killed
producer, a coordinator partition lost): every table is compared whole with what Kafka's
``kafka-dump-log.sh`` prints of the same files (the bundle's dumps of the segments; the
``.snapshot`` and ``.txnindex`` files dumped here), and the coordinator's and the partition
leader's state with what ``kafka-transactions.sh`` answered while the cluster ran.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.window import Window
from pyspark.testing import assertDataFrameEqual

import workbench
from tests.kafka_bundles import manifest
from tests.spark.internal_topics import (
    dump_of,
    dumped_records,
    kafka_dump,
    node_of,
    scenario_params,
    segments,
    stamp,
    topic_partition,
)
from workbench.formats.dumptext_parse import parse_kafka_dump
from workbench.formats.tooltext import parse_tab_table
from workbench.spark.aborted import ABORTED_SCHEMA
from workbench.spark.markers import MARKERS_SCHEMA
from workbench.spark.producer_state import PRODUCER_STATE_SCHEMA
from workbench.spark.source import column_names
from workbench.spark.transactions import TRANSACTIONS_SCHEMA

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: Kafka's ``TransactionState`` by the id it writes (``TransactionState.fromId``).
KAFKA_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}
BUNDLES = scenario_params("transactions", without="isr")
#: The bundles with transactions and Kafka's answers about them (the oracle checks read these only).
WITH_TRANSACTIONS = [p for p in BUNDLES if p[0] == "transactions"]


def _loaded(spark, kafka_bundle, name: str, version: str):
    root = Path(kafka_bundle(name, version)).resolve()
    return root, version, workbench.load(workbench.open_bundle(root), spark)


@pytest.fixture(scope="module", params=BUNDLES, ids=[f"{s}-{v}" for s, v in BUNDLES])
def real(request, spark, kafka_bundle):
    return _loaded(spark, kafka_bundle, *request.param)


@pytest.fixture(scope="module", params=WITH_TRANSACTIONS, ids=[f"{s}-{v}" for s, v in WITH_TRANSACTIONS])
def answered(request, spark, kafka_bundle):
    return _loaded(spark, kafka_bundle, *request.param)


def frame(spark, schema: str, rows: list[dict]):
    cols = column_names(schema)
    return spark.createDataFrame([tuple(r.get(c) for c in cols) for r in rows], schema)


#: Columns Kafka 3.x's ``--transaction-log-decoder`` prints (``key: transaction_metadata::transactionalId=...
#: payload: producerId:..,producerEpoch:..,state=..,partitions=[..],txnLastUpdateTimestamp=..,txnTimeoutMs=..``);
#: 4.x prints the whole value as JSON.
LEGACY_COLUMNS = ("node_id", "path", "txn_partition", "batch_position", "offset", "timestamp", "transactional_id",
                  "deleted", "producer_id", "producer_epoch", "timeout_ms", "state", "topic_partitions",
                  "last_update_time")
_LEGACY = re.compile(r"^producerId:(-?\d+),producerEpoch:(-?\d+),state=(\w+),partitions=\[(.*)\],"
                     r"txnLastUpdateTimestamp=(-?\d+),txnTimeoutMs=(-?\d+)$")


def _partitions(text: str) -> list[tuple[str, int]]:
    out = []
    for tp in filter(None, (t.strip() for t in text.split(","))):
        topic, _, partition = tp.rpartition("-")
        out.append((topic, int(partition)))
    return out


def transaction_rows(root: Path) -> tuple[list[dict], tuple[str, ...]]:
    """Every ``__transaction_state`` record as Kafka's ``--transaction-log-decoder`` printed it, and the
    columns that text gives (all of them from Kafka 4.x's JSON, :data:`LEGACY_COLUMNS` from 3.x's)."""
    rows, columns = [], tuple(column_names(TRANSACTIONS_SCHEMA))
    for seg in segments(root, lambda t: t == "__transaction_state"):
        for batch, rec in dumped_records(dump_of(root, seg)):
            if batch["is_control"]:
                continue
            row = {"node_id": node_of(seg), "path": str(seg), "txn_partition": topic_partition(seg)[1],
                   "batch_position": batch["position"], "offset": rec["offset"], "timestamp": stamp(rec["timestamp"]),
                   "deleted": rec["payload"] in (None, "<DELETE>")}
            if rec["key"].startswith("transaction_metadata::transactionalId="):
                columns = LEGACY_COLUMNS
                row["transactional_id"] = rec["key"].split("=", 1)[1]
                if not row["deleted"]:
                    m = _LEGACY.match(rec["payload"])
                    assert m, rec["payload"]
                    row.update(producer_id=int(m[1]), producer_epoch=int(m[2]), state=m[3],
                               topic_partitions=_partitions(m[4]), last_update_time=stamp(int(m[5])),
                               timeout_ms=int(m[6]))
                rows.append(row)
                continue
            row["transactional_id"] = json.loads(rec["key"])["data"]["transactionalId"]
            if not row["deleted"]:
                payload = json.loads(rec["payload"])
                version, v = int(payload["version"]), payload["data"]
                row.update(
                    value_version=version, producer_id=v["producerId"], producer_epoch=v["producerEpoch"],
                    previous_producer_id=v.get("previousProducerId", -1) if version >= 1 else None,
                    next_producer_id=v.get("nextProducerId", -1) if version >= 1 else None,
                    next_producer_epoch=v.get("nextProducerEpoch", -1) if version >= 1 else None,
                    timeout_ms=v["transactionTimeoutMs"], state=KAFKA_STATES[v["transactionStatus"]],
                    topic_partitions=[(tp["topic"], p) for tp in v["transactionPartitions"] or []
                                      for p in tp["partitionIds"]],
                    last_update_time=stamp(v["transactionLastUpdateTimestampMs"]),
                    start_time=stamp(v["transactionStartTimestampMs"]),
                    client_transaction_version=v.get("clientTransactionVersion", 0))
            rows.append(row)
    return rows, columns


def marker_rows(root: Path) -> list[dict]:
    """Every control record of the data partitions' dumps (COMMIT/ABORT markers)."""
    rows = []
    for seg in segments(root, lambda t: t != "__cluster_metadata"):
        topic, partition = topic_partition(seg)
        for batch, rec in dumped_records(dump_of(root, seg)):
            if not batch["is_control"]:
                continue
            epoch = rec["control"].split("coordinatorEpoch:")[1].split()[0]
            rows.append({"node_id": node_of(seg), "path": str(seg), "topic": topic, "partition": partition,
                         "batch_position": batch["position"], "offset": rec["offset"],
                         "timestamp": stamp(rec["timestamp"]), "producer_id": batch["producer_id"],
                         "producer_epoch": batch["producer_epoch"], "marker": rec["control_type"],
                         "coordinator_epoch": int(epoch)})
    return rows


def sidecar_rows(root: Path, version: str, suffix: str, kafka_dist) -> list[dict]:
    """The ``.snapshot`` or ``.txnindex`` files of the data partitions as Kafka's dump tool prints them."""
    kafka = kafka_dist(version)
    rows = []
    for path in sorted(root.glob(f"nodes/*/logs/*/*.{suffix}")):
        topic, partition = topic_partition(path)
        if topic == "__cluster_metadata":
            continue
        base = int(path.name.split(".")[0])
        common = {"node_id": node_of(path), "path": str(path), "topic": topic, "partition": partition}
        for row in parse_kafka_dump(kafka_dump(kafka, path)):
            assert row["kind"] != "problem", row
            if row["kind"] == "producer_state":
                rows.append({**common, "snapshot_offset": base, "producer_id": row["producer_id"],
                             "producer_epoch": row["producer_epoch"], "last_sequence": row["last_sequence"],
                             "last_offset": row["last_offset"], "offset_delta": row["offset_delta"],
                             "last_timestamp": stamp(row["last_timestamp"]),
                             "coordinator_epoch": row["coordinator_epoch"],
                             "current_txn_first_offset": row["current_txn_first_offset"]})
            elif row["kind"] == "txn_index":
                rows.append({**common, "segment_base_offset": base, "producer_id": row["producer_id"],
                             "first_offset": row["first_offset"], "last_offset": row["last_offset"],
                             "last_stable_offset": row["last_stable_offset"], "version": row["version"]})
    return rows


def test_transactions_equal_kafkas_transaction_log_decoder(spark, real):
    root, _, tables = real
    want, columns = transaction_rows(root)
    assertDataFrameEqual(tables.transactions.select(*columns),
                         frame(spark, TRANSACTIONS_SCHEMA, want).select(*columns))
    assert tables.problems_of("transactions").count() == 0
    if segments(root, lambda t: t == "__transaction_state"):
        assert {r["state"] for r in want} >= {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                                              "CompleteAbort"}


def test_markers_equal_the_control_records_kafka_dumps(spark, real):
    root, _, tables = real
    want = marker_rows(root)
    assertDataFrameEqual(tables.markers, frame(spark, MARKERS_SCHEMA, want))
    if segments(root, lambda t: t == "__transaction_state"):
        assert {r["marker"] for r in want} == {"COMMIT", "ABORT"}


def test_producer_state_and_aborted_equal_kafkas_dump_of_the_files(spark, real, kafka_dist):
    root, version, tables = real
    snapshots = sidecar_rows(root, version, "snapshot", kafka_dist)
    assertDataFrameEqual(tables.producer_state, frame(spark, PRODUCER_STATE_SCHEMA, snapshots))
    aborted = sidecar_rows(root, version, "txnindex", kafka_dist)
    assertDataFrameEqual(tables.aborted, frame(spark, ABORTED_SCHEMA, aborted))
    assert tables.problems_of("producer_state").count() == 0 and tables.problems_of("aborted").count() == 0
    if segments(root, lambda t: t == "__transaction_state"):
        assert any(r["current_txn_first_offset"] is not None for r in snapshots)
        # every ABORT marker of a data topic is one index entry ending at the marker
        markers = {(r["topic"], r["partition"], r["producer_id"], r["offset"]) for r in marker_rows(root)
                   if r["marker"] == "ABORT"}
        assert {(r["topic"], r["partition"], r["producer_id"], r["last_offset"]) for r in aborted} == markers


def captures(root: Path, command: str) -> list[tuple[dict, list[dict]]]:
    """``(manifest entry, rows)`` of every ``kafka-transactions`` capture of ``command`` that answered."""
    out = []
    for entry in manifest(root)["tools"]:
        if entry["tool"] == "kafka-transactions" and command in entry["args"] and not entry.get("exit_code"):
            out.append((entry, parse_tab_table((root / entry["file"]).read_text(encoding="utf-8"))))
    return out


def test_coordinator_state_equals_kafka_transactions_list_and_describe(answered):
    """The last record of each transactional id written before a capture is what the coordinator
    answered; an id the bundle has no record of is one whose coordinator partition was lost."""
    root, _, tables = answered
    records = [r.asDict() for r in tables.transactions.selectExpr(
        "*", "unix_millis(timestamp) AS t_ms", "unix_millis(start_time) AS start_ms").orderBy("offset").collect()]
    lost = {e["transactional_id"] for e in manifest(root)["events"] if e["event"] == "coordinator_state_lost"}
    assert lost

    def state_before(tid: str, t_ms: int) -> dict | None:
        kept = [r for r in records if r["transactional_id"] == tid and r["t_ms"] <= t_ms]
        return kept[-1] if kept else None

    listed = captures(root, "list")
    assert len(listed) >= 3
    for entry, rows in listed:
        for row in rows:
            mine = state_before(row["TransactionalId"], entry["t_ms"])
            if mine is None:
                assert row["TransactionalId"] in lost, row
                continue
            assert (mine["producer_id"], mine["state"]) == (int(row["ProducerId"]), row["TransactionState"]), row
    described = captures(root, "describe")
    assert len(described) >= 6
    for entry, rows in described:
        (row,) = rows
        mine = state_before(row["TransactionalId"], entry["t_ms"])
        if mine is None:
            assert row["TransactionalId"] in lost, row
            continue
        partitions = sorted(f"{t}-{p}" for t, p in mine["topic_partitions"]) if mine["state"] == "Ongoing" else []
        assert (mine["producer_id"], mine["producer_epoch"], mine["state"], mine["timeout_ms"],
                mine["start_ms"], partitions) == (
            int(row["ProducerId"]), int(row["ProducerEpoch"]), row["TransactionState"],
            int(row["TransactionTimeoutMs"]), int(row["CurrentTransactionStartTimeMs"]),
            sorted((row["TopicPartitions"] or "").split(",")) if row["TopicPartitions"] else []), row


def test_the_last_snapshot_of_each_partition_equals_kafkas_describe_producers(answered):
    """The snapshot a clean stop writes holds each producer as the partition leader last described it."""
    root, _, tables = answered
    producers = captures(root, "describe-producers")
    assert producers
    last: dict[tuple[str, int], list[dict]] = {}
    for entry, rows in producers:
        args = entry["args"]
        last[(args[args.index("--topic") + 1], int(args[args.index("--partition") + 1]))] = rows
    newest = (tables.producer_state
              .withColumn("newest", F.max("snapshot_offset").over(Window.partitionBy("topic", "partition")))
              .where("snapshot_offset = newest"))
    for (topic, partition), rows in last.items():
        mine = sorted(
            (r.producer_id, r.producer_epoch, r.coordinator_epoch,
             r.last_sequence if r.last_sequence is not None else -1, r.last_ms, r.current_txn_first_offset)
            for r in newest.selectExpr("*", "unix_millis(last_timestamp) AS last_ms")
            .where((F.col("topic") == topic) & (F.col("partition") == partition)).collect())
        kafka = sorted(
            (int(r["ProducerId"]), int(r["ProducerEpoch"]), int(r["LatestCoordinatorEpoch"]), int(r["LastSequence"]),
             int(r["LastTimestamp"]),
             None if r["CurrentTransactionStartOffset"] == "None" else int(r["CurrentTransactionStartOffset"]))
            for r in rows)
        assert mine == kafka, (topic, partition)
    # the bundle ends with a transaction still open on one partition
    assert any(r["CurrentTransactionStartOffset"] != "None" for rows in last.values() for r in rows)
