"""Faults of the control plane itself, from the sandbox's own processes (no proxy):
kube-apiserver killed (SIGKILL) and started again on its port mid-evacuate, while evictions a
PodDisruptionBudget blocks are being retried, and mid-taint across many nodes; etcd paused
(SIGSTOP) for longer than --request-timeout mid-evacuate; and the 410 Gone a pod watch from
before a restart gets.

What must hold every time: no pod evicted twice (the API server's audit log, by UID), no budget
below its minimum (the PDB monitor, on every pod and PDB event), no lost or doubled taint, no run
past --timeout, and an exit code and summary that match the cluster afterwards (the soak's
Checker).  ``FAULT_DELAY`` (seconds, default 0) shifts each fault later, so scripts/soak
--control-plane lands it at other moments of the run."""

import json
import os
import sys
import time
from pathlib import Path

import pytest
from race_helpers import Once, Watched, ours, plugin_run, quorum, release
from sandbox_helpers import GPU_A, REPO, wait_until

sys.path.insert(0, str(Path(REPO) / "tests"))
from faults import audit  # noqa: E402
from faults.control_plane import ControlPlane  # noqa: E402

pytestmark = pytest.mark.control_plane
DELAY = float(os.environ.get("FAULT_DELAY", "0"))
TIMEOUT = 100
EVACUATE = ("evacuate", GPU_A, "--delete-emptydir-data", "-o", "json", "--max-parallel", "4",
            "--timeout", f"{TIMEOUT}s")


@pytest.fixture
def control_plane(sandbox):
    """The sandbox's processes; whatever a test did to them, etcd runs and the API server is up
    again afterwards, and its clients are started afresh (ControlPlane.restart_clients)."""
    cp = ControlPlane(sandbox.dir)
    yield cp
    cp.resume_etcd()
    if not sandbox.is_up():
        cp.start_apiserver()
    cp.restart_clients()


def restart_apiserver(cp, down=2.0):
    def action():
        time.sleep(DELAY)
        cp.restart_apiserver(down)
    return action


def assert_evacuation_held(watched, namespace, args, result, seconds):
    """The run's invariants (module docstring).  A pod may still be pending at the deadline,
    but only one its PDB held back or one queued behind it (exit 10, and the Checker holds the
    summary to it): after a restart the sandbox's controller-manager can take minutes to update
    a budget's status (its caches catch up late and its retries of conflicting updates back
    off), and kwok to make a replacement Ready; the plugin must wait for them, not count on
    them."""
    rc, out, err = result
    # The fault reached the run: some call of it went unanswered and was retried.
    assert "the API server did not answer" in err, err[-3000:]
    assert rc in (0, 10), err[-3000:]
    node = json.loads(out)["nodes"][0]
    pending = node.get("pending") or []
    # Held back by its PDB, or queued behind the pod of the same PDB that was (one at a time).
    assert all(p["state"] in ("pdb-blocked", "not-started") for p in pending), node
    assert any(p["state"] == "pdb-blocked" for p in pending) or not pending, node
    quorum = [ref for ref in node["moved"] + [p["pod"] for p in pending]
              if ref.startswith(f"{namespace}/quorum-")]
    assert len(quorum) == 6 and (rc == 0) == (not pending), node
    checker, evictions = watched.check(args, result)
    assert checker.failures == [], checker.failures
    assert audit.evicted_twice(evictions) == []
    assert seconds < TIMEOUT + 30, f"ran {seconds:.0f}s with --timeout {TIMEOUT}s"
    return checker, evictions


def test_apiserver_killed_while_pdb_blocked_evictions_retry(gpuisolate, clean, namespace, control_plane):
    quorum(clean, namespace, held=True)
    assert gpuisolate("taint").returncode == 0
    watched = Watched(clean, control_plane)
    restart = restart_apiserver(control_plane)

    def fault_then_release():
        try:
            restart()
        finally:
            release(clean, namespace)
    # Four lanes on a budget that allows one: three are being refused (429) and retried.
    fault = Once(lambda stream, line: "blocked by PDB" in line and namespace in line,
                 fault_then_release)
    run = plugin_run(gpuisolate, *EVACUATE, on_line=fault)
    rc, out, err, seconds = run.wait(TIMEOUT + 60)
    fault.join()
    _, evictions = assert_evacuation_held(watched, namespace, EVACUATE, (rc, out, err), seconds)
    moved = {ref.split("/", 1)[1] for ref in json.loads(out)["nodes"][0]["moved"]
             if ref.startswith(f"{namespace}/quorum-")}
    recorded = {e.name for e in ours(evictions) if e.name.startswith("quorum-")
                and e.code in (200, 201)}
    # Every eviction the server recorded is of a pod the summary calls moved.  The record can
    # lack one: a SIGKILL between the eviction's write to etcd and its audit event loses the
    # event, and the retry finds the pod gone.  The budget lets one eviction through at a time,
    # so at most one such pod.
    assert recorded <= moved, (recorded, moved)
    assert len(moved - recorded) <= 1, (recorded, moved)
    refused = [e for e in ours(evictions) if e.code == 429 and e.name.startswith("quorum-")]
    assert refused, "no eviction was refused by the PDB"


def test_etcd_paused_longer_than_the_request_timeout(gpuisolate, clean, namespace, control_plane):
    quorum(clean, namespace, held=True)
    assert gpuisolate("taint").returncode == 0
    watched = Watched(clean, control_plane)
    args = (*EVACUATE, "--request-timeout", "2s")

    def pause():
        time.sleep(DELAY)
        control_plane.pause_etcd()
        try:
            time.sleep(7)           # 3.5 request timeouts: requests hang, time out, are retried
        finally:
            control_plane.resume_etcd()
            release(clean, namespace)
    fault = Once(lambda stream, line: "evicted pod" in line and namespace in line, pause)
    run = plugin_run(gpuisolate, *args, on_line=fault)
    rc, out, err, seconds = run.wait(TIMEOUT + 60)
    fault.join()
    assert_evacuation_held(watched, namespace, args, (rc, out, err), seconds)


def fake_gpu_nodes(sandbox, count):
    """``count`` GPU nodes of this test (kwok runs them), with a taint of their own that keeps
    every pod, DaemonSet pods too, off them."""
    names = [f"e2e-cpf-gpu-{i:02d}" for i in range(count)]
    sandbox.apply(*({"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true",
                                                           "e2e.gpuisolate/fault": "taint",
                                                           "kubernetes.io/hostname": name}},
                     "spec": {"taints": [{"key": "e2e.gpuisolate/scratch", "value": "true",
                                          "effect": "NoSchedule"}]}} for name in names))
    wait_until(f"{count} fake GPU nodes", lambda: len(sandbox.get_json(
        "nodes", "-l", "e2e.gpuisolate/fault=taint")["items"]) == count)
    return names


@pytest.fixture
def many_nodes(sandbox):
    names = fake_gpu_nodes(sandbox, 60)
    yield names
    sandbox.kubectl("delete", "nodes", "-l", "e2e.gpuisolate/fault=taint", "--wait=false")


def gpu_taints(sandbox, names):
    """{node: [its nvidia.com/gpu taints]}."""
    nodes = {n["metadata"]["name"]: n for n in sandbox.get_json(
        "nodes", "-l", "e2e.gpuisolate/fault=taint")["items"]}
    return {name: [t for t in nodes[name]["spec"].get("taints") or () if t["key"] == "nvidia.com/gpu"]
            for name in names}


def test_apiserver_killed_mid_taint_across_many_nodes(gpuisolate, sandbox, many_nodes, control_plane):
    selector = ["-l", "e2e.gpuisolate/fault=taint"]
    fault = Once(lambda stream, line: stream == "stdout" and line.startswith(f"node/{many_nodes[4]} "),
                 restart_apiserver(control_plane))
    rc, out, err, _ = plugin_run(gpuisolate, "taint", *selector, on_line=fault).wait(120)
    fault.join()
    wait_until("the API server", sandbox.is_up, timeout=60)
    reported = [line.split()[0][len("node/"):] for line in out.splitlines() if line.endswith(" tainted")]
    taints = gpu_taints(sandbox, many_nodes)
    gpu = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    # What it says it wrote is there, once; at most one write more landed unseen (its answer
    # was lost with the server); nothing is there twice.
    assert all(taints[name] == [gpu] for name in reported), taints
    unreported = [name for name in many_nodes if name not in reported and taints[name]]
    assert len(unreported) <= 1 and all(taints[n] == [gpu] for n in unreported), unreported
    if rc == 0:
        assert len(reported) == len(many_nodes)
    else:
        assert rc == 4, err
        lines = err.strip().splitlines()
        assert lines[-1].startswith("error: ") and sum(line.startswith("error:") for line in lines) == 1
    # Run again: every node tainted exactly once, each line true.
    rc, out, err = (lambda r: (r.returncode, r.stdout, r.stderr))(gpuisolate("taint", *selector))
    assert rc == 0, err
    assert all(line.endswith(" already tainted") == (line.split()[0][5:] in reported + unreported)
               for line in out.splitlines())
    assert gpu_taints(sandbox, many_nodes) == {name: [gpu] for name in many_nodes}


def test_a_watch_from_before_a_restart_ends_with_410_and_is_listed_again(sandbox, control_plane):
    """The API server's own 410: after a restart its watch cache starts at the current
    resourceVersion, so the plugin's watch from an older one is Expired.  The transport turns it
    into Gone (or an ERROR event), which the gone-watcher answers by listing again."""
    sys.path.insert(0, str(REPO))
    from kubectl_gpuisolate.errors import Gone
    from kubectl_gpuisolate.flags import ConnectionOptions
    from kubectl_gpuisolate.kube import connect

    kube = connect(ConnectionOptions(kubeconfig=str(sandbox.kubeconfig)))
    _, version = kube.list_pods_on_node_with_version(GPU_A)
    sandbox.kubectl("create", "configmap", "-n", "default", "e2e-rv-bump")   # the version moves on
    sandbox.kubectl("delete", "configmap", "-n", "default", "e2e-rv-bump")
    control_plane.restart_apiserver(0.5)
    try:
        events = list(kube.watch_pods_on_node(GPU_A, version, 3))
        expired = [obj for kind, obj in events if kind == "ERROR"]
        assert expired and expired[0].get("code") == 410, events
    except Gone:
        pass
    # A list then gives a version the restarted server can watch from.
    _, fresh = kube.list_pods_on_node_with_version(GPU_A)
    assert [kind for kind, _ in kube.watch_pods_on_node(GPU_A, fresh, 2) if kind == "ERROR"] == []
