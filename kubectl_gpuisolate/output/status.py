"""What ``status`` prints: the seed's node view, then per GPU node its summary and every
pod's verdict and reason, the PodDisruptionBudgets that would block a move, and the
versioned json/yaml document (docs/output.md)."""

from collections import Counter

from ..core import planner
from . import tables as output

SCHEMA_VERSION = "gpuisolate.status/v1"


def _summary(plan):
    counts = Counter(d.action for d in plan.decisions)
    stays = Counter(d.reason for d in plan.decisions if d.action == planner.STAY)
    return counts, stays


def render_text(nodes, plans, *, wide=False):
    parts = [output.node_view(nodes)]
    for plan in plans:
        counts, stays = _summary(plan)
        taint = (", ".join(f"{t['key']}{'=' + t['value'] if t.get('value') else ''}:{t['effect']}"
                           for t in plan.gpu_taints) if plan.tainted else "absent")
        stay_text = ", ".join(f"{n} {r}" for r, n in sorted(stays.items()))
        header = (f"\nnode/{plan.name}: {plan.gpu_count} GPU, GPU taint {taint}"
                  f"{', cordoned' if plan.unschedulable else ''}; {len(plan.decisions)} pods: "
                  f"{len(plan.misplaced)} would move, {counts[planner.STAY]} stay"
                  f"{' (' + stay_text + ')' if stay_text else ''}"
                  f"{', %d terminating' % counts[planner.WAIT] if counts[planner.WAIT] else ''}\n")
        parts.append(header)
        rows = []
        for d in plan.decisions:
            verdict = {"move": "would move", "blocked": "would move", "stay": "stays",
                       "wait": "terminating"}[d.action]
            row = [d.namespace, d.name, verdict, d.reason, d.message]
            if wide:
                row[3:3] = [d.owner or "<none>",
                            ",".join(p.name for p in d.pdbs) or "<none>"]
            rows.append(row)
        headers = ["namespace", "pod", "verdict", "reason", "detail"]
        if wide:
            headers[3:3] = ["owner", "pdb"]
        parts.append(output.table(headers, rows))
    blockers = planner.pdb_blockers(plans)
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


def to_document(options, nodes, plans):
    """The versioned json/yaml schema (documented in docs/output.md)."""
    node_docs = []
    for node, plan in zip(nodes, plans):
        counts, stays = _summary(plan)
        node_docs.append({
            "name": plan.name,
            "gpuPresent": (node["metadata"].get("labels") or {}).get("nvidia.com/gpu.present"),
            "gpuCount": plan.gpu_count,
            "taints": (node.get("spec") or {}).get("taints") or [],
            "gpuTainted": plan.tainted,
            "unschedulable": plan.unschedulable,
            "summary": {"wouldMove": len(plan.misplaced), "stay": counts[planner.STAY],
                        "terminating": counts[planner.WAIT], "stayReasons": dict(sorted(stays.items()))},
            "pods": [{"namespace": d.namespace, "name": d.name, "uid": d.uid, "owner": d.owner,
                      "verdict": d.action, "reason": d.reason, "message": d.message,
                      "flags": list(d.flags), "pdbs": [p.name for p in d.pdbs],
                      **({"warning": d.warning} if d.warning else {})}
                     for d in plan.decisions],
        })
    return {"schemaVersion": SCHEMA_VERSION, "taint": str(options.managed_taint),
            "nodes": node_docs,
            "pdbBlockers": [_pdb_doc(p) for p in planner.pdb_blockers(plans)],
            "warnings": [w for plan in plans for w in plan.warnings]}
