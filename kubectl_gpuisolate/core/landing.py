"""Where a pod's replacement could land: the nodes the scheduler's filters would accept for it.

Pure.  A pod that would move is judged by its pod spec, which is what its controller's
replacement carries, through ``FILTERS``: an ordered tuple of small filters, each with the
sentence that names it when it rules out every node left (docs/design.md "Where a pod can
land" lists them; a test checks).  They are the scheduler's filters that a pod spec decides:
NodeName (the controller template's ``nodeName``), NodeAffinity (``nodeSelector`` and required
``nodeAffinity``), VolumeBinding (the bound PersistentVolumes' ``nodeAffinity``),
NodeUnschedulable and TaintToleration (NoSchedule and NoExecute).  Resources are not a filter
here: whether the moved pods fit is an advisory sum (core.resources).

The candidates are the nodes outside this run; the pod's own placement is also evaluated over
every node, so that a pod whose placement matches GPU nodes only is known to have asked for them.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from . import affinity
from .affinity import Obj, node_name
from .taints import tolerates

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")   # PreferNoSchedule only scores
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
ClaimKey = Tuple[str, str]                          # (namespace, claim name)
MISSING = "missing"                                 # a claim that does not exist


@dataclass(frozen=True)
class Cluster:
    """What the landing check reads of the cluster, read once per run.

    ``volumes`` maps each claim to its bound PersistentVolume, None while unbound, or
    ``MISSING``; None for the whole map means the claims could not be read, and then the
    volume filter is not applied (the caller says so).  ``templates`` maps a controller
    (namespace, kind, name) to its pod template's ``nodeName`` where one is set."""

    nodes: Tuple[Obj, ...]
    run: FrozenSet[str]
    gpu: FrozenSet[str]
    volumes: Optional[Mapping[ClaimKey, Any]] = field(default_factory=dict)
    templates: Mapping[Tuple[str, str, str], str] = field(default_factory=dict)
    # land()'s answers by the pod's placement (_placement_key): the pods of one controller
    # share theirs, and judging each against every node is movers x nodes filter calls
    # (13,500 x 5,000 on a cluster at Kubernetes' scalability limit).
    answers: Dict[str, "Landing"] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Pod:
    """The landing check's view of one pod: its spec and where it is now."""

    spec: Mapping[str, Any]
    namespace: str
    here: str                       # the node it is on
    template_node_name: str = ""
    claims: Tuple[Tuple[str, Any], ...] = ()   # (claim name, its PV / None / MISSING)


@dataclass(frozen=True)
class Landing:
    nodes: Tuple[str, ...]          # where the replacement could be scheduled, in node order
    blocker: str = ""               # when there is none: the constraint that rules out every node
    asks_for_gpu: str = ""          # its placement matches GPU nodes only: that placement, said
    gpu_only: bool = False          # every node in ``nodes`` is a GPU node


def pod_view(pod: Obj, cluster: Cluster) -> Pod:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    namespace = meta.get("namespace", "")
    owner = next((r for r in meta.get("ownerReferences") or () if r.get("controller")), None)
    template = cluster.templates.get((namespace, owner.get("kind", ""), owner.get("name", ""))) \
        if owner else None
    claims: List[Tuple[str, Any]] = []
    if cluster.volumes is not None:
        for volume in spec.get("volumes") or ():
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                claims.append((claim, cluster.volumes.get((namespace, claim), MISSING)))
    return Pod(spec=spec, namespace=namespace, here=spec.get("nodeName", ""),
               template_node_name=template or "", claims=tuple(claims))


# -- the filters: (holds(pod, node), blame(pod, the nodes it ruled out)) ----------------------------
def _names(nodes: Sequence[Obj], limit: int = 3) -> str:
    names = [node_name(n) for n in nodes]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def template_node_name_holds(pod: Pod, node: Obj) -> bool:
    return not pod.template_node_name or node_name(node) == pod.template_node_name


def template_node_name_blame(pod: Pod, ruled_out: Sequence[Obj]) -> str:
    return f"nodeName {pod.template_node_name} in its controller's pod template"


def node_selector_holds(pod: Pod, node: Obj) -> bool:
    return affinity.node_selector_holds(pod.spec.get("nodeSelector"), node)


def node_selector_blame(pod: Pod, ruled_out: Sequence[Obj]) -> str:
    pairs = dict(pod.spec.get("nodeSelector") or {})
    unmet = {k: v for k, v in pairs.items()
             if not any(affinity.node_labels(n).get(k) == v for n in ruled_out)}
    return "nodeSelector " + ", ".join(f"{k}={v}" for k, v in (unmet or pairs).items())


def node_affinity_holds(pod: Pod, node: Obj) -> bool:
    return affinity.selector_holds(affinity.required_affinity(pod.spec), node)


def node_affinity_blame(pod: Pod, ruled_out: Sequence[Obj]) -> str:
    required = affinity.required_affinity(pod.spec) or {}
    return "required nodeAffinity " + affinity.describe_selector(required)


def _is_zone_key(key: str) -> bool:
    return key.endswith("/zone") or key.endswith(".zone")


def _pv_holds(pv: Any, node: Obj) -> bool:
    if pv == MISSING:
        return False
    return pv is None or affinity.pv_affinity_holds(pv, node)


def volumes_hold(pod: Pod, node: Obj) -> bool:
    return all(_pv_holds(pv, node) for _, pv in pod.claims)


def volumes_blame(pod: Pod, ruled_out: Sequence[Obj]) -> str:
    for claim, pv in pod.claims:
        if pv == MISSING:
            return f"PVC {claim} does not exist"
        if any(_pv_holds(pv, n) for n in ruled_out):
            continue
        name = (pv.get("metadata") or {}).get("name", "")
        required = affinity.pv_affinity(pv)
        zones = affinity.selector_values(required, _is_zone_key)
        if zones:
            return f"PV {name} in zone {', '.join(zones)}; no schedulable non-GPU node there"
        spec = pv.get("spec") or {}
        if "local" in spec or "hostPath" in spec:
            where = "this node" if affinity.selector_values(required, lambda k: True) == [pod.here] \
                else affinity.describe_selector(required or {})
            return f"local PV {name} on {where}"
        return f"PV {name}'s nodeAffinity {affinity.describe_selector(required or {})}"
    return "its PersistentVolumes' nodeAffinity"


def unschedulable_holds(pod: Pod, node: Obj) -> bool:
    if not (node.get("spec") or {}).get("unschedulable"):
        return True
    return any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.spec.get("tolerations") or ())


def unschedulable_blame(pod: Pod, ruled_out: Sequence[Obj]) -> str:
    return f"the other nodes it could use are cordoned ({_names(ruled_out)})"


def _untolerated(pod: Pod, node: Obj) -> List[Obj]:
    tolerations = pod.spec.get("tolerations") or ()
    return [t for t in (node.get("spec") or {}).get("taints") or ()
            if t.get("effect") in SCHEDULING_EFFECTS
            and not any(tolerates(tol, t) for tol in tolerations)]


def taints_hold(pod: Pod, node: Obj) -> bool:
    return not _untolerated(pod, node)


def taints_blame(pod: Pod, ruled_out: Sequence[Obj]) -> str:
    seen: Dict[str, None] = {}
    for node in ruled_out:
        for taint in _untolerated(pod, node):
            value = f"={taint['value']}" if taint.get("value") else ""
            seen[f"{taint.get('key')}{value}:{taint.get('effect')}"] = None
    return (f"it does not tolerate the taints of the other nodes it could use "
            f"({', '.join(seen)} on {_names(ruled_out)})")


Holds = Callable[[Pod, Obj], bool]
Blame = Callable[[Pod, Sequence[Obj]], str]
# The pod's own placement first, so that a pinned pod is blamed on its pin, not on the
# cordons and taints of nodes it would never use; then the nodes' state.
PLACEMENT: Tuple[Tuple[str, Holds, Blame], ...] = (
    ("nodeName", template_node_name_holds, template_node_name_blame),
    ("nodeSelector", node_selector_holds, node_selector_blame),
    ("nodeAffinity", node_affinity_holds, node_affinity_blame),
    ("volumes", volumes_hold, volumes_blame),
)
FILTERS: Tuple[Tuple[str, Holds, Blame], ...] = PLACEMENT + (
    ("unschedulable", unschedulable_holds, unschedulable_blame),
    ("taints", taints_hold, taints_blame),
)


def feasible(pod: Pod, nodes: Sequence[Obj],
             filters: Sequence[Tuple[str, Holds, Blame]] = FILTERS) -> List[Obj]:
    """The nodes that pass every filter, in the given order."""
    return [n for n in nodes if all(holds(pod, n) for _, holds, _ in filters)]


def feasible_nodes(pod: Obj, nodes: Sequence[Obj], volumes: Optional[Mapping[ClaimKey, Any]] = None
                   ) -> List[str]:
    """The names of the nodes where the scheduler would place a copy of ``pod`` (no resources,
    no inter-pod rules): the scheduler-oracle test compares this with kube-scheduler."""
    cluster = Cluster(nodes=tuple(nodes), run=frozenset(), gpu=frozenset(),
                      volumes=volumes if volumes is not None else {})
    return [node_name(n) for n in feasible(pod_view(pod, cluster), nodes)]


def _first_blame(pod: Pod, candidates: Sequence[Obj]) -> str:
    """The filter at which the candidates run out, in one line ("" if they never do)."""
    left = list(candidates)
    if not left:
        return ""
    for _, holds, blame in FILTERS:
        kept = [n for n in left if holds(pod, n)]
        if not kept:
            return blame(pod, left)
        left = kept
    return ""


def _placement_key(pod: Pod) -> str:
    """Everything of ``pod`` that FILTERS and their blames read: pods with equal keys land
    alike.  Where it is now matters only to the blame of a local volume.  (A repr: the pods of
    one template come with their fields in one order; equal fields in another order only
    miss the memo.)"""
    spec = pod.spec
    return repr((spec.get("nodeSelector"), affinity.required_affinity(spec), spec.get("tolerations"),
                 pod.template_node_name, pod.claims, pod.here if pod.claims else ""))


def land(pod: Obj, cluster: Cluster) -> Landing:
    """Where the replacement of ``pod`` could land, or the constraint that says nowhere;
    worked out once per placement (Cluster.answers)."""
    view = pod_view(pod, cluster)
    key = _placement_key(view)
    answer = cluster.answers.get(key)
    if answer is None:
        answer = cluster.answers[key] = _land(view, cluster)
    return answer


def _land(view: Pod, cluster: Cluster) -> Landing:
    candidates = [n for n in cluster.nodes if node_name(n) not in cluster.run]
    landing = tuple(node_name(n) for n in feasible(view, candidates))
    placed = [node_name(n) for n in feasible(view, cluster.nodes, PLACEMENT)]
    others = [n for n in cluster.nodes if node_name(n) not in cluster.gpu]
    asks = ""
    # Asked for: its own placement rules out every node without GPUs, and matches several GPU
    # nodes (matching one only is a pin to it: the pod has nowhere to land).
    if others and len(placed) > 1 and set(placed) <= cluster.gpu:
        asks = _first_blame(view, others)
    if landing:
        return Landing(nodes=landing, asks_for_gpu=asks, gpu_only=set(landing) <= cluster.gpu)
    if not candidates:
        return Landing(nodes=(), blocker="every node is in this run", asks_for_gpu=asks)
    return Landing(nodes=(), blocker=_first_blame(view, candidates), asks_for_gpu=asks)
