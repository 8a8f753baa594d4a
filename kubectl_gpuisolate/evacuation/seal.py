"""``evacuate --taint-first`` with a NoExecute GPU taint: fence first, seal last.

A NoExecute taint deletes the pods that do not tolerate it, bypassing the Eviction API and every
PodDisruptionBudget, so it is never the first write.  A node that has no GPU taint of the
NoExecute kind is fenced with the NoSchedule taint of the same key and value (a NoSchedule GPU
taint already there, of any value, is the fence); its pods are evicted behind that fence as for
a NoSchedule taint; and only when no pod left on the node would be deleted is the NoExecute
taint written ("sealed") and the fence this run added removed.  Otherwise the node keeps the
fence and the result names the pods that stay and the toleration they lack.  A node that
already has the NoExecute GPU taint is planned against it, as without --taint.

Behind the fence pods are judged against the fence: a pod that tolerates only the NoExecute
effect of the key (not NoSchedule) is evicted, although it could have stayed.
"""

from dataclasses import dataclass, replace
from typing import Tuple

from ..core import planner
from ..core.dryrun import DryRun
from ..core.noexecute import NO_EXECUTE, Deletion, deletions, fence_for
from ..core.taints import NOT_TAINTED, UNTAINTED, gpu_taints_on
from ..kube.nodes import apply_taint


@dataclass(frozen=True)
class Seal:
    """What became of the NoExecute taint on one fenced node."""

    taint: str                           # the NoExecute taint
    fence: str                           # the NoSchedule fence it was evacuated behind
    applied: bool                        # the NoExecute taint is on (or would be, in a dry run)
    fence_removed: bool                  # this run's fence was taken off again
    note: str                            # one sentence: what happened and why
    would_delete: Tuple[Deletion, ...] = ()   # pods that stay and do not tolerate it


def seal_mode(options) -> bool:
    return bool(options.taint_first) and options.gpu_taint.effect == NO_EXECUTE


def needs_seal(node, options) -> bool:
    """A node this run fences and seals: seal mode, and no NoExecute GPU taint on it yet (a
    NoSchedule GPU taint does not count as the NoExecute one)."""
    return seal_mode(options) and not gpu_taints_on((node.get("spec") or {}).get("taints"),
                                                    options.gpu_taint)


def plan_options_for(node, options) -> planner.PlanOptions:
    """The planner's options for one node: against the fence while it is only fenced."""
    if not needs_seal(node, options):
        return options.plan_options
    return replace(options.plan_options, managed_taint=fence_for(options.gpu_taint))


def not_sealed(options, why) -> Seal:
    fence = fence_for(options.gpu_taint)
    return Seal(str(options.gpu_taint), str(fence), False, False,
                f"{options.gpu_taint} not applied: {why}; the node keeps the fence {fence}")


def seal(kube, name, options, *, fence_added, leaving=frozenset(), progress=None) -> Seal:
    """Writes the NoExecute taint on a node whose evacuation finished, unless a pod that stays
    would be deleted by it; then removes the fence if this run added it.  ``leaving``: the
    UIDs of the pods that a dry run only would have evicted (they are not judged).  Both writes
    are guarded (Kube.update_node_taints)."""
    taint, fence = options.gpu_taint, fence_for(options.gpu_taint)
    pods = [p for p in kube.list_pods_on_node(name)
            if (p.get("metadata") or {}).get("uid") not in leaving]
    doomed = tuple(deletions(pods, taint, kube.list_pdbs()))
    if doomed:
        return Seal(str(taint), str(fence), False, False,
                    f"{taint} not applied: {len(doomed)} pod(s) that stay would be deleted by it; "
                    f"the node keeps the fence {fence}", doomed)
    dry_run: DryRun = options.dry_run
    if dry_run is not DryRun.CLIENT:
        for _ in apply_taint(kube, [kube.get_node(name)], taint, overwrite=False, dry_run=dry_run):
            pass
    removed = fence_added and _remove_fence(kube, name, fence, dry_run)
    suffix = dry_run.suffix
    note = f"{taint} applied{suffix}" + (f"; the fence {fence} removed{suffix}" if removed else "")
    if progress:
        progress(f"node/{name}: {note}")
    return Seal(str(taint), str(fence), True, bool(removed), note)


def _remove_fence(kube, name, fence, dry_run) -> bool:
    """Removes exactly the fence (key, value and effect), nothing else.  A dry run never wrote
    the fence, so there is nothing on the node to check the removal against."""
    if dry_run is not DryRun.NONE:
        return True
    wanted = fence.to_api()

    def compute(current):
        kept = [t for t in current or () if not (t.get("key") == wanted["key"]
                                                 and t.get("effect") == wanted["effect"]
                                                 and (t.get("value") or "") == fence.value)]
        return (kept, UNTAINTED) if len(kept) != len(current or ()) else (None, NOT_TAINTED)
    _, verb = kube.update_node_taints(name, compute, dry_run=dry_run)
    return verb == UNTAINTED


def already_noexecute_warnings(kube, nodes, options):
    """Nodes that already have the NoExecute GPU taint: the pods it is deleting or will delete
    (tolerationSeconds), whatever evacuate does; one warning per node."""
    if options.gpu_taint.effect != NO_EXECUTE:
        return []
    warnings = []
    for node in nodes:
        on_node = gpu_taints_on((node.get("spec") or {}).get("taints"), options.gpu_taint)
        if not on_node:
            continue
        name = node["metadata"]["name"]
        doomed = deletions(kube.list_pods_on_node(name), options.gpu_taint, kube.list_pdbs())
        if doomed:
            pods = ", ".join(d.ref + (f" (after {d.after}s)" if d.after else "") for d in doomed)
            warnings.append(f"node/{name} has the NoExecute GPU taint: the taint-eviction controller "
                            f"deletes, bypassing every PodDisruptionBudget, {pods}; evacuate evicts "
                            "through the Eviction API only those it reaches first")
    return warnings

