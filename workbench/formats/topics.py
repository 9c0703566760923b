"""Kafka's internal topics by name, and the payload decoder a file of each one needs.

One home for the names: the KRaft metadata log, the coordinator topics, the tiered-storage
metadata topic, and the MirrorMaker 2 topics (classified by
:func:`workbench.formats.mirror.classify_mirror_topic`). :func:`decoder_for` picks the decoder
of a segment or snapshot from its partition directory (``<topic>-<partition>``), as
``workbench dump --decoder auto`` does.

Decoder names
-------------
``none``                 Kafka's default: keys and values as UTF-8 text
``cluster-metadata``     ``__cluster_metadata`` (and ``bootstrap.checkpoint``)
``offsets``              ``__consumer_offsets``
``transaction-log``      ``__transaction_state``
``remote-log-metadata``  ``__remote_log_metadata``
``share-group-state``    ``__share_group_state``
``mm2-offset-syncs``     ``mm2-offset-syncs.<alias>.internal``
``mm2-checkpoints``      ``<alias>.checkpoints.internal``
``mm2-heartbeats``       ``heartbeats``, ``<alias>.heartbeats``
``mm2-connect-offsets``  ``mm2-offsets.<alias>.internal`` (Connect offsets of MM2's connectors), and a
                         Connect cluster's ``connect-offsets`` (its usual names: ``CONNECT_OFFSETS_TOPICS``)

The first six are the decoders of Kafka's dump tool (``--cluster-metadata-decoder`` ...); the
MirrorMaker 2 ones exist only in the workbench's JSON lines (Kafka's tool has no flag for them).

Examples
--------
>>> decoder_for("logs/__consumer_offsets-12/00000000000000000000.log")
'offsets'
>>> decoder_for("logs/mm2-offset-syncs.B.internal-0/00000000000000000000.log")
'mm2-offset-syncs'
>>> decoder_for("logs/mm2-offset-syncs.B.internal-0/00000000000000000000.log", kafka_only=True)
'none'
>>> topic_of("logs/orders-3/00000000000000000000.log")
'orders'
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from workbench.errors import ConfigError

__all__ = [
    "DECODERS",
    "INTERNAL_TOPICS",
    "KAFKA_DECODERS",
    "METADATA_TOPIC",
    "OFFSETS_TOPIC",
    "REMOTE_LOG_METADATA_TOPIC",
    "SHARE_GROUP_STATE_TOPIC",
    "TRANSACTION_TOPIC",
    "decoder_for",
    "decoder_of_topic",
    "topic_of",
]

METADATA_TOPIC = "__cluster_metadata"
"""The KRaft metadata log's topic (one partition, ``__cluster_metadata-0``)."""
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"

INTERNAL_TOPICS: dict[str, str] = {
    METADATA_TOPIC: "cluster-metadata",
    OFFSETS_TOPIC: "offsets",
    TRANSACTION_TOPIC: "transaction-log",
    REMOTE_LOG_METADATA_TOPIC: "remote-log-metadata",
    SHARE_GROUP_STATE_TOPIC: "share-group-state",
}
"""Kafka's internal topics and the decoder of each."""

KAFKA_DECODERS: tuple[str, ...] = (
    "none",
    "cluster-metadata",
    "offsets",
    "remote-log-metadata",
    "transaction-log",
    "share-group-state",
)
"""Decoders of Kafka's dump tool (``none`` = its default StringDecoder)."""

_MIRROR_DECODERS = {
    "offset_syncs": "mm2-offset-syncs",
    "checkpoints": "mm2-checkpoints",
    "heartbeats": "mm2-heartbeats",
    "connect_offsets": "mm2-connect-offsets",
}

DECODERS: tuple[str, ...] = KAFKA_DECODERS + tuple(_MIRROR_DECODERS.values())
"""Every payload decoder of the workbench's dumps."""

_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


def topic_of(path: str | os.PathLike[str]) -> str | None:
    """The topic of a file in a partition directory ``<topic>-<partition>`` (``bootstrap.checkpoint``:
    the metadata topic), else ``None``.

    >>> topic_of("/data/__cluster_metadata-0/00000000000000000100-0000000001.checkpoint")
    '__cluster_metadata'
    >>> topic_of("/data/bootstrap.checkpoint"), topic_of("/tmp/x.log")
    ('__cluster_metadata', None)
    """
    p = Path(os.fspath(path))
    if p.name == "bootstrap.checkpoint":
        return METADATA_TOPIC
    m = _PARTITION_DIR.match(p.parent.name or Path(os.path.abspath(p)).parent.name)
    return m["topic"] if m else None


def decoder_of_topic(topic: str | None, *, kafka_only: bool = False) -> str:
    """The decoder of a topic (``none`` for a topic with plain payloads, or ``None``).
    ``kafka_only``: Kafka's dump-tool decoders only (MirrorMaker 2 topics get ``none``).

    >>> decoder_of_topic("__share_group_state"), decoder_of_topic("A.checkpoints.internal")
    ('share-group-state', 'mm2-checkpoints')
    """
    if topic is None:
        return "none"
    known = INTERNAL_TOPICS.get(topic)
    if known is not None:
        return known
    if kafka_only:
        return "none"
    from workbench.formats.mirror import classify_mirror_topic  # (its layouts cost an import)

    mirror = classify_mirror_topic(topic)
    return _MIRROR_DECODERS[mirror[0]] if mirror is not None else "none"


def decoder_for(path: str | os.PathLike[str], decoder: str = "auto", *, kafka_only: bool = False) -> str:
    """The payload decoder a file needs: ``decoder`` itself, or by its topic when ``auto``.

    ``kafka_only`` limits ``auto`` to Kafka's dump-tool decoders. Raises :class:`ConfigError` for an
    unknown decoder name.

    >>> decoder_for("x/__transaction_state-3/00000000000000000000.log")
    'transaction-log'
    >>> decoder_for("x/orders-0/00000000000000000000.log", "offsets")
    'offsets'
    """
    if decoder == "auto":
        return decoder_of_topic(topic_of(path), kafka_only=kafka_only)
    if decoder not in DECODERS:
        raise ConfigError(f"unknown decoder {decoder!r}; expected 'auto' or one of {', '.join(DECODERS)}")
    return decoder
