"""Ctrl-C and SIGTERM: a command stops with one line saying what it kept, never a traceback.

    with stoppable():                       # SIGTERM raises Terminated, as Ctrl-C raises KeyboardInterrupt
        try:
            ...
        except KeyboardInterrupt as stop:   # both
            return interrupted("sample", stop, "nothing was written; the files at --out are as they were")

Both unwind through every `finally` and `except BaseException` on the way (locks released, temporaries removed,
half-published outputs taken back). The exit code is the shell's for the signal: 130 for Ctrl-C (SIGINT), 143
for SIGTERM.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

from tqdm import tqdm


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (a KeyboardInterrupt, so that every handler of Ctrl-C handles it too)."""


def _raise_terminated(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def stoppable():
    """For its duration, SIGTERM raises `Terminated` in the main thread (elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def exit_code(stop: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM (128 + the signal's number, as the shell reports a signalled command)."""
    return 128 + (signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT)


def interrupted(command: str, stop: BaseException, kept: str) -> int:
    """Print `axialrope COMMAND: stopped by Ctrl-C (SIGTERM); <kept>` on stderr; returns `exit_code(stop)`."""
    how = "SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C"
    # A progress bar may still hold the line (a signal can land while it draws): tqdm.write clears the open bars,
    # and "\r" starts the message at the line's beginning even where a bar was left half drawn.
    tqdm.write(f"\raxialrope {command}: stopped by {how}; {kept}", file=sys.stderr)
    return exit_code(stop)


__all__ = ["Terminated", "exit_code", "interrupted", "stoppable"]
