"""The `platforms` scenario: the seed cluster plus kwok GPU nodes shaped as each platform marks them
(platforms.md §1, §3, §5): GKE (with its own `nvidia.com/gpu=present:NoSchedule`), AKS (`sku=gpu:NoSchedule`),
Karpenter, EKS Auto Mode, an EKS managed node group (time-slicing and MIG capacity), OpenShift/NFD,
NKP/Cluster API, an Inferentia node, and two nodes in someone else's maintenance (Karpenter disruption,
a GPU Operator driver upgrade).  Pods: time-sliced, MIG mixed and single, a GPU sidecar, KAI fractional,
Neuron (all bound to their node, as device-plugin and KAI pods end up), plain Deployments that do not
tolerate the GPU taint, a DaemonSet without the GPU toleration.

The e2e tests (tests/e2e/test_platforms.py) add these same objects to the seed sandbox; ``load``
adds them to a fresh one.
"""
import time

from .procs import SandboxError

NS = "platforms"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
SKU = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}


def node(name, labels=None, taints=None, capacity=None):
    caps = {"cpu": "32", "memory": "128Gi", "pods": "110", **(capacity or {})}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"},
                         "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "sandbox.gpuisolate.dev/platforms": "true", **(labels or {})}},
            "spec": {"taints": list(taints or [])},
            "status": {"capacity": caps, "allocatable": caps}}


NODES = {
    "plat-gke": node("plat-gke", {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
                                  "cloud.google.com/gke-nodepool": "gpu-pool"},
                     [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),
    "plat-aks": node("plat-aks", {"kubernetes.azure.com/accelerator": "nvidia",
                                  "kubernetes.azure.com/agentpool": "gpunp"}, [SKU]),
    "plat-karpenter": node("plat-karpenter", {"karpenter.sh/nodepool": "gpu",
                                              "karpenter.k8s.aws/instance-gpu-count": "1"}),
    "plat-eks-auto": node("plat-eks-auto", {"eks.amazonaws.com/compute-type": "auto",
                                            "eks.amazonaws.com/instance-gpu-count": "4"}),
    "plat-nfd": node("plat-nfd", {"feature.node.kubernetes.io/pci-10de.present": "true"}),
    "plat-mng": node("plat-mng", {"eks.amazonaws.com/nodegroup": "gpu-ng"}, [],
                     {"nvidia.com/gpu": "1", "nvidia.com/gpu.shared": "8", "nvidia.com/mig-1g.5gb": "7"}),
    "plat-inf": node("plat-inf", {"karpenter.k8s.aws/instance-family": "inf2"}, [],
                     {"aws.amazon.com/neuron": "1", "aws.amazon.com/neuroncore": "2"}),
    "plat-busy": node("plat-busy", {"karpenter.k8s.aws/instance-gpu-count": "1"}, [GPU_TAINT, DISRUPTED]),
    "plat-upgrade": node("plat-upgrade", {"nvidia.com/gpu.present": "true",
                                          "nvidia.com/gpu-driver-upgrade-state": "pod-deletion-required"},
                         [GPU_TAINT], {"nvidia.com/gpu": "2"}),
}
EXPECTED_SIGNALS = {"plat-gke": "gke-accelerator-label", "plat-aks": "aks-accelerator-label",
                    "plat-karpenter": "karpenter-gpu-count", "plat-eks-auto": "eks-auto-gpu-count",
                    "plat-nfd": "nfd-pci-label", "plat-mng": "accelerator-capacity",
                    "plat-inf": "accelerator-capacity", "plat-busy": "karpenter-gpu-count",
                    "plat-upgrade": "gpu-operator-label"}


def bare(name, node_name, *, requests=None, annotations=None, init=None):
    """A pod bound to its node (as KAI's binder and reservations bind them)."""
    container = {"name": "main", "image": "busybox",
                 "resources": {"requests": {"cpu": "10m", **(requests or {})},
                               "limits": dict(requests or {})}}
    spec = {"nodeName": node_name, "containers": [container], "terminationGracePeriodSeconds": 0}
    if init:
        spec["initContainers"] = [{"name": "sidecar", "image": "busybox", "restartPolicy": "Always",
                                   "resources": {"requests": dict(init), "limits": dict(init)}}]
    meta = {"name": name, "namespace": NS, "labels": {"app": name}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


CONSUMERS = {   # name -> (node, the reason status gives)
    "time-sliced": ("plat-mng", "gpu-shared"),
    "mig-mixed": ("plat-mng", "gpu-mig"),
    "mig-single": ("plat-mng", "gpu-request"),
    "sidecar-gpu": ("plat-mng", "gpu-request"),
    "kai-fraction": ("plat-mng", "gpu-fraction"),
    "neuron": ("plat-inf", "accelerator"),
}


def consumer_pods():
    return [bare("time-sliced", "plat-mng", requests={"nvidia.com/gpu.shared": "1"}),
            bare("mig-mixed", "plat-mng", requests={"nvidia.com/mig-1g.5gb": "1"}),
            bare("mig-single", "plat-mng", requests={"nvidia.com/gpu": "1"}),
            bare("sidecar-gpu", "plat-mng", init={"nvidia.com/gpu": "1"}),
            bare("kai-fraction", "plat-mng", annotations={"gpu-fraction": "0.5"}),
            bare("neuron", "plat-inf", requests={"aws.amazon.com/neuron": "1"})]


def deployment(name, node_name):
    """An ordinary Deployment that the scheduler prefers to put on ``node_name``: preferred, not
    required, so that its replacement may land elsewhere (a pin would leave it nowhere to land)."""
    labels = {"app": name}
    prefer = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100, "preference": {"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}]}}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "affinity": prefer,
                         "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "main", "image": "busybox",
                                         "resources": {"requests": {"cpu": "10m"}}}]}}}}


def daemonset(name, node_name):
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "nodeSelector": {"kubernetes.io/hostname": node_name},
                         "containers": [{"name": "main", "image": "busybox"}]}}}}



CAPI_ANNOTATIONS = {"cluster.x-k8s.io/cluster-name": "nkp-gpu",
                    "cluster.x-k8s.io/machine": "nkp-gpu-md-0-abc12",
                    "cluster.x-k8s.io/owner-kind": "MachineSet",
                    "cluster.x-k8s.io/owner-name": "nkp-gpu-md-0"}


def nkp_node():
    """NKP / Cluster API: a Machine's node (annotations), the operator's labels, capacity."""
    n = node("plat-nkp", {"nvidia.com/gpu.present": "true",
                          "cluster.x-k8s.io/deployment-name": "nkp-gpu-md-0",
                          "feature.node.kubernetes.io/pci-0302_10de.present": "true"},
             [], {"nvidia.com/gpu": "2"})
    n["metadata"]["annotations"].update(CAPI_ANNOTATIONS)
    return n


NODES["plat-nkp"] = nkp_node()
EXPECTED_SIGNALS["plat-nkp"] = "gpu-operator-label"
WORKLOADS = ["web-mng", "web-inf", "agent"]
BUSY = ["web-busy", "web-upgrade"]


def namespace():
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}


def workloads():
    """The objects after the nodes, in creation order (namespace first)."""
    return [namespace(), *consumer_pods(), deployment("web-mng", "plat-mng"),
            deployment("web-inf", "plat-inf"), daemonset("agent", "plat-mng"),
            bare("web-busy", "plat-busy"), bare("web-upgrade", "plat-upgrade")]


def _running(kube, name):
    return [p for p in kube.list("pods", NS, labelSelector=f"app={name}")
            if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]


def load(kube, log, timeout=120):
    """Adds the platform nodes and pods to a loaded seed cluster; waits until every pod runs."""
    for obj in NODES.values():
        kube.create(obj, exist_ok=True)
    for obj in workloads():
        kube.create(obj, exist_ok=True)
    names = list(CONSUMERS) + WORKLOADS + BUSY
    t0 = time.time()
    while time.time() - t0 < timeout:
        waiting = [n for n in names if len(_running(kube, n)) != 1]
        if not waiting:
            log(f"{len(NODES)} platform nodes, {len(names)} platform pods Running")
            return
        time.sleep(1)
    raise SandboxError(f"platform pods not Running after {timeout}s: {', '.join(waiting)}")


def reset(kube, log, timeout=120):
    """Recreates the platform namespace from scratch (the seed's reset removed the nodes)."""
    kube.delete("namespaces", NS)
    t0 = time.time()
    while kube.get_or_none("namespaces", NS) is not None:
        if time.time() - t0 > timeout:
            raise SandboxError(f"namespace {NS} not deleted after {timeout}s")
        time.sleep(0.5)
    load(kube, log, timeout)
