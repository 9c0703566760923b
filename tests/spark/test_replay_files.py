"""``replay_files``: a replay whose tasks read local Parquet files themselves, against ``replay_by_key``.

The same rows, written as several Parquet files, are replayed once by ``replay_by_key`` over
Spark's reading of the files (the oracle: Spark's shuffle and sort) and once by
``replay_files`` (pyarrow reads, buckets exchanged on local disk, a NumPy ``lexsort``): the
outputs must be the same rows, whatever the number of buckets, with null keys, integer and
string keys, keys spread over every file, and a follower seeing each key's output in order.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.testing import assertDataFrameEqual

from workbench.analysis.replay import Follower, key_buckets, replay_by_key, replay_files

pytestmark = pytest.mark.spark

ROWS_DDL = "name string, part int, seq long, value long"
OUT_DDL = "name string, part int, rows long, first long, last long, trail string"


def _replays():
    """A replay and a follower, made here so that they travel to the workers by value."""
    import numpy as np

    class Trail:
        """Per key: row count, first and last ``seq``, and the values in replay order (order matters)."""

        def __init__(self):
            self.key, self.rows, self.first, self.last, self.trail, self.out = None, 0, 0, 0, [], []

        def _close(self):
            if self.key is not None:
                self.out.append((*self.key, self.rows, self.first, self.last, ",".join(self.trail)))

        def step(self, batch, starts):
            names, parts = batch.column("name").to_pylist(), batch.column("part").to_pylist()
            seqs, values = batch.column("seq").to_pylist(), batch.column("value").to_pylist()
            for i, start in enumerate(np.asarray(starts).tolist()):
                if start:
                    self._close()
                    self.key, self.rows, self.first, self.trail = (names[i], parts[i]), 0, seqs[i], []
                self.rows += 1
                self.last = seqs[i]
                self.trail.append(str(values[i]))
            return self._take()

        def _take(self):
            out, self.out = self.out, []
            if not out:
                return None
            cols = list(zip(*out, strict=True))
            return pa.RecordBatch.from_arrays(
                [pa.array(cols[0], pa.string()), pa.array(cols[1], pa.int32()), pa.array(cols[2], pa.int64()),
                 pa.array(cols[3], pa.int64()), pa.array(cols[4], pa.int64()), pa.array(cols[5], pa.string())],
                names=["name", "part", "rows", "first", "last", "trail"])

        def finish(self):
            self._close()
            self.key = None
            return self._take()

    class Keys:
        """Follower: one row per key it saw start (so a key split across batches counts once)."""

        def __init__(self):
            self.seen = []

        def step(self, batch, starts):
            firsts = np.flatnonzero(np.asarray(starts))
            self.seen.extend(zip(batch.column("name").take(pa.array(firsts)).to_pylist(),
                                 batch.column("part").take(pa.array(firsts)).to_pylist(), strict=True))

        def finish(self):
            if not self.seen:
                return None
            names, parts = zip(*self.seen, strict=True)
            return pa.RecordBatch.from_arrays([pa.array(names, pa.string()), pa.array(parts, pa.int32())],
                                              names=["name", "part"])

    return Trail, Keys


def _prepare(table):
    """The replay rows of a chunk: rows whose ``keep`` is true, without it."""
    return table.filter(table.column("keep")).drop_columns(["keep"])


def _write(root, files: int, rows: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    names = [f"topic-{i:03d}" for i in range(40)] + [None]
    seqs = rnd.sample(range(rows * 10), rows)  # a total order within any key
    paths = []
    per = rows // files
    for f in range(files):
        chunk = range(f * per, (f + 1) * per)
        table = pa.table({
            "name": pa.array([rnd.choice(names) for _ in chunk], pa.string()),
            "part": pa.array([rnd.choice([0, 1, 2, None]) for _ in chunk], pa.int32()),
            "seq": pa.array([seqs[i] for i in chunk], pa.int64()),
            "value": pa.array([rnd.randrange(1000) for _ in chunk], pa.int64()),
            "keep": pa.array([rnd.random() < 0.9 for _ in chunk]),
            "other": pa.array(["x"] * len(chunk)),
        })
        path = root / f"part-{f}.parquet"
        pq.write_table(table, path, row_group_size=700)
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("buckets", [1, 3, 8])
def test_replay_files_gives_replay_by_keys_rows(spark, tmp_path, buckets):
    files = _write(tmp_path, 5, 6_000, seed=buckets)
    trail, keys = _replays()
    df = spark.read.parquet(*files).where("keep").select("name", "part", "seq", "value")
    oracle = replay_by_key(df, ["name", "part"], ["seq"], OUT_DDL, trail)
    follower = Follower(("name", "part"), keys, "name string, part int", str(tmp_path / "keys"))
    ours = replay_files(spark, files, ["name", "part", "seq", "value", "keep"], _prepare, ROWS_DDL,
                        ["name", "part"], ["seq"], OUT_DDL, trail, str(tmp_path / "out"), buckets=buckets,
                        pack_rows=1_000, followers=[follower])
    assert oracle.count() >= 150  # 41 names x 4 parts, nulls among them
    assertDataFrameEqual(ours, oracle)
    # the follower saw each key start once, in the task that replayed it
    assertDataFrameEqual(spark.read.schema("name string, part int").parquet(str(tmp_path / "keys")),
                         oracle.select("name", "part"))
    assert not (tmp_path / "out.exchange").exists()


def test_key_buckets_are_the_same_in_any_chunk():
    """A key's bucket depends on its values only, not on the other rows of the chunk."""
    table = pa.table({"name": ["a", "b", None, "a", "c"], "part": [1, None, 2, 1, 3]})
    whole = key_buckets(table, ["name", "part"], 7)
    parts = [key_buckets(table.slice(i, 1), ["name", "part"], 7)[0] for i in range(table.num_rows)]
    assert whole.tolist() == parts
    dictionary = table.set_column(0, "name", table.column("name").dictionary_encode())
    assert key_buckets(dictionary, ["name", "part"], 7).tolist() == whole.tolist()
