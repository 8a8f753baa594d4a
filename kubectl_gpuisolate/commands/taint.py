"""``taint``: add the GPU taint to the GPU nodes, safely and idempotently.

Writes are guarded by resourceVersion and retried on conflict, so a taint that
another writer adds at the same moment is never lost (``kubectl taint``'s
unguarded patch can lose it).

A NoExecute taint does not fence, it deletes: the taint-eviction controller deletes every pod
on the node that does not tolerate it (after its tolerationSeconds, if it has them), bypassing
the Eviction API and every PodDisruptionBudget -- DaemonSet pods and GPU pods that tolerate
only NoSchedule included.  So before writing one, taint lists those pods on every node and, if
there are any, refuses (exit 9) and writes nothing, unless --allow-pod-deletion is given.
'kubectl gpuisolate evacuate --taint-first --gpu-taint KEY=VALUE:NoExecute' moves them first.
A PreferNoSchedule taint is written with a warning: it keeps nothing off.

A taint can be taken off as soon as it is written, by a controller that owns the node's taints
(Cluster API's taint propagation, a cloud's node-pool sync).  So taint reads the nodes it wrote
again --verify-after later and writes a taint that is gone once more, at most MAX_WRITES times
in all; then it stops with one line naming the writer that removes it (exit 7).  It never
loops."""

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..completion.completers import complete_taint
from ..core import planner
from ..core.dryrun import DryRun
from ..core.noexecute import NO_EXECUTE, PREFER_NO_SCHEDULE, deletions
from ..core.reverts import reverted_message
from ..core.taints import (
    ALREADY_TAINTED,
    DEFAULT_TAINT,
    WRITES,
    Taint,
    TaintRef,
    add_taint,
    parse_taint,
    remove_taint,
)
from ..errors import ConflictError, GpuIsolateError
from ..exits import EXIT_OK, EXIT_PREFLIGHT
from ..flags import add_dry_run_flag, parse_dry_run, parse_duration
from ..output.taint import TaintChange, deletion_report, prefer_warning, render_change, untolerated_note
from . import owners
from .common import IO, NodeTarget, OnNodes, add_node_flags, pick_taint, split_positionals

if TYPE_CHECKING:
    from ..kube import KubeApi

TAINT_FORM = "KEY[=VALUE]:EFFECT"
MAX_WRITES = 3          # of one taint on one node, when something keeps removing it
EXAMPLES = """examples:
  # Taint every node labelled nvidia.com/gpu.present=true with nvidia.com/gpu=true:NoSchedule
  kubectl gpuisolate taint

  # kubectl's syntax: names (or node/NAME) and the taint as arguments
  kubectl gpuisolate taint node/gpu-1 gpu-2 nvidia.com/gpu=true:NoSchedule

  # GKE's convention, on two named nodes, showing what would change
  kubectl gpuisolate taint gke-gpu-1 gke-gpu-2 --taint nvidia.com/gpu=present:NoSchedule --dry-run=client

  # A NoExecute taint, knowing that it deletes every pod that does not tolerate it
  kubectl gpuisolate taint --gpu-taint nvidia.com/gpu=true:NoExecute --allow-pod-deletion
"""


@dataclass(frozen=True)
class TaintOptions(OnNodes):
    target: NodeTarget
    taint: Taint
    overwrite: bool
    dry_run: DryRun
    allow_pod_deletion: bool = False
    verify_after: float = 1.0

    @classmethod
    def from_args(cls, args):
        names, positional = split_positionals(args, taint_form=TAINT_FORM)
        taint = pick_taint(positional, args.taint, DEFAULT_TAINT, TAINT_FORM)
        return cls(target=NodeTarget.from_args(args, names), taint=parse_taint(taint),
                   overwrite=args.overwrite, dry_run=parse_dry_run(args.dry_run),
                   allow_pod_deletion=args.allow_pod_deletion,
                   verify_after=parse_duration(args.verify_after, "--verify-after"))


def add_taint_flags(parser):
    parser.add_argument("--gpu-taint", "--taint", dest="taint", default=DEFAULT_TAINT,
                        metavar="KEY[=VALUE]:EFFECT",
                        help=f"the taint to apply (default {DEFAULT_TAINT})").completer = complete_taint
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the value of a taint with the same key and effect")


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "taint", parents=parents, help="add the GPU taint to the GPU nodes",
        description=__doc__, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_node_flags(parser, taint_form=TAINT_FORM)
    add_taint_flags(parser)
    parser.add_argument("--allow-pod-deletion", action="store_true",
                        help="write a NoExecute taint even though the taint-eviction controller "
                             "will DELETE the pods that do not tolerate it (no Eviction API, no "
                             "PodDisruptionBudget); without it taint refuses (exit 9)")
    parser.add_argument("--verify-after", default="1s", metavar="DURATION",
                        help="read the written nodes again this long after writing and write a "
                             f"taint something removed again, {MAX_WRITES} writes at most, then "
                             "exit 7 naming the remover (default 1s; 0 reads nothing again)")
    add_dry_run_flag(parser)
    parser.set_defaults(options_class=TaintOptions, run=run)


def _without_taint_key(node, taint):
    """The node as it will be judged once the new taint replaces any same-key one."""
    spec = dict(node.get("spec") or {})
    spec["taints"], _ = remove_taint(spec.get("taints"), TaintRef(taint.key, taint.effect))
    return dict(node, spec=spec)


def _check_deletions(kube, nodes, options, io):
    """NoExecute: names, on every node, the pods the taint would delete; refuses (exit 9)
    before any write when there are some and --allow-pod-deletion was not given."""
    from ..kube.gather import gather

    # A node that already has this very taint is not written, so nothing is deleted because of us.
    todo = [n for n in nodes if add_taint((n.get("spec") or {}).get("taints"), options.taint,
                                          overwrite=options.overwrite)[1] != ALREADY_TAINTED]
    if not todo:
        return
    pods_by_node, pdbs, _ = gather(kube, todo, check_daemonsets=False)
    found = {name: deletions(pods, options.taint, pdbs) for name, pods in pods_by_node.items()}
    for name, doomed in found.items():
        if doomed:
            io.err.write(deletion_report(name, doomed, options.taint,
                                         allowed=options.allow_pod_deletion))
    total = sum(len(d) for d in found.values())
    if total and not options.allow_pod_deletion:
        raise GpuIsolateError(
            f"{options.taint} would delete {total} pod(s) on "
            f"{sum(1 for d in found.values() if d)} node(s), listed above, bypassing every "
            "PodDisruptionBudget; nothing was written: move them first with 'kubectl gpuisolate "
            "evacuate --taint-first', or pass --allow-pod-deletion", exit_code=EXIT_PREFLIGHT)


def _note_untolerated(kube, nodes, options, io):
    """Says which running pods would not tolerate the new (NoSchedule) taint."""
    from ..kube.gather import build_plans

    judged = [_without_taint_key(n, options.taint) for n in nodes]
    plans = build_plans(kube, judged, planner.PlanOptions(options.taint), check_daemonsets=False,
                        warn=io.warn)
    for plan in plans:
        for warning in plan.warnings:
            io.warn(warning)
        if plan.misplaced:
            io.err.write(untolerated_note(plan, options.taint))


def _keep_written(kube, written, options, io):
    """Reads the written nodes again after ``verify_after`` and writes the taint again where it
    was taken off; after MAX_WRITES writes of a node, stops with the remover named (exit 7)."""
    from ..kube.api import FIELD_MANAGER
    from ..kube.nodes import apply_taint, taken_off

    for write in range(1, MAX_WRITES + 1):
        kube.pause(options.verify_after)
        gone = taken_off(kube, written, options.taint, overwrite=options.overwrite)
        if not gone:
            return
        if write == MAX_WRITES:
            raise ConflictError(reverted_message(gone[0], str(options.taint), MAX_WRITES,
                                                 FIELD_MANAGER,
                                                 also=[n["metadata"]["name"] for n in gone[1:]]))
        for node in gone:
            io.warn(f"node/{node['metadata']['name']}: {options.taint} was removed after it was "
                    f"written; writing it again (write {write + 1} of at most {MAX_WRITES})")
        written = [n["metadata"]["name"] for n in gone]
        for _ in apply_taint(kube, gone, options.taint, overwrite=options.overwrite,
                             dry_run=options.dry_run):
            pass


def run(options: TaintOptions, kube: "KubeApi", io: IO) -> int:
    from ..kube.nodes import apply_taint, check_conflicts, find_nodes

    target = options.target
    nodes = find_nodes(kube, target.names, target.requirements, target.selector_text,
                       warn=io.warn)
    if owners.autopilot(nodes, io.err):
        return EXIT_OK
    owners.refuse_owned_change(nodes, options.taint)
    check_conflicts(nodes, options.taint, overwrite=options.overwrite)
    if options.taint.effect == NO_EXECUTE:
        _check_deletions(kube, nodes, options, io)
    else:
        if options.taint.effect == PREFER_NO_SCHEDULE:
            io.warn(prefer_warning(options.taint))
        _note_untolerated(kube, nodes, options, io)
    written = []
    for node, verb in apply_taint(kube, nodes, options.taint, overwrite=options.overwrite,
                                  dry_run=options.dry_run):
        io.out.write(render_change(TaintChange(node["metadata"]["name"], verb, options.dry_run)))
        if verb in WRITES:
            written.append(node["metadata"]["name"])
    if written and options.dry_run is DryRun.NONE and options.verify_after > 0:
        _keep_written(kube, written, options, io)
    owners.warn_pools(nodes, "persist it in", io.warn)    # after the writes: an error stays one line
    return EXIT_OK
