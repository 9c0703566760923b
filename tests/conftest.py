"""Shared fixtures: one Spark session for the whole run, and the demo bundle."""

from __future__ import annotations

import os
import sys

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def spark():
    """A local Spark session with the workbench's data sources, stopped at the end of the run."""
    import workbench

    session = workbench.session(
        "local[2]",
        app_name="workbench-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Duser.timezone=UTC",
        },
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_bundle():
    """Scenario bundles captured from real Apache Kafka (built on first use, then cached).

    Call as ``kafka_bundle("isr")`` or ``kafka_bundle("isr", "3.9.2")``; returns the directory.
    """
    from peer.kafka import DEFAULT_VERSION
    from peer.scenario import build

    def get(name: str, version: str = DEFAULT_VERSION):
        return build(name, version)

    return get


@pytest.fixture(scope="session")
def demo_bundle(tmp_path_factory):
    """The shipped demo bundle (a real ISR incident captured from Kafka), extracted once."""
    from workbench.demo import write_demo_bundle

    return write_demo_bundle(tmp_path_factory.mktemp("demo") / "bundle")
