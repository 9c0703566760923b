"""Kafka's ``kafka-metadata-shell`` as an oracle: the image it builds by replaying a metadata log.

``MetadataShell --snapshot FILE [COMMAND]`` loads a ``__cluster_metadata`` segment or snapshot
(every batch, in order, through Kafka's own ``MetadataLoader``) and runs shell commands on the
resulting image. ``tree /image/topics`` prints every partition's ``PartitionRegistration``
(leader, ISR, replicas, ELR, epochs), which :func:`parse_topics_tree` turns into a dictionary;
:func:`image_partitions` runs the shell and parses it, :func:`timed_replay` times the replay as
an operator runs it.

Examples
--------
>>> text = '''byId:
...   AAAAAAAAAAAAAAAAAAAAAQ:
...     0:
...       PartitionRegistration(replicas=[1, 2], directories=[], isr=[1], removingReplicas=[], \
addingReplicas=[], elr=[2], lastKnownElr=[], leader=1, leaderRecoveryState=RECOVERED, leaderEpoch=3, partitionEpoch=9)
...     id:
...       AAAAAAAAAAAAAAAAAAAAAQ
...     name:
...       orders
... byName:
... '''
>>> parse_topics_tree(text)[("AAAAAAAAAAAAAAAAAAAAAQ", 0)]["isr"]
[1]
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peer.errors import ToolError
from peer.kafka import Kafka, cache_root, write_log_config

__all__ = ["KAFKA_RUN_CLASS_JVM", "ShellImage", "image_partitions", "parse_topics_tree", "shell_argv", "timed_replay"]

#: JVM options of Kafka's ``bin/kafka-run-class.sh`` (what ``kafka-metadata-shell.sh`` uses by default).
KAFKA_RUN_CLASS_JVM = (
    "-Xmx256M",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)

_REGISTRATION = re.compile(r"PartitionRegistration\((.*)\)\s*$")
_FIELD = re.compile(r"(\w+)=(\[[^\]]*\]|[^,]*)")


@dataclass(frozen=True)
class ShellImage:
    """What one shell run gave: partitions by ``(topic id, partition)``, and its cost."""

    partitions: dict[tuple[str, int], dict[str, Any]]
    names: dict[str, str]
    seconds: float
    cpu_seconds: float


def shell_argv(kafka: Kafka, snapshot: Path | str, command: Sequence[str],
               jvm: Sequence[str] = KAFKA_RUN_CLASS_JVM) -> list[str]:
    """Command line of ``kafka-metadata-shell --snapshot SNAPSHOT COMMAND...``, as the script starts it."""
    logs = write_log_config(cache_root() / "log-config", "tool")
    return ["java", *jvm, f"-Dlog4j2.configurationFile={logs / 'log4j2.yaml'}",
            f"-Dlog4j.configuration=file:{logs / 'log4j.properties'}", "-cp", kafka.classpath,
            kafka.tool_class("metadata-shell"), "--snapshot", str(snapshot), *command]


def _ints(text: str) -> list[int]:
    inner = text.strip()[1:-1].strip()
    return [int(x) for x in inner.split(",")] if inner else []


def parse_topics_tree(text: str) -> dict[tuple[str, int], dict[str, Any]]:
    """Partitions of ``tree /image/topics`` output, by ``(topic id, partition)``.

    Each value holds ``leader``, ``isr``, ``replicas``, ``elr``, ``last_known_elr``, ``adding``,
    ``removing``, ``leader_epoch``, ``partition_epoch`` and the topic ``name`` (when printed).
    Only the ``byId`` branch is read.
    """
    out: dict[tuple[str, int], dict[str, Any]] = {}
    names: dict[str, str] = {}
    section = None
    topic: str | None = None
    partition: int | None = None
    expect_name = False
    for line in text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        item = line.strip()
        if indent == 0:
            section = item.rstrip(":")
            continue
        if section != "byId":
            continue
        if indent == 2:
            topic, partition, expect_name = item.rstrip(":"), None, False
        elif indent == 4:
            key = item.rstrip(":")
            expect_name = key == "name"
            partition = int(key) if key.isdigit() else None
        elif indent == 6 and topic is not None:
            if expect_name:
                names[topic] = item
                expect_name = False
                continue
            m = _REGISTRATION.match(item)
            if m is None or partition is None:
                continue
            fields = dict(_FIELD.findall(m.group(1)))
            out[(topic, partition)] = {
                "leader": int(fields["leader"]), "isr": _ints(fields["isr"]), "replicas": _ints(fields["replicas"]),
                "elr": _ints(fields.get("elr", "[]")), "last_known_elr": _ints(fields.get("lastKnownElr", "[]")),
                "adding": _ints(fields["addingReplicas"]), "removing": _ints(fields["removingReplicas"]),
                "leader_epoch": int(fields["leaderEpoch"]), "partition_epoch": int(fields["partitionEpoch"]),
            }
    for (topic_id, _p), value in out.items():
        value["name"] = names.get(topic_id)
    return out


def timed_replay(kafka: Kafka, snapshot: Path | str, *, timeout: float = 1800.0,
                 jvm: Sequence[str] = KAFKA_RUN_CLASS_JVM) -> tuple[float, float]:
    """Wall and CPU seconds of ``kafka-metadata-shell --snapshot SNAPSHOT ls /image`` (JVM start included).

    The shell replays the whole file before it runs a command (it waits until its loader has
    caught up with the last batch), so this is the cost of Kafka's own replay.
    """
    import resource

    argv = shell_argv(kafka, snapshot, ["ls", "/image"], jvm)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"kafka-metadata-shell did not replay {snapshot} in {timeout:.0f} s") from exc
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise ToolError(f"kafka-metadata-shell exited {done.returncode}:\n{done.stderr[-3000:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _read_until(stream: Any, marker: str, deadline: float) -> str:
    """Lines of ``stream`` up to and including the first one containing ``marker``."""
    lines = []
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            raise ToolError(f"kafka-metadata-shell ended before printing {marker!r}: {''.join(lines)[-2000:]}")
        lines.append(line)
        if marker in line:
            return "".join(lines)
    raise ToolError(f"kafka-metadata-shell did not print {marker!r} in time")


def image_partitions(kafka: Kafka, snapshot: Path | str, *, timeout: float = 1800.0,
                     jvm: Sequence[str] = KAFKA_RUN_CLASS_JVM) -> ShellImage:
    """Replay ``snapshot`` (a metadata segment or snapshot) with Kafka's shell; its partitions.

    The shell's non-interactive mode may run its command before the image reaches the shell's
    view (it waits for the loader, not for the view), and print an empty image. So the shell is
    run interactively, commands on its standard input: ``cat /image/provenance`` until the view
    holds an image, then ``tree /image/topics``. Wall seconds (JVM start included) and the
    child's CPU seconds are measured.

    Raises
    ------
    ToolError
        When the shell exits non-zero or does not finish within ``timeout`` seconds.
    """
    import resource

    argv = shell_argv(kafka, snapshot, [], jvm)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        _read_until(proc.stdout, "Starting...", deadline)
        while True:
            proc.stdin.write("cat /image/provenance\n")
            proc.stdin.flush()
            text = _read_until(proc.stdout, "offset ", deadline)
            if "offset -1," not in text:
                break
            time.sleep(0.02)
        proc.stdin.write("tree /image/topics\nexit\n")
        proc.stdin.close()
        out = proc.stdout.read()
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except (subprocess.TimeoutExpired, OSError) as exc:
        raise ToolError(f"kafka-metadata-shell did not replay {snapshot} in {timeout:.0f} s: {exc}") from exc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise ToolError(f"kafka-metadata-shell exited {code}")
    text = "\n".join(line[3:] if line.startswith(">> ") else line for line in out.splitlines())
    partitions = parse_topics_tree(text)
    names = {t: v["name"] for (t, _p), v in partitions.items() if v.get("name")}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ShellImage(partitions, names, seconds, cpu)
