"""The scenario bundles the suite reads, from the pinned definitions alone.

Tests that read real Kafka bundles are parametrised over :data:`BUNDLES`, the (Kafka version,
scenario) pairs of :data:`peer.scenario.DEFAULT_SETS` (every scenario on 4.3.1; 3.9.2 under `make test-full`),
never over a glob of the cache: what is collected is the same on an empty cache and a warm one.
Each test gets its bundle from the ``kafka_bundle`` fixture (built on first use, then reused)
and iterates the bundle's files itself, naming the file in every failure message.

Examples
--------
>>> ("4.3.1", "isr") in BUNDLES
True
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from peer.kafka import DEFAULT_VERSION, VERSIONS
from peer.scenario import DEFAULT_SETS, ERA_SETS, ZK_SETS

#: (Kafka version, scenario) of every bundle the suite reads.
BUNDLES: list[tuple[str, str]] = [(version, name) for version, names in DEFAULT_SETS.items() for name in names]
#: (Kafka version, scenario) of the bundles written by older releases (``peer.scenario.ERA_SETS``,
#: ``peer.scenario.ZK_SETS``): KRaft metadata logs of 3.1-3.5, ZooKeeper-era clusters of 2.8-3.9.
OLDER_BUNDLES: list[tuple[str, str]] = [(version, name) for sets in (ERA_SETS, ZK_SETS)
                                        for version, names in sets.items() for name in names]
#: The pinned releases, newest first.
PINNED: tuple[str, ...] = tuple(VERSIONS)
assert DEFAULT_VERSION in PINNED


def bundle_params(*, older: bool = False) -> list[Any]:
    """``pytest.param(version, name, id="<version>-<name>")`` for every bundle; with ``older``, also
    the bundles of the older releases (:data:`OLDER_BUNDLES`)."""
    return [pytest.param(version, name, id=f"{version}-{name}")
            for version, name in (*BUNDLES, *(OLDER_BUNDLES if older else ()))]


def manifest(bundle: Path) -> dict[str, Any]:
    """The bundle's ``manifest.json``."""
    return json.loads((Path(bundle) / "manifest.json").read_text(encoding="utf-8"))


def dump_entries(bundle: Path) -> list[dict[str, Any]]:
    """The manifest's ``dumps`` entries (file, dump, args), each file dumped by Kafka's own tool.

    Raises
    ------
    AssertionError
        When the bundle lists no dumps, or a listed file or dump is missing.
    """
    bundle = Path(bundle)
    entries = manifest(bundle)["dumps"]
    assert entries, f"{bundle}: the manifest lists no dumps"
    for entry in entries:
        assert (bundle / entry["file"]).is_file(), f"{bundle / entry['file']} is listed but missing"
        assert (bundle / entry["dump"]).is_file(), f"{bundle / entry['dump']} is listed but missing"
    return entries


def topic_of(rel: str) -> str | None:
    """The topic of a bundle-relative segment path (``nodes/2/logs/orders-0/…log`` -> ``orders``)."""
    parts = Path(rel).parts
    if len(parts) < 2 or "-" not in parts[-2]:
        return None
    return parts[-2].rsplit("-", 1)[0]


def metadata_payloads(path: Path) -> list[tuple[int, dict]]:
    """(CreateTime ms, payload) of every record of the longest metadata-log dump Kafka printed
    (a controller's: the brokers' replicas stop before the quorum does)."""
    dumps = [e["dump"] for e in dump_entries(path) if "__cluster_metadata" in e["file"] and e["file"].endswith(".log")]
    best: list[tuple[int, dict]] = []
    for dump in dumps:
        rows = []
        for line in (path / dump).read_text(encoding="utf-8").splitlines():
            if " payload: " in line and "CreateTime: " in line:
                created = int(line.split("CreateTime: ", 1)[1].split()[0])
                rows.append((created, json.loads(line.split(" payload: ", 1)[1])))
        best = rows if len(rows) > len(best) else best
    return best


def dumped_final_states(path: Path) -> dict[tuple[str, int], tuple[int, list[int]]]:
    """Each partition's last ``(leader, sorted ISR)`` as Kafka's own metadata-log dump leaves it:
    records applied in log order, a change record's leader -2 and absent ISR meaning unchanged,
    removed topics gone."""
    final: dict[tuple[str, int], tuple[int, list[int]]] = {}
    for _t, p in metadata_payloads(path):
        data = p["data"]
        key = (data.get("topicId"), data.get("partitionId"))
        if p["type"] == "PARTITION_RECORD":
            final[key] = (data["leader"], sorted(data["isr"]))
        elif p["type"] == "PARTITION_CHANGE_RECORD" and key in final:
            leader, ids = final[key]
            final[key] = (leader if data.get("leader", -2) == -2 else data["leader"],
                          ids if data.get("isr") is None else sorted(data["isr"]))
        elif p["type"] == "REMOVE_TOPIC_RECORD":
            final = {k: v for k, v in final.items() if k[0] != data["topicId"]}
    return final


def _ms(ts: Any) -> int:
    return int(ts.timestamp() * 1000)


def states_at(states: Any, t_ms: int) -> dict[tuple[str, int], tuple]:
    """Visible ``(leader, replicas, isr, elr, under_min_isr, under_replicated)`` of every partition of
    ``states`` (a pandas frame of :func:`workbench.analysis.isr.partition_states`) at ``t_ms``."""
    out = {}
    for row in states.itertuples(index=False):
        if _ms(row.start) <= t_ms < _ms(row.end) or (row.end_reason == "log_end" and _ms(row.end) <= t_ms):
            elr = [] if row.elr is None else list(row.elr)
            out[(row.topic, int(row.partition))] = (int(row.leader), list(row.replicas), list(row.isr), elr,
                                                    bool(row.under_min_isr), bool(row.under_replicated))
    return out


def candidate_views(states: Any, start_ms: int, end_ms: int) -> list[dict[tuple[str, int], tuple]]:
    """Every state the cluster was in while a tool ran (from its start to the next tool's start)."""
    changes = sorted({_ms(t) for t in states.start if start_ms < _ms(t) < end_ms})
    return [states_at(states, t) for t in [start_ms, *changes]]


def answered_by(path: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Per capture file name: when the tool had exited (a ``pandas.Timestamp``). Its answer reflects
    some instant between its start (``captured``) and then. The peer records ``t_end_ms``; a bundle
    built before it did falls back on the file's mtime (written on exit)."""
    import pandas as pd

    out = {}
    for entry in manifest["tools"]:
        done = entry.get("t_end_ms") or int((path / entry["file"]).stat().st_mtime * 1000)
        out[Path(entry["file"]).name] = pd.Timestamp(done, unit="ms")
    return out


def expiring(removals: Any, since: Any, until: Any) -> set[str]:
    """Groups some of whose offsets the coordinator removed in (since, until] (``removals``: pandas
    ``group, removed_time``)."""
    import pandas as pd

    t = removals.removed_time
    return set(removals[(t > pd.Timestamp(since)) & (t <= pd.Timestamp(until))].group)


def lag_beside_captures(tables: Any, path: Path, manifest: dict[str, Any]) -> tuple[Any, Any]:
    """The consumer lag area's records lag at every ``kafka-consumer-groups --describe`` capture of a
    bundle, and what the tool printed: two pandas frames ``path, group, topic, partition,
    current_offset, log_end_offset, lag`` in one order, for a whole-frame comparison. A ``--group G``
    capture describes G only; a group whose offsets the coordinator removed while the tool ran (and
    the tool did not print) is left out of both."""
    from workbench.analysis import consumer_lag as cl

    shown = tables.tool_group_offsets.toPandas()
    shown = shown[shown.current_offset.notna()]
    captures = shown[["path", "captured", "args"]].drop_duplicates("path")
    instants = tables.spark.createDataFrame(
        [(r.path, r.captured.to_pydatetime()) for r in captures.itertuples()], "path string, time timestamp")
    removed = cl.removed_offsets(tables.offsets)
    got = cl.lag_at(cl.commits_for(tables), cl.growth_for(tables), instants, removed=removed,
                    log_ends=cl.log_offsets_from_metrics(tables.metrics, "end")).toPandas()
    only = {r.path: list(r.args)[list(r.args).index("--group") + 1] for r in captures.itertuples()
            if r.args is not None and "--group" in list(r.args)}
    got = got[[only.get(p, g) == g for p, g in zip(got.path, got.group, strict=True)]]
    key = ["path", "group", "topic", "partition"]
    want = shown[[*key, "current_offset", "log_end_offset", "lag"]].astype(
        {"partition": int, "current_offset": int, "log_end_offset": int, "lag": int})
    mine = got.rename(columns={"committed_offset": "current_offset", "records_lag": "lag"})[
        [*key, "current_offset", "log_end_offset", "lag"]]
    done = answered_by(path, manifest)
    printed = set(zip(want.path, want.group, strict=True))
    removals = removed.select("group", "removed_time").toPandas()
    unsure = {(r.path, g) for r in captures.itertuples()
              for g in expiring(removals, r.captured, done[Path(r.path).name])} - printed
    mine = mine[[(p, g) not in unsure for p, g in zip(mine.path, mine.group, strict=True)]]
    return (mine.sort_values(key).reset_index(drop=True), want.sort_values(key).reset_index(drop=True))
