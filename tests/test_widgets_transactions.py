"""Transactions figures and the interactive transactions view, driven headlessly on small inline frames."""

from __future__ import annotations

import pandas as pd

from widgets.linking import TimeWindow, view_factories
from widgets.transactions import TransactionsView, figure_lso_lag, figure_partition_transactions

DAY = "2026-11-21 "

# topic, partition, time, log end, lso, lag records, lag bytes, pinned producer
LSO = [
    ("payments", 0, "03:12:00", 4, 4, 0, 0, None),
    ("payments", 0, "03:12:01", 8, 4, 4, 300, 7),
    ("payments", 0, "03:12:05", 12, 4, 8, 600, 7),
    ("payments", 0, "03:12:09", 13, 13, 0, 0, None),
    ("<b>x</b>\u202e", 1, "03:12:00", 2, 2, 0, 0, None),
    ("<b>x</b>\u202e", 1, "03:12:02", 5, 2, 3, 90, 9),
]
# topic, partition, producer, transactional id, first offset, start, end, outcome
SPANS = [
    ("payments", 0, 3, "orders", 0, "03:11:58", "03:11:59", "COMMIT"),
    ("payments", 0, 7, "stuck", 4, "03:12:01", "03:12:09", "ABORT"),
    ("<b>x</b>\u202e", 1, 9, "<i>id</i>", 2, "03:12:02", None, "open"),
]


def lso_frame() -> pd.DataFrame:
    frame = pd.DataFrame(LSO, columns=["topic", "partition", "time", "log_end_offset", "lso", "lag_records",
                                       "lag_bytes", "pinned_producer_id"])
    frame["time"] = pd.to_datetime(DAY + frame["time"])
    return frame


def spans_frame() -> pd.DataFrame:
    frame = pd.DataFrame(SPANS, columns=["topic", "partition", "producer_id", "transactional_id", "first_offset",
                                         "start", "end", "outcome"])
    frame["start"] = pd.to_datetime(DAY + frame["start"])
    frame["end"] = pd.to_datetime(frame["end"].map(lambda v: None if v is None else DAY + v))
    return frame


def t(clock: str) -> str:
    return f"{DAY}{clock}.000"


def test_lag_lines_per_partition_in_offsets_and_bytes_escaped():
    fig = figure_lso_lag(lso_frame())
    got = {tr.name: (list(tr.x), list(tr.y)) for tr in fig.data}
    assert got == {
        "payments-0": ([t("03:12:00"), t("03:12:01"), t("03:12:05"), t("03:12:09")], [0, 4, 8, 0]),
        # carried to the right edge of the frame: the lag holds until the next append
        "&lt;b&gt;x&lt;/b&gt;⟨U+202E⟩-1": ([t("03:12:00"), t("03:12:02"), t("03:12:09")], [0, 3, 3]),
    }
    in_bytes = figure_lso_lag(lso_frame(), measure="bytes", topics="payments", start=DAY + "03:12:02")
    (line,) = in_bytes.data
    # the value in force at the window's start opens it
    assert (list(line.x), list(line.y)) == ([t("03:12:01"), t("03:12:05"), t("03:12:09")], [300, 600, 0])


def test_partition_figure_draws_log_end_lso_and_each_transaction_at_its_first_offset():
    fig = figure_partition_transactions(lso_frame(), spans_frame(), topic="payments", partition=0)
    traces = {tr.name: tr for tr in fig.data}
    assert list(traces["last stable offset"].y) == [4, 4, 4, 13, 13]
    assert list(traces["log end"].y) == [4, 8, 12, 13, 13]
    assert list(traces["transactions: ABORT"].y) == [4, 4, None]
    assert list(traces["transactions: COMMIT"].x) == [t("03:11:58"), t("03:11:59"), None]
    # without a partition named: the one that lagged most; an open transaction runs to the right edge
    worst = figure_partition_transactions(lso_frame(), spans_frame())
    assert "payments-0" in worst.layout.title.text
    other = figure_partition_transactions(lso_frame(), spans_frame(), topic="<b>x</b>\u202e", partition=1)
    opened = next(tr for tr in other.data if tr.name == "transactions: open")
    assert list(opened.x) == [t("03:12:02"), t("03:12:02"), None]
    assert "&lt;i&gt;id&lt;/i&gt;" in opened.text[0] and "<i>" not in opened.text[0]


def test_view_follows_controls_and_the_shared_window():
    window = TimeWindow()
    view = view_factories()["transactions"]({"lso": lso_frame(), "spans": spans_frame()}, window)
    assert isinstance(view, TransactionsView)
    assert len(view.lag_figure.data) == 2
    view.topic_filter.value = ("payments",)
    assert [tr.name for tr in view.lag_figure.data] == ["payments-0"]
    view.measure.value = "bytes"
    assert max(view.lag_figure.data[0].y) == 600
    window.set(DAY + "03:12:03", DAY + "03:12:06")
    assert list(view.lag_figure.data[0].x) == [t("03:12:01"), t("03:12:05"), t("03:12:06")]
    assert list(view.partition_figure.layout.xaxis.range) == [t("03:12:03"), t("03:12:06")]
    assert "03:12:03" in view.status.value
    assert [f.layout.title.text for f in view.report_figures()][0].startswith("LSO lag")


def test_empty_frames_say_so():
    empty = lso_frame().iloc[0:0]
    assert figure_lso_lag(empty).layout.annotations[0].text.startswith("No transactional partition")
    assert figure_partition_transactions(empty, spans_frame().iloc[0:0]).layout.annotations
