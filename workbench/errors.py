"""Exception hierarchy of the workbench.

Every error the library raises on purpose derives from :class:`WorkbenchError`, so a caller can
catch one type. Messages say what was expected and what was found.
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base class of every error raised by the workbench on purpose."""


class CorruptDataError(WorkbenchError):
    """Bytes or text that do not follow the Kafka format they claim to be.

    Raised only in ``strict`` mode; otherwise the same condition becomes a row of the
    ``problems`` table and reading goes on.
    """

    def __init__(self, path: str, position: int, kind: str, detail: str) -> None:
        super().__init__(f"{path or '<bytes>'} @ {position}: {kind}: {detail}")
        self.path = path
        self.position = position
        self.kind = kind
        self.detail = detail


class UnsupportedError(WorkbenchError):
    """A well-formed input that uses a format version or feature the workbench does not know."""


class BundleError(WorkbenchError):
    """A bundle path that cannot be opened or holds nothing the workbench can read."""


class ConfigError(WorkbenchError):
    """An invalid option or parameter given by the caller."""
