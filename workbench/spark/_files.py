"""Helpers of the tables that read files with something known per file besides the file itself.

A table whose reader needs per-file facts the bundle's manifest gives (the capture time of a
tool output or a Prometheus scrape, the command line it ran) builds through
:func:`read_with_facts`: the facts travel to the executors as one JSON option keyed by the
file's absolute path, and the read is split into rows and problems by the registry as usual.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.spark.registry import Built, TableSpec, read_table

if TYPE_CHECKING:
    from workbench.bundle import Artifact, Bundle
    from workbench.spark.registry import BuildContext
    from workbench.spark.source import ArtifactSource

_EPOCH_MS = re.compile(r"(?<!\d)(1\d{12})(?!\d)")


def manifest_entries(bundle: Bundle, key: str) -> dict[str, dict]:
    """The bundle manifest's ``key`` list (``tools``, ``metrics``), by bundle-relative file path."""
    items = (bundle.manifest or {}).get(key, [])
    return {str(e["file"]): e for e in items if isinstance(e, dict) and "file" in e} if isinstance(items, list) else {}


def epoch_ms_in_name(name: str) -> int | None:
    """A 13-digit epoch-milliseconds number in a file name (2001-09 to 2286), or None.

    >>> epoch_ms_in_name("4-1795410208438.prom"), epoch_ms_in_name("broker-4.prom")
    (1795410208438, None)
    """
    m = _EPOCH_MS.search(Path(name).name)
    return int(m.group(1)) if m else None


def read_with_facts(ctx: BuildContext, name: str, row: str, schema: str, source: type[ArtifactSource],
                    artifacts: Sequence[Artifact], facts: dict[str, dict[str, Any]], **options: Any) -> Built:
    """Read ``artifacts`` with ``source``, giving its reader ``facts`` (bundle path -> dict) as
    the ``facts`` option keyed by absolute path (``json.loads(options["facts"])``)."""
    ctx.spark.dataSource.register(source)  # per session; cheap
    spec = TableSpec(name=name, row=row, schema=schema, source=source)
    absolute = {str(ctx.bundle.root / path): value for path, value in facts.items()}
    return read_table(ctx.spark, ctx.bundle, spec, artifacts, strict=bool(ctx.option("strict", False)),
                      facts=json.dumps(absolute), **options)


def facts_option(options: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The ``facts`` option of a reader (empty when absent)."""
    raw = options.get("facts")
    return json.loads(raw) if raw else {}
