"""The eviction planner: which pods on a GPU node move, which stay, and why.

Pure.  It takes the API's node, pod and PodDisruptionBudget dicts plus the options and returns a
``NodePlan`` per node: one ``PodDecision`` per pod with a reason code and a sentence.  ``status``
shows these verdicts and ``evacuate`` acts on them, so what ``status`` says would move is exactly
what moves.

The decision chain mirrors kubectl drain's filter chain: ``RULES`` is an ordered tuple of small
functions ``(pod, ctx) -> PodDecision or None``, the first that decides wins, and a pod no rule
keeps goes to ``gated_or_move``.  Its one extra rule at the heart: a pod that tolerates the GPU
taint stays (and, using no GPU, is reported as an isolation leak).  A new rule is one function in
``RULES`` and one row in docs/design.md's table.
"""

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, cast

from . import claims, gpu, hidden_gpu, landing, maintenance, operators
from .decisions import BLOCKED as BLOCKED
from .decisions import MISPLACED_STAYS as MISPLACED_STAYS
from .decisions import MOVE as MOVE
from .decisions import STAY as STAY
from .decisions import WAIT as WAIT
from .decisions import NodePlan as NodePlan
from .decisions import PodDecision as PodDecision
from .disruption import PdbState as PdbState
from .disruption import pdb_blockers as pdb_blockers
from .disruption import pdb_state as pdb_state
from .disruption import pdbs_for_pod as pdbs_for_pod
from .gpu import Obj
from .taints import (
    Taint,
    effective_gpu_taints,
    gpu_taints_on,
    tolerates_all,
    tolerates_any_key,
    tolerating,
    toleration_text,
)

FLAG_EMPTYDIR = "--delete-emptydir-data"
FLAG_FORCE = "--force"
FLAG_JOB_RESTART = "--allow-job-restart"


@dataclass(frozen=True)
class PlanOptions:
    managed_taint: Taint
    delete_emptydir_data: bool = False
    force: bool = False
    allow_job_restart: bool = False     # evict pods whose eviction restarts or fails a whole job


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
    runtime_classes: Optional[Dict[str, str]] = None  # RuntimeClass name: handler; None: not read

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
                 resource_claims: Optional[claims.Claims] = None,
                 runtime_classes: Optional[Dict[str, str]] = None) -> RuleContext:
    meta = pod.get("metadata") or {}
    taints = tuple(gpu_taints)
    return RuleContext(
        gpu_taints=taints, pdbs=tuple(pdbs), options=options,
        missing_daemonsets=frozenset(missing_daemonsets), owner_ref=controller_of(pod),
        namespace=meta.get("namespace", ""), name=meta.get("name", ""), uid=meta.get("uid", ""),
        taint_text=", ".join(str(Taint.from_api(t)) for t in taints),
        tolerated=tolerates_all((pod.get("spec") or {}).get("tolerations"), taints),
        pod=pod, cluster=cluster, resource_claims=resource_claims, runtime_classes=runtime_classes)


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


def _hidden_user(ctx: RuleContext, reason: str, uses: List[hidden_gpu.Use]) -> Optional[PodDecision]:
    """A pod that reaches the GPUs without a resource request stays, warned that the device
    plugin does not count it (and, when judged without reading, why)."""
    if not uses:
        return None
    what = "; ".join(u.what for u in uses)
    warnings = [f"pod {ctx.namespace}/{ctx.name} uses GPUs without requesting them ({what}), "
                "bypassing the device plugin's accounting: the scheduler does not count them"]
    if not ctx.tolerated:
        warnings.append(f"it does not tolerate {ctx.taint_text}: a restart would put it on a node "
                        "without GPUs")
    warnings += [u.note for u in uses if u.note]
    return ctx.decision(STAY, reason, f"uses GPUs without a request: {what}", warning="; ".join(warnings))


def gpu_env(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    return _hidden_user(ctx, "gpu-env", hidden_gpu.env_uses(pod))


def gpu_runtime(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    return _hidden_user(ctx, "gpu-runtime", hidden_gpu.runtime_uses(pod, ctx.runtime_classes))


def gpu_cdi(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    return _hidden_user(ctx, "gpu-cdi", hidden_gpu.cdi_uses(pod))


def gpu_device_mount(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    return _hidden_user(ctx, "gpu-device-mount", hidden_gpu.device_mount_uses(pod))


def tolerated(pod: Obj, ctx: RuleContext) -> Optional[PodDecision]:
    """Tolerates the GPU taint but no rule above found it using an accelerator: the taint lets
    it stay, and it is an isolation leak (decisions.LEAKS), warned with the toleration to remove."""
    if not ctx.tolerated:
        return None
    matching = tolerating((pod.get("spec") or {}).get("tolerations"), ctx.gpu_taints)
    everything = any(tolerates_any_key(t) for t in matching)
    reason = "tolerates-everything" if everything else "tolerates-without-gpu"
    how = "every taint" if everything else ctx.taint_text
    shown = ", ".join(toleration_text(t) for t in matching)
    return ctx.decision(STAY, reason, f"tolerates {how} and uses no GPU: an isolation leak",
                        warning=f"isolation leak: pod {ctx.namespace}/{ctx.name} tolerates {how} "
                                f"and uses no GPU; remove the toleration {shown} from "
                                f"{operators.workload_text(pod, ctx.owner_ref)}")


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
                           accelerator, gpu_fraction, resource_claim, gpu_env, gpu_runtime, gpu_cdi,
                           gpu_device_mount, tolerated, asks_for_gpu, nowhere_to_land)
# What each rule reads of a pod is declared in core/pod_fields.py (kube/essentials keeps it).


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
    owner = operators.owner_of(pod, ctx.owner_ref)
    if owner.known and owner.restarts_job and not ctx.options.allow_job_restart:
        gates.append(f"evicting it, {owner.known.operator} {owner.known.does} ({owner.name})")
        flags.append(FLAG_JOB_RESTART)
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
    unknown = owner.unknown_warning(f"{ctx.namespace}/{ctx.name}")
    warnings = [w for w in (_other_gpu_nodes_only(ctx, found), unknown) if w]
    return ctx.decision(MOVE, "not-tolerated", "; ".join([f"does not tolerate {ctx.taint_text}",
                                                          *owner.notes]),
                        pdbs=matching, landing=nodes, warning="; ".join(warnings))


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
           resource_claims: Optional[claims.Claims] = None,
           runtime_classes: Optional[Dict[str, str]] = None) -> PodDecision:
    """One pod's decision: the first rule that decides, else gated_or_move.

    ``gpu_taints`` are the taints the pod must tolerate; ``pdbs`` those of its namespace;
    ``cluster`` what the landing check reads (None: not checked); ``resource_claims`` the
    pods' ResourceClaims (None: not read, so a pod with claims is kept); ``runtime_classes``
    {RuntimeClass name: handler} (None: not read, so a class is judged by its name)."""
    ctx = rule_context(pod, gpu_taints, pdbs, options, missing_daemonsets, cluster, resource_claims,
                       runtime_classes)
    for rule in RULES:
        found = rule(pod, ctx)
        if found is not None:
            return found
    return gated_or_move(pod, ctx)


def plan_node(node: Obj, pods: Iterable[Obj], pdbs: Iterable[Obj], options: PlanOptions,
              missing_daemonsets: Iterable[Tuple[str, str]] = frozenset(),
              cluster: Optional[landing.Cluster] = None,
              resource_claims: Optional[claims.Claims] = None,
              settled: Optional[Dict[Tuple[str, str], PodDecision]] = None,
              runtime_classes: Optional[Dict[str, str]] = None) -> NodePlan:
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
                                     cluster, resource_claims, runtime_classes))
    return plan


def daemonsets_to_check(pods: Iterable[Obj]) -> Set[Tuple[str, str]]:
    """(namespace, name) of the DaemonSets that own the given pods."""
    found: Set[Tuple[str, str]] = set()
    for pod in pods:
        ref = controller_of(pod)
        if ref is not None and is_daemonset_pod(pod):
            found.add((pod["metadata"].get("namespace", ""), ref.get("name", "")))
    return found
