"""Signals: how SIGINT and SIGTERM end the process (their names and exit codes are
``exits.SIGNALS``).

Every command runs under ``hard_stops`` (cli.main): a signal unwinds the main thread at once
(``hard_stop``).  evacuate runs under ``graceful``: the first signal only sets its stop event,
so no new eviction starts and the summary is still printed, and a second signal ends the
process through ``hard_stop``.
"""

import contextlib
import os
import signal
import sys
import threading
import time

from .exits import SIGNALS

EXIT_GRACE = 2.0        # seconds the main thread gets to unwind before the process ends anyway
_said = threading.Event()


class Terminated(KeyboardInterrupt):
    """SIGTERM: unwinds like Ctrl-C, exits 143."""


def _say_interrupted(signum):
    if not _said.is_set():
        _said.set()
        sys.stderr.write(f"error: interrupted by {SIGNALS[signum][0]}\n")
        sys.stderr.flush()


def hard_stop(signum, frame):
    """Unwinds the main thread (``with`` and ``finally`` blocks clean up) and, should a worker
    thread blocked in a request hold the process, ends it after EXIT_GRACE seconds."""
    def force_exit():
        time.sleep(EXIT_GRACE)
        _say_interrupted(signum)
        os._exit(SIGNALS[signum][1])
    threading.Thread(target=force_exit, daemon=True).start()
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _install(handler):
    """Handles every signal of SIGNALS with ``handler``; returns the handlers it replaced.
    Only the main thread may install handlers: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, handler) for signum in SIGNALS}


def _restore(previous):
    for signum, handler in previous.items():
        signal.signal(signum, handler)


@contextlib.contextmanager
def hard_stops():
    """cli.main's: a signal ends the command at once (``hard_stop``); see ``exit_code``."""
    _said.clear()
    previous = _install(hard_stop)
    try:
        yield
    finally:
        _restore(previous)


def exit_code(interrupt):
    """For a KeyboardInterrupt that reached cli.main: says "error: interrupted by NAME"
    (once: the EXIT_GRACE thread may say it too) and returns the signal's exit code."""
    signum = signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT
    _say_interrupted(signum)
    return SIGNALS[signum][1]


@contextlib.contextmanager
def graceful(stop, stopping="no new evictions start"):
    """The first signal sets ``stop``, says so on stderr and re-arms ``hard_stop``, so a
    second one ends the process.  Yields the list of the signals caught (the first is the
    one to report); the handlers before are back on exit."""
    caught = []

    def on_signal(signum, _frame):
        caught.append(signum)
        stop.set()
        for each in SIGNALS:
            signal.signal(each, hard_stop)
        # Said at once: stopping cleanly can wait on a request in flight (a hung server
        # without --request-timeout).  os.write: no lock a progress line may hold.
        name = SIGNALS[signum][0]
        os.write(2, f"{name}: stopping, {stopping}; send {name} again to quit at once\n".encode())

    previous = _install(on_signal)
    try:
        yield caught
    finally:
        _restore(previous)
