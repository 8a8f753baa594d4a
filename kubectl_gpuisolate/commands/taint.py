"""``taint``: add the GPU taint to the GPU nodes, safely and idempotently.

Writes are guarded by resourceVersion and retried on conflict, so a taint that
another writer adds at the same moment is never lost (``kubectl taint``'s
unguarded patch can lose it)."""

import argparse
import sys
from dataclasses import dataclass

from ..completion.completers import complete_taint
from ..core import planner
from ..core.taints import DEFAULT_TAINT, Taint, parse_taint
from ..errors import EXIT_OK
from ..flags import ConnectionOptions, DryRun, add_dry_run_flag, connection_options, parse_dry_run
from ..output.tables import warn
from .common import add_node_flags, node_selection

EXAMPLES = """examples:
  # Taint every node labelled nvidia.com/gpu.present=true with nvidia.com/gpu=true:NoSchedule
  kubectl gpuisolate taint

  # GKE's convention, on two named nodes, showing what would change
  kubectl gpuisolate taint gke-gpu-1 gke-gpu-2 --taint nvidia.com/gpu=present:NoSchedule --dry-run=client
"""


@dataclass(frozen=True)
class TaintOptions:
    connection: ConnectionOptions
    names: list
    requirements: list
    selector_text: str
    taint: Taint
    overwrite: bool
    dry_run: DryRun

    @classmethod
    def from_args(cls, args):
        names, requirements, text = node_selection(args)
        return cls(connection=connection_options(args), names=names, requirements=requirements,
                   selector_text=text, taint=parse_taint(args.taint), overwrite=args.overwrite,
                   dry_run=parse_dry_run(args.dry_run))


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
    parser.set_defaults(run=run)


def _without_taint_key(node, taint):
    """The node as it will be judged once the new taint replaces any same-key one."""
    spec = dict(node.get("spec") or {})
    spec["taints"] = [t for t in spec.get("taints") or ()
                      if not (t.get("key") == taint.key and t.get("effect") == taint.effect)]
    return dict(node, spec=spec)


def run(args, stdout=None):
    options = TaintOptions.from_args(args)
    from ..kube import connect
    from ..kube.gather import build_plans
    from ..kube.nodes import apply_taint, check_conflicts, find_nodes

    stdout = stdout or sys.stdout
    kube = connect(options.connection)
    nodes = find_nodes(kube, options.names, options.requirements, options.selector_text, warn=warn)
    check_conflicts(nodes, options.taint, overwrite=options.overwrite)
    # Say which GPU pods would not tolerate the new taint before writing it.
    judged = [_without_taint_key(n, options.taint) for n in nodes]
    plans = build_plans(kube, judged, planner.PlanOptions(options.taint), check_daemonsets=False)
    for plan in plans:
        for warning in plan.warnings:
            warn(warning)
        misplaced = len(plan.misplaced)
        if misplaced:
            sys.stderr.write(f"node/{plan.name}: {misplaced} running pod(s) do not tolerate "
                             f"{options.taint}; the taint keeps new ones off, "
                             "'kubectl gpuisolate evacuate' moves these\n")
    apply_taint(kube, nodes, options.taint, overwrite=options.overwrite,
                dry_run=options.dry_run, stdout=stdout)
    return EXIT_OK
