"""A real S3-compatible server on 127.0.0.1 for the tests: S3Proxy over a temporary directory.

Bundles are read from S3 as well as from disk; the suite checks that path against a real S3 API,
not a mock. S3Proxy (``org.gaul:s3proxy``, Apache 2.0) is one self-contained jar from Maven
Central (:func:`fetch_s3proxy`, ``<cache>/jars/org.gaul/``); :class:`S3Server` runs it with the
``filesystem`` backend (buckets are directories of a temporary directory it owns), a random key
and secret per instance, and a listener on 127.0.0.1 only.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from peer.errors import PeerError
from peer.kafka import fetch_jar

if TYPE_CHECKING:
    from types import TracebackType

    from peer.process import Managed

#: The newest release that runs on Java 17, the JDK here: 4.x (Jetty 12, its own blob stores in
#: place of jclouds, which still reads the ``jclouds.*`` keys) is built with ``release 17``; every
#: class of its ``jar-with-dependencies`` is of class-file version 61 (Java 17) or older.
VERSION = "4.1.0"
ARTIFACT = f"org.gaul:s3proxy:{VERSION}:jar:jar-with-dependencies"
#: The region the clients sign for (S3Proxy accepts any; s3fs needs one for SigV4).
REGION = "us-east-1"
#: JVM flags: a small heap and a quick start, as the Kafka nodes get (:data:`peer.kafka.JVM_FLAGS`), and
#: no logback start-up status in the log (it would fill the tail an error shows).
JVM_FLAGS: tuple[str, ...] = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                              "-Djava.net.preferIPv4Stack=true", "-Djava.awt.headless=true",
                              "-Dlogback.statusListenerClass=ch.qos.logback.core.status.NopStatusListener")


def fetch_s3proxy(timeout: float = 600.0) -> Path:
    """The S3Proxy jar with its dependencies (one jar, about 55 MB), copied by Maven from Maven
    Central into ``<cache>/jars/org.gaul/`` once; a no-op when it is there.

    Raises
    ------
    FetchError
        When Maven is missing or cannot resolve :data:`ARTIFACT`.
    """
    return fetch_jar("s3proxy", VERSION, group="org.gaul", classifier="jar-with-dependencies", timeout=timeout)


def properties(port: int, key: str, secret: str, basedir: Path) -> str:
    """S3Proxy's configuration: SigV2 or SigV4 with one key, the ``filesystem`` backend, 127.0.0.1.

    >>> print(properties(9000, "k", "s", Path("/tmp/b")).splitlines()[0])
    s3proxy.endpoint=http://127.0.0.1:9000
    """
    return "".join(f"{name}={value}\n" for name, value in (
        ("s3proxy.endpoint", f"http://127.0.0.1:{port}"),
        ("s3proxy.authorization", "aws-v2-or-v4"),
        ("s3proxy.identity", key),
        ("s3proxy.credential", secret),
        ("s3proxy.metrics.enabled", "false"),
        ("jclouds.provider", "filesystem"),
        ("jclouds.filesystem.basedir", str(basedir)),
    ))


class S3Server:
    """S3Proxy on 127.0.0.1 with a random key and secret, storing into a temporary directory.

    A context manager: entering starts it and waits until it answers HTTP, leaving always stops it
    (SIGTERM, then SIGKILL) and removes its directory. The child goes through
    :func:`peer.process.spawn`, so the peer's stop-all handlers cover it too.

    Examples
    --------
    >>> with S3Server() as server:                                   # doctest: +SKIP
    ...     fs = s3fs.S3FileSystem(**server.storage_options())
    """

    def __init__(self) -> None:
        self.key = "k" + secrets.token_hex(8)
        self.secret = secrets.token_urlsafe(24)
        self.port: int | None = None
        self.home: Path | None = None
        self._child: Managed | None = None

    @property
    def endpoint_url(self) -> str:
        """The server's base URL (loopback)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path | None:
        """The server's output file (in its directory)."""
        return self.home / "s3proxy.log" if self.home else None

    def storage_options(self) -> dict[str, Any]:
        """The keyword arguments of ``s3fs.S3FileSystem`` (and fsspec's ``storage_options``)."""
        return {"key": self.key, "secret": self.secret,
                "client_kwargs": {"endpoint_url": self.endpoint_url, "region_name": REGION}}

    def start(self, timeout: float = 120.0, attempts: int = 3) -> S3Server:
        """Start the server and wait until it answers (another port when the first was taken meanwhile).

        Raises
        ------
        PeerError
            When it exits or does not answer within ``timeout`` s (it is stopped; the log tail is in
            the message).
        """
        from peer.cluster import free_ports
        from peer.process import spawn

        jar = fetch_s3proxy()
        self.home = Path(tempfile.mkdtemp(prefix="s3proxy-"))
        try:
            (self.home / "data").mkdir()
            for attempt in range(1, attempts + 1):
                self.port = free_ports(1)[0]
                config = self.home / "s3proxy.properties"
                config.write_text(properties(self.port, self.key, self.secret, self.home / "data"), "utf-8")
                config.chmod(0o600)
                self._child = spawn("s3proxy", ["java", *JVM_FLAGS, "-jar", str(jar), "--properties", str(config)],
                                    output=self.log, cwd=self.home)
                if self._wait(timeout, retry=attempt < attempts):
                    return self
        except BaseException:
            self.stop()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait(self, timeout: float, *, retry: bool) -> bool:
        """Wait until the child answers (True); False when it could not bind its port and ``retry``.

        Raises
        ------
        PeerError
            When it exits otherwise or does not answer within ``timeout`` s.
        """
        assert self._child is not None
        deadline = time.monotonic() + timeout
        while not self._answers():
            exited = not self._child.alive()
            if exited or time.monotonic() > deadline:
                tail = self._child.tail(30)
                code = self._child.stop(10.0)
                self._child = None
                if retry and ("Failed to bind" in tail or "Address already in use" in tail):
                    return False
                why = f"exited (code {code})" if exited else f"did not answer within {timeout:.0f} s"
                raise PeerError(f"s3proxy on {self.endpoint_url} {why}; the end of its log:\n{tail}")
            time.sleep(0.2)
        return True

    def _answers(self) -> bool:
        """Whether the server answers HTTP (an unsigned request gets 403 AccessDenied: it is up)."""
        try:
            with urllib.request.urlopen(f"{self.endpoint_url}/", timeout=2.0):  # noqa: S310 (loopback)
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and remove its directory; safe to call twice."""
        if self._child is not None:
            self._child.stop(15.0)
            self._child = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
