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
