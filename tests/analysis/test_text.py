"""The shared findings text (bytes, durations, moments), on inline frames: every unit boundary and
a null, which stays null (never the text "null")."""

from __future__ import annotations

import datetime as dt

import pytest

from workbench.analysis.text import bytes_text, duration_text, time_text

pytestmark = pytest.mark.spark


def _texts(spark, values, kind, text):
    frame = spark.createDataFrame([(v,) for v in values], f"v {kind}")
    return [r[0] for r in frame.select(text("v")).collect()]


def test_bytes_in_binary_units(spark):
    values = [0, 512, 1023, 1024, 99_737, 1024 ** 2 - 1, 5 * 1024 ** 2, int(2.1 * 1024 ** 3), 3 * 1024 ** 4, None]
    assert _texts(spark, values, "long", bytes_text) == [
        "0 B", "512 B", "1023 B", "1.0 KiB", "97.4 KiB", "1024.0 KiB", "5.0 MiB", "2.1 GiB", "3.0 TiB", None]


def test_durations_from_milliseconds(spark):
    values = [0.0, 850.0, 999.4, 1000.0, 42_100.0, 59_999.0, 60_000.0, 2_460_000.0, 3_600_000.0, 9_000_000.0, None]
    assert _texts(spark, values, "double", duration_text) == [
        "0 ms", "850 ms", "999 ms", "1.0 s", "42.1 s", "60.0 s", "1 min", "41 min", "1.0 h", "2.5 h", None]


def test_moments_to_the_second_in_utc(spark):
    values = [dt.datetime(2026, 3, 1, 3, 12, 5, 987_000), None]
    assert _texts(spark, values, "timestamp", time_text) == ["2026-03-01 03:12:05 UTC", None]
