"""The eviction planner: which pods on a GPU node move, which stay, and why.

Pure.  It takes the API's node, pod and PodDisruptionBudget dicts plus the
options and returns a ``NodePlan`` per node: one ``PodDecision`` per pod with a
reason code and a sentence.  ``status`` shows these verdicts and ``evacuate``
acts on them, so what ``status`` says would move is exactly what moves.

The decision chain mirrors kubectl drain's filter chain (first match wins),
with one extra rule at its heart: a pod that tolerates the GPU taint stays.
"""

from collections import Counter
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from . import gpu, selectors
from .taints import Taint, effective_gpu_taints, gpu_taints_on, tolerates_all

MOVE = "move"          # does not tolerate the GPU taint: evict it
STAY = "stay"          # never evicted, for the reason given
BLOCKED = "blocked"    # would move, but a gate (flag or PDB misconfiguration) stops the node
WAIT = "wait"          # already terminating: wait for it, never evict again

FLAG_EMPTYDIR = "--delete-emptydir-data"
FLAG_FORCE = "--force"


@dataclass(frozen=True)
class PlanOptions:
    managed_taint: Taint
    delete_emptydir_data: bool = False
    force: bool = False


@dataclass(frozen=True)
class PdbState:
    namespace: str
    name: str
    disruptions_allowed: int
    desired_healthy: int
    current_healthy: int
    expected_pods: int
    never_allows: Optional[str]   # why it can never allow an eviction, if it cannot

    @property
    def blocks_now(self):
        return self.disruptions_allowed <= 0


@dataclass(frozen=True)
class PodDecision:
    namespace: str
    name: str
    uid: str
    action: str
    reason: str                  # a stable code, e.g. "daemonset", "not-tolerated"
    message: str                 # a sentence for people
    owner: str = ""              # Kind/name of the controller, "" for a bare pod
    flags: Tuple[str, ...] = ()  # the flags that would lift a BLOCKED gate
    pdbs: Tuple[PdbState, ...] = ()
    warning: str = ""            # e.g. a GPU pod that does not tolerate the taint

    @property
    def ref(self):
        return f"{self.namespace}/{self.name}"


@dataclass
class NodePlan:
    name: str
    gpu_count: int
    gpu_taints: List[dict]       # the managed taint(s) actually on the node
    unschedulable: bool
    decisions: List[PodDecision] = field(default_factory=list)

    @property
    def tainted(self):
        return bool(self.gpu_taints)

    def with_action(self, action):
        return [d for d in self.decisions if d.action == action]

    @property
    def to_move(self):
        return self.with_action(MOVE)

    @property
    def blocked(self):
        return self.with_action(BLOCKED)

    @property
    def misplaced(self):
        """Pods that do not belong on the node, gated or not."""
        return [d for d in self.decisions if d.action in (MOVE, BLOCKED)]

    @property
    def stay_reasons(self):
        """How many pods stay, by reason: the one count status and evacuate print."""
        return Counter(d.reason for d in self.with_action(STAY))

    @property
    def warnings(self):
        return [d.warning for d in self.decisions if d.warning]


def controller_of(pod):
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def is_daemonset_pod(pod):
    ref = controller_of(pod)
    return bool(ref) and ref.get("kind") == "DaemonSet" and ref.get("apiVersion") == "apps/v1"


def is_mirror_pod(pod):
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return "kubernetes.io/config.mirror" in annotations


def has_emptydir(pod):
    return any("emptyDir" in v for v in (pod.get("spec") or {}).get("volumes") or ())


def pdb_state(pdb):
    """Summarises a PDB's status and whether it can ever allow an eviction."""
    meta, spec, status = pdb.get("metadata") or {}, pdb.get("spec") or {}, pdb.get("status") or {}
    expected = int(status.get("expectedPods") or 0)
    desired = int(status.get("desiredHealthy") or 0)
    never = None
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    if max_unavailable is not None and str(max_unavailable) in ("0", "0%"):
        never = f"maxUnavailable is {max_unavailable}"
    elif min_available is not None and str(min_available) == "100%":
        never = "minAvailable is 100%"
    elif (min_available is not None and isinstance(min_available, int)
          and expected > 0 and min_available >= expected):
        never = f"minAvailable {min_available} >= its {expected} pod(s)"
    elif expected > 0 and desired >= expected:
        never = f"needs all {expected} pod(s) healthy"
    return PdbState(namespace=meta.get("namespace", ""), name=meta.get("name", ""),
                    disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
                    desired_healthy=desired,
                    current_healthy=int(status.get("currentHealthy") or 0),
                    expected_pods=expected, never_allows=never)


def pdbs_for_pod(pod, pdbs):
    """The PDBs whose selector matches the pod, in its namespace (policy/v1 rules)."""
    meta = pod.get("metadata") or {}
    namespace, labels = meta.get("namespace"), meta.get("labels") or {}
    return [p for p in pdbs
            if (p.get("metadata") or {}).get("namespace") == namespace
            and selectors.matches((p.get("spec") or {}).get("selector"), labels)]


def decide(pod, gpu_taints, pdbs, options, missing_daemonsets=frozenset()):
    """One pod's decision.  ``gpu_taints`` are the taints the pod must tolerate."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    owner_ref = controller_of(pod)
    owner = f"{owner_ref.get('kind')}/{owner_ref.get('name')}" if owner_ref else ""
    base = dict(namespace=meta.get("namespace", ""), name=meta.get("name", ""),
                uid=meta.get("uid", ""), owner=owner)
    taint_text = ", ".join(str(Taint.from_api(t)) for t in gpu_taints)
    tolerated = tolerates_all((pod.get("spec") or {}).get("tolerations"), gpu_taints)

    if meta.get("deletionTimestamp"):
        return PodDecision(action=WAIT, reason="terminating",
                           message="already terminating; waiting for it, not evicting again", **base)
    if is_mirror_pod(pod):
        return PodDecision(action=STAY, reason="mirror",
                           message="mirror (static) pod, managed by the kubelet", **base)
    if is_daemonset_pod(pod):
        if (base["namespace"], owner_ref.get("name")) in missing_daemonsets:
            return PodDecision(action=STAY, reason="daemonset-orphan",
                               message="DaemonSet pod whose DaemonSet is gone; never evicted",
                               warning=f"pod {base['namespace']}/{base['name']} belongs to a deleted "
                                       "DaemonSet; delete it by hand if it is unwanted", **base)
        return PodDecision(action=STAY, reason="daemonset",
                           message="DaemonSet pod; it belongs on every node", **base)
    if status.get("phase") in ("Succeeded", "Failed"):
        return PodDecision(action=STAY, reason="finished",
                           message=f"finished ({status['phase']}); holds no resources, kept for its logs",
                           **base)
    gpu_resources = gpu.pod_gpu_resources(pod)
    claims = gpu.pod_resource_claims(pod)
    if gpu_resources or claims:
        what = ", ".join(gpu_resources) if gpu_resources else "resource claims " + ", ".join(claims)
        warning = "" if tolerated else (
            f"GPU pod {base['namespace']}/{base['name']} uses {what} but does not tolerate "
            f"{taint_text}; after a restart it could not be scheduled on this node")
        return PodDecision(action=STAY, reason="gpu-request" if gpu_resources else "resource-claim",
                           message=f"uses {what}", warning=warning, **base)
    if tolerated:
        return PodDecision(action=STAY, reason="tolerates",
                           message=f"tolerates {taint_text}", **base)

    matching = tuple(pdb_state(p) for p in pdbs_for_pod(pod, pdbs))
    gates, flags = [], []
    if has_emptydir(pod) and not options.delete_emptydir_data:
        gates.append("has emptyDir data")
        flags.append(FLAG_EMPTYDIR)
    if not owner_ref and not options.force:
        gates.append("declares no controller and would not be recreated")
        flags.append(FLAG_FORCE)
    if len(matching) > 1:
        names = ", ".join(p.name for p in matching)
        gates.append(f"is matched by several PodDisruptionBudgets ({names}), "
                     "which the eviction API refuses; fix the PDBs")
    if gates:
        hint = f" (use {' and '.join(flags)})" if flags else ""
        return PodDecision(action=BLOCKED, reason="gated",
                           message=f"does not tolerate {taint_text}, but " + "; ".join(gates) + hint,
                           flags=tuple(flags), pdbs=matching, **base)
    return PodDecision(action=MOVE, reason="not-tolerated",
                       message=f"does not tolerate {taint_text}", pdbs=matching, **base)


def plan_node(node, pods, pdbs, options, missing_daemonsets=frozenset()):
    """The plan for one GPU node and the pods bound to it."""
    spec = node.get("spec") or {}
    node_taints = spec.get("taints") or []
    must_tolerate = effective_gpu_taints(node_taints, options.managed_taint)
    plan = NodePlan(name=node["metadata"]["name"], gpu_count=gpu.gpu_count(node),
                    gpu_taints=gpu_taints_on(node_taints, options.managed_taint),
                    unschedulable=bool(spec.get("unschedulable")))
    by_namespace = {}          # PDBs apply in their namespace only: look there alone
    for pdb in pdbs:
        by_namespace.setdefault((pdb.get("metadata") or {}).get("namespace"), []).append(pdb)
    for pod in sorted(pods, key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"])):
        namespace_pdbs = by_namespace.get(pod["metadata"].get("namespace"), ())
        plan.decisions.append(decide(pod, must_tolerate, namespace_pdbs, options, missing_daemonsets))
    return plan


def daemonsets_to_check(pods):
    """(namespace, name) of the DaemonSets that own the given pods."""
    found = set()
    for pod in pods:
        if is_daemonset_pod(pod):
            found.add((pod["metadata"].get("namespace", ""), controller_of(pod).get("name")))
    return found


def pdb_blockers(plans):
    """The PDBs covering pods that would move and that allow no eviction now, by name."""
    seen = {}
    for plan in plans:
        for decision in plan.misplaced:
            for pdb in decision.pdbs:
                if pdb.blocks_now or pdb.never_allows:
                    seen[(pdb.namespace, pdb.name)] = pdb
    return [seen[k] for k in sorted(seen)]
