"""Builders for the Kubernetes objects the scenarios create (plain dicts)."""

# The nodes' kubelet version: the control plane's release (control.use_version sets it).
KUBELET_VERSION = "v1.33.5"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
TOLERATE_ALL = [{"operator": "Exists"}]
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def node(name, role, cpu, memory, gpus=0, gpu_product="NVIDIA-L40S", extra_labels=None):
    """A kwok-managed Node with realistic labels, taints and capacity."""
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
              "beta.kubernetes.io/arch": "amd64"}
    taints = []
    if role == "control-plane":
        labels["node-role.kubernetes.io/control-plane"] = ""
        labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
        taints.append(dict(CONTROL_PLANE_TAINT))
    capacity = {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": "110",
                "ephemeral-storage": "300Gi", "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    if gpus:
        labels.update({
            "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": gpu_product,
            "nvidia.com/gpu.count": str(gpus), "nvidia.com/gpu.memory": "46068",
            "nvidia.com/gpu.family": "ada-lovelace", "nvidia.com/gpu.machine": "AHV",
            "nvidia.com/cuda.driver.major": "570", "nvidia.com/gpu.deploy.device-plugin": "true",
            "nvidia.com/gpu.deploy.dcgm-exporter": "true",
            "feature.node.kubernetes.io/pci-10de.present": "true"})
        capacity["nvidia.com/gpu"] = str(gpus)
    labels.update(extra_labels or {})
    allocatable = dict(capacity, cpu=f"{int(cpu) * 1000 - 250}m", memory=f"{int(memory) * 1024 - 1024}Mi")
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": capacity, "allocatable": allocatable,
                   "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
                                "containerRuntimeVersion": "containerd://1.7.27",
                                "kernelVersion": "5.14.0-503.el9.x86_64",
                                "osImage": "Rocky Linux 9.5 (Blue Onyx)",
                                "operatingSystem": "linux", "architecture": "amd64"}},
    }


def namespace(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def container(name, image, cpu="100m", memory="128Mi", gpus=0, volume=None):
    c = {"name": name, "image": image,
         "resources": {"requests": {"cpu": cpu, "memory": memory},
                       "limits": {"memory": memory}}}
    if gpus:
        c["resources"]["limits"]["nvidia.com/gpu"] = str(gpus)
        c["resources"]["requests"]["nvidia.com/gpu"] = str(gpus)
    if volume:
        c["volumeMounts"] = [{"name": volume, "mountPath": f"/{volume}"}]
    return c


def pod_spec(image, cpu="100m", memory="128Mi", gpus=0, empty_dir=None, tolerations=None,
             node_selector=None, restart="Always", name="main"):
    spec = {"containers": [container(name, image, cpu, memory, gpus, empty_dir)],
            "restartPolicy": restart, "terminationGracePeriodSeconds": 30}
    if empty_dir:
        spec["volumes"] = [{"name": empty_dir, "emptyDir": {}}]
    if tolerations:
        spec["tolerations"] = tolerations
    if node_selector:
        spec["nodeSelector"] = node_selector
    return spec


def _meta(name, ns, labels=None):
    return {"name": name, "namespace": ns,
            "labels": {"app.kubernetes.io/name": name, **(labels or {})}}


def _template(name, spec, labels=None):
    return {"metadata": {"labels": {"app.kubernetes.io/name": name, **(labels or {})}}, "spec": spec}


def deployment(ns, name, replicas, spec):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(name, ns),
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                     "template": _template(name, spec)}}


def statefulset(ns, name, replicas, spec):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta(name, ns),
            "spec": {"replicas": replicas, "serviceName": name,
                     "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                     "template": _template(name, spec)}}


def daemonset(ns, name, spec, on_delete=False):
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta(name, ns),
          "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                   "template": _template(name, spec)}}
    if on_delete:
        ds["spec"]["updateStrategy"] = {"type": "OnDelete"}
    return ds


def job(ns, name, spec):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(name, ns),
            "spec": {"backoffLimit": 2, "completions": 1, "parallelism": 1,
                     "template": _template(name, dict(spec, restartPolicy="Never"))}}


def replicaset(ns, name, replicas, spec, labels):
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
            "spec": {"replicas": replicas, "selector": {"matchLabels": dict(labels)},
                     "template": {"metadata": {"labels": dict(labels)}, "spec": spec}}}


def pdb(ns, name, selector_name, min_available=None, max_unavailable=None):
    spec = {"selector": {"matchLabels": {"app.kubernetes.io/name": selector_name}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def with_volumes(spec, volumes):
    """spec with more volumes, each mounted in the first container at /<name>."""
    spec = dict(spec, volumes=list(spec.get("volumes") or []) + volumes)
    first = dict(spec["containers"][0])
    first["volumeMounts"] = list(first.get("volumeMounts") or []) + [
        {"name": v["name"], "mountPath": f"/{v['name']}"} for v in volumes]
    spec["containers"] = [first] + spec["containers"][1:]
    return spec


def host_affinity(key, values):
    return {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}}


def persistent_volume(name, claim_ns, claim_name, node_affinity, size="100Gi", local_path=None):
    """A PersistentVolume pre-bound to one claim (storageClassName ""), with a nodeAffinity:
    a `local` volume when local_path is given, else a CSI-less hostPath stand-in for a zonal disk."""
    source = {"local": {"path": local_path}} if local_path else {"hostPath": {"path": f"/mnt/{name}"}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                     "claimRef": {"namespace": claim_ns, "name": claim_name},
                     "nodeAffinity": node_affinity, **source}}


def persistent_volume_claim(ns, name, volume, size="100Gi"):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": volume,
                     "resources": {"requests": {"storage": size}}}}
