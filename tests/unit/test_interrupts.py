"""interrupts.py: the one signal table, graceful() (the first signal sets the stop event and
re-arms hard_stop), and hard_stop itself (it unwinds the main thread, and ends the process
EXIT_GRACE seconds later should something hold it).

graceful() is tested in this process with real signals; hard_stop only in a child process,
since it ends the process it runs in."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from kubectl_gpuisolate import interrupts
from kubectl_gpuisolate.errors import Interrupted
from kubectl_gpuisolate.exits import EXIT_SIGINT, EXIT_SIGTERM

from .conftest import REPO

SIGNUMS = [(signal.SIGINT, "SIGINT", EXIT_SIGINT), (signal.SIGTERM, "SIGTERM", EXIT_SIGTERM)]
# Python's own handlers, as a process started from a terminal has them.  A process started in
# the background by a shell without job control (`cmd &` in a script, as a CI runner may) finds
# SIGINT ignored and Python then installs no handler: the tests start from these instead.
DEFAULTS = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
CHILD_DEFAULTS = ("import signal\n"
                  "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
                  "signal.signal(signal.SIGTERM, signal.SIG_DFL)\n")


@pytest.fixture(autouse=True)
def default_handlers():
    before = {signum: signal.signal(signum, handler) for signum, handler in DEFAULTS.items()}
    yield
    for signum, handler in before.items():
        signal.signal(signum, handler)


def test_one_table_of_names_and_exit_codes():
    assert interrupts.SIGNALS == {signal.SIGINT: ("SIGINT", 130), signal.SIGTERM: ("SIGTERM", 143)}


@pytest.mark.parametrize("signum, name, code", SIGNUMS)
def test_interrupted_reads_the_same_table(monkeypatch, signum, name, code):
    error = Interrupted(signum)
    assert (str(error), error.exit_code) == (f"interrupted by {name}", code)
    monkeypatch.setitem(interrupts.SIGNALS, signum, ("RENAMED", 199))
    error = Interrupted(signum)
    assert (str(error), error.exit_code) == ("interrupted by RENAMED", 199)


@pytest.mark.parametrize("signum, name, code", SIGNUMS)
def test_graceful_first_signal_sets_the_event_says_so_and_rearms_hard_stop(capfd, signum, name,
                                                                          code):
    before = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    stop = threading.Event()
    with interrupts.graceful(stop) as caught:
        assert not stop.is_set()
        os.kill(os.getpid(), signum)
        assert stop.wait(5)                       # the handler ran (in this, the main thread)
        assert caught == [signum]
        armed = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    assert armed == {s: interrupts.hard_stop for s in interrupts.SIGNALS}
    assert {s: signal.getsignal(s) for s in interrupts.SIGNALS} == before
    assert capfd.readouterr().err == (f"{name}: stopping, no new evictions start; send {name} "
                                      "again to quit at once\n")


def test_graceful_off_the_main_thread_installs_nothing():
    before = signal.getsignal(signal.SIGINT)
    seen = []

    def worker():
        with interrupts.graceful(threading.Event()) as caught:
            seen.append((signal.getsignal(signal.SIGINT), caught))
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(5)
    assert seen == [(before, [])]


def run_child(code):
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-c", CHILD_DEFAULTS + textwrap.dedent(code)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("signum, name, code", SIGNUMS)
def test_hard_stop_unwinds_then_ends_a_process_that_does_not_exit(signum, name, code):
    """The main thread gets KeyboardInterrupt (Terminated for SIGTERM) at once; when the
    process is still alive EXIT_GRACE seconds later, it ends with the signal's code."""
    child = run_child(f"""
        import os, time
        from kubectl_gpuisolate import interrupts
        with interrupts.hard_stops():
            try:
                os.kill(os.getpid(), {int(signum)})
                time.sleep(30)
            except KeyboardInterrupt as exc:
                print(type(exc).__name__, flush=True)
                time.sleep(30)        # held, e.g. by a request in flight
        print("not reached", flush=True)
        """)
    assert child.returncode == code, child.stderr
    assert child.stdout == ("Terminated\n" if signum == signal.SIGTERM else "KeyboardInterrupt\n")
    assert child.stderr == f"error: interrupted by {name}\n"


def test_a_second_signal_under_graceful_goes_through_hard_stop():
    child = run_child("""
        import os, signal, threading
        from kubectl_gpuisolate import interrupts
        stop = threading.Event()
        try:
            with interrupts.graceful(stop) as caught:
                os.kill(os.getpid(), signal.SIGINT)
                stop.wait(5)
                os.kill(os.getpid(), signal.SIGTERM)
                threading.Event().wait(30)
        except interrupts.Terminated:
            print("unwound", caught, signal.getsignal(signal.SIGINT) is signal.default_int_handler,
                  flush=True)
            os._exit(interrupts.exit_code(interrupts.Terminated()))
        """)
    assert child.returncode == EXIT_SIGTERM, child.stderr
    assert child.stdout == f"unwound [{int(signal.SIGINT)}] True\n"
    assert child.stderr == ("SIGINT: stopping, no new evictions start; send SIGINT again to quit "
                            "at once\nerror: interrupted by SIGTERM\n")
