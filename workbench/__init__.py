"""Offline investigation workbench for Apache Kafka incidents.

The public surface: :func:`session` (a Spark session set up for the workbench),
:func:`open_bundle` (discover what a bundle of Kafka artifacts holds), :func:`load`
(the bundle's tables as Spark DataFrames) and :func:`load_records` (every record of chosen
topics, payloads redacted unless asked for). Analyses live in :mod:`workbench.analysis`.

The names are imported on first use, so that the command line (``workbench dump`` ...) starts
without loading what it does not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import WorkbenchError

# the function shadows its module's name: bound here, before any later import of the module could
from workbench.session import session  # noqa: E402 - cheap, pyspark is imported when it is called

if TYPE_CHECKING:
    from workbench.bundle import Bundle, open_bundle
    from workbench.spark import Tables, load, load_records

__all__ = ["Bundle", "Tables", "WorkbenchError", "load", "load_records", "open_bundle", "reset", "session"]
__version__ = "0.1.0"

_LAZY = {
    "Bundle": "workbench.bundle",
    "open_bundle": "workbench.bundle",
    "Tables": "workbench.spark",
    "load": "workbench.spark",
    "load_records": "workbench.spark",
    "reset": "workbench.investigation",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
