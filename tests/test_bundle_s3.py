"""A bundle in object storage, read where it lies: a real S3-compatible server (s3proxy on 127.0.0.1,
:mod:`peer.s3proxy`) holds the shipped demo bundle (real Kafka's files, all five areas) and an archive
of it; the workbench opens them by ``s3://``/``s3a://`` URL with the credentials and endpoint of the usual
environment variables, and every table equals the one read from the same files on disk."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest

import workbench
from workbench.bundle import open_bundle
from workbench.errors import BundleError

pytestmark = [pytest.mark.spark]

BUCKET = "cases"
#: The bundle sits one directory down, as an operator's upload often does (a case folder around it).
PREFIX = f"{BUCKET}/2026-12-07-incident/bundle"
ARCHIVE = f"{BUCKET}/incident.tar.gz"


@pytest.fixture(scope="module")
def stored(s3_server, demo_bundle, tmp_path_factory):
    """The demo bundle uploaded file by file under :data:`PREFIX`, and as a ``.tar.gz`` at :data:`ARCHIVE`."""
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, **s3_server.storage_options())
    fs.call_s3("create_bucket", Bucket=BUCKET)   # s3fs's mkdir probes with GetBucketLocation, which s3proxy
    #                                               answers 200 for a bucket that does not exist
    fs.put(str(demo_bundle), PREFIX, recursive=True)
    archive = tmp_path_factory.mktemp("s3-archive") / "incident.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(demo_bundle, arcname="incident")
    fs.put_file(str(archive), ARCHIVE)
    return demo_bundle


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The environment an operator sets for a bucket: credentials and the endpoint, nothing else."""
    import s3fs

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint_url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    s3fs.S3FileSystem.clear_instance_cache()
    yield s3_server
    s3fs.S3FileSystem.clear_instance_cache()


def _inventory(bundle) -> list[tuple]:
    return [(a.path, a.node_id, a.kind, a.topic, a.partition, a.base_offset, a.bytes, a.dir_state, a.cluster_id)
            for a in bundle.artifacts]


def test_a_bundle_in_a_bucket_is_discovered_as_on_disk(stored, s3_env):
    local = open_bundle(stored)
    for url in (f"s3://{BUCKET}/2026-12-07-incident", f"s3a://{PREFIX}/"):
        remote = open_bundle(url)
        assert str(remote.root) == f"s3://{PREFIX}"
        assert _inventory(remote) == _inventory(local)
        assert remote.manifest == local.manifest and remote.path_nodes == local.path_nodes
        assert remote.node_clusters() == local.node_clusters()
        assert remote.problems == local.problems == []


def without_root(df, root: str) -> pd.DataFrame:
    """A table (Spark or pandas) as pandas, rows in a stable order, the bundle's own root in its string
    columns cut to ``<root>``: the same files read from two places compare equal."""
    out = df.copy() if isinstance(df, pd.DataFrame) else df.toPandas()
    for column in out.columns:
        if out[column].dtype == object:
            out[column] = out[column].map(lambda v: v.replace(root, "<root>") if isinstance(v, str) else v)
    text = out.astype(str)
    return out.iloc[text.sort_values(list(text.columns)).index].reset_index(drop=True)


def _reading_tables(bundle) -> list[str]:
    """The tables whose build reads files of ``bundle`` (by data source or on the driver); every other
    table is computed from these, by the same code wherever the files lie."""
    from workbench.spark.registry import table_specs

    return sorted(name for name, spec in table_specs().items() if spec.kinds and (
        spec.select(bundle) if spec.select else bundle.of_kind(*spec.kinds)))


def test_every_table_read_from_the_bucket_equals_the_one_read_from_disk(spark, stored, s3_env):
    local = workbench.load(open_bundle(stored), spark)
    remote_bundle = open_bundle(f"s3://{PREFIX}")
    remote = workbench.load(remote_bundle, spark)
    assert set(remote) == set(local)
    names = _reading_tables(remote_bundle)
    assert names == _reading_tables(local.bundle) and "records" in names and "metadata" in names, names
    compared = []
    for name in names:
        mine = without_root(local[name], str(Path(stored).resolve()))
        theirs = without_root(remote[name], f"s3://{PREFIX}")
        pd.testing.assert_frame_equal(theirs, mine, check_dtype=True, obj=name)
        compared.append((name, len(mine)))
    # the bundle's five areas read real rows, not empty tables
    assert sum(rows > 0 for _name, rows in compared) >= 0.8 * len(names), compared
    problems = without_root(remote.problems, f"s3://{PREFIX}")
    assert problems.equals(without_root(local.problems, str(Path(stored).resolve())))


def test_an_archive_in_a_bucket_is_fetched_extracted_and_removed(stored, s3_env):
    local = open_bundle(stored)
    with open_bundle(f"s3://{ARCHIVE}") as bundle:
        extracted = Path(bundle.root)
        assert extracted.is_dir() and _inventory(bundle) == _inventory(local)
    assert not extracted.exists()


def test_a_missing_bundle_and_a_wrong_secret_are_clear_errors(stored, s3_env, monkeypatch):
    with pytest.raises(BundleError, match="does not exist"):
        open_bundle(f"s3://{BUCKET}/no-such-incident")
    import s3fs

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-" + s3_env.secret)
    s3fs.S3FileSystem.clear_instance_cache()
    with pytest.raises(BundleError) as caught:
        open_bundle(f"s3://{PREFIX}")
    assert s3_env.secret not in str(caught.value)


def test_workbench_inspect_reads_a_bundle_url_with_the_environments_credentials(stored, s3_env):
    done = subprocess.run([sys.executable, "-m", "workbench", "inspect", f"s3a://{PREFIX}"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    local = subprocess.run([sys.executable, "-m", "workbench", "inspect", str(stored)], capture_output=True,
                           text=True, timeout=300, check=True)
    assert done.stdout.replace(f"s3://{PREFIX}", "<root>") == local.stdout.replace(str(Path(stored).resolve()),
                                                                                      "<root>")
    assert s3_env.secret not in done.stdout + done.stderr


def test_a_report_of_a_missing_bundle_url_is_refused_before_any_kernel_starts(stored, s3_env, tmp_path):
    from workbench.report import run_report

    with pytest.raises(BundleError, match="does not exist"):
        run_report(f"s3://{BUCKET}/no-such-incident", tmp_path / "report.html")
    assert not (tmp_path / "report.html").exists()
