"""Errors raised by the real Kafka peer.

All derive from :class:`PeerError`, itself a :class:`workbench.errors.WorkbenchError`.
"""

from __future__ import annotations

from workbench.errors import WorkbenchError


class PeerError(WorkbenchError):
    """Base class of every error the peer raises on purpose."""


class FetchError(PeerError):
    """Kafka could not be resolved from Maven Central into the cache."""


class ClusterError(PeerError):
    """A Kafka node did not format, start, become ready or stop as expected."""


class ToolError(PeerError):
    """A Kafka tool exited non-zero or did not finish in time."""


class ScenarioError(PeerError):
    """A scenario did not reach the state it is meant to capture."""
