"""evacuate's audit trail against the seed sandbox: after a real `evacuate --taint-first`, the
Kubernetes Events that `kubectl get events --field-selector involvedObject.uid=UID` and
`kubectl describe pod` show on a pod it evicted, on nai-db-0 (whose PDB allows no disruption)
and on the inference pod it leaves in place; none on DaemonSet or finished pods, and none
from the dry runs before it."""

from sandbox_helpers import GPU_A, GPU_B, GPU_NODES, owner_kind

COMPONENT = "kubectl-gpuisolate"
TAINT = "nvidia.com/gpu=true:NoSchedule"
INFERENCE = "llama32-iep-predictor"


def audit_events(sandbox, pod, older=frozenset()):
    """The events evacuate wrote on the pod (by its UID), leaving out the ``older`` ones."""
    namespace, uid = pod["metadata"]["namespace"], pod["metadata"]["uid"]
    items = sandbox.get_json("events", "-n", namespace, "--field-selector",
                             f"involvedObject.uid={uid}")["items"]
    return [e for e in items if (e.get("source") or {}).get("component") == COMPONENT
            and e["metadata"]["uid"] not in older]


def every_audit_event(sandbox):
    return {e["metadata"]["uid"] for e in sandbox.get_json("events", "-A")["items"]
            if (e.get("source") or {}).get("component") == COMPONENT}


def only(events, reason):
    found = [e for e in events if e["reason"] == reason]
    assert len(found) == 1, [(e["reason"], e["message"]) for e in events]
    return found[0]


def test_a_run_leaves_an_event_on_each_pod_it_evicted_was_refused_or_left(gpuisolate, clean):
    pods = {p["metadata"]["uid"]: p for n in GPU_NODES for p in clean.pods_on(n)}
    older = every_audit_event(clean)
    for dry_run in ("client", "server"):
        result = gpuisolate("evacuate", "--taint-first", "--delete-emptydir-data", f"--dry-run={dry_run}")
        assert result.returncode in (0, 10), result.stderr
    assert every_audit_event(clean) == older                  # dry runs write no events

    result = gpuisolate("evacuate", "--taint-first", "--delete-emptydir-data", "--timeout", "2m")
    assert result.returncode == 10, result.stderr             # nai-db's PDB never allows
    assert "Kubernetes event" not in result.stderr, result.stderr
    # The command waited for its events: they are there as soon as it ends.
    by_name = {p["metadata"]["name"]: p for p in pods.values()}
    web = next(p for p in pods.values() if p["spec"]["nodeName"] == GPU_A
               and p["metadata"]["name"].startswith("kube-prometheus-stack-operator-"))
    evicted = only(audit_events(clean, web, older), "GpuIsolateEvicted")
    assert evicted["type"] == "Normal" and evicted["count"] == 1
    assert evicted["message"] == (f"Evicted from GPU node {GPU_A} by kubectl gpuisolate evacuate: "
                                  f"does not tolerate {TAINT}")
    assert evicted["involvedObject"]["kind"] == "Pod"
    assert evicted["involvedObject"]["name"] == web["metadata"]["name"]
    assert evicted["reportingComponent"] == COMPONENT

    db = by_name["nai-db-0"]
    assert db["spec"]["nodeName"] == GPU_B
    blocked = only(audit_events(clean, db, older), "GpuIsolateEvictionBlocked")
    assert blocked["type"] == "Warning"
    assert blocked["message"].startswith(
        f"Cannot evict from GPU node {GPU_B} as it would violate a PodDisruptionBudget: PDB "
        "nai-system/nai-db: needs 1 healthy, has 1; it can never allow an eviction")
    assert [e["reason"] for e in audit_events(clean, db, older)] == ["GpuIsolateEvictionBlocked"]

    llama = next(p for p in pods.values() if p["metadata"]["name"].startswith(INFERENCE))
    left = only(audit_events(clean, llama, older), "GpuIsolateLeftInPlace")
    assert left["type"] == "Normal"
    assert left["message"] == (f"Not evicted from GPU node {GPU_A} by kubectl gpuisolate evacuate: "
                               "uses nvidia.com/gpu")
    described = clean.kubectl("describe", "pod", "-n", "nai-admin", llama["metadata"]["name"]).stdout
    assert "GpuIsolateLeftInPlace" in described and COMPONENT in described

    quiet = [p for p in pods.values()
             if owner_kind(p) == "DaemonSet" or p["status"].get("phase") == "Succeeded"]
    assert quiet and all(audit_events(clean, p, older) == [] for p in quiet)
    # Every pod it evicted has its one event: every pod gone from the GPU nodes (finished CronJob
    # pods are cleaned up by their controller, not evicted); a pod whose PDB held it back for a
    # while (one eviction at a time, its sibling's replacement not Ready yet) also has that one.
    still = {p["metadata"]["uid"] for n in GPU_NODES for p in clean.pods_on(n)}
    gone = [p for uid, p in pods.items() if uid not in still and p not in quiet]
    reasons = {p["metadata"]["name"]: sorted(e["reason"] for e in audit_events(clean, p, older))
               for p in gone}
    assert len(gone) > 10 and set(map(tuple, reasons.values())) <= {
        ("GpuIsolateEvicted",), ("GpuIsolateEvicted", "GpuIsolateEvictionBlocked")}, reasons
