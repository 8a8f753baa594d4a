"""What ``status`` prints: the seed's node view, then per GPU node its summary and the pods
that need attention (every pod's verdict and reason with ``all_pods``), the
PodDisruptionBudgets that would block a move, and the versioned json/yaml document
(docs/output.md), all from a ``StatusResult``."""

from collections import Counter
from dataclasses import dataclass
from typing import List, Optional

from ..core import gpu, guard, managers, planner
from ..core.taints import Taint, gpu_taints_on
from . import tables as output

SCHEMA_VERSION = "gpuisolate.status/v1"
VERDICTS = {planner.MOVE: "would move", planner.BLOCKED: "would move", planner.STAY: "stays",
            planner.WAIT: "terminating"}


@dataclass(frozen=True)
class StatusResult:
    nodes: List[dict]                 # the selected nodes as the API returned them, in its order
    plans: List[planner.NodePlan]     # one per node, in the same order
    taint: Taint                      # the managed taint (--gpu-taint)
    view: Optional[List[dict]] = None   # the nodes of the first table (default: ``nodes``)
    server_version: str = ""            # GET /version's gitVersion (json/yaml only)
    guard_state: Optional[guard.GuardState] = None   # None: not read (then not shown)

    @property
    def would_reject(self):
        """The running pods the guard would have rejected (commands/guard.py)."""
        leaks = [(d.namespace, d.name) for p in self.plans for d in p.leaks]
        return guard.would_reject(leaks, self.guard_state) if self.guard_state else []

    @property
    def view_nodes(self):
        return self.nodes if self.view is None else self.view

    @property
    def stray_taints(self):
        """Nodes of the view with no GPU signal that carry the GPU taint: (name, taint text)."""
        found = []
        for node in self.view_nodes:
            on = gpu_taints_on((node.get("spec") or {}).get("taints"), self.taint)
            if on and not gpu.is_gpu_node(node):
                found.append((node["metadata"]["name"], ", ".join(str(Taint.from_api(t)) for t in on)))
        return found

    @property
    def warnings(self):
        stray = [f"node/{name} has no GPU signal but carries the GPU taint {text}; remove it with "
                 f"'kubectl gpuisolate untaint {name}'" for name, text in self.stray_taints]
        return [w for plan in self.plans for w in plan.warnings] + stray


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
            f"{', %d terminating' % counts[planner.WAIT] if counts[planner.WAIT] else ''}"
            f"{_leak_text(len(plan.leaks))}\n")


def _leak_text(leaks):
    return f"; {leaks} isolation leak{'s' if leaks != 1 else ''}" if leaks else ""


def needs_attention(decision):
    """Would move, is gated, has nowhere to land, or carries a warning."""
    return decision.misplaced or bool(decision.warning)


def _pod_table(plan, wide, all_pods=True):
    headers = ["namespace", "pod", "verdict", "reason", "detail"]
    if wide:
        headers[3:3] = ["owner", "pdb"]
    rows = []
    for d in plan.decisions if all_pods else [d for d in plan.decisions if needs_attention(d)]:
        row = [d.namespace, d.name, VERDICTS[d.action], d.reason, d.message]
        if wide:
            row[3:3] = [d.owner or "<none>", ",".join(p.name for p in d.pdbs) or "<none>"]
        rows.append(row)
    return output.table(headers, rows)


def render_text(result, *, wide=False, all_pods=True):
    parts = [output.node_view(result.view_nodes)]
    for plan in result.plans:
        parts.append(_header(plan, wide))
        if all_pods or any(needs_attention(d) for d in plan.decisions):
            parts.append(_pod_table(plan, wide, all_pods))
    blockers = planner.pdb_blockers(result.plans)
    if blockers:
        parts.append("\nPodDisruptionBudgets that would block a move:\n")
        parts.append(output.table(
            ["namespace", "pdb", "allowed", "healthy", "needs", "note"],
            [[p.namespace, p.name, p.disruptions_allowed, p.current_healthy, p.desired_healthy,
              f"never allows an eviction: {p.never_allows}" if p.never_allows
              else "allows no eviction now"] for p in blockers]))
    parts.append(_guard_text(result))
    return "".join(parts)


def _guard_text(result):
    state = result.guard_state
    if state is None:
        return ""
    if state.mode == guard.UNKNOWN:
        head = f"unknown ({state.why})"
    elif state.mode == guard.ABSENT:
        head = "absent ('kubectl gpuisolate guard' keeps new leaks off the GPU nodes)"
    else:
        head = f"{state.mode} (exempt namespaces: {', '.join(state.exempt) or 'none'})"
    pods = result.would_reject
    rejected = (f"; {len(pods)} running pod{'s' if len(pods) != 1 else ''} it would reject: "
                f"{', '.join(pods)}" if pods else "")
    return f"\nguard: {head}{rejected}\n"


def _guard_doc(result):
    state = result.guard_state
    return {"mode": state.mode, "exemptNamespaces": list(state.exempt), "wouldReject": result.would_reject,
            **({"why": state.why} if state.why else {})}


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
                    "terminating": counts[planner.WAIT], "leaks": len(plan.leaks),
                    "stayReasons": dict(sorted(plan.stay_reasons.items()))},
        "pods": [_pod_doc(d) for d in plan.decisions],
    }


def to_document(result):
    """The versioned json/yaml schema (documented in docs/output.md)."""
    return {"schemaVersion": SCHEMA_VERSION, "serverVersion": result.server_version,
            "taint": str(result.taint),
            "nodes": [_node_doc(node, plan) for node, plan in zip(result.nodes, result.plans)],
            "pdbBlockers": [_pdb_doc(p) for p in planner.pdb_blockers(result.plans)],
            **({"guard": _guard_doc(result)} if result.guard_state else {}),
            "warnings": result.warnings}
