"""`workbench report` on the bundles people actually have, as a user runs it (``make test-full``).

ZooKeeper-era clusters of three releases (``zk_isr``: broker text logs, no metadata log), a cluster
stopped and restarted whole twice (``restarts``), KRaft logs of 3.1 and 3.3 (``idle``) and two
clusters with the same node ids in one bundle: each report ends with exit 0 or 1 (findings, never
a failure), no area and no view failed, and the areas whose inputs the bundle holds are reported.
The analyses themselves are judged against Kafka in ``tests/analysis``; this is the end-to-end run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from peer.scenario import ZK_SETS

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.full]

#: (scenario, release, areas that must have data): the ZooKeeper era's ISR timeline comes from the
#: brokers' text logs and its lag from ``__consumer_offsets``; every other case has a metadata log.
CASES = ([("zk_isr", version, {"isr", "consumer_lag", "replicas"}) for version in ZK_SETS]
         + [("restarts", "4.3.1", {"quorum", "isr"}), ("idle", "3.1.2", {"quorum"}), ("idle", "3.3.2", {"quorum"}),
            ("two clusters", "4.3.1", {"quorum", "isr"})])


def report(bundle: Path, out: Path) -> tuple[int, dict, str]:
    summary = out / "summary.json"
    done = subprocess.run([sys.executable, "-m", "workbench", "report", "--bundle", str(bundle), "--out",
                           str(out / "report.html"), "--summary", str(summary)],
                          capture_output=True, text=True, timeout=1800, check=False)
    return done.returncode, json.loads(summary.read_text(encoding="utf-8")), done.stderr


@pytest.mark.parametrize(("name", "version", "with_data"), CASES, ids=[f"{n}-{v}" for n, v, _ in CASES])
def test_the_report_of_a_real_world_bundle_reports_every_area_with_data(name, version, with_data, kafka_bundle,
                                                                       tmp_path):
    if name == "two clusters":   # as tests/analysis/test_clusters_real_kafka.py puts them side by side
        from tests.analysis.test_clusters_real_kafka import SCENARIOS

        bundle = tmp_path / "bundle"
        for scenario in SCENARIOS:
            shutil.copytree(Path(kafka_bundle(scenario)) / "nodes", bundle / scenario / "nodes")
    else:
        bundle = Path(kafka_bundle(name, version))
    code, summary, stderr = report(bundle, tmp_path)
    assert code in (0, 1), stderr[-3000:]
    assert summary["failed_areas"] == {} and summary["failed_views"] == [], summary
    assert not summary["nothing_to_analyse"]
    reported = {area for area, figures in summary["areas"].items() if figures["has_data"]}
    assert with_data <= reported, reported
    assert "Traceback" not in stderr, stderr[-3000:]
