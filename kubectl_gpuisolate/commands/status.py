"""``status``: the GPU nodes as the seed's custom-columns view, then per node
its GPU count, whether the GPU taint is present, each pod's verdict and reason,
and the PodDisruptionBudgets that would block a move."""

import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .. import output, planner
from ..errors import EXIT_FINDINGS, EXIT_OK
from ..flags import ConnectionOptions, add_output_flag, connection_options
from ..taints import DEFAULT_TAINT, Taint, parse_taint
from .common import FETCH_WORKERS, add_node_flags, build_plans, find_nodes_with_version, node_selection

SCHEMA_VERSION = "gpuisolate.status/v1"

EXAMPLES = """examples:
  # The GPU nodes and the pods on them that do not belong there
  kubectl gpuisolate status

  # Nodes of another pool, as JSON, exit 1 if anything is misplaced (for cron)
  kubectl gpuisolate status -l pool=gpu -o json --exit-code
"""


@dataclass(frozen=True)
class StatusOptions:
    connection: ConnectionOptions
    names: list
    requirements: list
    selector_text: str
    managed_taint: Taint
    output: str
    exit_code: bool

    @classmethod
    def from_args(cls, args):
        names, requirements, text = node_selection(args)
        return cls(connection=connection_options(args), names=names, requirements=requirements,
                   selector_text=text, managed_taint=parse_taint(args.taint),
                   output=args.output, exit_code=args.exit_code)


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "status", parents=parents, help="show GPU nodes, their taints and misplaced pods",
        description=__doc__, epilog=EXAMPLES,
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    add_node_flags(parser)
    parser.add_argument("--gpu-taint", "--taint", dest="taint", default=DEFAULT_TAINT, metavar="KEY[=VALUE]:EFFECT",
                        help="the GPU taint to judge pods against where a node has none yet "
                             f"(default {DEFAULT_TAINT}); nodes with this key and effect are judged "
                             "by the value they carry")
    add_output_flag(parser, ("wide", "json", "yaml"))
    parser.add_argument("--exit-code", action="store_true",
                        help="exit 1 when pods are misplaced or GPU nodes are untainted")
    parser.set_defaults(run=run)


def run(args, stdout=None):
    options = StatusOptions.from_args(args)
    from ..kube import connect

    stdout = stdout or sys.stdout
    kube = connect(options.connection, pool_size=FETCH_WORKERS + 2)
    with ThreadPoolExecutor(max_workers=1) as early:
        pdbs = early.submit(kube.list_pdbs)     # needs no node: read while the nodes are
        nodes, version = find_nodes_with_version(kube, options.names, options.requirements,
                                                 options.selector_text)
        # The pods are read as of the node list or later (one consistent read, not hundreds).
        plans = build_plans(kube, nodes, planner.PlanOptions(options.managed_taint),
                            not_older_than=version, pdbs=pdbs)
    warnings = [w for plan in plans for w in plan.warnings]
    for warning in warnings:
        output.warn(warning)
    if options.output in ("json", "yaml"):
        stdout.write(output.document(to_document(options, nodes, plans), options.output))
    else:
        stdout.write(render_text(nodes, plans, wide=options.output == "wide"))
    findings = any(p.misplaced or not p.tainted for p in plans)
    return EXIT_FINDINGS if options.exit_code and findings else EXIT_OK


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
