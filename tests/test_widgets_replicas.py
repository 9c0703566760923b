"""Replica consistency figures and the interactive replicas view, driven headlessly on small inline frames."""

from __future__ import annotations

import pandas as pd

from widgets.linking import TimeWindow, view_factories
from widgets.replicas import ReplicasView, figure_batches_by_partition, figure_replica_ranges

DAY = "2026-11-21 "
HOSTILE = "<b>x</b>\u202e"
HOSTILE_SHOWN = "&lt;b&gt;x&lt;/b&gt;⟨U+202E⟩"

# topic, partition, node, log start, log end, batches, records, compared from, shared start, shared end,
# compared, divergent, missing, first time, last time (the partitions with most differences first)
RANGES = [
    ("orders", 0, 1, 0, 100, 20, 100, None, 10, 90, 16, 0, 0, "03:10:00", "03:14:00"),
    ("orders", 0, 2, 0, 100, 20, 100, None, 10, 90, 16, 2, 0, "03:10:00", "03:14:00"),
    ("orders", 0, 3, 10, 90, 15, 70, None, 10, 90, 15, 0, 1, "03:10:30", "03:13:30"),
    ("payments", 1, 1, 0, 50, 5, 50, 20, 0, 50, 3, 0, 0, "03:11:00", "03:12:00"),
    ("payments", 1, 2, 0, 50, 5, 50, 20, 0, 50, 3, 1, 0, None, None),
    (HOSTILE, 2, 1, 5, 30, 3, 25, None, 5, 30, 3, 0, 1, "03:11:00", "03:12:00"),
    (HOSTILE, 2, 2, 5, 30, 4, 25, None, 5, 30, 4, 0, 0, "03:11:00", "03:12:00"),
    ("quiet", 0, 1, 0, 10, 1, 10, None, 0, 10, 1, 0, 0, "03:11:00", "03:12:00"),
    ("quiet", 0, 2, 0, 10, 1, 10, None, 0, 10, 1, 0, 0, "03:11:00", "03:12:00"),
]
# topic, partition, node, kind, base offset, last offset, records, leader epoch, time, others
DIFFERENCES = [
    ("orders", 0, 2, "divergent", 20, 24, 5, 3, "03:12:00", "1, 3"),
    ("orders", 0, 2, "divergent", 40, 41, 2, None, None, "1, 3"),
    ("orders", 0, 3, "missing", 60, 69, 10, 4, "03:13:00", "1, 2"),
    ("payments", 1, 2, "divergent", 30, 30, 1, 7, "03:11:30", "1"),
    (HOSTILE, 2, 1, "missing", 12, 13, 2, 1, "03:11:30", "2"),
]


def ranges_frame() -> pd.DataFrame:
    frame = pd.DataFrame(RANGES, columns=["topic", "partition", "node_id", "log_start_offset", "log_end_offset",
                                          "batches", "records", "compared_from", "shared_start", "shared_end",
                                          "compared_batches", "divergent_batches", "missing_batches", "first_time",
                                          "last_time"])
    frame.insert(0, "cluster_id", "lkc-1")
    for column in ("first_time", "last_time"):
        frame[column] = pd.to_datetime(frame[column].map(lambda v: None if v is None else DAY + v))
    return frame


def differences_frame() -> pd.DataFrame:
    frame = pd.DataFrame(DIFFERENCES, columns=["topic", "partition", "node_id", "kind", "base_offset", "last_offset",
                                               "records", "leader_epoch", "time", "others"])
    frame.insert(0, "cluster_id", "lkc-1")
    frame["leader_epoch"] = frame["leader_epoch"].astype("Int64")
    frame["time"] = pd.to_datetime(frame["time"].map(lambda v: None if v is None else DAY + v))
    return frame


def traces(fig) -> dict:
    return {tr.name: tr for tr in fig.data}


def test_one_partition_replicas_shared_range_and_differing_batches():
    fig = figure_replica_ranges(ranges_frame(), differences_frame())
    assert fig.layout.title.text.startswith("orders-0:")
    got = traces(fig)
    assert list(got) == ["replica's log", "divergent", "missing"]
    log = got["replica's log"]
    assert (list(log.y), list(log.base), list(log.x)) == (["node 1", "node 2", "node 3"], [0, 0, 10], [100, 100, 80])
    divergent, missing = got["divergent"], got["missing"]
    # a batch covers its base offset to its last offset, both included
    assert (list(divergent.y), list(divergent.base), list(divergent.x)) == (["node 2", "node 2"], [20, 40], [5, 2])
    assert (list(missing.y), list(missing.base), list(missing.x)) == (["node 3"], [60], [10])
    assert divergent.text[0] == ("node 2: divergent batch, offsets 20 to 24<br>5 records, leader epoch 3, "
                                 "2026-11-21 03:12:00 UTC<br>other version on node(s) 1, 3")
    assert "leader epoch ?, unknown time" in divergent.text[1]
    assert missing.text[0].endswith("held by node(s) 1, 2")
    (shared,) = fig.layout.shapes
    assert (shared.x0, shared.x1) == (10, 90)
    assert fig.layout.annotations[0].text == "held by every replica: 10 to 90"
    assert list(fig.layout.yaxis.categoryarray) == ["node 1", "node 2", "node 3"]


def test_offsets_below_compared_from_are_drawn_as_not_compared():
    fig = figure_replica_ranges(ranges_frame(), differences_frame(), topic="payments", partition=1)
    got = traces(fig)
    cleaned = got["not compared (cleaned)"]
    assert (list(cleaned.y), list(cleaned.base), list(cleaned.x)) == (["node 1", "node 2"], [0, 0], [20, 20])
    assert (list(got["divergent"].base), list(got["divergent"].x)) == ([30], [1])
    assert "missing" not in got
    assert figure_replica_ranges(ranges_frame(), differences_frame(), topic="nope", partition=0).layout.annotations[
        0].text == "No replica of this partition in the frames."


def test_batches_per_partition_same_divergent_and_missing_added_up_over_replicas():
    fig = figure_batches_by_partition(ranges_frame())
    got = traces(fig)
    assert list(got["same"].x) == ["orders-0", "payments-1", f"{HOSTILE_SHOWN}-2", "quiet-0"]
    assert list(got["same"].y) == [45, 5, 7, 2]
    assert list(got["divergent"].y) == [2, 1, 0, 0]
    assert list(got["missing"].y) == [1, 0, 1, 0]
    assert got["missing"].text[0] == ("node 1: 16 compared, 0 divergent, 0 missing<br>node 2: 16 compared, "
                                      "2 divergent, 0 missing<br>node 3: 15 compared, 0 divergent, 1 missing")
    assert fig.layout.title.text == "Batches compared per partition"
    only = figure_batches_by_partition(ranges_frame(), topics="payments")
    assert [list(tr.x) for tr in only.data] == [["payments-1"]] * 3


def test_hostile_topic_names_are_escaped_everywhere():
    fig = figure_replica_ranges(ranges_frame(), differences_frame(), topic=HOSTILE, partition=2)
    assert fig.layout.title.text.startswith(f"{HOSTILE_SHOWN}-2:")
    assert "<b>" not in fig.layout.title.text and "\u202e" not in fig.layout.title.text
    assert list(traces(fig)["missing"].base) == [12]
    labels = figure_batches_by_partition(ranges_frame()).data[0].x
    assert not [x for x in labels if "<b>" in x or "\u202e" in x]
    view = ReplicasView(ranges_frame(), differences_frame())
    assert [label for label, _ in view.partition_choice.options][2] == "<b>x</b>⟨U+202E⟩-2"   # a text label
    view.partition_choice.value = ("lkc-1", HOSTILE, 2)
    assert view.ranges_figure.layout.title.text.startswith(f"{HOSTILE_SHOWN}-2:")
    assert view.status.value.startswith(f"{HOSTILE_SHOWN}-2: 1 differing batch(es)")


def test_empty_frames_say_so():
    ranges, differences = ranges_frame().iloc[0:0], differences_frame().iloc[0:0]
    assert figure_replica_ranges(ranges, differences).layout.annotations[0].text == (
        "No partition has copies on several nodes.")
    same = figure_batches_by_partition(ranges_frame()[ranges_frame()["topic"] == "quiet"])
    assert same.layout.title.text == (
        "Batches compared per partition: every replica holds the same batches over the offsets it shares")
    assert [(tr.name, list(tr.y)) for tr in same.data] == [("same", [2]), ("divergent", [0]), ("missing", [0])]
    assert figure_batches_by_partition(ranges_frame(), topics="nope").layout.annotations[0].text == (
        "No partition of these topics has copies on several nodes.")
    view = ReplicasView(ranges, differences)
    assert view.partition_choice.value is None
    # replicas that all agree: their ranges drawn, no differing batch
    agreeing = figure_replica_ranges(ranges_frame(), differences, topic="quiet", partition=0)
    assert [(tr.name, list(tr.x)) for tr in agreeing.data] == [("replica's log", [10, 10])]
    assert view.partitions_figure.layout.annotations[0].text == "No partition has copies on several nodes."
    assert [f.layout.annotations[0].text for f in view.report_figures()][1] == (
        "No partition has copies on several nodes.")


def test_view_follows_the_dropdown_and_the_shared_window():
    window = TimeWindow()
    view = view_factories()["replicas"]({"ranges": ranges_frame(), "differences": differences_frame()}, window)
    assert isinstance(view, ReplicasView)
    assert view.partition_choice.value == ("lkc-1", "orders", 0)
    assert list(traces(view.ranges_figure)["divergent"].base) == [20, 40]
    assert list(traces(view.partitions_figure)["divergent"].y) == [2, 1, 0, 0]
    view.partition_choice.value = ("lkc-1", "payments", 1)
    assert view.ranges_figure.layout.title.text.startswith("payments-1:")
    assert list(traces(view.ranges_figure)["divergent"].base) == [30]
    assert list(view.ranges_figure.layout.yaxis.categoryarray) == ["node 1", "node 2"]
    view.partition_choice.value = ("lkc-1", "orders", 0)
    window.set(DAY + "03:12:30", DAY + "03:14:00")
    got = traces(view.ranges_figure)
    # the batch written before the window is dimmed; the one of unknown time stays drawn as inside it
    assert list(got["divergent"].base) == [40]
    assert list(got["divergent (outside the window)"].base) == [20]
    assert got["divergent (outside the window)"].opacity == 0.25 and got["divergent"].opacity == 1
    assert list(got["missing"].base) == [60]
    assert "dimmed" in view.ranges_figure.layout.title.text
    assert view.status.value == ("orders-0: 2 differing batch(es) in the window, 1 outside it "
                                 "(2026-11-21 03:12:30 to 2026-11-21 03:14:00 UTC)")
    report = view.report_figures()
    assert [f.layout.title.text.split(":")[0] for f in report] == ["Batches compared per partition", "orders-0"]
    assert "divergent (outside the window)" in traces(report[1])


def test_report_window_from_the_parameters():
    view = ReplicasView(ranges_frame(), differences_frame(), start=DAY + "03:12:30")
    _, detail = view.report_figures()
    assert list(traces(detail)["divergent (outside the window)"].base) == [20]
    assert list(traces(detail)["missing"].base) == [60]


# topic, partition, node, epoch, start offset, end offset, leader, elected, unclean
EPOCHS = [
    ("orders", 0, 1, 3, 0, 60, 1, "03:10:00", False),
    ("orders", 0, 1, 4, 60, 100, 3, "03:12:50", True),
    ("orders", 0, 2, 3, 0, 100, 1, "03:10:00", False),
    ("orders", 0, 3, 4, 10, 90, 3, "03:12:50", True),
    ("orders", 0, 4, 2, 0, None, None, None, None),   # a node with no range: its row still drawn
    ("payments", 1, 1, 7, 0, 50, 2, "03:11:00", False),
]


def epochs_frame() -> pd.DataFrame:
    frame = pd.DataFrame(EPOCHS, columns=["topic", "partition", "node_id", "epoch", "start_offset", "end_offset",
                                          "leader", "elected", "unclean"])
    frame.insert(0, "cluster_id", "lkc-1")
    frame["elected"] = pd.to_datetime(frame["elected"].map(lambda v: None if v is None else DAY + v))
    frame["end_offset"] = frame["end_offset"].astype("Int64")
    frame["leader"] = frame["leader"].astype("Int64")
    frame["unclean"] = frame["unclean"].astype("boolean")
    return frame


def test_each_replicas_epochs_begin_as_ticks_on_its_bar_unclean_ones_apart():
    fig = figure_replica_ranges(ranges_frame(), differences_frame(), epochs=epochs_frame())
    got = traces(fig)
    clean, unclean = got["epoch starts"], got["epoch starts (unclean election)"]
    assert (list(clean.y), list(clean.x), list(clean.text)) == (["node 1", "node 2", "node 4"], [0, 0, 0],
                                                                ["e3", "e3", "e2"])
    assert (list(unclean.y), list(unclean.x), list(unclean.text)) == (["node 1", "node 3"], [60, 10], ["e4", "e4"])
    assert unclean.customdata[0] == ("node 1: epoch 4 from offset 60 to 100<br>led by broker 3, elected "
                                     "2026-11-21 03:12:50 UTC<br>an unclean election (a leader from outside the ISR)")
    assert clean.customdata[2] == "node 4: epoch 2 from offset 0<br>leader not in the metadata log"
    assert list(fig.layout.yaxis.categoryarray) == ["node 1", "node 2", "node 3", "node 4"]
    # another partition's epochs are not drawn here; without epochs the figure is as before
    assert list(traces(figure_replica_ranges(ranges_frame(), differences_frame(), topic="payments", partition=1,
                                             epochs=epochs_frame()))["epoch starts"].x) == [0]
    assert "epoch starts" not in traces(figure_replica_ranges(ranges_frame(), differences_frame()))


def test_the_area_view_draws_the_epochs_frame_when_there_is_one():
    frames = {"ranges": ranges_frame(), "differences": differences_frame(), "epochs": epochs_frame()}
    view = view_factories()["replicas"](frames, TimeWindow())
    assert list(traces(view.ranges_figure)["epoch starts (unclean election)"].x) == [60, 10]
    assert "epoch starts" in traces(view.report_figures()[1])
    view.partition_choice.value = ("lkc-1", HOSTILE, 2)
    assert "epoch starts" not in traces(view.ranges_figure)
