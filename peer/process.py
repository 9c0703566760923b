"""Child processes that always die: each in its own process group, stopped on exit.

Every JVM the peer starts goes through :func:`spawn`. The child gets a new session (so a new
process group whose id is its pid); :meth:`Managed.stop` sends SIGTERM to the whole group,
waits a bounded time and then sends SIGKILL. An ``atexit`` hook and a SIGTERM handler stop
whatever is still running when the Python process ends.

Where util-linux ``setpriv`` exists, each child also gets a parent-death signal (SIGKILL), so
even a harness that is itself SIGKILLed leaves no JVM behind. (The "parent" is the thread
that started the child; the peer starts long-lived children only from threads that outlive
them.)

When the environment variable ``KAFKA_PEER_PID_FILE`` names a file, the pid of every spawned
group is appended to it, one a line; tests use it to prove that no JVM survived.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import IO

from peer.errors import PeerError

PID_FILE_ENV = "KAFKA_PEER_PID_FILE"
_SETPRIV = shutil.which("setpriv")

_LIVE: dict[int, Managed] = {}
_LOCK = threading.Lock()


class Managed:
    """A child process running in its own process group.

    Parameters
    ----------
    name
        Short label used in messages.
    popen
        The started process (created with ``start_new_session=True``).
    output
        File the child's stdout and stderr go to, if any.
    """

    def __init__(self, name: str, popen: subprocess.Popen[bytes], output: Path | None) -> None:
        self.name = name
        self.popen = popen
        self.output = output

    @property
    def pid(self) -> int:
        """Process id, which is also the process-group id."""
        return self.popen.pid

    def alive(self) -> bool:
        """Whether the child has not exited yet."""
        return self.popen.poll() is None

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the child's process group; a gone group is ignored."""
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    def pause(self) -> None:
        """Freeze the whole group (SIGSTOP)."""
        self.signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        """Thaw the whole group (SIGCONT)."""
        self.signal_group(signal.SIGCONT)

    def kill(self) -> None:
        """Hard stop: SIGKILL to the group, then reap the child."""
        self.signal_group(signal.SIGKILL)
        self._reap(10.0)

    def stop(self, timeout: float = 30.0) -> int | None:
        """Clean stop: SIGCONT + SIGTERM, wait up to ``timeout`` s, then SIGKILL.

        Returns
        -------
        int or None
            The exit code, or None if the child could not be reaped.
        """
        if self.alive():
            self.signal_group(signal.SIGCONT)
            self.signal_group(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        # Whatever is left of the group (the child or its own children) goes now.
        self.signal_group(signal.SIGKILL)
        return self._reap(10.0)

    def _reap(self, timeout: float) -> int | None:
        try:
            code = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            code = None
        with _LOCK:
            _LIVE.pop(self.pid, None)
        return code

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` s for the child to exit; None if it is still running."""
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def tail(self, lines: int = 40) -> str:
        """Last ``lines`` lines of the child's output file."""
        return tail_file(self.output, lines) if self.output else ""


def tail_file(path: Path | None, lines: int = 40) -> str:
    """Last ``lines`` lines of a text file, or an empty string if it does not exist."""
    if path is None or not path.exists():
        return ""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 64 * 1024))
        data = fh.read().decode("utf-8", "replace")
    return "\n".join(data.splitlines()[-lines:])


def spawn(
    name: str,
    argv: Sequence[str],
    *,
    output: Path | None = None,
    stdin: int | IO[bytes] | None = subprocess.DEVNULL,
    stdout: int | None = None,
    stderr: int | None = None,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Managed:
    """Start ``argv`` in a new process group and register it for cleanup.

    Parameters
    ----------
    name
        Label for messages.
    argv
        Command line.
    output
        File that receives stdout and stderr (appended). Ignored when ``stdout`` is given.
    stdin
        What the child reads (default: nothing).
    stdout
        ``subprocess.PIPE`` to read the child's stdout in Python (stderr then goes to
        ``stderr``, else ``output``, else nowhere).
    stderr
        ``subprocess.PIPE`` to read stderr too (only with ``stdout``).
    cwd, env
        Working directory and environment of the child.

    Returns
    -------
    Managed
        The running child.
    """
    install_handlers()
    if _SETPRIV is not None:
        # The child is SIGKILLed by the kernel if this process dies without cleaning up
        # (SIGKILL, OOM killer): prctl(PR_SET_PDEATHSIG) survives the exec into java.
        argv = [_SETPRIV, "--pdeathsig", "KILL", "--", *argv]
    out_fh = open(output, "ab") if output is not None else None
    sink: int | IO[bytes] = out_fh if out_fh is not None else subprocess.DEVNULL
    if stdout is not None:
        child_out: int | IO[bytes] = stdout
        child_err: int | IO[bytes] = stderr if stderr is not None else sink
    else:
        child_out = sink
        child_err = subprocess.STDOUT if out_fh is not None else subprocess.DEVNULL
    try:
        popen = subprocess.Popen(
            list(argv),
            stdin=stdin,
            stdout=child_out,
            stderr=child_err,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise PeerError(f"cannot start {name}: {argv[0]}: {exc}") from exc
    finally:
        if out_fh is not None:
            out_fh.close()
    managed = Managed(name, popen, output)
    with _LOCK:
        _LIVE[popen.pid] = managed
    pid_file = os.environ.get(PID_FILE_ENV)
    if pid_file:
        with open(pid_file, "a", encoding="utf-8") as fh:
            fh.write(f"{popen.pid}\n")
    return managed


def stop_all(timeout: float = 10.0) -> None:
    """Stop every child still registered (used at exit and by test fixtures)."""
    with _LOCK:
        children = list(_LIVE.values())
    for child in children:
        child.signal_group(signal.SIGCONT)
        child.signal_group(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for child in children:
        child.wait(max(0.0, deadline - time.monotonic()))
        child.signal_group(signal.SIGKILL)
        child._reap(5.0)


def live() -> list[Managed]:
    """The children that are registered and not yet stopped."""
    with _LOCK:
        return list(_LIVE.values())


_ATEXIT_INSTALLED = False
_SIGTERM_INSTALLED = False


def install_handlers() -> None:
    """Stop all children at interpreter exit and on SIGTERM.

    The ``atexit`` hook is registered on the first call; the SIGTERM handler on the first call
    made from the main thread (Python only allows signal handlers there). Called by
    :func:`spawn` and by :class:`peer.cluster.Cluster`.
    """
    global _ATEXIT_INSTALLED, _SIGTERM_INSTALLED
    if not _ATEXIT_INSTALLED:
        _ATEXIT_INSTALLED = True
        atexit.register(stop_all)
    if _SIGTERM_INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    _SIGTERM_INSTALLED = True
    previous = signal.getsignal(signal.SIGTERM)

    def _on_term(signum: int, frame: FrameType | None) -> None:
        stop_all(5.0)
        if callable(previous):
            previous(signum, frame)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _on_term)
