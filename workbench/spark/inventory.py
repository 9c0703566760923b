"""``inventory``: one row per file of the bundle, as discovery classified it (no file is read).

Examples
--------
>>> tables.inventory.groupBy("kind").count().show()   # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.spark.registry import register_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from workbench.spark.registry import BuildContext

INVENTORY_SCHEMA = (
    "path string, node_id int, kind string, topic string, partition int, base_offset long, "
    "bytes long, dir_state string, cluster_id string"
)


def build_inventory(ctx: BuildContext) -> DataFrame:
    """The bundle's artifacts as rows of :data:`INVENTORY_SCHEMA`."""
    rows = [tuple(r.values()) for r in ctx.bundle.inventory_rows()]
    return ctx.spark.createDataFrame(rows, INVENTORY_SCHEMA)


TABLE = register_table(
    "inventory",
    row="file of the bundle (path, node, kind, topic, partition, base offset, size, cluster)",
    schema=INVENTORY_SCHEMA,
    build=build_inventory,
)
