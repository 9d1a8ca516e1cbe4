"""An exclusive lock on a file, held for a command's life: one run in a training folder, one writer of an output.

    with FileLock(folder / ".name.lock", refuse=lambda holder: ValueError(f"in use ({holder})")):
        ...                                  # a second process is refused, naming the holder

The lock is `fcntl.flock` on the file, which names its holder; the kernel drops it when the process ends however
it ends, so the file of a killed process is stale and is taken over (and said). Where flock is missing, the file
is made exclusively and a holder that no longer runs is stale. The folders the lock made are removed again on
exit if nothing was written into them, and the file itself is removed: a refused command leaves nothing.
"""

from __future__ import annotations

import datetime
import os
import socket
from collections.abc import Callable
from pathlib import Path


def holder() -> str:
    """What a lock file says of its holder: this process."""
    started = datetime.datetime.now().isoformat(timespec="seconds")
    return f"process {os.getpid()} on {socket.gethostname()}, started {started}"


def running(pid: int) -> bool:
    """Whether process `pid` runs (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but is another user's
        return True
    return True


class FileLock:
    """An exclusive lock on `path`, held from `__enter__` to `__exit__`.

    Args:
        path: the lock file; its folder is made if missing (and removed on exit if left empty).
        refuse: the error to raise, given the holder's line, when another process holds the lock.
        report: receives one line when a stale lock (of a killed process) is taken over.
        stale: how that line starts ("output_dir: took over the lock left by a run that no longer runs").
    """

    def __init__(
        self,
        path: str | Path,
        refuse: Callable[[str], Exception],
        report: Callable[[str], None] = print,
        stale: str = "took over the lock left by a process that no longer runs",
    ):
        self.path, self.refuse, self.report, self.stale = Path(path), refuse, report, stale
        self._descriptor: int | None = None
        self._made: list[Path] = []  # folders the lock made, removed again if the command leaves them empty

    @property
    def held(self) -> bool:
        return self._descriptor is not None

    def __enter__(self) -> FileLock:
        folder = self.path.parent
        self._made = [p for p in (folder, *folder.parents) if not p.exists()][::-1]
        folder.mkdir(parents=True, exist_ok=True)
        try:
            try:
                import fcntl  # POSIX: absent on Windows
            except ImportError:  # no flock (Windows): an exclusive file whose holder must still run
                self._take_exclusive_file()
            else:
                self._take_flock(fcntl)
        except BaseException:
            self._remove_made()
            raise
        return self

    def _take_flock(self, fcntl) -> None:
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holding = os.read(descriptor, 1000).decode(errors="replace") or "a process"
                os.close(descriptor)
                raise self.refuse(holding.strip()) from None
            try:  # the file may have been removed by its last holder between our open and our lock
                same = os.stat(self.path).st_ino == os.fstat(descriptor).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(descriptor)
        stale = os.read(descriptor, 1000).decode(errors="replace").strip()
        if stale:
            self.report(f"{self.stale} ({stale})")
        os.ftruncate(descriptor, 0)
        os.lseek(descriptor, 0, os.SEEK_SET)
        os.write(descriptor, holder().encode())
        self._descriptor = descriptor

    def _take_exclusive_file(self) -> None:
        for _ in range(2):
            try:
                descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holding = self.path.read_text(errors="replace")
                pid = holding.split()[1] if holding.startswith("process ") else ""
                if pid.isdigit() and running(int(pid)):
                    raise self.refuse(holding.strip()) from None
                self.report(f"{self.stale} ({holding.strip()})")
                self.path.unlink(missing_ok=True)
                continue
            os.write(descriptor, holder().encode())
            self._descriptor = descriptor
            return
        raise self.refuse(self.path.read_text(errors="replace").strip())

    def __exit__(self, *exc_info) -> None:
        if self._descriptor is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # before the unlock: a waiting process re-checks the file
        finally:
            os.close(self._descriptor)  # releases the flock
            self._descriptor = None
        self._remove_made()

    def _remove_made(self) -> None:
        for folder in reversed(self._made):  # a command refused before writing leaves no folder behind
            try:
                folder.rmdir()
            except OSError:  # not empty: the command wrote into it
                break


__all__ = ["FileLock", "holder", "running"]
