"""Dump text is a first-class input: a bundle holding only ``kafka-dump-log.sh`` output of the
metadata log gives the same ``metadata`` rows and the same ISR timeline as the binary files Kafka's
tool dumped (the real-Kafka ``isr`` scenario of both pinned releases; the text is Kafka's own)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import workbench
from peer.scenario import built_on
from workbench.analysis import isr

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

#: Columns both paths must agree on (``path`` names the dump file, ``cluster_id`` needs the
#: binary bundle's ``meta.properties``, ``fields`` of control records is the tool's shorter JSON).
COMPARED = ("node_id", "file_kind", "file_offset", "batch_position", "batch_base_offset", "offset", "timestamp",
            "leader_epoch", "is_control", "record_type", "api_key", "version", "topic_id", "topic", "partition",
            "leader", "isr", "replicas", "elr", "last_known_elr", "adding", "removing", "partition_epoch",
            "record_leader_epoch", "leader_recovery_state", "config_resource_type", "config_resource_name",
            "config_name", "config_value", "broker_id", "broker_epoch", "fenced", "in_controlled_shutdown",
            "feature_name", "feature_level", "crc_valid")


def _comparable(metadata):
    """The compared columns, a control record's version left out: Kafka 3.9's tool prints
    ``controlType: LEADER_CHANGE(2)`` and no body, so the text does not hold it (4.x prints the
    body as JSON: those versions are compared by the test on their own)."""
    return metadata.select(*COMPARED).withColumn("version", F.when(~F.col("is_control"), F.col("version")))


def _dump_only(src: Path, into: Path) -> Path:
    """A copy of the bundle's metadata-log dump text alone."""
    for txt in sorted((src / "dumps").rglob("*.txt")):
        rel = txt.relative_to(src)
        if "__cluster_metadata" in rel.as_posix() or txt.name == "bootstrap.checkpoint.txt":
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(txt, into / rel)
    return into


@pytest.mark.parametrize("version", built_on("isr"))
def test_dump_text_alone_gives_the_binary_rows_and_isr_timeline(spark, kafka_bundle, version, tmp_path):
    src = Path(kafka_bundle("isr", version))
    binary = workbench.load(workbench.open_bundle(src), spark)
    text_bundle = workbench.open_bundle(_dump_only(src, tmp_path / "bundle"))
    assert not text_bundle.metadata_files and text_bundle.of_kind("dump_text")
    text = workbench.load(text_bundle, spark)

    assert text.problems.count() == 0, text.problems.limit(5).collect()
    got = text.metadata
    assert got.where(~F.col("path").contains("#")).count() == 0  # every row names its dump file
    assertDataFrameEqual(_comparable(got), _comparable(binary.metadata))
    control = ["node_id", "offset", "record_type", "version"]
    stated = got.where("is_control and version is not null").select(*control)
    assert stated.exceptAll(binary.metadata.select(*control)).count() == 0
    if version.startswith("4."):
        assert stated.count() > 0

    got_states = isr.partition_states(got, static_min_isr=2).drop("cluster_id")
    want_states = isr.partition_states(binary.metadata, static_min_isr=2).drop("cluster_id")
    assert want_states.where("under_min_isr").count() > 0
    assertDataFrameEqual(got_states, want_states)


def test_binary_files_win_over_their_dump_text(spark, kafka_bundle):
    src = Path(kafka_bundle("isr"))
    bundle = workbench.open_bundle(src)
    assert bundle.of_kind("dump_text")
    rows = workbench.load(bundle, spark).metadata
    assert rows.where(F.col("path").contains("#")).count() == 0
