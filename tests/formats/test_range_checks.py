"""Values out of range where they enter a table: null plus an ``out_of_range`` problem, never a crash."""

from __future__ import annotations

import math

import pytest

from workbench.formats.jmx import MetricSample, read_jmx_csv
from workbench.formats.problems import TIMESTAMP_RANGE_MS, ProblemLog, timestamp_in_range

MBEAN = "kafka.server:type=ReplicaManager,name=UnderMinIsrPartitionCount"


def test_the_timestamp_range_is_what_pandas_holds() -> None:
    import pandas as pd

    low, high = TIMESTAMP_RANGE_MS
    assert pd.Timestamp(high, unit="ms").as_unit("ns") <= pd.Timestamp.max  # toPandas' datetime64[ns] holds it
    with pytest.raises(pd.errors.OutOfBoundsDatetime):
        pd.Timestamp(high + 1, unit="ms").as_unit("ns")
    assert pd.Timestamp(low, unit="ms") == pd.Timestamp("1970-01-01")
    assert [timestamp_in_range(v) for v in (low, high, low - 1, high + 1, 2**62, math.inf, math.nan, None)] == [
        True, True, False, False, False, False, False, False]


def test_jmx_csv_times_and_values_out_of_range() -> None:
    text = (f'"time","{MBEAN}:Value"\n'
            "1795290596161,1\n"
            "inf,2\n"
            "1e25,3\n"
            "-5,4\n"
            "1795290597161,1e300\n"
            "1795290598161,-inf\n"
            "1795290599161,NaN\n"
            "1795290600161,9.2e18\n"
            "1795290601161,5\n")
    log = ProblemLog("m.csv")
    got = list(read_jmx_csv(text, "m.csv", log))
    assert got[:7] == [
        MetricSample(1795290596161, MBEAN, "Value", 1.0),
        MetricSample(None, MBEAN, "Value", 2.0),
        MetricSample(None, MBEAN, "Value", 3.0),
        MetricSample(None, MBEAN, "Value", 4.0),
        MetricSample(1795290597161, MBEAN, "Value", None),
        MetricSample(1795290598161, MBEAN, "Value", None),
    ] + got[6:7]
    assert got[6].timestamp_ms == 1795290599161 and math.isnan(got[6].value)  # JmxTool's "no value yet" stays NaN
    assert got[7:] == [MetricSample(1795290600161, MBEAN, "Value", 9.2e18),
                       MetricSample(1795290601161, MBEAN, "Value", 5.0)]
    assert [(p.position, p.kind) for p in log.problems] == [
        (3, "out_of_range"), (4, "out_of_range"), (5, "out_of_range"), (6, "out_of_range"), (7, "out_of_range")]
    assert "time 'inf' is outside 1970-01-01..2262-04-11" in log.problems[0].detail
    assert f"{MBEAN}:Value value '1e300'" in log.problems[3].detail


def test_jmx_csv_text_in_a_column_of_numbers_is_a_problem_and_text_columns_are_not() -> None:
    event = "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec"
    text = (f'"time","{MBEAN}:Value","{event}:EventType"\n'
            "1795290596161,1,expands\n"
            "1795290597161,0x1f,expands\n"
            "1795290598161,3,expands\n")
    log = ProblemLog("m.csv")
    got = list(read_jmx_csv(text, "m.csv", log))
    assert got == [MetricSample(1795290596161, MBEAN, "Value", 1.0), MetricSample(1795290597161, MBEAN, "Value", None),
                   MetricSample(1795290598161, MBEAN, "Value", 3.0)]
    assert [g.line for g in got] == [2, 3, 4]
    assert [(p.position, p.kind) for p in log.problems] == [(3, "bad_value")]
    assert "'0x1f' is not a number" in log.problems[0].detail


def test_prometheus_values_and_timestamps_out_of_range() -> None:
    from workbench.formats.prometheus import read_prometheus_text

    text = ("a 1\n"
            "b 1e400\n"
            "c 2 -5\n"
            f"d 3 {2**63 - 1}\n"
            "e NaN\n"
            "f 4 1e3\n")
    log = ProblemLog("x.prom")
    got = [(s.name, s.timestamp_ms, s.value, s.line) for s in read_prometheus_text(text, "x.prom", log, default_ms=7)]
    assert got[:4] == [("a", 7, 1.0, 1), ("b", 7, None, 2), ("c", None, 2.0, 3), ("d", None, 3.0, 4)]
    assert got[4][0] == "e" and math.isnan(got[4][2])  # NaN is a Prometheus value, kept
    assert got[5] == ("f", None, 4.0, 6)  # a timestamp of the text format is an integer of milliseconds
    assert [(p.position, p.kind) for p in log.problems] == [(2, "out_of_range"), (3, "out_of_range"),
                                                            (4, "out_of_range"), (6, "bad_value")]
    assert "value 1e400" in log.problems[0].detail and f"timestamp {2**63 - 1} ms" in log.problems[2].detail


def test_integer_settings_that_kafka_would_refuse_are_null_with_their_line() -> None:
    from workbench.spark.configs import checked_setting

    text = "process.roles=broker\nnode.id=1099511627776\nmin.insync.replicas=abc\nlog.retention.ms=-1\n"
    log = ProblemLog("server.properties")
    assert [checked_setting(n, v, text, log) for n, v in (("process.roles", "broker"), ("node.id", "1099511627776"),
                                                          ("min.insync.replicas", "abc"),
                                                          ("log.retention.ms", "-1"))] == [
        "broker", None, None, "-1"]
    assert [(p.position, p.kind) for p in log.problems] == [(2, "bad_value"), (3, "bad_value")]
    assert "node.id=1099511627776 is not an integer in 0..2147483647" in log.problems[0].detail


@pytest.mark.parametrize("written", ["1099511627776", "abc", "-5"])
def test_a_meta_properties_node_id_that_is_no_node_id_is_a_problem_and_the_directory_names_the_node(
        tmp_path, written) -> None:
    from workbench.bundle import open_bundle

    logs = tmp_path / "nodes" / "6" / "logs"
    (logs / "__cluster_metadata-0").mkdir(parents=True)
    (logs / "meta.properties").write_text(f"node.id={written}\nversion=1\ncluster.id=c1\n")
    (logs / "__cluster_metadata-0" / "00000000000000000000.log").write_bytes(b"")
    bundle = open_bundle(tmp_path)
    assert {a.node_id for a in bundle.artifacts} == {6}
    assert bundle.node_clusters() == {6: "c1"}
    assert [(p.path, p.position) for p in bundle.problems] == [(str(logs / "meta.properties"), 0)]
    assert written in bundle.problems[0].detail
