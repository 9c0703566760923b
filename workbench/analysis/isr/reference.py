"""The reference replay of one partition's records (a Python loop per partition): the compiled replay's oracle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.analysis.isr.inputs import _UDF_SCHEMA, TOPIC_RESOURCE, _config_int

if TYPE_CHECKING:
    import pandas as pd


def _effective_min_isr(topic_cfg: int | None, broker_cfg: dict[str, int], cluster_cfg: int | None,
                       leader: int, static_min_isr: int) -> int:
    if topic_cfg is not None:
        return topic_cfg
    if leader >= 0 and str(leader) in broker_cfg:
        return broker_cfg[str(leader)]
    if cluster_cfg is not None:
        return cluster_cfg
    return static_min_isr


def _state_label(offline: bool, under_min: bool, at_min: bool, under_rep: bool) -> str:
    if offline:
        return "offline"
    if under_min:
        return "under_min_isr"
    if at_min:
        return "at_min_isr"
    if under_rep:
        return "under_replicated"
    return "healthy"


def _as_list(value: object) -> list[int] | None:
    if value is None:
        return None
    return [int(v) for v in value]  # type: ignore[union-attr]


def _replay_partition(pdf: pd.DataFrame, config_events: list[tuple], log_end_us: int,
                      static_min_isr: int) -> pd.DataFrame:
    """Walk one partition's records and the min ISR config changes in log order.

    Nulls as the compiled replay takes them (:mod:`workbench.analysis.isr.kernel`): a record
    without an offset is skipped; an event without a time takes the partition's latest known time,
    or, before it has one, changes the state without opening an interval.
    """
    import pandas as pd

    pdf = pdf.sort_values(["offset", "seq"], kind="stable")
    first = pdf.iloc[0]
    topic = first["topic"] if isinstance(first["topic"], str) else None
    topic_id, partition = first["topic_id"], int(first["partition"])
    deleted_offset = None if pd.isna(first["deleted_offset"]) else int(first["deleted_offset"])
    deleted_us = None if pd.isna(first["deleted_us"]) or deleted_offset is None else int(first["deleted_us"])
    pdf = pdf[pdf["offset"].notna()]

    # one merged event stream: ("p", row) for partition records, ("c", event) for config changes
    events: list[tuple[int, int, str, object]] = [
        (int(r.offset), 0 if pd.isna(r.seq) else int(r.seq), "p", r) for r in pdf.itertuples(index=False)
    ]
    for ev in config_events:
        offset, seq, _t, rtype, rname, _v = ev
        if offset is None or (rtype == TOPIC_RESOURCE and rname != topic):
            continue
        events.append((int(offset), int(seq), "c", ev))
    events.sort(key=lambda e: (e[0], e[1], 0 if e[2] == "c" else 1))

    topic_cfg: int | None = None
    broker_cfg: dict[str, int] = {}
    cluster_cfg: int | None = None
    leader, isr, replicas, adding, elr = -1, None, None, [], None
    exists = False
    rows: list[dict] = []
    current: dict | None = None
    last_known: int | None = None  # the partition's latest known time

    def close(at_us: int, reason: str) -> None:
        if current is not None:
            current["end"] = at_us
            current["end_reason"] = reason
            rows.append(current)

    for offset, _seq, kind, payload in events:
        if deleted_offset is not None and offset >= deleted_offset:
            break
        if kind == "c":
            _o, _s, t_us, rtype, rname, value = payload  # type: ignore[misc]
            parsed = _config_int(value)
            if rtype == TOPIC_RESOURCE:
                topic_cfg = parsed
            elif rname == "":
                cluster_cfg = parsed
            elif parsed is None:
                broker_cfg.pop(rname, None)
            else:
                broker_cfg[rname] = parsed
            if not exists:
                continue
        else:
            r = payload
            t_us = None if pd.isna(r.t_us) else int(r.t_us)  # type: ignore[attr-defined]
            full = r.record_type == "PartitionRecord"  # type: ignore[attr-defined]
            new_leader = r.leader  # type: ignore[attr-defined]
            if full:
                leader = -1 if pd.isna(new_leader) else int(new_leader)
                isr = _as_list(r.isr) or []  # type: ignore[attr-defined]
                replicas = _as_list(r.replicas) or []  # type: ignore[attr-defined]
                adding = _as_list(r.adding) or []  # type: ignore[attr-defined]
                elr = _as_list(r.elr)  # type: ignore[attr-defined]
                exists = True
            else:
                if not exists:
                    continue  # a change for a partition whose creation is not in this log
                if not pd.isna(new_leader) and int(new_leader) != -2:
                    leader = int(new_leader)
                for name in ("isr", "replicas", "adding", "elr"):
                    value = _as_list(getattr(r, name))
                    if value is not None:
                        if name == "isr":
                            isr = value
                        elif name == "replicas":
                            replicas = value
                        elif name == "adding":
                            adding = value
                        else:
                            elr = value
        if t_us is None:
            t_us = last_known
            if t_us is None:
                continue  # the state shows from the partition's next event with a known time
        else:
            last_known = int(t_us)
        min_isr = _effective_min_isr(topic_cfg, broker_cfg, cluster_cfg, leader, static_min_isr)
        isr_list = isr or []
        rf = len([b for b in (replicas or []) if b not in adding])
        offline = leader < 0
        under_min = len(isr_list) < min_isr
        at_min = len(isr_list) == min_isr
        under_rep = len(isr_list) < rf
        state = (leader, tuple(isr_list), tuple(replicas or []), None if elr is None else tuple(elr), min_isr)
        if current is not None and current["_key"] == state:
            continue
        close(t_us, "next_change")
        current = {
            "_key": state, "topic": topic, "topic_id": topic_id, "partition": partition,
            "start": t_us, "start_offset": offset, "leader": leader, "isr": list(isr_list),
            "replicas": list(replicas or []), "elr": None if elr is None else list(elr), "min_isr": min_isr,
            "under_replicated": under_rep, "under_min_isr": under_min, "at_min_isr": at_min,
            "offline": offline, "state": _state_label(offline, under_min, at_min, under_rep),
        }
    if deleted_offset is not None:
        if current is not None:  # an open interval had a known start: a deletion of unknown time ends it there
            close(deleted_us if deleted_us is not None else last_known, "topic_deleted")
    else:
        close(log_end_us, "log_end")
    columns = [c.split()[0] for c in _UDF_SCHEMA.split(", ")]
    return pd.DataFrame([{k: row[k] for k in columns} for row in rows], columns=columns)
