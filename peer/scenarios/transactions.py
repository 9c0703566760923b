"""Transactions: committed and aborted ones, one left open by a killed producer, and a coordinator
that loses its state, so that the open transaction hangs and pins the last stable offset.

What a bundle holds after the incident Kafka's ``kafka-transactions.sh find-hanging`` (KIP-664)
was written for: a producer died inside a transaction; the partition's last stable offset (LSO)
stays at the transaction's first offset, every ``read_committed`` consumer stops there while the
log grows, and once the coordinator has no state for the transaction nothing will ever end it
but an operator's ``kafka-transactions.sh abort``.

Cluster: 1 controller (1) + 1 broker (2); ``__transaction_state`` has
:data:`TXN_STATE_PARTITIONS` partitions. Topic :data:`TOPIC` (2 partitions, RF 1).

Timeline (about 3 minutes):

1. an offsets sampler (``PeerClient offsets``) lists each partition's latest offset with
   isolation ``read_committed`` (the LSO) and ``read_uncommitted`` (the log end) every
   :data:`SAMPLE_MS` ms for the whole run, kept as ``oracle/offsets.jsonl`` (one JSON line per
   partition and sample: ``t_ms``, ``t_end_ms``, ``topic``, ``partition``,
   ``last_stable_offset``, ``log_end_offset``); groups :data:`COMMITTED_GROUP`
   (``isolation.level=read_committed``) and :data:`UNCOMMITTED_GROUP` (``read_uncommitted``)
   read the topic and commit each second;
2. ``txn_producer_start``: transactional id :data:`EARLY_ID` runs :data:`EARLY_COUNT`
   transactions of :data:`RECORDS` records (every third aborted, each committing an offset of
   group :data:`TXN_GROUP` through the transaction);
3. ``txn_open``: transactional id :data:`OPEN_ID` (``transaction.timeout.ms`` =
   :data:`OPEN_TIMEOUT_MS`, longer than the run) writes :data:`OPEN_RECORDS` records on each
   partition inside one transaction; ``producer_killed``: SIGKILL;
4. :data:`LATE_ID` runs :data:`LATE_COUNT` more transactions: the log end moves past the LSO;
5. captures: ``kafka-transactions list``, ``describe`` of each id, ``describe-producers`` of each
   partition, ``find-hanging`` (nothing yet: the coordinator still holds the transaction open),
   ``kafka-consumer-groups --describe --all-groups``;
6. ``coordinator_state_lost``: the cluster stopped cleanly, the ``__transaction_state``
   partition of :data:`OPEN_ID` (and only that one: the three ids map to different ones) deleted
   from the broker's log dir, the cluster started again (the broker creates it empty);
7. once the open transaction's last write is over a minute old: the same captures, with
   ``find-hanging --max-transaction-timeout 1`` (both partitions hanging; ``describe`` of
   :data:`OPEN_ID` answers that it does not exist);
8. ``transaction_aborted``: ``kafka-transactions abort`` of the hanging transaction on partition
   0 only (by its start offset); after :data:`SETTLE_S` s the same captures again: partition 1
   still hangs at the end of the bundle;
9. a clean stop (``cluster_stop``).
"""

from __future__ import annotations

import json
import shutil
import time

from peer.errors import ScenarioError
from peer.scenario import ScenarioContext

NAME = "transactions"
TOPIC = "payments"
PARTITIONS = 2
TXN_STATE_PARTITIONS = 4
EARLY_ID = "orders-early"
LATE_ID = "orders-late"
OPEN_ID = "payments-stuck"
TXN_GROUP = "payments-app"
COMMITTED_GROUP = "committed-reader"
UNCOMMITTED_GROUP = "uncommitted-reader"
RECORDS = 5
EARLY_COUNT = 9
LATE_COUNT = 6
PAUSE_MS = 800
OPEN_RECORDS = 4
#: Above the run's length, at most the broker's ``transaction.max.timeout.ms`` (15 minutes).
OPEN_TIMEOUT_MS = 900_000
#: ``find-hanging --max-transaction-timeout`` (minutes) and how long after the open transaction's
#: last write the scenario waits before asking.
HANGING_AFTER_MIN = 1
HANGING_WAIT_S = 64.0
SAMPLE_MS = 500
#: How long the sampler and the readers run (past the end of the run: stopped by the scenario).
RUN_S = 600
SETTLE_S = 4.0
SETTINGS = {
    "transaction.state.log.num.partitions": str(TXN_STATE_PARTITIONS),
    "transaction.state.log.min.isr": "1",
    "min.insync.replicas": "1",
}


def java_hash(text: str) -> int:
    """Java's ``String.hashCode`` of ``text`` (UTF-16 code units), as a signed 32-bit integer.

    >>> java_hash("a"), java_hash("payments-stuck") == java_hash("payments-stuck")
    (97, True)
    """
    h = 0
    raw = text.encode("utf-16-be")
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(transactional_id: str, partitions: int = TXN_STATE_PARTITIONS) -> int:
    """The ``__transaction_state`` partition of a transactional id (Kafka's
    ``Utils.abs(id.hashCode()) % partitions``)."""
    h = java_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def capture(ctx: ScenarioContext, bs: str, broker: int, *, hanging: bool) -> None:
    """``kafka-transactions`` list, describe, describe-producers and find-hanging, and the groups."""
    ctx.tool("transactions", ["--bootstrap-server", bs, "list"], check=False)
    for tid in (EARLY_ID, LATE_ID, OPEN_ID):
        ctx.tool("transactions", ["--bootstrap-server", bs, "describe", "--transactional-id", tid], check=False)
    for p in range(PARTITIONS):
        ctx.tool("transactions", ["--bootstrap-server", bs, "describe-producers", "--topic", TOPIC,
                                  "--partition", str(p)], check=False)
    extra = ["--max-transaction-timeout", str(HANGING_AFTER_MIN)] if hanging else []
    ctx.tool("transactions", ["--bootstrap-server", bs, "find-hanging", "--broker-id", str(broker), *extra],
             check=False)
    ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups"], check=False)


def open_start_offset(text: str) -> int | None:
    """The ``CurrentTransactionStartOffset`` of the one open transaction in a ``describe-producers``
    capture (None when none is open)."""
    from workbench.formats.tooltext import parse_tab_table

    for row in parse_tab_table(text):
        start = row.get("CurrentTransactionStartOffset")
        if start not in (None, "None"):
            return int(start)
    return None


def run(ctx: ScenarioContext) -> None:
    """Run the transactions scenario (see the module docstring)."""
    ids = [coordinator_partition(t) for t in (EARLY_ID, LATE_ID, OPEN_ID)]
    if len(set(ids)) != 3:
        raise ScenarioError(f"transactional ids share a __transaction_state partition: {ids}")
    cluster = ctx.cluster("transactions", controllers=1, brokers=1, settings=SETTINGS, jmx=False)
    cluster.format()
    cluster.start()
    ctx.event("cluster_started", cluster="transactions")
    bs = cluster.bootstrap
    broker = cluster.brokers[0]
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", TOPIC, "--partitions", str(PARTITIONS),
                        "--replication-factor", "1"])
    ctx.event("topic_created", topic=TOPIC, partitions=PARTITIONS, replication_factor=1)

    sampler = ctx.background("offsets", ctx.kafka.client(["offsets", bs, TOPIC, str(RUN_S), str(SAMPLE_MS)]))
    readers = {
        group: ctx.background(f"consumer-{group}", ctx.kafka.client(
            ["consume", bs, group, TOPIC, str(RUN_S), "0", isolation]))
        for group, isolation in ((COMMITTED_GROUP, "read_committed"), (UNCOMMITTED_GROUP, "read_uncommitted"))
    }
    for group, isolation in ((COMMITTED_GROUP, "read_committed"), (UNCOMMITTED_GROUP, "read_uncommitted")):
        ctx.event("consumer_start", group=group, topics=[TOPIC], isolation_level=isolation, commit_interval_ms=1000)

    def transactions(tid: str, count: int) -> None:
        child = ctx.background(f"txn-{tid}", ctx.kafka.client(
            ["txn", bs, TOPIC, tid, str(count), str(RECORDS), str(PAUSE_MS), TXN_GROUP]))
        ctx.event("txn_producer_start", topic=TOPIC, transactional_id=tid, transactions=count,
                  records_per_transaction=RECORDS, aborted="every third", group=TXN_GROUP)
        code = child.wait(count * PAUSE_MS / 1000 + 90.0)
        ctx.event("txn_producer_end", transactional_id=tid, exit_code=code, summary=child.tail(1))
        if code != 0:
            raise ScenarioError(f"transactional producer {tid} exited {code}: {child.tail(5)}")

    transactions(EARLY_ID, EARLY_COUNT)

    stuck = ctx.background(f"txn-{OPEN_ID}", ctx.kafka.client(
        ["txn-open", bs, TOPIC, OPEN_ID, str(OPEN_RECORDS), str(OPEN_TIMEOUT_MS)]))
    ctx.wait_until(lambda: "open " in stuck.tail(5), timeout=90.0, interval=0.2,
                   what=f"{OPEN_ID} to open its transaction")
    ctx.event("txn_open", topic=TOPIC, transactional_id=OPEN_ID, records_per_partition=OPEN_RECORDS,
              transaction_timeout_ms=OPEN_TIMEOUT_MS)
    stuck.kill()
    killed_at = ctx.event("producer_killed", transactional_id=OPEN_ID, signal="SIGKILL")

    transactions(LATE_ID, LATE_COUNT)
    ctx.sleep(SETTLE_S)
    capture(ctx, bs, broker.id, hanging=False)

    ctx.event("cluster_stop", cluster="transactions", clean=True)
    cluster.stop()
    lost = broker.log_dir / f"__transaction_state-{coordinator_partition(OPEN_ID)}"
    if not lost.is_dir():
        raise ScenarioError(f"no {lost.name} in broker {broker.id}'s log dir")
    shutil.rmtree(lost)
    ctx.event("coordinator_state_lost", node=broker.id, partition=lost.name, transactional_id=OPEN_ID)
    cluster.start()
    ctx.event("cluster_started", cluster="transactions")

    ctx.sleep(max(0.0, killed_at / 1000 + HANGING_WAIT_S - time.time()))
    capture(ctx, bs, broker.id, hanging=True)
    describe = ctx.tool("transactions", ["--bootstrap-server", bs, "describe-producers", "--topic", TOPIC,
                                         "--partition", "0"], check=False)
    start = open_start_offset(describe)
    if start is None:
        raise ScenarioError(f"no open transaction on {TOPIC}-0 to abort:\n{describe}")
    ctx.tool("transactions", ["--bootstrap-server", bs, "abort", "--topic", TOPIC, "--partition", "0",
                              "--start-offset", str(start)])
    ctx.event("transaction_aborted", topic=TOPIC, partition=0, start_offset=start, by="kafka-transactions abort")
    ctx.sleep(SETTLE_S)
    capture(ctx, bs, broker.id, hanging=True)

    for child in (*readers.values(), sampler):
        child.stop(10.0)
    samples = [json.loads(line) for line in (ctx.work / "offsets.out").read_text().splitlines()
               if line.startswith("{")]
    if not samples:
        raise ScenarioError("the offsets sampler kept no sample")
    out = ctx.bundle.root / "oracle" / "offsets.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(s, sort_keys=True) + "\n" for s in samples), encoding="utf-8")
    ctx.event("cluster_stop", cluster="transactions", clean=True)
