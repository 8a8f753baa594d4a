"""evacuation/engine.py's hold and budgets.py's ``refusing``: a chain's next pod is not sent while
the budget its predecessor's eviction used up is seen allowing none; it waits for the watch to
see the budget allow (at most HOLD, or twice the budget's longest cycle seen, up to HOLD_MAX), so a
budget's cycle costs no refused request.  A chain's
first pod, a dry run and a budget not seen refusing are sent at once, as before."""

import threading

from kubectl_gpuisolate.core.dryrun import DryRun
from kubectl_gpuisolate.errors import ConnectionFailed, api_error
from kubectl_gpuisolate.evacuation import turns
from kubectl_gpuisolate.evacuation.budgets import BudgetWatch
from kubectl_gpuisolate.evacuation.state import GONE, PDB_BLOCKED, WOULD_EVICT, Halt

from ..evict_fakes import OK, FakeClock, FakeNode, pdb_429
from .test_budgets import KEY, ScriptedKube, pdb
from .test_engine import run_node, target

WEB = ("default", "web")


class HoldingBudgets:
    """A BudgetWatch's face to the engine, its budgets seen refusing as ``refusing`` says; each
    wait is recorded (with the calls made before it) and ends at once, or runs its whole
    time on the clock with ``full_waits``."""

    live = False                        # the chain goes on once a pod is gone

    def __init__(self, fake, refusing=True, full_waits=False, clock=None, cycle=0.0):
        self.fake, self.is_refusing, self.started = fake, refusing, True
        self.full_waits, self.clock = full_waits, clock
        self.cycle = cycle
        self.waits = []

    def longest_cycle(self, key):
        return self.cycle

    def refusing(self, key):
        return self.is_refusing

    def mark(self, key):
        return 0

    def waiter(self, key, mark):
        def sleep(seconds, stop):
            self.waits.append((key, [c[1] for c in self.fake.calls], seconds))
            if self.full_waits:
                self.clock.sleep(seconds, stop)
        return sleep

    def close(self):
        pass


def chain_of(*names):
    return [target(n, pdbs=("web",)) for n in names]


def test_the_next_pod_of_a_chain_waits_for_its_budget_before_its_first_request():
    fake = FakeNode(["a", "b", "c"])
    budgets = HoldingBudgets(fake)
    outcomes, said, _ = run_node(fake, chain_of("a", "b", "c"), budgets=budgets)
    assert {n: o.state for n, o in outcomes.items()} == {"a": GONE, "b": GONE, "c": GONE}
    assert [c[1] for c in fake.calls] == ["a", "b", "c"]          # no refused request
    assert budgets.waits == [(WEB, ["a"], turns.HOLD), (WEB, ["a", "b"], turns.HOLD)]
    assert not [s for s in said if "blocked by" in s]


def test_a_chains_first_pod_is_sent_even_while_its_budget_is_seen_refusing():
    fake = FakeNode(["a"], script={"a": [pdb_429(has=1), OK]})
    budgets = HoldingBudgets(fake)
    outcomes, said, _ = run_node(fake, chain_of("a"), budgets=budgets)
    assert outcomes["a"].state == GONE and [c[1] for c in fake.calls] == ["a", "a"]
    assert [w[1] for w in budgets.waits] == [["a"]]               # the wait after its refusal
    assert "pod default/a blocked by PDB default/web: needs 2 healthy, has 1" in said


def test_a_budget_not_seen_refusing_holds_nothing():
    fake = FakeNode(["a", "b"])
    budgets = HoldingBudgets(fake, refusing=False)
    outcomes, _, _ = run_node(fake, chain_of("a", "b"), budgets=budgets)
    assert outcomes["b"].state == GONE and budgets.waits == []


def test_a_hold_that_is_never_ended_early_lasts_HOLD_on_the_clock():
    clock = FakeClock()
    fake = FakeNode(["a", "b"], script={"b": [pdb_429(has=1), OK]})
    budgets = HoldingBudgets(fake, full_waits=True, clock=clock)
    outcomes, said, _ = run_node(fake, chain_of("a", "b"), budgets=budgets, clock=clock)
    assert outcomes["b"].state == GONE and [c[1] for c in fake.calls] == ["a", "b", "b"]
    assert budgets.waits[0] == (WEB, ["a"], turns.HOLD)
    assert turns.HOLD in clock.lane_sleeps()
    assert "pod default/b blocked by PDB default/web: needs 2 healthy, has 1" in said


def test_a_pod_held_at_the_deadline_is_reported_waiting_for_its_budget_and_never_asked():
    clock = FakeClock(lanes_only=True)       # the pod watch's polls must not reach the deadline
    fake = FakeNode(["a", "b"])
    budgets = HoldingBudgets(fake, full_waits=True, clock=clock)
    outcomes, said, _ = run_node(fake, chain_of("a", "b"), budgets=budgets, clock=clock,
                                 deadline=turns.HOLD / 2)
    assert [c[1] for c in fake.calls] == ["a"]
    assert outcomes["b"].state == PDB_BLOCKED
    assert outcomes["b"].reason() == turns.held_note(WEB) == \
        "PDB default/web: allows no disruption yet (held until the watch sees it allow)"
    assert not [s for s in said if "default/web" in s]      # held quietly


def test_a_budget_seen_to_cycle_is_held_for_twice_its_longest_cycle_up_to_HOLD_MAX():
    for cycle, held in ((0.0, turns.HOLD), (1.0, turns.HOLD), (8.0, 16.0), (60.0, turns.HOLD_MAX)):
        fake = FakeNode(["a", "b"])
        budgets = HoldingBudgets(fake, cycle=cycle)
        run_node(fake, chain_of("a", "b"), budgets=budgets)
        assert budgets.waits == [(WEB, ["a"], held)], cycle
    assert turns.HOLD_MAX == 30.0


def test_a_dry_run_holds_nothing():
    fake = FakeNode(["a", "b"])
    budgets = HoldingBudgets(fake)
    outcomes, _, _ = run_node(fake, chain_of("a", "b"), budgets=budgets, dry_run=DryRun.SERVER)
    assert {o.state for o in outcomes.values()} == {WOULD_EVICT} and budgets.waits == []


# -- budgets.BudgetWatch.refusing -----------------------------------------------------------------
def test_refusing_is_what_the_running_watch_last_saw():
    budgets = BudgetWatch(None, Halt())
    budgets._note([pdb(allowed=0)])
    assert not budgets.refusing(KEY)               # not listed yet: nothing is known
    budgets._set_live(True)
    assert budgets.refusing(KEY)
    budgets._note([pdb(allowed=1)])
    assert not budgets.refusing(KEY)
    budgets._note([pdb(allowed=0)])
    budgets._forget(pdb())                         # deleted
    assert not budgets.refusing(KEY)


def test_longest_cycle_is_the_longest_time_seen_allowing_none_before_allowing_again():
    clock = FakeClock()
    budgets = BudgetWatch(None, Halt(clock))
    assert budgets.longest_cycle(KEY) == 0.0
    seen = [(0, 0), (2, 0), (4, 1), (5, 0), (6, 1), (7, 1), (8, 0), (20, 0)]   # (time, allowed)
    cycles = []
    for at, allowed in seen:
        clock.t = at
        budgets._note([pdb(allowed=allowed)])
        cycles.append(budgets.longest_cycle(KEY))
    assert cycles == [0, 0, 4, 4, 4, 4, 4, 4]    # 0 -> 4 s, 5 -> 6 s; 8 -> not over yet
    clock.t = 30
    budgets._forget(pdb())                        # deleted: its cycle under way is dropped
    budgets._note([pdb(allowed=1)])
    assert budgets.longest_cycle(KEY) == 4
    assert budgets.longest_cycle(("apps", "other")) == 0.0


def wait_for(condition):
    for _ in range(500):
        if condition():
            return True
        threading.Event().wait(0.01)
    return False


def test_the_loop_knows_a_refusing_budget_from_its_list_and_forgets_it_when_deleted():
    kube = ScriptedKube([[pdb(allowed=0)]])
    budgets = BudgetWatch(kube, Halt()).start()
    try:
        assert wait_for(lambda: budgets.refusing(KEY))
        kube.events.put(("DELETED", pdb(allowed=0)))
        assert wait_for(lambda: not budgets.refusing(KEY))
    finally:
        budgets.close()
        kube.events.put(None)


def test_a_watch_that_fails_knows_nothing():
    for error in (api_error("forbidden", status=403, reason="Forbidden"),
                  ConnectionFailed("cannot reach the API server")):
        stop = threading.Event()
        budgets = BudgetWatch(ScriptedKube([[pdb(allowed=0)]], watch_error=error), Halt(stop=stop))
        stop.wait = lambda seconds=None, stop=stop: stop.set() or True   # no real naps: one round
        budgets._run()
        assert not budgets.refusing(KEY), error


class AllowingAsLooked(BudgetWatch):
    """A running watch whose budget is seen allowing again just as the engine looks at it."""

    def refusing(self, key):
        answer = super().refusing(key)
        self._note([pdb("web", namespace="default", allowed=1)])
        return answer


def test_an_allowing_seen_as_the_hold_begins_ends_it_at_once():
    clock = FakeClock()
    fake = FakeNode(["a", "b"])
    budgets = AllowingAsLooked(None, Halt(clock))
    budgets.started = True
    budgets._set_live(True)
    budgets._note([pdb("web", namespace="default", allowed=0)])
    outcomes, _, _ = run_node(fake, chain_of("a", "b"), budgets=budgets, clock=clock)
    assert outcomes["b"].state == GONE and [c[1] for c in fake.calls] == ["a", "b"]
    assert sum(clock.lane_sleeps()) < turns.HOLD       # the lanes' own waits: no hold served


# -- turns.room_for_next: the chain goes on when the pod is gone or its budget allows again --------
def live_watch(clock, allowed=1):
    budgets = BudgetWatch(None, Halt(clock))
    budgets.started = True               # no loop: the test notes what the watch would see
    budgets._set_live(True)
    budgets._note([pdb("web", namespace="default", allowed=allowed)])
    return budgets


def a_then_b(budgets, *, allow_after_a, linger=3):
    """Runs chain a, b; the watch sees the budget at 0 as a's eviction is accepted, then
    allowing again when ``allow_after_a``.  Whether a was still there when b was sent."""
    clock = budgets._halt.clock
    fake = FakeNode(["a", "b"], linger=linger)
    seen = {}

    def on_evict(name):
        if name == "a":
            budgets._note([pdb("web", namespace="default", allowed=0)])
            if allow_after_a:
                budgets._note([pdb("web", namespace="default", allowed=1)])
        else:
            seen["a there"] = "a" in fake.pods
    fake.on_evict = on_evict
    outcomes, _, _ = run_node(fake, chain_of("a", "b"), budgets=budgets, clock=clock)
    assert {o.state for o in outcomes.values()} == {GONE}
    return seen["a there"], [c[1] for c in fake.calls]


def test_a_chain_goes_on_once_its_budget_allows_again_while_the_pod_before_terminates():
    # a lingers for 200 of the pod watch's lists (0.1 s of its real yields): under load, 3 can
    # pass before the chain's worker is scheduled again.
    budgets = live_watch(FakeClock())
    assert a_then_b(budgets, allow_after_a=True, linger=200) == (True, ["a", "b"])


def test_a_budget_still_allowing_none_keeps_the_chain_until_the_pod_before_is_gone():
    clock = FakeClock()
    budgets = live_watch(clock)
    there, calls = a_then_b(budgets, allow_after_a=False)
    assert not there and calls == ["a", "b"]          # then b's hold: HOLD, and sent
    assert sum(clock.lane_sleeps()) >= turns.HOLD     # in the watch's slices


def test_without_a_running_watch_the_chain_waits_for_the_pod_to_be_gone():
    budgets = live_watch(FakeClock())
    budgets._set_live(False)
    assert a_then_b(budgets, allow_after_a=True)[0] is False
