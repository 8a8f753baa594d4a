"""The landing check against the seed sandbox: a pod whose replacement could land nowhere outside the
run stays where it is (same UID) and is named with its reason; a pod whose own placement asks for GPU
nodes stays as asks-for-gpu; a plain pod still moves, and no replacement ends up Pending for lack of a
node. Judged by cluster state (UIDs, nodes, PodScheduled), not only by the report."""
import json
import os
import sys

from plugin import REPO
from sandbox_helpers import ALL_NODES, CPU_WORKERS, GPU_A, GPU_B, GPU_NODES, owner_kind, wait_until

sys.path.insert(0, os.path.join(REPO, "tests", "sandbox"))
from sandboxctl import seed as scenario  # noqa: E402  (the seed's rook-ceph shapes)

ROOK = scenario.ROOK_NS
ZONE = "topology.kubernetes.io/zone"


def apply(sandbox, *objects):
    sandbox.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                           "items": list(objects)}))


def live(sandbox, *args):
    return [p for p in sandbox.pods(*args) if not p["metadata"].get("deletionTimestamp")]


def by_app(pods):
    out = {}
    for p in pods:
        out.setdefault(p["metadata"].get("labels", {}).get("app.kubernetes.io/name")
                       or p["metadata"].get("labels", {}).get("app"), []).append(p)
    return out


def unschedulable(pod):
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False"
               and c.get("reason") == "Unschedulable" for c in pod["status"].get("conditions") or [])


def settled(pod):
    """Running, finished, or given up on by the scheduler: nothing more will change by waiting."""
    return pod["status"].get("phase") in ("Running", "Succeeded", "Failed") or unschedulable(pod)


def new_pods_settled(sandbox, before):
    """Every pod created since ``before`` (a set of UIDs), once each has settled."""
    def check():
        new = [p for p in live(sandbox, "-A") if p["metadata"]["uid"] not in before]
        return all(settled(p) for p in new) and (new or [None])
    return [p for p in wait_until("replacements to settle", check, timeout=180) if p]


# -- the seed's rook-ceph pods -----------------------------------------------------------------------
def test_evacuate_leaves_the_seeds_rook_ceph_pods_that_cannot_land_and_moves_the_rgw(gpuisolate, clean):
    # nai-db's PDB never allows an eviction with one replica; with two, only landing decides what stays.
    clean.kubectl("scale", "statefulset", "-n", "nai-system", "nai-db", "--replicas=2")
    wait_until("nai-db PDB to allow 1", lambda: clean.get_json(
        "pdb", "-n", "nai-system", "nai-db")["status"].get("disruptionsAllowed") == 1)
    rook = by_app(live(clean, "-n", ROOK))
    stays = {name: rook[name][0] for name in scenario.ROOK_ON_GPU_B}
    assert all(len(rook[name]) == 1 and p["spec"]["nodeName"] == GPU_B for name, p in stays.items())
    rgw = rook[scenario.ROOK_MOVES][0]
    assert rgw["spec"]["nodeName"] == GPU_B
    before = {p["metadata"]["uid"] for p in live(clean, "-A")}

    result = gpuisolate("evacuate", "--taint-first", "--delete-emptydir-data", "--timeout", "3m",
                        "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr       # nowhere-to-land is no failure
    doc = json.loads(result.stdout)
    node_b = next(n for n in doc["nodes"] if n["name"] == GPU_B)
    named = {item["pod"]: item["reason"] for item in node_b["nowhereToLand"]}
    for name, pod in stays.items():
        ref = f"{ROOK}/{pod['metadata']['name']}"
        if scenario.ROOK_ON_GPU_B[name] == "nodeSelector":
            assert named.pop(ref) == f"nowhere to land: nodeSelector kubernetes.io/hostname={GPU_B}", ref
        else:
            assert named.pop(ref) == f"nowhere to land: local PV {scenario.OSD_VOLUME} on this node", ref
        assert f"evicting pod {ref}" not in result.stderr
    assert named == {}
    assert f"{ROOK}/{rgw['metadata']['name']}" in node_b["moved"]
    assert all(n["nowhereToLand"] == [] for n in doc["nodes"] if n["name"] != GPU_B)

    # The same pods, same UIDs, on the same node.
    now = {p["metadata"]["uid"]: p for p in live(clean, "-n", ROOK)}
    for pod in stays.values():
        assert now[pod["metadata"]["uid"]]["spec"]["nodeName"] == GPU_B, pod["metadata"]["name"]
    assert rgw["metadata"]["uid"] not in now
    # Every replacement of this run runs elsewhere; none is Pending for lack of a node.
    new = new_pods_settled(clean, before)
    assert [p["metadata"]["name"] for p in new if unschedulable(p)] == []
    moved = [p for p in new if by_app([p]).keys() == {scenario.ROOK_MOVES}]
    assert len(moved) == 1 and moved[0]["spec"]["nodeName"] in CPU_WORKERS
    assert all(p["status"]["phase"] == "Running" and p["spec"]["nodeName"] not in GPU_NODES
               for p in new if owner_kind(p) != "Job")


# -- four Deployments on a GPU node, one for each reason to stay, and a plain one --------------------
def deployment(name, namespace, *, selector=None, affinity=None, claim=None):
    labels = {"app": name}
    spec = {"containers": [{"name": "main", "image": "busybox",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
            "terminationGracePeriodSeconds": 0}
    if selector:
        spec["nodeSelector"] = selector
    if affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity}}
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def terms(key, *values):
    expression = {"key": key, "operator": "In", "values": list(values)}
    return {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}


def volume_pair(namespace, name, affinity, local):
    source = {"local": {"path": "/mnt/disk"}} if local else {"hostPath": {"path": f"/mnt/{name}"}}
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{namespace}-{name}"},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                   "persistentVolumeReclaimPolicy": "Retain",
                   "claimRef": {"namespace": namespace, "name": name},
                   "nodeAffinity": {"required": affinity}, **source}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                    "volumeName": f"{namespace}-{name}",
                    "resources": {"requests": {"storage": "1Gi"}}}}
    return pv, pvc


def four_on_gpu_a(sandbox, namespace):
    """The four Deployments of issue #13 and a plain one, Running on GPU node A; GPU A alone in zone a.

    Placed as the loader places the seed's pods: every other node cordoned while they schedule."""
    for name in ALL_NODES:
        sandbox.kubectl("label", "node", name, "--overwrite", f"{ZONE}={'a' if name == GPU_A else 'b'}")
    local_pv, local_pvc = volume_pair(namespace, "local-data", terms("kubernetes.io/hostname", GPU_A), True)
    zonal_pv, zonal_pvc = volume_pair(namespace, "zonal-data", terms(ZONE, "a"), False)
    apply(sandbox, local_pv, zonal_pv, local_pvc, zonal_pvc)
    wait_until("the claims to bind", lambda: all(
        sandbox.get_json("pvc", "-n", namespace, c)["status"].get("phase") == "Bound"
        for c in ("local-data", "zonal-data")))
    objects = [deployment("pinned", namespace, selector={"kubernetes.io/hostname": GPU_A}),
               deployment("gpu-affine", namespace, affinity=terms("nvidia.com/gpu.present", "true")),
               deployment("local-pv", namespace, claim="local-data"),
               deployment("zonal-pv", namespace, claim="zonal-data"),
               deployment("plain", namespace)]
    for name in ALL_NODES:
        if name != GPU_A:
            sandbox.kubectl("cordon", name)
    try:
        apply(sandbox, *objects)
        pods = wait_until("the five pods Running on GPU A", lambda: (lambda ps: len(ps) == 5 and all(
            p["status"].get("phase") == "Running" and p["spec"].get("nodeName") == GPU_A for p in ps) and ps)(
            live(sandbox, "-n", namespace)))
    finally:
        for name in ALL_NODES:
            sandbox.kubectl("uncordon", name)
    return {p["metadata"]["labels"]["app"]: p for p in pods}, [local_pv, zonal_pv]


def status_rows(gpuisolate, namespace):
    result = gpuisolate("status", GPU_A, "-o", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    rows = {p["name"].rsplit("-", 2)[0]: p for p in doc["nodes"][0]["pods"] if p["namespace"] == namespace}
    return rows, doc


def test_pinned_gpu_affine_local_and_zonal_pods_stay_and_a_plain_one_moves(gpuisolate, clean, namespace):
    pods, volumes = four_on_gpu_a(clean, namespace)
    try:
        rows, doc = status_rows(gpuisolate, namespace)
        zonal_pv = f"{namespace}-zonal-data"
        assert {k: (r["verdict"], r["reason"], r["message"]) for k, r in rows.items()} == {
            "pinned": ("stay", "nowhere-to-land",
                       f"nowhere to land: nodeSelector kubernetes.io/hostname={GPU_A}"),
            "gpu-affine": ("stay", "asks-for-gpu", rows["gpu-affine"]["message"]),
            "local-pv": ("stay", "nowhere-to-land",
                         f"nowhere to land: local PV {namespace}-local-data on this node"),
            "zonal-pv": ("stay", "nowhere-to-land",
                         f"nowhere to land: PV {zonal_pv} in zone a; no schedulable non-GPU node there"),
            "plain": ("move", "not-tolerated", "does not tolerate nvidia.com/gpu=true:NoSchedule")}
        assert rows["gpu-affine"]["message"].startswith("asks for GPU nodes (")
        assert "nvidia.com/gpu.present" in rows["gpu-affine"]["message"]
        gpu_warning = (f"pod {namespace}/{pods['gpu-affine']['metadata']['name']} asks for GPU nodes "
                       f"({rows['gpu-affine']['message'][len('asks for GPU nodes ('):-1]}) but does not "
                       "tolerate nvidia.com/gpu=true:NoSchedule; after a restart it could not be scheduled "
                       "on this node")
        assert gpu_warning in doc["warnings"]
        assert doc["nodes"][0]["summary"]["nowhereToLand"] == 3   # the seed has none on GPU A
        text = gpuisolate("status", GPU_A)
        for name in ("pinned", "local-pv", "zonal-pv", "gpu-affine"):
            row = next(line for line in text.stdout.splitlines() if pods[name]["metadata"]["name"] in line)
            assert " stays " in row and rows[name]["reason"] in row, row
        assert gpu_warning in text.stderr

        assert gpuisolate("taint").returncode == 0     # GPU B too: the plain pod's replacement goes to a CPU
        result = gpuisolate("evacuate", GPU_A, "--taint-first", "--delete-emptydir-data", "--timeout", "2m")
        assert result.returncode == 0, result.stdout + result.stderr
        summary = result.stdout.split("Left in place, nowhere to land (")[1]
        for name in ("pinned", "local-pv", "zonal-pv"):
            ref = f"{namespace}/{pods[name]['metadata']['name']}"
            assert ref in summary and rows[name]["message"] in summary, name
            assert f"evicting pod {ref}" not in result.stderr
        assert f"evicting pod {namespace}/{pods['gpu-affine']['metadata']['name']}" not in result.stderr
        assert gpu_warning in result.stderr
        now = {p["metadata"]["labels"]["app"]: p for p in wait_until("the plain pod's replacement", lambda: (
            lambda ps: len(ps) == 5 and all(p["status"].get("phase") == "Running" for p in ps) and ps)(
            live(clean, "-n", namespace)))}
        for name in ("pinned", "gpu-affine", "local-pv", "zonal-pv"):
            assert now[name]["metadata"]["uid"] == pods[name]["metadata"]["uid"], name
            assert now[name]["spec"]["nodeName"] == GPU_A
        assert now["plain"]["metadata"]["uid"] != pods["plain"]["metadata"]["uid"]
        assert now["plain"]["spec"]["nodeName"] in CPU_WORKERS

        # Only the nowhere-to-land pods are misplaced now: --exit-code says 1, and 0 once they are gone.
        assert gpuisolate("status", GPU_A, "--exit-code").returncode == 1
        for name in ("pinned", "local-pv", "zonal-pv"):
            clean.kubectl("scale", "deployment", "-n", namespace, name, "--replicas=0")
        wait_until("the three to be gone", lambda: len(live(clean, "-n", namespace)) == 2)
        gone = gpuisolate("status", GPU_A, "--exit-code")
        assert gone.returncode == 0, gone.stdout + gone.stderr
    finally:
        for pv in volumes:   # cluster-scoped: the namespace's deletion releases them, not removes them
            clean.kubectl("delete", "pv", pv["metadata"]["name"], "--wait=false", "--ignore-not-found")
        for name in ALL_NODES:
            clean.kubectl("label", "node", name, f"{ZONE}-", check=False)


def replicaset(name, namespace, *, node_name=None):
    """deployment()'s object as a ReplicaSet, its template optionally bound to ``node_name``."""
    found = dict(deployment(name, namespace), kind="ReplicaSet")
    if node_name:
        found["spec"]["template"]["spec"]["nodeName"] = node_name
    return found


def test_many_controllers_templates_come_from_one_list(gpuisolate, clean, namespace):
    """More ReplicaSets than gather.LIST_OWNERS on GPU A: their templates are read with one list
    of ReplicaSets (the -v=6 log), and the one whose template sets nodeName is still found."""
    from kubectl_gpuisolate.kube.gather import LIST_OWNERS
    count = LIST_OWNERS + 1
    for name in ALL_NODES:
        if name != GPU_A:
            clean.kubectl("cordon", name)
    try:
        apply(clean, replicaset("pinned", namespace, node_name=GPU_A),
              *(replicaset(f"rs-{i:02d}", namespace) for i in range(count - 1)))
        wait_until(f"{count} pods Running on GPU A", lambda: (lambda ps: len(ps) == count and all(
            p["status"].get("phase") == "Running" and p["spec"].get("nodeName") == GPU_A for p in ps))(
            live(clean, "-n", namespace)))
    finally:
        for name in ALL_NODES:
            clean.kubectl("uncordon", name)
    result = gpuisolate("status", GPU_A, "-o", "json", "-v=6")
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {p["name"].rsplit("-", 1)[0]: p for p in json.loads(result.stdout)["nodes"][0]["pods"]
            if p["namespace"] == namespace}
    assert len(rows) == count
    assert (rows["pinned"]["reason"], rows["pinned"]["message"]) == (
        "nowhere-to-land", f"nowhere to land: nodeName {GPU_A} in its controller's pod template")
    assert all(r["reason"] == "not-tolerated" for k, r in rows.items() if k != "pinned")
    requests = [line for line in result.stderr.splitlines() if "/replicasets" in line]
    assert any('verb="GET"' in line and "/apis/apps/v1/replicasets?" in line and '"200 OK"' in line
               for line in requests), requests
    assert not any(f"/namespaces/{namespace}/replicasets/" in line for line in requests), requests
