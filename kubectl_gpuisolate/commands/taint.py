"""``taint``: add the GPU taint to the GPU nodes, safely and idempotently.

Writes are guarded by resourceVersion and retried on conflict, so a taint that
another writer adds at the same moment is never lost (``kubectl taint``'s
unguarded patch can lose it)."""

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..completion.completers import complete_taint
from ..core import planner
from ..core.taints import DEFAULT_TAINT, Taint, TaintRef, parse_taint, remove_taint
from ..errors import EXIT_OK
from ..flags import DryRun, add_dry_run_flag, parse_dry_run
from ..output.taint import TaintChange, render_change, untolerated_note
from . import owners
from .common import IO, NodeTarget, OnNodes, add_node_flags

if TYPE_CHECKING:
    from ..kube import KubeApi

EXAMPLES = """examples:
  # Taint every node labelled nvidia.com/gpu.present=true with nvidia.com/gpu=true:NoSchedule
  kubectl gpuisolate taint

  # GKE's convention, on two named nodes, showing what would change
  kubectl gpuisolate taint gke-gpu-1 gke-gpu-2 --taint nvidia.com/gpu=present:NoSchedule --dry-run=client
"""


@dataclass(frozen=True)
class TaintOptions(OnNodes):
    target: NodeTarget
    taint: Taint
    overwrite: bool
    dry_run: DryRun

    @classmethod
    def from_args(cls, args):
        return cls(target=NodeTarget.from_args(args), taint=parse_taint(args.taint),
                   overwrite=args.overwrite, dry_run=parse_dry_run(args.dry_run))


def add_taint_flags(parser):
    parser.add_argument("--gpu-taint", "--taint", dest="taint", default=DEFAULT_TAINT, metavar="KEY[=VALUE]:EFFECT",
                        help=f"the taint to apply (default {DEFAULT_TAINT})").completer = complete_taint
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the value of a taint with the same key and effect")


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "taint", parents=parents, help="add the GPU taint to the GPU nodes",
        description=__doc__, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_node_flags(parser)
    add_taint_flags(parser)
    add_dry_run_flag(parser)
    parser.set_defaults(options_class=TaintOptions, run=run)


def _without_taint_key(node, taint):
    """The node as it will be judged once the new taint replaces any same-key one."""
    spec = dict(node.get("spec") or {})
    spec["taints"], _ = remove_taint(spec.get("taints"), TaintRef(taint.key, taint.effect))
    return dict(node, spec=spec)


def run(options: TaintOptions, kube: "KubeApi", io: IO) -> int:
    from ..kube.gather import build_plans
    from ..kube.nodes import apply_taint, check_conflicts, find_nodes

    target = options.target
    nodes = find_nodes(kube, target.names, target.requirements, target.selector_text,
                       warn=io.warn)
    if owners.autopilot(nodes, io.err):
        return EXIT_OK
    owners.refuse_owned_change(nodes, options.taint)
    check_conflicts(nodes, options.taint, overwrite=options.overwrite)
    # Say which GPU pods would not tolerate the new taint before writing it.
    judged = [_without_taint_key(n, options.taint) for n in nodes]
    plans = build_plans(kube, judged, planner.PlanOptions(options.taint), check_daemonsets=False)
    for plan in plans:
        for warning in plan.warnings:
            io.warn(warning)
        if plan.misplaced:
            io.err.write(untolerated_note(plan, options.taint))
    for node, verb in apply_taint(kube, nodes, options.taint, overwrite=options.overwrite,
                                  dry_run=options.dry_run):
        io.out.write(render_change(TaintChange(node["metadata"]["name"], verb, options.dry_run)))
    owners.warn_pools(nodes, "persist it in", io.warn)    # after the writes: an error stays one line
    return EXIT_OK
