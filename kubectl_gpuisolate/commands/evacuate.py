"""``evacuate``: move every pod that does not tolerate the GPU taint off the GPU
nodes through the Eviction API, PodDisruptionBudget-aware.  GPU pods, DaemonSet
pods, static pods and finished pods (they hold no resources and keep their Job
logs) stay where they are.

The taint is the fence: a GPU node without the GPU taint is refused, because
evicted pods could come straight back (--taint-first taints it first, as 'taint'
does).  Nothing is ever cordoned, and a cordon someone else set is left alone.
Before anything is evicted on a node its plan is checked as a whole: a pod that
needs --delete-emptydir-data, --force or --allow-job-restart (its operator restarts or
fails a whole job when it goes: a training job, a workflow step, a Ray head), or that several
PDBs match, refuses the node.  A pod whose replacement could be scheduled on no node outside the run (a
hostname pin, a local or zonal volume, a nodeName in its controller's template,
nothing else untainted) is never evicted: the summary names it with the
constraint, and it does not change the exit code.

A NoExecute GPU taint deletes, through the taint-eviction controller, every pod that does not
tolerate it, bypassing the Eviction API and every PodDisruptionBudget.  So --taint-first with a
NoExecute --gpu-taint works in two steps: it fences the node with the NoSchedule taint of the
same key and value, evicts behind that fence, and only when no pod left on the node would be
deleted puts the NoExecute taint on and removes the fence it added.  If a pod that stays does
not tolerate NoExecute (a GPU pod tolerating only NoSchedule, an agent DaemonSet), the node
keeps the NoSchedule fence and the summary names those pods (exit 13).  Without --taint a
node counts as tainted only if it already has the NoExecute taint (a NoSchedule one does not
count).  PreferNoSchedule is no fence and is refused.

Before the first eviction (dry runs too) it warns when the CPU or memory requests of the pods
that will move exceed the free allocatable of the nodes where they can land; it never refuses.
After the run's evictions it watches the moved pods' replacements for up to 30 seconds (less
when --timeout has less left; it ends as soon as none is Pending) and reports each one the
scheduler marks Unschedulable, with the scheduler's message.  Neither changes the exit code;
dry runs watch nothing.

Exit codes: 0 everything planned moved, 9 a node was refused, 10 pods were pending or failed
at the end, 13 a NoExecute taint was not applied (the node keeps its NoSchedule fence),
130/143 interrupted (SIGINT/SIGTERM)."""

import argparse
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from ..completion.completers import complete_taint
from ..core.dryrun import DryRun
from ..core.noexecute import PREFER_NO_SCHEDULE
from ..core.taints import DEFAULT_TAINT, Taint, parse_taint
from ..errors import Interrupted, UsageError
from ..exits import EXIT_FENCED, EXIT_INCOMPLETE, EXIT_OK, EXIT_PREFLIGHT
from ..flags import add_dry_run_flag, add_output_flag, deprecated, parse_dry_run, parse_duration
from ..interrupts import graceful
from .common import IO, NodeTarget, OnNodes, add_node_flags, is_taint_shaped

if TYPE_CHECKING:
    from ..kube import KubeApi

EXAMPLES = """examples:
  # Taint the GPU nodes, then move every pod that does not tolerate the taint
  kubectl gpuisolate evacuate --taint-first --delete-emptydir-data --force

  # Show what would move, stay and block, without changing anything
  kubectl gpuisolate evacuate --dry-run=client

  # Let the API server check the PodDisruptionBudgets; evicts nothing
  kubectl gpuisolate evacuate --dry-run=server

  # Fence with NoSchedule, evict, then put the NoExecute taint on where nothing left would be deleted
  kubectl gpuisolate evacuate --taint-first --gpu-taint nvidia.com/gpu=true:NoExecute \
      --delete-emptydir-data --force

  # Two nodes at a time, at most 4 evictions in flight, give up after 30 minutes
  kubectl gpuisolate evacuate --parallel-nodes 2 --max-parallel 4 --timeout 30m
"""


@dataclass(frozen=True)
class EvacuateOptions(OnNodes):
    target: NodeTarget
    gpu_taint: Taint
    taint_first: bool
    delete_emptydir_data: bool
    force: bool
    allow_job_restart: bool
    grace_period: int
    timeout: Optional[float]        # seconds; None means no deadline
    max_parallel: int
    parallel_nodes: int
    dry_run: DryRun
    output: str

    @classmethod
    def from_args(cls, args):
        # Node names that followed a bare (deprecated) --taint: see _TaintFlag.
        args.nodes = [*args.nodes, *getattr(args, "nodes_after_taint", ())]
        target = NodeTarget.from_args(args)
        if args.grace_period < -1:
            raise UsageError("--grace-period must be -1 (the pod's own) or a number of seconds >= 0")
        for flag, value in (("--max-parallel", args.max_parallel),
                            ("--parallel-nodes", args.parallel_nodes)):
            if value < 1:
                raise UsageError(f"{flag} must be at least 1")
        timeout = parse_duration(args.timeout, "--timeout")
        gpu_taint = parse_taint(args.gpu_taint)
        if gpu_taint.effect == PREFER_NO_SCHEDULE:
            raise UsageError(f"evacuate cannot use {gpu_taint}: PreferNoSchedule is no fence (the "
                             "scheduler may put evicted pods straight back); use NoSchedule")
        return cls(target=target, gpu_taint=gpu_taint,
                   taint_first=args.taint_first, delete_emptydir_data=args.delete_emptydir_data,
                   force=args.force, allow_job_restart=args.allow_job_restart,
                   grace_period=args.grace_period, timeout=timeout or None,
                   max_parallel=args.max_parallel, parallel_nodes=args.parallel_nodes,
                   dry_run=parse_dry_run(args.dry_run), output=args.output)

    @property
    def pool_size(self):
        # Evictions, plus per node slot its watch and the watches of finished nodes that
        # are still in their (5s) window, plus the planner's reads, plus the event writers.
        from ..evacuation.audit import WRITERS as EVENT_WRITERS
        return self.max_parallel + 4 * self.parallel_nodes + 8 + EVENT_WRITERS

    def settings(self):
        """What the engine is told (evacuation/settings.py)."""
        from ..evacuation.settings import Settings
        return Settings(names=self.target.names, requirements=self.target.requirements,
                        selector_text=self.target.selector_text, gpu_taint=self.gpu_taint,
                        taint_first=self.taint_first, delete_emptydir_data=self.delete_emptydir_data,
                        force=self.force, allow_job_restart=self.allow_job_restart,
                        grace_period=self.grace_period, timeout=self.timeout,
                        max_parallel=self.max_parallel, parallel_nodes=self.parallel_nodes,
                        dry_run=self.dry_run, taint_lines_to_err=bool(self.output))


class _TaintFlag(argparse.Action):
    """``--taint KEY[=VALUE]:EFFECT`` names the GPU taint, as in the other commands.  evacuate's
    --taint once took no value and meant "taint first": that spelling still works, with kubectl's
    deprecation warning.  A word after it that is not taint-shaped is a node name (common.py's
    rule), so ``evacuate --taint gpu-1`` keeps its old meaning."""

    def __call__(self, parser, namespace, value, option_string=None):
        if value is not None and is_taint_shaped(value):
            setattr(namespace, self.dest, value)
            return
        namespace.taint_first = True
        if value is not None:
            namespace.nodes_after_taint = [*getattr(namespace, "nodes_after_taint", []), value]
        deprecated(namespace, "--taint", "use --taint-first instead (--taint now names the GPU taint)")


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "evacuate", parents=parents, help="evict the pods that do not tolerate the GPU taint",
        description=__doc__, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_node_flags(parser)
    parser.add_argument("--taint-first", action="store_true",
                        help="taint the nodes first (as 'kubectl gpuisolate taint' does)")
    parser.add_argument("--gpu-taint", default=DEFAULT_TAINT, metavar="KEY[=VALUE]:EFFECT",
                        help=f"the GPU taint (default {DEFAULT_TAINT}); a node carrying this key "
                             "and effect with any value counts as tainted").completer = complete_taint
    parser.add_argument("--taint", action=_TaintFlag, nargs="?", dest="gpu_taint",
                        metavar="KEY[=VALUE]:EFFECT",
                        help="the same as --gpu-taint, as in status, taint and untaint (without a "
                             "value: --taint-first, deprecated)").completer = complete_taint
    parser.add_argument("--delete-emptydir-data", action="store_true",
                        help="allow evicting pods with emptyDir volumes (their data is lost)")
    parser.add_argument("--force", action="store_true",
                        help="allow evicting pods that declare no controller (never recreated)")
    parser.add_argument("--allow-job-restart", action="store_true",
                        help="allow evicting pods whose operator restarts or fails a whole job "
                             "when one of its pods goes (training jobs, workflow steps, a Spark "
                             "driver, a Ray head; docs/design.md lists them)")
    parser.add_argument("--grace-period", type=int, default=-1, metavar="SECONDS",
                        help="termination grace period for evicted pods (-1: each pod's own)")
    parser.add_argument("--timeout", default="10m", metavar="DURATION",
                        help="deadline for the whole run, e.g. 10m (default); 0 means none")
    parser.add_argument("--max-parallel", type=int, default=8, metavar="N",
                        help="evictions in flight at once (default 8); pods under one "
                             "PodDisruptionBudget always go one at a time")
    parser.add_argument("--parallel-nodes", type=int, default=1, metavar="N",
                        help="nodes evacuated at once (default 1)")
    add_dry_run_flag(parser)
    add_output_flag(parser, ("json", "yaml"))
    parser.set_defaults(options_class=EvacuateOptions, run=run)


def exit_code(results):
    """9 when the preflight refused a node, else 10 when pods were left, else 13 when a
    NoExecute taint was not applied, else 0."""
    if any(r.refused for r in results):
        return EXIT_PREFLIGHT
    if any(r.not_moved for r in results):
        return EXIT_INCOMPLETE
    return EXIT_FENCED if any(r.seal and not r.seal.applied for r in results) else EXIT_OK


def execute(kube, options, *, out, err, clock=None, stop=None, **engine_args):
    """Evacuates, writes the summary (or the plan) to ``out`` and returns the exit code; the
    caller turns a set ``stop`` into Interrupted."""
    # The engine and its output are imported here, not at the top: every command's parser is
    # built on each run, and no other command needs them.
    from ..evacuation.run import Evacuation
    from ..output.evacuate import render
    results = Evacuation(kube, options.settings(), out=out, err=err, clock=clock, stop=stop,
                         **engine_args).run()
    out.write(render(results, options))
    return exit_code(results)


def run(options: EvacuateOptions, kube: "KubeApi", io: IO) -> int:
    from ..evacuation.run import NothingToDo
    stop = threading.Event()
    # Everything that talks to the cluster runs inside graceful(): the first signal sets stop
    # (a request in flight, e.g. to a hung server, may finish first); a second one ends it.
    with graceful(stop) as caught:
        try:
            code = execute(kube, options, out=io.out, err=io.err, stop=stop)
        except NothingToDo as exc:
            io.err.write(f"{exc}\n")
            code = EXIT_OK
    if caught:
        raise Interrupted(caught[0])
    return code
