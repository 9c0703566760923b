"""The peer's pure-Python parts: configuration, naming, dump flags, locks (no JVM started)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from peer.bundle import BundleWriter, dump_flags
from peer.cluster import Cluster, cluster_id_for
from peer.errors import ClusterError, FetchError, PeerError
from peer.kafka import ERA_SERVERS, VERSIONS, Kafka, fetch
from peer.locks import file_lock, slot_lock
from peer.scenario import DEFAULT_SETS, ERA_SETS, PINNED_SCENARIOS, SCENARIOS, SINGLE_SETS, ZK_SETS, scenario_hash
from peer.scenarios.quorum import leader_id
from workbench.errors import WorkbenchError


def fake_kafka(tmp_path: Path) -> Kafka:
    lib = tmp_path / "lib"
    lib.mkdir()
    return Kafka("4.3.1", lib)


def test_errors_derive_from_workbench_error() -> None:
    assert issubclass(PeerError, WorkbenchError)
    assert issubclass(ClusterError, PeerError)


def test_cluster_id_is_a_valid_uuid_and_fixed() -> None:
    cid = cluster_id_for("isr")
    assert cid == cluster_id_for("isr") != cluster_id_for("mm2")
    assert len(base64.urlsafe_b64decode(cid + "==")) == 16


@pytest.mark.parametrize(
    ("path", "flags"),
    [
        ("nodes/1/logs/__cluster_metadata-0/00000000000000000000.log",
         ["--cluster-metadata-decoder"]),
        ("nodes/1/logs/__cluster_metadata-0/00000000000000000117-0000000001.checkpoint",
         ["--cluster-metadata-decoder"]),
        ("nodes/1/logs/bootstrap.checkpoint", ["--cluster-metadata-decoder"]),
        ("nodes/4/logs/__consumer_offsets-2/00000000000000000000.log", ["--offsets-decoder"]),
        ("nodes/2/logs/__remote_log_metadata-0/00000000000000000000.log",
         ["--remote-log-metadata-decoder"]),
        ("nodes/4/logs/orders-0/00000000000000000000.log", ["--deep-iteration"]),
        ("nodes/1/logs/mm2-offset-syncs.target.internal-0/00000000000000000000.log",
         ["--deep-iteration"]),
    ],
)
def test_dump_flags(path: str, flags: list[str]) -> None:
    assert dump_flags(path) == flags


def test_cluster_configuration(tmp_path: Path) -> None:
    cluster = Cluster(fake_kafka(tmp_path), tmp_path / "c", "isr", controllers=3, brokers=3,
                      settings={"min.insync.replicas": "2"})
    assert [n.id for n in cluster.controllers] == [1, 2, 3]
    assert [n.id for n in cluster.brokers] == [4, 5, 6]
    ports = [p for n in cluster.nodes for p in (n.broker_port, n.controller_port, n.jmx_port) if p]
    assert len(ports) == len(set(ports)) == 12
    voters = cluster.node(4).settings["controller.quorum.voters"]
    assert voters.count("@127.0.0.1:") == 3
    for node in cluster.nodes:
        assert node.settings["min.insync.replicas"] == "2"
        assert "127.0.0.1" in node.settings["listeners"]
        assert node.settings["log.dirs"] == str(node.log_dir)
    assert cluster.node(1).settings["process.roles"] == "controller"
    assert cluster.node(4).settings["process.roles"] == "broker"
    assert cluster.node(4).settings["offsets.topic.replication.factor"] == "3"
    with pytest.raises(ClusterError):
        cluster.node(9)


def test_combined_cluster(tmp_path: Path) -> None:
    cluster = Cluster(fake_kafka(tmp_path), tmp_path / "c", "source", controllers=1, brokers=0,
                      combined=True, first_id=7)
    (node,) = cluster.nodes
    assert node.id == 7 and set(node.roles) == {"broker", "controller"}
    assert node.settings["process.roles"] == "broker,controller"
    assert cluster.bootstrap == f"127.0.0.1:{node.broker_port}"


def test_dynamic_quorum_cluster_names_bootstrap_controllers_not_voters(tmp_path: Path) -> None:
    """A KIP-853 cluster's nodes find the quorum through ``controller.quorum.bootstrap.servers``
    (every controller); ``controller.quorum.voters`` would make it static."""
    cluster = Cluster(fake_kafka(tmp_path), tmp_path / "c", "voters", controllers=3, brokers=1, dynamic=True)
    want = ",".join(f"127.0.0.1:{n.controller_port}" for n in cluster.controllers)
    assert want == cluster.controller_bootstrap and len(cluster.controllers) == 3
    for node in cluster.nodes:
        assert node.settings["controller.quorum.bootstrap.servers"] == want
        assert "controller.quorum.voters" not in node.settings
    static = Cluster(cluster.kafka, tmp_path / "s", "static", controllers=3, brokers=1)
    assert all("controller.quorum.bootstrap.servers" not in n.settings for n in static.nodes)


def test_unpinned_version_is_refused() -> None:
    with pytest.raises(FetchError, match="not pinned"):
        fetch("2.8.0")


def test_default_sets_and_hashes() -> None:
    assert DEFAULT_SETS["4.3.1"] == (*PINNED_SCENARIOS, "demo") and SCENARIOS[0] == "isr"
    assert set(SCENARIOS) == {*PINNED_SCENARIOS, "idle", "demo", "hostile", "unclean", "unclean_return", "healthy",
                             "voters"}
    assert not any("hostile" in names for names in (*DEFAULT_SETS.values(), *ERA_SETS.values()))
    assert set(DEFAULT_SETS["3.9.2"]) <= set(SCENARIOS)
    # the idle scenario runs only on the era releases, which are not pinned
    assert set(ERA_SETS) == set(ERA_SERVERS) and not set(ERA_SETS) & set(VERSIONS)
    assert {n for names in ERA_SETS.values() for n in names} == {"idle"} and "idle" not in DEFAULT_SETS["4.3.1"]
    hashes = {scenario_hash(name) for name in SCENARIOS}
    assert len(hashes) == len(SCENARIOS)
    # `python -m peer scenarios` (make test) builds every bundle a test reads, so none is built mid-suite
    from peer.__main__ import default_sets

    built = default_sets()
    for sets in (DEFAULT_SETS, ERA_SETS, ZK_SETS, SINGLE_SETS):
        assert all(set(names) <= set(built[v]) for v, names in sets.items())
    assert {"hostile", "unclean"} <= set(built["4.3.1"])


def test_leader_id_parsing() -> None:
    assert leader_id("ClusterId:              abc\nLeaderId:               3\n") == 3
    with pytest.raises(ValueError):
        leader_id("nothing here")


def test_manifest_records_events(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path / "b", "isr", fake_kafka(tmp_path), "cid")
    writer.event("broker_hard_stop", node=6)
    m = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert m["scenario"] == "isr" and m["kafka_version"] == "4.3.1"
    assert m["events"][0]["event"] == "broker_hard_stop" and m["events"][0]["node"] == 6
    assert set(m) >= {"nodes", "events", "tools", "dumps", "metrics", "created_ms"}


def test_file_lock_times_out_when_held(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    with file_lock(lock, timeout=1):
        import subprocess
        import sys

        code = (
            "import sys; from pathlib import Path; from peer.locks import file_lock\n"
            "try:\n"
            f"    with file_lock(Path({str(lock)!r}), timeout=1.5): sys.exit(0)\n"
            "except Exception: sys.exit(3)\n"
        )
        done = subprocess.run([sys.executable, "-c", code], timeout=30,
                              cwd=Path(__file__).resolve().parents[2])
        assert done.returncode == 3


def other_slot_holder(base: Path, slots: int) -> int:
    """Another process asks for one of ``slots`` slots (waiting 1.5 s): 10 + its slot, or 3 if none was free."""
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from peer.locks import slot_lock\n"
        "try:\n"
        f"    with slot_lock(Path({str(base)!r}), {slots}, timeout=1.5) as slot: sys.exit(10 + slot)\n"
        "except Exception: sys.exit(3)\n"
    )
    return subprocess.run([sys.executable, "-c", code], timeout=30, cwd=Path(__file__).resolve().parents[2]).returncode


def test_slot_lock_admits_as_many_holders_as_slots(tmp_path: Path) -> None:

    base = tmp_path / "builds.lock"

    def other() -> int:
        return other_slot_holder(base, 2)

    with slot_lock(base, 2, timeout=1) as first:
        assert first == 0
        assert other() == 11          # the second slot is free
        with slot_lock(base, 2, timeout=1) as second:
            assert second == 1
            assert other() == 3       # both held: a third waits, then gives up
    assert other() == 10


def test_failed_scenario_leaves_no_complete_marker(tmp_path: Path, monkeypatch) -> None:
    import types

    import peer.scenario as scenario
    from peer.errors import ScenarioError

    def run(ctx: scenario.ScenarioContext) -> None:
        ctx.event("about_to_fail")
        raise ScenarioError("broken on purpose")

    module = types.ModuleType("peer.scenarios.broken")
    module.run = run  # type: ignore[attr-defined]
    monkeypatch.setenv("KAFKA_WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(scenario, "scenario_module", lambda name: module)
    monkeypatch.setattr(scenario, "fetch", lambda version: fake_kafka(tmp_path))
    monkeypatch.setattr(scenario, "SCENARIO_LOCK", tmp_path / "scenario.lock")
    target = tmp_path / "bundle"
    with pytest.raises(ScenarioError, match="broken on purpose"):
        scenario.build("isr", "4.3.1", out=target)
    assert (target / "manifest.json").exists()
    assert not scenario.is_complete(target)


def test_all_slots_lock_waits_for_every_slot_and_holds_them_all(tmp_path: Path) -> None:

    from peer.errors import PeerError
    from peer.locks import all_slots_lock

    base = tmp_path / "builds.lock"

    def other() -> int:
        return other_slot_holder(base, 3)

    with slot_lock(base, 3, timeout=1) as first:      # another build holds slot 0
        assert first == 0
        with pytest.raises(PeerError, match="slot 0"), all_slots_lock(base, 3, timeout=1.5):
            pass                                      # so the whole machine is not free
        assert other() == 11                          # and what it took is released again
    with all_slots_lock(base, 3, timeout=1):
        assert other() == 3                           # held alone: no other build starts
    assert other() == 10


def test_only_builds_a_scenario_on_the_releases_that_hold_it() -> None:
    """``peer scenarios --only isr`` builds isr where a release's set has it, never on the era servers
    (which run only ``idle``); ``--version`` with ``--only`` builds exactly the pairs named."""
    from peer.__main__ import wanted_builds

    sets = {**DEFAULT_SETS, **ERA_SETS}
    built = wanted_builds(None, ["isr", "idle"], sets)
    assert built == [(v, n) for v in sets for n in ("isr", "idle") if n in sets[v]]
    assert {v for v, n in built if n == "isr"} == {v for v in sets if "isr" in sets[v]}
    assert all(v not in ERA_SERVERS or n == "idle" for v, n in built)
    assert wanted_builds(["3.2.3"], ["isr"], sets) == [("3.2.3", "isr")]
    assert wanted_builds(None, None, sets) == [(v, n) for v in sets for n in sets[v]]
