"""evacuation/replacements.py: after the run, the moved pods' replacements are watched for the
settle window; the Unschedulable ones are reported with the scheduler's message.  A fake clock:
the window passes as the watch naps."""

import threading
from dataclasses import dataclass, field
from typing import List

from kubectl_gpuisolate.errors import ConnectionFailed
from kubectl_gpuisolate.evacuation.plan import Target
from kubectl_gpuisolate.evacuation.replacements import (
    POLL_SECONDS,
    SETTLE_SECONDS,
    Replacement,
    ReplacementWatch,
    unschedulable_message,
)
from kubectl_gpuisolate.evacuation.state import EVICTED, FAILED, GONE, Halt, Outcome

from ..evict_fakes import FakeClock
from ..factories import UNSCHEDULABLE, owner, pod, unschedulable_replacement

WEB, DB = owner("ReplicaSet", "web-5d4f8"), owner("StatefulSet", "db")


@dataclass
class Result:
    name: str
    outcomes: List[Outcome] = field(default_factory=list)


def moved(name, controller, state=GONE, namespace="apps"):
    kind_name = f"{controller['kind']}/{controller['name']}" if controller else ""
    target = Target(namespace, name, f"uid-{name}", owner=kind_name,
                    owner_uid=controller["uid"] if controller else "")
    return Outcome(target, state)


class Unscheduled:
    """list_unscheduled_pods answers with the next step of ``script`` (the last repeats)."""

    def __init__(self, *script):
        self.script = list(script)
        self.calls = 0

    def list_unscheduled_pods(self):
        self.calls += 1
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, Exception):
            raise step
        return step


def watch(kube, results, *, before=frozenset(), deadline=None, clock=None):
    clock = clock or FakeClock()
    halt = Halt(clock, None, deadline)
    said = []
    found = ReplacementWatch(kube, halt, before=before, say=said.append).run(results)
    return found, clock, said


def stuck(name="web-5d4f8-new", controller=WEB, message=UNSCHEDULABLE, namespace="apps"):
    return unschedulable_replacement(name, namespace, owner_ref=controller, message=message)


def pending_unmarked(name, controller=WEB):
    found = stuck(name, controller)
    found["status"]["conditions"] = []
    return found


def test_an_unschedulable_replacement_is_reported_with_the_schedulers_message():
    kube = Unscheduled([stuck()])
    found, clock, said = watch(kube, [Result("gpu-1", [moved("web-1", WEB)])])
    assert found == [Replacement("gpu-1", "apps/web-5d4f8-new", "ReplicaSet/web-5d4f8", UNSCHEDULABLE)]
    # it stays Pending: the watch waits out the whole window
    assert clock.t == SETTLE_SECONDS and kube.calls == SETTLE_SECONDS / POLL_SECONDS + 1
    assert said == ["watching the replacements of 1 controller(s) for up to 30s"]


def test_the_wait_ends_early_once_no_replacement_is_pending():
    kube = Unscheduled([pending_unmarked("web-5d4f8-new")], [], [])
    found, clock, _ = watch(kube, [Result("gpu-1", [moved("web-1", WEB)])])
    assert found == [] and kube.calls == 3 and clock.t == 2 * POLL_SECONDS


def test_a_replacement_scheduled_within_the_window_is_not_reported():
    kube = Unscheduled([stuck()], [stuck()], [pending_unmarked("web-5d4f8-new")], [])
    found, _, _ = watch(kube, [Result("gpu-1", [moved("web-1", WEB)])])
    assert found == [] and kube.calls == 5


def test_only_new_pods_of_the_moved_pods_controllers_are_replacements():
    old = stuck("web-5d4f8-old")
    other = stuck("api-1", owner("ReplicaSet", "api"))
    bare = stuck("loner", None)
    kube = Unscheduled([old, other, bare])
    found, clock, _ = watch(kube, [Result("gpu-1", [moved("web-1", WEB)])],
                            before=frozenset({old["metadata"]["uid"]}))
    assert found == [] and kube.calls == 2


def test_each_replacement_belongs_to_the_node_its_controller_moved_from_first():
    anti = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
    kube = Unscheduled([stuck("db-0", DB, anti), stuck("web-5d4f8-b"), stuck("web-5d4f8-a")])
    results = [Result("gpu-1", [moved("web-1", WEB), moved("job", None)]),
               Result("gpu-2", [moved("web-2", WEB), moved("db-0", DB)])]
    found, _, _ = watch(kube, results)
    assert [(r.node, r.ref, r.owner) for r in found] == [
        ("gpu-1", "apps/web-5d4f8-a", "ReplicaSet/web-5d4f8"),
        ("gpu-1", "apps/web-5d4f8-b", "ReplicaSet/web-5d4f8"),
        ("gpu-2", "apps/db-0", "StatefulSet/db")]
    assert found[2].message.endswith("didn't match pod anti-affinity rules.")


def test_pods_that_did_not_move_are_not_watched():
    kube = Unscheduled([stuck()])
    results = [Result("gpu-1", [moved("web-1", WEB, state=FAILED), moved("web-2", WEB, state=EVICTED),
                                moved("bare", None)])]
    found, _, said = watch(kube, results)
    assert found == [] and kube.calls == 0 and said == []


def test_the_window_is_bounded_by_what_is_left_of_the_timeout():
    kube = Unscheduled([stuck()])
    clock = FakeClock()
    clock.t = 100.0
    found, clock, said = watch(kube, [Result("gpu-1", [moved("web-1", WEB)])], deadline=107.5,
                               clock=clock)
    assert len(found) == 1 and clock.t == 107.5 and said[0].endswith("for up to 8s")


def test_past_the_deadline_it_looks_once():
    kube = Unscheduled([stuck()])
    clock = FakeClock()
    clock.t = 200.0
    found, clock, _ = watch(kube, [Result("gpu-1", [moved("web-1", WEB)])], deadline=150.0,
                            clock=clock)
    assert len(found) == 1 and kube.calls == 1 and clock.t == 200.0


def test_a_failed_look_keeps_what_the_last_one_saw():
    kube = Unscheduled([stuck()], ConnectionFailed("the API server did not answer"))
    found, _, said = watch(kube, [Result("gpu-1", [moved("web-1", WEB)])])
    assert len(found) == 1
    assert "could not list the unscheduled pods: the API server did not answer" in said


def test_without_the_pods_of_before_the_run_nothing_is_watched():
    kube = Unscheduled([stuck()])
    found = ReplacementWatch(kube, Halt(FakeClock()), before=None).run(
        [Result("gpu-1", [moved("web-1", WEB)])])
    assert found == [] and kube.calls == 0


def test_unschedulable_means_pod_scheduled_false_for_that_reason():
    def with_condition(**condition):
        return {"status": {"conditions": [dict({"type": "PodScheduled"}, **condition)]}}
    assert unschedulable_message(with_condition(status="False", reason="Unschedulable",
                                                message="m")) == "m"
    assert unschedulable_message(with_condition(status="False", reason="Unschedulable")) == "no message"
    assert unschedulable_message(with_condition(status="False", reason="SchedulingGated",
                                                message="m")) is None
    assert unschedulable_message(with_condition(status="True", reason="Unschedulable")) is None
    assert unschedulable_message(pod("p")) is None


def test_an_interrupted_run_watches_nothing():
    stop = threading.Event()
    stop.set()
    kube = Unscheduled([stuck()])
    found = ReplacementWatch(kube, Halt(FakeClock(), stop), before=frozenset()).run(
        [Result("gpu-1", [moved("web-1", WEB)])])
    assert found == [] and kube.calls == 0
