"""``taint``: add the GPU taint to the GPU nodes, safely and idempotently.

Writes are guarded by resourceVersion and retried on conflict, so a taint that
another writer adds at the same moment is never lost (``kubectl taint``'s
unguarded patch can lose it)."""

import argparse
import sys
from dataclasses import dataclass

from .. import planner
from ..errors import ConflictError, EXIT_OK
from ..flags import ConnectionOptions, DryRun, add_dry_run_flag, connection_options, parse_dry_run
from ..output import warn
from ..taints import DEFAULT_TAINT, Taint, add_taint, parse_taint
from .common import add_node_flags, build_plans, find_nodes, node_selection

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
                        help=f"the taint to apply (default {DEFAULT_TAINT})")
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


def check_conflicts(nodes, taint, *, overwrite):
    """Refuses before any write when a node has the key and effect with another value."""
    for node in nodes:
        try:
            add_taint((node.get("spec") or {}).get("taints"), taint, overwrite=overwrite)
        except ConflictError as exc:
            raise ConflictError(f"node {node['metadata']['name']} {exc}") from None


def apply_taint(kube, nodes, taint, *, overwrite, dry_run, stdout):
    """Taints the nodes (shared with ``evacuate --taint``).  Returns the updated nodes.

    Every node is checked before any is written, so a value conflict on one
    node leaves all of them untouched.
    """
    check_conflicts(nodes, taint, overwrite=overwrite)
    updated = []
    for node in nodes:
        name = node["metadata"]["name"]

        def compute(current):
            new, verb = add_taint(current, taint, overwrite=overwrite)
            return (None if verb == "unchanged" else new), verb
        try:
            result, verb = kube.update_node_taints(name, compute, dry_run=dry_run)
        except ConflictError as exc:
            raise ConflictError(f"node {name} {exc}") from None
        text = "already tainted" if verb == "unchanged" else verb
        stdout.write(f"node/{name} {text}{'' if verb == 'unchanged' else dry_run.suffix}\n")
        updated.append(result)
    return updated


def _without_taint_key(node, taint):
    """The node as it will be judged once the new taint replaces any same-key one."""
    spec = dict(node.get("spec") or {})
    spec["taints"] = [t for t in spec.get("taints") or ()
                      if not (t.get("key") == taint.key and t.get("effect") == taint.effect)]
    return dict(node, spec=spec)


def run(args, stdout=None):
    options = TaintOptions.from_args(args)
    from ..kube import connect

    stdout = stdout or sys.stdout
    kube = connect(options.connection)
    nodes = find_nodes(kube, options.names, options.requirements, options.selector_text)
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
