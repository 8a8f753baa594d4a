"""What ``status`` prints: the seed's node view, then per GPU node its summary and every
pod's verdict and reason, the PodDisruptionBudgets that would block a move, and the
versioned json/yaml document (docs/output.md), all from a ``StatusResult``."""

from collections import Counter
from dataclasses import dataclass
from typing import List

from ..core import managers, planner
from ..core.taints import Taint
from . import tables as output

SCHEMA_VERSION = "gpuisolate.status/v1"
VERDICTS = {planner.MOVE: "would move", planner.BLOCKED: "would move", planner.STAY: "stays",
            planner.WAIT: "terminating"}


@dataclass(frozen=True)
class StatusResult:
    nodes: List[dict]                 # the selected nodes as the API returned them, in its order
    plans: List[planner.NodePlan]     # one per node, in the same order
    taint: Taint                      # the managed taint (--gpu-taint)

    @property
    def warnings(self):
        return [w for plan in self.plans for w in plan.warnings]


def _taint_text(plan):
    return ", ".join(str(Taint.from_api(t)) for t in plan.gpu_taints) or "absent"


def _header(plan, wide):
    counts, stays = Counter(d.action for d in plan.decisions), plan.stay_reasons
    stay_text = ", ".join(f"{n} {r}" for r, n in sorted(stays.items()))
    signal = f"{plan.signal.code}: {plan.signal.message}" if wide else plan.signal.code
    stuck = len(plan.misplaced) - len(plan.movable)
    return (f"\nnode/{plan.name}: {plan.gpu_count} GPU, GPU taint {_taint_text(plan)}"
            f"{', cordoned' if plan.unschedulable else ''}; signal {signal}; {len(plan.decisions)} pods: "
            f"{len(plan.movable)} would move{f', {stuck} nowhere to land' if stuck else ''}, "
            f"{counts[planner.STAY]} stay"
            f"{' (' + stay_text + ')' if stay_text else ''}"
            f"{', %d terminating' % counts[planner.WAIT] if counts[planner.WAIT] else ''}\n")


def _pod_table(plan, wide):
    headers = ["namespace", "pod", "verdict", "reason", "detail"]
    if wide:
        headers[3:3] = ["owner", "pdb"]
    rows = []
    for d in plan.decisions:
        row = [d.namespace, d.name, VERDICTS[d.action], d.reason, d.message]
        if wide:
            row[3:3] = [d.owner or "<none>", ",".join(p.name for p in d.pdbs) or "<none>"]
        rows.append(row)
    return output.table(headers, rows)


def render_text(result, *, wide=False):
    parts = [output.node_view(result.nodes)]
    for plan in result.plans:
        parts.append(_header(plan, wide))
        parts.append(_pod_table(plan, wide))
    blockers = planner.pdb_blockers(result.plans)
    if blockers:
        parts.append("\nPodDisruptionBudgets that would block a move:\n")
        parts.append(output.table(
            ["namespace", "pdb", "allowed", "healthy", "needs", "note"],
            [[p.namespace, p.name, p.disruptions_allowed, p.current_healthy, p.desired_healthy,
              f"never allows an eviction: {p.never_allows}" if p.never_allows
              else "allows no eviction now"] for p in blockers]))
    return "".join(parts)


def _pdb_doc(pdb):
    return {"namespace": pdb.namespace, "name": pdb.name,
            "disruptionsAllowed": pdb.disruptions_allowed, "currentHealthy": pdb.current_healthy,
            "desiredHealthy": pdb.desired_healthy, "expectedPods": pdb.expected_pods,
            "neverAllows": pdb.never_allows}


def _pod_doc(d):
    return {"namespace": d.namespace, "name": d.name, "uid": d.uid, "owner": d.owner,
            "verdict": d.action, "reason": d.reason, "message": d.message,
            "flags": list(d.flags), "pdbs": [p.name for p in d.pdbs],
            **({"landingNodes": len(d.landing)} if d.landing else {}),
            **({"warning": d.warning} if d.warning else {})}


def _manager_doc(node):
    manager = managers.manager_of(node)
    return {"manager": manager.kind if manager else None, "pool": manager.pool if manager else None}


def _node_doc(node, plan):
    counts = Counter(d.action for d in plan.decisions)
    return {
        "name": plan.name,
        "gpuPresent": (node["metadata"].get("labels") or {}).get("nvidia.com/gpu.present"),
        "gpuCount": plan.gpu_count,
        "signal": {"code": plan.signal.code, "message": plan.signal.message},
        "taints": (node.get("spec") or {}).get("taints") or [],
        "gpuTainted": plan.tainted,
        "unschedulable": plan.unschedulable,
        **_manager_doc(node),
        "summary": {"wouldMove": len(plan.movable), "stay": counts[planner.STAY],
                    "nowhereToLand": len(plan.misplaced) - len(plan.movable),
                    "terminating": counts[planner.WAIT],
                    "stayReasons": dict(sorted(plan.stay_reasons.items()))},
        "pods": [_pod_doc(d) for d in plan.decisions],
    }


def to_document(result):
    """The versioned json/yaml schema (documented in docs/output.md)."""
    return {"schemaVersion": SCHEMA_VERSION, "taint": str(result.taint),
            "nodes": [_node_doc(node, plan) for node, plan in zip(result.nodes, result.plans)],
            "pdbBlockers": [_pdb_doc(p) for p in planner.pdb_blockers(result.plans)],
            "warnings": result.warnings}
