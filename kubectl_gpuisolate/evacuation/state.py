"""The shared state of an evacuation: what happened to each pod (``Outcome``), one node's
outcomes under their condition (``NodeEvacuation``), and when to stop (``Halt``).

The eviction lanes and the gone-watcher of a node change its outcomes only through
``NodeEvacuation``'s methods, which also say what happened, in an order people can follow:
a pod's "gone" line never comes before the line of the eviction that removed it.
"""

import threading
import time
from dataclasses import dataclass, replace

from .plan import Target

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
# States in which the lane still handles the pod's eviction response.
IN_FLIGHT = frozenset({EVICTING, RETRYING, PDB_BLOCKED})


class Clock:
    """Monotonic time; sleeps end early when the stop event is set."""

    def now(self):
        return time.monotonic()

    def sleep(self, seconds, stop):
        if seconds > 0:
            stop.wait(seconds)


class Halt:
    """When a run must stop: an interrupt (``stop`` is set) or the deadline (clock time)."""

    def __init__(self, clock=None, stop=None, deadline=None):
        self.clock = clock or Clock()
        self.stop = stop or threading.Event()
        self.deadline = deadline

    def past_deadline(self):
        return self.deadline is not None and self.clock.now() >= self.deadline

    def halted(self):
        return self.stop.is_set() or self.past_deadline()

    def left(self):
        """Seconds to the deadline (None without one)."""
        return None if self.deadline is None else self.deadline - self.clock.now()

    def pause(self, seconds, sleep=None):
        """Sleeps up to the deadline (with ``sleep(seconds, stop)``, which may end early, when
        given); False when the run must stop instead of retrying."""
        if self.halted():
            return False
        left = self.left()
        (sleep or self.clock.sleep)(seconds if left is None else min(seconds, left), self.stop)
        return not self.halted()

    def nap(self, seconds):
        """Sleeps (the deadline aside), waking early on a stop: the watcher's polls."""
        self.clock.sleep(seconds, self.stop)


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


class NodeEvacuation:
    """One node's evacuation: an Outcome per target, changed under ``cond`` only.

    ``say`` takes one progress line; it must be safe to call from several threads."""

    def __init__(self, node, targets, say=None):
        self.node = node
        self.outcomes = {t.uid: Outcome(t, TERMINATING if t.terminating else NOT_STARTED)
                         for t in targets}
        self.cond = threading.Condition()
        self.finished = False
        self._say = say or (lambda message: None)
        self._unsaid_gone = set()

    def settled(self):
        return all(o.state in SETTLED for o in self.outcomes.values())

    def awaiting(self):
        """Pods that were evicted (or were terminating) and are not gone yet."""
        return any(o.state in (EVICTED, TERMINATING) for o in self.outcomes.values())

    def state_of(self, uid):
        return self.outcomes[uid].state

    def wake(self):
        with self.cond:
            self.cond.notify_all()

    def copies(self):
        with self.cond:
            return [replace(o) for o in self.outcomes.values()]

    def set_state(self, uid, state, detail="", say=None):
        """Records a pod's new state (GONE is final) and says ``say``."""
        with self.cond:
            outcome = self.outcomes[uid]
            if outcome.state != GONE:
                outcome.state, outcome.detail = state, detail
                self.cond.notify_all()
        if say:
            self._say(say)

    def mark_gone(self, uid, note="gone", *, seen_by_watch=False):
        """A pod left.  When the watch sees it while its lane still handles the eviction
        response, the lane says "gone" after its own line (``say_deferred_gone``)."""
        with self.cond:
            outcome = self.outcomes.get(uid)
            if outcome is None or outcome.state in DONE:
                return
            defer = seen_by_watch and outcome.state in IN_FLIGHT
            outcome.state, outcome.detail = GONE, ""
            if defer:
                self._unsaid_gone.add(uid)
            self.cond.notify_all()
        if not defer:
            self._say(f"pod {outcome.target.ref} {note}")

    def say_deferred_gone(self, uid):
        """Says the "gone" line that ``mark_gone`` held back for this pod, if any."""
        with self.cond:
            if uid not in self._unsaid_gone:
                return
            self._unsaid_gone.discard(uid)
            ref = self.outcomes[uid].target.ref
        self._say(f"pod {ref} gone")
