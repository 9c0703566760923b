"""Parameters given by a person: times, typed values from the command line or a YAML file.

Checked before any Spark work starts, with one clear line per error.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError


def parse_instant(value: Any, name: str) -> dt.datetime | None:
    """A window bound given by a person: ISO 8601 text (UTC when naive), a datetime (a pandas
    ``Timestamp`` too) or ``numpy.datetime64``, or empty (``None``, blank text, ``NaT``) for none.

    The one parser of times given by a person: the report's parameters, a notebook's window and a
    view's From/To boxes read a time the same way (a time of day without a date is refused).

    Examples
    --------
    >>> parse_instant("2026-03-01T03:12:05", "start")
    datetime.datetime(2026, 3, 1, 3, 12, 5, tzinfo=datetime.timezone.utc)
    >>> parse_instant("", "start") is None
    True
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if type(value).__name__ in ("NaTType", "datetime64"):
        import pandas as pd

        value = pd.Timestamp(value)
        if value is pd.NaT:
            return None
    if isinstance(value, dt.datetime):
        stamp = value
    else:
        text = str(value).strip().replace(" ", "T", 1)
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            stamp = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ConfigError(f"{name}: expected a date and time such as 2026-03-01T03:12:05, got {value!r}") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.UTC)
    return stamp.astimezone(dt.UTC)


def parse_window(start: Any, end: Any) -> tuple[dt.datetime | None, dt.datetime | None]:
    """Both bounds of a time window (:func:`parse_instant`); a start after the end is refused.

    Raises
    ------
    ConfigError
        With one line per problem (each unreadable bound, then the order), named as given.

    Examples
    --------
    >>> parse_window("2026-03-02", "2026-03-01")
    Traceback (most recent call last):
    ...
    workbench.errors.ConfigError: time window: start 2026-03-02 is after end 2026-03-01
    """
    errors: list[str] = []
    bounds: list[dt.datetime | None] = []
    for value, name in ((start, "start"), (end, "end")):
        try:
            bounds.append(parse_instant(value, name))
        except ConfigError as exc:
            errors.append(str(exc))
            bounds.append(None)
    lo, hi = bounds
    if lo is not None and hi is not None and lo > hi:
        def shown(value: Any, stamp: dt.datetime) -> str:
            return value.strip() if isinstance(value, str) else stamp.isoformat()

        errors.append(f"time window: start {shown(start, lo)} is after end {shown(end, hi)}")
    if errors:
        raise ConfigError("\n".join(errors))
    return lo, hi


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def convert_parameter(name: str, kind: str, value: Any) -> Any:
    """``value`` as the declared ``kind``; strings (command line) are parsed, typed values (YAML) checked."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise ConfigError(f"parameter {name!r} is a bool; got {value!r} (use true or false)")
    if kind in ("int", "float"):
        if isinstance(value, bool):
            raise ConfigError(f"parameter {name!r} is an {kind}; got {value!r}")
        try:
            number = int(value) if kind == "int" else float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"parameter {name!r} is an {kind}; got {value!r}") from None
        if kind == "int" and isinstance(value, float) and not value.is_integer():
            raise ConfigError(f"parameter {name!r} is an int; got {value!r}")
        if kind == "float" and not math.isfinite(number):
            raise ConfigError(f"parameter {name!r} must be a finite number; got {value!r}")
        return number
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ConfigError(f"parameter {name!r} is a string; got {value!r}")
    return str(value)  # strings stay strings: -p start 2026 is not a number


def load_parameters_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Report parameters from a YAML file holding one mapping (``name: value`` lines).

    Examples
    --------
    >>> import tempfile; p = Path(tempfile.mkdtemp()) / "p.yaml"; _ = p.write_text("start: '2026-03-01T03:00:00'\\n")
    >>> load_parameters_file(p)
    {'start': '2026-03-01T03:00:00'}
    """
    import yaml

    source = Path(path)
    try:
        document = yaml.safe_load(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"parameters file {source}: cannot read it: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"parameters file {source}{where}: not YAML: {getattr(exc, 'problem', exc)}") from None
    if document is None:
        return {}
    if not isinstance(document, dict) or not all(isinstance(k, str) for k in document):
        raise ConfigError(f"parameters file {source}: expected a mapping of parameter names to values")
    return dict(document)
