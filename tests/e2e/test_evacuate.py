"""evacuate against the seed sandbox, through real kubectl plugin discovery:
what moves and what stays (the inference pod keeps its UID), no cordon, the
preflight gates, PodDisruptionBudgets (0 allowed, 1 allowed watched during the
run, several on one pod), dry runs, an interrupt, and `kubectl drain` on the
same starting state for comparison."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_helpers import (
    CPU_WORKERS,
    GPU_A,
    GPU_B,
    GPU_NODES,
    REPO,
    ROOK_PINNED,
    app_name,
    owner_kind,
    wait_until,
)

sys.path.insert(0, str(Path(REPO) / "tests"))
from faults.cluster import Admin, ready  # noqa: E402
from faults.monitor import PdbMonitor  # noqa: E402

INFERENCE = "llama32-iep-predictor"


def uids_on(sandbox, nodes=GPU_NODES):
    return {p["metadata"]["uid"] for n in nodes for p in sandbox.pods_on(n)}


def inference_pod(sandbox):
    pods = [p for p in sandbox.pods("-n", "nai-admin") if p["metadata"]["name"].startswith(INFERENCE)]
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return pods[0]


def apply(sandbox, *objects):
    sandbox.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                           "items": list(objects)}))


def deployment(name, namespace, replicas, *, prefer=None, labels=None):
    """A Deployment; ``prefer`` prefers that node by hostname."""
    labels = {"app": name, **(labels or {})}
    spec = {"containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
            "terminationGracePeriodSeconds": 0}
    if prefer:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [prefer]}]}}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def stuck_deployment(name, namespace, replicas):
    """Pods that fit only on GPU A: by the filters they may also land on the first CPU worker,
    which has too little CPU for them (resources are the scheduler's, not the landing check's)."""
    obj = deployment(name, namespace, replicas)
    spec = obj["spec"]["template"]["spec"]
    spec["containers"][0]["resources"]["requests"]["cpu"] = "17"
    spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                                     "values": [GPU_A, CPU_WORKERS[0]]}]}]}}}
    return obj


def pdb(name, namespace, selector, **spec):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": selector, **spec}}


def wait_ready(sandbox, namespace, selector, count, where=None):
    def check():
        pods = [p for p in sandbox.pods("-n", namespace, "-l", selector) if ready(p)]
        if where:
            pods = [p for p in pods if p["spec"].get("nodeName") in where]
        return len(pods) == count and pods
    return wait_until(f"{count} ready pod(s) {selector} in {namespace}", check)


def wait_pdb_allows(sandbox, namespace, name, allowed):
    return wait_until(f"PDB {namespace}/{name} to allow {allowed}", lambda: sandbox.get_json(
        "pdb", "-n", namespace, name)["status"].get("disruptionsAllowed") == allowed)


def lines_in_order(text, *needles):
    positions = [next((i for i, line in enumerate(text.splitlines()) if needle in line), -1)
                 for needle in needles]
    return -1 not in positions and positions == sorted(positions)


# -- the seed, as a new user would run it ----------------------------------------------------------
@pytest.mark.window
def test_taint_then_evacuate_leaves_only_daemonsets_and_the_inference_pod(gpuisolate, clean):
    inference_uid = inference_pod(clean)["metadata"]["uid"]
    before = {p["metadata"]["uid"]: p for n in GPU_NODES for p in clean.pods_on(n)}
    assert gpuisolate("taint").returncode == 0

    gated = gpuisolate("evacuate")
    assert gated.returncode == 9, gated.stderr
    assert "(use --delete-emptydir-data)" in gated.stderr
    assert "rerun with --delete-emptydir-data" in gated.stderr
    assert uids_on(clean) == set(before)                     # refused: nothing evicted

    first = gpuisolate("evacuate", "--delete-emptydir-data", "--timeout", "2m")
    assert first.returncode == 10, first.stderr              # the seed's nai-db PDB never allows
    assert lines_in_order(first.stderr, "PodDisruptionBudget nai-system/nai-db can never allow",
                          "evicting pod")
    assert "nai-system/nai-db-0" in first.stdout.split("Not moved:")[1]

    # Follow the advice: scale the workload up, then run evacuate again.
    clean.kubectl("scale", "statefulset", "-n", "nai-system", "nai-db", "--replicas=2")
    wait_pdb_allows(clean, "nai-system", "nai-db", 1)
    second = gpuisolate("evacuate", "--delete-emptydir-data", "--timeout", "2m")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "evicted pod nai-system/nai-db-0" in second.stderr

    left = [p for n in GPU_NODES for p in clean.pods_on(n)]
    pinned = {uid for uid, p in before.items() if app_name(p) in ROOK_PINNED}   # nowhere to land
    assert len(pinned) == len(ROOK_PINNED) and pinned <= {p["metadata"]["uid"] for p in left}
    for p in left:
        kind = owner_kind(p)
        finished = p["status"].get("phase") in ("Succeeded", "Failed")   # kept: documented choice
        assert kind == "DaemonSet" or finished or p["metadata"]["uid"] in pinned | {inference_uid}, \
            p["metadata"]["name"]
    assert inference_pod(clean)["metadata"]["uid"] == inference_uid
    assert inference_pod(clean)["spec"]["nodeName"] == GPU_A
    assert all(not n["spec"].get("unschedulable") for n in clean.get_json("nodes")["items"])

    moved = [p for uid, p in before.items()
             if owner_kind(p) in ("ReplicaSet", "StatefulSet") and uid not in pinned | {inference_uid}]
    for old in moved:
        labels = ",".join(f"{k}={v}" for k, v in old["metadata"]["labels"].items()
                          if k == "app.kubernetes.io/name")
        ns = old["metadata"]["namespace"]
        pods = wait_until(f"replacement of {old['metadata']['name']} running on a CPU worker",
                          lambda ns=ns, labels=labels: [
                              p for p in clean.pods("-n", ns, "-l", labels)
                              if ready(p) and p["spec"]["nodeName"] in CPU_WORKERS])
        assert pods and all(p["spec"]["nodeName"] not in GPU_NODES for p in pods)


# -- PodDisruptionBudgets --------------------------------------------------------------------------
def test_a_never_allowing_pdb_is_reported_up_front_and_exits_non_zero(gpuisolate, clean):
    db_uid = next(p["metadata"]["uid"] for p in clean.pods_on(GPU_B)
                  if p["metadata"]["name"] == "nai-db-0")
    result = gpuisolate("evacuate", GPU_B, "--taint-first", "--delete-emptydir-data", "--timeout", "30s")
    assert result.returncode == 10, result.stderr
    assert lines_in_order(result.stderr,
                          "Warning: PodDisruptionBudget nai-system/nai-db can never allow an eviction "
                          "(minAvailable 1 >= its 1 pod(s); needs 1 healthy, has 1)",
                          "evicting pod nai-system/nai-db-0",
                          "pod nai-system/nai-db-0 blocked by PDB nai-system/nai-db: "
                          "needs 1 healthy, has 1")
    row = [line for line in result.stdout.splitlines() if "nai-system/nai-db-0" in line]
    assert row and "pending" in row[0] and "PDB nai-system/nai-db: needs 1 healthy, has 1" in row[0]
    assert db_uid in uids_on(clean, [GPU_B])


def pinned_pair(sandbox, namespace):
    """Two pods on GPU A under a maxUnavailable-1 PDB, both Ready and the PDB allowing 1, whose
    replacements stay Pending: their required affinity allows GPU A and one CPU worker (so the
    landing check sees somewhere to land), but they request more CPU than a worker has."""
    apply(sandbox, stuck_deployment("pinned", namespace, 2))
    wait_ready(sandbox, namespace, "app=pinned", 2, where=[GPU_A])
    apply(sandbox, pdb("pinned", namespace, {"matchLabels": {"app": "pinned"}}, maxUnavailable=1))
    wait_pdb_allows(sandbox, namespace, "pinned", 1)


def test_a_pdb_at_zero_blocks_until_the_deadline(gpuisolate, clean, namespace):
    """Replacements pinned to the GPU node stay Pending once it is tainted, so after the first
    eviction the PDB allows none: the second pod waits, retried, until --timeout."""
    pinned_pair(clean, namespace)
    result = gpuisolate("evacuate", GPU_A, "--taint-first", "--delete-emptydir-data", "--timeout", "20s")
    assert result.returncode == 10, result.stderr
    assert f"blocked by PDB {namespace}/pinned: needs 1 healthy, has" in result.stderr
    pending = [line for line in result.stdout.split("Not moved:")[1].split("\n\n")[0].splitlines()
               if f"{namespace}/pinned-" in line]
    assert len(pending) == 1 and f"PDB {namespace}/pinned: needs 1 healthy, has" in pending[0]
    # Past the deadline, one look at the first pod's replacement: the scheduler's verdict.
    assert f"replacement {namespace}/pinned-" in result.stderr and "Insufficient cpu" in result.stderr
    assert "can never allow" not in result.stderr
    # Everything else on the node moved.
    others = [p for p in clean.pods_on(GPU_A) if owner_kind(p) not in ("DaemonSet", None)
              and p["metadata"]["namespace"] not in (namespace, "nai-admin")
              and p["status"].get("phase") not in ("Succeeded", "Failed")]
    assert others == []


@pytest.mark.window
def test_a_pdb_allowing_one_lets_pods_go_one_by_one_and_is_never_violated(gpuisolate, clean, namespace):
    apply(clean, deployment("quorum", namespace, 4, prefer=GPU_A))
    wait_ready(clean, namespace, "app=quorum", 4, where=[GPU_A])
    apply(clean, pdb("quorum", namespace, {"matchLabels": {"app": "quorum"}}, minAvailable=3))
    wait_pdb_allows(clean, namespace, "quorum", 1)
    assert gpuisolate("taint").returncode == 0       # both GPU nodes: replacements go to CPU workers
    # Watch-based: every pod and PDB event during the run is checked, not a sample of states.
    monitor = PdbMonitor(Admin(clean.dir)).start()
    try:
        armed = monitor.arm()
        result = gpuisolate("evacuate", GPU_A, "--delete-emptydir-data", "--timeout", "3m")
        violations, checks = monitor.disarm()
    finally:
        monitor.stop()
    assert result.returncode == 0, result.stdout + result.stderr
    assert armed[(namespace, "quorum")] == 3
    assert violations == []
    # Each of the four quorum evictions means at least two pod events (the pod deleted, its
    # replacement added), each of them checked against every armed budget.
    assert checks >= 8 * len(armed), (checks, len(armed))
    # One at a time: the next quorum pod goes once the one before is gone or the budget allows
    # again (its replacement Ready while the pod before still terminates: evacuation/turns.py),
    # and the monitor saw no violation of the budget on the way.  Each pod is evicted once and
    # each is seen gone after its eviction.
    events = [line.split("] ", 1)[1] for line in result.stderr.splitlines()
              if f"{namespace}/quorum-" in line and ("evicted pod" in line or " gone" in line)]
    evicted = [e.split()[-1] for e in events if e.startswith("evicted pod")]
    gone = [e.split()[1] for e in events if e.endswith("gone")]
    assert len(evicted) == len(set(evicted)) == 4 and sorted(gone) == sorted(evicted)
    assert all(events.index(f"evicted pod {ref}") < events.index(f"pod {ref} gone") for ref in evicted)
    wait_ready(clean, namespace, "app=quorum", 4, where=CPU_WORKERS)


def test_a_multi_pdb_pod_is_reported_before_any_eviction(gpuisolate, clean):
    apply(clean, pdb("everything", "kommander", {}, maxUnavailable=1))   # {} matches every pod
    before = uids_on(clean, [GPU_A])
    result = gpuisolate("evacuate", GPU_A, "--taint-first", "--delete-emptydir-data")
    assert result.returncode == 9, result.stderr
    assert "evicting pod" not in result.stderr
    line = next(x for x in result.stderr.splitlines() if "thanos-query-" in x)
    assert "several PodDisruptionBudgets (" in line and "everything" in line and "thanos-query" in line
    assert uids_on(clean, [GPU_A]) == before


# -- gates -----------------------------------------------------------------------------------------
def test_a_bare_pod_is_refused_without_force(gpuisolate, clean, namespace):
    apply(clean, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "namespace": namespace},
                  "spec": {"nodeName": GPU_A, "terminationGracePeriodSeconds": 0,
                           "containers": [{"name": "main", "image": "busybox"}]}})
    wait_until("bare pod running", lambda: ready(clean.get_json("pod", "-n", namespace, "bare")))
    before = uids_on(clean, [GPU_A])
    refused = gpuisolate("evacuate", GPU_A, "--taint-first", "--delete-emptydir-data")
    assert refused.returncode == 9, refused.stderr
    assert f"pod {namespace}/bare does not tolerate" in refused.stderr and "(use --force)" in refused.stderr
    assert uids_on(clean, [GPU_A]) == before
    forced = gpuisolate("evacuate", GPU_A, "--delete-emptydir-data", "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"pod {namespace}/bare gone" in forced.stderr
    assert clean.kubectl("get", "pod", "-n", namespace, "bare", check=False).returncode != 0


def test_an_emptydir_pod_is_refused_without_delete_emptydir_data(gpuisolate, clean):
    before = uids_on(clean, [GPU_A])
    result = gpuisolate("evacuate", GPU_A, "--taint-first")
    assert result.returncode == 9, result.stderr
    assert "pod kommander/kube-prometheus-stack-grafana-" in result.stderr
    assert "has emptyDir data (use --delete-emptydir-data)" in result.stderr
    assert "evicting pod" not in result.stderr
    assert uids_on(clean, [GPU_A]) == before


def test_an_untainted_node_is_refused_in_one_line(gpuisolate, clean):
    result = gpuisolate("evacuate", GPU_A, "--delete-emptydir-data")
    assert result.returncode == 9
    assert [line for line in result.stderr.splitlines() if "refused" in line] == [
        f"node/{GPU_A} refused: it lacks the GPU taint nvidia.com/gpu=true:NoSchedule, so evicted "
        "pods could come straight back; run 'kubectl gpuisolate taint' first or pass --taint-first"]


# -- dry runs --------------------------------------------------------------------------------------
@pytest.mark.window
def test_server_dry_run_reports_the_zero_disruption_pdb_and_changes_nothing(gpuisolate, clean):
    nodes_before = {n: clean.get_json("node", n)["metadata"]["resourceVersion"] for n in GPU_NODES}
    before = uids_on(clean)
    result = gpuisolate("evacuate", "--taint-first", "--delete-emptydir-data", "--dry-run=server")
    assert result.returncode == 10, result.stderr
    assert "tainted (server dry run)" in result.stdout
    row = [line for line in result.stdout.splitlines() if "nai-system/nai-db-0" in line]
    assert row and "PDB nai-system/nai-db: needs 1 healthy, has 1" in row[0]
    assert "would be evicted (server dry run)" in result.stderr
    assert uids_on(clean) == before
    assert {n: clean.get_json("node", n)["metadata"]["resourceVersion"] for n in GPU_NODES} == \
        nodes_before


def test_client_dry_run_prints_the_plan_and_changes_nothing(gpuisolate, clean):
    before = uids_on(clean)
    result = gpuisolate("evacuate", "--taint-first", "--delete-emptydir-data", "--dry-run=client",
                        "-o", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)            # with -o json the taint lines go to stderr
    by_node = {n["name"]: n for n in doc["nodes"]}
    assert "nai-system/nai-db-0" in by_node[GPU_B]["wouldMove"]
    assert any(p.startswith(f"nai-admin/{INFERENCE}") for p in by_node[GPU_A]["stayed"]["gpu-request"])
    assert uids_on(clean) == before
    assert all(not clean.get_json("node", n)["spec"].get("taints") for n in GPU_NODES)


# -- interrupt, least privilege, and drain for comparison ----------------------------------------------
def test_sigint_stops_and_prints_what_is_pending(gpuisolate, clean, namespace):
    pinned_pair(clean, namespace)
    proc = subprocess.Popen(["kubectl", "gpuisolate", "evacuate", GPU_A, "--taint-first",
                             "--delete-emptydir-data", "--timeout", "5m"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=gpuisolate.env())
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if f"blocked by PDB {namespace}/pinned" in line:
            proc.send_signal(signal.SIGINT)
            break
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(seen) + err
    assert "interrupted: no new evictions were started" in err
    assert "error: interrupted by SIGINT" in err
    assert f"PDB {namespace}/pinned: needs 1 healthy" in out.split("Not moved:")[1]


def test_the_least_privilege_role_is_enough(gpuisolate, clean):
    assert gpuisolate("taint").returncode == 0
    result = gpuisolate("--context", "sandbox-operator", "evacuate", GPU_A, "--delete-emptydir-data")
    assert result.returncode == 0, result.stderr
    left = [p for p in clean.pods_on(GPU_A) if owner_kind(p) == "ReplicaSet"]
    assert [p["metadata"]["name"] for p in left if not p["metadata"]["name"].startswith(INFERENCE)] == []


def test_kubectl_drain_on_the_same_state_replaces_the_inference_pod(gpuisolate, clean):
    """The difference the plugin exists for: drain evicts the GPU pod and leaves a cordon."""
    inference_uid = inference_pod(clean)["metadata"]["uid"]
    assert gpuisolate("taint").returncode == 0
    drained = clean.kubectl("drain", GPU_A, "--ignore-daemonsets", "--delete-emptydir-data",
                            "--force", "--timeout=120s", check=False, timeout=180)
    assert drained.returncode == 0, drained.stderr
    assert f"evicting pod nai-admin/{INFERENCE}" in drained.stdout + drained.stderr
    replaced = wait_until("a new inference pod", lambda: [
        p for p in clean.pods("-n", "nai-admin")
        if p["metadata"]["name"].startswith(INFERENCE) and p["metadata"]["uid"] != inference_uid
        and not p["metadata"].get("deletionTimestamp")])
    assert replaced[0]["metadata"]["uid"] != inference_uid
    assert clean.get_json("node", GPU_A)["spec"].get("unschedulable") is True   # cordon left behind
    # Finished Job pods are deleted by drain; evacuate keeps them (and their logs).
    assert not [p for p in clean.pods_on(GPU_A) if p["status"].get("phase") == "Succeeded"]
