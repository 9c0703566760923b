"""``workbench compile`` leaves every numba kernel compiled, in the driver and in Spark's workers.

It runs in a new process whose numba cache is an empty directory (``NUMBA_CACHE_DIR``), so
nothing compiled earlier counts; afterwards every kernel of the package has an index there.
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

pytestmark = pytest.mark.spark


def kernels() -> set[str]:
    """``module.function`` of every numba kernel in the package (inlined ones have no code of their own)."""
    from numba.core.dispatcher import Dispatcher

    found = set()
    for info in pkgutil.walk_packages(workbench.__path__, "workbench."):
        spec = importlib.util.find_spec(info.name)
        if spec is None or spec.origin is None or "njit" not in Path(spec.origin).read_text():
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (isinstance(obj, Dispatcher) and obj.__module__ == module.__name__
                    and obj.targetoptions.get("inline", "never") != "always"):
                found.add(f"{module.__name__.rsplit('.', 1)[-1]}.{obj.py_func.__qualname__}")
    return found


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
