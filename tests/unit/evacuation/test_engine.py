"""evacuation/engine.py: per-PDB serialization, bounded parallelism, waiting for pods to be
gone (watch, polling fallback), the deadline, interrupts, server dry runs, and
how each response is acted on (the table itself is in test_policy.py).

A fake node (scripted eviction responses, a list and a watch) and a fake clock
whose ``sleep`` only advances time: nothing here really sleeps."""

import random
import threading

from kubectl_gpuisolate.core.dryrun import DryRun
from kubectl_gpuisolate.errors import ApiError, ConnectionFailed, api_error
from kubectl_gpuisolate.evacuation.engine import Evictor
from kubectl_gpuisolate.evacuation.plan import Target, lanes
from kubectl_gpuisolate.evacuation.state import (
    EVICTED,
    FAILED,
    GONE,
    NOT_STARTED,
    PDB_BLOCKED,
    PDB_REFUSED,
    RETRYING,
    WOULD_EVICT,
    Halt,
    NodeEvacuation,
)
from kubectl_gpuisolate.kube import retry
from kubectl_gpuisolate.kube.retry import Backoff

from ..evict_fakes import (
    CONFLICT,
    MULTI_PDB,
    NODE,
    NOT_FOUND,
    NS_TERMINATING,
    OK,
    RBAC_403,
    FakeClock,
    FakeNode,
    GatedNode,
    InFlight,
    make_pod,
    pdb_429,
    server_error,
    throttled,
)


def target(name, pdbs=(), **kw):
    return Target("default", name, f"uid-{name}", tuple(pdbs), **kw)


def run_node(fake, targets, **kw):
    clock = kw.pop("clock", None) or FakeClock()
    halt = Halt(clock, kw.pop("stop", None), kw.pop("deadline", None))
    said = []
    evictor = Evictor(fake, halt=halt, progress=said.append, rng=random.Random(7), **kw)
    try:
        outcomes = evictor.evacuate_node(NODE, targets)
    finally:
        evictor.close()
    return {o.target.name: o for o in outcomes}, said, clock


# -- the engine -----------------------------------------------------------------------------------
def test_evicts_with_uid_precondition_and_waits_until_gone():
    fake = FakeNode(["a", "b", "c"], linger=2)
    outcomes, said, _ = run_node(fake, [target(n) for n in "abc"], grace_period=30)
    assert {n: o.state for n, o in outcomes.items()} == {"a": GONE, "b": GONE, "c": GONE}
    assert sorted(fake.calls) == [("default", n, f"uid-{n}", 30, DryRun.NONE) for n in "abc"]
    for n in "abc":
        assert f"evicting pod default/{n}" in said
        assert f"evicted pod default/{n}" in said
        assert f"pod default/{n} gone" in said
        assert said.index(f"evicted pod default/{n}") < said.index(f"pod default/{n} gone")


def test_pdb_429_is_retried_and_reported_only_when_its_status_changes():
    script = {"a": [pdb_429(has=1), pdb_429(has=1), pdb_429(has=0), pdb_429(has=0), pdb_429(has=0),
                    pdb_429(has=1), OK]}
    fake = FakeNode(["a"], script=script)
    outcomes, said, clock = run_node(fake, [target("a", pdbs=("web",))])
    assert outcomes["a"].state == GONE
    assert len(fake.calls) == 7
    blocked = [s for s in said if "blocked by" in s]
    assert blocked == ["pod default/a blocked by PDB default/web: needs 2 healthy, has 1",
                       "pod default/a blocked by PDB default/web: needs 2 healthy, has 0",
                       "pod default/a blocked by PDB default/web: needs 2 healthy, has 1"]
    sleeps = clock.lane_sleeps()
    assert len(sleeps) == 6
    assert all(s <= retry.PDB_EVICTIONS.cap for s in sleeps)   # a budget's refusal: short waits
    assert sleeps[4] > retry.PDB_EVICTIONS.ceiling(1)             # that grow


class RecordingBudgets:
    """A BudgetWatch's face to the engine: marks and waits recorded in order; every wait ends
    at once, as if the budget were seen allowing."""

    live = False                        # the chain goes on once a pod is gone (test_hold.py: else)

    def __init__(self, fake):
        self.fake, self.log, self.started = fake, [], True

    def mark(self, key):
        self.log.append(("mark", key, len(self.fake.calls)))
        return 7

    def waiter(self, key, mark):
        return lambda seconds, stop: self.log.append(("wait", key, mark))

    def close(self):
        pass


def test_a_budgets_refusal_waits_for_the_budget_marked_before_the_request():
    fake = FakeNode(["a"], script={"a": [pdb_429(has=1), OK]})
    budgets = RecordingBudgets(fake)
    outcomes, _, clock = run_node(fake, [target("a", pdbs=("web",))], budgets=budgets)
    key = ("default", "web")
    assert outcomes["a"].state == GONE and clock.lane_sleeps() == []
    assert budgets.log == [("mark", key, 0), ("wait", key, 7), ("mark", key, 1)]
    fake = FakeNode(["b"], script={"b": [pdb_429(has=1), OK]})
    budgets = RecordingBudgets(fake)
    outcomes, _, clock = run_node(fake, [target("b", pdbs=("x", "y"))], budgets=budgets)
    assert outcomes["b"].state == GONE and budgets.log == []   # under two PDBs: its backoff only
    assert len(clock.lane_sleeps()) == 1


def test_other_refusals_back_off_longer_than_a_budgets():
    fake = FakeNode(["a"], script={"a": [throttled()] * 5 + [OK]})
    outcomes, _, clock = run_node(fake, [target("a", pdbs=("web",))])
    assert outcomes["a"].state == GONE
    assert max(clock.lane_sleeps()) > retry.PDB_EVICTIONS.cap


def test_throttling_and_server_errors_are_retried():
    script = {"a": [throttled(), server_error(503), server_error(504), server_error(500),
                    ConnectionFailed("reset"), OK]}
    fake = FakeNode(["a"], script=script)
    outcomes, said, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE
    assert len(fake.calls) == 6
    assert not any("blocked by" in s for s in said)   # throttling is not a PDB block


def test_retry_after_is_honoured():
    fake = FakeNode(["a"], script={"a": [throttled(retry_after=7), OK]})
    _, _, clock = run_node(fake, [target("a")])
    assert clock.lane_sleeps()[0] >= 7


def test_not_found_is_done_without_retrying():
    fake = FakeNode(["a"], script={"a": [NOT_FOUND]})
    outcomes, said, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE
    assert len(fake.calls) == 1
    assert "pod default/a already gone" in said


def test_conflict_with_a_new_uid_is_done():
    fake = FakeNode(["a"], script={"a": [CONFLICT]})
    fake.replacements["a"] = make_pod("a", uid="uid-new")
    outcomes, said, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE
    assert len(fake.calls) == 1
    assert any("replaced by a new pod" in s for s in said)


def test_conflict_then_not_found_is_done():
    fake = FakeNode([], script={"a": [CONFLICT]})
    outcomes, _, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE


def test_conflict_on_the_same_pod_is_retried():
    fake = FakeNode(["a"], script={"a": [CONFLICT, OK]})
    outcomes, _, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE
    assert len(fake.calls) == 2


def test_an_eviction_names_the_planned_version_and_after_a_conflict_the_one_read_then():
    fake = FakeNode(["a"], script={"a": [CONFLICT, OK]})
    changed = make_pod("a")
    changed["metadata"]["resourceVersion"] = "42"      # a status update since the plan
    fake.replacements["a"] = changed
    outcomes, _, _ = run_node(fake, [target("a", resource_version="7")])
    assert outcomes["a"].state == GONE
    assert fake.versions == ["7", "42"]


def test_conflict_on_a_terminating_pod_waits_for_it():
    fake = GatedNode(["a"], script={"a": [CONFLICT]})
    terminating = make_pod("a")
    terminating["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    fake.replacements["a"] = terminating
    fake.terminating["a"] = 1      # someone else deleted it; it goes after one more list
    outcomes, _, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE
    assert len(fake.calls) == 1


def test_multi_pdb_500_is_fatal_for_the_pod_and_names_the_pdbs():
    fake = FakeNode(["a", "b"], script={"a": [MULTI_PDB]})
    outcomes, said, _ = run_node(fake, [target("a", pdbs=("web", "all")), target("b")])
    assert outcomes["a"].state == FAILED
    assert "several PodDisruptionBudgets (web, all)" in outcomes["a"].reason()
    assert [c[1] for c in fake.calls].count("a") == 1
    assert outcomes["b"].state == GONE
    assert any("eviction failed" in s and "web, all" in s for s in said)


def test_namespace_terminating_is_waited_on_then_retried():
    fake = FakeNode(["a"], script={"a": [NS_TERMINATING, NS_TERMINATING, OK]})
    outcomes, said, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE
    assert len(fake.calls) == 3
    assert sum("namespace default is terminating" in s for s in said) == 1


def test_forbidden_is_fatal_and_names_the_permission():
    fake = FakeNode(["a"], script={"a": [RBAC_403]})
    outcomes, _, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == FAILED
    assert 'cannot create resource "pods/eviction"' in outcomes["a"].reason()
    assert len(fake.calls) == 1


def test_never_allowing_pdb_gets_one_attempt():
    fake = FakeNode(["a"], script={"a": [pdb_429(needs=1, has=1)]})
    outcomes, said, _ = run_node(fake, [target("a", pdbs=("db",), pdb_never="minAvailable 1 >= "
                                                                              "its 1 pod(s)")])
    assert outcomes["a"].state == PDB_REFUSED
    assert outcomes["a"].pending
    assert "needs 1 healthy, has 1" in outcomes["a"].reason()
    assert "can never allow an eviction: minAvailable 1" in outcomes["a"].reason()
    assert len(fake.calls) == 1


def test_never_allowing_pdb_still_lets_the_server_decide():
    fake = FakeNode(["a"])   # e.g. an unhealthy pod under unhealthyPodEvictionPolicy AlwaysAllow
    outcomes, _, _ = run_node(fake, [target("a", pdbs=("db",), pdb_never="maxUnavailable is 0")])
    assert outcomes["a"].state == GONE


def test_terminating_pods_are_waited_for_and_never_evicted():
    fake = FakeNode(["a", "t"])
    fake.terminating["t"] = 2
    outcomes, said, _ = run_node(fake, [target("a"), target("t", terminating=True)])
    assert outcomes["t"].state == GONE
    assert [c[1] for c in fake.calls] == ["a"]
    assert "evicting pod default/t" not in said


def test_a_watch_event_marks_the_pod_gone():
    fake = FakeNode(["a"], list_lags=True)
    outcomes, _, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE        # only the DELETED event could say so


def test_watch_errors_fall_back_to_polling():
    fake = FakeNode(["a", "b"], linger=2, watch_error=ApiError("forbidden", status=403))
    outcomes, said, _ = run_node(fake, [target("a"), target("b")])
    assert {o.state for o in outcomes.values()} == {GONE}
    assert sum("polling every 1s" in s for s in said) == 1
    assert fake.lists >= 3


def test_a_watch_cut_off_lists_and_watches_again():
    cut = ConnectionFailed("connection reset")
    fake = FakeNode(["a"], linger=1, watch_error=[cut, cut])
    outcomes, said, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE
    assert not any("polling" in s for s in said)


def test_watches_cut_off_three_times_in_a_row_fall_back_to_polling():
    fake = FakeNode(["a", "b"], linger=3, watch_error=ConnectionFailed("connection reset"))
    outcomes, said, _ = run_node(fake, [target("a"), target("b")])
    assert {o.state for o in outcomes.values()} == {GONE}
    assert [s for s in said if "polling" in s] == [
        f"node/{NODE}: the pod watch failed 3 times in a row; polling every 1s instead"]


def test_expired_watch_lists_again():
    fake = FakeNode(["a"], linger=1, watch_error=api_error("too old", status=410))
    outcomes, said, _ = run_node(fake, [target("a")])
    assert outcomes["a"].state == GONE
    assert not any("polling" in s for s in said)


# -- serialization and parallelism --------------------------------------------------------------
def test_parallelism_is_bounded():
    names = [f"p{i:02d}" for i in range(12)]
    meter = InFlight(3)
    fake = FakeNode(names, script={n: [meter.response(n)] for n in names})
    outcomes, _, _ = run_node(fake, [target(n) for n in names], max_parallel=3)
    assert {o.state for o in outcomes.values()} == {GONE}
    assert meter.peak["total"] == 3


def test_one_eviction_at_a_time_per_pdb_others_in_parallel():
    groups = {"a": "pdb-a", "b": "pdb-b", "c": None}
    names = [f"{g}{i}" for g in groups for i in range(4)]
    meter = InFlight(3, key=lambda name: groups[name[0]] or name)
    fake = FakeNode(names, script={n: [meter.response(n)] for n in names}, linger=1)
    targets = [target(n, pdbs=(groups[n[0]],) if groups[n[0]] else ()) for n in names]
    outcomes, _, _ = run_node(fake, targets, max_parallel=8)
    assert {o.state for o in outcomes.values()} == {GONE}
    assert meter.peak["pdb-a"] == 1 and meter.peak["pdb-b"] == 1
    assert meter.peak["total"] >= 3


class WaitingClock(FakeClock):
    """A lane's first backoff lasts (for real, at most 2 s) until ``event`` is set."""

    def __init__(self, event):
        super().__init__()
        self.event, self.first = event, True

    def sleep(self, seconds, stop):
        if self.first and threading.current_thread().name.startswith("evict"):
            self.first = False
            self.event.wait(2)
        super().sleep(seconds, stop)


def test_a_pod_backing_off_holds_no_slot_so_other_pods_go_meanwhile():
    x_sent = threading.Event()
    fake = FakeNode(["w1", "x"], script={"w1": [pdb_429(has=1), OK]},
                    on_evict=lambda name: name == "x" and x_sent.set())
    outcomes, _, _ = run_node(fake, [target("w1", pdbs=("web",)), target("x")], max_parallel=1,
                              clock=WaitingClock(x_sent))
    assert {o.state for o in outcomes.values()} == {GONE}
    sent = [call[1] for call in fake.calls]
    assert sorted(sent) == ["w1", "w1", "x"] and sent.index("x") < 2   # x went during w1's backoff


def test_the_next_pod_of_a_pdb_waits_until_the_previous_one_is_gone():
    seen = []
    fake = FakeNode(["a1", "a2", "a3"], linger=2)
    fake.on_evict = lambda name: seen.append((name, sorted(fake.pods)))
    outcomes, _, _ = run_node(fake, [target(n, pdbs=("web",)) for n in ("a1", "a2", "a3")])
    assert {o.state for o in outcomes.values()} == {GONE}
    assert seen == [("a1", ["a1", "a2", "a3"]), ("a2", ["a2", "a3"]), ("a3", ["a3"])]


def test_lanes_group_pods_by_pdb():
    grouped = lanes([target("x"), target("b2", pdbs=("b",)), target("a1", pdbs=("a",)),
                     target("b1", pdbs=("b",)), target("m", pdbs=("a", "b"))])
    assert [(key, [t.name for t in members]) for key, members in grouped] == [
        (("default", "a"), ["a1"]), (("default", "b"), ["b1", "b2"]), (None, ["m"]), (None, ["x"])]


# -- deadline and interrupts --------------------------------------------------------------------
def test_deadline_reports_each_pending_pod_and_why():
    b_sent = threading.Event()

    def blocked_once_b_is_evicted():   # each lane's sleeps move the clock: order them
        b_sent.wait(5)
        return pdb_429(needs=2, has=1)
    fake = GatedNode(["a", "b"], script={"a": [blocked_once_b_is_evicted]}, linger=10 ** 6, gate=2,
                     on_evict=lambda name: name == "b" and b_sent.set())
    outcomes, _, clock = run_node(fake, [target("a", pdbs=("web",)), target("b")], deadline=60)
    assert outcomes["a"].state == PDB_BLOCKED
    assert outcomes["a"].reason() == "PDB default/web: needs 2 healthy, has 1"
    assert outcomes["b"].state == EVICTED
    assert outcomes["b"].reason() == "evicted; waiting for termination"
    assert all(o.pending for o in outcomes.values())
    assert clock.now() >= 60
    assert all(s <= Backoff().cap for s in clock.lane_sleeps())


def test_no_eviction_starts_after_the_deadline():
    fake = FakeNode(["a"])
    clock = FakeClock()
    clock.t = 100
    outcomes, said, _ = run_node(fake, [target("a")], deadline=50, clock=clock)
    assert outcomes["a"].state == NOT_STARTED
    assert fake.calls == []


def test_interrupt_stops_starting_new_evictions():
    stop = threading.Event()
    names = ["a", "b", "c", "d"]
    fake = FakeNode(names, on_evict=lambda name: stop.set())
    outcomes, said, _ = run_node(fake, [target(n) for n in names], max_parallel=1, stop=stop)
    assert len(fake.calls) == 1
    states = sorted(o.state for o in outcomes.values())
    assert states.count(NOT_STARTED) == 3
    assert sum(1 for o in outcomes.values() if o.pending) >= 3


def test_interrupt_during_pdb_backoff_leaves_the_pod_pending_with_its_reason():
    stop = threading.Event()

    def blocked_then_stop():
        stop.set()
        return pdb_429()
    fake = FakeNode(["a"], script={"a": [blocked_then_stop]})
    outcomes, _, _ = run_node(fake, [target("a", pdbs=("web",))], stop=stop)
    assert outcomes["a"].state == PDB_BLOCKED
    assert len(fake.calls) == 1


# -- server dry run -------------------------------------------------------------------------------
def test_server_dry_run_reports_pdb_blocks_and_does_not_wait():
    fake = FakeNode(["a", "b"], script={"a": [pdb_429(needs=1, has=1)]})
    outcomes, said, _ = run_node(fake, [target("a", pdbs=("db",)), target("b")],
                                 dry_run=DryRun.SERVER)
    assert outcomes["a"].state == PDB_REFUSED
    assert outcomes["b"].state == WOULD_EVICT
    assert {c[4] for c in fake.calls} == {DryRun.SERVER}
    assert [c[1] for c in fake.calls].count("a") == 1
    assert fake.lists == 0 and sorted(fake.pods) == ["a", "b"]
    assert "pod default/b would be evicted (server dry run)" in said


def test_transient_errors_in_a_server_dry_run_are_retried():
    fake = FakeNode(["a"], script={"a": [server_error(503), OK]})
    outcomes, _, _ = run_node(fake, [target("a")], dry_run=DryRun.SERVER)
    assert outcomes["a"].state == WOULD_EVICT
    assert len(fake.calls) == 2


def test_retrying_state_is_pending_with_the_last_error():
    fake = GatedNode(["a"], script={"a": [server_error(503)]})
    outcomes, _, _ = run_node(fake, [target("a")], deadline=30)
    assert outcomes["a"].state == RETRYING
    assert outcomes["a"].reason() == "HTTP 503 from the API server"


def test_evicted_is_said_before_gone_even_when_the_watch_is_faster(monkeypatch):
    """The watch reports the deletion before the eviction response reaches the lane."""
    marked = threading.Event()
    mark_gone = NodeEvacuation.mark_gone

    def spy(node, uid, note="gone", *, seen_by_watch=False):
        mark_gone(node, uid, note, seen_by_watch=seen_by_watch)
        if seen_by_watch:
            marked.set()
    monkeypatch.setattr(NodeEvacuation, "mark_gone", spy)

    class WatchFirstNode(FakeNode):
        def evict(self, *args, **kw):
            super().evict(*args, **kw)
            assert marked.wait(5)

    fake = WatchFirstNode(["a"], script={"a": [pdb_429(), OK]}, list_lags=True)
    outcomes, said, _ = run_node(fake, [target("a", pdbs=("web",))])
    assert outcomes["a"].state == GONE
    assert said[-2:] == ["evicted pod default/a", "pod default/a gone"]
    assert said.count("pod default/a gone") == 1


def test_a_pdb_spanning_two_nodes_evacuated_at_once_still_gets_one_eviction_at_a_time():
    names = ["a1", "a2", "b1", "b2"]
    meter = InFlight(2, key=lambda name: "web", hold=0.1)   # 2 at once would be a violation
    fake = FakeNode(names, script={n: [meter.response(n)] for n in names}, linger=1)
    evictor = Evictor(fake, halt=Halt(FakeClock()), rng=random.Random(1), max_parallel=8)
    results = {}

    def node(prefix):
        results[prefix] = evictor.evacuate_node(f"node-{prefix}", [
            target(n, pdbs=("web",)) for n in names if n.startswith(prefix)])
    threads = [threading.Thread(target=node, args=(p,)) for p in "ab"]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        evictor.close()
    assert {o.state for outcomes in results.values() for o in outcomes} == {GONE}
    assert meter.peak["web"] == 1
