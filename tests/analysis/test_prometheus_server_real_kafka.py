"""The ``metrics`` table's whole-cluster Prometheus export judged by each broker's own exporter.

The ``isr`` scenario runs a real Prometheus server (``peer/prometheus_server.py``) scraping every
node's JMX exporter each second, and keeps its ``query_range`` answer with the operator-style
``metrics/instances.json``; the scenario also scrapes each exporter itself every 5 s into
``metrics/<node>-<t_ms>.prom``. Every row of the server's export must carry the node its
``instance`` names, and hold what that same node's exporter showed around it.
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import workbench
from peer.scenario import built_on

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

EXPORT = "metrics/prometheus-query_range.json"
GAUGES = ("kafka_server_replicamanager_underminisrpartitioncount",
          "kafka_server_replicamanager_underreplicatedpartitions")
#: The server's sample at step ``t`` is the value it scraped at most one scrape interval (1 s) and
#: a scrape's latency before ``t``: a node's own scrape "just before" it is one at least this early.
SERVER_LAG_MS = 2000
#: A node's own scrapes 5 s apart; two further apart than this have a gap (node down) between them.
OWN_GAP_MS = 12000


@pytest.fixture(scope="module", params=built_on("isr"))
def bundle(request, spark, kafka_bundle):
    path = Path(kafka_bundle("isr", request.param))
    tables = workbench.load(workbench.open_bundle(path), spark)
    return path, json.loads((path / "manifest.json").read_text("utf-8")), tables


def ms(ts) -> int:
    return int(ts.timestamp() * 1000)


def test_every_row_takes_the_node_its_instance_names(bundle):
    path, manifest, tables = bundle
    scraped = {m["node"] for m in manifest["metrics"] if m.get("format") == "prometheus"}
    assert scraped == {n["id"] for n in manifest["nodes"]}, "every node ran an exporter the scenario scraped"
    mapping = json.loads((path / "metrics" / "instances.json").read_text("utf-8"))
    rows = (tables.metrics.where(tables.metrics.path == str(path / EXPORT))
            .selectExpr("labels['instance'] AS instance", "node_id", "format").distinct().toPandas())
    want = pd.DataFrame({"instance": list(mapping), "node_id": [int(n) for n in mapping.values()],
                         "format": "prometheus_json"})
    assert_frame_equal(rows.sort_values("instance").reset_index(drop=True),
                       want.sort_values("instance").reset_index(drop=True), check_dtype=False)
    assert set(rows.node_id) == scraped
    problems = tables.problems.toPandas()
    assert not (problems.kind == "unmapped_instance").any(), problems
    assert tables.problems_of("metrics").count() == 0


def test_server_samples_equal_each_brokers_own_scrapes(bundle):
    """Wherever a broker's own scrapes just before and just after a server sample agree, the
    server's sample of that broker holds the same value."""
    path, manifest, tables = bundle
    brokers = sorted(n["id"] for n in manifest["nodes"] if "broker" in n["roles"])
    frame = (tables.metrics.where(tables.metrics.name.isin(*GAUGES))
             .select("node_id", "path", "format", "name", "timestamp", "value").toPandas())
    server = frame[frame.path == str(path / EXPORT)]
    own = frame[frame.format == "prometheus_text"]
    assert sorted(server.node_id.unique()) == brokers == sorted(own.node_id.unique())
    expected = []
    for (node, name), samples in server.groupby(["node_id", "name"]):
        mine = own[(own.node_id == node) & (own.name == name)].sort_values("timestamp")
        times, values = [ms(t) for t in mine.timestamp], list(mine.value)
        for t in samples.timestamp:
            before = bisect.bisect_right(times, ms(t) - SERVER_LAG_MS) - 1
            after = bisect.bisect_left(times, ms(t))
            if before < 0 or after >= len(times) or times[after] - times[before] > OWN_GAP_MS:
                continue
            if values[before] == values[after]:
                expected.append((node, name, t, values[before]))
    want = pd.DataFrame(expected, columns=["node_id", "name", "timestamp", "value"])
    got = server.merge(want[["node_id", "name", "timestamp"]], on=["node_id", "name", "timestamp"])
    keys = ["node_id", "name", "timestamp"]
    assert_frame_equal(got[[*keys, "value"]].sort_values(keys).reset_index(drop=True),
                       want.sort_values(keys).reset_index(drop=True), check_dtype=False)
    # the comparison covers every broker and gauge, and the incident, not only quiet zeros
    assert {(n, g) for n, g, *_ in expected} == {(n, g) for n in brokers for g in GAUGES}
    assert all(want[want.name == g].value.gt(0).any() for g in GAUGES), want.groupby("name").value.max()
    assert len(want) >= 100, len(want)
