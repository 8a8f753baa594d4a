"""What a NoExecute taint does to the pods already on a node (pure).

A NoExecute taint is not a fence: the controller-manager's taint-eviction controller DELETES
every pod on the node that does not tolerate it, straight away or, when the toleration has
``tolerationSeconds``, once they have passed.  Deletion bypasses the Eviction API and every
PodDisruptionBudget, and a DaemonSet pod or a GPU pod that tolerates only NoSchedule goes
too.  ``deletions`` says which pods a NoExecute taint would delete, after how long, and why
each one matters; ``taint`` and ``evacuate --taint-first`` refuse or hold back on that answer.
"""

from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple

from . import disruption, gpu, hidden_gpu, planner
from .gpu import Obj
from .taints import Taint, tolerates

NO_EXECUTE = "NoExecute"
NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"

# Why a deleted pod matters, as the report names it (stable words: the json document has them).
WHY_PDB = "pdb-guarded"
WHY_GPU = "gpu-consumer"
WHY_DAEMONSET = "daemonset"
WHY_MIRROR = "mirror"
WHY_NO_CONTROLLER = "no-controller"
WHY_FINISHED = "finished"
WHY_TEXT = {
    WHY_PDB: "PDB-guarded ({})",
    WHY_GPU: "GPU consumer",
    WHY_DAEMONSET: "DaemonSet pod (the DaemonSet recreates it and it is deleted again)",
    WHY_MIRROR: "mirror pod of a static pod",
    WHY_NO_CONTROLLER: "no controller: would not be recreated",
    WHY_FINISHED: "finished pod: its logs go with it",
}


class Deletion(NamedTuple):
    """One pod that a NoExecute taint would delete."""

    namespace: str
    name: str
    uid: str
    after: Optional[int]       # seconds until the controller deletes it (0: at once)
    why: Tuple[str, ...]       # WHY_* codes, in the order of WHY_TEXT
    pdbs: Tuple[str, ...]      # the names of the PDBs that guard it (which it bypasses)
    lacks: str                 # the toleration it lacks, as a taint is written

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    def describe(self) -> str:
        """``ns/pod (GPU consumer, ...), deleted at once|after Ns: it does not tolerate T``."""
        why = [WHY_TEXT[w].format(", ".join(self.pdbs)) for w in self.why]
        when = "at once" if not self.after else f"after {self.after}s (its tolerationSeconds)"
        detail = f" ({'; '.join(why)})" if why else ""
        lack = (f"its toleration of {self.lacks} has tolerationSeconds" if self.after
                else f"it does not tolerate {self.lacks}")
        return f"{self.ref}{detail}: deleted {when}; {lack}"


def deletion_delay(tolerations: Optional[Sequence[Obj]], taint: Taint) -> Optional[int]:
    """Seconds until the taint-eviction controller deletes a pod with these tolerations once
    ``taint`` (NoExecute) is on its node: None when never, 0 at once.

    As the controller computes it: no matching toleration deletes at once; among the matching
    ones the smallest tolerationSeconds wins (<= 0 is at once); a matching toleration without
    tolerationSeconds does not outlast one with them, and if none has them the pod stays."""
    matching = [t for t in tolerations or () if tolerates(t, taint.to_api())]
    if not matching:
        return 0
    seconds = [t["tolerationSeconds"] for t in matching if t.get("tolerationSeconds") is not None]
    if not seconds:
        return None
    return max(0, min(int(s) for s in seconds))


def _why(pod: Obj, pdbs: Sequence[Obj]) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    guarding = tuple(sorted((p.get("metadata") or {}).get("name", "")
                            for p in disruption.pdbs_for_pod(pod, pdbs)))
    phase = (pod.get("status") or {}).get("phase")
    checks = (
        (WHY_PDB, bool(guarding)),
        (WHY_GPU, bool(gpu.pod_gpu_resources(pod) or gpu.pod_resource_claims(pod)
                       or hidden_gpu.uses(pod))),
        (WHY_DAEMONSET, planner.is_daemonset_pod(pod)),
        (WHY_MIRROR, planner.is_mirror_pod(pod)),
        (WHY_NO_CONTROLLER, planner.controller_of(pod) is None and not planner.is_mirror_pod(pod)),
        (WHY_FINISHED, phase in ("Succeeded", "Failed")),
    )
    return tuple(code for code, hit in checks if hit), guarding


def deletions(pods: Iterable[Obj], taint: Taint, pdbs: Iterable[Obj] = ()) -> List[Deletion]:
    """The pods on a node that ``taint`` (NoExecute) would delete, in the order given.

    A pod already terminating is left out: it is going anyway.  ``pdbs`` are the cluster's
    PodDisruptionBudgets (each applies in its own namespace)."""
    pdbs = list(pdbs)
    found = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        after = deletion_delay((pod.get("spec") or {}).get("tolerations"), taint)
        if after is None:
            continue
        why, guarding = _why(pod, pdbs)
        found.append(Deletion(meta.get("namespace", ""), meta.get("name", ""), meta.get("uid", ""),
                              after, why, guarding, str(taint)))
    return found


def fence_for(taint: Taint) -> Taint:
    """The NoSchedule taint of the same key and value: the fence evacuate evicts behind
    before it puts a NoExecute taint on."""
    return Taint(taint.key, taint.value, NO_SCHEDULE)
