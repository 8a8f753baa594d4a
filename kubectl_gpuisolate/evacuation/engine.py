"""The eviction engine: evicts one node's pods and waits until they are gone.

It owns the policy of an evacuation, not the choice of pods (that is
``planner``'s): acting on each Eviction response (``policy``), with
capped exponential backoff and jitter that honours Retry-After, each PodDisruptionBudget's
pods one after another, paced on the budget (``turns``), a bounded number of evictions in parallel, the
wait for each evicted pod to be gone (``watch``), the run's deadline, and stopping
cleanly on an interrupt (``state.Halt``): no new eviction starts once it is set.  It tells
the ``audit`` (the run's Events) of each eviction accepted and each PDB refusal; the audit
only queues them.

The Kube-like object is duck-typed: ``evict``, ``get_pod``,
``list_pods_on_node_with_version`` and ``watch_pods_on_node``; the clock has
``now()`` and ``sleep(seconds, stop_event)``.  Unit tests pass fakes of both.
"""

import contextlib
import random
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Deque, Tuple

from ..core.dryrun import DryRun
from ..errors import ApiError, ConnectionFailed
from ..kube.retry import EVICTIONS, PDB_EVICTIONS
from .audit import Audit
from .plan import lanes
from .policy import Kind, after_conflict, classify
from .state import (
    EVICTED,
    EVICTING,
    FAILED,
    GONE,
    PDB_BLOCKED,
    PDB_REFUSED,
    RETRYING,
    WOULD_EVICT,
    Halt,
    NodeEvacuation,
)
from .turns import TICK, Chain, Turn, held_note, hold, room_for_next, single_budget
from .watch import GoneWatcher

NO_AUDIT = Audit(None, enabled=False, warn=None)
HALT_GRACE = 5.0     # real seconds to let requests in flight finish after a stop or the deadline
# Threads that take the PDB chains' turns: with more chains they take turns (Evictor), and a
# chain taken up serves what is left of its wait on its worker, so a turn can come late.  Above
# the limit bench's 50 budgets for that; scripts/bench_budgets.py measured 500 (docs/benchmarks.md).
CHAIN_WORKERS = 64


# -- one pod --------------------------------------------------------------------------------------
# What each verdict on a failed eviction does to the pod; True when its lane is done with it
# (no retry).  A conflict is resolved into another verdict first.
def _gone(node, target, verdict, dry_run):
    node.mark_gone(target.uid, verdict.note)
    return True


def _terminating(node, target, verdict, dry_run):
    node.set_state(target.uid, EVICTED, say=f"pod {target.ref} {verdict.note}")
    return True


def _fatal(node, target, verdict, dry_run):
    node.set_state(target.uid, FAILED, verdict.note,
                   say=f"pod {target.ref}: eviction failed: {verdict.note}")
    return True


def _pdb(node, target, verdict, dry_run):
    if dry_run is not DryRun.SERVER and not target.pdb_never:
        return _keep_trying(node, target, PDB_BLOCKED, "blocked by", verdict.note)
    note = verdict.note
    if dry_run is not DryRun.SERVER:
        note = f"{note} (it can never allow an eviction: {target.pdb_never})"
    node.set_state(target.uid, PDB_REFUSED, note,
                   say=f"pod {target.ref} blocked by {note}{dry_run.suffix}; not retrying")
    return True


def _retry(node, target, verdict, dry_run):
    return _keep_trying(node, target, RETRYING, "retrying:", verdict.note)


def _keep_trying(node, target, state, verb, note):
    """Records why the pod waits; says it only when the reason changed."""
    outcome = node.outcomes[target.uid]
    changed = (state, note) != (outcome.state, outcome.detail)
    say = f"pod {target.ref} {verb} {note}" if changed else None
    node.set_state(target.uid, state, note, say=say)
    return False


ON_VERDICT = {Kind.DONE: _gone, Kind.TERMINATING: _terminating, Kind.FATAL: _fatal, Kind.PDB: _pdb,
              Kind.RETRY: _retry}


def _read_pod(kube, target):
    """The pod, or the error reading it raised (for ``policy.after_conflict`` to judge)."""
    try:
        return kube.get_pod(target.namespace, target.name)
    except (ApiError, ConnectionFailed) as exc:
        return exc


def _send(kube, target, version, grace_period, dry_run):
    """One eviction request, preconditioned on the pod's UID and ``version``: ``(None, _)``
    when accepted, else ``(the verdict on its failure, the version to send next)``.  After a
    conflict the pod is read: changed but the same pod, not terminating, it is sent again with
    its new version; terminating (someone else evicted it), it is waited for."""
    try:
        kube.evict(target.namespace, target.name, target.uid, grace_period=grace_period,
                   dry_run=dry_run, resource_version=version)
    except (ApiError, ConnectionFailed) as exc:
        verdict = classify(exc, target)
        if verdict.kind is Kind.CONFLICT:   # is the pod we meant still there?
            pod = _read_pod(kube, target)
            if isinstance(pod, dict):
                version = (pod.get("metadata") or {}).get("resourceVersion") or version
            return after_conflict(target, pod), version
        return verdict, version
    return None, version


def _accepted(node, target, dry_run, audit):
    if dry_run is DryRun.NONE:
        node.set_state(target.uid, EVICTED, say=f"evicted pod {target.ref}")
        audit.evicted(node.node, target)
    else:
        node.set_state(target.uid, WOULD_EVICT, say=f"pod {target.ref} would be evicted{dry_run.suffix}")


def evict_pod(kube, node, target, *, halt, dry_run=DryRun.NONE, grace_period=-1,
              backoff=EVICTIONS, pdb_backoff=PDB_EVICTIONS, rng=None, audit=None, slots=None,
              budgets=None, turn=None):
    """Evicts one pod of ``node`` (a NodeEvacuation), retrying with backoff until the server
    accepts, the pod is gone, a verdict ends it, or ``halt`` stops the run: ``pdb_backoff``
    after a PodDisruptionBudget's refusal, ``backoff`` after any other.  ``slots`` (a
    semaphore) is held for each request only, never while backing off.  ``budgets`` (a
    budgets.BudgetWatch) ends a wait after a refusal of the pod's one PDB as soon as that
    budget is seen allowing again.  True once the pod's eviction is over; False when ``turn``
    (a Turn) gave way as a wait began (called again with it, the wait is served first)."""
    rng = rng or random.Random()
    slots = slots or contextlib.nullcontext()
    audit = audit or NO_AUDIT
    turn = turn or Turn(target)
    if not turn.started:
        if node.state_of(target.uid) == GONE:
            return True
        node.set_state(target.uid, EVICTING, say=f"evicting pod {target.ref}{dry_run.suffix}")
        turn.started = True
    budget = single_budget(target, budgets)
    if hold(turn, budget, budgets, halt):
        # Quietly: a line per held pod is noise; a deadline's report still says why it waits.
        node.set_state(target.uid, PDB_BLOCKED, held_note(budget))
        if turn.give_way():
            return False
    while True:
        if turn.wait is not None:
            (until, sleep), turn.wait = turn.wait, None
            if not halt.pause(max(until - halt.clock.now(), 0.0), sleep):
                return True
            turn.attempt += 1
            if node.state_of(target.uid) == GONE:   # the watch saw it leave while we waited
                return True
        turn.mark = budgets.mark(budget) if budget else 0   # before the request: no allowing missed
        with slots:
            verdict, turn.version = _send(kube, target, turn.version, grace_period, dry_run)
        if verdict is None:
            _accepted(node, target, dry_run, audit)
            turn.evicted = True
            return True
        if verdict.kind is Kind.PDB:
            audit.eviction_blocked(node.node, target, verdict.note)
        if ON_VERDICT[verdict.kind](node, target, verdict, dry_run) or \
                node.state_of(target.uid) == GONE:
            return True
        waits = pdb_backoff if verdict.kind is Kind.PDB else backoff
        sleep = budgets.waiter(budget, turn.mark) if budget and verdict.kind is Kind.PDB else None
        turn.wait = (halt.clock.now() + waits.delay(turn.attempt, rng, verdict.retry_after), sleep)
        if turn.give_way():
            return False


# -- nodes ----------------------------------------------------------------------------------------
class Evictor:
    """Evacuates nodes, one call of ``evacuate_node`` per node (callable from several threads):
    at most ``max_parallel`` eviction requests in flight, and one chain per PodDisruptionBudget,
    shared by every node, so a PDB spanning nodes still sees one eviction at a time.  ``audit``
    (an ``audit.Audit``) hears of the evictions and PDB refusals; None writes no events.
    ``budgets`` (a ``budgets.BudgetWatch``, not started) is started with the first chain and
    wakes a chain's pod as soon as its budget allows again; None: backoff only.

    The chains take turns on at most ``chain_workers`` threads, whichever node their pods are
    on: a pod waiting for its budget, or for room after the pod before it, holds no request
    slot, so other budgets' pods go on meanwhile.  With more chains than workers, a chain whose
    pod begins to wait gives its worker to the next chain waiting for one and queues again
    behind it, its wait kept (a Turn): a budget that never allows holds no worker for good.
    The pods under no single PDB are lanes of one pod each, on a pool of ``max_parallel``
    workers."""

    def __init__(self, kube, *, halt=None, dry_run=DryRun.NONE, grace_period=-1, max_parallel=8,
                 progress=None, rng=None, backoff=EVICTIONS, poll_interval=1.0, watch_window=5.0,
                 audit=None, budgets=None, chain_workers=None):
        self._kube = kube
        self._budgets = budgets
        self.halt = halt or Halt()
        self._dry_run = dry_run
        self._eviction = dict(halt=self.halt, dry_run=dry_run, grace_period=grace_period,
                              backoff=backoff, rng=rng or random.Random(), audit=audit,
                              slots=threading.BoundedSemaphore(max_parallel), budgets=budgets)
        self._progress = progress or (lambda message: None)
        self._say_lock = threading.Lock()
        self._watching = dict(poll=poll_interval, window=watch_window)
        self._chains = {}               # PDB key -> Chain
        self._queued: Deque[Tuple[str, str]] = deque()   # PDB keys of chains waiting for a worker
        self._chain_workers, self._busy_workers = chain_workers or CHAIN_WORKERS, 0
        self._chains_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max_parallel, thread_name_prefix="evict")

    def close(self):
        self._pool.shutdown(wait=False)
        if self._budgets is not None:
            self._budgets.close()

    def _say(self, message):
        with self._say_lock:
            self._progress(message)

    def _enqueue(self, pdb_key, run, target):
        """A Future done once the target's turn in its PDB's chain is over; starts the chain,
        on a worker of its own while there are fewer than ``chain_workers``."""
        done: "Future[None]" = Future()
        with self._chains_lock:
            chain = self._chains.get(pdb_key)
            if chain is None:
                if self._budgets is not None and not self._budgets.started:
                    self._budgets.start()
                chain = self._chains[pdb_key] = Chain()
                self._queued.append(pdb_key)
                if self._busy_workers < self._chain_workers:
                    self._busy_workers += 1
                    threading.Thread(target=self._chain_worker, daemon=True,
                                     name=f"evict-pdb-{self._busy_workers}").start()
            chain.waiting.append((run, target, done))
        return done

    def _give_way(self):
        """Whether a chain waits for a worker while every worker is busy."""
        return bool(self._queued) and self._busy_workers >= self._chain_workers

    def _chain_worker(self):
        """Takes the queued chains' turns, in order, until none is queued."""
        while True:
            with self._chains_lock:
                if not self._queued:
                    self._busy_workers -= 1
                    return
                pdb_key = self._queued.popleft()
            self._take_turn(pdb_key)

    def _take_turn(self, pdb_key):
        """Evicts a PDB's pods one after another, each once there is room (turns.room_for_next), until
        none is waiting (the chain ends) or its pod gives way (the chain queues again)."""
        while True:
            with self._chains_lock:
                chain = self._chains[pdb_key]
                if chain.current is None:
                    if not chain.waiting:
                        del self._chains[pdb_key]
                        return
                    run, target, done = chain.waiting.popleft()
                    chain.current = (run, target, done,
                                     Turn(target, self._give_way, after_eviction=chain.evicted))
                run, target, done, turn = chain.current
            over = True
            try:
                over = self.halt.halted() or self._evict_in_turn(run, target, turn)
            finally:
                if over:
                    chain.evicted |= turn.evicted and self._dry_run is DryRun.NONE
                    chain.current = None
                    done.set_result(None)
            if not over:
                with self._chains_lock:
                    self._queued.append(pdb_key)
                return

    def evacuate_node(self, node, targets):
        """Evicts the targets (waiting for terminating ones) and returns one Outcome per target.

        Returns when every pod is gone or settled, at the deadline, or soon
        after the stop is set; the outcomes are copies.
        """
        run = NodeEvacuation(node, targets, self._say)
        if self._dry_run is DryRun.NONE and targets:
            watcher = GoneWatcher(self._kube, run, self.halt, say=self._say, **self._watching)
            threading.Thread(target=watcher.run, name=f"watch-{node}", daemon=True).start()
        futures = []
        for key, members in lanes(t for t in targets if not t.terminating):
            if key is None:
                futures += [self._pool.submit(self._run_solo, run, t) for t in members]
            else:
                futures += [self._enqueue(key, run, t) for t in members]
        for future in futures:
            future.add_done_callback(lambda _future: run.wake())
        self._wait(run, futures)
        return run.copies()

    def _wait(self, run, futures):
        """Until the lanes are done and (for real evictions) no evicted pod is left, or
        HALT_GRACE real seconds after a halt, whichever comes first."""
        halted_at = None
        with run.cond:
            while True:
                lanes_done = all(f.done() for f in futures)
                if lanes_done and (self._dry_run is not DryRun.NONE or not run.awaiting()):
                    break
                if self.halt.halted():
                    halted_at = halted_at or time.monotonic()
                    if lanes_done or time.monotonic() - halted_at > HALT_GRACE:
                        break
                run.cond.wait(TICK)
            run.finished = True

    def _run_solo(self, run, target):
        if not self.halt.halted():
            self._evict(run, target)

    def _evict(self, run, target):
        """Evicts one target of no single PDB's chain."""
        try:
            evict_pod(self._kube, run, target, **self._eviction)
            run.say_deferred_gone(target.uid)
        except Exception as exc:  # a bug: report it on the pod instead of hanging the node
            run.set_state(target.uid, FAILED, f"internal error ({type(exc).__name__}: {exc})")

    def _evict_in_turn(self, run, target, turn):
        """One turn of a chain's pod: evicts it and, one disruption at a time per PDB, waits
        until it is gone, its budget is seen allowing again, or the run stops
        (``turns.room_for_next``).  True when its turn is over; False when it gave way (the
        wait it began is kept in ``turn``), which it does while waiting for room only after a
        tick of that wait."""
        try:
            if not turn.evicted:
                if not evict_pod(self._kube, run, target, turn=turn, **self._eviction):
                    return False
                run.say_deferred_gone(target.uid)
            if not room_for_next(run, target, turn, self._budgets, self.halt):
                return False
        except Exception as exc:  # a bug: report it on the pod instead of hanging the node
            run.set_state(target.uid, FAILED, f"internal error ({type(exc).__name__}: {exc})")
        return True
