"""PodDisruptionBudgets as the planner reads them: which ones cover a pod (policy/v1 rules) and
whether one allows an eviction now, or ever.

Pure.
"""

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Tuple

from . import selectors
from .gpu import Obj


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
    def blocks_now(self) -> bool:
        return self.disruptions_allowed <= 0


def pdb_state(pdb: Obj) -> PdbState:
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


def pdbs_for_pod(pod: Obj, pdbs: Iterable[Obj]) -> List[Obj]:
    """The PDBs whose selector matches the pod, in its namespace (policy/v1 rules)."""
    meta = pod.get("metadata") or {}
    namespace, labels = meta.get("namespace"), meta.get("labels") or {}
    return [p for p in pdbs
            if (p.get("metadata") or {}).get("namespace") == namespace
            and selectors.matches((p.get("spec") or {}).get("selector"), labels)]


def pdb_blockers(plans: Iterable[Any]) -> List[PdbState]:
    """The PDBs covering pods that would move and that allow no eviction now, by name
    (``plans``: core.planner NodePlans)."""
    seen: Dict[Tuple[str, str], PdbState] = {}
    for plan in plans:
        for decision in plan.misplaced:
            for pdb in decision.pdbs:
                if pdb.blocks_now or pdb.never_allows:
                    seen[(pdb.namespace, pdb.name)] = pdb
    return [seen[k] for k in sorted(seen)]
