"""Running scenarios into bundles, and reusing bundles already built.

A scenario is a module in :mod:`peer.scenarios` with a ``NAME`` and a ``run(ctx)`` function.
:func:`build` runs it with a :class:`ScenarioContext` (clusters, samplers and the bundle
writer, all stopped in ``finally``) into
``<cache>/scenarios/<kafka-version>/<name>-<hash of the scenario module source>/``. A
``.complete`` marker written last makes the bundle reusable; a failed run leaves none.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import inspect
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from peer.bundle import BundleWriter
from peer.cluster import Cluster, cluster_id_for
from peer.errors import PeerError, ScenarioError
from peer.kafka import VERSIONS, Kafka, cache_root, fetch, fetch_era_server
from peer.locks import all_slots_lock, file_lock, slot_lock
from peer.metrics import JmxSampler
from peer.process import Managed, spawn

#: Scenarios of the newest pinned release, in build order.
PINNED_SCENARIOS = ("isr", "consumer_lag", "quorum", "tiered", "mm2", "mm2_partial", "restarts", "flap",
                    "transactions")
#: Scenarios of the older pinned release (3.9, the last 3.x): the metadata log, ISR, quorum and
#: consumer-offset formats and tool texts of the 3.x line. MirrorMaker 2 and tiered storage run the
#: same code on both releases and their builds are the longest (each 300-400 s on a loaded 2-core
#: machine), so they are built on the newest release only, which keeps ``make test`` inside CI's time.
OLDER_SCENARIOS = ("isr", "consumer_lag", "quorum", "transactions")
#: Every scenario: also ``idle`` (older releases only, :data:`ERA_SETS`), ``demo`` (one
#: incident across all five areas, on the default release only; the shipped demo is still ``isr``)
#: ``hostile`` (HTML, script and invisible characters in every free-text field), ``unclean`` (an
#: unclean leader election that loses acknowledged records) and ``unclean_return`` (the same, with
#: the old leader returning and truncating), ``healthy`` (an RF 3 cluster under load, stopped
#: cleanly: the replicas question's null case) and ``voters`` (a KIP-853 dynamic quorum whose voters
#: change); all five on the default release, :data:`SINGLE_SETS`.
SCENARIOS = (*PINNED_SCENARIOS, "idle", "demo", "hostile", "unclean", "unclean_return", "healthy", "voters")
COMPLETE = ".complete"
#: Environment variable: "1" builds (and tests) the :data:`OLDER_SCENARIOS` on 3.9.2 too (``make
#: test-full``). ``make test`` leaves them out: on a 2-core machine that runs the whole suite at about
#: the throughput of one core, CI's 90 minutes hold each slow check once, on the newest release.
OLDER_RELEASE_ENV = "KAFKA_WORKBENCH_OLDER_RELEASE"
#: Scenarios built per pinned version by default: every scenario on the newest release, and the
#: :data:`OLDER_SCENARIOS` on 3.9.2 when :data:`OLDER_RELEASE_ENV` is "1" (:func:`built_on` says
#: where a scenario is built). The test suite is parametrised over exactly these (version,
#: scenario) pairs, so what it collects depends on these definitions and that variable alone, never
#: on what happens to sit in the cache.
DEFAULT_SETS: dict[str, tuple[str, ...]] = {
    "4.3.1": (*PINNED_SCENARIOS, "demo"),
    "3.9.2": OLDER_SCENARIOS if os.environ.get(OLDER_RELEASE_ENV, "").strip() == "1" else (),
}
#: Scenarios built on older releases that are not pinned (:data:`peer.kafka.ERA_SERVERS`, fetched
#: by :func:`peer.kafka.fetch_era_server`): metadata logs from before NoOpRecords and
#: ``metadata.version`` (3.1.2, 3.2.3), of the first release with them (3.3.2) and from after
#: (3.5.2). Built by ``python -m peer scenarios`` (and so by ``make test``) beside :data:`DEFAULT_SETS`.
ERA_SETS: dict[str, tuple[str, ...]] = {
    "3.1.2": ("idle",),
    "3.2.3": ("idle",),
    "3.3.2": ("idle",),
    "3.5.2": ("idle",),
}
#: ZooKeeper-mode scenarios (:class:`peer.zookeeper.ZkCluster`; Kafka 2.8-3.9): the broker text logs
#: (``server.log``, ``controller.log``, ``state-change.log``) of the ZooKeeper era, on the last 3.x,
#: an early one and the last 2.x (2.8.2, :data:`peer.kafka.ZK_ERA_SERVERS`). Built by ``python -m peer
#: scenarios`` (and so by ``make test``) beside :data:`DEFAULT_SETS` and :data:`ERA_SETS`; the tests
#: read them by these versions.
ZK_SETS: dict[str, tuple[str, ...]] = {
    "3.9.2": ("zk_isr",),
    "3.2.3": ("zk_isr",),
    "2.8.2": ("zk_isr",),
}
#: Scenarios one test module reads (``hostile``: ``tests/test_hostile_report.py``; ``unclean`` and
#: ``unclean_return``: ``tests/analysis/test_unclean_real_kafka.py`` and
#: ``test_unclean_return_real_kafka.py``; ``healthy``: ``test_healthy_real_kafka.py``; ``voters``:
#: ``test_voters_real_kafka.py``), not parametrised over like
#: :data:`DEFAULT_SETS`.
#: Built by ``python -m peer scenarios`` (and so by ``make test``) beside the other sets, so that no
#: test builds a cluster while the suite's lanes run.
SINGLE_SETS: dict[str, tuple[str, ...]] = {"4.3.1": ("hostile", "unclean", "unclean_return", "healthy", "voters")}
#: Scenarios of :data:`ZK_SETS` (kept out of :data:`SCENARIOS`, which the default builds cover).
ZK_SCENARIOS: tuple[str, ...] = ("zk_isr",)


def built_on(name: str) -> tuple[str, ...]:
    """The pinned releases whose default set builds scenario ``name``, newest first.

    >>> built_on("isr")[0]
    '4.3.1'
    >>> built_on("mm2")
    ('4.3.1',)
    """
    return tuple(version for version, names in DEFAULT_SETS.items() if name in names)


#: How long a build waits for another process's build to finish.
LOCK_TIMEOUT_S = 1800.0
#: Machine-wide (not per cache): at most :func:`scenario_slots` scenario builds run at once,
#: whichever caches they write to.
SCENARIO_LOCK = Path(tempfile.gettempdir()) / f"kafka-workbench-peer-{os.getuid()}.lock"
#: Environment variable: how many scenario builds may run at once on this machine.
SLOTS_ENV = "KAFKA_WORKBENCH_SCENARIO_SLOTS"
#: A build keeps about a quarter of one core busy (measured: tiered on 4.3.1, 199 s wall,
#: 46 s CPU), waiting on the clusters' own timers, so three share a 2-core machine.
DEFAULT_SLOTS = 3


def scenario_slots() -> int:
    """How many scenario builds may run at once (``$KAFKA_WORKBENCH_SCENARIO_SLOTS``, default 3).

    Raises
    ------
    ScenarioError
        When the variable is not a positive integer.
    """
    raw = os.environ.get(SLOTS_ENV, "").strip()
    if not raw:
        return DEFAULT_SLOTS
    try:
        slots = int(raw)
    except ValueError:
        slots = 0
    if slots < 1:
        raise ScenarioError(f"{SLOTS_ENV} must be a positive integer, got {raw!r}")
    return slots


def scenario_module(name: str) -> ModuleType:
    """The module of scenario ``name``.

    Raises
    ------
    ScenarioError
        For an unknown name.
    """
    if name not in SCENARIOS and name not in ZK_SCENARIOS:
        raise ScenarioError(f"unknown scenario {name!r}; expected one of {[*SCENARIOS, *ZK_SCENARIOS]}")
    return importlib.import_module(f"peer.scenarios.{name}")


#: Peer files that shape what a bundle holds besides the scenario module: a change to any of
#: them rebuilds every scenario's bundle.
BUNDLE_SHAPING = ("bundle.py", "cluster.py", "metrics.py", "prometheus.py", "java/PeerClient.java")


def scenario_hash(name: str) -> str:
    """First 10 hex digits of the SHA-256 of the scenario module's source, of the scenario
    modules it names in ``USES`` (code it runs from them) and of the peer files that shape a
    bundle's contents (:data:`BUNDLE_SHAPING`, then the module's own ``SHAPED_BY``, e.g.
    ``zookeeper.py``, which shapes only the bundles of the scenarios that name it)."""
    module = scenario_module(name)
    digest = hashlib.sha256(inspect.getsource(module).encode("utf-8"))
    for used in getattr(module, "USES", ()):
        digest.update(b"\0" + inspect.getsource(scenario_module(used)).encode("utf-8"))
    here = Path(__file__).resolve().parent
    for rel in (*BUNDLE_SHAPING, *getattr(module, "SHAPED_BY", ())):
        digest.update(b"\0" + rel.encode("utf-8") + b"\0" + (here / rel).read_bytes())
    return digest.hexdigest()[:10]


def bundle_dir(name: str, version: str) -> Path:
    """Where the bundle of scenario ``name`` for Kafka ``version`` lives in the cache."""
    return cache_root() / "scenarios" / version / f"{name}-{scenario_hash(name)}"


def is_complete(path: Path) -> bool:
    """Whether ``path`` is a finished bundle."""
    return (path / COMPLETE).exists()


class ScenarioContext:
    """What a scenario's ``run`` works with.

    Attributes
    ----------
    kafka
        The release.
    bundle
        The bundle writer (manifest, tools, dumps).
    work
        Scratch directory for node homes.
    """

    def __init__(self, kafka: Kafka, bundle: BundleWriter, work: Path) -> None:
        self.kafka = kafka
        self.bundle = bundle
        self.work = work
        self.clusters: list[Cluster] = []
        self.samplers: list[Any] = []  # JmxSampler and PrometheusScraper: start() and stop()
        self.cleanups: list[Callable[[], None]] = []
        self.children: list[Managed] = []
        self.after_stop: list[Callable[[], None]] = []

    def cluster(self, name: str, *, zookeeper: bool = False, **kwargs: Any) -> Cluster:
        """Create (not start) a cluster whose nodes are collected into the bundle; with
        ``zookeeper=True`` a ZooKeeper server and ZooKeeper-mode brokers
        (:class:`peer.zookeeper.ZkCluster`: ``brokers`` only, no controllers)."""
        first_id = kwargs.pop("first_id", 1)
        if zookeeper:
            from peer.zookeeper import ZkCluster

            c: Cluster = ZkCluster(self.kafka, self.work / name, name, first_id=first_id, **kwargs)
        else:
            c = Cluster(self.kafka, self.work / name, name, first_id=first_id, **kwargs)
        if not self.clusters:
            self.bundle.manifest["cluster_id"] = c.cluster_id
        self.clusters.append(c)
        return c

    def background(self, name: str, argv: list[str]) -> Managed:
        """Start a helper process (client, MirrorMaker) stopped at the end of the run."""
        child = spawn(name, argv, output=self.work / f"{name}.out")
        self.children.append(child)
        return child

    def event(self, event: str, **details: Any) -> int:
        """Record an event in the manifest (wall-clock ms)."""
        return self.bundle.event(event, **details)

    def tool(self, tool: str, args: list[str], *, client: Kafka | None = None, **kwargs: Any) -> str:
        """Run and capture a Kafka tool (see :meth:`BundleWriter.tool`); ``client``: run it from
        that release's classpath instead (a client tool an older release's server lib lacks, e.g.
        ``producer-perf`` for a 3.2.3 cluster)."""
        writer = self.bundle
        if client is not None and client is not self.kafka:
            writer = copy.copy(self.bundle)  # shares the manifest, its lock and the bundle root
            writer.kafka = client
        return writer.tool(tool, args, **kwargs)

    def sample(
        self, node_id: int, what: str, jmx_url: str, object_names: list[str], *, scrape: bool = True,
        **kwargs: Any,
    ) -> JmxSampler:
        """Start a JmxTool sampler writing ``metrics/<node>-<what>.csv``; when the node runs
        the Prometheus JMX exporter and ``scrape`` (a node's second sampler passes False: one
        scraper per node), also scrape it into ``metrics/<node>-<t_ms>.prom``."""
        path = self.bundle.metric(f"metrics/{node_id}-{what}.csv", node_id, what, format="jmxtool")
        sampler = JmxSampler(self.kafka, jmx_url, object_names, path, **kwargs).start()
        self.samplers.append(sampler)
        for c in self.clusters if scrape else ():
            for node in c.nodes:
                if node.id == node_id and node.prometheus_port is not None and node.jmx_url == jmx_url:
                    from peer.prometheus import PrometheusScraper

                    self.samplers.append(PrometheusScraper(self.bundle, node_id, what, node.prometheus_port).start())
        return sampler

    def stop_samplers(self) -> None:
        """Stop every sampler."""
        for sampler in self.samplers:
            sampler.stop()

    @staticmethod
    def sleep(seconds: float) -> None:
        """Sleep (scenario pacing)."""
        time.sleep(seconds)

    @staticmethod
    def wait_until(
        check: Callable[[], bool], *, timeout: float, interval: float = 1.0, what: str = ""
    ) -> float:
        """Poll ``check`` until true; returns seconds waited.

        Raises
        ------
        ScenarioError
            When ``timeout`` seconds pass first.
        """
        start = time.monotonic()
        while True:
            if check():
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise ScenarioError(f"timed out after {timeout:.0f} s waiting for {what or check}")
            time.sleep(interval)

    def finish(self) -> None:
        """Stop helpers, samplers and clusters, collect node log dirs and dump every segment."""
        for child in self.children:
            child.stop(10.0)
        self.stop_samplers()
        for c in self.clusters:
            c.stop()
        for fn in self.after_stop:
            fn()
        for c in self.clusters:
            self.bundle.add_nodes(c.collect(self.bundle.root))
        self.bundle.dump_all()

    def close(self) -> None:
        """Stop everything still running (always called, also after errors)."""
        for child in self.children:
            child.stop(10.0)
        for fn in reversed(self.cleanups):
            try:
                fn()
            except PeerError:
                pass
        self.stop_samplers()
        for c in self.clusters:
            c.__exit__(None, None, None)

    def tails(self, lines: int = 30) -> str:
        """Tails of every node's and helper's output (for failure reports)."""
        parts = [c.tails(lines) for c in self.clusters]
        for child in self.children:
            parts.append(f"--- {child.name} ---\n{child.tail(lines)}")
        return "\n".join(parts)


def build(
    name: str,
    version: str,
    *,
    out: Path | None = None,
    force: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> Path:
    """Build (or reuse) the bundle of scenario ``name`` for Kafka ``version``.

    Parameters
    ----------
    name
        One of :data:`SCENARIOS`.
    version
        Kafka version (fetched if needed).
    out
        Bundle directory; default :func:`bundle_dir`.
    force
        Rebuild even when a complete bundle exists.
    log
        Receives progress lines.

    Returns
    -------
    Path
        The complete bundle directory.

    Raises
    ------
    ScenarioError
        When the scenario fails; the message carries the node logs' tails.
    """
    module = scenario_module(name)
    target = out or bundle_dir(name, version)
    if is_complete(target) and not force:
        log(f"{name}: reusing {target}")
        return target
    kafka = fetch(version) if version in VERSIONS else fetch_era_server(version)
    # One build per bundle directory (a concurrent run waits, then reuses the bundle), and at
    # most scenario_slots() builds per machine.
    own = cache_root() / "locks" / f"scenario-{kafka.version}-{target.name}.lock"
    with file_lock(own, timeout=LOCK_TIMEOUT_S, what=f"another build of {target}"):
        if is_complete(target) and not force:
            log(f"{name}: reusing {target} (built by a concurrent run)")
            return target
        # a scenario whose judge compares clock readings (EXCLUSIVE) is built with the machine to itself
        hold = all_slots_lock if getattr(module, "EXCLUSIVE", False) else slot_lock
        with hold(SCENARIO_LOCK, scenario_slots(), timeout=LOCK_TIMEOUT_S, what="other scenario builds"):
            return _build_locked(name, module, kafka, target, log)


def _build_locked(
    name: str, module: ModuleType, kafka: Kafka, target: Path, log: Callable[[str], None]
) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    work = cache_root() / "work" / kafka.version / target.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    bundle = BundleWriter(target, getattr(module, "SCENARIO", name), kafka, cluster_id_for(name))
    ctx = ScenarioContext(kafka, bundle, work)
    started = time.monotonic()
    log(f"{name}: building with Kafka {kafka.version} in {target}")
    try:
        module.run(ctx)
        ctx.finish()
    except BaseException as exc:
        ctx.close()
        tails = ctx.tails(40)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        raise ScenarioError(f"scenario {name} failed: {exc}\n{tails}") from exc
    finally:
        ctx.close()
    seconds = round(time.monotonic() - started, 1)
    bundle.manifest["build_seconds"] = seconds
    bundle.save()
    shutil.rmtree(work, ignore_errors=True)
    (target / COMPLETE).write_text(f"{seconds}\n", encoding="utf-8")
    log(f"{name}: done in {seconds} s")
    return target

