"""The eviction engine: evicts one node's pods and waits until they are gone.

It owns the policy of an evacuation, not the choice of pods (that is
``planner``'s): acting on each Eviction response (``policy``), with
capped exponential backoff and jitter that honours Retry-After, one eviction at a
time per PodDisruptionBudget, a bounded number of evictions in parallel, the
wait for each evicted pod to be gone (404, or a new UID: a watch of the node
after a list, polling when the watch fails), the run's deadline, and stopping
cleanly on an interrupt (``stop``): no new eviction starts once it is set.

The Kube-like object is duck-typed: ``evict``, ``get_pod``,
``list_pods_on_node_with_version`` and ``watch_pods_on_node``; the clock has
``now()`` and ``sleep(seconds, stop_event)``.  Unit tests pass fakes of both.
"""

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ..errors import ApiError, ConnectionFailed
from ..flags import DryRun
from ..kube.retry import Backoff
from .plan import Target, lanes
from .policy import V_CONFLICT, V_DONE, V_FATAL, V_PDB, V_RETRY, V_TERMINATING, Verdict, classify

# What happened to one pod (Outcome.state).
NOT_STARTED = "not-started"   # no eviction sent (yet)
EVICTING = "evicting"         # the first eviction request is under way
RETRYING = "retrying"         # a transient error (throttling, 5xx, network, terminating namespace)
PDB_BLOCKED = "pdb-blocked"   # the PDB allows no disruption now; retrying
PDB_REFUSED = "pdb-refused"   # the PDB refused and will not change (server dry run, or it never allows)
EVICTED = "evicted"           # eviction accepted; the pod is terminating
TERMINATING = "terminating"   # was already terminating: only waited for
GONE = "gone"                 # deleted, or replaced by a pod with a new UID
WOULD_EVICT = "would-evict"   # server dry run: the eviction would be accepted
FAILED = "failed"             # an error that retrying cannot fix

DONE = frozenset({GONE, WOULD_EVICT})
SETTLED = frozenset({GONE, WOULD_EVICT, FAILED, PDB_REFUSED})

HALT_GRACE = 5.0     # real seconds to let requests in flight finish after a stop or the deadline
TICK = 0.5           # real seconds between checks while waiting


class Clock:
    """Monotonic time; sleeps end early when the stop event is set."""

    def now(self):
        return time.monotonic()

    def sleep(self, seconds, stop):
        if seconds > 0:
            stop.wait(seconds)


@dataclass
class Outcome:
    target: Target
    state: str = NOT_STARTED
    detail: str = ""               # the last reason, for people

    @property
    def done(self):
        return self.state in DONE

    @property
    def failed(self):
        return self.state == FAILED

    @property
    def pending(self):
        return not self.done and not self.failed

    def reason(self):
        """Why the pod has not moved (for pending and failed pods)."""
        fixed = {EVICTED: "evicted; waiting for termination",
                 TERMINATING: "already terminating; waiting for termination",
                 EVICTING: "eviction request in flight"}
        return fixed.get(self.state) or self.detail or "not started"


class _NodeRun:
    """The shared state of one node's evacuation."""

    def __init__(self, node, targets):
        self.node = node
        self.outcomes = {t.uid: Outcome(t, TERMINATING if t.terminating else NOT_STARTED)
                         for t in targets}
        self.cond = threading.Condition()
        self.finished = False
        self.unsaid_gone = set()

    def settled(self):
        return all(o.state in SETTLED for o in self.outcomes.values())

    def awaiting(self):
        """Pods that were evicted (or were terminating) and are not gone yet."""
        return any(o.state in (EVICTED, TERMINATING) for o in self.outcomes.values())


class Evictor:
    """Evacuates nodes, one call of ``evacuate_node`` per node (callable from several threads)."""

    def __init__(self, kube, *, dry_run=DryRun.NONE, grace_period=-1, max_parallel=8,
                 deadline=None, clock=None, stop=None, progress=None, rng=None,
                 backoff=Backoff(), poll_interval=1.0, watch_window=5.0):
        self._kube = kube
        self._dry_run = dry_run
        self._grace_period = grace_period
        self._deadline = deadline
        self._clock = clock or Clock()
        self._stop = stop or threading.Event()
        self._progress = progress or (lambda message: None)
        self._say_lock = threading.Lock()
        self._rng = rng or random.Random()
        self._backoff = backoff
        self._poll = poll_interval
        self._watch_window = watch_window
        self._pdb_locks = {}
        self._locks_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max_parallel, thread_name_prefix="evict")

    def close(self):
        self._pool.shutdown(wait=False)

    # -- helpers --------------------------------------------------------------------------------
    def _say(self, message):
        with self._say_lock:
            self._progress(message)

    def past_deadline(self):
        return self._deadline is not None and self._clock.now() >= self._deadline

    def _halted(self):
        return self._stop.is_set() or self.past_deadline()

    def _pause(self, seconds):
        """Sleeps up to the deadline; False when the run must stop instead of retrying."""
        if self._halted():
            return False
        if self._deadline is not None:
            seconds = min(seconds, self._deadline - self._clock.now())
        self._clock.sleep(seconds, self._stop)
        return not self._halted()

    def _pdb_lock(self, key):
        with self._locks_lock:
            return self._pdb_locks.setdefault(key, threading.Lock())

    def _set(self, run, outcome, state, detail="", say=None):
        """Records a pod's new state (GONE is final) and says what happened."""
        with run.cond:
            if outcome.state != GONE:
                outcome.state, outcome.detail = state, detail
                run.cond.notify_all()
        if say:
            self._say(say)

    def _mark_gone(self, run, uid, note="gone", *, watch=False):
        """A pod left.  When the watch sees it while its lane still handles the eviction
        response, the lane says "gone" after its own line, to keep the order."""
        with run.cond:
            outcome = run.outcomes.get(uid)
            if outcome is None or outcome.state in DONE:
                return
            defer = watch and outcome.state in (EVICTING, RETRYING, PDB_BLOCKED)
            outcome.state, outcome.detail = GONE, ""
            if defer:
                run.unsaid_gone.add(uid)
            run.cond.notify_all()
        if not defer:
            self._say(f"pod {outcome.target.ref} {note}")

    def _say_deferred_gone(self, run, outcome):
        with run.cond:
            if outcome.target.uid not in run.unsaid_gone:
                return
            run.unsaid_gone.discard(outcome.target.uid)
        self._say(f"pod {outcome.target.ref} gone")

    # -- one node -------------------------------------------------------------------------------
    def evacuate_node(self, node, targets):
        """Evicts the targets (waiting for terminating ones) and returns one Outcome per target.

        Returns when every pod is gone or settled, at the deadline, or soon
        after ``stop`` is set; the outcomes are copies.
        """
        run = _NodeRun(node, targets)
        if self._dry_run is DryRun.NONE and targets:
            threading.Thread(target=self._watch, args=(run,), name=f"watch-{node}",
                             daemon=True).start()
        futures = [self._pool.submit(self._run_lane, run, key, members)
                   for key, members in lanes(t for t in targets if not t.terminating)]

        def wake(_future):
            with run.cond:
                run.cond.notify_all()
        for future in futures:
            future.add_done_callback(wake)
        halted_at = None
        with run.cond:
            while True:
                lanes_done = all(f.done() for f in futures)
                if lanes_done and (self._dry_run is not DryRun.NONE or not run.awaiting()):
                    break
                if self._halted():
                    halted_at = halted_at or time.monotonic()
                    if lanes_done or time.monotonic() - halted_at > HALT_GRACE:
                        break
                run.cond.wait(TICK)
            run.finished = True
            return [replace(o) for o in run.outcomes.values()]

    # -- evictions ------------------------------------------------------------------------------
    def _run_lane(self, run, pdb_key, targets):
        """Evicts the targets one after another; a PDB's pods share one lane and one lock."""
        for target in targets:
            outcome = run.outcomes[target.uid]
            if self._halted():
                return
            lock = self._pdb_lock(pdb_key) if pdb_key else None
            while lock and not lock.acquire(timeout=TICK):
                if self._halted():
                    return
            try:
                self._evict(run, outcome)
                self._say_deferred_gone(run, outcome)
                if lock:  # one disruption at a time per PDB: wait for this pod to be gone
                    with run.cond:
                        while outcome.state == EVICTED and not self._halted():
                            run.cond.wait(TICK)
            except Exception as exc:  # a bug: report it on the pod instead of hanging the node
                self._set(run, outcome, FAILED, f"internal error ({type(exc).__name__}: {exc})")
            finally:
                if lock:
                    lock.release()

    def _evict(self, run, outcome):
        target = outcome.target
        suffix = self._dry_run.suffix
        if outcome.state == GONE:
            return
        self._set(run, outcome, EVICTING, say=f"evicting pod {target.ref}{suffix}")
        attempt = 0
        while True:
            try:
                self._kube.evict(target.namespace, target.name, target.uid,
                                 grace_period=self._grace_period, dry_run=self._dry_run)
            except (ApiError, ConnectionFailed) as exc:
                verdict = classify(exc, target)
            else:
                if self._dry_run is DryRun.NONE:
                    self._set(run, outcome, EVICTED, say=f"evicted pod {target.ref}")
                else:
                    self._set(run, outcome, WOULD_EVICT,
                              say=f"pod {target.ref} would be evicted{suffix}")
                return
            if verdict.kind == V_CONFLICT:
                verdict = self._after_conflict(target)
            if verdict.kind == V_DONE:
                self._mark_gone(run, target.uid, verdict.note)
                return
            if verdict.kind == V_TERMINATING:
                self._set(run, outcome, EVICTED, say=f"pod {target.ref} {verdict.note}")
                return
            if verdict.kind == V_FATAL:
                self._set(run, outcome, FAILED, verdict.note,
                          say=f"pod {target.ref}: eviction failed: {verdict.note}")
                return
            if verdict.kind == V_PDB and (self._dry_run is DryRun.SERVER or target.pdb_never):
                note = verdict.note
                if target.pdb_never and self._dry_run is not DryRun.SERVER:
                    note = f"{note} (it can never allow an eviction: {target.pdb_never})"
                self._set(run, outcome, PDB_REFUSED, note,
                          say=f"pod {target.ref} blocked by {note}{suffix}; not retrying")
                return
            state = PDB_BLOCKED if verdict.kind == V_PDB else RETRYING
            changed = (state, verdict.note) != (outcome.state, outcome.detail)
            verb = "blocked by" if state == PDB_BLOCKED else "retrying:"
            self._set(run, outcome, state, verdict.note,
                      say=f"pod {target.ref} {verb} {verdict.note}" if changed else None)
            if outcome.state == GONE:
                return
            if not self._pause(self._backoff.delay(attempt, self._rng, verdict.retry_after)):
                return
            attempt += 1
            if outcome.state == GONE:   # the watch saw it leave while we waited
                return

    def _after_conflict(self, target):
        """A 409 on the UID precondition: is the pod we meant still there?"""
        try:
            pod = self._kube.get_pod(target.namespace, target.name)
        except ApiError as exc:
            if exc.status == 404:
                return Verdict(V_DONE, "gone (not found after a conflict)")
            return Verdict(V_RETRY, f"conflict, then HTTP {exc.status} reading the pod")
        except ConnectionFailed:
            return Verdict(V_RETRY, "conflict, then a network error reading the pod")
        meta = pod.get("metadata") or {}
        if meta.get("uid") != target.uid:
            return Verdict(V_DONE, "gone (replaced by a new pod with the same name)")
        if meta.get("deletionTimestamp"):
            return Verdict(V_TERMINATING, "is already terminating")
        return Verdict(V_RETRY, "conflict (HTTP 409)")

    # -- waiting for pods to be gone ------------------------------------------------------------
    def _watch_over(self, run):
        return run.finished or self._halted() or run.settled()

    def _watch(self, run):
        """Marks pods gone: a list of the node (absent UID = gone), then a watch from its
        resourceVersion; after a watch error other than 410, polls the list instead."""
        watching = True
        while not self._watch_over(run):
            try:
                pods, version = self._kube.list_pods_on_node_with_version(run.node)
            except (ApiError, ConnectionFailed):
                self._clock.sleep(self._poll, self._stop)
                continue
            present = {(p.get("metadata") or {}).get("uid") for p in pods}
            for uid in list(run.outcomes):
                if uid not in present:
                    self._mark_gone(run, uid, watch=True)
            if self._watch_over(run):
                break
            started = self._clock.now()
            if watching:
                watching = self._watch_events(run, version)
            if self._clock.now() - started < self._poll:
                self._clock.sleep(self._poll, self._stop)
        with run.cond:
            run.cond.notify_all()

    def _watch_events(self, run, version):
        """One watch window; False when watching does not work here (then poll).

        Windows are short: a watch blocked in a read cannot be cancelled, so a
        finished node's watch holds its connection until its window ends."""
        window = self._watch_window
        if self._deadline is not None:
            window = max(1.0, min(window, self._deadline - self._clock.now()))
        try:
            for kind, obj in self._kube.watch_pods_on_node(run.node, version, window):
                if kind == "DELETED":
                    self._mark_gone(run, (obj.get("metadata") or {}).get("uid"), watch=True)
                elif kind == "ERROR":   # e.g. 410 Expired: list again
                    return True
                if self._watch_over(run):
                    return True
        except ApiError as exc:
            if exc.status == 410:
                return True
            self._say(f"node/{run.node}: cannot watch pods (HTTP {exc.status}); "
                      f"polling every {self._poll:g}s instead")
            return False
        except ConnectionFailed:
            self._say(f"node/{run.node}: the pod watch failed; polling every {self._poll:g}s instead")
            return False
        return True
