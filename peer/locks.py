"""Inter-process locks in the cache, so concurrent test runs neither share nor clobber work.

Two runs of the suite on one machine would otherwise build the same bundle directory at
once, and run two Kafka clusters side by side on a 2-core machine.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from peer.errors import PeerError


@contextmanager
def file_lock(path: Path, *, timeout: float, what: str = "") -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created), waiting at most ``timeout`` s.

    Raises
    ------
    PeerError
        When the lock is not free within ``timeout`` seconds.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _take(fd, time.monotonic() + timeout,
              f"{what or path} is busy (lock {path} held for more than {timeout:.0f} s)")
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _take(fd: int, deadline: float, busy: str) -> None:
    """Wait for an exclusive ``flock`` on ``fd`` until ``deadline`` (monotonic), then write our pid
    into it; :class:`PeerError` with ``busy`` after the deadline."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise PeerError(busy) from None
            time.sleep(1.0)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())


@contextmanager
def slot_lock(base: Path, slots: int, *, timeout: float, what: str = "") -> Iterator[int]:
    """Hold one of ``slots`` exclusive locks ``<base>.<i>`` (a counting semaphore across
    processes); yields the slot number. Waits at most ``timeout`` seconds for a free slot.

    Raises
    ------
    PeerError
        When no slot frees up within ``timeout`` seconds.
    """
    slots = max(1, int(slots))
    base.parent.mkdir(parents=True, exist_ok=True)
    fds = [os.open(f"{base}.{i}", os.O_RDWR | os.O_CREAT, 0o644) for i in range(slots)]
    held: int | None = None
    try:
        deadline = time.monotonic() + timeout
        while held is None:
            for i, fd in enumerate(fds):
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                held = i
                break
            if held is None:
                if time.monotonic() > deadline:
                    raise PeerError(
                        f"{what or base} is busy (all {slots} slots of {base} held for more "
                        f"than {timeout:.0f} s)"
                    )
                time.sleep(1.0)
        os.ftruncate(fds[held], 0)
        os.write(fds[held], f"{os.getpid()}\n".encode())
        try:
            yield held
        finally:
            fcntl.flock(fds[held], fcntl.LOCK_UN)
    finally:
        for fd in fds:
            os.close(fd)


@contextmanager
def all_slots_lock(base: Path, slots: int, *, timeout: float, what: str = "") -> Iterator[None]:
    """Hold every one of the ``slots`` locks ``<base>.<i>`` at once: a build that runs alone.

    The slots are taken in order, each kept once held, so builds that need one slot finish and
    leave while no new one starts on a slot taken here; two builds that both want every slot
    meet at slot 0 and never hold part of the set each. Waits at most ``timeout`` seconds in all.

    Raises
    ------
    PeerError
        When the slots are not all free within ``timeout`` seconds (those taken are released).
    """
    slots = max(1, int(slots))
    base.parent.mkdir(parents=True, exist_ok=True)
    fds = [os.open(f"{base}.{i}", os.O_RDWR | os.O_CREAT, 0o644) for i in range(slots)]
    held = 0
    try:
        deadline = time.monotonic() + timeout
        while held < slots:
            _take(fds[held], deadline,
                  f"{what or base} is busy (slot {held} of {base} held for more than {timeout:.0f} s)")
            held += 1
        yield
    finally:
        for i, fd in enumerate(fds):
            if i < held:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
