"""Real bundles with one bad value each go through what the report computes (a sample of the corpus).

The corpus (``benchmarks/bad_value_corpus.py``) changes one value of one file of a real scenario
bundle captured from Apache Kafka, for every reader (metadata log records and batches, data
segment batches, ``__consumer_offsets`` commits, JmxTool CSV, Prometheus text, properties files,
``manifest.json``, ``quorum-state``, snapshots, tool captures), binary values written with a valid
CRC. Here a fixed sample of it, holding every reader and every kind of bad value, runs in this
session's Spark: each variant must load without an error, name the file, its position and the raw
value in a row of the report's problems appendix (``inv.tables.problems`` as the appendix orders
and cuts it, read before any table was built, so a file no report section reads, such as a
``kafka-topics --describe`` capture, is in it too), and leave every row of every table it
reaches identical to the clean bundle's outside the touched row. The whole corpus, with every
affected area's findings compared subject by subject, is ``python benchmarks/bad_value_corpus.py``.
"""

from __future__ import annotations

import pytest

from benchmarks.bad_value_corpus import corpus, run_corpus, sample

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


@pytest.fixture(scope="module")
def variants(kafka_bundle):
    return corpus(build=kafka_bundle)


def test_the_corpus_holds_every_reader_and_kind(variants):
    assert len(variants) >= 200
    readers = {v.reader for v in variants}
    assert {"metadata", "batches", "offsets", "metrics", "configs", "inventory", "quorum", "snapshots",
            "tool_topics", "tool_quorum_status", "tool_quorum_replication", "tool_get_offsets",
            "tool_group_offsets"} <= readers
    assert {"min", "max", "overflow", "negative", "nan", "inf", "garbage"} <= {v.kind for v in variants}
    chosen = sample(variants)
    assert len(chosen) >= 20
    assert {v.reader for v in chosen} == readers
    assert {v.kind for v in chosen} == {v.kind for v in variants}


def test_each_bad_value_is_a_problem_and_nothing_else_changes(spark, variants, tmp_path):
    result = run_corpus(spark, sample(variants), work=tmp_path, findings=False)
    assert result["failures"] == {}
    assert result["passed"] == result["variants"] >= 20
