"""Tool-output tables on an incident bundle without a manifest: view from the header, time from the name."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.testing import assertDataFrameEqual

import workbench
from workbench.spark.tool_output import CAPTURES_SCHEMA, COMMON, VIEW_COLUMNS

pytestmark = pytest.mark.spark

DESCRIBE = ("Topic: orders\tTopicId: x\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: min.insync.replicas=2\n"
            "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\n")
GROUPS = ("\nGROUP   TOPIC   PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG   CONSUMER-ID  HOST   CLIENT-ID\n"
          "slow    orders  0          198             525             327   -            -      -\n")


def make(root, groups: str = GROUPS):
    tools = root / "tools"
    tools.mkdir(parents=True)
    (tools / "describe.txt").write_text(DESCRIBE)
    (tools / "1795408283358-groups.txt").write_text(groups)
    (tools / "created.txt").write_text("Created topic orders.\n")
    return root


def test_views_by_header_and_times_by_name(spark, tmp_path):
    root = make(tmp_path)
    tables = workbench.load(workbench.open_bundle(root), spark)
    when = datetime.fromtimestamp(1795408283.358, UTC)
    assertDataFrameEqual(tables.tool_group_offsets, spark.createDataFrame(
        [(str(root / "tools/1795408283358-groups.txt"), when, "file_name", None,
          "slow", "orders", 0, None, 198, 525, 327, None, None, None)],
        f"{COMMON}, {VIEW_COLUMNS['group_offsets']}"))
    assertDataFrameEqual(tables.tool_topics, spark.createDataFrame(
        [(str(root / "tools/describe.txt"), None, None, None, "orders", 0, 1, [1, 2], [1], None, None, "x", 1, 2,
          {"min.insync.replicas": "2"}, None)],
        f"{COMMON}, {VIEW_COLUMNS['topics_describe']}"))
    assertDataFrameEqual(tables.tool_captures, spark.createDataFrame(
        [(str(root / "tools/1795408283358-groups.txt"), None, None, "group_offsets", when, "file_name", None,
          len(GROUPS.encode())),
         (str(root / "tools/created.txt"), None, None, None, None, None, None, 22),
         (str(root / "tools/describe.txt"), None, None, "topics_describe", None, None, None, len(DESCRIBE.encode()))],
        CAPTURES_SCHEMA))
    assert tables.problems.count() == 0


def test_strict_mode_raises(spark, tmp_path):
    root = make(tmp_path, GROUPS + "slow    orders  1          19\n")
    assert workbench.load(workbench.open_bundle(root), spark).tool_group_offsets.count() == 1
    tables = workbench.load(workbench.open_bundle(root), spark, strict=True)
    with pytest.raises(Exception, match="unparsed_line"):
        tables.tool_group_offsets.collect()
