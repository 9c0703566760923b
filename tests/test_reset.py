"""``workbench.reset()``: what a notebook user or a kept report kernel calls to open bundles afresh."""

from __future__ import annotations

import pytest

import workbench
from tests.spark.test_metadata_source import write_node
from workbench.investigation import open_investigation

pytestmark = pytest.mark.spark


def test_reset_forgets_every_investigation_and_what_its_tables_keep(spark, tmp_path):
    write_node(tmp_path, 1)
    inv = open_investigation(tmp_path, spark=spark)
    assert open_investigation(tmp_path, spark=spark) is inv   # sections of one report share it
    rows = sorted(map(repr, inv.tables.metadata.collect()))
    kept = inv.tables.derive("test.kept", lambda: inv.tables.metadata.groupBy("record_type").count())
    assert inv.tables.built == ("metadata",) and kept.count() > 0

    workbench.reset()

    assert inv.tables.built == () and not inv.tables._derived   # its reads and derived results dropped
    again = open_investigation(tmp_path, spark=spark)
    assert again is not inv and again.tables is not inv.tables
    assert sorted(map(repr, again.tables.metadata.collect())) == rows   # read afresh, the same rows
