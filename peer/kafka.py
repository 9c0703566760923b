"""Apache Kafka from Maven Central: fetch a pinned release, build its classpath, run its tools.

The jars of one release land in ``<cache>/kafka/<version>/lib/`` (``<cache>`` is
``$KAFKA_WORKBENCH_CACHE`` or ``~/.cache/kafka-workbench``), resolved by Maven with
``peer/pom.xml`` and a local repository under ``<cache>/m2``. A stamp file written last marks
a complete lib directory, so fetching again is a no-op. The stamp records a digest of the pom:
when the pom has changed (a module added), the next fetch resolves it again and adds the jars
that are new, never removing one (JVMs of other runs may be using the directory).

Tools are run by main class with the same classpath; :meth:`Kafka.tool_class` finds the class
of a tool in the release at hand (some moved package between 3.9 and 4.x).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from peer.errors import FetchError, ToolError

#: The two pinned releases. 4.3.1 is the newest 4.x whose whole module set (kafka-tools,
#: connect-*, the storage test jar) is on Maven Central; 4.4.0 has only some modules there.
VERSIONS: dict[str, dict[str, str]] = {
    "4.3.1": {"profile": "log4j2", "log4j2.version": "2.25.4"},
    "3.9.2": {},
}
DEFAULT_VERSION = "4.3.1"

POM = Path(__file__).resolve().parent / "pom.xml"
TOOLS_POM = Path(__file__).resolve().parent / "tools-pom.xml"

#: Older releases whose own ``kafka.tools.DumpLogSegments`` judges the text the workbench's dump
#: writer prints for their era (``workbench.formats.dumptext_write.KafkaEra``), with the Scala
#: binary version of their core jar on Maven Central (``kafka_2.13`` starts at 2.4.0). One release
#: per era of the record and batch lines; only the dump tool's classpath is fetched
#: (:func:`fetch_dump_tool`, 20-40 MB each); no cluster runs from these.
#:
#: ========  ===================================================================================
#: 2.1.1     <= 2.1: deep iteration prints record lines only, codec in upper case (zstd from 2.1)
#: 2.2.2     2.2-2.3: batch lines with record lines; a record without a value prints no key
#: 2.4.1     2.4-2.6: the key of a record without a value is printed
#: 2.7.2     2.7: control types QUORUM_REASSIGNMENT(2) and LEADER_CHANGE(3)
#: 2.8.2     2.8: the verbose record line; --skip-record-metadata
#: 3.1.2     3.0-3.1: lower-case codec, "Starting offset", no deleteHorizonMs, five control types
#: 3.2.3     3.2: deleteHorizonMs on the batch line
#: 3.5.2     3.3-3.8: "Log starting offset", snapshot header/footer control records
#: 4.0.0     3.9-4.0: KRaft version/voters control records, no LeaderChange JSON yet
#: 4.2.0     4.1-4.2: LeaderChange JSON, the last Scala tool
#: ========  ===================================================================================
DUMP_TOOL_RELEASES: dict[str, str] = {
    "2.1.1": "2.12",
    "2.2.2": "2.12",
    "2.4.1": "2.13",
    "2.7.2": "2.13",
    "2.8.2": "2.13",
    "3.1.2": "2.13",
    "3.2.3": "2.13",
    "3.5.2": "2.13",
    "4.0.0": "2.13",
    "4.2.0": "2.13",
}
#: Older releases run as one KRaft node (broker and controller) to write a metadata log of their
#: era (``peer.scenarios.idle``): 3.1.2 and 3.2.3 predate ``metadata.version`` and NoOpRecords
#: (KIP-835 came with 3.3); 3.3.2 is the first release with both; 3.5.2 writes a NoOpRecord per idle
#: interval at metadata version 3.5-IV2.
#: Fetched by :func:`fetch_era_server`; scenarios of :data:`peer.scenario.ERA_SETS` run on them.
ERA_SERVERS: tuple[str, ...] = ("3.1.2", "3.2.3", "3.3.2", "3.5.2")
#: Older releases run only in ZooKeeper mode (:class:`peer.zookeeper.ZkCluster`), for the scenarios
#: of :data:`peer.scenario.ZK_SETS`: 2.8.2, the last 2.x (its KRaft mode was early access). Fetched
#: by :func:`fetch_era_server` like :data:`ERA_SERVERS` (the 2.8 core jar holds ``kafka.Kafka``, the
#: ZooKeeper-mode admin tools and, with its ``zookeeper`` 3.5 dependency, the ZooKeeper server; there
#: are no separate storage, server-common or metadata jars yet); its client tools
#: (``producer-perf``) come from the 3.9.2 release (``peer.scenarios.zk_isr.CLIENT_RELEASE``).
ZK_ERA_SERVERS: tuple[str, ...] = ("2.8.2",)
CLIENT_SOURCE = Path(__file__).resolve().parent / "java" / "PeerClient.java"
STAMP = ".complete"

#: Candidate main classes per tool, first match wins.
TOOL_CLASSES: dict[str, tuple[str, ...]] = {
    "kafka": ("kafka.Kafka",),
    "storage": ("kafka.tools.StorageTool", "org.apache.kafka.tools.StorageTool"),
    "dump-log": ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"),
    "topics": ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"),
    "consumer-groups": (
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "kafka.admin.ConsumerGroupCommand",
    ),
    "metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand",),
    "jmx": ("org.apache.kafka.tools.JmxTool", "kafka.tools.JmxTool"),
    "get-offsets": ("org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"),
    "leader-election": ("org.apache.kafka.tools.LeaderElectionCommand", "kafka.admin.LeaderElectionCommand"),
    "transactions": ("org.apache.kafka.tools.TransactionsCommand",),
    "producer-perf": ("org.apache.kafka.tools.ProducerPerformance",),
    "console-producer": ("org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"),
    "console-consumer": (
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "kafka.tools.ConsoleConsumer",
    ),
    "configs": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "mirror-maker": ("org.apache.kafka.connect.mirror.MirrorMaker",),
    "local-tiered-storage": ("org.apache.kafka.server.log.remote.storage.LocalTieredStorage",),
    "metadata-shell": ("org.apache.kafka.shell.MetadataShell",),
    "replica-verification": ("org.apache.kafka.tools.ReplicaVerificationTool", "kafka.tools.ReplicaVerificationTool"),
    # ZooKeeper mode (Kafka 3.x ships the ZooKeeper server and shell in its lib)
    "zookeeper": ("org.apache.zookeeper.server.quorum.QuorumPeerMain",),
    "zookeeper-shell": ("org.apache.zookeeper.ZooKeeperMain",),
}

#: JVM flags for every process: small heap, quick start, loopback only.
JVM_FLAGS: tuple[str, ...] = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-Djava.net.preferIPv4Stack=true",
    "-Djava.awt.headless=true",
)


def cache_root() -> Path:
    """The cache directory shared by fetches and scenario bundles.

    Returns
    -------
    Path
        ``$KAFKA_WORKBENCH_CACHE`` if set, else ``~/.cache/kafka-workbench``.
    """
    env = os.environ.get("KAFKA_WORKBENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "kafka-workbench"


@dataclass(frozen=True)
class Kafka:
    """One fetched Kafka release.

    Parameters
    ----------
    version
        A key of :data:`VERSIONS`.
    lib
        Directory holding every jar of the release's classpath.

    Examples
    --------
    >>> kafka = fetch("4.3.1")                        # doctest: +SKIP
    >>> kafka.run_tool("topics", ["--version"]).stdout  # doctest: +SKIP
    '4.3.1\\n'
    """

    version: str
    lib: Path

    @property
    def major(self) -> int:
        """Major version number (3 or 4)."""
        return int(self.version.split(".")[0])

    @property
    def classpath(self) -> str:
        """Java classpath wildcard for the lib directory."""
        return str(self.lib / "*")

    @cached_property
    def _classes(self) -> frozenset[str]:
        names: set[str] = set()
        for jar in sorted(self.lib.glob("*.jar")):
            try:
                with zipfile.ZipFile(jar) as zf:
                    for entry in zf.namelist():
                        if entry.endswith(".class") and "$" not in entry:
                            names.add(entry[:-6].replace("/", "."))
            except zipfile.BadZipFile as exc:
                raise FetchError(f"{jar} is not a readable jar: {exc}") from exc
        return frozenset(names)

    def has_class(self, name: str) -> bool:
        """Whether a class of that fully qualified name is on the classpath."""
        return name in self._classes

    def tool_class(self, tool: str) -> str:
        """Main class of ``tool`` (a key of :data:`TOOL_CLASSES`) in this release.

        Raises
        ------
        ToolError
            If the tool is unknown or none of its candidate classes is on the classpath.
        """
        candidates = TOOL_CLASSES.get(tool)
        if candidates is None:
            raise ToolError(f"unknown tool {tool!r}; expected one of {sorted(TOOL_CLASSES)}")
        for name in candidates:
            if self.has_class(name):
                return name
        raise ToolError(f"Kafka {self.version} has none of {candidates} for tool {tool!r}")

    def client_classes(self) -> Path:
        """Directory with ``PeerClient`` compiled against this release (compiled once).

        Raises
        ------
        ToolError
            If ``javac`` fails.
        """
        import hashlib

        digest = hashlib.sha256(CLIENT_SOURCE.read_bytes()).hexdigest()[:10]
        target = self.lib.parent / f"peer-client-{digest}"
        if (target / "PeerClient.class").exists():
            return target
        staging = target.with_name(target.name + f".{os.getpid()}.tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            done = subprocess.run(
                ["javac", "-nowarn", "-cp", self.classpath, "-d", str(staging), str(CLIENT_SOURCE)],
                capture_output=True, text=True, timeout=180, check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ToolError("javac did not compile PeerClient in 180 s") from exc
        if done.returncode != 0:
            raise ToolError(f"javac PeerClient failed:\n{done.stdout}{done.stderr}")
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        return target

    def client(self, args: Sequence[str], *, heap: str = "128m") -> list[str]:
        """Command line of ``PeerClient`` (see ``peer/java/PeerClient.java``) with ``args``."""
        cmd = self.java("PeerClient", args, heap=heap)
        i = cmd.index("-cp")
        cmd[i + 1] = f"{self.classpath}{os.pathsep}{self.client_classes()}"
        return cmd

    def java(
        self,
        main: str,
        args: Sequence[str] = (),
        *,
        heap: str = "128m",
        extra_jvm: Sequence[str] = (),
        log4j_dir: Path | None = None,
    ) -> list[str]:
        """Command line that runs ``main`` on this release's classpath.

        Parameters
        ----------
        main
            Fully qualified main class (or a ``.java`` source file for the source launcher).
        args
            Program arguments.
        heap
            ``-Xmx`` value.
        extra_jvm
            More JVM flags (system properties, JMX).
        log4j_dir
            Directory with ``log4j.properties``/``log4j2.yaml`` to use; default: tool logging
            (warnings to stderr).
        """
        log_dir = log4j_dir or write_log_config(cache_root() / "log-config", "tool")
        return [
            "java",
            "-Xms32m",
            f"-Xmx{heap}",
            *JVM_FLAGS,
            f"-Dlog4j.configuration=file:{log_dir / 'log4j.properties'}",
            f"-Dlog4j2.configurationFile={log_dir / 'log4j2.yaml'}",
            *extra_jvm,
            "-cp",
            self.classpath,
            main,
            *args,
        ]

    def run_tool(
        self,
        tool: str,
        args: Sequence[str],
        *,
        timeout: float = 60.0,
        check: bool = True,
        stdin: str | None = None,
        heap: str = "128m",
    ) -> subprocess.CompletedProcess[str]:
        """Run a Kafka tool by main class and capture its output (bounded).

        Parameters
        ----------
        tool
            Key of :data:`TOOL_CLASSES`.
        args
            Tool arguments.
        timeout
            Seconds before the tool's process group is killed.
        check
            Raise :class:`ToolError` on a non-zero exit.
        stdin
            Text fed to the tool's standard input.

        Returns
        -------
        subprocess.CompletedProcess
            With ``stdout`` and ``stderr`` as text.
        """
        from peer.process import spawn

        argv = self.java(self.tool_class(tool), args, heap=heap)
        child = spawn(
            tool,
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            out, err = child.popen.communicate(
                stdin.encode() if stdin is not None else None, timeout=timeout
            )
        except subprocess.TimeoutExpired as exc:
            child.kill()
            raise ToolError(f"{tool} {' '.join(args)} did not finish in {timeout:.0f} s") from exc
        finally:
            child.stop(5.0)
        code = child.popen.returncode
        result = subprocess.CompletedProcess(
            argv, code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        )
        if check and code != 0:
            raise ToolError(
                f"{tool} {' '.join(args)} exited {code}:\n"
                f"{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def dump_log(
        self, files: Sequence[Path | str], flags: Sequence[str] = ("--deep-iteration",),
        *, timeout: float = 120.0, check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``kafka-dump-log`` on ``files`` (e.g. segments written by the workbench encoder).

        Parameters
        ----------
        files
            Segment, snapshot or index files; the base offset is read from each file name.
        flags
            Tool flags, e.g. ``["--cluster-metadata-decoder"]``.
        timeout, check
            As for :meth:`run_tool`.

        Returns
        -------
        subprocess.CompletedProcess
            The tool's stdout (``Dumping <file>`` blocks) and stderr.

        Examples
        --------
        >>> fetch().dump_log(["/tmp/orders-0/00000000000000000000.log"]).stdout  # doctest: +SKIP
        'Dumping /tmp/orders-0/00000000000000000000.log\nLog starting offset: 0\n...'
        """
        args = [*flags, "--files", ",".join(str(f) for f in files)]
        return self.run_tool("dump-log", args, timeout=timeout, check=check, heap="256m")


def write_log_config(directory: Path, mode: str) -> Path:
    """Write log4j 1 (reload4j) and log4j2 configurations for a Kafka JVM.

    Parameters
    ----------
    directory
        Where ``log4j.properties`` and ``log4j2.yaml`` go.
    mode
        ``"server"``: INFO to stdout (the node's output file); ``"tool"``: WARN to stderr.

    Returns
    -------
    Path
        ``directory``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    level = "INFO" if mode == "server" else "WARN"
    target = "System.out" if mode == "server" else "System.err"
    target2 = "SYSTEM_OUT" if mode == "server" else "SYSTEM_ERR"
    props = (
        f"log4j.rootLogger={level}, out\n"
        "log4j.appender.out=org.apache.log4j.ConsoleAppender\n"
        f"log4j.appender.out.Target={target}\n"
        "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        "log4j.logger.org.apache.kafka.clients=WARN\n"
        "log4j.logger.kafka.request.logger=WARN\n"
        "log4j.logger.org.apache.zookeeper=WARN\n"
    )
    yaml = (
        "Configuration:\n"
        "  Appenders:\n"
        "    Console:\n"
        "      name: OUT\n"
        f"      target: {target2}\n"
        "      PatternLayout:\n"
        '        pattern: "[%d] %p %m (%c)%n"\n'
        "  Loggers:\n"
        "    Root:\n"
        f"      level: {level}\n"
        "      AppenderRef:\n"
        "        - ref: OUT\n"
        "    Logger:\n"
        "      - name: org.apache.kafka.clients\n"
        "        level: WARN\n"
        "      - name: kafka.request.logger\n"
        "        level: WARN\n"
    )
    _write_if_changed(directory / "log4j.properties", props)
    _write_if_changed(directory / "log4j2.yaml", yaml)
    return directory


def _write_if_changed(path: Path, text: str) -> None:
    # threads of one process (tool runs, samplers) may write the same file at once: the temporary
    # name is unique per thread, and the atomic rename makes the last writer win
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        tmp = path.with_suffix(path.suffix + f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


def lib_dir(version: str) -> Path:
    """Where the jars of ``version`` live in the cache."""
    return cache_root() / "kafka" / version / "lib"


def fetch(version: str = DEFAULT_VERSION, *, timeout: float = 900.0) -> Kafka:
    """Resolve Kafka ``version`` from Maven Central into the cache (no-op when complete).

    Parameters
    ----------
    version
        A key of :data:`VERSIONS`.
    timeout
        Seconds Maven may take.

    Returns
    -------
    Kafka
        The fetched release.

    Raises
    ------
    FetchError
        For an unpinned version, a missing ``mvn`` or a failed resolution.
    """
    if version not in VERSIONS:
        raise FetchError(f"Kafka version {version!r} is not pinned; expected one of {list(VERSIONS)}")
    lib = lib_dir(version)
    if _current(lib):
        return Kafka(version, lib)
    from peer.locks import file_lock

    with file_lock(cache_root() / "locks" / f"fetch-{version}.lock", timeout=timeout,
                   what=f"fetch of Kafka {version}"):
        if _current(lib):
            return Kafka(version, lib)
        return _fetch_locked(version, lib, timeout)


def _pom_digest() -> str:
    import hashlib

    return hashlib.sha256(POM.read_bytes()).hexdigest()[:16]


def _current(lib: Path) -> bool:
    """Is ``lib`` complete for the current pom?"""
    try:
        stamp = json.loads((lib / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamp.get("pom") == _pom_digest()


def _fetch_locked(version: str, lib: Path, timeout: float) -> Kafka:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FetchError("mvn (Apache Maven) is not on PATH; it is needed to fetch Kafka")
    extra = VERSIONS[version]
    staging = lib.parent / f"lib.{os.getpid()}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    argv = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(POM),
        f"-Dkafka.version={version}",
        f"-Dmaven.repo.local={cache_root() / 'm2'}",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={staging}",
    ]
    if "profile" in extra:
        argv.append(f"-P{extra['profile']}")
    argv += [f"-D{k}={v}" for k, v in extra.items() if k != "profile"]
    argv.append("dependency:copy-dependencies")
    started = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise FetchError(f"Maven did not resolve Kafka {version} in {timeout:.0f} s") from exc
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise FetchError(
            f"Maven could not resolve Kafka {version} (exit {done.returncode}):\n"
            + (done.stdout + done.stderr)[-4000:]
        )
    jars = sorted(p.name for p in staging.glob("*.jar"))
    kafka = Kafka(version, staging)
    missing = [t for t in ("kafka", "storage", "dump-log", "topics", "jmx", "mirror-maker")
               if not any(kafka.has_class(c) for c in TOOL_CLASSES[t])]
    if missing:
        shutil.rmtree(staging, ignore_errors=True)
        raise FetchError(f"Kafka {version} classpath lacks tools {missing}")
    if (lib / STAMP).exists():  # an older pom's lib: add the new jars, keep the directory in place
        for jar in jars:
            if not (lib / jar).exists():
                tmp = lib / f".{jar}.{os.getpid()}.tmp"
                shutil.copyfile(staging / jar, tmp)
                tmp.replace(lib / jar)
        shutil.rmtree(staging, ignore_errors=True)
        jars = sorted(p.name for p in lib.glob("*.jar"))
    else:
        shutil.rmtree(lib, ignore_errors=True)
        staging.rename(lib)
    stamp = {"version": version, "jars": jars, "pom": _pom_digest(),
             "seconds": round(time.monotonic() - started, 1)}
    (lib / STAMP).write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
    return Kafka(version, lib)


def _mvn(argv_tail: Sequence[str], what: str, timeout: float) -> None:
    """Run Maven in batch mode against the cache's local repository; raise FetchError on failure."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FetchError(f"mvn (Apache Maven) is not on PATH; it is needed to fetch {what}")
    argv = [mvn, "-B", "-q", f"-Dmaven.repo.local={cache_root() / 'm2'}", *argv_tail]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise FetchError(f"Maven did not resolve {what} in {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise FetchError(
            f"Maven could not resolve {what} (exit {done.returncode}):\n" + (done.stdout + done.stderr)[-4000:]
        )


def fetch_jar(artifact: str, version: str, *, group: str = "org.apache.kafka", classifier: str | None = None,
              timeout: float = 600.0) -> Path:
    """One jar (no dependencies) from Maven Central, cached under ``<cache>/jars/``.

    Used to read the message schema files of a Kafka release that is not pinned, e.g. to show
    that a record type the workbench knows exists in a newer release.

    Parameters
    ----------
    artifact, version, group, classifier
        Maven coordinates, e.g. ``("kafka-metadata", "4.4.0")``; a classifier such as
        ``jar-with-dependencies`` names that jar of the artifact.
    timeout
        Seconds Maven may take.

    Returns
    -------
    Path
        The jar file.

    Raises
    ------
    FetchError
        When Maven is missing or the artifact cannot be resolved.

    Examples
    --------
    >>> fetch_jar("kafka-metadata", "4.4.0").name          # doctest: +SKIP
    'kafka-metadata-4.4.0.jar'
    """
    suffix = f"-{classifier}" if classifier else ""
    target = cache_root() / "jars" / group / f"{artifact}-{version}{suffix}.jar"
    if target.is_file():
        return target
    from peer.locks import file_lock

    coordinates = f"{group}:{artifact}:{version}:jar" + (f":{classifier}" if classifier else "")
    with file_lock(cache_root() / "locks" / f"jar-{artifact}-{version}{suffix}.lock", timeout=timeout,
                   what=f"fetch of {artifact} {version}"):
        if target.is_file():
            return target
        staging = target.parent / f".{artifact}-{version}.{os.getpid()}.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _mvn(["-f", str(POM), f"-Dartifact={coordinates}",
                  f"-DoutputDirectory={staging}", "-Dmdep.overWriteReleases=true", "dependency:copy"],
                 coordinates, timeout)
            jars = list(staging.glob("*.jar"))
            if len(jars) != 1:
                raise FetchError(f"Maven copied {len(jars)} jars for {artifact} {version}, expected one")
            jars[0].replace(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def fetch_dump_tool(version: str, *, timeout: float = 900.0) -> Kafka:
    """The classpath of ``kafka.tools.DumpLogSegments`` of an older release (no-op when cached).

    Pinned releases (:data:`VERSIONS`) come from :func:`fetch`; the releases of
    :data:`DUMP_TOOL_RELEASES` get only their Scala core jar and its runtime dependencies, under
    ``<cache>/dump-tools/<version>/lib``. :meth:`Kafka.dump_log` then runs their tool.

    Raises
    ------
    FetchError
        For a release in neither table, a missing ``mvn`` or a failed resolution.

    Examples
    --------
    >>> fetch_dump_tool("2.8.2").dump_log(["/tmp/t-0/00000000000000000000.log"])  # doctest: +SKIP
    """
    if version in VERSIONS:
        return fetch(version, timeout=timeout)
    scala = DUMP_TOOL_RELEASES.get(version)
    if scala is None:
        raise FetchError(f"no dump tool is pinned for Kafka {version}; expected one of "
                         f"{sorted([*VERSIONS, *DUMP_TOOL_RELEASES])}")
    return _fetch_core(version, scala, cache_root() / "dump-tools" / version / "lib", f"dump-tool-{version}",
                       f"the Kafka {version} dump tool", timeout, ())


def fetch_era_server(version: str, *, timeout: float = 900.0) -> Kafka:
    """An older release that runs as a KRaft node: its core jar, runtime dependencies and a log
    binding (``slf4j-reload4j``, as 3.x distributions ship), under ``<cache>/era-servers/``.

    Only the releases of :data:`ERA_SERVERS` and :data:`ZK_ERA_SERVERS` (ZooKeeper mode only);
    the core jar holds ``kafka.Kafka``, the storage tool and ``kafka.admin.TopicCommand``. Pinned
    releases come from :func:`fetch`.

    Raises
    ------
    FetchError
        For another release, a missing ``mvn`` or a failed resolution.
    """
    if version in VERSIONS:
        return fetch(version, timeout=timeout)
    if version not in (*ERA_SERVERS, *ZK_ERA_SERVERS):
        raise FetchError(f"Kafka {version} is not run as an era server; expected one of "
                         f"{[*ERA_SERVERS, *ZK_ERA_SERVERS]}")
    kafka = _fetch_core(version, DUMP_TOOL_RELEASES.get(version, "2.13"),
                        cache_root() / "era-servers" / version / "lib", "era-servers",
                        f"the Kafka {version} server", timeout, ("-Pserver",))
    kafka.tool_class("kafka")
    kafka.tool_class("storage")
    return kafka


def _fetch_core(version: str, scala: str, lib: Path, lock: str, what: str, timeout: float,
                extra: Sequence[str]) -> Kafka:
    """Resolve ``peer/tools-pom.xml`` (the core jar and its runtime dependencies, ``extra``
    Maven flags for a profile) into ``lib``, once, under the lock ``<cache>/locks/<lock>.lock``;
    a stamp file written last marks it complete. The era servers share one lock: their scenarios
    build in parallel, and two Maven runs would otherwise write the same jars of the local
    repository at once."""
    if (lib / STAMP).exists():
        return Kafka(version, lib)
    from peer.locks import file_lock

    with file_lock(cache_root() / "locks" / f"{lock}.lock", timeout=timeout,
                   what=f"fetch of {what}"):
        if (lib / STAMP).exists():
            return Kafka(version, lib)
        staging = lib.parent / f"lib.{os.getpid()}.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        started = time.monotonic()
        try:
            _mvn(["-f", str(TOOLS_POM), f"-Dkafka.version={version}", f"-Dscala.binary={scala}",
                  *extra, "-DincludeScope=runtime", f"-DoutputDirectory={staging}",
                  "dependency:copy-dependencies"], what, timeout)
            kafka = Kafka(version, staging)
            kafka.tool_class("dump-log")  # raises ToolError when the class is missing
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        shutil.rmtree(lib, ignore_errors=True)
        staging.rename(lib)
        stamp = {"version": version, "jars": sorted(p.name for p in lib.glob("*.jar")),
                 "seconds": round(time.monotonic() - started, 1)}
        (lib / STAMP).write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
        return Kafka(version, lib)
