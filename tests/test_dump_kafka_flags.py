"""``workbench dump --format kafka`` against ``kafka-dump-log.sh`` itself, flag by flag.

Every segment, snapshot, index, time index, transaction index and producer snapshot of every
scenario bundle, for both pinned Kafka releases, under each flag and combination of flags the
tool has: our text must be Kafka's, byte for byte, and where Kafka's tool dies (an index sanity
check that fails, a batch too large for ``--max-message-size``) ours must stop at the same byte
with a ``tool_failure`` problem. Flags a release does not have must be refused as its tool
refuses them. All runs of one release go through one JVM (``kafka_dump_runs.run_dump_log``).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from peer.scenario import built_on
from tests.formats.kafka_dump_runs import KafkaRun, check_driver, run_dump_log
from workbench.errors import ConfigError
from workbench.formats.dumptext_write import TOOL_FAILURE, parse_kafka_args, write_kafka_dump

pytestmark = pytest.mark.kafka

VERSIONS = ("4.3.1", "3.9.2")
#: The releases whose scenario bundles are built (``peer.scenario.DEFAULT_SETS``), newest first.
BUNDLE_VERSIONS = built_on("isr")
SCENARIOS = ("isr", "consumer_lag", "quorum", "tiered", "mm2")
LOG_SUFFIXES = (".log", ".checkpoint")
INDEX_SUFFIXES = (".index", ".timeindex")
OTHER_SUFFIXES = (".txnindex", ".snapshot")

#: flag sets run on every file of a bundle in one --files list
ALL_FILES_FLAGS: tuple[tuple[str, ...], ...] = (
    (),
    ("--deep-iteration",),
    ("--print-data-log",),
    ("--print-data-log", "--skip-record-metadata"),
    ("--deep-iteration", "--skip-record-metadata"),
    ("--max-bytes", "3000"),
    ("--deep-iteration", "--max-bytes", "20000"),
    ("--value-decoder-class",),
    ("--key-decoder-class", "org.apache.kafka.tools.api.StringDecoder", "--deep-iteration"),
    ("--verify-index-only",),
    ("--cluster-metadata-decoder",),  # on every file: Kafka's error text for what is not metadata
)
#: decoder flag sets run on the files of one topic
TOPIC_FLAGS: dict[str, tuple[tuple[str, ...], ...]] = {
    "__cluster_metadata": (
        ("--cluster-metadata-decoder", "--skip-record-metadata"),
        ("--cluster-metadata-decoder", "--max-bytes", "5000"),
    ),
    "__consumer_offsets": (
        ("--offsets-decoder",),
        ("--offsets-decoder", "--skip-record-metadata"),
        ("--cluster-metadata-decoder", "--offsets-decoder"),  # offsets wins, as in Kafka's tool
    ),
    "__transaction_state": (("--transaction-log-decoder",), ("--transaction-log-decoder", "--skip-record-metadata")),
    "__remote_log_metadata": (
        ("--remote-log-metadata-decoder",),
        ("--remote-log-metadata-decoder", "--deep-iteration"),
    ),
    "__share_group_state": (("--share-group-state-decoder",),),
}
#: flag sets run on each index file alone (the tool may die on one)
PER_INDEX_FLAGS: tuple[tuple[str, ...], ...] = (
    ("--index-sanity-check",),
    ("--max-message-size", "200"),
)


def _bundles(kafka_bundle, version: str) -> list[Path]:
    out = []
    for name in SCENARIOS:
        if version not in built_on(name):
            continue
        if os.environ.get("KAFKA_WORKBENCH_NO_BUILD") == "1":
            from peer.scenario import bundle_dir, is_complete

            if not is_complete(bundle_dir(name, version)):
                continue
        out.append(Path(kafka_bundle(name, version)))
    if not out and os.environ.get("KAFKA_WORKBENCH_NO_BUILD") == "1":
        pytest.skip(f"no scenario bundle of Kafka {version} built (KAFKA_WORKBENCH_NO_BUILD=1)")
    assert out, f"no scenario is built on Kafka {version} (peer.scenario.DEFAULT_SETS)"   # a test's mistake
    return out


def _files(bundle: Path) -> list[str]:
    """Every file Kafka's tool dumps, logs first (so that a failing index check ends the run last)."""
    found = [p for p in (bundle / "nodes").glob("*/logs/**/*") if p.is_file()]
    rank = {s: i for i, s in enumerate((*LOG_SUFFIXES, *INDEX_SUFFIXES, *OTHER_SUFFIXES))}
    chosen = [
        p
        for p in found
        if p.suffix in rank and (p.suffix != ".checkpoint" or p.name[0].isdigit() or p.name == "bootstrap.checkpoint")
    ]
    return [str(p) for p in sorted(chosen, key=lambda p: (rank[p.suffix], str(p)))]


def _topic(path: str) -> str:
    return Path(path).parent.name.rsplit("-", 1)[0]


def _runs(bundles: list[Path], version: str) -> list[tuple[str, ...]]:
    runs: list[tuple[str, ...]] = []
    for bundle in bundles:
        files = _files(bundle)
        for flags in ALL_FILES_FLAGS:
            runs.append((*flags, "--files", ",".join(files)))
        for topic, flag_sets in TOPIC_FLAGS.items():
            mine = [f for f in files if _topic(f) == topic and f.endswith(LOG_SUFFIXES)]
            if topic == "__cluster_metadata":
                mine += [f for f in files if f.endswith("bootstrap.checkpoint")]
            if not mine:
                continue
            for flags in flag_sets:
                if flags[0] == "--share-group-state-decoder" and version < "4":
                    continue
                runs.append((*flags, "--files", ",".join(mine)))
        for f in files:
            if f.endswith(INDEX_SUFFIXES):
                for flags in PER_INDEX_FLAGS:
                    runs.append((*flags, "--files", f))
    return runs


def _ours(args: tuple[str, ...], version: str) -> tuple[str, bool]:
    opts, files = parse_kafka_args(args, version)
    buf = io.BytesIO()
    logs: list = []
    write_kafka_dump(files, out=buf, options=opts, kafka_version=version, problems=logs)
    failed = any(p.kind == TOOL_FAILURE for log in logs for p in log.problems)
    return buf.getvalue().decode("utf-8", "surrogateescape"), failed


def _difference(kafka: str, ours: str) -> str:
    want, got = kafka.split("\n"), ours.split("\n")
    current = ""
    for i, (a, b) in enumerate(zip(want, got, strict=False)):
        if a.startswith("Dumping "):
            current = a
        if a != b:
            return f"{current}\n  line {i + 1}:\n  kafka: {a[:400]!r}\n  ours:  {b[:400]!r}"
    return f"line counts differ: kafka {len(want)}, ours {len(got)} (last file {current})"


def _flags_of(run: KafkaRun) -> str:
    return " ".join(a for a in run.args if a.startswith("--") and a != "--files") or "(none)"


@pytest.mark.parametrize("version", BUNDLE_VERSIONS)
def test_every_flag_on_every_bundle_file_is_kafkas_text(kafka_bundle, version):
    bundles = _bundles(kafka_bundle, version)
    runs = run_dump_log(version, _runs(bundles, version))
    mismatches, stopped, flag_sets, files = [], 0, set(), set()
    for run in runs:
        ours, failed = _ours(run.args, version)
        flag_sets.add(_flags_of(run))
        files.update(run.args[-1].split(","))
        if ours != run.stdout:
            mismatches.append(f"[{_flags_of(run)}] {_difference(run.stdout, ours)}")
        elif failed != bool(run.failure):
            mismatches.append(
                f"[{_flags_of(run)}] {run.args[-1][-80:]}: Kafka failed: {run.failure[:200]!r}, "
                f"ours reports a tool failure: {failed}"
            )
        stopped += bool(run.failure)
    print(
        f"\nKafka {version}: {len(runs)} runs, {len(files)} files, {len(flag_sets)} flag sets, "
        f"{stopped} runs where Kafka's tool died; {len(runs) - len(mismatches)} identical"
    )
    assert not mismatches, f"{len(mismatches)} of {len(runs)} runs differ:\n" + "\n".join(mismatches[:8])
    assert stopped, "no run exercised a failure of Kafka's tool"


@pytest.mark.parametrize("version", VERSIONS)
def test_flags_a_release_does_not_have_are_refused_as_kafka_refuses_them(kafka_bundle, version, tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"")
    unknown = [
        ("--share-group-state-decoder",),
        ("--no-such-flag",),
        ("--deep-iteration=yes",),
        ("--deep",),
    ]  # Kafka's parser does not abbreviate flags, and ignores "=yes" on a flag
    bad_values = [("--max-bytes", "many"), ("--max-bytes", "4294967296")]
    cases = unknown + bad_values
    runs = run_dump_log(version, [(*c, "--files", str(seg)) for c in cases])
    for case, run in zip(cases, runs, strict=True):
        try:
            parse_kafka_args(run.args, version)
            ours_refuses = False
        except ConfigError:
            ours_refuses = True
        if case in bad_values:
            # Kafka's tool dies when it first reads the value (after "Dumping <file>"); we refuse
            # the command line at once, with a one-line error
            assert run.failure and ours_refuses, (case, run.failure[:200])
        else:
            kafka_refuses = bool(run.failure) and run.stdout == ""
            assert ours_refuses == kafka_refuses, (case, run.failure[:200])
    assert [bool(r.failure) for r in runs[: len(unknown)]] == [version < "4", True, False, True]


def test_the_driver_prints_what_the_tool_prints_as_its_own_process(kafka_bundle):
    version = BUNDLE_VERSIONS[-1]   # the oldest release whose bundles are built
    files = _files(_bundles(kafka_bundle, version)[0])[:6]
    own, driver = check_driver(version, ["--print-data-log", "--files", ",".join(files)])
    assert own == driver and own.count("Dumping ") == 6


# ---------------------------------------------------------------------------------------------
# damaged files: Kafka's text up to the damage, and Kafka's tool dies where ours reports it

#: what our tool_failure detail names for each exception Kafka's tool dies of
KAFKA_EXCEPTIONS = {
    "CorruptRecordException": ("CorruptRecordException", "smaller than the minimum record overhead"),
    "InvalidRecordException": ("Incorrect declared batch size", "InvalidRecordException"),
    "IllegalArgumentException": ("Unknown compression type id", "IllegalArgumentException", "Invalid size"),
    "KafkaException": ("decompress", "KafkaException", "stream"),
    "NoSuchElementException": ("NoSuchElementException",),
    "CorruptIndexException": ("CorruptIndexException",),
}


def _damaged_copies(bundle: Path, into: Path) -> list[str]:
    """Damaged copies of a data partition's segment and its indexes, one directory per damage."""
    import struct

    from crc32c import crc32c

    seg = next(
        p
        for p in sorted((bundle / "nodes").glob("*/logs/**/*.log"))
        if not p.parent.name.startswith("__") and p.stat().st_size > 3000
    )
    data = seg.read_bytes()
    index = seg.with_suffix(".index").read_bytes()
    tindex = seg.with_suffix(".timeindex").read_bytes()
    starts, pos = [], 0
    while pos + 12 <= len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    mid = starts[len(starts) // 2]
    cases: dict[str, tuple[bytes, bytes, bytes]] = {}
    cases["truncated"] = (data[: mid + 30], index, tindex)
    d = bytearray(data)
    struct.pack_into(">i", d, mid + 8, 13)
    cases["length 13"] = (bytes(d), index, tindex)
    d = bytearray(data)
    d[mid + 17] ^= 1
    cases["crc flip"] = (bytes(d), index, tindex)
    d = bytearray(data)
    end = mid + 12 + struct.unpack_from(">i", data, mid + 8)[0]
    d[mid + 22] = (d[mid + 22] & ~7) | 6
    struct.pack_into(">I", d, mid + 17, crc32c(bytes(d[mid + 21 : end])))
    cases["codec 6"] = (bytes(d), index, tindex)
    cases["zero tail"] = (data + bytes(300), index + bytes(64), tindex + bytes(48))
    if len(index) >= 16:
        bad = bytearray(index)
        struct.pack_into(">i", bad, 12, len(data) + 100)  # the second entry points past the log
        cases["index past the log"] = (data, bytes(bad), tindex)
        bad = bytearray(index)
        struct.pack_into(">i", bad, 8, -5)  # a negative relative offset
        cases["index offset below base"] = (data, bytes(bad), tindex)
    if len(tindex) >= 24:
        bad = bytearray(tindex)
        struct.pack_into(">q", bad, 12, 1)  # timestamps out of order
        cases["time index out of order"] = (data, index, bytes(bad))
    cases["odd index length"] = (data, index + b"\x00\x00\x00", tindex + b"\x01")
    files = []
    for i, (label, (log_bytes, idx_bytes, tidx_bytes)) in enumerate(cases.items()):
        d = into / f"{i:02d}-{label.replace(' ', '_')}" / seg.parent.name
        d.mkdir(parents=True)
        for suffix, content in ((".log", log_bytes), (".index", idx_bytes), (".timeindex", tidx_bytes)):
            (d / seg.with_suffix(suffix).name).write_bytes(content)
            files.append(str(d / seg.with_suffix(suffix).name))
    return files


DAMAGE_FLAGS: tuple[tuple[str, ...], ...] = (
    (),
    ("--deep-iteration",),
    ("--print-data-log", "--skip-record-metadata"),
    ("--deep-iteration", "--max-bytes", "4000"),
    ("--index-sanity-check",),
    ("--verify-index-only",),
    ("--max-message-size", "100"),
)


@pytest.mark.parametrize("version", BUNDLE_VERSIONS)
def test_damaged_files_under_every_flag_are_kafkas_text_and_stop_where_kafka_dies(kafka_bundle, version, tmp_path):
    bundles = _bundles(kafka_bundle, version)
    files = _damaged_copies(bundles[0], tmp_path)
    runs = run_dump_log(version, [(*flags, "--files", f) for flags in DAMAGE_FLAGS for f in files])
    mismatches, died = [], 0
    for run in runs:
        opts, paths = parse_kafka_args(run.args, version)
        buf = io.BytesIO()
        logs: list = []
        write_kafka_dump(paths, out=buf, options=opts, kafka_version=version, problems=logs)
        ours = buf.getvalue().decode("utf-8", "surrogateescape")
        failures = [p.detail for log in logs for p in log.problems if p.kind == TOOL_FAILURE]
        where = f"[{_flags_of(run)}] {Path(run.args[-1]).parent.parent.name}/{Path(run.args[-1]).name}"
        if ours != run.stdout:
            mismatches.append(f"{where}: {_difference(run.stdout, ours)}")
        elif bool(failures) != bool(run.failure):
            mismatches.append(f"{where}: Kafka died: {run.failure[:160]!r}; our failures: {failures[:1]}")
        elif run.failure:
            died += 1
            exception = run.failure.split(":", 1)[0].rsplit(".", 1)[-1]
            names = KAFKA_EXCEPTIONS.get(exception, (exception,))
            if not any(n in failures[0] for n in names):
                mismatches.append(f"{where}: Kafka died of {run.failure[:160]!r}; ours says {failures[0]!r}")
    print(f"\nKafka {version}: {len(runs)} runs on {len(files)} damaged files, Kafka's tool died in {died}")
    assert not mismatches, f"{len(mismatches)} of {len(runs)} differ:\n" + "\n".join(mismatches[:10])
    assert died >= 5


@pytest.mark.parametrize("version", VERSIONS)
def test_missing_files_as_kafka_meets_them(kafka_bundle, version, tmp_path):
    """A file that is not there: Kafka prints what comes before opening it, then dies (a missing
    ``.txnindex`` is an empty one to it)."""
    present = tmp_path / "t-0"
    present.mkdir()
    (present / "00000000000000000000.log").write_bytes(b"")
    absent = tmp_path / "gone-0"
    names = ["00000000000000000000.log", "00000000000000000000.snapshot", "00000000000000000000.txnindex",
             "00000000000000000000.timeindex"]
    args = [("--files", str(absent / n)) for n in names] + [("--files", str(present / "00000000000000000000.index"))]
    ours = [_ours(a, version) for a in args]  # before Kafka's tool: it creates a missing index (empty) as it dies
    runs = run_dump_log(version, args)
    for (text, failed), run in zip(ours, runs, strict=True):
        assert text == run.stdout and failed == bool(run.failure), (run.args[-1], run.stdout, run.failure[:200])
    assert [bool(r.failure) for r in runs] == [True, True, False, True, True]


@pytest.mark.parametrize("version", VERSIONS)
def test_null_values_under_the_decoders_as_the_tool_prints_them(version, tmp_path):
    """Tombstones (null values) under ``--cluster-metadata-decoder`` and ``--remote-log-metadata-decoder``,
    against ``kafka-dump-log`` run as its own process, as a person runs it (in one long-lived JVM the
    remote decoder's NullPointerException loses its text once the JIT compiles the throwing site)."""
    from peer.kafka import fetch
    from workbench.formats.batch import Record, encode_batch

    seg = tmp_path / "t-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    data = bytearray()
    for b in range(3):
        records = [Record(offset=b * 4 + i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i,
                          value=None if i % 2 == 0 else b"\x01\x02", headers=[]) for i in range(4)]
        data += encode_batch(records, base_offset=b * 4)
    seg.write_bytes(bytes(data))
    for flag in ("--cluster-metadata-decoder", "--remote-log-metadata-decoder"):
        args = (flag, "--files", str(seg))
        kafka = fetch(version).run_tool("dump-log", list(args), timeout=180, check=False, heap="256m").stdout
        ours, _failed = _ours(args, version)
        assert kafka.count(" valueSize: -1 ") == 6
        assert ours == kafka, _difference(kafka, ours)
