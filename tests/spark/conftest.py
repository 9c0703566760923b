"""Fixtures of the Spark tests that read every real-Kafka scenario bundle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def scenario_bundles() -> list[tuple[str, str]]:
    """Every (version, scenario) pair: the default builds, and the others when present in the cache."""
    from peer.kafka import VERSIONS
    from peer.scenario import SCENARIOS

    return [(v, n) for v in VERSIONS for n in SCENARIOS]


@pytest.fixture(scope="session")
def real_bundles(spark):
    """``[(version, name, path, manifest, tables)]`` for every scenario bundle of both pinned
    versions: built when in ``DEFAULT_SETS``, used when present otherwise."""
    import workbench
    from peer.scenario import DEFAULT_SETS, build, bundle_dir, is_complete

    out = []
    for version, name in scenario_bundles():
        if name not in DEFAULT_SETS.get(version, ()) and not is_complete(bundle_dir(name, version)):
            continue
        path = Path(build(name, version))
        manifest = json.loads((path / "manifest.json").read_text("utf-8"))
        out.append((version, name, path, manifest, workbench.load(workbench.open_bundle(path), spark)))
    return out
