"""Signals: SIGINT and SIGTERM, their names and exit codes, and how they end the process."""

import os
import signal
import sys
import threading
import time

from .errors import EXIT_SIGINT, EXIT_SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM (evacuate handles its own first one): unwinds like Ctrl-C, exits 143."""


INTERRUPTS = {signal.SIGINT: ("SIGINT", EXIT_SIGINT), signal.SIGTERM: ("SIGTERM", EXIT_SIGTERM)}
EXIT_GRACE = 2.0        # seconds the main thread gets to unwind before the process ends anyway
_said = threading.Event()


def _say_interrupted(signum):
    if not _said.is_set():
        _said.set()
        sys.stderr.write(f"error: interrupted by {INTERRUPTS[signum][0]}\n")
        sys.stderr.flush()


def _on_signal(signum, frame):
    """Unwinds the main thread (``with`` and ``finally`` blocks clean up) and, should a worker
    thread blocked in a request hold the process, ends it after EXIT_GRACE seconds."""
    def force_exit():
        time.sleep(EXIT_GRACE)
        _say_interrupted(signum)
        os._exit(INTERRUPTS[signum][1])
    threading.Thread(target=force_exit, daemon=True).start()
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
