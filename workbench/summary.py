"""The machine-readable side of a report: small frames as JSON records, and summary files.

Examples
--------
>>> import pandas as pd
>>> frame_records(pd.DataFrame({"a": [1]}))
[{'a': 1}]
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def json_value(value: Any) -> Any:
    """Make pandas/numpy scalars JSON-friendly: NaN/NaT become null, times ISO 8601 in UTC."""
    import pandas as pd

    if value is None:
        return None
    if isinstance(value, dt.datetime | dt.date | pd.Timestamp):
        if pd.isna(value):
            return None
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)  # the workbench's Spark sessions run in UTC
        return value.isoformat()
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def frame_records(frame: Any) -> list[dict[str, Any]]:
    """A small pandas frame as JSON-ready records (maps of figures stay maps, arrays lists, times ISO 8601).

    Examples
    --------
    >>> import pandas as pd
    >>> frame_records(pd.DataFrame({"a": [1], "m": [{"x": 2.0}], "t": [pd.Timestamp("2026-03-01 03:00")]}))
    [{'a': 1, 'm': {'x': 2.0}, 't': '2026-03-01T03:00:00+00:00'}]
    """
    out = []
    for rec in frame.to_dict("records"):
        row = {}
        for k, v in rec.items():
            if isinstance(v, dict):
                row[str(k)] = {str(a): json_value(b) for a, b in v.items()}
            elif isinstance(v, list | tuple) or (hasattr(v, "tolist") and getattr(v, "ndim", 0) == 1):
                row[str(k)] = [json_value(x) for x in list(v)]
            else:
                row[str(k)] = json_value(v)
        out.append(row)
    return out


def write_json(path: str | os.PathLike[str], document: Mapping[str, Any]) -> Path:
    """Write a summary document as JSON (parent directories created; ``generated`` time added).

    Examples
    --------
    >>> import tempfile, json
    >>> p = write_json(Path(tempfile.mkdtemp()) / "s.json", {"findings": []})
    >>> sorted(json.loads(p.read_text()))
    ['findings', 'generated']
    """
    target = Path(path).expanduser()
    body = {"generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), **document}
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(json.dumps(body, indent=2, default=json_value) + "\n", encoding="utf-8")
    partial.replace(target)
    return target
