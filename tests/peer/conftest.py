"""Fixtures of the real Kafka peer for the tests in this directory.

The same fixtures serve the whole suite once ``tests/conftest.py`` holds
``pytest_plugins = ["peer.pytest_plugin"]``; importing them here keeps these tests working
either way.
"""

from __future__ import annotations

from peer.pytest_plugin import (  # noqa: F401  (fixtures are found by name)
    kafka_cluster,
    kafka_dist,
    kafka_dump_log,
    pytest_configure,
    scenario_bundle,
)
