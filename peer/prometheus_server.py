"""A real Prometheus server scraping a cluster's JMX exporters, its API export kept in the bundle.

An operator's whole-cluster metrics usually come from a Prometheus server, not from each node:
one ``query_range`` answer holding every node's series, told apart by ``instance``. Debian's
``prometheus`` package is fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x``
into ``<cache>/prometheus/`` (:func:`fetch_prometheus`), never installed: installing it would
start a service listening on every address. :class:`PrometheusServer` runs that binary on
127.0.0.1 only, scraping every node's exporter each second into a temporary TSDB, and
:meth:`PrometheusServer.export` writes ``metrics/prometheus-query_range.json`` (the API's answer
for every ``kafka_*`` series) and ``metrics/instances.json`` (each target's node: what an
operator writes by hand for :mod:`workbench.spark.metrics`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from peer.errors import FetchError, PeerError
from peer.kafka import cache_root

if TYPE_CHECKING:
    from types import TracebackType

    from peer.bundle import BundleWriter
    from peer.process import Managed

#: Where the server's export goes in the bundle, and the operator-style instance -> node mapping.
EXPORT = "metrics/prometheus-query_range.json"
INSTANCES = "metrics/instances.json"
#: The series exported: every metric the JMX exporter rules name (:data:`peer.prometheus.RULES`).
QUERY = '{__name__=~"kafka_.+"}'


def fetch_prometheus(timeout: float = 600.0) -> Path:
    """The ``prometheus`` binary of Debian's package, downloaded and unpacked once into
    ``<cache>/prometheus/`` (``apt-get update`` first only when the download fails).

    Raises
    ------
    FetchError
        When apt-get or dpkg-deb is missing, or the package cannot be downloaded or unpacked.
    """
    home = cache_root() / "prometheus"
    binary = home / "root" / "usr" / "bin" / "prometheus"
    if binary.exists():
        return binary
    from peer.locks import file_lock

    with file_lock(cache_root() / "locks" / "fetch-prometheus.lock", timeout=timeout, what="fetch of prometheus"):
        if binary.exists():
            return binary
        for tool in ("apt-get", "dpkg-deb"):
            if shutil.which(tool) is None:
                raise FetchError(f"{tool} is not on PATH; it is needed to fetch Debian's prometheus package")
        staging = home / f"fetch.{time.monotonic_ns()}.tmp"
        staging.mkdir(parents=True)
        try:
            done = _run(["apt-get", "download", "-q", "prometheus"], staging, timeout)
            if done.returncode != 0:
                _run(["apt-get", "update", "-qq"], staging, timeout)
                done = _run(["apt-get", "download", "-q", "prometheus"], staging, timeout)
            debs = sorted(staging.glob("prometheus_*.deb"))
            if done.returncode != 0 or not debs:
                raise FetchError(f"apt-get download prometheus failed:\n{(done.stdout + done.stderr)[-3000:]}")
            unpacked = _run(["dpkg-deb", "-x", str(debs[0]), str(staging / "root")], staging, timeout)
            if unpacked.returncode != 0 or not (staging / "root" / "usr" / "bin" / "prometheus").exists():
                raise FetchError(f"dpkg-deb -x {debs[0].name} failed:\n{(unpacked.stdout + unpacked.stderr)[-3000:]}")
            shutil.rmtree(home / "root", ignore_errors=True)
            (staging / "root").replace(home / "root")
            (home / "package.txt").write_text(debs[0].name + "\n", "utf-8")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return binary


def _run(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"{' '.join(argv)} did not finish in {timeout:.0f} s") from exc


def server_config(targets: Sequence[int], interval_s: int = 1) -> str:
    """The server's configuration: one job scraping ``127.0.0.1:<port>/metrics`` of each target.

    >>> print(server_config([7071]).splitlines()[-1])
          - targets: ['127.0.0.1:7071']
    """
    listed = ", ".join(f"'127.0.0.1:{port}'" for port in targets)
    return (f"global:\n  scrape_interval: {interval_s}s\n  scrape_timeout: {interval_s}s\n"
            f"scrape_configs:\n  - job_name: kafka\n    static_configs:\n      - targets: [{listed}]\n")


class PrometheusServer:
    """A Prometheus server on 127.0.0.1 scraping ``{node id: exporter port}`` every second.

    A context manager: entering starts it (and waits until it answers), leaving always stops it
    (SIGTERM, then SIGKILL) and removes its TSDB. :meth:`export` saves its answer into the bundle.
    """

    def __init__(self, targets: dict[int, int], *, interval_s: int = 1) -> None:
        self.targets = dict(targets)
        self.interval_s = interval_s
        self.port: int | None = None
        self.started_ms: int | None = None
        self._home: Path | None = None
        self._child: Managed | None = None

    @property
    def url(self) -> str:
        """The server's base URL (loopback)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        """Start the server and wait until it is ready.

        Raises
        ------
        PeerError
            When it exits or does not answer ``/-/ready`` within ``timeout`` s (it is stopped).
        """
        from peer.cluster import free_ports
        from peer.process import spawn

        binary = fetch_prometheus()
        self._home = Path(tempfile.mkdtemp(prefix="prometheus-"))
        config = self._home / "prometheus.yml"
        config.write_text(server_config(list(self.targets.values()), self.interval_s), "utf-8")
        self.port = free_ports(1)[0]
        argv = [str(binary), f"--config.file={config}", f"--web.listen-address=127.0.0.1:{self.port}",
                f"--storage.tsdb.path={self._home / 'data'}", "--storage.tsdb.retention.time=1d"]
        self.started_ms = int(time.time() * 1000)
        self._child = spawn("prometheus", argv, output=self._home / "prometheus.out", cwd=self._home)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2.0) as response:  # noqa: S310 (loopback)
                    if response.status == 200:
                        return self
            except OSError:
                pass
            if not self._child.alive() or time.monotonic() > deadline:
                tail = self._child.tail(20)
                self.stop()
                raise PeerError(f"prometheus did not become ready on {self.url}:\n{tail}")
            time.sleep(0.2)

    def query_range(self, start_ms: int, end_ms: int, query: str = QUERY) -> bytes:
        """The raw ``/api/v1/query_range`` answer for ``query`` at a 1 s step.

        Raises
        ------
        PeerError
            When the server answers with an error.
        """
        params = urllib.parse.urlencode({"query": query, "start": f"{start_ms / 1000:.3f}",
                                         "end": f"{end_ms / 1000:.3f}", "step": "1s"})
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query_range?{params}", timeout=60.0) as response:  # noqa: S310
                body = response.read()
        except OSError as exc:
            raise PeerError(f"prometheus query_range {query} failed: {exc}") from exc
        answer = json.loads(body)
        if answer.get("status") != "success":
            raise PeerError(f"prometheus query_range {query} failed: {body[:500]!r}")
        return body

    def export(self, bundle: BundleWriter, end_ms: int | None = None) -> dict[str, Any]:
        """Write the ``query_range`` answer since the start and the instance -> node mapping into
        the bundle (manifest ``metrics`` entries without ``node``: they cover every node).
        Returns the manifest entry of the export."""
        assert self.started_ms is not None, "export() of a server never started"
        end_ms = end_ms if end_ms is not None else int(time.time() * 1000)
        body = self.query_range(self.started_ms, end_ms)
        series = len(json.loads(body)["data"]["result"])
        entry = {"file": EXPORT, "what": "prometheus_server", "format": "prometheus_api",
                 "query": QUERY, "step_s": 1, "t_ms": self.started_ms, "t_end_ms": end_ms, "series": series,
                 "instances": INSTANCES}
        mapping = {f"127.0.0.1:{port}": node for node, port in sorted(self.targets.items())}
        with bundle._lock:  # noqa: SLF001 (the writer's manifest lock, as BundleWriter.metric takes it)
            bundle.manifest["metrics"].append(entry)
        path = bundle.root / EXPORT
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        (bundle.root / INSTANCES).write_text(json.dumps(mapping, indent=1) + "\n", "utf-8")
        return entry

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and remove its TSDB; safe to call twice."""
        if self._child is not None:
            self._child.stop(15.0)
            self._child = None
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
