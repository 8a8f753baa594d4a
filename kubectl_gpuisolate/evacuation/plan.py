"""What evacuate will do on each node, decided before anything is evicted (pure).

``preflight`` judges a node's plan as a whole (all or nothing); ``targets_for`` turns the
planner's MOVE and WAIT decisions into eviction targets; ``lanes`` groups them so that the
pods of one PodDisruptionBudget are evicted one at a time.
"""

from dataclasses import dataclass
from typing import Dict, List, Tuple

from ..core import planner


@dataclass(frozen=True)
class Target:
    """One pod to move off the node (from a planner MOVE or WAIT decision)."""

    namespace: str
    name: str
    uid: str
    pdbs: Tuple[str, ...] = ()     # names of the PDBs that match it (its namespace)
    pdb_never: str = ""            # why its PDB can never allow an eviction, if it cannot
    terminating: bool = False      # already terminating: wait for it, never evict
    owner: str = ""                # Kind/name of its controller, "" for a bare pod
    owner_uid: str = ""            # the controller's UID, which its replacement carries
    resource_version: str = ""     # the pod's when planned ("" sends no such precondition)

    @property
    def ref(self):
        return f"{self.namespace}/{self.name}"



@dataclass
class NodeCheck:
    """The preflight of one node: why it is refused (empty when it may be evacuated)."""

    plan: planner.NodePlan
    refusal: List[str]
    flags: List[str]

    @property
    def ok(self):
        return not self.refusal


def preflight(plan, options):
    """All-or-nothing per node: someone else's maintenance, no GPU taint, or any BLOCKED pod
    refuses the node."""
    refusal = [f"{who}; evacuate would race it, so it leaves the node alone"
               for who in plan.maintenance]
    if not plan.tainted:
        refusal.append(f"it lacks the GPU taint {options.gpu_taint}, so evicted pods could come "
                       "straight back; run 'kubectl gpuisolate taint' first or pass --taint-first")
    refusal += [f"pod {d.ref} {d.message}" for d in plan.blocked]
    flags = sorted({f for d in plan.blocked for f in d.flags})
    return NodeCheck(plan, refusal, flags)


def targets_for(plan):
    """The pods evacuate acts on: MOVE decisions (evicted) and WAIT ones (waited for)."""
    targets = []
    for d in plan.decisions:
        if d.action == planner.MOVE:
            never = d.pdbs[0].never_allows if len(d.pdbs) == 1 else None
            targets.append(Target(d.namespace, d.name, d.uid, tuple(p.name for p in d.pdbs),
                                  never or "", owner=d.owner, owner_uid=d.owner_uid,
                                  resource_version=d.resource_version))
        elif d.action == planner.WAIT:
            targets.append(Target(d.namespace, d.name, d.uid, terminating=True))
    return targets



def lanes(targets):
    """Groups targets into lanes: one per PDB (its pods, evicted one at a time), and one
    per pod without a single PDB.  PDB lanes come first: they take the longest."""
    by_pdb: Dict[Tuple[str, str], List[Target]] = {}
    solo: List[Tuple[None, List[Target]]] = []
    for target in sorted(targets, key=lambda t: (t.namespace, t.name)):
        if len(target.pdbs) == 1:
            by_pdb.setdefault((target.namespace, target.pdbs[0]), []).append(target)
        else:
            solo.append((None, [target]))
    return list(by_pdb.items()) + solo
