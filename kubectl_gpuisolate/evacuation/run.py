"""One evacuation across nodes: find them, taint first if asked, plan, check, then evacuate
node by node (or several at once), re-planning each node just before its turn."""

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import List, Optional

from ..core import planner
from ..core.taints import gpu_taints_on
from ..errors import EXIT_INCOMPLETE, EXIT_OK, EXIT_PREFLIGHT, AuthError, GpuIsolateError
from ..flags import DryRun
from ..kube.gather import build_plans
from ..kube.nodes import apply_taint, find_nodes
from ..output import tables as output
from ..output.evacuate import render_plan, render_summary, report_pdbs, report_refusal, to_document
from ..output.taint import TaintChange, render_change
from .engine import NOT_STARTED, TERMINATING, WOULD_EVICT, Clock, Evictor, Outcome
from .plan import preflight, targets_for


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
    updated = {}
    for node, verb in apply_taint(kube, todo, options.gpu_taint, overwrite=False,
                                  dry_run=options.dry_run):
        name = node["metadata"]["name"]
        stream.write(render_change(TaintChange(name, verb, options.dry_run)))
        updated[name] = node
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
                           warn=lambda message: output.warn(message, stderr))
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
