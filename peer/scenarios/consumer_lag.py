"""Consumer lag: producers at known rates, consumer groups at different positions, one group behind retention.

Cluster: 1 controller (1) + 1 broker (2) with JMX; lag needs no replication, and two JVMs leave the
cores to the clients.

* Five topics, one per codec (``lag-none``, ``lag-gzip``, ``lag-snappy``, ``lag-lz4``,
  ``lag-zstd``), 2 partitions each, ``segment.ms`` ``SEGMENT_MS`` so every partition rolls several
  segments (lag in bytes is measured across segment boundaries); and ``lag-retention`` (1
  partition, no compression, ``segment.ms`` ``RETENTION_SEGMENT_MS``, ``retention.ms``
  ``RETENTION_MS``, the broker checking retention every ``RETENTION_CHECK_MS``), whose log start
  overtakes a group's committed offset.
* Production in ``CYCLES`` runs of ``PRODUCE_RUN_S`` s: one producer JVM
  (``peer/java/PeerClient.java``) sends ``RATE`` records/s to each of the six topics with acks=all,
  the topic's codec and two record headers (``trace-id``, ``source``), then exits (its buffer
  flushed). Between runs nothing is produced.
* Consumer groups over the five codec topics, committing once a second: ``caught-up`` (as fast as it
  can, the whole time), ``slow`` (``SLOW_RATE`` records/s in total, a fraction of the production rate:
  it works through one partition's fetched records at a time while it commits the unchanged offsets of
  the others, which Burrow rates STALL, and it never catches up) and ``stopped`` (as fast as it can
  for ``STOPPED_S`` s, then gone, so its committed offsets freeze).
* An assign-mode committer, ``assigned`` (``assign`` mode of the same client, as Flink and Spark
  read): it assigns both partitions of ``lag-none`` itself, reads ``SLOW_RATE`` records/s and commits
  once a second with no generation: the group never has a member, nor group metadata of its own.
* A transactional producer (``txn`` mode of the same client) on ``txn-orders`` (2 partitions):
  ``TXN_COUNT`` transactions of ``TXN_RECORDS`` records, every third one aborted, each also
  committing an offset of group ``txn-app`` through the transaction. This puts
  ``__transaction_state`` records (ongoing, prepare, complete; commit and abort), COMMIT and
  ABORT markers in ``txn-orders`` and ``__consumer_offsets``, transactional offset commits and
  an aborted-transaction index (``.txnindex``) in the bundle. It is paused with the consumers.
* ``kafka-consumer-groups --describe --all-groups`` after every production run, while every consumer
  JVM is paused (SIGSTOP, ``SETTLE_S`` s before the capture, SIGCONT after): the log ends and the
  committed offsets it reports are those of the whole capture, so the lag it prints is the lag at the
  capture's time. The file name and the manifest carry the wall-clock ms of each capture. At the
  second capture, the other layouts too (``LAYOUTS``: ``--offsets --verbose``, ``--members
  [--verbose]``, ``--state [--verbose]``).
* Retention loss: group ``behind-retention`` reads ``lag-retention`` for ``RETENTION_GROUP_S`` s and
  leaves. Retention deletes segments until the log start passes its committed offset; after
  ``FREEZE_AFTER_CYCLE`` captures retention is switched off (``retention.ms=-1``), and once it has
  settled the group's offset (``--describe --group behind-retention``) and the log start
  (``kafka-get-offsets --time -2``) are captured, the records it will never read being the
  difference. The group then comes back (auto.offset.reset=earliest: it jumps to the log start)
  for ``RETENTION_GROUP_S`` s; the log start is captured again afterwards.
* Expired offsets: ``offsets.retention.minutes=1`` (checked every ``OFFSETS_CHECK_MS`` ms), so the
  offsets of ``stopped``, empty since it left, expire before the end (the scenario waits for it:
  ``--describe --group stopped`` no longer finds the group).
* The broker's fetch-related and per-partition log metrics are sampled every second over JMX
  (``FETCH_MBEANS``: FetchConsumer request rates and times, bytes out and fetch requests per topic,
  each partition's ``LogStartOffset``, ``LogEndOffset`` and ``Size``).
"""

from __future__ import annotations

import time

from peer.errors import ScenarioError
from peer.process import Managed
from peer.scenario import ScenarioContext

NAME = "consumer_lag"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RATE = 20
CYCLES = 6
PRODUCE_RUN_S = 7
CYCLE_S = 13
SETTLE_S = 2.0
SLOW_RATE = 10
STOPPED_S = 15
SEGMENT_MS = 10_000
RETENTION_TOPIC = "lag-retention"
RETENTION_GROUP = "behind-retention"
#: Long enough to join (the group's first rebalance waits ``group.initial.rebalance.delay.ms``, 3 s) and
#: commit under load, shorter than a cycle: the group leaves before the second run.
RETENTION_GROUP_S = 12
RETENTION_SEGMENT_MS = 2_000
RETENTION_MS = 5_000
RETENTION_CHECK_MS = 1_000
FREEZE_AFTER_CYCLE = 3
OFFSETS_CHECK_MS = 5_000
EXPIRY_WAIT_S = 90.0
#: The assign-mode committer's group.
ASSIGNED_GROUP = "assigned"
TXN_TOPIC = "txn-orders"
TXN_ID = "peer-orders-txn"
TXN_GROUP = "txn-app"
TXN_COUNT = 12
TXN_RECORDS = 6
TXN_PAUSE_MS = 2000
#: The other column layouts of ``kafka-consumer-groups --describe``, captured once while
#: every group has members.
LAYOUTS = (["--offsets", "--verbose"], ["--members"], ["--members", "--verbose"], ["--state"],
           ["--state", "--verbose"])
#: Attempts at each layout before the scenario goes on without it.
LAYOUT_TRIES = 3
BROKER_SETTINGS = {
    "log.retention.check.interval.ms": str(RETENTION_CHECK_MS),
    "offsets.retention.minutes": "1",
    "offsets.retention.check.interval.ms": str(OFFSETS_CHECK_MS),
}
#: Broker MBeans sampled each second (patterns resolved when JmxTool starts, after the topics exist).
FETCH_MBEANS = [
    "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=FetchConsumer,*",
    "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=FetchConsumer",
    "kafka.network:type=RequestMetrics,name=LocalTimeMs,request=FetchConsumer",
    "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,*",
    "kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec,*",
    "kafka.log:type=Log,name=LogStartOffset,topic=lag-*,*",
    "kafka.log:type=Log,name=LogEndOffset,topic=lag-*,*",
    "kafka.log:type=Log,name=Size,topic=lag-*,*",
]


def run(ctx: ScenarioContext) -> None:
    """Run the consumer-lag scenario (see the module docstring)."""
    cluster = ctx.cluster("consumer_lag", controllers=1, brokers=1, jmx=True, broker_settings=BROKER_SETTINGS)
    cluster.format()
    ctx.event("cluster_format", cluster="consumer_lag", controllers=1, brokers=1, settings=BROKER_SETTINGS)
    cluster.start()
    ctx.event("cluster_started", cluster="consumer_lag")
    bs = cluster.bootstrap
    topics = [f"lag-{codec}" for codec in CODECS]
    for topic in topics:
        ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", topic,
                            "--partitions", "2", "--replication-factor", "1",
                            "--config", f"segment.ms={SEGMENT_MS}"])
        ctx.event("topic_created", topic=topic, partitions=2, replication_factor=1,
                  config={"segment.ms": str(SEGMENT_MS)})
    retention = {"segment.ms": str(RETENTION_SEGMENT_MS), "retention.ms": str(RETENTION_MS)}
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", RETENTION_TOPIC,
                        "--partitions", "1", "--replication-factor", "1",
                        *[a for k, v in retention.items() for a in ("--config", f"{k}={v}")]])
    ctx.event("topic_created", topic=RETENTION_TOPIC, partitions=1, replication_factor=1, config=retention)
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", TXN_TOPIC,
                        "--partitions", "2", "--replication-factor", "1"])
    ctx.event("topic_created", topic=TXN_TOPIC, partitions=2, replication_factor=1)
    for broker in cluster.brokers:
        ctx.sample(broker.id, "fetch", broker.jmx_url, FETCH_MBEANS)

    specs = [f"{topic}:{codec}:headers" for topic, codec in zip(topics, CODECS, strict=True)]
    specs.append(f"{RETENTION_TOPIC}:none:headers")
    all_topics = ",".join(topics)
    run_s = CYCLES * CYCLE_S + 6
    groups = {
        "caught-up": (all_topics, run_s, 0),
        "slow": (all_topics, run_s, SLOW_RATE),
        "stopped": (all_topics, STOPPED_S, 0),
        RETENTION_GROUP: (RETENTION_TOPIC, RETENTION_GROUP_S, 0),
    }
    consumers: dict[str, Managed] = {}
    for group, (subscribed, seconds, rate) in groups.items():
        consumers[group] = ctx.background(
            f"consumer-{group}",
            ctx.kafka.client(["consume", bs, group, subscribed, str(seconds), str(rate)]),
        )
        ctx.event("consumer_start", group=group, topics=subscribed.split(","), seconds=seconds,
                  rate=rate or "unlimited", commit_interval_ms=1000)
    consumers[ASSIGNED_GROUP] = ctx.background(
        f"consumer-{ASSIGNED_GROUP}",
        ctx.kafka.client(["assign", bs, ASSIGNED_GROUP, topics[0], str(run_s), str(SLOW_RATE)]))
    ctx.event("consumer_start", group=ASSIGNED_GROUP, topics=[topics[0]], seconds=run_s, rate=SLOW_RATE,
              commit_interval_ms=1000, mode="assign")

    txn = ctx.background("txn-producer", ctx.kafka.client(
        ["txn", bs, TXN_TOPIC, TXN_ID, str(TXN_COUNT), str(TXN_RECORDS), str(TXN_PAUSE_MS), TXN_GROUP]))
    ctx.event("txn_producer_start", topic=TXN_TOPIC, transactional_id=TXN_ID, transactions=TXN_COUNT,
              records_per_transaction=TXN_RECORDS, aborted="every third", group=TXN_GROUP)

    def capture(extra_layouts: bool) -> None:
        """Describe every group with every consumer frozen: nothing commits during the capture."""
        live = [c for c in ctx.children
                if (c.name.startswith("consumer-") or c.name == "txn-producer") and c.alive()]
        for child in live:
            child.pause()
        ctx.event("consumers_paused", consumers=[c.name for c in live])
        try:
            ctx.sleep(SETTLE_S)  # in-flight commits land; a JMX sample of the quiet log ends
            ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups"], check=False)
            if extra_layouts:  # members present: every other layout of --describe once
                for extra in LAYOUTS:
                    describe_layout(ctx, bs, extra)
        finally:
            for child in live:
                child.resume()
            ctx.event("consumers_resumed", consumers=[c.name for c in live])

    started = time.monotonic()
    stopped_seen = False
    resumed: Managed | None = None
    for cycle in range(1, CYCLES + 1):
        ctx.sleep(max(0.0, started + (cycle - 1) * CYCLE_S - time.monotonic()))
        producer = ctx.background(f"producer-{cycle}", ctx.kafka.client(
            ["produce", bs, str(PRODUCE_RUN_S), str(RATE), *specs]))
        ctx.event("producer_start", run=cycle, topics=[*topics, RETENTION_TOPIC], codecs=[*CODECS, "none"],
                  rate_per_topic=RATE, seconds=PRODUCE_RUN_S, headers=["trace-id", "source"], acks="all")
        code = producer.wait(PRODUCE_RUN_S + 60.0)
        ctx.event("producer_end", run=cycle, exit_code=code, summary=producer.tail(1))
        if not stopped_seen and not consumers["stopped"].alive():
            stopped_seen = True
            ctx.event("consumer_stopped", group="stopped")
        capture(extra_layouts=cycle == 2)
        if cycle == FREEZE_AFTER_CYCLE:
            resumed = behind_retention(ctx, bs, consumers)
    for group, child in [*consumers.items(), (f"{RETENTION_GROUP} (resumed)", resumed)]:
        if child is not None:
            code = child.wait(60.0)
            ctx.event("consumer_end", group=group, exit_code=code, summary=child.tail(1))
    code = txn.wait(60.0)
    ctx.event("txn_producer_end", exit_code=code, summary=txn.tail(1))
    if code != 0:
        raise ScenarioError(f"the transactional producer exited {code}: {txn.tail(5)}")
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", RETENTION_TOPIC, "--time", "-2"])
    wait_for_expiry(ctx, bs, "stopped")
    ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups"], check=False)
    ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups", "--state"], check=False)
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--time", "-1"])
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--time", "-2"])
    ctx.event("cluster_stop", cluster="consumer_lag", clean=True)


def behind_retention(ctx: ScenarioContext, bs: str, consumers: dict[str, Managed]) -> Managed:
    """Switch retention off, capture the group's offset and the log start, and bring the group back."""
    consumers[RETENTION_GROUP].wait(30.0)
    ctx.tool("configs", ["--bootstrap-server", bs, "--alter", "--entity-type", "topics", "--entity-name",
                         RETENTION_TOPIC, "--add-config", "retention.ms=-1"])
    ctx.event("config_set", scope="topic", resource=RETENTION_TOPIC, name="retention.ms", value="-1")
    ctx.sleep(3.0 * RETENTION_CHECK_MS / 1000 + 1.0)  # a deletion already under way finishes
    ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--group", RETENTION_GROUP], check=False)
    ctx.tool("get-offsets", ["--bootstrap-server", bs, "--topic", RETENTION_TOPIC, "--time", "-2"])
    ctx.event("retention_frozen", topic=RETENTION_TOPIC, group=RETENTION_GROUP)
    child = ctx.background(f"consumer-{RETENTION_GROUP}-resumed", ctx.kafka.client(
        ["consume", bs, RETENTION_GROUP, RETENTION_TOPIC, str(RETENTION_GROUP_S), "0"]))
    ctx.event("consumer_start", group=RETENTION_GROUP, topics=[RETENTION_TOPIC], seconds=RETENTION_GROUP_S,
              rate="unlimited", commit_interval_ms=1000, resumed=True)
    return child


def describe_layout(ctx: ScenarioContext, bs: str, extra: list[str]) -> None:
    """Capture one ``--describe`` layout; on a loaded machine the tool can answer with an error instead
    of a table (its admin calls time out), which is kept as captured, then the layout is asked for again
    (up to ``LAYOUT_TRIES`` times) so that every layout is in the bundle."""
    for _ in range(LAYOUT_TRIES):
        out = ctx.tool("consumer-groups", ["--bootstrap-server", bs, "--describe", "--all-groups", *extra],
                       check=False)
        if any(line.startswith("GROUP ") for line in out.splitlines()):
            return
        ctx.event("layout_retry", layout=extra, answer=out.strip()[-300:])


def wait_for_expiry(ctx: ScenarioContext, bs: str, group: str) -> None:
    """Poll (uncaptured) until the coordinator has expired ``group``'s offsets and removed it."""
    args = ["--bootstrap-server", bs, "--describe", "--group", group]

    def gone() -> bool:
        result = ctx.kafka.run_tool("consumer-groups", args, check=False)
        text = result.stdout + result.stderr
        # 3.9: "Consumer group 'g' does not exist."; 4.x: "GroupIdNotFoundException: Group g not found."
        return "does not exist" in text or f"Group {group} not found" in text

    waited = ctx.wait_until(gone, timeout=EXPIRY_WAIT_S, interval=3.0, what=f"offsets of {group} to expire")
    ctx.tool("consumer-groups", args, check=False)
    ctx.event("offsets_expired", group=group, waited_s=round(waited, 1))
