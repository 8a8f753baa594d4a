"""Who manages a node, and so who owns its taints: the node's manager and pool, read from its
labels and annotations (docs/design.md, "Who owns the taint").

A taint written with the Kubernetes API lives on the Node object only; every manager here
replaces Node objects (upgrades, repair, expiry, rollouts), and some also put their own taints
back.  ``RULES`` is an ordered table, first match wins; each rule reads one platform's markers
and returns a ``Manager`` (or None).  Pure: plain dicts in, values out."""

from typing import Any, Callable, Dict, FrozenSet, Iterable, List, NamedTuple, Optional, Tuple

CAPI_MACHINE = "cluster.x-k8s.io/machine"
CAPI_OWNER_KIND = "cluster.x-k8s.io/owner-kind"
CAPI_OWNER_NAME = "cluster.x-k8s.io/owner-name"
CAPI_TAINTS_FROM_MACHINE = "cluster.x-k8s.io/taints-from-machine"
OPENSHIFT_MACHINE = "machine.openshift.io/machine"
KARPENTER_POOL = "karpenter.sh/nodepool"
EKS_COMPUTE_TYPE = "eks.amazonaws.com/compute-type"
EKS_NODEGROUP = "eks.amazonaws.com/nodegroup"
GKE_POOL = "cloud.google.com/gke-nodepool"
GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"
GKE_COMPUTE_CLASS = "cloud.google.com/compute-class"
AKS_POOL = "kubernetes.azure.com/agentpool"


class Manager(NamedTuple):
    kind: str               # e.g. "Cluster API MachineDeployment", "Karpenter NodePool"
    pool: str               # the pool's name as its manager knows it
    where: str              # where a taint for the pool belongs: the object, the field, the command
    replaced: str           # what gets replaced: "machines" or "nodes"
    reverts: str            # what puts a kubectl change back ("" when nothing does)
    owned_keys: FrozenSet[str] = frozenset()   # taint keys the markers prove a controller forces back

    @property
    def survives_replacement(self) -> bool:
        """Whether a taint written on the Node object survives a replacement: never, for the
        managers here (the new Node is built from the pool's template)."""
        return False


Labels = Dict[str, str]
Node = Dict[str, Any]
Rule = Callable[[Labels, Labels], Optional[Manager]]


def _trim_suffix(name: str) -> str:
    """The parent of a generated name (``<parent>-<random>``), e.g. a MachineSet's
    MachineDeployment; the name itself when it has no suffix."""
    return name.rsplit("-", 1)[0] if "-" in name else name


def _listed_keys(text: str) -> FrozenSet[str]:
    """The taint keys in a tracking annotation: comma-separated ``key[=value][:effect]``."""
    keys = (item.strip().split(":", 1)[0].split("=", 1)[0] for item in text.split(","))
    return frozenset(k for k in keys if k)


def cluster_api(labels: Labels, annotations: Labels) -> Optional[Manager]:
    if CAPI_MACHINE not in annotations:
        return None
    owned = _listed_keys(annotations.get(CAPI_TAINTS_FROM_MACHINE, ""))
    reverts = ("Cluster API propagates this pool's taints (propagation Always) and forces their "
               "values back" if owned else "")
    kind, owner = annotations.get(CAPI_OWNER_KIND, ""), annotations.get(CAPI_OWNER_NAME, "")
    if kind == "MachineSet" and owner:
        pool = _trim_suffix(owner)
        where = (f"the bootstrap template of MachineDeployment {pool} (KubeadmConfigTemplate "
                 "spec.template.spec.joinConfiguration.nodeRegistration.taints; NKP: the node "
                 "pool's workerConfig.taints), or with Cluster API >= v1.12 and the "
                 f"MachineTaintPropagation gate, MachineDeployment {pool} spec.template.spec.taints")
        return Manager("Cluster API MachineDeployment", pool, where, "machines", reverts, owned)
    pool = owner or annotations[CAPI_MACHINE]
    kind = f"Cluster API {kind or 'Machine'}"
    where = f"the bootstrap template of {kind.split(' ', 2)[-1]} {pool} (nodeRegistration.taints)"
    return Manager(kind, pool, where, "machines", reverts, owned)


def _nodepool_where(pool: str) -> str:
    return (f"NodePool {pool} spec.template.spec.taints (kubectl edit nodepool {pool}; every "
            "node of the pool then drifts and is replaced)")


def eks_auto_mode(labels: Labels, annotations: Labels) -> Optional[Manager]:
    if labels.get(EKS_COMPUTE_TYPE) != "auto" or KARPENTER_POOL not in labels:
        return None
    pool = labels[KARPENTER_POOL]
    return Manager("EKS Auto Mode NodePool", pool, _nodepool_where(pool), "nodes", "")


def karpenter(labels: Labels, annotations: Labels) -> Optional[Manager]:
    if KARPENTER_POOL not in labels:
        return None
    pool = labels[KARPENTER_POOL]
    return Manager("Karpenter NodePool", pool, _nodepool_where(pool), "nodes", "")


def gke(labels: Labels, annotations: Labels) -> Optional[Manager]:
    if GKE_POOL not in labels:
        return None
    pool = labels[GKE_POOL]
    where = (f"the node pool: gcloud container node-pools update {pool} --cluster=CLUSTER "
             "--node-taints=TAINTS")
    return Manager("GKE node pool", pool, where, "nodes", "")


def eks_nodegroup(labels: Labels, annotations: Labels) -> Optional[Manager]:
    if EKS_NODEGROUP not in labels:
        return None
    pool = labels[EKS_NODEGROUP]
    where = (f"the node group: aws eks update-nodegroup-config --cluster-name CLUSTER "
             f"--nodegroup-name {pool} --taints ... (eksctl: managedNodeGroups[].taints)")
    return Manager("EKS managed node group", pool, where, "nodes", "")


def aks(labels: Labels, annotations: Labels) -> Optional[Manager]:
    if AKS_POOL not in labels:
        return None
    pool = labels[AKS_POOL]
    where = (f"the AKS node pool: az aks nodepool update --cluster-name CLUSTER "
             f"--resource-group GROUP --name {pool} --node-taints TAINTS")
    return Manager("AKS node pool", pool, where, "nodes",
                   "taints set through the AKS node pool API cannot be changed from Kubernetes")


def openshift(labels: Labels, annotations: Labels) -> Optional[Manager]:
    if OPENSHIFT_MACHINE not in annotations:
        return None
    machine = annotations[OPENSHIFT_MACHINE].rsplit("/", 1)[-1]
    pool = _trim_suffix(machine)    # Machine names are <MachineSet>-<random>
    where = (f"MachineSet {pool} spec.template.spec.taints "
             f"(oc edit machineset -n openshift-machine-api {pool})")
    return Manager("OpenShift MachineSet", pool, where, "machines",
                   "the machine-api nodelink controller re-adds a MachineSet taint removed by hand")


# Ordered: the most specific markers first (EKS Auto Mode nodes also carry Karpenter's label;
# Cluster API nodes may carry a cloud's labels too, and Cluster API is what replaces them).
RULES: Tuple[Rule, ...] = (cluster_api, openshift, eks_auto_mode, karpenter, gke, eks_nodegroup,
                           aks)


def _markers(node: Node) -> Tuple[Dict[str, str], Dict[str, str]]:
    metadata = node.get("metadata") or {}
    return metadata.get("labels") or {}, metadata.get("annotations") or {}


def manager_of(node: Node) -> Optional[Manager]:
    """The node's manager and pool, or None for a node nothing here manages."""
    labels, annotations = _markers(node)
    for rule in RULES:
        found = rule(labels, annotations)
        if found:
            return found
    return None


AUTOPILOT_NOTE = ("GKE Autopilot: GKE already keeps pods that request no GPU off GPU nodes; "
                  "nothing to do")


def is_autopilot(node: Node) -> bool:
    """A GKE Autopilot GPU node, by the only marker the research gives (scenario 6): the
    Autopilot ``Accelerator`` compute class on a node with a GKE accelerator."""
    labels, _ = _markers(node)
    return GKE_ACCELERATOR in labels and labels.get(GKE_COMPUTE_CLASS) == "Accelerator"


def owner_of_key(node: Node, key: str) -> Optional[Manager]:
    """The node's manager when its markers prove that it owns taint ``key`` and would revert a
    change to it; None otherwise (conservative: no proof, no owner)."""
    manager = manager_of(node)
    return manager if manager and key in manager.owned_keys else None


def pool_notes(nodes: Iterable[Node], action: str) -> List[str]:
    """One line per pool (in the order its first node comes): a taint ``action`` ("persist it
    in", "remove it from") written on these nodes is lost when they are replaced, and where it
    belongs."""
    seen, notes = set(), []
    for node in nodes:
        manager = manager_of(node)
        if manager is None or (manager.kind, manager.pool) in seen:
            continue
        seen.add((manager.kind, manager.pool))
        reverts = f"; {manager.reverts}" if manager.reverts else ""
        notes.append(f"pool {manager.pool} ({manager.kind}): a taint written here is lost when the "
                     f"{manager.replaced} are replaced; {action} {manager.where}{reverts}")
    return notes
