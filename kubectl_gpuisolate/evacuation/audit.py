"""The audit trail of an evacuation: a Kubernetes Event on each pod it evicts, on each pod whose
eviction a PodDisruptionBudget blocks (once per pod and run, not once per retry), and on each pod
it leaves on a node it evacuates, so that ``kubectl describe pod`` says why the pod moved or did
not.  The reasons and when each is written: docs/output.md, "Events"; their messages:
``output.events``.

Off the eviction path: the engine only queues an event, a few writer threads send them while
the evictions go on, and ``close`` waits for them before the command ends.  Best effort: a write
that fails (5xx, no answer) is counted and the others are still written; a 401 or 403 stops the
writing (the role lacks the verb: every other write would be refused the same).  ``close`` says
what was not written in one warning line; it never fails the run or changes its exit code.
A dry run writes none.
DaemonSet, mirror and finished pods get none: they are never evicted, and an event on each of
them on every run would be noise.
"""

import threading
from concurrent.futures import ThreadPoolExecutor

from ..core import planner
from ..errors import Forbidden, GpuIsolateError, Unauthorized
from ..output import events as text
from .state import EVICTED as EVICTED_STATE
from .state import TERMINATING

EVICTED = "GpuIsolateEvicted"                      # Normal: the eviction was accepted
EVICTION_BLOCKED = "GpuIsolateEvictionBlocked"     # Warning: a PDB refused it
LEFT_IN_PLACE = "GpuIsolateLeftInPlace"            # Normal: the planner keeps it; Warning: not moved
NORMAL, WARNING = "Normal", "Warning"
QUIET = frozenset({"daemonset", "daemonset-orphan", "mirror", "finished"})   # planner reasons
WRITERS = 4                                        # events in flight at once


class Audit:
    """The events of one run.  ``warn`` takes the one warning line; with ``enabled`` false
    (a dry run) every call is a no-op.  Callable from several threads."""

    def __init__(self, kube, *, enabled, warn, writers=WRITERS):
        self._kube, self._warn = kube, warn
        self._lock = threading.Lock()
        self._sent = set()           # (uid, reason) of each event queued this run
        self._explained = set()      # uids of the pods with an event queued this run
        self._why = {}               # uid -> the planner's message, for the pods to move
        self._queued = self._unwritten = 0
        self._failure = None         # the first failure, for the warning
        self._refused = False        # a 401/403: write no more
        self._pool = ThreadPoolExecutor(max_workers=writers, thread_name_prefix="event") \
            if enabled else None

    # -- what happened ----------------------------------------------------------------------------
    def planned(self, plan):
        """Remembers why each pod of the node's plan moves, for its GpuIsolateEvicted message."""
        with self._lock:
            self._why.update((d.uid, d.message) for d in plan.to_move)

    def evicted(self, node, target):
        why = self._why.get(target.uid, "it does not tolerate the GPU taint")
        self._queue(target, EVICTED, NORMAL, text.evicted(node, why))

    def eviction_blocked(self, node, target, note):
        """A 429 from the pod's PDB: written on the first one only."""
        self._queue(target, EVICTION_BLOCKED, WARNING,
                    text.eviction_blocked(node, note, target.pdb_never))

    def node_done(self, plan, outcomes):
        """After a node's evacuation: the pods the planner keeps, and the targets still there
        that no event explains yet (an evicted pod still terminating has its event)."""
        for d in plan.with_action(planner.STAY):
            if d.reason not in QUIET:
                self._queue(d, LEFT_IN_PLACE, NORMAL, text.left_in_place(plan.name, d.message))
        for o in outcomes:
            if o.done or o.state in (EVICTED_STATE, TERMINATING) or self._has_event(o.target.uid):
                continue
            self._queue(o.target, LEFT_IN_PLACE, WARNING, text.not_moved(plan.name, o.reason()))

    def refused(self, plans):
        """Nodes the preflight refused: the pods that made it refuse them."""
        for plan in plans:
            for d in plan.blocked:
                self._queue(d, LEFT_IN_PLACE, WARNING, text.refused(plan.name, d.message))

    def close(self):
        """Waits for the events queued; says once if any could not be written."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is None:
            return
        pool.shutdown(wait=True)
        if self._failure is not None:
            self._warn(text.not_written(self._unwritten, self._queued, self._failure))

    # -- writing ----------------------------------------------------------------------------------
    def _has_event(self, uid):
        with self._lock:
            return uid in self._explained

    def _queue(self, pod, reason, type_, message):
        """``pod``: a Target or a PodDecision (namespace, name, uid)."""
        with self._lock:
            if self._pool is None or (pod.uid, reason) in self._sent:   # closed, or a dry run
                return
            self._sent.add((pod.uid, reason))
            self._explained.add(pod.uid)
            self._queued += 1
            self._pool.submit(self._write, pod, reason, type_, message)

    def _write(self, pod, reason, type_, message):
        with self._lock:
            if self._refused:                # the role lacks the verb: do not insist
                self._unwritten += 1
                return
        refused = False
        try:
            self._kube.create_event(pod.namespace, {"name": pod.name, "uid": pod.uid}, reason,
                                    message, type_)
            return
        except (Forbidden, Unauthorized) as exc:
            failure, refused = str(exc), True
        except GpuIsolateError as exc:       # the transport's others (5xx, connection): the next may pass
            failure = str(exc)
        except Exception as exc:             # a bug must not fail an evacuation either
            failure = f"internal error ({type(exc).__name__}: {exc})"
        with self._lock:
            self._unwritten += 1
            self._failure = self._failure or failure
            self._refused = self._refused or refused
