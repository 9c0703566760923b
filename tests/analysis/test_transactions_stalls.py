"""Stalled read_committed groups on small hand-written logs: a read_uncommitted group that commits at
the LSO by chance is not a stall (seen once on a loaded CI machine in the real-Kafka scenario).

Each expected row is worked out by hand from the batches and commits below, in the comments beside it.
"""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from tests.analysis.metadata_rows import at
from workbench.analysis import transactions as txn
from workbench.spark.batches import BATCHES_SCHEMA
from workbench.spark.markers import MARKERS_SCHEMA
from workbench.spark.offsets import OFFSETS_SCHEMA
from workbench.spark.transactions import TRANSACTIONS_SCHEMA

pytestmark = pytest.mark.spark


def batch(part, base, last, ts, producer, *, control=False):
    return (1, f"/b/1/pay-{part}/0.log", "pay", part, 0, base * 100, base, last, last - base + 1, 100, 2, "none",
            "CreateTime", at(ts), at(ts), producer, 0, 0, True, control, 0, 0, True)


def marker(part, offset, ts, producer):
    return (1, f"/b/1/pay-{part}/0.log", "pay", part, offset * 100, offset, at(ts), producer, 0, "COMMIT", 3, None)


def commit(n, ts, group, part, committed):
    return (1, "/b/1/__consumer_offsets-0/0.log", 0, 0, n, at(ts), -1, -1, False, "OffsetCommit", False, group,
            "pay", part, None, committed, -1, "", at(ts), None, 3, None, None, None)


BATCHES = [
    # pay-0: producer 5 commits 0-3 (marker 4); producer 9 opens 5-7 at 3 s and never ends it, so the
    # LSO stays at 5 while producer 5 writes 8-11 and its marker 12 (log end 13 at 5 s)
    batch(0, 0, 3, 1, 5), batch(0, 4, 4, 2, 5, control=True), batch(0, 5, 7, 3, 9),
    batch(0, 8, 11, 4, 5), batch(0, 12, 12, 5, 5, control=True),
    # pay-1: producer 7 writes 0-2 at 1 s and commits at 4 s (marker 3): the LSO goes from 0 to 4
    batch(1, 0, 2, 1, 7), batch(1, 3, 3, 4, 7, control=True),
]
MARKERS = [marker(0, 4, 2, 5), marker(0, 12, 5, 5), marker(1, 3, 4, 7)]
COMMITS = [
    commit(0, 3.5, "committed", 0, 5), commit(1, 4.5, "committed", 0, 5), commit(2, 6.0, "committed", 0, 5),
    commit(3, 3.5, "uncommitted", 0, 5),   # at the LSO (5, log end 8) by chance...
    commit(4, 5.5, "uncommitted", 0, 13),  # ...then past it while it is still 5: it reads uncommitted
    commit(5, 2.0, "committed", 1, 0), commit(6, 3.0, "committed", 1, 0),
    commit(7, 5.0, "committed", 1, 4),     # released: the LSO moved to 4 at 4 s
    commit(8, 1.5, "uncommitted", 1, 0), commit(9, 2.5, "uncommitted", 1, 3),
]


class InlineTables(dict):
    """Tables given as frames, with the per-bundle keeps the analyses call: ``derive`` checkpoints a
    frame as :meth:`workbench.spark.registry.Tables.derive` does, ``kept`` keeps a plain result."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def derive(self, key, compute):
        if key not in self:
            self[key] = compute().localCheckpoint(eager=True)
        return self[key]

    def kept(self, key, compute):
        if key not in self:
            self[key] = compute()
        return self[key]


@pytest.fixture(scope="module")
def tables(spark):
    return InlineTables(batches=spark.createDataFrame(BATCHES, BATCHES_SCHEMA),
                        markers=spark.createDataFrame(MARKERS, MARKERS_SCHEMA),
                        offsets=spark.createDataFrame(COMMITS, OFFSETS_SCHEMA),
                        transactions=spark.createDataFrame([], TRANSACTIONS_SCHEMA))


def test_only_the_group_that_never_read_past_the_lso_is_stalled(tables, spark):
    got = txn.stalled_groups(tables).select("group", "topic", "partition", "lso", "pinned_producer_id", "start",
                                            "last_commit", "commits", "log_end_offset", "released")
    want = spark.createDataFrame([
        # three commits at 5 while producer 9 pins it; the log end reached 13; never released
        ("committed", "pay", 0, 5, 9, at(3.5), at(6.0), 3, 13, None),
        # two commits at 0 while producer 7's transaction is open (log end 3); released at 5 s
        ("committed", "pay", 1, 0, 7, at(2.0), at(3.0), 2, 3, at(5.0)),
    ], "group string, topic string, partition int, lso long, pinned_producer_id long, start timestamp, "
       "last_commit timestamp, commits long, log_end_offset long, released timestamp")
    assertDataFrameEqual(got, want)


def test_the_chance_commit_at_the_lso_is_still_seen_beside_it(tables):
    """The read_uncommitted group's commit at the LSO stays in :func:`commits_vs_lso` (at the LSO then)."""
    rows = {(r.group, r.partition, r.committed_offset): r.at_lso for r in txn.commits_vs_lso(tables).collect()}
    assert rows[("uncommitted", 0, 5)] is True
    assert rows[("uncommitted", 0, 13)] is False
