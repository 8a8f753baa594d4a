"""evacuation/budgets.py: a pod a budget refused waits until the budget is seen allowing again
(after the mark taken before its request), its backoff ends or the run stops; and the watch
loop's list, watch, relist and giving up."""

import queue
import threading

from kubectl_gpuisolate.errors import ConnectionFailed, api_error
from kubectl_gpuisolate.evacuation.budgets import BudgetWatch
from kubectl_gpuisolate.evacuation.state import Halt

KEY = ("apps", "web")


def pdb(name="web", allowed=0, namespace="apps"):
    return {"metadata": {"name": name, "namespace": namespace},
            "status": {"disruptionsAllowed": allowed}}


class SteppingClock:
    """Fake time, moved by each sleep; at ``at`` seconds it calls ``then`` once."""

    def __init__(self, at=None, then=None):
        self.t, self.at, self.then = 0.0, at, then

    def now(self):
        return self.t

    def sleep(self, seconds, wake):
        self.t += seconds
        if self.at is not None and self.t >= self.at:
            self.at = None
            self.then()


def watch_with(clock, stop=None):
    return BudgetWatch(None, Halt(clock, stop))


def test_a_waiter_wakes_when_its_budget_allows_after_the_mark():
    clock = SteppingClock(at=1.0, then=lambda: budgets._note([pdb(allowed=1)]))
    budgets = watch_with(clock)
    budgets.waiter(KEY, budgets.mark(KEY))(5.0, threading.Event())
    assert clock.t == 1.0


def test_only_its_own_budget_allowing_wakes_it():
    clock = SteppingClock(at=1.0, then=lambda: budgets._note(
        [pdb("db", allowed=1), pdb(allowed=0), pdb("web", allowed=2, namespace="other")]))
    budgets = watch_with(clock)
    budgets.waiter(KEY, budgets.mark(KEY))(5.0, threading.Event())
    assert clock.t == 5.0


def test_allowing_seen_between_the_mark_and_the_wait_ends_it_at_once():
    clock = SteppingClock()
    budgets = watch_with(clock)
    mark = budgets.mark(KEY)
    budgets._note([pdb(allowed=1)])                 # while the refused request was in flight
    budgets.waiter(KEY, mark)(5.0, threading.Event())
    assert clock.t == 0.0
    budgets.waiter(KEY, budgets.mark(KEY))(5.0, threading.Event())   # a new mark: waits
    assert clock.t == 5.0


def test_a_stop_ends_the_wait():
    stop = threading.Event()
    clock = SteppingClock(at=0.5, then=stop.set)
    budgets = watch_with(clock, stop)
    budgets.waiter(KEY, budgets.mark(KEY))(5.0, stop)
    assert clock.t == 0.5


class ScriptedKube:
    """list_pdbs_with_version answers from ``lists``; each watch_pdbs yields the events put on
    ``events`` until None (the window's end) or raises what was put there."""

    def __init__(self, lists, watch_error=None):
        self.lists, self.watch_error = list(lists), watch_error
        self.events = queue.Queue()
        self.calls = []

    def list_pdbs_with_version(self):
        self.calls.append("list")
        result = self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]
        if isinstance(result, Exception):
            raise result
        return result, str(len(self.calls))

    def watch_pdbs(self, version, timeout_seconds):
        self.calls.append(f"watch from {version}")
        if self.watch_error is not None:
            raise self.watch_error
        while True:
            event = self.events.get(timeout=5)
            if event is None:
                return
            yield event


def test_the_loop_lists_then_watches_and_counts_each_allowing_seen():
    kube = ScriptedKube([[pdb(allowed=1), pdb("db")]])
    budgets = BudgetWatch(kube, Halt()).start()
    for event in [("MODIFIED", pdb(allowed=0)), ("MODIFIED", pdb(allowed=1)),
                  ("BOOKMARK", pdb(allowed=1)), ("ADDED", pdb("db", allowed=1))]:
        kube.events.put(event)
    kube.events.put(("ERROR", {"code": 410}))      # expired: list again, watch again
    kube.events.put(None)
    for _ in range(500):                            # the relist comes after a 1 s nap
        if budgets.mark(KEY) == 3:
            break
        threading.Event().wait(0.01)
    budgets.close()
    kube.events.put(None)
    # web: allowing in the first list, once in the watch (the bookmark is no news), in the relist
    assert budgets.mark(KEY) == 3 and budgets.mark(("apps", "db")) == 1
    assert kube.calls[:4] == ["list", "watch from 1", "list", "watch from 3"]


def test_no_right_to_watch_ends_the_loop_silently():
    kube = ScriptedKube([[pdb()]], watch_error=api_error("forbidden", status=403, reason="Forbidden"))
    budgets = BudgetWatch(kube, Halt())
    budgets._run()
    assert kube.calls == ["list", "watch from 1"]


def test_failed_lists_are_tried_again_later_each_time():
    stop, naps = threading.Event(), []

    def nap(seconds=None):
        naps.append(seconds)
        if len(naps) == 6:
            stop.set()
        return stop.is_set()
    stop.wait = nap                                 # no real naps; the sixth ends the run
    kube = ScriptedKube([ConnectionFailed("cannot reach the API server")])
    BudgetWatch(kube, Halt(stop=stop))._run()
    assert kube.calls == ["list"] * 6 and naps == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
