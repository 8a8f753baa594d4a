"""Interrupts: SIGINT or SIGTERM at seeded random points of `evacuate` (20 runs,
half of them through the fault proxy), and while a command waits for a server
that never answers.  Every run exits 130 or 143 with one `error: interrupted`
line; the summary lists what moved and what is pending; and the cluster is
consistent: no cordon, the GPU taint present, and every pod either gone and
replaced or still there with its UID."""

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from plugin import REPO
from sandbox_helpers import CPU_WORKERS, GPU_A, GPU_NODES, unanswering_servers, wait_until

sys.path.insert(0, str(Path(REPO) / "tests"))
from faults import pki  # noqa: E402
from faults.checks import gpu_value  # noqa: E402
from faults.cluster import Admin, classify, owner, ready, ref  # noqa: E402
from faults.proxy import FaultProxy  # noqa: E402

RUNS = 20
SIGNALS = {signal.SIGINT: (130, "SIGINT"), signal.SIGTERM: (143, "SIGTERM")}


@pytest.fixture(scope="module")
def admin(sandbox):
    return Admin(sandbox.dir)


@pytest.fixture(scope="module")
def proxy(admin, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("interrupt-proxy")
    with FaultProxy(admin.server, admin.pki, workdir, rate=0.1, stall=3.5) as running:
        running.config = running.kubeconfig(workdir / "kubeconfig", pki.token(admin.pki))
        yield running


def pinned_workload(admin, namespace):
    """Two replicas pinned to GPU A under a maxUnavailable-1 PDB, in the test's own namespace:
    once A is tainted, the first replacement stays Pending, so the second pod waits for the PDB
    until the deadline."""
    kube = admin.kube
    kube.create({"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "pinned", "namespace": namespace},
                 "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "pinned"}},
                          "template": {"metadata": {"labels": {"app": "pinned"}}, "spec": {
                              # GPU A or one CPU worker by the filters (somewhere to land), but
                              # more CPU than a worker has: a replacement stays Pending.
                              "affinity": {"nodeAffinity": {
                                  "requiredDuringSchedulingIgnoredDuringExecution": {
                                      "nodeSelectorTerms": [{"matchExpressions": [{
                                          "key": "kubernetes.io/hostname", "operator": "In",
                                          "values": [GPU_A, CPU_WORKERS[0]]}]}]}}},
                              "terminationGracePeriodSeconds": 0,
                              "containers": [{"name": "main", "image": "busybox", "resources": {
                                  "requests": {"cpu": "17"}}}]}}}})
    kube.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                 "metadata": {"name": "pinned", "namespace": namespace},
                 "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "pinned"}}}})
    wait_until("the pinned pods", lambda: sum(map(ready, kube.list("pods", namespace))) == 2)
    wait_until("the pinned PDB", lambda: (kube.get("poddisruptionbudgets", "pinned", namespace)
                                          .get("status") or {}).get("disruptionsAllowed") == 1)


def signal_at(proc, line_number, marker, delay):
    """Reads stderr until line ``line_number`` or a line with ``marker``; then signals after ``delay``."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if len(seen) >= line_number or marker in line:
            break
    time.sleep(delay)
    return seen


@pytest.mark.parametrize("run", range(RUNS))
def test_an_interrupted_evacuation_leaves_a_consistent_cluster(gpuisolate, clean, admin, proxy, namespace,
                                                               run):
    rng = random.Random(f"interrupt-{run}")
    signum = rng.choice(sorted(SIGNALS))
    taint_first, through_proxy = rng.random() < 0.5, run % 2 == 1
    pinned_workload(admin, namespace)
    if not taint_first:
        assert gpuisolate("taint").returncode == 0
    before, claims = admin.pods(), admin.local_claims()
    args = ["evacuate", "--delete-emptydir-data", "-o", "json", "--timeout", "60s",
            "--parallel-nodes", str(rng.choice([1, 2])), "--max-parallel", str(rng.choice([1, 3, 8]))]
    args += ["--taint"] if taint_first else []
    env = gpuisolate.env(KUBECONFIG=proxy.config) if through_proxy else gpuisolate.env()
    if through_proxy:
        proxy.reseed(run)
        args += ["--request-timeout", "2s"]
    proc = subprocess.Popen(["kubectl", "gpuisolate", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    seen = signal_at(proc, rng.randint(1, 40), f"blocked by PDB {namespace}/pinned", rng.uniform(0, 0.5))
    assert proc.poll() is None, "evacuate ended before the signal: " + "".join(seen)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    err = "".join(seen) + err
    code, name = SIGNALS[signum]
    context = f"run {run} ({name} after {len(seen)} lines): {err[-3000:]}"
    assert proc.returncode == code, context
    assert err.strip().splitlines()[-1] == f"error: interrupted by {name}", context
    assert "Traceback" not in err

    doc = json.loads(out)
    assert [n["name"] for n in doc["nodes"]] == GPU_NODES, context
    by_ref = {ref(p): uid for uid, p in before.items()}
    wait_until("evicted pods to finish terminating", lambda: not any(
        p["metadata"].get("deletionTimestamp") and uid in before for uid, p in admin.pods().items()),
        timeout=60)
    after = admin.pods()
    for node in doc["nodes"]:
        movable = {ref(p) for p in before.values()
                   if p["spec"].get("nodeName") == node["name"]
                   and classify(p, local_claims=claims) in ("move", "terminating")}
        pending = {p["pod"]: p["state"] for p in node["pending"]}
        listed = set(node["moved"]) | set(pending) | {p["pod"] for p in node["failed"]}
        assert listed == movable, (node["name"], sorted(listed ^ movable), context)
        for pod_ref in node["moved"]:
            assert by_ref[pod_ref] not in after, (pod_ref, context)
        for pod_ref, state in pending.items():
            if state in ("not-started", "pdb-blocked", "pdb-refused"):
                assert by_ref[pod_ref] in after, (pod_ref, state, context)
    for uid, pod in before.items():
        if pod["spec"].get("nodeName") not in GPU_NODES or uid in after:
            continue
        kind = classify(pod, local_claims=claims)
        assert kind == "move", f"{kind} pod {ref(pod)} was removed; {context}"
        wait_until(f"a replacement of {ref(pod)}", lambda pod=pod: any(
            owner(p) == owner(pod) and p["metadata"]["uid"] not in before for p in admin.pods().values()))
    moved = sum(len(n["moved"]) for n in doc["nodes"])
    print(f"run {run}: {name} after line {len(seen)} {seen[-1].strip()[:70]!r}: {moved} moved, "
          f"{sum(len(n['pending']) for n in doc['nodes'])} pending")
    nodes = admin.nodes()
    assert not any(n["spec"].get("unschedulable") for n in nodes.values())
    assert all(gpu_value(nodes[n]) == "true" for n in GPU_NODES)


@pytest.fixture
def silent_server():
    """(port that accepts connections and never answers, Event set on the first connection)."""
    with unanswering_servers() as servers:
        yield servers.silent, servers.accepted


@pytest.mark.parametrize("signum", sorted(SIGNALS), ids=lambda s: SIGNALS[s][1])
@pytest.mark.parametrize("command", [["status"], ["taint"], ["evacuate", "--taint"]],
                         ids=["status", "taint", "evacuate"])
def test_an_interrupt_while_the_server_hangs(gpuisolate, sandbox, tmp_path, silent_server, command, signum):
    port, accepted = silent_server
    config = json.loads(sandbox.kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(config))
    proc = subprocess.Popen(["kubectl", "gpuisolate", *command, "--kubeconfig", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=gpuisolate.env())
    try:
        assert accepted.wait(60), "the plugin never connected"
        proc.send_signal(signum)
        if command[0] == "evacuate":
            # evacuate's first signal asks it to stop cleanly, which waits for the request in
            # flight (bounded by --request-timeout), and says so; the second one ends it at once.
            time.sleep(0.5)
            assert proc.poll() is None, "evacuate ended on the first signal"
            proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    code, name = SIGNALS[signum]
    assert proc.returncode == code, err
    expected = [f"error: interrupted by {name}"]
    if command[0] == "evacuate":
        expected.insert(0, f"{name}: stopping, no new evictions start; send {name} again to quit at once")
    assert err.strip().splitlines() == expected
    assert out == ""
