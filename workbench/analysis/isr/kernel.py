"""The compiled ISR replay: one partition's records and the ``min.insync.replicas`` changes, in log order.

:func:`workbench.analysis.isr.partition_states` sorts the ``PartitionRecord`` and
``PartitionChangeRecord`` rows by partition and offset and hands them to :class:`IsrReplay` through
:func:`workbench.analysis.replay.replay_by_key`. The replay keeps one partition's state in NumPy arrays
and runs :func:`_replay` (numba) over each Arrow batch; a partition whose rows span two batches
simply carries on. The ``min.insync.replicas`` config changes (few: one per topic or broker at most
per change) are shipped to every task as :class:`MinIsrConfigs` arrays and merged into each
partition's stream by offset, exactly as the reference replay (:func:`workbench.analysis.isr.
_replay_partition`) merges them: topic configs by the partition's topic name, broker configs by the
partition's current leader, the cluster default otherwise, the static default last.

An interval is emitted when it closes (its end is the time of the next visible change, of the
topic's deletion, or the end of the log), with the state it had: leader, ISR, replicas, ELR and
effective ``min.insync.replicas``, and the number of replicas not being added (for
``under_replicated``).

A time, offset or id the metadata table holds as null (a value its reader refused, with the
problem that says so) is never fatal: a row without an offset cannot be placed and is skipped; an
event without a time (a record, a config change, a topic's deletion) takes the partition's latest
earlier known time, or, before the partition has one, changes the state without opening an
interval (the state shows from its next event with a known time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

#: How the workbench reaches this module's kernels (:func:`workbench.kernels.compiled_paths`).
COMPILED_PATH = {"name": "ISR replays", "tables": ("metadata",), "areas": ("isr",),
                 "warm": "workbench.analysis.isr.summary:warm_kernels"}

__all__ = ["COUNTS_SCHEMA", "CountSteps", "CountsReplay", "IsrReplay", "MinIsrConfigs", "REPLAY_SCHEMA",
           "STEPS_SCHEMA", "SUMMARY_SCHEMA", "SummaryReplay", "TopicInfo", "min_isr_configs", "summary_rows"]

REPLAY_SCHEMA = (
    "topic string, topic_id string, partition int, start long, end long, start_offset long, "
    "leader int, isr array<int>, replicas array<int>, elr array<int>, min_isr int, under_replicated boolean, "
    "under_min_isr boolean, at_min_isr boolean, offline boolean, state string, end_reason string"
)
"""Output of :class:`IsrReplay` (``start``/``end`` in epoch microseconds)."""

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
_TOPIC, _BROKER, _CLUSTER = 0, 1, 2
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_STATES = ("healthy", "under_replicated", "at_min_isr", "under_min_isr", "offline")
_REASONS = ("next_change", "topic_deleted", "log_end")

# ---------------------------------------------------------------------------------------------
# config changes


@dataclass(frozen=True)
class MinIsrConfigs:
    """The ``min.insync.replicas`` config changes of a log, in replay order, as arrays.

    ``kind`` is 0 (topic: ``target`` indexes ``topics``), 1 (broker: ``target`` indexes
    ``brokers``) or 2 (the cluster-wide default); ``valid`` is 0 where the config was deleted or
    its value is not an integer (it then no longer applies); ``t_valid`` is 0 where the change's
    time is unknown (``t_us`` 0).
    """

    offset: np.ndarray
    seq: np.ndarray
    t_us: np.ndarray
    t_valid: np.ndarray
    kind: np.ndarray
    target: np.ndarray
    value: np.ndarray
    valid: np.ndarray
    topics: tuple[str, ...]
    brokers: np.ndarray


def config_int(value: str | None) -> int | None:
    """The integer a config value sets, as Kafka parses it, or None (deleted or unparsable).

    >>> config_int(" 2 "), config_int("two"), config_int(None)
    (2, None, None)
    """
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None  # an unparsable value is rejected by Kafka; it never takes effect


def _broker_id(name: str) -> int | None:
    """The broker a broker-scope config names (``"2"``), or None if it can name no leader."""
    try:
        number = int(name)
    except ValueError:
        return None
    return number if str(number) == name and number >= 0 else None


def min_isr_configs(events: list[tuple]) -> MinIsrConfigs:
    """Arrays of ``(offset, seq, t_us, resource_type, resource_name, value)`` config changes.

    ``events`` must be in replay order (offset, seq). Broker-scope changes for a name that is
    not a broker id (it never matches a leader), and changes whose offset is unknown (None), are
    left out; an unknown time (None) is kept as such (``t_valid``).

    Examples
    --------
    >>> c = min_isr_configs([(0, 0, 5, 4, "", "2"), (3, 0, 9, 2, "orders", "3"), (4, 0, 9, 4, "x", "1")])
    >>> c.kind.tolist(), c.target.tolist(), c.value.tolist(), c.topics
    ([2, 0], [0, 0], [2, 3], ('orders',))
    """
    rows = []
    topics: dict[str, int] = {}
    brokers: dict[int, int] = {}
    for offset, seq, t_us, rtype, rname, value in events:
        if offset is None:
            continue
        parsed = config_int(value)
        if parsed is not None:
            parsed = min(max(parsed, _INT32_MIN), _INT32_MAX)
        if rtype == TOPIC_RESOURCE:
            kind, target = _TOPIC, topics.setdefault(rname, len(topics))
        elif rname == "":
            kind, target = _CLUSTER, 0
        else:
            broker = _broker_id(rname)
            if broker is None:
                continue
            kind, target = _BROKER, brokers.setdefault(broker, len(brokers))
        rows.append((offset, seq or 0, t_us or 0, kind, target, 0 if parsed is None else parsed, parsed is not None,
                     t_us is not None))
    cols = list(zip(*rows, strict=True)) if rows else [()] * 8
    return MinIsrConfigs(
        offset=np.array(cols[0], np.int64), seq=np.array(cols[1], np.int64), t_us=np.array(cols[2], np.int64),
        t_valid=np.array(cols[7], np.uint8), kind=np.array(cols[3], np.int64), target=np.array(cols[4], np.int64),
        value=np.array(cols[5], np.int64),
        valid=np.array(cols[6], np.uint8), topics=tuple(topics), brokers=np.array(list(brokers), np.int64))


@dataclass(frozen=True)
class TopicInfo:
    """What each partition needs of its topic, by topic id: name, deletion, index in the topic configs."""

    ids: pa.Array
    names: pa.Array
    ref: np.ndarray
    deleted_valid: np.ndarray
    deleted_offset: np.ndarray
    deleted_us: np.ndarray
    deleted_t_valid: np.ndarray

    @staticmethod
    def of(topics: dict[str, str], removed: dict[str, tuple[int, int]], configs: MinIsrConfigs) -> TopicInfo:
        """From ``topic id -> name`` and ``topic id -> (deleted µs, deleted offset)`` (µs None: unknown;
        a deletion whose offset is unknown cannot be placed and is left out).

        Examples
        --------
        >>> info = TopicInfo.of({"id1": "orders"}, {"id2": (5, 7)}, min_isr_configs([(0, 0, 1, 2, "orders", "2")]))
        >>> info.ids.to_pylist(), info.names.to_pylist(), info.ref.tolist(), info.deleted_offset.tolist()
        (['id1', 'id2'], ['orders', None], [0, -1], [0, 7])
        """
        ids = list(dict.fromkeys([*topics, *removed]))
        names = [topics.get(i) for i in ids]
        position = {name: k for k, name in enumerate(configs.topics)}
        ref = np.array([position.get(n, -1) if n is not None else -1 for n in names], np.int64)
        gone = [g if g is not None and g[1] is not None else None for g in (removed.get(i) for i in ids)]
        return TopicInfo(
            ids=pa.array(ids, pa.string()), names=pa.array(names, pa.string()), ref=ref,
            deleted_valid=np.array([g is not None for g in gone], np.uint8),
            deleted_offset=np.array([0 if g is None else g[1] for g in gone], np.int64),
            deleted_us=np.array([0 if g is None or g[0] is None else g[0] for g in gone], np.int64),
            deleted_t_valid=np.array([g is not None and g[0] is not None for g in gone], np.uint8))

    def lookup(self, topic_ids: pa.Array) -> np.ndarray:
        """Index of each topic id in :attr:`ids` (-1 when the log has no record of that topic)."""
        return pc.fill_null(pc.index_in(topic_ids, value_set=self.ids), -1).to_numpy().astype(np.int64)


# ---------------------------------------------------------------------------------------------
# the compiled replay

# scalar state of the current partition
(S_HAS_KEY, S_EXISTS, S_STOPPED, S_LEADER, S_TOPIC_SET, S_TOPIC_CFG, S_CLUSTER_SET, S_CLUSTER_CFG, S_CURSOR,
 S_DEL_VALID, S_DEL_OFFSET, S_DEL_US, S_TOPIC_REF, S_OPEN, S_O_START, S_O_OFFSET, S_O_LEADER, S_O_MIN, S_O_RF,
 S_ELR_NULL, S_O_ELR_NULL, S_N_ISR, S_N_REP, S_N_ADD, S_N_ELR, S_O_N_ISR, S_O_N_REP, S_O_N_ELR, S_LOG_END,
 S_STATIC, S_N_OUT, S_HAS_T, S_LAST_T, S_DEL_T_VALID) = range(34)
_N_STATE = 34
# replica lists of the state: current, and of the open interval
L_ISR, L_REP, L_ADD, L_ELR, L_O_ISR, L_O_REP, L_O_ELR = range(7)
# scalar outputs per interval
(O_KEY_ROW, O_START, O_END, O_OFFSET, O_LEADER, O_MIN, O_RF, O_REASON, O_ELR_NULL, O_N_ISR, O_N_REP,
 O_N_ELR) = range(12)
_N_OUT = 12


@njit(cache=True, nogil=True)
def _grow2(a: np.ndarray, need: int) -> np.ndarray:
    if need <= a.shape[1]:
        return a
    b = np.empty((a.shape[0], max(need, 2 * a.shape[1])), a.dtype)
    b[:, : a.shape[1]] = a
    return b


@njit(cache=True, nogil=True)
def _grow1(a: np.ndarray, need: int) -> np.ndarray:
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True, nogil=True)
def _close(st: np.ndarray, lists: np.ndarray, end_us: int, reason: int, key_row: int, o: np.ndarray,
           oi: np.ndarray, orep: np.ndarray, oe: np.ndarray, nv: np.ndarray) -> tuple:
    """Emit the open interval (if any), ending at ``end_us`` for ``reason``."""
    if st[S_OPEN] == 0:
        return o, oi, orep, oe
    k = st[S_N_OUT]
    o = _grow2(o, k + 1)
    o[O_KEY_ROW, k] = key_row
    o[O_START, k] = st[S_O_START]
    o[O_END, k] = end_us
    o[O_OFFSET, k] = st[S_O_OFFSET]
    o[O_LEADER, k] = st[S_O_LEADER]
    o[O_MIN, k] = st[S_O_MIN]
    o[O_RF, k] = st[S_O_RF]
    o[O_REASON, k] = reason
    o[O_ELR_NULL, k] = st[S_O_ELR_NULL]
    ni, nr, ne = st[S_O_N_ISR], st[S_O_N_REP], st[S_O_N_ELR]
    o[O_N_ISR, k] = ni
    o[O_N_REP, k] = nr
    o[O_N_ELR, k] = ne
    oi = _grow1(oi, nv[0] + ni)
    orep = _grow1(orep, nv[1] + nr)
    oe = _grow1(oe, nv[2] + ne)
    oi[nv[0] : nv[0] + ni] = lists[L_O_ISR, :ni]
    orep[nv[1] : nv[1] + nr] = lists[L_O_REP, :nr]
    oe[nv[2] : nv[2] + ne] = lists[L_O_ELR, :ne]
    nv[0] += ni
    nv[1] += nr
    nv[2] += ne
    st[S_N_OUT] = k + 1
    st[S_OPEN] = 0
    return o, oi, orep, oe


@njit(cache=True, nogil=True)
def _same(lists: np.ndarray, a: int, b: int, n: int) -> bool:
    for i in range(n):
        if lists[a, i] != lists[b, i]:
            return False
    return True


@njit(cache=True, nogil=True)
def _evaluate(st: np.ndarray, lists: np.ndarray, bcfg: np.ndarray, brokers: np.ndarray, t_us: int, offset: int,
              key_row: int, o: np.ndarray, oi: np.ndarray, orep: np.ndarray, oe: np.ndarray,
              nv: np.ndarray) -> tuple:
    """After a change: open a new interval if the visible state (or the effective min ISR) differs."""
    leader = st[S_LEADER]
    if st[S_TOPIC_SET]:
        min_isr = st[S_TOPIC_CFG]
    else:
        min_isr = -1
        found = False
        if leader >= 0:
            for j in range(brokers.shape[0]):
                if brokers[j] == leader and bcfg[1, j]:
                    min_isr = bcfg[0, j]
                    found = True
        if not found:
            min_isr = st[S_CLUSTER_CFG] if st[S_CLUSTER_SET] else st[S_STATIC]
    ni, nr, ne = st[S_N_ISR], st[S_N_REP], st[S_N_ELR]
    if (st[S_OPEN] and st[S_O_LEADER] == leader and st[S_O_MIN] == min_isr and st[S_O_N_ISR] == ni
            and st[S_O_N_REP] == nr and st[S_O_ELR_NULL] == st[S_ELR_NULL]
            and (st[S_ELR_NULL] or st[S_O_N_ELR] == ne)
            and _same(lists, L_ISR, L_O_ISR, ni) and _same(lists, L_REP, L_O_REP, nr)
            and (st[S_ELR_NULL] or _same(lists, L_ELR, L_O_ELR, ne))):
        return o, oi, orep, oe
    o, oi, orep, oe = _close(st, lists, t_us, 0, key_row, o, oi, orep, oe, nv)
    rf = 0
    for i in range(nr):
        adding = False
        for j in range(st[S_N_ADD]):
            if lists[L_ADD, j] == lists[L_REP, i]:
                adding = True
        if not adding:
            rf += 1
    lists[L_O_ISR, :ni] = lists[L_ISR, :ni]
    lists[L_O_REP, :nr] = lists[L_REP, :nr]
    lists[L_O_ELR, :ne] = lists[L_ELR, :ne]
    st[S_O_N_ISR] = ni
    st[S_O_N_REP] = nr
    st[S_O_N_ELR] = ne
    st[S_O_ELR_NULL] = st[S_ELR_NULL]
    st[S_O_LEADER] = leader
    st[S_O_MIN] = min_isr
    st[S_O_RF] = rf
    st[S_O_START] = t_us
    st[S_O_OFFSET] = offset
    st[S_OPEN] = 1
    return o, oi, orep, oe


@njit(cache=True, nogil=True)
def _known_time(st: np.ndarray, valid: int, t_us: int) -> tuple:
    """``(known, time)`` of an event: its own time, else the partition's latest known one, else unknown."""
    if valid:
        st[S_HAS_T] = 1
        st[S_LAST_T] = t_us
        return True, t_us
    if st[S_HAS_T]:
        return True, st[S_LAST_T]
    return False, 0


@njit(cache=True, nogil=True)
def _configs(st: np.ndarray, lists: np.ndarray, bcfg: np.ndarray, c_off: np.ndarray, c_seq: np.ndarray,
             c_t: np.ndarray, c_tv: np.ndarray, c_kind: np.ndarray, c_target: np.ndarray, c_value: np.ndarray,
             c_valid: np.ndarray,
             brokers: np.ndarray, until_off: int, until_seq: int, everything: bool, key_row: int,
             o: np.ndarray, oi: np.ndarray, orep: np.ndarray, oe: np.ndarray, nv: np.ndarray) -> tuple:
    """Apply the config changes up to ``(until_off, until_seq)`` (or all that remain)."""
    while st[S_CURSOR] < c_off.shape[0]:
        j = st[S_CURSOR]
        if not everything and (c_off[j] > until_off or (c_off[j] == until_off and c_seq[j] > until_seq)):
            break
        kind = c_kind[j]
        if kind == _TOPIC and c_target[j] != st[S_TOPIC_REF]:
            st[S_CURSOR] = j + 1
            continue
        if st[S_DEL_VALID] and c_off[j] >= st[S_DEL_OFFSET]:
            st[S_STOPPED] = 1
            break
        if kind == _TOPIC:
            st[S_TOPIC_SET] = c_valid[j]
            st[S_TOPIC_CFG] = c_value[j]
        elif kind == _CLUSTER:
            st[S_CLUSTER_SET] = c_valid[j]
            st[S_CLUSTER_CFG] = c_value[j]
        else:
            bcfg[0, c_target[j]] = c_value[j]
            bcfg[1, c_target[j]] = c_valid[j]
        st[S_CURSOR] = j + 1
        if st[S_EXISTS]:
            known, t = _known_time(st, c_tv[j], c_t[j])
            if known:
                o, oi, orep, oe = _evaluate(st, lists, bcfg, brokers, t, c_off[j], key_row, o, oi, orep, oe, nv)
    return o, oi, orep, oe


@njit(cache=True, nogil=True)
def _end_key(st: np.ndarray, lists: np.ndarray, bcfg: np.ndarray, c_off: np.ndarray, c_seq: np.ndarray,
             c_t: np.ndarray, c_tv: np.ndarray, c_kind: np.ndarray, c_target: np.ndarray, c_value: np.ndarray,
             c_valid: np.ndarray,
             brokers: np.ndarray, key_row: int, o: np.ndarray, oi: np.ndarray, orep: np.ndarray, oe: np.ndarray,
             nv: np.ndarray) -> tuple:
    """The partition's last rows are replayed: the config changes after them, then the final close."""
    if not st[S_STOPPED]:
        o, oi, orep, oe = _configs(st, lists, bcfg, c_off, c_seq, c_t, c_tv, c_kind, c_target, c_value, c_valid,
                                   brokers, 0, 0, True, key_row, o, oi, orep, oe, nv)
    if st[S_DEL_VALID]:
        # an open interval has a known start, so a deletion of unknown time ends it at the latest known time
        end = st[S_DEL_US] if st[S_DEL_T_VALID] else st[S_LAST_T]
        o, oi, orep, oe = _close(st, lists, end, 1, key_row, o, oi, orep, oe, nv)
    else:
        o, oi, orep, oe = _close(st, lists, st[S_LOG_END], 2, key_row, o, oi, orep, oe, nv)
    st[S_HAS_KEY] = 0
    return o, oi, orep, oe


@njit(cache=True, nogil=True)
def _set_list(lists: np.ndarray, k: int, off: np.ndarray, val: np.ndarray, r: int) -> int:
    n = off[r + 1] - off[r]
    for i in range(n):
        lists[k, i] = val[off[r] + i]
    return n


@njit(cache=True, nogil=True)
def _replay(st: np.ndarray, lists: np.ndarray, bcfg: np.ndarray, brokers: np.ndarray,
            c_off: np.ndarray, c_seq: np.ndarray, c_t: np.ndarray, c_tv: np.ndarray, c_kind: np.ndarray,
            c_target: np.ndarray, c_value: np.ndarray, c_valid: np.ndarray,
            starts: np.ndarray, offset: np.ndarray, offset_valid: np.ndarray, seq: np.ndarray, t_us: np.ndarray,
            t_valid: np.ndarray, full: np.ndarray,
            leader: np.ndarray, leader_valid: np.ndarray,
            isr_off: np.ndarray, isr_val: np.ndarray, isr_valid: np.ndarray,
            rep_off: np.ndarray, rep_val: np.ndarray, rep_valid: np.ndarray,
            add_off: np.ndarray, add_val: np.ndarray, add_valid: np.ndarray,
            elr_off: np.ndarray, elr_val: np.ndarray, elr_valid: np.ndarray,
            topic_ref: np.ndarray, del_valid: np.ndarray, del_off: np.ndarray, del_us: np.ndarray,
            del_t_valid: np.ndarray, finish: bool) -> tuple:
    """Replay one batch of sorted partition rows (or, with ``finish``, close the last partition)."""
    st[S_N_OUT] = 0
    o = np.empty((_N_OUT, 64), np.int64)
    oi = np.empty(256, np.int32)
    orep = np.empty(256, np.int32)
    oe = np.empty(256, np.int32)
    nv = np.zeros(3, np.int64)
    for r in range(starts.shape[0]):
        if starts[r]:
            if st[S_HAS_KEY]:
                o, oi, orep, oe = _end_key(st, lists, bcfg, c_off, c_seq, c_t, c_tv, c_kind, c_target, c_value,
                                           c_valid, brokers, r - 1, o, oi, orep, oe, nv)
            st[S_HAS_KEY] = 1
            st[S_EXISTS] = 0
            st[S_STOPPED] = 0
            st[S_LEADER] = -1
            st[S_TOPIC_SET] = 0
            st[S_CLUSTER_SET] = 0
            st[S_CURSOR] = 0
            st[S_DEL_VALID] = del_valid[r]
            st[S_DEL_OFFSET] = del_off[r]
            st[S_DEL_US] = del_us[r]
            st[S_DEL_T_VALID] = del_t_valid[r]
            st[S_HAS_T] = 0
            st[S_TOPIC_REF] = topic_ref[r]
            st[S_OPEN] = 0
            st[S_ELR_NULL] = 1
            st[S_N_ISR] = 0
            st[S_N_REP] = 0
            st[S_N_ADD] = 0
            st[S_N_ELR] = 0
            bcfg[1, :] = 0
        if st[S_STOPPED] or not offset_valid[r]:
            continue  # a row without an offset cannot be placed in the log (they sort last)
        o, oi, orep, oe = _configs(st, lists, bcfg, c_off, c_seq, c_t, c_tv, c_kind, c_target, c_value, c_valid,
                                   brokers, offset[r], seq[r], False, r, o, oi, orep, oe, nv)
        if st[S_STOPPED]:
            continue
        if st[S_DEL_VALID] and offset[r] >= st[S_DEL_OFFSET]:
            st[S_STOPPED] = 1
            continue
        if full[r]:
            st[S_LEADER] = leader[r] if leader_valid[r] else -1
            st[S_N_ISR] = _set_list(lists, L_ISR, isr_off, isr_val, r) if isr_valid[r] else 0
            st[S_N_REP] = _set_list(lists, L_REP, rep_off, rep_val, r) if rep_valid[r] else 0
            st[S_N_ADD] = _set_list(lists, L_ADD, add_off, add_val, r) if add_valid[r] else 0
            if elr_valid[r]:
                st[S_N_ELR] = _set_list(lists, L_ELR, elr_off, elr_val, r)
                st[S_ELR_NULL] = 0
            else:
                st[S_N_ELR] = 0
                st[S_ELR_NULL] = 1
            st[S_EXISTS] = 1
        else:
            if not st[S_EXISTS]:
                continue  # a change for a partition whose creation is not in this log
            if leader_valid[r] and leader[r] != -2:
                st[S_LEADER] = leader[r]
            if isr_valid[r]:
                st[S_N_ISR] = _set_list(lists, L_ISR, isr_off, isr_val, r)
            if rep_valid[r]:
                st[S_N_REP] = _set_list(lists, L_REP, rep_off, rep_val, r)
            if add_valid[r]:
                st[S_N_ADD] = _set_list(lists, L_ADD, add_off, add_val, r)
            if elr_valid[r]:
                st[S_N_ELR] = _set_list(lists, L_ELR, elr_off, elr_val, r)
                st[S_ELR_NULL] = 0
        known, t = _known_time(st, t_valid[r], t_us[r])
        if known:
            o, oi, orep, oe = _evaluate(st, lists, bcfg, brokers, t, offset[r], r, o, oi, orep, oe, nv)
    if finish and st[S_HAS_KEY]:
        o, oi, orep, oe = _end_key(st, lists, bcfg, c_off, c_seq, c_t, c_tv, c_kind, c_target, c_value, c_valid,
                                   brokers, -1, o, oi, orep, oe, nv)
    k = st[S_N_OUT]
    return o[:, :k], oi[: nv[0]], orep[: nv[1]], oe[: nv[2]]


# ---------------------------------------------------------------------------------------------
# the replay object (one per Spark partition)


def _list_arrays(col: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(offsets, values, valid, longest)`` of an ``array<int>`` column."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    offsets = col.offsets.to_numpy().astype(np.int64)
    values = pc.fill_null(col.values, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    valid = col.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8)
    lengths = np.diff(offsets)
    longest = int(lengths.max()) if lengths.size else 0
    return offsets, values, valid, longest


def _ints(col: pa.Array, fill: int = 0) -> tuple[np.ndarray, np.ndarray]:
    valid = col.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8)
    return pc.fill_null(col, fill).to_numpy(zero_copy_only=False).astype(np.int64), valid


def _lists(values: np.ndarray, lengths: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    offsets = np.zeros(lengths.size + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    mask = None if null is None else pa.array(null.astype(np.bool_))
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, pa.int32()), mask=mask)


class IsrReplay:
    """The :class:`~workbench.analysis.replay.KeyedReplay` of :func:`~workbench.analysis.isr.partition_states`.

    Input rows (sorted by ``topic_id, partition, offset, seq``): ``offset, seq, t_us, full``
    (PartitionRecord) ``, topic_id, partition, leader, isr, replicas, adding, elr``; the topics'
    names and deletions come with ``topics``. Output: :data:`REPLAY_SCHEMA`. Any column may be
    null: rows without an offset are skipped, events without a time take the partition's latest
    known time (see the module's docstring); a null leader or list leaves a PartitionChangeRecord's
    unchanged and is none (-1, empty) in a PartitionRecord.
    """

    def __init__(self, configs: MinIsrConfigs, topics: TopicInfo, log_end_us: int, static_min_isr: int) -> None:
        self.c = configs
        self.topics = topics
        self.st = np.zeros(_N_STATE, np.int64)
        self.st[S_LOG_END] = log_end_us
        self.st[S_STATIC] = static_min_isr
        self.lists = np.zeros((7, 16), np.int32)
        self.bcfg = np.zeros((2, max(1, configs.brokers.size)), np.int64)
        self.carried: dict[str, Any] = {"topic_id": None, "partition": None, "topic": -1}
        self.schema = _output_schema()

    def _run(self, batch: pa.RecordBatch | None, starts: np.ndarray, which: np.ndarray, finish: bool) -> tuple:
        c = self.c
        if batch is None or batch.num_rows == 0:
            e64, e32, e8 = np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8)
            z = np.zeros(1, np.int64)
            return _replay(self.st, self.lists, self.bcfg, c.brokers, c.offset, c.seq, c.t_us, c.t_valid, c.kind,
                           c.target, c.value, c.valid, np.zeros(0, np.bool_), e64, e8, e64, e64, e8, e8, e64, e8,
                           z, e32, e8, z, e32, e8, z, e32, e8, z, e32, e8, e64, e8, e64, e64, e8, finish)
        col = batch.column
        isr = _list_arrays(col("isr"))
        rep = _list_arrays(col("replicas"))
        add = _list_arrays(col("adding"))
        elr = _list_arrays(col("elr"))
        longest = max(isr[3], rep[3], add[3], elr[3])
        if longest > self.lists.shape[1]:
            grown = np.zeros((7, max(longest, 2 * self.lists.shape[1])), np.int32)
            grown[:, : self.lists.shape[1]] = self.lists
            self.lists = grown
        leader, leader_valid = _ints(col("leader"))
        offset, offset_valid = _ints(col("offset"))
        t_us, t_valid = _ints(col("t_us"))
        t = self.topics
        known = which >= 0
        at = np.maximum(which, 0)

        def per_topic(values: np.ndarray, missing: int) -> np.ndarray:
            return np.where(known, values[at] if values.size else missing, missing)

        return _replay(self.st, self.lists, self.bcfg, c.brokers, c.offset, c.seq, c.t_us, c.t_valid, c.kind,
                       c.target, c.value, c.valid, starts, offset, offset_valid, _ints(col("seq"))[0], t_us, t_valid,
                       pc.fill_null(col("full"), False).to_numpy(zero_copy_only=False).astype(np.uint8),
                       leader, leader_valid, isr[0], isr[1], isr[2], rep[0], rep[1], rep[2], add[0], add[1], add[2],
                       elr[0], elr[1], elr[2], per_topic(t.ref, -1).astype(np.int64),
                       per_topic(t.deleted_valid, 0).astype(np.uint8), per_topic(t.deleted_offset, 0).astype(np.int64),
                       per_topic(t.deleted_us, 0).astype(np.int64), per_topic(t.deleted_t_valid, 0).astype(np.uint8),
                       finish)

    def _assemble(self, batch: pa.RecordBatch | None, which: np.ndarray, out: tuple) -> pa.RecordBatch | None:
        o, vi, vr, ve = out
        k = o.shape[1]
        if k == 0:
            return None
        # key columns: rows of this batch, or (-1) the key carried from the previous one
        carried = {"topic_id": pa.array([self.carried["topic_id"]], pa.string()),
                   "partition": pa.array([self.carried["partition"]], pa.int32())}
        if batch is not None and batch.num_rows:
            keycols = {n: pa.concat_arrays([batch.column(n).cast(a.type), a]) for n, a in carried.items()}
            rows = np.where(o[O_KEY_ROW] < 0, batch.num_rows, o[O_KEY_ROW])
            topic_of = np.append(which, self.carried["topic"])[rows]
        else:
            keycols, rows = carried, np.zeros(k, np.int64)
            topic_of = np.full(k, self.carried["topic"], np.int64)
        idx = pa.array(rows)
        names = self.topics.names.take(pa.array(np.maximum(topic_of, 0))) if len(self.topics.names) else \
            pa.nulls(k, pa.string())
        topic = pc.if_else(pa.array(topic_of >= 0), names, pa.scalar(None, pa.string()))
        leader = o[O_LEADER]
        n_isr, min_isr = o[O_N_ISR], o[O_MIN]
        offline = leader < 0
        under_min = n_isr < min_isr
        at_min = n_isr == min_isr
        under_rep = n_isr < o[O_RF]
        state = np.where(offline, 4, np.where(under_min, 3, np.where(at_min, 2, np.where(under_rep, 1, 0))))
        arrays = [
            topic, keycols["topic_id"].take(idx), keycols["partition"].take(idx),
            pa.array(o[O_START]), pa.array(o[O_END]), pa.array(o[O_OFFSET]),
            pa.array(leader.astype(np.int32)),
            _lists(vi, o[O_N_ISR]), _lists(vr, o[O_N_REP]), _lists(ve, o[O_N_ELR], o[O_ELR_NULL] != 0),
            pa.array(min_isr.astype(np.int32)),
            pa.array(under_rep), pa.array(under_min), pa.array(at_min), pa.array(offline),
            pa.array(list(_STATES), pa.string()).take(pa.array(state)),
            pa.array(list(_REASONS), pa.string()).take(pa.array(o[O_REASON])),
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def step(self, batch: pa.RecordBatch, starts: np.ndarray) -> pa.RecordBatch | None:
        """Replay one batch of sorted rows (see :class:`~workbench.analysis.replay.KeyedReplay`)."""
        which = self.topics.lookup(batch.column("topic_id"))
        result = self._assemble(batch, which, self._run(batch, starts, which, False))
        last = batch.num_rows - 1
        self.carried = {"topic_id": batch.column("topic_id")[last].as_py(),
                        "partition": batch.column("partition")[last].as_py(), "topic": int(which[last])}
        return result

    def finish(self) -> pa.RecordBatch | None:
        """Close the last partition."""
        empty = np.zeros(0, np.int64)
        return self._assemble(None, empty, self._run(None, np.zeros(0, np.bool_), empty, True))


def _output_schema() -> pa.Schema:
    ints = pa.list_(pa.int32())
    return pa.schema([
        ("topic", pa.string()), ("topic_id", pa.string()), ("partition", pa.int32()), ("start", pa.int64()),
        ("end", pa.int64()), ("start_offset", pa.int64()), ("leader", pa.int32()), ("isr", ints),
        ("replicas", ints), ("elr", ints), ("min_isr", pa.int32()), ("under_replicated", pa.bool_()),
        ("under_min_isr", pa.bool_()), ("at_min_isr", pa.bool_()), ("offline", pa.bool_()), ("state", pa.string()),
        ("end_reason", pa.string()),
    ])


# ---------------------------------------------------------------------------------------------
# UnderMinIsrPartitionCount per broker

COUNTS_SCHEMA = "broker int, time long, count int"
"""Output of :class:`CountsReplay` (``time`` in epoch microseconds)."""

(C_HAS_KEY, C_COUNT, C_HAS_PREV, C_PREV, C_HAS_GROUP, C_TIME, C_SUM, C_LAST_EMITTED, C_LOG_END, C_N_OUT) = range(10)


@njit(cache=True, nogil=True)
def _count_emit(st: np.ndarray, o: np.ndarray, key_row: int, t: int, count: int) -> np.ndarray:
    k = st[C_N_OUT]
    o = _grow2(o, k + 1)
    o[0, k] = key_row
    o[1, k] = t
    o[2, k] = count
    st[C_N_OUT] = k + 1
    st[C_LAST_EMITTED] = t
    return o


@njit(cache=True, nogil=True)
def _count_group(st: np.ndarray, o: np.ndarray, key_row: int) -> np.ndarray:
    """Close the pending group of same-time steps: the running count, emitted when it changed."""
    if st[C_HAS_GROUP]:
        st[C_COUNT] += st[C_SUM]
        if not st[C_HAS_PREV] or st[C_PREV] != st[C_COUNT]:
            o = _count_emit(st, o, key_row, st[C_TIME], st[C_COUNT])
        st[C_HAS_PREV] = 1
        st[C_PREV] = st[C_COUNT]
        st[C_HAS_GROUP] = 0
    return o


@njit(cache=True, nogil=True)
def _count_end(st: np.ndarray, o: np.ndarray, key_row: int) -> np.ndarray:
    o = _count_group(st, o, key_row)
    if st[C_LAST_EMITTED] != st[C_LOG_END]:
        o = _count_emit(st, o, key_row, st[C_LOG_END], st[C_COUNT])
    st[C_HAS_KEY] = 0
    return o


@njit(cache=True, nogil=True)
def _counts(st: np.ndarray, starts: np.ndarray, t: np.ndarray, known: np.ndarray, delta: np.ndarray,
            finish: bool) -> np.ndarray:
    """Running count per broker of one batch of ``(time, delta)`` steps sorted by broker and time
    (steps whose time is not ``known`` are skipped)."""
    st[C_N_OUT] = 0
    o = np.empty((3, 64), np.int64)
    for r in range(starts.shape[0]):
        if starts[r]:
            if st[C_HAS_KEY]:
                o = _count_end(st, o, r - 1)
            st[C_HAS_KEY] = 1
            st[C_COUNT] = 0
            st[C_HAS_PREV] = 0
            st[C_HAS_GROUP] = 0
            st[C_LAST_EMITTED] = -(2**62)
        if not known[r]:
            continue
        if st[C_HAS_GROUP] and t[r] != st[C_TIME]:
            o = _count_group(st, o, r)
        if not st[C_HAS_GROUP]:
            st[C_HAS_GROUP] = 1
            st[C_TIME] = t[r]
            st[C_SUM] = 0
        st[C_SUM] += delta[r]
    if finish and st[C_HAS_KEY]:
        o = _count_end(st, o, -1)
    return o[:, : st[C_N_OUT]]


class CountsReplay:
    """The :class:`~workbench.analysis.replay.KeyedReplay` of :func:`~workbench.analysis.isr.under_min_isr_counts`.

    Input rows (sorted by ``broker, time``): ``broker, time`` (µs) and ``delta`` (+1 when an
    under-min-ISR interval the broker leads opens, -1 when it closes, 0 for the broker's first
    appearance as a leader). Output: :data:`COUNTS_SCHEMA`, one row per change of the count, the
    first appearance, and the end of the log. A step whose time is unknown (null) is skipped, a
    null delta moves nothing, and a null broker is a broker of its own (null in the output).
    """

    def __init__(self, log_end_us: int) -> None:
        self.st = np.zeros(10, np.int64)
        self.st[C_LOG_END] = log_end_us
        self.carried: tuple[int, int] = (0, 0)   # the last broker of the previous batch, and its validity
        self.schema = pa.schema([("broker", pa.int32()), ("time", pa.int64()), ("count", pa.int32())])

    def _assemble(self, brokers: np.ndarray, valid: np.ndarray, o: np.ndarray) -> pa.RecordBatch | None:
        if o.shape[1] == 0:
            return None
        rows = np.where(o[0] < 0, brokers.size, o[0])
        b = np.append(brokers, self.carried[0])[rows]
        null = np.append(valid, self.carried[1])[rows] == 0
        return pa.RecordBatch.from_arrays(
            [pa.array(b.astype(np.int32), mask=null), pa.array(o[1]), pa.array(o[2].astype(np.int32))],
            schema=self.schema)

    def step(self, batch: pa.RecordBatch, starts: np.ndarray) -> pa.RecordBatch | None:
        """Replay one batch of sorted steps."""
        brokers, valid = _ints(batch.column("broker"))
        t, known = _ints(batch.column("time"))
        o = _counts(self.st, starts, t, known, _ints(batch.column("delta"))[0], False)
        result = self._assemble(brokers, valid, o)
        self.carried = (int(brokers[-1]), int(valid[-1]))
        return result

    def finish(self) -> pa.RecordBatch | None:
        """Close the last broker."""
        empty = np.zeros(0, np.int64)
        return self._assemble(empty, np.zeros(0, np.uint8),
                              _counts(self.st, np.zeros(0, np.bool_), empty, np.zeros(0, np.uint8), empty, True))


class CountSteps:
    """The steps :class:`CountsReplay` takes, from the intervals of one task of :class:`IsrReplay`.

    A :class:`~workbench.analysis.replay.Follower` of the ISR replay (it sees each task's intervals
    as they are produced, in any order of partitions): +1 at the start of each under-min-ISR
    interval of a leader broker, -1 at its end (unless the log ended it), 0 at the earliest start
    of each leader broker's intervals; summed per ``(broker, time)`` as they come, so a task keeps
    about one row per broker and distinct time, not one per interval. Output
    (:data:`STEPS_SCHEMA`): the summed steps, at :meth:`finish`. An interval whose start or end is
    unknown (null) moves no count (its start can still be the broker's first appearance).
    """

    #: Held step rows past which they are summed again.
    COMPACT_ROWS = 1 << 20

    def __init__(self) -> None:
        self.held: list[pa.Table] = []
        self.rows = 0
        self.schema = pa.schema([("broker", pa.int32()), ("time", pa.int64()), ("delta", pa.int64())])

    def _summed(self) -> pa.Table:
        table = pa.concat_tables(self.held) if self.held else self.schema.empty_table()
        summed = table.group_by(["broker", "time"], use_threads=False).aggregate([("delta", "sum")])
        return summed.rename_columns(["broker", "time", "delta"]).select(self.schema.names).cast(self.schema)

    def step(self, batch: pa.RecordBatch, starts: np.ndarray) -> None:
        """Take one batch of intervals (``leader, start, end, under_min_isr, end_reason``)."""
        leader = pc.fill_null(batch.column("leader"), -1).to_numpy(zero_copy_only=False).astype(np.int32)
        start, start_known = _ints(batch.column("start"))
        end, end_known = _ints(batch.column("end"))
        under = pc.fill_null(batch.column("under_min_isr"), False).to_numpy(zero_copy_only=False)
        logged = pc.fill_null(pc.equal(batch.column("end_reason"), "log_end"), False).to_numpy(zero_copy_only=False)
        led = (leader >= 0) & (start_known != 0)
        opens = led & under & (logged | (end_known != 0))
        closes = opens & ~logged
        brokers, where = np.unique(leader[led], return_inverse=True)
        first = np.full(brokers.size, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(first, where, start[led])
        parts = [(leader[opens], start[opens], 1), (leader[closes], end[closes], -1), (brokers, first, 0)]
        self.held.append(pa.table({
            "broker": pa.array(np.concatenate([p[0] for p in parts]).astype(np.int32)),
            "time": pa.array(np.concatenate([p[1] for p in parts])),
            "delta": pa.array(np.concatenate([np.full(p[0].size, p[2], np.int64) for p in parts])),
        }))
        self.rows += self.held[-1].num_rows
        if self.rows >= self.COMPACT_ROWS:
            self.held = [self._summed()]
            self.rows = self.held[0].num_rows

    def finish(self) -> pa.RecordBatch | None:
        """The task's summed steps."""
        summed = self._summed().combine_chunks().to_batches()
        return summed[0] if summed else None


STEPS_SCHEMA = "broker int, time long, delta long"
"""Output of :class:`CountSteps` (``time`` in epoch microseconds)."""


def summary_rows(batch: pa.RecordBatch) -> pa.RecordBatch:
    """:class:`SummaryReplay`'s input from a batch of :class:`IsrReplay` output (times in µs)."""
    names = ["topic_id", "partition", "topic", "start", "end", "start_offset", "min_isr", "under_min_isr",
             "under_replicated", "offline"]
    columns = [batch.column(n) for n in names]
    columns.insert(6, pc.list_value_length(batch.column("isr")).cast(pa.int32()))
    return pa.RecordBatch.from_arrays(columns, names=[*names[:6], "isr_size", *names[6:]])


# ---------------------------------------------------------------------------------------------
# per-partition summary

SUMMARY_SCHEMA = (
    "topic string, partition int, min_isr int, under_min_isr_seconds double, under_replicated_seconds double, "
    "offline_seconds double, first_under_min_isr long, isr_shrinks int, isr_expands int"
)
"""Output of :class:`SummaryReplay` (``first_under_min_isr`` in epoch microseconds)."""

(M_HAS_KEY, M_HAS_PREV, M_PREV, M_MIN, M_FIRST, M_HAS_FIRST, M_SHRINKS, M_EXPANDS, M_N_OUT, M_MIN_VALID) = range(10)


@njit(cache=True, nogil=True)
def _summary_emit(st: np.ndarray, sums: np.ndarray, o: np.ndarray, of: np.ndarray, key_row: int) -> tuple:
    k = st[M_N_OUT]
    o = _grow2(o, k + 1)
    of = _grow2(of, k + 1)
    o[0, k] = key_row
    o[1, k] = st[M_MIN]
    o[2, k] = st[M_FIRST]
    o[3, k] = st[M_HAS_FIRST]
    o[4, k] = st[M_SHRINKS]
    o[5, k] = st[M_EXPANDS]
    o[6, k] = st[M_MIN_VALID]
    of[0, k] = sums[0]
    of[1, k] = sums[1]
    of[2, k] = sums[2]
    st[M_N_OUT] = k + 1
    st[M_HAS_KEY] = 0
    return o, of


@njit(cache=True, nogil=True)
def _summary(st: np.ndarray, sums: np.ndarray, starts: np.ndarray, start: np.ndarray, start_ok: np.ndarray,
             end: np.ndarray, end_ok: np.ndarray, size: np.ndarray, size_ok: np.ndarray, min_isr: np.ndarray,
             min_ok: np.ndarray, under_min: np.ndarray, under_rep: np.ndarray, offline: np.ndarray,
             finish: bool) -> tuple:
    """Per partition (rows sorted by partition, start, start offset): time in each bad state, shrinks, expands."""
    st[M_N_OUT] = 0
    o = np.empty((7, 64), np.int64)
    of = np.empty((3, 64), np.float64)
    for r in range(starts.shape[0]):
        if starts[r]:
            if st[M_HAS_KEY]:
                o, of = _summary_emit(st, sums, o, of, r - 1)
            st[M_HAS_KEY] = 1
            st[M_HAS_PREV] = 0
            st[M_HAS_FIRST] = 0
            st[M_SHRINKS] = 0
            st[M_EXPANDS] = 0
            st[M_MIN_VALID] = 0
            sums[:] = 0.0
        secs = (end[r] - start[r]) / 1e6 if start_ok[r] and end_ok[r] else 0.0
        if under_min[r]:
            sums[0] += secs
            if not st[M_HAS_FIRST] and start_ok[r]:
                st[M_HAS_FIRST] = 1
                st[M_FIRST] = start[r]
        if under_rep[r]:
            sums[1] += secs
        if offline[r]:
            sums[2] += secs
        if size_ok[r]:
            if st[M_HAS_PREV]:
                if size[r] < st[M_PREV]:
                    st[M_SHRINKS] += 1
                elif size[r] > st[M_PREV]:
                    st[M_EXPANDS] += 1
            st[M_HAS_PREV] = 1
            st[M_PREV] = size[r]
        if min_ok[r]:
            st[M_MIN] = min_isr[r]
            st[M_MIN_VALID] = 1
    if finish and st[M_HAS_KEY]:
        o, of = _summary_emit(st, sums, o, of, -1)
    k = st[M_N_OUT]
    return o[:, :k], of[:, :k]


class SummaryReplay:
    """The :class:`~workbench.analysis.replay.KeyedReplay` of :func:`~workbench.analysis.isr.partition_summary`.

    Input rows (sorted by ``topic_id, partition, start, start_offset``): ``topic, start, end`` (µs),
    ``isr_size, min_isr, under_min_isr, under_replicated, offline``. Output: :data:`SUMMARY_SCHEMA`,
    one row per partition. Nulls: an interval whose start or end is unknown counts no seconds (one
    whose start is unknown cannot be the first under min ISR), an unknown ISR size is compared with
    nothing, an unknown ``min_isr`` is not the one in force, and a null flag is false.
    """

    def __init__(self) -> None:
        self.st = np.zeros(10, np.int64)
        self.sums = np.zeros(3, np.float64)
        self.carried: dict[str, Any] = {"topic": None, "partition": None}
        self.schema = pa.schema([
            ("topic", pa.string()), ("partition", pa.int32()), ("min_isr", pa.int32()),
            ("under_min_isr_seconds", pa.float64()), ("under_replicated_seconds", pa.float64()),
            ("offline_seconds", pa.float64()), ("first_under_min_isr", pa.int64()), ("isr_shrinks", pa.int32()),
            ("isr_expands", pa.int32())])

    def _assemble(self, batch: pa.RecordBatch | None, out: tuple) -> pa.RecordBatch | None:
        o, of = out
        k = o.shape[1]
        if k == 0:
            return None
        carried = {"topic": pa.array([self.carried["topic"]], pa.string()),
                   "partition": pa.array([self.carried["partition"]], pa.int32())}
        if batch is not None and batch.num_rows:
            keys = {n: pa.concat_arrays([batch.column(n).cast(carried[n].type), carried[n]]) for n in carried}
            rows = np.where(o[0] < 0, batch.num_rows, o[0])
        else:
            keys, rows = carried, np.zeros(k, np.int64)
        idx = pa.array(rows)
        return pa.RecordBatch.from_arrays([
            keys["topic"].take(idx), keys["partition"].take(idx), pa.array(o[1].astype(np.int32), mask=o[6] == 0),
            pa.array(of[0]), pa.array(of[1]), pa.array(of[2]), pa.array(o[2], mask=o[3] == 0),
            pa.array(o[4].astype(np.int32)), pa.array(o[5].astype(np.int32))], schema=self.schema)

    def _run(self, batch: pa.RecordBatch | None, starts: np.ndarray, finish: bool) -> tuple:
        if batch is None or batch.num_rows == 0:
            e64, e8 = np.zeros(0, np.int64), np.zeros(0, np.uint8)
            return _summary(self.st, self.sums, np.zeros(0, np.bool_), e64, e8, e64, e8, e64, e8, e64, e8, e8, e8, e8,
                            finish)
        col = batch.column

        def flag(name: str) -> np.ndarray:
            return pc.fill_null(col(name), False).to_numpy(zero_copy_only=False).astype(np.uint8)

        return _summary(self.st, self.sums, starts, *_ints(col("start")), *_ints(col("end")),
                        *_ints(col("isr_size")), *_ints(col("min_isr")), flag("under_min_isr"),
                        flag("under_replicated"), flag("offline"), finish)

    def step(self, batch: pa.RecordBatch, starts: np.ndarray) -> pa.RecordBatch | None:
        """Summarise one batch of sorted intervals."""
        result = self._assemble(batch, self._run(batch, starts, False))
        last = batch.num_rows - 1
        self.carried = {"topic": batch.column("topic")[last].as_py(),
                        "partition": batch.column("partition")[last].as_py()}
        return result

    def finish(self) -> pa.RecordBatch | None:
        """Close the last partition."""
        return self._assemble(None, self._run(None, np.zeros(0, np.bool_), True))
