"""GPU detection: which nodes are GPU nodes (and by which signal) and which pods use accelerators.

Pure functions over the API's node and pod dicts.  ``NODE_RULES`` is the ordered table of the
default GPU-node detection (docs/design.md "GPU nodes" lists it; a test checks): the first rule
that speaks gives the node's ``NodeSignal``.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

Obj = Dict[str, Any]      # an API object as the server's JSON decodes

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
NVIDIA_GPU = "nvidia.com/gpu"
DEFAULT_SELECTION = "the GPU-node rules (docs/design.md)"

# Device-plugin resource names of accelerators (platforms.md §1, §3): any NVIDIA name (gpu,
# gpu.shared, mig-*, vGPU and custom names), AMD, Intel, Habana, AWS Neuron, Google TPU.
# The guard (core/guard.py) writes the same two tables into its admission policy.
ACCELERATOR_RESOURCES = ("google.com/tpu",)
ACCELERATOR_PREFIXES = ("nvidia.com/", "amd.com/", "gpu.intel.com/", "habana.ai/", "aws.amazon.com/neuron")


def is_gpu_resource(name: str) -> bool:
    return name in ACCELERATOR_RESOURCES or name.startswith(ACCELERATOR_PREFIXES)


def _quantity(value: object) -> int:
    """Extended resources are integers; anything else counts as zero."""
    try:
        return int(str(value))
    except ValueError:
        return 0


def _labels(node: Obj) -> Dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def gpu_capacity(node: Obj) -> Dict[str, int]:
    """``{resource: count}`` of the accelerator resources a node reports (count > 0)."""
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
    return _quantity(_labels(node).get("nvidia.com/gpu.count", "0"))


def has_gpu_label(node: Obj) -> bool:
    return _labels(node).get(GPU_PRESENT_LABEL) == "true"


@dataclass(frozen=True)
class NodeSignal:
    """Why a node is (or, with ``gpu`` False, is not) a GPU node: a stable code and a sentence."""
    code: str
    message: str
    gpu: bool = True


NONE = NodeSignal("none", "no GPU signal; selected by -l/--selector or by name", gpu=False)


# -- the rules, in order (docs/design.md "GPU nodes" lists them; a test checks) ------------------
def gpu_operator_label(node: Obj) -> Optional[NodeSignal]:
    value = _labels(node).get(GPU_PRESENT_LABEL)
    if value == "true":
        return NodeSignal("gpu-operator-label", f"labelled {GPU_PRESENT_LABEL}=true (GPU Operator)")
    if value == "false":   # the operator writes false, not nothing, when the GPUs are gone
        return NodeSignal("gpu-operator-gone", f"labelled {GPU_PRESENT_LABEL}=false: its GPUs are gone",
                          gpu=False)
    return None


def accelerator_capacity(node: Obj) -> Optional[NodeSignal]:
    capacity = gpu_capacity(node)
    if capacity:
        what = ", ".join(f"{name}={count}" for name, count in sorted(capacity.items()))
        return NodeSignal("accelerator-capacity", f"has accelerator capacity {what}")
    return None


@dataclass(frozen=True)
class NodeLabel:
    """A label that marks GPU nodes: any value (``value`` ""), that value, or a count > 0.  The
    label rules carry theirs as ``rule.labels``; the guard names GPU nodes by them."""
    key: str
    value: str = ""
    count: bool = False


def _label_rule(code: str, key: str, platform: str, *, value: str = "",
                count: bool = False) -> Callable[[Obj], Optional[NodeSignal]]:
    """A rule on one label: present (any value), equal to ``value``, or a count > 0."""
    def rule(node: Obj) -> Optional[NodeSignal]:
        found = _labels(node).get(key)
        if found is None or (value and found != value) or (count and _quantity(found) <= 0):
            return None
        return NodeSignal(code, f"labelled {key}={found} ({platform})")
    rule.__name__ = code.replace("-", "_")
    rule.labels = (NodeLabel(key, value, count),)        # type: ignore[attr-defined]
    return rule


gke_accelerator_label = _label_rule("gke-accelerator-label", "cloud.google.com/gke-accelerator", "GKE")
aks_accelerator_label = _label_rule("aks-accelerator-label", "kubernetes.azure.com/accelerator", "AKS")
aks_legacy_accelerator_label = _label_rule("aks-legacy-accelerator-label", "accelerator", "AKS, legacy",
                                           value="nvidia")
karpenter_gpu_count = _label_rule("karpenter-gpu-count", "karpenter.k8s.aws/instance-gpu-count",
                                  "Karpenter", count=True)
eks_auto_gpu_count = _label_rule("eks-auto-gpu-count", "eks.amazonaws.com/instance-gpu-count",
                                 "EKS Auto Mode", count=True)
aks_nap_gpu_count = _label_rule("aks-nap-gpu-count", "karpenter.azure.com/sku-gpu-count",
                                "AKS node auto-provisioning", count=True)
NFD_PCI_LABELS = tuple(f"feature.node.kubernetes.io/{pci}.present"
                       for pci in ("pci-10de", "pci-0302_10de", "pci-0300_10de"))


def nfd_pci_label(node: Obj) -> Optional[NodeSignal]:
    labels = _labels(node)
    for key in NFD_PCI_LABELS:
        if labels.get(key) == "true":
            return NodeSignal("nfd-pci-label", f"labelled {key}=true (NFD: an NVIDIA PCI device)")
    return None


gpu_operator_label.labels = (NodeLabel(GPU_PRESENT_LABEL, "true"),)          # type: ignore[attr-defined]
nfd_pci_label.labels = tuple(NodeLabel(key, "true") for key in NFD_PCI_LABELS)  # type: ignore[attr-defined]


NodeRule = Callable[[Obj], Optional[NodeSignal]]
NODE_RULES: Tuple[NodeRule, ...] = (
    gpu_operator_label, accelerator_capacity, gke_accelerator_label, aks_accelerator_label,
    aks_legacy_accelerator_label, karpenter_gpu_count, eks_auto_gpu_count, aks_nap_gpu_count,
    nfd_pci_label)


def node_labels() -> Tuple[NodeLabel, ...]:
    """Every label the rules read (accelerator capacity is not a label)."""
    return tuple(label for rule in NODE_RULES for label in getattr(rule, "labels", ()))


def node_signal(node: Obj) -> NodeSignal:
    """The first rule's signal, or ``NONE`` when no rule speaks."""
    for rule in NODE_RULES:
        found = rule(node)
        if found is not None:
            return found
    return NONE


def is_gpu_node(node: Obj) -> bool:
    return node_signal(node).gpu


def gpu_nodes(nodes: List[Obj]) -> List[Obj]:
    """The nodes the rules call GPU nodes, in the given order."""
    return [n for n in nodes if is_gpu_node(n)]


def unselected_gpu_nodes(nodes: List[Obj], selected: List[Obj]) -> List[Obj]:
    """Nodes with accelerator capacity that are not among ``selected`` (by name)."""
    names = {n["metadata"]["name"] for n in selected}
    return [n for n in nodes if gpu_capacity(n) and n["metadata"]["name"] not in names]


# -- pods --------------------------------------------------------------------------------------
def _containers(pod: Obj) -> List[Obj]:
    spec = pod.get("spec") or {}
    return (spec.get("containers") or []) + (spec.get("initContainers") or [])


def pod_gpu_resources(pod: Obj) -> List[str]:
    """The accelerator resource names a pod requests or limits, in any container (init and
    sidecar ones included)."""
    names = set()
    for container in _containers(pod):
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            for name, value in (resources.get(section) or {}).items():
                if is_gpu_resource(name) and _quantity(value) > 0:
                    names.add(name)
    return sorted(names)


def is_shared_resource(name: str) -> bool:
    """Time-slicing/MPS names (renameByDefault): nvidia.com/gpu.shared, nvidia.com/mig-*.shared."""
    return name.startswith("nvidia.com/") and name.endswith(".shared")


def is_mig_resource(name: str) -> bool:
    return name.startswith("nvidia.com/mig-")


FRACTION_ANNOTATIONS = ("gpu-fraction", "gpu-memory")


def pod_gpu_fraction(pod: Obj) -> List[str]:
    """``key=value`` of the KAI / Run:ai GPU-sharing annotations the pod carries."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return [f"{key}={annotations[key]}" for key in FRACTION_ANNOTATIONS if annotations.get(key)]


def pod_resource_claims(pod: Obj) -> List[str]:
    return [c.get("name", "") for c in (pod.get("spec") or {}).get("resourceClaims") or []]
