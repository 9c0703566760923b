"""pytest fixtures for tests that need real Kafka.

Enable for the whole suite with one line in ``tests/conftest.py``::

    pytest_plugins = ["peer.pytest_plugin"]

Fixtures
--------
kafka_dist
    Session-scoped factory ``kafka_dist(version=DEFAULT_VERSION) -> peer.kafka.Kafka``
    (fetches from Maven Central into the cache on first use).
kafka_cluster
    Function-scoped factory ``kafka_cluster(name, **Cluster kwargs) -> Cluster`` (formatted
    and started); every cluster it made is stopped at teardown, also when the test failed.
kafka_dump_log
    Session-scoped factory ``kafka_dump_log(files, flags=("--deep-iteration",),
    version=DEFAULT_VERSION) -> CompletedProcess``: Kafka's own dump tool, to check that files
    written by the workbench's encoder are accepted by Kafka.
scenario_bundle
    Session-scoped factory ``scenario_bundle(name, version=DEFAULT_VERSION) -> Path``: the
    cached bundle, built first if needed.
s3_server
    Session-scoped :class:`peer.s3proxy.S3Server`: a real S3 API (S3Proxy, from Maven Central) on
    127.0.0.1 over a temporary directory, stopped at the end of the session.

Tests using these are marked ``@pytest.mark.kafka``; they are skipped when ``java`` or
``mvn`` is missing or ``KAFKA_PEER_SKIP=1``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from peer.cluster import Cluster
from peer.errors import ScenarioError
from peer.kafka import DEFAULT_VERSION, Kafka, fetch
from peer.process import stop_all
from peer.s3proxy import S3Server
from peer.scenario import build


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``kafka`` marker."""
    config.addinivalue_line(
        "markers", "kafka: needs real Apache Kafka (Java, Maven Central, loopback JVMs)"
    )


def kafka_unavailable() -> str | None:
    """Why real-Kafka tests cannot run here, or None if they can."""
    if os.environ.get("KAFKA_PEER_SKIP") == "1":
        return "KAFKA_PEER_SKIP=1"
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH"
    return None


@pytest.fixture(scope="session")
def kafka_dist() -> Callable[..., Kafka]:
    """Factory returning a fetched Kafka release (see the module docstring)."""
    reason = kafka_unavailable()
    if reason:
        pytest.skip(reason)

    def get(version: str = DEFAULT_VERSION) -> Kafka:
        return fetch(version)

    return get


@pytest.fixture()
def kafka_cluster(
    kafka_dist: Callable[..., Kafka], tmp_path: Path
) -> Iterator[Callable[..., Cluster]]:
    """Factory starting clusters that are always stopped at teardown."""
    made: list[Cluster] = []

    def make(name: str = "test", version: str = DEFAULT_VERSION, **kwargs: Any) -> Cluster:
        cluster = Cluster(kafka_dist(version), tmp_path / name, name, **kwargs)
        made.append(cluster)
        cluster.start()
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.__exit__(None, None, None)
        stop_all(10.0)


@pytest.fixture(scope="session")
def kafka_dump_log(kafka_dist: Callable[..., Kafka]) -> Callable[..., Any]:
    """Factory running kafka-dump-log on files (see the module docstring)."""

    def dump(
        files: Sequence[Path | str],
        flags: Sequence[str] = ("--deep-iteration",),
        version: str = DEFAULT_VERSION,
    ) -> subprocess.CompletedProcess[str]:
        return kafka_dist(version).dump_log(files, flags)

    return dump


@pytest.fixture(scope="session")
def scenario_bundle(kafka_dist: Callable[..., Kafka]) -> Callable[..., Path]:
    """Factory returning a scenario bundle directory, built once per cache."""

    def get(name: str, version: str = DEFAULT_VERSION) -> Path:
        kafka_dist(version)
        try:
            return build(name, version)
        except ScenarioError:
            # Real clusters on a busy 2-core machine can miss a timing bound once.
            return build(name, version)

    return get


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A started S3 server for the session (see the module docstring); skipped as the Kafka fixtures are."""
    reason = kafka_unavailable()
    if reason:
        pytest.skip(reason)
    with S3Server() as server:
        yield server
