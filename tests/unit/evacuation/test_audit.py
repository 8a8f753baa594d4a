"""The audit trail (evacuation/audit.py): which Kubernetes Events evacuate writes for which
outcome, against the fake cluster through the command: evicted pods, a PDB refusal once per pod
however often it is retried, pods left in place (not DaemonSet, mirror or finished ones), pods
of refused nodes and pods still there at the end; none in dry runs; and a failure to write
them is one warning line that changes neither the result nor the exit code."""

import io
import json
import threading

import pytest

from kubectl_gpuisolate import cli
from kubectl_gpuisolate.commands import evacuate
from kubectl_gpuisolate.errors import ConnectionFailed, api_error
from kubectl_gpuisolate.evacuation.audit import (
    EVICTED,
    EVICTION_BLOCKED,
    LEFT_IN_PLACE,
    NORMAL,
    WARNING,
    Audit,
)
from kubectl_gpuisolate.evacuation.engine import Evictor
from kubectl_gpuisolate.evacuation.plan import Target
from kubectl_gpuisolate.evacuation.state import Halt
from kubectl_gpuisolate.exits import EXIT_INCOMPLETE, EXIT_OK, EXIT_PREFLIGHT

from ..evict_fakes import OK, RBAC_403, FakeClock, FakeCluster, FakeNode, pdb_429, record_event
from ..factories import GPU_A, GPU_B, GPU_TAINT, INFERENCE_TOLERATIONS, gpu_node, owner, pdb, pod

DS = owner("DaemonSet", "cilium")
EMPTY_DIR = [{"name": "cache", "emptyDir": {}}]
TAINT = "nvidia.com/gpu=true:NoSchedule"
WEB_PDB = {"matchLabels": {"app": "web"}}


def web(name, node=GPU_A, **kw):
    return pod(name, "apps", labels={"app": "web"}, node_name=node, **kw)


def cluster_of(extra=(), pdbs=(), **kw):
    """Two tainted GPU nodes: on A a DaemonSet pod, a mirror pod, a finished Job pod, the
    inference pod, a pod that tolerates the taint and web-1; on B web-2 and grafana (emptyDir)."""
    nodes = [gpu_node(GPU_A, taints=[GPU_TAINT]), gpu_node(GPU_B, taints=[GPU_TAINT])]
    pods = [pod("cilium-a", "kube-system", owner_ref=DS, node_name=GPU_A),
            pod("etcd-a", "kube-system", owner_ref=None, node_name=GPU_A,
                annotations={"kubernetes.io/config.mirror": "x"}),
            pod("job-done", "nai-system", owner_ref=owner("Job", "pulse"), phase="Succeeded",
                node_name=GPU_A),
            pod("llama", "nai-admin", tolerations=INFERENCE_TOLERATIONS,
                requests={"nvidia.com/gpu": "1"}, node_name=GPU_A),
            pod("agent", "monitoring", tolerations=[{"operator": "Exists"}], node_name=GPU_A),
            web("web-1"), web("web-2", node=GPU_B),
            pod("grafana", "kommander", volumes=EMPTY_DIR, node_name=GPU_B), *extra]
    return FakeCluster(nodes, pods, pdbs, **kw)


def run(cluster, *argv, clock=None):
    args = cli.build_parser().parse_args(["evacuate", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = evacuate.execute(cluster, evacuate.EvacuateOptions.from_args(args), out=out, err=err,
                            clock=clock or FakeClock())
    return code, out.getvalue(), err.getvalue()


def events(cluster):
    """{(namespace/name, reason): (type, message)}; fails on a second event of one reason."""
    found = {}
    for namespace, name, uid, reason, type_, message in cluster.written:
        assert uid == f"uid-{namespace}-{name}"
        key = (f"{namespace}/{name}", reason)
        assert key not in found, f"two {reason} events on {key[0]}"
        found[key] = (type_, message)
    return found


def without_seconds(document):
    nodes = json.loads(document)["nodes"]
    return [{k: v for k, v in node.items() if k != "seconds"} for node in nodes]


# -- which events -------------------------------------------------------------------------------
def test_a_run_writes_one_event_per_evicted_pod_and_per_pod_left_in_place():
    cluster = cluster_of()
    code, _, err = run(cluster, "--delete-emptydir-data")
    assert code == EXIT_OK, err
    assert events(cluster) == {
        ("apps/web-1", EVICTED): (NORMAL, f"Evicted from GPU node {GPU_A} by kubectl gpuisolate "
                                          f"evacuate: does not tolerate {TAINT}"),
        ("apps/web-2", EVICTED): (NORMAL, f"Evicted from GPU node {GPU_B} by kubectl gpuisolate "
                                          f"evacuate: does not tolerate {TAINT}"),
        ("kommander/grafana", EVICTED): (NORMAL, f"Evicted from GPU node {GPU_B} by kubectl "
                                                 f"gpuisolate evacuate: does not tolerate {TAINT}"),
        ("nai-admin/llama", LEFT_IN_PLACE): (NORMAL, f"Not evicted from GPU node {GPU_A} by kubectl "
                                                     "gpuisolate evacuate: uses nvidia.com/gpu"),
        ("monitoring/agent", LEFT_IN_PLACE): (NORMAL, f"Not evicted from GPU node {GPU_A} by kubectl "
                                                      "gpuisolate evacuate: tolerates every taint "
                                                      "and uses no GPU: an isolation leak"),
    }
    # The one warning: the tolerate-all agent is an isolation leak (events all written).
    assert [line for line in err.splitlines() if line.startswith("Warning")] == [
        "Warning: isolation leak: pod monitoring/agent tolerates every taint and uses no GPU; "
        "remove the toleration {operator: Exists} from ReplicaSet/web-5d4f8"]


def test_a_pdb_refusal_is_one_event_however_often_it_is_retried():
    blocking = pdb("web", "apps", selector=WEB_PDB, min_available=1, allowed=0, desired=1,
                   healthy=1, expected=2)
    refusal = pdb_429("web", 2, 1)
    cluster = cluster_of(pdbs=[blocking], script={"web-1": [refusal, refusal, refusal, OK]})
    code, _, err = run(cluster, GPU_A)
    assert code == EXIT_OK, err
    assert cluster.evicted() == ["apps/web-1"] * 4
    found = events(cluster)
    assert found[("apps/web-1", EVICTION_BLOCKED)] == (
        WARNING, f"Cannot evict from GPU node {GPU_A} as it would violate a PodDisruptionBudget: "
                 "PDB apps/web: needs 2 healthy, has 1; evacuate retries until its --timeout")
    assert found[("apps/web-1", EVICTED)][0] == NORMAL
    assert len([k for k in found if k[0] == "apps/web-1"]) == 2


def test_a_pdb_that_never_allows_says_so_and_the_pod_gets_no_second_event_at_the_end():
    never = pdb("web", "apps", selector=WEB_PDB, min_available=1, allowed=0, desired=1,
                healthy=1, expected=1)
    cluster = cluster_of(pdbs=[never], script={"web-1": [pdb_429("web", 1, 1)]})
    code, _, _ = run(cluster, GPU_A)
    assert code == EXIT_INCOMPLETE
    web_1 = {k[1]: v for k, v in events(cluster).items() if k[0] == "apps/web-1"}
    assert list(web_1) == [EVICTION_BLOCKED]
    assert web_1[EVICTION_BLOCKED][1].endswith(
        "PDB apps/web: needs 1 healthy, has 1; it can never allow an eviction (minAvailable 1 >= "
        "its 1 pod(s))")


def test_pods_not_moved_when_the_run_ends_say_why_and_nodes_never_started_get_none():
    cluster = cluster_of(script={"web-1": [RBAC_403]})
    code, _, _ = run(cluster, GPU_A)
    assert code == EXIT_INCOMPLETE
    type_, message = events(cluster)[("apps/web-1", LEFT_IN_PLACE)]
    assert type_ == WARNING
    assert message.startswith(f"Still on GPU node {GPU_A} when kubectl gpuisolate evacuate ended: "
                              'pods "a" is forbidden')
    # The deadline passes on A (the PDB blocks web-1): B's turn never comes, so B gets no events.
    blocking = pdb("web", "apps", selector=WEB_PDB, allowed=0, desired=1, healthy=0, expected=2)
    cluster = cluster_of(pdbs=[blocking], script={"web-1": [pdb_429("web", 1, 0)]})
    code, _, _ = run(cluster, "--delete-emptydir-data", "--timeout", "1m",
                     clock=FakeClock(lanes_only=True))
    assert code == EXIT_INCOMPLETE
    assert sorted(events(cluster)) == [("apps/web-1", EVICTION_BLOCKED),
                                       ("monitoring/agent", LEFT_IN_PLACE),
                                       ("nai-admin/llama", LEFT_IN_PLACE)]


def test_the_pods_that_refuse_a_node_are_told_so_and_its_other_pods_get_none():
    cluster = cluster_of([pod("bare", "default", owner_ref=None, node_name=GPU_B)])
    code, _, _ = run(cluster)
    assert code == EXIT_PREFLIGHT
    found = events(cluster)
    assert found[("default/bare", LEFT_IN_PLACE)] == (
        WARNING, f"Not evicted: kubectl gpuisolate evacuate refused GPU node {GPU_B} because this pod "
                 f"does not tolerate {TAINT}, but declares no controller and would not be recreated "
                 "(use --force)")
    assert found[("kommander/grafana", LEFT_IN_PLACE)][0] == WARNING
    assert "has emptyDir data" in found[("kommander/grafana", LEFT_IN_PLACE)][1]
    assert ("apps/web-2", EVICTED) not in found and ("apps/web-2", LEFT_IN_PLACE) not in found
    assert ("apps/web-1", EVICTED) in found


@pytest.mark.parametrize("dry_run", ["client", "server"])
def test_a_dry_run_writes_no_events(dry_run):
    cluster = cluster_of([pod("bare", "default", owner_ref=None, node_name=GPU_B)],
                         script={"web-1": [pdb_429("web", 1, 1)]})
    run(cluster, f"--dry-run={dry_run}")
    assert ("evict", "apps/web-1", evacuate.DryRun.SERVER) in cluster.log or dry_run == "client"
    assert cluster.written == []


# -- best effort ----------------------------------------------------------------------------------
FAILURES = {"403": api_error('events is forbidden: User "bob" cannot create resource "events" in '
                             'API group "" in the namespace "apps"', status=403),
            "503": api_error("service unavailable (HTTP 503 while writing an event)", status=503),
            "timeout": ConnectionFailed("the API server did not answer in time"),
            "bug": KeyError("name")}


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_events_that_cannot_be_written_are_one_warning_and_change_nothing_else(failure):
    reference = cluster_of(script={"web-1": [RBAC_403]})
    expected = run(reference, "--delete-emptydir-data", "-o", "json")
    cluster = cluster_of(script={"web-1": [RBAC_403]}, event_error=FAILURES[failure])
    code, out, err = run(cluster, "--delete-emptydir-data", "-o", "json")
    assert code == expected[0] == EXIT_INCOMPLETE
    assert without_seconds(out) == without_seconds(expected[1])
    assert sorted(cluster.evicted()) == sorted(reference.evicted())
    assert len(reference.written) == 5                  # web-1 failed, 2 evicted, 2 left in place
    warnings = [line for line in err.splitlines() if line.startswith("Warning:")]
    assert warnings[:-1] == [line for line in expected[2].splitlines() if line.startswith("Warning:")]
    assert warnings[-1].startswith("Warning: could not write 5 of 5 Kubernetes event(s) on the pods")
    assert (str(FAILURES[failure]) if failure != "bug" else "internal error (KeyError") in warnings[-1]
    assert sum("event" in line for line in err.splitlines()) == 1
    if failure == "403":     # a refusal stops the writing: at most one attempt per writer thread
        assert 1 <= len(cluster.written) <= 4
    else:                    # any other failure is counted, and every other event still tried
        assert len(cluster.written) == 5


def test_a_failed_write_does_not_stop_the_others():
    """One 503 among the writes: the four others are written, and the warning counts the one."""
    reference = cluster_of(script={"web-1": [RBAC_403]})
    run(reference, "--delete-emptydir-data")
    first = reference.written[0][3]
    cluster = cluster_of(script={"web-1": [RBAC_403]})
    failures = iter([FAILURES["503"]])

    def flaky(namespace, involved, reason, message, type_):
        with cluster.lock:
            error = next(failures, None) if reason == first else None
        if error is not None:
            raise error
        record_event(cluster, namespace, involved, reason, message, type_)
    cluster.create_event = flaky
    _, _, err = run(cluster, "--delete-emptydir-data")
    assert len(cluster.written) == 4
    warnings = [line for line in err.splitlines() if "Kubernetes event" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("Warning: could not write 1 of 5 Kubernetes event(s)"), warnings


def test_writing_events_does_not_hold_up_the_evictions():
    """Every event write waits until every eviction was sent: with one eviction at a time, an
    event written on the eviction path would stall the run instead."""
    all_sent = threading.Event()
    waits = []

    def evicted(cluster, name):
        if len(cluster.evicted()) == 3:
            all_sent.set()
    cluster = cluster_of(on_evict=evicted)
    record = cluster.create_event

    def create_event(namespace, involved, reason, message, type_):
        waits.append(all_sent.wait(30))
        record(namespace, involved, reason, message, type_)
    cluster.create_event = create_event
    code, out, err = run(cluster, "--delete-emptydir-data", "--max-parallel", "1", "--timeout", "0")
    assert code == EXIT_OK, out + err
    assert len(cluster.written) == 5 and waits == [True] * 5      # and all written by the end


def test_a_lane_late_after_the_end_queues_nothing_and_does_not_fail():
    fake = FakeNode(["a"])
    audit = Audit(fake, enabled=True, warn=pytest.fail)
    audit.close()
    audit.evicted(GPU_A, Target("default", "a", "uid-a"))
    audit.close()
    assert fake.written == []


def test_the_engine_tells_the_audit_of_evictions_and_refusals():
    fake = FakeNode(["a", "b"], script={"a": [pdb_429("web", 2, 1), pdb_429("web", 2, 1), OK]})
    warnings = []
    audit = Audit(fake, enabled=True, warn=warnings.append)
    evictor = Evictor(fake, halt=Halt(FakeClock()), audit=audit)
    targets = [Target("default", "a", "uid-a", pdbs=("web",)), Target("default", "b", "uid-b")]
    try:
        outcomes = evictor.evacuate_node(GPU_A, targets)
    finally:
        evictor.close()
        audit.close()
    assert [o.done for o in outcomes] == [True, True]
    assert sorted((name, reason) for _, name, _, reason, _, _ in fake.written) == [
        ("a", EVICTED), ("a", EVICTION_BLOCKED), ("b", EVICTED)]
    assert warnings == []
