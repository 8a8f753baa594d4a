"""The eviction planner: which pods on a GPU node move, which stay, and why.

Pure.  It takes the API's node, pod and PodDisruptionBudget dicts plus the options and returns a
``NodePlan`` per node: one ``PodDecision`` per pod with a reason code and a sentence.  ``status``
shows these verdicts and ``evacuate`` acts on them, so what ``status`` says would move is exactly
what moves.

The decision chain mirrors kubectl drain's filter chain: ``RULES`` is an ordered tuple of small
functions ``(pod, ctx) -> PodDecision or None``, the first that decides wins, and a pod no rule
keeps goes to ``gated_or_move``.  Its one extra rule at the heart: a pod that tolerates the GPU
taint stays.  A new rule is one function in ``RULES`` and one row in docs/design.md's table.
"""

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, cast

from . import claims, gpu, landing, maintenance
from .disruption import PdbState as PdbState
from .disruption import pdb_blockers as pdb_blockers
from .disruption import pdb_state as pdb_state
from .disruption import pdbs_for_pod as pdbs_for_pod
from .gpu import Obj
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
    landing: Tuple[str, ...] = ()  # MOVE: the nodes its replacement could land on, when known
    owner_uid: str = ""          # the controller's UID: its replacement carries it too
    resource_version: str = ""   # the pod's, as planned: its eviction's precondition

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def misplaced(self) -> bool:
        """It does not belong on the node: it would move (gated or not) or has nowhere to go."""
        return self.action in (MOVE, BLOCKED) or self.reason in MISPLACED_STAYS


@dataclass
class NodePlan:
    name: str
    gpu_count: int
    gpu_taints: List[Obj]        # the managed taint(s) actually on the node
    unschedulable: bool
    signal: gpu.NodeSignal = gpu.NONE   # why the node is a GPU node (core.gpu.NODE_RULES)
    maintenance: Tuple[str, ...] = ()   # who else is draining it (core.maintenance); evacuate refuses
    decisions: List[PodDecision] = field(default_factory=list)

    @property
    def tainted(self) -> bool:
        return bool(self.gpu_taints)

    def with_action(self, action: str) -> List[PodDecision]:
        return [d for d in self.decisions if d.action == action]

    @property
    def to_move(self) -> List[PodDecision]:
        return self.with_action(MOVE)

    @property
    def blocked(self) -> List[PodDecision]:
        return self.with_action(BLOCKED)

    @property
    def misplaced(self) -> List[PodDecision]:
        """Pods that do not belong on the node, gated or not, or with nowhere else to go."""
        return [d for d in self.decisions if d.misplaced]

    @property
    def movable(self) -> List[PodDecision]:
        """Pods that do not belong on the node and can go: evacuate's to-do, gated or not."""
        return [d for d in self.decisions if d.action in (MOVE, BLOCKED)]

    @property
    def settled(self) -> Dict[Tuple[str, str], PodDecision]:
        """By (namespace, name), the decisions the landing check cannot change: only the last rules
        and gated_or_move read it, for a pod with a controller no earlier rule kept."""
        return {(d.namespace, d.name): d for d in self.decisions
                if not (d.owner and d.action in (MOVE, BLOCKED))}

    @property
    def stay_reasons(self) -> "Counter[str]":
        """How many pods stay, by reason: the one count status and evacuate print."""
        return Counter(d.reason for d in self.with_action(STAY))

    @property
    def warnings(self) -> List[str]:
        return [d.warning for d in self.decisions if d.warning]


def controller_of(pod: Obj) -> Optional[Obj]:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return cast(Obj, ref)
    return None


def is_daemonset_pod(pod: Obj) -> bool:
    ref = controller_of(pod)
    return ref is not None and ref.get("kind") == "DaemonSet" and ref.get("apiVersion") == "apps/v1"


def is_mirror_pod(pod: Obj) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return "kubernetes.io/config.mirror" in annotations


def has_emptydir(pod: Obj) -> bool:
    return any("emptyDir" in v for v in (pod.get("spec") or {}).get("volumes") or ())


@dataclass(frozen=True)
class RuleContext:
    """What every rule may read about one pod, computed once by ``decide`` (``landing`` on
    first use: only pods that would move need it)."""
    gpu_taints: Tuple[Obj, ...]        # the taints the pod must tolerate
    pdbs: Tuple[Obj, ...]              # the PDBs of the pod's namespace
    options: PlanOptions
    missing_daemonsets: FrozenSet[Tuple[str, str]]
    owner_ref: Optional[Obj]           # the controller reference, None for a bare pod
    namespace: str
    name: str
    uid: str
    taint_text: str                    # the GPU taints as people write them
    tolerated: bool                    # tolerates every one of gpu_taints
    pod: Obj = field(default_factory=dict, repr=False)
    cluster: Optional[landing.Cluster] = None   # None: where pods can land is not known
    resource_claims: Optional[claims.Claims] = None   # the pods' ResourceClaims; None: not read

    @cached_property
    def landing(self) -> Optional[landing.Landing]:
        """Where the replacement could land; None for a bare pod (no replacement) or when
        the cluster is not known."""
        if self.cluster is None or self.owner_ref is None:
            return None
        return landing.land(self.pod, self.cluster)

    @cached_property
    def gpu_resources(self) -> List[str]:
        """The accelerator resources the pod asks for (three rules read them)."""
        return gpu.pod_gpu_resources(self.pod)

    def decision(self, action: str, reason: str, message: str, **extra: Any) -> PodDecision:
        owner = f"{self.owner_ref.get('kind')}/{self.owner_ref.get('name')}" if self.owner_ref else ""
        owner_uid = self.owner_ref.get("uid", "") if self.owner_ref else ""
        version = (self.pod.get("metadata") or {}).get("resourceVersion", "")
        return PodDecision(namespace=self.namespace, name=self.name, uid=self.uid, owner=owner,
                           owner_uid=owner_uid, resource_version=version, action=action,
                           reason=reason, message=message, **extra)


def rule_context(pod: Obj, gpu_taints: Iterable[Obj], pdbs: Iterable[Obj], options: PlanOptions,
                 missing_daemonsets: Iterable[Tuple[str, str]] = frozenset(),
                 cluster: Optional[landing.Cluster] = None,
                 resource_claims: Optional[claims.Claims] = None) -> RuleContext:
    meta = pod.get("metadata") or {}
    taints = tuple(gpu_taints)
    return RuleContext(
        gpu_taints=taints, pdbs=tuple(pdbs), options=options,
        missing_daemonsets=frozenset(missing_daemonsets), owner_ref=controller_of(pod),
        namespace=meta.get("namespace", ""), name=meta.get("name", ""), uid=meta.get("uid", ""),
        taint_text=", ".join(str(Taint.from_api(t)) for t in taints),
        tolerated=tolerates_all((pod.get("spec") or {}).get("tolerations"), taints),
        pod=pod, cluster=cluster, resource_claims=resource_claims)


# -- the rules, in order (docs/design.md "The planner's decisions" lists them; a test checks) --------
def terminating(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return ctx.decision(WAIT, "terminating", "already terminating; waiting for it, not evicting again")
    return None


def mirror(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    if is_mirror_pod(pod):
        return ctx.decision(STAY, "mirror", "mirror (static) pod, managed by the kubelet")
    return None


def daemonset(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    if not is_daemonset_pod(pod) or ctx.owner_ref is None:
        return None
    if (ctx.namespace, ctx.owner_ref.get("name")) in ctx.missing_daemonsets:
        return ctx.decision(STAY, "daemonset-orphan", "DaemonSet pod whose DaemonSet is gone; never evicted",
                            warning=f"pod {ctx.namespace}/{ctx.name} belongs to a deleted DaemonSet; "
                                    "delete it by hand if it is unwanted")
    return ctx.decision(STAY, "daemonset", "DaemonSet pod; it belongs on every node")


def finished(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return ctx.decision(STAY, "finished", f"finished ({phase}); holds no resources, kept for its logs")
    return None


def _consumer(ctx: RuleContext, reason: str, what: str) -> PodDecision:
    """A GPU consumer stays; warned when it does not tolerate the taint (a restart would strand it)."""
    warning = "" if ctx.tolerated else (
        f"GPU pod {ctx.namespace}/{ctx.name} uses {what} but does not tolerate "
        f"{ctx.taint_text}; after a restart it could not be scheduled on this node")
    return ctx.decision(STAY, reason, f"uses {what}", warning=warning)


def _resource_rule(ctx: RuleContext, reason: str, wanted: Callable[[str], bool]) -> Optional[PodDecision]:
    """The pod stays for ``reason`` when one of its accelerator resources is ``wanted``; the
    message names them all."""
    names = ctx.gpu_resources
    return _consumer(ctx, reason, ", ".join(names)) if any(wanted(n) for n in names) else None


def gpu_request(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    return _resource_rule(ctx, "gpu-request", lambda name: name == gpu.NVIDIA_GPU)


def gpu_shared(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    return _resource_rule(ctx, "gpu-shared", gpu.is_shared_resource)


def gpu_mig(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    return _resource_rule(ctx, "gpu-mig", gpu.is_mig_resource)


def accelerator(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    return _resource_rule(ctx, "accelerator", lambda name: True)


def gpu_fraction(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    found = gpu.pod_gpu_fraction(pod)
    return _consumer(ctx, "gpu-fraction", "a GPU fraction " + ", ".join(found)) if found else None


def resource_claim(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    """DRA: a claim holding a GPU keeps the pod; one that cannot be judged keeps it too (the
    conservative rule); claims for other devices only leave the pod to the rules after this."""
    verdicts = claims.judge(pod, ctx.resource_claims)
    held = [v for v in verdicts if v.kind == claims.GPU]
    if held:
        return _consumer(ctx, "resource-claim", "GPU resource claim " + ", ".join(map(str, held)))
    unknown = [v for v in verdicts if v.kind == claims.UNKNOWN]
    if unknown:
        names = ", ".join(v.claim or v.entry for v in unknown)
        why = "; ".join(sorted({v.what for v in unknown}))
        return _consumer(ctx, "resource-claim", f"resource claims {names} ({why}: kept as GPU claims)")
    return None


def tolerated(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    if ctx.tolerated:
        return ctx.decision(STAY, "tolerates", f"tolerates {ctx.taint_text}")
    return None


def asks_for_gpu(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    found = ctx.landing
    if found is None or not found.asks_for_gpu:
        return None
    return ctx.decision(STAY, "asks-for-gpu", f"asks for GPU nodes ({found.asks_for_gpu})",
                        warning=f"pod {ctx.namespace}/{ctx.name} asks for GPU nodes "
                                f"({found.asks_for_gpu}) but does not tolerate {ctx.taint_text}; "
                                "after a restart it could not be scheduled on this node")


def nowhere_to_land(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    found = ctx.landing
    if found is None or found.nodes:
        return None
    return ctx.decision(STAY, "nowhere-to-land", f"nowhere to land: {found.blocker}")


Rule = Callable[[Obj, RuleContext], Optional[PodDecision]]
RULES: Tuple[Rule, ...] = (terminating, mirror, daemonset, finished, gpu_request, gpu_shared, gpu_mig,
                           accelerator, gpu_fraction, resource_claim, tolerated, asks_for_gpu,
                           nowhere_to_land)
# What each rule reads of a pod is declared in core/pod_fields.py (kube/essentials keeps it).
# Stays that status counts as misplaced: the pod does not belong here, but cannot go.
MISPLACED_STAYS = frozenset({"nowhere-to-land"})


def gated_or_move(pod: Obj, ctx: RuleContext) -> PodDecision:
    """The pod would move: blocked if a gate stops it, else moved (with the PDBs that cover it)."""
    matching = tuple(pdb_state(p) for p in pdbs_for_pod(pod, ctx.pdbs))
    gates: List[str] = []
    flags: List[str] = []
    if has_emptydir(pod) and not ctx.options.delete_emptydir_data:
        gates.append("has emptyDir data")
        flags.append(FLAG_EMPTYDIR)
    if not ctx.owner_ref and not ctx.options.force:
        gates.append("declares no controller and would not be recreated")
        flags.append(FLAG_FORCE)
    if len(matching) > 1:
        names = ", ".join(p.name for p in matching)
        gates.append(f"is matched by several PodDisruptionBudgets ({names}), "
                     "which the eviction API refuses; fix the PDBs")
    if gates:
        hint = f" (use {' and '.join(flags)})" if flags else ""
        return ctx.decision(BLOCKED, "gated",
                            f"does not tolerate {ctx.taint_text}, but " + "; ".join(gates) + hint,
                            flags=tuple(flags), pdbs=matching)
    found = ctx.landing
    nodes = found.nodes if found else ()
    return ctx.decision(MOVE, "not-tolerated", f"does not tolerate {ctx.taint_text}", pdbs=matching,
                        landing=nodes, warning=_other_gpu_nodes_only(ctx, found))


def _other_gpu_nodes_only(ctx: RuleContext, found: Optional[landing.Landing]) -> str:
    """A warning when the pod can land only on GPU nodes this run leaves untainted."""
    if found is None or not found.gpu_only:
        return ""
    nodes = found.nodes
    more = f" and {len(nodes) - 3} more" if len(nodes) > 3 else ""
    return (f"pod {ctx.namespace}/{ctx.name} can land only on GPU node(s) not in this run: "
            f"{', '.join(nodes[:3])}{more}")


def decide(pod: Obj, gpu_taints: Sequence[Obj], pdbs: Iterable[Obj], options: PlanOptions,
           missing_daemonsets: Iterable[Tuple[str, str]] = frozenset(),
           cluster: Optional[landing.Cluster] = None,
           resource_claims: Optional[claims.Claims] = None) -> PodDecision:
    """One pod's decision: the first rule that decides, else gated_or_move.

    ``gpu_taints`` are the taints the pod must tolerate; ``pdbs`` those of its namespace;
    ``cluster`` what the landing check reads (None: not checked); ``resource_claims`` the
    pods' ResourceClaims (None: not read, so a pod with claims is kept)."""
    ctx = rule_context(pod, gpu_taints, pdbs, options, missing_daemonsets, cluster, resource_claims)
    for rule in RULES:
        found = rule(pod, ctx)
        if found is not None:
            return found
    return gated_or_move(pod, ctx)


def plan_node(node: Obj, pods: Iterable[Obj], pdbs: Iterable[Obj], options: PlanOptions,
              missing_daemonsets: Iterable[Tuple[str, str]] = frozenset(),
              cluster: Optional[landing.Cluster] = None,
              resource_claims: Optional[claims.Claims] = None,
              settled: Optional[Dict[Tuple[str, str], PodDecision]] = None) -> NodePlan:
    """The plan for one GPU node and its pods; ``settled`` decisions (NodePlan.settled) stand."""
    settled = settled or {}
    spec = node.get("spec") or {}
    node_taints = spec.get("taints") or []
    must_tolerate = effective_gpu_taints(node_taints, options.managed_taint)
    plan = NodePlan(name=node["metadata"]["name"], gpu_count=gpu.gpu_count(node),
                    gpu_taints=gpu_taints_on(node_taints, options.managed_taint),
                    unschedulable=bool(spec.get("unschedulable")), signal=gpu.node_signal(node),
                    maintenance=tuple(maintenance.maintenance(node)))
    by_namespace: Dict[Any, List[Obj]] = {}   # PDBs apply in their namespace only: look there alone
    for pdb in pdbs:
        by_namespace.setdefault((pdb.get("metadata") or {}).get("namespace"), []).append(pdb)
    for pod in sorted(pods, key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"])):
        namespace_pdbs = by_namespace.get(pod["metadata"].get("namespace"), ())
        earlier = settled.get((pod["metadata"].get("namespace", ""), pod["metadata"]["name"]))
        plan.decisions.append(earlier if earlier is not None else
                              decide(pod, must_tolerate, namespace_pdbs, options, missing_daemonsets,
                                     cluster, resource_claims))
    return plan


def daemonsets_to_check(pods: Iterable[Obj]) -> Set[Tuple[str, str]]:
    """(namespace, name) of the DaemonSets that own the given pods."""
    found: Set[Tuple[str, str]] = set()
    for pod in pods:
        ref = controller_of(pod)
        if ref is not None and is_daemonset_pod(pod):
            found.add((pod["metadata"].get("namespace", ""), ref.get("name", "")))
    return found
