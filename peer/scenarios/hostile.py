"""Hostile text: HTML, script, quotes, bidirectional and zero-width characters in every free-text field Kafka keeps.

Cluster: 1 controller (1) + 1 broker (2), no JMX; ``group.initial.rebalance.delay.ms`` 0 so each
consumer group joins at once. About 40 s of cluster time on Kafka 4.x (group configs and client
metrics resources need 4.0 or later).

Kafka validates topic names (``[a-zA-Z0-9._-]``, at most 249 characters), so the topics have
legal names (``TOPIC``, ``TXN_TOPIC``); everything Kafka takes as free text carries one of the
:data:`PAYLOADS` (script tags, a ``</script>`` that would end an inline script, an ``<img>``
with ``onerror``, a quote-breaking ``<svg onload>``, a right-to-left override U+202E, zero-width
U+200B/U+200D), each of which sets ``window.__pwned`` if it ever runs in a page:

* **record keys, values and header values**: ``kafka-console-producer`` (``parse.key``,
  ``parse.headers``) writes ``BATCH`` records to ``TOPIC`` (2 partitions), three times
  (before the consumers start, while they read, after they left); record *i* carries payload
  ``i % 6`` in its key (``KEY-MARKER-<i> ...``), its value (``VALUE-MARKER-<i> ...``) and the
  value of its header ``HEADER_KEY`` (``HEADER-MARKER-<i> ...``), so a leaked payload names its
  field. The producer's ``client.id`` is :data:`PRODUCER_CLIENT_ID` (a payload).
* **consumer group ids and client ids**: one consumer group per payload (:data:`GROUPS`, the
  payload itself is the group id), each a ``PeerClient`` consumer of ``TOPIC``
  (``client.id`` ``peer-consumer-<group id>``) reading ``CONSUME_RATE`` records/s for
  ``CONSUME_S`` s and committing once a second, then leaving: every commit is behind the log
  end (lag), and the group stops committing with lag left (the third batch).
* **a transactional id, a producer client id and a group through a transaction**:
  ``PeerClient txn`` with transactional id :data:`TXN_ID` (``client.id`` ``peer-txn-<id>``)
  writes ``TXN_COUNT`` transactions of ``TXN_RECORDS`` records to ``TXN_TOPIC`` (every third
  aborted), each committing an offset of group :data:`TXN_GROUP` through the transaction
  (``__transaction_state`` and ``__consumer_offsets`` hold them).
* **config values and entity names** (``kafka-configs --alter``), each a metadata-log record:
  a group config of the group :data:`GROUPS` ``[0]`` (ConfigRecord, resource type GROUP, the
  hostile group id as resource name); a client metrics resource ``CLIENT_METRICS`` whose
  ``metrics`` value is a list of payloads (ConfigRecord, resource type CLIENT_METRICS: a free
  string value); a client quota on :data:`PRODUCER_CLIENT_ID` (ClientQuotaRecord entity name).
* ``kafka-consumer-groups --describe --all-groups`` (and ``--members --verbose``) while every
  consumer is paused (SIGSTOP, members present) and once after they left; manifest events name
  every hostile id as given (never a record's key, value or header).
"""

from __future__ import annotations

from peer.errors import ScenarioError
from peer.scenario import ScenarioContext

NAME = "hostile"
#: Strings that run script (setting ``window.__pwned``) or mislead a reader if a page shows them unescaped.
PAYLOADS = (
    "<script>window.__pwned=1</script>",
    "</script><script>window.__pwned=2</script>",
    '<img src=x onerror="window.__pwned=3">',
    "\"'><svg onload=window.__pwned=4>",
    "rtl-\u202egnp.exe",
    "zero\u200bwidth\u200djoiner",
)
#: One consumer group per payload: the payload is the group id.
GROUPS = PAYLOADS
#: The console producer's ``client.id`` (and a client quota's entity name).
PRODUCER_CLIENT_ID = PAYLOADS[2]
TXN_ID = "txn-" + PAYLOADS[3]
TXN_GROUP = "txn-" + PAYLOADS[1]
#: Prefixes of the record fields: each record's key, value and header value start with these.
KEY_MARKER, VALUE_MARKER, HEADER_MARKER = "KEY-MARKER-", "VALUE-MARKER-", "HEADER-MARKER-"
HEADER_KEY = "hostile-header"
TOPIC = "hostile-records"
TXN_TOPIC = "hostile-txn"
CLIENT_METRICS = "hostile-metrics"
BATCH = 60
CONSUME_RATE = 3
CONSUME_S = 14
TXN_COUNT = 6
TXN_RECORDS = 4
TXN_PAUSE_MS = 500
BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": "0"}


def record_line(i: int) -> str:
    """Console-producer input of record ``i``: ``header:value<TAB>key<TAB>value`` (one payload in each field)."""
    payload = PAYLOADS[i % len(PAYLOADS)]
    return (f"{HEADER_KEY}:{HEADER_MARKER}{i} {payload}\t{KEY_MARKER}{i} {payload}\t"
            f"{VALUE_MARKER}{i} {payload}")


def produce(ctx: ScenarioContext, bs: str, batch: int) -> None:
    """Write ``BATCH`` records through ``kafka-console-producer`` (keys, values and headers parsed from stdin)."""
    first = batch * BATCH
    lines = "".join(record_line(i) + "\n" for i in range(first, first + BATCH))
    result = ctx.kafka.run_tool("console-producer", [
        "--bootstrap-server", bs, "--topic", TOPIC,
        "--producer-property", f"client.id={PRODUCER_CLIENT_ID}", "--producer-property", "acks=all",
        "--property", "parse.key=true", "--property", "parse.headers=true"], stdin=lines, timeout=90.0, check=False)
    if result.returncode != 0:
        raise ScenarioError(f"console producer exited {result.returncode}: {result.stderr[-2000:]}")
    ctx.event("records_produced", topic=TOPIC, batch=batch, records=BATCH, first_index=first,
              client_id=PRODUCER_CLIENT_ID, fields=["key", "value", f"header {HEADER_KEY}"])


def _properties_value(text: str) -> str:
    """``text`` escaped for a Java properties file (read as ISO-8859-1: other characters as ``\\uXXXX``)."""
    out = []
    for ch in text:
        if ch in "\\=:#!":
            out.append("\\" + ch)
        elif ord(ch) > 126 or ord(ch) < 32:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def configure(ctx: ScenarioContext, bs: str) -> None:
    """A group config of a hostile group, a client metrics resource of hostile values, a client quota."""
    ctx.tool("configs", ["--bootstrap-server", bs, "--alter", "--entity-type", "groups", "--entity-name", GROUPS[0],
                         "--add-config", "consumer.session.timeout.ms=50000"])
    ctx.event("config_set", scope="group", resource=GROUPS[0], name="consumer.session.timeout.ms", value="50000")
    metrics = ",".join(PAYLOADS)
    path = ctx.work / "client-metrics.properties"
    path.write_text(f"metrics={_properties_value(metrics)}\ninterval.ms=60000\n", encoding="ascii")
    ctx.tool("configs", ["--bootstrap-server", bs, "--alter", "--entity-type", "client-metrics", "--entity-name",
                         CLIENT_METRICS, "--add-config-file", str(path)])
    ctx.event("config_set", scope="client_metrics", resource=CLIENT_METRICS, name="metrics", value=metrics)
    ctx.tool("configs", ["--bootstrap-server", bs, "--alter", "--entity-type", "clients", "--entity-name",
                         PRODUCER_CLIENT_ID, "--add-config", "producer_byte_rate=10485760"])
    ctx.event("quota_set", entity_type="client-id", entity=PRODUCER_CLIENT_ID, name="producer_byte_rate",
              value="10485760")
    ctx.tool("configs", ["--bootstrap-server", bs, "--describe", "--entity-type", "client-metrics"], check=False)


def run(ctx: ScenarioContext) -> None:
    """Run the hostile-text scenario (see the module docstring)."""
    cluster = ctx.cluster("hostile", controllers=1, brokers=1, jmx=False, broker_settings=BROKER_SETTINGS)
    cluster.format()
    ctx.event("cluster_format", cluster="hostile", controllers=1, brokers=1, settings=BROKER_SETTINGS)
    cluster.start()
    ctx.event("cluster_started", cluster="hostile")
    bs = cluster.bootstrap
    for topic in (TOPIC, TXN_TOPIC):
        ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", topic, "--partitions", "2",
                            "--replication-factor", "1"])
        ctx.event("topic_created", topic=topic, partitions=2, replication_factor=1)
    configure(ctx, bs)
    produce(ctx, bs, 0)

    consumers = {}
    for group in GROUPS:
        consumers[group] = ctx.background(f"consumer-{len(consumers)}", ctx.kafka.client(
            ["consume", bs, group, TOPIC, str(CONSUME_S), str(CONSUME_RATE)]))
        ctx.event("consumer_start", group=group, client_id=f"peer-consumer-{group}", topics=[TOPIC],
                  seconds=CONSUME_S, rate=CONSUME_RATE, commit_interval_ms=1000)
    txn = ctx.background("txn-producer", ctx.kafka.client(
        ["txn", bs, TXN_TOPIC, TXN_ID, str(TXN_COUNT), str(TXN_RECORDS), str(TXN_PAUSE_MS), TXN_GROUP]))
    ctx.event("txn_producer_start", topic=TXN_TOPIC, transactional_id=TXN_ID, client_id=f"peer-txn-{TXN_ID}",
              transactions=TXN_COUNT, records_per_transaction=TXN_RECORDS, aborted="every third", group=TXN_GROUP)
    produce(ctx, bs, 1)

    def joined() -> bool:
        listed = ctx.kafka.run_tool("consumer-groups", ["--bootstrap-server", bs, "--list"], check=False).stdout
        return set(GROUPS) <= set(listed.splitlines())

    ctx.wait_until(joined, timeout=60.0, interval=1.0, what="every hostile group to join")
    ctx.sleep(1.5)  # and to commit
    live = [c for c in consumers.values() if c.alive()]
    for child in live:
        child.pause()
    ctx.event("consumers_paused", groups=list(GROUPS))
    try:
        ctx.sleep(1.0)
        ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups"], check=False)
        ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups", "--members",
                                     "--verbose"], check=False)
    finally:
        for child in live:
            child.resume()
        ctx.event("consumers_resumed", groups=list(GROUPS))

    for group, child in consumers.items():
        code = child.wait(60.0)
        ctx.event("consumer_end", group=group, exit_code=code, summary=child.tail(1))
        if code != 0:
            raise ScenarioError(f"the consumer of group {group!r} exited {code}: {child.tail(5)}")
    code = txn.wait(60.0)
    ctx.event("txn_producer_end", exit_code=code, summary=txn.tail(1))
    if code != 0:
        raise ScenarioError(f"the transactional producer exited {code}: {txn.tail(5)}")
    produce(ctx, bs, 2)  # the groups have left: their committed offsets stay behind the log end
    ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups"], check=False)
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--time", "-1"])
    ctx.event("cluster_stop", cluster="hostile", clean=True)
