"""Tests of small KRaft/log-dir files (workbench.formats.kraft_files), reference §4."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from workbench.errors import ConfigError, CorruptDataError
from workbench.formats.kraft_files import (
    QuorumState,
    format_checkpoint,
    format_meta_properties,
    format_partition_metadata,
    format_quorum_state,
    parse_checkpoint,
    parse_clean_shutdown,
    parse_java_properties,
    parse_meta_properties,
    parse_partition_metadata,
    parse_quorum_state,
    parse_snapshot_name,
    snapshot_file_name,
)

META_V1 = """#
#Tue Jun 11 08:15:02 UTC 2024
node.id=2
directory.id=J8aAPcfLQt2bqs1JT_rMgQ
version=1
cluster.id=MkU3OEVBNTcwNTJENDM2Qg
"""


def test_meta_properties_v1():
    m = parse_meta_properties(META_V1)
    assert (m.version, m.node_id, m.cluster_id, m.directory_id, m.extra, m.problems) == (
        1,
        2,
        "MkU3OEVBNTcwNTJENDM2Qg",
        "J8aAPcfLQt2bqs1JT_rMgQ",
        {},
        [],
    )


def test_meta_properties_v0_and_problems():
    m = parse_meta_properties("#\nversion=0\nbroker.id=5\nextra.key=x\n")
    assert (m.version, m.node_id, m.cluster_id, m.extra) == (0, 5, None, {"extra.key": "x"})
    bad = parse_meta_properties("node.id=abc\n")
    assert {p.kind for p in bad.problems} == {"bad_value", "missing_key"}
    assert parse_meta_properties("version=7\n").problems[0].kind == "unknown_version"
    with pytest.raises(CorruptDataError):
        parse_meta_properties("node.id=abc\nversion=1\n", strict=True)


def test_java_properties_syntax():
    text = "! comment\n  a = 1\nb:2\nc 3\nd\\=e=4\nlong=x\\\n    y\nuni=\\u00e9\nempty=\n"
    assert parse_java_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d=e": "4",
        "long": "xy",
        "uni": "é",
        "empty": "",
    }


def test_meta_properties_writer_round_trip():
    when = datetime(2024, 6, 11, 8, 15, 2, tzinfo=UTC)
    text = format_meta_properties(
        {"node.id": 2, "directory.id": "J8aAPcfLQt2bqs1JT_rMgQ", "version": 1, "cluster.id": "MkU3OEVBNTcwNTJENDM2Qg"},
        when,
    )
    assert text == META_V1
    odd = format_meta_properties({"k:ey": "a=b #c"}, when)
    assert odd.splitlines()[-1] == "k\\:ey=a\\=b \\#c"
    assert parse_java_properties(odd) == {"k:ey": "a=b #c"}


def test_quorum_state_v0_round_trip():
    text = (
        '{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}'
    )
    q = parse_quorum_state(text)
    assert (q.data_version, q.leader_id, q.leader_epoch, q.voted_id, q.current_voters, q.problems) == (
        0,
        1,
        2,
        -1,
        [1, 2, 3],
        [],
    )
    assert format_quorum_state(q) == text


def test_quorum_state_v1_round_trip():
    text = '{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}'
    q = parse_quorum_state(text)
    assert (q.data_version, q.voted_id, q.voted_directory_id, q.current_voters) == (
        1,
        1,
        "J8aAPcfLQt2bqs1JT_rMgQ",
        None,
    )
    assert format_quorum_state(q) == text
    assert format_quorum_state(QuorumState(1, leader_id=3, leader_epoch=9)) == (
        '{"leaderId":3,"leaderEpoch":9,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'
    )


def test_quorum_state_damaged():
    assert parse_quorum_state("{not json").problems[0].kind == "decode_error"
    assert parse_quorum_state("[1]").problems[0].kind == "decode_error"
    q = parse_quorum_state('{"leaderId":"x","leaderEpoch":4,"currentVoters":[{"voterId":1},{}]}')
    assert q.leader_epoch == 4 and q.leader_id == -1 and q.current_voters == [1]
    assert {p.kind for p in q.problems} == {"bad_value", "missing_key"}
    with pytest.raises(ConfigError):
        format_quorum_state(QuorumState(5))


def test_offset_checkpoint_known_text():
    text = "0\n2\norders 0 1532\n__consumer_offsets 17 8811\n"
    cp = parse_checkpoint(text)
    assert (cp.version, cp.expected_count, cp.problems) == (0, 2, [])
    assert cp.entries == [("orders", 0, 1532), ("__consumer_offsets", 17, 8811)]
    assert format_checkpoint(0, cp.entries) == text


def test_empty_checkpoint_file_has_no_entries():
    assert parse_checkpoint("") == parse_checkpoint("", "cleaner-offset-checkpoint")
    cp = parse_checkpoint("")
    assert (cp.version, cp.entries, cp.problems) == (None, [], [])


def test_leader_epoch_checkpoint():
    cp = parse_checkpoint("0\n2\n0 0\n3 1200\n")
    assert cp.entries == [(0, 0), (3, 1200)]
    assert format_checkpoint(0, []) == "0\n0\n"


@pytest.mark.parametrize(
    "text, kind",
    [
        ("0\n", "truncated"),
        ("x\n0\n", "decode_error"),
        ("1\n0\n", "unknown_version"),
        ("0\nx\n", "decode_error"),
        ("0\n2\na 0 1\n", "bad_length"),
        ("0\n1\na b c\n", "decode_error"),
        ("0\n1\nonlyone\n", "decode_error"),
    ],
)
def test_damaged_checkpoints(text, kind):
    cp = parse_checkpoint(text, path="cp")
    assert kind in {p.kind for p in cp.problems}


def test_damaged_checkpoint_keeps_readable_entries():
    cp = parse_checkpoint("0\n3\na 0 1\ngarbage\nb 1 2\n")
    assert cp.entries == [("a", 0, 1), ("b", 1, 2)] and len(cp.problems) == 1
    with pytest.raises(CorruptDataError):
        parse_checkpoint("0\n3\na 0 1\ngarbage\nb 1 2\n", strict=True)


def test_partition_metadata():
    text = format_partition_metadata("AAAAAAAAAAAAAAAAAAAAAQ")
    assert text == "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    assert parse_partition_metadata(text) == (0, "AAAAAAAAAAAAAAAAAAAAAQ", [])
    _, _, problems = parse_partition_metadata("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    assert problems[0].kind == "bad_value"
    _, topic, problems = parse_partition_metadata("junk")
    assert topic is None and {"decode_error", "missing_key"} <= {p.kind for p in problems}
    with pytest.raises(ValueError):
        format_partition_metadata("nope")


def test_clean_shutdown():
    assert parse_clean_shutdown("") == {}
    assert parse_clean_shutdown('{"version":0,"brokerEpoch":234}') == {"version": 0, "brokerEpoch": 234}
    assert parse_clean_shutdown("{") is None


@pytest.mark.parametrize(
    "name, expected",
    [
        ("00000000000000012345-0000000007.checkpoint", (12345, 7, "complete")),
        ("00000000000000012345-0000000007-8392019.checkpoint.part", (12345, 7, "partial")),
        ("00000000000000012345-0000000007.checkpoint.deleted", (12345, 7, "deleted")),
        ("bootstrap.checkpoint", None),
        ("00000000000000000000.log", None),
    ],
)
def test_snapshot_names(name, expected):
    parsed = parse_snapshot_name(name)
    assert (None if parsed is None else (parsed.end_offset, parsed.epoch, parsed.state)) == expected


def test_snapshot_file_name():
    assert snapshot_file_name(12345, 7) == "00000000000000012345-0000000007.checkpoint"
    assert parse_snapshot_name(snapshot_file_name(1, 2)).end_offset == 1


# ---------------------------------------------------------------------------------------------
# files written by real Kafka nodes (every scenario bundle of every pinned release)

import glob  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

from tests.kafka_bundles import bundle_params  # noqa: E402

_CHECKPOINT_NAMES = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


@pytest.mark.kafka
@pytest.mark.parametrize("version, name", bundle_params())
def test_real_log_dir_files(kafka_bundle, version, name):
    bundle = Path(kafka_bundle(name, version))
    log_dirs = sorted(str(d) for d in bundle.glob("nodes/*/logs"))
    assert log_dirs, f"{bundle}: no node log directory"
    failures = []
    for log_dir in log_dirs:
        try:
            _check_log_dir(log_dir)
        except AssertionError as exc:
            failures.append(f"{log_dir}: {str(exc)[:600]}")
    assert not failures, "\n".join(failures)


def _check_log_dir(log_dir: str) -> None:
    meta = parse_meta_properties(_read(os.path.join(log_dir, "meta.properties")))
    assert meta.problems == [] and meta.version == 1 and meta.node_id is not None and meta.cluster_id
    checked = 0
    for name in _CHECKPOINT_NAMES:
        path = os.path.join(log_dir, name)
        if os.path.exists(path):
            text = _read(path)
            cp = parse_checkpoint(text, path)
            assert cp.problems == [] and all(len(e) == 3 for e in cp.entries)
            assert text == "" or format_checkpoint(cp.version, cp.entries) == text
            checked += 1
    for path in glob.glob(os.path.join(log_dir, "*", "leader-epoch-checkpoint")):
        text = _read(path)
        cp = parse_checkpoint(text, path)
        assert cp.problems == [] and all(len(e) == 2 for e in cp.entries)
        assert text == "" or format_checkpoint(cp.version, cp.entries) == text
        checked += 1
    for path in glob.glob(os.path.join(log_dir, "*", "partition.metadata")):
        text = _read(path)
        version, topic_id, problems = parse_partition_metadata(text, path)
        assert problems == [] and version == 0
        assert format_partition_metadata(topic_id) == text
        checked += 1
    quorum = os.path.join(log_dir, "__cluster_metadata-0", "quorum-state")
    if os.path.exists(quorum):
        text = _read(quorum)
        state = parse_quorum_state(text, quorum)
        assert state.problems == [] and state.data_version in (0, 1)
        assert format_quorum_state(state) == text
        checked += 1
    shutdown = os.path.join(log_dir, ".kafka_cleanshutdown")
    if os.path.exists(shutdown):
        assert parse_clean_shutdown(_read(shutdown)) is not None
    for path in glob.glob(os.path.join(log_dir, "__cluster_metadata-0", "*.checkpoint")):
        assert parse_snapshot_name(os.path.basename(path)) is not None
    assert checked > 0
