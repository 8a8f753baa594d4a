"""Plain dicts shaped as the API server returns them (no client model objects)."""

GPU_A = "nkpnai-gpupool-1-z9mz6-pl9k2-4n5fm"
GPU_B = "nkpnai-gpupool-1-z9mz6-pl9k2-9xdn9"

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
GPU_TAINT_PRESENT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
TOLERATE_ALL = [{"operator": "Exists"}]
# What DefaultTolerationSeconds adds to every pod.
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
]
# The seed's llama32-iep-predictor as the API returns it.
INFERENCE_TOLERATIONS = [GPU_TOLERATION] + DEFAULT_TOLERATIONS


def node(name=GPU_A, *, labels=None, taints=None, capacity=None, unschedulable=False):
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": dict(labels or {}), "resourceVersion": "1"},
           "spec": {}, "status": {"capacity": dict(capacity or {"cpu": "48", "pods": "110"})}}
    if taints is not None:
        obj["spec"]["taints"] = [dict(t) for t in taints]
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    return obj


def gpu_node(name=GPU_A, *, gpus=2, taints=None, labels=None):
    all_labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": str(gpus)}
    all_labels.update(labels or {})
    return node(name, labels=all_labels, taints=taints,
                capacity={"cpu": "48", "memory": "384Gi", "nvidia.com/gpu": str(gpus)})


def owner(kind="ReplicaSet", name="web-5d4f8", api_version="apps/v1", controller=True):
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}",
            "controller": controller, "blockOwnerDeletion": True}


def pod(name="web-5d4f8-abcde", namespace="default", *, owner_ref="default", tolerations=None,
        labels=None, annotations=None, volumes=None, phase="Running", deleting=False,
        requests=None, limits=None, init_requests=None, claims=None, node_name=GPU_A,
        node_selector=None, affinity=None):
    """A pod; ``owner_ref`` "default" means a ReplicaSet controller, None a bare pod."""
    if owner_ref == "default":
        owner_ref = owner()
    meta = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
            "labels": dict(labels or {})}
    if owner_ref:
        meta["ownerReferences"] = [owner_ref]
    if annotations:
        meta["annotations"] = dict(annotations)
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
        meta["deletionGracePeriodSeconds"] = 30
    container = {"name": "main", "image": "busybox"}
    resources = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    if resources:
        container["resources"] = resources
    spec = {"nodeName": node_name, "containers": [container],
            "tolerations": list(DEFAULT_TOLERATIONS if tolerations is None else tolerations)}
    if init_requests:
        spec["initContainers"] = [{"name": "init", "image": "busybox",
                                   "resources": {"requests": dict(init_requests)}}]
    if volumes:
        spec["volumes"] = list(volumes)
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": list(affinity)}}}
    if claims:
        spec["resourceClaims"] = [{"name": c, "resourceClaimName": f"{c}-claim"} for c in claims]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": phase}}


def pdb(name, namespace="default", *, selector=None, min_available=None, max_unavailable=None,
        allowed=1, desired=1, healthy=2, expected=2):
    spec = {}
    if selector is not None:
        spec["selector"] = selector
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec,
            "status": {"disruptionsAllowed": allowed, "desiredHealthy": desired,
                       "currentHealthy": healthy, "expectedPods": expected}}


UNSCHEDULABLE = "0/5 nodes are available: 2 node(s) had untolerated taint {nvidia.com/gpu: true}, " \
                "3 Insufficient cpu. preemption: 0/5 nodes are available: 5 No preemption victims found."


def unschedulable_replacement(name, namespace="default", *, owner_ref="default", message=UNSCHEDULABLE,
                              requests=None):
    """A Pending pod bound to no node that the scheduler marked Unschedulable (a replacement)."""
    found = pod(name, namespace, owner_ref=owner_ref, node_name=None, phase="Pending",
                requests=requests)
    del found["spec"]["nodeName"]
    found["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                      "reason": "Unschedulable", "message": message}]
    return found
