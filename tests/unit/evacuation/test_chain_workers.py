"""evacuation/engine.py's PDB chains on a capped set of workers: more chains than workers take
turns, a budget that never allows holds no worker for good, and a budget's pods still go one at
a time.  The clock is a FakeClock: waits move it, nothing sleeps for real but the gone-wait's
ticks, which a pod's going wakes."""

import threading
import time

import pytest

from kubectl_gpuisolate.evacuation.plan import Target
from kubectl_gpuisolate.evacuation.state import EVICTED, GONE, PDB_BLOCKED

from ..evict_fakes import OK, FakeClock, FakeNode, pdb_429
from .test_engine import run_node


def target(name, pdb):
    return Target("default", name, f"uid-{name}", (pdb,))


class Sampled(FakeNode):
    """Records, at each eviction request, the chain workers alive and the pods of the same
    budget evicted before and not gone yet."""

    def __init__(self, names, budgets, **kwargs):
        super().__init__(names, **kwargs)
        self.budget_of = budgets
        self.workers, self.overlaps = [], []

    def evict(self, namespace, name, uid, **kwargs):
        alive = [t.name for t in threading.enumerate() if t.name.startswith("evict-pdb")]
        with self.lock:
            self.workers.append(len(alive))
            self.overlaps += [(name, other) for other in self.terminating
                              if other != name and self.budget_of[other] == self.budget_of[name]]
        return super().evict(namespace, name, uid, **kwargs)


def run(fake, targets, chain_workers, stop=None):
    outcomes, _, _ = run_node(fake, targets, clock=FakeClock(lanes_only=True), stop=stop,
                              chain_workers=chain_workers, poll_interval=0.01)
    return outcomes    # lanes_only: the watcher's polls move no time


def stop_once_evicted(fake, names, retried=()):
    """An Event set once each of ``names`` has been evicted and each of ``retried`` asked more
    than once (or after 10 s: the test then fails).  Not on the evictions alone: under load
    they can all be done before a stuck pod's first retry."""
    stop = threading.Event()

    def watch():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with fake.lock:
                asked = [call[1] for call in fake.calls]
                if not set(names) & set(fake.pods) - set(fake.terminating) and \
                        all(asked.count(name) > 1 for name in retried):
                    break
            time.sleep(0.01)
        stop.set()
    threading.Thread(target=watch, daemon=True).start()
    return stop


def refused_slowly(pdb):
    """A refusal that takes a millisecond: the stuck chains' waits are on the FakeClock, so
    without it they would spin."""
    def respond():
        time.sleep(0.001)
        return pdb_429(pdb, has=0)
    return respond


@pytest.mark.parametrize("chain_workers", [1, 2])
def test_a_budget_that_never_allows_does_not_hold_the_workers_from_the_others(chain_workers):
    # Chains start in the order of their pods' names: the stuck ones take the workers first.
    budgets = {"a-stuck": "never", "b-stuck": "nope", "c": "web", "d": "api", "e": "db"}
    fake = Sampled(list(budgets), budgets, script={"a-stuck": [refused_slowly("never")],
                                                   "b-stuck": [refused_slowly("nope")]})
    movable = {"c", "d", "e"}
    stop = stop_once_evicted(fake, movable, retried=("a-stuck", "b-stuck"))
    outcomes = run(fake, [target(n, p) for n, p in budgets.items()], chain_workers, stop)
    assert {outcomes[n].state for n in movable} <= {GONE, EVICTED}, outcomes
    assert {outcomes[n].state for n in ("a-stuck", "b-stuck")} == {PDB_BLOCKED}
    assert max(fake.workers) <= chain_workers
    for stuck in ("a-stuck", "b-stuck"):   # retried all along, not once and given up
        assert len([call for call in fake.calls if call[1] == stuck]) > 1


def test_a_budgets_pods_go_one_at_a_time_while_chains_take_turns():
    budgets = {f"{pdb}-{i}": pdb for pdb in ("web", "api", "db") for i in range(3)}
    fake = Sampled(list(budgets), budgets, linger=3)
    outcomes = run(fake, [target(n, p) for n, p in budgets.items()], chain_workers=1)
    assert all(o.state == GONE for o in outcomes.values())
    assert fake.overlaps == [] and max(fake.workers) == 1
    assert sorted(call[1] for call in fake.calls) == sorted(budgets)


def test_with_a_worker_for_each_chain_every_chain_has_its_own():
    budgets = {"a": "web", "b": "api", "c": "db"}
    together = threading.Barrier(len(budgets), timeout=5)   # broken unless all three run at once

    def first_together():
        together.wait()
        return OK
    fake = Sampled(list(budgets), budgets, script={n: [first_together, pdb_429(p), OK]
                                                   for n, p in budgets.items()})
    outcomes = run(fake, [target(n, p) for n, p in budgets.items()], chain_workers=8)
    assert {o.state for o in outcomes.values()} == {GONE}
    assert max(fake.workers) == 3


class Held(Sampled):
    """``held`` is evicted but never goes (a finalizer that is never removed)."""

    held = "a-held"

    def _expire(self):
        keep = self.terminating.pop(self.held, None)
        super()._expire()
        if keep is not None:
            self.terminating[self.held] = keep


def test_a_pod_that_never_goes_does_not_hold_the_only_worker():
    budgets = {"a-held": "web", "a-next": "web", "b": "api"}
    fake = Held(list(budgets), budgets)
    stop = stop_once_evicted(fake, {"b"})
    outcomes = run(fake, [target(n, p) for n, p in budgets.items()], chain_workers=1, stop=stop)
    assert outcomes["b"].state in (GONE, EVICTED) and outcomes["a-held"].state == EVICTED
    assert "a-next" not in [call[1] for call in fake.calls]   # its budget's pod before it is not gone
