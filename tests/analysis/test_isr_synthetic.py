"""The ISR replay on the synthetic ISR-churn log: Kafka's metadata shell and the reference replay as oracles.

The log is the benchmark's (``benchmarks/synthetic_metadata.py``, our encoder), small: every
partition's final state in our timeline must equal the image ``kafka-metadata-shell`` builds by
replaying the same file, and the compiled replay must give the reference replay's frames.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import workbench
from peer.synthetic import write_synthetic_metadata_log
from workbench.analysis import isr
from workbench.analysis.isr.states import _FOLLOWED
from workbench.analysis.isr.verdicts import _GROUPED_PHRASES

pytestmark = [pytest.mark.spark, pytest.mark.scale]


def synthetic_bundle(root: Path, records: int, **kwargs) -> Path:
    logs = root / "nodes" / "1" / "logs"
    segment = logs / "__cluster_metadata-0" / "00000000000000000000.log"
    write_synthetic_metadata_log(segment, records, seed=7, **kwargs)
    (logs / "meta.properties").write_text("#\nnode.id=1\nversion=1\ncluster.id=c\n")
    return segment


def final_states(spark, root: Path) -> dict:
    tables = workbench.load(workbench.open_bundle(root), spark)
    states = isr.partition_states(tables.metadata).where(F.col("end_reason") == "log_end")
    return {(r.topic_id, r.partition): {"name": r.topic, "leader": r.leader, "isr": list(r.isr),
                                        "replicas": list(r.replicas), "elr": list(r.elr or [])}
            for r in states.collect()}


@pytest.mark.kafka
def test_final_state_of_every_partition_equals_kafka_metadata_shell(spark, tmp_path):
    from peer.kafka import fetch
    from peer.metadata_shell import image_partitions

    segment = synthetic_bundle(tmp_path, 20_000)
    image = image_partitions(fetch(), segment)
    ours = final_states(spark, tmp_path)
    theirs = {key: {"name": v["name"], "leader": v["leader"], "isr": v["isr"], "replicas": v["replicas"],
                    "elr": v["elr"]} for key, v in image.partitions.items()}
    assert len(theirs) == 10_000
    assert ours == theirs
    # the leader epochs the replicas area replays (every change naming a leader starts one), as Kafka's merge
    from workbench.analysis.replicas.epochs import leader_history

    history = leader_history(workbench.load(workbench.open_bundle(tmp_path), spark).metadata)
    last = history.groupBy("topic_id", "partition").agg(F.max_by(F.struct("epoch", "leader"), "offset").alias("s"))
    assert max(v["leader_epoch"] for v in image.partitions.values()) > 1
    assert {(r.topic_id, r.partition): (r.s.epoch, r.s.leader) for r in last.collect()} == {
        key: (v["leader_epoch"], v["leader"]) for key, v in image.partitions.items()}


def test_compiled_replay_equals_reference_replay(spark, tmp_path):
    synthetic_bundle(tmp_path, 20_000, topics=40, partitions=5)
    metadata = workbench.load(workbench.open_bundle(tmp_path), spark).metadata
    compiled = isr.partition_states(metadata)
    reference = isr.partition_states(metadata, compiled=False)
    assert compiled.count() > 9_000
    assertDataFrameEqual(compiled, reference)
    assertDataFrameEqual(isr.under_min_isr_counts(compiled), isr.under_min_isr_counts(reference, compiled=False))
    assertDataFrameEqual(isr.partition_summary(compiled), isr.partition_summary(reference, compiled=False))
    # the replay's own output is summarised as it lies, without a shuffle; a derived frame is shuffled
    marked = _plan(isr.partition_summary(compiled)).count("hashpartitioning")
    assert _plan(isr.partition_summary(compiled.select("*"))).count("hashpartitioning") == marked + 1
    assertDataFrameEqual(isr.partition_summary(compiled.select("*")), isr.partition_summary(compiled))


def test_a_large_metadata_log_read_through_parquet_is_the_same_table(spark, tmp_path):
    """A log past ``materialize_bytes`` is decoded by Spark tasks straight into Parquet files
    (pyarrow, no JVM on the way in) and read back: the same rows, types and states as the cached read."""
    synthetic_bundle(tmp_path, 5_000, topics=20, partitions=5)
    cached = workbench.load(workbench.open_bundle(tmp_path), spark).metadata
    written = workbench.load(workbench.open_bundle(tmp_path), spark, materialize_bytes=0)
    assert written._build("metadata").scratch is not None
    assert written.metadata.schema == cached.schema
    assertDataFrameEqual(written.metadata, cached)
    assertDataFrameEqual(isr.partition_states(written.metadata), isr.partition_states(cached))


def test_a_replay_of_the_parquet_copy_equals_the_reference_replay(spark, tmp_path):
    """A metadata table kept as a Parquet copy is replayed by tasks reading its files themselves,
    the summary and the count's steps computed as the intervals are written: every frame equals
    the reference replay's (a Python loop per partition over the same table through Spark)."""
    synthetic_bundle(tmp_path, 20_000, topics=40, partitions=5)
    metadata = workbench.load(workbench.open_bundle(tmp_path), spark, materialize_bytes=0).metadata
    states = isr.partition_states(metadata)
    assert _FOLLOWED.get(states) is not None  # the copy's own replay ran
    reference = isr.partition_states(metadata, compiled=False)
    assert reference.count() > 9_000
    assertDataFrameEqual(states, reference)
    assertDataFrameEqual(isr.under_min_isr_counts(states), isr.under_min_isr_counts(reference, compiled=False))
    assertDataFrameEqual(isr.partition_summary(states), isr.partition_summary(reference, compiled=False))
    # a frame derived from the states is not the replay's: counted and summarised from its rows
    derived = states.select("*")
    assert _FOLLOWED.get(derived) is None
    assertDataFrameEqual(isr.partition_summary(derived), isr.partition_summary(reference, compiled=False))


def test_a_large_replay_is_kept_as_parquet_one_partition_per_row_group(spark, tmp_path, monkeypatch):
    """A replay past ``materialize_records`` runs at once and its intervals are written by the
    replay tasks as Parquet: the same frames, each partition's intervals inside one row group (so
    the summary still walks them where they lie), in more row groups than files."""
    import pyarrow.parquet as pq

    from workbench.analysis import replay

    monkeypatch.setattr(replay, "ROW_GROUP_ROWS", 500)
    synthetic_bundle(tmp_path, 20_000, topics=40, partitions=5)
    metadata = workbench.load(workbench.open_bundle(tmp_path), spark).metadata
    lazy = isr.partition_states(metadata)
    kept = isr.partition_states(metadata, materialize_records=0)
    files = kept.inputFiles()
    assert files and all(f.endswith(".parquet") for f in files)
    assertDataFrameEqual(kept, lazy)
    groups = 0
    for f in files:
        data = pq.ParquetFile(f.removeprefix("file:"))
        seen: set = set()
        for g in range(data.num_row_groups):
            keys = set(zip(*data.read_row_group(g, columns=["topic_id", "partition"]).to_pydict().values(),
                           strict=True))
            assert not keys & seen
            seen |= keys
        groups += data.num_row_groups
    assert groups > len(files)
    marked = _plan(isr.partition_summary(kept)).count("hashpartitioning")
    assert _plan(isr.partition_summary(kept.select("*"))).count("hashpartitioning") == marked + 1
    assertDataFrameEqual(isr.partition_summary(kept), isr.partition_summary(lazy.select("*")))


def _plan(df) -> str:
    """The physical plan of ``df`` as text (shuffles by key show as ``hashpartitioning``)."""
    return df._jdf.queryExecution().executedPlan().toString()


def test_view_frames_are_bounded_and_keep_what_the_views_rank_first(spark, tmp_path):
    """The view's frames on a log of 200 partitions: the least healthy partitions as the timeline's
    own pandas ranking picks them, and a thinned count series that keeps every bucket's peak and
    each broker's last level; without bounds, the frames are the whole analysis."""
    import pandas as pd

    from widgets.isr import _worst_partitions

    synthetic_bundle(tmp_path, 20_000, topics=40, partitions=5)
    states = isr.partition_states(workbench.load(workbench.open_bundle(tmp_path), spark).metadata)
    counts = isr.under_min_isr_counts(states)
    whole = isr.view_frames(states, partitions=10_000, points=100_000)
    assertDataFrameEqual(whole["states"], states)
    assertDataFrameEqual(whole["counts"], counts)
    assert whole["partitions"].collect()[0].asDict() == {"partitions": 200, "shown": 200}

    bounded = isr.view_frames(states, partitions=7, points=50)
    states_pd = states.toPandas()
    want, total = _worst_partitions(states_pd, 7, None, None)
    assert total == 200
    assertDataFrameEqual(bounded["states"], spark.createDataFrame(want, states.schema))
    assert bounded["partitions"].collect()[0].asDict() == {"partitions": 200, "shown": 7}

    full = counts.toPandas().sort_values(["broker", "time"])
    thin = bounded["counts"].toPandas()
    assert len(full) > 400 and set(full["broker"]) == set(thin["broker"])
    for broker, series in full.groupby("broker"):
        kept = thin[thin["broker"] == broker]
        assert len(kept) <= 2 * 51 + 1 < len(series)
        pairs = {(t, c) for t, c in series[["time", "count"]].itertuples(index=False)}
        assert {(t, c) for t, c in kept[["time", "count"]].itertuples(index=False)} <= pairs
        assert kept["count"].max() == series["count"].max()
        assert kept.iloc[-1].tolist() == series.iloc[-1].tolist()
        assert kept.iloc[0].tolist() == series.iloc[0].tolist()

    topic = states_pd["topic"].iloc[0]
    start = states_pd["start"].quantile(0.5)
    windowed = isr.view_frames(states, topics=topic, start=start, partitions=3)["states"].toPandas()
    in_window = states_pd[(states_pd["topic"] == topic) & (states_pd["end"] > pd.Timestamp(start))]
    want_window, _ = _worst_partitions(in_window, 3, pd.Timestamp(start), None)
    assert sorted(map(tuple, windowed[["topic", "partition", "start"]].to_numpy().tolist())) == \
        sorted(map(tuple, want_window[["topic", "partition", "start"]].to_numpy().tolist()))


def _grouped_oracle(per, min_subjects: int, phrases: dict) -> list[tuple]:
    """grouped_findings recomputed in pandas from the per-partition findings: runs of overlapping
    findings per kind, a sweep for the most open at once, the longest finding quoted."""
    import pandas as pd

    rows = []
    for _, part in per.groupby(["kind", "severity"], sort=False):
        part = part.assign(fin=part["end"].fillna(part["start"])).sort_values(["start", "fin", "subject"])
        runs, reach = [], None
        for row in part.itertuples(index=False):
            if not runs or row.start > reach:
                runs.append([])
            runs[-1].append(row)
            reach = row.fin if reach is None or len(runs[-1]) == 1 else max(reach, row.fin)
        for run in runs:
            subjects = {r.subject for r in run}
            if len(subjects) < min_subjects:
                rows += [tuple(r[:9]) for r in run]
                continue
            edges = sorted([(r.start, 1) for r in run] + [(max(r.fin, r.start + pd.Timedelta(microseconds=1)), -1)
                                                         for r in run])
            level = peak = 0
            for _, d in edges:
                level += d
                peak = max(peak, level)
            first, last = min(r.start for r in run), max(r.fin for r in run)
            longest = max(run, key=lambda r: (r.fin - r.start, r.subject)).summary
            kind = run[0].kind
            rows.append(("isr", kind, run[0].severity, "partition", f"{len(subjects):,} partitions", first, last,
                         f"{len(subjects):,} partitions {phrases[kind]} between {first:%Y-%m-%d %H:%M:%S} and "
                         f"{last:%Y-%m-%d %H:%M:%S} UTC, up to {peak:,} at once ({len(run):,} findings); the longest: "
                         f"{longest}",
                         {"subjects": float(len(subjects)), "findings": float(len(run)), "at_once": float(peak),
                          "seconds": (last - first).total_seconds()}))
    return rows


def test_area_findings_group_partitions_in_trouble_at_once(spark, tmp_path):
    """ISR churn on all 200 partitions: the area's findings are a few grouped ones (what the
    overview plots), equal to a pandas regrouping of the per-partition findings, which stay
    available; below the threshold every partition keeps its own findings."""
    import pandas as pd

    synthetic_bundle(tmp_path, 20_000, topics=40, partitions=5)
    states = isr.partition_states(workbench.load(workbench.open_bundle(tmp_path), spark).metadata)
    per = isr.findings(states)
    per_pd = per.toPandas()
    assert len(per_pd) > 2_000 and per_pd["subject"].nunique() == 200
    got = isr.area_findings(states)
    want = _grouped_oracle(per_pd, isr.GROUP_PARTITIONS, _GROUPED_PHRASES)
    assert len(want) < 10
    assertDataFrameEqual(got, spark.createDataFrame(pd.DataFrame(want, columns=per_pd.columns), per.schema))
    assert set(got.toPandas()["subject"]) >= {"200 partitions"}
    assertDataFrameEqual(isr.area_findings(states, group_partitions=201), per)
