"""What ``evacuate`` tells people: the preflight report (refused nodes and the
PodDisruptionBudgets that will hold pods back, on stderr, before anything is
evicted), the plan (--dry-run=client) and the final summary per node (stdout),
and the json/yaml document of either (``render``).  The results are
``evacuation.run.NodeResult``s, read through their fields and properties."""

from typing import Any, Dict, List, Tuple

from ..core import planner
from ..core.dryrun import DryRun
from ..core.taints import Taint
from . import tables as output

SCHEMA_VERSION = "gpuisolate.evacuate/v1"
ACTIONS = {planner.MOVE: "evict", planner.STAY: "stay", planner.BLOCKED: "blocked",
           planner.WAIT: "wait"}


def report_refusal(check, stream):
    """Names every pod that blocks the node, and the flags that would allow them."""
    name = check.plan.name
    if len(check.refusal) == 1 and not check.plan.blocked:
        stream.write(f"node/{name} refused: {check.refusal[0]}\n")
        return
    stream.write(f"node/{name} refused, nothing will be evicted there:\n")
    for line in check.refusal:
        stream.write(f"  {line}\n")
    if check.flags:
        stream.write(f"  rerun with {' '.join(check.flags)} to allow "
                     f"{'these pods' if len(check.plan.blocked) > 1 else 'this pod'}\n")
    stream.flush()


def report_pdbs(checks, options, stream):
    """Up front: PDBs that can never allow an eviction, and those that allow none now."""
    found: Dict[Tuple[str, str], Tuple[Any, List[str]]] = {}
    for check in checks:
        for d in check.plan.to_move:
            if len(d.pdbs) == 1 and (d.pdbs[0].never_allows or d.pdbs[0].blocks_now):
                pdb = d.pdbs[0]
                found.setdefault((pdb.namespace, pdb.name), (pdb, []))[1].append(d.ref)
    for (namespace, name), (pdb, pods) in sorted(found.items()):
        status = f"needs {pdb.desired_healthy} healthy, has {pdb.current_healthy}"
        if pdb.never_allows:
            output.warn(f"PodDisruptionBudget {namespace}/{name} can never allow an eviction "
                        f"({pdb.never_allows}; {status}): {', '.join(pods)} will not move; relax "
                        "the PDB or scale its workload up, then run evacuate again", stream)
        else:
            until = "until --timeout" if options.timeout else "with no deadline (--timeout 0)"
            output.warn(f"PodDisruptionBudget {namespace}/{name} allows no eviction now "
                        f"({status}): {', '.join(pods)} will wait for it, {until}", stream)


def _amount(value, resource, precision=1):
    """CPU in cores, memory in GiB (MiB below 1 GiB)."""
    if resource == "cpu":
        return f"{float(value):.{precision}f}"
    if value < 2 ** 30:
        return f"{float(value) / 2 ** 20:.{precision}f} MiB"
    return f"{float(value) / 2 ** 30:.{precision}f} GiB"


def fit_warning(shortfall):
    """One sentence per shortfall (core.resources.Shortfall), e.g. "12 pods need 9.5 CPU;
    their landing nodes have 3.2 free (cpu-1, cpu-2)"."""
    precision = 1
    while precision < 3 and _amount(shortfall.need, shortfall.resource, precision) == \
            _amount(shortfall.have, shortfall.resource, precision):
        precision += 1
    need, have = (_amount(v, shortfall.resource, precision) for v in (shortfall.need, shortfall.have))
    what = "CPU" if shortfall.resource == "cpu" else "of memory"
    nodes, one = shortfall.nodes, shortfall.pods == 1
    more = f" and {len(nodes) - 3} more" if len(nodes) > 3 else ""
    if shortfall.scope == "each":
        many = "" if one else f" (the largest of {shortfall.pods} that fit on none)"
        return (f"{'a pod needs' if one else 'pods need'} {need} {what}{many}; the landing node "
                f"with the most free has {have} ({nodes[0]}); "
                f"{'its replacement' if one else 'their replacements'} will stay Pending")
    if shortfall.scope == "union":
        lead, theirs = f"together, the {shortfall.pods} pods that move need", "all their landing nodes have"
    else:
        lead = f"{shortfall.pods} pod{'' if one else 's'} need{'s' if one else ''}"
        theirs = f"{'its' if one else 'their'} landing " + \
            ("nodes have" if len(nodes) > 1 else "node has")
    return (f"{lead} {need} {what}; {theirs} {have} free ({', '.join(nodes[:3])}{more}); "
            "some replacements may stay Pending")


def report_fit(shortfalls, stream):
    """Before any eviction: one warning line per shortfall."""
    for shortfall in shortfalls:
        output.warn(fit_warning(shortfall), stream)
    stream.flush()


def unschedulable_line(replacement):
    return (f"replacement {replacement.ref} of {replacement.owner} is Unschedulable: "
            f"{replacement.message}")


def report_unschedulable(replacements, stream):
    for replacement in replacements:
        output.warn(unschedulable_line(replacement), stream)
    stream.flush()


def _stay_text(plan):
    stays = plan.stay_reasons if plan else {}
    total = sum(stays.values())
    detail = ", ".join(f"{n} {r}" for r, n in sorted(stays.items()))
    return f"{total} ({detail})" if total else "0"


def _pdb_text(decision):
    if decision.action != planner.MOVE or len(decision.pdbs) != 1:
        return ""
    pdb = decision.pdbs[0]
    if pdb.never_allows:
        return f"; PDB {pdb.name} never allows an eviction ({pdb.never_allows})"
    return f"; PDB {pdb.name} allows {pdb.disruptions_allowed} disruption(s) now"


def render_plan(results, options):
    """--dry-run=client: per node, what would be evicted, what stays and why, what blocks."""
    parts: List[str] = []
    for result in results:
        plan = result.plan
        taint = ", ".join(str(Taint.from_api(t)) for t in plan.gpu_taints) or "absent"
        verdict = "would be refused" if result.refused else \
            f"would evict {len(plan.to_move)} pod(s)"
        parts.append(f"{chr(10) if parts else ''}node/{plan.name}: GPU taint {taint}; {verdict}, "
                     f"{len(plan.with_action(planner.STAY))} stay, {len(plan.blocked)} blocked, "
                     f"{len(plan.with_action(planner.WAIT))} terminating (dry run)\n")
        parts.append(output.table(["namespace", "pod", "action", "reason", "detail"],
                                  [[d.namespace, d.name, ACTIONS[d.action], d.reason,
                                    d.message + _pdb_text(d)] for d in plan.decisions]))
    return "".join(parts)


NOWHERE_FIX = ("to move it, relax that constraint or make a non-GPU node fit it; to keep it "
               "here, give it a toleration for the GPU taint")


def _nowhere(results):
    """The pods left in place because their replacement could land nowhere."""
    return [(r.name, d) for r in results if r.plan
            for d in r.plan.decisions if d.reason in planner.MISPLACED_STAYS]


def render_summary(results, options):
    server = options.dry_run is DryRun.SERVER
    rows = []
    for r in results:
        moved = sum(1 for o in r.outcomes if o.done)
        rows.append([r.name, r.state.value, moved, _stay_text(r.plan),
                     sum(1 for o in r.outcomes if o.pending), sum(1 for o in r.outcomes if o.failed),
                     f"{r.seconds:.1f}s"])
    parts = [output.table(["node", "result", "would move" if server else "moved", "stayed",
                           "pending", "failed", "time"], rows)]
    left = [[r.name, o.target.ref, "failed" if o.failed else "pending", o.reason()]
            for r in results for o in r.not_moved]
    if left:
        parts.append("\nNot moved:\n")
        parts.append(output.table(["node", "pod", "state", "reason"], left))
    nowhere = _nowhere(results)
    if nowhere:
        parts.append(f"\nLeft in place, nowhere to land ({NOWHERE_FIX}):\n")
        parts.append(output.table(["node", "pod", "reason"], [[name, d.ref, d.message]
                                                             for name, d in nowhere]))
    refused = [[r.name, line] for r in results if r.refused for line in r.refusal]
    if refused:
        parts.append("\nRefused by the preflight (nothing evicted there):\n")
        parts.append(output.table(["node", "reason"], refused))
    arrived = [[r.name, d.ref, ACTIONS[d.action], d.message] for r in results for d in r.arrivals]
    if arrived:
        parts.append("\nArrived during the run:\n")
        parts.append(output.table(["node", "pod", "action", "detail"], arrived))
    unplaced = [[r.name, u.ref, u.owner, u.message] for r in results
                for u in getattr(r, "unschedulable", ())]
    if unplaced:
        parts.append("\nReplacements the scheduler marked Unschedulable:\n")
        parts.append(output.table(["node", "replacement", "owner", "message"], unplaced))
    parts.append(render_seals(results))
    if server:
        parts.append("\n(server dry run: the API server checked each eviction; nothing was "
                     "evicted, and each pod was judged against the same PDB budget)\n")
    return "".join(parts)


def render_seals(results):
    """evacuate --taint-first with a NoExecute taint: per fenced node, whether the NoExecute taint went
    on, and the pods that stay and lack its toleration."""
    seals = [(r.name, r.seal) for r in results if getattr(r, "seal", None) is not None]
    if not seals:
        return ""
    parts = ["\nNoExecute taint:\n"]
    parts += [f"  node/{name}: {s.note}\n" for name, s in seals]
    rows = [[name, d.ref, f"{d.lacks} without tolerationSeconds" if d.after else d.lacks,
             "at once" if not d.after else f"after {d.after}s", ", ".join(d.why) or "-"]
            for name, s in seals for d in s.would_delete]
    if rows:
        parts.append("\nWould be deleted by the NoExecute taint, so it was not applied:\n")
        parts.append(output.table(["node", "pod", "lacks toleration", "deleted", "why"], rows))
    return "".join(parts)


def _seal_doc(seal):
    return {"applied": seal.applied, "taint": seal.taint, "fence": seal.fence,
            "fenceRemoved": seal.fence_removed, "note": seal.note,
            "wouldDelete": [{"pod": d.ref, "lacks": d.lacks, "afterSeconds": d.after,
                             "why": list(d.why), "pdbs": list(d.pdbs)}
                            for d in seal.would_delete]}


def _node_doc(result, server_dry_run):
    plan = result.plan
    stayed: Dict[str, List[str]] = {}
    for d in plan.with_action(planner.STAY) if plan else ():
        stayed.setdefault(d.reason, []).append(d.ref)
    doc = {"name": result.name, "result": result.state.value, "seconds": round(result.seconds, 1),
           "gpuTainted": plan.tainted if plan else None,
           "refusal": list(result.refusal),
           "stayed": stayed,
           "nowhereToLand": [{"pod": d.ref, "reason": d.message, "fix": NOWHERE_FIX}
                             for _, d in _nowhere([result])]}
    if result.planned_only:
        doc["wouldMove"] = [d.ref for d in plan.to_move] if plan else []
        doc["blocked"] = [{"pod": d.ref, "message": d.message, "flags": list(d.flags),
                           "pdbs": [p.name for p in d.pdbs]} for d in plan.blocked] if plan else []
        doc["terminating"] = [d.ref for d in plan.with_action(planner.WAIT)] if plan else []
    else:
        doc["wouldMove" if server_dry_run else "moved"] = [o.target.ref for o in result.outcomes
                                                          if o.done]
        doc["pending"] = [{"pod": o.target.ref, "state": o.state, "reason": o.reason()}
                          for o in result.outcomes if o.pending]
        doc["failed"] = [{"pod": o.target.ref, "reason": o.reason()}
                         for o in result.outcomes if o.failed]
        doc["arrived"] = [{"pod": d.ref, "action": ACTIONS[d.action], "reason": d.reason}
                          for d in result.arrivals]
        doc["unschedulable"] = [{"pod": u.ref, "owner": u.owner, "message": u.message}
                                for u in getattr(result, "unschedulable", ())]
    if getattr(result, "seal", None) is not None:
        doc["noExecute"] = _seal_doc(result.seal)
    return doc


def to_document(results, options):
    """The versioned json/yaml schema of the plan or the summary."""
    return {"schemaVersion": SCHEMA_VERSION, "taint": str(options.gpu_taint),
            "dryRun": options.dry_run.value,
            "nodes": [_node_doc(r, options.dry_run is DryRun.SERVER) for r in results]}


def render(results, options):
    """What evacuate writes to stdout: the document (-o json|yaml), else the plan (client dry
    run) or the summary."""
    if options.output:
        return output.document(to_document(results, options), options.output)
    if options.dry_run is DryRun.CLIENT:
        return render_plan(results, options) + render_seals(results)
    return render_summary(results, options)
