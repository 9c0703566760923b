"""The transactions area against what Kafka answered while the ``transactions`` scenario ran.

The scenario (``peer/scenarios/transactions.py``) commits and aborts transactions, kills a producer
inside one (its coordinator's state then lost), and aborts that transaction on one partition with
``kafka-transactions.sh abort``; it samples ``ListOffsets`` read_committed (the LSO) and
read_uncommitted every 500 ms and captures ``find-hanging``, ``describe-producers`` and
``kafka-consumer-groups --describe`` along the way. The ``consumer_lag`` scenario's transactional
producer ends every transaction (commit or abort): the area must find nothing open there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import workbench
from tests.kafka_bundles import manifest
from tests.spark.internal_topics import scenario_params
from workbench.analysis import transactions as txn
from workbench.formats.tooltext import parse_group_offsets, parse_tab_table

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

BUNDLES = [p for p in scenario_params("transactions", without="consumer_lag") if p[0] == "transactions"]
#: How far apart a computed step and a sample may lie: a marker is stamped by the partition leader
#: as it appends it, and a sample's request takes a few milliseconds.
TOLERANCE_MS = 100


@pytest.fixture(scope="module", params=BUNDLES, ids=[f"{s}-{v}" for s, v in BUNDLES])
def answered(request, spark, kafka_bundle):
    root = Path(kafka_bundle(*request.param)).resolve()
    return root, workbench.load(workbench.open_bundle(root), spark)


def captures(root: Path, tool: str, command: str) -> list[tuple[dict, list[dict]]]:
    """``(manifest entry, rows)`` of every capture of ``tool`` running ``command`` that answered."""
    return [(e, parse_tab_table((root / e["file"]).read_text(encoding="utf-8")))
            for e in manifest(root)["tools"]
            if e["tool"] == tool and command in e["args"] and not e.get("exit_code")]


def _arg(entry: dict, flag: str) -> str | None:
    args = entry["args"]
    return args[args.index(flag) + 1] if flag in args else None


def test_hanging_transactions_are_what_find_hanging_listed(answered):
    """At each ``find-hanging`` capture, with its ``--max-transaction-timeout``, the open transactions
    judged hanging from the files are exactly the rows the tool printed."""
    root, tables = answered
    runs = captures(root, "kafka-transactions", "find-hanging")
    assert len(runs) >= 3
    listed_any = False
    for entry, rows in runs:
        minutes = _arg(entry, "--max-transaction-timeout")
        limit = int(minutes) * 60_000 if minutes else txn.DEFAULT_MAX_TIMEOUT_MS
        mine = sorted((r.topic, r.partition, r.producer_id, r.producer_epoch, r.first_offset, r.last_ms)
                      for r in txn.hanging_transactions(tables, entry["t_ms"], max_timeout_ms=limit)
                      .selectExpr("*", "unix_millis(last_write) AS last_ms").collect())
        kafka = sorted((r["Topic"], int(r["Partition"]), int(r["ProducerId"]), int(r["ProducerEpoch"]),
                        int(r["StartOffset"]), int(r["LastTimestamp"])) for r in rows)
        assert mine == kafka, entry["file"]
        listed_any = listed_any or bool(kafka)
    assert listed_any


def test_open_transactions_and_the_lso_equal_describe_producers(answered):
    """At each ``describe-producers`` capture, the transactions open on the partition are the producers
    with a ``CurrentTransactionStartOffset``, and the computed LSO is the smallest of those offsets."""
    root, tables = answered
    runs = captures(root, "kafka-transactions", "describe-producers")
    assert runs
    pinned = 0
    for entry, rows in runs:
        topic, partition = _arg(entry, "--topic"), int(_arg(entry, "--partition"))
        opened = sorted((r.producer_id, r.first_offset) for r in txn.open_transactions(tables, entry["t_ms"])
                        .where((F.col("topic") == topic) & (F.col("partition") == partition)).collect())
        kafka = sorted((int(r["ProducerId"]), int(r["CurrentTransactionStartOffset"])) for r in rows
                       if r["CurrentTransactionStartOffset"] != "None")
        assert opened == kafka, entry["file"]
        (step,) = txn.lso_at(txn.lso_series(tables), topic, partition, entry["t_ms"]).collect()
        if kafka:
            assert step.lso == min(o for _, o in kafka) < step.log_end_offset, entry["file"]
            pinned += 1
        else:
            assert step.lso == step.log_end_offset, entry["file"]
    assert pinned >= 2


def test_the_lso_over_time_equals_list_offsets_read_committed(answered):
    """Every ``ListOffsets`` sample (read_committed: the LSO; read_uncommitted: the log end) is a
    computed step of its partition that the log could hold during the sample's request.

    A step is stamped with its batch's timestamp. A data batch is stamped by the producer when the
    record is created and appended later (after the transaction's ``AddPartitionsToTxn``, a
    retry, a loaded machine: over 100 ms in a CI build), so the log holds at least
    every step up to the last marker stamped before the request (the partition leader stamps a
    marker as it appends it) and at most the steps stamped before the answer."""
    root, tables = answered
    samples = [json.loads(line) for line in (root / "oracle" / "offsets.jsonl").read_text().splitlines()]
    assert len(samples) > 100
    markers = {(r.topic, r.partition, r.offset)
               for r in tables.markers.select("topic", "partition", "offset").collect()}
    steps: dict[tuple[str, int], list[tuple[int, int, int, bool]]] = {}
    for r in txn.lso_series(tables).selectExpr("*", "unix_millis(time) AS t").orderBy("t", "log_end_offset").collect():
        marker = (r.topic, r.partition, r.log_end_offset - 1) in markers
        steps.setdefault((r.topic, r.partition), []).append((r.t, r.lso, r.log_end_offset, marker))
    assert sum(marker for rows in steps.values() for *_, marker in rows) > 20
    seen_pinned = 0
    for s in samples:
        rows = steps.get((s["topic"], s["partition"]), [])
        held = [i for i, (t, *_, marker) in enumerate(rows) if marker and t <= s["t_ms"] - TOLERANCE_MS]
        first = held[-1] if held else -1
        possible = [(0, 0)] if first < 0 else []
        possible += [(lso, end) for i, (t, lso, end, _) in enumerate(rows)
                     if i >= max(first, 0) and t <= s["t_end_ms"] + TOLERANCE_MS]
        # the log end moves when a marker is appended, the LSO a moment later (when the high
        # watermark passes the marker): a sample may fall between the two
        possible += [(a[0], b[1]) for a, b in zip(possible, possible[1:], strict=False)]
        assert (s["last_stable_offset"], s["log_end_offset"]) in possible, (s, possible)
        seen_pinned += s["last_stable_offset"] < s["log_end_offset"]
    assert seen_pinned > 20


def test_the_stalled_read_committed_group_sits_at_the_lso_of_the_killed_producers_transaction(answered):
    """The read_committed group is named stalled on both partitions, at the offset the consumer-groups
    capture showed and the LSO, by the killed producer's transaction; the read_uncommitted group is not."""
    root, tables = answered
    events = manifest(root)["events"]
    killed = next(e["transactional_id"] for e in events if e["event"] == "producer_killed")
    readers = {e["isolation_level"]: e["group"] for e in events if e["event"] == "consumer_start"}
    described = [rows for _, rows in captures(root, "kafka-transactions", "describe")
                 if rows and rows[0]["TransactionalId"] == killed]
    producer = int(described[0][0]["ProducerId"])
    found = txn.findings(tables).where(F.col("kind") == "read_committed_stalled").collect()
    assert {f.subject for f in found} == {readers["read_committed"]}
    stalls = txn.stalled_groups(tables).where(F.col("pinned_producer_id") == producer).collect()
    assert {(s.group, s.partition) for s in stalls} == {(readers["read_committed"], 0),
                                                        (readers["read_committed"], 1)}
    positions = {}
    for entry in manifest(root)["tools"]:
        if entry["tool"] != "kafka-consumer-groups" or "--describe" not in entry["args"]:
            continue
        for row in parse_group_offsets((root / entry["file"]).read_text(encoding="utf-8")):
            if row["group"] == readers["read_committed"] and row["current_offset"] is not None:
                positions[(entry["t_ms"], row["partition"])] = row["current_offset"]
    checked = 0
    for stall in stalls:
        assert stall.lso == next(r.first_offset for r in txn.transaction_spans(tables).where(
            (F.col("partition") == stall.partition) & (F.col("producer_id") == producer)).collect())
        during = [v for (t, p), v in positions.items() if p == stall.partition
                  and stall.start.timestamp() * 1000 + 5000 < t < stall.last_commit.timestamp() * 1000]
        assert during and set(during) == {stall.lso}, (stall, during)
        checked += 1
    assert checked == 2


ENDED = scenario_params("consumer_lag", without="transactions")[:1]


@pytest.fixture(scope="module", params=[*BUNDLES, *ENDED], ids=[f"{s}-{v}" for s, v in [*BUNDLES, *ENDED]])
def any_txn(request, spark, kafka_bundle):
    root = Path(kafka_bundle(*request.param)).resolve()
    return root, workbench.load(workbench.open_bundle(root), spark)


def _producer_summaries(root: Path) -> dict[str, tuple[int, int]]:
    """``transactional id -> (committed, aborted)`` as each transactional producer of the scenario reported."""
    out, started = {}, []
    for e in manifest(root)["events"]:
        if e["event"] == "txn_producer_start":
            started.append(e["transactional_id"])
        elif e["event"] == "txn_producer_end":
            tid = e.get("transactional_id") or started[-1]
            words = e["summary"].split()
            out[tid] = (int(words[words.index("committed") + 1]), int(words[words.index("aborted") + 1]))
    return out


def test_every_transactions_outcome_is_what_its_producer_reported(any_txn):
    """Per transactional id, the spans ended by COMMIT and by ABORT on a partition are the transactions
    its producer committed and aborted (each wrote to every partition)."""
    root, tables = any_txn
    summaries = _producer_summaries(root)
    assert summaries
    spans = txn.transaction_spans(tables)
    for tid, (committed, aborted) in summaries.items():
        counts = {(r.partition, r.outcome): r["count"] for r in spans.where(F.col("transactional_id") == tid)
                  .groupBy("partition", "outcome").count().collect()}
        partitions = {p for p, _ in counts}
        assert partitions, tid
        for p in partitions:
            assert (counts.get((p, "COMMIT"), 0), counts.get((p, "ABORT"), 0)) == (committed, aborted), (tid, p)


def test_a_bundle_whose_transactions_all_ended_has_nothing_open_and_no_lso_lag_at_rest(spark, kafka_bundle):
    """The ``consumer_lag`` scenario's producer ended every transaction: nothing is open or hanging at
    the bundle's end, every partition's last LSO is its log end, and the area reports nothing."""
    (name, version), = ENDED
    root = Path(kafka_bundle(name, version)).resolve()
    tables = workbench.load(workbench.open_bundle(root), spark)
    assert txn.transactional_topics(tables)
    end = txn.bundle_end_ms(tables)
    assert txn.open_transactions(tables, end, max_timeout_ms=0).count() == 0
    last = (txn.lso_series(tables).groupBy("topic", "partition")
            .agg(F.max_by(F.struct("lso", "log_end_offset", "lag_records", "lag_bytes"), "log_end_offset").alias("s"))
            .select("topic", "partition", "s.*").collect())
    assert last and all(r.lso == r.log_end_offset and r.lag_records == 0 and r.lag_bytes == 0 for r in last), last
    assert txn.findings(tables).count() == 0
    figures = txn.analyse(tables, {})
    assert {k: v for k, v in txn.key_figures(figures).items() if k in ("open", "hanging", "orphaned")} == {
        "open": 0, "hanging": 0, "orphaned": 0}
