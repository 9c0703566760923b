"""The ``mirror`` table against MirrorMaker 2's own classes.

Kafka's dump tool has no decoder for MirrorMaker 2's topics, and the scenario dumps carry no
payloads, so the oracle is Kafka itself run on the same files: ``tests/spark/java/MirrorRecords.java``
walks each segment with Kafka's ``FileRecords`` and decodes its records with MirrorMaker 2's
``OffsetSync``/``Checkpoint``/``Heartbeat`` classes and Connect's ``JsonConverter``, on the
Kafka release that wrote the bundle. The topic kinds are told here by MirrorMaker 2's default
names; the expected cluster of each node is the scenario manifest's, and the flow of each record
the one enabled flow of the bundle's ``mm2.properties`` (a heartbeat's is its key).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import workbench
from peer.scenario import built_on
from tests.spark.internal_topics import (
    TS,
    copy_nodes,
    first_value_position,
    node_of,
    segments,
    stamp,
    topic_partition,
    write_segment,
)
from workbench.formats.batch import Record, encode_batch, read_batches
from workbench.formats.kraft_files import parse_java_properties
from workbench.spark.mirror import MIRROR_SCHEMA, flow_of, mirror_context
from workbench.spark.source import column_names


def kafka_and_spark(fn):
    """The tests that run Kafka's classes and Spark (the alias logic below needs neither)."""
    return pytest.mark.spark(pytest.mark.kafka(fn))

COLUMNS = column_names(MIRROR_SCHEMA)
ORACLE = Path(__file__).with_name("java") / "MirrorRecords.java"


def oracle_kind(topic: str) -> str | None:
    """MirrorMaker 2's default topic names (DefaultReplicationPolicy, separator '.')."""
    if topic.startswith("mm2-offset-syncs.") and topic.endswith(".internal"):
        return "offset-syncs"
    if topic.endswith(".checkpoints.internal"):
        return "checkpoints"
    if topic == "heartbeats" or topic.endswith(".heartbeats"):
        return "heartbeats"
    if topic.startswith("mm2-offsets.") and topic.endswith(".internal"):
        return "connect-offsets"
    return None


def run_oracle(kafka, files: list[tuple[str, Path]], work: Path) -> list[dict]:
    """MirrorMaker 2's reading of ``files`` (kind, segment): one dict per record."""
    text = ORACLE.read_text()
    if kafka.has_class("org.apache.kafka.common.record.internal.FileRecords"):
        for name in ("FileRecords", "Record"):
            text = text.replace(f"org.apache.kafka.common.record.{name};",
                                f"org.apache.kafka.common.record.internal.{name};")
    source = work / "MirrorRecords.java"
    source.write_text(text)
    cmd = kafka.java(str(source), [a for kind, seg in files for a in (kind, str(seg))], heap="256m")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def connect_kind(partition: dict) -> str:
    if {"cluster", "topic", "partition"} <= partition.keys():
        return "source_offset"
    if {"group", "topic", "partition"} <= partition.keys():
        return "checkpoint_offset"
    if {"sourceClusterAlias", "targetClusterAlias"} <= partition.keys():
        return "heartbeat_offset"
    return "connect_offset"


def as_text_map(value: dict | None) -> str | None:
    """A JSON object as Spark's ``to_json`` of a sorted ``map<string,string>`` writes it."""
    if value is None:
        return None
    return json.dumps({k: str(v) for k, v in sorted(value.items())}, separators=(",", ":"))


def placement(row: dict, flow: tuple[str, str]) -> str | None:
    """The cluster MirrorMaker 2 puts a record's topic in (offset syncs at the default location): offset
    syncs in the flow's source; a replicated heartbeats copy ``X.heartbeats`` downstream of X; the rest
    (checkpoints, the local heartbeats topic, the Connect offsets topic) in the flow's target."""
    if row["kind"] == "offset_sync":
        return row["source_alias"]
    if row["internal_topic"].endswith(".heartbeats"):  # replicated from X by the flow X->Y
        return flow[1] if row["internal_topic"] == f"{flow[0]}.heartbeats" else None
    return row["target_alias"]


def expected_rows(oracle: list[dict], kinds: dict[str, str], clusters: dict[int, str],
                  flow: tuple[str, str]) -> list[dict]:
    """Rows from MirrorMaker 2's reading; without ``clusters`` (a manifest), MM2's placement names them."""
    rows = []
    for o in oracle:
        seg = Path(o["path"])
        topic, partition = topic_partition(seg)
        kind = kinds[o["path"]]
        row = {"node_id": node_of(seg), "path": o["path"], "internal_topic": topic, "internal_partition": partition,
               "batch_position": o["position"], "offset": o["offset"], "timestamp": stamp(o["timestamp"]),
               "deleted": o["deleted"], "source_alias": flow[0], "target_alias": flow[1]}
        if kind == "offset-syncs":
            row.update(kind="offset_sync", topic=o["topic"], partition=o["partition"],
                       upstream_offset=o.get("upstreamOffset"), downstream_offset=o.get("downstreamOffset"))
        elif kind == "checkpoints":
            row.update(kind="checkpoint", group=o["group"], topic=o["topic"], partition=o["partition"],
                       upstream_offset=o.get("upstreamOffset"), downstream_offset=o.get("downstreamOffset"),
                       metadata=o.get("metadata"), value_version=o.get("version"))
        elif kind == "heartbeats":
            row.update(kind="heartbeat", source_alias=o["sourceClusterAlias"], target_alias=o["targetClusterAlias"],
                       heartbeat_timestamp=stamp(o.get("heartbeatTimestamp")), value_version=o.get("version"))
        else:
            p = o["sourcePartition"]
            row.update(kind=connect_kind(p), connector=o["connector"], connect_partition=as_text_map(p),
                       connect_offset=as_text_map(o["sourceOffset"]), group=p.get("group"), topic=p.get("topic"),
                       partition=p.get("partition"))
            if row["kind"] == "source_offset" and o["sourceOffset"] is not None:
                row["upstream_offset"] = o["sourceOffset"]["offset"]
            if row["kind"] == "heartbeat_offset":
                row.update(source_alias=p["sourceClusterAlias"], target_alias=p["targetClusterAlias"])
        row["cluster"] = clusters[row["node_id"]] if clusters else placement(row, flow)
        rows.append(row)
    return rows


def normalised(frame: DataFrame) -> DataFrame:
    """Connect JSON as sorted maps (the key order inside Connect's JSON is a Java HashMap's)."""
    for name in ("connect_partition", "connect_offset"):
        m = F.from_json(name, "map<string,string>")
        frame = frame.withColumn(name, F.when(F.col(name).isNotNull(),
                                              F.to_json(F.map_from_entries(F.array_sort(F.map_entries(m))))))
    return frame


def frame(spark, rows: list[dict]) -> DataFrame:
    return spark.createDataFrame([tuple(r.get(c) for c in COLUMNS) for r in rows], MIRROR_SCHEMA)


def mirror_segments(root: Path) -> dict[str, str]:
    return {str(seg): oracle_kind(topic_partition(seg)[0]) for seg in segments(root, oracle_kind)}


def only_flow(root: Path) -> tuple[str, str]:
    props = parse_java_properties((root / "mm2.properties").read_text())
    [flow] = [tuple(k[: -len(".enabled")].split("->")) for k, v in props.items()
              if "->" in k and k.endswith(".enabled") and v.strip() == "true"]
    return flow


@pytest.fixture(scope="module", params=built_on("mm2"))
def real(request, spark, kafka_bundle, tmp_path_factory):
    from peer.kafka import fetch

    root = Path(kafka_bundle("mm2", request.param)).resolve()
    kinds = mirror_segments(root)
    oracle = run_oracle(fetch(request.param), [(k, Path(p)) for p, k in kinds.items()],
                        tmp_path_factory.mktemp("oracle"))
    manifest = json.loads((root / "manifest.json").read_text())
    clusters = {n["id"]: n["cluster"] for n in manifest["nodes"]}
    return root, kinds, oracle, clusters, workbench.load(workbench.open_bundle(root), spark)


@kafka_and_spark
def test_mirror_equals_mirrormaker_on_both_versions(spark, real):
    root, kinds, oracle, clusters, tables = real
    want = expected_rows(oracle, kinds, clusters, only_flow(root))
    assert {r["kind"] for r in want} >= {"offset_sync", "checkpoint", "heartbeat", "source_offset"}
    assertDataFrameEqual(normalised(tables.mirror), normalised(frame(spark, want)))
    assert tables.problems_of("mirror").count() == 0


@kafka_and_spark
def test_without_a_manifest_the_configuration_names_the_clusters(spark, real, tmp_path):
    """A bundle with mm2.properties but no manifest: the same rows, the clusters from MM2's placement,
    which is where the manifest says the topics are."""
    root, kinds, oracle, clusters, _ = real
    placed = expected_rows(oracle, kinds, {}, only_flow(root))
    assert [r["cluster"] for r in placed] == [clusters[r["node_id"]] for r in placed]
    copy = copy_nodes(root, tmp_path / "bundle").resolve()
    (copy / "manifest.json").unlink()
    moved = {str(copy / Path(p).relative_to(root)): k for p, k in kinds.items()}
    relocated = [{**o, "path": str(copy / Path(o["path"]).relative_to(root))} for o in oracle]
    want = expected_rows(relocated, moved, {}, only_flow(root))
    tables = workbench.load(workbench.open_bundle(copy), spark)
    assertDataFrameEqual(normalised(tables.mirror), normalised(frame(spark, want)))


@kafka_and_spark
def test_tombstones_and_every_connect_offset_kind(spark, tmp_path):
    """Segments written with the project's encoders, read by MirrorMaker 2's classes and by the table."""
    from peer.kafka import DEFAULT_VERSION, fetch
    from workbench.formats.mirror import encode_checkpoint, encode_connect_offset, encode_heartbeat, encode_offset_sync

    root = tmp_path.resolve() / "bundle"
    (root).mkdir()
    (root / "mm2.properties").write_text("clusters = east, west\neast->west.enabled = true\n")
    sync_key = encode_offset_sync("orders", 2, 0, 0)[0]
    files = {
        (1, "mm2-offset-syncs.west.internal-0"): [encode_offset_sync("orders", 2, 1500, 1498), (sync_key, None)],
        (2, "east.checkpoints.internal-0"): [encode_checkpoint("app", "east.orders", 2, 100, 98, "meta"),
                                             (encode_checkpoint("app", "east.orders", 1, 0, 0)[0], None)],
        (2, "heartbeats-0"): [encode_heartbeat("east", "west", TS)],
        (2, "mm2-offsets.east.internal-0"): [
            encode_connect_offset("MirrorSourceConnector", {"cluster": "east", "partition": 2, "topic": "orders"}, 41),
            encode_connect_offset("MirrorSourceConnector", {"cluster": "east", "partition": 1, "topic": "orders"},
                                  None),
            encode_connect_offset("MirrorCheckpointConnector", {"group": "app", "partition": 2,
                                                                "topic": "east.orders"}, 0),
            encode_connect_offset("MirrorHeartbeatConnector", {"sourceClusterAlias": "east",
                                                               "targetClusterAlias": "west"}, 0),
            encode_connect_offset("my-jdbc-source", {"table": "accounts"}, 7)],
    }
    kinds = {}
    for (node, directory), records in files.items():
        batch = encode_batch([Record(i, TS + i, k, v, []) for i, (k, v) in enumerate(records)], base_offset=0)
        seg = write_segment(root, node, directory, [batch])
        kinds[str(seg)] = oracle_kind(topic_partition(seg)[0])
    oracle = run_oracle(fetch(DEFAULT_VERSION), [(k, Path(p)) for p, k in kinds.items()], tmp_path)
    want = expected_rows(oracle, kinds, {}, ("east", "west"))
    assert {r["kind"] for r in want} == {"offset_sync", "checkpoint", "heartbeat", "source_offset",
                                         "checkpoint_offset", "heartbeat_offset", "connect_offset"}
    assert sum(r["deleted"] for r in want) == 3
    tables = workbench.load(workbench.open_bundle(root), spark)
    assertDataFrameEqual(normalised(tables.mirror), normalised(frame(spark, want)))
    assert tables.problems_of("mirror").count() == 0


@kafka_and_spark
def test_a_connect_clusters_offsets_topic_by_its_usual_name_or_its_workers_configuration(spark, tmp_path):
    """MirrorMaker 2's connectors run on a Connect cluster keep their positions in the worker's offsets
    topic: ``connect-offsets`` (Apache Kafka's sample worker configuration) and a topic the worker's
    ``connect-distributed.properties`` names. Read by MirrorMaker 2's classes and by the table alike;
    a source offset's flow comes from its key, another connector's belongs to no flow."""
    from peer.kafka import DEFAULT_VERSION, fetch
    from workbench.formats.mirror import encode_connect_offset

    root = tmp_path.resolve() / "bundle"
    root.mkdir()
    (root / "mm2.properties").write_text("clusters = east, west\neast->west.enabled = true\n")
    (root / "connect-distributed.properties").write_text("offset.storage.topic = dr-offsets\n")
    files = {
        (2, "connect-offsets-0"): [
            encode_connect_offset("MirrorSourceConnector", {"cluster": "east", "partition": 2, "topic": "orders"}, 41),
            encode_connect_offset("my-jdbc-source", {"table": "accounts"}, 7)],
        (2, "dr-offsets-3"): [
            encode_connect_offset("MirrorSourceConnector", {"cluster": "east", "partition": 0, "topic": "orders"}, 9),
            encode_connect_offset("MirrorSourceConnector", {"cluster": "east", "partition": 0, "topic": "orders"},
                                  None)],
        (2, "other-offsets-0"): [   # named by no configuration: not read
            encode_connect_offset("MirrorSourceConnector", {"cluster": "east", "partition": 1, "topic": "orders"}, 5)],
    }
    kinds = {}
    for (node, directory), records in files.items():
        batch = encode_batch([Record(i, TS + i, k, v, []) for i, (k, v) in enumerate(records)], base_offset=0)
        seg = write_segment(root, node, directory, [batch])
        if not directory.startswith("other-"):
            kinds[str(seg)] = "connect-offsets"
    oracle = run_oracle(fetch(DEFAULT_VERSION), [(k, Path(p)) for p, k in kinds.items()], tmp_path)
    want = expected_rows(oracle, kinds, {}, ("east", "west"))
    for row in want:
        if row["kind"] != "source_offset":
            row.update(source_alias=None, target_alias=None, cluster=None)
    assert sorted((r["internal_topic"], r["kind"], r.get("upstream_offset") or -1) for r in want) == [
        ("connect-offsets", "connect_offset", -1), ("connect-offsets", "source_offset", 41),
        ("dr-offsets", "source_offset", -1), ("dr-offsets", "source_offset", 9)]
    tables = workbench.load(workbench.open_bundle(root), spark)
    assertDataFrameEqual(normalised(tables.mirror), normalised(frame(spark, want)))
    assert tables.problems_of("mirror").count() == 0


@kafka_and_spark
def test_damaged_copy_keeps_every_readable_record(spark, real, tmp_path):
    root, kinds, oracle, clusters, _ = real
    copy = copy_nodes(root, tmp_path / "bundle").resolve()
    [checkpoints] = segments(copy, lambda t: t.endswith(".checkpoints.internal"))
    [syncs] = segments(copy, lambda t: t.startswith("mm2-offset-syncs."))
    data = bytearray(checkpoints.read_bytes())
    victim = list(read_batches(open(checkpoints, "rb"), str(checkpoints)))[3].position
    at = first_value_position(data, victim)
    data[at] = 0x80                                  # the checkpoint value's version: negative
    checkpoints.write_bytes(bytes(data))
    last = list(read_batches(open(syncs, "rb"), str(syncs)))[-1].position
    syncs.write_bytes(syncs.read_bytes()[: last + 20])  # the offset syncs' last batch cut short

    relocated = [{**o, "path": str(copy / Path(o["path"]).relative_to(root))} for o in oracle]
    moved = {str(copy / Path(p).relative_to(root)): k for p, k in kinds.items()}
    want, first = [], None
    for r in expected_rows(relocated, moved, clusters, only_flow(root)):
        if r["path"] == str(syncs) and r["batch_position"] == last:
            continue
        if r["path"] == str(checkpoints) and r["batch_position"] == victim and first is None:
            first = r["offset"]
            r = {**r, "upstream_offset": None, "downstream_offset": None, "metadata": None, "value_version": None}
        want.append(r)
    tables = workbench.load(workbench.open_bundle(copy), spark)
    got = tables.mirror
    assertDataFrameEqual(normalised(got.drop("error")), normalised(frame(spark, want).drop("error")))
    assert [(r.internal_topic, r.offset) for r in got.where("error is not null").collect()] == [
        (checkpoints.parent.name[: -len("-0")], first)]
    assertDataFrameEqual(tables.problems.select("path", "position", "kind"), spark.createDataFrame(
        [(str(checkpoints), victim, "crc_mismatch"), (str(checkpoints), victim, "decode_error"),
         (str(syncs), last, "truncated")], "path string, position long, kind string"))


def test_flows_and_clusters_from_names_keys_and_configuration(tmp_path):
    """Where each record's aliases come from, without a manifest (no Spark)."""
    from workbench.formats.mirror import mirror_topology

    three = mirror_topology({"clusters": "A, B, C", "A->B.enabled": "true", "A->C.enabled": "true",
                             "C->B.enabled": "true", "A->C.offset-syncs.topic.location": "target"})
    # offset syncs for B at the default location lie in A or C: the node's cluster tells which
    assert flow_of("offset_sync", "offset_syncs", "B", {}, "A", three) == ("A", "B", "A")
    assert flow_of("offset_sync", "offset_syncs", "B", {}, None, three) == (None, "B", None)
    # mm2-offset-syncs.A.internal on C: the flow A->C keeps its syncs in the target
    assert flow_of("offset_sync", "offset_syncs", "A", {}, None, three) == ("A", "C", "C")
    # A's checkpoints: two flows leave A, so only the node's cluster tells the target
    assert flow_of("checkpoint", "checkpoints", "A", {}, None, three) == ("A", None, None)
    assert flow_of("checkpoint", "checkpoints", "A", {}, "C", three) == ("A", "C", "C")
    # C's flow to B is the only one leaving C
    assert flow_of("source_offset", "connect_offsets", "C", {"cluster": "C"}, None, three) == ("C", "B", "B")
    # a heartbeat names its flow itself; a replicated copy lies downstream of its nearest upstream
    key = {"sourceClusterAlias": "A", "targetClusterAlias": "C"}
    assert flow_of("heartbeat", "heartbeats", None, key, None, three) == ("A", "C", "C")
    assert flow_of("heartbeat", "heartbeats", "C", key, None, three) == ("A", "C", "B")
    nothing = mirror_topology({})
    assert flow_of("checkpoint", "checkpoints", "A", {}, None, nothing) == ("A", None, None)


def test_offsets_topics_named_by_the_configurations(tmp_path):
    """``offset.storage.topic`` of MirrorMaker 2's configuration (also per cluster alias) and of every
    Connect worker's configuration name offsets topics; another prefix names none (no Spark)."""
    from workbench.formats.mirror import classify_mirror_topic

    (tmp_path / "nodes" / "1" / "logs").mkdir(parents=True)
    (tmp_path / "mm2.properties").write_text("clusters = a, b\na->b.enabled = true\nb.offset.storage.topic = b-offs\n"
                                             "x.offset.storage.topic = not-an-alias\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "connect-distributed-2.properties").write_text("offset.storage.topic=team-offsets\n")
    context, problems = mirror_context(workbench.open_bundle(tmp_path))
    assert (context["offsets_topics"], context["flows"], problems) == (["b-offs", "team-offsets"], [["a", "b"]], [])
    assert [classify_mirror_topic(t, ".", context["offsets_topics"]) for t in
            ("b-offs", "team-offsets", "not-an-alias", "connect-offsets", "mirrormaker2-cluster-offsets")] == [
        ("connect_offsets", None), ("connect_offsets", None), None, ("connect_offsets", None),
        ("connect_offsets", None)]


def test_configuration_problems_and_context(tmp_path):
    (tmp_path / "nodes" / "1" / "logs").mkdir(parents=True)
    (tmp_path / "connect-mirror-maker.properties").write_text(
        "clusters = a, b\na->b.enabled = true\nreplication.policy.separator = _\n")
    context, problems = mirror_context(workbench.open_bundle(tmp_path))
    assert (context["clusters"], context["flows"], context["separator"], problems) == (["a", "b"], [["a", "b"]], "_",
                                                                                       [])
