"""Fixtures of the Spark tests that read every real-Kafka scenario bundle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def scenario_bundles() -> list[tuple[str, str]]:
    """Every (version, scenario) pair the default sets build (``peer.scenario.DEFAULT_SETS``): what
    the tests read depends on the definitions alone, never on what else sits in the cache."""
    from peer.scenario import DEFAULT_SETS

    return [(v, n) for v, names in DEFAULT_SETS.items() for n in names]


@pytest.fixture(scope="session")
def real_bundles(spark):
    """``[(version, name, path, manifest, tables)]`` for every scenario bundle the default sets build."""
    import workbench
    from peer.scenario import build

    out = []
    for version, name in scenario_bundles():
        path = Path(build(name, version))
        manifest = json.loads((path / "manifest.json").read_text("utf-8"))
        out.append((version, name, path, manifest, workbench.load(workbench.open_bundle(path), spark)))
    return out
