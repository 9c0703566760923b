"""Real bundles with one bad value each go through what the report computes (a sample of the corpus).

The corpus (:mod:`peer.corpus`; ``benchmarks/bad_value_corpus.py`` from the command line) changes
one value of one file of a real scenario bundle captured from Apache Kafka, for every reader
(metadata log records and batches, data segment batches, ``__consumer_offsets`` commits, JmxTool
CSV, Prometheus text, properties files, ``manifest.json``, ``quorum-state``, snapshots, tool
captures), binary values written with a valid CRC. Here a fixed sample of it, holding every reader
and every kind of bad value, runs in this session's Spark: each variant must load without an error,
name the file, its position and the raw value in a row of the report's problems appendix
(``inv.tables.problems`` as the appendix orders and cuts it, read before any table was built, so a
file no report section reads, such as a ``kafka-topics --describe`` capture, is in it too), and
leave every row of every table it reaches identical to the clean bundle's outside the touched row.

Findings too (each affected area's, subject by subject, equal to the clean bundle's outside the
subjects the value touches): ``make test`` takes the first variant of each reader, table, area and
compiled path (:func:`peer.corpus.covering`, from the registries: a new one is covered without an
edit), and the three bundles of issue 43 (a PartitionChangeRecord batch stamped in the year 3000,
at 2^62 ms, at -5 ms), one of them also through the real ``workbench report``; ``make test-full``
the whole corpus. The sample, those variants and the three bundles go through one run of the corpus,
which runs each scenario's clean bundle once for all of them. A module with a compiled kernel that
no compiled path names (:func:`workbench.kernels.compiled_paths`), or a compiled path no variant
reaches, fails here.

Variants of one scenario then go through the real report pipeline (the composed notebook, its HTML,
the summary JSON, the exit code) in two kept kernels taking reports from one queue, each one Python
process and one Spark session (``workbench.report.ReportKernel``): each report exits 0 or 1, its
problems appendix shows the raw value, and its findings about other subjects and the key figures
of the areas the value cannot reach equal the clean bundle's report. ``make test-full`` sends the
scenario's sample of every reader and kind (``make test`` sends issue 43's restamped batch through
the CLI report, and checks kept kernels on a two-cell notebook); ``--report`` runs the whole corpus
that way.
"""

from __future__ import annotations

import pytest

from peer.corpus import BUNDLES, VERSION, corpus, covering, run_cli, run_corpus, sample, targets
from workbench.errors import ConfigError

pytestmark = [pytest.mark.spark, pytest.mark.kafka]


@pytest.fixture(scope="module")
def variants(kafka_bundle):
    return corpus(build=kafka_bundle)


def test_the_corpus_holds_every_reader_and_kind(variants):
    assert len(variants) >= 200
    readers = {v.reader for v in variants}
    assert {"metadata", "batches", "offsets", "metrics", "configs", "inventory", "quorum", "snapshots",
            "tool_topics", "tool_quorum_status", "tool_quorum_replication", "tool_get_offsets",
            "tool_group_offsets"} <= readers
    assert {"min", "max", "overflow", "negative", "nan", "inf", "garbage"} <= {v.kind for v in variants}
    chosen = sample(variants)
    assert len(chosen) >= 20
    assert {v.reader for v in chosen} == readers
    assert {v.kind for v in chosen} == {v.kind for v in variants}


@pytest.fixture(scope="module")
def checked(spark, variants, kafka_bundle, tmp_path_factory):
    """One run of the sample (tables and problems) with the covering variants and the three restamped
    PartitionChangeRecord batches (findings too), in corpus order: each scenario's clean bundle is run
    once for all of them (:func:`peer.corpus.run_corpus`)."""
    chosen = {v.id for v in sample(variants)}
    with_findings = {v.id for v in covering(variants, build=kafka_bundle)} | {v.id for v in _restamped(variants)}
    run = [v for v in variants if v.id in chosen | with_findings]
    return run_corpus(spark, run, work=tmp_path_factory.mktemp("corpus"), findings=with_findings)


def _restamped(variants):
    return [v for v in variants if v.field == "PartitionChangeRecord.batch_time"]


def _passed(result, chosen) -> None:
    """Every variant of ``chosen`` ran in ``result`` and passed."""
    ids = {v.id for v in chosen}
    assert ids <= set(result["ids"])
    assert {i: reasons for i, reasons in result["failures"].items() if i in ids} == {}


@pytest.mark.timeout(3600)   # the module's corpus run (:func:`checked`) starts here
def test_each_bad_value_is_a_problem_and_nothing_else_changes(variants, checked):
    chosen = sample(variants)
    assert len(chosen) >= 20
    _passed(checked, chosen)


def test_every_kernel_module_is_on_a_compiled_path_that_a_bad_value_reaches(variants, kafka_bundle):
    from pathlib import Path

    from workbench.kernels import compiled_paths, kernel_modules

    declared = {m for p in compiled_paths() for m in p.modules}
    assert kernel_modules() - declared == set(), "a module with a numba kernel is on no compiled path"
    bundles = {s: Path(kafka_bundle(BUNDLES[s], VERSION)) for s in BUNDLES}
    reached = set().union(*(targets(v, bundles[v.scenario]) for v in variants))
    missed = {p.name for p in compiled_paths() if not p.unreached and f"path:{p.name}" not in reached}
    assert missed == set(), "compiled paths no bad value of the corpus reaches"


@pytest.mark.timeout(3600)
def test_a_bad_value_of_each_reader_table_area_and_compiled_path_leaves_other_findings_alone(
        variants, kafka_bundle, checked):
    chosen = covering(variants, build=kafka_bundle)
    assert {v.reader for v in chosen} == {v.reader for v in variants}
    _passed(checked, chosen)


@pytest.mark.timeout(3600)   # a real report (papermill, HTML) beside the findings
def test_a_partition_change_batch_stamped_out_of_range_gives_findings_and_a_report(
        variants, kafka_bundle, checked, tmp_path):
    """Issue 43: the ``isr`` log with one PartitionChangeRecord batch written again by the encoder,
    stamped in the year 3000, at 2^62 ms and at -5 ms (valid CRC): every area's findings equal the
    clean bundle's outside the batch's partitions, and the real report exits 0 or 1 with the value in
    its problems appendix."""
    restamped = _restamped(variants)
    assert sorted(v.raw for v in restamped) == sorted(["32503680000000", str(2**62), "-5"])
    _passed(checked, restamped)
    (report,) = run_cli([v for v in restamped if v.kind == "year3000"], tmp_path, build=kafka_bundle)
    assert report["ok"], report
    assert report["exit"] in (0, 1)


@pytest.mark.full   # make test runs the variants of test_a_bad_value_of_each_reader_...
@pytest.mark.timeout(6 * 3600)
def test_every_bad_value_leaves_other_findings_alone(spark, variants, tmp_path):
    result = run_corpus(spark, variants, work=tmp_path, findings=True)
    assert result["failures"] == {}
    assert result["passed"] == result["variants"] == len(variants)


def _notebook(path):
    """A report notebook of two cells: the parameters, and a cell that fails, kills its kernel or reports
    what the kernel kept from the previous run."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('bundle: str = ""\nreport: bool = False\nfail: str = ""',
                                  metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "import os\n"
            "print(f'pid={os.getpid()} kept={globals().get(\"left_over\")} count={get_ipython().execution_count}')\n"
            "left_over = bundle\n"
            "if fail == 'error':\n    raise ValueError('a cell failed on ' + bundle)\n"
            "if fail == 'die':\n    os._exit(3)\n"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return str(path)


def test_one_kernel_runs_report_after_report_and_a_failed_one_gets_an_error_and_its_successor_a_fresh_kernel(
        tmp_path):
    import re

    from workbench.report import ReportError, ReportKernel, run_report

    notebook = _notebook(tmp_path / "two_cells.ipynb")
    (tmp_path / "bundle").mkdir()
    out = tmp_path / "report.html"

    def printed(result):
        return re.search(r"pid=(\d+) kept=(\S+) count=(\d+)", result.path.read_text(encoding="utf-8")).groups()

    alone = printed(run_report(tmp_path / "bundle", out, notebook=notebook))
    runs = []
    with ReportKernel() as kernel:
        for fail in ("", "", "error", "", "die", ""):
            try:
                runs.append((fail, printed(kernel.run(tmp_path / "bundle", out, notebook=notebook,
                                                      parameters={"fail": fail})), kernel.starts))
            except ReportError as exc:
                runs.append((fail, str(exc), kernel.starts))
            assert kernel.pid is None if fail else kernel.pid == int(runs[-1][1][0])
        with pytest.raises(ConfigError, match="has no parameter 'nope'"):
            kernel.run(tmp_path / "bundle", out, notebook=notebook, parameters={"nope": 1})
    assert kernel.pid is None
    (_, first, _), (_, second, _), (_, error, _), (_, third, _), (_, died, _), (_, fourth, _) = runs
    assert first[0] == second[0] != third[0] != fourth[0]  # one kernel until a report fails
    assert [starts for *_, starts in runs] == [1, 1, 1, 2, 2, 3]
    # nothing of the previous report is left in the kernel, and cells count as in a kernel of their own
    assert {run[1:] for run in (first, second, third, fourth)} == {alone[1:]} == {("None", alone[2])}
    assert "failed in cell" in error and "ValueError: a cell failed on" in error and "fresh one" in error
    assert "DeadKernelError" in died and "fresh one" in died


#: The scenario whose variants go through the HTML pipeline here: the ``isr`` bundle holds the most
#: readers (metadata, segments, JMX and Prometheus metrics, properties, quorum state, tool captures),
#: and one scenario needs one clean report. A report costs one to three minutes on a loaded 2-core
#: machine, which CI's 90 minutes cannot hold 23 times (20 variants of three scenarios and their
#: three clean reports ran 33 minutes there, and the 10 of this scenario 20 minutes beside the other
#: tests); the sample of every scenario, reader and kind is
#: ``python benchmarks/bad_value_corpus.py --report --sample``, the whole corpus ``--report``.
REPORT_SCENARIO = "isr"
#: Kept kernels taking the sample's reports side by side (one kernel leaves a quarter of 2 cores idle).
REPORT_KERNELS = 2


def _report_sample(variants, scenario=REPORT_SCENARIO):
    """Variants of ``scenario`` for the HTML pipeline that hold each of its readers and every kind of
    bad value it has: one per reader, each reader's first variant of a kind not held yet where it
    has one, then the first of any kind still missing."""
    pool = [v for v in variants if v.scenario == scenario]
    kinds = {v.kind for v in pool}
    chosen: dict[str, object] = {}
    held: set[str] = set()
    for reader in dict.fromkeys(v.reader for v in pool):
        mine = [v for v in pool if v.reader == reader]
        pick = next((v for v in mine if v.kind not in held), mine[0])
        chosen[pick.id] = pick
        held.add(pick.kind)
    missing = kinds - held
    for v in pool:   # kinds no reader's pick brought in
        if v.kind in missing:
            chosen.setdefault(v.id, v)
            missing.discard(v.kind)
    return [v for v in pool if v.id in chosen]


@pytest.mark.full   # make test sends issue 43's restamped batch through the CLI report
@pytest.mark.timeout(3600)
def test_each_bad_value_goes_through_the_html_report_in_kept_kernels(variants, kafka_bundle, tmp_path):
    """Variants of one scenario that hold each of its readers and every kind of bad value through the
    real pipeline: the composed notebook, the HTML, the summary, the exit code; every scenario's the
    same way is ``python benchmarks/bad_value_corpus.py --report``."""
    chosen = _report_sample(variants)
    _through_the_report(chosen, kafka_bundle, tmp_path)
    mine = [v for v in variants if v.scenario == REPORT_SCENARIO]
    assert {v.reader for v in chosen} == {v.reader for v in mine} and len({v.reader for v in chosen}) >= 6
    assert {v.kind for v in chosen} == {v.kind for v in mine} == {v.kind for v in variants}


def _through_the_report(chosen: list, kafka_bundle, tmp_path) -> None:
    """``chosen`` and the clean bundle through the report in :data:`REPORT_KERNELS` kept kernels: each
    report exits 0 or 1 with its bad value in the problems appendix, the rest as the clean report's."""
    import sys
    import time

    from peer.corpus import run_reports

    def progress(r):
        print(f"{'ok' if r['ok'] else 'FAIL'} {r['seconds']}s {r['rss_mb']} MiB {r['id']} {r['reasons']}",
              file=sys.stderr, flush=True)

    t0 = time.monotonic()
    result = run_reports(chosen, tmp_path, build=kafka_bundle, progress=progress, kernels=REPORT_KERNELS)
    print(f"{len(chosen)} variants through the report in {REPORT_KERNELS} kept kernels: {time.monotonic() - t0:.0f} s, "
          f"{result['seconds_per_report']} s a report, kernel memory {result['rss_mb']} MiB, "
          f"slowest cells {result['slowest_cells'][:3]}")
    assert result["failures"] == {}
    assert result["passed"] == result["variants"] == len(chosen)
    assert set(result["exits"]) <= {"0", "1"}
    assert result["kernel_starts"] == result["kernels"] == REPORT_KERNELS   # each kernel started once, kept
