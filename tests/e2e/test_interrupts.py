"""Interrupts: SIGINT or SIGTERM at seeded random points of `evacuate` (20 runs,
half of them through the fault proxy), and while a command waits for a server
that never answers.  Every run exits 130 or 143 with one `error: interrupted`
line; the summary lists what moved and what is pending; and the cluster is
consistent: no cordon, the GPU taint present, and every pod either gone and
replaced or still there with its UID.

Each run evacuates a GPU node of this module's own (SCRATCH_NODE, a kwok node like the seed's
GPU nodes) that holds only the run's namespace's workload, so the seed is never changed and no
run pays a rebuild of it: a run is its own workload placed, one signal, the checks."""

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from plugin import REPO
from sandbox_helpers import CPU_WORKERS, unanswering_servers, wait_until

sys.path.insert(0, str(Path(REPO) / "tests"))
from faults import pki  # noqa: E402
from faults.checks import gpu_value  # noqa: E402
from faults.cluster import Admin, classify, owner, ready, ref  # noqa: E402
from faults.proxy import FaultProxy  # noqa: E402
from sandboxctl import objects  # noqa: E402  (faults.cluster puts tests/sandbox on the path)

RUNS = 20
SIGNALS = {signal.SIGINT: (130, "SIGINT"), signal.SIGTERM: (143, "SIGTERM")}
SCRATCH_NODE = "e2e-interrupt-gpu"
MOVERS = 10  # single-replica Deployments preferring the scratch node: lines to signal between


@pytest.fixture(scope="module")
def admin(sandbox):
    return Admin(sandbox.dir)


@pytest.fixture(scope="module")
def proxy(admin, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("interrupt-proxy")
    with FaultProxy(admin.server, admin.pki, workdir, rate=0.1, stall=3.5) as running:
        running.config = running.kubeconfig(workdir / "kubeconfig", pki.token(admin.pki))
        yield running


@pytest.fixture(scope="module")
def scratch_node(sandbox, admin):
    """SCRATCH_NODE for this module; afterwards it is deleted with the DaemonSet pods the seed's
    DaemonSets put on it (no pod GC waits for them), and the seed is as it was."""
    kube = admin.kube
    kube.create(objects.node(SCRATCH_NODE, "worker", 48, 384, gpus=2), exist_ok=True)
    wait_until("the scratch GPU node", lambda: any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (kube.get("nodes", SCRATCH_NODE).get("status") or {}).get("conditions") or ()))
    yield SCRATCH_NODE
    kube.delete("nodes", SCRATCH_NODE)

    def left():
        pods = kube.list("pods", fieldSelector=f"spec.nodeName={SCRATCH_NODE}")
        for p in pods:
            kube.delete("pods", p["metadata"]["name"], p["metadata"]["namespace"], gracePeriodSeconds=0)
        return not pods
    wait_until("the scratch node's pods to be gone", left, timeout=120)
    sandbox.reset()


def scratch_workload(admin, namespace):
    """The run's pods on SCRATCH_NODE: MOVERS Deployments that prefer it (the scheduler may put
    one elsewhere: the checks go by where each pod is), two with an emptyDir, and a GPU pod."""
    prefer = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "preference": {"matchExpressions": [{
            "key": "kubernetes.io/hostname", "operator": "In", "values": [SCRATCH_NODE]}]}}]}}
    for i in range(MOVERS):
        spec = {"affinity": prefer, "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "main", "image": "busybox",
                                "resources": {"requests": {"cpu": "100m"}}}]}
        if i < 2:
            spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
        admin.kube.create(_deployment(namespace, f"mover-{i}", 1, spec))
    gpu = {"nodeSelector": {"kubernetes.io/hostname": SCRATCH_NODE}, "terminationGracePeriodSeconds": 0,
           "tolerations": [dict(objects.GPU_TOLERATION)],
           "containers": [{"name": "main", "image": "vllm/vllm-openai",
                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}
    admin.kube.create(_deployment(namespace, "inference", 1, gpu))
    wait_until("the movers and the GPU pod", lambda: sum(
        map(ready, admin.kube.list("pods", namespace))) == MOVERS + 1)


def _deployment(namespace, name, replicas, spec):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}


def pinned_workload(admin, namespace):
    """Two replicas pinned to SCRATCH_NODE under a maxUnavailable-1 PDB, in the test's own namespace:
    once it is tainted, the first replacement stays Pending, so the second pod waits for the PDB
    until the deadline."""
    kube = admin.kube
    kube.create({"apiVersion": "apps/v1", "kind": "Deployment",
                 "metadata": {"name": "pinned", "namespace": namespace},
                 "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "pinned"}},
                          "template": {"metadata": {"labels": {"app": "pinned"}}, "spec": {
                              # the node or one CPU worker by the filters (somewhere to land), but
                              # more CPU than a worker has: a replacement stays Pending.
                              "affinity": {"nodeAffinity": {
                                  "requiredDuringSchedulingIgnoredDuringExecution": {
                                      "nodeSelectorTerms": [{"matchExpressions": [{
                                          "key": "kubernetes.io/hostname", "operator": "In",
                                          "values": [SCRATCH_NODE, CPU_WORKERS[0]]}]}]}}},
                              "terminationGracePeriodSeconds": 0,
                              "containers": [{"name": "main", "image": "busybox", "resources": {
                                  "requests": {"cpu": "17"}}}]}}}})
    kube.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                 "metadata": {"name": "pinned", "namespace": namespace},
                 "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "pinned"}}}})
    wait_until("the pinned pods", lambda: sum(
        ready(p) for p in kube.list("pods", namespace, labelSelector="app=pinned")) == 2)
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
def test_an_interrupted_evacuation_leaves_a_consistent_cluster(gpuisolate, scratch_node, admin, proxy,
                                                               namespace, run):
    rng = random.Random(f"interrupt-{run}")
    signum = rng.choice(sorted(SIGNALS))
    taint_first, through_proxy = rng.random() < 0.5, run % 2 == 1
    admin.kube.patch("nodes", scratch_node, {"spec": {"taints": None}})  # as the last run left it
    scratch_workload(admin, namespace)
    pinned_workload(admin, namespace)
    if not taint_first:
        assert gpuisolate("taint", scratch_node).returncode == 0
    before, claims = admin.pods(), admin.local_claims()
    args = ["evacuate", "--delete-emptydir-data", "-o", "json", "--timeout", "60s",
            "--parallel-nodes", str(rng.choice([1, 2])), "--max-parallel", str(rng.choice([1, 3, 8]))]
    args += ["--taint-first"] if taint_first else []
    args.append(scratch_node)
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
    assert [n["name"] for n in doc["nodes"]] == [scratch_node], context
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
        if pod["spec"].get("nodeName") != scratch_node or uid in after:
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
    assert gpu_value(nodes[scratch_node]) == "true"


@pytest.fixture
def silent_server():
    """(port that accepts connections and never answers, Event set on the first connection)."""
    with unanswering_servers() as servers:
        yield servers.silent, servers.accepted


@pytest.mark.parametrize("signum", sorted(SIGNALS), ids=lambda s: SIGNALS[s][1])
@pytest.mark.parametrize("command", [["status"], ["taint"], ["evacuate", "--taint-first"]],
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
