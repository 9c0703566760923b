"""Shared fixtures: one Spark session for the whole run, the demo bundle, real Kafka (the peer)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from peer.pytest_plugin import (  # noqa: F401  (fixtures are found by name)
    kafka_cluster,
    kafka_dist,
    kafka_dump_log,
    s3_server,
    scenario_bundle,
)

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

# Hypothesis profiles: "ci" (set by .ci/run through WORKBENCH_HYPOTHESIS_PROFILE) draws the same
# examples on every run (derandomize) and keeps no example database, so a CI result is
# reproducible; "dev" (the default) draws new examples each run and replays local failures.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("WORKBENCH_HYPOTHESIS_PROFILE", "dev"))

#: Fixtures that give real-Kafka scenario bundles or clusters: a test using one is a ``kafka`` test
#: whatever its own marks say, so ``-m "not kafka"`` selects exactly the tests that need no bundle.
KAFKA_FIXTURES = {"kafka_bundle", "scenario_bundle", "kafka_cluster", "kafka_dist", "kafka_dump_log", "s3_server"}
#: Fixtures that start notebook kernels or build the Binder environment: a test using one is a
#: ``kernel`` test, which ``make check`` leaves out.
KERNEL_FIXTURES = {"demo_report", "binder_kernel", "incident_report"}


#: "1" (``make test-full``) also runs the tests marked ``full``: slower variants of checks ``make test``
#: runs once (another scenario's reports, another bundle in JupyterLab). Without it they are
#: deselected, never skipped, so a skip in CI still means something went missing.
FULL = os.environ.get("KAFKA_WORKBENCH_FULL", "").strip() == "1"


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if KAFKA_FIXTURES & fixtures and not item.get_closest_marker("kafka"):
            item.add_marker(pytest.mark.kafka)
        if KERNEL_FIXTURES & fixtures and not item.get_closest_marker("kernel"):
            item.add_marker(pytest.mark.kernel)
    slower = [] if FULL else [item for item in items if item.get_closest_marker("full")]
    if slower:
        config.hook.pytest_deselected(items=slower)
        items[:] = [item for item in items if item not in slower]


@pytest.fixture(scope="session")
def spark():
    """A local Spark session with the workbench's data sources, stopped at the end of the run."""
    import workbench
    from workbench.session import INTERPRETED_CONF

    session = workbench.session(
        "local[2]",
        app_name="workbench-tests",
        # one JVM holds the driver and both executor threads for the whole run, with every
        # module's cached tables: 1g ran out of heap late in a full run
        driver_memory="4g",
        conf={
            # the suite's inputs are small: evaluated as a report evaluates a small bundle, without
            # generated code (workbench.session.INTERPRETED_CONF)
            **INTERPRETED_CONF,
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            # C1 alone: the suite runs thousands of small, different queries, whose C2 compilations
            # cost more CPU than they save (benchmarks/README.md, "The test suite"), and the lanes
            # of `make test` share two cores; its code cache enlarged, as C1's default 48 MiB fills
            # early in a run (workbench/session.py)
            "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
                                             "-XX:ReservedCodeCacheSize=1g -Duser.timezone=UTC",
        },
    )
    yield session
    session.stop()


#: Bundles written once per session whose tables and results stay kept across modules (:func:`incident_bundle`).
_SESSION_BUNDLES: set[Path] = set()


@pytest.fixture(scope="module", autouse=True)
def _release_cached_tables():
    """Drop what a module cached in Spark (persisted reads, checkpointed derived results) once the
    module is done, except the real scenario bundles' tables and the session's own bundles: many
    modules read the same few bundles, which are decoded and analysed once per session."""
    yield
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        from peer.kafka import cache_root
        from workbench.spark.registry import unpersist_all

        scenarios = (cache_root() / "scenarios").resolve()
        unpersist_all(keep=lambda root: isinstance(root, Path) and (root.resolve().is_relative_to(scenarios)
                                                                    or root.resolve() in _SESSION_BUNDLES))


@pytest.fixture(scope="session")
def incident_bundle(tmp_path_factory) -> Path:
    """The tiny ISR incident of :mod:`tests.incident`, written once per session; the modules that
    only read it share its tables and findings (every area computed once)."""
    from tests.incident import write_incident_bundle

    root = write_incident_bundle(tmp_path_factory.mktemp("incident") / "incident")
    _SESSION_BUNDLES.add(root.resolve())
    return root


@pytest.fixture(scope="session")
def kafka_bundle():
    """Scenario bundles captured from real Apache Kafka (built on first use, then cached).

    Call as ``kafka_bundle("isr")`` or ``kafka_bundle("isr", "3.9.2")``; returns the directory.
    A bundle that cannot be built is an error, never a skip.
    """
    from peer.errors import ScenarioError
    from peer.kafka import DEFAULT_VERSION
    from peer.scenario import build

    def get(name: str, version: str = DEFAULT_VERSION):
        try:
            return build(name, version)
        except ScenarioError:
            # real clusters on a busy 2-core machine can miss a timing bound once
            return build(name, version)

    return get


@pytest.fixture(scope="session")
def binder_kernel():
    """(kernel name, environment, python) of the Binder environment built from ``binder/`` alone."""
    from pathlib import Path

    from tests.binder_env import binder_kernel as build

    return build(Path(__file__).resolve().parent.parent)


@pytest.fixture(scope="session")
def demo_bundle(tmp_path_factory):
    """The shipped demo bundle (one real-Kafka incident across all five areas), extracted once."""
    from workbench.demo import write_demo_bundle

    return write_demo_bundle(tmp_path_factory.mktemp("demo") / "bundle")


#: Seconds a cell of the demo report may take in Binder's kernel (Spark on one core, 512 MiB): the
#: findings cell computes all five areas of the demo bundle, minutes on a loaded 2-core machine.
DEMO_REPORT_CELL_S = 1800
#: pytest-timeout's limit for a test that may be the first to ask for :func:`demo_report`: its setup
#: counts, which may build the Binder environment (or wait for the other lane's build) and then
#: run the report (CI: 944 s, past the default 900 s, which interrupted the kernel).
DEMO_REPORT_TIMEOUT_S = 3600


@pytest.fixture(scope="session")
def demo_report(demo_bundle, binder_kernel, tmp_path_factory):
    """`make demo`'s report (:func:`workbench.report.run_report` on the demo bundle), built once, in a
    kernel of the environment Binder builds from ``binder/`` alone (its kernelspec exists only there):
    the composed ``incident_report`` notebook's run in that environment (``tests/test_notebooks.py``);
    the report test reads its findings, the browser test opens it offline. The executed notebook is
    kept beside the HTML as ``executed.ipynb``."""
    from workbench.report import run_report

    kernel, env, _ = binder_kernel
    out = tmp_path_factory.mktemp("demo-report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", env["JUPYTER_PATH"])   # where Jupyter finds Binder's kernelspec
        return run_report(demo_bundle, out / "incident-report.html", kernel_name=kernel,
                          keep_executed=out / "executed.ipynb", timeout=DEMO_REPORT_CELL_S)


@pytest.fixture(scope="session")
def incident_report(tmp_path_factory):
    """The HTML report and summary of the small ISR incident with its hostile and unreadable topic
    names (:func:`tests.incident.render_report`), rendered once for every test that reads it."""
    from tests.incident import render_report

    return render_report(tmp_path_factory.mktemp("incident-report"))
