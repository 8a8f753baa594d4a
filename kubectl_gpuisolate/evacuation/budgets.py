"""Seeing a PodDisruptionBudget allow an eviction again, so a refused pod is retried then.

A budget that allows one disruption refuses the next eviction until the pod evicted before is
replaced and healthy, and the disruption controller writes that into the budget's status
(``disruptionsAllowed`` above 0).  Backing off blindly retries up to a backoff step late; at
5,000 nodes that was a second of each 3.5 s between two evictions of one budget (issue #15).
So the engine watches the budgets: one cluster-wide list, then a watch from its
resourceVersion, again after each window.  Each time a budget is seen allowing, its count goes
up; a pod refused by it waits (``waiter``) until the count passes the one it noted before its
request was sent, or its backoff ends, whichever is first.  The watch also keeps whether each
budget was last seen allowing (``refusing``) and the longest it was seen at 0 before allowing
again (``longest_cycle``): the engine holds a chain's next pod while the budget its previous
eviction used up is still seen at 0, rather than have it refused once a cycle (45 % of the
requests at 5,000 nodes, issue #35).

The watch loop naps in real time, whatever the run's clock.  It is advisory: the backoff still
bounds every wait, so a watch that cannot run (RBAC without ``watch``, silently; a proxy that
cuts streams) leaves the retries only as late as they were without it.  The Kube-like object
needs ``list_pdbs_with_version`` and ``watch_pdbs``.
"""

import threading
import time
from typing import Dict, Set, Tuple

from ..errors import ApiError, ConnectionFailed, Gone

Key = Tuple[str, str]          # (namespace, name)
WINDOW = 30.0                  # seconds of one watch before listing again
MAX_NAP = 8.0                  # seconds at most between two tries after connection failures
SLICE = 0.25                   # seconds between two looks at the stop while waiting


def allowing(pdb) -> bool:
    return ((pdb.get("status") or {}).get("disruptionsAllowed") or 0) > 0


def key_of(pdb) -> Key:
    meta = pdb.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


class BudgetWatch:
    """Counts, per budget, the times it was seen allowing a disruption (see the module)."""

    def __init__(self, kube, halt, *, window=WINDOW):
        self._kube, self._halt = kube, halt
        self._window = window
        self._seen: Dict[Key, int] = {}
        self._refusing: Set[Key] = set()     # the budgets last seen allowing none
        self._since: Dict[Key, float] = {}   # on the run's clock: when each began allowing none
        self._cycles: Dict[Key, float] = {}  # each budget's longest time allowing none, seen
        self._live = False                   # listed, and watching since
        self._waiting: Dict[Key, Set] = {}   # the waiters' wakes (anything with set())
        self._lock = threading.Lock()
        self._closed = False
        self.started = False

    def start(self):
        self.started = True
        threading.Thread(target=self._run, name="watch-pdbs", daemon=True).start()
        return self

    def close(self):
        self._closed = True

    def mark(self, key: Key) -> int:
        """The count of ``key`` now: note it before sending the request a refusal may follow."""
        with self._lock:
            return self._seen.get(key, 0)

    @property
    def live(self) -> bool:
        """Listed, and watching since: what it has seen is the budgets' state."""
        with self._lock:
            return self._live

    def refusing(self, key: Key) -> bool:
        """Whether the watch, running, last saw ``key`` allowing no disruption (False when it
        is not running: nothing is known)."""
        with self._lock:
            return self._live and key in self._refusing

    def longest_cycle(self, key: Key) -> float:
        """The longest time ``key`` was seen allowing none before it allowed again, in seconds
        (0.0: never seen to): an eviction's cycle, to the replacement Ready and the status
        written."""
        with self._lock:
            return self._cycles.get(key, 0.0)

    def waker(self, key: Key, mark: int, wake=None):
        """``wake`` (a new threading.Event when None: anything with ``set``), set once ``key``
        is seen allowing after ``mark``, at once if it was (under this watch's lock: a wake's
        ``set`` must take no lock that is held while calling in here).  Give it back with
        ``drop``.  Never set when the watch is not running."""
        wake = wake if wake is not None else threading.Event()
        with self._lock:
            if self._seen.get(key, 0) > mark:
                wake.set()
            else:
                self._waiting.setdefault(key, set()).add(wake)
        return wake

    def drop(self, key: Key, wake):
        with self._lock:
            self._waiting.get(key, set()).discard(wake)

    def waiter(self, key: Key, mark: int):
        """A ``sleep(seconds, stop)`` on the run's clock that ends early once ``key`` is seen
        allowing after ``mark`` (when the watch has stopped, it sleeps the whole time)."""
        def sleep(seconds, stop):
            wake = self.waker(key, mark)
            try:
                clock = self._halt.clock
                end = clock.now() + seconds
                while not stop.is_set() and not wake.is_set():
                    left = end - clock.now()
                    if left <= 0:
                        return
                    clock.sleep(min(SLICE, left), wake)   # the stop is looked at between slices
            finally:
                self.drop(key, wake)
        return sleep

    def _note(self, pdbs):
        now = self._halt.clock.now()
        with self._lock:
            for pdb in pdbs:
                key = key_of(pdb)
                if not allowing(pdb):
                    self._refusing.add(key)
                    self._since.setdefault(key, now)     # kept across a list: one cycle
                else:
                    self._refusing.discard(key)
                    if key in self._since:
                        cycle = now - self._since.pop(key)
                        self._cycles[key] = max(self._cycles.get(key, 0.0), cycle)
                    self._seen[key] = self._seen.get(key, 0) + 1
                    for wake in self._waiting.get(key, ()):
                        wake.set()

    def _forget(self, pdb):
        with self._lock:
            self._refusing.discard(key_of(pdb))
            self._since.pop(key_of(pdb), None)

    def _set_live(self, live):
        with self._lock:
            self._live = live

    def _over(self):
        return self._closed or self._halt.halted()

    def _run(self):
        """Lists, then watches for one window, and again, until the run is over.  An API error
        (403: no watch) ends it; a connection failure is tried again, later each time (the
        API server restarting)."""
        failures = 0
        while not self._over():
            started = time.monotonic()
            try:
                pdbs, version = self._kube.list_pdbs_with_version()
                with self._lock:
                    self._refusing.clear()   # a budget deleted since is known no more
                    self._live = True
                self._note(pdbs)
                failures = 0
                for kind, pdb in self._kube.watch_pdbs(version, self._window):
                    if kind == "ERROR":       # e.g. 410 Expired: list again
                        break
                    if kind in ("ADDED", "MODIFIED"):
                        self._note([pdb])
                    elif kind == "DELETED":
                        self._forget(pdb)
                    if self._over():
                        break
                if time.monotonic() - started < 1.0:   # a watch the server ended at once
                    self._halt.stop.wait(1.0)
            except Gone:
                continue
            except ApiError:               # e.g. 403: no watch (optional in rbac/clusterrole.yaml)
                self._set_live(False)
                return                     # the backoff alone, as before; -v=6 shows the answer
            except ConnectionFailed:
                self._set_live(False)
                failures += 1
                self._halt.stop.wait(min(2.0 ** (failures - 1), MAX_NAP))
