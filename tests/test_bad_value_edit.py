"""The corpus's binary edit changes the one record it names, even when its batch repeats the value.

A consumer committing several partitions at once writes one batch of records with identical values
(offset, epoch, metadata and time), so finding the value in the batch is ambiguous; the edit searches
the record's own bytes. A real Kafka bundle had such a batch (the cold run that found this).
"""

from __future__ import annotations

import io

from peer.corpus import _record_spans, _value_edit
from workbench.formats.batch import encode_batch, read_batches


def _batch(data):
    (batch,) = read_batches(io.BytesIO(data))
    return batch


def test_a_repeated_value_is_changed_in_the_named_record_only(tmp_path):
    value = b"\x00\x03same-value-in-every-record"
    records = [(10 + i, 1_700_000_000_000 + i, f"key-{i}".encode(), value) for i in range(3)]
    data = encode_batch(records, base_offset=10)
    (tmp_path / "seg.log").write_bytes(data)
    batch = _batch(data)
    spans = list(_record_spans(batch))
    assert [r.offset for r, _ in spans] == [10, 11, 12]
    assert spans[-1][1] + spans[-1][0].size == len(data)

    rec, start = spans[1]
    new = value.replace(b"same", b"SAME")
    _value_edit("seg.log", 0, start, rec.size, value, new)(tmp_path)

    edited = _batch((tmp_path / "seg.log").read_bytes())
    assert edited.crc_valid
    assert [(r.offset, r.key, r.value) for r in edited.records()] == [
        (10, b"key-0", value), (11, b"key-1", new), (12, b"key-2", value)]
