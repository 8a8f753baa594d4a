"""``evacuate``: move every pod that does not tolerate the GPU taint off the GPU
nodes through the Eviction API, PodDisruptionBudget-aware.  GPU pods, DaemonSet
pods, static pods and finished pods (they hold no resources and keep their Job
logs) stay where they are.

The taint is the fence: a GPU node without the GPU taint is refused, because
evicted pods could come straight back (--taint taints it first, as 'taint'
does).  Nothing is ever cordoned, and a cordon someone else set is left alone.
Before anything is evicted on a node its plan is checked as a whole: a pod that
needs --delete-emptydir-data or --force, or that several PDBs match, refuses the
node.  Exit codes: 0 everything planned moved, 9 a node was refused, 10 pods
were pending or failed at the end, 130/143 interrupted (SIGINT/SIGTERM)."""

import argparse
import os
import signal
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import List, Optional

from .. import output, planner
from ..errors import (EXIT_INCOMPLETE, EXIT_OK, EXIT_PREFLIGHT, AuthError, GpuIsolateError,
                      Interrupted, UsageError)
from ..evictor import NOT_STARTED, TERMINATING, WOULD_EVICT, Clock, Evictor, Outcome, Target
from ..flags import (ConnectionOptions, DryRun, add_dry_run_flag, add_output_flag,
                     connection_options, parse_dry_run, parse_duration)
from ..taints import DEFAULT_TAINT, Taint, gpu_taints_on, parse_taint
from .common import add_node_flags, build_plans, find_nodes, node_selection
from .evacuate_report import render_plan, render_summary, report_pdbs, report_refusal, to_document
from .taint import apply_taint

EXAMPLES = """examples:
  # Taint the GPU nodes, then move every pod that does not tolerate the taint
  kubectl gpuisolate evacuate --taint --delete-emptydir-data --force

  # Show what would move, stay and block, without changing anything
  kubectl gpuisolate evacuate --dry-run=client

  # Let the API server check the PodDisruptionBudgets; evicts nothing
  kubectl gpuisolate evacuate --dry-run=server

  # Two nodes at a time, at most 4 evictions in flight, give up after 30 minutes
  kubectl gpuisolate evacuate --parallel-nodes 2 --max-parallel 4 --timeout 30m
"""


@dataclass(frozen=True)
class EvacuateOptions:
    connection: ConnectionOptions
    names: list
    requirements: list
    selector_text: str
    gpu_taint: Taint
    taint_first: bool
    delete_emptydir_data: bool
    force: bool
    grace_period: int
    timeout: Optional[float]        # seconds; None means no deadline
    max_parallel: int
    parallel_nodes: int
    dry_run: DryRun
    output: str

    @classmethod
    def from_args(cls, args):
        names, requirements, text = node_selection(args)
        if args.grace_period < -1:
            raise UsageError("--grace-period must be -1 (the pod's own) or a number of seconds >= 0")
        for flag, value in (("--max-parallel", args.max_parallel),
                            ("--parallel-nodes", args.parallel_nodes)):
            if value < 1:
                raise UsageError(f"{flag} must be at least 1")
        timeout = parse_duration(args.timeout, "--timeout")
        return cls(connection=connection_options(args), names=names, requirements=requirements,
                   selector_text=text, gpu_taint=parse_taint(args.gpu_taint),
                   taint_first=args.taint, delete_emptydir_data=args.delete_emptydir_data,
                   force=args.force, grace_period=args.grace_period, timeout=timeout or None,
                   max_parallel=args.max_parallel, parallel_nodes=args.parallel_nodes,
                   dry_run=parse_dry_run(args.dry_run), output=args.output)

    @property
    def plan_options(self):
        return planner.PlanOptions(self.gpu_taint, delete_emptydir_data=self.delete_emptydir_data,
                                   force=self.force)


def add_parser(subparsers, parents):
    parser = subparsers.add_parser(
        "evacuate", parents=parents, help="evict the pods that do not tolerate the GPU taint",
        description=__doc__, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_node_flags(parser)
    parser.add_argument("--taint", action="store_true",
                        help="taint the nodes first (as 'kubectl gpuisolate taint' does)")
    parser.add_argument("--gpu-taint", default=DEFAULT_TAINT, metavar="KEY[=VALUE]:EFFECT",
                        help=f"the GPU taint (default {DEFAULT_TAINT}); a node carrying this key "
                             "and effect with any value counts as tainted")
    parser.add_argument("--delete-emptydir-data", action="store_true",
                        help="allow evicting pods with emptyDir volumes (their data is lost)")
    parser.add_argument("--force", action="store_true",
                        help="allow evicting pods that declare no controller (never recreated)")
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
    parser.set_defaults(run=run)


@dataclass
class NodeCheck:
    """The preflight of one node: why it is refused (empty when it may be evacuated)."""

    plan: planner.NodePlan
    refusal: List[str]
    flags: List[str]

    @property
    def ok(self):
        return not self.refusal


def preflight(plan, options):
    """All-or-nothing per node: no GPU taint, or any BLOCKED pod, refuses the node."""
    refusal = []
    if not plan.tainted:
        refusal.append(f"it lacks the GPU taint {options.gpu_taint}, so evicted pods could come "
                       "straight back; run 'kubectl gpuisolate taint' first or pass --taint")
    refusal += [f"pod {d.ref} {d.message}" for d in plan.blocked]
    flags = sorted({f for d in plan.blocked for f in d.flags})
    return NodeCheck(plan, refusal, flags)


# What evicting needs beyond reading: the eviction itself, and reading a pod after a 409.
EVICTION_RIGHTS = (("create", "pods", "eviction"), ("get", "pods", ""))


def check_permissions(kube, plans):
    """Refuses, before any eviction, when the user may not evict (or read) pods in a namespace
    of the plan: one line naming the verb and the resource instead of one failure per pod.
    Asks cluster-wide first, then per namespace; an answer the server cannot give is no refusal."""
    namespaces = sorted({t.namespace for p in plans for t in targets_for(p) if not t.terminating})
    for verb, resource, sub in EVICTION_RIGHTS if namespaces else ():
        if kube.can_i(verb, resource, subresource=sub) is not False:
            continue
        for namespace in namespaces:
            if kube.can_i(verb, resource, subresource=sub, namespace=namespace) is False:
                name = f"{resource}/{sub}" if sub else resource
                raise AuthError(f'cannot {verb} resource "{name}" in namespace "{namespace}", so '
                                "nothing was evicted; grant it (rbac/clusterrole.yaml lists what the "
                                "plugin needs) or use another context")


def targets_for(plan):
    """The pods evacuate acts on: MOVE decisions (evicted) and WAIT ones (waited for)."""
    targets = []
    for d in plan.decisions:
        if d.action == planner.MOVE:
            never = d.pdbs[0].never_allows if len(d.pdbs) == 1 else None
            targets.append(Target(d.namespace, d.name, d.uid, tuple(p.name for p in d.pdbs),
                                  never or ""))
        elif d.action == planner.WAIT:
            targets.append(Target(d.namespace, d.name, d.uid, terminating=True))
    return targets


@dataclass
class NodeResult:
    name: str
    plan: Optional[planner.NodePlan]
    state: str        # evacuated, incomplete, interrupted, refused, not-started, planned, checked
    outcomes: List[Outcome] = field(default_factory=list)
    refusal: List[str] = field(default_factory=list)
    arrivals: list = field(default_factory=list)     # planner decisions of newcomers
    seconds: float = 0.0

    @property
    def not_moved(self):
        return [o for o in self.outcomes if not o.done]


def _not_started(plan, why):
    return NodeResult(plan.name, plan, "not-started", outcomes=[
        Outcome(t, NOT_STARTED, f"not started: {why}") for t in targets_for(plan)])


def _taint_first(kube, nodes, options, stream):
    """Taints the nodes that carry no GPU taint yet (any value of the key and effect counts)."""
    todo = [n for n in nodes
            if not gpu_taints_on((n.get("spec") or {}).get("taints"), options.gpu_taint)]
    for node in nodes:
        if node not in todo:
            stream.write(f"node/{node['metadata']['name']} already tainted\n")
    updated = {n["metadata"]["name"]: n for n in
               apply_taint(kube, todo, options.gpu_taint, overwrite=False,
                           dry_run=options.dry_run, stdout=stream)} if todo else {}
    return [updated.get(n["metadata"]["name"], n) for n in nodes]


class Run:
    """One evacuation: the nodes one at a time (or --parallel-nodes at once), then the summary."""

    def __init__(self, kube, options, *, stdout, stderr, clock=None, stop=None, **evictor_args):
        self.kube, self.options = kube, options
        self.stdout, self.stderr = stdout, stderr
        self.clock = clock or Clock()
        self.stop = stop or threading.Event()
        self.progress = output.Progress(stderr)
        self.evictor_args = evictor_args

    def execute(self):
        """Returns the exit code; the caller turns a set ``stop`` into Interrupted."""
        options, stderr = self.options, self.stderr
        deadline = self.clock.now() + options.timeout if options.timeout else None
        nodes = find_nodes(self.kube, options.names, options.requirements, options.selector_text,
                           warn_stream=stderr)
        if options.taint_first:
            nodes = _taint_first(self.kube, nodes, options, stderr if options.output else self.stdout)
        plans = build_plans(self.kube, nodes, options.plan_options)
        for warning in (w for p in plans for w in p.warnings):
            output.warn(warning, stderr)
        checks = [preflight(p, options) for p in plans]
        if options.dry_run is not DryRun.CLIENT:
            check_permissions(self.kube, [c.plan for c in checks if c.ok])
        for check in checks:
            if not check.ok:
                report_refusal(check, stderr)
        report_pdbs(checks, options, stderr)
        if options.dry_run is DryRun.CLIENT:
            results = [NodeResult(c.plan.name, c.plan, "planned" if c.ok else "refused",
                                  refusal=c.refusal) for c in checks]
            self._write(results, render_plan(results, options))
            return EXIT_PREFLIGHT if any(not c.ok for c in checks) else EXIT_OK
        evictor = Evictor(self.kube, dry_run=options.dry_run, grace_period=options.grace_period,
                          max_parallel=options.max_parallel, deadline=deadline, clock=self.clock,
                          stop=self.stop, progress=self.progress, **self.evictor_args)
        try:
            results = self._run_nodes(evictor, nodes, checks)
        finally:
            evictor.close()
        if self.stop.is_set():
            self.progress("interrupted: no new evictions were started")
        self._write(results, render_summary(results, options))
        if any(r.state == "refused" for r in results):
            return EXIT_PREFLIGHT
        return EXIT_INCOMPLETE if any(r.not_moved for r in results) else EXIT_OK

    def _write(self, results, text):
        if self.options.output:
            text = output.document(to_document(results, self.options), self.options.output)
        self.stdout.write(text)

    def _run_nodes(self, evictor, nodes, checks):
        jobs = list(zip(nodes, checks))
        if self.options.parallel_nodes == 1 or len(jobs) == 1:
            return [self._node(evictor, node, check) for node, check in jobs]
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=self.options.parallel_nodes,
                                thread_name_prefix="node") as pool:
            futures = [pool.submit(self._node, evictor, node, check) for node, check in jobs]
            return [f.result() for f in futures]

    def _node(self, evictor, node, check):
        name, plan = check.plan.name, check.plan
        if not check.ok:
            return NodeResult(name, plan, "refused", refusal=check.refusal)
        if self.stop.is_set() or evictor.past_deadline():
            why = "interrupted" if self.stop.is_set() else "the deadline passed"
            return _not_started(plan, f"{why} before this node")
        started = self.clock.now()
        known = {d.uid for d in plan.decisions}
        if self.options.dry_run is DryRun.NONE:
            # Re-plan from a fresh read: the node may have waited behind others.
            try:
                node = self.kube.get_node(name)
                plan = build_plans(self.kube, [node], self.options.plan_options)[0]
            except GpuIsolateError as exc:
                self.progress(f"node/{name}: not started: {exc}")
                return _not_started(plan, str(exc))
            check = preflight(plan, self.options)
            known |= {d.uid for d in plan.decisions}
            if not check.ok:
                report_refusal(check, self.stderr)
                return NodeResult(name, plan, "refused", refusal=check.refusal)
        if plan.unschedulable:
            self.progress(f"node/{name} is cordoned, not by evacuate; leaving the cordon as it is")
        targets = targets_for(plan)
        stays = Counter(d.reason for d in plan.with_action(planner.STAY))
        self.progress(f"node/{name}: {len(plan.to_move)} pod(s) to evict, "
                      f"{sum(1 for t in targets if t.terminating)} terminating, "
                      f"{sum(stays.values())} stay")
        outcomes = evictor.evacuate_node(name, targets)
        if self.options.dry_run is not DryRun.NONE:
            outcomes = [Outcome(o.target, WOULD_EVICT) if o.state == TERMINATING else o
                        for o in outcomes]
        arrivals = []
        if self.options.dry_run is DryRun.NONE and not self.stop.is_set():
            arrivals = self._arrivals(node, known)
        if all(o.done for o in outcomes):
            state = "evacuated" if self.options.dry_run is DryRun.NONE else "checked"
        else:
            state = "interrupted" if self.stop.is_set() else "incomplete"
        seconds = self.clock.now() - started
        moved = sum(1 for o in outcomes if o.done)
        verb = "moved" if self.options.dry_run is DryRun.NONE else "would move"
        self.progress(f"node/{name}: {state}, {moved} {verb}, {len(outcomes) - moved} left "
                      f"({seconds:.1f}s)")
        return NodeResult(name, plan, state, outcomes=outcomes, arrivals=arrivals, seconds=seconds)

    def _arrivals(self, node, known):
        """Pods bound to the node during the run (e.g. bare pods with spec.nodeName set)."""
        name = node["metadata"]["name"]
        try:
            pods = self.kube.list_pods_on_node(name)
        except GpuIsolateError as exc:
            output.warn(f"could not list node/{name} again to look for pods that arrived during "
                        f"the run: {exc}", self.stderr)
            return []
        newcomers = [p for p in pods if (p.get("metadata") or {}).get("uid") not in known]
        if not newcomers:
            return []
        decisions = planner.plan_node(node, newcomers, [], self.options.plan_options).decisions
        for d in decisions:
            if d.action in (planner.MOVE, planner.BLOCKED):
                output.warn(f"pod {d.ref} arrived on node/{name} during the run and does not "
                            "tolerate the GPU taint (a pod bound with spec.nodeName bypasses it); "
                            "run evacuate again to move it", self.stderr)
        return decisions


def run(args, stdout=None):
    options = EvacuateOptions.from_args(args)
    from ..kube import connect

    # Evictions, plus per node slot its watch and the watches of finished nodes that
    # are still in their (5s) window, plus the planner's reads.
    kube = connect(options.connection,
                   pool_size=options.max_parallel + 4 * options.parallel_nodes + 8)
    stop, caught, previous = threading.Event(), [], {}

    def on_signal(signum, _frame):
        caught.append(signum)
        stop.set()
        signal.signal(signum, previous[signum])   # a second signal ends the process at once
        # Said at once: finishing cleanly can wait on a request in flight (a hung server
        # without --request-timeout).  os.write: no lock a progress line may hold.
        name = signal.Signals(signum).name
        os.write(2, f"{name}: stopping, no new evictions start; send {name} again to quit "
                    "at once\n".encode())

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, on_signal)
    try:
        code = Run(kube, options, stdout=stdout or sys.stdout, stderr=sys.stderr,
                   stop=stop).execute()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if caught:
        raise Interrupted(caught[0])
    return code
