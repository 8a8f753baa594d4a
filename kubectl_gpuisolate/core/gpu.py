"""GPU detection: which nodes are GPU nodes and which pods use GPUs.

Pure functions over the API's node and pod dicts.
"""

from typing import Any, Dict, List

Obj = Dict[str, Any]      # an API object as the server's JSON decodes

DEFAULT_NODE_SELECTOR = "nvidia.com/gpu.present=true"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"

# Device-plugin resource names of GPU-class accelerators.  Nodes are detected
# by capacity; pods by request.  MIG slices (nvidia.com/mig-*) count for pods.
_EXACT = {"nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi"}
_PREFIXES = ("gpu.intel.com/", "nvidia.com/mig-", "habana.ai/")


def is_gpu_resource(name: str) -> bool:
    return name in _EXACT or name.startswith(_PREFIXES)


def _quantity(value: object) -> int:
    """Extended resources are integers; anything else counts as zero."""
    try:
        return int(str(value))
    except ValueError:
        return 0


def gpu_capacity(node: Obj) -> Dict[str, int]:
    """``{resource: count}`` of the GPU resources a node reports (count > 0)."""
    capacity = (node.get("status") or {}).get("capacity") or {}
    found: Dict[str, int] = {}
    for name, value in capacity.items():
        if is_gpu_resource(name) and _quantity(value) > 0:
            found[name] = _quantity(value)
    return found


def gpu_count(node: Obj) -> int:
    """The node's GPU count: its GPU capacity, else the GPU operator's label."""
    capacity = gpu_capacity(node)
    if capacity:
        return sum(capacity.values())
    labels = (node.get("metadata") or {}).get("labels") or {}
    return _quantity(labels.get("nvidia.com/gpu.count", "0"))


def has_gpu_label(node: Obj) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return labels.get(GPU_PRESENT_LABEL) == "true"


def unlabelled_gpu_nodes(nodes: List[Obj]) -> List[Obj]:
    """Nodes with GPU capacity but without ``nvidia.com/gpu.present=true``."""
    return [n for n in nodes if gpu_capacity(n) and not has_gpu_label(n)]


def pod_gpu_resources(pod: Obj) -> List[str]:
    """The GPU resource names a pod requests or limits, in any container."""
    spec = pod.get("spec") or {}
    names = set()
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            for name, value in (resources.get(section) or {}).items():
                if is_gpu_resource(name) and _quantity(value) > 0:
                    names.add(name)
    return sorted(names)


def pod_resource_claims(pod: Obj) -> List[str]:
    return [c.get("name", "") for c in (pod.get("spec") or {}).get("resourceClaims") or []]
