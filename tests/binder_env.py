"""A Jupyter kernel from ``binder/``'s files alone, as Binder (repo2docker) would build it.

:func:`binder_kernel` makes a virtual environment with the Python version of
``binder/runtime.txt``, installs ``binder/requirements.txt`` into it, runs ``binder/postBuild``
(with ``HOME`` inside the environment, so that nothing is written to the real home), and
registers a kernelspec that starts through ``binder/start``, as Binder starts every process.
Notebooks executed with that kernel see only what a Binder visitor gets.

The environment is cached under ``$KAFKA_WORKBENCH_CACHE/binder/<digest>/``, the digest being
of ``binder/``'s files and of the repository's path (``postBuild`` installs the checkout in
editable mode, so another checkout needs its own environment).

Examples
--------
>>> runtime_version("python-3.12\\n")
'3.12'
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from peer.kafka import cache_root

#: Name of the kernelspec :func:`binder_kernel` registers.
KERNEL_NAME = "workbench-binder"


def runtime_version(text: str) -> str:
    """The ``X.Y`` of a repo2docker ``runtime.txt`` (``python-X.Y``)."""
    line = text.strip().splitlines()[0].strip()
    if not line.startswith("python-"):
        raise ValueError(f"runtime.txt does not name a Python version: {line!r}")
    return line[len("python-"):]


def find_python(version: str) -> str:
    """An interpreter of ``version`` (``python3.12`` on ``PATH``, else pyenv's), else this one.

    Returns
    -------
    str
        The interpreter's path. When no interpreter of ``version`` exists on the machine, the
        running one (the project supports it too); the caller reports which was used.
    """
    candidates = [shutil.which(f"python{version}")]
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")),
                         reverse=True)
    for candidate in candidates:
        if not candidate:
            continue
        try:
            out = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return candidate
    return sys.executable


def _digest(repo: Path) -> str:
    digest = hashlib.sha256(str(repo.resolve()).encode("utf-8"))
    for path in sorted((repo / "binder").iterdir()):
        digest.update(b"\0" + path.name.encode("utf-8") + b"\0" + path.read_bytes())
    return digest.hexdigest()[:10]


def _run(cmd: list[str], **kwargs) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")


def binder_kernel(repo: Path) -> tuple[str, dict[str, str], str]:
    """Build (or reuse) the Binder environment and its kernelspec.

    Returns
    -------
    tuple
        ``(kernel_name, env, python)``: pass ``kernel_name`` to papermill and run it with ``env``
        (its ``JUPYTER_PATH`` finds the kernelspec); ``python`` is the environment's interpreter.
    """
    from peer.locks import file_lock

    repo = Path(repo)
    home = cache_root() / "binder" / _digest(repo)
    # the two pytest lanes of `make test` (tests/lanes.py) both ask for it: one builds, the other waits
    with file_lock(home.with_name(home.name + ".lock"), timeout=1800, what="the Binder environment"):
        return _build(repo, home)


def _build(repo: Path, home: Path) -> tuple[str, dict[str, str], str]:
    venv, fake_home, share = home / "venv", home / "home", home / "share" / "jupyter"
    python = str(venv / "bin" / "python")
    if not (home / ".complete").exists():
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        fake_home.mkdir()
        base = find_python(runtime_version((repo / "binder" / "runtime.txt").read_text(encoding="utf-8")))
        _run([base, "-m", "venv", str(venv)])
        _run([python, "-m", "pip", "install", "-q", "-r", str(repo / "binder" / "requirements.txt")])
        env = {**os.environ, "HOME": str(fake_home), "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}",
               "VIRTUAL_ENV": str(venv)}
        for name in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):   # this run's, not Binder's
            env.pop(name, None)
        _run(["bash", str(repo / "binder" / "postBuild")], cwd=repo, env=env)
        spec = share / "kernels" / KERNEL_NAME
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [str(repo / "binder" / "start"), python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "workbench (Binder environment)",
            "language": "python",
            "env": {"HOME": str(fake_home), "PATH": f"{venv / 'bin'}:/usr/bin:/bin", "VIRTUAL_ENV": str(venv)},
        }), encoding="utf-8")
        (home / ".complete").write_text(base + "\n", encoding="utf-8")
    env = {**os.environ, "JUPYTER_PATH": str(share)}
    return KERNEL_NAME, env, python


def write_lab_settings(config_dir: Path, repo: Path) -> None:
    """Give a JupyterLab whose ``JUPYTER_CONFIG_DIR`` is ``config_dir`` the settings Binder's image has
    (``binder/overrides.json``, which ``postBuild`` installs for every user), as its user settings:
    one ``<plugin>.jupyterlab-settings`` file per plugin."""
    overrides = json.loads((Path(repo) / "binder" / "overrides.json").read_text(encoding="utf-8"))
    for plugin, settings in overrides.items():
        package, _, name = plugin.partition(":")
        target = Path(config_dir) / "lab" / "user-settings" / package / f"{name}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(settings, indent=2), encoding="utf-8")


def main() -> int:
    """Build (or reuse) this checkout's Binder environment ahead of the notebook tests
    (``python -m tests.binder_env``); one line says where and how long, a failure says why and exits 1
    (the notebook tests then build it again and fail with the same reason)."""
    import time

    started = time.monotonic()
    try:
        _, env, _ = binder_kernel(Path(__file__).resolve().parent.parent)
    except Exception as exc:  # any failure of the build: its reason on stderr, exit 1
        print(f"binder environment: not built: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"binder environment: {Path(env['JUPYTER_PATH']).parent.parent} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
