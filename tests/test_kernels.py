"""``workbench compile`` reaches every numba kernel, in the driver and in Spark's workers.

``make test`` runs it once more on the cache ``make venv``'s compile left, with numba's cache log on
(``NUMBA_DEBUG_CACHE``): every kernel of the package must be loaded (or saved) by that run, which
proves compile reaches it without compiling everything again. ``make test-full`` also runs it on
an empty cache (``NUMBA_CACHE_DIR``): afterwards every kernel has an index there.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import workbench

pytestmark = [pytest.mark.spark, pytest.mark.kernel]


def _dispatchers() -> dict[str, object]:
    """``module.function`` -> numba dispatcher, for every kernel of the package."""
    from numba.core.dispatcher import Dispatcher

    found = {}
    for info in pkgutil.walk_packages(workbench.__path__, "workbench."):
        spec = importlib.util.find_spec(info.name)
        if spec is None or spec.origin is None or "njit" not in Path(spec.origin).read_text():
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if isinstance(obj, Dispatcher) and obj.__module__ == module.__name__:
                found[f"{module.__name__.rsplit('.', 1)[-1]}.{obj.py_func.__qualname__}"] = obj
    return found


def kernels() -> set[str]:
    """``module.function`` of every numba kernel in the package (inlined ones have no code of their own)."""
    return {name for name, d in _dispatchers().items() if d.targetoptions.get("inline", "never") != "always"}


def _called_from(reached: set[str]) -> set[str]:
    """``reached`` and every kernel a reached kernel calls, transitively: a kernel loaded from the cache
    holds the machine code of the kernels it calls, which compile therefore reaches too."""
    dispatchers = _dispatchers()
    done, todo = set(), list(reached)
    while todo:
        name = todo.pop()
        if name in done or name not in dispatchers:
            done.add(name)
            continue
        done.add(name)
        module = name.rsplit(".", 1)[0]
        todo += [f"{module}.{g}" for g in dispatchers[name].py_func.__code__.co_names if f"{module}.{g}" in dispatchers]
    return done


#: A line of numba's cache log naming an index or data file it loaded or saved.
CACHE_LOG = re.compile(r"\[cache\] (?:index|data) (?:loaded from|saved to) '?([^'\s]+)")


def _kernel_name(path: str) -> str | None:
    """``module.function`` of a numba cache file's name (``kernel.step-123.py311.nbi``)."""
    m = re.fullmatch(r"(.+)-\d+\.py\d+(?:\.\d+)?\.nb[ic]", Path(path).name)
    return m.group(1) if m else None


def test_compile_reaches_every_kernel():
    expected = kernels()
    assert len(expected) > 40, expected            # the decoders, the dump writers and the ISR replay
    env = {**os.environ, "NUMBA_DEBUG_CACHE": "1", "WORKBENCH_CLASS_ARCHIVE": "0"}
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-m", "workbench", "compile"], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "decoders and replays on the demo bundle" in done.stderr
    loaded = {name for m in CACHE_LOG.finditer(done.stdout + done.stderr) if (name := _kernel_name(m.group(1)))}
    assert len(loaded) >= 10, done.stderr[-2000:]       # the cache log was read (entry points of driver and workers)
    assert expected - _called_from(loaded) == set(), done.stderr[-2000:]


@pytest.mark.full   # make test checks the same kernels are reached, on the cache make venv filled
def test_compile_leaves_every_kernel_cached(tmp_path):
    expected = kernels()
    assert len(expected) > 40, expected            # the decoders, the dump writers and the ISR replay
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    done = subprocess.run([sys.executable, "-m", "workbench", "compile"], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "decoders and replays on the demo bundle" in done.stderr
    cached = {m.group(1) for p in (tmp_path / "numba").rglob("*.nbi")
              if (m := re.fullmatch(r"(.+)-\d+\.py\d+\.nbi", p.name))}
    assert expected - cached == set()
