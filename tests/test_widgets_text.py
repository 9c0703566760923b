"""Text from logs in views and reports: hidden characters shown, endless names cut, everything escaped.

Kafka limits topic names to 249 characters of ``[a-zA-Z0-9._-]``, but group ids, client ids and
config values may hold any text, and a damaged or crafted log may hold anything. A right-to-left
override (U+202E) reverses the rest of the sentence it sits in; a zero-width space makes two names
look equal; a 5,000-character name pushes a plot off the page.
"""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest

from tests.test_widgets_isr import counts_frame, states_frame
from widgets._frames import LABEL_WORD, MAX_WORD, labelled, plotly_text, visible_text
from widgets.findings import findings_html
from widgets.isr import IsrTimeline, figure_isr_timeline
from widgets.tables import table_html, text_html
from widgets.timeline import figure_findings_timeline

RLO = "\u202e"
HIDDEN = {
    "right-to-left override": "\u202e",
    "left-to-right embedding": "\u202a",
    "first strong isolate": "\u2068",
    "right-to-left mark": "\u200f",
    "zero-width space": "\u200b",
    "zero-width joiner": "\u200d",
    "byte-order mark": "\ufeff",
    "null": "\x00",
    "escape": "\x1b",
    "line separator": "\u2028",
    "soft hyphen": "\u00ad",
}
LONG = "long-" + "n" * 4990 + "-name"  # 5,000 characters
BIDI_AND_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\x00-\x08\x0b-\x1f\u2028\u2029\u00ad]")


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_every_hidden_character_is_shown_by_its_code_point(name):
    char = HIDDEN[name]
    shown = visible_text(f"topic a{char}b partition 0")
    assert shown == f"topic a⟨U+{ord(char):04X}⟩b partition 0"
    assert not BIDI_AND_INVISIBLE.search(shown)


def test_ordinary_text_is_left_alone():
    text = "group billing · topic payments-3: 1 234 records\tbehind\nsince 03:12 (ünïcødé, 日本語, עברית)"
    assert visible_text(text) == text
    assert visible_text("") == ""


def test_a_long_name_keeps_its_ends_and_its_length_and_two_such_names_stay_apart():
    shown = visible_text(f"topic {LONG} partition 0 was offline")
    assert shown.startswith("topic " + LONG[: MAX_WORD // 2] + "…⟨5,000 characters #")
    assert shown.endswith("⟩…" + LONG[-(MAX_WORD // 4):] + " partition 0 was offline")
    assert len(shown) < 2 * MAX_WORD
    twin = LONG[:2000] + "m" + LONG[2001:]  # same length, same ends, one character apart
    assert visible_text(twin) != visible_text(LONG)
    assert visible_text("x" * MAX_WORD) == "x" * MAX_WORD  # at the limit: whole


def test_html_and_plotly_text_escape_after_making_visible():
    text = f'<script>alert("x")</script> {RLO}gnp'
    assert text_html(text) == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; ⟨U+202E⟩gnp"
    assert plotly_text(text) == '&lt;script&gt;alert("x")&lt;/script&gt; ⟨U+202E⟩gnp'
    assert len(plotly_text(LONG, LABEL_WORD)) < 2 * LABEL_WORD


def test_tables_and_findings_show_hostile_cells_readably():
    frame = pd.DataFrame({"subject": [f"pay{RLO}stnem-0", LONG, "<b>x</b>"], "records": [1, 2, 3]})
    out = table_html(frame)
    assert not BIDI_AND_INVISIBLE.search(out)
    assert "pay⟨U+202E⟩stnem-0" in out and "&lt;b&gt;x&lt;/b&gt;" in out and "<b>" not in out
    assert "⟨5,000 characters #" in out and LONG not in out
    assert frame["subject"][1] == LONG  # the caller's frame is untouched

    findings = pd.DataFrame({"severity": ["critical", "warning"],
                             "summary": [f"topic pay{RLO}stnem partition 0 was under min ISR for 42.0 s",
                                         f"topic {LONG} partition 0 was offline for 5.0 s"]})
    items = re.findall(r"<li[^>]*>(.*?)</li>", findings_html(findings))
    assert items[0] == "topic pay⟨U+202E⟩stnem partition 0 was under min ISR for 42.0 s"
    assert items[1].endswith("-name partition 0 was offline for 5.0 s") and len(items[1]) < 2 * MAX_WORD


def test_the_findings_timeline_shows_hostile_subjects_readably():
    findings = pd.DataFrame({
        "area": ["isr", "isr"], "kind": ["under_min_isr", "offline"], "severity": ["critical", "critical"],
        "subject": [f"pay{RLO}stnem-0", f"{LONG}-0"],
        "summary": [f"topic pay{RLO}stnem partition 0 was under min ISR", f"topic {LONG} partition 0 was offline"],
        "start": pd.to_datetime(["2026-03-01 03:00:00", "2026-03-01 03:00:10"]),
        "end": pd.to_datetime(["2026-03-01 03:00:30", "2026-03-01 03:00:15"]),
    })
    fig = figure_findings_timeline(findings, titles={"isr": "ISR"})
    custom = [cell for row in fig.data[0].customdata for cell in row]
    assert "pay⟨U+202E⟩stnem-0" in custom
    assert all(not BIDI_AND_INVISIBLE.search(str(c)) and len(str(c)) < 2 * MAX_WORD for c in custom)


def _states(topics):
    rows = [(t, 0, "under_min_isr", "03:12:05", "03:12:47", 1, [1], [1, 2, 3], [2], 2) for t in topics]
    return states_frame(rows)


def test_isr_rows_and_topic_choices_are_labelled_readably_and_filter_by_the_real_name():
    topics = [f"pay{RLO}stnem", LONG, "orders"]
    states = _states(topics)
    fig = figure_isr_timeline(states)
    rows = {str(y) for trace in fig.data for y in (trace.y if trace.y is not None else ())}
    assert "pay⟨U+202E⟩stnem-0" in rows and "orders-0" in rows
    assert all(len(r) < 2 * LABEL_WORD and not BIDI_AND_INVISIBLE.search(r) for r in rows), rows

    view = IsrTimeline(states, counts_frame())
    assert dict(view.topic_filter.options) == {visible_text(t, 80): t for t in topics}
    view.topic_filter.value = (LONG,)
    shown = {str(y) for trace in view.timeline.data for y in (trace.y if trace.y is not None else ())}
    assert shown == {plotly_text(f"{LONG}-0", LABEL_WORD)}


def test_labelled_keeps_values_and_shows_labels():
    assert labelled(["a", f"b{RLO}"]) == [("a", "a"), ("b⟨U+202E⟩", f"b{RLO}")]
    assert html.unescape(text_html("&")) == "&"
