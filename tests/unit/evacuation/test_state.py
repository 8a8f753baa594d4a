"""evacuation/state.py: when a run halts (stop, deadline) and how long it pauses, and one
node's outcomes, in particular the order of a pod's "evicted" and "gone" lines."""

import threading
import time

import pytest

from kubectl_gpuisolate.evacuation.plan import Target
from kubectl_gpuisolate.evacuation.state import (
    EVICTED,
    EVICTING,
    FAILED,
    GONE,
    NOT_STARTED,
    PDB_BLOCKED,
    RETRYING,
    TERMINATING,
    Clock,
    Halt,
    NodeEvacuation,
)

from ..evict_fakes import FakeClock


def target(name, **kw):
    return Target("default", name, f"uid-{name}", **kw)


# -- Halt -----------------------------------------------------------------------------------------
def test_without_a_deadline_only_the_stop_halts():
    halt = Halt(FakeClock())
    halt.clock.t = 10 ** 9
    assert (halt.past_deadline(), halt.halted(), halt.left()) == (False, False, None)
    halt.stop.set()
    assert (halt.past_deadline(), halt.halted()) == (False, True)


def test_the_deadline_halts_at_its_time_not_before():
    clock = FakeClock()
    halt = Halt(clock, deadline=10)
    clock.t = 9.5
    assert not halt.halted() and halt.left() == 0.5
    clock.t = 10
    assert halt.past_deadline() and halt.halted()


def test_pause_sleeps_and_says_whether_to_go_on():
    clock = FakeClock()
    halt = Halt(clock, deadline=10)
    assert halt.pause(4) is True
    assert clock.now() == 4


def test_pause_stops_at_the_deadline():
    clock = FakeClock()
    halt = Halt(clock, deadline=10)
    clock.t = 4
    assert halt.pause(100) is False
    assert [s for _, s in clock.sleeps] == [6]        # only up to the deadline
    assert halt.pause(1) is False                     # past it: no sleep at all
    assert len(clock.sleeps) == 1


def test_pause_after_a_stop_does_not_sleep():
    clock = FakeClock()
    halt = Halt(clock)
    halt.stop.set()
    assert halt.pause(5) is False
    assert clock.sleeps == []


def test_nap_ignores_the_deadline():
    clock = FakeClock()
    halt = Halt(clock, deadline=1)
    clock.t = 5
    halt.nap(2)
    assert [s for _, s in clock.sleeps] == [2]


def test_a_real_pause_ends_early_when_the_stop_is_set():
    halt = Halt(Clock())
    timer = threading.Timer(0.05, halt.stop.set)
    started = time.monotonic()
    timer.start()
    try:
        assert halt.pause(30) is False
    finally:
        timer.cancel()
    assert time.monotonic() - started < 10


# -- NodeEvacuation -------------------------------------------------------------------------------
def node_evacuation(*targets):
    said = []
    return NodeEvacuation("gpu-1", targets, said.append), said


def test_outcomes_start_not_started_or_terminating():
    node, _ = node_evacuation(target("a"), target("t", terminating=True))
    assert {o.target.name: o.state for o in node.outcomes.values()} == {
        "a": NOT_STARTED, "t": TERMINATING}
    assert node.awaiting() and not node.settled()


@pytest.mark.parametrize("in_flight", [EVICTING, RETRYING, PDB_BLOCKED])
def test_the_watch_seeing_a_pod_go_mid_eviction_leaves_the_gone_line_to_the_lane(in_flight):
    node, said = node_evacuation(target("a"))
    node.set_state("uid-a", in_flight)
    node.mark_gone("uid-a", seen_by_watch=True)
    assert node.state_of("uid-a") == GONE
    assert said == []                                  # not yet: the lane has not said its line
    node.set_state("uid-a", EVICTED, say="evicted pod default/a")
    assert node.state_of("uid-a") == GONE              # gone is final
    node.say_deferred_gone("uid-a")
    node.say_deferred_gone("uid-a")
    assert said == ["evicted pod default/a", "pod default/a gone"]


def test_the_watch_seeing_an_evicted_pod_go_says_it_at_once():
    node, said = node_evacuation(target("a"), target("t", terminating=True))
    node.set_state("uid-a", EVICTED)
    node.mark_gone("uid-a", seen_by_watch=True)
    node.mark_gone("uid-t", seen_by_watch=True)
    assert said == ["pod default/a gone", "pod default/t gone"]
    node.say_deferred_gone("uid-a")
    assert len(said) == 2
    assert node.settled() and not node.awaiting()


def test_the_lane_marking_a_pod_gone_says_its_note_at_once():
    node, said = node_evacuation(target("a"))
    node.set_state("uid-a", EVICTING)
    node.mark_gone("uid-a", "already gone")
    assert said == ["pod default/a already gone"]


def test_a_pod_is_gone_once_and_unknown_pods_are_ignored():
    node, said = node_evacuation(target("a"))
    node.mark_gone("uid-a")
    node.mark_gone("uid-a", seen_by_watch=True)
    node.mark_gone("uid-other", seen_by_watch=True)
    node.mark_gone(None, seen_by_watch=True)
    assert said == ["pod default/a gone"]
    node.set_state("uid-a", FAILED, "late error", say="pod default/a: eviction failed")
    assert node.state_of("uid-a") == GONE and node.outcomes["uid-a"].detail == ""


def test_copies_do_not_change_with_the_node():
    node, _ = node_evacuation(target("a"))
    copies = node.copies()
    node.set_state("uid-a", RETRYING, "HTTP 503")
    assert copies[0].state == NOT_STARTED
    assert node.outcomes["uid-a"].reason() == "HTTP 503"
