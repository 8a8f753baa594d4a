"""Other owners of a GPU node: the taint keys providers and controllers own (never the GPU taint),
and the signs that someone else is draining the node (evacuate refuses it).

Pure.  Both are ordered tables (platforms.md §5.2 and §1.7); docs/design.md lists them.
"""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import UsageError

Obj = Dict[str, Any]

# (key prefix or exact key, owner): taints these controllers write and remove on their own schedule.
PROVIDER_PREFIXES: Tuple[Tuple[str, str], ...] = (
    ("karpenter.sh/", "Karpenter"),
    ("node.cluster.x-k8s.io/", "Cluster API"),
    ("node.kubernetes.io/", "Kubernetes (the node lifecycle controller and cordon)"),
)
PROVIDER_KEYS: Dict[str, str] = {
    "eks.amazonaws.com/nodegroup": "EKS managed node groups",
    "ToBeDeletedByClusterAutoscaler": "cluster-autoscaler",
    "DeletionCandidateOfClusterAutoscaler": "cluster-autoscaler",
}


def provider_owner(key: str) -> Optional[str]:
    """Who owns a taint key, when a provider or controller does; None for a key of one's own."""
    if key in PROVIDER_KEYS:
        return PROVIDER_KEYS[key]
    for prefix, owner in PROVIDER_PREFIXES:
        if key.startswith(prefix):
            return owner
    return None


def refuse_provider_key(key: str, spec: str) -> None:
    """A usage error (exit 2) when ``--gpu-taint`` names a provider's or controller's taint key."""
    owner = provider_owner(key)
    if owner is not None:
        raise UsageError(f"invalid GPU taint {spec!r}: the key {key} belongs to {owner}, which sets and "
                         "removes it itself; use a key of your own, e.g. nvidia.com/gpu")


# -- someone else's maintenance (evacuate refuses the node) ---------------------------------------
UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_DONE = "upgrade-done"


def _taints(node: Obj) -> Sequence[Obj]:
    return (node.get("spec") or {}).get("taints") or ()


def _has_taint(node: Obj, key: str, value: Optional[str] = None, effect: Optional[str] = None) -> bool:
    return any(t.get("key") == key and (value is None or (t.get("value") or "") == value)
               and (effect is None or t.get("effect") == effect) for t in _taints(node))


def karpenter_disruption(node: Obj) -> Optional[str]:
    if _has_taint(node, "karpenter.sh/disrupted"):
        return "Karpenter is disrupting it (taint karpenter.sh/disrupted)"
    return None


def eks_nodegroup_update(node: Obj) -> Optional[str]:
    if _has_taint(node, "eks.amazonaws.com/nodegroup", "unschedulable", "NoSchedule"):
        return ("an EKS managed node group update is replacing it "
                "(taint eks.amazonaws.com/nodegroup=unschedulable:NoSchedule)")
    return None


def gpu_driver_upgrade(node: Obj) -> Optional[str]:
    labels = (node.get("metadata") or {}).get("labels") or {}
    state = labels.get(UPGRADE_STATE_LABEL)
    if state is not None and state != UPGRADE_DONE:
        return f"the GPU Operator is upgrading its driver ({UPGRADE_STATE_LABEL}={state})"
    return None


def cluster_autoscaler_scale_down(node: Obj) -> Optional[str]:
    if _has_taint(node, "ToBeDeletedByClusterAutoscaler"):
        return "cluster-autoscaler is scaling it down (taint ToBeDeletedByClusterAutoscaler)"
    return None


def being_deleted(node: Obj) -> Optional[str]:
    stamp = (node.get("metadata") or {}).get("deletionTimestamp")
    if stamp:
        return f"it is being deleted (deletionTimestamp {stamp})"
    return None


MaintenanceRule = Callable[[Obj], Optional[str]]
MAINTENANCE_RULES: Tuple[MaintenanceRule, ...] = (
    karpenter_disruption, eks_nodegroup_update, gpu_driver_upgrade, cluster_autoscaler_scale_down,
    being_deleted)


def maintenance(node: Obj) -> List[str]:
    """Who is draining the node, one sentence per sign (empty when nobody is)."""
    return [found for found in (rule(node) for rule in MAINTENANCE_RULES) if found]
