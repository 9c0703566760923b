"""Leader epochs on inline metadata records: the history Kafka's merge gives, unclean elections and
each replica's checkpoint against them (the real-Kafka checks are in ``test_replicas_real_kafka.py``)."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from tests.analysis.metadata_rows import MetadataLog, at
from workbench.analysis import replicas
from workbench.analysis.replicas.epochs import election_losses, leader_history, replica_epochs, unclean_findings
from workbench.analysis.replicas.truncations import groups_beyond, truncations
from workbench.errors import WorkbenchError
from workbench.spark.events import EVENTS_SCHEMA
from workbench.spark.leader_epochs import LEADER_EPOCHS_SCHEMA
from workbench.spark.metadata import METADATA_SCHEMA
from workbench.spark.offsets import OFFSETS_COLUMNS, OFFSETS_SCHEMA
from workbench.spark.source import column_names

pytestmark = pytest.mark.spark

ORDERS, AUDIT = "T3JkZXJzT3JkZXJzT3JkZQ", "QXVkaXRBdWRpdEF1ZGl0QQ"
HISTORY = ("topic string, partition int, epoch int, leader int, previous_leader int, time timestamp, offset long, "
           "isr_before array<int>, isr array<int>, leader_recovery_state int, unclean boolean")


def incident() -> MetadataLog:
    """orders-0: broker 1 leads, the ISR shrinks to it, broker 2 is elected from outside it (Kafka marks
    RECOVERING), the controller bumps the epoch, the partition goes offline and broker 2 comes back
    from outside the empty ISR. audit-0: broker 2 is elected from the eligible leader replicas (clean)."""
    log = MetadataLog()
    log.change(0.5, ORDERS, 0, isr=[1], leader=3)                          # before the partition exists: ignored
    log.topic(1, "orders", ORDERS).partition(1, ORDERS, 0, [1, 2, 3], [1, 2, 3], 1)       # offset 2, epoch 0
    log.topic(2, "audit", AUDIT).partition(2, AUDIT, 0, [1, 2], [1, 2], 1)               # offset 4, epoch 0
    log.change(10, ORDERS, 0, isr=[1])                                      # 5: no leader change, epoch 0
    log.change(20, ORDERS, 0, isr=[2], leader=2, recovery=1)                # 6: unclean, epoch 1
    log.change(21, ORDERS, 0, leader=2)                                     # 7: same leader, epoch bumped: 2
    log.change(22, ORDERS, 0, isr=[2, 1], recovery=0)                       # 8: recovered, epoch 2
    log.change(30, AUDIT, 0, isr=[1], elr=[2])                              # 9
    log.change(31, AUDIT, 0, isr=[2], leader=2, elr=[])                     # 10: from the ELR: clean, epoch 1
    log.change(40, ORDERS, 0, isr=[], leader=-1)                            # 11: offline, epoch 3
    log.change(50, ORDERS, 0, isr=[2], leader=2, recovery=1)                # 12: the last leader again, epoch 4
    return log


def test_leader_epochs_replay_as_kafka_merges_them_and_elections_outside_the_isr_are_unclean(spark):
    history = leader_history(spark.createDataFrame(incident().rows, METADATA_SCHEMA))
    got = history.select(*(c.split(" ")[0] for c in HISTORY.split(", ")))
    assertDataFrameEqual(got, spark.createDataFrame([
        ("orders", 0, 0, 1, None, at(1), 2, None, [1, 2, 3], 0, False),
        ("orders", 0, 1, 2, 1, at(20), 6, [1], [2], 1, True),
        ("orders", 0, 2, 2, 2, at(21), 7, [2], [2], None, False),
        ("orders", 0, 3, -1, 2, at(40), 11, [2, 1], [], None, False),
        ("orders", 0, 4, 2, 2, at(50), 12, [], [2], 1, True),
        ("audit", 0, 0, 1, None, at(2), 4, None, [1, 2], 0, False),
        ("audit", 0, 1, 2, 1, at(31), 10, [1], [2], None, False),
    ], HISTORY))


def test_an_election_of_another_broker_is_critical_and_of_the_last_leader_a_warning(spark):
    history = leader_history(spark.createDataFrame(incident().rows, METADATA_SCHEMA))
    found = unclean_findings(history).orderBy("start").collect()
    assert [(f["kind"], f["severity"], f["subject"], f["start"]) for f in found] == [
        ("unclean_election", "critical", "orders-0", at(20).replace(tzinfo=None)),
        ("unclean_reelection", "warning", "orders-0", at(50).replace(tzinfo=None))]
    assert found[0]["summary"].startswith(
        "orders-0: broker 2 was elected leader from outside the ISR [1] at ")
    assert found[0]["summary"].endswith(
        "(leader epoch 1); Kafka marked its recovery RECOVERING: what broker 1, its last leader, wrote past the new "
        "leader's log end was lost")
    assert "it led the partition last, so no other replica's records were lost" in found[1]["summary"]
    assert "from outside the ISR [] (its last in-sync replicas: [2, 1]) at " in found[1]["summary"]
    assert dict(found[0]["figures"]) == {"epoch": 1.0, "leader": 2.0, "offset": 6.0}  # no copy: nothing counted


def test_each_checkpoint_entry_ends_where_the_next_begins_and_names_its_leader(spark):
    history = leader_history(spark.createDataFrame(incident().rows, METADATA_SCHEMA))
    entries = spark.createDataFrame([
        (None, 1, "orders", 0, 0, 0, 0, "/b/1/orders-0/leader-epoch-checkpoint"),
        (None, 2, "orders", 0, 0, 0, 0, "/b/2/orders-0/leader-epoch-checkpoint"),
        (None, 2, "orders", 0, 1, 1, 80, "/b/2/orders-0/leader-epoch-checkpoint"),
        (None, 2, "orders", 0, 2, 9, 95, "/b/2/orders-0/leader-epoch-checkpoint"),   # an epoch the log never had
    ], LEADER_EPOCHS_SCHEMA)
    ranges = spark.createDataFrame([(None, "orders", 0, 1, 0, 100), (None, "orders", 0, 2, 0, 120)],
                                   "cluster_id string, topic string, partition int, node_id int, "
                                   "log_start_offset long, log_end_offset long")
    got = replica_epochs(entries, history, ranges).drop("cluster_id")
    assertDataFrameEqual(got, spark.createDataFrame([
        ("orders", 0, 1, 0, 0, 100, 1, at(1), False),
        ("orders", 0, 2, 0, 0, 80, 1, at(1), False),
        ("orders", 0, 2, 1, 80, 95, 2, at(20), True),
        ("orders", 0, 2, 9, 95, 120, None, None, None),
    ], "topic string, partition int, node_id int, epoch int, start_offset long, end_offset long, leader int, "
       "elected timestamp, unclean boolean"))


def test_the_area_reports_unclean_elections_beside_the_replica_comparison(spark):
    from workbench.spark.replica_batches import REPLICA_BATCHES_SCHEMA

    history = leader_history(spark.createDataFrame(incident().rows, METADATA_SCHEMA))
    batches = spark.createDataFrame([], REPLICA_BATCHES_SCHEMA)
    ranges = replicas.replica_ranges(batches)
    epochs = replica_epochs(spark.createDataFrame([], LEADER_EPOCHS_SCHEMA), history)
    losses = election_losses(history, epochs, batches)
    cuts, groups = truncations(events(spark, [])), groups_beyond(offsets(spark, []), losses)
    result = replicas.ReplicasAnalysis(None, {}, ranges, replicas.compare_replicas(batches, ranges), history, epochs,
                                       losses, cuts, groups)
    assert sorted(replicas.area_findings(result).select("kind").toPandas().kind) == [
        "unclean_election", "unclean_reelection"]
    assert replicas.key_figures(result)["unclean_elections"] == 2
    assert [int(e) for e in replicas.view_frames(result)["elections"].toPandas().epoch] == [1, 4]


def test_a_malformed_checkpoint_line_is_a_problem_and_the_other_entries_are_kept(spark, tmp_path):
    node = tmp_path / "kafka-1"
    (node / "orders-0").mkdir(parents=True)
    (node / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    (node / "orders-0" / "leader-epoch-checkpoint").write_text("0\n3\n0 0\n2 x\n5 90\n")
    (node / "__cluster_metadata-0").mkdir()
    (node / "__cluster_metadata-0" / "leader-epoch-checkpoint").write_text("0\n1\n4 0\n")   # the quorum's: left out
    tables = workbench.load(workbench.open_bundle(tmp_path), spark)
    got = tables["leader_epochs"].select("cluster_id", "node_id", "topic", "partition", "entry", "epoch",
                                         "start_offset")
    assertDataFrameEqual(got, spark.createDataFrame(
        [("AAAAAAAAAAAAAAAAAAAAAA", 1, "orders", 0, 0, 0, 0), ("AAAAAAAAAAAAAAAAAAAAAA", 1, "orders", 0, 1, 5, 90)],
        "cluster_id string, node_id int, topic string, partition int, entry int, epoch int, start_offset long"))
    problems = tables.problems.where("path like '%leader-epoch-checkpoint'").select("kind", "detail").collect()
    assert [(p["kind"], p["detail"]) for p in problems] == [("decode_error", "line 4: malformed entry '2 x'")]
    with pytest.raises(WorkbenchError):
        workbench.load(workbench.open_bundle(tmp_path), spark, strict=True)["leader_epochs"].count()


def test_the_records_the_old_leader_held_past_the_new_leaders_start_are_what_the_election_lost(spark):
    """Broker 1 led epoch 0 to offset 99; broker 2 had 0-79 when it was elected uncleanly (epoch 1) and
    wrote 80-119; broker 1's copy, not yet truncated, is in the bundle: offsets 80-99 were lost."""
    from workbench.spark.replica_batches import REPLICA_BATCHES_SCHEMA

    history = leader_history(spark.createDataFrame(incident().rows, METADATA_SCHEMA))
    path = "/b/{}/orders-0/leader-epoch-checkpoint"
    entries = spark.createDataFrame([(None, 1, "orders", 0, 0, 0, 0, path.format(1)),
                                     (None, 2, "orders", 0, 0, 0, 0, path.format(2)),
                                     (None, 2, "orders", 0, 1, 1, 80, path.format(2))], LEADER_EPOCHS_SCHEMA)

    def batch(node, base, epoch):
        return (None, node, "orders", 0, f"/b/{node}/orders-0/0.log", base * 10, base, base + 9, 10, 100, epoch,
                base + epoch, False, at(base / 10).replace(tzinfo=None))

    batches = spark.createDataFrame([batch(1, b, 0) for b in range(0, 100, 10)]
                                    + [batch(2, b, 0 if b < 80 else 1) for b in range(0, 120, 10)],
                                    REPLICA_BATCHES_SCHEMA)
    ranges = replicas.replica_ranges(batches)
    epochs = replica_epochs(entries, history, ranges)
    losses = election_losses(history, epochs, batches)
    assertDataFrameEqual(losses.drop("cluster_id", "truncated_at"), spark.createDataFrame(
        [("orders", 0, 1, 2, 1, at(20), 80, 100, 2, 20, at(8), at(9))],
        "topic string, partition int, epoch int, leader int, previous_leader int, elected timestamp, new_start long, "
        "old_end long, lost_batches long, lost_records long, first_time timestamp, last_time timestamp"))
    found = unclean_findings(history, losses).orderBy("start").collect()
    assert found[0]["kind"] == "unclean_election"
    assert found[0]["summary"].endswith(
        f"(leader epoch 1); Kafka marked its recovery RECOVERING: 20 record(s) (offsets 80–99, written "
        f"{at(8):%Y-%m-%d %H:%M:%S} UTC to {at(9):%Y-%m-%d %H:%M:%S} UTC) that broker 1, its last leader, held past "
        "the new leader's log end were lost")
    assert dict(found[0]["figures"])["lost_records"] == 20.0
    # once broker 1 has truncated to where broker 2 went on, its copy shows nothing lost
    truncated = batches.where("node_id = 2 or base_offset < 80")
    short = replica_epochs(entries, history, replicas.replica_ranges(truncated))
    again = unclean_findings(history, election_losses(history, short, truncated)).orderBy("start").collect()
    assert "broker 1's copy in the bundle holds nothing past the new leader's log end" in again[0]["summary"]


def events(spark, rows: list[dict]):
    """An ``events`` frame of ``rows`` (each a dict of some of its columns; ``orders-0`` by default)."""
    names = column_names(EVENTS_SCHEMA)
    full = [{"topic": "orders", "partition": 0, "path": f"/b/{r['node_id']}/server.log", **r} for r in rows]
    return spark.createDataFrame([tuple(r.get(n) for n in names) for r in full], EVENTS_SCHEMA)


def offsets(spark, rows: list[dict]):
    """An ``offsets`` frame of offset commits of ``orders-0`` (each a dict of some of its columns)."""
    full = [{"record_kind": "OffsetCommit", "deleted": False, "topic": "orders", "partition": 0, **r} for r in rows]
    return spark.createDataFrame([tuple(r.get(n) for n in OFFSETS_COLUMNS) for r in full], OFFSETS_SCHEMA)


def test_a_returning_leaders_truncation_line_tells_what_the_election_lost_and_who_had_read_it(spark):
    """Broker 1 led orders-0 to offset 99 (epoch 0); broker 2 was elected uncleanly at offset 80 (epoch 1,
    at 20 s); broker 1 came back at 60 s (its log loaded with end 100), started as a follower and
    truncated to 80: its copy now holds broker 2's batches, and only its text log says 20 records went.
    Group ``readers`` had committed 95 before the election and is reset to 80 later; ``slow`` had 70."""
    from workbench.spark.replica_batches import REPLICA_BATCHES_SCHEMA

    history = leader_history(spark.createDataFrame(incident().rows, METADATA_SCHEMA))
    path = "/b/{}/orders-0/leader-epoch-checkpoint"
    entries = spark.createDataFrame([(None, 1, "orders", 0, 0, 0, 0, path.format(1)),
                                     (None, 1, "orders", 0, 1, 1, 80, path.format(1)),
                                     (None, 2, "orders", 0, 0, 0, 0, path.format(2)),
                                     (None, 2, "orders", 0, 1, 1, 80, path.format(2))], LEADER_EPOCHS_SCHEMA)

    def batch(node, base, epoch):
        return (None, node, "orders", 0, f"/b/{node}/orders-0/0.log", base * 10, base, base + 9, 10, 100, epoch,
                base + epoch, False, at(base / 10).replace(tzinfo=None))

    batches = spark.createDataFrame([batch(n, b, 0 if b < 80 else 1) for n in (1, 2) for b in range(0, 120, 10)],
                                    REPLICA_BATCHES_SCHEMA)
    log = events(spark, [
        {"node_id": 1, "kind": "server", "time": at(59), "line_no": 1, "topic": None, "partition": None},
        {"node_id": 1, "kind": "log_loaded", "time": at(60), "offset": 100, "line_no": 2},
        {"node_id": 1, "kind": "follower_start", "time": at(61), "offset": 100, "line_no": 3},
        {"node_id": 1, "kind": "truncated", "time": at(62), "offset": 80, "line_no": 4},
        # broker 2: loaded at 5 s, led, then truncated at 90 s: what it held then is not in its log
        {"node_id": 2, "kind": "log_loaded", "time": at(5), "offset": 0, "line_no": 1},
        {"node_id": 2, "kind": "leader_start", "time": at(20), "offset": 80, "line_no": 2},
        {"node_id": 2, "kind": "truncated", "time": at(90), "offset": 110, "line_no": 3},
    ])
    cuts = truncations(log)
    assertDataFrameEqual(cuts.select("node_id", "time", "truncated_to", "end_before", "dropped", "loaded"),
                         spark.createDataFrame([(1, at(62), 80, 100, 20, at(60)), (2, at(90), 110, None, None, None)],
                                               "node_id int, time timestamp, truncated_to long, end_before long, "
                                               "dropped long, loaded timestamp"))
    epochs = replica_epochs(entries, history, replicas.replica_ranges(batches))
    losses = election_losses(history, epochs, batches, cuts)
    assertDataFrameEqual(losses.drop("cluster_id"), spark.createDataFrame(
        [("orders", 0, 1, 2, 1, at(20), 80, 100, None, 20, None, None, at(62))],
        "topic string, partition int, epoch int, leader int, previous_leader int, elected timestamp, new_start long, "
        "old_end long, lost_batches long, lost_records long, first_time timestamp, last_time timestamp, "
        "truncated_at timestamp"))
    commits = offsets(spark, [
        {"group": "readers", "committed_offset": 60, "commit_timestamp": at(10)},
        {"group": "readers", "committed_offset": 95, "commit_timestamp": at(15)},
        {"group": "readers", "committed_offset": 95, "commit_timestamp": at(15), "node_id": 2},   # another replica
        {"group": "slow", "committed_offset": 70, "commit_timestamp": at(16)},
        {"group": "readers", "committed_offset": 80, "commit_timestamp": at(70)},
        {"group": "readers", "committed_offset": 85, "commit_timestamp": at(75)},
        {"group": "aborted", "committed_offset": 99, "commit_timestamp": at(17), "is_transactional": True,
         "txn_outcome": "ABORT"},                                      # a transaction's commit that never took effect
        {"record_kind": "TxnMarker", "commit_timestamp": at(18)},
    ])
    groups = groups_beyond(commits, losses)
    assertDataFrameEqual(groups.drop("cluster_id"), spark.createDataFrame(
        [("orders", 0, 1, at(20), 80, "readers", 95, at(15), 80, at(70))],
        "topic string, partition int, epoch int, elected timestamp, new_start long, group string, "
        "committed_offset long, committed_at timestamp, next_offset long, next_at timestamp"))
    found = unclean_findings(history, losses, groups).orderBy("start").collect()[0]
    assert found["summary"].endswith(
        f"RECOVERING: 20 record(s) (offsets 80–99) that broker 1, its last leader, held past the new leader's log end "
        f"were lost: broker 1 dropped them when it returned and truncated to offset 80 at "
        f"{at(62):%Y-%m-%d %H:%M:%S} UTC (its server log); consumer group(s) that had committed past the new log end "
        "(80), whose next fetch resets them: readers (offset 95)"), found["summary"]
    assert dict(found["figures"])["lost_records"] == 20.0 and dict(found["figures"])["groups_past_end"] == 1.0
