"""``decode_offset_commit_fast`` gives exactly what ``decode_offsets_record`` gives, or defers to it.

Checked on every offset commit of the real-Kafka scenario bundles (both pinned versions:
value versions 3 and 4 as Kafka wrote them), on encoded commits of every value version with
drawn fields, and on mutations of them (a wrong answer is never allowed, ``None`` always is).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from peer.scenario import built_on
from workbench.formats.batch import read_batches
from workbench.formats.coordinator import decode_offset_commit_fast, decode_offsets_record, encode_offsets_record

EXAMPLES = int(os.environ.get("WORKBENCH_FUZZ_EXAMPLES", "300"))

texts = st.one_of(st.text(max_size=20), st.text(min_size=60, max_size=300))  # one- and two-byte lengths
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def commits(draw) -> tuple[bytes, bytes | None]:
    key = {"group": draw(texts), "topic": draw(texts), "partition": draw(int32)}
    if draw(st.booleans()) and draw(st.booleans()):
        return encode_offsets_record(1, key, None)
    version = draw(st.integers(0, 4))
    value = {"offset": draw(int64), "leaderEpoch": draw(int32), "metadata": draw(texts),
             "commitTimestamp": draw(int64), "expireTimestamp": draw(int64)}
    if version == 4 and draw(st.booleans()):
        value["topicId"] = draw(st.binary(min_size=16, max_size=16))
    return encode_offsets_record(1, key, value, value_version=version)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits())
def test_encoded_commits_of_every_version(kv):
    fast = decode_offset_commit_fast(*kv)
    assert fast == decode_offsets_record(*kv)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits(), st.data())
def test_mutated_commits_are_right_or_deferred(kv, data):
    key, value = kv
    which = data.draw(st.sampled_from(["key", "value"]) if value is not None else st.just("key"))
    raw = bytearray(key if which == "key" else value)
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["set", "cut", "add"]))
        at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        if op == "set" and raw:
            raw[at] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del raw[at:]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=4))
    mutated = (bytes(raw), value) if which == "key" else (key, bytes(raw))
    fast = decode_offset_commit_fast(*mutated)
    assert fast is None or fast == decode_offsets_record(*mutated)


def test_tagged_fields_other_than_topic_id_defer():
    key, value = encode_offsets_record(1, {"group": "g", "topic": "t", "partition": 0},
                                       {"offset": 1, "metadata": "", "commitTimestamp": 2}, value_version=4,
                                       unknown_tags={7: b"x"})
    assert decode_offset_commit_fast(key, value) is None and decode_offsets_record(key, value).unknown_tags == {7: b"x"}


@pytest.mark.kafka
@pytest.mark.parametrize("version", built_on("consumer_lag"))
def test_every_commit_kafka_wrote(kafka_bundle, version):
    segments = sorted(Path(kafka_bundle("consumer_lag", version)).glob("nodes/*/logs/__consumer_offsets-*/*.log"))
    checked = 0
    for path in segments:
        with open(path, "rb") as f:
            for batch in read_batches(f, path):
                for r in batch.records():
                    fast = decode_offset_commit_fast(r.key, r.value)
                    generic = decode_offsets_record(r.key, r.value)
                    if generic.record_type == 1:
                        assert fast == generic, (path, r.offset)
                        checked += 1
                    else:
                        assert fast is None
    # how many commits the scenario's consumers made depends on how long they ran, which a busy
    # machine shortens (915 on 3.9.2 in a run built beside other work): enough to cover every group
    assert checked > 100
