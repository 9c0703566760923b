"""The tier replay kernels on a small hand-made partition (pure pandas, no Spark).

Times are seconds written as epoch milliseconds. The partition: four 100-byte segments of 10
offsets each, uploaded one task run after they rolled; then ``retention.bytes`` is lowered to 150
at t=100 s, so the expiration run at t=105 s moves the log start to 20 and deletes the first two
segments one after the other.
"""

from __future__ import annotations

import pandas as pd

from workbench.analysis.tier import model

NAN = float("nan")
S = 1000.0


def attempts() -> pd.DataFrame:
    rows = [
        # segment_id, start, end, size, max_ts, broker, copy_started, copy_finished, delete_started, delete_finished
        ("a", 0, 9, 100, 9 * S, 2, 15 * S, 15.1 * S, 105 * S, 105.1 * S),
        ("b", 10, 19, 100, 19 * S, 2, 25 * S, 25.1 * S, 105.2 * S, 105.3 * S),
        ("c", 20, 29, 100, 29 * S, 2, 35 * S, 35.1 * S, NAN, NAN),
        ("d", 30, 39, 100, 39 * S, 2, 45 * S, 45.1 * S, NAN, NAN),
    ]
    return pd.DataFrame(rows, columns=list(model.ATTEMPT_COLUMNS))


def local() -> pd.DataFrame:
    # only the active segment is left locally (offsets 40-44, last record at 44 s)
    return pd.DataFrame([(2, 40, 44.0, 50.0, 44 * S, 40 * S, 5.0, True)], columns=list(model.LOCAL_COLUMNS))


def settings() -> model.TopicSettings:
    return model.TopicSettings(
        [(0.0, "remote.storage.enable", "true"), (0.0, "local.retention.ms", "1000"),
         (100 * S, "retention.bytes", "150")], [], {})


ENV = model.Env(task_interval_ms=10 * S, check_interval_ms=1 * S, bundle_end_ms=120 * S)


def test_history_pins_uploads_and_remote_deletions():
    h = model.build_history(attempts(), local(), settings(), ENV, [(0.0, 2)])
    got = h[["base_offset", "end_offset", "source", "uploaded", "remote_deleted", "log_start_passed"]]
    want = pd.DataFrame({
        "base_offset": [0, 10, 20, 30, 40], "end_offset": [9, 19, 29, 39, 44],
        "source": ["remote", "remote", "remote", "remote", "local"],
        "uploaded": [15.1 * S, 25.1 * S, 35.1 * S, 45.1 * S, NAN],
        "remote_deleted": [105 * S, 105.2 * S, NAN, NAN, NAN],
        "log_start_passed": [105 * S, 105 * S, NAN, NAN, NAN],
    })
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want, check_dtype=False)
    assert h.gap_start.isna().all()


def test_delete_lag_counts_segments_waiting_below_the_log_start():
    """At 105.15 s segment a is deleted and b waits for its turn (log start already past it): 1 segment,
    then b is deleting; once both finished there is no delete lag; retention due from 100 s."""
    h = model.build_history(attempts(), local(), settings(), ENV, [(0.0, 2)])
    s = model.build_series(h, attempts(), settings(), ENV, [(0.0, 2)])

    def at(t: float) -> tuple[int, int, int, int]:
        row = s[s.time <= t].iloc[-1]
        return int(row.delete_segments), int(row.delete_bytes), int(row.deleting_segments), int(row.overdue_segments)

    assert at(99 * S) == (0, 0, 0, 0)
    # retention.bytes 150 from 100 s: the two oldest segments (200 bytes after them reach 150) are due
    assert at(100.5 * S) == (2, 200, 0, 2)
    assert at(105.05 * S) == (2, 200, 1, 1)
    assert at(105.15 * S) == (1, 100, 0, 1)
    assert at(105.25 * S) == (1, 100, 1, 0)
    assert at(106 * S) == (0, 0, 0, 0)
    assert int(s[s.time <= 106 * S].iloc[-1].log_start) == 20
