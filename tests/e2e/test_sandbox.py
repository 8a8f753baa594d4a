"""The sandbox is a real cluster: checked with the real kubectl against the seed scenario."""
import json
import re

import pytest
from sandbox_helpers import (
    ALL_NODES,
    CONTROL_PLANE,
    CPU_WORKERS,
    GPU_A,
    GPU_B,
    GPU_NODES,
    ROOK_PINNED,
    app_name,
    owner_kind,
    wait_until,
)

EVICTION = '{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "%s", "namespace": "%s"}}'
PDB_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget"


@pytest.mark.window
def test_server_version_is_the_pinned_release(sandbox):
    """v1.33.5 (the seed's) unless the run asks for another minor (SANDBOX_K8S_VERSION)."""
    version = json.loads(sandbox.kubectl("get", "--raw", "/version").stdout)
    assert version["gitVersion"] == sandbox.release()
    assert sandbox.release().startswith(f"v{sandbox.minor}.")
    assert (version["major"], version["minor"]) == tuple(sandbox.minor.split("."))
    if sandbox.minor == "1.33":
        assert version["gitVersion"] == "v1.33.5"


@pytest.mark.window
def test_seed_nodes_ready_with_seed_labels_and_taints(seed):
    nodes = seed.get_json("nodes")["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == sorted(ALL_NODES)
    for n in nodes:
        ready = [c for c in n["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", n["metadata"]["name"]
        assert n["status"]["nodeInfo"]["kubeletVersion"] == seed.release()
    out = seed.kubectl("get", "nodes", "-o", "custom-columns=NAME:.metadata.name,GPU_PRESENT:"
                       r".metadata.labels.nvidia\.com/gpu\.present,TAINTS:.spec.taints").stdout
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in out.splitlines()[1:]}
    for name in GPU_NODES:
        assert rows[name] == ["true", "<none>"]
    for name in CPU_WORKERS:
        assert rows[name] == ["<none>", "<none>"]
    for name in CONTROL_PLANE:
        assert rows[name] == ["<none>", "[map[effect:NoSchedule key:node-role.kubernetes.io/control-plane]]"]
    gpu = seed.get_json("nodes", "-l", "nvidia.com/gpu.present=true")["items"]
    assert sorted(n["metadata"]["name"] for n in gpu) == sorted(GPU_NODES)
    for n in gpu:
        assert n["status"]["allocatable"]["nvidia.com/gpu"] == n["metadata"]["labels"]["nvidia.com/gpu.count"]


def test_pods_running_and_ordinary_pods_on_gpu_nodes(seed):
    pods = seed.pods()
    assert len(pods) > 60
    for p in pods:
        want = "Succeeded" if owner_kind(p) == "Job" else "Running"
        assert p["status"]["phase"] == want, p["metadata"]["name"]
    by_name = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
    assert by_name[("nai-system", "nai-db-0")]["spec"]["nodeName"] == GPU_B
    on_gpu = [p for p in pods if p["spec"]["nodeName"] in GPU_NODES]
    ordinary = {app_name(p) for p in on_gpu if owner_kind(p) in ("ReplicaSet", "StatefulSet")}
    assert {"nai-db", "nai-ui", "kube-prometheus-stack-grafana",
            "llama32-iep-predictor", "envoy-gateway"} <= ordinary
    assert any(owner_kind(p) == "Job" for p in on_gpu)
    on_cpu = [p for p in pods if p["spec"]["nodeName"] in CPU_WORKERS and owner_kind(p) == "ReplicaSet"]
    assert {"nai-api", "coredns"} <= {app_name(p) for p in on_cpu}


def test_inference_pod_has_seed_tolerations(seed):
    pods = seed.pods("-n", "nai-admin", "-l", "app.kubernetes.io/name=llama32-iep-predictor")
    assert len(pods) == 1 and pods[0]["spec"]["nodeName"] == GPU_A
    tol = {(t.get("key"), t.get("effect"), t.get("tolerationSeconds"))
           for t in pods[0]["spec"]["tolerations"]}
    assert tol == {("nvidia.com/gpu", "NoSchedule", None), ("node.kubernetes.io/not-ready", "NoExecute", 300),
                   ("node.kubernetes.io/unreachable", "NoExecute", 300)}
    assert pods[0]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_daemonset_placement(seed):
    def nodes_of(ns, name):
        return sorted(p["spec"]["nodeName"]
                      for p in seed.pods("-n", ns, "-l", f"app.kubernetes.io/name={name}"))
    assert nodes_of("kube-system", "cilium") == sorted(ALL_NODES)
    assert nodes_of("kommander", "nvidia-device-plugin-daemonset") == sorted(GPU_NODES)
    assert nodes_of("kommander", "kube-prometheus-stack-prometheus-node-exporter") == \
        sorted(GPU_NODES + CPU_WORKERS)


def test_operator_context_is_least_privilege(seed):
    def can(*args):
        r = seed.kubectl("auth", "can-i", *args, context="sandbox-operator", check=False)
        return r.stdout.strip() == "yes"
    assert can("patch", "nodes") and can("list", "pods", "-A") \
        and can("create", "pods", "--subresource=eviction", "-A")
    assert can("list", "poddisruptionbudgets.policy", "-A") and can("get", "daemonsets.apps", "-A")
    assert not can("delete", "pods", "-A") and not can("delete", "nodes") and not can("list", "secrets", "-A")
    r = seed.kubectl("get", "nodes", "-o", "name", context="sandbox-operator")
    assert len(r.stdout.split()) == 9
    denied = seed.kubectl("get", "secrets", "-A", context="sandbox-operator", check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr
    r = seed.kubectl("get", "nodes", "-o", "name", context="sandbox-token")
    assert len(r.stdout.split()) == 9


@pytest.mark.window
def test_eviction_under_zero_disruption_pdb_gets_429(seed):
    pdb = seed.get_json("pdb", "-n", "nai-system", "nai-db")
    assert pdb["status"]["disruptionsAllowed"] == 0
    assert pdb["status"]["observedGeneration"] == pdb["metadata"]["generation"]
    before = seed.get_json("pod", "-n", "nai-system", "nai-db-0")
    r = seed.kubectl("create", "--raw", "/api/v1/namespaces/nai-system/pods/nai-db-0/eviction", "-f", "-",
                     "-v=6", input=EVICTION % ("nai-db-0", "nai-system"), context="sandbox-operator",
                     check=False)
    assert r.returncode != 0
    assert PDB_MESSAGE in r.stderr
    # kubectl's -v=6 line is structured from 1.33 (verb="POST" url="..." status="...") and plain
    # before; /usr/bin/kubectl picks its build by the server's version, so accept both.
    url = r'https://127\.0\.0\.1:\d+/api/v1/namespaces/nai-system/pods/nai-db-0/eviction'
    assert re.search(rf'verb="POST" url="{url}" status="429 Too Many Requests"', r.stderr) or \
        re.search(rf'POST {url} 429 Too Many Requests', r.stderr), r.stderr
    assert '"code": 429' in r.stderr
    after = seed.get_json("pod", "-n", "nai-system", "nai-db-0")
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert "deletionTimestamp" not in after["metadata"]


def test_eviction_allowed_by_pdb_replaces_pod(clean):
    pods = clean.pods("-n", "nai-system", "-l", "app.kubernetes.io/name=nai-api")
    victim = pods[0]["metadata"]
    r = clean.kubectl("create", "--raw", f"/api/v1/namespaces/nai-system/pods/{victim['name']}/eviction",
                      "-f", "-", input=EVICTION % (victim["name"], "nai-system"), context="sandbox-operator")
    assert r.returncode == 0

    def replaced():
        now = clean.pods("-n", "nai-system", "-l", "app.kubernetes.io/name=nai-api")
        uids = {p["metadata"]["uid"] for p in now}
        running = [p for p in now if p["status"]["phase"] == "Running"
                   and "deletionTimestamp" not in p["metadata"]]
        return victim["uid"] not in uids and len(running) == 2
    wait_until("evicted nai-api pod to be replaced", replaced, timeout=60)


def test_drain_gpu_node_moves_pods_elsewhere(clean):
    node = GPU_A
    before = [p for p in clean.pods_on(node) if "deletionTimestamp" not in p["metadata"]]
    movable = [p for p in before if owner_kind(p) in ("ReplicaSet", "StatefulSet")]
    daemons = [p for p in before if owner_kind(p) == "DaemonSet"]
    assert len(movable) >= 8 and daemons
    try:
        r = clean.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data",
                          "--timeout=240s", timeout=300)
        assert f"node/{node} drained" in r.stdout, r.stdout + r.stderr
        assert "evicting pod nai-admin/llama32-iep-predictor-" in r.stdout + r.stderr
        old_uids = {p["metadata"]["uid"] for p in movable}

        def settled():
            pods = clean.pods()
            if old_uids & {p["metadata"]["uid"] for p in pods}:
                return False
            for gone in movable:
                ns, app = gone["metadata"]["namespace"], app_name(gone)
                mates = [p for p in pods if p["metadata"]["namespace"] == ns and app_name(p) == app]
                if not mates or any(p["status"]["phase"] != "Running"
                                    or p["spec"].get("nodeName") in (None, node)
                                    or "deletionTimestamp" in p["metadata"] for p in mates):
                    return False
            return pods
        pods = wait_until("evicted pods to be recreated on other nodes", settled, timeout=120)
        remaining = [p for p in pods if p["spec"].get("nodeName") == node]
        assert remaining and all(owner_kind(p) == "DaemonSet" for p in remaining)
        assert {p["metadata"]["uid"] for p in daemons} <= {p["metadata"]["uid"] for p in remaining}
        predictor = [p for p in pods if app_name(p) == "llama32-iep-predictor"]
        assert [p["spec"]["nodeName"] for p in predictor] == [GPU_B]  # the only other node with GPUs
        assert clean.get_json("node", node)["spec"].get("unschedulable") is True
        sts = [p for p in pods if p["metadata"]["name"] == "git-operator-git-0"]
        assert sts and sts[0]["spec"]["nodeName"] != node
    finally:
        clean.kubectl("uncordon", node, check=False)
    assert clean.get_json("node", node)["spec"].get("unschedulable") is None


def test_reset_restores_the_seed_state(sandbox):
    sandbox.kubectl("taint", "node", "-l", "nvidia.com/gpu.present=true", "nvidia.com/gpu=true:NoSchedule")
    sandbox.kubectl("label", "node", GPU_B, "gpuisolate.example/marker=1")
    sandbox.kubectl("delete", "pod", "-n", "nai-system", "nai-db-0", "--wait=false")
    sandbox.kubectl("create", "namespace", "e2e-scratch")
    sandbox.reset()
    nodes = {n["metadata"]["name"]: n for n in sandbox.get_json("nodes")["items"]}
    assert all(not nodes[n]["spec"].get("taints") for n in GPU_NODES)
    assert "gpuisolate.example/marker" not in nodes[GPU_B]["metadata"]["labels"]
    db = sandbox.get_json("pod", "-n", "nai-system", "nai-db-0")
    assert db["spec"]["nodeName"] == GPU_B and db["status"]["phase"] == "Running"
    ns = sandbox.kubectl("get", "namespace", "e2e-scratch", check=False)
    assert ns.returncode != 0 or "Terminating" in ns.stdout
    r = sandbox.reset()
    assert "unchanged" in r.stdout


def test_reset_rebuilds_only_what_a_test_changed(sandbox):
    """A test that moved one workload's pod and deleted one PDB costs a rebuild of those two:
    every other seed pod keeps its UID, the moved one is back on its node, the PDB allows again."""
    sandbox.reset()
    before = {p["metadata"]["uid"] for p in sandbox.pods()}
    sandbox.kubectl("delete", "pod", "-n", "nai-system", "nai-db-0", "--wait=false")
    sandbox.kubectl("delete", "pdb", "-n", "kommander", "thanos-query")
    r = sandbox.reset()
    assert "1 workloads and 1 PDBs changed; recreating them" in r.stdout, r.stdout
    after = {app_name(p): p for p in sandbox.pods() if p["metadata"]["uid"] not in before}
    assert set(after) == {"nai-db"}, sorted(after)
    assert after["nai-db"]["spec"]["nodeName"] == GPU_B
    assert after["nai-db"]["status"]["phase"] == "Running"
    pdb = sandbox.get_json("pdb", "-n", "kommander", "thanos-query")
    assert pdb["status"]["disruptionsAllowed"] == 1
    assert "unchanged" in sandbox.reset().stdout


def test_a_reset_leaves_no_pod_of_a_namespace_it_deleted(sandbox):
    """A reader after a reset lists every namespace's pods: the pods of a test's namespace must be
    gone when reset returns, not still terminating nor recreated by their ReplicaSet (a CI run
    saw the soak's Deployment's new Pending pod)."""
    ns = "e2e-leftover"
    sandbox.kubectl("create", "namespace", ns)
    sandbox.kubectl("create", "deployment", "left", "-n", ns, "--image=busybox", "--replicas=3")
    wait_until("the leftover pods to run", lambda: len([
        p for p in sandbox.pods("-n", ns) if p["status"].get("phase") == "Running"]) == 3)
    sandbox.reset()
    assert sandbox.pods("-n", ns) == []


def test_reset_never_adopts_a_namespace_it_is_deleting(sandbox):
    """A test namespace still terminating when reset rebuilds the workloads must not enter the
    baseline: it would survive every later reset with whatever a test left in it (a PDB that
    blocks every later evacuation)."""
    held = "e2e-held"
    sandbox.reset()
    sandbox.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": held, "finalizers": ["gpuisolate.example/hold"]}}))
    sandbox.kubectl("delete", "pod", "-n", "nai-system", "nai-db-0", "--wait=false")  # rebuild
    try:
        r = sandbox.reset()
        assert "recreating" in r.stdout + r.stderr
        assert sandbox.get_json("namespace", held)["metadata"].get("deletionTimestamp")
        baseline = json.loads((sandbox.dir / "baseline.json").read_text())
        assert held not in baseline["namespaces"]
        assert "nai-system" in baseline["namespaces"]
    finally:
        sandbox.kubectl("patch", "namespace", held, "--type=merge", "-p",
                        '{"metadata": {"finalizers": null}}', check=False)
    wait_until(f"namespace {held} to be gone",
               lambda: sandbox.kubectl("get", "namespace", held, check=False).returncode != 0)
    sandbox.kubectl("create", "namespace", held)
    sandbox.reset()
    ns = sandbox.kubectl("get", "namespace", held, check=False)
    assert ns.returncode != 0 or "Terminating" in ns.stdout


def test_the_seeds_rook_ceph_pods_are_shaped_as_rook_makes_them(sandbox):
    """Pinned by hostname (crash collector, exporter, mon), on a local PV (the OSD), free (the rgw),
    and a completed prepare Job; a reset that finds the volume gone recreates claim and volume."""
    sandbox.kubectl("delete", "deployment", "-n", "kommander", "rook-ceph-osd-1", "--wait=false")
    sandbox.kubectl("delete", "pvc", "-n", "kommander", "rook-ceph-osd-set1-data-0vnfjx", "--wait=false")
    sandbox.kubectl("delete", "pv", "local-pv-rook-osd-set1-9xdn9", "--wait=false")
    r = sandbox.reset()
    assert "recreating" in r.stdout + r.stderr
    pv = sandbox.get_json("pv", "local-pv-rook-osd-set1-9xdn9")
    assert pv["status"]["phase"] == "Bound" and pv["spec"]["local"]
    assert not pv["metadata"].get("deletionTimestamp")
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [GPU_B]}]
    pods = {app_name(p): p for p in sandbox.pods("-n", "kommander")
            if (app_name(p) or "").startswith("rook-ceph")}
    assert set(pods) == ROOK_PINNED | {"rook-ceph-rgw-dkp-object-store-a",
                                       "rook-ceph-osd-prepare-rook-ceph-osd-set1-data-0vnfjx"}
    assert all(p["spec"]["nodeName"] == GPU_B for p in pods.values())
    for name in ROOK_PINNED - {"rook-ceph-osd-1"}:
        assert pods[name]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": GPU_B}
    osd = pods["rook-ceph-osd-1"]
    assert osd["status"]["phase"] == "Running" and "nodeSelector" not in osd["spec"]
    assert [v["persistentVolumeClaim"]["claimName"] for v in osd["spec"]["volumes"]
            if "persistentVolumeClaim" in v] == ["rook-ceph-osd-set1-data-0vnfjx"]
    assert pods["rook-ceph-osd-prepare-rook-ceph-osd-set1-data-0vnfjx"]["status"]["phase"] == "Succeeded"
    assert "nodeSelector" not in pods["rook-ceph-rgw-dkp-object-store-a"]["spec"]
    assert "unchanged" in sandbox.reset().stdout
