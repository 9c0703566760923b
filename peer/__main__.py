"""Command line of the real Kafka peer.

Usage::

    python -m peer fetch [--version V ...]              (default: every pinned version; and S3Proxy)
    python -m peer scenarios [--version V ...] [--only NAME ...] [--force] [--attempts N]
                             [--jobs N]                (default: peer.scenario.DEFAULT_SETS,
                                                        ERA_SETS, ZK_SETS, SINGLE_SETS)
    python -m peer demo --out DIR [--version V]

``scenarios`` prints one bundle directory per line on stdout (progress goes to stderr) and
exits 1 when a scenario fails, after printing the tails of the node logs. With ``--jobs N`` it
runs up to N builds at once, each in its own process, longest first (a build mostly waits on
the clusters' timers, so a few share a small machine; the machine-wide limit is
``$KAFKA_WORKBENCH_SCENARIO_SLOTS``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from peer.errors import PeerError
from peer.kafka import DEFAULT_VERSION, VERSIONS, fetch
from peer.scenario import DEFAULT_SETS, ERA_SETS, SCENARIOS, SINGLE_SETS, ZK_SCENARIOS, ZK_SETS, build

#: Scenarios by how long they take to build (longest first), to pack parallel builds; those built
#: alone (``EXCLUSIVE``: quorum) last, once the others have been started.
_LONGEST_FIRST = ("demo", "tiered", "mm2", "mm2_partial", "consumer_lag", "zk_isr", "isr", "idle", "quorum")


def _log(msg: str) -> None:
    print(f"[peer {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def write_demo(out: Path, version: str = DEFAULT_VERSION) -> Path:
    """Write the ``demo`` scenario's bundle, the shipped demo bundle, to ``out`` (a directory, or a ``.tar.gz`` file).

    One incident across all five areas (``peer/scenarios/demo.py``). The archive is written as
    ``workbench/data/demo-bundle.tar.gz`` is: the bundle's files at its root, in name order, owned
    by 0:0, with one fixed modification time (so the archive changes only when the files do).

    Parameters
    ----------
    out
        Target directory (replaced) or archive path ending in ``.tar.gz``.
    version
        Kafka version of the bundle.

    Returns
    -------
    Path
        ``out``.
    """
    source = build("demo", version, log=_log)
    if out.name.endswith(".tar.gz"):
        out.parent.mkdir(parents=True, exist_ok=True)

        def normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = _ARCHIVE_MTIME
            return info

        with tarfile.open(out, "w:gz") as tar:
            for path in sorted(source.rglob("*")):
                if path.name == ".complete":
                    continue
                tar.add(path, arcname=path.relative_to(source).as_posix(), recursive=False, filter=normalise)
        return out
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out, ignore=shutil.ignore_patterns(".complete"))
    return out


#: The modification time of every member of the demo archive (2026-01-01 UTC).
_ARCHIVE_MTIME = 1767225600


def _build_in_parallel(wanted: list[tuple[str, str]], args: argparse.Namespace) -> int:
    """Build each (version, name) in a child ``python -m peer scenarios`` process, ``args.jobs``
    at a time, longest first; prints each bundle directory as its build ends."""
    from concurrent.futures import ThreadPoolExecutor

    def rank(item: tuple[str, str]) -> int:
        name = item[1]
        return _LONGEST_FIRST.index(name) if name in _LONGEST_FIRST else len(_LONGEST_FIRST)

    def one(item: tuple[str, str]) -> bool:
        version, name = item
        argv = [sys.executable, "-m", "peer", "scenarios", "--version", version, "--only", name,
                "--attempts", str(args.attempts)] + (["--force"] if args.force else [])
        # progress and failures go straight to our stderr; the bundle path comes back on stdout
        done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
        if done.stdout:
            print(done.stdout.strip(), flush=True)
        if done.returncode != 0:
            _log(f"{name} ({version}): build failed (exit {done.returncode})")
        return done.returncode == 0

    ordered = sorted(wanted, key=rank)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(one, ordered))
    _log(f"{len(ordered)} scenario bundles, {args.jobs} at a time: "
         f"{time.monotonic() - started:.1f} s")
    return 0 if all(results) else 1


def default_sets() -> dict[str, tuple[str, ...]]:
    """Each release's scenarios that ``scenarios`` builds without ``--only``: every bundle a test reads
    (:data:`~peer.scenario.DEFAULT_SETS`, ``ERA_SETS``, ``ZK_SETS`` and ``SINGLE_SETS``)."""
    groups = (DEFAULT_SETS, ERA_SETS, ZK_SETS, SINGLE_SETS)
    return {v: tuple(dict.fromkeys(n for group in groups for n in group.get(v, ())))
            for v in dict.fromkeys(k for group in groups for k in group)}


def wanted_builds(versions: list[str] | None, only: list[str] | None,
                  sets: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
    """The (release, scenario) pairs to build: ``only``'s scenarios on the releases whose set holds
    them (every listed release when ``versions`` names them), else each release's whole set.

    >>> sets = {"4.3.1": ("isr", "idle"), "3.2.3": ("idle",)}
    >>> wanted_builds(None, ["isr"], sets)
    [('4.3.1', 'isr')]
    >>> wanted_builds(["3.2.3"], ["isr"], sets)
    [('3.2.3', 'isr')]
    >>> wanted_builds(None, None, sets)
    [('4.3.1', 'isr'), ('4.3.1', 'idle'), ('3.2.3', 'idle')]
    """
    return [(version, name) for version in versions or list(sets) for name in only or sets[version]
            if versions or not only or name in sets[version]]


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m peer``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m peer", description=__doc__.split("\n")[1])
    sub = parser.add_subparsers(dest="command", required=True)
    p_fetch = sub.add_parser("fetch", help="resolve Kafka (and S3Proxy, the tests' S3 server) from Maven "
                                          "Central into the cache")
    p_fetch.add_argument("--version", action="append", choices=list(VERSIONS))
    p_sc = sub.add_parser("scenarios", help="build (or reuse) scenario bundles")
    p_sc.add_argument("--version", action="append", choices=list(dict.fromkeys([*VERSIONS, *default_sets()])))
    p_sc.add_argument("--only", nargs="+", choices=[*SCENARIOS, *ZK_SCENARIOS])
    p_sc.add_argument("--force", action="store_true", help="rebuild complete bundles")
    p_sc.add_argument("--attempts", type=int, default=2,
                      help="tries per scenario before giving up (real clusters on a busy "
                           "machine can miss a timing bound once); default 2")
    p_sc.add_argument("--jobs", type=int, default=1,
                      help="builds run at once, each in its own process; default 1")
    p_demo = sub.add_parser("demo", help="write the demo bundle (one incident across all five areas)")
    p_demo.add_argument("--out", required=True, type=Path)
    p_demo.add_argument("--version", default=DEFAULT_VERSION, choices=list(VERSIONS))
    args = parser.parse_args(argv)

    try:
        if args.command == "fetch":
            for version in args.version or list(VERSIONS):
                started = time.monotonic()
                kafka = fetch(version)
                _log(f"Kafka {version}: {kafka.lib} ({time.monotonic() - started:.1f} s)")
                print(kafka.lib)
            from peer.s3proxy import VERSION as S3PROXY_VERSION
            from peer.s3proxy import fetch_s3proxy

            started = time.monotonic()
            jar = fetch_s3proxy()
            _log(f"S3Proxy {S3PROXY_VERSION}: {jar} ({time.monotonic() - started:.1f} s)")
            print(jar)
        elif args.command == "scenarios":
            wanted = wanted_builds(args.version, args.only, default_sets())
            if args.jobs > 1 and len(wanted) > 1:
                return _build_in_parallel(wanted, args)
            failed = False
            for version, name in wanted:
                for attempt in range(1, args.attempts + 1):
                    try:
                        print(build(name, version, force=args.force, log=_log), flush=True)
                        break
                    except PeerError as exc:
                        _log(f"{name} ({version}) FAILED (attempt {attempt}):\n{exc}")
                else:
                    failed = True
            return 1 if failed else 0
        elif args.command == "demo":
            print(write_demo(args.out, args.version))
    except PeerError as exc:
        _log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
