"""Bundle discovery and safe archive extraction."""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from workbench.bundle import Artifact, open_bundle
from workbench.errors import BundleError
from workbench.formats.kraft_files import parse_java_properties


def make_tree(root: Path) -> None:
    logs = root / "nodes" / "7" / "logs"
    (logs / "__cluster_metadata-0").mkdir(parents=True)
    (logs / "meta.properties").write_text("#\n#Tue\nnode.id=3\nversion=1\ncluster.id=abc\n")
    (logs / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"x" * 10)
    (logs / "__cluster_metadata-0" / "00000000000000000042-0000000003.checkpoint").write_bytes(b"y")
    (logs / "__cluster_metadata-0" / "quorum-state").write_text("{}")
    part = logs / "orders-eu-12"
    part.mkdir()
    (part / "00000000000000000100.log").write_bytes(b"z" * 5)
    (part / "00000000000000000100.index").write_bytes(b"")
    deleted = logs / "orders-3.0123456789abcdef0123456789abcdef-delete"
    deleted.mkdir()
    (deleted / "00000000000000000000.log").write_bytes(b"")
    (root / "dumps").mkdir()
    (root / "dumps" / "a.txt").write_text("Dumping a\n")
    (root / "manifest.json").write_text('{"scenario": "isr"}')


def test_classifies_every_file(tmp_path):
    make_tree(tmp_path)
    bundle = open_bundle(tmp_path)
    got = {a.path: a for a in bundle.artifacts}
    logs = "nodes/7/logs/"
    assert got[logs + "__cluster_metadata-0/00000000000000000000.log"] == Artifact(
        logs + "__cluster_metadata-0/00000000000000000000.log", 3, "segment", "__cluster_metadata", 0, 0, 10,
        cluster_id="abc")
    assert got[logs + "__cluster_metadata-0/00000000000000000042-0000000003.checkpoint"] == Artifact(
        logs + "__cluster_metadata-0/00000000000000000042-0000000003.checkpoint", 3, "snapshot",
        "__cluster_metadata", 0, 42, 1, cluster_id="abc")
    assert got[logs + "orders-eu-12/00000000000000000100.log"] == Artifact(
        logs + "orders-eu-12/00000000000000000100.log", 3, "segment", "orders-eu", 12, 100, 5, cluster_id="abc")
    assert got[logs + "orders-eu-12/00000000000000000100.index"].kind == "offset_index"
    dead = got[logs + "orders-3.0123456789abcdef0123456789abcdef-delete/00000000000000000000.log"]
    assert (dead.topic, dead.partition, dead.dir_state) == ("orders", 3, "delete")
    assert (got["dumps/a.txt"].kind, got["dumps/a.txt"].cluster_id) == ("dump_text", None)
    assert got["manifest.json"].kind == "manifest"
    assert bundle.manifest == {"scenario": "isr"}
    assert [a.path for a in bundle.metadata_files] == [
        logs + "__cluster_metadata-0/00000000000000000000.log",
        logs + "__cluster_metadata-0/00000000000000000042-0000000003.checkpoint",
    ]
    assert bundle.node_ids == [-1, 3]


def test_a_bundle_folder_named_like_a_partition_past_int32_is_no_partition(tmp_path):
    """A bundle folder with a hash suffix (``restarts-5991282310``, as the scenario cache names them)
    holds a file at its root: the folder's name is no partition directory (partition ids are int32),
    while a real partition directory opened as the bundle still is one."""
    root = tmp_path / "restarts-5991282310"
    make_tree(root)
    (root / ".complete").write_text("done\n")
    marker = next(a for a in open_bundle(root).artifacts if a.path == ".complete")
    assert (marker.kind, marker.topic, marker.partition) == ("other", None, None)
    part = tmp_path / "orders-2147483647"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"")
    (seg,) = open_bundle(part).artifacts
    assert (seg.kind, seg.topic, seg.partition) == ("segment", "orders", 2**31 - 1)


def tar_of(src: Path, archive: Path, arcname: str) -> Path:
    """``src`` archived as ``arcname`` in a new ``.tar.gz``."""
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(src, arcname=arcname)
    return archive


def test_archive_round_trip(tmp_path):
    src = tmp_path / "src"
    make_tree(src)
    archive = tar_of(src, tmp_path / "b.tar.gz", ".")
    bundle = open_bundle(archive, extract_to=tmp_path / "x")
    assert sorted(a.path for a in bundle.artifacts) == sorted(a.path for a in open_bundle(src).artifacts)


@pytest.mark.parametrize("wrap", [["incident"], ["case-123", "bundle"]])
def test_a_wrapping_directory_is_opened_as_the_bundle_it_holds(tmp_path, wrap):
    inner = tmp_path.joinpath("outer", *wrap)
    make_tree(inner)
    (tmp_path / "outer" / ".DS_Store").write_bytes(b"\0")
    direct = open_bundle(inner)
    wrapped = open_bundle(tmp_path / "outer")
    assert wrapped.root == direct.root == inner.resolve()
    assert wrapped.artifacts == direct.artifacts
    assert wrapped.manifest == {"scenario": "isr"}
    assert {a.kind for a in wrapped.artifacts if a.path.startswith(("dumps/", "manifest"))} == {"dump_text", "manifest"}


def test_a_directory_beside_a_file_is_not_a_wrapper(tmp_path):
    make_tree(tmp_path / "outer" / "incident")
    (tmp_path / "outer" / "notes.txt").write_text("what happened")
    bundle = open_bundle(tmp_path / "outer")
    assert bundle.root == (tmp_path / "outer").resolve()
    assert "notes.txt" in {a.path for a in bundle.artifacts}
    assert bundle.manifest is None


def test_a_lone_directory_of_the_bundle_itself_is_not_entered(tmp_path):
    make_tree(tmp_path / "b")
    (tmp_path / "b" / "manifest.json").unlink()
    shutil.rmtree(tmp_path / "b" / "dumps")
    bundle = open_bundle(tmp_path / "b")  # holds nodes/ alone: node 7's directory keeps its place
    assert bundle.root == (tmp_path / "b").resolve()
    assert all(a.path.startswith("nodes/7/") for a in bundle.artifacts)


def test_an_archive_of_one_directory_opens_as_that_directory(tmp_path):
    src = tmp_path / "src"
    make_tree(src)
    with open_bundle(tar_of(src, tmp_path / "incident.tar.gz", "incident")) as bundle:
        assert bundle.root.name == "incident"
        assert bundle.artifacts == open_bundle(src).artifacts
        assert bundle.manifest == {"scenario": "isr"}


@pytest.mark.parametrize("name", ["../evil.txt", "/abs/evil.txt", "a/../../evil.txt"])
def test_tar_members_cannot_escape(tmp_path, name):
    archive = tmp_path / "bad.tar"
    with tarfile.open(archive, "w") as tf:
        info = tarfile.TarInfo(name)
        info.size = 4
        tf.addfile(info, io.BytesIO(b"evil"))
    with pytest.raises(BundleError, match="escapes"):
        open_bundle(archive, extract_to=tmp_path / "target")
    assert not (tmp_path / "evil.txt").exists()


def test_tar_links_are_refused(tmp_path):
    archive = tmp_path / "link.tgz"
    with tarfile.open(archive, "w:gz") as tf:
        info = tarfile.TarInfo("innocent")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tf.addfile(info)
    with pytest.raises(BundleError, match="link"):
        open_bundle(archive, extract_to=tmp_path / "t")


def test_zip_members_cannot_escape(tmp_path):
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("../../evil.txt", "evil")
    with pytest.raises(BundleError, match="escapes"):
        open_bundle(archive, extract_to=tmp_path / "deep" / "target")
    assert not (tmp_path / "evil.txt").exists()


def test_missing_and_wrong_paths(tmp_path):
    with pytest.raises(BundleError, match="does not exist"):
        open_bundle(tmp_path / "nope")
    plain = tmp_path / "file.bin"
    plain.write_bytes(b"")
    with pytest.raises(BundleError, match="expected a directory"):
        open_bundle(plain)


def test_properties():
    assert parse_java_properties("#c\n! other\nnode.id = 3\ncluster.id:abc\nkey value\n\n") == {
        "node.id": "3", "cluster.id": "abc", "key": "value"}


def test_clusters_whose_node_ids_repeat_are_kept_apart(tmp_path):
    """Two clusters' docker volumes side by side, both numbering nodes from 1: every file takes the
    ``cluster.id`` of the node directory holding it (its log dir's, or the one beside its config)."""
    for cluster, nodes in (("east", (1, 2)), ("west", (1,))):
        for node in nodes:
            home = tmp_path / cluster / f"kafka{node}"
            (home / "data" / "orders-0").mkdir(parents=True)
            (home / "data" / "meta.properties").write_text(f"node.id={node}\nversion=1\ncluster.id={cluster}-id\n")
            (home / "data" / "orders-0" / "00000000000000000000.log").write_bytes(b"")
            (home / "config").mkdir()
            (home / "config" / "server.properties").write_text(f"node.id={node}\n")
    (tmp_path / "east" / "notes.txt").write_text("east\n")
    (tmp_path / "readme.txt").write_text("both\n")
    bundle = open_bundle(tmp_path)
    got = {a.path: (a.node_id, a.cluster_id) for a in bundle.artifacts}
    assert got["east/kafka1/data/orders-0/00000000000000000000.log"] == (1, "east-id")
    assert got["west/kafka1/data/orders-0/00000000000000000000.log"] == (1, "west-id")
    assert got["west/kafka1/config/server.properties"] == (-1, "west-id")
    assert got["east/notes.txt"] == (-1, "east-id")  # inside one cluster's directory
    assert got["readme.txt"] == (-1, None)  # above both
    assert bundle.clusters() == {"east-id": [1, 2], "west-id": [1]}
    assert bundle.node_clusters() == {2: "east-id"}  # node id 1 names a node of each cluster


def test_each_meta_properties_is_read_once_for_nodes_clusters_and_problems(tmp_path, monkeypatch):
    """A log dir's node, its files' cluster and the node's cluster come from one reading of its
    ``meta.properties``, so they agree: a ZooKeeper-era ``broker.id``, a cluster id written with
    trailing blanks, a ``node.id`` Kafka would refuse (the directory's number taken, the problem kept)."""
    for rel, meta in (("nodes/1/logs", "broker.id=1\nversion=0\ncluster.id=zk-east  \n"),
                      ("nodes/2/logs", "node.id=2\nversion=1\ncluster.id=zk-east\n"),
                      ("nodes/5/logs", "node.id=9999999999\nversion=1\ncluster.id=zk-east\n")):
        (tmp_path / rel / "orders-0").mkdir(parents=True)
        (tmp_path / rel / "meta.properties").write_text(meta)
        (tmp_path / rel / "orders-0" / "00000000000000000000.log").write_bytes(b"")
    reads = []
    read_text = Path.read_text

    def counted(self, *args, **kwargs):
        if self.name == "meta.properties":
            reads.append(self)
        return read_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    bundle = open_bundle(tmp_path)
    got = {a.path: (a.node_id, a.cluster_id) for a in bundle.artifacts if a.kind == "segment"}
    assert got == {f"nodes/{n}/logs/orders-0/00000000000000000000.log": (n, "zk-east") for n in (1, 2, 5)}
    assert bundle.node_clusters() == {1: "zk-east", 2: "zk-east", 5: "zk-east"}
    assert [p.kind for p in bundle.problems] == ["out_of_range"]
    assert len(reads) == 3 and len(set(reads)) == 3


def test_log_dirs_without_meta_properties_are_numbered_from_their_paths(tmp_path):
    """Very old releases wrote no ``meta.properties``, and copies leave it out: each such log dir is
    one node, numbered by the number its path ends a name with, else the smallest id no node has."""
    def log_dir(rel: str, meta: str | None = None) -> None:
        (tmp_path / rel / "orders-0").mkdir(parents=True)
        (tmp_path / rel / "orders-0" / "00000000000000000000.log").write_bytes(b"")
        (tmp_path / rel / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 0\n")
        if meta is not None:
            (tmp_path / rel / "meta.properties").write_text(meta)

    log_dir("kafka-logs-2")
    log_dir("broker5/data")
    log_dir("tmp/kafka-logs")                        # no number: the smallest free id
    log_dir("kafka1/data", "broker.id=1\nversion=0\n")  # named by its meta.properties
    log_dir("copies/kafka-logs-1")                   # 1 is kafka1's: the next free id
    (tmp_path / "server.log").write_text("")
    bundle = open_bundle(tmp_path)
    assert bundle.path_nodes == {"kafka-logs-2": 2, "broker5/data": 5, "tmp/kafka-logs": 0,
                                 "copies/kafka-logs-1": 3}
    got = {a.path: a.node_id for a in bundle.artifacts}
    assert got["broker5/data/orders-0/00000000000000000000.log"] == 5
    assert got["broker5/data/recovery-point-offset-checkpoint"] == 5
    assert got["kafka1/data/orders-0/00000000000000000000.log"] == 1
    assert got["copies/kafka-logs-1/orders-0/00000000000000000000.log"] == 3
    assert got["server.log"] == -1                     # beside the nodes, nobody's
    assert bundle.node_ids == [-1, 0, 1, 2, 3, 5]
    alone = tmp_path / "kafka-logs-4"                  # the bundle is the log dir itself
    shutil.copytree(tmp_path / "kafka-logs-2", alone)
    assert open_bundle(alone).path_nodes == {".": 4}


def test_node_configuration_and_log4j_files(tmp_path):
    """What an incident bundle carries besides log dirs: properties files and log4j output."""
    make_tree(tmp_path)
    node = tmp_path / "nodes" / "7"
    (node / "config").mkdir()
    (node / "config" / "server.properties").write_text("node.id=3\n")
    (node / "log4j").mkdir()
    for name in ("server.log", "controller.log", "state-change.log", "server.log.2026-11-23-05", "log-cleaner.log.1"):
        (node / "log4j" / name).write_text("[2026-11-23 05:03:20,735] INFO x (y)\n")
    (tmp_path / "broker-2").mkdir()
    (tmp_path / "broker-2" / "broker.properties").write_text("node.id=2\n")
    (tmp_path / "broker-2" / "kafkaServer.out").write_text("x\n")
    (tmp_path / "mm2.properties").write_text("clusters=a,b\n")
    got = {a.path: a for a in open_bundle(tmp_path).artifacts}
    assert (got["nodes/7/config/server.properties"].kind, got["nodes/7/config/server.properties"].node_id) == (
        "server_properties", 7)
    assert {p: a.kind for p, a in got.items() if "/log4j/" in p} == {
        f"nodes/7/log4j/{n}": "server_log"
        for n in ("server.log", "controller.log", "state-change.log", "server.log.2026-11-23-05", "log-cleaner.log.1")}
    assert got["broker-2/broker.properties"].kind == "server_properties"
    assert got["broker-2/kafkaServer.out"].kind == "server_log"
    assert got["mm2.properties"].kind == "other"
    # segments keep their kind: a partition directory is never a log4j directory
    assert got["nodes/7/logs/orders-eu-12/00000000000000000100.log"].kind == "segment"
