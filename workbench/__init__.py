"""Offline investigation workbench for Apache Kafka incidents.

The public surface: :func:`session` (a Spark session set up for the workbench),
:func:`open_bundle` (discover what a bundle of Kafka artifacts holds), :func:`load`
(the bundle's tables as Spark DataFrames) and :func:`load_records` (every record of chosen
topics, payloads redacted unless asked for). Analyses live in :mod:`workbench.analysis`.
"""

from __future__ import annotations

from workbench.bundle import Bundle, open_bundle
from workbench.errors import WorkbenchError
from workbench.session import session
from workbench.spark.load import Tables, load, load_records

__all__ = ["Bundle", "Tables", "WorkbenchError", "load", "load_records", "open_bundle", "session"]
__version__ = "0.1.0"
