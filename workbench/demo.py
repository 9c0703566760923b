"""The demo bundle: a small ISR incident captured from real Apache Kafka.

The archive ``workbench/data/demo-bundle.tar.gz`` was captured by the project's real-Kafka
``isr`` scenario (``python -m peer demo --out DIR``; see ``workbench/data/README.md``): three
brokers, topics with replication factor 3 and ``min.insync.replicas=2``, one broker stopped,
then a second, then both restarted.
"""

from __future__ import annotations

from pathlib import Path

from workbench.bundle import extract_archive
from workbench.errors import BundleError

DEMO_ARCHIVE = Path(__file__).parent / "data" / "demo-bundle.tar.gz"


def write_demo_bundle(out: str | Path) -> Path:
    """Extract the demo bundle into ``out`` (created; must be empty or absent).

    Examples
    --------
    >>> write_demo_bundle("/tmp/demo")                     # doctest: +SKIP
    PosixPath('/tmp/demo')
    """
    target = Path(out)
    if target.exists() and any(target.iterdir()):
        raise BundleError(f"{target} exists and is not empty; choose a new directory")
    if not DEMO_ARCHIVE.is_file():
        raise BundleError(f"the demo archive is missing from the installation: {DEMO_ARCHIVE}")
    extract_archive(DEMO_ARCHIVE, target)
    return target
