"""The demo bundle: one incident across all five areas, captured from real Apache Kafka.

The archive ``workbench/data/demo-bundle.tar.gz`` was captured by the project's real-Kafka
``demo`` scenario (``python -m peer demo --out FILE.tar.gz``; see ``workbench/data/README.md``):
a tiered cluster of three controllers and three brokers and its MirrorMaker 2 copy; remote
uploads refused, the leader controller frozen, a broker killed, MirrorMaker 2 stopped, a consumer
group falling behind, then recovery.
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


def demo_bundle_path() -> Path:
    """The demo bundle, extracted once into the workbench's cache and reused (notebooks open it by default).

    The directory is ``$KAFKA_WORKBENCH_CACHE/demo/<archive digest>/`` (``~/.cache/kafka-workbench``
    when unset), so a new archive gets a new directory; delete ``demo/`` to reclaim the space.

    Examples
    --------
    >>> demo_bundle_path().name                                # doctest: +SKIP
    'bundle'
    """
    import hashlib
    import os
    import shutil
    import tempfile

    if not DEMO_ARCHIVE.is_file():
        raise BundleError(f"the demo archive is missing from the installation: {DEMO_ARCHIVE}")
    digest = hashlib.sha256(DEMO_ARCHIVE.read_bytes()).hexdigest()[:16]
    cache = Path(os.environ.get("KAFKA_WORKBENCH_CACHE") or Path.home() / ".cache" / "kafka-workbench")
    target = cache / "demo" / digest / "bundle"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="bundle.", dir=target.parent))
    try:
        extract_archive(DEMO_ARCHIVE, scratch)
        try:
            scratch.rename(target)
        except OSError:  # another process finished first
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target
