"""A PodDisruptionBudget's chain of pods and where each one's eviction is (the engine's Chain and
Turn), and the two waits that pace a chain on its budget as the watch (``budgets``) sees it:

- ``hold``: a chain's next pod is not sent while the budget the pod before used up is seen
  allowing none, as the request would only be refused (once a cycle: 45 % of the requests at
  5,000 nodes, issue #35);
- ``room_for_next``: after a pod's eviction, its chain goes on once the pod is gone or once its
  budget is seen allowing again, whichever is first.  The server counts a terminating pod as
  disrupted, so a budget that allows again has room for the next pod even while the one
  before still terminates (a Deployment's replacement is Ready by then); a StatefulSet's
  replacement comes only after the old pod is gone, so its budget allows only then.

Without a running watch neither waits on the budget: the chain goes on when the pod is gone.
"""

from collections import deque
from concurrent.futures import Future
from typing import Deque, Optional, Tuple

from .budgets import WINDOW
from .plan import Target
from .state import EVICTED, NodeEvacuation

# Seconds a chain's next pod is held at most while its budget, used up by the eviction before,
# is seen allowing none; then it is sent anyway, and a refusal is retried as any other.  HOLD
# until the budget is seen to cycle; then twice its longest cycle (a loaded cluster's run to
# 8 s and more, which a 5 s hold left refused at each backoff step: 13 % of the requests at
# 5,000 nodes, issue #35), up to HOLD_MAX, the watch's window: an allowing the watch missed is
# seen by its next list.  A budget that has not cycled (its replacements Pending) is asked
# after HOLD, so its refusal is reported as soon as before.
HOLD = 5.0
HOLD_MAX = WINDOW
TICK = 0.5           # real seconds between looks at the pod and the stop while waiting for room


class Turn:
    """Where one pod's eviction is, kept while its chain gives way to others (Evictor): the
    attempts made, the resourceVersion to send, the budget's mark taken before the last
    request, and the wait begun after the last refusal (its end on the run's clock and its
    ``sleep``) not yet served.  ``give_way`` says, as a wait begins, whether to end the turn
    there and leave the wait for the next one.  ``after_eviction``: the pod before it in its
    chain was evicted in this run, so its budget may allow none until that pod's replacement
    is ready (see ``hold``)."""

    def __init__(self, target, give_way=None, *, after_eviction=False):
        self.attempt, self.version = 0, target.resource_version
        self.started, self.evicted = False, False
        self.wait = None
        self.mark = 0
        self.may_hold = after_eviction
        self.give_way = give_way or (lambda: False)


class Chain:
    """A PodDisruptionBudget's pods, evicted one after another: those waiting their turn, and
    the one being evicted with its Turn."""

    def __init__(self):
        self.waiting: Deque[Tuple[NodeEvacuation, Target, Future]] = deque()  # done: its turn over
        self.current: Optional[Tuple[NodeEvacuation, Target, Future, Turn]] = None
        self.evicted = False             # a pod of it was evicted in this run


def single_budget(target, budgets):
    """The (namespace, name) of the target's one PDB when a budget watch is given, else None."""
    return (target.namespace, target.pdbs[0]) if budgets and len(target.pdbs) == 1 else None


def hold(turn, budget, budgets, halt):
    """Before a chain's next pod is first sent: while the watch sees the budget still allowing
    none, a wait for it to allow again (at most ``hold_seconds``; see the module).  Only after an
    eviction of this run's, so a budget that refuses from the start is still asked and its
    refusal reported.  True when the pod is held."""
    may_hold, turn.may_hold = turn.may_hold, False     # only before the first request
    if not (may_hold and budget):
        return False
    mark = budgets.mark(budget)          # before the look: an allowing in between ends the wait
    if not budgets.refusing(budget):
        return False
    turn.wait = (halt.clock.now() + hold_seconds(budgets.longest_cycle(budget)),
                 budgets.waiter(budget, mark))
    return True


def hold_seconds(longest_cycle):
    """How long a hold lasts at most, given the budget's longest cycle seen (0: none yet)."""
    return min(max(HOLD, 2 * longest_cycle), HOLD_MAX)


def held_note(budget):
    namespace, name = budget
    return f"PDB {namespace}/{name}: allows no disruption yet (held until the watch sees it allow)"


class CondWake:
    """A budget watch's wake (``set``) that wakes whoever waits on a node's condition, where the
    watch of the node's pods also tells of a pod gone."""

    def __init__(self, cond):
        self._cond, self._set = cond, False

    def set(self):
        with self._cond:
            self._set = True
            self._cond.notify_all()

    def is_set(self):
        return self._set


def room_for_next(run, target, turn, budgets, halt):
    """After the target's eviction: waits until it is gone, its budget is seen allowing since
    the accepted request (``turn.mark``), or the run stops.  True then; False when the chain
    gives way (``turn.give_way``, asked after each TICK of the wait)."""
    budget = single_budget(target, budgets)
    watching = budget is not None and budgets.live
    wake = CondWake(run.cond)
    if watching:
        budgets.waker(budget, turn.mark, wake)
    try:
        with run.cond:
            while run.state_of(target.uid) == EVICTED and not halt.halted() and not wake.is_set():
                run.cond.wait(TICK)
                if run.state_of(target.uid) == EVICTED and not wake.is_set() and turn.give_way():
                    return False
    finally:
        if watching:
            budgets.drop(budget, wake)
    return True
