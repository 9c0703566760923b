"""A KIP-853 dynamic quorum whose voters change: the voter timeline's oracle (issue 38).

Cluster: 3 controllers (1-3) + 1 broker (4), ``controller.quorum.bootstrap.servers`` instead of
``controller.quorum.voters``: controller 1 formatted ``--standalone`` (the only voter), 2 and 3
``--no-initial-controllers`` (observers).

Timeline (about 40 s of Kafka time after start-up):

1. a topic; ``kafka-metadata-quorum describe --status`` (one voter);
2. ``add-controller`` for 2, then for 3, each followed by a ``--status`` capture;
3. ``remove-controller`` for 2 (it keeps running, an observer again), a ``--status`` capture;
4. a clean stop.

Each change is an event (``voter_added`` / ``voter_removed``) stamped when Kafka's tool returned;
Kafka writes each voter set as a ``KRaftVoters`` control record in the metadata log.
"""

from __future__ import annotations

from peer.scenario import ScenarioContext

NAME = "voters"
#: Seconds between a change and the next capture: the broker's view of the quorum follows the leader's.
SETTLE_S = 3


def status(ctx: ScenarioContext, bootstrap: str, label: str) -> None:
    """Capture ``describe --status`` (``CurrentVoters``) through the broker."""
    ctx.event("capture", what=label)
    ctx.tool("metadata-quorum", ["--bootstrap-server", bootstrap, "describe", "--status"])


def run(ctx: ScenarioContext) -> None:
    """Run the scenario (see the module docstring)."""
    cluster = ctx.cluster("voters", controllers=3, brokers=1, dynamic=True)
    cluster.format()
    ctx.event("cluster_format", cluster="voters", controllers=3, brokers=1, dynamic=True)
    cluster.start()
    ctx.event("cluster_started", cluster="voters")
    bs = cluster.bootstrap
    ctx.tool("topics", ["--bootstrap-server", bs, "--create", "--topic", "events", "--partitions", "1",
                        "--replication-factor", "1"])
    status(ctx, bs, "one voter")
    first, second, third = cluster.controllers
    for node in (second, third):
        cluster.add_controller(node)
        ctx.event("voter_added", node=node.id)
        ctx.sleep(SETTLE_S)
        status(ctx, bs, f"after adding {node.id}")
    cluster.remove_controller(second)
    ctx.event("voter_removed", node=second.id)
    ctx.sleep(SETTLE_S)
    status(ctx, bs, f"after removing {second.id}")
    ctx.event("cluster_stop", cluster="voters", clean=True)
