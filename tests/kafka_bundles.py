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
from peer.scenario import DEFAULT_SETS

#: (Kafka version, scenario) of every bundle the suite reads.
BUNDLES: list[tuple[str, str]] = [(version, name) for version, names in DEFAULT_SETS.items() for name in names]
#: The pinned releases, newest first.
PINNED: tuple[str, ...] = tuple(VERSIONS)
assert DEFAULT_VERSION in PINNED


def bundle_params() -> list[Any]:
    """``pytest.param(version, name, id="<version>-<name>")`` for every bundle."""
    return [pytest.param(version, name, id=f"{version}-{name}") for version, name in BUNDLES]


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
