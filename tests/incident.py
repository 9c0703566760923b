"""A tiny ISR incident written with the project's own encoders (no Kafka needed), and its report.

:data:`INCIDENT_EVENTS` is one broker's metadata log of three partitions going under min ISR and one
offline. The report tests and the browser tests read one HTML report of it (:func:`render_report`,
built once per session by the ``incident_report`` fixture) with three more topics whose names a
report must not let through as markup or unreadable text: an HTML name, a right-to-left override
and a name of 5,000 characters.
"""

from __future__ import annotations

import base64
from pathlib import Path

T0_MS = 1_795_000_000_000  # 2026-11-18 11:06:40 UTC
ORDERS, PAYMENTS = "T3JkZXJzT3JkZXJzT3JkZQ", "UGF5bWVudHNQYXltZW50cw"


def _partition(topic_id: str, p: int, replicas: list[int], leader: int) -> tuple[str, dict]:
    return "PartitionRecord", {
        "partitionId": p,
        "topicId": topic_id,
        "replicas": replicas,
        "isr": replicas,
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": leader,
        "leaderEpoch": 0,
        "partitionEpoch": 0,
    }


def _change(topic_id: str, p: int, isr: list[int], leader: int = -2) -> tuple[str, dict]:
    return "PartitionChangeRecord", {"partitionId": p, "topicId": topic_id, "isr": isr, "leader": leader}


#: (seconds after T0, record): cluster min ISR 2; brokers 2 and 3 drop out of the ISR of every
#: partition at +10 s and +20 s, and come back at +62..64 s. orders-1 goes offline for 5 s.
INCIDENT_EVENTS: list[tuple[float, tuple[str, dict]]] = [
    (0, ("ConfigRecord", {"resourceType": 4, "resourceName": "", "name": "min.insync.replicas", "value": "2"})),
    (1, ("TopicRecord", {"name": "orders", "topicId": ORDERS})),
    (1, _partition(ORDERS, 0, [1, 2, 3], 1)),
    (1, _partition(ORDERS, 1, [2, 3, 1], 2)),
    (2, ("TopicRecord", {"name": "payments", "topicId": PAYMENTS})),
    (2, _partition(PAYMENTS, 0, [3, 1, 2], 3)),
    (10, _change(ORDERS, 0, [1, 3])),
    (10, _change(ORDERS, 1, [3, 1], leader=3)),
    (10, _change(PAYMENTS, 0, [3, 1])),
    (20, _change(ORDERS, 0, [1])),
    (20, _change(ORDERS, 1, [1], leader=1)),
    (20, _change(PAYMENTS, 0, [1], leader=1)),
    (30, _change(ORDERS, 1, [1], leader=-1)),
    (35, _change(ORDERS, 1, [1], leader=1)),
    (62, _change(ORDERS, 0, [1, 2, 3])),
    (63, _change(ORDERS, 1, [1, 2, 3])),
    (64, _change(PAYMENTS, 0, [1, 3, 2])),
    (90, ("NoOpRecord", {})),
]


def write_incident_bundle(root: Path, events: list[tuple[float, tuple[str, dict]]] = INCIDENT_EVENTS) -> Path:
    """Write one broker's ``__cluster_metadata-0`` log holding ``events`` (:data:`INCIDENT_EVENTS`)."""
    from workbench.formats.batch import encode_batch
    from workbench.formats.metadata import encode_metadata_record

    node = root / "nodes" / "1"
    log_dir = node / "__cluster_metadata-0"
    log_dir.mkdir(parents=True)
    (node / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=c2VjcmV0LWNsdXN0ZXI\n")
    segment = b""
    for offset, (seconds, (name, fields)) in enumerate(events):
        value = encode_metadata_record(name, 0, fields)
        segment += encode_batch(
            [(offset, T0_MS + int(seconds * 1000), None, value)], base_offset=offset, partition_leader_epoch=1
        )
    (log_dir / "00000000000000000000.log").write_bytes(segment)
    return root


#: A topic name that is HTML, and its id.
HOSTILE_TOPIC = '<img src=x onerror="window.__pwned=1">'
HOSTILE_ID = "SG9zdGlsZUhvc3RpbGVIbw"
#: A topic whose name holds U+202E (RIGHT-TO-LEFT OVERRIDE): unescaped, it reverses everything after it.
RLO_TOPIC = "pay\u202estnemyap"
#: A topic name of 5,000 characters without a space.
LONG_TOPIC = "long-" + "n" * 4990 + "-name"
RLO_ID, LONG_ID = (base64.urlsafe_b64encode(raw).decode().rstrip("=") for raw in (b"rlo-topic-id-001",
                                                                                   b"long-topic-id-01"))
#: The HTML name's topic: one partition, under min ISR from +40 s to the end.
HOSTILE_EVENTS: list[tuple[float, tuple[str, dict]]] = [
    (3, ("TopicRecord", {"name": HOSTILE_TOPIC, "topicId": HOSTILE_ID})),
    (3, _partition(HOSTILE_ID, 0, [1, 2], 1)),
    (40, _change(HOSTILE_ID, 0, [1])),
]
#: The unreadable names' topics: one partition each, under min ISR from +12 s to +60 s.
UNREADABLE_EVENTS: list[tuple[float, tuple[str, dict]]] = [
    (3, ("TopicRecord", {"name": RLO_TOPIC, "topicId": RLO_ID})),
    (3, _partition(RLO_ID, 0, [1, 2, 3], 1)),
    (3, ("TopicRecord", {"name": LONG_TOPIC, "topicId": LONG_ID})),
    (3, _partition(LONG_ID, 0, [1, 2, 3], 1)),
    (12, _change(RLO_ID, 0, [1])),
    (12, _change(LONG_ID, 0, [1])),
    (60, _change(RLO_ID, 0, [1, 2, 3])),
    (60, _change(LONG_ID, 0, [1, 2, 3])),
]
NAMED_EVENTS = HOSTILE_EVENTS + UNREADABLE_EVENTS
#: The topics of :data:`NAMED_EVENTS`.
NAMED_TOPICS = (HOSTILE_TOPIC, RLO_TOPIC, LONG_TOPIC)


def render_report(root: Path) -> dict:
    """The incident with the named topics through ``workbench report`` (as a user runs it), under ``root``:
    the bundle, the HTML report, its summary JSON, and what the command printed on stderr."""
    import json
    import subprocess
    import sys

    bundle = write_incident_bundle(root / "incident", sorted(INCIDENT_EVENTS + NAMED_EVENTS, key=lambda e: e[0]))
    summary = root / "summary.json"
    html = root / "report" / "report.html"
    done = subprocess.run([sys.executable, "-m", "workbench", "report", "--bundle", str(bundle), "--out", str(html),
                           "--summary", str(summary), "--fail-on", "never"],
                          capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise AssertionError(f"workbench report exited {done.returncode}: {done.stderr[-3000:]}")
    return {"bundle": bundle, "html": html, "summary": json.loads(summary.read_text(encoding="utf-8")),
            "stderr": done.stderr}
