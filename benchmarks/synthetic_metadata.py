"""A synthetic KRaft metadata log of any size from the command line (:mod:`peer.synthetic`).

Usage::

    python benchmarks/synthetic_metadata.py OUT.log --records 10000000 [--seed 0]

The writer lives in :mod:`peer.synthetic` (the tests use it from there); the benchmarks import it
from here (``from synthetic_metadata import write_synthetic_metadata_log``) as before.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from peer.synthetic import write_synthetic_metadata_log  # noqa: E402

__all__ = ["write_synthetic_metadata_log"]


def main(argv: list[str] | None = None) -> int:
    """Command line: write the log and print its summary as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="segment to write, e.g. DIR/__cluster_metadata-0/00000000000000000000.log")
    ap.add_argument("--records", type=int, default=10_000_000, help="records in all (default %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10, help="partitions per topic")
    ap.add_argument("--batch-records", type=int, default=100)
    args = ap.parse_args(argv)
    summary = write_synthetic_metadata_log(
        args.path,
        args.records,
        args.seed,
        topics=args.topics,
        partitions=args.partitions,
        batch_records=args.batch_records,
    )
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
